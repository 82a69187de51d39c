"""The client whitelist and rumble settings as maintainers set them from /admin, over the files.

ACCEPTED_CLIENTS comes from the settings (RUMBLE_ACCEPTED_CLIENTS) and each rumble's rounds, field,
melee and teams from the rumbles file; a value stored in the database (table admin_settings, every
change audited) takes precedence over either. The database is what every gunicorn worker shares, so
every upload is checked against the values as committed: ``load`` keeps what it read only while
nothing can have changed it (the stamp file outside a transaction, the connection's copy inside a
write transaction).

A rumble's field may change at any time (it only decides which uploads fit). Its rounds, melee and
teams may change only while its log is empty: every derived table is computed with them (survival
is firsts / rounds), so changing them under logged battles would make a rebuild disagree with the
battles as they were fought.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, overload

from rumble.parameters import ParameterError, whole_number
from rumble.protocol.games import ConfigError, RumbleSettings, field_size
from rumble.store import Store, admin_settings

SERVER = "server"
RUMBLE_KEYS = ("rounds", "field", "melee", "teams")
FROZEN_ONCE_LOGGED = ("rounds", "melee", "teams")
MAX_CLIENTS = 20


class SettingError(ValueError):
    """A value a maintainer typed cannot be used; the message says why in plain words."""


@dataclass(frozen=True)
class Effective:
    """The stored values, applied over what the files say."""

    stored: dict[tuple[str, str], Any]

    def accepted_clients(self, default: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(self.stored.get((SERVER, "ACCEPTED_CLIENTS"), default))

    @overload
    def rumble(self, settings: RumbleSettings) -> RumbleSettings: ...
    @overload
    def rumble(self, settings: None) -> None: ...
    def rumble(self, settings: RumbleSettings | None) -> RumbleSettings | None:
        """``settings`` as maintainers changed them from /admin (None for an unknown rumble)."""
        if settings is None:
            return None
        changes = {key: self.stored[settings.name, key] for key in RUMBLE_KEYS if (settings.name, key) in self.stored}
        return replace(settings, **changes) if changes else settings

    def rumbles(self, rumbles: dict[str, RumbleSettings]) -> dict[str, RumbleSettings]:
        return {name: self.rumble(settings) for name, settings in rumbles.items()}


def load(db: Store) -> Effective:
    """The stored settings. Outside a transaction, this process's copy while the settings' stamp is
    unchanged (``admin_settings.stamp``: each upload asks, and a query per upload cost a worker
    about a tenth of its uploads per second); inside a write transaction, the connection's copy
    while no connection changed them (``admin_settings.overrides_in_write``); in a read one, read."""
    if db.write_version is not None:
        return Effective(admin_settings.overrides_in_write(db))
    if db.conn.in_transaction:
        return Effective(admin_settings.all_overrides(db))
    seen = admin_settings.stamp(db)  # before the read: a change after it is seen by the next call
    kept = db.shared.get("overrides")
    if seen is not None and kept is not None and kept[0] == seen:
        return kept[1]
    effective = Effective(admin_settings.all_overrides(db))
    if seen is not None:
        db.shared["overrides"] = (seen, effective)
    return effective


def parse_clients(text: str) -> tuple[str, ...]:
    """A whitelist typed as comma- or space-separated versions like 1.9.3.9."""
    versions = tuple(dict.fromkeys(part for part in text.replace(",", " ").split()))
    if not versions:
        raise SettingError("give at least one client version (to go back to the server's setting, reset it)")
    if len(versions) > MAX_CLIENTS:
        raise SettingError(f"at most {MAX_CLIENTS} client versions")
    for version in versions:
        if len(version) > 20 or not all(part.isascii() and part.isdigit() for part in version.split(".")):
            raise SettingError(f"a client version is digits separated by dots, like 1.9.3.9, not {version!r}")
    return versions


def parse_rumble_value(key: str, text: str) -> Any:
    """A rumble setting typed by a maintainer, checked as the rumbles file would check it."""
    text = text.strip()
    if key == "rounds":
        try:
            return whole_number(text, "rounds", 1, 10_000)
        except ParameterError as error:
            raise SettingError(str(error)) from None
    if key == "field":
        try:
            return field_size(text, "field")
        except ConfigError as error:
            raise SettingError(str(error)) from None
    if key in ("melee", "teams"):
        if text.lower() not in ("true", "false", "yes", "no"):
            raise SettingError(f"{key} must be true or false, not {text!r}")
        return text.lower() in ("true", "yes")
    raise SettingError(f"no rumble setting {key!r}; one of {', '.join(RUMBLE_KEYS)}")


def set_clients(db: Store, versions: tuple[str, ...] | None, now: str, who: str) -> None:
    """Store the whitelist, or drop the stored one with None (caller's transaction, audited by the caller)."""
    if versions is None:
        admin_settings.drop_override(db, SERVER, "ACCEPTED_CLIENTS")
    else:
        admin_settings.put_override(db, SERVER, "ACCEPTED_CLIENTS", list(versions), now, who)


def set_rumble(db: Store, base: RumbleSettings, key: str, value: Any, now: str, who: str) -> RumbleSettings:
    """Store one rumble setting (None: go back to the file's) and return the rumble's new settings."""
    if key not in RUMBLE_KEYS:
        raise SettingError(f"no rumble setting {key!r}; one of {', '.join(RUMBLE_KEYS)}")
    current = load(db).rumble(base)
    target = getattr(base, key) if value is None else value
    if key in FROZEN_ONCE_LOGGED and target != getattr(current, key) and admin_settings.logged_battles(db, base.name):
        raise SettingError(
            f"{base.name} already has battles in its log, and its tables are computed with its {key}; "
            f"start a new rumble instead"
        )
    if value is None:
        admin_settings.drop_override(db, base.name, key)
    else:
        admin_settings.put_override(db, base.name, key, value, now, who)
    updated = load(db).rumble(base)
    admin_settings.set_rumble_row(db, updated.name, updated.rounds, updated.field, updated.melee, updated.teams)
    return updated


def apply_to_rumble_rows(db: Store, rumbles: dict[str, RumbleSettings]) -> None:
    """After the rumbles file was synced into the rumbles table, put the stored values back over it."""
    effective = load(db)
    for settings in effective.rumbles(rumbles).values():
        admin_settings.set_rumble_row(
            db, settings.name, settings.rounds, settings.field, settings.melee, settings.teams
        )
