"""Child processes of ``rumble serve`` seen through pidfds, and one started again whenever it ends.

``rumble serve`` runs the batch schedule (``rumble schedule``) in a process of its own. Should that
process end (a crash, the kernel's out-of-memory killer, a ``kill`` by mistake), the ladder's
alternative rankings, standings, holds and export snapshots would silently stop while uploads
go on. ``KeptProcess`` watches it from a thread of the process that started it and starts it
again: after a second, or, when it keeps ending soon after its start, after a wait that doubles up
to RESTART_DELAY_MAX_SECONDS, so a process that cannot start does not spin. Each end is logged with
how it ended.

A child is watched through a pidfd (readable once it has ended), not its pid: gunicorn's arbiter
collects every child that ends, ours included, after which the pid names no process of ours and
may be another's. ``ended`` and ``end`` are shared with the writer's supervisor
(rumble.server.single_writer).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

CHECK_SECONDS = 0.5  # how often the watching thread looks whether it is to stop
FIRST_DELAY_SECONDS = 1.0  # the wait before a process that ran steadily is started again
STEADY_SECONDS = 10.0  # one that ends sooner than this after its start counts as one that failed to start
RESTART_DELAY_MAX_SECONDS = 60.0  # the longest wait after failed starts one after another
STOP_WAIT_SECONDS = 10.0  # how long ``end`` waits for the process to end after SIGTERM, then after SIGKILL


def ended(pidfd: int, wait_seconds: float) -> str:
    """Wait (``wait_seconds`` at most) for the process of ``pidfd`` to end, collect it, close the
    pidfd; say how it ended."""
    how = "its end not seen"
    if select.select([pidfd], [], [], wait_seconds)[0]:
        how = "its status collected by gunicorn"  # gunicorn's arbiter collects every child that ends, maybe first
        with contextlib.suppress(ChildProcessError):
            status = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG)
            if status is not None and status.si_code == os.CLD_EXITED:
                how = f"exit status {status.si_status}"
            elif status is not None:
                how = f"signal {status.si_status}: {signal.strsignal(status.si_status)}"
    os.close(pidfd)
    return how


def end(pidfd: int) -> str:
    """End the process of ``pidfd``: SIGTERM, then SIGKILL after STOP_WAIT_SECONDS (a stopped
    process, SIGSTOP, leaves SIGTERM pending); collect it and close the pidfd; say how it ended."""
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(pidfd, signal.SIGTERM)
    if not select.select([pidfd], [], [], STOP_WAIT_SECONDS)[0]:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    return ended(pidfd, STOP_WAIT_SECONDS)


class KeptProcess:
    """The process whose pid ``start()`` returns, started at once and again after each end until ``stop``."""

    def __init__(self, name: str, start: Callable[[], int]) -> None:
        self.name, self._start = name, start
        self.owner = os.getpid()
        self._stopping = threading.Event()
        self._pid, self._pidfd, self._started = self._begin()
        self._thread = threading.Thread(target=self._watch, name=f"rumble-{name}-keeper", daemon=True)
        self._thread.start()

    def _begin(self) -> tuple[int, int | None, float]:
        pid = self._start()
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # ended and collected already: the watching thread starts the next
            pidfd = None
        return pid, pidfd, time.monotonic()

    def _watch(self) -> None:
        delay = FIRST_DELAY_SECONDS
        while not self._stopping.is_set():
            if self._pidfd is not None and not select.select([self._pidfd], [], [], CHECK_SECONDS)[0]:
                continue
            if self._stopping.is_set():
                return
            how = "its end not seen" if self._pidfd is None else ended(self._pidfd, 0)
            self._pidfd = None
            steady = time.monotonic() - self._started >= STEADY_SECONDS
            delay = FIRST_DELAY_SECONDS if steady else min(2 * delay, RESTART_DELAY_MAX_SECONDS)
            log.error("the %s process %d ended (%s); another starts in %g s", self.name, self._pid, how, delay)
            while not self._stopping.wait(delay):
                try:
                    self._pid, self._pidfd, self._started = self._begin()
                    break
                except OSError:  # e.g. out of processes or memory for now
                    delay = min(2 * delay, RESTART_DELAY_MAX_SECONDS)
                    log.exception("the %s process could not be started; trying again in %g s", self.name, delay)

    def stop(self) -> None:
        """End the process (``end``) and start no other; in the process that started it only: a
        gunicorn worker, forked from it, leaves through the same code, and must neither signal the
        process nor wait for it."""
        if os.getpid() != self.owner:
            return
        self._stopping.set()
        self._thread.join()  # within CHECK_SECONDS, or the current wait between starts
        if self._pidfd is not None:
            end(self._pidfd)
            self._pidfd = None
