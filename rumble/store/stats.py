"""The queries behind /RumbleStats: who uploads, how much, when, and which bots lack pairings.

Uploads per uploader and day come from ``upload_counts`` (migration 0010), which a trigger keeps
as the log grows, so the page never scans the log. Its "last 30 days" are whole UTC days: the
day ``since`` falls on counts in full.
"""

from __future__ import annotations

from rumble.store import Store


def uploaders(db: Store, rumble_id: int | None, since: str) -> list[dict]:
    """Per uploader: battles in all, battles since ``since``'s day and the last upload, most active first."""
    where, params = ("WHERE rumble_id = ?", [rumble_id]) if rumble_id is not None else ("", [])
    rows = db.execute(
        f"SELECT uploader, sum(battles), sum(CASE WHEN day >= ? THEN battles ELSE 0 END), max(last_upload) "
        f"FROM upload_counts {where} GROUP BY uploader ORDER BY 3 DESC, 2 DESC, uploader",
        [since[:10], *params],
    ).fetchall()
    return [{"uploader": u, "battles": n, "recent": recent, "last_upload": last[:19]} for u, n, recent, last in rows]


def uploads_per_day(db: Store, rumble_id: int | None, since: str) -> list[dict]:
    """Battles received per UTC day from ``since``'s day on, oldest first."""
    extra, params = (" AND rumble_id = ?", [rumble_id]) if rumble_id is not None else ("", [])
    rows = db.execute(
        f"SELECT day, sum(battles) FROM upload_counts WHERE day >= ?{extra} GROUP BY day ORDER BY day",
        [since[:10], *params],
    ).fetchall()
    return [{"day": day, "battles": n} for day, n in rows]


def lacking_pairings(db: Store, rumble_id: int, limit: int = 50) -> list[dict]:
    """Active bots that have not met every active participant, most pairings missing first."""
    rows = db.execute(
        "WITH n AS (SELECT count(*) AS active FROM participants WHERE rumble_id = ? AND active = 1) "
        "SELECT b.full_name, n.active - 1 - coalesce(s.pairings, 0), coalesce(s.battles, 0), s.last_battle "
        "FROM participants p CROSS JOIN n JOIN bots b ON b.id = p.bot_id "
        "LEFT JOIN bot_summaries s ON s.rumble_id = p.rumble_id AND s.bot_id = p.bot_id "
        "WHERE p.rumble_id = ? AND p.active = 1 AND coalesce(s.pairings, 0) < n.active - 1 "
        "ORDER BY 2 DESC, b.full_name LIMIT ?",
        (rumble_id, rumble_id, limit),
    ).fetchall()
    return [
        {"name": name, "missing": missing, "battles": battles, "last_battle": (last or "")[:19]}
        for name, missing, battles, last in rows
    ]


def retirements(db: Store, rumble_id: int | None, limit: int = 20) -> list[dict]:
    """The newest retirements (of one rumble, or all), newest first: the bot, when, who asked
    (``participant_events.source``) and whether it is still retired."""
    where, params = ("AND e.rumble_id = ?", [rumble_id]) if rumble_id is not None else ("", [])
    rows = db.execute(
        "SELECT r.name, b.full_name, e.happened_at, e.source, p.active = 0 FROM participant_events e "
        "JOIN rumbles r ON r.id = e.rumble_id JOIN bots b ON b.id = e.bot_id "
        "JOIN participants p ON p.rumble_id = e.rumble_id AND p.bot_id = e.bot_id "
        f"WHERE e.active = 0 {where} ORDER BY e.id DESC LIMIT ?",
        [*params, limit],
    ).fetchall()
    return [
        {"game": game, "name": name, "at": at[:19], "source": source, "retired": bool(retired)}
        for game, name, at, source, retired in rows
    ]
