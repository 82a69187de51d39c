"""A writer process that hangs or dies under a steady stream of uploads, on a real ``rumble serve``
(rumble/server/single_writer.py, ``Supervisor``): every upload is answered as accepted within the
client's 10 s read timeout, the server says the writer was replaced, a new writer process takes the
uploads afterwards, and every accepted upload is in the log exactly once.

An upload the writer had committed just before it stopped or died, but not answered, is applied
again by its worker and recognised as a repeat: its answer is the repeat's ("already received"),
and it is in the log once. At most one upload per client can be in flight at that moment.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rumble.protocol.battle import Battle
from rumble.protocol.upload import format_upload

from .e2e_support import LiveServer, live_server, post_like_java, read_only
from .test_group_commit import _equal_to_rebuild, _writer_pid
from .test_gunicorn_uploads import make_battle

pytestmark = pytest.mark.e2e

CLIENTS = 4
BOTS = [f"watchdog.Bot{k:02d} 1.0" for k in range(12)]
MAX_UPLOADS = 5_000  # per client: the loops end by count even if never told to stop
WAIT_SECONDS = 60  # the longest any step below waits for what it expects (a bound on the test, not a measure)


def _received(battle: Battle) -> str:
    return f"OK. {battle.first.name} vs {battle.second.name} received for roborumble"


def _repeat(battle: Battle) -> str:
    return f"OK. {battle.first.name} vs {battle.second.name} for roborumble was already received; not counted again"


@dataclass
class _Clients:
    """CLIENTS threads, each uploading distinct battles one after another, each on a new connection
    (as the real client does), until ``stop``; every battle sent with its answer (status, last line)
    or the exception that ended its wait (the client's 10 s read timeout among them)."""

    url: str
    now_ms: int
    stop: threading.Event = field(default_factory=threading.Event)
    sent: list[tuple[Battle, tuple[int, str] | BaseException]] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def run(self, client: int) -> None:
        for k in range(MAX_UPLOADS):
            if self.stop.is_set():
                return
            # (two different bots: their indexes differ by 2k + 1, an odd number, modulo an even one)
            first, second = BOTS[(client + k) % len(BOTS)], BOTS[(client + 3 * k + 1) % len(BOTS)]
            time_ms = self.now_ms - 1_000_000 * client - k  # unique per upload: no two are one result
            battle = make_battle(first, second, (4000 + 7 * k % 2000, 4000), (17, 18), time_ms)
            answer: tuple[int, str] | BaseException
            try:
                status, _, text = post_like_java(self.url + "/UploadedResults", format_upload(battle))
                answer = (status, text.splitlines()[-1] if text else "")
            except Exception as error:  # no answer within the client's 10 s, or a broken connection
                answer = error
            with self.changed:
                self.sent.append((battle, answer))
                self.changed.notify_all()
            self.stop.wait(0.01)

    def accepted(self) -> int:
        with self.changed:
            return sum(answer == (200, _received(battle)) for battle, answer in self.sent)

    def wait_for(self, accepted: int) -> None:
        """Until ``accepted`` uploads have been answered as accepted (WAIT_SECONDS at most)."""
        with self.changed:
            assert self.changed.wait_for(lambda: self.accepted() >= accepted, WAIT_SECONDS), self.sent[-5:]


@contextlib.contextmanager
def _uploading(url: str, now_ms: int) -> Iterator[_Clients]:
    clients = _Clients(url, now_ms)
    threads = [threading.Thread(target=clients.run, args=(k,), daemon=True) for k in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        yield clients
    finally:
        clients.stop.set()
        for thread in threads:
            thread.join(WAIT_SECONDS)


def _wait_for_line(server: LiveServer, pattern: str) -> re.Match:
    """The first line of the server's output that matches ``pattern`` (waited for, WAIT_SECONDS at most)."""
    for _ in range(WAIT_SECONDS * 10):
        found = re.search(pattern, server.output(), re.MULTILINE)
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no line matching {pattern!r} in:\n{server.output()}")


def _alive(pid: int) -> bool:
    """Running or stopped (a zombie nobody collected yet counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _worker_connections(pid: int) -> int:
    """The connections from workers that the writer process ``pid`` holds: its sockets that
    /proc/net/unix lists as connected (state 03) at a writer's socket path (a socket accepted on a
    listener carries the listener's path; a worker's own end has none)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            link = os.readlink(fd)
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    found = 0
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        parts = line.split()  # Num RefCount Protocol Flags Type St Inode Path
        if len(parts) == 8 and parts[6] in inodes and parts[5] == "03" and parts[7].endswith("/writer.sock"):
            found += 1
    return found


def _through(clients: _Clients, pid: int) -> None:
    """Until the writer process ``pid`` holds a worker's connection (a worker connects to send an
    upload), then until 20 more uploads were accepted."""
    for _ in range(WAIT_SECONDS * 10):
        if _worker_connections(pid):
            break
        time.sleep(0.1)
    assert _worker_connections(pid), f"no worker connected to the new writer process {pid}"
    clients.wait_for(clients.accepted() + 20)


def _check_answers_and_log(server: LiveServer, clients: _Clients) -> None:
    """Every upload answered within the client's timeout, as accepted (or, for at most one in flight
    per client when the writer went, as a repeat); each in the log exactly once; the tables equal
    a rebuild from the log."""
    failed = [(battle.first.name, answer) for battle, answer in clients.sent if isinstance(answer, BaseException)]
    assert not failed, failed
    answers = [(answer, (200, _received(battle)), (200, _repeat(battle))) for battle, answer in clients.sent]
    assert all(answer in (received, repeat) for answer, received, repeat in answers), [
        answer for answer, received, repeat in answers if answer not in (received, repeat)
    ]
    assert sum(answer == repeat for answer, _, repeat in answers) <= CLIENTS
    with read_only(server.db_path) as db:
        logged = {
            (uploader, client_time, first, second): count
            for uploader, client_time, first, second, count in db.execute(
                "SELECT (SELECT name FROM uploaders WHERE id = b.uploader_id), b.client_time, f.full_name, s.full_name, count(*) FROM battles b "
                "JOIN bots f ON f.id = b.first_bot_id JOIN bots s ON s.id = b.second_bot_id "
                "GROUP BY b.uploader_id, b.client_time, f.full_name, s.full_name"
            )
        }
    sent = {(battle.uploader, battle.time_ms, battle.first.name, battle.second.name) for battle, _ in clients.sent}
    assert len(sent) == len(clients.sent)  # each upload its own result
    assert logged == {key: 1 for key in sent}  # each once, and nothing else
    assert _equal_to_rebuild(server.db_path) == len(sent)


def test_a_stopped_writer_is_found_hung_killed_and_replaced_and_every_upload_is_answered(tmp_path, clock):
    with live_server(tmp_path, workers=2, settings={"BATCH_INTERVAL_MINUTES": "0"}) as server:
        old = _writer_pid(server)
        with _uploading(server.url, clock.now_ms()) as clients:
            clients.wait_for(20)
            os.kill(old, signal.SIGSTOP)
            try:
                _wait_for_line(server, rf"the writer process {old} is hung \(no heartbeat for [\d.]+ s\): killed it")
                new = int(_wait_for_line(server, rf"started writer process (\d+) in place of {old}$")[1])
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(old, signal.SIGCONT)  # (killed already, unless the test failed before)
            _through(clients, new)
        assert not _alive(old) and _alive(new) and new != old
        _check_answers_and_log(server, clients)


def test_a_writer_killed_outright_is_replaced_and_every_upload_is_answered(tmp_path, clock):
    with live_server(tmp_path, workers=2, settings={"BATCH_INTERVAL_MINUTES": "0"}) as server:
        old = _writer_pid(server)
        with _uploading(server.url, clock.now_ms()) as clients:
            clients.wait_for(20)
            os.kill(old, signal.SIGKILL)
            _wait_for_line(server, rf"the writer process {old} ended \(")
            new = int(_wait_for_line(server, rf"started writer process (\d+) in place of {old}$")[1])
            _through(clients, new)
        assert not _alive(old) and _alive(new) and new != old
        _check_answers_and_log(server, clients)
