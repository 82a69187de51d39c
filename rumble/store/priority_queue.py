"""The priority-battle queue, kept in the database so every worker and a restart share it."""

from __future__ import annotations

from rumble.store import Store, waiting


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
        waiting.forget(db)
        if row[3]:
            return row[1], row[2]


def enqueue(db: Store, rumble_id: int, pairs: list[tuple[int, int, str]], now: str) -> None:
    """Queue pairs (a, b, reason), a < b, and take their pairings out of the priority index."""
    waiting.forget(db)
    db.conn.executemany(
        "INSERT INTO priority_battles (rumble_id, bot_id, opponent_id, reason, created_at) VALUES (?, ?, ?, ?, ?)",
        [(rumble_id, a, b, reason, now) for a, b, reason in pairs],
    )
    db.conn.executemany(
        "UPDATE pairings SET priority = NULL WHERE rumble_id = ? AND bot_id = ? AND opponent_id = ?",
        [(rumble_id, a, b) for a, b, _ in pairs],
    )


def forget_handed_out(db: Store, rumble_id: int, before: str) -> list[tuple[int, int]]:
    """Drop entries handed out before ``before`` and return their pairs (a, b): they may be asked for again."""
    waiting.forget(db)
    rows = db.execute(
        "DELETE FROM priority_battles WHERE rumble_id = ? AND handed_out_at < ? RETURNING bot_id, opponent_id",
        (rumble_id, before),
    ).fetchall()
    return [(a, b) for a, b in rows]


def is_held(db: Store, rumble_id: int, a: int, b: int) -> bool:
    """Whether pair (a, b), a < b, is waiting in the queue or was handed out recently."""
    found = db.execute(
        "SELECT 1 FROM priority_battles WHERE rumble_id = ? AND bot_id = ? AND opponent_id = ? LIMIT 1",
        (rumble_id, a, b),
    ).fetchone()
    return found is not None


def held_pairs(db: Store, rumble_id: int) -> set[tuple[int, int]]:
    """Pairs (a, b) waiting in the queue or handed out recently."""
    return {
        (a, b)
        for a, b in db.execute("SELECT bot_id, opponent_id FROM priority_battles WHERE rumble_id = ?", (rumble_id,))
    }


def set_priority(db: Store, rumble_id: int, a: int, b: int, priority: float) -> None:
    """Put pairing (a, b), a < b, back into the priority index."""
    db.execute(
        "UPDATE pairings SET priority = ? WHERE rumble_id = ? AND bot_id = ? AND opponent_id = ?",
        (priority, rumble_id, a, b),
    )


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


def handed_out(db: Store, rumble_ids: list[int], a: int, b: int) -> list[tuple[int, str]]:
    """(rumble, handed-out time) of each entry of pair (a, b), a < b, that ``rumble_ids`` handed out
    and has not forgotten yet, oldest first (read only: rumble.ingest.melee asks it)."""
    if not rumble_ids:
        return []
    return db.execute(
        "SELECT rumble_id, handed_out_at FROM priority_battles "
        f"WHERE rumble_id IN ({', '.join('?' * len(rumble_ids))}) AND bot_id = ? AND opponent_id = ? "
        "AND handed_out_at IS NOT NULL ORDER BY id",
        (*rumble_ids, a, b),
    ).fetchall()
