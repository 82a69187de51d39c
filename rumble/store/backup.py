"""Copying the live database out and back with SQLite's online backup API.

``backup`` reads one snapshot: it holds a read transaction on the source across the backup's
steps, so in WAL mode uploads go on committing meanwhile and the copy is still of one moment
(without that snapshot, every write between steps would restart the copy). The copy is written to
a temporary file, switched to a rollback journal so it is one self-contained file, checked, and
only then renamed into place.

``restore`` first prepares the backup aside (``prepare``: a copy next to the live file, checked and
migrated there, with no lock on the live database), then copies that over the live database in one
step under the store's write lock, so no writer is half-way and every live connection sees either
the old file or the new one; uploads wait only for that page copy, not for reading, checking and
migrating the backup. It then bumps ``PRAGMA user_version``, the restore epoch: ``store.write`` clears a connection's
caches (bot ids, rumble copies) when the epoch changes, since ids cached before a restore may
belong to rows the backup does not have.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from rumble.store import BUSY_TIMEOUT_MS, Store, admin_settings, create_private, file_lock

STEP_PAGES = 1024  # pages per backup step: 4 MiB at SQLite's default page size
REQUIRED_TABLES = ("_sqlite_migrations", "battles")

Progress = Callable[[int, int], None]  # (pages done, pages in all)


class NotARumbleDatabase(ValueError):
    """The file is not a rumble database (or not an SQLite database at all)."""


def backup(db: Store, dest: str | os.PathLike, progress: Progress | None = None) -> int:
    """Copy the database of ``db`` to the new file ``dest``; the number of pages copied."""
    dest = Path(dest)
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    create_private(partial)  # mode 0600 before the first secret is copied in (kept by the rename)
    target = sqlite3.connect(partial)
    try:
        db.conn.execute("BEGIN")
        db.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # starts the read snapshot
        try:
            db.conn.backup(target, pages=STEP_PAGES, progress=_reporter(progress))
        finally:
            db.conn.execute("COMMIT")
        target.execute("PRAGMA journal_mode = DELETE")
        check_rumble_database(target)
        pages = target.execute("PRAGMA page_count").fetchone()[0]
    except BaseException:
        target.close()
        partial.unlink(missing_ok=True)
        raise
    target.close()
    os.replace(partial, dest)
    return pages


def check_rumble_database(conn: sqlite3.Connection) -> None:
    """Raise NotARumbleDatabase unless ``conn`` holds an intact rumble database."""
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as error:
        raise NotARumbleDatabase(f"not an SQLite database ({error})") from None
    missing = [name for name in REQUIRED_TABLES if name not in names]
    if missing:
        raise NotARumbleDatabase(f"not a rumble database: no {' or '.join(missing)} table")
    if verdict != "ok":
        raise NotARumbleDatabase(f"the database is damaged: {verdict}")


def open_backup(path: str | os.PathLike) -> sqlite3.Connection:
    """Open a backup file read-only, after checking it is a rumble database."""
    if not Path(path).is_file():
        raise NotARumbleDatabase(f"{path} is not a file")
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        check_rumble_database(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def prepare(source: sqlite3.Connection, live_path: str | os.PathLike, progress: Progress | None = None) -> Path:
    """Copy ``source`` to ``<live>.restoring`` beside the live database (no lock on it), check it
    and apply pending migrations there; the prepared file's path, for ``restore``."""
    from rumble.store import connect

    prepared = Path(f"{live_path}.restoring")
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{prepared}{suffix}").unlink(missing_ok=True)
    create_private(prepared)  # a copy of the backup, secrets and all: mode 0600 like the database
    target = sqlite3.connect(prepared)
    try:
        source.backup(target, pages=STEP_PAGES, progress=_reporter(progress))
        target.execute("PRAGMA journal_mode = DELETE")
        check_rumble_database(target)
    finally:
        target.close()
    connect(prepared).close()  # applies the migrations the backup lacks
    Path(f"{prepared}.lock").unlink(missing_ok=True)
    return prepared


def restore(db: Store, prepared: str | os.PathLike) -> None:
    """Replace the database of ``db`` with the ``prepare``d file's content, under the write lock, in one step."""
    source = sqlite3.connect(f"{Path(prepared).resolve().as_uri()}?mode=ro", uri=True)
    try:
        source.execute("PRAGMA journal_mode").fetchone()
        with file_lock(db):
            epoch = db.conn.execute("PRAGMA user_version").fetchone()[0]
            source.backup(db.conn)  # every page at once: the lock is held for the copy alone
            restored = db.conn.execute("PRAGMA user_version").fetchone()[0]
            db.conn.execute(f"PRAGMA user_version = {max(epoch, restored) + 1}")  # an int from SQLite: no injection
            db._cache.clear()
            db.shared.clear()
            admin_settings.changed(db)  # the stored settings are the backup's now: every process reads them again
    finally:
        source.close()


def _reporter(progress: Progress | None):
    if progress is None:
        return None
    return lambda status, remaining, total: progress(total - remaining, total)
