"""The command line, through click's CliRunner on real database files."""

from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import audit_rows
from jar_support import client_reads

from rumble import store
from rumble.app import create_app
from rumble.cli import cli
from rumble.ingest.jar_check import Limits, check_jar
from rumble.maintenance.demo import DEMO_BOTS
from rumble.store.tables import snapshot
from rumble.web import close_thread_db


def _run(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_demo_loads_a_ranked_rumble(tmp_path):
    db = str(tmp_path / "d.db")
    result = _run("demo", "--db", db, "--battles", "250")
    assert result.exit_code == 0 and "loaded 250 demo battles into roborumble" in result.output
    assert "rumble: listed 20 demo robots on its participants list (/Participants?game=roborumble)" in result.output
    conn = store.connect(db)
    assert conn.execute("SELECT count(*) FROM bot_summaries").fetchone()[0] == 20
    conn.close()


def test_the_demo_lists_its_robots_on_the_participants_list_as_a_maintainer_would(tmp_path):
    db = str(tmp_path / "d.db")
    assert _run("demo", "--db", db, "--battles", "50").exit_code == 0
    app = create_app({"DB": db, "BATCH_INTERVAL_MINUTES": 0})
    client = app.test_client()
    listed = client_reads(client.get("/Participants?game=roborumble").get_data(as_text=True))
    assert sorted(name for name, _ in listed) == sorted(DEMO_BOTS)
    for name, url in listed:  # each jar passes the checks the real client makes (protocol.md 4)
        jar = client.get(url.removeprefix("http://localhost"))
        assert jar.status_code == 200 and jar.headers["Content-Type"] == "application/java-archive"
        assert check_jar(jar.data, name, False, Limits(1 << 20, 100, 1 << 20)).name == name
    rows = audit_rows(app)
    assert {(row["who"], row["action"]) for row in rows} == {("demo", "enter")} and len(rows) == 20
    close_thread_db()


def test_rebuild_reports_and_keeps_the_tables(tmp_path):
    db = str(tmp_path / "d.db")
    _run("demo", "--db", db, "--battles", "300")
    conn = store.connect(db)
    before = snapshot(conn)
    result = _run("rebuild", "--db", db)
    assert result.exit_code == 0 and "roborumble: replayed 300 battles" in result.output
    assert snapshot(conn) == before
    conn.close()


def test_rebuild_rewrites_the_pairings_and_summaries_that_differ_from_the_log(tmp_path):
    db = str(tmp_path / "d.db")
    _run("demo", "--db", db, "--battles", "300")
    conn = store.connect(db)
    before = snapshot(conn)
    (a, b), (c, d) = conn.execute("SELECT bot_id, opponent_id FROM pairings ORDER BY bot_id, opponent_id LIMIT 2")
    with store.write(conn):  # one pairing off, one missing, one the log never had, a summary off
        conn.execute(
            "UPDATE pairings SET aps = aps + 1, last_battle = '2001-01-01 00:00:00.000' WHERE bot_id = ? AND opponent_id = ?",
            (a, b),
        )
        conn.execute("DELETE FROM pairings WHERE bot_id = ? AND opponent_id = ?", (c, d))
        conn.execute(
            "INSERT INTO pairings (rumble_id, bot_id, opponent_id, battles, aps, aps_m2, survival, last_battle) "
            "SELECT rumble_id, bot_id, bot_id, 1, 50, 0, 50, last_battle FROM pairings LIMIT 1"
        )
        conn.execute("UPDATE bot_summaries SET aps = 0")
    assert snapshot(conn) != before
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
