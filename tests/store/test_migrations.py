"""The schema only moves forward by numbered, recorded migrations; the battle log is append-only."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from rumble import store
from rumble.store.migrations import MIGRATIONS_DIR, applied, migrate, migration_files


def test_migration_files_are_numbered_without_gaps():
    files = migration_files()
    assert [int(f.name[:4]) for f in files] == list(range(1, len(files) + 1))


def test_misnumbered_migration_is_rejected(tmp_path):
    (tmp_path / "0001_first.sql").write_text("CREATE TABLE a (x);")
    (tmp_path / "0003_third.sql").write_text("CREATE TABLE b (x);")
    with pytest.raises(ValueError, match="should be numbered 0002"):
        migration_files(tmp_path)


def test_connect_applies_and_records_every_migration_once(tmp_path):
    path = tmp_path / "r.db"
    db = store.connect(path)
    assert applied(db) == [f.stem for f in migration_files()]
    assert migrate(db) == []  # nothing pending the second time
    assert {
        "battles",
        "bots",
        "participants",
        "pairings",
        "bot_summaries",
        "rumbles",
        "priority_battles",
        "participant_events",
    } <= set(db.table_names())
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_a_failing_migration_leaves_nothing_behind_and_stays_pending(tmp_path):
    (tmp_path / "0001_ok.sql").write_text("CREATE TABLE a (x);")
    (tmp_path / "0002_broken.sql").write_text("CREATE TABLE b (x); THIS IS NOT SQL;")
    db = store.connect(tmp_path / "r.db", migrate=False)
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, tmp_path)
    assert "b" not in db.table_names()
    assert [m for m in db.execute("SELECT name FROM _sqlite_migrations").fetchall()] == [("0001_ok",)]
    db.close()


def test_battle_log_rows_cannot_be_deleted_or_rewritten(tmp_path, upload, app):
    from conftest import battle

    upload(battle())
    conn = sqlite3.connect(app.config["RUMBLE"]["DB"])
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM battles")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE battles SET first_score = 1")
    conn.execute("UPDATE battles SET state = 'flagged'")  # the one column that may change
    conn.close()


def test_migrations_dir_is_the_repositorys():
    assert MIGRATIONS_DIR.name == "migrations" and (MIGRATIONS_DIR / "0001_battle_log.sql").exists()


def test_server_connections_checkpoint_outside_commits(tmp_path):
    """Automatic checkpoints are off; checkpoint_if_due copies the WAL back after enough commits."""
    db = store.connect(tmp_path / "c.db", autocheckpoint=False)
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    for n in range(store.CHECKPOINT_EVERY):
        with store.write(db):
            db.execute(
                "INSERT INTO bots (full_name, package, class_name, version, created_at) VALUES (?, 'p', 'B', ?, 'now')",
                (f"p.B {n}", str(n)),
            )
    assert db.commits_since_checkpoint == store.CHECKPOINT_EVERY
    before = os.path.getsize(tmp_path / "c.db")  # the new rows are only in the WAL so far
    store.checkpoint_if_due(db)
    assert db.commits_since_checkpoint == 0
    assert os.path.getsize(tmp_path / "c.db") > before  # now copied into the database file
    db.close()


def _checkpoint_with_writers(tmp_path, monkeypatch, appended: list[int]) -> tuple[int, list]:
    """``store.checkpoint`` while another connection commits ``appended[k]`` rows during the k-th
    pass that runs beside it; (what checkpoint returns, its steps in order: for each pass whether it
    held the write lock, and "sync" for each sync of the database file)."""
    path = tmp_path / "k.db"
    db = store.connect(path, autocheckpoint=False)
    other = store.connect(path, migrate=False, autocheckpoint=False)
    rows = iter(range(10**6))

    def commit(count: int) -> None:
        for _ in range(count):
            with store.write(other):
                n = next(rows)
                other.execute(
                    "INSERT INTO bots (full_name, package, class_name, version, created_at) "
                    "VALUES (?, 'p', 'B', ?, 'now')",
                    (f"p.B {n}", str(n)),
                )

    commit(400)
    steps: list = []
    real = store._checkpoint_pass

    # The commits of a pass "beside the writers" are made after it, as if made while it ran: a
    # reader holding the newest snapshot keeps the next commit from starting the WAL again, as
    # frames appended during a pass do.
    reader = sqlite3.connect(path, isolation_level=None)

    def lock_held() -> bool:
        probe = store.try_lock(db.lock_path)  # None while the checkpoint holds the write lock
        if probe is not None:
            probe.close()
        return probe is None

    real_sync = store._sync

    def sync(conn):
        assert not lock_held()  # a sync of the file outside the lock: the locked pass's own is short
        steps.append("sync")
        real_sync(conn)

    def pass_beside_writers(conn):
        probe = store.try_lock(db.lock_path)
        steps.append(probe is None)
        if reader.in_transaction:
            reader.execute("COMMIT")
        if probe is None:
            return real(conn)
        probe.close()
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM bots").fetchone()
        frames = real(conn)
        commit(appended.pop(0) if appended else 0)
        return frames

    monkeypatch.setattr(store, "_checkpoint_pass", pass_beside_writers)
    monkeypatch.setattr(store, "_sync", sync)
    try:
        last = store.checkpoint(db)
        monkeypatch.undo()
        busy, log, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert (busy, copied) == (0, log)  # nothing left to copy: the next write starts the WAL again
        commit(1)
        assert db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1] < 10
    finally:
        reader.close()
        other.close()
        db.close()
    return last, steps


def test_a_checkpoint_holds_the_write_lock_only_for_what_its_last_short_pass_let_through(tmp_path, monkeypatch):
    """Passes beside the writers, each followed by a sync of the file, go on while each finds many
    new frames (300 commits' worth), stop at one that finds few (20 commits), and the pass under
    the lock copies only the frames of the 5 commits made during that last one; one unlocked pass
    then a locked one would have held the lock for the 300 commits and the sync of all."""
    last, steps = _checkpoint_with_writers(tmp_path, monkeypatch, [300, 20, 5])
    assert steps == [False, "sync", False, "sync", False, "sync", True]
    assert 5 <= last < 20  # at least a page a commit; fewer than the 20 commits' frames


def test_a_checkpoint_takes_the_lock_after_its_last_pass_beside_writers_that_never_pause(tmp_path, monkeypatch):
    """Writers that never pause: CHECKPOINT_PASSES passes beside them, then the lock all the same (the WAL must end)."""
    last, steps = _checkpoint_with_writers(tmp_path, monkeypatch, [300] * 10)
    assert steps == [False, "sync"] * store.CHECKPOINT_PASSES + [True]
    assert last >= store.CHECKPOINT_LOCKED_FRAMES  # the 300 commits of the last pass beside them


def test_a_checkpoint_keeps_this_processs_locks_so_another_process_leaves_the_wal_in_use(tmp_path):
    """The checkpoint's own sync of the database file must not drop SQLite's POSIX locks (closing any
    descriptor of the file would): with them gone, another process closing its last connection
    takes this one's for gone too, checkpoints and deletes the WAL this connection still uses."""
    path = tmp_path / "w.db"
    db = store.connect(path, autocheckpoint=False)
    other = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM bots'); c.close()"
    try:
        for n in range(3):
            with store.write(db):
                db.execute(
                    "INSERT INTO bots (full_name, package, class_name, version, created_at) "
                    "VALUES (?, 'p', 'B', ?, 'now')",
                    (f"p.B {n}", str(n)),
                )
            store.checkpoint(db)
            subprocess.run([sys.executable, "-c", other, str(path)], check=True)
            assert os.path.exists(f"{path}-wal")  # still this connection's WAL, not deleted under it
    finally:
        db.close()


def test_migration_0014_recomputes_pwin_without_half_wins_for_draws(tmp_path):
    """A summary stored by the old rule (2 won, 1 drawn, 1 lost: PWIN 62.5) reads 50 after 0014."""
    db = store.connect(tmp_path / "r.db", migrate=False)
    files = migration_files()
    upto = tmp_path / "before"
    upto.mkdir()
    for path in files:
        if int(path.name[:4]) < 14:
            (upto / path.name).write_text(path.read_text())
    migrate(db, upto)
    db.conn.execute(
        "INSERT INTO bot_summaries (rumble_id, bot_id, pairings, battles, aps_exact, survival_exact, wins, draws, losses, "
        "ci_count, ci_exact, pl, pwin, last_battle) VALUES (1, 1, 4, 9, '0', '0', 2, 1, 1, 0, '0', 1, 62.5, ''), "
        "(1, 2, 0, 0, '0', '0', 0, 0, 0, 0, '0', 0, NULL, '')"
    )
    migrate(db)
    assert db.execute("SELECT bot_id, pwin FROM bot_summaries ORDER BY bot_id").fetchall() == [(1, 50.0), (2, None)]
    db.close()
