"""Child processes of ``rumble serve`` kept running: started again whenever one ends, or hangs.

``rumble serve`` keeps two: the writer process (rumble.server.single_writer) and the batch schedule
(``rumble schedule``). Without them uploads would go slower, and the alternative rankings,
standings and export snapshots would silently stop, so a thread of the process that started one
watches it and starts it again, logging how it ended.

A child is watched through a pidfd, readable once the process has ended, not its pid: gunicorn's
arbiter collects every child that ends, ours included, after which the pid may name another's
process. A child given a heartbeat (``beats``, a count it moves while it makes progress) whose count
stood still for ``hung_seconds`` (``startup_seconds`` before its first beat) is hung: it is killed
with SIGKILL (a stopped process ends only so) and replaced as if it had ended.

The next is started at once; when ends come one after another within STEADY_SECONDS of each start,
after a wait that doubles from a second up to RESTART_DELAY_MAX_SECONDS, so that a process that
cannot start does not spin.
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

CHECK_SECONDS = 0.5  # how often the watching thread looks at the heartbeat, and whether it is to stop
STEADY_SECONDS = 10.0  # a process that ends sooner than this after its start counts as one that failed to start
RESTART_DELAY_MAX_SECONDS = 60.0  # the longest wait after failed starts one after another
STOP_WAIT_SECONDS = 10.0  # how long ``stop`` waits for the process to end after SIGTERM, then after SIGKILL


def _ended(pidfd: int, wait_seconds: float) -> str:
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


class KeptProcess:
    """The process whose pid ``start()`` returns, started at once and again after each end until ``stop``."""

    def __init__(
        self,
        name: str,
        start: Callable[[], int],
        beats: Callable[[], int] | None = None,
        hung_seconds: float = 3.0,
        startup_seconds: float = 60.0,
    ) -> None:
        self.name, self._start, self._beats = name, start, beats
        self.hung_seconds, self.startup_seconds = hung_seconds, startup_seconds
        self.owner = os.getpid()
        self._stopping = threading.Event()
        self.pid, self._pidfd, self._started = self._begin()
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
        quick = 0  # ends one after another, each within STEADY_SECONDS of its start
        while not self._stopping.is_set():
            silent = self._wait_for_end_or_hang()
            if silent is None:
                return  # stopping
            now = time.monotonic()
            if silent > 0:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)  # type: ignore[arg-type]
                how = _ended(self._pidfd, STOP_WAIT_SECONDS)  # type: ignore[arg-type]
                log.error(
                    "the %s process %d is hung (no heartbeat for %.1f s): killed it (%s)",
                    self.name,
                    self.pid,
                    silent,
                    how,
                )
            else:
                how = "its end not seen" if self._pidfd is None else _ended(self._pidfd, 0)
            self._pidfd = None
            quick = quick + 1 if silent == 0 and now - self._started < STEADY_SECONDS else 0
            delay = 0.0 if quick <= 1 else min(2.0 ** (quick - 2), RESTART_DELAY_MAX_SECONDS)
            log.error("the %s process %d ended (%s); another starts in %g s", self.name, self.pid, how, delay)
            old = self.pid
            while not self._stopping.wait(delay):
                try:
                    self.pid, self._pidfd, self._started = self._begin()
                except Exception:  # e.g. out of processes or memory for now
                    delay = min(max(2 * delay, 1.0), RESTART_DELAY_MAX_SECONDS)
                    log.exception("the %s process could not be started; trying again in %g s", self.name, delay)
                    continue
                log.warning("started %s process %d in place of %d", self.name, self.pid, old)
                break

    def _wait_for_end_or_hang(self) -> float | None:
        """Wait until the process ends (0.0) or hangs (the seconds its heartbeat stood still); None once stopping."""
        first = seen = self._beats() if self._beats else 0  # (the count at its start, and when last seen to move)
        moved = looked = time.monotonic()
        while not self._stopping.is_set():
            if self._pidfd is None or select.select([self._pidfd], [], [], CHECK_SECONDS)[0]:
                return None if self._stopping.is_set() else 0.0
            if self._beats is None:
                continue
            now = time.monotonic()
            # A look much later than due (this process got no CPU, or the machine was suspended) says
            # nothing against the child, which may not have had the CPU to beat either.
            if self._beats() != seen or now - looked > CHECK_SECONDS + self.hung_seconds / 2:
                seen, moved = self._beats(), now
            looked = now
            limit = (
                self.hung_seconds if seen != first else self.startup_seconds
            )  # its first beat comes after its imports
            if now - moved > limit:
                return now - moved
        return None

    def stop(self) -> None:
        """End the process (SIGTERM, then SIGKILL after STOP_WAIT_SECONDS: a stopped process leaves
        SIGTERM pending) and start no other; in the process that started it only: a gunicorn
        worker, forked from it, leaves through the same code, and must neither signal the process
        nor wait for it."""
        if os.getpid() != self.owner:
            return
        self._stopping.set()
        self._thread.join()  # within CHECK_SECONDS, or the current wait between starts
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGTERM)
            if not select.select([self._pidfd], [], [], STOP_WAIT_SECONDS)[0]:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            _ended(self._pidfd, STOP_WAIT_SECONDS)
            self._pidfd = None
