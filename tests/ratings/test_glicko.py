"""Glicko-1: Glickman's worked example, seed 001's decay and win probability, the defaults."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rumble.ratings import glicko
from rumble.ratings.glicko_common import Q, g

q = math.log(10) / 400  # written out again so that the reference below shares nothing with the module


def g_paper(rd):
    """Glickman, "The Glicko system", step 2: g(RD) = 1/sqrt(1 + 3q²RD²/pi²)."""
    return 1 / math.sqrt(1 + 3 * q**2 * rd**2 / math.pi**2)


def e_paper(r, r_j, rd_j):
    """Step 2: E(s|r, r_j, RD_j) = 1/(1 + 10^(-g(RD_j)(r - r_j)/400))."""
    return 1 / (1 + 10 ** (-g_paper(rd_j) * (r - r_j) / 400))


def glicko_by_the_paper(r, rd, games):
    """Step 2 in plain floats, one game at a time: (r', RD')."""
    expected = [e_paper(r, r_j, rd_j) for r_j, rd_j, _ in games]
    d2 = 1 / (q**2 * sum(g_paper(rd_j) ** 2 * e * (1 - e) for (_, rd_j, _), e in zip(games, expected)))
    precision = 1 / rd**2 + 1 / d2
    change = q / precision * sum(g_paper(rd_j) * (s - e_paper(r, r_j, rd_j)) for r_j, rd_j, s in games)
    return r + change, math.sqrt(1 / precision)


PAPER_GAMES = [(1400, 30, 1.0), (1550, 100, 0.0), (1700, 300, 0.0)]  # a win and two losses


def paper_update():
    opp_r, opp_rd, scores = (np.array(column, dtype=float) for column in zip(*PAPER_GAMES))
    return glicko.update(1500.0, 200.0, opp_r, opp_rd, scores)


def test_glickman_example_gives_the_papers_rounded_figures():
    """Glickman's example: 1500/200 beats 1400/30, loses to 1550/100 and 1700/300 → r' = 1464, RD' = 151.4.

    The paper's intermediate g(RD_j) = 0.9955, 0.9531, 0.7242 and E = 0.639, 0.432, 0.303.
    """
    r, rd = paper_update()
    assert (round(r), round(rd, 1)) == (1464, 151.4)
    assert [round(float(g(Q * rd_j)), 4) for _, rd_j, _ in PAPER_GAMES] == [0.9955, 0.9531, 0.7242]
    assert [round(e_paper(1500, r_j, rd_j), 3) for r_j, rd_j, _ in PAPER_GAMES] == [0.639, 0.432, 0.303]


def test_glickman_example_to_full_precision():
    """The same example against the paper's formulas evaluated in plain floats (r' = 1464.10646…,
    RD' = 151.39890…; the paper's d² = 53670.85 comes from its rounded E, the unrounded one is 53685.74)."""
    r, rd = paper_update()
    expected_r, expected_rd = glicko_by_the_paper(1500.0, 200.0, PAPER_GAMES)
    assert r == pytest.approx(expected_r, rel=1e-13)
    assert rd == pytest.approx(expected_rd, rel=1e-13)
    assert (r, rd) == (pytest.approx(1464.106463, abs=1e-6), pytest.approx(151.398902, abs=1e-6))


def test_update_returns_python_floats_and_leaves_its_inputs_alone():
    opp_r, opp_rd, scores = np.array([1400.0]), np.array([30.0]), np.array([0.7])
    result = glicko.update(1500.0, 200.0, opp_r, opp_rd, scores)
    assert all(type(value) is float for value in result)
    assert (opp_r[0], opp_rd[0], scores[0]) == (1400.0, 30.0, 0.7)


def test_no_pairings_leave_the_rating_unchanged():
    assert glicko.update(1620.0, 80.0, [], [], []) == (1620.0, 80.0)


def test_seed_001_table_of_g():
    """Seed 001's table: g(350) = 0.67, g(300) = 0.72, … g(50) = 0.99, to its two decimals."""
    table = {350: 0.67, 300: 0.72, 250: 0.78, 200: 0.84, 150: 0.90, 100: 0.95, 50: 0.99}
    assert {rd: round(float(g(Q * rd)), 2) for rd in table} == table


def test_win_probability_uses_both_deviations():
    """1700 ± 100 against 1500 ± 200 (seed 001's formula, by hand):
    RD = sqrt(100² + 200²) = 223.6068; 3q²RD²/pi² = 3·3.3136863e-5·50000/9.8696044 = 0.5036199;
    g = 1/sqrt(1.5036199) = 0.8155131; 10^(-0.8155131·200/400) = 10^-0.4077566 = 0.3910600;
    E = 1/1.3910600 = 0.7188762. With the opponent's deviation alone it would be 0.7255209."""
    p = glicko.win_probability(1700.0, 100.0, 1500.0, 200.0)
    assert p == pytest.approx(0.7188762, abs=1e-7)
    combined = math.sqrt(100.0**2 + 200.0**2)
    assert p == pytest.approx(1 / (1 + 10 ** (-g_paper(combined) * 200 / 400)), rel=1e-14)
    assert e_paper(1700, 1500, 200) == pytest.approx(0.7255209, abs=1e-7)


def test_win_probabilities_of_the_two_bots_add_up_to_one():
    p, p_other = glicko.win_probability(1650, 60, 1580, 120), glicko.win_probability(1580, 120, 1650, 60)
    assert p + p_other == pytest.approx(1.0, rel=1e-15)
    assert glicko.win_probability(1500, 350, 1500, 30) == 0.5


def test_decay_is_the_papers_step_one_capped_at_350():
    """RD 50 after 100 periods with c = 34.6 is sqrt(2500 + 1197.16·100) = sqrt(122216) = 349.5941."""
    assert glicko.decay(50.0, 100.0, c=34.6) == pytest.approx(math.sqrt(50**2 + 34.6**2 * 100), rel=1e-15)
    assert glicko.decay(50.0, 100.0, c=34.6) == pytest.approx(349.5941, abs=1e-4)
    assert glicko.decay(50.0, 10_000.0) == 350.0
    assert glicko.decay(80.0, 0.0) == 80.0


def test_decay_in_one_step_equals_seed_001s_loop_over_whole_periods():
    """Seed 001 loops over whole periods, clamping each time; the closed form clamps once."""
    for start, count in [(30.0, 7), (120.0, 200), (345.0, 3)]:
        rd = start
        for _ in range(count):
            rd = min(math.sqrt(rd**2 + glicko.C**2), 350.0)
        assert glicko.decay(start, count) == pytest.approx(rd, rel=1e-13)


def test_negative_elapsed_time_is_refused():
    with pytest.raises(ValueError):
        glicko.decay(100.0, -1.0)


def test_defaults_bring_a_settled_rd_back_to_350_after_a_year():
    """c = sqrt((350² - 50²)/365) = sqrt(120000/365) = sqrt(328.767) = 18.1319 per one-day period."""
    assert glicko.C == pytest.approx(18.1319, abs=1e-4)
    assert glicko.PERIOD_SECONDS == 86_400
    assert glicko.periods(3 * 86_400) == 3.0
    assert glicko.decay(50.0, glicko.periods(365 * 86_400)) == pytest.approx(350.0, rel=1e-14)
    assert (glicko.R_UNRATED, glicko.RD_UNRATED) == (1500.0, 350.0)


def test_all_pairings_updates_never_collapse_rd_below_the_floor():
    """1,000 pairings at 60 % counted afresh on each of 200 uploads would drive RD towards 0
    (1/RD² grows by about q²·Σg²E(1−E) ≈ 3.3e-5 · 1000 · 0.976 · 0.25 ≈ 0.008 per upload, so
    after 200 uploads 1/RD² ≈ 1.6 and RD < 1); the floor keeps it at 25 (rating-update's minimum)."""
    rating, rd = 1500.0, 350.0
    opp_r, opp_rd, scores = np.full(1000, 1500.0), np.full(1000, 50.0), np.full(1000, 0.6)
    for _ in range(200):
        rating, rd = glicko.update(rating, rd, opp_r, opp_rd, scores)
    assert rd == glicko.RD_MIN == 25.0
