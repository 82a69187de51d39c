"""The batch ranking methods by name, for the command line and the scheduled job.

Every entry of METHODS is a ``rank(d) -> Ranking`` over a pairwise matrix (see ``pairwise``), with
each method's default options, so ``--method all`` is ``{name: rank(d) for name, rank in
METHODS.items()}``. KNNPBI gives a value per pairing rather than a ranking, so it is listed apart
in PAIRING_METHODS, next to NPP's per-pairing matrix.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rumble.rankings import batch_elo, borda, copeland, knnpbi, npp, ranked_pairs, schulze, vote
from rumble.rankings.pairwise import Ranking

METHODS: dict[str, Callable[[np.ndarray], Ranking]] = {
    "schulze": schulze.rank,
    "ranked_pairs": ranked_pairs.rank,
    "copeland": copeland.rank,
    "borda": borda.rank,
    "batch_elo": batch_elo.rank,
    "npp": npp.rank,  # ranks by ANPP
    "vote": vote.rank,
}

# Methods fitted to the pairings' win rates (battles won over battles), not to their APS: MN's batch
# Elo is "based on pairing win rates (i.e. # wins/battles for each pairing)" (seed 004).
WIN_RATE_METHODS = frozenset({"batch_elo"})

PAIRING_METHODS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "knnpbi": knnpbi.knnpbi,
    "npp": npp.npp,
}


def rank_all(d: np.ndarray) -> dict[str, Ranking]:
    """Every method's ranking of ``d``, by method name."""
    return {name: method(d) for name, method in METHODS.items()}
