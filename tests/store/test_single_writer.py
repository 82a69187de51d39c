"""The writer process (rumble/server/single_writer.py) on a real database file: a work sent to it
is applied in a committed transaction and its result or its exception comes back; works sent
together while the write lock is taken go in one transaction; without the process, a worker
applies its work itself; and the process ends with the one that started it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from functools import partial
from multiprocessing.connection import Client
from pathlib import Path

import pytest

from rumble import store
from rumble.server import single_writer
from rumble.store import admin_settings, group_commit
from rumble.store.group_commit import Work
from tests.e2e.test_group_commit import _commits  # transactions counted in the WAL file


def _put(name: str, value: int, db: store.Store) -> int:
    """A work: one setting written (admin_settings, which any test database has), and the pid that wrote it."""
    admin_settings.put_override(db, "test", name, value, "2000-01-01 00:00:00.000", "test")
    return os.getpid()


def _fail_after_writing(name: str, db: store.Store) -> None:
    admin_settings.put_override(db, "test", name, 1, "2000-01-01 00:00:00.000", "test")
    raise ValueError(f"no {name} for you")


def _nothing(db: store.Store) -> None:
    return None


def _put_large(letter: str, db: store.Store) -> None:
    """200 settings of 2,000 characters each: about 100 pages."""
    for k in range(200):
        admin_settings.put_override(db, "test", f"big{k}", letter * 2000, "2000-01-01 00:00:00.000", "test")


def _temporary_files_after_a_large_write(db: store.Store) -> list[str]:
    """A work that changes far more than 64 KiB of the database's pages inside its savepoint
    (where SQLite would spill the pages' first copies to a temporary file), then lists the
    temporary files this process has open."""
    _put_large("y", db)
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue  # the listing's own descriptor, already closed
    return [link for link in links if "etilqs_" in link]  # SQLite's temporary files' names


def _settings(path: Path) -> dict:
    db = store.connect(path, migrate=False)
    try:
        return {name: value for (scope, name), value in admin_settings.all_overrides(db).items() if scope == "test"}
    finally:
        db.close()


@pytest.fixture
def open_writer():
    """A worker's side of the writer (``single_writer.Writer``); its connection is closed after the test, pass or fail."""
    made: list[single_writer.Writer] = []

    def make(path: str) -> single_writer.Writer:
        made.append(single_writer.Writer(path))
        return made[-1]

    yield make
    for to_writer in made:
        to_writer.close()


@pytest.fixture
def writer(tmp_path):
    path = tmp_path / "rumble.db"
    db = store.connect(path)  # created and migrated
    started = single_writer.start(str(path), "NORMAL")
    # The writer, a new interpreter, imports this module at its first work: done before the test,
    # so that the test's works are applied as soon as they arrive.
    to_writer = single_writer.Writer(started.path)
    try:
        assert to_writer.run(db, _pid, _nothing) == started.pid
    finally:
        to_writer.close()
        db.close()
    yield path, started
    _stop(started)


def _stop(started: single_writer.Started) -> None:
    """End a writer this test started (not kept by a ``Supervisor``) and remove its socket's directory."""
    try:  # not yet collected (running, or a zombie): its pid cannot have been reused
        running = os.waitpid(started.pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        running = False
    if running:
        os.kill(started.pid, signal.SIGTERM)
        os.waitpid(started.pid, 0)
    shutil.rmtree(os.path.dirname(started.path), ignore_errors=True)


def _pid(db: store.Store) -> int:
    return os.getpid()


def test_a_work_is_applied_by_the_writer_process_and_committed(writer, open_writer):
    path, started = writer
    db = store.connect(path, migrate=False)
    to_writer = open_writer(started.path)
    applied_by = to_writer.run(db, partial(_put, "alpha", 7), _nothing)
    to_writer.close()
    db.close()
    assert applied_by == started.pid != os.getpid()
    assert _settings(path) == {"alpha": 7}


def test_a_failing_work_raises_its_own_error_here_and_leaves_nothing(writer, open_writer):
    path, started = writer
    db = store.connect(path, migrate=False)
    to_writer = open_writer(started.path)
    with pytest.raises(ValueError, match="^no beta for you$"):
        to_writer.run(db, partial(_fail_after_writing, "beta"), _nothing)
    assert _settings(path) == {}
    assert to_writer.run(db, partial(_put, "gamma", 3), _nothing) == started.pid  # and it goes on
    to_writer.close()
    db.close()
    assert _settings(path) == {"gamma": 3}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists open files through Linux's /proc")
def test_requests_on_one_connection_are_each_applied_and_answered_in_order(writer):
    """A worker's connection (``multiprocessing.connection``) carries one request after another,
    each its own answer; a request that fails is answered with its exception, the next goes on."""
    path, started = writer
    conn = Client(started.path, "AF_UNIX")
    try:
        for k, work in enumerate(
            [partial(_put, "one", 1), partial(_fail_after_writing, "two"), partial(_put, "three", 3)]
        ):
            conn.send((pickle.dumps(_nothing), work))
            ok, value = conn.recv()
            if k == 1:
                assert not ok and isinstance(value, ValueError) and str(value) == "no two for you"
            else:
                assert (ok, value) == (True, started.pid)
    finally:
        conn.close()
    assert _settings(path) == {"one": 1, "three": 3}


class _Sent:
    """A worker's connection as the writer sees it, keeping what each ``send_bytes`` was given
    (unpickled, as the worker's ``recv`` reads it)."""

    def __init__(self) -> None:
        self.sends: list = []

    def send_bytes(self, answer: bytes) -> None:
        self.sends.append(pickle.loads(answer))


def test_a_groups_answers_go_to_each_request_one_failing_alone(tmp_path):
    """Five requests applied as one group, one of them failing: each connection gets its own
    answer, and only the failing work is rolled back."""
    path = tmp_path / "rumble.db"
    store.connect(path).close()
    db = single_writer.open_database(path, "NORMAL")
    works = [
        partial(_put, "a0", 0),
        partial(_put, "b0", 10),
        partial(_fail_after_writing, "a1"),
        partial(_put, "a2", 2),
        partial(_put, "b1", 11),
    ]
    conns = [_Sent() for _ in works]
    try:
        single_writer._apply(  # what the writer's loop does with the requests of one round
            db, [(conn, pickle.dumps(_nothing), work) for conn, work in zip(conns, works, strict=True)]
        )
    finally:
        db.close()
    answers = [conn.sends for conn in conns]
    assert [len(sent) for sent in answers] == [1] * 5
    (ok, error) = answers[2][0]
    assert not ok and isinstance(error, ValueError) and str(error) == "no a1 for you"
    assert [answers[k][0] for k in (0, 1, 3, 4)] == [(True, os.getpid())] * 4
    assert _settings(path) == {"a0": 0, "a2": 2, "b0": 10, "b1": 11}  # the failing one alone rolled back


def test_the_writers_connection_keeps_savepoints_journal_in_memory(tmp_path):
    """A group one of whose works fails is applied again, each work in a savepoint
    (rumble/store/group_commit.py): on the writer's connection, a work that changes ~100 existing
    pages inside its savepoint leaves no SQLite temporary file open, and is committed."""
    path = tmp_path / "rumble.db"
    store.connect(path).close()  # created and migrated
    db = single_writer.open_database(path, "NORMAL")
    try:
        with store.write(db):
            _put_large("x", db)
        group = [Work(_temporary_files_after_a_large_write), Work(partial(_fail_after_writing, "beta"))]
        group_commit.apply_group(db, group)
    finally:
        db.close()
    assert (group[0].result, group[0].error) == ([], None)
    assert str(group[1].error) == "no beta for you"
    assert set(_settings(path).values()) == {"y" * 2000}


def test_works_waiting_for_the_lock_go_in_one_transaction(writer):
    path, started = writer
    to_writer = single_writer.Writer(started.path)
    results: dict[int, int] = {}

    def send(k: int) -> None:
        db = store.connect(path, migrate=False)
        try:
            results[k] = to_writer.run(db, partial(_put, f"w{k}", k), _nothing)
        finally:
            to_writer.close()
            db.close()

    with open(str(path) + ".lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # the writer's first group waits for it, the others queue
        threads = [threading.Thread(target=send, args=(k,)) for k in range(6)]
        for k, thread in enumerate(threads):
            thread.start()
            time.sleep(0.3 if k == 0 else 0.0)  # the first is taken alone; the others arrive while it waits
        time.sleep(1.0)
        assert results == {}  # nothing answered before its commit
        before = _commits(Path(str(path) + "-wal"))
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    for thread in threads:
        thread.join(30)
    assert results == {k: started.pid for k in range(6)}
    assert _settings(path) == {f"w{k}": k for k in range(6)}
    assert _commits(Path(str(path) + "-wal")) - before == 2  # the first work's group, then all the others


def test_without_the_writer_process_a_work_is_applied_here(tmp_path):
    path = tmp_path / "rumble.db"
    db = store.connect(path)
    prepared = []
    to_writer = single_writer.Writer(str(tmp_path / "no-such.sock"))
    assert to_writer.run(db, partial(_put, "delta", 4), prepared.append) == os.getpid()
    db.close()
    assert prepared == [db] and _settings(path) == {"delta": 4}


def test_the_writer_process_ends_when_the_process_that_started_it_is_gone(tmp_path):
    path = tmp_path / "rumble.db"
    store.connect(path).close()
    code = (
        "import sys, os; from rumble.server import single_writer; "
        f"started = single_writer.start({str(path)!r}, 'NORMAL'); print(started.pid, flush=True); os._exit(0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Running (a zombie nobody collected yet counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_worker_tries_the_writer_again_after_it_could_not_reach_it(writer, open_writer):
    path, started = writer
    db = store.connect(path, migrate=False)
    to_writer = open_writer(started.path + ".not-yet")  # nobody listens there
    assert to_writer.run(db, partial(_put, "epsilon", 5), _nothing) == os.getpid()  # applied here
    to_writer.path = started.path  # the writer is there now
    assert to_writer.run(db, partial(_put, "zeta", 6), _nothing) == os.getpid()  # not asked again so soon
    to_writer._gone_until = 0.0  # as if RETRY_SECONDS had passed
    assert to_writer.run(db, partial(_put, "eta", 7), _nothing) == started.pid
    to_writer.close()
    db.close()
    assert _settings(path) == {"epsilon": 5, "zeta": 6, "eta": 7}


def test_socket_directories_left_by_killed_writers_are_removed_and_live_ones_kept(tmp_path):
    now = tmp_path.stat().st_mtime  # the file system's clock, which the directories' times come from
    old = now - 2 * single_writer.STALE_SECONDS
    dead = tmp_path / f"{single_writer.PREFIX}dead"  # its writer was killed: a socket file, nobody listening
    dead.mkdir()
    gone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    gone.bind(str(dead / "writer.sock"))
    gone.close()
    empty = tmp_path / f"{single_writer.PREFIX}empty"  # killed before its socket was made
    empty.mkdir()
    live = tmp_path / f"{single_writer.PREFIX}live"
    live.mkdir()
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(live / "writer.sock"))
    listening.listen(1)
    young = tmp_path / f"{single_writer.PREFIX}young"  # a writer starting right now, its socket not bound yet
    young.mkdir()
    other = tmp_path / "unrelated"
    other.mkdir()
    for directory in (dead, empty, live, other):
        os.utime(directory, (old, old))
    try:
        assert sorted(single_writer.remove_stale(str(tmp_path), now)) == sorted([str(dead), str(empty)])
    finally:
        listening.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        f"{single_writer.PREFIX}live",
        f"{single_writer.PREFIX}young",
        "unrelated",
    ]


def _sleep_then_put(name: str, db: store.Store) -> int:
    time.sleep(1.0)
    return _put(name, 1, db)


def test_works_in_flight_at_once_are_each_answered_with_their_own_result(writer, open_writer):
    """Eight threads of one worker send their works at once, each on a connection of its own
    (kept for the next work once answered), and each gets its own result or exception."""
    path, started = writer
    to_writer, results = open_writer(started.path), {}

    def one(k: int) -> None:
        db = store.connect(path, migrate=False)
        work = partial(_fail_after_writing, "bad") if k == 2 else partial(_put, f"w{k}", k)
        try:
            results[k] = to_writer.run(db, work, _nothing)
        except ValueError as error:
            results[k] = error
        finally:
            db.close()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    failed = results.pop(2)
    assert isinstance(failed, ValueError) and str(failed) == "no bad for you"
    assert results == {k: started.pid for k in (0, 1, 3, 4, 5, 6, 7)}
    assert _settings(path) == {f"w{k}": k for k in (0, 1, 3, 4, 5, 6, 7)}
    assert 1 <= len(to_writer._idle) <= 8  # the connections are kept for the next works


def test_an_idle_connection_to_a_writer_that_ended_is_replaced_by_a_new_one(tmp_path, open_writer):
    """A worker keeps its connections between uploads; when their writer ends and the next one
    listens on the same path, the next work goes to the new writer, not to this process."""
    path = tmp_path / "rumble.db"
    db = store.connect(path)
    first = single_writer.start(str(path), "NORMAL")
    to_writer = open_writer(first.path)
    try:
        assert to_writer.run(db, _pid, _nothing) == first.pid
        os.kill(first.pid, signal.SIGKILL)
        os.waitpid(first.pid, 0)
        second = single_writer.start(str(path), "NORMAL", path=first.path)
        try:
            assert to_writer.run(db, _pid, _nothing) == second.pid
        finally:
            _stop(second)
    finally:
        db.close()


def _kill_after(seconds: float, pid: int) -> None:
    time.sleep(seconds)  # (not a timed wait on a lock: those never end under faketime's shifted clock)
    os.kill(pid, signal.SIGKILL)


def test_a_request_left_unanswered_by_a_writer_that_ends_is_applied_here(writer, open_writer):
    """The writer ends (killed) inside a work: its transaction ends with the process, and the work
    is applied here, once; with nobody listening any more, the next work is applied here too."""
    path, started = writer
    db = store.connect(path, migrate=False)
    to_writer = open_writer(started.path)
    killer = threading.Thread(target=_kill_after, args=(0.3, started.pid))  # while the writer is inside the work
    killer.start()
    try:
        assert to_writer.run(db, partial(_sleep_then_put, "slow"), _nothing) == os.getpid()
        os.waitpid(started.pid, 0)  # gone, with its listening socket
        assert to_writer.run(db, partial(_put, "after", 3), _nothing) == os.getpid()
    finally:
        killer.join()
        db.close()
    assert _settings(path) == {"slow": 1, "after": 3}


def test_a_work_waiting_longer_than_the_answer_timeout_gets_an_error(writer, open_writer, monkeypatch):
    path, started = writer
    monkeypatch.setattr(single_writer, "ANSWER_TIMEOUT_SECONDS", 0.3)
    db = store.connect(path, migrate=False)
    to_writer = open_writer(started.path)
    try:
        with pytest.raises(RuntimeError) as raised:
            to_writer.run(db, partial(_sleep_then_put, "slow"), _nothing)
    finally:
        db.close()
    assert str(raised.value) == "the writer process did not answer"
    assert isinstance(raised.value.__cause__, TimeoutError)
    assert to_writer._idle == []  # the connection that gave no answer is not used again


def test_a_worker_yields_to_the_writer_by_scheduling_class_not_by_nice():
    """A worker runs under SCHED_BATCH (a woken worker does not preempt the running writer) and
    keeps its nice value: a nice of 5 as well cost uploads (single_writer.yield_cpu_to_writer).
    In a process of its own, so that this one's scheduling is left alone."""
    probe = (
        "import os; from rumble.server import single_writer; before = os.nice(0); "
        "single_writer.yield_cpu_to_writer(); "
        "print(os.nice(0) - before, os.sched_getscheduler(0) == os.SCHED_BATCH)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True"]


@pytest.fixture
def supervised(tmp_path, monkeypatch):
    """A writer kept by a ``Supervisor`` in this process, which takes it as hung after 1 s without a beat."""
    monkeypatch.setattr(single_writer, "HUNG_SECONDS", 1.0)
    path = tmp_path / "rumble.db"
    store.connect(path).close()
    supervisor = single_writer.Supervisor(str(path), "NORMAL")
    yield path, supervisor
    supervisor.stop()


def _replaced(supervisor: single_writer.Supervisor, old: int) -> int:
    """The pid of the writer the supervisor started in place of ``old`` (waited for, 30 s at most)."""
    deadline = time.monotonic() + 30
    while supervisor.pid == old:
        assert time.monotonic() < deadline, "the writer was not replaced"
        time.sleep(0.05)
    return supervisor.pid


def test_a_stopped_writer_is_killed_and_replaced_and_what_it_left_unanswered_is_applied_here(supervised, open_writer):
    """SIGSTOP of the writer with a work sent to it: its heartbeat stops, the supervisor kills it
    and starts another on the same socket path; the work, unanswered, is applied here (the stopped
    writer never committed it), and the next work goes to the new writer."""
    path, supervisor = supervised
    old = supervisor.pid
    db = store.connect(path, migrate=False)
    to_writer, results = open_writer(supervisor.path), {}
    results["before"] = to_writer.run(db, partial(_put, "before", 1), _nothing)
    os.kill(old, signal.SIGSTOP)
    try:
        results["stuck"] = to_writer.run(db, partial(_put, "stuck", 2), _nothing)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(old, signal.SIGCONT)
    new = _replaced(supervisor, old)
    results["after"] = to_writer.run(db, partial(_put, "after", 3), _nothing)
    db.close()
    assert results == {"before": old, "stuck": os.getpid(), "after": new}
    assert not _alive(old) and _alive(new) and os.path.exists(supervisor.path)
    assert _settings(path) == {"before": 1, "stuck": 2, "after": 3}


def test_a_writer_that_died_is_replaced_on_the_same_path(supervised, open_writer):
    path, supervisor = supervised
    old = supervisor.pid
    os.kill(old, signal.SIGKILL)
    new = _replaced(supervisor, old)
    db = store.connect(path, migrate=False)
    try:
        assert open_writer(supervisor.path).run(db, partial(_put, "again", 1), _nothing) == new
    finally:
        db.close()
    assert os.path.exists(supervisor.path)


def test_a_writer_waiting_for_the_write_lock_is_not_taken_as_hung(supervised, open_writer):
    """The write lock held (here, by this test) three times as long as a silent writer would be
    taken as hung: the writer waits for it inside its group, keeps beating, and answers once it
    has the lock; it is not replaced, nor was it while idle before."""
    path, supervisor = supervised
    old = supervisor.pid
    to_writer, results = open_writer(supervisor.path), {}

    def send() -> None:
        db = store.connect(path, migrate=False)
        try:
            results["waited"] = to_writer.run(db, partial(_put, "waited", 1), _nothing)
        finally:
            to_writer.close()  # this thread's connection
            db.close()

    with open(str(path) + ".lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(3 * single_writer.HUNG_SECONDS)
        assert results == {}  # still waiting for the lock
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    sender.join(30)
    assert results == {"waited": old} and supervisor.pid == old


def test_writers_that_fail_to_start_are_started_again_after_a_growing_delay(tmp_path, caplog):
    supervisor = single_writer.Supervisor(str(tmp_path / "rumble.db"), "SOMETIMES")  # not a mode: each writer fails
    try:
        deadline = time.monotonic() + 30
        while not re.search(r"the writer process \d+ ended \([^)]*\); another starts in 1 s", caplog.text):
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.05)
    finally:
        supervisor.stop()
    assert not os.path.exists(os.path.dirname(supervisor.path))


def test_stop_ends_the_writer_and_removes_its_directory(tmp_path):
    path = tmp_path / "rumble.db"
    store.connect(path).close()
    supervisor = single_writer.Supervisor(str(path), "NORMAL")
    pid = supervisor.pid
    supervisor.stop()
    assert not _alive(pid) and not os.path.exists(os.path.dirname(supervisor.path))


def test_the_pulse_shares_the_writers_state_with_processes_forked_after_it(monkeypatch):
    """What /healthz and /metrics read: beats, groups and restarts written by one process are seen
    by another that shares the mapping (a fork, as gunicorn's workers are); a writer that has not
    beaten for longer than HUNG_SECONDS is silent."""
    pulse = single_writer.Pulse()
    assert pulse.state()["state"] == "silent" and pulse.state()["last_beat_seconds_ago"] is None
    beaten = time.monotonic_ns()
    monkeypatch.setattr(single_writer.time, "monotonic_ns", lambda: beaten)  # one instant, the child's too
    child = os.fork()
    if child == 0:  # the other process writes
        pulse.beat()
        pulse.applied(3)
        pulse.applied(5)
        pulse.restarted()
        os._exit(0)
    assert os.waitpid(child, 0)[1] == 0
    state = pulse.state()
    assert state["state"] == "answering" and state["last_beat_seconds_ago"] == 0
    assert (state["groups"], state["requests"], state["queue_depth"], state["restarts"]) == (2, 8, 5, 1)
    later = beaten + int((single_writer.HUNG_SECONDS + 1) * 1e9)
    monkeypatch.setattr(single_writer.time, "monotonic_ns", lambda: later)
    assert (
        pulse.state()["state"] == "silent" and pulse.state()["last_beat_seconds_ago"] == single_writer.HUNG_SECONDS + 1
    )
