"""Pages built once and served many times, each with an ETag.

A page, JSON API answer or plot shows what the derived tables held when it was built, so a
worker keeps each one it builds, under its full URL (host and query included), and serves it
again:

- while nothing in the database changed since it was built (this worker's connections each
  notice any commit, theirs or another process's: ``store.change_stamp``), for at most
  IDLE_SECONDS, since some pages also show ages ("3 minutes ago");
- while uploads keep changing the database, for PAGE_CACHE_SECONDS after it was built: a page is
  then at most that far behind the log, and pulling the heaviest pages in a loop costs one build
  per page and interval, not one per request.

While one request builds an outdated answer anew, the others get the outdated one, so that a page
is built by one request at a time. An answer is kept as built and, if smaller so, gzipped for the
clients that accept it (browsers do). Each form carries a strong ETag, a digest of its bytes, with
``Cache-Control: no-cache`` and ``Vary: Accept-Encoding``: a browser asks again each time with
``If-None-Match`` and gets ``304 Not Modified`` while the page is the same (a page built anew
with the same bytes has the same ETag). Only 200 answers to requests without cookies or
credentials are kept; the least recently served go first once PAGE_CACHE_MB is reached. Ages are
read from the settings' clock.
"""

from __future__ import annotations

import gzip
import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flask import Flask, Response, current_app, request
from werkzeug.datastructures import Headers
from werkzeug.http import is_resource_modified, parse_accept_header, quote_etag

from rumble import store
from rumble.web import now, thread_db
from rumble.web.capacity import request_class

IDLE_SECONDS = 60.0  # an answer is built anew at least this often, changes or not (ages shown in minutes)
CACHED_BLUEPRINTS = frozenset({"pages", "bot_pages", "plots", "api", "feed", "search"})
NEVER_KEPT_PREFIXES = ("/admin", "/healthz", "/metrics", "/static/", "/jars/", "/Participants")  # not even looked up
NOT_CACHED = frozenset({"api.export_table", "api.export_sqlite"})  # snapshot files with ETags of their own
GZIP_FROM_BYTES = 1024  # smaller answers are kept only as they are
GZIP_LEVEL = 6  # zlib's default: the rankings API at 5,000 a page, 989 KB, packs to 138 KB in 12 ms
NOT_MODIFIED_HEADERS = ("ETag", "Cache-Control", "Vary")
EXTENSION_KEY = "rumble.page_cache"  # app.extensions: the PageCache
MIDDLEWARE_KEY = "rumble.kept_pages"  # app.extensions: the KeptPages in front of the app
KEY_ENVIRON, GENERATION_ENVIRON = "rumble.page_key", "rumble.page_generation"  # what KeptPages tells the hook


@dataclass(frozen=True)
class Body:
    """One form of an answer: its bytes, its headers (its ETag included, Content-Length not) and ETag."""

    data: bytes
    headers: tuple[tuple[str, str], ...]
    etag: str  # unquoted


@dataclass(frozen=True)
class Answer:
    plain: Body
    gzipped: Body | None  # for clients that accept gzip (browsers do), if it is smaller
    generation: int  # the cache's generation when the build began
    built: float  # seconds since 1970 by the settings' clock

    @property
    def size(self) -> int:
        return len(self.plain.data) + (len(self.gzipped.data) if self.gzipped else 0)

    def body_for(self, accept_encoding: str | None) -> Body:
        """The form to send to a client whose Accept-Encoding header is ``accept_encoding``."""
        if self.gzipped is not None and parse_accept_header(accept_encoding)["gzip"] > 0:
            return self.gzipped
        return self.plain


class PageCache:
    """The answers one worker keeps, by URL, and the generation: a number that moves whenever one
    of the worker's connections notices that the database may have changed."""

    def __init__(self, stale_seconds: float, max_bytes: int) -> None:
        if stale_seconds < 0 or max_bytes < 0:
            raise ValueError(
                f"PAGE_CACHE_SECONDS and PAGE_CACHE_MB must be 0 or more, not {stale_seconds}, {max_bytes}"
            )
        self.stale_seconds, self.max_bytes = stale_seconds, max_bytes
        self.generation = 0
        self._stamps: dict[int, tuple[int, int]] = {}  # connection serial -> its change stamp when last looked at
        self._answers: OrderedDict[str, Answer] = OrderedDict()
        self._bytes = 0
        self._building: set[str] = set()  # URLs whose outdated answer a request is building anew
        self._lock = threading.Lock()

    def observe(self, connection: int, stamp: tuple[int, int]) -> int:
        """The generation after noting what ``connection`` sees now (a connection seen for the first
        time might have missed a change: it moves the generation too)."""
        with self._lock:
            if self._stamps.get(connection) != stamp:
                self._stamps[connection] = stamp
                self.generation += 1
            return self.generation

    def get(self, url: str, generation: int, moment: float) -> Answer | None:
        """The answer to serve for ``url`` at ``moment``, or None: build it, then call ``done``.
        While one request builds an outdated answer anew, the others get the outdated one."""
        with self._lock:
            answer = self._answers.get(url)
            if answer is None:
                return None
            age = moment - answer.built
            if 0 <= age < IDLE_SECONDS and (answer.generation == generation or age < self.stale_seconds):
                self._answers.move_to_end(url)
                return answer
            if url in self._building:
                return answer
            self._building.add(url)
            return None

    def done(self, url: str) -> None:
        """The build ``get`` asked for has ended (kept or not)."""
        with self._lock:
            self._building.discard(url)

    def put(self, url: str, answer: Answer) -> None:
        """Keep ``answer`` for ``url``, dropping the least recently served beyond the memory bound."""
        with self._lock:
            old = self._answers.pop(url, None)
            if old is not None:
                self._bytes -= old.size
            if answer.size > self.max_bytes:
                return
            self._answers[url] = answer
            self._bytes += answer.size
            while self._bytes > self.max_bytes:
                _, dropped = self._answers.popitem(last=False)
                self._bytes -= dropped.size


class KeptPages:
    """The WSGI middleware that answers a GET or HEAD from the answers kept, before anything else
    of the app runs (under ``rumble serve``, before a thread of the pool is taken: a kept page
    costs the worker a lookup and a send). What it cannot answer goes on to ``app``, noted with
    the key and generation the app's ``after_request`` hook keeps its answer under."""

    def __init__(self, app: Callable, cache: PageCache, settings: dict) -> None:
        self.app, self.cache, self.settings = app, cache, settings

    def wrap_misses(self, wrap: Callable[[Callable], Callable]) -> None:
        """Put ``wrap`` (a middleware) between this one and the app: what is not kept goes through it."""
        self.app = wrap(self.app)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if (
            environ.get("REQUEST_METHOD") not in ("GET", "HEAD")
            or request_class(environ.get("PATH_INFO", "")) == "client"
            or environ.get("PATH_INFO", "").startswith(NEVER_KEPT_PREFIXES)
            or "HTTP_COOKIE" in environ
            or "HTTP_AUTHORIZATION" in environ
        ):
            return self.app(environ, start_response)
        key = page_key(environ)
        try:
            db = thread_db(self.settings)
            generation = self.cache.observe(db.serial, store.change_stamp(db))
        except sqlite3.Error:  # the app answers a database it cannot read in its own words, kept pages aside
            return self.app(environ, start_response)
        answer = self.cache.get(key, generation, self.settings["CLOCK"].now().timestamp())
        if answer is None:
            environ[KEY_ENVIRON], environ[GENERATION_ENVIRON] = key, generation
            try:
                return self.app(environ, start_response)  # under rumble serve, once built in its thread
            finally:
                self.cache.done(key)
        body = answer.body_for(environ.get("HTTP_ACCEPT_ENCODING"))
        if not is_resource_modified(environ, etag=body.etag):
            start_response("304 Not Modified", [(k, v) for k, v in body.headers if k in NOT_MODIFIED_HEADERS])
            return []
        start_response("200 OK", [*body.headers, ("Content-Length", str(len(body.data)))])
        return [] if environ["REQUEST_METHOD"] == "HEAD" else [body.data]


def page_key(environ: dict) -> str:
    """What a page is kept under: its URL as the request gave it, with the forwarded scheme and host
    a proxy may add (so that no header a client sends changes the page another client gets)."""
    parts = ("wsgi.url_scheme", "HTTP_HOST", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST", "SCRIPT_NAME")
    return "\n".join(
        [*(environ.get(part, "") for part in parts), environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")]
    )


def init_app(app: Flask) -> None:
    """Answer from the kept pages before the app (``KeptPages``, to be the outermost middleware) and keep
    the views' answers after them (Flask's ``after_request`` hook)."""
    values = app.config["RUMBLE"]
    cache = PageCache(values["PAGE_CACHE_SECONDS"], values["PAGE_CACHE_MB"] << 20)
    app.extensions[EXTENSION_KEY] = cache
    app.after_request(_keep)
    kept = app.extensions[MIDDLEWARE_KEY] = KeptPages(app.wsgi_app, cache, values)
    app.wsgi_app = kept  # type: ignore[method-assign]


def _keep(response: Response) -> Response:
    key, generation = request.environ.get(KEY_ENVIRON), request.environ.get(GENERATION_ENVIRON)
    if (
        key is None
        or generation is None
        or request.blueprint not in CACHED_BLUEPRINTS
        or request.endpoint in NOT_CACHED
        or response.status_code != 200
        or not response.is_sequence
        or "Set-Cookie" in response.headers
    ):
        return response
    response.headers["Cache-Control"] = "no-cache"  # ask again each time: a repeat with the ETag is a 304
    response.vary.add("Accept-Encoding")
    plain = _body(response.get_data(), response.headers)
    packed = gzip.compress(plain.data, GZIP_LEVEL, mtime=0) if len(plain.data) >= GZIP_FROM_BYTES else None
    gzipped = None
    if packed is not None and len(packed) < len(plain.data):
        gzipped = _body(packed, Headers([*response.headers.items(), ("Content-Encoding", "gzip")]))
    answer = Answer(plain, gzipped, generation, now().timestamp())
    cache: PageCache = current_app.extensions[EXTENSION_KEY]
    cache.put(key, answer)
    sent = answer.body_for(request.headers.get("Accept-Encoding"))
    response.set_data(sent.data)
    response.headers = Headers([*sent.headers, ("Content-Length", str(len(sent.data)))])
    response.make_conditional(request)  # a 304 if the request's If-None-Match holds the ETag
    return response


def _body(data: bytes, headers: Headers) -> Body:
    """``data`` as sent with ``headers`` and a strong ETag, a digest of the bytes."""
    etag = hashlib.blake2b(data, digest_size=16).hexdigest()
    kept = [(name, value) for name, value in headers.items() if name not in ("Content-Length", "ETag")]
    return Body(data, (*kept, ("ETag", quote_etag(etag))), etag)
