"""The maintenance jobs table (migrations/0012): what /admin asked for and how far it got."""

from __future__ import annotations

import json

from rumble.store import Store, row_id

_COLUMNS = (
    "id",
    "kind",
    "args",
    "state",
    "progress",
    "requested_by",
    "pid",
    "created",
    "started",
    "finished",
    "result",
    "error",
)


def add_job(db: Store, kind: str, args: dict, requested_by: str, now: str) -> int:
    return row_id(
        db.execute(
            "INSERT INTO jobs (kind, args, requested_by, created) VALUES (?, ?, ?, ?)",
            (kind, json.dumps(args), requested_by, now),
        )
    )


def job(db: Store, job_id: int) -> dict | None:
    row = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return _dict(row) if row else None


def recent_jobs(db: Store, limit: int = 20) -> list[dict]:
    return [
        _dict(row) for row in db.execute(f"SELECT {', '.join(_COLUMNS)} FROM jobs ORDER BY id DESC LIMIT ?", (limit,))
    ]


def _dict(row: tuple) -> dict:
    found = dict(zip(_COLUMNS, row))
    found["args"] = json.loads(found["args"])
    found["result"] = json.loads(found["result"]) if found["result"] else None
    return found


def start_job(db: Store, job_id: int, pid: int, now: str) -> bool:
    """Mark a queued job running in process ``pid``; False if it was not queued (taken, or unknown)."""
    return (
        db.execute(
            "UPDATE jobs SET state = 'running', pid = ?, started = ? WHERE id = ? AND state = 'queued'",
            (pid, now, job_id),
        ).rowcount
        == 1
    )


def set_progress(db: Store, job_id: int, progress: str) -> None:
    db.execute("UPDATE jobs SET progress = ? WHERE id = ?", (progress, job_id))


def finish_job(db: Store, job_id: int, now: str, result: dict | None = None, error: str | None = None) -> None:
    db.execute(
        "UPDATE jobs SET state = ?, finished = ?, result = ?, error = ? WHERE id = ?",
        (
            "failed" if error is not None else "done",
            now,
            json.dumps(result) if result is not None else None,
            error,
            job_id,
        ),
    )
