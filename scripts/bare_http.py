"""The bare HTTP stack of ``rumble serve``, for bench_upload.py's baseline: stock gunicorn with the
same worker class (gunicorn's own ``gevent``; ``--worker-class sync`` for its default one), worker
count, keep-alive and connection limit, serving a Flask app that reads the upload's body and
answers ``OK`` (no database).

Run: ``.venv/bin/python scripts/bare_http.py --port 8001 --workers 2``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from flask import Flask, request
from gunicorn.app.base import BaseApplication

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's rumble, even if another is installed

from rumble import settings  # noqa: E402


def bare_app() -> Flask:
    """A Flask app answering every upload ``OK`` and ``GET /`` (for the readiness check) with a line."""
    app = Flask("bare")

    @app.get("/")
    def index() -> str:
        return "bare\n"

    @app.post("/UploadedResults")
    def uploaded() -> tuple[str, int, dict[str, str]]:
        request.get_data()
        return "OK\n", 200, {"Content-Type": "text/plain"}

    return app


class BareServer(BaseApplication):
    """gunicorn configured as ``rumble serve`` configures it (rumble/cli/__init__.py), around ``bare_app``."""

    def __init__(self, port: int, workers: int, worker_class: str = "gevent") -> None:
        self.port, self.workers, self.worker_class = port, workers, worker_class
        super().__init__()

    def load_config(self) -> None:
        values = settings.load()
        self.cfg.set("bind", f"127.0.0.1:{self.port}")
        self.cfg.set("workers", self.workers)
        self.cfg.set("worker_class", self.worker_class)
        self.cfg.set("worker_connections", values["CONNECTIONS"])
        self.cfg.set("keepalive", math.ceil(values["READ_TIMEOUT_SECONDS"]))
        self.cfg.set("sendfile", False)
        self.cfg.set("accesslog", None)
        if "control_socket_disable" in self.cfg.settings:
            self.cfg.set("control_socket_disable", True)

    def load(self) -> Flask:
        return bare_app()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--worker-class",
        default="gevent",
        help="a worker class gunicorn ships: gevent (rumble serve's) or sync (its default)",
    )
    args = parser.parse_args(argv)
    BareServer(args.port, args.workers, args.worker_class).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
