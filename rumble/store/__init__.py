"""The store: the only package with SQL in it.

``connect(path)`` opens the database (WAL, busy timeout, migrations applied) and ``write(db)``
wraps one write transaction. Writers across all gunicorn workers and CLI commands are
serialised by an advisory file lock taken before ``BEGIN IMMEDIATE``: a waiting writer then wakes
the moment the lock is free, instead of polling SQLite's busy handler in millisecond sleeps.

Each connection keeps its own small cache (``_cache``: ids of bots and rumbles) and shares with
the other connections of this process to the same file a second one (``shared``: the rumbles'
in-memory ratings fields, rumble.ingest.fields), so that a worker's threads hold one copy of each field,
not one each. Both are cleared when a write transaction rolls back or the file was restored.

The server's connections turn SQLite's automatic WAL checkpoint off (``autocheckpoint=False``):
it would run inside a COMMIT, holding the write lock for tens of milliseconds while every other
upload waits. They call ``checkpoint_if_due`` instead, after the answer has been sent.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import sqlite_utils

BUSY_TIMEOUT_MS = 30_000


def utc_now() -> str:
    """The current UTC time as the store writes it: "YYYY-MM-DD HH:MM:SS.mmm"."""
    return format_time(datetime.now(UTC))


def format_time(moment: datetime) -> str:
    """The time as the store writes it, "YYYY-MM-DD HH:MM:SS.mmm" in UTC, milliseconds truncated
    (isoformat's, without its offset: about half strftime's time, and every upload stamps a few)."""
    return moment.astimezone(UTC).isoformat(" ", "milliseconds")[:23]


_EPOCH = datetime(1970, 1, 1)
_MILLISECOND = timedelta(milliseconds=1)


def time_ms(text: str) -> int:
    """A store time "YYYY-MM-DD HH:MM:SS.mmm" (UTC) as whole milliseconds since 1970, as the battle
    log keeps it (battles.received_ms, migrations/0031_receive_times_as_numbers.sql)."""
    return (datetime.fromisoformat(text) - _EPOCH) // _MILLISECOND


def ms_time(ms: int) -> str:
    """Whole milliseconds since 1970 as the store time text: the inverse of ``time_ms``."""
    return (_EPOCH + ms * _MILLISECOND).isoformat(" ", "milliseconds")


class Store(sqlite_utils.Database):
    """A sqlite-utils Database plus the write lock of its file."""

    file_path: str | None = None  # the database file (None in memory)
    lock_path: str | None = None
    _lock_file: IO | None = None
    _cache: dict
    shared: dict  # this process's cache for the file, shared by its connections (one per thread)
    commits_since_checkpoint = 0
    epoch: int | None = None  # PRAGMA user_version as last seen: bumped by each restore (store.backup)
    # PRAGMA data_version read when this connection's write transaction began (None outside one):
    # holding the write lock, no other connection can commit, so it holds until the transaction ends.
    write_version: int | None = None
    log_writes = 0  # this connection's writes to what the ratings copies follow (``note_log_write``)
    serial = 0  # this connection's number in its process (``connect``): a copy notes which one checked it
    after_commit: dict[str, Callable[[], None]]  # run once the current write transaction is committed

    def close(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None
        self.conn.close()


_serials = itertools.count(1)
_shared_caches: dict[tuple[int, str], dict] = {}
_shared_lock = threading.Lock()


def _shared_cache(path: str) -> dict:
    """The cache this process's connections to ``path`` share (a fresh one after a fork)."""
    key = (os.getpid(), os.path.realpath(path))
    with _shared_lock:
        return _shared_caches.setdefault(key, {})


CHECKPOINT_EVERY = 1000  # commits of one connection between its WAL checkpoints: fewer fsyncs under the lock,
# while the WAL stays bounded (scripts/bench_upload.py reports its size)
WAL_SIZE_LIMIT = 64 * 1024 * 1024  # bytes: a WAL that a long read let grow past this is cut back to it
# when the next write starts it again from the beginning (SQLite's journal_size_limit), not kept


def connect(
    path: str | os.PathLike, synchronous: str = "NORMAL", migrate: bool = True, autocheckpoint: bool = True
) -> Store:
    """Open (creating if needed) the database at ``path``, apply pending migrations, return it."""
    path = str(path)
    memory = path == ":memory:"
    if not memory:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        create_private(path)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
        raise ValueError(f"SYNCHRONOUS must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
    db = Store(conn)
    db.serial = next(_serials)
    db._cache = {}
    db.after_commit = {}
    db.shared = {} if memory else _shared_cache(path)  # each in-memory database is a database of its own
    db.epoch = conn.execute("PRAGMA user_version").fetchone()[0]
    if not memory:
        db.file_path = path
        db.lock_path = path + ".lock"
        # WAL is the file's own lasting mode: only the first opening sets it, under the write lock,
        # and a later one (a worker thread's first request) never waits for a writer to read it.
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            with file_lock(db):
                conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    if not autocheckpoint:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    if migrate:
        from rumble.store.migrations import migrate as apply_migrations

        with file_lock(db):
            apply_migrations(db)
    return db


PRIVATE_MODE = 0o600  # the database holds the cookie-signing key and the token hashes: its owner alone may read it


def create_private(path: str | os.PathLike) -> None:
    """Create ``path`` as an empty file of mode 0600 (at most: the umask may take more away), unless
    it exists; an empty file is an empty SQLite database. SQLite gives the -wal, -shm and -journal
    files it creates beside a database the database file's mode, so they are 0600 too. A file that
    exists keeps its mode; a file that cannot be made is left to SQLite to refuse, as before."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_MODE))
    except OSError:  # FileExistsError above all
        pass


def keep_temporary_in_memory(db: Store) -> None:
    """SQLite's temporary files kept in memory. A group applied in savepoints (rumble.store.group_commit,
    after one of its works raised) keeps the first copy of every page a savepoint changes in a
    sub-journal, which SQLite spills to a temporary file past 64 KiB: a file opened and deleted per
    group and two writes per page, as many as the WAL's. In memory it is a group's pages, at most a
    few MiB."""
    db.conn.execute("PRAGMA temp_store = MEMORY")


def try_lock(path: str | os.PathLike) -> IO | None:
    """``path`` opened and held with a non-blocking exclusive flock, or None if another holds it.

    Keep the returned file open to keep the lock: closing it (or the process ending) releases it.
    Two opens of the same file are two locks even in one process."""
    handle = open(path, "a")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def row_id(cursor: sqlite3.Cursor) -> int:
    """The id of the row the INSERT just run on ``cursor`` added."""
    if cursor.lastrowid is None:
        raise RuntimeError("the statement inserted no row")
    return cursor.lastrowid


@contextlib.contextmanager
def file_lock(db: Store) -> Iterator[None]:
    """Hold the database file's advisory write lock (every writer's, across processes) for the block."""
    if db.lock_path is None:
        yield
        return
    if db._lock_file is None:
        db._lock_file = open(db.lock_path, "a")
    handle = db._lock_file
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def write(db: Store) -> Iterator[Store]:
    """One write transaction: everything inside is committed together or not at all."""
    with file_lock(db):
        db.conn.execute("BEGIN IMMEDIATE")
        db.after_commit.clear()
        try:
            epoch, db.write_version = db.conn.execute(
                "SELECT * FROM pragma_user_version, pragma_data_version"
            ).fetchone()
            if epoch != db.epoch:  # the file was restored from a backup: cached ids may be gone
                db._cache.clear()
                db.shared.clear()
                db.epoch = epoch
            yield db
            db.conn.execute("COMMIT")  # inside the try: a failed COMMIT (disk full, I/O error) is rolled back too
        except BaseException:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            db._cache.clear()  # ids cached during a rolled-back transaction may not exist
            db.shared.clear()  # nor the field changes it made in memory
            db.after_commit.clear()
            raise
        finally:
            db.write_version = None
        db.commits_since_checkpoint += 1
        _run_after_commit(db)


def _run_after_commit(db: Store) -> None:
    """What the committed transaction asked to run after it (a failure is logged: the data is stored)."""
    done, db.after_commit = db.after_commit, {}
    for call in done.values():
        try:
            call()
        except Exception:
            logging.getLogger(__name__).exception("an action after a commit failed")


def connection_copy(db: Store, key: str) -> dict:
    """A dict this connection keeps under ``key`` for its copies of rows (in its cache, so a
    rolled-back transaction or a restore clears it), emptied whenever another connection has
    committed since (SQLite's ``data_version``). Keeping it up to date with this connection's own
    writes is its owner's job: the functions that write those rows (rumble.store.waiting,
    rumble.store.pairings ``totals_of``)."""
    version = data_version(db)
    kept = db._cache.get(key)
    if kept is None or kept[0] != version:
        kept = db._cache[key] = (version, {})
    return kept[1]


def data_version(db: Store) -> int:
    """SQLite's ``data_version`` for this connection: it changes whenever another connection has
    committed. Read once per write transaction (``write``), not on each call: several copies ask
    on every upload, and no other connection can commit while this one holds the write lock."""
    if db.write_version is not None:
        return db.write_version
    return db.conn.execute("PRAGMA data_version").fetchone()[0]


def change_stamp(db: Store) -> tuple[int, int]:
    """What differs from one call to the next on this connection whenever anything in the database
    may have changed: another connection's commit (``data_version``) or a row written by this one
    (sqlite3's ``total_changes``, which a rolled-back write moves too)."""
    return data_version(db), db.conn.total_changes


def note_log_write(db: Store) -> None:
    """Count a write by this connection to what ``rating_rows.version`` reads (the battle log, the
    participant events, a rumble's generation). The ratings copies (rumble.ingest.fields) take a copy as
    current without asking the database only while no connection, this one included, wrote those."""
    db.log_writes += 1


def log_stamp(db: Store) -> tuple[int, int, int]:
    """What changes whenever any connection may have written what ``rating_rows.version`` reads:
    another connection's commit (``data_version``) or this connection's own ``note_log_write``."""
    return db.serial, data_version(db), db.log_writes


def connection_copy_if_any(db: Store, key: str) -> dict | None:
    """The dict ``connection_copy`` keeps under ``key``, if any, without looking whether another
    connection committed (a write on this one updating it: a stale one is emptied at its next read)."""
    kept = db._cache.get(key)
    return None if kept is None else kept[1]


def drop_connection_copy(db: Store, key: str) -> None:
    """Forget the dict ``connection_copy`` keeps under ``key``: this connection changed its rows."""
    db._cache.pop(key, None)


def restore_epoch(db: Store) -> int:
    """PRAGMA user_version: the restore epoch, bumped by every restore (rumble.store.backup)."""
    return db.conn.execute("PRAGMA user_version").fetchone()[0]


def checkpoint_if_due(db: Store) -> None:
    """Copy the WAL back into the database file if this connection committed enough since the last time.

    Passes, all PASSIVE (they wait for no reader): first beside the writers, which copy nearly
    everything without holding anyone up, then one under the write lock, which copies the few
    frames left while nobody appends (``checkpoint``). Only a
    checkpoint that reaches the end of the WAL lets the next write start the WAL again from its
    beginning; one that always runs beside writers never does, and the WAL grows without end,
    every read slower for it.
    """
    if db.commits_since_checkpoint < CHECKPOINT_EVERY:
        return
    db.commits_since_checkpoint = 0
    checkpoint(db)


CHECKPOINT_LOCKED_FRAMES = 256  # the most WAL frames left to a checkpoint's last pass, under the write lock
CHECKPOINT_PASSES = 4  # passes beside the writers at most, before that last one


def checkpoint(db: Store) -> int:
    """Copy the WAL back into the database file, as ``checkpoint_if_due`` says, now. Returns the
    frames written since the pass before for the last pass, the one under the write lock.

    A pass copies the frames written before it started; the one that reaches the end of the WAL
    (no writer appended meanwhile: the one under the lock, if no other) then syncs the database
    file, and a sync takes about 10 µs for each page written since the last. So each pass beside
    the writers is followed by a sync of the file, beside them too, and they go on, each copying
    what was written during the one before, until one finds fewer than ``CHECKPOINT_LOCKED_FRAMES``
    new frames; only then is the lock taken, for the few frames written meanwhile and their sync.
    (One unlocked pass then a locked one held every upload for ~50 ms each second under
    scripts/bench_upload.py's living load: the locked pass synced all that the first had copied.)
    """
    try:
        reached = _checkpoint_pass(db)
        _sync(db)
        for _ in range(CHECKPOINT_PASSES - 1):
            before, reached = reached, _checkpoint_pass(db)
            _sync(db)
            if reached - before < CHECKPOINT_LOCKED_FRAMES:  # (or the WAL started again: fewer frames)
                break
        with file_lock(db):
            last = _checkpoint_pass(db)
        return last - reached if last >= reached else last  # (a WAL started again holds only new frames)
    except sqlite3.OperationalError:
        return 0  # another connection is checkpointing right now; the next one will catch up


def _sync(db: Store) -> None:
    """Write the database file's pages to the disk, as SQLite's own sync of it would (none with
    ``synchronous = OFF``)."""
    if db.file_path is None or not db.conn.execute("PRAGMA synchronous").fetchone()[0]:
        return
    os.fsync(_sync_handle(db.file_path))


_sync_handles: dict[str, tuple[int, int]] = {}  # database file -> (its inode, a descriptor of it)


def _sync_handle(path: str) -> int:
    """A descriptor of the database file that stays open as long as this process runs. Closing ANY
    descriptor of a file drops every POSIX lock the process holds on it, SQLite's included
    (https://sqlite.org/howtocorrupt.html, section 2.2): the shared lock that tells another
    process's last connection not to checkpoint and delete the WAL this one still uses. A file
    replaced since (a restore) gets a descriptor of its own; the old one stays open too."""
    inode = os.stat(path).st_ino
    with _shared_lock:
        known = _sync_handles.get(path)
        if known is None or known[0] != inode:
            known = _sync_handles[path] = (inode, os.open(path, os.O_RDONLY))
        return known[1]


def _checkpoint_pass(db: Store) -> int:
    """One PASSIVE checkpoint (it waits for nobody); the WAL's frames when it started."""
    return db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]


@contextlib.contextmanager
def read(db: Store) -> Iterator[Store]:
    """A consistent snapshot for several reads (a deferred transaction)."""
    db.conn.execute("BEGIN")
    try:
        yield db
    finally:
        db.conn.execute("COMMIT")


@contextlib.contextmanager
def page_cache(db: Store, kib: int) -> Iterator[None]:
    """Let SQLite keep up to ``kib`` KiB of pages in memory on this connection for the block (a
    rebuild rewrites a whole rumble's pairings and then probes them: with the default 2 MB cache
    most of its time went to reading back pages it had just written), then the size it had."""
    before = db.conn.execute("PRAGMA cache_size").fetchone()[0]
    db.conn.execute(f"PRAGMA cache_size = {-int(kib)}")
    try:
        yield
    finally:
        db.conn.execute(f"PRAGMA cache_size = {int(before)}")
