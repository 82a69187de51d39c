"""LiteRumble's Vote: every bot votes for the opponent it did worst against.

Source: LiteRumble ``BatchRankings.py`` and its score explanation page (peers.md §1, "Vote"),
computed over the symmetrised matrix s = (d + 100 − dᵀ)/2 (``pairwise.symmetrise``). Voter Y
gives its vote to the bot X with the highest s[X, Y], the best score anyone made against Y; then
Vote_X = 100 · votes_X / pairings_X, the votes as a percentage of X's pairings.

Ties: when several bots share the highest score against a voter, the vote is split equally
between them (1/k each), as LiteRumble does; equal Vote values share a rank. Missing pairings: a
voter chooses only among the bots it has met, a voter without pairings casts no vote, and
pairings_X counts only X's present pairings; a bot without pairings has Vote 0.
"""

from __future__ import annotations

import numpy as np

from rumble.rankings.pairwise import Ranking, present, ranks_from_scores, symmetrise


def votes(d: np.ndarray) -> np.ndarray:
    """The (possibly fractional) votes each bot receives."""
    s = symmetrise(d)
    met = present(s)
    best = np.max(np.where(met, s, -np.inf), axis=0, initial=-np.inf)  # the best score against each voter
    chosen = met & (s == best[None, :])
    share = np.divide(1.0, chosen.sum(axis=0), out=np.zeros(len(s)), where=chosen.any(axis=0))
    return (chosen * share[None, :]).sum(axis=1)


def scores(d: np.ndarray) -> np.ndarray:
    """Vote: 100 · votes / pairings for each bot (0 without pairings)."""
    pairings = present(symmetrise(d)).sum(axis=1)
    return np.divide(100.0 * votes(d), pairings, out=np.zeros(len(pairings)), where=pairings > 0)


def rank(d: np.ndarray) -> Ranking:
    """Vote ranks, with the Vote percentages as scores."""
    s = scores(d)
    return Ranking(ranks=ranks_from_scores(s), scores=s)
