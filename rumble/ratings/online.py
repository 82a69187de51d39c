"""Every rating of one rumble, updated on each battle: a rumble's field as arrays, and the step.

A ``Field`` holds one rumble's participants by position, always in bot-id order (so that a
bot's live pairings reach numpy's sums in the same order online and in a rebuild): whether each
is active, the pairing APS matrix (fractions 0..1, NaN where two bots never met) and every rating
as an array.
``rate_battle`` then does each all-pairings update (RoboRumble Elo, Glicko, Glicko-2) as a few
numpy operations over a bot's live pairings, and the per-battle ones (Rank Points, XonStat Elo).

For one battle of A against B, both bots are rated from the values as they stood before it
(seed 004: "Do the same for B"), over their pairings *after* it (the pairing APS now includes the
battle). Time matters twice: a bot's own deviation grows for the time since its last update
(Glicko: seed 001's decay; Glicko-2: seed 000's inactivity in whole days), and each opponent's
deviation is taken as grown for the time since *its* last update, the uncertainty it has now.

Pure code: numpy only. The same Field and step serve the upload path (a worker keeps its Field in
step with the database) and the rebuild (a fresh Field fed the log in order), which is why the
two agree bit for bit: same inputs, in the same order, through the same operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from rumble.ratings import all_pairings, glicko2, rank_points
from rumble.ratings.columns import ROW, ROWS, STARTS, STEPPED

PROVISIONAL_RD = 100.0  # a rating whose deviation is above this is shown as provisional (see explain)


@dataclass(frozen=True, slots=True)
class BotRatings:
    """One bot's ratings in one rumble: ``values`` in the declaration's row order (columns.ROWS), each
    read by name (``ratings.elo``); ``rated_at`` is the time of its last update (s since 1970, NaN if
    never rated)."""

    values: tuple[float, ...]
    xonstat_battles: int = 0

    def __getattr__(self, name: str) -> float:
        if name in ROW:
            return self.values[ROW[name]]
        raise AttributeError(name)


_EPOCH = datetime(1970, 1, 1)


def seconds(received_at: str) -> float:
    """A store time "YYYY-MM-DD HH:MM:SS.mmm" (UTC) as seconds since 1970."""
    return (datetime.fromisoformat(received_at) - _EPOCH).total_seconds()


GROWTH_STEP = 64  # bots a full field makes room for at once (see Field.add)


def capacity_for(bots: int) -> int:
    """Room for ``bots`` participants and a bounded step more (a multiple of GROWTH_STEP)."""
    return (bots // GROWTH_STEP + 1) * GROWTH_STEP


def unrated() -> BotRatings:
    """The ratings of a bot with no rated battle, as a new Field holds them."""
    return BotRatings(tuple(Field._new_table(1)[:, 0].tolist()), xonstat_battles=0)


class Field:
    """A rumble's participants, pairing matrix and ratings as arrays (grown as bots arrive).

    ``table[k, i]`` is value ``columns.ROWS[k]`` of the bot at position i, so one fancy index gathers
    every value of a set of opponents. The matrix is capacity × capacity float64 (8 bytes a cell:
    72 MB at 3,000 bots); a full field grows by GROWTH_STEP bots, not by doubling, so it never
    holds more than GROWTH_STEP unused places (doubling held up to as many as were in use: 4,100
    bots took a 8,192² matrix, 537 MB, in every worker).
    """

    def __init__(self, capacity: int = GROWTH_STEP):
        self.ids: list[int] = []
        self.position: dict[int, int] = {}
        self.active = np.zeros(capacity, dtype=bool)
        self.aps = np.full((capacity, capacity), np.nan)
        self.table = self._new_table(capacity)
        self.xonstat_battles = np.zeros(capacity, dtype=np.int64)
        self.work = np.empty((all_pairings.WORK_ROWS, 2 * capacity))  # the compiled step's scratch space

    @staticmethod
    def _new_table(capacity: int) -> np.ndarray:
        return np.repeat(np.array([[STARTS.get(name, np.nan)] for name in ROWS]), capacity, axis=1)

    def add(self, bot: int) -> int:
        """The position of ``bot``, adding it (inactive, unrated) if it is new."""
        found = self.position.get(bot)
        if found is not None:
            return found
        n = len(self.ids)
        if n == len(self.active):
            # Grown by a bounded step: copying the matrix every GROWTH_STEP new bots costs a few
            # tens of ms at 3,000 bots, where doubling's slack would cost memory in every worker.
            self._resize(capacity_for(n))
        if n and bot < self.ids[-1]:  # rare: an older bot joins this rumble; keep id order
            self._insert(bot)
        else:
            self.ids.append(bot)
            self.position[bot] = n
        return self.position[bot]

    def _resize(self, capacity: int) -> None:
        n = len(self.ids)
        old_aps, self.aps = self.aps, np.full((capacity, capacity), np.nan)
        self.aps[:n, :n] = old_aps[:n, :n]
        self.active = np.concatenate([self.active[:n], np.zeros(capacity - n, dtype=bool)])
        old_table, self.table = self.table, self._new_table(capacity)
        self.table[:, :n] = old_table[:, :n]
        self.xonstat_battles = np.concatenate([self.xonstat_battles[:n], np.zeros(capacity - n, dtype=np.int64)])
        self.work = np.empty((all_pairings.WORK_ROWS, 2 * capacity))

    def _insert(self, bot: int) -> None:
        """Add ``bot`` in its id-order place, moving every later bot one position on."""
        n = len(self.ids)
        at = int(np.searchsorted(self.ids, bot))
        order = np.r_[0:at, n, at:n]  # the new layout, in terms of old positions (n: the new, empty slot)
        self.aps[: n + 1, : n + 1] = self.aps[np.ix_(order, order)]
        self.active[: n + 1] = self.active[order]
        self.table[:, : n + 1] = self.table[:, order]
        self.xonstat_battles[: n + 1] = self.xonstat_battles[order]
        self.ids.insert(at, bot)
        self.position = {b: i for i, b in enumerate(self.ids)}

    def is_active(self, bot: int) -> bool:
        i = self.position.get(bot)
        return i is not None and bool(self.active[i])

    # Each setter finds the position first: adding a bot may replace the arrays.
    def set_active(self, bot: int, active: bool) -> None:
        i = self.add(bot)
        self.active[i] = active

    def set_pairing(self, bot: int, opponent: int, aps_percent: float) -> None:
        """Record ``bot``'s pairing APS (in percent) against ``opponent``."""
        i, j = self.add(bot), self.add(opponent)
        i = self.position[bot]  # adding the opponent may have moved the bot
        self.aps[i, j] = aps_percent / 100.0

    def set_pairings(self, bots: Sequence[int], opponents: Sequence[int], aps_percent: Sequence[float]) -> None:
        """``set_pairing`` for each (bot, opponent, APS) of the three sequences, in one array assignment
        (a worker catching up on a maintenance swap sets up to a hundred thousand)."""
        for bot in sorted({*bots, *opponents}):  # every position first: adding a bot may move the others
            self.add(bot)
        rows = np.array([self.position[bot] for bot in bots], dtype=np.int64)
        columns = np.array([self.position[bot] for bot in opponents], dtype=np.int64)
        self.aps[rows, columns] = np.asarray(aps_percent, dtype=float) / 100.0

    def ratings(self, bot: int) -> BotRatings:
        i = self.add(bot)
        return BotRatings(tuple(self.table[:, i].tolist()), xonstat_battles=int(self.xonstat_battles[i]))

    @property
    def capacity(self) -> int:
        """The participants the arrays have room for without growing."""
        return len(self.active)

    def set_ratings(self, bot: int, ratings: BotRatings) -> None:
        i = self.add(bot)
        self.table[:, i] = ratings.values
        self.xonstat_battles[i] = ratings.xonstat_battles


def rate_battle(
    field: Field, a: int, b: int, share_a: float, now: float, upset_bonus: float = rank_points.UPSET_BONUS
) -> None:
    """Rate a battle A vs B (their pairings already updated in ``field``): both bots' new ratings go into ``field``.

    ``share_a``: A's share of the battle's total score (0.5 when neither scored); ``now``: the
    battle's receive time in seconds. The step itself is compiled (``all_pairings``).
    """
    all_pairings.rate_pair(
        field.aps,
        field.active,
        field.table,
        field.xonstat_battles,
        len(field.ids),
        field.position[a],
        field.position[b],
        share_a,
        now,
        field.work,
        glicko2.TAU,
        upset_bonus,
    )
    rate_stepped(field.table, field.position[a], field.position[b], share_a)


def rate_stepped(table: np.ndarray, a: int, b: int, share_a: float) -> None:
    """The battle of the bots at positions ``a`` and ``b`` through each declared method with a step
    of its own (columns.STEPPED), from their values before it, in place."""
    for rating in STEPPED:
        if rating.step is None:  # never: STEPPED holds the methods with a step
            continue
        rows = [ROW[value] for value in rating.values]
        new_a, new_b = rating.step(table[rows, a].tolist(), table[rows, b].tolist(), share_a)
        table[rows, a], table[rows, b] = new_a, new_b


def provisional(rd: float) -> bool:
    """True while a deviation is too high to trust the rating (shown with a "?")."""
    return rd > PROVISIONAL_RD


def warm_up() -> None:
    """Compile the rating step (``all_pairings``; or load it from numba's cache) now, on a two-bot
    field, so that no upload waits for it: compiling takes several seconds the first time, near the
    client's 10 s timeout."""
    field = Field()
    for bot in (1, 2):
        field.set_active(bot, True)
    field.set_pairing(1, 2, 60.0)
    field.set_pairing(2, 1, 40.0)
    rate_battle(field, 1, 2, 0.6, 0.0)
