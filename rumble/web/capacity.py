"""Separate capacity per request class, so that pages and exports can never take what uploads need.

A WSGI middleware around the whole app sorts each request by its path:

- ``client``: the real client's endpoints (``/UploadedResults``, ``/RatingsFile``,
  ``/RemoveOldParticipant``): never limited here, never answered 503;
- ``export``: bulk exports (``/api/v1/rumbles/<game>/export/...``) and the SVG plots, the costly ones;
- ``page``: everything else (pages, the JSON API, static files, ``/admin``).

Per process (one gunicorn worker), at most ``pages`` page and export requests are served at once,
and of those at most ``exports`` exports; a request over either bound is answered at once with
503 and ``Retry-After``, without reaching the app. A slot is held until the response has been
sent in full (its iterable closed), so a streamed export keeps its slot while it streams. Under
``rumble serve`` these requests run in a pool of threads a few larger than PAGE_REQUESTS
(rumble/server/serving.py), so that the ones over the bound are answered 503 at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

from rumble.protocol import CLIENT_PATHS

RETRY_AFTER_SECONDS = 5


def request_class(path: str) -> str:
    """``client``, ``export`` or ``page``: which capacity a request of ``path`` takes."""
    if path in CLIENT_PATHS:
        return "client"
    if (path.startswith("/api/v1/rumbles/") and "/export/" in path) or path.endswith(".svg"):
        return "export"
    return "page"


class Capacity:
    """The middleware: bounded page and export slots in front of ``app``, the client endpoints free."""

    def __init__(
        self, app: Callable, pages: int, exports: int, on_busy: Callable[[str], None] = lambda kind: None
    ) -> None:
        if pages < 1 or exports < 1:
            raise ValueError(f"PAGE_REQUESTS and EXPORT_REQUESTS must be at least 1, not {pages} and {exports}")
        self.app = app
        self.on_busy = on_busy  # called with the request class of each request answered 503 (counted for /metrics)
        self.pages = threading.BoundedSemaphore(pages)
        self.exports = threading.BoundedSemaphore(min(exports, pages))
        self.limits = {"page": pages, "export": min(exports, pages)}

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        kind = request_class(environ.get("PATH_INFO", ""))
        if kind == "client":
            return self.app(environ, start_response)
        held = self._acquire(kind)
        if held is None:
            self.on_busy(kind)
            return _busy(start_response, kind, self.limits[kind])
        try:
            return _Releasing(self.app(environ, start_response), held)
        except BaseException:
            _release(held)
            raise

    def _acquire(self, kind: str) -> list[threading.BoundedSemaphore] | None:
        """The slots for one request of ``kind``, or None if one of them is taken (nothing is then held)."""
        if not self.pages.acquire(blocking=False):
            return None
        if kind == "export" and not self.exports.acquire(blocking=False):
            self.pages.release()
            return None
        return [self.pages, self.exports] if kind == "export" else [self.pages]


def _release(held: list[threading.BoundedSemaphore]) -> None:
    """Release and forget the slots in ``held``; safe to call twice, from two threads (list.pop is atomic)."""
    while True:
        try:
            slot = held.pop()
        except IndexError:
            return
        slot.release()


class _Releasing:
    """The app's response iterable; its slots are released once it has been sent in full, or when the
    server closes it (PEP 3333), or at the latest when it is dropped (a test client that never reads)."""

    def __init__(self, result: Iterable[bytes], held: list[threading.BoundedSemaphore]) -> None:
        self.result = result
        self.held = held
        self.items: Iterator[bytes] | None = None

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self.items is None:
            self.items = iter(self.result)
        try:
            return next(self.items)
        except StopIteration:
            _release(self.held)
            raise

    def close(self) -> None:
        try:
            close = getattr(self.result, "close", None)
            if close is not None:
                close()
        finally:
            _release(self.held)  # empties the list: releasing twice releases nothing

    def __del__(self) -> None:
        _release(self.held)


def _busy(start_response: Callable, kind: str, limit: int) -> list[bytes]:
    what = "exports and plots" if kind == "export" else "page requests"
    body = f"503 busy: this server process is serving {limit} {what} at once; try again in {RETRY_AFTER_SECONDS} s.\n".encode()
    start_response(
        "503 Service Unavailable",
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Retry-After", str(RETRY_AFTER_SECONDS)),
            ("Cache-Control", "no-store"),
        ],
    )
    return [body]
