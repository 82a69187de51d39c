"""Fixtures: an app on a real SQLite file per test, its clock, its test client, and upload helpers.

Every time a test sends or checks comes from the test's clock (the ``clock`` fixture, which the
app reads as its ``CLOCK`` setting), never from a literal date: the suite passes on any day.
"""

from __future__ import annotations

import pytest

from rumble import store
from rumble.admin_tokens import hash_token, new_token, token_id
from rumble.app import create_app
from rumble.clock import Clock
from rumble.protocol.battle import Battle, Side
from rumble.protocol.replies import UploadOutcome
from rumble.protocol.upload import format_upload
from rumble.store import maintainers, trust
from rumble.web import close_thread_db, page_cache
from rumble.web.upload_counter import upload_decided


@pytest.fixture(scope="session", autouse=True)
def compiled_rating_step():
    """Compile the rating step (or load it from numba's cache) once, before any test or server
    needs it: a first compile takes seconds, which a server start in an end-to-end test would
    otherwise spend before it answers."""
    from rumble.ratings.online import warm_up

    warm_up()


@pytest.fixture(autouse=True)
def pages_rebuilt_after_every_change(monkeypatch):
    """Every app a test makes serves a kept page only while nothing changed (PAGE_CACHE_SECONDS 0):
    the tests read a page right after the change they check. The bounded staleness that a server
    has by default is tested on its own (tests/web/test_page_cache.py)."""
    monkeypatch.setenv("RUMBLE_PAGE_CACHE_SECONDS", "0")


def forget_pages(app, stale_seconds: float | None = None) -> None:
    """Drop the pages ``app`` keeps (rumble.web.page_cache), as after a change they cannot see: a
    test that patches code or settings under a running app (a server is restarted for those).
    ``stale_seconds``: keep them from now on as PAGE_CACHE_SECONDS says (unchanged if None)."""
    kept = app.extensions[page_cache.MIDDLEWARE_KEY]
    seconds = kept.cache.stale_seconds if stale_seconds is None else stale_seconds
    kept.cache = app.extensions[page_cache.EXTENSION_KEY] = page_cache.PageCache(seconds, kept.cache.max_bytes)


_clock = Clock()  # the running test's clock (the ``clock`` fixture replaces it for each test)


@pytest.fixture(autouse=True)
def clock() -> Clock:
    """This test's clock: the app's ``CLOCK`` setting and the source of every time the test uses."""
    global _clock
    _clock = Clock()
    return _clock


def now_ms() -> int:
    """The running test's clock, in milliseconds since the epoch."""
    return _clock.now_ms()


def battle(
    first: str = "sample.Corners 1.0",
    second: str = "sample.RamFire 1.0",
    scores: tuple[int, int] = (6598, 4883),
    firsts: tuple[int, int] = (32, 3),
    game: str = "roborumble",
    time_ms: int | None = None,
    **fields,
) -> Battle:
    """A valid 1v1 roborumble result (the captured one of protocol.md 7.1 by default), fought now
    by the test's clock unless ``time_ms`` says when."""
    values = dict(
        game=game,
        version="1",
        client="1.9.3.9",
        teams=False,
        melee=False,
        rounds=35,
        field="800x600",
        uploader="Jane Doe",
        time_ms=_clock.now_ms() if time_ms is None else time_ms,
        first=Side(first, scores[0], scores[0] // 2, firsts[0]),
        second=Side(second, scores[1], scores[1] // 2, firsts[1]),
    )
    values.update(fields)
    return Battle(**values)


@pytest.fixture
def app(tmp_path, clock):
    app = create_app({"DB": str(tmp_path / "rumble.db"), "BATCH_INTERVAL_MINUTES": 0, "CLOCK": clock})
    vouch_for_local_uploads(app.config["RUMBLE"]["DB"])
    yield app
    close_thread_db()


@pytest.fixture(autouse=True)
def connections_closed(monkeypatch):
    """Every database connection a test opens with ``store.connect`` is closed when the test ends,
    even when the test fails half-way: a connection left open keeps its lock file, which a later
    test would meet as an unclosed-file warning (an error under ``filterwarnings = error``)."""
    opened: list[store.Store] = []
    connect = store.connect

    def tracked(*args, **kwargs):
        conn = connect(*args, **kwargs)
        opened.append(conn)
        return conn

    monkeypatch.setattr(store, "connect", tracked)
    yield
    for conn in opened:
        conn.close()


@pytest.fixture
def db(app):
    """A connection to the app's database for the test to read and write (closed after the test)."""
    conn = store.connect(app.config["RUMBLE"]["DB"])
    yield conn
    conn.close()


@pytest.fixture
def demo_db(app):
    """The app's database with 250 demo battles in roborumble: 20 bots, every pair met."""
    from rumble import store
    from rumble.maintenance.demo import load_demo

    conn = store.connect(app.config["RUMBLE"]["DB"])
    load_demo(conn, "roborumble", 35, "800x600", 250)
    yield conn
    conn.close()


def pairwise_from_ballots(ballots: list[tuple[int, str]], candidates: str):
    """d[X, Y] = the number of voters ranking X above Y: a ballots tally done independently of rumble."""
    import numpy as np

    d = np.zeros((len(candidates), len(candidates)))
    for count, ballot in ballots:
        for i, x in enumerate(candidates):
            for j, y in enumerate(candidates):
                if ballot.index(x) < ballot.index(y):
                    d[i, j] += count
    np.fill_diagonal(d, np.nan)
    return d


@pytest.fixture
def client(app):
    return app.test_client()


def post_upload(client, body, **kwargs) -> tuple[UploadOutcome, str]:
    """POST a body (bytes, or a Battle) to /UploadedResults: the outcome the server decided, and its answer text."""
    if isinstance(body, Battle):
        body = format_upload(body)
    decided: list[UploadOutcome] = []
    with upload_decided.connected_to(lambda app, outcome: decided.append(outcome), sender=client.application):
        response = client.post(
            "/UploadedResults", data=body, content_type="application/x-www-form-urlencoded", **kwargs
        )
    assert response.status_code == 200, response.get_data(as_text=True)
    (outcome,) = decided
    return outcome, response.get_data(as_text=True)


@pytest.fixture
def upload(client):
    """POST a body (bytes, or a Battle) to /UploadedResults; return the outcome (``.kind`` says
    accepted, duplicate, held or refused: assert that, never a substring of the answer)."""

    def post(body) -> UploadOutcome:
        return post_upload(client, body)[0]

    return post


def _sqlite_libraries() -> list:
    """Python's own sqlite3 (the system's SQLite), and pysqlite3's newer bundled SQLite (a test
    dependency): a query plan can change between SQLite releases, and a server may run on either."""
    import sqlite3

    libraries = [pytest.param(sqlite3, id=f"sqlite-{sqlite3.sqlite_version}")]
    try:
        from pysqlite3 import dbapi2
    except ImportError:  # not installed (a platform without its wheel): the system's SQLite only
        return libraries
    return [*libraries, pytest.param(dbapi2, id=f"sqlite-{dbapi2.sqlite_version}")]


SQLITE_LIBRARIES = _sqlite_libraries()  # for ``pytest.mark.parametrize("library", SQLITE_LIBRARIES)``


def query_plan(db, call, library=None) -> str:
    """SQLite's query plan (EXPLAIN QUERY PLAN, its details joined) of the one statement ``call()``
    runs on ``db``; as ``library`` (a DB-API sqlite module) would plan it on the same file, if given."""
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        call()
    finally:
        db.conn.set_trace_callback(None)
    (query,) = statements
    conn = db.conn if library is None else library.connect(db.file_path)
    try:
        return " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query))
    finally:
        if conn is not db.conn:
            conn.close()


LOCAL_UPLOADER = "Jane Doe@127.0.0.0/24"  # what ``battle`` uploads through the test client, as a party


def vouch_for_local_uploads(path, party: str = LOCAL_UPLOADER) -> None:
    """The operator vouches for its own client, as a new ladder starts: by default "Jane Doe"
    (``battle``'s uploader) from the test client's address, which may then retire bots with
    RemoveOldParticipant (rumble/rankings/uploader_trust.py; tests/web/test_trusted_removals.py
    tests the trust itself)."""
    db = store.connect(path)
    with store.write(db):
        trust.set_word(db, party, "vouched", "test operator", store.utc_now())
    db.close()


def maintainer_token(app, name: str = "alice") -> str:
    """A new maintainer ``name`` in the app's database; its token (as `rumble admin create-token` prints it)."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    token = new_token()
    with store.write(db):
        maintainers.add_maintainer(db, name, token_id(token), hash_token(token), store.utc_now())
    db.close()
    return token


def audit_rows(app) -> list[dict]:
    """The app's audit log, newest first."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    rows = maintainers.audit_rows(db)
    db.close()
    return rows
