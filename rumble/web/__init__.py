"""The web layer: thin views that read the request, call the store or ingest, and render.

``get_db()`` gives each worker process one long-lived connection per operating-system thread:
opening SQLite per request would cost more than the upload itself. Under ``rumble serve``'s gevent
worker every request of a worker runs in one thread (as a greenlet) and shares it; SQLite calls
never yield to another greenlet, so none of them sees another's transaction half done.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

from flask import current_app

from rumble import store
from rumble.clock import Clock

# (process, operating-system thread) -> (database file, its connection). Keyed by the thread's
# native id, which gevent's patching leaves as it is, not by a thread-local (a greenlet-local there).
_connections: dict[tuple[int, int], tuple[str, store.Store]] = {}


def get_db() -> store.Store:
    """This thread's connection to the app's database (reopened after a fork)."""
    return thread_db(current_app.config["RUMBLE"])


def thread_db(settings: dict) -> store.Store:
    """This thread's connection to the database of ``settings`` (an app's): ``get_db`` outside a request context."""
    key, path = (os.getpid(), threading.get_native_id()), settings["DB"]
    found = _connections.get(key)
    if found is not None and found[0] == path:
        return found[1]
    if not any(pid == key[0] for pid, _ in _connections):  # a forked child: its parent's are not its own
        _connections.clear()
    elif found is not None:  # another database (tests): that one is closed
        found[1].close()
    db = store.connect(path, settings["SYNCHRONOUS"], migrate=False, autocheckpoint=False)
    _connections[key] = (path, db)
    return db


def clock() -> Clock:
    """The app's clock (the ``CLOCK`` setting): every "now" a view compares or stamps."""
    return current_app.config["RUMBLE"]["CLOCK"]


def now() -> datetime:
    """The app's current time (timezone-aware UTC)."""
    return clock().now()


def close_thread_db() -> None:
    """Close this thread's connection (tests that delete their database file call it)."""
    found = _connections.pop((os.getpid(), threading.get_native_id()), None)
    if found is not None:
        found[1].close()


def preload_fields(app) -> None:
    """Read every rumble with participants into this worker's in-memory copy (rumble.ingest.fields)."""
    from rumble.ingest import fields

    with app.app_context():
        fields.preload_all(get_db())
