"""Numbered SQL files in ``migrations/``, applied in order and recorded (sqlite-utils Migrations).

Each file runs in one transaction together with its record in ``_sqlite_migrations``: a file that
fails leaves nothing behind and stays pending. Files are never edited once merged.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent.parent / "migrations"  # in the repository
_PACKAGED_DIR = Path(__file__).resolve().parent.parent / "migrations"  # in an installed copy
NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")


def migration_files(directory: Path | None = None) -> list[Path]:
    """The migration files in order, after checking their numbers run 0001, 0002, ... without gaps."""
    directory = directory or (_PACKAGED_DIR if _PACKAGED_DIR.is_dir() else MIGRATIONS_DIR)
    files = sorted(p for p in directory.glob("*.sql"))
    for expected, path in enumerate(files, start=1):
        match = NAME.fullmatch(path.name)
        if not match:
            raise ValueError(f"migration file {path.name} is not named NNNN_words.sql")
        if int(match.group(1)) != expected:
            raise ValueError(f"migration {path.name} should be numbered {expected:04d}")
    return files


def migration_set(directory: Path | None = None) -> Migrations:
    migrations = Migrations("rumble")
    for path in migration_files(directory):

        def apply(db: Database, sql: str = path.read_text(encoding="utf-8")) -> None:
            db.executescript(sql)

        migrations(name=path.stem)(apply)
    return migrations


def migrate(db: Database, directory: Path | None = None, stop_before: str | None = None) -> list[str]:
    """Apply pending migrations (those before ``stop_before``, a migration's name, if given: a
    database as an older release left it); return the names applied."""
    migrations = migration_set(directory)
    pending = [m.name for m in migrations.pending(db)]
    if stop_before in pending:
        pending = pending[: pending.index(stop_before)]
    if pending:
        migrations.apply(db, stop_before=stop_before)
    return pending


def applied(db: Database) -> list[str]:
    return [m.name for m in migration_set().applied(db)]
