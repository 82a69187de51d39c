"""The command line, through click's CliRunner on real database files."""

from __future__ import annotations

import json

from click.testing import CliRunner

from rumble import store
from rumble.cli import cli
from rumble.store.tables import snapshot


def _run(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_demo_loads_a_ranked_rumble(tmp_path):
    db = str(tmp_path / "d.db")
    result = _run("demo", "--db", db, "--battles", "250")
    assert result.exit_code == 0 and "loaded 250 demo battles into roborumble" in result.output
    conn = store.connect(db)
    assert conn.execute("SELECT count(*) FROM bot_summaries").fetchone()[0] == 20
    conn.close()


def test_rebuild_reports_and_keeps_the_tables(tmp_path):
    db = str(tmp_path / "d.db")
    _run("demo", "--db", db, "--battles", "300")
    conn = store.connect(db)
    before = snapshot(conn)
    result = _run("rebuild", "--db", db)
    assert result.exit_code == 0 and "roborumble: replayed 300 battles" in result.output
    assert snapshot(conn) == before
    conn.close()


def test_rebuild_of_an_unknown_game_is_refused(tmp_path):
    result = CliRunner().invoke(cli, ["rebuild", "--db", str(tmp_path / "d.db"), "--game", "nosuch"])
    assert result.exit_code == 2 and "no rumble called 'nosuch'" in result.output


def test_export_then_import_reproduces_the_log(tmp_path):
    source, target = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    _run("demo", "--db", source, "--battles", "200")
    for fmt in ("jsonl", "csv"):
        path = str(tmp_path / f"log.{fmt}")
        assert _run("export", "--db", source, "--format", fmt, path).exit_code == 0
        result = _run("import", "--db", target, path)
        assert result.exit_code == 0
    assert "imported 0 battles" in result.output and "(200 already in the log)" in result.output
    a, b = store.connect(source), store.connect(target)
    assert snapshot(a) == snapshot(b)
    a.close(), b.close()


def test_import_with_a_bad_row_imports_nothing_and_names_the_line(tmp_path):
    source, target = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    _run("demo", "--db", source, "--battles", "20")
    path = tmp_path / "log.jsonl"
    _run("export", "--db", source, str(path))
    lines = path.read_text().splitlines()
    row = json.loads(lines[5])
    row["first_score"] = -3
    lines[5] = json.dumps(row)
    lines[9] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli, ["import", "--db", target, str(path)])
    assert result.exit_code == 1
    assert "2 bad row(s)" in result.output and "nothing was imported" in result.output
    assert "line 6: first_score must be a non-negative whole number" in result.output
    assert "line 10: not a JSON object" in result.output
    conn = store.connect(target)
    assert conn.execute("SELECT count(*) FROM battles").fetchone()[0] == 0
    conn.close()


def test_migrate_lists_applied_migrations(tmp_path):
    result = _run("migrate", "--db", str(tmp_path / "m.db"))
    assert result.output.splitlines()[0] == "0001_battle_log"
