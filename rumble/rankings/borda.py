"""Borda count in its pairwise form: a bot's score is its row sum of the pairwise matrix.

Source: J.-C. de Borda, "Mémoire sur les élections au scrutin" (1781). With complete ranked ballots,
a candidate's Borda count (n − 1 points for a first place down to 0 for a last) equals the number
of (voter, rival) pairs where the voter ranks it above the rival, which is its row sum of the
pairwise preference matrix: Σ_Y d[X, Y]. Example: Wikipedia's "Borda count", the Tennessee capital
election (Nashville 194, Chattanooga 173, Memphis 126, Knoxville 107 points per 100 voters).

For a rumble d[X, Y] is X's pairing APS against Y, so with every pairing played the Borda count is
(n − 1) · APS and ranks the bots exactly as APS does.

Missing pairings are counted as ``missing`` points each (default 50, an even pairing): "no
preference" then neither helps nor hurts a bot against the 50 a pairing averages, as a voter
indifferent between two candidates gives each half a point. (A plain sum would punish bots for
pairings not yet played; a mean over played pairings is APS, which rewards dodging strong bots.)
Ties: equal counts share a rank.
"""

from __future__ import annotations

import numpy as np

from rumble.rankings.pairwise import Ranking, as_matrix, present, ranks_from_scores

EVEN_PAIRING = 50.0  # percent: what a 1v1 pairing gives each side when neither is better


def scores(d: np.ndarray, missing: float = EVEN_PAIRING) -> np.ndarray:
    """Each bot's Borda count: Σ over its rivals of d[X, Y], a missing pairing counting ``missing``."""
    d = as_matrix(d)
    filled = np.where(present(d), d, missing)
    np.fill_diagonal(filled, 0.0)
    return filled.sum(axis=1)


def rank(d: np.ndarray, missing: float = EVEN_PAIRING) -> Ranking:
    """Borda ranks, with the counts."""
    s = scores(d, missing)
    return Ranking(ranks=ranks_from_scores(s), scores=s)
