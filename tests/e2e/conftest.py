"""Fixtures of the end-to-end tests: a real gunicorn server (``rumble serve``) per test."""

from __future__ import annotations

import pytest

from .e2e_support import live_server as start_live_server


@pytest.fixture
def live_server(tmp_path):
    """``rumble serve --workers 2`` on a fresh database in ``tmp_path``: ``.url``, ``.db_path``, helpers."""
    with start_live_server(tmp_path) as server:
        yield server


def pytest_collection_modifyitems(config, items):
    """Every test in this folder is marked ``e2e`` (``-m "not e2e"`` leaves them all out), whether
    or not its module says so."""
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.fspath).startswith(here + "/"):
            item.add_marker(pytest.mark.e2e)
