"""Glicko and Glicko-2 deviations are shown and used as grown for inactivity up to now (issue 13, item 8)."""

from __future__ import annotations

import math

import pytest
from conftest import battle

from rumble.protocol.replies import Kind

# Written out from the seeds, independently of rumble.ratings: Glicko's c from Glickman's recipe
# (RD 50 back to 350 in 365 days, seed 001), Glicko-2's growth sqrt(RD² + (days/14)·(173.7178·σ)²)
# within [0.175·173.7178, 350] (seed 000).
C = math.sqrt((350**2 - 50**2) / 365)


def glicko_grown(rd: float, days: float) -> float:
    return min(math.sqrt(rd * rd + C * C * days), 350.0)


def glicko2_grown(rd: float, sigma: float, whole_days: int) -> float:
    return min(max(math.sqrt(rd * rd + whole_days / 14 * (173.7178 * sigma) ** 2), 0.175 * 173.7178), 350.0)


def win_probability(r1: float, rd1: float, r2: float, rd2: float) -> float:
    q = math.log(10) / 400
    g = 1 / math.sqrt(1 + 3 * q * q * (rd1 * rd1 + rd2 * rd2) / math.pi**2)
    return 100 / (1 + 10 ** (-g * (r1 - r2) / 400))


@pytest.fixture
def rated(upload, client):
    """Two bots with 30 battles each, so their deviations are well below 350."""
    for k in range(30):
        assert upload(battle("a.A 1", "a.B 1", scores=(6000 + k, 4000), firsts=(25, 10))).kind is Kind.ACCEPTED
    return client.get("/Rankings?game=roborumble&api=1").get_json()


def test_rankings_show_deviations_grown_to_now_and_provisional_comes_back(rated, client, clock):
    stored = {row["name"]: row for row in rated}
    assert not stored["a.A 1"]["provisional"]
    clock.advance(days=1500, hours=5)  # Glicko-2 RD ~30 grows past 100 in about four years
    rows = {row["name"]: row for row in client.get("/Rankings?game=roborumble&api=1").get_json()}
    for name in ("a.A 1", "a.B 1"):
        before, after = stored[name], rows[name]
        assert after["glicko_rd"] == pytest.approx(glicko_grown(before["glicko_rd"], 1500 + 5 / 24), rel=1e-6, abs=0.01)
        assert after["glicko2_rd"] == pytest.approx(
            glicko2_grown(before["glicko2_rd"], before["glicko2_volatility"], 1500), rel=1e-9
        )
        assert after["glicko"] == before["glicko"] and after["glicko2"] == before["glicko2"]
        assert after["provisional"] and "rated_at" not in after


def test_bot_pages_and_compare_use_the_grown_deviations(rated, client, clock):
    stored = {row["name"]: row for row in rated}
    clock.advance(days=100)
    a, b = stored["a.A 1"], stored["a.B 1"]
    rd = {
        n: (
            glicko_grown(stored[n]["glicko_rd"], 100),
            glicko2_grown(stored[n]["glicko2_rd"], stored[n]["glicko2_volatility"], 100),
        )
        for n in stored
    }
    page = client.get("/BotDetails?game=roborumble&name=a.A 1&api=1").get_json()
    assert page["summary"]["ratings"]["glicko_rd"] == pytest.approx(rd["a.A 1"][0], abs=0.01)
    assert page["summary"]["ratings"]["glicko2_rd"] == pytest.approx(rd["a.A 1"][1], rel=1e-9)
    compare = client.get("/BotCompare?game=roborumble&bota=a.A 1&botb=a.B 1&api=1").get_json()["win_probability"]
    assert compare["glicko"] == pytest.approx(
        win_probability(a["glicko"], rd["a.A 1"][0], b["glicko"], rd["a.B 1"][0]), abs=1e-4
    )
    assert compare["glicko2"] == pytest.approx(
        win_probability(a["glicko2"], rd["a.A 1"][1], b["glicko2"], rd["a.B 1"][1]), abs=1e-6
    )
    api = client.get("/api/v1/rumbles/roborumble/compare?bota=a.A 1&botb=a.B 1").get_json()
    assert api["win_probability"]["glicko2"] == compare["glicko2"]
