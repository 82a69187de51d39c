"""Weng-Lin ratings of whole melee battles: the Plackett-Luce model (seed 003, o!TR's worked example).

Weng & Lin (2011), "A Bayesian Approximation Method for Online Ranking", JMLR 12, Algorithm 4,
as the ``openskill`` package implements it (``PlackettLuce``): each bot has a skill mu and an
uncertainty sigma; one melee battle is one game of single-bot teams, ranked by battle score (the
best score first, equal scores tied). With c² = Σ (σ_i² + β²) over the battle's bots,
C_q = Σ_{s: r(s) ≥ r(q)} e^{μ_s/c} and A_q the number of bots tied with q:

    Ω_i = σ_i²/c · Σ_{q: r(q) ≤ r(i)} (1/A_q)·([q = i] − e^{μ_i/c}/C_q)
    Δ_i = σ_i²/c² · Σ_{q: r(q) ≤ r(i)} (1/A_q)·(e^{μ_i/c}/C_q)·(1 − e^{μ_i/c}/C_q)
    μ_i ← μ_i + Ω_i,   σ_i² ← σ_i²·max(1 − Δ_i, κ)

without the paper's "variance damping factor" γ_i = σ_i/c (its page 26), which openskill applies
by default: o!TR leaves it out (seed 003: "We do not include the variance damping factor ...
because volatility is instead increased by decay outside of matches"), and so does rumble, whose
sigma grows the same way (below). So Δ_i is Algorithm 4's as printed, and a battle shrinks sigma
by the full amount the model's information gives (γ ≈ 0.6 in a 2-bot battle of new bots, 0.2 in a
10-bot one, damped it 1.6 to 5 times less).

after openskill's additive dynamics σ_i² ← σ_i² + τ² (so that sigma never collapses). The
constants are openskill's defaults, which are also o!TR's proportions (peers.md section 4):
μ₀ = 25, σ₀ = 25/3, β = σ₀/2, τ = σ₀/100, κ = 0.0001.

Ties follow the paper: a tied bot's factor in the likelihood is raised to 1/A_q, so two tied
bots of equal skill move alike and a tie with a weaker bot costs the stronger one. (openskill's
tie handling has had bugs, peers.md section 4; tests/ratings/test_weng_lin.py checks ties against
these formulas computed separately, and the version is pinned.)

Inactivity (o!TR's decay, adapted): a bot's code never changes, so its mu does not decay as a
player's skill does; but the field moves on without it, so its sigma grows. After
``GRACE_DAYS`` days without a rated battle, each further whole week adds 0.08·(σ₀/5)² to σ² (o!TR:
0.08·60² a week on a scale where σ₀ = 5·60), never beyond σ₀. The growth is applied when the bot
next fights (from its last battle's time to this battle's) and, for display, up to the present.

The displayed, conservative rating is μ − 3σ (o!TR's and openskill's ordinal).

Pure code: plain floats in and out; openskill stays inside this module (imported when a battle is
first rated).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

MU = 25.0
SIGMA = 25.0 / 3.0
BETA = SIGMA / 2.0
TAU = SIGMA / 100.0
KAPPA = 0.0001
GRACE_DAYS = 14  # a rumble bot that fought no battle for two weeks is not being sampled any more
WEEKLY_VARIANCE = 0.08 * (SIGMA / 5.0) ** 2  # o!TR's 0.08·60² a week, 60 being σ₀/5
DAY = 86_400.0


@cache
def _model():
    """openskill's model, imported on first use: the pages import this module for ``grown_sigma``
    and ``conservative`` only, and never need openskill."""
    from openskill.models import PlackettLuce

    return PlackettLuce(mu=MU, sigma=SIGMA, beta=BETA, kappa=KAPPA, tau=TAU, gamma=no_damping)


def no_damping(c, k, mu, sigma_squared, team, rank, weights=None) -> float:
    """openskill's γ hook (c, teams, μ, σ², team, rank, weights): 1 for every bot, i.e. no variance
    damping, as o!TR (seed 003)."""
    return 1.0


@dataclass(frozen=True, slots=True)
class Skill:
    """One bot's Weng-Lin rating; ``rated_at``: time of its last rated battle (s since 1970), NaN if none."""

    mu: float = MU
    sigma: float = SIGMA
    rated_at: float = float("nan")
    battles: int = 0


def grown_sigma(sigma: float, rated_at: float, now: float) -> float:
    """``sigma`` grown for the inactivity from ``rated_at`` to ``now`` (unchanged for a new bot)."""
    if math.isnan(rated_at):
        return sigma
    weeks = math.floor((max(now - rated_at, 0.0) / DAY - GRACE_DAYS) / 7.0)
    if weeks <= 0:
        return sigma
    return min(math.sqrt(sigma * sigma + weeks * WEEKLY_VARIANCE), SIGMA)


def ranks(scores: Sequence[int]) -> list[int]:
    """Competition ranks of battle scores: 1 for the best, equal scores share a rank (1, 2, 2, 4)."""
    return [1 + sum(other > score for other in scores) for score in scores]


def rate_battle(skills: Sequence[Skill], scores: Sequence[int], now: float) -> tuple[list[float], list[Skill]]:
    """One melee battle of ``len(skills)`` bots (at least 2) with their battle scores, fought at ``now``.

    Returns the sigma each bot entered the battle with (after the inactivity growth) and the new
    skills (``rated_at`` = ``now``, ``battles`` + 1), in the order given.
    """
    if len(skills) != len(scores) or len(skills) < 2:
        raise ValueError(f"a rated battle needs 2 or more bots with a score each, not {len(skills)} and {len(scores)}")
    entered = [grown_sigma(s.sigma, s.rated_at, now) for s in skills]
    model = _model()
    teams = [[model.rating(mu=s.mu, sigma=sigma)] for s, sigma in zip(skills, entered)]
    rated = model.rate(teams, ranks=[float(r) for r in ranks(scores)])
    return entered, [Skill(team[0].mu, team[0].sigma, now, s.battles + 1) for team, s in zip(rated, skills)]


def conservative(mu: float, sigma: float) -> float:
    """The displayed rating μ − 3σ: the skill the bot has with about 99.9 % confidence."""
    return mu - 3.0 * sigma
