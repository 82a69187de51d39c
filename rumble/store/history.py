"""The daily snapshot of every rumble's standings (migrations 0008, 0014) and the reads behind the plots.

``snapshot_day`` copies each active bot's current APS rank, XonStat rank, APS, battles and ratings
into rank_history under today's UTC date, once a day per rumble. Seed 002: XonStat's "Ranks are
calculated at the beginning of each day using the Elo values at that time ... per game type", so
``xonstat_rank`` is the bot's rank by XonStat Elo in its rumble that day (in a melee rumble the
whole-battle XonStat Elo the tables show), ties broken by name; ``rank`` stays the APS rank. The
hourly run calls it (rumble/schedule/hourly.py); it is history, not derived from the log, so a rebuild
leaves it as it is.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rumble.ratings.columns import SNAPSHOTTED
from rumble.store import Store

HISTORY_COLUMNS = ("day", "rank", "xonstat_rank", "aps", "battles", *SNAPSHOTTED)
# Where a snapshotted rating comes from when not from the ratings table: a melee rumble's XonStat
# Elo is its whole-battle one (melee_ratings), as its tables show.
_SOURCE = {"xonstat": "CASE WHEN r.melee THEN m.xonstat ELSE g.xonstat END"}
_RATINGS = ", ".join(SNAPSHOTTED)


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def snapshot_day(db: Store, day: str | None = None) -> int:
    """Record ``day``'s (default: today's) standings of every rumble not yet recorded that day.

    Runs inside the caller's write transaction; returns the rows added (0 if already taken).
    """
    day = day or today()
    cursor = db.execute(
        f"INSERT OR IGNORE INTO rank_history (rumble_id, day, bot_id, rank, xonstat_rank, aps, battles, {_RATINGS}) "
        "SELECT rumble_id, ?, bot_id, row_number() OVER (PARTITION BY rumble_id ORDER BY aps DESC, full_name), "
        "row_number() OVER (PARTITION BY rumble_id ORDER BY xonstat DESC NULLS LAST, full_name), "
        f"aps, battles, {_RATINGS} FROM ("
        "SELECT s.rumble_id, s.bot_id, b.full_name, s.aps, s.battles, "
        + ", ".join(f"{_SOURCE.get(name, 'g.' + name)} AS {name}" for name in SNAPSHOTTED)
        + " FROM bot_summaries s "
        "JOIN rumbles r ON r.id = s.rumble_id "
        "JOIN participants p ON p.rumble_id = s.rumble_id AND p.bot_id = s.bot_id AND p.active = 1 "
        "JOIN bots b ON b.id = s.bot_id "
        "LEFT JOIN ratings g ON g.rumble_id = s.rumble_id AND g.bot_id = s.bot_id "
        "LEFT JOIN melee_ratings m ON m.rumble_id = s.rumble_id AND m.bot_id = s.bot_id "
        "WHERE s.aps IS NOT NULL AND s.rumble_id NOT IN (SELECT rumble_id FROM rank_history WHERE day = ?))",
        (day, day),
    )
    return cursor.rowcount


def bot_history(db: Store, rumble_id: int, bot_id: int) -> list[dict]:
    """The bot's daily rows in ``rumble_id``, oldest first."""
    rows = db.execute(
        f"SELECT {', '.join(HISTORY_COLUMNS)} FROM rank_history WHERE rumble_id = ? AND bot_id = ? ORDER BY day",
        (rumble_id, bot_id),
    ).fetchall()
    return [dict(zip(HISTORY_COLUMNS, row)) for row in rows]
