"""The JSON API under /api/v1/: every endpoint's fields, pagination, errors and escaping, the bulk
exports (CSV, JSON, SQLite), and the reference page that must document every endpoint.

Figures are checked against the pages' own ``api=1`` twins (same store call: they must agree) and,
for APS, against the uploaded scores by hand.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest
from conftest import battle, now_ms

from rumble import store
from rumble.protocol.replies import Kind

A, B, C, D = "alpha.Alpha 1.0", "beta.Beta 1.0", "gamma.Gamma 1.0", "delta.Delta 1.0"
EVIL = '<script>alert("x")</script>, "quoted" 1.0'  # a comma and quotes too, for the CSV
RESULTS = [
    (A, B, 6000, 4000),
    (A, C, 7000, 3000),
    (A, D, 5500, 4500),
    (B, C, 5000, 5000),
    (B, D, 6500, 3500),
    (C, D, 2000, 8000),
    (B, A, 5000, 5000),
]
# APS by hand (mean over opponents of the mean score % against each):
# A: vs B (60 + 50) / 2 = 55, vs C 70, vs D 55 -> 60;  B: vs A 45, vs C 50, vs D 65 -> 53.33
# C: 30, 50, 20 -> 33.33;  D: 45, 35, 80 -> 53.33
APS = {A: 60.0, B: (45 + 50 + 65) / 3, C: (30 + 50 + 20) / 3, D: (45 + 35 + 80) / 3}


@pytest.fixture
def rumble(upload):
    now = now_ms()
    for i, (first, second, s1, s2) in enumerate(RESULTS):
        assert (
            upload(battle(first, second, scores=(s1, s2), time_ms=now - 1000 * i, uploader='Jane, "JD" Doe')).kind
            is Kind.ACCEPTED
        )


def _json(client, path, status=200, **args):
    response = client.get(path, query_string=args, buffered=True)  # buffered: an export's file is closed
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json" and response.headers["X-Content-Type-Options"] == "nosniff"
    return response.json


def test_the_reference_page_documents_every_api_route(app, client):
    page = client.get("/api/v1/").get_data(as_text=True)
    rules = sorted(rule.rule for rule in app.url_map.iter_rules() if rule.rule.startswith("/api/v1"))
    assert len(rules) >= 12
    for rule in rules:
        escaped = rule.replace("<", "&lt;").replace(">", "&gt;")
        assert f"<code>{escaped}</code>" in page, rule


def test_the_reference_page_documents_no_route_that_does_not_exist(app):
    from rumble.web.api import ENDPOINTS

    rules = {rule.rule for rule in app.url_map.iter_rules()}
    assert [e["rule"] for e in ENDPOINTS if e["rule"] not in rules] == []


def test_rumbles_lists_every_configured_rumble_with_its_counts(app, client, rumble):
    rows = {r["name"]: r for r in _json(client, "/api/v1/rumbles")["rumbles"]}
    assert set(rows) == set(app.extensions["rumble.rumbles"])
    assert rows["roborumble"]["battles"] == len(RESULTS) and rows["roborumble"]["participants"] == 4
    assert rows["minirumble"]["battles"] == 0


def test_rankings_match_the_page_and_the_scores_by_hand_and_paginate(client, rumble):
    body = _json(client, "/api/v1/rumbles/roborumble/rankings")
    assert body["total"] == 4 and body["pages"] == 1 and body["state"] == "complete"
    assert {r["name"]: r["aps"] for r in body["items"]} == pytest.approx(APS)
    page = client.get("/Rankings?game=roborumble&api=1").json  # the page's twin, a moment later:
    for api_row, page_row in zip(body["items"], page):  # Glicko's RD grows by the second (real-valued days)
        assert api_row["glicko_rd"] == pytest.approx(page_row.pop("glicko_rd"), rel=1e-6)
    assert [{k: v for k, v in row.items() if k != "glicko_rd"} for row in body["items"]] == page
    fields = {
        "rank",
        "rank_range",
        "tied",
        "name",
        "aps",
        "aps_ci",
        "pwin",
        "pl",
        "survival",
        "pairings",
        "battles",
        "last_battle",
        "elo",
        "glicko",
        "glicko_rd",
        "glicko2",
        "glicko2_rd",
        "rank_points",
        "xonstat",
        "provisional",
        "schulze_rank",
    }
    assert fields <= set(body["items"][0])
    second = _json(client, "/api/v1/rumbles/roborumble/rankings", order="name", limit=3, page=2)
    assert (second["total"], second["pages"], second["page"], second["limit"]) == (4, 2, 2, 3)
    assert [r["name"] for r in second["items"]] == [sorted(APS)[3]]
    assert _json(client, "/api/v1/rumbles/roborumble/rankings", limit=3, page=9)["items"] == []
    assert "limit" in _json(client, "/api/v1/rumbles/roborumble/rankings", 400, limit="x")["error"]
    assert "limit" in _json(client, "/api/v1/rumbles/roborumble/rankings", 400, limit=5001)["error"]
    assert "Cannot sort by" in _json(client, "/api/v1/rumbles/roborumble/rankings", 400, order="-nope")["error"]
    assert "no rumble" in _json(client, "/api/v1/rumbles/nope/rankings", 404)["error"]


def test_bot_pairing_compare_history_and_stats_match_their_pages(client, rumble):
    bot = _json(client, f"/api/v1/rumbles/roborumble/bots/{A}", limit=2)
    page = client.get("/BotDetails", query_string={"game": "roborumble", "name": A, "api": "1"}).json
    # Glicko's RD is grown to the second (real-valued days), so the twin read a moment later differs in it
    assert bot["summary"]["ratings"].pop("glicko_rd") == pytest.approx(
        page["summary"]["ratings"].pop("glicko_rd"), rel=1e-6
    )
    assert bot["bot"] == page["bot"] and bot["summary"] == page["summary"] and bot["versions"] == []
    assert (bot["total"], bot["pages"]) == (3, 2) and bot["items"] == page["pairings"][:2]
    assert bot["summary"]["aps"] == pytest.approx(APS[A])
    assert _json(client, "/api/v1/rumbles/roborumble/bots/alpha.Alpha_1.0")["bot"]["name"] == A  # the RatingsFile form
    assert "no.Such" in _json(client, "/api/v1/rumbles/roborumble/bots/no.Such 1.0", 404)["error"]
    assert _json(client, "/api/v1/rumbles/roborumble/bots/" + A + "/history") == {
        "game": "roborumble",
        "bot": A,
        "items": [],
    }

    pairing = _json(client, "/api/v1/rumbles/roborumble/pairing", bot=A, vs=B, limit=1)
    assert pairing["total"] == 2 and len(pairing["items"]) == 1 and pairing["pairing"]["aps"] == pytest.approx(55.0)
    assert {i["a_percent"] for i in _json(client, "/api/v1/rumbles/roborumble/pairing", bot=A, vs=B)["items"]} == {
        60.0,
        50.0,
    }

    compare = _json(client, "/api/v1/rumbles/roborumble/compare", bota=A, botb=B)
    twin = client.get("/BotCompare", query_string={"game": "roborumble", "bota": A, "botb": B, "api": "1"}).json
    assert compare["items"] == twin["rows"] and compare["verdict"] == twin["verdict"] and compare["common"] == 2
    # common opponents C and D: A 70 and 55, B 50 and 65 -> mean difference 5
    assert compare["diff"]["mean"] == pytest.approx(5.0)

    stats = _json(client, "/api/v1/rumbles/roborumble/stats")
    assert stats["uploaders"][0]["uploader"] == 'Jane, "JD" Doe' and stats["uploaders"][0]["battles"] == len(RESULTS)
    assert _json(client, "/api/v1/stats")["game"] is None
    alternative = _json(client, "/api/v1/rumbles/roborumble/alternative-rankings")
    assert alternative == {"game": "roborumble", **client.get("/AlternativeRankings?game=roborumble&api=1").json}


def _rename(app, old: str, new: str) -> None:
    """Give a bot a name no upload could carry (the protocol refuses it), to test escaping."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):
        db.execute("UPDATE bots SET full_name = ? WHERE full_name = ?", (new, old))
    db.close()


def test_names_come_back_exactly_in_json_and_csv_and_escaped_on_the_reference_page(app, client, rumble):
    _rename(app, D, EVIL)
    names = [r["name"] for r in _json(client, "/api/v1/rumbles/roborumble/rankings")["items"]]
    assert EVIL in names
    raw = client.get("/api/v1/rumbles/roborumble/rankings").get_data(as_text=True)
    assert json.loads(raw)["items"][names.index(EVIL)]["name"] == EVIL
    assert _json(client, "/api/v1/rumbles/roborumble/bots/" + EVIL)["bot"]["name"] == EVIL
    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get("/api/v1/rumbles/roborumble/export/pairings.csv", buffered=True).get_data(as_text=True)
            )
        )
    )
    assert sum(row["bot"] == EVIL for row in rows) == 3 and sum(row["opponent"] == EVIL for row in rows) == 3


def test_exports_hold_the_whole_rumble_in_csv_and_json(client, rumble):
    battles_csv = client.get("/api/v1/rumbles/roborumble/export/battles.csv", buffered=True)
    assert battles_csv.mimetype == "text/csv" and "attachment" in battles_csv.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(battles_csv.get_data(as_text=True))))
    assert [(r["first"], r["second"], int(r["first_score"]), int(r["second_score"])) for r in rows] == RESULTS
    assert {r["uploader"] for r in rows} == {'Jane, "JD" Doe'} and "remote_addr" not in rows[0]
    battles_json = _json(client, "/api/v1/rumbles/roborumble/export/battles.json")
    assert [(r["first"], r["second"], r["first_score"], r["second_score"]) for r in battles_json["rows"]] == RESULTS
    pairings = _json(client, "/api/v1/rumbles/roborumble/export/pairings.json")["rows"]
    assert len(pairings) == 12  # 4 bots, each pair met: 6 pairings, both sides
    assert {(p["bot"], p["opponent"]): p["aps"] for p in pairings}[(A, B)] == pytest.approx(55.0)
    ranking = list(
        csv.DictReader(
            io.StringIO(
                client.get("/api/v1/rumbles/roborumble/export/rankings.csv", buffered=True).get_data(as_text=True)
            )
        )
    )
    assert {r["name"]: float(r["aps"]) for r in ranking} == pytest.approx(APS)
    assert client.get("/api/v1/rumbles/roborumble/export/bots.csv").status_code == 404


def test_the_sqlite_export_is_one_rumbles_consistent_copy_that_opens_as_is(app, client, rumble, upload, tmp_path):
    upload(battle(A, B, scores=(1, 2), game="minirumble"))  # another rumble's battle stays out
    response = client.get("/api/v1/rumbles/roborumble/export/rumble.sqlite")
    assert response.status_code == 200 and response.mimetype == "application/vnd.sqlite3"
    path = tmp_path / "copy.sqlite"
    path.write_bytes(response.get_data())
    response.close()  # closes the served file
    copy = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert copy.execute("SELECT name FROM rumbles").fetchall() == [("roborumble",)]
    assert copy.execute("SELECT count(*), count(address_id) FROM battles").fetchone() == (len(RESULTS), 0)
    setups = copy.execute("SELECT u.version, u.client, u.field FROM battles JOIN battle_setups u ON u.id = setup_id")
    assert setups.fetchall() == [("1", "1.9.3.9", "800x600")] * len(RESULTS)  # the battles' setups came along
    assert copy.execute("SELECT count(*) FROM pairings").fetchone() == (12,)
    aps = dict(copy.execute("SELECT b.full_name, s.aps FROM bot_summaries s JOIN bots b ON b.id = s.bot_id").fetchall())
    assert aps == pytest.approx(APS)
    tables = {row[0] for row in copy.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"battles", "bots", "pairings", "ratings", "bot_summaries"} <= tables
    assert not tables & {"maintainers", "secrets", "audit_log", "priority_battles"}
    copy.close()
