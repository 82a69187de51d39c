"""`rumble serve` runs the batch-ranking schedule in exactly one process of its own (`rumble schedule`)."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

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


def _schedule_processes(db_path: Path) -> list[int]:
    """The running ``rumble schedule`` processes of the database at ``db_path``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile
            continue
        if b"schedule" in words and str(db_path).encode() in words:
            found.append(int(entry.name))
    return found


def test_a_schedule_process_that_ends_is_started_again_and_ends_with_the_server(tmp_path):
    demo = CliRunner().invoke(cli, ["demo", "--db", str(tmp_path / "rumble.db"), "--battles", "250"])
    assert demo.exit_code == 0, demo.output
    with live_server(tmp_path) as server:
        deadline = time.monotonic() + RUN_WAIT_S
        while not (running := _schedule_processes(server.db_path)):
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.2)
        (first,) = running
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + RUN_WAIT_S
        while not (others := [pid for pid in _schedule_processes(server.db_path) if pid != first]):
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.2)
        (second,) = others
        started = f"[{second}] INFO rumble.schedule.hourly: process {second} runs the batch rankings every"
        while started not in server.output():
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.2)
        # How it ended, unless gunicorn's arbiter (which collects every child that ends) took its status first.
        ended = f"ERROR rumble.server.kept_process: the batch schedule process {first} ended "
        assert re.search(
            re.escape(ended) + r"\((signal 9: Killed|its status collected by gunicorn)\); another starts in \d+ s",
            server.output(),
        ), server.output()
        assert server.get("/healthz").status_code == 200
    # Ended on its own after Ctrl-C, with status 0, its schedule process ended by the master alone: a
    # worker, forked from the master, leaves through the same clean-up and must not wait for it.
    assert server.process.returncode == 0, server.output()
    assert _schedule_processes(server.db_path) == []
