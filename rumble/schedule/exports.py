"""Bulk-export snapshots: one file per rumble and export, written when the rumble changed, then
served as a plain file (rumble.web.api sends it with ``flask.send_file``).

A snapshot is named after its ETag, a digest of what it was read from: the database file, the
export's name and the rumble's ``log_version`` (rumble.store.export) in the read transaction that
wrote it. A request reads that version (a few index lookups) and serves the newest snapshot if it
matches, or if it is younger than EXPORT_MAX_AGE_MINUTES.

Otherwise a new snapshot is written in a thread of the worker (a slow build holds no request), and
the request waits up to EXPORT_WAIT_SECONDS (WAIT_SECONDS by default) for it: a small rumble's export is ready by then; a large one's
request gets the previous snapshot, or, if there is none yet, None (the web layer answers 503 with
Retry-After). A request that finds every build slot taken by other exports does not wait.

Layout of EXPORT_DIR (default ``<the database's directory>/exports``)::

    <game>/<name>.<etag>      a snapshot (name: rankings.csv, ..., battles.json, rumble.sqlite)
    <game>/.<name>.lock       held (flock) while that snapshot is written: one build per rumble and export
    <game>/.<name>.*.tmp      a snapshot being written; renamed into place when complete (one left by a
                              build that died is removed by the next build of that export)
    .build-<i>.lock           EXPORT_BUILDS slots: at most that many builds at once, across all workers

The hourly run (rumble.schedule.hourly) rewrites the stale snapshots of the pairings, the battles and the
SQLite file that someone asked for before, so that few requests find theirs stale; the rankings,
small, are rewritten on request.

CSV cells: a string that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
written with a leading ``'`` (OWASP, "CSV Injection"), so that a spreadsheet shows it as text
instead of running it as a formula. Numbers are written as they are: a negative number is a
number, and every numeric column is computed by the server. JSON and SQLite keep values as stored.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rumble import store
from rumble.store import export

log = logging.getLogger(__name__)

TABLES = ("rankings", "pairings", "battles")
FORMATS = ("csv", "json")
SQLITE = "rumble.sqlite"
NAMES = (*(f"{table}.{fmt}" for table in TABLES for fmt in FORMATS), SQLITE)
REFRESHED_BY_JOB = ("pairings.csv", "pairings.json", "battles.csv", "battles.json", SQLITE)
FORMAT_VERSION = 2  # part of every ETag: raise it when what a snapshot holds changes (2: CSV cells escaped)
WAIT_SECONDS = 2.0  # how long a request waits for a snapshot being written (EXPORT_WAIT_SECONDS's default) before it takes the previous one (or a 503)
POLL_SECONDS = 0.02  # how often a waiting request looks for the snapshot being written
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list of characters a spreadsheet may run
STARTED, BUSY_EXPORT, BUSY_SLOTS, WRITTEN = "started", "busy export", "busy slots", "written"  # what start_build did
_ETAG = re.compile(r"[0-9a-f]{32}")
_GAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

# What writes a snapshot: given the temporary file's path, fill it and return the log_version it was read at.
Writer = Callable[[Path], tuple]


@dataclass(frozen=True)
class Snapshot:
    """One snapshot file: where it is, its ETag (unquoted) and when it was written (s since 1970)."""

    path: Path
    etag: str
    written: float
    size: int


def directory(settings: dict[str, Any]) -> Path:
    """EXPORT_DIR, or ``exports`` beside the database file."""
    return Path(settings["EXPORT_DIR"] or Path(settings["DB"]).resolve().parent / "exports")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell: a string a spreadsheet would take for a formula gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_lines(columns: list[str], rows: Iterable[Iterable]) -> Iterator[str]:
    """CSV text a few hundred rows at a time (csv quotes commas, quotes and newlines in names)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for n, row in enumerate(rows, start=1):
        writer.writerow([csv_cell(value) for value in row])
        if n % 500 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def json_lines(game: str, table: str, columns: list[str], rows: Iterable[Iterable]) -> Iterator[str]:
    """One JSON document, written a row at a time: {game, table, columns, rows: [{column: value}]}."""
    yield json.dumps({"game": game, "table": table, "columns": columns})[:-1] + ', "rows": ['
    for n, row in enumerate(rows):
        yield ("," if n else "") + "\n" + json.dumps(dict(zip(columns, row)))
    yield "\n]}\n"


def hour_of(moment: datetime) -> datetime:
    """The start of ``moment``'s UTC hour: a rankings snapshot serves the hour it was built in."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def with_clock(version: tuple, hour: datetime | None) -> tuple:
    """``version``, plus ``hour`` for an export that depends on the clock (the rankings: every
    deviation grows with its bot's inactivity)."""
    return (*version, hour.strftime("%Y-%m-%d %H")) if hour is not None else version


def table_writer(
    db_path: str,
    rumble_id: int,
    game: str,
    name: str,
    rankings: Callable[[Any, int], tuple[list[str], Iterable]] | None = None,
    hour: datetime | None = None,
) -> Writer:
    """The writer of ``name`` (``<table>.<fmt>`` or rumble.sqlite), reading one snapshot of the database.

    ``rankings(conn, rumble_id)`` gives the rankings' columns and rows (the web layer's table);
    pairings and battles come from rumble.store.export. ``hour``: see ``with_clock``.
    """
    if name == SQLITE:
        return lambda out: export.copy_rumble(db_path, rumble_id, out)[1]
    table, fmt = name.split(".")

    def write(out: Path) -> tuple:
        with export.snapshot(db_path) as conn:
            version = with_clock(export.log_version(conn, rumble_id), hour)
            if table == "rankings":
                if rankings is None:
                    raise ValueError("the rankings export needs the function that reads the table")
                columns, rows = rankings(conn, rumble_id)
            else:
                columns = list(export.PAIRING_COLUMNS if table == "pairings" else export.BATTLE_COLUMNS)
                rows = (export.pairing_rows if table == "pairings" else export.battle_rows)(conn, rumble_id)
            lines = csv_lines(columns, rows) if fmt == "csv" else json_lines(game, table, columns, rows)
            with open(out, "w", encoding="utf-8", newline="") as file:
                file.writelines(lines)
        return version

    return write


class Snapshots:
    """The snapshot files of one database under ``root``."""

    def __init__(self, db_path: str, root: Path, builds: int = 1, max_age_minutes: float = 5.0) -> None:
        self.db_path = str(Path(db_path).resolve())
        self.root = Path(root)
        self.builds = max(1, int(builds))
        self.max_age = float(max_age_minutes) * 60.0

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Snapshots:
        return cls(settings["DB"], directory(settings), settings["EXPORT_BUILDS"], settings["EXPORT_MAX_AGE_MINUTES"])

    def etag(self, name: str, version: tuple) -> str:
        """The ETag of ``name`` read at ``version`` of this database (32 hex digits, unquoted)."""
        key = json.dumps([FORMAT_VERSION, self.db_path, name, version], default=str)
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    def folder(self, game: str) -> Path:
        if not _GAME.fullmatch(game):
            raise ValueError(f"not a rumble name that can be a folder: {game!r}")
        return self.root / game

    def newest(self, game: str, name: str) -> Snapshot | None:
        """The newest complete snapshot of ``name``, or None."""
        found = []
        for path in self.folder(game).glob(f"{name}.*"):
            etag = path.name[len(name) + 1 :]
            if _ETAG.fullmatch(etag):
                with contextlib.suppress(FileNotFoundError):  # removed by a newer build meanwhile
                    stat = path.stat()
                    found.append(Snapshot(path, etag, stat.st_mtime, stat.st_size))
        return max(found, key=lambda s: (s.written, s.etag), default=None)

    def usable(self, snapshot: Snapshot | None, etag: str, now: float | None = None) -> bool:
        """True if ``snapshot`` may be served to a request that read ``etag``: it is that version,
        or it is younger than the maximum age."""
        if snapshot is None:
            return False
        now = time.time() if now is None else now
        return snapshot.etag == etag or now - snapshot.written < self.max_age

    def _take(self, game: str, name: str) -> tuple[str, list[IO]]:
        """Try to take the right to write ``name`` now, never waiting: its own lock, then one of the
        build slots. (STARTED, the held files) or (BUSY_EXPORT or BUSY_SLOTS, [])."""
        folder = self.folder(game)
        folder.mkdir(parents=True, exist_ok=True)
        own = store.try_lock(folder / f".{name}.lock")
        if own is None:
            return BUSY_EXPORT, []
        for slot in range(self.builds):
            if (held := store.try_lock(self.root / f".build-{slot}.lock")) is not None:
                return STARTED, [own, held]
        own.close()
        return BUSY_SLOTS, []

    @contextlib.contextmanager
    def build_lock(self, game: str, name: str) -> Iterator[bool]:
        """The right to write ``name`` now (see ``_take``) for the block: True if taken, False if not."""
        outcome, held = self._take(game, name)
        try:
            yield outcome == STARTED
        finally:
            for handle in held:
                handle.close()

    def start_build(
        self,
        game: str,
        name: str,
        writer: Writer,
        enough: Callable[[Snapshot], bool] | None = None,
        done: threading.Event | None = None,
    ) -> str:
        """Write a new snapshot of ``name`` in a thread of its own, if no other build of it runs and a
        slot is free: STARTED, BUSY_EXPORT or BUSY_SLOTS. The request that asked goes on meanwhile;
        ``done`` is set once the build has ended (the older files removed). WRITTEN if, once the right
        to write is taken, the newest snapshot is already ``enough``: a build that finished between
        the caller's look and now is not done twice."""
        outcome, held = self._take(game, name)
        if outcome != STARTED:
            return outcome
        if enough is not None and (latest := self.newest(game, name)) is not None and enough(latest):
            for handle in held:
                handle.close()
            return WRITTEN

        def build() -> None:
            try:
                self.write(game, name, writer)
            except Exception:  # the request falls back to the previous snapshot, or a 503
                log.exception("writing the %s snapshot of %s failed", name, game)
            finally:
                for handle in held:
                    handle.close()
                if done is not None:
                    done.set()

        threading.Thread(target=build, name=f"export {game}/{name}", daemon=True).start()
        return STARTED

    def write(self, game: str, name: str, writer: Writer) -> Snapshot:
        """Write a new snapshot of ``name`` through a temporary file renamed into place, then remove
        the older ones (call while holding ``build_lock``)."""
        folder = self.folder(game)
        handle, temporary_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        os.close(handle)
        temporary = Path(temporary_name)
        try:
            version = writer(temporary)
            with open(temporary, "rb+") as file:
                os.fsync(file.fileno())  # complete on disk before its name says so
            now = time.time()
            os.utime(temporary, (now, now))  # written by this process's clock, the one its age is measured with
            path = folder / f"{name}.{self.etag(name, version)}"
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self._remove_older(folder, name, path)
        stat = path.stat()
        return Snapshot(path, path.name[len(name) + 1 :], stat.st_mtime, stat.st_size)

    def _remove_older(self, folder: Path, name: str, keep: Path) -> None:
        """Remove ``name``'s other snapshots (a reader that opened one keeps reading it) and the
        temporary files left by builds that died: only the holder of the export's lock writes one,
        and that is the caller, whose own file is renamed by now."""
        for path in folder.glob(f"{name}.*"):
            if path != keep and _ETAG.fullmatch(path.name[len(name) + 1 :]):
                path.unlink(missing_ok=True)
        for path in folder.glob(f".{name}.*.tmp"):
            path.unlink(missing_ok=True)

    def obtain(self, game: str, name: str, etag: str, writer: Writer, wait: float | None = None) -> Snapshot | None:
        """The snapshot to serve to a request that read ``etag``.

        A usable one at once. Otherwise a new one is written in a thread (unless one is under way),
        and the request waits up to ``wait`` seconds (default WAIT_SECONDS) for it; then it gets
        the previous snapshot, or None if there is none. When every build slot is taken by other
        exports, it does not wait: the previous snapshot, or None.
        """
        asked, deadline = time.time(), time.monotonic() + (WAIT_SECONDS if wait is None else wait)
        previous = self.newest(game, name)
        if self.usable(previous, etag, asked):
            return previous

        def enough(snapshot: Snapshot) -> bool:
            return snapshot.etag == etag or snapshot.written >= asked

        done = threading.Event()
        outcome = self.start_build(game, name, writer, enough, done)
        if outcome == BUSY_SLOTS:
            return previous
        # This request's own build: wait for its end, not just its file, so that no older file is left.
        # Polled with sleep, not Event.wait(timeout), whose absolute deadline a shifted clock
        # (faketime, the suite's second pass) puts out of reach.
        while outcome == STARTED and not done.is_set() and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        while outcome == WRITTEN or time.monotonic() < deadline:
            snapshot = self.newest(game, name)
            if snapshot is not None and enough(snapshot):
                return snapshot
            outcome = ""
            time.sleep(POLL_SECONDS)
        return self.newest(game, name) or previous

    def refresh(self, game: str, name: str, etag: str, writer: Writer) -> Snapshot | None:
        """Rewrite ``name`` if it has a snapshot that is not ``etag`` and no one else is writing it;
        the new snapshot, or None if nothing was written."""
        snapshot = self.newest(game, name)
        if snapshot is None or snapshot.etag == etag:
            return None
        with self.build_lock(game, name) as ours:
            if ours and (latest := self.newest(game, name)) is not None and latest.etag != etag:
                return self.write(game, name, writer)
        return None

    def games(self) -> list[str]:
        """The rumbles that have a snapshot folder."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and _GAME.fullmatch(p.name))
