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
