"""/RumbleStats: contributors, uploads per day and bots lacking pairings, as HTML and JSON."""

from __future__ import annotations

import time

from conftest import battle


def test_contributors_and_days_count_the_log(client, upload):
    """Jane uploads two battles to roborumble and one to minirumble, Zoë one: in all rumbles Jane
    has 3 (all in the last 30 days), Zoë 1; today holds all 4; roborumble alone: Jane 2, Zoë 1."""
    now = int(time.time() * 1000)
    upload(battle("a.A 1", "b.B 1", time_ms=now))
    upload(battle("a.A 1", "c.C 1", time_ms=now + 1))
    upload(battle("a.A 1", "c.C 1", time_ms=now + 1, game="minirumble"))
    upload(battle("b.B 1", "c.C 1", time_ms=now + 2, uploader="Zoë <b>"))
    page = client.get("/RumbleStats?api=1").json
    assert [(u["uploader"], u["battles"], u["recent"]) for u in page["uploaders"]] == [("Jane Doe", 3, 3), ("Zoë <b>", 1, 1)]
    assert sum(d["battles"] for d in page["uploads_per_day"]) == 4
    one = client.get("/RumbleStats?game=roborumble&api=1").json
    assert [(u["uploader"], u["battles"]) for u in one["uploaders"]] == [("Jane Doe", 2), ("Zoë <b>", 1)]
    assert one["lacking_pairings"] == []  # A, B and C have all met
    html = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert "Zoë &lt;b&gt;" in html and "Every active bot has met every other." in html


def test_bots_lacking_pairings_are_listed(client, upload):
    now = int(time.time() * 1000)
    upload(battle("a.A 1", "b.B 1", time_ms=now))
    upload(battle("c.C 1", "d.D 1", time_ms=now + 1))
    lacking = client.get("/RumbleStats?game=roborumble&api=1").json["lacking_pairings"]
    assert sorted((b["name"], b["missing"]) for b in lacking) == [("a.A 1", 2), ("b.B 1", 2), ("c.C 1", 2), ("d.D 1", 2)]


def test_unknown_rumble_is_404(client):
    assert client.get("/RumbleStats?game=nosuch").status_code == 404


def test_upload_outcomes_and_server_time_are_counted_per_day(app, client, upload):
    """Two accepted, one repeat, one refusal: counted by outcome once the worker's counts are saved."""
    from rumble import store
    from rumble.web.upload_stats import counts_for

    first = battle("alpha.Alpha 1.0", "beta.Beta 1.0")
    assert "received" in upload(first)
    assert "already received" in upload(first)
    assert "received" in upload(battle("alpha.Alpha 1.0", "gamma.Gamma 1.0"))
    assert "ERROR" in upload(b"game=roborumble&version=1")
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        assert counts_for(app.config["RUMBLE"]["DB"]).flush(db, force=True)
    finally:
        db.close()
    (day,) = client.get("/RumbleStats?api=1").json["uploads"]
    assert (day["accepted"], day["duplicate"], day["refused"], day["error"]) == (2, 1, 1, 0)
    assert 0 < day["mean_ms"] <= day["max_ms"] < 10_000
    (error,) = client.get("/RumbleStats?api=1").json["upload_errors"]
    assert error["outcome"] == "refused" and error["reason"]
    (mine,) = client.get("/RumbleStats?game=roborumble&api=1").json["uploads"]
    assert (mine["accepted"], mine["duplicate"], mine["refused"]) == (2, 1, 0)
    page = client.get("/RumbleStats").get_data(as_text=True)
    assert "Uploads and server time per day" in page and error["reason"] in page


def test_an_answers_outcome_is_read_from_the_protocols_own_words():
    from rumble.protocol import replies
    from rumble.web.upload_stats import outcome

    a, b = "alpha.Alpha 1.0", "beta.Beta 1.0"
    assert outcome(replies.accepted(a, b, "minirumble", (3, 4), "[alpha.Alpha_1.0,beta.Beta_1.0]")) == ("accepted", "minirumble", "")
    assert outcome(replies.duplicate(a, b, "roborumble", (3, 4))) == ("duplicate", "roborumble", "")
    assert outcome(replies.refused("unknown game 'x'")) == ("refused", "", "unknown game 'x'")
    # a battle held for review is stored: counted as accepted, under its game without the comma after it
    assert outcome(replies.held(a, b, "roborumble", (3, 4), "bullet damage above the score")) == ("accepted", "roborumble", "")


def test_the_uploads_chart_adds_refusals_and_server_time_once_counted(app, client, upload):
    from rumble import store
    from rumble.web.upload_stats import counts_for

    assert "server time per upload" not in client.get("/RumbleStats/uploads.svg").get_data(as_text=True)
    upload(battle("alpha.Alpha 1.0", "beta.Beta 1.0"))
    upload(b"game=roborumble&version=1")
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
        "SELECT rumble_id, uploader, substr(received_at, 1, 10), count(*), max(received_at) FROM battles GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()


def _counts(db) -> list[tuple]:
    return db.execute("SELECT rumble_id, uploader, day, battles, last_upload FROM upload_counts ORDER BY 1, 2, 3").fetchall()


def test_upload_counts_follow_the_log_and_are_filled_in_for_an_existing_log(app, upload, tmp_path):
    """The counts /RumbleStats reads equal a count of the log after uploads, a repeat (not logged)
    and a refusal; and migration 0010 fills them in for a database that already had a log."""
    import shutil

    from rumble import store
    from rumble.store.migrations import migrate, migration_files

    now = int(time.time() * 1000)
    first = battle("a.A 1", "b.B 1", time_ms=now)
    for result in (first, first, battle("a.A 1", "c.C 1", time_ms=now + 1, uploader="Zoë"),
                   battle("a.A 1", "c.C 1", time_ms=now + 2, game="minirumble")):  # fmt: skip
        upload(result)
    assert "ERROR" in upload(b"game=roborumble&version=1")
    db = store.connect(app.config["RUMBLE"]["DB"])
    assert _counts(db) == _log_counts(db) and sum(row[3] for row in _counts(db)) == 3
    db.close()

    # A database migrated up to 0009 that logs battles, then gets 0010: the counts are filled in.
    older = tmp_path / "older"
    older.mkdir()
    for path in migration_files():
        if int(path.name[:4]) < 10:
            shutil.copy(path, older / path.name)
    old = store.connect(tmp_path / "old.db", migrate=False)
    migrate(old, older)
    source = store.connect(app.config["RUMBLE"]["DB"])
    for table in ("rumbles", "bots", "battles"):
        columns = [row[1] for row in source.execute(f"PRAGMA table_info({table})")]
        rows = source.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
        old.conn.executemany(f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)
    source.close()
    assert "upload_counts" not in old.table_names()
    migrate(old)
    assert _counts(old) == _log_counts(old) and sum(row[3] for row in _counts(old)) == 3
    old.close()
