"""Tables the scheduled batch run works out and stores for the pages (``batch_tables``,
migrations/0026_batch_tables.sql): a large rumble's uploader-consistency table and its new bots'
completions, so that a request reads one row instead of working through the rumble's sums or log."""

from __future__ import annotations

import json
from typing import NamedTuple

from rumble.store import Store

UPLOADERS = "uploaders"  # rumble.rankings.uploader_consistency's table (rumble.web.uploader_data)
COMPLETIONS = "completions"  # rumble.store.ladder_events.completions (the feed)


class Stored(NamedTuple):
    rows: list[dict]
    log_version: str  # the rumble's log version they were computed at, as ``version_text`` writes it
    computed_at: str


def version_text(version: tuple) -> str:
    """A log version (rumble.store.export.log_version) as stored: JSON, so that equal versions compare equal."""
    return json.dumps(version)


def put(db: Store, rumble_id: int, what: str, rows: list[dict], version: tuple, computed_at: str) -> None:
    """Store the rumble's table ``what``, computed at ``version``; inside the caller's write transaction."""
    db.execute(
        "INSERT INTO batch_tables (rumble_id, what, log_version, computed_at, rows) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (rumble_id, what) DO UPDATE SET log_version = excluded.log_version, "
        "computed_at = excluded.computed_at, rows = excluded.rows",
        (rumble_id, what, version_text(version), computed_at, json.dumps(rows)),
    )


def stored(db: Store, rumble_id: int, what: str) -> Stored | None:
    """The rumble's stored table ``what``, or None before the batch run first stored one."""
    row = db.execute(
        "SELECT rows, log_version, computed_at FROM batch_tables WHERE rumble_id = ? AND what = ?", (rumble_id, what)
    ).fetchone()
    return None if row is None else Stored(json.loads(row[0]), row[1], row[2])


def computed(db: Store, rumble_id: int) -> tuple[tuple[str, str], ...]:
    """When each of the rumble's stored tables was computed: (what, computed_at), by ``what``."""
    return tuple(
        db.execute("SELECT what, computed_at FROM batch_tables WHERE rumble_id = ? ORDER BY what", (rumble_id,))
    )
