"""Maintainers' browser sessions and failed authentication attempts (migration 0012).

A session row is keyed by the SHA-256 of the cookie's random id (rumble/admin_tokens.py): the
cookie alone opens nothing once the row is ended (logout, revocation) or expired. The failure log
is also what the per-address limit counts, so every server worker sees the same count.
"""

from __future__ import annotations

from rumble.store import Store

FAILURE_COLUMNS = ("id", "at", "remote_addr", "kind", "tried", "path")
COUNTED_KINDS = ("login", "bearer", "session")  # 'limited' rows record a refusal, not an attempt


def start_session(
    db: Store, session_hash: str, maintainer: str, now: str, expires: str, remote_addr: str | None
) -> None:
    """Record a new session of ``maintainer`` (caller's transaction)."""
    db.execute(
        "INSERT INTO admin_sessions (session_hash, maintainer, created_at, expires_at, remote_addr) VALUES (?, ?, ?, ?, ?)",
        (session_hash, maintainer, now, expires, remote_addr),
    )


def session_state(db: Store, session_hash: str, now: str) -> tuple[str | None, str]:
    """(maintainer, '') for a live session, else (None, why): unknown, ended by logout or
    revocation, expired, or its maintainer's token revoked since."""
    row = db.execute(
        "SELECT s.maintainer, s.expires_at, s.ended_why, m.revoked_at FROM admin_sessions AS s "
        "LEFT JOIN maintainers AS m ON m.name = s.maintainer WHERE s.session_hash = ?",
        (session_hash,),
    ).fetchone()
    if row is None:
        return None, "unknown session"
    maintainer, expires, ended_why, revoked_at = row
    if ended_why is not None:
        return None, f"session ended ({ended_why})"
    if now >= expires:
        return None, "session expired"
    if revoked_at is not None:
        return None, "session of a revoked token"
    return maintainer, ""


def end_session(db: Store, session_hash: str, now: str, why: str) -> bool:
    """End a live session (caller's transaction); False if it was not live."""
    cursor = db.execute(
        "UPDATE admin_sessions SET ended_at = ?, ended_why = ? WHERE session_hash = ? AND ended_at IS NULL",
        (now, why, session_hash),
    )
    return cursor.rowcount == 1


def live_sessions(db: Store, maintainer: str, now: str) -> int:
    """How many sessions of ``maintainer`` are neither ended nor expired."""
    sql = "SELECT count(*) FROM admin_sessions WHERE maintainer = ? AND ended_at IS NULL AND expires_at > ?"
    return db.execute(sql, (maintainer, now)).fetchone()[0]


def record_failure(
    db: Store, at: str, remote_addr: str | None, kind: str, tried: str, path: str, keep_since: str
) -> None:
    """Log one failed attempt (caller's transaction), and forget those older than ``keep_since``."""
    db.execute(
        "INSERT INTO admin_failures (at, remote_addr, kind, tried, path) VALUES (?, ?, ?, ?, ?)",
        (at, remote_addr, kind, tried[:200], path[:200]),
    )
    db.execute("DELETE FROM admin_failures WHERE at < ?", (keep_since,))


def failures_since(db: Store, remote_addr: str | None, since: str, kinds: tuple[str, ...] = COUNTED_KINDS) -> int:
    """The failures of ``kinds`` logged from ``remote_addr`` at or after ``since``."""
    marks = ", ".join("?" for _ in kinds)
    sql = f"SELECT count(*) FROM admin_failures WHERE remote_addr IS ? AND at >= ? AND kind IN ({marks})"
    return db.execute(sql, (remote_addr, since, *kinds)).fetchone()[0]


def recent_failures(db: Store, limit: int = 50) -> list[dict]:
    """The newest ``limit`` failures, newest first."""
    rows = db.execute(
        f"SELECT {', '.join(FAILURE_COLUMNS)} FROM admin_failures ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [dict(zip(FAILURE_COLUMNS, row)) for row in rows]
