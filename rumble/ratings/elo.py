"""RoboRumble Elo: the old server's all-participant update (seed 004, "RoboRumble Elo Ratings").

Seed 004 lost its minus signs in extraction; peers.md section 7 restores them from RRServer's code:

- a new bot starts at 1600;
- E(A,B) = 1/(1 + 20^((r_B - r_A)/800)), the expected share of the pairing score;
- after every upload each of the two bots gets delta = sum over all its live pairings j of
  3·(Pair(A,j) - E(A,j)), Pair being the pairing APS as a fraction of 1 (RRServer's true running
  mean, not the original server's 0.7/0.3 average). Both bots are computed from the ratings as they
  stood before the upload; the caller adds delta to the rating.

The whole field is summed on every upload, so ``delta`` is vectorised over the bot's pairings.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

START = 1600.0  # seed 004: "New competitors start at a rating of 1600"
BASE, SCALE = 20.0, 800.0  # the old server's curve, not chess Elo's 10 and 400 (seed 004)
WEIGHT = 3.0  # seed 004: each pairing moves the rating by 3 points per unit of surprise


_LN_BASE = math.log(BASE)  # 20^x computed as exp(x·ln 20): the same value, several times faster than pow


@register_jitable
def exponent(rating, opponent):
    """ln(20)·(r_B − r_A)/800: E(A,B) = 1/(1 + exp(exponent)) (floats or arrays)."""
    return _LN_BASE * ((opponent - rating) / SCALE)


@register_jitable
def expected_score(rating, opponent):
    """E(A,B) = 1/(1 + 20^((r_B - r_A)/800)) of seed 004: A's expected share of the pairing score (floats or arrays)."""
    return 1.0 / (1.0 + np.exp(exponent(rating, opponent)))


@register_jitable
def surprise(rating, opponent_ratings, scores):
    """Per pairing, score_j − E(rating, r_j) (floats, or numpy arrays over the pairings)."""
    return scores - expected_score(rating, opponent_ratings)


def delta(rating: float, opponent_ratings, scores) -> float:
    """The rating change Σ_j 3·(score_j - E(rating, r_j)) over a bot's live pairings.

    ``opponent_ratings`` and ``scores`` are equal-length arrays, ``scores`` the pairing APS as
    fractions 0..1. numpy's sum depends on the order of the elements, so a caller that must
    reproduce a value bit for bit passes the pairings in a fixed order.
    """
    return float(
        WEIGHT * np.sum(surprise(rating, np.asarray(opponent_ratings, dtype=float), np.asarray(scores, dtype=float)))
    )
