"""How ``rumble serve`` faces slow, silent and never-reading clients: gunicorn's own gevent worker
(its documented way to serve clients straight from the internet, beside a buffering proxy, which
the README documents), and WSGI middleware for what that worker leaves unbounded.

Each connection is a greenlet: a client that trickles its request, stays silent or never reads
holds a greenlet and a file, never a thread. What bounds each wait:

- the request's headers: gunicorn's ``keepalive``, which its async workers apply to the wait for
  every request's headers; ``rumble serve`` sets it to READ_TIMEOUT_SECONDS;
- the body (``TimedInput``): every read of ``wsgi.input`` must be done READ_TIMEOUT_SECONDS after
  the headers came, else it fails with ``TimeoutError``, which the app answers as an unreadable
  body (rumble.web.body);
- the answer (``TimedAnswer``): each block of it must be taken within SEND_TIMEOUT_SECONDS, else
  the connection is closed.

A worker runs its greenlets in one thread, and what the app computes does not yield: a page that
takes a second would hold up every upload of the worker for that second. So page, API, plot and
export GETs are served in a thread of gevent's pool (``PagesInThreads``), for which the greenlet
waits without holding the worker. ``Paced`` bounds the rate of requests that change nothing for
the honest (refused removals). The app itself never imports gevent.
"""

from __future__ import annotations

import errno
import io
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import gevent
from gevent.lock import BoundedSemaphore
from gevent.threadpool import ThreadPool

log = logging.getLogger(__name__)

SEND_BLOCK_BYTES = 65536  # an answer goes out in blocks of at most this size, each against SEND_TIMEOUT_SECONDS
WHOLE_ANSWER_BYTES = 1 << 20  # a page's answer is made whole in its thread up to this size (an export is larger)


class Deadlines:
    """The WSGI middleware: ``wsgi.input`` read against a deadline, the answer sent against a timeout."""

    def __init__(self, app: Callable, read_seconds: float, send_seconds: float) -> None:
        if read_seconds <= 0 or send_seconds <= 0:
            raise ValueError("READ_TIMEOUT_SECONDS and SEND_TIMEOUT_SECONDS must be positive")
        self.app, self.read_seconds, self.send_seconds = app, read_seconds, send_seconds

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("wsgi.input") is not None:
            environ["wsgi.input"] = TimedInput(environ["wsgi.input"], self.read_seconds)
        return TimedAnswer(self.app(environ, start_response), self.send_seconds, environ.get("REMOTE_ADDR"))


class PagesInThreads:
    """Serves the GET and HEAD requests ``in_thread(path)`` picks in a pool of ``threads`` threads,
    their answers made whole there up to WHOLE_ANSWER_BYTES (an export's file beyond that is read
    as it is sent). Other methods stay in their greenlet: they are short writes, and some start
    processes, which gevent allows only from the worker's own thread. A GET's body, which means
    nothing, is not passed on: the pool's threads never touch the connection."""

    def __init__(self, app: Callable, threads: int, in_thread: Callable[[str], bool]) -> None:
        self.app, self.in_thread = app, in_thread
        self.pool = ThreadPool(threads)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD") or not self.in_thread(environ.get("PATH_INFO", "")):
            return self.app(environ, start_response)
        environ["wsgi.input"] = io.BytesIO()
        environ["CONTENT_LENGTH"] = "0"
        return self.pool.apply(_whole_answer, (self.app, environ, start_response))


def _whole_answer(app: Callable, environ: dict, start_response: Callable) -> Iterable[bytes]:
    """In a pool thread: the app's answer, made whole up to WHOLE_ANSWER_BYTES; the rest (an
    export's file) is read in the greenlet as it is sent."""
    result: Iterable[bytes] = app(environ, start_response)
    items = iter(result)
    head: list[bytes] = []
    size = 0
    try:
        for item in items:
            head.append(item)
            size += len(item)
            if size > WHOLE_ANSWER_BYTES:
                return _Rest(head, items, result)
    except BaseException:
        _close(result)
        raise
    _close(result)
    return [b"".join(head)]


class _Rest:
    """An answer's first blocks, then the rest of its iterator; ``close`` closes the answer."""

    def __init__(self, head: list[bytes], rest: Iterator[bytes], result: Iterable[bytes]) -> None:
        self._head, self._rest, self._result = head, rest, result

    def __iter__(self) -> Iterator[bytes]:
        yield from self._head
        yield from self._rest

    def close(self) -> None:
        _close(self._result)


def _close(result: Iterable[bytes]) -> None:
    """Close a WSGI answer, as PEP 3333 asks of whoever iterates it, if it can be closed."""
    close = getattr(result, "close", None)
    if close is not None:
        close()


class TimedInput:
    """``wsgi.input`` whose reads must all be done ``seconds`` after it was made."""

    def __init__(self, stream: Any, seconds: float) -> None:
        self._stream, self._seconds = stream, seconds
        self._deadline = time.monotonic() + seconds

    def _timed(self, read: Callable, *args: Any) -> Any:
        error = TimeoutError(f"the request body did not arrive within {self._seconds:g} s")
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise error
        with gevent.Timeout(left, error):
            return read(*args)

    def read(self, *args: Any) -> bytes:
        return self._timed(self._stream.read, *args)

    def readline(self, *args: Any) -> bytes:
        return self._timed(self._stream.readline, *args)

    def readlines(self, *args: Any) -> list[bytes]:
        return self._timed(self._stream.readlines, *args)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


class TimedAnswer:
    """The app's answer, handed to gunicorn one block at a time, with a ``gevent.Timeout`` of
    ``seconds`` armed while gunicorn writes each block, and ends the answer after the last. If it
    fires, the write fails with EPIPE, which gunicorn takes as a client gone: it closes the connection."""

    def __init__(self, result: Iterable[bytes], seconds: float, client: str | None) -> None:
        self._result, self._seconds, self._client = result, seconds, client
        self._items: Iterator[bytes] | None = None
        self._item, self._sent = b"", 0  # the app's current block, and how much of it is handed over
        self._timer: gevent.Timeout | None = None

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        self._disarm()
        if self._sent >= len(self._item):
            if self._items is None:
                self._items = iter(self._result)
            try:
                self._item, self._sent = bytes(next(self._items)), 0
            except StopIteration:
                self._arm()  # gunicorn ends the answer (a chunked one's last chunk) before it calls close
                raise
        # Each block copied once (slicing what is left each time would copy a page many times over).
        block = self._item[self._sent : self._sent + SEND_BLOCK_BYTES]
        self._sent += len(block)
        self._arm()
        return block

    def _arm(self) -> None:
        error = BrokenPipeError(errno.EPIPE, f"the client took none of its answer for {self._seconds:g} s")
        self._timer = gevent.Timeout.start_new(self._seconds, error)

    def _disarm(self) -> bool:
        """Cancel the armed timer; whether it had fired."""
        timer, self._timer = self._timer, None
        if timer is None:
            return False
        fired = not timer.pending
        timer.close()
        return fired

    def close(self) -> None:
        if self._disarm():
            log.info("closed a connection from %s that took none of its answer for %g s", self._client, self._seconds)
        _close(self._result)


class Paced:
    """Serves the requests to ``paths`` at most ``slots`` at a time per worker, each holding its slot
    for at least ``seconds`` (at most ``slots / seconds`` a second per worker). Up to ``waiting``
    more wait for a slot; beyond that one is answered ``busy`` at once (200, text/plain: the
    client's own form of a refusal), so that a flood cannot take the worker's connections."""

    def __init__(
        self, app: Callable, paths: frozenset[str], slots: int, seconds: float, waiting: int, busy: str
    ) -> None:
        self.app, self.paths, self.seconds, self.waiting = app, paths, seconds, waiting
        self.busy = busy.encode()
        self.slots = BoundedSemaphore(slots)
        self.queued = 0

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") not in self.paths:
            return self.app(environ, start_response)
        if self.queued >= self.waiting:
            start_response(
                "200 OK", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(self.busy)))]
            )
            return [self.busy]
        self.queued += 1
        try:
            self.slots.acquire()
        finally:
            self.queued -= 1
        began = time.monotonic()
        try:
            result = self.app(environ, start_response)
            try:
                return [b"".join(result)]  # a line or two of text
            finally:
                _close(result)
        finally:
            gevent.sleep(max(0.0, began + self.seconds - time.monotonic()))
            self.slots.release()
