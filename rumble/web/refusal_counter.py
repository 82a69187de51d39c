"""Counting refused RemoveOldParticipant requests: in the worker's memory, added to the database
(rumble.store.trust.add_refusals) at most every FLUSH_SECONDS, outside the request.

A refusal is decided before any write lock and writes nothing itself: a flood of refused requests,
from any number of addresses, costs each worker one small write every FLUSH_SECONDS, not a row and
a write transaction each.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from datetime import datetime

from rumble import store
from rumble.store import trust

FLUSH_SECONDS = 30.0
MAX_KEYS = 1_000  # (day, game, reason) keys kept between flushes: a game is the client's text, bounded here


class RefusalCounts:
    """One database's uncounted refusals in this worker: (day, game, reason) -> requests."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str, str], int] = defaultdict(int)
        self.last_flush = time.monotonic()

    def record(self, game: str, reason: str, now: datetime) -> None:
        key = (now.strftime("%Y-%m-%d"), game[:100], reason)
        with self.lock:
            if key not in self.counts and len(self.counts) >= MAX_KEYS:
                key = (key[0], "(other)", reason)
            self.counts[key] += 1

    def due(self) -> bool:
        return bool(self.counts) and time.monotonic() - self.last_flush >= FLUSH_SECONDS

    def take(self, force: bool = False) -> dict | None:
        """The counts to add, emptied here, when FLUSH_SECONDS have passed since the last time (or
        ``force``); None otherwise. The caller adds them (``trust.add_refusals``)."""
        with self.lock:
            if not self.counts or not (force or time.monotonic() - self.last_flush >= FLUSH_SECONDS):
                return None
            counts = dict(self.counts)
            self.counts.clear()
            self.last_flush = time.monotonic()
        return counts

    def flush(self, db: store.Store, force: bool = False) -> bool:
        """Add the counts to ``db`` when FLUSH_SECONDS have passed since the last time (or ``force``)."""
        counts = self.take(force)
        if counts is None:
            return False
        with store.write(db):
            trust.add_refusals(db, counts)
        return True


_by_database: dict[str, RefusalCounts] = defaultdict(RefusalCounts)


def refusals_for(path: str) -> RefusalCounts:
    return _by_database[str(path)]
