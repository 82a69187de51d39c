"""`rumble rank` and `rumble batch` through click's CliRunner: matrix files and stored rumble runs."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from rumble import store
from rumble.cli import cli
from rumble.rankings.batch import METHODS
from rumble.store import batch_runs
from rumble.store.rumbles import rumble_id

# Wikipedia, "Schulze method", Example: d[X, Y] = voters preferring X to Y, rows and columns A..E
# (the same matrix as tests/rankings/test_schulze.py). Its Schulze ranking is E > A > C > B > D.
SCHULZE_CSV = """,A,B,C,D,E
A,,20,26,30,22
B,25,,16,33,18
C,19,29,,17,24
D,15,12,28,,14
E,23,27,21,31,
"""


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def write(tmp_path, text: str, name: str = "m.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def is_competition_ranking(ranks: list[int]) -> bool:
    """1-based ranks where tied bots share the best rank of their group: 1, 2, 2, 4."""
    return all(r == 1 + sum(other < r for other in ranks) for r in ranks)


def test_schulze_on_wikipedias_example_matrix_ranks_e_a_c_b_d(tmp_path):
    result = invoke("rank", "--matrix", write(tmp_path, SCHULZE_CSV), "--method", "schulze", "--csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [row["name"] for row in rows] == ["E", "A", "C", "B", "D"]
    assert [row["schulze_rank"] for row in rows] == ["1", "2", "3", "4", "5"]


def test_matrix_without_corner_cell_and_rows_in_any_order_reads_the_same(tmp_path):
    lines = SCHULZE_CSV.splitlines()
    text = "\n".join(["A,B,C,D,E", lines[5], *lines[1:5]]) + "\n"
    result = invoke("rank", "--matrix", write(tmp_path, text), "--method", "schulze", "--json")
    assert [row["name"] for row in json.loads(result.output)] == ["E", "A", "C", "B", "D"]


def test_all_methods_print_an_aligned_table_with_a_column_per_method(tmp_path):
    result = invoke("rank", "--matrix", write(tmp_path, SCHULZE_CSV))
    assert result.exit_code == 0, result.output
    header, rule, *body = result.output.splitlines()
    assert header.split()[:4] == ["name", "schulze", "ranked_pairs", "copeland"]
    assert "borda score" in header and "batch_elo score" in header
    end = header.index("schulze") + len("schulze")  # numbers right-aligned under their title
    assert len(body) == 5 and all(line[end - 1].isdigit() and line[end] == " " for line in body)
    assert [line.split()[0] for line in body] == ["E", "A", "C", "B", "D"]


def test_a_missing_pairing_is_an_empty_cell_and_a_bot_without_any_is_listed_unranked(tmp_path):
    text = ",A,B,C\nA,,60,\nB,40,,\nC,,,\n"
    result = invoke("rank", "--matrix", write(tmp_path, text), "--method", "copeland", "--json")
    rows = json.loads(result.output)
    assert rows == [
        {"name": "A", "copeland_rank": 1, "copeland_score": 1.0},
        {"name": "B", "copeland_rank": 2, "copeland_score": 0.0},
        {"name": "C", "copeland_rank": None, "copeland_score": None},
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no header row"),
        (",A,B\nA,,60\nB,40\n", "line 3: 2 cells, expected 3"),
        (",A,B\nA,,sixty\nB,40,\n", "line 2, column 'B': 'sixty' is not a number"),
        (",A,B\nA,,60\nC,40,\n", "line 3: the row name 'C' is not in the header"),
        (",A,B\nA,,60\nA,40,\n", "line 3: a second row for 'A'"),
        (",A,B,C\nA,,60,50\nB,40,,50\n", "the header has 3 names but 2 rows follow"),
        (",A,A\nA,,60\nA,40,\n", "the name 'A' appears twice"),
        (",A,B\nA,,-5\nB,40,\n", "'-5' is negative"),
        (",A,B\nA,,nan\nB,40,\n", "'nan' is not a finite number"),
        (",A,\nA,,60\n,40,\n", "line 1: column 3 has no name"),
    ],
    ids=[
        "empty",
        "ragged",
        "not-a-number",
        "unknown-row",
        "duplicate-row",
        "count",
        "duplicate-name",
        "negative",
        "nan",
        "no-name",
    ],
)
def test_malformed_matrix_file_is_refused_with_where_and_why(tmp_path, text, message):
    result = invoke("rank", "--matrix", write(tmp_path, text))
    assert result.exit_code == 1
    assert "is not a pairwise matrix" in result.output and message in result.output


def test_every_problem_of_a_file_is_listed(tmp_path):
    result = invoke("rank", "--matrix", write(tmp_path, ",A,B,C\nA,,x,1\nB,y,,1\nC,1,1\n"))
    assert "line 2, column 'B': 'x'" in result.output and "line 3, column 'A': 'y'" in result.output
    assert "line 4: 3 cells, expected 4" in result.output


@pytest.mark.parametrize(
    "args",
    [("rank",), ("rank", "--game", "roborumble", "--matrix", "FILE"), ("rank", "--matrix", "FILE", "--json", "--csv")],
    ids=["neither", "both", "two-formats"],
)
def test_rank_needs_exactly_one_source_and_one_format(tmp_path, args):
    path = write(tmp_path, SCHULZE_CSV)
    result = invoke(*[path if a == "FILE" else a for a in args], "--db", str(tmp_path / "d.db"))
    assert result.exit_code == 2


def test_rank_of_an_unknown_game_is_refused(tmp_path):
    result = invoke("rank", "--db", str(tmp_path / "d.db"), "--game", "nosuch")
    assert result.exit_code == 2 and "no rumble called 'nosuch'" in result.output


@pytest.fixture
def demo_db(tmp_path):
    """A database with 300 demo battles: the 20 demo bots, every pair met."""
    path = str(tmp_path / "d.db")
    assert invoke("demo", "--db", path, "--battles", "300").exit_code == 0
    return path


def test_rank_all_of_a_rumble_stores_the_run_and_prints_every_active_bot(demo_db):
    result = CliRunner().invoke(cli, ["rank", "--db", demo_db, "--game", "roborumble", "--method", "all", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert "stored as batch run 1: 20 bots, 300 battles" in result.stderr
    db = store.connect(demo_db)
    rid = rumble_id(db, "roborumble")
    page = batch_runs.alternative_rankings(db, rid, tuple(METHODS))
    active = {name for (name,) in db.execute("SELECT b.full_name FROM participants p JOIN bots b ON b.id = p.bot_id")}
    db.close()
    assert page["methods"] == list(METHODS) and page["runs"][0]["battles"] == 300
    assert {row["name"] for row in rows} == {row["name"] for row in page["rows"]} == active
    for method in ("aps", *METHODS):
        assert is_competition_ranking([row[f"{method}_rank"] for row in rows]), method
    # every pairing played: Borda = 19 × APS orders the bots exactly as APS does
    assert [row["borda_rank"] for row in rows] == [row["aps_rank"] for row in rows]


def test_rank_of_one_method_prints_that_method_after_aps(demo_db):
    result = CliRunner().invoke(cli, ["rank", "--db", demo_db, "--game", "roborumble", "--method", "vote", "--csv"])
    assert result.stdout.splitlines()[0] == "name,aps_rank,aps_score,vote_rank,vote_score"


def test_batch_runs_each_changed_rumble_once(demo_db):
    first = invoke("batch", "--db", demo_db)
    assert first.exit_code == 0 and first.output.startswith("roborumble: batch run 1, 20 bots, 300 battles")
    again = invoke("batch", "--db", demo_db)
    assert again.output == "no rumble changed since its last batch run\n"


def test_batch_also_stores_what_the_schedule_stores_for_the_pages(demo_db):
    """`rumble batch` from cron stands in for the schedule: after the rankings, the uploader table and
    the feed's completions of each rumble with battles are stored, each at the rumble's current version."""
    import json
    import sqlite3

    from rumble.store.export import log_version

    assert invoke("batch", "--db", demo_db).exit_code == 0
    conn = sqlite3.connect(demo_db)
    try:
        stored = conn.execute(
            "SELECT r.name, t.what, t.log_version FROM batch_tables t JOIN rumbles r ON r.id = t.rumble_id"
        ).fetchall()
        rid = conn.execute("SELECT id FROM rumbles WHERE name = 'roborumble'").fetchone()[0]
        current = json.dumps(log_version(conn, rid))
    finally:
        conn.close()
    assert {(name, what) for name, what, _ in stored} >= {("roborumble", "uploaders"), ("roborumble", "completions")}
    assert {version for name, _, version in stored if name == "roborumble"} == {current}
