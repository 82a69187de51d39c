"""The queries behind the ranking table, the ratings file and the API: plain dicts out."""

from __future__ import annotations

from rumble.rankings.batch import METHODS
from rumble.ratings.columns import RATINGS, STORED
from rumble.store import Store

BATCH_METHODS = tuple(METHODS)  # the latest batch run's ranks become columns <method>_rank, <method>_score

# Sortable columns of the rankings table: public name -> SQL expression.
RANKING_ORDER = {
    "name": "b.full_name",
    "aps": "s.aps",
    "aps_ci": "s.aps_ci",
    "pwin": "s.pwin",
    "pl": "s.pl",
    "survival": "s.survival",
    "pairings": "s.pairings",
    "battles": "s.battles",
    "last_battle": "s.last_battle",
    **{rating.name: f"g.{rating.name}" for rating in RATINGS},
    # a batch method sorts by its rank negated, so that "-schulze" (descending) puts the best first
    **{method: f"-k.{method}_rank" for method in BATCH_METHODS},
}
# A bot's summary as the rankings and its details page read it (summaries s), after its name.
SUMMARY_COLUMNS = (
    "aps",
    "aps_ci",
    "pwin",
    "pl",
    "survival",
    "pairings",
    "battles",
    "last_battle",
    "wins",
    "draws",
    "losses",
)
RANKING_COLUMNS = (
    "name",
    *SUMMARY_COLUMNS,
    *STORED,  # every rating's stored values (rumble.ratings.columns)
    *(f"{method}_{part}" for method in BATCH_METHODS for part in ("rank", "score")),
)
_RATED_AT = 1 + len(SUMMARY_COLUMNS) + len(STORED)  # where the query reads ratings.rated_at (s since 1970)
# The batch_ranks rows of one rumble turned into one row per bot, a rank and a score column per method.
_BATCH_PIVOT = ", ".join(
    f"max(CASE WHEN method = '{m}' THEN rank END) AS {m}_rank, max(CASE WHEN method = '{m}' THEN score END) AS {m}_score"
    for m in BATCH_METHODS
)


def ranking_rows(db: Store, rumble_id: int, order: str = "-aps") -> list[dict]:
    """The active bots of a rumble with their scores, sorted by ``order``.

    ``order`` is a column of RANKING_ORDER, with ``-`` for descending; ``rank`` is always the
    APS rank (ties broken by name), whatever the order of the rows. ``<method>_rank`` and
    ``<method>_score`` are the latest batch ranks (None before a run, or for a bot it left out).
    ``rated_at`` is the bot's last rating update (s since 1970), to grow its deviations to the present.
    """
    key = order.lstrip("-")
    if key not in RANKING_ORDER:
        raise KeyError(key)
    direction = "DESC" if order.startswith("-") else "ASC"
    rows = db.execute(
        "SELECT b.full_name, s.aps, s.aps_ci, s.pwin, s.pl, s.survival, s.pairings, s.battles, "
        "substr(s.last_battle, 1, 19), s.wins, s.draws, s.losses, "
        + "".join(f"g.{column}, " for column in STORED)
        + "g.rated_at, "
        + "".join(f"k.{m}_rank, k.{m}_score, " for m in BATCH_METHODS)
        + "row_number() OVER (ORDER BY s.aps DESC, b.full_name) FROM bot_summaries s "
        "JOIN participants p ON p.rumble_id = s.rumble_id AND p.bot_id = s.bot_id "
        "JOIN bots b ON b.id = s.bot_id "
        "LEFT JOIN ratings g ON g.rumble_id = s.rumble_id AND g.bot_id = s.bot_id "
        f"LEFT JOIN (SELECT bot_id, {_BATCH_PIVOT} FROM batch_ranks WHERE rumble_id = ? GROUP BY bot_id) k "
        "ON k.bot_id = s.bot_id "
        "WHERE s.rumble_id = ? AND p.active = 1 "
        f"ORDER BY {RANKING_ORDER[key]} {direction} NULLS LAST, s.aps DESC, b.full_name",
        (rumble_id, rumble_id),
    ).fetchall()
    return [
        dict(zip(RANKING_COLUMNS[:_RATED_AT] + ("rated_at",) + RANKING_COLUMNS[_RATED_AT:] + ("rank",), row))
        for row in rows
    ]


def unrated_since_last_event(db: Store, rumble_id: int) -> int:
    """Active bots whose ratings were last updated before the rumble's latest retirement or restoration."""
    return db.execute(
        "SELECT count(*) FROM participants p JOIN ratings g ON g.rumble_id = p.rumble_id AND g.bot_id = p.bot_id "
        "WHERE p.rumble_id = ? AND p.active = 1 AND g.rated_at < (SELECT (julianday(max(happened_at)) - 2440587.5) * 86400.0 "
        "FROM participant_events WHERE rumble_id = ?)",
        (rumble_id, rumble_id),
    ).fetchone()[0]


def ratings_file_rows(db: Store, rumble_id: int) -> list[tuple[str, float, int, str]]:
    """(name, APS, battles, last battle) of each active bot with a score, for RatingsFile."""
    return db.execute(
        "SELECT b.full_name, s.aps, s.battles, s.last_battle FROM bot_summaries s "
        "JOIN participants p ON p.rumble_id = s.rumble_id AND p.bot_id = s.bot_id "
        "JOIN bots b ON b.id = s.bot_id WHERE s.rumble_id = ? AND p.active = 1 AND s.aps IS NOT NULL "
        "ORDER BY b.full_name",
        (rumble_id,),
    ).fetchall()


def snapshot(db: Store, rumble_id: int | None = None) -> dict[str, list[tuple]]:
    """Every derived row, in key order: what a rebuild must reproduce exactly.

    A pairing's ``priority`` is left out: it is the priority queue's working state (NULL while the
    pairing is queued or held), not a value derived from the log.
    """
    where, params = ("WHERE rumble_id = ?", (rumble_id,)) if rumble_id is not None else ("", ())
    columns = "rumble_id, bot_id, opponent_id, battles, aps, aps_m2, survival, last_battle"
    return {
        "pairings": db.execute(
            f"SELECT {columns} FROM pairings {where} ORDER BY rumble_id, bot_id, opponent_id", params
        ).fetchall(),
        "bot_summaries": db.execute(
            f"SELECT * FROM bot_summaries {where} ORDER BY rumble_id, bot_id", params
        ).fetchall(),
        "ratings": db.execute(f"SELECT * FROM ratings {where} ORDER BY rumble_id, bot_id", params).fetchall(),
    }
