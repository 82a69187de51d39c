"""A child process of ``rumble serve`` that is started again whenever it ends while the server runs.

``rumble serve`` runs the batch schedule (``rumble schedule``) in a process of its own. Should that
process end (a crash, the kernel's out-of-memory killer, a ``kill`` by mistake), the ladder's
alternative rankings, standings, holds and export snapshots would silently stop while uploads
go on. ``KeptProcess`` watches it from a thread of the process that started it and starts it
again: after a second, or, when it keeps ending soon after its start, after a wait that doubles up
to RESTART_DELAY_MAX_SECONDS, so a process that cannot start does not spin. Each end is logged with
its exit status.

gunicorn's master reaps every child it gets a SIGCHLD for, this one included; ``Popen.wait`` then
finds no child to wait for and reports it as ended (exit status 0), which is what counts here.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

FIRST_DELAY_SECONDS = 1.0  # the wait before a process that ran steadily is started again
STEADY_SECONDS = 10.0  # one that ends sooner than this after its start counts as one that failed to start
RESTART_DELAY_MAX_SECONDS = 60.0  # the longest wait after failed starts one after another
STOP_WAIT_SECONDS = 10.0  # how long ``stop`` waits for the process to end after SIGTERM, then SIGKILL


class KeptProcess:
    """``start()``'s process, started at once and again after each end until ``stop``."""

    def __init__(self, name: str, start: Callable[[], subprocess.Popen]) -> None:
        self.name, self._start = name, start
        self.owner = os.getpid()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._process, self._started = start(), time.monotonic()
        self._thread = threading.Thread(target=self._watch, name=f"rumble-{name}-keeper", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        delay = FIRST_DELAY_SECONDS
        while True:
            status = self._process.wait()
            if self._stopping.is_set():
                return
            steady = time.monotonic() - self._started >= STEADY_SECONDS
            delay = FIRST_DELAY_SECONDS if steady else min(2 * delay, RESTART_DELAY_MAX_SECONDS)
            log.error(
                "the %s process %d ended (exit status %s); another starts in %g s",
                self.name,
                self._process.pid,
                status,
                delay,
            )
            if not self._restart(delay):
                return

    def _restart(self, delay: float) -> bool:
        """Start the next process after ``delay`` (while it cannot be started, again after longer
        waits); False if ``stop`` came first."""
        while not self._stopping.wait(delay):
            with self._lock:
                if self._stopping.is_set():
                    return False
                try:
                    self._process, self._started = self._start(), time.monotonic()
                except OSError:  # e.g. out of processes or memory for now
                    delay = min(2 * delay, RESTART_DELAY_MAX_SECONDS)
                    log.exception("the %s process could not be started; trying again in %g s", self.name, delay)
                    continue
                return True
        return False

    def stop(self) -> None:
        """End the process (SIGTERM, then SIGKILL after STOP_WAIT_SECONDS) and start no other; in
        the process that started it only: a gunicorn worker, forked from it, leaves through the
        same code, and must neither signal the process nor wait for a child that is not its own."""
        if os.getpid() != self.owner:
            return
        with self._lock:
            self._stopping.set()
            process = self._process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._thread.join(STOP_WAIT_SECONDS)
