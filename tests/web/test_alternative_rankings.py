"""The alternative-rankings page and the batch columns of the rankings page, HTML and JSON."""

from __future__ import annotations

import sqlite3

import pytest

from rumble.rankings.batch import METHODS
from rumble.schedule import hourly
from rumble.web.pages import BATCH_TITLES


@pytest.fixture
def db(demo_db):
    return demo_db


@pytest.fixture
def ranked(db):
    """The demo rumble after one complete batch run."""
    return hourly.run_rumble(db, "roborumble")


def test_before_any_run_the_page_says_how_to_run_one(db, client):
    page = client.get("/AlternativeRankings?game=roborumble").get_data(as_text=True)
    assert "No batch run of roborumble yet" in page and "rumble rank --game roborumble --method all" in page
    assert client.get("/AlternativeRankings?game=roborumble&api=1").json["rows"] == []


def test_the_page_lists_every_bot_under_every_method_in_aps_order(ranked, client):
    data = client.get("/AlternativeRankings?game=roborumble&api=1").json
    assert data["game"] == "roborumble" and data["methods"] == list(METHODS)
    assert [row["aps_rank"] for row in data["rows"]] == sorted(row["aps_rank"] for row in data["rows"])
    assert len(data["rows"]) == 20 and all(row[f"{m}_rank"] >= 1 for row in data["rows"] for m in METHODS)
    assert data["runs"][0]["id"] == ranked.run_id and data["runs"][0]["battles"] == 250
    page = client.get("/AlternativeRankings?game=roborumble").get_data(as_text=True)
    assert all(f"<th>{title}</th>" in page for title in BATCH_TITLES.values())
    ranks, matrix = page.split('<h2 id="los">')  # the rank table, then the top-20 LOS matrix
    assert ranks.count("<tr") == 21 and matrix.count("<tr") == 21


def test_the_largest_disagreements_are_marked_in_html_and_json(ranked, client):
    rows = client.get("/AlternativeRankings?game=roborumble&api=1").json["rows"]
    marked = [row for row in rows if row["top_spread"]]
    assert len(marked) >= 3 and min(r["spread"] for r in marked) >= max(
        r["spread"] for r in rows if not r["top_spread"]
    )
    page = client.get("/AlternativeRankings?game=roborumble").get_data(as_text=True)
    assert page.count('<tr class="disagree">') == len(marked)
    assert page.count('<td class="furthest">') == sum(row["furthest"] is not None for row in rows)


def test_bot_names_are_escaped(db, ranked, client, app):
    conn = sqlite3.connect(app.config["RUMBLE"]["DB"])
    conn.execute("UPDATE bots SET full_name = '<script>alert(1)</script> 1.0' WHERE full_name = 'demo.Aurora 2.1'")
    conn.commit()
    conn.close()
    page = client.get("/AlternativeRankings?game=roborumble").get_data(as_text=True)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; 1.0" in page


def test_an_unknown_game_is_404(client):
    assert client.get("/AlternativeRankings?game=nosuch").status_code == 404


def test_rankings_rows_carry_the_latest_batch_ranks_and_scores(db, client):
    before = client.get("/Rankings?game=roborumble&api=1").json
    assert all(row["schulze_rank"] is None for row in before)
    hourly.run_rumble(db, "roborumble")
    rows = client.get("/Rankings?game=roborumble&api=1").json
    assert all(row[f"{m}_rank"] >= 1 for row in rows for m in METHODS)
    assert all(row["borda_score"] > 0 and row["schulze_score"] is None for row in rows)


@pytest.mark.parametrize("method", list(METHODS))
def test_rankings_sort_by_a_batch_method_best_first(ranked, client, method):
    rows = client.get(f"/Rankings?game=roborumble&order=-{method}&api=1").json
    assert [row[f"{method}_rank"] for row in rows] == sorted(row[f"{method}_rank"] for row in rows)
    page = client.get(f"/Rankings?game=roborumble&order=-{method}").get_data(as_text=True)
    assert f"{BATCH_TITLES[method]} ▼" in page


def test_rankings_and_home_pages_link_the_alternative_rankings(ranked, client):
    assert 'href="/AlternativeRankings?game=roborumble"' in client.get("/Rankings?game=roborumble").get_data(
        as_text=True
    )
    assert 'href="/AlternativeRankings?game=roborumble"' in client.get("/").get_data(as_text=True)
