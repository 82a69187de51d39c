"""The uploader-consistency tables the scheduled batch run stores (``uploader_verdicts``,
migrations/0026_uploader_verdicts.sql), so that a request for a large rumble reads one row instead
of working through every pairing's sums."""

from __future__ import annotations

import json
from typing import NamedTuple

from rumble.store import Store


class Verdicts(NamedTuple):
    rows: list[dict]
    log_version: str  # the rumble's log version they were computed at, as ``version_text`` writes it
    computed_at: str


def version_text(version: tuple) -> str:
    """A log version (rumble.store.export.log_version) as stored: JSON, so that equal versions compare equal."""
    return json.dumps(version)


def put(db: Store, rumble_id: int, rows: list[dict], version: tuple, computed_at: str) -> None:
    """Store the rumble's table, computed at ``version``; inside the caller's write transaction."""
    db.execute(
        "INSERT INTO uploader_verdicts (rumble_id, log_version, computed_at, rows) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (rumble_id) DO UPDATE SET log_version = excluded.log_version, "
        "computed_at = excluded.computed_at, rows = excluded.rows",
        (rumble_id, version_text(version), computed_at, json.dumps(rows)),
    )


def stored(db: Store, rumble_id: int) -> Verdicts | None:
    """The rumble's stored table, or None before the batch run first stored one."""
    row = db.execute(
        "SELECT rows, log_version, computed_at FROM uploader_verdicts WHERE rumble_id = ?", (rumble_id,)
    ).fetchone()
    return None if row is None else Verdicts(json.loads(row[0]), row[1], row[2])
