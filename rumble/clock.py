"""The server's clock: every "now" the app compares or stamps comes from here.

The app reads its clock from its settings (``CLOCK``), so a test sets one and derives every time
it sends from it, instead of writing a date that a wall-clock policy (an upload's age, a
session's expiry) will refuse some day. A server uses the system clock; a test may move its
clock forward (``advance``) to reach a timeout without waiting for it.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class Clock:
    """The system's UTC time, moved forward by an offset that only ``advance`` changes."""

    def __init__(self) -> None:
        self._offset = timedelta(0)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        return datetime.now(UTC) + self._offset

    def now_ms(self) -> int:
        """The current time in milliseconds since the epoch (the unit of a battle's ``time``)."""
        return int(self.now().timestamp() * 1000)

    def advance(self, **delta: float) -> None:
        """Move the clock forward, e.g. ``advance(minutes=6)``."""
        step = timedelta(**delta)
        if step < timedelta(0):
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._offset += step

    def __getstate__(self) -> dict:  # a copy (for another process: rumble.server.single_writer) keeps the offset
        return {"_offset": self._offset}

    def __setstate__(self, state: dict) -> None:
        self._offset = state["_offset"]
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Clock(offset={self._offset})"
