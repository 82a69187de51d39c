"""Settings maintainers edit from /admin (migration 0007's admin_settings): rows in, rows out."""

from __future__ import annotations

import json
from typing import Any

from rumble.store import Store


def all_overrides(db: Store) -> dict[tuple[str, str], Any]:
    """Every stored setting: (scope, name) -> its decoded value."""
    return {
        (scope, name): json.loads(value)
        for scope, name, value in db.execute("SELECT scope, name, value FROM admin_settings")
    }


def put_override(db: Store, scope: str, name: str, value: Any, now: str, who: str) -> None:
    db.execute(
        "INSERT INTO admin_settings (scope, name, value, updated_at, updated_by) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by",
        (scope, name, json.dumps(value), now, who),
    )


def drop_override(db: Store, scope: str, name: str) -> bool:
    """Remove a stored setting (the file's or environment's value applies again); False if there was none."""
    return db.execute("DELETE FROM admin_settings WHERE scope = ? AND name = ?", (scope, name)).rowcount == 1


def set_rumble_row(db: Store, name: str, rounds: int, field: str, melee: bool, teams: bool) -> None:
    """Keep the rumbles table (what the pages and a rebuild read) in step with the effective settings."""
    db.execute(
        "UPDATE rumbles SET rounds = ?, field = ?, melee = ?, teams = ? WHERE name = ?",
        (rounds, field, int(melee), int(teams), name),
    )


def logged_battles(db: Store, name: str) -> int:
    """The rumble's battles in the log, in any state."""
    return db.execute(
        "SELECT count(*) FROM battles b JOIN rumbles r ON r.id = b.rumble_id WHERE r.name = ?", (name,)
    ).fetchone()[0]
