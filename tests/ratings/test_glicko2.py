"""Glicko-2: Glickman's worked example, seed 000's bounds and inactivity, the defaults."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rumble.ratings import glicko2
from rumble.ratings.glicko2 import Rating

PAPER_GAMES = [(1400, 30, 1.0), (1550, 100, 0.0), (1700, 300, 0.0)]  # a win and two losses


def glicko2_by_the_paper(r, rd, sigma, games, tau):
    """Glickman, "Example of the Glicko-2 system" (2022), steps 2-8 for one player in plain floats."""
    mu, phi = (r - 1500) / 173.7178, rd / 173.7178  # step 2
    opponents = [((r_j - 1500) / 173.7178, rd_j / 173.7178, s) for r_j, rd_j, s in games]

    def g(p):
        return 1 / math.sqrt(1 + 3 * p**2 / math.pi**2)

    def e(mu_j, phi_j):
        return 1 / (1 + math.exp(-g(phi_j) * (mu - mu_j)))

    v = 1 / sum(g(p) ** 2 * e(m, p) * (1 - e(m, p)) for m, p, _ in opponents)  # step 3
    total = sum(g(p) * (s - e(m, p)) for m, p, s in opponents)
    delta = v * total  # step 4
    a = math.log(sigma**2)  # step 5.1

    def f(x):
        ex = math.exp(x)
        return ex * (delta**2 - phi**2 - v - ex) / (2 * (phi**2 + v + ex) ** 2) - (x - a) / tau**2

    A = a  # step 5.2
    if delta**2 > phi**2 + v:
        B = math.log(delta**2 - phi**2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        B = a - k * tau
    f_A, f_B = f(A), f(B)  # step 5.3
    while abs(B - A) > 1e-6:  # step 5.4
        C = A + (A - B) * f_A / (f_B - f_A)
        f_C = f(C)
        if f_C * f_B <= 0:
            A, f_A = B, f_B
        else:
            f_A = f_A / 2
        B, f_B = C, f_C
    sigma_new = math.exp(A / 2)  # step 5.5
    phi_star = math.sqrt(phi**2 + sigma_new**2)  # step 6
    phi_new = 1 / math.sqrt(1 / phi_star**2 + 1 / v)  # step 7
    mu_new = mu + phi_new**2 * total
    return 173.7178 * mu_new + 1500, 173.7178 * phi_new, sigma_new, f  # step 8, and f for the root check


def paper_update():
    opp_r, opp_rd, scores = (np.array(column, dtype=float) for column in zip(*PAPER_GAMES))
    return glicko2.update(1500.0, 200.0, 0.06, opp_r, opp_rd, scores, tau=0.5)


def test_glickman_example_gives_the_papers_rounded_figures():
    """1500/200/0.06, tau 0.5 → r' = 1464.06, RD' = 151.52, sigma' = 0.05999 (the paper).

    The paper rounds its intermediates (mu' = -0.2069 gives 1464.06; unrounded it is 1464.0507), so
    r' is checked to the paper's last digit ± 1, and its sigma' = 0.05999 is 0.059996 cut, not rounded.
    """
    r, rd, sigma = paper_update()
    assert r == pytest.approx(1464.06, abs=0.01)
    assert rd == pytest.approx(151.52, abs=0.01)
    assert 0.05999 <= sigma < 0.06000
    assert round((r - 1500) / 173.7178, 4) == -0.2069 and round(rd / 173.7178, 4) == 0.8722


def test_glickman_example_to_full_precision():
    """The same example against the paper's steps in plain floats: r' = 1464.0506705, RD' = 151.5165241."""
    r, rd, sigma = paper_update()
    expected_r, expected_rd, expected_sigma, _ = glicko2_by_the_paper(1500.0, 200.0, 0.06, PAPER_GAMES, 0.5)
    assert (r, rd, sigma) == (
        pytest.approx(expected_r, rel=1e-13),
        pytest.approx(expected_rd, rel=1e-13),
        pytest.approx(expected_sigma, rel=1e-13),
    )
    assert (r, rd) == (pytest.approx(1464.0506705, abs=1e-7), pytest.approx(151.5165241, abs=1e-7))


def test_volatility_is_within_the_tolerance_of_the_exact_root():
    """Bisection to the last bit finds the root x* of f; Illinois stops within 1e-6 of it in x = ln(sigma²)."""
    _, _, sigma, f = glicko2_by_the_paper(1500.0, 200.0, 0.06, PAPER_GAMES, 0.5)
    low, high = math.log(0.05**2), math.log(0.07**2)  # f(low) > 0 > f(high)
    while high - low > 1e-15:
        mid = (low + high) / 2
        low, high = (mid, high) if f(mid) > 0 else (low, mid)
    assert abs(math.log(paper_update().sigma ** 2) - low) <= glicko2.EPSILON
    assert paper_update().sigma == pytest.approx(0.0599959844, abs=1e-9)


def test_update_returns_new_values_and_leaves_its_inputs_alone():
    opp_r, opp_rd, scores = np.array([1400.0, 1600.0]), np.array([30.0, 80.0]), np.array([0.6, 0.45])
    result = glicko2.update(1500.0, 200.0, 0.06, opp_r, opp_rd, scores)
    r, rd, sigma = result
    assert isinstance(result, Rating) and all(type(value) is float for value in result)
    assert opp_r.tolist() == [1400.0, 1600.0] and opp_rd.tolist() == [30.0, 80.0] and scores.tolist() == [0.6, 0.45]


def test_no_pairings_count_as_one_inactive_period():
    """Step 6 for a player who did not compete: RD' = 173.7178·sqrt(phi² + sigma²)."""
    r, rd, sigma = glicko2.update(1600.0, 100.0, 0.06, [], [], [])
    assert (r, sigma) == (1600.0, 0.06)
    assert rd == pytest.approx(math.sqrt(100.0**2 + (173.7178 * 0.06) ** 2), rel=1e-15)


def test_cap_clamps_each_value_to_seed_000s_bounds():
    assert Rating(3000.0, 500.0, 0.2).cap() == (2550.0, 350.0, 0.08)
    assert Rating(0.0, 1.0, 0.0).cap() == (450.0, glicko2.RD_MIN, 0.04)
    assert Rating(1500.0, 100.0, 0.06).cap() == (1500.0, 100.0, 0.06)


def test_many_pairings_stop_the_deviation_at_its_minimum():
    """A thousand even pairings would drive RD to about 9; seed 000's floor phi = 0.175 holds it at 30.40."""
    n = 1000
    _, rd, _ = glicko2.update(1500.0, 100.0, 0.06, np.full(n, 1500.0), np.full(n, 50.0), np.full(n, 0.5))
    assert rd == glicko2.RD_MIN == pytest.approx(0.175 * 173.7178, rel=1e-15)


def test_winning_everything_stops_the_rating_at_its_maximum():
    value = Rating(2400.0, 350.0, 0.06)
    for _ in range(10):
        value = glicko2.update(*value, np.full(50, 2550.0), np.full(50, 30.4), np.ones(50))
        assert value.r <= glicko2.R_MAX
    assert value.r == glicko2.R_MAX == 2550.0


def test_losing_everything_stops_the_rating_at_its_minimum():
    value = Rating(600.0, 350.0, 0.06)
    for _ in range(10):
        value = glicko2.update(*value, np.full(50, 450.0), np.full(50, 30.4), np.zeros(50))
    assert value.r == glicko2.R_MIN == 450.0


def test_a_shock_raises_the_volatility_no_higher_than_its_maximum():
    """A settled 2000-rated bot losing all 100 pairings to 1800-rated ones: sigma' would be above 0.08."""
    games = [(1800.0, 40.0, 0.0)] * 100
    assert glicko2_by_the_paper(2000.0, 40.0, 0.06, games, 0.5)[2] > glicko2.SIGMA_MAX
    assert glicko2.update(2000.0, 40.0, 0.06, np.full(100, 1800.0), np.full(100, 40.0), np.zeros(100)).sigma == 0.08


def test_expected_results_keep_the_volatility_no_lower_than_its_minimum():
    _, _, sigma = glicko2.update(1500.0, 60.0, 0.03, np.full(20, 1500.0), np.full(20, 60.0), np.full(20, 0.5))
    assert sigma == glicko2.SIGMA_MIN == 0.04


def test_a_long_absence_raises_the_deviation_no_higher_than_an_unrated_bots():
    """At seed 000's largest volatility a period adds (173.7178·0.08)² = 193.1 to RD², so RD 40 needs
    (350² - 40²)/193.1 = 626 periods (24 years) to get back to 350; a century gets no further."""
    assert glicko2.inactivity(40.0, 0.08, 100 * 365) == glicko2.UNRATED.rd == 350.0
    assert glicko2.inactivity(40.0, 0.08, 625 * 14) < 350.0 == glicko2.inactivity(40.0, 0.08, 627 * 14)
    assert glicko2.inactivity(349.9, 0.08, 14) == 350.0  # sqrt(349.9² + 193.1) = 350.18, capped


def test_half_a_period_adds_half_a_periods_variance():
    """7 days = t 0.5: RD' = sqrt(60² + 0.5·(173.7178·0.07)²) = sqrt(3600 + 0.5·147.87158) = 60.61300."""
    rd = glicko2.inactivity(60.0, 0.07, 7)
    assert rd == pytest.approx(math.sqrt(60.0**2 + 0.5 * (173.7178 * 0.07) ** 2), rel=1e-15)
    assert rd == pytest.approx(60.61300, abs=1e-5)


@pytest.mark.parametrize("days", [1, 7, 13, 30, 60])
def test_a_partial_period_in_one_step_equals_the_same_days_one_at_a_time(days):
    """phi² grows by sigma²/14 a day, so n single days add exactly what one step of n days adds, in
    real arithmetic. In floats each step rounds the square root and squares the rounded value
    again, and 1/14 is not a binary fraction, so the two agree to a few ulps (about 20 after 60
    steps), not bit for bit."""
    one_step = glicko2.inactivity(60.0, 0.07, days)
    rd = 60.0
    for _ in range(days):
        rd = glicko2.inactivity(rd, 0.07, 1)
    assert rd == pytest.approx(one_step, rel=1e-13)


def test_partial_periods_that_reach_the_cap_agree_exactly():
    """Once either path reaches RD_MAX it stays there, so both give 350.0 exactly."""
    rd = 300.0
    for _ in range(3000):  # (350² - 300²)/193.1 = 168 periods = 2356 days to the cap
        rd = glicko2.inactivity(rd, 0.08, 1)
    assert rd == glicko2.inactivity(300.0, 0.08, 3000) == 350.0


def test_inactivity_counts_whole_days_only():
    assert [glicko2.whole_days(s) for s in (0, 86_399, 86_400, 3.5 * 86_400)] == [0, 0, 1, 3]
    assert glicko2.inactivity(75.0, 0.06, glicko2.whole_days(86_399)) == 75.0
    with pytest.raises(ValueError):
        glicko2.inactivity(75.0, 0.06, -1)


def test_a_non_finite_input_raises_instead_of_returning_a_guess():
    with pytest.raises(glicko2.VolatilityNotConverged):
        glicko2.volatility(0.06, math.nan, 1.0, 1.0)


def test_defaults():
    """Seed 000's values; its phi bounds 2.015 and ±6.045 are 350/173.7178 and ±3·that, rounded."""
    assert (glicko2.TAU, glicko2.EPSILON, glicko2.PERIOD_DAYS) == (0.5, 1e-6, 14)
    assert glicko2.UNRATED == (1500.0, 350.0, 0.06)
    assert (glicko2.R_MIN, glicko2.R_MAX, glicko2.RD_MAX) == (450.0, 2550.0, 350.0)
    assert (glicko2.SIGMA_MIN, glicko2.SIGMA_MAX) == (0.04, 0.08)
    assert glicko2.RD_MAX / 173.7178 == pytest.approx(2.015, abs=5e-4)
    assert (glicko2.R_MAX - 1500.0) / 173.7178 == pytest.approx(6.045, abs=1e-3)
    assert glicko2.RD_MIN == pytest.approx(30.4006, abs=1e-4)
