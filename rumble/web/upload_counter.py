"""Counting uploads: each answer's outcome and server time, kept in the worker's memory and added to
the database (rumble.store.upload_stats) at most every FLUSH_SECONDS, after an answer has gone out.

The upload endpoint (``rumble.web.client.UploadFront``) counts the outcome it decided
(``rumble.protocol.replies.UploadOutcome``), or a server error when it raised, and sends it with the
``upload_decided`` signal (the app is the sender) to whoever listens.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from datetime import datetime

from blinker import Namespace

from rumble import store
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.store import upload_stats

FLUSH_SECONDS = 30.0
MAX_ERRORS = 50  # reasons kept in memory between flushes
upload_decided = Namespace().signal("upload-decided")  # sent with outcome=UploadOutcome after each upload


class Counts:
    """One database's uncounted uploads in this worker: (day, game, outcome) -> [uploads, total ms, max ms]."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self.errors: list[tuple[str, str, str]] = []
        self.last_flush = time.monotonic()

    def record(self, outcome: UploadOutcome, elapsed_ms: float, now: datetime) -> None:
        """Count one upload in memory."""
        kind, game, reason = outcome.kind.value, outcome.game, outcome.reason
        with self.lock:
            entry = self.counts[(now.strftime("%Y-%m-%d"), game, kind)]
            entry[0] += 1
            entry[1] += elapsed_ms
            entry[2] = max(entry[2], elapsed_ms)
            if outcome.kind in (Kind.REFUSED, Kind.ERROR) and len(self.errors) < MAX_ERRORS:
                self.errors.append((store.format_time(now), kind, reason[:300]))

    def due(self) -> bool:
        """Whether ``flush`` would add counts now."""
        return time.monotonic() - self.last_flush >= FLUSH_SECONDS and bool(self.counts or self.errors)

    def take(self, force: bool = False) -> tuple[dict, list] | None:
        """The counts and errors to add, emptied here, if FLUSH_SECONDS have passed since the last
        time (or ``force``); None otherwise. The caller adds them (``upload_stats.add_counts``)."""
        with self.lock:
            if not (force or time.monotonic() - self.last_flush >= FLUSH_SECONDS) or not (self.counts or self.errors):
                return None
            counts, errors = dict(self.counts), list(self.errors)
            self.counts.clear()
            self.errors.clear()
            self.last_flush = time.monotonic()
        return counts, errors

    def flush(self, db: store.Store, force: bool = False) -> bool:
        """Add the counts to ``db`` if FLUSH_SECONDS have passed since the last time (or ``force``)."""
        taken = self.take(force)
        if taken is None:
            return False
        with store.write(db):
            upload_stats.add_counts(db, *taken)
        return True


_by_database: dict[str, Counts] = defaultdict(Counts)  # keyed by the database path: tests run many apps in one process


def counts_for(path: str) -> Counts:
    return _by_database[str(path)]
