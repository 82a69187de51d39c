"""Fixtures of the end-to-end tests: a real gunicorn server (``rumble serve``) per test."""

from __future__ import annotations

import pytest

from .e2e_support import live_server as start_live_server


@pytest.fixture
def live_server(tmp_path):
    """``rumble serve --workers 2`` on a fresh database in ``tmp_path``: ``.url``, ``.db_path``, helpers."""
    with start_live_server(tmp_path) as server:
        yield server


# The longest modules (a minute or so each: a replay of 300,000 battles, the real client's runs) start
# first, so that with the suite spread over processes (pytest-xdist, scripts/test.sh) none of them is
# left to run alone at the end.
LONGEST_FIRST = (
    "test_maintenance_live.py",
    "test_real_client_melee.py",
    "test_participants_live.py",
    "test_real_client.py",
    "test_hostile_clients.py",
)


def pytest_collection_modifyitems(config, items):
    """Every test in this folder is marked ``e2e`` (``-m "not e2e"`` leaves them all out), whether
    or not its module says so; the LONGEST_FIRST modules are moved to the front, in that order."""
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.fspath).startswith(here + "/"):
            item.add_marker(pytest.mark.e2e)

    def rank(item) -> int:
        name = str(item.fspath)
        if not name.startswith(here + "/"):
            return len(LONGEST_FIRST)
        base = name.rsplit("/", 1)[1]
        return LONGEST_FIRST.index(base) if base in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a module and among the rest is kept
