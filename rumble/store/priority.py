"""The priority-battle queue, kept in the database so every worker and a restart share it."""

from __future__ import annotations

from rumble.store import Store


def pop_waiting(db: Store, rumble_id: int, now: str) -> tuple[str, str] | None:
    """Hand out the oldest waiting pair whose bots are both still active: (name, name) or None."""
    while True:
        row = db.execute(
            "SELECT q.id, a.full_name, b.full_name, pa.active AND pb.active FROM priority_battles q "
            "JOIN bots a ON a.id = q.bot_id JOIN bots b ON b.id = q.opponent_id "
            "JOIN participants pa ON pa.rumble_id = q.rumble_id AND pa.bot_id = q.bot_id "
            "JOIN participants pb ON pb.rumble_id = q.rumble_id AND pb.bot_id = q.opponent_id "
            "WHERE q.rumble_id = ? AND q.handed_out_at IS NULL ORDER BY q.id LIMIT 1",
            (rumble_id,),
        ).fetchone()
        if row is None:
            return None
        db.execute("UPDATE priority_battles SET handed_out_at = ? WHERE id = ?", (now, row[0]))
        if row[3]:
            return row[1], row[2]


def enqueue(db: Store, rumble_id: int, pairs: list[tuple[int, int, str]], now: str) -> None:
    """Queue pairs (a, b, reason), with a < b as pairings' priority rows have them."""
    db.conn.executemany(
        "INSERT INTO priority_battles (rumble_id, bot_id, opponent_id, reason, created_at) VALUES (?, ?, ?, ?, ?)",
        [(rumble_id, a, b, reason, now) for a, b, reason in pairs],
    )


def forget_handed_out(db: Store, rumble_id: int, before: str) -> None:
    """Drop entries handed out before ``before``: their pairings may be handed out again."""
    db.execute("DELETE FROM priority_battles WHERE rumble_id = ? AND handed_out_at < ?", (rumble_id, before))


def bots_missing_pairings(db: Store, rumble_id: int) -> list[tuple[int, int]]:
    """(bot, how many active opponents it has never met) for each active bot that lacks some."""
    rows = db.execute(
        "WITH n AS (SELECT count(*) AS active FROM participants WHERE rumble_id = ? AND active = 1) "
        "SELECT p.bot_id, n.active - 1 - coalesce(s.pairings, 0) FROM participants p CROSS JOIN n "
        "LEFT JOIN bot_summaries s ON s.rumble_id = p.rumble_id AND s.bot_id = p.bot_id "
        "WHERE p.rumble_id = ? AND p.active = 1 AND coalesce(s.pairings, 0) < n.active - 1",
        (rumble_id, rumble_id),
    ).fetchall()
    return [(bot, missing) for bot, missing in rows]


def unmet_opponents(db: Store, rumble_id: int, bot: int) -> list[int]:
    """Active participants ``bot`` has never met and is not queued (or recently handed out) against."""
    rows = db.execute(
        "SELECT p.bot_id FROM participants p WHERE p.rumble_id = ? AND p.active = 1 AND p.bot_id != ? "
        "AND NOT EXISTS (SELECT 1 FROM pairings x WHERE x.rumble_id = p.rumble_id AND x.bot_id = ? "
        "AND x.opponent_id = p.bot_id) "
        "AND NOT EXISTS (SELECT 1 FROM priority_battles q WHERE q.rumble_id = p.rumble_id "
        "AND q.bot_id = min(?, p.bot_id) AND q.opponent_id = max(?, p.bot_id))",
        (rumble_id, bot, bot, bot, bot),
    ).fetchall()
    return [row[0] for row in rows]


def top_pairings(db: Store, rumble_id: int, limit: int) -> list[tuple[int, int, float]]:
    """The live pairings with the highest priority that are not waiting or recently handed out."""
    return db.execute(
        "SELECT x.bot_id, x.opponent_id, x.priority FROM pairings x "
        "JOIN participants pa ON pa.rumble_id = x.rumble_id AND pa.bot_id = x.bot_id "
        "JOIN participants pb ON pb.rumble_id = x.rumble_id AND pb.bot_id = x.opponent_id "
        "WHERE x.rumble_id = ? AND x.priority IS NOT NULL AND pa.active = 1 AND pb.active = 1 "
        "AND NOT EXISTS (SELECT 1 FROM priority_battles q WHERE q.rumble_id = x.rumble_id "
        "AND q.bot_id = x.bot_id AND q.opponent_id = x.opponent_id) "
        "ORDER BY x.priority DESC LIMIT ?",
        (rumble_id, limit),
    ).fetchall()

