"""The battle log keeps a battle's uploader as a number (migrations/0032_uploaders_as_numbers.sql):
battles.uploader_id names a row of uploaders, and every reader of the log joins it for the name."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.store import battle_log, export, uploader_sums
from rumble.store.migrations import migrate
from tests.store.older_schema import older_copy

BOTS = ("a.One 1.0", "b.Two 1.0", "c.Three 1.0")
NAMES = ("Alice", "Bob", "Carol Ann")  # (the client's USER may hold a space)


def _log(db, clock, count: int, names=NAMES, game: str = "roborumble") -> None:
    """``count`` battles among BOTS, the k-th uploaded by ``names[k % len(names)]``."""
    with store.write(db):
        for k in range(count):
            clock.advance(seconds=3)
            fought = battle(
                BOTS[k % 3],
                BOTS[(k + 1) % 3],
                scores=(3000 + 97 * k, 2000),
                time_ms=clock.now_ms() - 1000,
                uploader=names[k % len(names)],
                game=game,
            )
            assert apply.apply_battle(db, apply.with_receipt(fought, "10.0.0.1", clock.now()), 35, 3).stored


def _counts(db) -> list[tuple]:
    return db.execute("SELECT * FROM upload_counts ORDER BY 1, 2, 3").fetchall()


def test_a_log_that_kept_the_names_reads_the_same_names_after_the_migration(app, clock, tmp_path):
    db = store.connect(app.config["RUMBLE"]["DB"])
    _log(db, clock, 12)
    old = older_copy(db, tmp_path / "old.db", "0032_uploaders_as_numbers")
    db.close()
    try:
        assert "uploader" in {row[1] for row in old.execute("PRAGMA table_info(battles)")}
        named = old.execute("SELECT id, uploader FROM battles ORDER BY id").fetchall()
        sums, counts = uploader_sums.rows(old), _counts(old)
        assert migrate(old)[0] == "0032_uploaders_as_numbers"
        columns = {row[1] for row in old.execute("PRAGMA table_info(battles)")}
        assert "uploader" not in columns and "uploader_id" in columns
        # Each name once, and every battle reads back the name it was logged with.
        assert sorted(name for (name,) in old.execute("SELECT name FROM uploaders")) == sorted(NAMES)
        assert [(row["id"], row["uploader"]) for row in battle_log.log_rows(old)] == named
        assert {t for (t,) in old.execute("SELECT DISTINCT typeof(uploader_id) FROM battles")} == {"integer"}
        assert uploader_sums.rows(old) == sums and _counts(old) == counts
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            old.execute("UPDATE battles SET uploader_id = uploader_id + 1 WHERE id = 1")
        # The log goes on: a known uploader keeps its number, a new one gets its own; the counts and
        # the sums take each battle under its uploader's name.
        clock.advance(days=1)
        with store.write(old):
            for name in ("Bob", "Dave"):
                clock.advance(seconds=1)
                fought = battle(BOTS[0], BOTS[1], time_ms=clock.now_ms() - 1000, uploader=name)
                received = apply.with_receipt(fought, "10.0.0.2", clock.now())
                assert apply.apply_battle(old, received, 35, 3).stored
        ids = dict(old.execute("SELECT name, id FROM uploaders"))
        assert len(ids) == 4
        newest = old.execute("SELECT uploader_id FROM battles ORDER BY id DESC LIMIT 2").fetchall()
        assert newest == [(ids["Dave"],), (ids["Bob"],)]
        day = received.received_at[:10]
        assert [row[1:4] for row in _counts(old) if row[2] == day] == [("Bob", day, 1), ("Dave", day, 1)]
        summed = {row[1] for row in uploader_sums.rows(old) if row[5] and row[4] == "10.0.0.2"}
        assert summed == {"Bob", "Dave"}
    finally:
        old.close()


def test_a_repeat_is_the_same_result_from_the_same_uploader(db, clock):
    """The log's identity of a result holds the uploader: a client's retry is a repeat, the same
    figures from another uploader are another battle."""
    _log(db, clock, 1)
    rid = db.execute("SELECT id FROM rumbles WHERE name = 'roborumble'").fetchone()[0]
    a, b = (db.execute("SELECT id FROM bots WHERE full_name = ?", (n,)).fetchone()[0] for n in BOTS[:2])
    fought = battle(BOTS[0], BOTS[1], time_ms=clock.now_ms() - 500, uploader="Alice")
    received = apply.with_receipt(fought, "10.0.0.1", clock.now())
    with store.write(db):
        assert battle_log.append_battle(db, rid, a, b, received) is not None
        assert battle_log.append_battle(db, rid, a, b, received) is None
        other = apply.with_receipt(battle(BOTS[0], BOTS[1], time_ms=fought.time_ms, uploader="Zed"), None, clock.now())
        assert battle_log.append_battle(db, rid, a, b, other) is not None


def test_an_uploader_made_in_a_transaction_that_rolled_back_is_made_again(db, clock):
    """The connection keeps uploaders' numbers between transactions; one made in a transaction that
    rolled back is forgotten with it, so the next battle of that uploader names a row that exists."""
    _log(db, clock, 1)
    fought = battle(BOTS[0], BOTS[2], time_ms=clock.now_ms() - 500, uploader="Newcomer")
    with pytest.raises(RuntimeError), store.write(db):
        assert apply.apply_battle(db, apply.with_receipt(fought, None, clock.now()), 35, 3).stored
        raise RuntimeError("the transaction fails after the battle was applied")
    assert db.execute("SELECT count(*) FROM uploaders WHERE name = 'Newcomer'").fetchone()[0] == 0
    with store.write(db):
        assert apply.apply_battle(db, apply.with_receipt(fought, None, clock.now()), 35, 3).stored
    (named,) = db.execute(
        "SELECT u.name FROM battles b JOIN uploaders u ON u.id = b.uploader_id ORDER BY b.id DESC LIMIT 1"
    ).fetchone()
    assert named == "Newcomer"


def test_a_rumbles_sqlite_export_names_its_own_uploaders_only(app, db, clock, tmp_path):
    _log(db, clock, 4, names=("Alice", "Bob"))
    _log(db, clock, 4, names=("Carol Ann",), game="minirumble")
    rid = db.execute("SELECT id FROM rumbles WHERE name = 'roborumble'").fetchone()[0]
    export.copy_rumble(app.config["RUMBLE"]["DB"], rid, tmp_path / "copy.sqlite")
    copy = sqlite3.connect(tmp_path / "copy.sqlite")
    try:
        assert sorted(name for (name,) in copy.execute("SELECT name FROM uploaders")) == ["Alice", "Bob"]
        named = copy.execute(
            "SELECT b.id, u.name FROM battles b JOIN uploaders u ON u.id = b.uploader_id ORDER BY b.id"
        ).fetchall()
    finally:
        copy.close()
    assert named == [(row["id"], row["uploader"]) for row in battle_log.log_rows(db, rid)]
