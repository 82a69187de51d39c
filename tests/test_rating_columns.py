"""Every list of rating names and batch methods comes from its one declaration
(rumble.ratings.columns.RATINGS, rumble.rankings.batch.METHODS): a method added there reaches the
field, the compiled step, the tables, the pages and the API, and a migrated database has its columns."""

from __future__ import annotations

import math

from rumble import store
from rumble.cli import RANK_METHODS
from rumble.rankings.batch import METHODS
from rumble.ratings import all_pairings, columns, online
from rumble.ratings.columns import RATINGS, ROWS, STORED
from rumble.store import details, history, rating_rows, tables
from rumble.web import cells, lookup, page_data


def test_the_compiled_step_reads_its_methods_rows_from_the_declaration():
    compiled = [value for r in RATINGS if r.step is None for value in r.values]
    names = ("elo", "glicko", "glicko_rd", "glicko2", "glicko2_rd", "glicko2_volatility", "rank_points", "xonstat")
    rows = [getattr(all_pairings, name.upper()) for name in (*names, "rated_at")]
    assert rows == [ROWS.index(name) for name in (*names, "rated_at")]
    # the step writes rows 0..VALUES-1: exactly the compiled methods' values and the update time
    assert sorted(compiled) == sorted(names) and ROWS[: all_pairings.VALUES] == (*compiled, "rated_at")


def test_a_new_bot_starts_at_each_declared_start_value():
    fresh = online.unrated()
    for rating in RATINGS:
        for name, start in rating.stored:
            assert getattr(fresh, name) == start, name
    assert math.isnan(fresh.rated_at) and fresh.xonstat_battles == 0
    assert (fresh.elo, fresh.glicko2_rd, fresh.rank_points) == (1600.0, 350.0, 0.0)  # seeds 004, 000


def test_store_pages_and_api_list_every_declared_rating_in_order():
    assert rating_rows.COLUMNS == (*ROWS, "xonstat_battles")
    at = tables.RANKING_COLUMNS.index("losses") + 1
    assert tables.RANKING_COLUMNS[at : at + len(STORED)] == STORED
    assert [k for k in tables.RANKING_ORDER if k in {r.name for r in RATINGS}] == [r.name for r in RATINGS]
    assert details.RATING_COLUMNS == STORED
    assert history.HISTORY_COLUMNS[5:] == columns.SNAPSHOTTED
    titles = [(k, t) for k, t in page_data.COLUMN_TITLES.items() if k in {r.name for r in RATINGS}]
    assert titles == [(r.name, r.title) for r in RATINGS]
    assert all(r.name in cells.RANKING_FORMATS for r in RATINGS)


def test_the_rankings_row_formats_each_rating_as_declared():
    row = {name: 1234.56 for name in STORED} | {"glicko_rd": 40.0, "glicko2_rd": 50.0}
    expected = {  # as the rankings page wrote them by hand: %.1f, %.0f for RP, ± twice the RD
        "elo": "1234.6?",
        "glicko": "1234.6 ± 80.0?",
        "glicko2": "1234.6 ± 100.0?",
        "rank_points": "1235?",
        "xonstat": "1234.6?",
    }
    assert {name: cells.RANKING_FORMATS[name](row, "?") for name in expected} == expected


def test_a_migrated_database_has_a_column_for_every_declared_value(tmp_path):
    conn = store.connect(tmp_path / "r.db")
    try:
        ratings = {row[1] for row in conn.execute("PRAGMA table_info(ratings)")}
        snapshot = {row[1] for row in conn.execute("PRAGMA table_info(rank_history)")}
    finally:
        conn.close()
    assert set(rating_rows.COLUMNS) <= ratings
    assert set(columns.SNAPSHOTTED) <= snapshot


def test_batch_titles_and_cli_choices_come_from_the_methods():
    assert lookup.BATCH_TITLES == {name: method.title for name, method in METHODS.items()}
    assert list(lookup.BATCH_TITLES.values())[:2] == ["Schulze", "Ranked Pairs"]
    assert RANK_METHODS == ("all", *METHODS)
