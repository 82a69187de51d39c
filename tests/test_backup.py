"""`rumble backup` and `rumble restore`: SQLite's online backup out and back, round-tripping the
tables, refusing what is not a rumble database, and leaving a running server's connections sound."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner
from conftest import battle

from rumble import store
from rumble.cli import cli
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.games import load_rumbles
from rumble.store import backup as backup_store
from rumble.store.battle_log import count_battles
from rumble.store.migrations import applied, migrate
from rumble.store.tables import snapshot

BOTS = ["a.Alpha 1.0", "b.Beta 1.0", "c.Gamma 1.0"]


def _run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def _uploads(upload, bots: list[str], base: int = 3000) -> None:
    for i, a in enumerate(bots):
        for b in bots[i + 1 :]:
            upload(battle(a, b, (base + 300 * i, 2500)))


def _state(path: str) -> tuple[dict, int]:
    db = store.connect(path)
    found = snapshot(db), count_battles(db)
    db.close()
    return found


def test_backup_then_more_uploads_then_restore_gives_back_the_backups_tables(app, client, upload, tmp_path):
    live, copy = app.config["RUMBLE"]["DB"], str(tmp_path / "backup.db")
    _uploads(upload, BOTS)
    assert _run("backup", "--db", live, copy).exit_code == 0
    saved = _state(copy)
    assert saved == _state(live) and saved[1] == 3
    _uploads(upload, BOTS + ["d.Delta 1.0", "e.Epsilon 1.0"], base=5000)  # new bots, new ids
    client.post("/RemoveOldParticipant", data=b"version=1&game=roborumble&name=a.Alpha_1.0&dummy=NA\n")
    assert _state(live) != saved
    result = _run("restore", "--db", live, "--yes", copy)
    assert result.exit_code == 0 and "restored" in result.output
    assert _state(live) == saved
    # The app's own connection (a server worker's) cached ids of bots the backup lacks: an upload
    # after the restore must not use them, and the tables must still equal a rebuild.
    _uploads(upload, ["e.Epsilon 1.0", "f.Zeta 1.0"], base=4000)
    upload(battle("a.Alpha 1.0", "e.Epsilon 1.0", (3000, 3000)))
    db = store.connect(live)
    names = dict(db.execute("SELECT id, full_name FROM bots").fetchall())
    assert sorted(names.values()) == sorted(BOTS + ["e.Epsilon 1.0", "f.Zeta 1.0"])
    online = snapshot(db)
    with store.write(db):
        rebuild_rumble(db, "roborumble", load_rumbles()["roborumble"].rounds, 3)
    assert snapshot(db) == online and count_battles(db) == 5
    db.close()


def test_backup_refuses_to_overwrite_unless_forced(app, upload, tmp_path):
    live, copy = app.config["RUMBLE"]["DB"], tmp_path / "backup.db"
    copy.write_text("keep me")
    result = CliRunner().invoke(cli, ["backup", "--db", live, str(copy)])
    assert result.exit_code == 1 and "--force" in result.output and copy.read_text() == "keep me"
    _uploads(upload, BOTS)
    assert _run("backup", "--db", live, "--force", str(copy)).exit_code == 0
    assert _state(str(copy))[1] == 3
    assert not (tmp_path / "backup.db.partial").exists()


def test_backup_is_one_snapshot_while_writes_go_on(app, upload, tmp_path, monkeypatch):
    """A write between the backup's steps neither restarts it nor gets into the copy."""
    _uploads(upload, BOTS)
    monkeypatch.setattr(backup_store, "STEP_PAGES", 1)
    db = store.connect(app.config["RUMBLE"]["DB"])
    writer = store.connect(app.config["RUMBLE"]["DB"])
    steps = []

    def write_meanwhile(done: int, total: int) -> None:
        steps.append(done)
        with store.write(writer):
            writer.execute(
                "INSERT INTO bots (full_name, package, class_name, version, created_at) VALUES (?, 'x', 'Y', ?, 'now')",
                (f"x.Y {len(steps)}", str(len(steps))),
            )

    backup_store.backup(db, tmp_path / "copy.db", write_meanwhile)
    assert len(steps) > 10 and steps == sorted(steps)  # never restarted
    copy = sqlite3.connect(tmp_path / "copy.db")
    assert copy.execute("SELECT count(*) FROM bots WHERE package = 'x'").fetchone()[0] == 0
    assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one self-contained file
    copy.close(), db.close(), writer.close()


def test_restore_asks_first(app, upload, tmp_path):
    live, copy = app.config["RUMBLE"]["DB"], str(tmp_path / "backup.db")
    _run("backup", "--db", live, copy)
    _uploads(upload, BOTS)
    result = CliRunner().invoke(cli, ["restore", "--db", live, copy], input="n\n")
    assert result.exit_code == 1 and "Replace" in result.output
    assert _state(live)[1] == 3
    assert _run("restore", "--db", live, copy, input="y\n").exit_code == 0
    assert _state(live)[1] == 0


@pytest.mark.parametrize("content", ["not a database at all", "empty", "other tables"])
def test_restore_refuses_what_is_not_a_rumble_database(app, upload, tmp_path, content):
    live, bad = app.config["RUMBLE"]["DB"], tmp_path / "bad.db"
    if content == "other tables":
        conn = sqlite3.connect(bad)
        conn.execute("CREATE TABLE battles (x)")
        conn.commit(), conn.close()
    else:
        bad.write_text("" if content == "empty" else content)
    _uploads(upload, BOTS)
    before = _state(live)
    result = CliRunner().invoke(cli, ["restore", "--db", live, "--yes", str(bad)])
    assert result.exit_code == 1 and "bad.db" in result.output
    assert _state(live) == before


def test_restore_applies_the_migrations_a_backup_lacks(app, tmp_path):
    old = store.connect(tmp_path / "old.db", migrate=False)
    assert migrate(old, stop_before="0005_admin")[-1] == "0004_batch_rankings"
    old.execute("PRAGMA journal_mode = DELETE")
    old.close()
    live = app.config["RUMBLE"]["DB"]
    assert _run("restore", "--db", live, "--yes", str(tmp_path / "old.db")).exit_code == 0
    db = store.connect(live, migrate=False)
    assert "0005_admin" in applied(db) and "audit_log" in db.table_names()
    db.close()


def test_backup_and_restore_are_audited_in_the_live_database(app, tmp_path):
    live, copy = app.config["RUMBLE"]["DB"], str(tmp_path / "backup.db")
    _run("backup", "--db", live, copy)
    _run("restore", "--db", live, "--yes", copy)
    db = store.connect(live)
    actions = [row[0] for row in db.execute("SELECT action FROM audit_log ORDER BY id")]
    db.close()
    assert actions == ["restore"]  # the backup's own entry came after the copy was taken
