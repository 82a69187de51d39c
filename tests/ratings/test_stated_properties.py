"""What /ScoreExplanation states as a property of the ratings (a bound, a floor, a step count),
checked on the code over adversarial inputs, so that the page cannot drift from it.

The figures asserted here (2 steps for Glickman's example, 21 for the page's example, 27 at most on
the grid, 60 of its 8,100 inputs above 20 and 2,013 at 10 or more) were counted by an independent
implementation of the paper's step 5, written from Glickman's "Example of the Glicko-2 system"
(2022), not by this code."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from rumble.ratings import glicko2, rank_points, xonstat
from rumble.ratings.glicko_common import SCALE

GRID = list(
    itertools.product(
        [450.0, 1200.0, 1500.0, 2550.0],  # the bot's rating (seed 000's range)
        [30.4, 100.0, 350.0],  # its deviation (seed 000's range)
        [0.04, 0.06, 0.08],  # its volatility (seed 000's range)
        [450.0, 1500.0, 2550.0],  # the opponents' rating
        [30.4, 100.0, 350.0],  # the opponents' deviation
        [0.0, 0.3, 0.5, 0.7, 1.0],  # the pairing scores
        [1, 10, 100, 1000, 3000],  # the pairings
    )
)


def _step5_inputs(r, rd, opp_r, opp_rd, score, n):
    """(Delta, phi, v) of steps 3 and 4 for n pairings alike, from the paper's formulas."""
    mu, phi, mu_j, phi_j = (r - 1500) / SCALE, rd / SCALE, (opp_r - 1500) / SCALE, opp_rd / SCALE
    g = 1 / math.sqrt(1 + 3 * phi_j**2 / math.pi**2)
    e = 1 / (1 + math.exp(-g * (mu - mu_j)))
    v = 1 / (n * g**2 * e * (1 - e))
    return v * n * g * (score - e), phi, v


def _root(sigma, delta, phi, v, tau=glicko2.TAU):
    """The root of step 5's f by plain bisection (no Illinois), to 1e-12."""
    a = math.log(sigma**2)

    def f(x):
        ex = math.exp(x)
        return ex * (delta**2 - phi**2 - v - ex) / (2 * (phi**2 + v + ex) ** 2) - (x - a) / tau**2

    low, high = a - 60.0, a + 1.0  # f falls from +inf to -inf: widen until it brackets the root
    while f(low) <= 0:
        low -= 60.0
    while f(high) >= 0:
        high += 10.0
    while high - low > 1e-12:
        mid = (low + high) / 2
        low, high = (mid, high) if f(mid) > 0 else (low, mid)
    return math.exp(low / 2)


def test_glickmans_example_needs_2_steps_and_gives_his_volatility():
    # The paper's example: r 1500, RD 200, sigma 0.06 against 1400±30 (won), 1550±100, 1700±300 (lost).
    mu, phi = 0.0, 200 / SCALE
    opponents = [((1400 - 1500) / SCALE, 30 / SCALE, 1.0), ((1550 - 1500) / SCALE, 100 / SCALE, 0.0)]
    opponents.append(((1700 - 1500) / SCALE, 300 / SCALE, 0.0))
    g = [1 / math.sqrt(1 + 3 * p**2 / math.pi**2) for _, p, _ in opponents]
    e = [1 / (1 + math.exp(-gj * (mu - m))) for gj, (m, _, _) in zip(g, opponents, strict=True)]
    v = 1 / sum(gj**2 * ej * (1 - ej) for gj, ej in zip(g, e, strict=True))
    delta = v * sum(gj * (s - ej) for gj, ej, (_, _, s) in zip(g, e, opponents, strict=True))
    sigma, steps = glicko2.volatility_steps(0.06, delta, phi, v)
    assert steps == 2
    assert sigma == pytest.approx(0.05999, abs=1e-5)  # the paper's sigma'


def test_the_pages_example_needs_21_steps_more_than_rrservers_20():
    delta, phi, v = _step5_inputs(1200.0, 350.0, 2550.0, 100.0, 0.7, 1000)
    sigma, steps = glicko2.volatility_steps(0.06, delta, phi, v)
    assert steps == 21
    assert sigma == pytest.approx(_root(0.06, delta, phi, v), rel=1e-5)


def test_on_a_grid_of_extreme_inputs_every_update_converges_to_the_root_within_27_steps():
    counts = []
    for r, rd, sigma, opp_r, opp_rd, score, n in GRID:
        delta, phi, v = _step5_inputs(r, rd, opp_r, opp_rd, score, n)
        found, steps = glicko2.volatility_steps(sigma, delta, phi, v)
        assert found == pytest.approx(_root(sigma, delta, phi, v), rel=1e-5), (r, rd, sigma, opp_r, opp_rd, score, n)
        counts.append(steps)
    counts = np.array(counts)
    assert counts.max() == 27 < glicko2.MAX_ITERATIONS
    assert (int((counts > 20).sum()), int((counts >= 10).sum()), len(counts)) == (60, 2013, 8100)


def test_random_reachable_inputs_converge_well_inside_the_bound():
    rng = random.Random(7)
    worst = 0
    for _ in range(3000):
        n = rng.choice([1, 5, 50, 1000])
        opp_r = np.array([rng.uniform(450, 2550) for _ in range(n)])
        opp_rd = np.array([rng.uniform(30.4, 350) for _ in range(n)])
        scores = np.array([rng.random() for _ in range(n)])
        r, rd, sigma = rng.uniform(450, 2550), rng.uniform(30.4, 350), rng.uniform(0.04, 0.08)
        variance, improvement = glicko2.game_terms(r, opp_r, opp_rd, scores)
        v = 1 / float(np.sum(variance))
        _, steps = glicko2.volatility_steps(sigma, v * float(np.sum(improvement)), rd / SCALE, v)
        worst = max(worst, steps)
    assert worst <= 30


def _rp_cases():
    rng = random.Random(11)
    for _ in range(20000):
        rp = rng.choice([0.0, 0.3, 0.999, 1.0, 5.0, rng.uniform(0, 10000), 9999.5, 10000.0])
        r, rd = rng.uniform(450, 2550), rng.uniform(30.4, 350)
        share = rng.choice([0.0, 0.2, 0.4999, 0.5, 0.5001, 0.8, 1.0, rng.random()])
        yield rp, r, rd, share, rng.uniform(450, 2550), rng.uniform(450, 2550)


def test_rank_points_move_by_at_least_1_and_at_most_500_but_never_past_the_ceiling_or_below_0():
    for rp, r, rd, share, before, opp in _rp_cases():
        new = rank_points.update(rp, r, rd, share, before, opp)
        ceiling = rank_points.ceiling(r, rd)
        if share > 0.5:  # a win: up by 1 to 500, but not past the ceiling (when it is below rp + 1)
            assert rp <= new <= rp + 500
            assert new - rp >= min(1.0, max(0.0, ceiling - rp)) - 1e-9
            assert new <= max(rp, ceiling) + 1e-9
        elif share < 0.5:  # a loss: down by 1 to 500, but never below 0
            assert max(0.0, rp - 500) <= new <= rp
            assert rp - new >= min(1.0, rp) - 1e-9
            assert new >= 0.0
        else:
            assert new == rp


def test_a_new_bots_first_losses_cost_nothing():
    assert rank_points.update(0.0, 1400.0, 300.0, 0.3, 1500.0, 1500.0) == 0.0
    assert rank_points.update(0.4, 1400.0, 300.0, 0.3, 1500.0, 1500.0) == 0.0  # all it had


def test_xonstat_rates_the_score_share_not_a_win_and_never_scales_k():
    """Two settled bots (33 battles or more: K = 40) of equal rating, 60:40: 40 × (0.6 − 0.5) = 4."""
    assert xonstat.update(1500.0, 1500.0, 40, 40, xonstat.score_share(6000, 4000)) == pytest.approx((1504.0, 1496.0))
