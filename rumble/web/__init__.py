"""The web layer: thin views that read the request, call the store or ingest, and render.

``get_db()`` gives each worker process (and thread) one long-lived connection: opening SQLite
per request would cost more than the upload itself.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime

from flask import current_app

from rumble import store
from rumble.clock import Clock

_local = threading.local()


def get_db() -> store.Store:
    """This thread's connection to the app's database (reopened after a fork)."""
    return thread_db(current_app.config["RUMBLE"])


def thread_db(settings: dict) -> store.Store:
    """This thread's connection to the database of ``settings`` (an app's): ``get_db`` outside a request context."""
    path = settings["DB"]
    db = getattr(_local, "db", None)
    if db is None or _local.pid != os.getpid() or _local.path != path:
        if db is not None and _local.pid == os.getpid():
            db.close()
        db = store.connect(path, settings["SYNCHRONOUS"], migrate=False, autocheckpoint=False)
        _local.db, _local.pid, _local.path = db, os.getpid(), path
    return db


def clock() -> Clock:
    """The app's clock (the ``CLOCK`` setting): every "now" a view compares or stamps."""
    return current_app.config["RUMBLE"]["CLOCK"]


def now() -> datetime:
    """The app's current time (timezone-aware UTC)."""
    return clock().now()


def close_thread_db() -> None:
    """Close this thread's connection (tests that delete their database file call it)."""
    db = getattr(_local, "db", None)
    if db is not None and _local.pid == os.getpid():
        db.close()
    _local.db = None


def preload_fields(app) -> None:
    """Read every rumble with participants into this worker's in-memory copy (rumble.ingest.fields)."""
    from rumble.ingest import fields

    with app.app_context():
        fields.preload_all(get_db())
