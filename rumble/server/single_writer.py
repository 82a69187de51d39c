"""One writer process for a server's uploads: the workers send it their write transactions'
work; it applies them in groups, one transaction per group (rumble.store.group_commit), and
answers each once its group is committed.

Why a process of its own: every upload needs the database's write lock, so the uploads of all
workers are applied one after another whatever the number of workers. Here the locked work runs
in a process that does nothing else, while the workers do the HTTP work, and a group gathers the
waiting uploads of every worker. It also keeps the one in-memory ratings copy uploads use
(rumble.ingest.fields), so no copy has to catch up with another worker's battles.

A work is a picklable callable of the connection (a module-level function, maybe in a
``functools.partial``), sent with a ``prepare`` callable run before the write lock, over the
standard library's ``multiprocessing.connection`` on a Unix socket in a directory only this user
can enter: only the server's own processes connect, so what comes through it is trusted like the
server's own code. The answer is the work's result or the exception it raised.

Should the writer be gone, a worker applies its uploads itself (``run_in_group``): slower, but they
keep flowing. A writer that ended or hung is replaced (``Supervisor``). Hung means its heartbeat
(``Pulse``) stood still for HUNG_SECONDS: a thread of the writer beats while its loop turns, and
while it is inside a group, which may wait as long as another process holds the write lock
(waiting for the lock is not hanging). A killed writer's unfinished transaction rolls back; the
workers apply what they had sent it and got no answer to, and one it committed just before it
stopped is then recognised as a repeat (``Writer``), never stored twice.

Writes other than uploads (admin actions, RemoveOldParticipant, the scheduled runs, the CLI) take
the write lock themselves: the writer holds it only while it applies a group.
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
import pickle
import resource
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, wait
from typing import Any, TypeVar

from rumble.server.kept_process import KeptProcess
from rumble.store import CHECKPOINT_EVERY, Store, checkpoint, connect, keep_temporary_in_memory
from rumble.store.group_commit import Work, apply_group, run_in_group

log = logging.getLogger(__name__)

T = TypeVar("T")
# The longest a worker waits for the writer's answer: the client gives up after 10 s (its read
# timeout), while a server error before then tells it to send the upload again. A hung writer is
# killed sooner and one that ended is noticed at once, so this bounds a writer waiting for a write
# lock another process holds.
ANSWER_TIMEOUT_SECONDS = 9.0
TURN_SECONDS = 0.25  # the writer's loop turns at least this often, idle or not (and looks whether the server is there)
BEAT_SECONDS = 0.5  # how often the writer's heartbeat thread looks at its loop, and beats if it made progress
HUNG_SECONDS = 3.0  # a writer whose heartbeat stood still this long is hung: it is killed and replaced
STARTUP_SECONDS = 60.0  # ...and one not beating yet this long after its start (a new interpreter: about a second)
PREFIX = "rumble-writer-"  # the socket directory's name, in the system's temporary directory
STALE_SECONDS = 60.0  # a socket directory younger than this may be one whose writer is still starting
BACKLOG = 4096  # connections waiting to be accepted (the kernel caps it at net.core.somaxconn): one per worker thread
RETRY_SECONDS = (
    2.0  # after the writer could not be reached, a worker applies uploads itself this long, then tries again
)


@dataclass(frozen=True)
class Started:
    """A running writer process and the socket the workers reach it on."""

    pid: int
    owner: int  # the process that started it (``rumble serve``'s arbiter)
    path: str


def start(
    db_path: str,
    synchronous: str,
    ready: Callable[[Store], None] | None = None,
    *,
    path: str | None = None,
    pulse: Pulse | None = None,
) -> Started:
    """Start the writer process for the database at ``db_path``; it ends when this process does.
    ``ready(connection)``, a module-level function, runs in it before it takes uploads (reading the
    ratings copies). It listens at ``path`` (an earlier writer's, which has ended) or on a new
    socket in a new directory, and beats ``pulse``.

    The writer is a new interpreter (``posix_spawn``), not a fork: writers are started from a
    thread, and a process forked while another thread holds a lock keeps it held for ever. It gets
    the listening socket, made here so that uploads sent while it starts wait for it, and the
    pulse's memory as open files."""
    if path is None:
        directory = tempfile.mkdtemp(prefix=PREFIX)  # mode 0700: only this user can reach the socket
        path = os.path.join(directory, "writer.sock")
    pulse = pulse or Pulse()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(BACKLOG)
        listener.set_inheritable(True)
        # It imports what this process imports, from where this one does (as multiprocessing's
        # spawn does): a work, and ``ready``, are pickled by reference to their module.
        command = "import json, sys; sys.path[:] = json.loads(sys.argv.pop(1)); import rumble.server.single_writer as w; w.main()"
        arguments = [json.dumps(sys.path), db_path, synchronous, str(os.getpid()), pickle.dumps(ready).hex()]
        arguments += [str(listener.fileno()), str(pulse.fd)]
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", command, *arguments], os.environ)
    return Started(pid, os.getpid(), path)


def main() -> None:
    """The writer process, as ``start`` runs it."""
    db_path, synchronous, parent, ready, listening, beating = sys.argv[1:]
    handler = logging.StreamHandler()  # its log lines as the server's (rumble.cli)
    handler.setFormatter(logging.Formatter("%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("rumble").addHandler(handler)
    logging.getLogger("rumble").setLevel(logging.INFO)
    listener = socket.socket(fileno=int(listening))
    code = 0
    try:
        _serve(listener, db_path, synchronous, int(parent), pickle.loads(bytes.fromhex(ready)), Pulse(int(beating)))
    except BaseException:
        log.exception("the writer process failed; the workers apply uploads themselves")
        code = 1
    finally:
        if os.getppid() != int(parent):  # the server is gone without a stop(); else its next writer uses it
            shutil.rmtree(os.path.dirname(listener.getsockname()), ignore_errors=True)
        os._exit(code)  # its daemon threads are not waited for


class Pulse:
    """The writer's heartbeat and figures, in memory the server's processes share: a memfd, mapped
    here and in the writer (``fd``, the open file ``start`` passes); gunicorn's workers, forked
    after it was made, read the figures for /healthz and /metrics (``state``). Each slot has one
    writing thread: the writer's heartbeat thread, its loop, or the supervisor's (the restarts)."""

    SLOTS = ("count", "beat_ns", "restarts", "groups", "requests", "queue")

    def __init__(self, fd: int | None = None) -> None:
        size = 8 * len(self.SLOTS)
        if fd is None:
            fd = os.memfd_create("rumble-writer-pulse")
            os.ftruncate(fd, size)
            os.set_inheritable(fd, True)  # for the writers to come (forked processes have it anyway)
        self.fd = fd
        self._slots = memoryview(mmap.mmap(fd, size)).cast("Q")

    def _slot(self, name: str) -> int:
        return self._slots[self.SLOTS.index(name)]

    def beat(self) -> None:
        self._slots[0] += 1
        self._slots[1] = time.monotonic_ns()  # CLOCK_MONOTONIC: one clock for every process of the machine

    @property
    def count(self) -> int:
        return self._slots[0]

    def restarted(self) -> None:
        self._slots[2] += 1

    def applied(self, requests: int) -> None:
        """The writer applied a group of ``requests`` (those waiting when it looked: its queue's depth)."""
        self._slots[3] += 1
        self._slots[4] += requests
        self._slots[5] = requests

    def state(self) -> dict[str, Any]:
        """The writer as the server's processes see it: ``answering`` while it beat within
        HUNG_SECONDS (else ``silent``: the workers apply uploads themselves until the supervisor
        has replaced it), how long ago it beat, its restarts, and the groups and requests it applied."""
        since = (time.monotonic_ns() - self._slot("beat_ns")) / 1e9 if self._slot("beat_ns") else None
        return {
            "state": "answering" if since is not None and since <= HUNG_SECONDS else "silent",
            "last_beat_seconds_ago": None if since is None else round(since, 3),
            "restarts": self._slot("restarts"),
            "groups": self._slot("groups"),
            "requests": self._slot("requests"),
            "queue_depth": self._slot("queue"),
        }


class Supervisor(KeptProcess):
    """The writer process of a server, kept serving at one socket path (``path``, in a new
    directory only this user can enter) for as long as the server runs, replaced should it end or
    hang (rumble.server.kept_process: its heartbeat is the ``Pulse``). ``rumble serve`` makes one
    before gunicorn's workers, which reach it at ``path``."""

    def __init__(self, db_path: str, synchronous: str, ready: Callable[[Store], None] | None = None) -> None:
        self.pulse = Pulse()
        directory = tempfile.mkdtemp(prefix=PREFIX)  # mode 0700
        remove_stale(os.path.dirname(directory), os.stat(directory).st_mtime)
        self.path = os.path.join(directory, "writer.sock")
        self._args = (db_path, synchronous, ready)
        self._launched = False
        super().__init__("writer", self._launch, lambda: self.pulse.count, HUNG_SECONDS, STARTUP_SECONDS)

    def _launch(self) -> int:
        pid = start(*self._args, path=self.path, pulse=self.pulse).pid
        if self._launched:
            self.pulse.restarted()
        self._launched = True
        return pid

    def stop(self) -> None:
        """End the writer process and remove its socket's directory (in the process that started it only)."""
        if os.getpid() == self.owner:
            super().stop()
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


def remove_stale(root: str, now: float) -> list[str]:
    """Remove the socket directories under ``root`` that writers killed outright left behind (a
    ``kill -9`` of the server's process group): this user's, a minute older than ``now`` or more,
    with no process listening on their socket. Returns the directories removed. ``now`` is the
    file system's clock (a directory just made), which file times are compared with, not the
    process's, which may differ (a test's shifted clock)."""
    removed = []
    for name in os.listdir(root):
        if not name.startswith(PREFIX):
            continue
        directory = os.path.join(root, name)
        try:
            info = os.lstat(directory)
        except OSError:
            continue
        if info.st_uid != os.getuid() or now - info.st_mtime < STALE_SECONDS:
            continue
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(os.path.join(directory, "writer.sock"))
        except (FileNotFoundError, ConnectionRefusedError):
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
        except OSError:
            pass  # busy or unreadable: not known to be stale
        finally:
            probe.close()
    return removed


# --- the writer process ----------------------------------------------------------------------


def _serve(
    listener: socket.socket,
    db_path: str,
    synchronous: str,
    parent: int,
    ready: Callable[[Store], None] | None,
    pulse: Pulse,
) -> None:
    """The writer's loop: take the requests waiting on every worker's connections, apply them as
    one group, answer each; end when the server that started it is gone."""
    # Ctrl-C, a hangup and gunicorn's own signals, sent to the whole group by some tools, are the
    # server's business: this process ends with the server (or on SIGTERM, from its supervisor).
    for name in ("SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGTTIN", "SIGTTOU"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    _raise_file_limit()  # one connection per upload a worker has under way
    # Starting (loading the rating code, opening the database, reading the ratings copies) may wait.
    progress = _Progress(busy=True)
    pulse.beat()  # the first, before anything is answered: the supervisor waits longer for it (STARTUP_SECONDS)
    threading.Thread(target=_heartbeat, args=(pulse, progress), name="rumble-heartbeat", daemon=True).start()
    from rumble.ratings.online import warm_up

    warm_up()  # the compiled rating step (read from numba's cache, which rumble serve wrote) before any upload
    db = open_database(db_path, synchronous)
    if ready is not None:
        ready(db)
    checkpoints = _Checkpoints(db_path, synchronous)
    listener.setblocking(False)
    # One selector for the loop's life, each connection registered once (``wait`` would register them all each turn).
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)  # (its data None; a connection's is the connection)

    def drop(conn: Connection) -> None:
        selector.unregister(conn)
        conn.close()

    progress.busy = False
    while os.getppid() == parent:
        progress.turns += 1
        waiting: list[tuple[Connection, bytes, Any]] = []
        ready_ones: list[Connection] = []
        for key, _ in selector.select(TURN_SECONDS):
            if key.data is not None:
                ready_ones.append(key.data)
                continue
            accepted = _accept(listener)  # new connections have usually sent their first request already
            for conn in accepted:
                selector.register(conn, selectors.EVENT_READ, conn)
            sent = wait(accepted, 0) if accepted else []
            ready_ones += [conn for conn in accepted if conn in sent]
        for ready_one in ready_ones:
            try:  # a worker sends a whole request at once: it is read without waiting
                preparation, work = ready_one.recv()
            except Exception:  # the worker closed it (or sent what it should not): dropped
                drop(ready_one)
                continue
            waiting.append((ready_one, preparation, work))
        if waiting:
            progress.busy = True  # the group may wait for the write lock as long as another process holds it
            try:
                for gone in _apply(db, waiting):
                    drop(gone)
            finally:
                progress.busy = False
            pulse.applied(len(waiting))
            if db.commits_since_checkpoint >= CHECKPOINT_EVERY:
                db.commits_since_checkpoint = 0
                checkpoints.due.set()


def _accept(listener: socket.socket) -> list[Connection]:
    """Every connection waiting to be accepted, as a ``multiprocessing.connection.Connection``."""
    found: list[Connection] = []
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return found
        except OSError:  # out of files, or a connection aborted: the rest wait for the next round
            log.exception("the writer process could not accept a worker's connection")
            return found
        conn.setblocking(True)
        found.append(Connection(conn.detach()))


@dataclass
class _Progress:
    """The writer loop's turns, and whether it is in a step that may wait on another process (starting, a group)."""

    turns: int = 0
    busy: bool = False


def _heartbeat(pulse: Pulse, progress: _Progress) -> None:
    """In a thread of the writer: every BEAT_SECONDS, a beat if the loop turned since the last look or is in a step that may wait."""
    seen = -1
    while True:
        time.sleep(BEAT_SECONDS)
        if progress.turns != seen or progress.busy:
            pulse.beat()
        seen = progress.turns


def open_database(db_path: str | os.PathLike, synchronous: str) -> Store:
    """The writer's connection (scripts/profile_upload.py profiles the writer's work on one too)."""
    db = connect(db_path, synchronous, migrate=False, autocheckpoint=False)
    keep_temporary_in_memory(db)
    return db


def _raise_file_limit() -> None:
    """Let this process open as many files as it may (its soft limit up to the hard one)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _apply(db: Store, waiting: list[tuple[Connection, bytes, Any]]) -> list[Connection]:
    """Apply the waiting requests as one group and answer each on its connection; the connections
    that could not take their answer (their worker went away: it applies what it still waits for
    itself), for the caller to drop."""
    works: list[Work] = []
    prepared: set[bytes] = set()
    for _, preparation, apply in waiting:
        try:
            if preparation not in prepared:  # once per group: uploads to one rumble all ask the same
                pickle.loads(preparation)(db)  # outside the write lock: e.g. reading a rumble's ratings copy
                prepared.add(preparation)
            works.append(Work(apply))
        except Exception as error:  # answered as that work's failure; the others go on
            work = Work(_unreachable)
            work.done, work.error = True, error
            works.append(work)
    try:
        apply_group(db, [work for work in works if not work.done])
    except Exception:
        log.exception("a group of uploads failed as a whole; each is answered with the error")
    gone = []
    for (conn, _, _), work in zip(waiting, works, strict=True):
        if work.error is not None:  # the worker sees the error, without its traceback: it is logged here
            log.error("an upload's transaction failed in the writer process", exc_info=work.error)
        try:
            conn.send_bytes(_answer(work))  # a few hundred bytes: the socket takes them at once
        except OSError:
            gone.append(conn)
    return gone


def _unreachable(db: Store) -> None:
    raise AssertionError("a work that could not be read is never applied")


def _answer(work: Work) -> bytes:
    """The answer to one request, pickled as ``Connection.recv`` reads it: (True, its result) or
    (False, its error)."""
    answer = (work.error is None, work.result if work.error is None else work.error)
    try:
        return pickle.dumps(answer)
    except Exception as error:  # an exception that cannot be pickled: say what it was
        return pickle.dumps((False, RuntimeError(f"{type(work.error or error).__name__}: {work.error or error}")))


class _Checkpoints:
    """A thread of the writer process that copies the WAL back into the database when asked, on
    a connection of its own, so that uploads are applied meanwhile (``rumble.store.checkpoint``)."""

    def __init__(self, db_path: str, synchronous: str) -> None:
        self.due = threading.Event()
        self._path, self._synchronous = db_path, synchronous
        threading.Thread(target=self._run, name="rumble-checkpoints", daemon=True).start()

    def _run(self) -> None:
        db = None
        while True:
            self.due.wait()
            self.due.clear()
            try:  # a failure is logged and the next checkpoint tried: the WAL must not grow without end
                db = db or connect(self._path, self._synchronous, migrate=False, autocheckpoint=False)
                checkpoint(db)
            except Exception:
                log.exception("the writer process's checkpoint failed")


# --- a worker's side -------------------------------------------------------------------------


def yield_cpu_to_writer() -> None:
    """Let the writer, the one stage every upload passes through one at a time, have the CPU before
    this worker when both want it (call before the worker's threads start: they inherit it). Under
    Linux's ``SCHED_BATCH`` a woken worker thread does not preempt the running writer; no privilege
    is needed. The worker keeps its nice value: a niced worker waits longer for a core, holding the
    uploads of its connections, than the writer gains (the README has the figures of both)."""
    if hasattr(os, "sched_setscheduler"):
        with contextlib.suppress(OSError):  # refused (a sandbox): the same work, only scheduled as before
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


class Writer:
    """A worker's way to the writer process: connections on its socket, one per upload under way,
    kept for the next once answered.

    A request the writer never answered because it ended (killed as hung, or crashed) is applied by
    the worker itself. That is safe for uploads: should the writer have committed it just before it
    ended, the log holds an equal result, which the second look finds (rumble.store.battle_log:
    it stores nothing), and the upload is answered as a repeat. The wait for an answer goes
    through ``selectors``, which gevent patches: it suspends only the request's greenlet."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._gone_until = 0.0  # monotonic time until which the writer is taken as gone; 0 once reached
        self._idle: list[Connection] = []
        self._pid = os.getpid()

    def run(self, db: Store, apply: Callable[[Store], T], prepare: Callable[[Store], Any]) -> T:
        """``apply(connection)`` in a committed write transaction of the writer process; its result,
        or the exception it raised. Without a writer (gone, never reached, or ended before it
        answered), on ``db`` here."""
        answer = self._ask((pickle.dumps(prepare), apply))
        if answer is None:  # not applied by the writer, nor will it be: applying it here cannot apply it twice
            prepare(db)
            return run_in_group(db, apply)
        ok, value = answer
        if not ok:
            raise value
        return value

    def _ask(self, message: tuple[bytes, Any]) -> tuple[bool, Any] | None:
        """The writer's answer to ``message``; None if it was not sent, or the writer ended before it answered."""
        for _ in range(2):
            conn = self._connection()
            if conn is None:
                return None
            try:
                conn.send(message)
                break
            except OSError:  # not sent whole (the writer applies whole requests only): that writer has ended
                conn.close()
                self.close()  # (the other idle connections were to it too): one more try, with the next writer
        else:
            return None
        try:
            if not _readable(conn, ANSWER_TIMEOUT_SECONDS):
                raise TimeoutError(f"no answer from the writer process in {ANSWER_TIMEOUT_SECONDS:g} s")
            answer = conn.recv()
        except (EOFError, ConnectionResetError):
            conn.close()
            log.error(
                "the writer process at %s ended before it answered; this worker applies the upload itself", self.path
            )
            return None
        except Exception as error:
            # Sent, and the writer is still there but gave no answer: it may or may not commit it. A
            # server fault, not a refusal: the client sends the battle again, and a stored one is
            # then recognised as a repeat.
            conn.close()
            raise RuntimeError("the writer process did not answer") from error
        self._idle.append(conn)
        return answer

    def _connection(self) -> Connection | None:
        """An idle connection to the writer, or a new one (None if the writer cannot be reached now)."""
        if self._pid != os.getpid():  # a forked child never uses its parent's connections
            self._idle, self._pid = [], os.getpid()
        if self._idle:
            return self._idle.pop()
        if time.monotonic() < self._gone_until:
            return None
        try:
            conn = Client(self.path, "AF_UNIX")
        except OSError as error:
            self._unreachable(error)
            return None
        self._gone_until = 0.0
        return conn

    def close(self) -> None:
        """Close this process's idle connections to the writer process (the next ``run`` opens another)."""
        idle, self._idle = self._idle, []
        if self._pid == os.getpid():
            for conn in idle:
                conn.close()

    def _unreachable(self, error: OSError) -> None:
        """A connection to the writer failed with ``error``: if no writer listens, it is taken as gone
        for RETRY_SECONDS (otherwise, its queue full or out of files, only this upload is applied
        here). Said once until the writer is reached again."""
        if isinstance(error, (FileNotFoundError, ConnectionRefusedError)):
            if self._gone_until == 0.0:
                log.error(
                    "the writer process at %s cannot be reached; this worker applies uploads itself "
                    "and tries again every %g s",
                    self.path,
                    RETRY_SECONDS,
                )
            self._gone_until = time.monotonic() + RETRY_SECONDS


def _readable(conn: Connection, timeout: float) -> bool:
    """Whether ``conn`` has something to read (an answer, or its end) within ``timeout`` seconds."""
    with selectors.DefaultSelector() as selector:
        selector.register(conn.fileno(), selectors.EVENT_READ)
        return bool(selector.select(timeout))
