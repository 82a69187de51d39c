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

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from rumble.ratings import elo, glicko, glicko2, rank_points, xonstat

PROVISIONAL_RD = 100.0  # a rating whose deviation is above this is shown as provisional (see explain)
_FIELDS = ("elo", "glicko", "glicko_rd", "glicko2", "glicko2_rd", "glicko2_volatility", "rank_points", "xonstat", "rated_at")


_NEW = {  # a new bot's values, from each method's module
    "elo": elo.START, "glicko": glicko.R_UNRATED, "glicko_rd": glicko.RD_UNRATED, "glicko2": glicko2.R_UNRATED,
    "glicko2_rd": glicko2.RD_UNRATED, "glicko2_volatility": glicko2.SIGMA_UNRATED, "rank_points": rank_points.START,
    "xonstat": xonstat.START,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class BotRatings:
    """One bot's ratings in one rumble; ``rated_at`` is the time of its last update (s since 1970)."""

    elo: float = _NEW["elo"]
    glicko: float = _NEW["glicko"]
    glicko_rd: float = _NEW["glicko_rd"]
    glicko2: float = _NEW["glicko2"]
    glicko2_rd: float = _NEW["glicko2_rd"]
    glicko2_volatility: float = _NEW["glicko2_volatility"]
    rank_points: float = _NEW["rank_points"]
    xonstat: float = _NEW["xonstat"]
    rated_at: float = float("nan")  # never rated
    xonstat_battles: int = 0


_EPOCH = datetime(1970, 1, 1)


def seconds(received_at: str) -> float:
    """A store time "YYYY-MM-DD HH:MM:SS.mmm" (UTC) as seconds since 1970."""
    return (datetime.fromisoformat(received_at) - _EPOCH).total_seconds()


# Rows of Field.table, in _FIELDS order.
ELO, GLICKO, GLICKO_RD, GLICKO2, GLICKO2_RD, GLICKO2_VOLATILITY, RANK_POINTS, XONSTAT, RATED_AT = range(len(_FIELDS))


class Field:
    """A rumble's participants, pairing matrix and ratings as arrays (grown as bots arrive).

    ``table[k, i]`` is value ``_FIELDS[k]`` of the bot at position i, so one fancy index gathers
    every value of a set of opponents.
    """

    def __init__(self, capacity: int = 16):
        self.ids: list[int] = []
        self.position: dict[int, int] = {}
        self.active = np.zeros(capacity, dtype=bool)
        self.aps = np.full((capacity, capacity), np.nan)
        self.table = self._new_table(capacity)
        self.xonstat_battles = np.zeros(capacity, dtype=np.int64)

    @staticmethod
    def _new_table(capacity: int) -> np.ndarray:
        return np.repeat(np.array([[_NEW.get(name, np.nan)] for name in _FIELDS]), capacity, axis=1)

    def add(self, bot: int) -> int:
        """The position of ``bot``, adding it (inactive, unrated) if it is new."""
        found = self.position.get(bot)
        if found is not None:
            return found
        n = len(self.ids)
        if n == len(self.active):
            self._resize(2 * n)
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

    def ratings(self, bot: int) -> BotRatings:
        i = self.add(bot)
        values = self.table[:, i].tolist()
        return BotRatings(*values, xonstat_battles=int(self.xonstat_battles[i]))

    def set_ratings(self, bot: int, ratings: BotRatings) -> None:
        i = self.add(bot)
        self.table[:, i] = [getattr(ratings, name) for name in _FIELDS]
        self.xonstat_battles[i] = ratings.xonstat_battles


def _all_pairings(field: Field, a: int, b: int, now: float) -> list[tuple[float, tuple[float, float], glicko2.Rating]]:
    """For A then B: the new Elo, Glicko (r, RD) and Glicko-2 value from all its live pairings.

    Both bots are done in one pass: their live pairings are laid end to end (A's, then B's, each in
    position order), every per-pairing term is computed once over that, and ``np.add.reduceat``
    sums each bot's stretch.
    """
    n = len(field.ids)
    own = [field.position[a], field.position[b]]
    rows = field.aps[own, :n]
    live = [np.flatnonzero(~np.isnan(row) & field.active[:n]) for row in rows]
    opponents = np.concatenate(live)
    counts = [len(live[0]), len(live[1])]
    starts = [0, counts[0]]
    scores = np.concatenate((rows[0, live[0]], rows[1, live[1]]))
    t = field.table[:, np.concatenate((opponents, own))]  # the opponents' values, then A's and B's
    mine = np.repeat(t[:, -2:], counts, axis=1)  # each pairing's own bot's values
    # Time since each one's last update: 0 if never rated, and never negative (a clock stepped back).
    elapsed = np.fmax(now - t[RATED_AT], 0.0)
    rd1 = glicko.decay(t[GLICKO_RD], glicko.periods(elapsed))
    rd2 = glicko2.inactivity(t[GLICKO2_RD], t[GLICKO2_VOLATILITY], glicko2.whole_days(elapsed))
    m = len(opponents)

    def sums(terms) -> list[np.ndarray]:
        return [np.add.reduceat(term, starts) for term in terms]

    elo_sums = np.add.reduceat(elo.surprise(mine[ELO], t[ELO, :m], scores), starts)
    g1 = sums(glicko.game_terms(mine[GLICKO], t[GLICKO, :m], rd1[:m], scores))
    g2 = sums(glicko2.game_terms(mine[GLICKO2], t[GLICKO2, :m], rd2[:m], scores))
    result = []
    for k in range(2):
        own_values = t[:, m + k]
        result.append((
            float(own_values[ELO] + elo.WEIGHT * elo_sums[k]),
            glicko.combine(float(own_values[GLICKO]), float(rd1[m + k]), float(g1[0][k]), float(g1[1][k])),
            glicko2.combine(float(own_values[GLICKO2]), float(rd2[m + k]), float(own_values[GLICKO2_VOLATILITY]),
                            float(g2[0][k]), float(g2[1][k])),
        ))  # fmt: skip
    return result


def rate_battle(field: Field, a: int, b: int, share_a: float, now: float, upset_bonus: float = rank_points.UPSET_BONUS) -> tuple[BotRatings, BotRatings]:
    """Both bots' ratings after a battle A vs B (their pairings already updated in ``field``).

    ``share_a``: A's share of the battle's total score (0.5 when neither scored); ``now``: the
    battle's receive time in seconds.
    """
    before = {bot: field.ratings(bot) for bot in (a, b)}
    updated = dict(zip((a, b), _all_pairings(field, a, b, now)))
    xo_a, xo_b = xonstat.update(before[a].xonstat, before[b].xonstat, before[a].xonstat_battles,
                                before[b].xonstat_battles, share_a)  # fmt: skip
    result = []
    for bot, other, share, xo in ((a, b, share_a, xo_a), (b, a, 1.0 - share_a, xo_b)):
        new_elo, (g_r, g_rd), g2 = updated[bot]
        rp = rank_points.update(before[bot].rank_points, g2.r, g2.rd, share, before[bot].glicko2, before[other].glicko2, upset_bonus)
        result.append(BotRatings(new_elo, g_r, g_rd, g2.r, g2.rd, g2.sigma, rp, xo, now, before[bot].xonstat_battles + 1))
    return result[0], result[1]


def provisional(rd: float) -> bool:
    """True while a deviation is too high to trust the rating (shown with a "?")."""
    return rd > PROVISIONAL_RD
