"""The likelihood of superiority and the version test as the pages and the API show them, on
battles whose figures are worked out by hand below."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest
from conftest import battle

from rumble.protocol.replies import Kind

PHI = NormalDist().cdf  # the standard library's normal law, independent of rumble's math.erf


@pytest.fixture
def three(upload):
    """A, B and C, two battles a pairing, with score % (first side's share of the two scores):
    A-B 60, 80 (mean 70, population variance 100); A-C 70, 90 (mean 80, var 100); B-C 55, 65 (mean 60,
    var 25). APS: A (70 + 80)/2 = 75, B (30 + 60)/2 = 45, C (20 + 40)/2 = 30.
    SE² per pairing = var/(2 − 1): 100, 100, 25. Var(APS) = Σ SE²/(n·k), n = k = 2:
    A (100 + 100)/4 = 50, B (100 + 25)/4 = 31.25, C 31.25.
    LOS(A > B) = Φ(30/√(50 + 31.25 + 2·100/4)) = Φ(30/√131.25);
    LOS(B > C) = Φ(15/√(31.25 + 31.25 + 2·25/4)) = Φ(15/√75) = Φ(√3) = 0.9584."""
    games = [
        ("t.A 1.0", "t.B 1.0", (600, 400)),
        ("t.A 1.0", "t.B 1.0", (800, 200)),
        ("t.A 1.0", "t.C 1.0", (700, 300)),
        ("t.A 1.0", "t.C 1.0", (900, 100)),
        ("t.B 1.0", "t.C 1.0", (550, 450)),
        ("t.B 1.0", "t.C 1.0", (650, 350)),
    ]
    for first, second, scores in games:
        assert upload(battle(first, second, scores=scores)).kind == Kind.ACCEPTED
    return {"t.A 1.0": PHI(30 / math.sqrt(131.25)), "t.B 1.0": PHI(math.sqrt(3)), "t.C 1.0": None}


def test_rankings_json_and_page_show_los_to_next(three, client):
    rows = client.get("/Rankings?game=roborumble&api=1").json
    assert [r["name"] for r in rows] == ["t.A 1.0", "t.B 1.0", "t.C 1.0"]
    assert [r["aps"] for r in rows] == [75.0, 45.0, 30.0]
    for row in rows:
        expected = three[row["name"]]
        assert row["los_next"] is None if expected is None else row["los_next"] == pytest.approx(expected, abs=1e-12)
    assert round(rows[1]["los_next"], 4) == 0.9584
    page = client.get("/Rankings?game=roborumble&columns=all").get_data(as_text=True)  # not a main column
    assert "LOS to next</th>" in page
    assert f'<td class="num los">{three["t.A 1.0"]:.3f}</td>' in page and '<td class="num los">0.958</td>' in page
    api = client.get("/api/v1/rumbles/roborumble/rankings").json["items"]
    assert [r["los_next"] for r in api] == [r["los_next"] for r in rows]


def test_los_to_next_is_by_aps_whatever_the_order(three, client):
    rows = client.get("/Rankings?game=roborumble&order=name&api=1").json
    by_name = {r["name"]: r["los_next"] for r in rows}
    assert by_name["t.B 1.0"] == pytest.approx(PHI(math.sqrt(3)), abs=1e-12) and by_name["t.C 1.0"] is None
    rows = client.get("/Rankings?game=roborumble&order=aps&api=1").json  # ascending: C first
    assert rows[0]["name"] == "t.C 1.0" and rows[0]["los_next"] is None


def test_alternative_rankings_show_the_los_matrix(three, client):
    for data in (
        client.get("/AlternativeRankings?game=roborumble&api=1").json,
        client.get("/api/v1/rumbles/roborumble/alternative-rankings").json,
    ):
        matrix = data["los_matrix"]
        assert matrix["names"] == ["t.A 1.0", "t.B 1.0", "t.C 1.0"] and matrix["aps"] == [75.0, 45.0, 30.0]
        los = matrix["los"]
        assert los[0][1] == pytest.approx(three["t.A 1.0"], abs=1e-12)
        assert los[1][2] == pytest.approx(PHI(math.sqrt(3)), abs=1e-12)
        # A over C: Φ(45/√(50 + 31.25 + 2·100/4)) = Φ(45/√131.25)
        assert los[0][2] == pytest.approx(PHI(45 / math.sqrt(131.25)), abs=1e-12)
        assert los[2][1] == pytest.approx(1 - PHI(math.sqrt(3)), abs=1e-12) and los[1][1] is None
    page = client.get("/AlternativeRankings?game=roborumble").get_data(as_text=True)
    assert "Likelihood of superiority, top 3" in page
    assert '<td class="sure">0.96</td>' in page and "<td>0.04</td>" in page  # the matrix's columns are numbers


SINGLE_BATTLE_GAMES = [("t.A 1.0", "t.B 1.0", 600), ("t.A 1.0", "t.B 1.0", 800), ("t.A 1.0", "t.C 1.0", 700)]
SINGLE_BATTLE_GAMES += [("t.B 1.0", "t.C 1.0", 550), ("t.B 1.0", "t.C 1.0", 650)]


def test_a_single_battle_pairing_counts_a_whole_battles_variance(upload, client):
    # A-B 60, 80 (mean 70, SE² 100); A-C one battle, 70; B-C 55, 65 (mean 60, SE² 25). APS: A 70, B 45, C 35.
    # A: n = 2, k = 1, the CI's variance 100/(2·1) = 50, so m = 50·2 = 100 and σ² ≈ m·(3 battles − 1)/1 = 200:
    #    Var_A = (1·100 + 1·200)/2² = 75. B: k = n, Var_B = (100 + 25)/4 = 31.25.
    #    C: CI variance 25/(2·1) = 12.5, m = 25, σ² ≈ 25·2/1 = 50, Var_C = (25 + 50)/4 = 18.75.
    # LOS(A > B) = Φ(25/√(75 + 31.25 + 2·100/4)) = Φ(25/12.5) = Φ(2) = 0.9772;
    # LOS(B > C) = Φ(10/√(31.25 + 18.75 + 2·25/4)) = Φ(10/√62.5) = 0.8970
    for first, second, score in SINGLE_BATTLE_GAMES:
        assert upload(battle(first, second, scores=(score, 1000 - score))).kind == Kind.ACCEPTED
    rows = client.get("/Rankings?game=roborumble&api=1").json
    assert [r["aps"] for r in rows] == [70.0, 45.0, 35.0]
    assert rows[0]["los_next"] == pytest.approx(PHI(2.0), abs=1e-12) and round(rows[0]["los_next"], 4) == 0.9772
    assert rows[1]["los_next"] == pytest.approx(PHI(10 / math.sqrt(62.5)), abs=1e-12)
    assert round(rows[1]["los_next"], 4) == 0.8970


def test_a_single_battle_shared_pairing_and_the_ties_count_a_whole_battles_variance(upload, client):
    """The same battles. A and C share A-C, one battle: its SE² is σ²/1 with σ² the two bots' battle
    variances pooled, (200 + 50)/2 = 125 (σ²_A = 200, σ²_C = 50 above), so the term is 2·125/(2·2) = 62.5
    and LOS(A > C) = Φ(35/√(75 + 18.75 + 62.5)) = Φ(35/12.5) = Φ(2.8) = 0.9974.
    The ties take the same Var: half-widths 1.96·√75 = 16.97, 1.96·√31.25 = 10.96, 1.96·√18.75 = 8.49,
    so A [53.03, 86.97], B [34.04, 55.96], C [26.51, 43.49]: A reaches B (1–2), B reaches both (1–3),
    C lies below A but reaches B (2–3). (The bare APS CIs, A [56.14, 83.86], C [28.07, 41.93], would
    have put A alone at 1.)"""
    for first, second, score in SINGLE_BATTLE_GAMES:
        assert upload(battle(first, second, scores=(score, 1000 - score))).kind == Kind.ACCEPTED
    los = client.get("/AlternativeRankings?game=roborumble&api=1").json["los_matrix"]["los"]
    assert los[0][2] == pytest.approx(PHI(2.8), abs=1e-12) and round(los[0][2], 4) == 0.9974
    rows = client.get("/Rankings?game=roborumble&api=1").json
    assert [r["rank_range"] for r in rows] == [[1, 2], [1, 3], [2, 3]] and all(r["tied"] for r in rows)


@pytest.fixture
def versions(upload):
    """pkg.Bot 1.0 and 1.1 against ten opponents, one battle each: the old version scores 50 % against
    each; the new one 52 % and 54 % in turn. Differences 2, 4, 2, 4, ...: d̄ = 3, s² = 10/9, I = 9,
    LLR better = 9·(3 − 0.5) = 22.5 ≥ A_10 -> better; LLR worse = 9·(−3.5) = −31.5; 20 battles. A_10, the
    bound at 10 opponents (ν = 9, counted as 9/2): (9/4)·(20^(4/9) − 1) = 2.25·2.78648 = 6.2696."""
    for i in range(10):
        opponent = f"opp.Foe{i} 1.0"
        assert upload(battle("pkg.Bot 1.0", opponent, scores=(500, 500))).kind == Kind.ACCEPTED
        share = 52 if i % 2 == 0 else 54
        assert upload(battle("pkg.Bot 1.1", opponent, scores=(share * 10, 1000 - share * 10))).kind == Kind.ACCEPTED


def test_the_version_test_in_the_api(versions, client):
    data = client.get("/api/v1/rumbles/roborumble/version-test?old=pkg.Bot 1.0&new=pkg.Bot 1.1").json
    assert data["verdict"] == "better" and data["new"] == "pkg.Bot 1.1" and data["old"] == "pkg.Bot 1.0"
    assert (data["opponents"], data["battles"], data["mean"]) == (10, 20, pytest.approx(3.0))
    assert data["llr_better"] == pytest.approx(22.5) and data["llr_worse"] == pytest.approx(-31.5)
    assert data["upper"] == pytest.approx(9 / 4 * (20 ** (4 / 9) - 1)) and round(data["upper"], 4) == 6.2696
    assert data["lower"] == pytest.approx(-data["upper"]) and data["more_battles"] is None
    swapped = client.get("/api/v1/rumbles/roborumble/version-test?old=pkg.Bot 1.1&new=pkg.Bot 1.0").json
    assert swapped["verdict"] == "worse" and swapped["llr_worse"] == pytest.approx(22.5)
    # delta 4: LLR better = 4·9·(3 − 2) = 36, still better; LLR worse = 4·9·(−3 − 2) = −180
    wide = client.get("/api/v1/rumbles/roborumble/version-test?old=pkg.Bot 1.0&new=pkg.Bot 1.1&delta=4").json
    assert wide["llr_better"] == pytest.approx(36.0) and wide["delta"] == 4.0
    compare = client.get("/api/v1/rumbles/roborumble/compare?bota=pkg.Bot 1.1&botb=pkg.Bot 1.0").json
    assert compare["version_test"] == {k: v for k, v in data.items() if k != "game"}
    assert compare["version_test"]["llr_better"] == pytest.approx(22.5)
    other = client.get("/api/v1/rumbles/roborumble/compare?bota=pkg.Bot 1.1&botb=opp.Foe1 1.0").json
    assert other["version_test"] is None


def test_the_version_test_on_bot_compare(versions, client):
    page = client.get("/BotCompare?game=roborumble&bota=pkg.Bot 1.1&botb=pkg.Bot 1.0").get_data(as_text=True)
    assert "Version test: is A better than B?" in page and "<strong>A is better than B</strong>" in page
    assert '<td class="num">22.500</td>' in page and '<td class="num">-31.500</td>' in page
    data = client.get("/BotCompare?game=roborumble&bota=pkg.Bot 1.1&botb=pkg.Bot 1.0&api=1").json
    assert data["version_test"]["verdict"] == "better"
    page = client.get("/BotCompare?game=roborumble&bota=pkg.Bot 1.1&botb=opp.Foe1 1.0").get_data(as_text=True)
    assert "Version test" not in page


def test_fewer_than_ten_common_opponents_is_not_yet(upload, client):
    for i in range(3):
        upload(battle("pkg.Bot 1.0", f"opp.Foe{i} 1.0", scores=(500, 500)))
        upload(battle("pkg.Bot 1.1", f"opp.Foe{i} 1.0", scores=(900, 100)))
    data = client.get("/api/v1/rumbles/roborumble/version-test?old=pkg.Bot 1.0&new=pkg.Bot 1.1").json
    assert (data["verdict"], data["opponents"], data["llr_better"]) == ("not yet", 3, None)
    page = client.get("/BotCompare?game=roborumble&bota=pkg.Bot 1.1&botb=pkg.Bot 1.0").get_data(as_text=True)
    assert "<strong>Not yet decided</strong>" in page


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        ("new=pkg.Bot 1.1", 400, "Give both versions: old=NAME and new=NAME (like pkg.Bot 1.0 and pkg.Bot 1.1)."),
        ("old=pkg.Bot 1.0", 400, "Give both versions: old=NAME and new=NAME (like pkg.Bot 1.0 and pkg.Bot 1.1)."),
        (
            "old=pkg.Bot 1.0&new=pkg.Bot 1.1&delta=abc",
            400,
            "delta must be a number of APS points from 0.1 to 20 (like 0.5), not 'abc'.",
        ),
        (
            "old=pkg.Bot 1.0&new=pkg.Bot 1.1&delta=0",
            400,
            "delta must be a number of APS points from 0.1 to 20 (like 0.5), not '0'.",
        ),
        (
            "old=pkg.Bot 1.0&new=pkg.Bot 1.1&delta=²",
            400,
            "delta must be a number of APS points from 0.1 to 20 (like 0.5), not '²'.",
        ),
        (
            "old=pkg.Bot 1.0&new=opp.Foe1 1.0",
            400,
            "'pkg.Bot 1.0' and 'opp.Foe1 1.0' are not two versions of one bot (package.Class).",
        ),
        (
            "old=pkg.Bot 1.0&new=pkg.Bot 1.0",
            400,
            "'pkg.Bot 1.0' and 'pkg.Bot 1.0' are not two versions of one bot (package.Class).",
        ),
    ],
)
def test_bad_version_test_parameters_get_a_json_400(versions, client, query, status, error):
    response = client.get(f"/api/v1/rumbles/roborumble/version-test?{query}")
    assert response.status_code == status and response.json == {"error": error}


def test_an_unknown_bot_or_rumble_is_a_json_404(versions, client):
    response = client.get("/api/v1/rumbles/roborumble/version-test?old=pkg.Bot 0.9&new=pkg.Bot 1.1")
    assert response.status_code == 404 and "pkg.Bot 0.9" in response.json["error"]
    response = client.get("/api/v1/rumbles/nosuch/version-test?old=pkg.Bot 1.0&new=pkg.Bot 1.1")
    assert response.status_code == 404 and set(response.json) == {"error"}
