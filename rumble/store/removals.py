"""The log of the client's RemoveOldParticipant requests (migration 0007), which is also what the
rate limit counts: every server worker sees the same rows."""

from __future__ import annotations

from rumble.store import Store

COLUMNS = ("id", "at", "remote_addr", "user_agent", "game", "name", "outcome")


def record(
    db: Store, at: str, remote_addr: str | None, user_agent: str | None, game: str, name: str, outcome: str
) -> None:
    """Log one request and what became of it (inside the request's write transaction)."""
    db.execute(
        "INSERT INTO removal_requests (at, remote_addr, user_agent, game, name, outcome) VALUES (?, ?, ?, ?, ?, ?)",
        (at, remote_addr, (user_agent or "")[:200], game[:200], name[:200], outcome),
    )


def count_since(db: Store, remote_addr: str | None, since: str, outcome: str | None = None) -> int:
    """The requests from ``remote_addr`` logged at or after ``since`` (with ``outcome``, if given)."""
    sql = "SELECT count(*) FROM removal_requests WHERE remote_addr IS ? AND at >= ?"
    params: list = [remote_addr, since]
    if outcome is not None:
        sql += " AND outcome = ?"
        params.append(outcome)
    return db.execute(sql, params).fetchone()[0]


def recent(db: Store, limit: int = 50) -> list[dict]:
    """The newest ``limit`` requests, newest first."""
    rows = db.execute(
        f"SELECT {', '.join(COLUMNS)} FROM removal_requests ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [dict(zip(COLUMNS, row)) for row in rows]
