"""Every setting of the server, declared once with its default and its meaning.

A setting is read, in order of precedence, from the mapping a test passes to ``create_app``,
from a ``RUMBLE_<NAME>`` environment variable, and from the default here. ``tests/test_docs.py``
checks that the README documents each one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = str


def _csv(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def default_db_path(environ: dict[str, str] | None = None) -> Path:
    """The database file used when neither --db nor RUMBLE_DB names one (XDG data directory)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "rumble" / "rumble.db"


SETTINGS = (
    Setting("DB", None, "Path of the SQLite database file (default: ~/.local/share/rumble/rumble.db)."),
    Setting("RUMBLES_FILE", None, "TOML file of rumbles and their settings (default: the stock rumbles shipped in rumble/rumbles.toml).", str),
    Setting("ACCEPTED_CLIENTS", ("1.9.3.9",), "Comma-separated Robocode client versions whose uploads are accepted.", _csv),
    Setting("MAX_BATTLE_AGE_HOURS", 24.0, "Uploads whose battle `time` is older than this are refused.", float),
    Setting("MAX_CLOCK_SKEW_MINUTES", 60.0, "Uploads whose battle `time` lies further than this in the future are refused.", float),
    Setting("MAX_UPLOAD_BYTES", 4096, "Largest accepted upload body; a real one is about 250 bytes.", int),
    Setting("PRIORITY_BATCH", 8, "Priority battles chosen at once when a rumble's queue runs empty.", int),
    Setting("PRIORITY_MIN_BATTLES", 3, "Pairings with fewer battles than this come before the confidence-interval ranking.", int),
    Setting("PRIORITY_HOLD_MINUTES", 10.0, "A pairing handed out as a priority battle is not handed out again for this long.", float),
    Setting("BATCH_INTERVAL_MINUTES", 60.0, "Minutes between scheduled batch-ranking runs of the rumbles whose log changed (one server process runs them); 0 turns the schedule off.", float),
    Setting("REMOVALS_PER_HOUR", 120, "RemoveOldParticipant requests one address may make in an hour; beyond that they are refused (and logged).", int),
    Setting("ADMIN_SESSION_MINUTES", 60.0, "A maintainer's browser login lasts this long, then the login page asks for the token again.", float),
    Setting("SYNCHRONOUS", "NORMAL", "SQLite synchronous pragma: NORMAL survives a crash of the server (WAL); FULL also a power loss.", str),
    Setting("EXPORT_DIR", None, "Folder of the bulk exports' snapshot files (default: exports/ beside the database file).", str),
    Setting("EXPORT_MAX_AGE_MINUTES", 5.0, "An export's snapshot is still served this long after its rumble changed; then the next request writes a new one (0: on the first request after any change).", float),
    Setting("EXPORT_BUILDS", 1, "Export snapshots that may be written at once, across all workers; a request that finds none free serves the previous snapshot.", int),
)

_BY_NAME = {setting.name: setting for setting in SETTINGS}


def load(overrides: dict[str, Any] | None = None, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Return every setting's value: overrides, then RUMBLE_* variables, then defaults."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        value = setting.default
        raw = environ.get("RUMBLE_" + setting.name)
        if raw is not None:
            value = setting.parse(raw)
        values[setting.name] = value
    for name, value in (overrides or {}).items():
        if name not in _BY_NAME:
            raise KeyError(f"unknown setting {name!r}")
        values[name] = value
    if values["DB"] is None:
        values["DB"] = str(default_db_path(environ))
    return values
