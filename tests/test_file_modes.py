"""The database holds the cookie-signing key and the token hashes: the files that carry it (the
database, its -wal and -shm, backups) are made readable by their owner alone (0600), whatever the
umask of whoever starts the server or a command."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from rumble import store
from rumble.cli import cli


@pytest.fixture(autouse=True)
def permissive_umask():
    """022, as in a login shell: the files must be 0600 by themselves, not thanks to the umask."""
    before = os.umask(0o022)
    yield
    os.umask(before)


@pytest.fixture(autouse=True)
def no_admin_token(monkeypatch):
    monkeypatch.delenv("RUMBLE_ADMIN_TOKEN", raising=False)


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_new_database_and_its_wal_and_shm_are_0600(tmp_path):
    path = tmp_path / "data" / "rumble.db"
    assert _run("migrate", "--db", str(path)).exit_code == 0
    assert mode(path) == 0o600
    conn = store.connect(path)  # WAL mode: a connection with a write keeps its -wal and -shm
    try:
        with store.write(conn):
            conn.execute("CREATE TABLE file_mode_probe (x)")
        for suffix in ("-wal", "-shm"):
            assert Path(f"{path}{suffix}").exists(), suffix
            assert mode(f"{path}{suffix}") == 0o600, suffix
    finally:
        conn.close()


def test_a_backup_is_0600_even_when_forced_over_a_readable_file(tmp_path):
    live = tmp_path / "rumble.db"
    _run("demo", "--db", str(live), "--battles", "20")
    copy = tmp_path / "backups" / "rumble-1.db"
    copy.parent.mkdir()
    result = _run("backup", "--db", str(live), str(copy))
    assert result.exit_code == 0, result.output
    assert mode(copy) == 0o600
    other = tmp_path / "backups" / "rumble-2.db"
    other.write_text("an older file, readable by all")
    os.chmod(other, 0o644)
    assert _run("backup", "--db", str(live), "--force", str(other)).exit_code == 0
    assert mode(other) == 0o600


def test_a_restore_prepares_its_copy_0600_and_keeps_the_live_files_0600(tmp_path, monkeypatch):
    from rumble.store import backup as backup_store

    live = tmp_path / "rumble.db"
    _run("demo", "--db", str(live), "--battles", "20")
    copy = tmp_path / "copy.db"
    _run("backup", "--db", str(live), str(copy))
    seen = []
    prepare = backup_store.prepare

    def watched(*args, **kwargs):
        prepared = prepare(*args, **kwargs)
        seen.append(mode(prepared))
        return prepared

    monkeypatch.setattr(backup_store, "prepare", watched)
    assert _run("restore", "--db", str(live), "--yes", str(copy)).exit_code == 0
    assert seen == [0o600]
    assert mode(live) == 0o600


def test_an_existing_database_keeps_its_mode(tmp_path):
    """Only new files are made 0600: an operator's own choice for an existing file stands."""
    path = tmp_path / "rumble.db"
    store.connect(path).close()
    os.chmod(path, 0o640)
    store.connect(path).close()
    assert mode(path) == 0o640
