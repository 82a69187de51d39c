"""One writer process for a server's uploads: the workers send it their write transactions'
work; it applies them in groups, in one transaction per group (rumble.store.group_commit), and
answers each once its group is committed.

Why a process of its own: every upload needs the database's write lock, so the uploads of all
workers are applied one after the other whatever the number of workers. Here the locked work runs
in a process that does nothing else, on one core, while the workers do the HTTP work on the
other, and a group gathers the waiting uploads of every worker. It also keeps the one in-memory
ratings copy (rumble.ingest.fields) that uploads use, so no copy has to be caught up with another
worker's battles.

``rumble serve`` starts it (``Supervisor``, through ``start``) before its workers; each worker
reaches it through a ``Writer`` (``rumble.web.client`` uses it when the app has one). A work is a
picklable callable of the connection (a module-level function, maybe in a ``functools.partial``),
sent with a ``prepare`` callable run outside the write lock first, over the standard library's
``multiprocessing.connection`` (messages of pickles on a Unix socket); the answer is the work's
result or the exception it raised. The socket lives in a directory only this user can
enter, and only the server's own processes connect to it, so what comes through it is trusted like
the server's own code. Should the process be gone (it ends with the server, or if it crashed), a
worker applies its uploads itself as before (``run_in_group``): uploads keep flowing, only slower.

A writer that ended or hung is replaced while the server runs (``Supervisor``, a thread of the
process that started it). Hung means its heartbeat (``Pulse``) stood still for HUNG_SECONDS: a
thread of the writer beats every BEAT_SECONDS while its loop turns, and also while the loop is
inside a group, which may wait as long as another process holds the write lock (a maintenance
swap, an admin action): waiting for the lock is not hanging, and a new writer would only wait
for the same lock. (So a group that never ends is not taken as hung either: its uploads are
answered with a server error after ANSWER_TIMEOUT_SECONDS.) A stopped process (SIGSTOP) beats
no more, since all its threads stop. A hung
writer is killed (SIGKILL): its unfinished transaction rolls back and its write lock is released,
so nothing it did not answer is committed, except what it committed just before it stopped. Its
workers see its connections close, and each request they sent and had no answer to is applied by
the worker itself; an upload the writer had committed is then recognised as a repeat (below), so
none is stored twice. The next writer listens on the same path, where the workers find it.

Writes other than uploads (admin actions, RemoveOldParticipant, the scheduled runs, the CLI) still
take the write lock themselves: the writer holds it only while it applies a group.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import mmap
import os
import pickle
import resource
import select
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
from functools import reduce
from multiprocessing.connection import Client, Connection, wait
from typing import Any, TypeVar

from rumble.server.kept_process import RESTART_DELAY_MAX_SECONDS, STEADY_SECONDS, end, ended
from rumble.store import CHECKPOINT_EVERY, Store, checkpoint, connect, keep_temporary_in_memory
from rumble.store.group_commit import Work, apply_group, run_in_group

log = logging.getLogger(__name__)

T = TypeVar("T")
# The longest a worker waits for the writer's answer to a request: the client gives up after 10 s
# (its read timeout), so a later answer reaches nobody, while a server error before then tells the
# client to send the upload again. A hung writer is killed sooner (HUNG_SECONDS) and one that ended
# is noticed at once, so this bounds only a writer waiting for a write lock another process holds.
ANSWER_TIMEOUT_SECONDS = 9.0
TURN_SECONDS = 0.25  # the writer's loop turns at least this often, idle or not (and looks whether the server is there)
BEAT_SECONDS = 0.5  # how often the writer's heartbeat thread looks at its loop, and beats if it made progress
HUNG_SECONDS = 3.0  # a writer whose heartbeat stood still this long is hung: it is killed and replaced
STARTUP_SECONDS = 60.0  # ...and one not beating yet this long after its start (a new interpreter: about a second)
CHECK_SECONDS = 0.5  # how often the supervisor looks at the heartbeat (a writer that ended is noticed at once)
END_WAIT_SECONDS = 10.0  # the supervisor's longest wait for a writer it signalled to end
PREFIX = "rumble-writer-"  # the socket directory's name, in the system's temporary directory
STALE_SECONDS = 60.0  # a socket directory younger than this may be one whose writer is still starting
BACKLOG = 4096  # connections waiting to be accepted (the kernel caps it at net.core.somaxconn): one per worker thread
# After the writer could not be reached, a worker applies uploads itself this long, then tries again
# (the supervisor has usually put a new writer in its place by then).
RETRY_SECONDS = 2.0


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
    ratings copies). It listens on a new socket in a new directory, or at ``path``, an earlier
    writer's (that writer has ended), and beats ``pulse`` (``Supervisor`` watches it).

    The writer is a new interpreter (``posix_spawn``), not a fork of this process: the supervisor
    starts writers from a thread, and a process forked while another thread holds a lock (a
    buffered stream's, SQLite's) keeps it held for ever. It gets the listening socket and the
    pulse's memory as open files; the socket is made here, so that uploads sent while the writer
    starts wait for it (a gunicorn worker forked at this very moment keeps a copy: it keeps this
    path connectable after this writer ends, only until the supervisor puts the next one there)."""
    if path is None:
        directory = tempfile.mkdtemp(prefix=PREFIX)  # mode 0700: only this user can reach the socket
        remove_stale(os.path.dirname(directory), os.stat(directory).st_mtime)
        path = os.path.join(directory, "writer.sock")
    pulse = pulse or Pulse()
    with _listen(path) as listener:
        listener.set_inheritable(True)
        # It imports what this process imports, from where this one does (as multiprocessing's
        # spawn does): a work is pickled by reference to its module.
        command = (
            "import json, sys; sys.path[:] = json.loads(sys.argv.pop(1)); "
            "import rumble.server.single_writer as writer; writer.main()"
        )
        arguments = [json.dumps(sys.path), db_path, synchronous, str(os.getpid()), _name_of(ready)]
        arguments += [str(listener.fileno()), str(pulse.fd)]
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", command, *arguments], os.environ)
    return Started(pid, os.getpid(), path)


def main() -> None:
    """The writer process, as ``start`` runs it: its arguments are the database, its synchronous
    setting, the process that started it, ``ready``'s name, and the listening socket's and the
    pulse's open files."""
    db_path, synchronous, parent, ready, listening, beating = sys.argv[1:]
    handler = logging.StreamHandler()  # its log lines as the server's (rumble.cli)
    handler.setFormatter(logging.Formatter("%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("rumble").addHandler(handler)
    logging.getLogger("rumble").setLevel(logging.INFO)
    listener = socket.socket(fileno=int(listening))
    code = 0
    try:
        _serve(listener, db_path, synchronous, int(parent), _named(ready), Pulse(int(beating)))
    except BaseException:
        log.exception("the writer process failed; the workers apply uploads themselves")
        code = 1
    finally:
        if os.getppid() != int(parent):  # the server is gone without a stop(); else its next writer uses it
            shutil.rmtree(os.path.dirname(listener.getsockname()), ignore_errors=True)
        os._exit(code)  # its daemon threads are not waited for


def _name_of(function: Callable[[Store], None] | None) -> str:
    """``module:qualified name`` of a module-level function, for a new interpreter to import ("" for None)."""
    if function is None:
        return ""
    name = f"{function.__module__}:{function.__qualname__}"
    if _named(name) is not function:
        raise ValueError(f"{function!r} is not a module-level function")
    return name


def _named(name: str) -> Callable[[Store], None] | None:
    if not name:
        return None
    module, qualified = name.split(":")
    function: Any = reduce(getattr, qualified.split("."), importlib.import_module(module))
    return function


def _listen(path: str) -> socket.socket:
    """A socket listening at ``path`` (in place of an earlier writer's, which has ended)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(BACKLOG)
    return listener


class Pulse:
    """The writer's heartbeat and figures, in memory the server's processes share: a memfd, mapped
    here and, from the open file ``start`` passes, in the writer (``fd`` opens an existing one);
    gunicorn's workers, forked after it was made, share the mapping too and read the figures for
    /healthz and /metrics (``state``).

    Each slot has one writing thread: the writer's heartbeat thread the beats and when it last beat,
    the writer's loop its groups, the supervisor the restarts (one writer at a time: the supervisor
    starts the next once this one is gone)."""

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


class Supervisor:
    """Keeps a writer process serving at one socket path for as long as the server runs (``rumble
    serve`` makes one before gunicorn's workers; they reach it at ``path``).

    A thread of this process watches the writer through a pidfd (readable once it has ended, and a
    handle no other process can take over, unlike its pid: gunicorn's arbiter collects every child
    that ends) and through its ``Pulse``. A writer that ended is replaced at once; one whose pulse
    stood still for HUNG_SECONDS (STARTUP_SECONDS before its first beat, which comes once its
    interpreter has started) is killed first (SIGKILL: a stopped process ends only so). The
    thread holds no lock a process forked meanwhile (a gunicorn worker) could need: it waits in
    ``select``, and the locks of logging, which it shares, are made anew in a forked process
    (``logging`` registers that with ``os.register_at_fork``). Writers that fail to start one after
    another are started again after a delay that doubles, up to RESTART_DELAY_MAX_SECONDS."""

    def __init__(self, db_path: str, synchronous: str, ready: Callable[[Store], None] | None = None) -> None:
        self._args = (db_path, synchronous, ready)
        self.pulse = Pulse()
        self.started = start(db_path, synchronous, ready, pulse=self.pulse)
        self.path, self.owner = self.started.path, self.started.owner
        self._pidfd: int | None = os.pidfd_open(self.started.pid)
        self._since = time.monotonic()  # when the current writer started
        self._failed_starts = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="rumble-writer-supervisor", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        first = seen = self.pulse.count  # (the count when the writer started, and when last seen to move)
        moved = looked = time.monotonic()
        while not self._stopping.is_set():
            ended = self._pidfd is None or bool(select.select([self._pidfd], [], [], CHECK_SECONDS)[0])
            if self._stopping.is_set():
                return
            now = time.monotonic()
            # A look much later than due (this process got no CPU, or the machine was suspended) says
            # nothing against the writer, which may not have had the CPU to beat either.
            if self.pulse.count != seen or now - looked > CHECK_SECONDS + HUNG_SECONDS / 2:
                seen, moved = self.pulse.count, now
            looked = now
            limit = HUNG_SECONDS if seen != first else STARTUP_SECONDS  # its first beat comes after its imports
            if ended:
                self._replace(None)
            elif now - moved > limit:
                self._replace(now - moved)
            else:
                continue
            first = seen = self.pulse.count
            moved = time.monotonic()

    def _replace(self, silent: float | None) -> None:
        """Start a writer in place of the one that ended, or (``silent``: its pulse stood still that
        many seconds) of the hung one, which is killed first."""
        old = self.started.pid
        if self._pidfd is not None:
            if silent is not None:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            how = ended(self._pidfd, END_WAIT_SECONDS)
            self._pidfd = None
            if silent is not None:
                log.error("the writer process %d is hung (no heartbeat for %.1f s): killed it (%s)", old, silent, how)
            else:
                log.error("the writer process %d ended (%s)", old, how)
        short = time.monotonic() - self._since < STEADY_SECONDS and silent is None
        self._failed_starts = self._failed_starts + 1 if short else 0
        if self._failed_starts > 1:  # the first quick end is started again at once
            delay = min(2.0 ** (self._failed_starts - 2), RESTART_DELAY_MAX_SECONDS)
            log.error(
                "the writer process failed to start %d times in a row; next try in %g s", self._failed_starts, delay
            )
            if self._stopping.wait(delay):
                return
        self._since = time.monotonic()
        try:
            self.started = start(*self._args, path=self.path, pulse=self.pulse)
            self._pidfd = os.pidfd_open(self.started.pid)
        except Exception:  # no socket or process could be made, or the new writer ended already: next turn
            log.exception("could not start a writer process in place of %d", old)
            return
        self.pulse.restarted()
        log.warning("started writer process %d in place of %d", self.started.pid, old)

    def stop(self) -> None:
        """Stop watching, end the writer process and remove its socket's directory (in the process
        that started them only: a gunicorn worker, forked from it, leaves through the same code)."""
        if os.getpid() != self.owner:
            return
        self._stopping.set()
        self._thread.join(2 * END_WAIT_SECONDS)
        if self._pidfd is not None:
            end(self._pidfd)
            self._pidfd = None
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


def stop(started: Started) -> None:
    """End the writer process and remove its socket's directory (in the process that started it
    only: a gunicorn worker, forked from it, leaves through the same code)."""
    if os.getpid() != started.owner:
        return
    try:
        # Still this process's child (running, or ended but not collected): its pid cannot have been
        # reused. Already collected (gunicorn collects every child that ends): nothing to signal.
        ended, _ = os.waitpid(started.pid, os.WNOHANG)
    except ChildProcessError:
        ended = started.pid
    if ended == 0:
        os.kill(started.pid, signal.SIGTERM)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(started.pid, 0)
    shutil.rmtree(os.path.dirname(started.path), ignore_errors=True)


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
    # Ctrl-C, a terminal's hangup and gunicorn's own signals (reload, reopen logs, add or remove
    # workers: sent to the whole group by some tools) are the server's business; this process ends
    # with the server (or on SIGTERM, from ``stop``).
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
    # One selector for the loop's life: each connection is registered once, when accepted (a
    # selector made anew each turn, as multiprocessing.connection.wait makes one, registers them all
    # at every turn).
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
    """How far the writer's loop has come: its turns, and whether it is inside a step that may wait
    on another process (starting, or applying a group)."""

    turns: int = 0
    busy: bool = False


def _heartbeat(pulse: Pulse, progress: _Progress) -> None:
    """In a thread of the writer: every BEAT_SECONDS, a beat if the loop turned since the last look
    or is inside a step that may wait (waiting for the write lock is not hanging: the module says why)."""
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
    """Let the writer have the CPU before this worker when both want it (call before the worker's
    threads start: they inherit it).

    The writer is the one stage every upload passes through one at a time; the workers' stages run
    side by side. On Linux a worker runs under ``SCHED_BATCH``: a worker thread that is woken (a
    client's request, the writer's answer) does not preempt the running writer, it runs at the next
    scheduling point. No privilege is needed. In scripts/bench_upload.py's living scenario it took
    about a tenth more uploads per second (runs with and without, alternating).

    The worker keeps its nice value: on Linux 6.18's scheduler (EEVDF) a niced worker waits longer
    for a core (it holds the uploads of its connections) than the writer gains. In 6 alternating 8 s
    rounds of the living scenario, nice 0 gave a median of 2,461 uploads/s against 2,366 with nice 5
    and 2,420 with nice 2."""
    if hasattr(os, "sched_setscheduler"):
        with contextlib.suppress(OSError):  # refused (a sandbox): the same work, only scheduled as before
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


class Writer:
    """A worker's way to the writer process: ``multiprocessing.connection`` connections on its Unix
    socket, one per upload under way, kept for the next once answered.

    A request the writer was sent and never answered because it ended (its connection closed:
    killed as hung by the supervisor, or crashed) is applied by the worker itself. That is safe for
    the works sent here, uploads: the writer may have committed it just before it ended, but the
    battle log's unique index on a result's identity (``battles_identity``: rumble, client time,
    uploader, both bots and their figures; migrations/0001_battle_log.sql) makes the second insert
    (it ignores a conflict: rumble.store.battle_log.append_battle) store nothing, and
    rumble.ingest.apply.apply_battle then changes nothing else: the upload is answered as a repeat.

    The wait for an answer goes through ``selectors`` (looked up at each call), so that under
    gunicorn's gevent worker, which patches that module, it suspends only the request's greenlet."""

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
        conn = self._connection()
        if conn is None:
            return None
        try:
            conn.send(message)
        except OSError:  # not sent whole: the writer applies whole requests only
            conn.close()
            # Its writer ended since this connection was last used, and so did the other idle
            # ones'; the supervisor has usually put the next writer in its place: one more try.
            self.close()
            conn = self._connection()
            if conn is None:
                return None
            try:
                conn.send(message)
            except OSError:
                conn.close()
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
