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
one. It also keeps the one in-memory ratings copy (rumble.fields) that uploads use, so no copy
has to be caught up with another worker's battles.

``rumble serve`` starts it (``start``) before its workers; each worker reaches it through a
``Writer`` (``rumble.web.client`` uses it when the app has one). A work is a picklable callable
of the connection (a module-level function, maybe in a ``functools.partial``), sent with a
``prepare`` callable run outside the write lock first; the answer is the work's result or the
exception it raised, pickled back. The socket lives in a directory only this user can enter, and
only the server's own processes connect to it, so what comes through it is trusted like the
server's own code. Should the process be gone (it ends with the server, or if it crashed), a
worker applies its uploads itself as before (``run_in_group``): uploads keep flowing, only slower.

Writes other than uploads (admin actions, RemoveOldParticipant, the batch jobs, the CLI) still
take the write lock themselves: the writer holds it only while it applies a group.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import resource
import select
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from rumble import main_loop
from rumble.store import CHECKPOINT_EVERY, Store, checkpoint, connect
from rumble.store.group_commit import Work, apply_group, run_in_group

log = logging.getLogger(__name__)

T = TypeVar("T")
HEADER = struct.Struct(">I")  # a length: of each message and answer, then of a request's preparation (``request``)
ANSWER_TIMEOUT_SECONDS = 120.0  # a group waits for the write lock at most SQLite's busy timeout (30 s) per try
PARENT_CHECK_SECONDS = 1.0  # how often the writer looks whether the server that started it is still there
MAX_MESSAGE_BYTES = 1 << 20  # an upload's work is a few hundred bytes; anything larger is not from a worker
PREFIX = "rumble-writer-"  # the socket directory's name, in the system's temporary directory
STALE_SECONDS = 60.0  # a socket directory younger than this may be one whose writer is still starting
BACKLOG = 4096  # connections waiting to be accepted (the kernel caps it at net.core.somaxconn): one per worker thread
# After the writer could not be reached, a worker applies uploads itself this long, then tries again.
RETRY_SECONDS = 10.0


@dataclass(frozen=True)
class Started:
    """A running writer process and the socket the workers reach it on."""

    pid: int
    owner: int  # the process that started it (``rumble serve``'s arbiter)
    path: str


def start(db_path: str, synchronous: str, ready: Callable[[Store], None] | None = None) -> Started:
    """Fork the writer process for the database at ``db_path``; it ends when this process does.
    ``ready(connection)`` runs in it before it takes uploads (reading the ratings copies)."""
    directory = tempfile.mkdtemp(prefix=PREFIX)  # mode 0700: only this user can reach the socket
    remove_stale(os.path.dirname(directory), os.stat(directory).st_mtime)
    path = os.path.join(directory, "writer.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(BACKLOG)
    parent = os.getpid()
    pid = os.fork()  # not multiprocessing: its exit handlers would run in every gunicorn worker forked later
    if pid == 0:  # the writer: the compiled rating code is already loaded
        code = 0
        try:
            _serve(listener, db_path, synchronous, parent, ready)
        except BaseException:
            log.exception("the writer process failed; the workers apply uploads themselves")
            code = 1
        finally:
            shutil.rmtree(directory, ignore_errors=True)  # the server may be gone without a stop()
            os._exit(code)  # never back into the caller's code (click, gunicorn)
    listener.close()  # the child has its own copy
    return Started(pid, parent, path)


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
    listener: socket.socket, db_path: str, synchronous: str, parent: int, ready: Callable[[Store], None] | None
) -> None:
    """The writer's loop: read whole requests from every worker's connections, apply all that are
    waiting as one group, answer each; end when the server that started it is gone."""
    # Ctrl-C, a terminal's hangup and gunicorn's own signals (reload, reopen logs, add or remove
    # workers: sent to the whole group by some tools) are the server's business; this process ends
    # with the server (or on SIGTERM, from ``stop``).
    for name in ("SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGTTIN", "SIGTTOU"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    _raise_file_limit()  # one connection per worker thread
    db = open_database(db_path, synchronous)
    if ready is not None:
        ready(db)
    checkpoints = _Checkpoints(db_path, synchronous)
    listener.setblocking(False)
    poller = select.epoll()
    poller.register(listener.fileno(), select.EPOLLIN)
    peers: dict[int, _Peer] = {}
    while os.getppid() == parent:
        waiting: list[tuple[socket.socket, bytes]] = []
        for fd, _ in poller.poll(PARENT_CHECK_SECONDS):
            if fd == listener.fileno():  # new connections have usually sent their first request already
                for peer in _accept(listener, poller, peers):
                    waiting += _read(peer, poller, peers)
            elif fd in peers:  # (not if dropped earlier in this round)
                waiting += _read(peers[fd], poller, peers)
        if waiting:
            _apply(db, waiting)
            if db.commits_since_checkpoint >= CHECKPOINT_EVERY:
                db.commits_since_checkpoint = 0
                checkpoints.due.set()


def open_database(db_path: str | os.PathLike, synchronous: str) -> Store:
    """The writer's connection (scripts/profile_upload.py profiles the writer's work on one too)."""
    db = connect(db_path, synchronous, migrate=False, autocheckpoint=False)
    # A group applied in savepoints (rumble.store.group_commit: after one of its works raised) keeps
    # the first copy of every page a savepoint changes in a sub-journal, which SQLite spills to a
    # temporary file past 64 KiB: a file opened and deleted per group and two writes per page, as
    # many as the WAL's. Kept in memory instead (a group's pages, at most a few MiB).
    db.conn.execute("PRAGMA temp_store = MEMORY")
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
        pass  # the worker went away, or took too long (its connection is dropped at its next read)


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

    The worker keeps its nice value. Until 2026-11-24 it also lowered it by 5; on Linux 6.18's
    scheduler (EEVDF) that cost uploads: in 6 alternating 8 s rounds of the living scenario, nice 0
    gave a median of 2,461 uploads/s against 2,366 with nice 5 (higher in 5 of the 6 rounds, 3 %
    less server CPU per upload, p99 7.4–8.0 against 8.2–8.7 ms), nice 2 gave 2,420. A niced worker
    waited longer for a core (it holds the uploads of its connections) than the writer gained."""
    if hasattr(os, "sched_setscheduler"):
        with contextlib.suppress(OSError):  # refused (a sandbox): the same work, only scheduled as before
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


class Writer:
    """A worker's way to the writer process: one connection per thread, opened when first used."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        self._gone_until = 0.0  # monotonic time until which the writer is taken as gone
        self._channels: dict[int, Channel] = {}  # by process id: the main thread's channel (``_channel``)

    def run(self, db: Store, apply: Callable[[Store], T], prepare: Callable[[Store], Any]) -> T:
        """``apply(connection)`` in a committed write transaction of the writer process; its result,
        or the exception it raised. Without a writer (gone, or never reached), on ``db`` here.

        In a task of the worker's main thread (rumble.main_loop) the request goes on the worker's
        one ``Channel`` and the task is suspended until its answer arrives; elsewhere it goes on
        this thread's own connection, and the thread waits in ``recv``."""
        loop = main_loop.current_loop()
        if loop is not None:
            channel = self._channel(loop)
            if channel is not None and channel.send(request(apply, prepare)):
                ok, value = main_loop.suspend()
                if not ok:
                    raise value
                return value
            # Not sent: applied here below, never by waiting on a connection in the main thread; the
            # pool's threads serve the next uploads for a while.
            loop.decline(RETRY_SECONDS)
            conn = None
        else:
            conn = None if time.monotonic() < self._gone_until else self._connection()
        if conn is not None:
            try:
                conn.sendall(request(apply, prepare))
            except OSError:
                self._drop(conn)
                conn = None
        if conn is None:  # nothing was sent: applying it here cannot apply it twice
            prepare(db)
            return run_in_group(db, apply)
        try:
            ok, value = pickle.loads(_receive(conn))
        except (OSError, EOFError, pickle.UnpicklingError) as error:
            # Sent, but no answer: it may or may not be committed. A server fault, not a refusal:
            # the client sends the battle again, and a stored one is then recognised as a repeat.
            self._drop(conn)
            raise RuntimeError("the writer process did not answer") from error
        if not ok:
            raise value
        return value

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
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _unreachable(self, error: OSError) -> None:
        """A connection to the writer failed with ``error``: if no writer listens, it is taken as gone
        for RETRY_SECONDS (otherwise, its queue full or out of files, only this upload is applied here)."""
        if isinstance(error, (FileNotFoundError, ConnectionRefusedError)):
            if self._gone_until == 0.0 or time.monotonic() >= self._gone_until:
                log.error(
                    "the writer process at %s cannot be reached; this worker applies uploads itself "
                    "and tries again in %g s",
                    self.path,
                    RETRY_SECONDS,
                )
            self._gone_until = time.monotonic() + RETRY_SECONDS

    def _drop(self, conn: socket.socket) -> None:
        conn.close()
        self._local.conn = None


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
    """A worker's connection to the writer process for the tasks of its main thread (rumble.main_loop):
    requests of many tasks on one non-blocking socket, answered by the writer in the order sent, each
    resumes the task that sent it. Should the writer go away or not answer within
    ANSWER_TIMEOUT_SECONDS, every task waiting on it is resumed with that error (the client sends
    its upload again) and the channel is closed; the next upload opens another."""

    def __init__(self, path: str, loop: main_loop.Loop) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(path)  # a Unix socket connects at once, or fails (EAGAIN: the writer's backlog is full)
        except OSError:
            sock.close()
            raise
        self.sock, self.loop, self.broken = sock, loop, False
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
        """Close the channel; every waiting task is resumed (at the loop's next turn) with the error."""
        if self.broken:
            return
        self.broken = True
        self.loop.unwatch(self.sock)
        self.sock.close()
        waiting, self.waiting = list(self.waiting), deque()
        if waiting or not quietly:
            log.error("the connection to the writer process failed with %d uploads waiting: %r", len(waiting), error)
        failure = RuntimeError("the writer process did not answer")
        failure.__cause__ = error
        for task, _ in waiting:
            self.loop.soon(partial(task.switch, (False, failure)))
