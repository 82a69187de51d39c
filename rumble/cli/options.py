"""What every ``rumble`` command shares: the ``--db`` option, the settings and an open database.

``rumble.cli`` (the main group) and ``rumble.cli.admin_commands`` (the maintainers' commands) both import
from here, so neither imports the other's internals.
"""

from __future__ import annotations

import click

from rumble import settings, store

db_option = click.option(
    "--db",
    type=click.Path(dir_okay=False),
    default=None,
    help="SQLite database file (default: $RUMBLE_DB or ~/.local/share/rumble/rumble.db).",
)


def settings_for(db: str | None) -> dict:
    """Every setting, with ``--db`` (when given) naming the database."""
    return settings.load({"DB": db} if db else None)


def open_database(values: dict) -> store.Store:
    """The database the settings name: created or migrated, its rumbles recorded, then opened."""
    from rumble.app import prepare_database
    from rumble.protocol.games import load_rumbles

    prepare_database(values, load_rumbles(values["RUMBLES_FILE"]))
    return store.connect(values["DB"], values["SYNCHRONOUS"])
