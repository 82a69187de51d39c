"""The queries behind /RumbleStats: who uploads, how much, when, and which bots lack pairings.

They read the whole log (no index serves them), so the page costs a scan: fine for a page that
people open now and then; the hourly batch would be the place to cache it if it ever is not. The
``+rumble_id`` keeps SQLite off the battles_by_rumble index: a plain scan of the table is about three
times faster than an index walk with a row lookup per battle (958 -> ~330 ms at 719,400 battles).
"""

from __future__ import annotations

from rumble.store import Store


def uploaders(db: Store, rumble_id: int | None, since: str) -> list[dict]:
    """Per uploader: battles in all, battles since ``since`` and the last upload, most active first."""
    where, params = ("WHERE +rumble_id = ?", [rumble_id]) if rumble_id is not None else ("", [])
    rows = db.execute(
        f"SELECT uploader, count(*), sum(received_at >= ?), max(received_at) FROM battles {where} "
        "GROUP BY uploader ORDER BY 3 DESC, 2 DESC, uploader",
        [since, *params],
    ).fetchall()
    return [{"uploader": u, "battles": n, "recent": recent, "last_upload": last[:19]} for u, n, recent, last in rows]


def uploads_per_day(db: Store, rumble_id: int | None, since: str) -> list[dict]:
    """Battles received per UTC day since ``since``, oldest first."""
    extra, params = (" AND +rumble_id = ?", [rumble_id]) if rumble_id is not None else ("", [])
    rows = db.execute(
        f"SELECT substr(received_at, 1, 10), count(*) FROM battles WHERE received_at >= ?{extra} GROUP BY 1 ORDER BY 1",
        [since, *params],
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
    return [{"name": name, "missing": missing, "battles": battles, "last_battle": (last or "")[:19]}
            for name, missing, battles, last in rows]  # fmt: skip
