"""Upload outcomes and server time per day (migrations 0008 and 0011): the counts a worker adds, and the reads
behind /RumbleStats' "uploads" tables."""

from __future__ import annotations

from rumble.store import Store

ERROR_ROWS = 200  # upload_errors keeps this many of the latest refusals and faults
OUTCOMES = ("accepted", "held", "duplicate", "refused", "error")  # rumble.protocol.replies.Kind


def add_counts(db: Store, counts: dict[tuple[str, str, str], list[float]], errors: list[tuple[str, str, str]]) -> None:
    """Add a worker's counts ((day, game, outcome) -> [uploads, total ms, max ms]) and its latest
    errors ((at, outcome, reason)); inside the caller's write transaction."""
    db.conn.executemany(
        "INSERT INTO upload_stats (day, game, outcome, uploads, total_ms, max_ms) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (day, game, outcome) DO UPDATE SET uploads = uploads + excluded.uploads, "
        "total_ms = total_ms + excluded.total_ms, max_ms = max(max_ms, excluded.max_ms)",
        [(*key, int(n), total, most) for key, (n, total, most) in counts.items()],
    )
    if errors:
        db.conn.executemany("INSERT INTO upload_errors (at, outcome, reason) VALUES (?, ?, ?)", errors)
        db.execute("DELETE FROM upload_errors WHERE id <= (SELECT max(id) FROM upload_errors) - ?", (ERROR_ROWS,))


def per_day(db: Store, game: str | None, since_day: str) -> list[dict]:
    """Per UTC day since ``since_day``: uploads by outcome, and the mean and largest server time in ms."""
    extra, params = (" AND game = ?", [game]) if game is not None else ("", [])
    rows = db.execute(
        "SELECT day, " + ", ".join(f"sum(CASE WHEN outcome = '{o}' THEN uploads ELSE 0 END)" for o in OUTCOMES) + ", "
        f"sum(uploads), sum(total_ms), max(max_ms) FROM upload_stats WHERE day >= ?{extra} GROUP BY day ORDER BY day",
        [since_day, *params],
    ).fetchall()
    return [
        {"day": day, **dict(zip(OUTCOMES, counts)), "mean_ms": total / n if n else None, "max_ms": most}
        for day, *counts, n, total, most in rows
    ]


def latest_errors(db: Store, limit: int = 20) -> list[dict]:
    """The latest refusals and faults, newest first."""
    rows = db.execute(
        "SELECT substr(at, 1, 19), outcome, reason FROM upload_errors ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [{"at": at, "outcome": outcome, "reason": reason} for at, outcome, reason in rows]
