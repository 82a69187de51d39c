"""Counting uploads: each answer's outcome and server time, kept in the worker's memory and added to
the database (rumble.store.upload_stats) at most every FLUSH_SECONDS, after an answer has gone out.

``recorded`` wraps the upload view: it reads the outcome from the answer the view made (the
protocol's own words, rumble.protocol.replies), so the upload path itself is unchanged.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections import defaultdict
from datetime import datetime, timezone

from rumble import store
from rumble.store import upload_stats

log = logging.getLogger(__name__)
FLUSH_SECONDS = 30.0
MAX_ERRORS = 50  # reasons kept in memory between flushes
_GAME = re.compile(r"(?:received for ([^\s,]+)|for ([^\s,]+) was already received)")


class Counts:
    """One database's uncounted uploads in this worker: (day, game, outcome) -> [uploads, total ms, max ms]."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self.errors: list[tuple[str, str, str]] = []
        self.last_flush = time.monotonic()

    def record(self, kind: str, game: str, reason: str, elapsed_ms: float) -> None:
        """Count one upload in memory."""
        now = datetime.now(timezone.utc)
        with self.lock:
            entry = self.counts[(now.strftime("%Y-%m-%d"), game, kind)]
            entry[0] += 1
            entry[1] += elapsed_ms
            entry[2] = max(entry[2], elapsed_ms)
            if reason and len(self.errors) < MAX_ERRORS:
                self.errors.append((store.format_time(now), kind, reason[:300]))

    def flush(self, db: store.Store, force: bool = False) -> bool:
        """Add the counts to ``db`` if FLUSH_SECONDS have passed since the last time (or ``force``)."""
        with self.lock:
            if not (force or time.monotonic() - self.last_flush >= FLUSH_SECONDS) or not (self.counts or self.errors):
                return False
            counts, errors = dict(self.counts), list(self.errors)
            self.counts.clear()
            self.errors.clear()
            self.last_flush = time.monotonic()
        with store.write(db):
            upload_stats.add_counts(db, counts, errors)
        return True


_by_database: dict[str, Counts] = defaultdict(Counts)  # keyed by the database path: tests run many apps in one process


def counts_for(path: str) -> Counts:
    return _by_database[str(path)]


def outcome(text: str) -> tuple[str, str, str]:
    """(outcome, game, reason) of an upload answer: refused answers carry ``OK. ERROR: reason``."""
    if "OK. ERROR: " in text:
        return "refused", "", text.split("OK. ERROR: ", 1)[1].strip()
    match = _GAME.search(text)
    game = (match.group(1) or match.group(2)) if match else ""
    return ("duplicate" if "already received" in text else "accepted"), game, ""


def _flush_quietly(counts: Counts, db: store.Store) -> None:
    """Flush after the answer: a failure (the database busy past its timeout) loses these counts, never an upload."""
    try:
        counts.flush(db)
    except Exception:
        log.exception("could not save the upload counts")


def recorded(view):
    """Wrap the upload view: time it, count its outcome, flush when due once the answer is sent."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        from flask import current_app

        from rumble.web import get_db

        counts = counts_for(current_app.config["RUMBLE"]["DB"])
        started = time.perf_counter()
        try:
            response = view(*args, **kwargs)
        except Exception as error:
            # The exception's class only: its message may hold paths or data not for a public page
            # (the server's log has the whole traceback).
            counts.record("error", "", f"server error ({type(error).__name__})", (time.perf_counter() - started) * 1000)
            raise
        kind, game, reason = outcome(response.get_data(as_text=True))
        counts.record(kind, game, reason, (time.perf_counter() - started) * 1000)
        db = get_db()
        response.call_on_close(lambda: _flush_quietly(counts, db))
        return response

    return wrapper
