"""Load and crash safety on a real gunicorn server, through scripts/load_test.py with a smaller load
(the script's defaults, 8 clients x 1,000 uploads, give the issue's figures; see its docstring)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "load_test.py"


def _script():
    spec = importlib.util.spec_from_file_location("load_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_eight_concurrent_clients_every_pairing_counts_the_logs_battles(tmp_path):
    figures = _script().load_phase(tmp_path, clients=8, uploads=100, bots=12, workers=2, seed=3)
    # 800 uploads, each answered OK; the distinct ones stored once (the rest are deliberate resends).
    assert figures["uploads"] == figures["answered_ok"] == 800 and not figures["errors"]
    assert (
        figures["stored"] + figures["repeats"] == 800
        and figures["log_rows"] == figures["stored"] == figures["rebuild_replayed"]
    )
    assert figures["pairings"] == 12 * 11 // 2


def test_kill_minus_nine_mid_load_loses_no_answered_upload_and_half_applies_nothing(tmp_path):
    figures = _script().crash_phase(tmp_path, clients=8, uploads=100, bots=12, workers=2, seed=5)
    assert figures["killed_pids"] == 4  # the gunicorn master, both workers and the writer process
    assert figures["killed_after_oks"] == 400 and figures["log_rows_after_restart"] >= 1
    final = figures["final"]
    assert final["answered_ok"] == final["uploads"] == 800
    assert final["log_rows"] == final["distinct_uploads"] == final["rebuild_replayed"] >= final["stored"]


def test_a_rollback_by_uploader_on_a_live_server_under_load_equals_a_rebuild(tmp_path):
    figures = _script().rollback_phase(tmp_path, clients=8, uploads=60, bots=12, workers=2, seed=7)
    assert figures["rolled_back"] > 0 and figures["unflagged"] == figures["rolled_back"]
    assert figures["answered_ok"] == figures["uploads"] == 480 and not figures["errors"]
    assert figures["rebuild_replayed_at_end"] == figures["log_rows"] == figures["stored"]
