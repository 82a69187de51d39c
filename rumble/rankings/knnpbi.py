"""LiteRumble's KNNPBI (K-nearest-neighbours problem bot index): one value per pairing, not a ranking.

Source: LiteRumble ``BatchRankings.py`` and its score explanation page (peers.md §1, "KNNPBI"),
over the symmetrised matrix s = (d + 100 − dᵀ)/2 (``pairwise.symmetrise``). The bots are put in
APS order, best first, APS being the mean of the bot's row of ``d`` over its present pairings (the
APS the table shows; equal APS keep their index order, a bot without pairings goes last). Then

    KNNPBI[X, Y] = s[X, Y] − mean of s[K, Y] over X's neighbours K that met Y:

how much better X did against Y than the bots ranked around X did. Negative values mark X's
problem bots.

Neighbours, as LiteRumble's code takes them: with N bots and h = ceil(sqrt(N)/2), the h bots
placed just above X and the h − 1 just below it, both cut at the ends of the table. The slice's
upper bound, min(N − 1, i + h), is exclusive, so there is one fewer below than above and the
last-placed bot is never anyone's neighbour.

The score explanation page says instead "the K bots surrounding (ie. above and below) this bot",
K = ceil(sqrt(N/2)). We follow the code: it is exact, while the page leaves open whether K counts
both sides or each side and how an odd K splits; and the code is what produced every KNNPBI that
LiteRumble has shown, so our values can be checked against theirs pairing by pairing. The
asymmetry is an off-by-one in LiteRumble's slice; it is kept on purpose and tested.

Missing pairings: NaN in the result (as is the diagonal), and a neighbour that did not meet Y is
left out of the mean. A present pairing where no neighbour met Y gets 0, as LiteRumble turns NaN
into 0.
"""

from __future__ import annotations

import math

import numpy as np

from rumble.rankings.pairwise import as_matrix, present, symmetrise


def knnpbi(d: np.ndarray) -> np.ndarray:
    """KNNPBI[X, Y] for every present pairing (NaN where the pairing is missing)."""
    d = as_matrix(d)
    s = symmetrise(d)
    met = present(d)
    out = np.full(s.shape, np.nan)
    for x, neighbours in enumerate(neighbourhoods(d)):
        expected = _mean_against(s[neighbours])
        index = np.where(np.isnan(expected), 0.0, s[x] - expected)  # no neighbour met Y: 0
        out[x] = np.where(met[x], index, np.nan)
    return out


def neighbourhoods(d: np.ndarray) -> list[list[int]]:
    """For each bot, the indices of its APS-rank neighbours (LiteRumble's code, see above)."""
    order = aps_order(d)
    n = len(order)
    h = math.ceil(math.sqrt(n) / 2)
    result: list[list[int]] = [[] for _ in range(n)]
    for i, x in enumerate(order):
        result[x] = order[max(0, i - h) : i] + order[i + 1 : min(n - 1, i + h)]
    return result


def aps_order(d: np.ndarray) -> list[int]:
    """Bot indices by APS over present pairings, best first; ties keep index order, no pairings last."""
    d = as_matrix(d)
    met = present(d)
    count = met.sum(axis=1)
    total = np.where(met, d, 0.0).sum(axis=1)
    aps = np.divide(total, count, out=np.full(len(d), -np.inf), where=count > 0)
    return np.argsort(-aps, kind="stable").tolist()


def _mean_against(rows: np.ndarray) -> np.ndarray:
    """Column means of ``rows`` over their non-NaN entries (NaN where a column has none)."""
    known = ~np.isnan(rows)
    count = known.sum(axis=0)
    total = np.where(known, rows, 0.0).sum(axis=0)
    return np.divide(total, count, out=np.full(rows.shape[1], np.nan), where=count > 0)
