"""Fixtures: an app on a real SQLite file per test, its test client, and upload helpers."""

from __future__ import annotations

import time

import pytest

from rumble import store
from rumble.admin_tokens import hash_token, new_token, token_id
from rumble.app import create_app
from rumble.battle import Battle, Side
from rumble.protocol.upload import format_upload
from rumble.store import admin as admin_store
from rumble.web import close_thread_db


@pytest.fixture(scope="session", autouse=True)
def compiled_rating_step():
    """Compile the rating step (or load it from numba's cache) once, before any test or server
    needs it: a first compile takes seconds, which a server start in an end-to-end test would
    otherwise spend before it answers."""
    from rumble.ratings.all_pairings import warm_up

    warm_up()


def battle(
    first: str = "sample.Corners 1.0",
    second: str = "sample.RamFire 1.0",
    scores: tuple[int, int] = (6598, 4883),
    firsts: tuple[int, int] = (32, 3),
    game: str = "roborumble",
    time_ms: int | None = None,
    **fields,
) -> Battle:
    """A valid 1v1 roborumble result (the captured one of protocol.md 7.1 by default)."""
    values = dict(
        game=game, version="1", client="1.9.3.9", teams=False, melee=False, rounds=35, field="800x600",
        uploader="Jane Doe", time_ms=int(time.time() * 1000) if time_ms is None else time_ms,
        first=Side(first, scores[0], scores[0] // 2, firsts[0]), second=Side(second, scores[1], scores[1] // 2, firsts[1]),
    )  # fmt: skip
    values.update(fields)
    return Battle(**values)


@pytest.fixture
def app(tmp_path):
    app = create_app({"DB": str(tmp_path / "rumble.db"), "BATCH_INTERVAL_MINUTES": 0})
    yield app
    close_thread_db()


@pytest.fixture
def demo_db(app):
    """The app's database with 250 demo battles in roborumble: 20 bots, every pair met."""
    from rumble import store
    from rumble.demo import load_demo

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


@pytest.fixture
def upload(client):
    """POST a body (bytes, or a Battle) to /UploadedResults; return the answer text."""

    def post(body) -> str:
        if isinstance(body, Battle):
            body = format_upload(body)
        response = client.post("/UploadedResults", data=body, content_type="application/x-www-form-urlencoded")
        assert response.status_code == 200
        return response.get_data(as_text=True)

    return post


def maintainer_token(app, name: str = "alice") -> str:
    """A new maintainer ``name`` in the app's database; its token (as `rumble admin create-token` prints it)."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    token = new_token()
    with store.write(db):
        admin_store.add_maintainer(db, name, token_id(token), hash_token(token), store.utc_now())
    db.close()
    return token


def audit_rows(app) -> list[dict]:
    """The app's audit log, newest first."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    rows = admin_store.audit_rows(db)
    db.close()
    return rows
