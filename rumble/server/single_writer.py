"""One writer process for a server's uploads: the workers send it their write transactions'
work; it applies them in groups, in one transaction per group (rumble.store.group_commit), and
answers each once its group is committed.

Why a process of its own: every upload needs the database's write lock, so the uploads of all
workers are applied one after the other whatever the number of workers. When a worker applies
them itself, its other threads (reading and answering HTTP requests) share its interpreter lock
with the thread holding the write lock, and the other worker waits for that lock: the locked work
of one upload is stretched by the HTTP work of others, and the two workers mostly take turns.
Here the locked work runs in a process that does nothing else, on one core, while the workers
do the HTTP work on the other, and a group gathers the waiting uploads of every worker, not of
one. It also keeps the one in-memory ratings copy (rumble.ingest.fields) that uploads use, so no copy
has to be caught up with another worker's battles.

``rumble serve`` starts it (``Supervisor``, through ``start``) before its workers; each worker
reaches it through a ``Writer`` (``rumble.web.client`` uses it when the app has one). A work is a
picklable callable of the connection (a module-level function, maybe in a ``functools.partial``),
sent with a ``prepare`` callable run outside the write lock first; the answer is the work's result
or the exception it raised, pickled back. The socket lives in a directory only this user can
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
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial, reduce
from typing import Any, TypeVar

from rumble.server import main_loop
from rumble.store import CHECKPOINT_EVERY, Store, checkpoint, connect, keep_temporary_in_memory
from rumble.store.group_commit import Work, apply_group, run_in_group

log = logging.getLogger(__name__)

T = TypeVar("T")
HEADER = struct.Struct(">I")  # a length: of each message and answer, then of a request's preparation (``request``)
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
STEADY_SECONDS = 10.0  # a writer that ends sooner than this after its start counts as one that failed to start
RESTART_DELAY_MAX_SECONDS = 60.0  # after writers that failed to start one after another, the longest wait for the next
MAX_MESSAGE_BYTES = 1 << 20  # an upload's work is a few hundred bytes; anything larger is not from a worker
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
    """The writer's heartbeat: a count in memory that the writer's heartbeat thread raises and its
    supervisor watches move (a memfd, mapped here and, from the open file ``start`` passes, in the
    writer; ``fd`` opens an existing one)."""

    def __init__(self, fd: int | None = None) -> None:
        if fd is None:
            fd = os.memfd_create("rumble-writer-pulse")
            os.ftruncate(fd, 8)
            os.set_inheritable(fd, True)  # for the writers to come (forked processes have it anyway)
        self.fd = fd
        self._count = memoryview(mmap.mmap(fd, 8)).cast("Q")

    def beat(self) -> None:
        self._count[0] += 1  # one writer at a time: the supervisor starts the next once this one is gone

    @property
    def count(self) -> int:
        return self._count[0]


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
            how = _end_of(self._pidfd)
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
        log.warning("started writer process %d in place of %d", self.started.pid, old)

    def stop(self) -> None:
        """Stop watching, end the writer process and remove its socket's directory (in the process
        that started them only: a gunicorn worker, forked from it, leaves through the same code)."""
        if os.getpid() != self.owner:
            return
        self._stopping.set()
        self._thread.join(2 * END_WAIT_SECONDS)
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGTERM)
            if not select.select([self._pidfd], [], [], END_WAIT_SECONDS)[0]:  # stopped (SIGSTOP): SIGTERM waits
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            _end_of(self._pidfd)
            self._pidfd = None
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


def _end_of(pidfd: int) -> str:
    """Wait (END_WAIT_SECONDS at most) for the process of ``pidfd`` to end, collect it, close the
    pidfd; say how it ended."""
    how = "its end not seen"
    if select.select([pidfd], [], [], END_WAIT_SECONDS)[0]:
        how = "its status collected by gunicorn"  # gunicorn's arbiter collects every child that ends, maybe first
        with contextlib.suppress(ChildProcessError):
            ended = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG)
            if ended is not None and ended.si_code == os.CLD_EXITED:
                how = f"exit status {ended.si_status}"
            elif ended is not None:
                how = f"signal {ended.si_status}: {signal.strsignal(ended.si_status)}"
    os.close(pidfd)
    return how


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
    """The writer's loop: read whole requests from every worker's connections, apply all that are
    waiting as one group, answer each; end when the server that started it is gone."""
    # Ctrl-C, a terminal's hangup and gunicorn's own signals (reload, reopen logs, add or remove
    # workers: sent to the whole group by some tools) are the server's business; this process ends
    # with the server (or on SIGTERM, from ``stop``).
    for name in ("SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGTTIN", "SIGTTOU"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    _raise_file_limit()  # one connection per worker thread
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
    poller = select.epoll()
    poller.register(listener.fileno(), select.EPOLLIN)
    peers: dict[int, _Peer] = {}
    progress.busy = False
    while os.getppid() == parent:
        progress.turns += 1
        waiting: list[tuple[socket.socket, bytes]] = []
        for fd, _ in poller.poll(TURN_SECONDS):
            if fd == listener.fileno():  # new connections have usually sent their first request already
                for peer in _accept(listener, poller, peers):
                    waiting += _read(peer, poller, peers)
            elif fd in peers:  # (not if dropped earlier in this round)
                waiting += _read(peers[fd], poller, peers)
        if waiting:
            progress.busy = True  # the group may wait for the write lock as long as another process holds it
            try:
                _apply(db, waiting)
            finally:
                progress.busy = False
            if db.commits_since_checkpoint >= CHECKPOINT_EVERY:
                db.commits_since_checkpoint = 0
                checkpoints.due.set()


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


@dataclass
class _Peer:
    """A worker thread's connection, and what it sent that is not yet a whole request."""

    conn: socket.socket
    buffer: bytearray


def _accept(listener: socket.socket, poller: select.epoll, peers: dict[int, _Peer]) -> list[_Peer]:
    """Every connection waiting to be accepted (a worker's threads connect when first used)."""
    found: list[_Peer] = []
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return found
        except OSError:  # out of files, or a connection aborted: the rest wait for the next round
            log.exception("the writer process could not accept a worker's connection")
            return found
        conn.setblocking(False)
        poller.register(conn.fileno(), select.EPOLLIN)
        peers[conn.fileno()] = peer = _Peer(conn, bytearray())
        found.append(peer)


def _read(peer: _Peer, poller: select.epoll, peers: dict[int, _Peer]) -> list[tuple[socket.socket, bytes]]:
    """The whole requests that have arrived on ``peer``; a closed or misbehaving connection is dropped."""
    conn, buffer = peer.conn, peer.buffer
    try:
        data = conn.recv(65536)
    except BlockingIOError:
        return []
    except OSError:
        data = b""
    if not buffer and len(data) > HEADER.size and HEADER.unpack_from(data)[0] == len(data) - HEADER.size:
        return [(conn, data[HEADER.size :])]  # the usual case: exactly one whole request
    buffer += data
    found = [(conn, message) for message in _whole_messages(buffer, MAX_MESSAGE_BYTES)]
    if not data or (len(buffer) >= HEADER.size and HEADER.unpack_from(buffer)[0] > MAX_MESSAGE_BYTES):
        poller.unregister(conn.fileno())
        del peers[conn.fileno()]
        conn.close()
    return found


def _whole_messages(buffer: bytearray, limit: int | None = None) -> list[bytes]:
    """Take every whole message (its length, then that many bytes) off the start of ``buffer``; one
    longer than ``limit`` stays there, for the caller to refuse."""
    found = []
    while len(buffer) >= HEADER.size:
        (size,) = HEADER.unpack_from(buffer)
        if (limit is not None and size > limit) or len(buffer) < HEADER.size + size:
            break
        found.append(bytes(buffer[HEADER.size : HEADER.size + size]))
        del buffer[: HEADER.size + size]
    return found


def _apply(db: Store, waiting: list[tuple[socket.socket, bytes]]) -> None:
    """Apply the waiting requests as one group and answer each on its connection."""
    works: list[Work] = []
    prepared: set[bytes] = set()
    for _, message in waiting:
        try:
            (size,) = HEADER.unpack_from(message)
            prepare, apply = message[HEADER.size : HEADER.size + size], message[HEADER.size + size :]
            if prepare not in prepared:  # once per group: uploads to one rumble all ask the same
                pickle.loads(prepare)(db)  # outside the write lock: e.g. reading a rumble's ratings copy
                prepared.add(prepare)
            works.append(Work(pickle.loads(apply)))
        except Exception as error:  # answered as that work's failure; the others go on
            work = Work(_unreachable)
            work.done, work.error = True, error
            works.append(work)
    try:
        apply_group(db, [work for work in works if not work.done])
    except Exception:
        log.exception("a group of uploads failed as a whole; each is answered with the error")
    answers: dict[socket.socket, bytearray] = {}  # one send per connection: its worker is woken once
    for (conn, _), work in zip(waiting, works, strict=True):
        if work.error is not None:  # the worker sees the error, without its traceback: it is logged here
            log.error("an upload's transaction failed in the writer process", exc_info=work.error)
        answers.setdefault(conn, bytearray()).extend(_answer(work))
    for conn, data in answers.items():
        _send(conn, data)


def _unreachable(db: Store) -> None:
    raise AssertionError("a work that could not be read is never applied")


def _answer(work: Work) -> bytes:
    """The answer to one request, as sent: its length, then the pickled (ok, result or error)."""
    try:
        payload = pickle.dumps((work.error is None, work.result if work.error is None else work.error))
    except Exception as error:  # an exception that cannot be pickled: say what it was
        payload = pickle.dumps((False, RuntimeError(f"{type(work.error or error).__name__}: {work.error or error}")))
    return HEADER.pack(len(payload)) + payload


def _send(conn: socket.socket, data: bytearray) -> None:
    """Send a worker's answers, in the order its requests came."""
    try:
        sent = conn.send(data)  # a worker reads its answers at once: they fit the socket's buffer
        if sent < len(data):  # they did not: wait for the rest, never longer than a worker would
            conn.settimeout(ANSWER_TIMEOUT_SECONDS)
            conn.sendall(data[sent:])
            conn.setblocking(False)
    except OSError:
        # The worker went away, or took too long: an answer may be cut, so the connection is shut
        # (and dropped at its next read); the worker applies what it still waits for itself.
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)


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
    """A worker's way to the writer process: one connection per thread, opened when first used.

    A request the writer was sent and never answered because it ended (its connection closed:
    killed as hung by the supervisor, or crashed) is applied by the worker itself. That is safe for
    the works sent here, uploads: the writer may have committed it just before it ended, but the
    battle log's unique index on a result's identity (``battles_identity``: rumble, client time,
    uploader, both bots and their figures; migrations/0001_battle_log.sql) makes the second insert
    (it ignores a conflict: rumble.store.battle_log.append_battle) store nothing, and
    rumble.ingest.apply.apply_battle then changes nothing else: the upload is answered as a repeat."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._gone_until = 0.0  # monotonic time until which the writer is taken as gone; 0 once reached
        self._channels: dict[int, Channel] = {}  # by process id: the main thread's channel (``_channel``)

    def run(self, db: Store, apply: Callable[[Store], T], prepare: Callable[[Store], Any]) -> T:
        """``apply(connection)`` in a committed write transaction of the writer process; its result,
        or the exception it raised. Without a writer (gone, never reached, or ended before it
        answered), on ``db`` here.

        In a task of the worker's main thread (rumble.server.main_loop) the request goes on the worker's
        one ``Channel`` and the task is suspended until its answer arrives; elsewhere it goes on
        this thread's own connection, and the thread waits in ``recv``."""
        message = request(apply, prepare)
        loop = main_loop.current_loop()
        answer = self._ask_in_task(loop, message) if loop is not None else self._ask_in_thread(message)
        if answer is None:  # not applied by the writer, nor will it be: applying it here cannot apply it twice
            prepare(db)
            return run_in_group(db, apply)
        ok, value = answer
        if not ok:
            raise value
        return value

    def _ask_in_task(self, loop: main_loop.Loop, message: bytes) -> tuple[bool, Any] | None:
        """The writer's answer to ``message``, sent on the main thread's channel; None if it was not
        sent, or the writer ended before it answered."""
        channel = self._channel(loop)
        if channel is None or not channel.send(message):
            # Not sent: applied here, never by waiting on a connection in the main thread; the
            # pool's threads serve the next uploads for a while.
            loop.decline(RETRY_SECONDS)
            return None
        ok, value = main_loop.suspend()
        if not ok and isinstance(value, WriterEnded):
            return None
        return ok, value

    def _ask_in_thread(self, message: bytes) -> tuple[bool, Any] | None:
        """The writer's answer to ``message``, sent on this thread's connection; None if it was not
        sent, or the writer ended before it answered."""
        conn = None if time.monotonic() < self._gone_until else self._connection()
        if conn is None:
            return None
        try:
            conn.sendall(message)
        except OSError:  # not sent whole: the writer applies whole requests only
            self._drop(conn)
            return None
        try:
            return pickle.loads(_receive(conn))
        except (EOFError, ConnectionResetError):
            self._drop(conn)
            log.error(
                "the writer process at %s ended before it answered; this worker applies the upload itself", self.path
            )
            return None
        except (OSError, pickle.UnpicklingError) as error:
            # Sent, and the writer is still there but gave no answer: it may or may not commit it. A
            # server fault, not a refusal: the client sends the battle again, and a stored one is
            # then recognised as a repeat.
            self._drop(conn)
            raise RuntimeError("the writer process did not answer") from error

    def _channel(self, loop: main_loop.Loop) -> Channel | None:
        """This process's channel for its main thread's tasks, connected when first needed (None if
        the writer cannot be reached now)."""
        channel = self._channels.get(os.getpid())
        if channel is not None and not channel.broken:
            return channel
        if time.monotonic() < self._gone_until:
            return None
        try:
            channel = Channel(self.path, loop)
        except OSError as error:
            self._unreachable(error)
            return None
        self._gone_until = 0.0
        self._channels = {os.getpid(): channel}  # a forked child's copy of its parent's is never used
        return channel

    def close(self) -> None:
        """Close this thread's connection to the writer process, and this process's channel (the next
        ``run`` opens another)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            self._drop(conn)
        channel = self._channels.pop(os.getpid(), None)
        if channel is not None:
            channel.close()

    def _connection(self) -> socket.socket | None:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A blocking socket whose waits the kernel limits (SO_SNDTIMEO, SO_RCVTIMEO: a timed-out call
        # fails with EAGAIN), not Python's settimeout, which polls before every send and receive.
        limit = struct.pack("ll", int(ANSWER_TIMEOUT_SECONDS), 0)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, limit)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, limit)
        try:
            conn.connect(self.path)
        except OSError as error:
            conn.close()
            self._unreachable(error)
            return None
        self._gone_until = 0.0
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

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

    def _drop(self, conn: socket.socket) -> None:
        conn.close()
        self._local.conn = None


class WriterEnded(RuntimeError):
    """The writer process closed a connection with requests on it unanswered: it ended (or dropped
    a worker that took too long to read its answers), and will apply none of them any more."""


def request(apply: Callable[[Store], Any], prepare: Callable[[Store], Any]) -> bytes:
    """What a worker sends the writer process for ``Writer.run(db, apply, prepare)``: the length of
    the rest, the length of the preparation's pickle, that pickle, then the work's (the writer
    compares preparations by their pickles and runs equal ones once per group)."""
    preparation, work = pickle.dumps(prepare), pickle.dumps(apply)
    return HEADER.pack(HEADER.size + len(preparation) + len(work)) + HEADER.pack(len(preparation)) + preparation + work


def _receive(conn: socket.socket) -> bytes:
    """One answer's pickle (it usually arrives in one piece: one receive)."""
    data = bytearray()
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        chunk = conn.recv(65536)
        if not chunk:
            raise EOFError("the writer process closed the connection")
        data += chunk
    return bytes(data[HEADER.size :])


class Channel:
    """A worker's connection to the writer process for the tasks of its main thread (rumble.server.main_loop):
    requests of many tasks on one non-blocking socket, answered by the writer in the order sent, each
    resumes the task that sent it. Should the writer end, every task waiting on it is resumed with
    ``WriterEnded`` (and applies its upload itself); should it not answer within
    ANSWER_TIMEOUT_SECONDS, with a server fault (the client sends its upload again). Either way the
    channel is closed; the next upload opens another."""

    def __init__(self, path: str, loop: main_loop.Loop) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(path)  # a Unix socket connects at once, or fails (EAGAIN: the writer's backlog is full)
        except OSError:
            sock.close()
            raise
        self.sock, self.loop, self.broken, self.path = sock, loop, False, path
        self.waiting: deque[tuple[Any, float]] = deque()  # (task, monotonic time sent), in the order sent
        self.unsent = bytearray()  # what the socket did not take yet
        self.received = bytearray()  # the start of an answer not yet whole
        loop.watch(sock, self._ready, False)
        loop.every_turn(self._check)

    def send(self, data: bytes) -> bool:
        """Send the calling task's request; False if the channel failed before any of it was sent
        (then it cannot have been applied, and the caller may apply it another way)."""
        if self.broken:
            return False
        if not self.unsent:
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError as error:
                self._fail(error)
                return False
            data = data[sent:]
        self.waiting.append((main_loop.current_task(), time.monotonic()))
        if data:
            self.unsent += data
            self.loop.watch(self.sock, self._ready, True)
        return True

    def _ready(self) -> None:
        """In the loop: send what is left to send, read the answers that arrived and resume their tasks."""
        if self.broken:
            return
        try:
            if self.unsent:
                with contextlib.suppress(BlockingIOError, InterruptedError):  # not writable yet: still read
                    del self.unsent[: self.sock.send(self.unsent)]
                if not self.unsent:
                    self.loop.watch(self.sock, self._ready, False)
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._fail(error)
            return
        if not data:
            self._fail(EOFError("the writer process closed the connection"))
            return
        self.received += data
        for answer in _whole_messages(self.received):
            if not self.waiting:
                self._fail(RuntimeError("the writer process answered a request it was not sent"))
                return
            task, _ = self.waiting.popleft()
            try:
                value = pickle.loads(answer)
            except Exception as error:
                value = (False, RuntimeError(f"the writer process's answer could not be read: {error}"))
            task.switch(value)

    def _check(self, now: float) -> bool:
        """In the loop, every turn: an answer waited for longer than ANSWER_TIMEOUT_SECONDS fails the
        channel. False once the channel is closed (the loop then stops calling it)."""
        if self.waiting and now - self.waiting[0][1] > ANSWER_TIMEOUT_SECONDS:
            self._fail(TimeoutError(f"no answer from the writer process in {ANSWER_TIMEOUT_SECONDS:g} s"))
        return not self.broken

    def close(self) -> None:
        """Close the channel; a task still waiting on it is resumed with an error."""
        self._fail(ConnectionAbortedError("the channel was closed"), quietly=True)

    def _fail(self, error: BaseException, quietly: bool = False) -> None:
        """Close the channel; every waiting task is resumed (at the loop's next turn) with the error:
        ``WriterEnded`` if the writer closed its side (``Writer.run`` then applies it here), else a
        server fault."""
        if self.broken:
            return
        self.broken = True
        self.loop.unwatch(self.sock)
        self.sock.close()
        waiting, self.waiting = list(self.waiting), deque()
        failure: RuntimeError
        if isinstance(error, (EOFError, ConnectionResetError, BrokenPipeError)):
            failure = WriterEnded("the writer process ended before it answered")
            log.error(
                "the writer process at %s closed its connection (%r)%s",
                self.path,
                error,
                f"; this worker applies the {len(waiting)} uploads it left unanswered itself" if waiting else "",
            )
        else:
            failure = RuntimeError("the writer process did not answer")
            if waiting or not quietly:
                log.error(
                    "the connection to the writer process failed with %d uploads waiting: %r", len(waiting), error
                )
        failure.__cause__ = error
        for task, _ in waiting:
            self.loop.soon(partial(task.switch, (False, failure)))
