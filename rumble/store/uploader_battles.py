"""The log's battles read per uploader: which pairings rest on one uploader alone (unconfirmed),
and an uploader's latest upload. The uploader statistics read their sums per uploader and pairing
instead (rumble.store.uploader_sums).

Only battles in state ``ok`` count, as everywhere else. Reads only; nothing here writes.
"""

from __future__ import annotations

from rumble.store import Store


def sole_uploaders(db: Store, rumble_id: int, bot: int) -> dict[str, str]:
    """Opponent's full name -> the one uploader, for each of ``bot``'s pairings whose accepted battles
    all come from one uploader. Both orders of the pair go through the index battles_by_pairing."""
    rows = db.execute(
        "SELECT o.full_name, n.name FROM ("
        "  SELECT opponent, min(uploader_id) AS sole FROM ("
        "    SELECT second_bot_id AS opponent, uploader_id FROM battles "
        "    WHERE rumble_id = ?1 AND first_bot_id = ?2 AND state = 'ok' "
        "    UNION ALL SELECT first_bot_id, uploader_id FROM battles "
        "    WHERE rumble_id = ?1 AND first_bot_id IN (SELECT bot_id FROM participants WHERE rumble_id = ?1) "
        "    AND second_bot_id = ?2 AND state = 'ok'"
        "  ) GROUP BY opponent HAVING min(uploader_id) = max(uploader_id)"
        ") x JOIN bots o ON o.id = x.opponent JOIN uploaders n ON n.id = x.sole",
        (rumble_id, bot),
    ).fetchall()
    return dict(rows)


def pair_sole_uploaders(db: Store, rumble_id: int, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """The one uploader of each of ``pairs`` (a, b) whose accepted battles, in either order, all come
    from one uploader: {pair: uploader}; a pair with several uploaders or none is not in it."""
    if not pairs:
        return {}
    found: dict[tuple[int, int], str] = {}
    for start in range(0, len(pairs), 400):  # within SQLite's limit on bound parameters
        chunk = pairs[start : start + 400]
        values = ", ".join("(?, ?)" for _ in chunk)
        # One probe of battles_by_pairing per order of a pair: with the two orders ORed under one
        # rumble_id, SQLite's planner uses only the index's first column and reads the whole rumble's log.
        # CROSS JOIN keeps the pairs as the outer loop (SQLite's documented way to fix a join order):
        # SQLite 3.50 and 3.51 otherwise put the log outside in the second branch, read the rumble's
        # whole log through the index's first column and match each battle against the pairs: about
        # 0.4 s per priority batch in the 1,200-bot ladder, under the write lock (3.40 seeks either way).
        rows = db.execute(
            f"WITH p(a, b) AS (VALUES {values}) SELECT a, b, n.name FROM ("
            "  SELECT a, b, min(uploader_id) AS sole FROM ("
            "    SELECT p.a, p.b, x.uploader_id FROM p CROSS JOIN battles x ON x.rumble_id = ? "
            "    AND x.first_bot_id = p.a AND x.second_bot_id = p.b WHERE x.state = 'ok' UNION ALL "
            "    SELECT p.a, p.b, x.uploader_id FROM p CROSS JOIN battles x ON x.rumble_id = ? "
            "    AND x.first_bot_id = p.b AND x.second_bot_id = p.a WHERE x.state = 'ok'"
            "  ) GROUP BY a, b HAVING min(uploader_id) = max(uploader_id)"
            ") JOIN uploaders n ON n.id = sole",
            (*(value for pair in chunk for value in pair), rumble_id, rumble_id),
        ).fetchall()
        found.update({(a, b): name for a, b, name in rows})
    return found


def last_upload(db: Store, rumble_id: int, uploader: str) -> str | None:
    """The receive time of ``uploader``'s latest battle in the rumble (from ``upload_counts``)."""
    row = db.execute(
        "SELECT max(last_upload) FROM upload_counts WHERE rumble_id = ? AND uploader = ?", (rumble_id, uploader)
    ).fetchone()
    return row[0] if row else None
