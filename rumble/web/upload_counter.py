"""Counting uploads: each answer's outcome and server time (summed, and in the buckets of an
answer-time histogram), and the page requests answered busy (rumble.web.capacity), kept in the
worker's memory and added to the database (rumble.store.upload_stats) at most every FLUSH_SECONDS,
after an answer has gone out, and on a timer and as the worker stops under ``rumble serve``.

The upload endpoint (``rumble.web.client.UploadFront``) counts the outcome it decided
(``rumble.protocol.replies.UploadOutcome``), or a server error when it raised, and sends it with the
``upload_decided`` signal (the app is the sender) to whoever listens.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from blinker import Namespace

from rumble import store
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.store import upload_stats

FLUSH_SECONDS = 30.0
MAX_ERRORS = 50  # reasons kept in memory between flushes
BUCKETS = upload_stats.ANSWER_BUCKETS_MS
upload_decided = Namespace().signal("upload-decided")  # sent with outcome=UploadOutcome after each upload


class Taken(NamedTuple):
    """What a worker adds to the database at once (``upload_stats.add_counts``'s arguments)."""

    counts: dict[tuple[str, str, str], list[float]]
    errors: list[tuple[str, str, str]]
    times: dict[tuple[str, str, str, float], list[float]]
    busy: dict[tuple[str, str], int]


class Counts:
    """One database's uncounted uploads in this worker: (day, game, outcome) -> [uploads, total ms,
    max ms]; their answer times, per bucket of ``upload_stats.ANSWER_BUCKETS_MS``; and the page and
    export requests answered busy (rumble.web.capacity), per day and request class."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self.times: dict[tuple[str, str, str, float], list[float]] = defaultdict(lambda: [0, 0.0])
        self.busy: dict[tuple[str, str], int] = defaultdict(int)
        self.errors: list[tuple[str, str, str]] = []
        self.last_flush = time.monotonic()

    def record(self, outcome: UploadOutcome, elapsed_ms: float, now: datetime) -> None:
        """Count one upload in memory."""
        kind, game, reason = outcome.kind.value, outcome.game, outcome.reason
        day = now.strftime("%Y-%m-%d")
        bound = BUCKETS[bisect.bisect_left(BUCKETS, elapsed_ms)]  # the first bound at or above it
        with self.lock:
            entry = self.counts[(day, game, kind)]
            entry[0] += 1
            entry[1] += elapsed_ms
            entry[2] = max(entry[2], elapsed_ms)
            bucket = self.times[(day, game, kind, bound)]
            bucket[0] += 1
            bucket[1] += elapsed_ms
            if outcome.kind in (Kind.REFUSED, Kind.ERROR) and len(self.errors) < MAX_ERRORS:
                self.errors.append((store.format_time(now), kind, reason[:300]))

    def record_busy(self, request_class: str, now: datetime) -> None:
        """Count one request answered 503 for want of a slot (``rumble.web.capacity.Capacity``'s ``on_busy``)."""
        with self.lock:
            self.busy[(now.strftime("%Y-%m-%d"), request_class)] += 1

    def due(self) -> bool:
        """Whether ``flush`` would add counts now."""
        return time.monotonic() - self.last_flush >= FLUSH_SECONDS and self._any()

    def _any(self) -> bool:
        return bool(self.counts or self.errors or self.busy)

    def take(self, force: bool = False) -> Taken | None:
        """The counts to add, emptied here, if FLUSH_SECONDS have passed since the last time (or
        ``force``); None otherwise. The caller adds them (``upload_stats.add_counts``)."""
        with self.lock:
            if not (force or time.monotonic() - self.last_flush >= FLUSH_SECONDS) or not self._any():
                return None
            taken = Taken(dict(self.counts), list(self.errors), dict(self.times), dict(self.busy))
            for kept in (self.counts, self.errors, self.times, self.busy):
                kept.clear()
            self.last_flush = time.monotonic()
        return taken

    def flush(self, db: store.Store, force: bool = False) -> bool:
        """Add the counts to ``db`` if FLUSH_SECONDS have passed since the last time (or ``force``)."""
        taken = self.take(force)
        if taken is None:
            return False
        with store.write(db):
            upload_stats.add_counts(db, **taken._asdict())
        return True


_by_database: dict[str, Counts] = defaultdict(Counts)  # keyed by the database path: tests run many apps in one process


def counts_for(path: str) -> Counts:
    return _by_database[str(path)]
