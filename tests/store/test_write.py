"""store.write: one transaction, committed whole or rolled back whole, even when COMMIT itself fails."""

from __future__ import annotations

import sqlite3

import pytest

from rumble import store


def test_a_commit_that_fails_is_rolled_back_and_the_next_write_works(tmp_path):
    """A deferred foreign key is checked at COMMIT: the violation makes COMMIT itself fail. The
    write must roll back (nothing stored), forget the in-memory state it may have changed, and
    leave the connection ready for the next transaction."""
    db = store.connect(tmp_path / "r.db")
    try:
        db.conn.execute("PRAGMA foreign_keys = ON")
        db.conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        db.conn.execute(
            "CREATE TABLE child (id INTEGER PRIMARY KEY, "
            "parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
        )
        db.shared["marker"] = "changed in memory by the failed transaction"
        with pytest.raises(sqlite3.IntegrityError), store.write(db):
            db.conn.execute("INSERT INTO child (id, parent) VALUES (1, 99)")  # no parent 99: fails at COMMIT
        assert not db.conn.in_transaction
        assert "marker" not in db.shared
        assert db.execute("SELECT count(*) FROM child").fetchone()[0] == 0
        with store.write(db):
            db.conn.execute("INSERT INTO parent (id) VALUES (99)")
            db.conn.execute("INSERT INTO child (id, parent) VALUES (1, 99)")
        assert db.execute("SELECT id, parent FROM child").fetchall() == [(1, 99)]
    finally:
        db.close()


def test_times_are_written_in_utc_to_the_millisecond_truncated():
    from datetime import UTC, datetime, timedelta, timezone

    east = timezone(timedelta(hours=2, minutes=30))
    assert store.format_time(datetime(2026, 1, 1, 1, 5, 9, 999_999, tzinfo=east)) == "2025-12-31 22:35:09.999"
    assert store.format_time(datetime(2031, 7, 4, 12, 0, 0, 1_000, tzinfo=UTC)) == "2031-07-04 12:00:00.001"
    assert store.format_time(datetime(2031, 7, 4, 12, 0, 0, 0, tzinfo=UTC)) == "2031-07-04 12:00:00.000"


def test_a_wal_grown_during_a_long_read_is_cut_back_once_the_log_starts_again(tmp_path, monkeypatch):
    """A reader holding one snapshot keeps the WAL from starting again, so writes meanwhile grow it
    (a page read over the whole log at the time); once it ends and a checkpoint has copied the WAL,
    the next write starts it again and cuts the file back to WAL_SIZE_LIMIT, instead of keeping it
    at its largest for good."""
    monkeypatch.setattr(store, "WAL_SIZE_LIMIT", 64 * 1024)
    path = tmp_path / "r.db"
    writer, reader = store.connect(path), store.connect(path, migrate=False)
    writer.execute("CREATE TABLE t (x BLOB)")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchone()  # the snapshot is taken here and held
    for _ in range(200):
        writer.execute("INSERT INTO t VALUES (zeroblob(8000))")
    wal = tmp_path / "r.db-wal"
    grown = wal.stat().st_size
    assert grown > 1024 * 1024
    reader.execute("COMMIT")
    writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
    writer.execute("INSERT INTO t VALUES (1)")  # starts the WAL again from its beginning
    assert wal.stat().st_size <= 64 * 1024 < grown
    writer.close()
    reader.close()
