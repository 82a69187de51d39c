"""Every rating a rumble keeps on each battle, declared once: everything else derives from RATINGS.

A ``Rating`` names a method's column, its titles, how its cell is written, and the values it
stores (the rating first, then its deviation and volatility where the method has them) with each
one's start value. From this one tuple come the field's value table and a new bot's values
(``rumble.ratings.online``), the compiled step's row numbers (``rumble.ratings.all_pairings``), the
ratings table's columns (``rumble.store.rating_rows``), the ranking, bot-details and history
queries (``rumble.store.tables``, ``details``, ``history``), the pages' columns and cells
(``rumble.web.page_data``, ``cells``), the API's field lists, the history plot and the templates.

The methods RoboRumble Elo, Glicko, Glicko-2, Rank Points and XonStat Elo are rated by the compiled
step (``all_pairings``), which reads their rows by number. A method declared with a ``step`` is
rated after it, battle by battle, by that pure function: adding such a method takes its formula
module, one entry here, a migration adding its columns and its explanation.

Pure: only the rating modules' start values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rumble.ratings import elo, glicko, glicko2, rank_points, xonstat

# A per-battle update outside the compiled step: (A's stored values, B's, A's score share) -> (A's new values, B's).
Step = Callable[[Sequence[float], Sequence[float], float], tuple[Sequence[float], Sequence[float]]]


@dataclass(frozen=True)
class Rating:
    """One rating method's columns.

    ``name``: its column (and its rating value's); ``title``: the rankings column's title;
    ``label``: its name in full (bot details, the history plot); ``format``: the %-format of its
    value (a deviation is written the same way, doubled, as ± 2RD); ``stored``: its stored values
    with their start values, the rating first; ``plotted``: drawn on the bot's history plot;
    ``snapshotted``: copied into the daily snapshot (rank_history has a column for it); ``step``:
    its per-battle update, None for the methods of the compiled step.
    """

    name: str
    title: str
    label: str
    format: str
    stored: tuple[tuple[str, float], ...]
    plotted: bool = False
    snapshotted: bool = True
    step: Step | None = None

    @property
    def values(self) -> tuple[str, ...]:
        """Its stored columns, the rating first."""
        return tuple(name for name, _ in self.stored)

    @property
    def deviation(self) -> str | None:
        """The column of its deviation (shown as ± 2RD), if it has one."""
        return self.values[1] if len(self.stored) > 1 else None

    @property
    def volatility(self) -> str | None:
        """The column of its volatility (shown on the bot's page), if it has one."""
        return self.values[2] if len(self.stored) > 2 else None


RATINGS: tuple[Rating, ...] = (
    Rating("elo", "Elo", "Elo", "%.1f", (("elo", elo.START),), plotted=True),
    Rating(
        "glicko",
        "Glicko ± 2RD",
        "Glicko",
        "%.1f",
        (("glicko", glicko.R_UNRATED), ("glicko_rd", glicko.RD_UNRATED)),
    ),
    Rating(
        "glicko2",
        "Glicko-2 ± 2RD",
        "Glicko-2",
        "%.1f",
        (
            ("glicko2", glicko2.R_UNRATED),
            ("glicko2_rd", glicko2.RD_UNRATED),
            ("glicko2_volatility", glicko2.SIGMA_UNRATED),
        ),
        plotted=True,
    ),
    Rating("rank_points", "RP", "Rank Points", "%.0f", (("rank_points", rank_points.START),)),
    Rating("xonstat", "XonStat Elo", "XonStat Elo", "%.1f", (("xonstat", xonstat.START),), plotted=True),
)

RATED_AT = "rated_at"  # the time of a bot's last update (s since 1970), stored after the compiled step's values
STEPPED = tuple(r for r in RATINGS if r.step is not None)
# The rows of a field's value table and the fields of BotRatings: the compiled step's values (whose
# row numbers it reads, so a new method never moves them), the update time, then the stepped methods'.
ROWS: tuple[str, ...] = (
    *(value for r in RATINGS if r.step is None for value in r.values),
    RATED_AT,
    *(value for r in STEPPED for value in r.values),
)
ROW = {name: row for row, name in enumerate(ROWS)}
STARTS = {name: start for r in RATINGS for name, start in r.stored}  # a new bot's values
STORED = tuple(value for r in RATINGS for value in r.values)  # every stored value, in declaration order
SNAPSHOTTED = tuple(r.name for r in RATINGS if r.snapshotted)
PLOTTED = tuple(r for r in RATINGS if r.plotted)
