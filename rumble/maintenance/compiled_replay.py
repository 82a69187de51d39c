"""A 1v1 rumble's battles replayed in compiled code: each battle's pairings, then both bots' ratings.

``replay_battles`` does for a run of logged battles what the upload path does for one
(``ingest.apply.apply_battle``: ``scores.score_battle``, then ``ingest.apply.rate``), with the same formulas:
``scores.battle_percent``, ``survival_percent`` and ``running_means`` (compiled here without
fast-math, so the same IEEE operations as in Python), and the rating step
``all_pairings.step``, the very compiled function the upload path calls, exponentials included.
It runs without a Python call per battle, which is what made the rebuild slow (the rating step was
under half of its time).

The pairings are kept in arrays indexed by a row per bot (``Pairings``), not by field position,
so that a bot joining the field does not move them. Receive times are whole milliseconds (the
log's times are all ``YYYY-MM-DD HH:MM:SS.mmm``, rumble.store.format_time and the importer), so
``ms * 1000 / 1e6`` is ``online.seconds`` exactly: both are the correctly rounded quotient of the
same integer number of microseconds by 10^6.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rumble.rankings.scores import battle_percent, running_means, survival_percent
from rumble.ratings import all_pairings

NO_BATTLE = -1  # a pairing's latest battle time (ms) before its first battle


class Pairings:
    """Every pairing's running values as arrays: ``battles[r, s]`` and ``means[:, r, s]`` (APS, M2,
    survival) of the bot in row r against the bot in row s, and ``last_ms`` its latest battle."""

    def __init__(self, capacity: int):
        self.row: dict[int, int] = {}
        self.battles = np.zeros((capacity, capacity), dtype=np.int64)
        self.means = np.zeros((3, capacity, capacity))
        self.last_ms = np.full((capacity, capacity), NO_BATTLE, dtype=np.int64)

    def rows_of(self, bots: np.ndarray) -> np.ndarray:
        """The rows of ``bots`` (ids), giving each new bot the next row (growing the arrays)."""
        for bot in np.unique(bots).tolist():
            if bot not in self.row:
                self.row[bot] = len(self.row)
        if len(self.row) > len(self.battles):
            self._grow(2 * len(self.row))
        return np.array([self.row[bot] for bot in bots.tolist()], dtype=np.int64)

    def _grow(self, capacity: int) -> None:
        n = len(self.battles)
        battles, means, last_ms = self.battles, self.means, self.last_ms
        self.battles = np.zeros((capacity, capacity), dtype=np.int64)
        self.means = np.zeros((3, capacity, capacity))
        self.last_ms = np.full((capacity, capacity), NO_BATTLE, dtype=np.int64)
        self.battles[:n, :n], self.means[:, :n, :n], self.last_ms[:n, :n] = battles, means, last_ms


@njit(cache=True, nogil=True)  # the GIL released: the next run of the log is read meanwhile (rebuild.read_ahead)
def replay_battles(
    aps: np.ndarray,
    active: np.ndarray,
    table: np.ndarray,
    xonstat_battles: np.ndarray,
    n: int,
    work: np.ndarray,
    tau: float,
    upset_bonus: float,
    at: np.ndarray,
    rows: np.ndarray,
    shares: np.ndarray,
    firsts: np.ndarray,
    ms: np.ndarray,
    rounds: int,
    battles: np.ndarray,
    means: np.ndarray,
    last_ms: np.ndarray,
) -> None:
    """Replay battles k = 0.. of the run: ``at[k]`` the two bots' field positions, ``rows[k]`` their
    pairing rows, ``shares[k]`` what the battle percentage is computed from (scores, or rounds
    won), ``firsts[k]``, ``ms[k]`` the receive time in ms since 1970; pairings and the field in place."""
    for k in range(len(ms)):
        for side in range(2):
            r, s = rows[k, side], rows[k, 1 - side]
            count = battles[r, s] + 1
            battles[r, s] = count
            means[0, r, s], means[1, r, s], means[2, r, s] = running_means(
                count,
                means[0, r, s],
                means[1, r, s],
                means[2, r, s],
                battle_percent(shares[k, side], shares[k, 1 - side]),
                survival_percent(firsts[k, side], rounds),
            )
            if ms[k] > last_ms[r, s]:
                last_ms[r, s] = ms[k]
        a, b = at[k, 0], at[k, 1]
        active[a] = True
        active[b] = True
        aps[a, b] = means[0, rows[k, 0], rows[k, 1]] / 100.0
        aps[b, a] = means[0, rows[k, 1], rows[k, 0]] / 100.0
        share_a = battle_percent(shares[k, 0], shares[k, 1]) / 100.0
        now = ms[k] * 1000 / 1e6
        all_pairings.step(aps, active, table, xonstat_battles, n, a, b, share_a, now, work, tau, upset_bonus)
