"""What the batch ranking methods share: the pairwise matrix, its majorities, and ranks with ties.

The input of every batch method is a pairwise matrix ``d``: a square numpy float array with
``d[X, Y]`` = X's score against Y (for a rumble, X's pairing APS against Y, in percent). A NaN marks
a missing pairing; the diagonal is ignored. A pairing counts as *present* only when both
``d[X, Y]`` and ``d[Y, X]`` are numbers, so a half-filled pair is missing on both sides. A missing
pairing expresses no preference: each method says what that means for it.

Every method module exposes one entry function with the same shape::

    rank(d: np.ndarray, **options) -> Ranking

``Ranking.ranks[i]`` is bot i's 1-based rank, ties sharing the best rank of their group (standard
competition ranking: 1, 2, 2, 4). ``Ranking.scores[i]`` is the number the ranks come from, higher
is better, for methods that have one (None for Schulze and Ranked Pairs, which rank by an order
relation). Bots are identified by their index in ``d``; the caller keeps the names. Inputs are
never changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STRENGTHS = ("winning_votes", "margin", "ratio")  # Schulze (2011), section 2.1, and Ranked Pairs


@dataclass(frozen=True, eq=False)  # arrays have no single truth value: compare the fields instead
class Ranking:
    """One method's result: 1-based ranks with ties shared, and the scores behind them if any."""

    ranks: np.ndarray
    scores: np.ndarray | None = None


def as_matrix(d: np.ndarray) -> np.ndarray:
    """``d`` as a float copy, checked to be a square matrix."""
    m = np.array(d, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"a pairwise matrix must be square, not of shape {m.shape}")
    return m


def present(d: np.ndarray) -> np.ndarray:
    """Boolean matrix: True where the pairing X-Y has a score in both directions (never on the diagonal)."""
    known = np.isfinite(d)
    mask = known & known.T
    np.fill_diagonal(mask, False)
    return mask


def symmetrise(d: np.ndarray) -> np.ndarray:
    """LiteRumble's batch matrix: (d + 100 − dᵀ)/2, NaN where the pairing is missing and on the diagonal.

    Averages X's score against Y with 100 minus Y's score against X (peers.md §1, "Batch
    symmetrisation"), so that s[X, Y] + s[Y, X] = 100 for every present pairing.
    """
    d = as_matrix(d)
    s = (d + 100.0 - d.T) / 2.0
    s[~present(d)] = np.nan
    return s


def majorities(d: np.ndarray) -> np.ndarray:
    """Boolean matrix: True where X's score against Y beats Y's score against X (a majority X over Y)."""
    with np.errstate(invalid="ignore"):
        return present(d) & (d > d.T)


def ties(d: np.ndarray) -> np.ndarray:
    """Boolean matrix: True where the pairing is present and both sides scored exactly the same."""
    return present(d) & (d == d.T)


def link_strengths(d: np.ndarray, strength: str = "winning_votes") -> np.ndarray:
    """Strength of each majority X over Y, 0 where there is none (Schulze 2011, section 2.1).

    ``d[X, Y]`` is read as the number of voters preferring X to Y. ``winning_votes``: d[X, Y];
    ``margin``: d[X, Y] − d[Y, X]; ``ratio``: d[X, Y] / d[Y, X] (infinite when d[Y, X] is 0). Each is
    positive on a majority, so 0 sorts below every real link. When d[X, Y] + d[Y, X] is the same for
    every pairing (1v1 APS: always 100) the three are increasing functions of d[X, Y] and rank alike.
    """
    if strength not in STRENGTHS:
        raise ValueError(f"unknown strength {strength!r}; choose one of {', '.join(STRENGTHS)}")
    beats = majorities(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = {"winning_votes": d, "margin": d - d.T, "ratio": d / d.T}[strength]
    return np.where(beats, value, 0.0)


def ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """Competition ranks, higher score first: equal scores share a rank (1, 2, 2, 4); NaN comes last, tied."""
    scores = np.asarray(scores, dtype=float)
    key = np.where(np.isnan(scores), -np.inf, scores)
    ascending = np.sort(key)
    greater = len(key) - np.searchsorted(ascending, key, side="right")  # scores strictly above each
    return greater + 1


def ranks_from_order(above: np.ndarray) -> np.ndarray:
    """Ranks from a strict order given as a boolean matrix ``above[x, y]`` (x ranked above y).

    The rank of y is 1 + the number of bots above it. For a transitive relation this is consistent
    with it (x above y gives x the better rank) and bots of equal rank are never ordered against
    each other; for a weak order (tiers) it is the usual 1, 2, 2, 4.
    """
    return 1 + np.asarray(above, dtype=bool).sum(axis=0)
