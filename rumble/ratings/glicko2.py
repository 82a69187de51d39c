"""Glicko-2 with INVERSUS's bounds and inactivity (seed 000) and the rumble's all-pairings method.

- The update is Glickman's "Example of the Glicko-2 system" (revised 22 March 2022), steps 2-8,
  with the Illinois iteration of step 5 for the volatility. Two places where seed 000's C++
  departs from the paper follow the paper: step 5.2 brackets with ln(Delta² - phi² - v) (the seed
  subtracts the volatility instead of v), and step 5.4(b) tests f_C·f_B <= 0 (the 2022 revision;
  the seed has the older "< 0"). RRServer's bug of passing RD where the volatility belongs
  (peers.md section 2) has no counterpart here: sigma is its own argument.
- One rating period is one upload for one bot, over all its live pairings, each pairing's APS (a
  fraction 0..1) being the game outcome (seed 004, "Calculation Notes"; seed 000 likewise lets a
  rating period pass with each game). With no pairings the period is an inactive one (step 6).
- Seed 000's bounds ("Glicko2_ApplyPlayerBounds") clamp the rating, deviation and volatility at
  the end of every update and every inactivity step, never in between.
- Seed 000's inactivity ("Glicko2_ApplyInactiveRatingPeriods") is O(1) over any number t of
  periods, partial ones included: phi' = sqrt(phi² + t·sigma²). A period is 14 days, counted in
  whole days, so uncertainty starts to build only after a full day away.

Values are on the Glicko-1 scale (r = 1500 + 173.7178·mu, RD = 173.7178·phi); sigma is on the
Glicko-2 scale, as in both sources. Functions take values and return new ``Rating`` values.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba.extending import register_jitable

from rumble.ratings.glicko_common import SCALE, g, terms, to_mu, to_phi, to_r, to_rd

TAU = 0.5  # seed 000 and RRServer: the paper's example value (its advice: between 0.3 and 1.2)
EPSILON = 1e-6  # step 5: the paper's convergence tolerance on x = ln(sigma²)
MAX_ITERATIONS = 100  # Illinois steps of step 5 at most. The paper's example needs 2, reachable
# rumble inputs up to 27 (tests/ratings/test_stated_properties.py), more than the 20 RRServer allowed
# (seed 004), whose bound would stop some updates short. Reaching 100 means non-finite input or a bug,
# so it raises instead of returning a guess
PERIOD_DAYS = 14  # seed 000: one inactive rating period is 14 days, counted in whole days
DAY_SECONDS = 86_400

R_UNRATED = 1500.0  # step 2: an unrated player has mu = 0
RD_UNRATED = 350.0  # Glickman's initial RD; seed 000's phi = 2.015 is 350/173.7178 to 3 decimals
SIGMA_UNRATED = 0.06  # seed 000 and the paper: an unrated player's volatility
Z_997 = 3.0  # seed 000: ±3 deviations hold 99.7 % of a normal distribution
R_MIN = R_UNRATED - Z_997 * RD_UNRATED  # seed 000: an unrated player's 99.7 % range, 450 to 2550
R_MAX = R_UNRATED + Z_997 * RD_UNRATED  # (mu within ±6.044, the seed's ±6.045): few bots fall outside
RD_MIN = 0.175 * SCALE  # seed 000: phi >= 0.175 (RD 30.4) keeps a settled rating from stagnating
RD_MAX = RD_UNRATED  # seed 000: never less certain of a bot than of an unrated one
SIGMA_MIN, SIGMA_MAX = 0.04, 0.08  # seed 000: the range its simulations stayed in, kept as a safety net


class VolatilityNotConverged(ArithmeticError):
    """The Illinois iteration of step 5 did not converge within MAX_ITERATIONS."""


class Rating(NamedTuple):
    """A Glicko-2 value: rating r and deviation RD on the Glicko-1 scale, volatility sigma."""

    r: float = R_UNRATED
    rd: float = RD_UNRATED
    sigma: float = SIGMA_UNRATED

    def cap(self) -> Rating:
        """This value clamped to seed 000's bounds on rating, deviation and volatility."""
        r, rd = clamp(self.r, R_MIN, R_MAX), clamp(self.rd, RD_MIN, RD_MAX)
        return Rating(r, rd, clamp(self.sigma, SIGMA_MIN, SIGMA_MAX))


UNRATED = Rating()


@register_jitable
def clamp(x: float, low: float, high: float) -> float:
    """x limited to [low, high] (seed 000's Math::Clamp)."""
    return min(max(x, low), high)


@register_jitable
def f(x: float, delta: float, phi: float, v: float, a: float, tau: float) -> float:
    """Step 5.1: f(x) = e^x(Delta² - phi² - v - e^x) / (2(phi² + v + e^x)²) - (x - a)/tau²."""
    ex = math.exp(x)
    return ex * (delta**2 - phi**2 - v - ex) / (2.0 * (phi**2 + v + ex) ** 2) - (x - a) / tau**2


@register_jitable
def bracket(delta: float, phi: float, v: float, a: float, tau: float) -> float:
    """Step 5.2: the starting value B, on the other side of the root of f from A = a."""
    if delta**2 > phi**2 + v:
        return math.log(delta**2 - phi**2 - v)
    for k in range(1, MAX_ITERATIONS + 1):
        if f(a - k * tau, delta, phi, v, a, tau) >= 0.0:
            return a - k * tau
    raise VolatilityNotConverged("no B with f(B) >= 0 found for step 5.2")


@register_jitable
def volatility(sigma: float, delta: float, phi: float, v: float, tau: float = TAU) -> float:
    """Step 5: the new volatility sigma', from the root of f by the Illinois algorithm."""
    return volatility_steps(sigma, delta, phi, v, tau)[0]


@register_jitable
def volatility_steps(sigma: float, delta: float, phi: float, v: float, tau: float = TAU) -> tuple[float, int]:
    """``volatility``, and the Illinois steps it took (new points C computed in step 5.4)."""
    a = math.log(sigma**2)
    A, B = a, bracket(delta, phi, v, a, tau)  # step 5.2
    f_A, f_B = f(A, delta, phi, v, a, tau), f(B, delta, phi, v, a, tau)  # step 5.3
    for step in range(MAX_ITERATIONS):  # step 5.4
        if abs(B - A) <= EPSILON:
            return math.exp(A / 2.0), step  # step 5.5
        C = A + (A - B) * f_A / (f_B - f_A)
        f_C = f(C, delta, phi, v, a, tau)
        if f_C * f_B <= 0.0:
            A, f_A = B, f_B
        else:
            f_A = f_A / 2.0
        B, f_B = C, f_C
    raise VolatilityNotConverged("|B - A| still above EPSILON after MAX_ITERATIONS iterations")


@register_jitable
def grow(rd: float, sigma: float, t: float) -> float:
    """RD after t rating periods (t may be partial) without games: phi' = sqrt(phi² + t·sigma²), capped.

    Computed on the RD scale, RD' = sqrt(RD² + t·(173.7178·sigma)²), so that t = 0 returns RD exactly.
    """
    return clamp(math.sqrt(rd**2 + t * (SCALE * sigma) ** 2), RD_MIN, RD_MAX)


@register_jitable
def whole_days(elapsed_seconds: float) -> int:
    """Elapsed time in whole days, the unit seed 000 counts inactivity in (a partial day is dropped)."""
    return int(math.floor(elapsed_seconds / DAY_SECONDS))


def inactivity(rd: float, sigma: float, days: int) -> float:
    """RD after ``days`` whole days without battles: t = days/14 periods in one step (seed 000).

    The rating and volatility do not change. A long absence ends at RD_MAX, never above.
    """
    if days < 0:
        raise ValueError(f"elapsed time is negative: {days} days")
    return inactive(rd, sigma, days)


@register_jitable
def inactive(rd: float, sigma: float, days: int) -> float:
    """``inactivity`` without the check, for the compiled step, which never passes a negative time."""
    return grow(rd, sigma, days / PERIOD_DAYS)


@register_jitable
def exponent(r, opp_r, g_j):
    """−g(phi_j)·(mu − mu_j) (step 2's scale): E(mu, mu_j, phi_j) = 1/(1 + exp(exponent)) (floats or arrays)."""
    return -g_j * (to_mu(r) - to_mu(opp_r))


@register_jitable
def opponent_g(opp_rd):
    """g(phi_j), how much an opponent's deviation damps the expected score (step 3)."""
    return g(to_phi(opp_rd))


def game_terms(r, opp_r, opp_rd, scores):
    """Per opponent j, the terms of steps 3 and 4 (numpy arrays)."""
    g_j = opponent_g(opp_rd)
    return terms(g_j, 1.0 / (1.0 + np.exp(exponent(r, opp_r, g_j))), scores)


@register_jitable
def combine_values(
    r: float, rd: float, sigma: float, variance_sum: float, improvement_sum: float, tau: float = TAU
) -> tuple[float, float, float]:
    """Steps 3-8 and seed 000's bounds, from the sums of ``game_terms`` over the period's games: (r', RD', sigma')."""
    mu, phi = to_mu(r), to_phi(rd)
    v = 1.0 / variance_sum  # step 3
    sigma_new = volatility(sigma, v * improvement_sum, phi, v, tau)  # steps 4 and 5
    phi_star = math.sqrt(phi**2 + sigma_new**2)  # step 6
    phi_new = 1.0 / math.sqrt(1.0 / phi_star**2 + 1.0 / v)  # step 7
    mu_new = mu + phi_new**2 * improvement_sum
    # step 8, then seed 000's bounds
    return (
        clamp(to_r(mu_new), R_MIN, R_MAX),
        clamp(to_rd(phi_new), RD_MIN, RD_MAX),
        clamp(sigma_new, SIGMA_MIN, SIGMA_MAX),
    )


def combine(r: float, rd: float, sigma: float, variance_sum: float, improvement_sum: float, tau: float = TAU) -> Rating:
    """``combine_values`` as a ``Rating``."""
    return Rating(*combine_values(r, rd, sigma, variance_sum, improvement_sum, tau))


def update(r: float, rd: float, sigma: float, opp_r, opp_rd, scores, tau: float = TAU) -> Rating:
    """The value after one rating period whose games are the bot's pairings (steps 2-8, then the bounds).

    ``opp_r``, ``opp_rd`` and ``scores`` are equal-length arrays over the bot's live pairings,
    ``scores`` the pairing APS as fractions 0..1. Apply ``inactivity`` first for the time since the
    bot's last update. numpy's sums depend on the order of the elements: pass the pairings in a
    fixed order to reproduce a value bit for bit.
    """
    if np.asarray(scores).size == 0:  # step 6 for a player who did not compete: one period of growth
        return Rating(r, grow(rd, sigma, 1.0), sigma).cap()
    variance, improvement = game_terms(
        r, np.asarray(opp_r, dtype=float), np.asarray(opp_rd, dtype=float), np.asarray(scores, dtype=float)
    )
    return combine(r, rd, sigma, float(np.sum(variance)), float(np.sum(improvement)), tau)
