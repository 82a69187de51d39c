"""Settings maintainers edit from /admin (migration 0007's admin_settings): rows in, rows out."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from rumble.store import Store, connection_copy, drop_connection_copy

_COPY_KEY = "admin_settings"  # this module's copy of the table, for write transactions (``overrides_in_write``)


def all_overrides(db: Store) -> dict[tuple[str, str], Any]:
    """Every stored setting: (scope, name) -> its decoded value."""
    return {
        (scope, name): json.loads(value)
        for scope, name, value in db.execute("SELECT scope, name, value FROM admin_settings")
    }


def overrides_in_write(db: Store) -> dict[tuple[str, str], Any]:
    """``all_overrides``, inside a write transaction: this connection's copy, read again once
    another connection committed or this one changed a setting (``_changing``). Every upload
    asks, in the writer's transaction."""
    copy = connection_copy(db, _COPY_KEY)
    if "all" not in copy:
        copy["all"] = all_overrides(db)
    return copy["all"]


def stamp(db: Store) -> tuple[int, ...] | None:
    """What changes whenever the stored settings may have: the identity of a file beside the
    database that each change replaces once committed (``changed``). None for a database in memory.
    A process may keep the settings it read while this stays the same (rumble.overrides.load),
    instead of reading them for every upload."""
    if db.lock_path is None:
        return None
    try:
        info = os.stat(_stamp_path(db))
    except FileNotFoundError:
        return ()
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def changed(db: Store) -> None:
    """Change ``stamp``: the stored settings changed, and that is committed (or the database was replaced)."""
    if db.lock_path is None:
        return
    path = _stamp_path(db)
    temporary = f"{path}.{os.getpid()}.{threading.get_ident()}"
    with open(temporary, "w") as file:
        file.write(f"{time.time_ns()}\n")
    os.replace(temporary, path)  # a new file each time: a new identity


def _stamp_path(db: Store) -> str:
    assert db.lock_path is not None
    return db.lock_path.removesuffix(".lock") + ".settings"


def _changing(db: Store) -> None:
    """Have ``changed`` run once the caller's transaction is committed (at once without one), and
    drop this connection's copy (``overrides_in_write``)."""
    drop_connection_copy(db, _COPY_KEY)
    if db.conn.in_transaction:
        db.after_commit["admin_settings.changed"] = lambda: changed(db)
    else:
        changed(db)


def put_override(db: Store, scope: str, name: str, value: Any, now: str, who: str) -> None:
    _changing(db)
    db.execute(
        "INSERT INTO admin_settings (scope, name, value, updated_at, updated_by) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by",
        (scope, name, json.dumps(value), now, who),
    )


def drop_override(db: Store, scope: str, name: str) -> bool:
    """Remove a stored setting (the file's or environment's value applies again); False if there was none."""
    _changing(db)
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
