"""Request bodies read safely: a body whose framing is broken (a malformed chunk size, a chunked
stream cut short) becomes ``MalformedBody``, a 400 with the reason, instead of the server's own
exception escaping as a 500; and a JSON body is used only as an object of valid text.

``guard_input`` wraps the WSGI input stream once for the whole app, so every way of reading the
body (``request.stream``, ``get_data``, ``form``, ``get_json``) is covered. The client's endpoints
turn MalformedBody into the protocol's own ``OK. ERROR: <reason>`` (rumble/web/client.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from flask import request
from gunicorn.http.errors import ParseException
from werkzeug.exceptions import BadRequest

# What reading a broken body raises: gunicorn's chunk parser (InvalidChunkSize, ChunkMissingTerminator
# are ParseException; NoMoreData is an OSError), werkzeug's development server (OSError), a closed stream.
UNREADABLE = (ParseException, OSError, ValueError)


class MalformedBody(BadRequest):
    """The request's body cannot be read or used: ``description`` says why, in one line."""

    def __init__(self, reason: str):
        super().__init__(description=reason[:200].replace("\r", " ").replace("\n", " "))


class GuardedInput:
    """A WSGI input stream whose read errors are MalformedBody."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def _guarded(self, read: Callable, *args) -> Any:
        try:
            return read(*args)
        except UNREADABLE as error:
            raise MalformedBody(f"the request body cannot be read: {error}") from error

    def read(self, *args) -> bytes:
        return self._guarded(self._stream.read, *args)

    def readline(self, *args) -> bytes:
        return self._guarded(self._stream.readline, *args)

    def readlines(self, *args) -> list[bytes]:
        return self._guarded(self._stream.readlines, *args)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


def guard_input(wsgi_app: Callable) -> Callable:
    """Wrap a WSGI app so that every request's input stream is a GuardedInput."""

    def guarded(environ: dict, start_response: Callable):
        if "wsgi.input" in environ:
            environ["wsgi.input"] = GuardedInput(environ["wsgi.input"])
        return wsgi_app(environ, start_response)

    return guarded


def _valid_text(value: Any) -> bool:
    """Whether every string in a parsed JSON value encodes as UTF-8 (JSON's \\ud800 escapes do not)."""
    if isinstance(value, str):
        return value.isascii() or _encodes(value)
    if isinstance(value, dict):
        return all(_valid_text(k) and _valid_text(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_valid_text(v) for v in value)
    return True


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def form_or_json() -> Mapping:
    """The request's fields: its form, or the JSON object of valid text it carries (else MalformedBody)."""
    if not request.is_json:
        return request.form
    values = request.get_json(silent=True)
    if not isinstance(values, dict) or not _valid_text(values):
        raise MalformedBody("the body must be a JSON object whose strings are valid Unicode")
    return values
