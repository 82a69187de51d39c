"""Schulze's method (beatpath): rank by the strengths of the strongest paths between bots.

Source: M. Schulze, "A new monotonic, clone-independent, reversal symmetric, and
Condorcet-consistent single-winner election method", Social Choice and Welfare 36 (2011) 267-303,
sections 2.1-2.2 (links, paths, the relation "better") and 2.3 (the Floyd-Warshall computation);
the worked example is Wikipedia's "Schulze method" (45 voters, 5 candidates).

Votes from a pairwise matrix: ``d[X, Y]`` is read as the number of voters who prefer X to Y (for a
rumble, X's pairing APS against Y: the percentage of the pairing's points X took, as if 100 voters
split between the two). A link X→Y exists when d[X, Y] > d[Y, X]; its strength is d[X, Y] with
winning votes (the default), d[X, Y] − d[Y, X] with ``strength="margin"`` and d[X, Y] / d[Y, X]
with ``strength="ratio"`` (``pairwise.link_strengths``). A path's strength is its weakest link;
p[X, Y] is the strongest path from X to Y, 0 when there is none. X is ranked above Y when
p[X, Y] > p[Y, X]; Schulze proves this relation transitive (2011, section 4.1).

Ties: a bot's rank is 1 + the number of bots above it, so bots that neither is above the other
share a rank when they have the same bots above them (an exactly balanced Condorcet cycle is a
three-way tie for first); nothing is broken at random. An exact 50/50 pairing is no link either way.
Missing pairings: no link either way (no preference). A bot without any pairing is above no one
and below no one, so it shares rank 1: leave such bots out before ranking.
"""

from __future__ import annotations

import numpy as np

from rumble.rankings.pairwise import Ranking, as_matrix, link_strengths, majorities, ranks_from_order


def rank(d: np.ndarray, strength: str = "winning_votes") -> Ranking:
    """Schulze ranks of the bots of ``d`` (no scores: the ranks come from the order relation)."""
    codes, _ = _path_codes(as_matrix(d), strength)
    above = codes > codes.T
    np.fill_diagonal(above, False)
    return Ranking(ranks=ranks_from_order(above))


def strongest_paths(d: np.ndarray, strength: str = "winning_votes") -> np.ndarray:
    """p[X, Y], the strength of the strongest path from X to Y (0 if none, NaN on the diagonal)."""
    codes, levels = _path_codes(as_matrix(d), strength)
    p = levels[codes]
    np.fill_diagonal(p, np.nan)
    return p


def _path_codes(d: np.ndarray, strength: str) -> tuple[np.ndarray, np.ndarray]:
    """Strongest paths computed on the ranks of the link strengths; returns (codes, levels).

    Widest paths only compare strengths (min and max), so each distinct strength is replaced by
    its rank: 0 for no link, 1 for the weakest link and so on. The int32 codes halve the memory
    traffic of float64 and compare exactly; ``levels[code]`` maps a code back to its strength.
    """
    beats = majorities(d)
    levels, inverse = np.unique(link_strengths(d, strength)[beats], return_inverse=True)
    codes = np.zeros(d.shape, dtype=np.int32)
    codes[beats] = inverse.ravel() + 1
    return _widest_paths(codes), np.concatenate(([0.0], levels))


def _widest_paths(p: np.ndarray) -> np.ndarray:
    """Floyd-Warshall for bottleneck paths, in place: p[i, j] = max(p[i, j], min(p[i, k], p[k, j])).

    One numpy pass over the matrix per intermediate bot k (Schulze 2011, section 2.3), so n passes
    of n² element operations. Row k and column k do not change during pass k (min(p[k, k], p[k, j])
    never exceeds p[k, j]), so reading them as views of ``p`` while it is updated is safe.
    """
    scratch = np.empty_like(p)
    for k in range(len(p)):
        np.minimum(p[:, k, None], p[None, k, :], out=scratch)
        np.maximum(p, scratch, out=p)
    return p
