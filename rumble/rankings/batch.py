"""The batch ranking methods by name, for the command line and the hourly run.

Every entry of METHODS is a ``rank(d) -> Ranking`` with its title over a pairwise matrix (see ``pairwise``), with
each method's default options, so ``--method all`` is ``{name: rank(d) for name, rank in
METHODS.items()}``. KNNPBI gives a value per pairing rather than a ranking, so it is listed apart
in PAIRING_METHODS, next to NPP's per-pairing matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rumble.rankings import batch_elo, borda, copeland, knnpbi, npp, ranked_pairs, schulze, vote
from rumble.rankings.pairwise import Ranking


@dataclass(frozen=True)
class BatchMethod:
    """A batch ranking method: its column title and its ``rank(d) -> Ranking``; called as ``rank``."""

    title: str
    rank: Callable[[np.ndarray], Ranking]

    def __call__(self, d: np.ndarray) -> Ranking:
        return self.rank(d)


# The batch methods in column order: the CLI's --method choices (rumble.cli.RANK_METHODS) and the
# pages' batch columns (rumble.web.lookup.BATCH_TITLES) derive from it.
METHODS: dict[str, BatchMethod] = {
    "schulze": BatchMethod("Schulze", schulze.rank),
    "ranked_pairs": BatchMethod("Ranked Pairs", ranked_pairs.rank),
    "copeland": BatchMethod("Copeland", copeland.rank),
    "borda": BatchMethod("Borda", borda.rank),
    "batch_elo": BatchMethod("Batch Elo", batch_elo.rank),
    "npp": BatchMethod("ANPP", npp.rank),  # ranks by ANPP
    "vote": BatchMethod("Vote", vote.rank),
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
