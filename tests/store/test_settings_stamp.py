"""Each upload reads the settings maintainers store from /admin (rumble.overrides.load); a process
keeps them while their stamp file (rumble.store.admin_settings.stamp) is unchanged, and every
committed change, from this process or another, replaces the stamp."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from rumble import overrides, store
from rumble.store import admin_settings

CLIENTS = ("1.9.3.9",)


def _accepted(db) -> tuple[str, ...]:
    return overrides.load(db).accepted_clients(CLIENTS)


def test_the_settings_read_are_kept_until_a_change_is_committed(tmp_path):
    db = store.connect(tmp_path / "rumble.db")
    other = store.connect(tmp_path / "rumble.db")
    try:
        assert _accepted(db) == CLIENTS
        # Written behind the stamp's back: not seen, which shows the copy is kept...
        other.execute("INSERT INTO admin_settings VALUES ('server', 'ACCEPTED_CLIENTS', '[\"1.9.5.0\"]', 'x', 'y')")
        assert _accepted(db) == CLIENTS
        # ...until a change is committed through admin_settings, which replaces the stamp.
        with store.write(other):
            overrides.set_clients(other, ("1.9.4.0",), "2026-01-01 00:00:00", "test")
            assert overrides.load(other).accepted_clients(CLIENTS) == ("1.9.4.0",)  # in the transaction: read
            assert _accepted(db) == CLIENTS  # not committed yet: still the old ones
        assert _accepted(db) == ("1.9.4.0",)
    finally:
        db.close()
        other.close()


def test_in_write_transactions_the_settings_are_read_again_only_after_a_change(tmp_path, monkeypatch):
    """The writer process asks on every upload, inside its transaction: the connection keeps what
    it read until another connection commits or it changes a setting itself."""
    db = store.connect(tmp_path / "rumble.db")
    other = store.connect(tmp_path / "rumble.db")
    reads = []
    real = admin_settings.all_overrides
    monkeypatch.setattr(admin_settings, "all_overrides", lambda conn: reads.append(conn) or real(conn))
    try:
        for _ in range(3):
            with store.write(db):
                assert _accepted(db) == _accepted(db) == CLIENTS
        assert reads == [db]
        with store.write(other):
            overrides.set_clients(other, ("1.9.4.0",), "2026-01-01 00:00:00", "test")
        with store.write(db):  # another connection committed: read again
            assert _accepted(db) == ("1.9.4.0",)
            overrides.set_clients(db, ("1.9.5.0",), "2026-01-01 00:00:00", "test")
            assert _accepted(db) == ("1.9.5.0",)  # its own change, in the same transaction
        assert reads == [db, db, db]
        try:
            with store.write(db):
                overrides.set_clients(db, ("1.9.6.0",), "2026-01-01 00:00:00", "test")
                assert _accepted(db) == ("1.9.6.0",)
                raise RuntimeError("the admin action failed after storing")
        except RuntimeError:
            pass
        with store.write(db):  # rolled back: what the table has, not what the transaction saw
            assert _accepted(db) == ("1.9.5.0",)
    finally:
        db.close()
        other.close()


def test_a_rolled_back_change_leaves_the_stamp_alone(tmp_path):
    db = store.connect(tmp_path / "rumble.db")
    try:
        before = admin_settings.stamp(db)
        try:
            with store.write(db):
                overrides.set_clients(db, ("1.9.4.0",), "2026-01-01 00:00:00", "test")
                raise RuntimeError("the admin action failed after storing")
        except RuntimeError:
            pass
        assert admin_settings.stamp(db) == before
        assert _accepted(db) == CLIENTS
    finally:
        db.close()


def test_a_change_committed_by_another_process_is_seen_at_once(tmp_path):
    path = tmp_path / "rumble.db"
    db = store.connect(path)
    try:
        assert _accepted(db) == CLIENTS
        change = textwrap.dedent(
            f"""
            from rumble import overrides, store
            db = store.connect({str(path)!r})
            with store.write(db):
                overrides.set_clients(db, ("1.9.6.0",), "2026-01-01 00:00:00", "another worker")
            """
        )
        subprocess.run([sys.executable, "-c", change], check=True, timeout=60)
        assert _accepted(db) == ("1.9.6.0",)
    finally:
        db.close()


def test_a_restore_brings_back_the_backups_settings(tmp_path):
    from rumble.store import backup

    db = store.connect(tmp_path / "rumble.db")
    try:
        backup.backup(db, tmp_path / "saved.db")  # no stored settings in the backup
        with store.write(db):
            overrides.set_clients(db, ("1.9.4.0",), "2026-01-01 00:00:00", "test")
        assert _accepted(db) == ("1.9.4.0",)
        source = backup.open_backup(tmp_path / "saved.db")
        try:
            prepared = backup.prepare(source, tmp_path / "rumble.db")
        finally:
            source.close()
        before = admin_settings.stamp(db)
        backup.restore(db, prepared)
        assert admin_settings.stamp(db) != before  # other processes read the settings again
        assert _accepted(db) == CLIENTS
    finally:
        db.close()
