"""Group commit on a real ``rumble serve`` (rumble/store/group_commit.py, applied by the writer
process, rumble/server/single_writer.py): the uploads that wait for the write lock, whichever worker
received them, are stored in one transaction, each answered once and only after its COMMIT, and a
battle that fails inside the group is rolled back alone. Should the writer process die, the
workers store uploads themselves.

The test holds the database's write lock itself (the advisory flock every writer takes on
``<db>.lock``, rumble/store/__init__.py), so that the uploads sent meanwhile all wait, then lets
go. Transactions are counted in the WAL file (the server never checkpoints before 1,000 commits):
each frame that ends a transaction carries the database's size after the commit, and only frames
with the WAL header's salts belong to its current generation (https://www.sqlite.org/fileformat2.html,
"WAL file format").
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import re
import signal
import sqlite3
import struct
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rumble.protocol.battle import Battle
from rumble.protocol.upload import format_upload

from .e2e_support import live_server, post_like_java, read_only
from .test_gunicorn_uploads import make_battle

pytestmark = pytest.mark.e2e

LOAD_TEST = Path(__file__).resolve().parents[2] / "scripts" / "load_test.py"
WAITING_SECONDS = 2.0  # for every upload sent to reach the server and wait for the lock
POISON = "poison.Bot 1.0"
# No batch schedule: its runs are transactions of their own, which the WAL would count with the uploads'.
QUIET = {"BATCH_INTERVAL_MINUTES": "0"}


def _commits(wal: Path) -> int:
    """Transactions in the WAL's current generation: frames (24-byte header + a page) whose second
    header word, the database size after a commit, is not zero, with the salts of the WAL header."""
    data = wal.read_bytes()
    if len(data) < 32:
        return 0
    (page_size,) = struct.unpack(">I", data[8:12])
    salts, found, offset = data[16:24], 0, 32
    while offset + 24 + page_size <= len(data) and data[offset + 8 : offset + 16] == salts:
        found += struct.unpack(">I", data[offset + 4 : offset + 8])[0] != 0
        offset += 24 + page_size
    return found


@contextmanager
def write_lock_held(db_path: Path) -> Iterator[None]:
    with open(str(db_path) + ".lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _send_all(url: str, battles: list[Battle]) -> tuple[list[threading.Thread], dict[int, tuple[int, str]]]:
    """Send each battle from a thread of its own, in this order (a few ms apart); answers by index."""
    answers: dict[int, tuple[int, str]] = {}

    def send(index: int, battle: Battle) -> None:
        status, _, text = post_like_java(url + "/UploadedResults", format_upload(battle))
        answers[index] = (status, text)

    threads = [threading.Thread(target=send, args=(k, b)) for k, b in enumerate(battles)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    return threads, answers


def _log_rows(db_path: Path) -> int:
    with read_only(db_path) as db:
        return db.execute("SELECT count(*) FROM battles").fetchone()[0]


def _equal_to_rebuild(db_path: Path) -> int:
    spec = importlib.util.spec_from_file_location("load_test", LOAD_TEST)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(LOAD_TEST)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.check_rebuild(db_path)  # raises unless the tables equal a rebuild from the log


def _received(battle: Battle) -> str:
    return f"OK. {battle.first.name} vs {battle.second.name} received for roborumble"


def _upload_first(url: str, now: int) -> None:
    """Alpha's first battle, stored before the test's own uploads (they all meet Alpha)."""
    first = make_battle("group.Alpha 1.0", "group.Beta 1.0", (6000, 4000), (25, 10), now - 100)
    status, _, text = post_like_java(url + "/UploadedResults", format_upload(first))
    assert (status, text.splitlines()[-1]) == (200, _received(first))


def _group_battles(now: int, count: int) -> list[Battle]:
    """``count`` battles of new bots against Alpha, each with scores and a time of its own."""
    return [
        make_battle(f"group.Bot{k:02d} 1.0", "group.Alpha 1.0", (5000 + 37 * k, 5000), (18, 17), now - k)
        for k in range(count)
    ]


def test_uploads_waiting_for_the_lock_are_stored_in_one_transaction_each_answered_once(tmp_path, clock):
    now = clock.now_ms()
    with live_server(tmp_path, workers=1, settings=QUIET) as server:
        _upload_first(server.url, now)
        battles = _group_battles(now, 12)
        wal = Path(str(server.db_path) + "-wal")
        with write_lock_held(server.db_path):
            threads, answers = _send_all(server.url, battles)
            time.sleep(WAITING_SECONDS)
            assert answers == {} and _log_rows(server.db_path) == 1  # nobody is told OK before its commit
            before = _commits(wal)
        for thread in threads:
            thread.join(30)
        # The first upload led a transaction of its own (it alone was waiting when it took the
        # lead); the eleven that queued behind it went in one more.
        assert _commits(wal) - before == 2
        assert [answers[k][0] for k in range(12)] == [200] * 12
        assert [answers[k][1].splitlines()[-1] for k in range(12)] == [_received(b) for b in battles]
        assert _log_rows(server.db_path) == 13
        assert _equal_to_rebuild(server.db_path) == 13


def test_a_battle_failing_inside_a_group_is_rolled_back_alone(tmp_path, clock):
    now = clock.now_ms()
    with live_server(tmp_path, workers=1, settings=QUIET) as server:
        _upload_first(server.url, now)
        # A fault that strikes the poisoned battle late: its log row, pairings, summaries and the
        # worker's in-memory ratings are already changed when writing its ratings fails.
        with sqlite3.connect(server.db_path, timeout=30) as db:
            db.execute(
                "CREATE TRIGGER poison BEFORE INSERT ON ratings WHEN NEW.bot_id IN "
                f"(SELECT id FROM bots WHERE full_name = '{POISON}') BEGIN SELECT RAISE(ABORT, 'poisoned'); END"
            )
        db.close()
        battles = _group_battles(now, 8)
        battles.insert(4, make_battle(POISON, "group.Alpha 1.0", (7000, 3000), (30, 5), now - 50))
        wal = Path(str(server.db_path) + "-wal")
        with write_lock_held(server.db_path):
            threads, answers = _send_all(server.url, battles)
            time.sleep(WAITING_SECONDS)
            before = _commits(wal)
        for thread in threads:
            thread.join(30)
        assert _commits(wal) - before == 2  # the first alone, then the eight others and the poisoned one together
        assert answers[4][0] == 500  # a server fault: the client keeps it and sends it again later
        kept = [k for k in range(9) if k != 4]
        assert [answers[k][1].splitlines()[-1] for k in kept] == [_received(battles[k]) for k in kept]
        with read_only(server.db_path) as db:
            assert db.execute("SELECT count(*) FROM bots WHERE full_name = ?", (POISON,)).fetchone()[0] == 0
        assert _log_rows(server.db_path) == 9
        # Alpha's ratings in the worker's memory must not keep the rolled-back battle: its next battle
        # is rated from them, and the tables must still equal a rebuild from the log.
        after = make_battle("group.Alpha 1.0", "group.Beta 1.0", (5500, 4500), (20, 15), now - 20)
        status, _, text = post_like_java(server.url + "/UploadedResults", format_upload(after))
        assert (status, text.splitlines()[-1]) == (200, _received(after))
        assert _equal_to_rebuild(server.db_path) == 10


def test_uploads_of_both_workers_waiting_for_the_lock_go_in_one_transaction(tmp_path, clock):
    now = clock.now_ms()
    with live_server(tmp_path, workers=2, settings=QUIET) as server:
        _upload_first(server.url, now)
        battles = _group_battles(now, 16)
        wal = Path(str(server.db_path) + "-wal")
        with write_lock_held(server.db_path):
            threads, answers = _send_all(server.url, battles)  # one connection each: both workers take some
            time.sleep(WAITING_SECONDS)
            assert answers == {} and _log_rows(server.db_path) == 1
            before = _commits(wal)
        for thread in threads:
            thread.join(30)
        assert _commits(wal) - before == 2  # the first alone, then the fifteen of both workers together
        assert [answers[k][1].splitlines()[-1] for k in range(16)] == [_received(b) for b in battles]
        assert _equal_to_rebuild(server.db_path) == 17


def _writer_pid(server) -> int:
    """The child of ``rumble serve`` that runs rumble.server.single_writer."""
    pid = server.process.pid
    children = {
        int(child) for task in Path(f"/proc/{pid}/task").iterdir() for child in (task / "children").read_text().split()
    }
    (writer,) = (child for child in children if b"single_writer" in Path(f"/proc/{child}/cmdline").read_bytes())
    return writer


def test_uploads_keep_flowing_when_the_writer_process_dies(tmp_path, clock):
    now = clock.now_ms()
    with live_server(tmp_path, workers=2, settings=QUIET) as server:
        _upload_first(server.url, now)
        os.kill(_writer_pid(server), signal.SIGKILL)
        time.sleep(0.5)
        battles = _group_battles(now, 10)
        for battle in battles:  # each on a new connection, so both workers' threads meet the dead writer
            status, _, text = post_like_java(server.url + "/UploadedResults", format_upload(battle))
            assert (status, text.splitlines()[-1]) == (200, _received(battle))
        assert _log_rows(server.db_path) == 11
        assert _equal_to_rebuild(server.db_path) == 11
        # The supervisor put a new writer in the dead one's place; uploads went to it, or to the
        # workers themselves while it started.
        assert re.search(r"started writer process \d+ in place of \d+", server.output())
