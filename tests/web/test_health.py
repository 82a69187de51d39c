"""/healthz: 200 with each rumble's last accepted upload and its age by the app's clock while the
database can be read, 503 and why when it cannot; a monitor may ask whether uploads still flow."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from conftest import battle

from rumble.protocol.replies import Kind
from rumble.web import close_thread_db


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def newest_accepted(db, game: str) -> str:
    """The receive time of the rumble's newest battle in state ok, read from the log here."""
    return db.execute(
        "SELECT max(b.received_at) FROM battles b JOIN rumbles r ON r.id = b.rumble_id WHERE r.name = ? AND b.state = 'ok'",
        (game,),
    ).fetchone()[0]


def test_a_new_server_is_healthy_with_no_upload_yet(app, client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
    answer = response.json
    assert (answer["status"], answer["database"]) == ("ok", "readable")
    assert {r["name"] for r in answer["rumbles"]} == set(app.extensions["rumble.rumbles"])
    assert {(r["last_accepted_upload"], r["age_seconds"], r["battles"]) for r in answer["rumbles"]} == {(None, None, 0)}


def test_the_age_is_the_app_clocks_time_since_the_newest_accepted_battle(client, upload, db, clock):
    """A held battle after it does not count: the monitor asks whether accepted uploads flow."""
    assert upload(battle("a.A 1.0", "b.B 1.0")).kind is Kind.ACCEPTED
    clock.advance(minutes=5)
    assert upload(battle("a.A 1.0", "c.C 1.0", scores=(3000, 2000), firsts=(5, 5))).kind is Kind.HELD
    clock.advance(minutes=3)
    answer = client.get("/healthz").json
    row = next(r for r in answer["rumbles"] if r["name"] == "roborumble")
    last = newest_accepted(db, "roborumble")
    assert row["last_accepted_upload"] == last and row["battles"] == 2 and row["active_bots"] == 2
    assert row["age_seconds"] == round((parse(answer["now"]) - parse(last)).total_seconds(), 3)
    assert row["age_seconds"] >= 8 * 60  # both advances of the clock


def test_an_unreadable_database_is_503_with_the_reason(app, client):
    path = app.config["RUMBLE"]["DB"]
    close_thread_db()
    for suffix in ("-wal", "-shm"):
        open(path + suffix, "wb").close()
    with open(path, "wb") as damaged:
        damaged.write(b"this is not an SQLite database, just text " * 100)
    response = client.get("/healthz")
    assert response.status_code == 503
    answer = response.json
    assert (answer["status"], answer["database"]) == ("unavailable", "unreadable")
    assert answer["reason"].startswith("the database cannot be read: ") and "not a database" in answer["reason"]


def test_a_monitor_may_ask_whether_uploads_still_flow(client, upload, clock):
    assert upload(battle("a.A 1.0", "b.B 1.0")).kind is Kind.ACCEPTED
    clock.advance(minutes=31)
    fresh = client.get("/healthz?max_age_minutes=60&game=roborumble")
    assert fresh.status_code == 200 and fresh.json["status"] == "ok" and fresh.json["max_age_minutes"] == 60
    stale = client.get("/healthz?max_age_minutes=30&game=roborumble")
    assert stale.status_code == 503
    assert (stale.json["status"], stale.json["stale"]) == ("stale", ["roborumble"])
    assert stale.json["reason"] == "no accepted upload in the last 30 minutes: roborumble"
    never = client.get("/healthz?max_age_minutes=60&game=roborumble&game=minirumble")  # minirumble: none yet
    assert never.status_code == 503 and never.json["stale"] == ["minirumble"]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("max_age_minutes=30", "max_age_minutes and game go together: ?max_age_minutes=30&game=roborumble"),
        ("game=roborumble", "max_age_minutes and game go together: ?max_age_minutes=30&game=roborumble"),
        ("max_age_minutes=soon&game=roborumble", "max_age_minutes must be a whole number from 1 to 525600, not 'soon'"),
        ("max_age_minutes=0&game=roborumble", "max_age_minutes must be a whole number from 1 to 525600, not '0'"),
        ("max_age_minutes=1" + "0" * 5000 + "&game=roborumble", "max_age_minutes must be a whole number from 1"),
        ("max_age_minutes=30&game=nosuch", "there is no rumble called 'nosuch'"),
    ],
)
def test_a_bad_question_is_400_in_plain_words(client, query, reason):
    response = client.get("/healthz?" + query)
    assert response.status_code == 400
    assert response.json["status"] == "bad request" and response.json["reason"].startswith(reason)


def test_head_is_answered_like_get(client):
    response = client.head("/healthz")
    assert response.status_code == 200 and response.get_data() == b""


def test_the_writers_state_is_shown_and_a_silent_writer_makes_it_503(app, client):
    """Under ``rumble serve`` the app has the writer's state (rumble.app.attach_writer): shown while
    it answers; 503 "degraded" with the reason while it is silent."""
    from rumble.web import health

    state = {"state": "answering", "last_beat_seconds_ago": 0.2, "restarts": 1, "groups": 5, "requests": 9}
    app.extensions[health.WRITER_KEY] = lambda: dict(state)
    answer = client.get("/healthz")
    assert answer.status_code == 200 and answer.json["status"] == "ok" and answer.json["writer"] == state
    state |= {"state": "silent", "last_beat_seconds_ago": 4.5}
    answer = client.get("/healthz")
    assert answer.status_code == 503 and answer.json["status"] == "degraded"
    assert answer.json["reason"] == (
        "the writer process has not answered for 4.5 s; the workers apply uploads themselves until it is replaced"
    )
    assert answer.json["writer"] == state and answer.json["database"] == "readable"
