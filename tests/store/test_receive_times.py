"""The battle log keeps a battle's receive time as whole milliseconds since 1970
(migrations/0031_receive_times_as_numbers.sql): received_at, the text every reader names, is a
virtual column computed from it, and reads the same as before the migration."""

from __future__ import annotations

import calendar
import sqlite3

import pytest
from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.store import battle_log, ladder_events, ms_time, time_ms
from rumble.store.migrations import migrate
from tests.store.older_schema import older_copy

BOTS = ("a.One 1.0", "b.Two 1.0", "c.Three 1.0")


def _ms(date: tuple[int, int, int, int, int, int], millis: int) -> int:
    """Milliseconds since 1970 by the calendar (``calendar.timegm``), not by the code under test."""
    return calendar.timegm((*date, 0, 0, 0)) * 1000 + millis


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1970-01-01 00:00:00.001", 1),
        ("2000-01-01 00:00:00.000", 946_684_800_000),  # the POSIX time of 2000-01-01T00:00Z
        ("2024-02-29 23:59:59.999", _ms((2024, 2, 29, 23, 59, 59), 999)),
        ("2039-12-31 12:00:00.500", _ms((2039, 12, 31, 12, 0, 0), 500)),
    ],
)
def test_a_store_time_and_its_milliseconds_are_each_others(text, ms):
    assert time_ms(text) == ms
    assert ms_time(ms) == text


def _log(db, clock, count: int) -> None:
    """``count`` battles among BOTS, each received a different number of milliseconds later."""
    with store.write(db):
        for k in range(count):
            clock.advance(seconds=k * 7.013)
            fought = battle(BOTS[k % 3], BOTS[(k + 1) % 3], time_ms=clock.now_ms() - 1000)
            assert apply.apply_battle(db, apply.with_receipt(fought, "10.0.0.1", clock.now()), 35, 3).stored


def test_a_log_that_kept_the_times_as_text_reads_the_same_times_after_the_migration(app, clock, tmp_path):
    db = store.connect(app.config["RUMBLE"]["DB"])
    _log(db, clock, 9)
    old = older_copy(db, tmp_path / "old.db", "0031_receive_times_as_numbers")
    db.close()
    # A battle whose time has no milliseconds, as an importer of an older release logged one.
    old.execute(
        "INSERT INTO battles (rumble_id, setup_id, teams, melee, rounds, uploader, client_time, first_bot_id, "
        "first_score, first_bullet_damage, first_firsts, second_bot_id, second_score, second_bullet_damage, "
        "second_firsts, received_at, address_id, state) SELECT rumble_id, setup_id, teams, melee, rounds, uploader, "
        "client_time + 1, first_bot_id, first_score, first_bullet_damage, first_firsts, second_bot_id, second_score, "
        "second_bullet_damage, second_firsts, '2026-01-01 00:00:00', address_id, state FROM battles WHERE id = 1"
    )
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        old.execute("UPDATE battles SET received_at = '2026-01-01 00:00:00' WHERE id = 1")
    texts = old.execute("SELECT id, received_at FROM battles ORDER BY id").fetchall()
    assert len(texts) == 10 and texts[-1][1] == "2026-01-01 00:00:00"
    texts[-1] = (texts[-1][0], "2026-01-01 00:00:00.000")  # what it reads after the migration
    counts = old.execute("SELECT * FROM upload_counts ORDER BY 1, 2, 3").fetchall()
    try:
        assert migrate(old)[0] == "0031_receive_times_as_numbers"  # (and any after it)
        assert old.execute("SELECT id, received_at FROM battles ORDER BY id").fetchall() == texts
        ms = old.execute("SELECT id, received_ms, typeof(received_ms) FROM battles ORDER BY id").fetchall()
        assert [(i, m) for i, m, _ in ms] == [(i, _by_calendar(text)) for i, text in texts]
        assert {kind for _, _, kind in ms} == {"integer"}
        hidden = {row[1]: row[6] for row in old.execute("PRAGMA table_xinfo(battles)")}
        assert hidden["received_at"] == 2  # a virtual column: nothing of it is stored
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            old.execute("UPDATE battles SET received_ms = received_ms + 1 WHERE id = 1")
        # The log goes on: a battle logged now reads back its text, and is counted by its day.
        clock.advance(days=1)
        with store.write(old):
            fought = battle(BOTS[0], BOTS[2], time_ms=clock.now_ms() - 1000)
            received = apply.with_receipt(fought, "10.0.0.2", clock.now())
            assert apply.apply_battle(old, received, 35, 3).stored
        newest = old.execute("SELECT received_at, received_ms FROM battles ORDER BY id DESC LIMIT 1").fetchone()
        assert newest == (received.received_at, _by_calendar(received.received_at))
        after = old.execute("SELECT * FROM upload_counts ORDER BY 1, 2, 3").fetchall()
        assert after[: len(counts)] == counts
        assert after[len(counts) :] == [(1, fought.uploader, received.received_at[:10], 1, received.received_at)]
    finally:
        old.close()


def _by_calendar(text: str) -> int:
    """``text`` ("YYYY-MM-DD HH:MM:SS.mmm") in milliseconds since 1970, read field by field."""
    date, clock_time = text.split(" ")
    seconds, millis = clock_time.split(".")
    return _ms((*map(int, date.split("-")), *map(int, seconds.split(":"))), int(millis))


@pytest.mark.parametrize("battle_by_battle", [False, True])
def test_a_rebuild_from_the_milliseconds_equals_the_online_tables(db, clock, battle_by_battle):
    """The compiled replay reads the receive times as numbers; the one battle by battle turns them
    back into text: either way the pairings' latest battles and the ratings come out as online."""
    _log(db, clock, 30)
    pairings = db.execute("SELECT * FROM pairings ORDER BY 1, 2, 3").fetchall()
    ratings = db.execute("SELECT * FROM ratings ORDER BY 1, 2").fetchall()
    latest = db.execute("SELECT max(last_battle) FROM pairings").fetchone()[0]
    assert latest == db.execute("SELECT max(received_at) FROM battles").fetchone()[0]
    with store.write(db):
        rebuild_rumble(db, "roborumble", 35, 3, battle_by_battle=battle_by_battle)
    assert db.execute("SELECT * FROM pairings ORDER BY 1, 2, 3").fetchall() == pairings
    assert db.execute("SELECT * FROM ratings ORDER BY 1, 2").fetchall() == ratings
    assert [row["received_at"] for row in battle_log.log_rows(db)] == [
        ms_time(m) for (m,) in db.execute("SELECT received_ms FROM battles ORDER BY id")
    ]


def test_the_feeds_completions_are_the_times_of_the_battles_that_completed_them(db, clock):
    """``ladder_events.completions`` compares the milliseconds: each bot's completion is the text of
    the first battle of the last of its pairings to get one, as read from the log's text here."""
    _log(db, clock, 12)
    rid = db.execute("SELECT id FROM rumbles WHERE name = 'roborumble'").fetchone()[0]
    ids = {name: bot_id for bot_id, name in db.execute("SELECT id, full_name FROM bots")}
    firsts: dict[tuple[str, str], str] = {}
    for row in battle_log.log_rows(db, rid):
        for bot, opponent in ((row["first_name"], row["second_name"]), (row["second_name"], row["first_name"])):
            firsts[bot, opponent] = min(firsts.get((bot, opponent), row["received_at"]), row["received_at"])
    expected = sorted(
        ({"name": b, "at": max(t for (x, _), t in firsts.items() if x == b)[:19]} for b in BOTS),
        key=lambda r: r["at"],
        reverse=True,
    )
    assert ladder_events.completions(db, rid, [(ids[b], b) for b in BOTS]) == expected
