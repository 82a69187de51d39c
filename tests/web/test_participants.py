"""The participants lists and the jar repository (rumble/web/participants.py, rumble/ingest/entries.py):
the list in the form the real client reads, the jars served exactly, entering, replacing,
withdrawing, approving, the accounts and the limits; every refusal with its exact words and
nothing stored."""

from __future__ import annotations

import hashlib
import io
import re
from datetime import datetime, timedelta
from xml.etree import ElementTree

import pytest
from conftest import audit_rows, battle, maintainer_token
from jar_support import client_reads, make_jar

from rumble import store
from rumble.app import create_app
from rumble.store import bots, competitors
from rumble.store.rumbles import rumble_id
from rumble.web import close_thread_db

BROWSER = {"Accept": "text/html,application/xhtml+xml"}


def _app(tmp_path, clock, **settings):
    return create_app({"DB": str(tmp_path / "p.db"), "BATCH_INTERVAL_MINUTES": 0, "CLOCK": clock, **settings})


@pytest.fixture
def approval_app(tmp_path, clock):
    app = _app(tmp_path, clock, ENTRIES_NEED_APPROVAL=True)
    yield app
    close_thread_db()


def sign_up(client, name: str = "Jane", addr: str = "10.0.0.1") -> str:
    response = client.post("/Participants/account", data={"name": name}, environ_base={"REMOTE_ADDR": addr})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.json["name"] == name
    return response.json["token"]


def enter(client, token: str | None, name: str, game: str = "roborumble", data: bytes | None = None, **kwargs):
    """POST a jar as the raw body (a script's way), with the token as a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return client.post(
        "/Participants/enter",
        query_string={"game": game, "name": name},
        data=make_jar(name) if data is None else data,
        content_type="application/java-archive",
        headers=headers,
        **kwargs,
    )


def _bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _stored(app) -> tuple[int, int, int]:
    """(jars, entries, packages) in the database."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        return tuple(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("jars", "entries", "jar_packages"))
    finally:
        db.close()


def _active(app, game: str, name: str) -> bool | None:
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        bot = bots.find_bot(db, name)
        return None if bot is None else bots.participant_state(db, rumble_id(db, game), bot)
    finally:
        db.close()


def test_the_list_is_what_the_real_client_reads_and_the_divisions_follow_it(app, client):
    token = sign_up(client)
    for name in ("jd.Walls 1.0", "jd.Crazy 2.1b"):
        assert enter(client, token, name).status_code == 200
    response = client.get("/Participants?game=roborumble")
    assert (response.status_code, response.mimetype) == (200, "text/html")
    expected = [
        ("jd.Crazy 2.1b", "http://localhost/jars/jd.Crazy/2.1b.jar"),
        ("jd.Walls 1.0", "http://localhost/jars/jd.Walls/1.0.jar"),
    ]
    assert client_reads(response.get_data(as_text=True)) == expected
    for division in ("minirumble", "microrumble", "nanorumble"):
        assert client_reads(client.get(f"/Participants?game={division}").get_data(as_text=True)) == expected
    assert client_reads(client.get("/Participants?game=meleerumble").get_data(as_text=True)) == []
    api = client.get("/Participants?game=minirumble&api=1").json
    assert (api["game"], api["list"], api["divisions"], api["approval_required"], api["pending"]) == (
        "minirumble",
        "roborumble",
        ["microrumble", "minirumble", "nanorumble", "roborumble"],
        False,
        [],
    )
    assert [(p["name"], p["url"], p["owner"]) for p in api["participants"]] == [(n, u, "Jane") for n, u in expected]
    jar = make_jar("jd.Walls 1.0")
    assert api["participants"][1]["sha256"] == hashlib.sha256(jar).hexdigest()
    assert api["participants"][1]["size"] == len(jar)


def test_an_unknown_or_missing_rumble_is_refused_in_words(client):
    response = client.get("/Participants?game=nosuch")
    assert (response.status_code, response.json) == (404, {"error": "there is no rumble called 'nosuch'"})
    response = client.get("/Participants")
    assert (response.status_code, response.json) == (400, {"error": "give the rumble: /Participants?game=roborumble"})


def test_a_jar_is_served_exactly_with_a_strong_etag(app, client):
    token = sign_up(client)
    jar = make_jar("jd.Walls 1.0")
    enter(client, token, "jd.Walls 1.0", data=jar)
    sha = hashlib.sha256(jar).hexdigest()
    response = client.get("/jars/jd.Walls/1.0.jar", headers={"Accept-Encoding": "gzip, deflate"})
    assert response.status_code == 200
    assert response.get_data() == jar
    assert response.headers["Content-Type"] == "application/java-archive"
    assert response.headers["Content-Length"] == str(len(jar))
    assert "Content-Encoding" not in response.headers
    assert response.headers["ETag"] == f'"{sha}"'
    head = client.head("/jars/jd.Walls/1.0.jar")
    assert (head.status_code, head.headers["Content-Length"], head.get_data()) == (200, str(len(jar)), b"")
    for sent in (f'"{sha}"', f'W/"{sha}"', "*", f'"other", "{sha}"'):
        again = client.get("/jars/jd.Walls/1.0.jar", headers={"If-None-Match": sent})
        assert (again.status_code, again.get_data(), again.headers["ETag"]) == (304, b"", f'"{sha}"')
    assert client.get("/jars/jd.Walls/1.0.jar", headers={"If-None-Match": '"other"'}).status_code == 200
    missing = client.get("/jars/jd.Walls/9.9.jar")
    assert (missing.status_code, missing.get_data(as_text=True)) == (
        404,
        "No jar of 'jd.Walls 9.9' was entered here.\n",
    )


def test_jar_urls_are_on_the_host_the_client_asked_through_the_proxy(tmp_path, clock):
    app = _app(tmp_path, clock, TRUSTED_PROXIES=1)
    client = app.test_client()
    enter(client, sign_up(client), "jd.Walls 1.0")
    response = client.get(
        "/Participants?game=roborumble",
        headers={"Host": "rumble.example.org", "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"},
    )
    assert client_reads(response.get_data(as_text=True)) == [
        ("jd.Walls 1.0", "https://rumble.example.org/jars/jd.Walls/1.0.jar")
    ]
    close_thread_db()


def test_the_jar_page_shows_its_hash(app, client):
    jar = make_jar("jd.Walls 1.0")
    enter(client, sign_up(client), "jd.Walls 1.0", data=jar)
    sha = hashlib.sha256(jar).hexdigest()
    page = client.get("/Participants/bot?name=jd.Walls%201.0")
    assert page.status_code == 200 and f"<code>{sha}</code>" in page.get_data(as_text=True)
    api = client.get("/Participants/bot?name=jd.Walls%201.0&api=1").json
    assert (api["name"], api["sha256"], api["size"], api["kind"], api["owner"], api["url"]) == (
        "jd.Walls 1.0",
        sha,
        len(jar),
        "robot",
        "Jane",
        "http://localhost/jars/jd.Walls/1.0.jar",
    )
    assert [(e["family"], e["state"], e["entered_by"]) for e in api["entries"]] == [
        ("roborumble", "listed", "competitor Jane")
    ]
    missing = client.get("/Participants/bot?name=jd.Walls%202&api=1")
    assert (missing.status_code, missing.json) == (404, {"error": "no jar of 'jd.Walls 2' was entered here"})


def test_bad_input_is_refused_with_its_reason_and_nothing_stored(tmp_path, clock):
    app = _app(tmp_path, clock, MAX_JAR_BYTES=200_000, MAX_JAR_UNPACKED_BYTES=1_000_000)
    client = app.test_client()
    token, other = sign_up(client, "Jane"), sign_up(client, "Mallory")
    cases = [
        (
            enter(client, token, "jd.Walls 1.0", data=b"not a zip"),
            400,
            "the jar is refused: the file is not a jar (a zip archive)",
        ),
        (
            enter(client, token, "jd.Walls 1.1", data=make_jar("jd.Walls 1.0")),
            400,
            "the jar is refused: jd/Walls.properties names 'jd.Walls 1.0' (robot.classname and robot.version), "
            "not 'jd.Walls 1.1': the client would refuse this jar",
        ),
        (
            enter(
                client, token, "jd.Walls 1.0", data=make_jar("jd.Walls 1.0", files={"jd/big.bin": bytes(50_000_000)})
            ),
            400,
            "the jar is refused: the jar expands past 1000000 bytes (at jd/big.bin); at most 1000000 are taken",
        ),
        (
            enter(
                client,
                token,
                "jd.Walls 1.0",
                data=make_jar("jd.Walls 1.0", files={"jd/r.bin": __import__("os").urandom(250_000)}),
            ),
            413,
            "the jar is larger than 200000 bytes (MAX_JAR_BYTES)",
        ),
        (enter(client, token, "jd.Walls 1.0", game="nosuch"), 404, "there is no rumble called 'nosuch'"),
        (
            enter(client, token, "jd.Squad 1.0", game="teamrumble"),
            400,
            "the jar is refused: the jar has no team file jd/Squad.team: the client looks for it to check the jar is jd.Squad 1.0",
        ),
        (enter(client, None, "jd.Walls 1.0"), 401, "a valid competitor (or maintainer) token is needed to enter a bot"),
        (
            enter(client, "rmc_0123456789abcdef_" + "x" * 43, "jd.Walls 1.0"),
            401,
            "a valid competitor (or maintainer) token is needed to enter a bot",
        ),
    ]
    for response, status, error in cases:
        assert (response.status_code, response.json) == (status, {"error": error})
    assert _stored(app) == (0, 0, 0)
    assert enter(client, token, "jd.Walls 1.0").status_code == 200
    taken = enter(client, other, "jd.Crazy 1.0")
    assert (taken.status_code, taken.json) == (
        403,
        {"error": "the package jd belongs to another account: only its owner or a maintainer may enter its bots"},
    )
    assert _stored(app) == (1, 1, 1)
    close_thread_db()


def test_a_name_and_version_is_never_bound_to_two_jars(app, client):
    token = sign_up(client)
    assert enter(client, token, "jd.Walls 1.0").status_code == 200
    assert (
        client.post(
            "/Participants/withdraw", data={"game": "roborumble", "name": "jd.Walls 1.0"}, headers=_bearer(token)
        ).status_code
        == 200
    )
    changed = make_jar("jd.Walls 1.0", files={"jd/more.txt": "changed"})
    response = enter(client, token, "jd.Walls 1.0", data=changed)
    sha = hashlib.sha256(make_jar("jd.Walls 1.0")).hexdigest()
    assert (response.status_code, response.json["error"]) == (
        400,
        f"jd.Walls 1.0 is already bound to another jar (SHA-256 {sha}): a name and version always means one jar; "
        "give the new jar a new version",
    )
    again = enter(client, token, "jd.Walls 1.0")  # the same jar again: listed again
    assert (again.status_code, again.json["state"]) == (200, "listed")
    twice = enter(client, token, "jd.Walls 1.0")
    assert (twice.status_code, twice.json) == (400, {"error": "jd.Walls 1.0 is already listed in roborumble"})
    assert client.get("/jars/jd.Walls/1.0.jar").get_data() == make_jar("jd.Walls 1.0")


def test_a_new_version_replaces_the_old_one_which_is_retired_at_once(app, client, upload):
    token = sign_up(client)
    enter(client, token, "jd.Walls 1.0")
    for _ in range(2):
        assert upload(battle("jd.Walls 1.0", "sample.Crazy 1.0")).kind.name == "ACCEPTED"
        assert upload(battle("jd.Walls 1.0", "sample.Crazy 1.0", game="minirumble")).kind.name == "ACCEPTED"
    response = enter(client, token, "jd.Walls 1.1", game="minirumble")  # a division enters its general list
    assert response.status_code == 200
    assert {k: response.json[k] for k in ("game", "name", "state", "replaced", "retired")} == {
        "game": "roborumble",
        "name": "jd.Walls 1.1",
        "state": "listed",
        "replaced": "jd.Walls 1.0",
        "retired": ["minirumble", "roborumble"],
    }
    assert client_reads(client.get("/Participants?game=roborumble").get_data(as_text=True)) == [
        ("jd.Walls 1.1", "http://localhost/jars/jd.Walls/1.1.jar")
    ]
    assert (_active(app, "roborumble", "jd.Walls 1.0"), _active(app, "minirumble", "jd.Walls 1.0")) == (False, False)
    assert _active(app, "roborumble", "sample.Crazy 1.0") is True
    entry = audit_rows(app)[0]
    assert (
        entry["who"],
        entry["action"],
        entry["details"]["replaced"],
        entry["details"]["retired"],
        entry["battles"],
    ) == (
        "competitor Jane",
        "enter",
        "jd.Walls 1.0",
        {"minirumble": 2, "roborumble": 2},
        4,
    )
    assert client.get("/jars/jd.Walls/1.0.jar").status_code == 200  # served for good


def test_withdrawing_retires_at_once_and_only_the_owner_or_a_maintainer_may(app, client, upload):
    token, other = sign_up(client, "Jane"), sign_up(client, "Mallory")
    enter(client, token, "jd.Walls 1.0")
    enter(client, token, "jd.Crazy 1.0")
    upload(battle("jd.Walls 1.0", "jd.Crazy 1.0"))
    form = {"game": "roborumble", "name": "jd.Walls 1.0"}
    refused = client.post("/Participants/withdraw", data=form, headers=_bearer(other))
    assert (refused.status_code, refused.json) == (
        403,
        {"error": "the package jd belongs to another account: only its owner or a maintainer may withdraw its bots"},
    )
    done = client.post("/Participants/withdraw", data=form, headers=_bearer(token))
    assert (done.status_code, done.json) == (
        200,
        {
            "game": "roborumble",
            "name": "jd.Walls 1.0",
            "state": "withdrawn",
            "was": "listed",
            "retired": ["roborumble"],
        },
    )
    assert _active(app, "roborumble", "jd.Walls 1.0") is False
    assert client.get("/api/v1/rumbles").status_code == 200
    db = store.connect(app.config["RUMBLE"]["DB"])
    assert db.execute("SELECT count(*) FROM battles").fetchone()[0] == 1  # the battles stay in the log
    db.close()
    gone = client.post("/Participants/withdraw", data=form, headers=_bearer(token))
    assert (gone.status_code, gone.json) == (
        404,
        {"error": "'jd.Walls 1.0' is not listed or waiting for approval in roborumble"},
    )
    by_maintainer = client.post(
        "/Participants/withdraw",
        data={"game": "roborumble", "name": "jd.Crazy 1.0"},
        headers=_bearer(maintainer_token(app)),
    )
    assert (by_maintainer.status_code, by_maintainer.json["state"]) == (200, "withdrawn")
    assert [(r["who"], r["action"]) for r in audit_rows(app)[:2]] == [
        ("alice", "withdraw"),
        ("competitor Jane", "withdraw"),
    ]
    assert client_reads(client.get("/Participants?game=roborumble").get_data(as_text=True)) == []


def test_entries_wait_for_approval_when_the_setting_says_so(approval_app):
    client = approval_app.test_client()
    token, boss = sign_up(client), maintainer_token(approval_app)
    pending = enter(client, token, "jd.Walls 1.0")
    assert (pending.status_code, pending.json["state"]) == (200, "pending")
    enter(client, token, "jd.Crazy 1.0")
    listing = client.get("/Participants?game=roborumble&api=1").json
    assert (listing["participants"], [p["name"] for p in listing["pending"]]) == ([], ["jd.Crazy 1.0", "jd.Walls 1.0"])
    form = {"game": "roborumble", "name": "jd.Walls 1.0"}
    assert client.post("/Participants/approve", data=form, headers=_bearer(token)).status_code == 401
    approved = client.post("/Participants/approve", data=form, headers=_bearer(boss))
    assert (approved.status_code, approved.json["state"]) == (200, "listed")
    refused = client.post(
        "/Participants/refuse",
        data={"game": "roborumble", "name": "jd.Crazy 1.0", "reason": "no source"},
        headers=_bearer(boss),
    )
    assert (refused.status_code, refused.json["state"]) == (200, "refused")
    assert client_reads(client.get("/Participants?game=roborumble").get_data(as_text=True)) == [
        ("jd.Walls 1.0", "http://localhost/jars/jd.Walls/1.0.jar")
    ]
    again = client.post("/Participants/approve", data=form, headers=_bearer(boss))
    assert (again.status_code, again.json) == (
        404,
        {"error": "'jd.Walls 1.0' is not waiting for approval in roborumble"},
    )
    assert client.post("/Participants/approval", data={"required": "0"}, headers=_bearer(boss)).json == {
        "approval_required": False
    }
    assert enter(client, token, "jd.Walls 1.1").json["state"] == "listed"
    assert client.post("/Participants/approval", data={"required": "maybe"}, headers=_bearer(boss)).json == {
        "error": "required must be 1 or 0, not 'maybe'"
    }
    actions = [(r["who"], r["action"]) for r in audit_rows(approval_app)]
    assert (
        ("alice", "approve") in actions
        and ("alice", "refuse-entry") in actions
        and ("alice", "entry-approval") in actions
    )


def test_per_address_requests_are_limited_before_anything_is_checked(tmp_path, clock):
    app = _app(tmp_path, clock, ENTRY_REQUESTS_PER_HOUR=3)
    client = app.test_client()
    token = sign_up(client, addr="10.0.0.9")  # one request
    assert enter(client, token, "jd.Walls 1.0", environ_base={"REMOTE_ADDR": "10.0.0.9"}).status_code == 200
    for _ in range(3):  # a request without a token costs nothing: refused, and neither logged nor counted
        assert enter(client, None, "jd.Walls 1.1", environ_base={"REMOTE_ADDR": "10.0.0.9"}).status_code == 401
    forged = "rmc_0123456789abcdef_" + "x" * 43  # a token's form: its check costs a lookup, so it counts
    assert enter(client, forged, "jd.Walls 1.1", environ_base={"REMOTE_ADDR": "10.0.0.9"}).status_code == 401
    limited = enter(client, token, "jd.Walls 1.1", environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert (limited.status_code, limited.headers["Retry-After"], limited.json) == (
        429,
        "3600",
        {
            "error": "too many requests from your address (3 in the last hour); nothing was checked or done: "
            "try again in an hour"
        },
    )
    assert enter(client, token, "jd.Walls 1.1", environ_base={"REMOTE_ADDR": "10.0.0.10"}).status_code == 200
    clock.advance(seconds=3601)
    assert enter(client, token, "jd.Walls 1.2", environ_base={"REMOTE_ADDR": "10.0.0.9"}).status_code == 200
    close_thread_db()


def test_per_account_entries_and_sign_ups_are_limited(tmp_path, clock):
    app = _app(tmp_path, clock, ENTRIES_PER_DAY=1, SIGN_UPS_PER_DAY=2)
    client = app.test_client()
    token = sign_up(client, "Jane")
    sign_up(client, "Joe")
    third = client.post("/Participants/account", data={"name": "Jim"}, environ_base={"REMOTE_ADDR": "10.0.0.1"})
    assert (third.status_code, third.json) == (
        429,
        {"error": "your address made 2 accounts in the last 24 hours; that is the most it may"},
    )
    taken = client.post("/Participants/account", data={"name": "Jane"}, environ_base={"REMOTE_ADDR": "10.0.0.2"})
    assert (taken.status_code, taken.json) == (400, {"error": "there is already an account called 'Jane'"})
    bad = client.post("/Participants/account", data={"name": "<script>"}, environ_base={"REMOTE_ADDR": "10.0.0.2"})
    assert bad.status_code == 400
    assert enter(client, token, "jd.Walls 1.0").status_code == 200
    second = enter(client, token, "jd.Walls 1.1")
    assert (second.status_code, second.json) == (
        429,
        {"error": "your account entered 1 bots in the last 24 hours; that is the most it may"},
    )
    clock.advance(days=1, seconds=1)
    assert enter(client, token, "jd.Walls 1.1").status_code == 200
    close_thread_db()


def test_sign_up_can_be_left_to_maintainers(tmp_path, clock):
    app = _app(tmp_path, clock, SIGN_UPS_PER_DAY=0)
    response = app.test_client().post("/Participants/account", data={"name": "Jane"})
    assert (response.status_code, response.json) == (
        403,
        {"error": "this ladder makes competitor accounts on request only: ask a maintainer"},
    )
    close_thread_db()


def test_a_revoked_token_enters_nothing_and_a_maintainer_enters_for_anyone(app, client):
    token = sign_up(client)
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):
        assert competitors.revoke(db, "Jane", store.utc_now())
    db.close()
    assert enter(client, token, "jd.Walls 1.0").status_code == 401
    by_maintainer = enter(client, maintainer_token(app), "jd.Walls 1.0")
    assert (by_maintainer.status_code, by_maintainer.json["state"]) == (200, "listed")
    assert client.get("/Participants?game=roborumble&api=1").json["participants"][0]["owner"] is None


def test_the_browser_form_enters_a_bot_and_shows_the_token_once(app, client):
    page = client.get("/Participants/enter")
    assert page.status_code == 200 and 'enctype="multipart/form-data"' in page.get_data(as_text=True)
    made = client.post("/Participants/account", data={"name": "Jane"}, headers=BROWSER)
    token = re.search(r"<code>(rmc_[^<]+)</code>", made.get_data(as_text=True)).group(1)
    jar = make_jar("jd.Walls 1.0")
    response = client.post(
        "/Participants/enter",
        data={"token": token, "game": "roborumble", "name": "jd.Walls 1.0", "jar": (io.BytesIO(jar), "walls.jar")},
        content_type="multipart/form-data",
        headers=BROWSER,
    )
    text = response.get_data(as_text=True)
    assert response.status_code == 200
    assert f"jd.Walls 1.0 is listed in roborumble (SHA-256 {hashlib.sha256(jar).hexdigest()})." in text
    refused = client.post(
        "/Participants/enter",
        data={"token": token, "game": "roborumble", "name": "jd.Walls 2", "jar": (io.BytesIO(jar), "walls.jar")},
        content_type="multipart/form-data",
        headers=BROWSER,
    )
    assert refused.status_code == 400 and "<h1>Refused</h1>" in refused.get_data(as_text=True)
    no_file = client.post(
        "/Participants/enter",
        data={"token": token, "game": "roborumble", "name": "jd.Walls 2"},
        content_type="multipart/form-data",
    )
    assert (no_file.status_code, no_file.json) == (
        400,
        {
            "error": "no jar: send it as the multipart field 'jar', as the body with Content-Type "
            "application/java-archive, or give its URL in the field 'url'"
        },
    )


def test_a_bot_listed_for_a_day_without_a_battle_is_shown_stuck_on_the_stats_page_and_in_the_feed(
    app, client, upload, clock
):
    token = sign_up(client)
    for name in ("jd.Walls 1.0", "jd.Crazy 2.1b"):
        assert enter(client, token, name).status_code == 200
    listed_at = client.get("/Participants/bot?name=jd.Walls+1.0&api=1").json["entries"][0]["listed_at"][:19]
    assert upload(battle("jd.Crazy 2.1b", "sample.Corners 1.0")).kind.name == "ACCEPTED"

    def stuck(game: str = "roborumble") -> list[str]:
        return [row["name"] for row in client.get(f"/RumbleStats?game={game}&api=1").json["stuck"]]

    def feed_entries() -> list[tuple[str, str, str]]:
        atom = "{http://www.w3.org/2005/Atom}"
        root = ElementTree.fromstring(client.get("/feed/roborumble").data)
        return [
            (e.find(f"{atom}category").get("term"), e.findtext(f"{atom}title"), e.findtext(f"{atom}updated"))
            for e in root.iter(f"{atom}entry")
            if e.find(f"{atom}category").get("term") == "stuck"
        ]

    clock.advance(hours=23, minutes=59)
    assert stuck() == [] and feed_entries() == []
    clock.advance(minutes=2)
    rows = client.get("/RumbleStats?game=roborumble&api=1").json["stuck"]
    assert rows == [{"name": "jd.Walls 1.0", "listed_at": listed_at, "entered_by": "competitor Jane"}]
    became = (datetime.strptime(listed_at, "%Y-%m-%d %H:%M:%S") + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert feed_entries() == [("stuck", "jd.Walls 1.0 is stuck in roborumble: no battle since it was listed", became)]
    page = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert re.search(r"<tr><td><a href=\"/Participants/bot\?name=jd.Walls\+1.0\">jd.Walls 1.0</a></td>", page)
    assert stuck("minirumble") == []  # a division follows the list, but a bot need not fit it
    assert upload(battle("jd.Walls 1.0", "sample.Corners 1.0")).kind.name == "ACCEPTED"
    assert stuck() == [] and feed_entries() == []


def test_the_bot_page_shows_the_hash_of_the_jar_entered_here(app, client, upload):
    token = sign_up(client)
    jar = make_jar("jd.Walls 1.0")
    assert enter(client, token, "jd.Walls 1.0", data=jar).status_code == 200
    assert upload(battle("jd.Walls 1.0", "sample.Crazy 1.0")).kind.name == "ACCEPTED"
    digest = hashlib.sha256(jar).hexdigest()
    found = client.get("/BotDetails?game=roborumble&name=jd.Walls+1.0&api=1").json["jar"]
    assert found == {
        "sha256": digest,
        "size": len(jar),
        "url": "http://localhost/jars/jd.Walls/1.0.jar",
        "page": "http://localhost/Participants/bot?name=jd.Walls+1.0",
    }
    page = client.get("/BotDetails?game=roborumble&name=jd.Walls+1.0").get_data(as_text=True)
    assert f'<a href="http://localhost/jars/jd.Walls/1.0.jar">jar</a> is served here: {len(jar)} bytes' in page
    assert f"<code>{digest}</code>" in page
    assert client.get("/BotDetails?game=roborumble&name=sample.Crazy+1.0&api=1").json["jar"] is None  # not entered here
