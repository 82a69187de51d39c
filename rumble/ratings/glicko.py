"""Glicko-1 with the rumble's all-pairings method and seed 001's deviation decay.

- The update is Glickman's "The Glicko system", step 2. As on RRServer (seed 004, "Calculation
  Notes"), one rating period is one upload for one bot: its games are all its live pairings, each
  pairing's APS (a fraction 0..1) being the outcome s_j against an opponent (r_j, RD_j).
- The decay is Glickman's step 1, RD = min(sqrt(RD² + c²·t), 350), applied as seed 001 ("Step 1:
  Decay deviation") applies it: by the number t of virtual rating periods since the bot was last
  updated. Seed 001 counts whole periods in a loop, clamping after each; clamping once at the end
  gives the same value, and t is taken as a real number (elapsed time / period length, the
  paper's own form), because whole periods counted from the last update never accrue for a bot
  updated more often than once a period.
- ``win_probability`` is the expected score with both deviations (seed 001, "Calculating win
  probabilities"): 1/(1 + 10^(-g(sqrt(RD1² + RD2²))·(r1 - r2)/400)).

The decay alone does not keep RD up under the all-pairings method: every upload counts all of a
bot's pairings as fresh games, so a bot with 1000 pairings rated every 10 minutes would settle
near RD 5 with the default c (the level grows only as sqrt(c)), the collapse RRServer showed. So
RD never falls below RD_MIN = 25, the floor of seed 001's own ladder (rating-update's code, known
from peers.md section 4; its text gives none). Ratings use the Glicko-1 scale: a new bot is 1500 ± 350.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

from rumble.ratings.glicko_common import E, Q, g, terms

R_UNRATED = 1500.0  # Glickman's step 1 and RRServer: an unrated player's rating
RD_UNRATED = 350.0  # Glickman's step 1 and seed 001: an unrated player's RD, also the decay's cap
RD_MIN = 25.0  # rating-update's floor (peers.md section 4): keeps the all-pairings update from collapsing RD
RD_TYPICAL = 50.0  # Glickman's example of a settled player's RD, the starting point for choosing c
DAY_SECONDS = 86_400
PERIOD_SECONDS = DAY_SECONDS  # one virtual rating period is a day: a bot can be updated many times a day
PERIODS_TO_UNRATED = 365  # a year without battles makes a settled bot as uncertain as a new one:
# a bot's code never changes, only the field around it, so its uncertainty should grow slowly
C = math.sqrt((RD_UNRATED**2 - RD_TYPICAL**2) / PERIODS_TO_UNRATED)  # = 18.13; seed 001's recipe


def decay(rd: float, elapsed_periods: float, c: float = C) -> float:
    """RD after ``elapsed_periods`` rating periods without games: min(sqrt(RD² + c²·t), 350) (step 1)."""
    if elapsed_periods < 0:
        raise ValueError(f"elapsed time is negative: {elapsed_periods} periods")
    return decayed(rd, elapsed_periods, c)


@register_jitable
def decayed(rd: float, elapsed_periods: float, c: float = C) -> float:
    """``decay`` without the check, for the compiled step, which never passes a negative time."""
    return min(math.sqrt(rd**2 + c**2 * elapsed_periods), RD_UNRATED)


@register_jitable
def periods(elapsed_seconds: float, period_seconds: float = PERIOD_SECONDS) -> float:
    """The number t of virtual rating periods (a real number) in ``elapsed_seconds``."""
    return elapsed_seconds / period_seconds


@register_jitable
def exponent(rating, opp_r, g_j):
    """−g_j·q·(r − r_j): E(r, r_j, RD_j) = 1/(1 + exp(exponent)), g_j = g(q·RD_j) (floats or arrays)."""
    return -g_j * (Q * rating - Q * opp_r)


@register_jitable
def opponent_g(opp_rd):
    """g(q·RD_j), how much an opponent's deviation damps the expected score."""
    return g(Q * opp_rd)


def game_terms(rating, opp_r, opp_rd, scores):
    """Per opponent j, the two sums' terms of step 2: (g_j²·E_j·(1 − E_j), g_j·(s_j − E_j)) (numpy arrays)."""
    g_j = opponent_g(opp_rd)
    return terms(g_j, 1.0 / (1.0 + np.exp(exponent(rating, opp_r, g_j))), scores)


@register_jitable
def combine(rating: float, rd: float, variance_sum: float, improvement_sum: float) -> tuple[float, float]:
    """(r', RD') of step 2 from the sums of ``game_terms`` over the period's games."""
    precision = 1.0 / rd**2 + Q**2 * variance_sum  # 1/RD² + 1/d²
    return rating + Q / precision * improvement_sum, max(math.sqrt(1.0 / precision), RD_MIN)


def update(rating: float, rd: float, opp_r, opp_rd, scores) -> tuple[float, float]:
    """(r', RD') after one rating period whose games are the bot's pairings (Glickman, step 2).

    ``opp_r``, ``opp_rd`` and ``scores`` are equal-length arrays over the bot's live pairings;
    ``scores`` are the pairing APS as fractions 0..1. With no pairings nothing changes. numpy's
    sums depend on the order of the elements: pass the pairings in a fixed order to reproduce a
    value bit for bit.
    """
    variance, improvement = game_terms(
        rating, np.asarray(opp_r, dtype=float), np.asarray(opp_rd, dtype=float), np.asarray(scores, dtype=float)
    )
    return combine(rating, rd, float(np.sum(variance)), float(np.sum(improvement)))


def win_probability(r1: float, rd1: float, r2: float, rd2: float) -> float:
    """Bot 1's expected score against bot 2 counting both deviations (seed 001): the win probability."""
    combined = math.sqrt(rd1**2 + rd2**2)
    return float(E(Q * r1, Q * r2, Q * combined))
