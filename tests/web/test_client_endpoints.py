"""The client endpoints through Flask: answers the client understands, nothing half-applied."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest
from conftest import battle, post_upload, vouch_for_local_uploads
from werkzeug.wrappers import Response as PlainResponse

from rumble.ingest import decide as decide_module
from rumble.protocol import replies
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.protocol.upload import format_upload
from rumble.server import single_writer


def _db(app) -> sqlite3.Connection:
    return sqlite3.connect(app.config["RUMBLE"]["DB"])


def _state(app) -> tuple:
    """Everything an upload could change."""
    with _db(app) as conn:
        return tuple(
            conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("battles", "bots", "participants", "pairings", "bot_summaries")
        )


def test_upload_is_stored_and_answered_with_counts_and_ok(app, client):
    outcome, answer = post_upload(client, battle())
    assert outcome == UploadOutcome(
        Kind.ACCEPTED, "roborumble", "sample.Corners 1.0", "sample.RamFire 1.0", (1, 1), priority=outcome.priority
    )
    lines = answer.splitlines()
    assert lines[-2:] == ["<1 1>", "OK. sample.Corners 1.0 vs sample.RamFire 1.0 received for roborumble"]
    with _db(app) as conn:
        row = conn.execute(
            "SELECT (SELECT name FROM uploaders WHERE id = uploader_id), u.client, first_score, second_score, first_firsts, d.remote_addr, state "
            "FROM battles JOIN uploader_addresses d ON d.id = address_id JOIN battle_setups u ON u.id = setup_id"
        ).fetchone()
    assert row == ("Jane Doe", "1.9.3.9", 6598, 4883, 32, "127.0.0.1", "ok")


def test_the_upload_answer_has_the_headers_of_a_werkzeug_text_response(client):
    """UploadFront writes its answer without werkzeug's Response: the same status and headers."""
    response = client.post(
        "/UploadedResults", data=format_upload(battle()), content_type="application/x-www-form-urlencoded"
    )
    expected = PlainResponse(response.get_data(as_text=True), status=200, mimetype="text/plain")
    assert response.status == expected.status == "200 OK"
    assert sorted(response.headers.items()) == sorted(expected.get_wsgi_headers({}).items())
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert int(response.headers["Content-Length"]) == len(response.get_data())


def test_a_repeat_is_acknowledged_and_not_counted_twice(app, client, upload):
    """A retry carries the same game, user, time, bots and scores (protocol.md 7.4)."""
    result = battle()
    assert upload(result).kind is Kind.ACCEPTED
    before = _state(app)
    outcome, answer = post_upload(client, result)
    assert outcome == UploadOutcome(Kind.DUPLICATE, "roborumble", "sample.Corners 1.0", "sample.RamFire 1.0", (1, 1))
    assert (
        answer
        == "<1 1>\nOK. sample.Corners 1.0 vs sample.RamFire 1.0 for roborumble was already received; not counted again\n"
    )
    assert _state(app) == before


def test_the_same_result_for_each_division_is_stored_once_per_game(app, upload):
    result = battle()
    for game in ("roborumble", "minirumble", "microrumble"):
        outcome = upload(battle(game=game, time_ms=result.time_ms))
        assert (outcome.kind, outcome.game) == (Kind.ACCEPTED, game)
    with _db(app) as conn:
        assert conn.execute("SELECT count(*) FROM battles").fetchone()[0] == 3


def test_counts_grow_with_each_battle(client, clock):
    now = clock.now_ms()
    assert post_upload(client, battle(time_ms=now))[0].counts == (1, 1)
    outcome, answer = post_upload(client, battle(time_ms=now + 1))
    assert outcome.counts == (2, 2) and "<2 2>" in answer.splitlines()


REFUSALS = [  # (the body, made from the test's clock; a part of the reason)
    (lambda clock: b"game=roborumble&version=1\n", "missing fields"),
    (lambda clock: format_upload(battle(scores=(-1, 5))), "fscore must be a non-negative whole number"),
    (
        lambda clock: format_upload(battle()).replace(b"fscore=6598", b"fscore=6x98"),
        "fscore must be a non-negative whole number",
    ),
    (
        lambda clock: format_upload(battle()).replace(b"fscore=6598", b"fscore=99999999999999999999"),
        "fscore is too large",
    ),
    (lambda clock: format_upload(battle(first="Corners")), "fname must be 'package.Class version'"),
    (lambda clock: format_upload(battle(first="p." + "x" * 80 + " 1")), "longer than 70"),
    (lambda clock: format_upload(battle(second="sample.Corners 1.0")), "cannot battle itself"),
    (lambda clock: format_upload(battle(rounds=10, firsts=(5, 5))), "rounds must be 35"),
    (lambda clock: format_upload(battle(field="1000x1000")), "field must be 800x600"),
    (lambda clock: format_upload(battle(melee=True)), "melee must be NOT"),
    (lambda clock: format_upload(battle(client="1.10.3")), "CLIENT NOT SUPPORTED"),
    (lambda clock: format_upload(battle(game="nosuchrumble")), "unknown game"),
    (lambda clock: format_upload(battle(time_ms=clock.now_ms() - 25 * 3_600_000)), "more than 24 hours old"),
    (lambda clock: format_upload(battle(time_ms=clock.now_ms() + 61 * 60_000)), "battle time lies in the future"),
    (lambda clock: b"\xff\xfe" * 50, "malformed field"),
]


@pytest.mark.parametrize("body, reason", REFUSALS)
def test_bad_upload_gets_an_ok_error_line_and_changes_nothing(app, client, upload, clock, body, reason):
    assert upload(battle(first="sample.Walls 0.9b")).kind is Kind.ACCEPTED  # accepted data that must stay undisturbed
    before = _state(app)
    outcome, answer = post_upload(client, body(clock))
    assert outcome.kind is Kind.REFUSED and reason in outcome.reason, outcome
    assert answer == replies.refused(outcome.reason) and answer.startswith("OK. ERROR: ") and answer.count("\n") == 1
    assert _state(app) == before


class _Recorded:
    """The app's way to the writer process, recording the battles it sends there to be stored."""

    def __init__(self, writer: single_writer.Writer) -> None:
        self.writer = writer
        self.battles: list = []

    def run(self, db, apply, prepare):
        self.battles.append(apply.args[0])
        return self.writer.run(db, apply, prepare)


@pytest.fixture
def through_writer(app, monkeypatch):
    """The app with a writer process, as under `rumble serve`; this process can no longer store a
    battle (the writer, a new interpreter, still can), so whatever was stored the writer stored."""
    supervisor = single_writer.Supervisor(app.config["RUMBLE"]["DB"], "NORMAL")
    recorded = app.extensions["rumble.writer"] = _Recorded(single_writer.Writer(supervisor.path))
    monkeypatch.setattr(decide_module.apply, "apply_battle", _not_here)
    yield recorded
    recorded.writer.close()
    supervisor.stop()


def _not_here(*args):
    raise AssertionError("a worker stored a battle that the writer process should have")


def test_a_worker_checks_uploads_and_the_writer_process_stores_them(app, client, clock, through_writer):
    """With a writer process the worker parses and checks each upload: it refuses every bad one
    itself, with the same answer as without a writer (the cases above), sending nothing and
    changing nothing, and sends a good one, parsed, to the writer, which stores it."""
    good = battle(first="sample.Walls 0.9b")
    outcome, answer = post_upload(client, format_upload(good))
    assert outcome.kind is Kind.ACCEPTED and answer.endswith(
        "OK. sample.Walls 0.9b vs sample.RamFire 1.0 received for roborumble\n"
    )
    (sent,) = through_writer.battles
    assert (sent.first.name, sent.second.name, sent.first.score, sent.time_ms) == (
        good.first.name,
        good.second.name,
        good.first.score,
        good.time_ms,
    )
    with _db(app) as conn:
        assert conn.execute("SELECT count(*) FROM battles").fetchone() == (1,)
    before = _state(app)
    for body, reason in REFUSALS:
        outcome, answer = post_upload(client, body(clock))
        assert outcome.kind is Kind.REFUSED and reason in outcome.reason, (reason, outcome)
        assert answer == replies.refused(outcome.reason)
    assert _state(app) == before
    assert len(through_writer.battles) == 1  # no refused upload went to the writer


def test_the_age_limit_follows_the_app_clock(app, client, clock):
    """A battle fought 23 hours ago is accepted; once the app's clock has moved 2 hours on, the same
    battle (now 25 hours old) is refused: the policy reads the app's clock, not the machine's."""
    old = battle(time_ms=clock.now_ms() - 23 * 3_600_000)
    assert post_upload(client, old)[0].kind is Kind.ACCEPTED
    clock.advance(hours=2)
    again = battle(first="sample.Walls 0.9b", time_ms=old.time_ms)
    assert post_upload(client, again)[0] == UploadOutcome(
        Kind.REFUSED, reason="your uploaded data is more than 24 hours old"
    )


def test_oversized_body_is_refused_without_reading_it(app, client):
    response = client.post("/UploadedResults", data=b"game=" + b"x" * 10_000)
    assert response.status_code == 200
    assert response.get_data(as_text=True).startswith("OK. ERROR: upload of 10005 bytes is larger than 4096")
    assert _state(app)[0] == []


@pytest.mark.parametrize("method", ["get", "put", "delete", "head"])
def test_wrong_method_on_upload_is_405(client, method):
    response = getattr(client, method)("/UploadedResults")
    assert response.status_code == 405
    assert response.headers["Allow"] == "OPTIONS, POST"


def test_options_on_upload_lists_its_methods(client):
    response = client.options("/UploadedResults")
    assert (response.status_code, response.headers["Allow"]) == (200, "OPTIONS, POST")


def test_ratings_file_has_the_clients_three_fields(client, upload, clock):
    assert upload(battle()).kind is Kind.ACCEPTED
    lines = client.get("/RatingsFile?version=1&game=roborumble").get_data(as_text=True).splitlines()
    assert len(lines) == 2
    key, value = lines[0].split("=")
    aps, battles, when = value.split(",")
    assert key == "sample.Corners_1.0"
    assert float(aps) == 100 * 6598 / (6598 + 4883)
    assert float(battles) == 1
    received = datetime.strptime(when, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    assert abs((clock.now() - received).total_seconds()) < 60  # stamped by the app's clock


@pytest.mark.parametrize("game", ["nosuchrumble", "", "<html>"])
def test_ratings_file_of_an_unknown_game_is_empty(client, game):
    response = client.get(f"/RatingsFile?version=1&game={game}")
    assert (response.status_code, response.data) == (200, b"")


def _remove(client, key: str, game: str = "roborumble") -> str:
    body = f"version=1&game={game}&name={key}&dummy=NA\n".encode()
    return client.post("/RemoveOldParticipant", data=body).get_data(as_text=True)


def test_remove_old_participant_retires_and_an_upload_revives(app, client, upload, clock):
    now = clock.now_ms()
    upload(battle(time_ms=now))
    upload(battle(first="sample.Walls 0.9b", second="sample.Corners 1.0", scores=(7000, 3000), time_ms=now + 1))
    assert _remove(client, "sample.RamFire_1.0") == "OK. sample.RamFire 1.0 retired from roborumble\n"
    ratings = client.get("/RatingsFile?version=1&game=roborumble").get_data(as_text=True)
    assert "RamFire" not in ratings
    corners = client.get("/Rankings?game=roborumble&api=1").json
    corners = next(r for r in corners if r["name"] == "sample.Corners 1.0")
    assert (corners["pairings"], corners["battles"]) == (1, 1)  # only the live pairing counts
    assert corners["aps"] == 100 * 3000 / 10000
    with _db(app) as conn:
        assert conn.execute("SELECT count(*) FROM battles").fetchone()[0] == 2  # battles stay in the log
        event = conn.execute("SELECT active, after_battle_id, source FROM participant_events").fetchall()
    assert event == [(0, 2, "RemoveOldParticipant (uploader Jane Doe) from 127.0.0.1")]
    upload(battle(time_ms=now + 2))  # RamFire uploads again: revived
    corners = next(r for r in client.get("/Rankings?game=roborumble&api=1").json if r["name"] == "sample.Corners 1.0")
    assert (corners["pairings"], corners["battles"]) == (2, 3)


def test_remove_old_participant_resolves_underscores_in_class_names(client, upload):
    upload(battle(first="dcs.Eater_of_Worlds_Mini 1.0"))
    assert _remove(client, "dcs.Eater_of_Worlds_Mini_1.0").startswith("OK. dcs.Eater_of_Worlds_Mini 1.0 retired")
    assert "already retired" in _remove(client, "dcs.Eater_of_Worlds_Mini_1.0")


def test_remove_unknown_bot_or_game_says_so(client, upload):
    upload(battle())
    assert "no bot 'nobody.Here_1.0' in roborumble" in _remove(client, "nobody.Here_1.0")
    assert "unknown game 'nosuch'" in _remove(client, "sample.Corners_1.0", game="nosuch")


def test_rankings_json_escapes_names_and_sorts(client, upload):
    upload(battle())
    upload(battle(first="sample.Walls 0.9b", second="sample.RamFire 1.0", scores=(9000, 1000)))
    rows = client.get("/Rankings?game=roborumble&api=1").json
    assert [r["name"] for r in rows] == ["sample.Walls 0.9b", "sample.Corners 1.0", "sample.RamFire 1.0"]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    by_name = client.get("/Rankings?game=roborumble&api=1&order=name").json
    assert [r["name"] for r in by_name] == sorted(r["name"] for r in rows)
    assert [r["rank"] for r in by_name] == [2, 3, 1]
    assert client.get("/Rankings?game=roborumble&order=nonsense").status_code == 400


def test_rankings_page_renders_a_sortable_table(client, upload):
    upload(battle())
    html = client.get("/Rankings?game=roborumble").get_data(as_text=True)
    assert "sample.Corners 1.0" in html and "order=-pwin" in html
    assert client.get("/Rankings?game=nosuch").status_code == 404
    assert client.get("/ScoreExplanation").status_code == 200
    assert "roborumble" in client.get("/").get_data(as_text=True)


def test_rankings_mark_statistical_ties_and_show_the_banner(client, upload, clock):
    """Three bots, one battle per pairing: no pairing has two battles, so no bot has an interval
    yet and each could rank anywhere from 1 to 3; two of three pairings are played → incomplete."""
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", (6000, 4000), time_ms=now))
    upload(battle("a.A 1", "c.C 1", (7000, 3000), time_ms=now + 1))
    rows = client.get("/Rankings?game=roborumble&api=1").json
    assert all(r["rank_range"] == [1, 3] and r["tied"] for r in rows)
    html = client.get("/Rankings?game=roborumble").get_data(as_text=True)
    assert "Pairings incomplete: 2 of 3 bots have not met everyone (1 pairing missing)." in html
    assert "(1–3)" in html
    upload(battle("b.B 1", "c.C 1", (5000, 5000), time_ms=now + 2))
    assert "Pairings complete: all 3 bots have met each other." in client.get("/Rankings?game=roborumble").get_data(
        as_text=True
    )
    client.post("/RemoveOldParticipant", data=b"version=1&game=roborumble&name=c.C_1&dummy=NA\n")
    assert "Ratings unstable" in client.get("/Rankings?game=roborumble").get_data(as_text=True)


def test_rankings_paginate_in_rank_order(client, upload, clock):
    now = clock.now_ms()
    for n, (a, b, s) in enumerate([("a.A 1", "b.B 1", 9000), ("a.A 1", "c.C 1", 8000), ("b.B 1", "c.C 1", 7000)]):
        upload(battle(a, b, (s, 10000 - s), time_ms=now + n))
    everyone = [r["name"] for r in client.get("/Rankings?game=roborumble&api=1").json]
    assert everyone == ["a.A 1", "b.B 1", "c.C 1"]
    assert [r["name"] for r in client.get("/Rankings?game=roborumble&api=1&limit=2").json] == everyone[:2]
    assert [r["name"] for r in client.get("/Rankings?game=roborumble&api=1&limit=2&page=2").json] == everyone[2:]
    assert client.get("/Rankings?game=roborumble&api=1&limit=2&page=3").json == []
    html = client.get("/Rankings?game=roborumble&limit=2").get_data(as_text=True)
    assert "Page 1 of 2" in html and "page=2" in html
    for bad in ("limit=0", "limit=x", "page=-1"):
        response = client.get(f"/Rankings?game=roborumble&{bad}")
        assert response.status_code == 400 and "must be a whole number" in response.get_data(as_text=True)


def test_remove_old_participant_is_logged_and_rate_limited_per_address(app, client, upload):
    """Every request that passes the checks is logged (address, user agent, game, name, outcome); an
    established address over REMOVALS_PER_HOUR of them in the last hour is refused in the protocol's
    form and retires nothing; refusals are counted, not logged."""
    from rumble import store
    from rumble.store import removals

    for addr in ("10.1.1.1", "10.2.2.2"):  # both addresses upload to roborumble, so their removals count
        post_upload(
            client,
            battle(first="sample.Walls 0.9b", second="sample.Corners 1.0", uploader=addr),
            environ_base={"REMOTE_ADDR": addr},
        )
        post_upload(
            client,
            battle(first="sample.Tracker 1.0", second="sample.Corners 1.0", uploader=addr),
            environ_base={"REMOTE_ADDR": addr},
        )
    for addr in ("10.1.1.1", "10.2.2.2"):
        vouch_for_local_uploads(app.config["RUMBLE"]["DB"], f"{addr}@{addr.rsplit('.', 1)[0]}.0/24")
    app.config["RUMBLE"]["REMOVALS_PER_HOUR"] = 3

    def remove(name: str, addr: str = "10.1.1.1") -> str:
        body = f"version=1&game=roborumble&name={name}&dummy=NA\n".encode()
        response = client.post(
            "/RemoveOldParticipant", data=body, environ_base={"REMOTE_ADDR": addr}, headers={"User-Agent": "Java/1.8.0"}
        )
        return response.get_data(as_text=True)

    assert remove("sample.Walls_0.9b") == "OK. sample.Walls 0.9b retired from roborumble\n"
    assert remove("sample.Walls_0.9b") == "OK. sample.Walls 0.9b was already retired from roborumble\n"
    assert remove("no.Such_1.0") == "OK. ERROR: no bot 'no.Such_1.0' in roborumble\n"  # refused: not counted
    assert remove("sample.Corners_1.0") == "OK. sample.Corners 1.0 retired from roborumble\n"
    limited = remove("sample.Tracker_1.0")  # the fourth in the hour from this address
    assert limited.startswith("OK. ERROR: more than 3 RemoveOldParticipant requests from your address in an hour")
    for _ in range(5):  # a flood: refused each time, none logged
        assert remove("sample.Tracker_1.0") == limited
    names = {r["name"] for r in client.get("/Rankings?game=roborumble&api=1").json}
    assert "sample.Tracker 1.0" in names and "sample.Walls 0.9b" not in names
    assert (
        remove("sample.Tracker_1.0", addr="10.2.2.2") == "OK. sample.Tracker 1.0 retired from roborumble\n"
    )  # another address
    db = store.connect(app.config["RUMBLE"]["DB"])
    logged = [
        (r["remote_addr"], r["user_agent"], r["game"], r["name"], r["outcome"]) for r in reversed(removals.recent(db))
    ]
    db.close()
    assert logged == [
        ("10.1.1.1", "Java/1.8.0", "roborumble", "sample.Walls_0.9b", "retired"),
        ("10.1.1.1", "Java/1.8.0", "roborumble", "sample.Walls_0.9b", "already retired"),
        ("10.1.1.1", "Java/1.8.0", "roborumble", "sample.Corners_1.0", "retired"),
        ("10.2.2.2", "Java/1.8.0", "roborumble", "sample.Tracker_1.0", "retired"),
    ]
