"""Upload outcomes and server time per day (migrations 0008, 0011 and 0025): the counts a worker adds, and
the reads behind /RumbleStats' "uploads" tables and /metrics' answer-time histogram."""

from __future__ import annotations

import math

from rumble.store import Store

ERROR_ROWS = 200  # upload_errors keeps this many of the latest refusals and faults
OUTCOMES = ("accepted", "held", "duplicate", "refused", "error")  # rumble.protocol.replies.Kind
# The answer-time histogram's upper bounds in ms (upload_answer_times.le_ms), then infinity: from a
# loopback upload's few ms to the real client's 10 s read timeout.
ANSWER_BUCKETS_MS = (2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, math.inf)


def add_counts(
    db: Store,
    counts: dict[tuple[str, str, str], list[float]],
    errors: list[tuple[str, str, str]],
    times: dict[tuple[str, str, str, float], list[float]] | None = None,
    busy: dict[tuple[str, str], int] | None = None,
) -> None:
    """Add a worker's counts ((day, game, outcome) -> [uploads, total ms, max ms]), its latest
    errors ((at, outcome, reason)), its answer times ((day, game, outcome, bucket's bound in ms,
    one of ANSWER_BUCKETS_MS) -> [uploads, total ms]) and its requests answered busy ((day,
    request class) -> answers); inside the caller's write transaction."""
    db.conn.executemany(
        "INSERT INTO upload_stats (day, game, outcome, uploads, total_ms, max_ms) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (day, game, outcome) DO UPDATE SET uploads = uploads + excluded.uploads, "
        "total_ms = total_ms + excluded.total_ms, max_ms = max(max_ms, excluded.max_ms)",
        [(*key, int(n), total, most) for key, (n, total, most) in counts.items()],
    )
    if times:
        db.conn.executemany(
            "INSERT INTO upload_answer_times (day, game, outcome, le_ms, uploads, total_ms) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (day, game, outcome, le_ms) DO UPDATE SET uploads = uploads + excluded.uploads, "
            "total_ms = total_ms + excluded.total_ms",
            [(*key, int(n), total) for key, (n, total) in times.items()],
        )
    if busy:
        db.conn.executemany(
            "INSERT INTO busy_answers (day, class, answers) VALUES (?, ?, ?) "
            "ON CONFLICT (day, class) DO UPDATE SET answers = answers + excluded.answers",
            [(*key, n) for key, n in busy.items()],
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
