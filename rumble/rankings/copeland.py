"""Copeland's method: one point per pairing won, half a point per pairing tied.

Source: A. H. Copeland, "A 'reasonable' social welfare function", seminar on applications of
mathematics to the social sciences, University of Michigan (1951); the "1/½/0" form as in
Wikipedia's "Copeland's method" and D. Lippman, "Math in Society", chapter "Voting Theory"
(Copeland's method, example 11). A pairing is won when X's score against Y beats Y's score against
X (for a 1v1 rumble: X's pairing APS is above 50).

Ties: an exact tie (for a rumble, a pairing APS of exactly 50) gives both sides half a point, the
textbook rule (RRServer's PL ignored it and LiteRumble's PWIN counts it as a loss, peers.md §7);
equal scores share a rank. Missing pairings: count for no one, so the score is over the pairings a
bot has (wins + ½·ties); with every pairing played this orders the bots as wins − losses does.
"""

from __future__ import annotations

import numpy as np

from rumble.rankings.pairwise import Ranking, as_matrix, majorities, ranks_from_scores, ties


def scores(d: np.ndarray) -> np.ndarray:
    """Each bot's Copeland score: pairings won + ½ · pairings tied."""
    d = as_matrix(d)
    return majorities(d).sum(axis=1) + 0.5 * ties(d).sum(axis=1)


def rank(d: np.ndarray) -> Ranking:
    """Copeland ranks, with the scores."""
    s = scores(d)
    return Ranking(ranks=ranks_from_scores(s), scores=s)
