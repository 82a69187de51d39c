"""The reads behind the Atom feed of ladder events (rumble.web.feed): new bots that have met every
active participant, changes of number 1 in the daily snapshot, retirements. Reads only."""

from __future__ import annotations

from rumble.store import Store, ms_time

NEW_BOT_DAYS = 30  # a bot first seen within this many days is "new" when it completes its pairings (the feed)


def complete_bots(db: Store, rumble_id: int, since: str) -> list[tuple[int, str]]:
    """Active bots first seen at or after ``since`` that have met every active participant: (id, full name)."""
    return db.execute(
        "WITH n AS (SELECT count(*) AS active FROM participants WHERE rumble_id = ?1 AND active = 1) "
        "SELECT p.bot_id, b.full_name FROM participants p CROSS JOIN n JOIN bots b ON b.id = p.bot_id "
        "JOIN bot_summaries s ON s.rumble_id = p.rumble_id AND s.bot_id = p.bot_id "
        "WHERE p.rumble_id = ?1 AND p.active = 1 AND p.first_seen >= ?2 AND n.active > 1 AND s.pairings >= n.active - 1",
        (rumble_id, since),
    ).fetchall()


def completions(db: Store, rumble_id: int, bots: list[tuple[int, str]]) -> list[dict]:
    """When each of ``bots`` (``complete_bots``) completed: the first battle of the last of its
    pairings with an active bot to get one; name and time, newest first. Each bot's battles are
    read (through battles_by_pairing): a few ms a bot at one battle a pairing of a 1,200-bot ladder.
    The times are compared as the log keeps them, in milliseconds (the text, received_at, is
    computed from them for each row that reads it), and the one found turned into text."""
    found = []
    for bot, name in bots:
        at = db.execute(
            "SELECT max(first_at) FROM (SELECT x.opponent, min(x.received_ms) AS first_at FROM ("
            "  SELECT second_bot_id AS opponent, received_ms FROM battles "
            "  WHERE rumble_id = ?1 AND first_bot_id = ?2 AND state = 'ok' "
            "  UNION ALL SELECT first_bot_id, received_ms FROM battles "
            "  WHERE rumble_id = ?1 AND first_bot_id IN (SELECT bot_id FROM participants WHERE rumble_id = ?1) "
            "  AND second_bot_id = ?2 AND state = 'ok'"
            ") x JOIN participants q ON q.rumble_id = ?1 AND q.bot_id = x.opponent AND q.active = 1 GROUP BY x.opponent)",
            (rumble_id, bot),
        ).fetchone()[0]
        if at is not None:
            found.append({"name": name, "at": ms_time(at)[:19]})
    return sorted(found, key=lambda r: r["at"], reverse=True)


def leader_changes(db: Store, rumble_id: int, limit: int = 50) -> list[dict]:
    """Each day of the daily snapshot whose number 1 differs from the day before's (the first
    snapshot's number 1 too), newest first: day, name, APS, and the previous number 1."""
    rows = db.execute(
        "SELECT h.day, b.full_name, h.aps FROM rank_history h JOIN bots b ON b.id = h.bot_id "
        "WHERE h.rumble_id = ? AND h.rank = 1 ORDER BY h.day",
        (rumble_id,),
    ).fetchall()
    changes, previous = [], None
    for day, name, aps in rows:
        if name != previous:
            changes.append({"day": day, "name": name, "aps": aps, "previous": previous})
        previous = name
    return changes[::-1][:limit]
