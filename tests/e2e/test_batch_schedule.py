"""`rumble serve` runs the batch-ranking schedule in exactly one process of its own (`rumble schedule`)."""

from __future__ import annotations

import re
import time

import pytest
from click.testing import CliRunner

from rumble.cli import cli

from .e2e_support import live_server, read_only

pytestmark = pytest.mark.e2e

RUN_WAIT_S = 30  # the schedule's process runs at once once started; 20 demo bots take well under a second


def test_one_process_of_rumble_serve_runs_the_batch_rankings(tmp_path):
    demo = CliRunner().invoke(cli, ["demo", "--db", str(tmp_path / "rumble.db"), "--battles", "250"])
    assert demo.exit_code == 0, demo.output
    with live_server(tmp_path, workers=3) as server:
        deadline = time.monotonic() + RUN_WAIT_S
        while not (rows := server.get("/AlternativeRankings", game="roborumble", api="1").json()["rows"]):
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.2)
        assert len(rows) == 20
        time.sleep(1.0)  # any other election would have happened by now
        leaders = set(
            re.findall(r"\[(\d+)\] INFO rumble.schedule.hourly: process \d+ runs the batch rankings", server.output())
        )
        assert len(leaders) == 1, server.output()
        assert (
            "INFO rumble.schedule.hourly: batch rankings of roborumble (schedule): run 1, 20 bots, 250 battles"
            in server.output()
        )
    with read_only(server.db_path) as db:
        assert db.execute("SELECT source FROM batch_runs").fetchall() == [("schedule",)]
