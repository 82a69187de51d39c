"""Weng-Lin (Plackett-Luce) ratings of whole melee battles, checked against the paper's formulas.

``paper_update`` (tests/weng_lin_paper.py) is Weng & Lin (2011), "A Bayesian Approximation Method for Online Ranking",
JMLR 12, Algorithm 4 (the Plackett-Luce model, with the paper's ties: a tied team's factor raised to
1/A_q), written out from the paper, independently of openskill and of rumble's module:

    c = sqrt(Σ_i (σ_i² + β²)),  C_q = Σ_{s: r(s) ≥ r(q)} exp(μ_s/c),  A_q = |{s: r(s) = r(q)}|
    Ω_i = σ_i²/c · Σ_{q: r(q) ≤ r(i)} (1/A_q)·([q = i] − exp(μ_i/c)/C_q)
    Δ_i = σ_i²/c² · Σ_{q: r(q) ≤ r(i)} (1/A_q)·(exp(μ_i/c)/C_q)·(1 − exp(μ_i/c)/C_q)
    μ_i ← μ_i + Ω_i,  σ_i² ← σ_i²·max(1 − Δ_i, κ)

without the paper's variance damping factor γ_i = σ_i/c, as o!TR (seed 003) and rumble leave it out.

preceded by the additive dynamics σ_i² ← σ_i² + τ² that the module documents.
"""

from __future__ import annotations

import math
import random

import pytest
from weng_lin_paper import paper_update

from rumble.ratings import weng_lin
from rumble.ratings.weng_lin import Skill


def _check(mus, sigmas, scores):
    ranks = weng_lin.ranks(scores)
    expected = paper_update(mus, sigmas, ranks)
    _, rated = weng_lin.rate_battle([Skill(m, s) for m, s in zip(mus, sigmas)], scores, now=1e9)
    for got, (mu, sigma) in zip(rated, expected):
        assert got.mu == pytest.approx(mu, rel=1e-12, abs=1e-12)
        assert got.sigma == pytest.approx(sigma, rel=1e-12)
        assert (got.rated_at, got.battles) == (1e9, 1)
    return rated


def test_two_new_bots_by_hand():
    """Two new bots (μ 25, σ 25/3), A wins. σ'² = 625/9 + (1/12)² = 69.451389; c² = 2·(69.451389 +
    17.361111) = 173.625, c = 13.176684; A's Ω = 69.451389/13.176684·(1 − 1/2) = 2.635389, so A goes
    to 27.635389 and B to 22.364611 (openskill's own issue #173 prints the same 27.63538949...)."""
    (a, b) = weng_lin.rate_battle([Skill(), Skill()], [5000, 3000], now=0.0)[1]
    assert a.mu == pytest.approx(27.635389, abs=1e-6)
    assert b.mu == pytest.approx(22.364611, abs=1e-6)


def test_two_new_bots_sigma_without_variance_damping_by_hand():
    """Algorithm 4 without γ: σ'² = 69.451389 and c² = 173.625 as above, so σ'²/c² = 0.400008; each
    bot's Δ sums one term p(1 − p) = ¼ with p = ½ (the loser's second term has p = 1: 0), so
    Δ = 0.100002 and σ = sqrt(69.451389·0.899998) = 7.906081 for both. (With openskill's default
    γ = σ/c = 0.632462, Δ would be 0.063247 and σ 8.065901: the old, damped value.)"""
    (a, b) = weng_lin.rate_battle([Skill(), Skill()], [5000, 3000], now=0.0)[1]
    assert a.sigma == pytest.approx(7.906081, abs=1e-6)
    assert b.sigma == pytest.approx(7.906081, abs=1e-6)


def test_ten_bot_battle_is_not_damped():
    """The paper's update with and without γ differ in a 10-bot battle; rumble follows the undamped one."""
    mus, sigmas = [25.0 + k for k in range(10)], [25 / 3 - 0.3 * k for k in range(10)]
    ranks = list(range(1, 11))
    _, rated = weng_lin.rate_battle(
        [Skill(m, s) for m, s in zip(mus, sigmas)], [10_000 - 100 * k for k in range(10)], now=1e9
    )
    undamped, damped = paper_update(mus, sigmas, ranks), paper_update(mus, sigmas, ranks, damping=True)
    for got, (_, sigma), (_, sigma_damped) in zip(rated, undamped, damped):
        assert got.sigma == pytest.approx(sigma, rel=1e-12)
        assert abs(got.sigma - sigma_damped) > 1e-3


def test_a_tie_of_two_equal_bots_moves_neither():
    """Tied, equal: Ω = σ²/c·(½(1 − ½) − ½·½) = 0 for both (the bug of openskill PR #176 gave both +2.6)."""
    rated = _check([25.0, 25.0], [25 / 3, 25 / 3], [4000, 4000])
    assert rated[0].mu == rated[1].mu == 25.0


@pytest.mark.parametrize(
    "scores",
    [
        [9000, 9000, 5000, 3000, 1000],  # tied winners
        [9000, 5000, 5000, 5000, 1000],  # a three-way tie in the middle
        [9000, 5000, 3000, 0, 0],  # tied last on zero, as in melee
        [7000, 7000, 7000, 7000],  # everyone tied
    ],
)
def test_ties_follow_the_paper(scores):
    rng = random.Random(len(scores) * 31 + scores[1])
    mus = [rng.uniform(15, 35) for _ in scores]
    sigmas = [rng.uniform(1, 25 / 3) for _ in scores]
    _check(mus, sigmas, scores)


def test_tied_bots_of_unequal_skill_the_stronger_loses_ground():
    """Tied with a weaker bot: the paper's likelihood says the stronger was overrated."""
    rated = _check([30.0, 20.0], [3.0, 3.0], [5000, 5000])
    assert rated[0].mu < 30.0 and rated[1].mu > 20.0


def test_ten_bot_battles_follow_the_paper():
    rng = random.Random(6)
    for _ in range(20):
        mus = [rng.uniform(10, 40) for _ in range(10)]
        sigmas = [rng.uniform(0.5, 25 / 3) for _ in range(10)]
        scores = [rng.choice([0, rng.randint(0, 20000)]) for _ in range(10)]
        _check(mus, sigmas, scores)


def test_ranks_are_competition_ranks():
    assert weng_lin.ranks([10, 30, 20, 30, 0]) == [4, 1, 3, 1, 5]


def test_sigma_grows_after_two_weeks_weekly_up_to_the_start():
    """Grace of 14 days, then 0.08·(σ₀/5)² = 0.08·(5/3)² = 0.222222 of variance per whole week."""
    day = 86_400.0
    assert weng_lin.grown_sigma(2.0, 0.0, 20 * day) == 2.0  # 6 days past the grace: no whole week
    assert weng_lin.grown_sigma(2.0, 0.0, 21 * day) == pytest.approx(math.sqrt(4 + 0.222222), abs=1e-6)
    assert weng_lin.grown_sigma(2.0, 0.0, 35 * day) == pytest.approx(math.sqrt(4 + 3 * 0.222222), abs=1e-6)
    assert weng_lin.grown_sigma(2.0, 0.0, 4000 * day) == 25 / 3  # capped at σ₀
    assert weng_lin.grown_sigma(2.0, float("nan"), 4000 * day) == 2.0  # never rated: nothing to grow
    assert weng_lin.grown_sigma(2.0, 50 * day, 0.0) == 2.0  # a clock stepped back


def test_a_battle_uses_the_grown_sigma():
    day = 86_400.0
    idle = Skill(25.0, 2.0, rated_at=0.0, battles=5)
    entered, rated = weng_lin.rate_battle([idle, Skill()], [100, 50], now=28 * day)
    grown = math.sqrt(4 + 2 * 0.08 * (25 / 15) ** 2)
    assert entered == [pytest.approx(grown), 25 / 3]
    (mu, sigma), _ = paper_update([25.0, 25.0], [grown, 25 / 3], [1, 2])
    assert (rated[0].mu, rated[0].sigma, rated[0].battles) == (pytest.approx(mu), pytest.approx(sigma), 6)


def test_conservative_rating():
    assert weng_lin.conservative(25.0, 25 / 3) == pytest.approx(0.0)


def test_a_battle_needs_two_bots():
    with pytest.raises(ValueError, match="2 or more"):
        weng_lin.rate_battle([Skill()], [10], now=0.0)
