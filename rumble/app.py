"""The Flask application factory (the gunicorn target is ``rumble.app:create_app()``).

``create_app`` starts no threads: the batch-ranking schedule runs in a process of its own
(``rumble schedule``, which ``rumble serve`` starts), so tests and scripts that build apps never
start one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Flask

from rumble import settings, store
from rumble.overrides import apply_to_rumble_rows
from rumble.protocol.games import load_rumbles
from rumble.store.rumbles import sync_rumbles

if TYPE_CHECKING:
    from rumble.server.single_writer import Supervisor


def create_app(config: dict[str, Any] | None = None, preload_fields: bool = False) -> Flask:
    """Build the app: settings, the database (migrated, rumbles synced) and the blueprints.
    ``preload_fields``: also read every rumble into this process's ratings copy (rumble.ingest.fields),
    as each ``rumble serve`` worker does before its first request."""
    app = Flask(__name__.rsplit(".", 1)[0], template_folder="web/templates", static_folder="web/static")
    values = settings.load(config)
    app.config["RUMBLE"] = values
    rumbles = load_rumbles(values["RUMBLES_FILE"])
    app.extensions["rumble.rumbles"] = rumbles
    prepare_database(values, rumbles)

    from rumble.web import admin, api, body, bot_pages, client, feed, health, page_cache, pages, plots, search
    from rumble.web.lookup import NotFound, failure

    app.wsgi_app = body.guard_input(app.wsgi_app)  # type: ignore[method-assign]  # a body that cannot be read is a 400, never a 500
    app.register_blueprint(client.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(bot_pages.bp)  # /BotDetails, /Pairing, /BotCompare
    app.register_blueprint(plots.bp)  # the SVG plots those pages and /RumbleStats show
    app.register_error_handler(NotFound, failure)  # unknown rumbles and bots, in plain words (the API has its own)
    app.register_blueprint(api.bp)
    admin.init_app(app)
    app.register_blueprint(admin.bp)  # with admin.uploaders nested in it (rumble/web/admin_uploaders.py)
    app.register_blueprint(feed.bp)  # /feed, the Atom feed of ladder events
    app.register_blueprint(search.bp)  # /api/v1/rumbles/<game>/search: bots by the start of their name
    from rumble.web import participants

    app.register_blueprint(participants.bp)  # /Participants and /jars/...: the participants lists and the bot jars
    app.register_blueprint(health.bp)  # /healthz and /metrics, for operators' monitors
    wrap_wsgi(app, values)
    page_cache.init_app(app)  # pages built once per change (or per PAGE_CACHE_SECONDS while uploads flow), with ETags
    if preload_fields:
        from rumble.web import preload_fields as preload

        preload(app)
    return app


def wrap_wsgi(app: Flask, values: dict[str, Any]) -> None:
    """The middlewares around the app: the client's uploads answered without Flask's request
    machinery, client addresses from trusted proxies, then capacity per request class."""
    from werkzeug.middleware.proxy_fix import ProxyFix

    from rumble.web.capacity import Capacity
    from rumble.web.client import UploadFront
    from rumble.web.upload_counter import counts_for

    app.wsgi_app = UploadFront(app, app.wsgi_app)  # type: ignore[method-assign]

    proxies = values["TRUSTED_PROXIES"]
    if proxies < 0:
        raise ValueError(f"TRUSTED_PROXIES must be 0 or more, not {proxies}")
    if proxies:  # the address the nearest `proxies` proxies saw, not the proxy's own
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)  # type: ignore[method-assign]
    counts = counts_for(values["DB"])
    app.wsgi_app = Capacity(  # type: ignore[method-assign]
        app.wsgi_app,
        values["PAGE_REQUESTS"],
        values["EXPORT_REQUESTS"],
        lambda kind: counts.record_busy(kind, values["CLOCK"].now()),
    )


def wrap_page_builds(app: Flask, wrap: Callable[[Callable], Callable]) -> None:
    """Put the middleware ``wrap`` makes between the kept pages (rumble.web.page_cache) and the rest
    of the app: what is answered from a kept page never goes through it."""
    from rumble.web.page_cache import MIDDLEWARE_KEY

    app.extensions[MIDDLEWARE_KEY].wrap_misses(wrap)


def prepare_database(values: dict[str, Any], rumbles: dict) -> None:
    """Create or migrate the database and record the configured rumbles in it."""
    db = store.connect(values["DB"], values["SYNCHRONOUS"])
    try:
        with store.write(db):
            sync_rumbles(db, rumbles)
            apply_to_rumble_rows(db, rumbles)  # the settings maintainers changed from /admin win
    finally:
        db.close()


def attach_writer(app: Flask, writer: Supervisor) -> None:
    """Let ``app`` (a worker's, under ``rumble serve``) send its uploads' transactions to the writer
    process ``writer`` keeps, and show the writer's state on /healthz and /metrics (read from its
    pulse, memory the worker shares with the process that made it)."""
    from rumble.server.single_writer import Writer
    from rumble.server.writer_figures import WriterFigures
    from rumble.web import health

    app.extensions["rumble.writer"] = Writer(writer.path)
    app.extensions[health.WRITER_KEY] = writer.pulse.state
    health.add_collector(app, WriterFigures(writer.pulse))


def save_counts_every(app: Flask) -> None:
    """Save the worker's counts every COUNTS_SAVE_SECONDS, through its writer, for as long as it
    runs (``rumble serve`` runs this in a thread of each worker)."""
    from rumble.web.client import save_counts_now

    values = app.config["RUMBLE"]
    db = store.connect(values["DB"], migrate=False)
    while True:
        time.sleep(values["COUNTS_SAVE_SECONDS"])
        save_counts_now(db, app.extensions.get("rumble.writer"), values["DB"])


def save_counts(db_path: str) -> None:
    """Add this process's uncounted uploads and refused removals to the database now (gunicorn's
    ``worker_exit`` hook, as a worker stops): they are otherwise saved only with a later request."""
    from rumble.web.refusal_counter import refusals_for
    from rumble.web.upload_counter import counts_for

    db = store.connect(db_path, migrate=False)
    try:
        counts_for(db_path).flush(db, force=True)
        refusals_for(db_path).flush(db, force=True)
    finally:
        db.close()
