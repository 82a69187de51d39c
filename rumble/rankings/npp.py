"""LiteRumble's NPP and ANPP: each score against an opponent, normalised over everyone's scores against it.

Source: LiteRumble ``BatchRankings.py`` and its score explanation page (peers.md §1, "NPP / ANPP"),
over the symmetrised matrix s = (d + 100 − dᵀ)/2 (``pairwise.symmetrise``). For opponent Y, let
lo and hi be the lowest and highest s[·, Y] over the bots that met Y; then
NPP[X, Y] = 100 · (s[X, Y] − lo)/(hi − lo): the best score against Y maps to 100 and the worst to
0. If every bot scored the same against Y (hi = lo, e.g. only one bot met Y), every NPP against Y is
100. ANPP_X is the mean of X's NPP over its present pairings, or −1 if it has none (LiteRumble's
marker, which ranks it last).

Ties: equal ANPP values share a rank. Missing pairings: no NPP (NaN) and left out of both the
normalisation of that opponent and the bot's mean.
"""

from __future__ import annotations

import numpy as np

from rumble.rankings.pairwise import Ranking, present, ranks_from_scores, symmetrise

NO_PAIRINGS = -1.0  # LiteRumble's ANPP for a bot without pairings


def npp(d: np.ndarray) -> np.ndarray:
    """NPP[X, Y], X's normalised score against Y (NaN for a missing pairing and on the diagonal)."""
    s = symmetrise(d)
    met = present(s)
    lo = np.min(np.where(met, s, np.inf), axis=0, initial=np.inf)
    hi = np.max(np.where(met, s, -np.inf), axis=0, initial=-np.inf)
    spread = hi - lo
    flat = ~(spread > 0)  # no spread, or no bot met this opponent
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 100.0 * (s - lo[None, :]) / spread[None, :]
    out[:, flat] = 100.0
    out[~met] = np.nan
    return out


def scores(d: np.ndarray) -> np.ndarray:
    """ANPP: each bot's mean NPP over its present pairings, −1 without pairings."""
    values = npp(d)
    met = ~np.isnan(values)
    total = np.where(met, values, 0.0).sum(axis=1)
    count = met.sum(axis=1)
    return np.divide(total, count, out=np.full(len(count), NO_PAIRINGS), where=count > 0)


def rank(d: np.ndarray) -> Ranking:
    """ANPP ranks, with the ANPP values as scores."""
    s = scores(d)
    return Ranking(ranks=ranks_from_scores(s), scores=s)
