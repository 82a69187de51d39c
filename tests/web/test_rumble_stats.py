"""/RumbleStats: contributors, uploads per day and bots lacking pairings, as HTML and JSON."""

from __future__ import annotations

from conftest import battle

from rumble.protocol.replies import Kind, UploadOutcome
from rumble.protocol.upload import format_upload


def test_contributors_and_days_count_the_log(client, upload, clock):
    """Jane uploads two battles to roborumble and one to minirumble, Zoë one: in all rumbles Jane
    has 3 (all in the last 30 days), Zoë 1; today holds all 4; roborumble alone: Jane 2, Zoë 1."""
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", time_ms=now))
    upload(battle("a.A 1", "c.C 1", time_ms=now + 1))
    upload(battle("a.A 1", "c.C 1", time_ms=now + 1, game="minirumble"))
    upload(battle("b.B 1", "c.C 1", time_ms=now + 2, uploader="Zoë <b>"))
    page = client.get("/RumbleStats?api=1").json
    assert [(u["uploader"], u["battles"], u["recent"]) for u in page["uploaders"]] == [
        ("Jane Doe", 3, 3),
        ("Zoë <b>", 1, 1),
    ]
    assert sum(d["battles"] for d in page["uploads_per_day"]) == 4
    one = client.get("/RumbleStats?game=roborumble&api=1").json
    assert [(u["uploader"], u["battles"]) for u in one["uploaders"]] == [("Jane Doe", 2), ("Zoë <b>", 1)]
    assert one["lacking_pairings"] == []  # A, B and C have all met
    html = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert "Zoë &lt;b&gt;" in html and "Every active bot has met every other." in html


def test_bots_lacking_pairings_are_listed(client, upload, clock):
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", time_ms=now))
    upload(battle("c.C 1", "d.D 1", time_ms=now + 1))
    lacking = client.get("/RumbleStats?game=roborumble&api=1").json["lacking_pairings"]
    assert sorted((b["name"], b["missing"]) for b in lacking) == [
        ("a.A 1", 2),
        ("b.B 1", 2),
        ("c.C 1", 2),
        ("d.D 1", 2),
    ]


def test_unknown_rumble_is_404(client):
    assert client.get("/RumbleStats?game=nosuch").status_code == 404


def test_upload_outcomes_and_server_time_are_counted_per_day(app, client, upload):
    """Two accepted, one repeat, one refusal: counted by outcome once the worker's counts are saved."""
    from rumble import store
    from rumble.web.upload_counter import counts_for

    first = battle("alpha.Alpha 1.0", "beta.Beta 1.0")
    assert upload(first).kind is Kind.ACCEPTED
    assert upload(first).kind is Kind.DUPLICATE
    assert upload(battle("alpha.Alpha 1.0", "gamma.Gamma 1.0")).kind is Kind.ACCEPTED
    assert upload(b"game=roborumble&version=1").kind is Kind.REFUSED
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        assert counts_for(app.config["RUMBLE"]["DB"]).flush(db, force=True)
    finally:
        db.close()
    (day,) = client.get("/RumbleStats?api=1").json["uploads"]
    assert (day["accepted"], day["held"], day["duplicate"], day["refused"], day["error"]) == (2, 0, 1, 1, 0)
    assert 0 < day["mean_ms"] <= day["max_ms"] < 10_000
    (error,) = client.get("/RumbleStats?api=1").json["upload_errors"]
    assert error["outcome"] == "refused" and error["reason"]
    (mine,) = client.get("/RumbleStats?game=roborumble&api=1").json["uploads"]
    assert (mine["accepted"], mine["duplicate"], mine["refused"]) == (2, 1, 0)
    page = client.get("/RumbleStats").get_data(as_text=True)
    assert "Uploads and server time per day" in page and error["reason"] in page


def test_each_outcome_is_counted_under_its_kind_and_game(app, upload, db):
    """The counts come from the outcome the upload view decided, not from its answer's words: a
    battle held for review is counted as held, under its game; a refusal under no game."""
    from rumble.store import upload_stats as stored
    from rumble.web.upload_counter import counts_for

    assert upload(battle("alpha.Alpha 1.0", "beta.Beta 1.0", game="minirumble")).kind is Kind.ACCEPTED
    suspicious = battle(
        "alpha.Alpha 1.0", "beta.Beta 1.0", scores=(3000, 2000), firsts=(5, 5)
    )  # 10 firsts in 35 rounds
    held = upload(suspicious)
    assert (held.kind, held.game) == (Kind.HELD, "roborumble") and held.reason
    assert upload(b"game=roborumble&version=1").kind is Kind.REFUSED
    assert counts_for(app.config["RUMBLE"]["DB"]).flush(db, force=True)
    per_game = {game: stored.per_day(db, game, "0000-00-00") for game in ("minirumble", "roborumble")}
    assert [(d["accepted"], d["held"], d["refused"]) for d in per_game["minirumble"]] == [(1, 0, 0)]
    assert [(d["accepted"], d["held"], d["refused"]) for d in per_game["roborumble"]] == [(0, 1, 0)]
    assert [(d["accepted"], d["held"], d["refused"]) for d in stored.per_day(db, None, "0000-00-00")] == [(1, 1, 1)]


def test_a_server_fault_is_answered_500_counted_as_an_error_and_stores_nothing(app, client, db, monkeypatch, caplog):
    """An upload whose transaction raises: 500 (the client sends it again), nothing of it stored,
    counted as a server error under its class name only, and logged."""
    from rumble.ingest import decide
    from rumble.web.upload_counter import counts_for, upload_decided

    def failing(*args):
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(decide, "store_checked", failing)
    app.testing = False  # as served: the fault is answered, not raised to the caller
    app.config["PROPAGATE_EXCEPTIONS"] = False
    decided = []
    with upload_decided.connected_to(lambda app, outcome: decided.append(outcome), sender=app):
        response = client.post(
            "/UploadedResults", data=format_upload(battle()), content_type="application/x-www-form-urlencoded"
        )
    assert response.status_code == 500
    assert "disk on fire" in caplog.text  # the whole error in the server's log only
    assert decided == [UploadOutcome(Kind.ERROR, reason="server error (RuntimeError)")]
    assert db.execute("SELECT count(*) FROM battles").fetchone()[0] == 0
    assert counts_for(app.config["RUMBLE"]["DB"]).flush(db, force=True)
    (day,) = client.get("/RumbleStats?api=1").json["uploads"]
    assert (day["accepted"], day["refused"], day["error"]) == (0, 0, 1)
    (error,) = client.get("/RumbleStats?api=1").json["upload_errors"]
    assert error["reason"] == "server error (RuntimeError)"


def test_the_uploads_chart_adds_refusals_and_server_time_once_counted(app, client, upload):
    from rumble import store
    from rumble.web.upload_counter import counts_for

    assert "server time per upload" not in client.get("/RumbleStats/uploads.svg").get_data(as_text=True)
    assert upload(battle("alpha.Alpha 1.0", "beta.Beta 1.0")).kind is Kind.ACCEPTED
    assert upload(b"game=roborumble&version=1").kind is Kind.REFUSED
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        counts_for(app.config["RUMBLE"]["DB"]).flush(db, force=True)
    finally:
        db.close()
    chart = client.get("/RumbleStats/uploads.svg")
    assert chart.mimetype == "image/svg+xml"
    text = chart.get_data(as_text=True)
    assert "server time per upload" in text and "uploads refused" in text


def _log_counts(db) -> list[tuple]:
    """An independent count of the log: battles and last upload per rumble, uploader and UTC day."""
    return db.execute(
        "SELECT rumble_id, (SELECT name FROM uploaders WHERE id = uploader_id), substr(received_at, 1, 10), count(*), max(received_at) FROM battles GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()


def _counts(db) -> list[tuple]:
    return db.execute(
        "SELECT rumble_id, uploader, day, battles, last_upload FROM upload_counts ORDER BY 1, 2, 3"
    ).fetchall()


def test_upload_counts_follow_the_log_and_are_filled_in_for_an_existing_log(app, upload, tmp_path, clock):
    """The counts /RumbleStats reads equal a count of the log after uploads, a repeat (not logged)
    and a refusal; and migration 0010 fills them in for a database that already had a log."""
    from rumble import store
    from rumble.store.migrations import migrate
    from tests.store.older_schema import older_copy

    now = clock.now_ms()
    first = battle("a.A 1", "b.B 1", time_ms=now)
    for result in (
        first,
        first,
        battle("a.A 1", "c.C 1", time_ms=now + 1, uploader="Zoë"),
        battle("a.A 1", "c.C 1", time_ms=now + 2, game="minirumble"),
    ):
        upload(result)
    assert upload(b"game=roborumble&version=1").kind is Kind.REFUSED
    db = store.connect(app.config["RUMBLE"]["DB"])
    assert _counts(db) == _log_counts(db) and sum(row[3] for row in _counts(db)) == 3
    db.close()

    # A database migrated up to 0009 that logs battles, then gets 0010: the counts are filled in.
    source = store.connect(app.config["RUMBLE"]["DB"])
    old = older_copy(source, tmp_path / "old.db", "0010_upload_counts")
    source.close()
    assert "upload_counts" not in old.table_names()
    migrate(old)
    assert _counts(old) == _log_counts(old) and sum(row[3] for row in _counts(old)) == 3
    old.close()


def test_the_counts_are_saved_once_an_answer_has_gone_out_when_due(app, client, db):
    """The worker adds its counts to the database after an upload's answer is sent (the response's
    close), once FLUSH_SECONDS have passed since its last save: not before the answer, not sooner."""
    from rumble.store import upload_stats as stored
    from rumble.web.upload_counter import FLUSH_SECONDS, counts_for

    counts = counts_for(app.config["RUMBLE"]["DB"])
    counts.flush(db, force=True)  # whatever earlier tests of this process left
    form = "application/x-www-form-urlencoded"
    with client.post("/UploadedResults", data=format_upload(battle("a.A 1", "b.B 1")), content_type=form) as first:
        assert first.status_code == 200
    assert stored.per_day(db, None, "0000-00-00") == []  # saved at most every FLUSH_SECONDS
    counts.last_flush -= FLUSH_SECONDS
    response = client.post("/UploadedResults", data=format_upload(battle("a.A 1", "c.C 1")), content_type=form)
    assert stored.per_day(db, None, "0000-00-00") == []  # the answer is not yet on its way
    response.close()
    assert [(d["accepted"], d["refused"]) for d in stored.per_day(db, None, "0000-00-00")] == [(2, 0)]
