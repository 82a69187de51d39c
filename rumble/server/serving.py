"""The gunicorn worker ``rumble serve`` runs: gunicorn's threaded worker (gthread) with deadlines, so
that slow, silent and never-reading clients cannot hold the threads uploads need.

gthread already keeps kept-alive connections in its poller, not in a thread. What it lacks, and
this subclass adds (all three close the connection, nothing else):

- a connection waits in the poller, not in a thread, until it has sent a whole request: its
  headers, and its body when that is at most READ_AHEAD_BYTES (every upload); the worker's main
  thread reads what arrives without blocking. One that has not done so within READ_TIMEOUT_SECONDS
  of connecting (or of its next request's first byte) is closed. So headers trickled or never
  finished, an upload body shorter than its Content-Length and idle connections cost no thread at
  all (gunicorn's own worker gives each new connection a thread for up to 5 s, then reads the
  request in it without a time limit);
- a longer body (or a chunked one) is read by the thread serving the request, and must have arrived
  within READ_TIMEOUT_SECONDS of the thread's start: the thread is otherwise blocked in ``recv`` on
  a blocking socket for as long as the client trickles bytes or stays silent. ``Deadlines`` (one
  thread per worker) shuts such a socket for reading when its time is up, which ends the ``recv``
  at once. Body reads are timed only while the app is inside a read of ``wsgi.input``, so a
  request that waits for the write lock is not cut;
- an answer the client takes nothing of for SEND_TIMEOUT_SECONDS fails (the socket's
  ``SO_SNDTIMEO``: each blocking ``send`` gives up after that long without progress). gunicorn's
  ``sendfile`` is turned off by ``rumble serve`` because it waits for a blocked socket without
  any limit; answers go out through ``send`` in blocks instead.
- a connection that is done (``Connection: close``, or its keep-alive refused) lingers in the
  poller, not in the main thread: its write side is shut, what the client still sends is read
  and dropped as it arrives, and it is closed once the client closes its side, after
  LINGER_SECONDS or after LINGER_DRAIN_BYTES (gunicorn's limits). gunicorn 27 does this in the
  worker's main thread with a blocking read of up to 2 s: while it waits, no connection of the
  worker is accepted, read or answered, so a client that reads its answer and never closes its
  side stopped every upload of a worker for 2 s per connection (tests/e2e/test_hostile_clients.py),
  and every close waited for the client's end anyway. At most MAX_LINGERING connections linger
  per worker; beyond that the oldest is closed at once.

- a whole upload (``whole_upload``) is served in the main thread, as a task of rumble.server.main_loop,
  not by a thread: this worker is also that module's ``Loop`` (``watch``, ``soon``, ``in_thread``,
  ``every_turn``, ``decline``). Its socket stays non-blocking; an answer that does not fit closes
  the connection, so no client makes the main thread wait.

It subclasses gunicorn internals (``TConn``, ``pending_conns``, ``keepalived_conns``, the poller's
callbacks, the parser's ``unreader``),
hence the pinned gunicorn major version in pyproject.toml; tests/e2e/test_hostile_clients.py checks
the behaviour end to end.
"""

from __future__ import annotations

import errno
import re
import selectors
import socket
import struct
import threading
import time
from concurrent.futures import Future
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn.workers.gthread import TConn, ThreadWorker

from rumble import settings
from rumble.server.main_loop import Task, current_loop

TICK_SECONDS = 0.2  # how often overdue reads are looked for: a deadline is kept to within this
LINGER_SECONDS = 2.0  # a finished connection's wait for the client to close its side (gunicorn's own limit)
LINGER_DRAIN_BYTES = 65536  # ...and what it reads and drops of the client's meanwhile (likewise)
MAX_LINGERING = 1024  # finished connections lingering per worker; the oldest is closed beyond that
READ_AHEAD_BYTES = 65536  # a request up to this size is read whole before it gets a thread (an upload is ~250 bytes)
UPLOAD_REQUEST_LINES = (b"POST /UploadedResults ", b"POST /UploadedResults?")  # served in the main thread
CONTENT_LENGTH = re.compile(rb"\ncontent-length:[ \t]*(\d{1,12})[ \t]*(?:\r|$)", re.MULTILINE)


class Deadlines:
    """Sockets being read, each with the moment its reading must be done by; ``sweep`` shuts down
    the overdue ones, which ends a ``recv`` blocked on them (it returns end of file)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._due: dict[int, tuple[float, socket.socket]] = {}
        self._next = 0

    def arm(self, sock: socket.socket, deadline: float) -> int:
        """Watch ``sock`` until ``disarm``; return the key to disarm it with."""
        with self._lock:
            self._next += 1
            self._due[self._next] = (deadline, sock)
            return self._next

    def disarm(self, key: int | None) -> None:
        if key is not None:
            with self._lock:
                self._due.pop(key, None)

    def sweep(self, now: float) -> int:
        """Shut down every socket whose deadline has passed; return how many."""
        with self._lock:  # held while shutting down: once disarm returns, its socket is never shut
            overdue = [key for key, (deadline, _) in self._due.items() if deadline <= now]
            for key in overdue:
                _, sock = self._due.pop(key)
                try:
                    sock.shutdown(
                        socket.SHUT_RD
                    )  # ends the read; an answer can still go out (SEND_TIMEOUT_SECONDS bounds it)
                except OSError:
                    pass  # already closed by the client
        return len(overdue)

    def run_forever(self, tick: float = TICK_SECONDS) -> None:
        while True:
            time.sleep(tick)
            self.sweep(time.monotonic())


_current = threading.local()  # per thread: the request being read (its socket, deadline, key)


class DeadlineInput:
    """``wsgi.input`` whose reads are timed against the request's deadline (reads only, not the rest)."""

    def __init__(self, stream, deadlines: Deadlines, sock: socket.socket, deadline: float) -> None:
        self._stream = stream
        self._deadlines = deadlines
        self._sock = sock
        self._deadline = deadline

    def _timed(self, method: str, *args):
        key = self._deadlines.arm(self._sock, self._deadline)
        try:
            return getattr(self._stream, method)(*args)
        finally:
            self._deadlines.disarm(key)

    def read(self, *args) -> bytes:
        return self._timed("read", *args)

    def readline(self, *args) -> bytes:
        return self._timed("readline", *args)

    def readlines(self, *args) -> list[bytes]:
        return self._timed("readlines", *args)

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


class DeadlineThreadWorker(ThreadWorker):
    """gunicorn's gthread worker with read deadlines, an idle limit on new connections and a send timeout."""

    def init_process(self) -> None:
        values = settings.load()
        self.read_timeout = float(values["READ_TIMEOUT_SECONDS"])
        self.send_timeout = float(values["SEND_TIMEOUT_SECONDS"])
        if self.read_timeout <= 0 or self.send_timeout <= 0:
            raise ValueError("READ_TIMEOUT_SECONDS and SEND_TIMEOUT_SECONDS must be positive")
        self.deadlines = Deadlines()
        self.lingering: dict[LingeringConn, float] = {}  # finished connections and when they are closed at the latest
        self.turns: list = []  # rumble.server.main_loop.Loop.every_turn's calls
        self.declined_until = 0.0  # no upload is served in the main thread before this (Loop.decline)
        threading.Thread(target=self.deadlines.run_forever, name="rumble-deadlines", daemon=True).start()
        super().init_process()  # loads the app (self.wsgi), then runs the worker's loop

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi: Any = partial(_timed_input, self.wsgi, self)

    def accept(self, listener) -> None:
        """A new connection waits in the poller, not a thread, for its first byte (READ_TIMEOUT_SECONDS at most)."""
        try:
            client_sock, client_addr = listener.accept()
        except OSError as error:
            if error.errno in (errno.EMFILE, errno.ENFILE) and self.lingering:
                # Out of files: the oldest lingering connection gives its up (the next event accepts).
                self._end_linger(next(iter(self.lingering)))
                return
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        seconds, micros = divmod(int(self.send_timeout * 1_000_000), 1_000_000)
        client_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", seconds, micros))
        conn = LingeringConn(self, self.cfg, client_sock, client_addr, listener.getsockname())
        conn.timeout = time.monotonic() + self.read_timeout  # murder_pending closes it then
        self.pending_conns.append(conn)  # every entry has the same offset, so the deque stays in time order
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn))

    def on_pending_socket_readable(self, conn, client) -> None:
        if self.cfg.is_ssl:  # TLS bytes are the TLS layer's to read
            return super().on_pending_socket_readable(conn, client)
        self._read_ahead(conn, kept_alive=False)

    def on_client_socket_readable(self, conn, client) -> None:
        if self.cfg.is_ssl:
            return super().on_client_socket_readable(conn, client)
        self._read_ahead(conn, kept_alive=True)

    def _read_ahead(self, conn, kept_alive: bool) -> None:
        """Read what a waiting connection sent, without blocking (in the worker's main thread); hand it
        to a thread only once its request is complete (headers, and a body of at most READ_AHEAD_BYTES).
        Until then it waits in the poller, at most READ_TIMEOUT_SECONDS, and holds no thread."""
        data = _received(conn.sock, READ_AHEAD_BYTES)
        if data is None:
            return
        waiting = self.keepalived_conns if kept_alive else self.pending_conns
        ahead = getattr(conn, "ahead", b"")
        if not data and not ahead:  # the client went away
            self._forget(conn, waiting)
            self.nr_conns -= 1
            conn.close()
            return
        conn.ahead = ahead + data
        # At the end of what the client sends (it may still read), the parser and the app answer what came.
        if not data or request_complete(conn.ahead):
            self._forget(conn, waiting)
            conn.data_ready = True
            if data and time.monotonic() >= self.declined_until and whole_upload(conn.ahead):
                Task(partial(self._serve_here, conn), self).switch()
            else:
                self.enqueue_req(conn)
        elif kept_alive:  # its next request has begun: from now on it has READ_TIMEOUT_SECONDS to arrive
            self._forget(conn, waiting)
            conn.timeout = time.monotonic() + self.read_timeout
            self.pending_conns.append(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn))

    def _serve_here(self, conn) -> None:
        """Serve ``conn``'s whole upload in this task of the main thread (rumble.server.main_loop), as a pool
        thread would (``handle``, ``finish_request``) but without blocking: the socket stays
        non-blocking, and an answer it does not take at once (the client has left that much of its
        answers unread) closes the connection."""
        ahead, conn.ahead = conn.ahead, b""
        conn.initialized = True  # what conn.init would do in a thread, but the socket stays non-blocking
        if conn.parser is None:
            conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(ahead)
        req, keep = None, False
        try:
            req = next(conn.parser)
            keep = self._keepalive_after(conn, self.handle_request(req, conn))
        except (StopIteration, http.errors.NoMoreData):
            pass
        except BrokenPipeError as error:
            if isinstance(error.__cause__, BlockingIOError):
                self.log.info("rumble: closed a connection from %s that left its answers unread", conn.client)
        except OSError as error:
            if error.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
        except Exception as error:
            try:
                self.handle_error(req, conn.sock, conn.client, error)
            except Exception:
                self.log.exception("could not answer a failed upload")
        done: Future[bool] = Future()  # what finish_request takes from a pool thread
        done.set_result(keep)
        self.finish_request(conn, done)

    # rumble.server.main_loop.Loop: what the main thread's tasks wait for, through this worker's loop

    def watch(self, sock: socket.socket, ready, writing: bool) -> None:
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if writing else 0)
        callback = partial(_call_ready, ready)
        try:
            self.poller.modify(sock, events, callback)
        except KeyError:
            self.poller.register(sock, events, callback)

    def unwatch(self, sock: socket.socket) -> None:
        try:
            self.poller.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass

    def soon(self, call) -> None:
        self.method_queue.defer(call)

    def in_thread(self, call) -> None:
        self.tpool.submit(call)

    def every_turn(self, call) -> None:
        self.turns.append(call)

    def decline(self, seconds: float) -> None:
        self.declined_until = time.monotonic() + seconds

    def murder_pending(self) -> None:
        """Close the connections whose request did not arrive within READ_TIMEOUT_SECONDS; but one whose
        headers did, and only its body is short, goes to a thread with its read side shut, so that the
        app answers it at once (``OK. ERROR: upload body ends after ...``) and the client knows why."""
        now = time.monotonic()
        while self.pending_conns and self.pending_conns[0].timeout <= now:
            conn = self.pending_conns.popleft()
            try:
                self.poller.unregister(conn.sock)
            except (OSError, KeyError, ValueError):
                pass
            if b"\r\n\r\n" in getattr(conn, "ahead", b""):
                try:
                    conn.sock.shutdown(socket.SHUT_RD)
                except OSError:
                    pass
                conn.data_ready = True
                self.enqueue_req(conn)
            else:
                self.nr_conns -= 1
                conn.close()

    def linger(self, conn: LingeringConn) -> None:
        """Close ``conn`` the graceful way without waiting for the client (in the main thread): shut
        its write side now, and leave the rest to the poller (``_drain``) and ``murder_keepalived``."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)  # the client reads the end of the answer, then closes
            conn.sock.setblocking(False)
        except OSError:  # the client is gone already
            conn.close()
            return
        if len(self.lingering) >= MAX_LINGERING:
            self._end_linger(next(iter(self.lingering)))
        self.lingering[conn] = time.monotonic() + LINGER_SECONDS  # insertion order is deadline order
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._drain, conn))

    def _drain(self, conn: LingeringConn, client) -> None:
        """Drop what a lingering connection's client sent; close it at its end (or at the cap)."""
        if conn not in self.lingering:  # closed earlier in this round of events (evicted): nothing to read
            return
        data = _received(conn.sock, LINGER_DRAIN_BYTES)
        if data is None:
            return
        conn.drained += len(data)
        if not data or conn.drained >= LINGER_DRAIN_BYTES:
            self._end_linger(conn)

    def _end_linger(self, conn: LingeringConn) -> None:
        if self.lingering.pop(conn, None) is None:
            return
        try:
            self.poller.unregister(conn.sock)
        except (OSError, KeyError, ValueError):
            pass
        conn.close()

    def murder_keepalived(self, force: bool = False) -> None:
        """gunicorn's closing of expired kept-alive connections; and of lingering ones past LINGER_SECONDS."""
        super().murder_keepalived(force)
        now = time.monotonic()
        if self.turns:  # called at every turn of the loop: what the main thread's tasks wait for is checked
            self.turns = [call for call in self.turns if call(now)]
        while self.lingering:
            conn, deadline = next(iter(self.lingering.items()))
            if deadline > now and not force:
                break
            self._end_linger(conn)

    def _forget(self, conn, waiting) -> None:
        self.poller.unregister(conn.sock)
        waiting.remove(conn)

    def handle(self, conn):
        """Serve one request of ``conn`` (in a pool thread), its headers read against the deadline."""
        ahead, conn.ahead = getattr(conn, "ahead", b""), b""
        if ahead:  # what _read_ahead read, given back to the request parser
            if conn.parser is None:
                conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
            conn.parser.unreader.unread(ahead)
        deadline = time.monotonic() + self.read_timeout
        _current.sock, _current.deadline = conn.sock, deadline
        _current.key = self.deadlines.arm(conn.sock, deadline)
        try:
            return super().handle(conn)
        finally:
            self.deadlines.disarm(_current.key)
            _current.key = None

    def handle_request(self, req, conn):
        # The headers are in; the body's reads are timed one by one (none in the main thread: its key is unset).
        self.deadlines.disarm(getattr(_current, "key", None))
        _current.key = None
        try:
            return super().handle_request(req, conn)
        except BlockingIOError as error:  # SO_SNDTIMEO: the client took nothing for send_timeout
            if current_loop() is not None:  # (in the main thread: the answer did not fit, see _serve_here)
                raise BrokenPipeError(errno.EPIPE, "the answer did not fit the socket") from error
            self.log.info(
                "rumble: closed a connection from %s that took none of its answer for %.0f s",
                conn.client,
                self.send_timeout,
            )
            raise BrokenPipeError(errno.EPIPE, "send timed out") from error


def _call_ready(ready, fileobj) -> None:  # the poller's callbacks are given the socket
    ready()


def _received(sock: socket.socket, size: int) -> bytes | None:
    """What a non-blocking ``sock`` has to read now: None if nothing yet, b"" at its end (or on an error)."""
    try:
        return sock.recv(size)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


class LingeringConn(TConn):
    """gunicorn's connection, whose graceful close goes to its worker's poller (``linger``)
    instead of blocking the worker's main thread."""

    def __init__(self, worker: DeadlineThreadWorker, *args) -> None:
        super().__init__(*args)
        self.worker = worker
        self.drained = 0

    def close(self, graceful: bool = False) -> None:
        if graceful and not self.worker.cfg.is_ssl:  # TLS closes as gunicorn closes it
            self.worker.linger(self)
        else:
            super().close(graceful)


def request_complete(data: bytes) -> bool:
    """Whether ``data`` holds a whole request: its headers, and its body when that has a
    Content-Length of at most READ_AHEAD_BYTES (a longer or chunked body is read by the thread
    serving the request, against the deadline); more than READ_AHEAD_BYTES of headers count as
    complete too, for the parser to refuse."""
    framing = _framing(data)
    if framing is None:
        return len(data) >= READ_AHEAD_BYTES
    body, size = framing
    return size is None or size > READ_AHEAD_BYTES or body >= size


def whole_upload(data: bytes) -> bool:
    """Whether ``data`` starts with a whole ``POST /UploadedResults`` whose body has a Content-Length
    and is all there (the main thread serves it; rumble.server.main_loop says why)."""
    framing = _framing(data) if data.startswith(UPLOAD_REQUEST_LINES) else None
    return framing is not None and framing[1] is not None and framing[0] >= framing[1]


def _framing(data: bytes) -> tuple[int, int | None] | None:
    """For the start of a request: how many bytes of its body have arrived, and its Content-Length
    (None without one, or for a chunked body); None while its headers are not all there."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = data[:end].lower()
    length = CONTENT_LENGTH.search(head)
    size = None if length is None or b"\ntransfer-encoding:" in head else int(length.group(1))
    return len(data) - end - 4, size


def _timed_input(app, worker: DeadlineThreadWorker, environ: dict, start_response):
    """The app, with ``wsgi.input`` read against the deadline of the request this thread serves."""
    sock = getattr(_current, "sock", None)
    if sock is not None and environ.get("wsgi.input") is not None:
        environ["wsgi.input"] = DeadlineInput(environ["wsgi.input"], worker.deadlines, sock, _current.deadline)
    return app(environ, start_response)
