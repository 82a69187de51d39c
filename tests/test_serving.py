"""The read deadlines of ``rumble serve``'s worker (rumble/server/serving.py), on real socket pairs."""

from __future__ import annotations

import collections
import errno
import selectors
import socket
import threading
import time

import pytest

from rumble.server import serving
from rumble.server.serving import Deadlines, DeadlineThreadWorker, LingeringConn, request_complete, whole_upload


def test_an_overdue_read_ends_with_end_of_file():
    deadlines = Deadlines()
    server, client = socket.socketpair()
    with server, client:
        got = []
        reader = threading.Thread(target=lambda: got.append(server.recv(100)))
        deadlines.arm(server, time.monotonic() - 1)
        reader.start()
        time.sleep(0.05)  # the reader is blocked in recv: the client sends nothing
        assert deadlines.sweep(time.monotonic()) == 1
        reader.join(5)
        assert got == [b""]
        assert deadlines.sweep(time.monotonic()) == 0  # swept once only


def test_a_disarmed_or_early_socket_is_left_alone():
    deadlines = Deadlines()
    server, client = socket.socketpair()
    with server, client:
        deadlines.disarm(deadlines.arm(server, time.monotonic() - 1))
        deadlines.arm(server, time.monotonic() + 60)
        assert deadlines.sweep(time.monotonic()) == 0
        client.sendall(b"still open")
        assert server.recv(100) == b"still open"


def test_a_socket_shut_for_reading_can_still_answer():
    """The watchdog shuts the read side only: a cut-off upload is still told why."""
    deadlines = Deadlines()
    server, client = socket.socketpair()
    with server, client:
        deadlines.arm(server, time.monotonic() - 1)
        deadlines.sweep(time.monotonic())
        assert server.recv(100) == b""
        server.sendall(b"OK. ERROR: upload body ends after 3 of its 4000 bytes\n")
        assert client.recv(100) == b"OK. ERROR: upload body ends after 3 of its 4000 bytes\n"


@pytest.mark.parametrize(
    ("data", "complete"),
    [
        (b"POST /UploadedResults HTTP/1.1\r\nHost: x\r\n", False),  # headers not finished
        (b"GET /export HTTP/1.1\r\nHost: x\r\n\r\n", True),
        (b"POST /UploadedResults HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", False),  # body short of its length
        (b"POST /UploadedResults HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\n\r\nabcde", True),
        (
            b"POST /UploadedResults HTTP/1.1\r\nContent-Length: 999999\r\n\r\nab",
            True,
        ),  # too long to wait for: the thread reads it
        (b"POST /UploadedResults HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", True),
        (b"GET /" + b"a" * 70000, True),  # more than READ_AHEAD_BYTES without an end: the parser refuses it
    ],
)
def test_a_request_is_handed_to_a_thread_once_complete(data, complete):
    assert request_complete(data) is complete


@pytest.mark.parametrize(
    ("data", "here"),
    [
        (b"POST /UploadedResults HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\n\r\nabcde", True),
        (b"POST /UploadedResults?x=1 HTTP/1.1\r\nContent-Length: 2\r\n\r\nab", True),
        (b"POST /UploadedResults HTTP/1.1\r\nContent-Length: 2\r\n\r\nabPOST /Upl", True),  # the next begins
        (b"POST /UploadedResults HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", False),  # body short of its length
        (b"POST /UploadedResults HTTP/1.1\r\nContent-Length: 999999\r\n\r\nab", False),
        (b"POST /UploadedResults HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", False),
        (b"POST /UploadedResults HTTP/1.1\r\nHost: x\r\n\r\n", False),  # no length: the thread path answers it
        (b"POST /UploadedResultsX HTTP/1.1\r\nContent-Length: 2\r\n\r\nab", False),
        (b"GET /UploadedResults HTTP/1.1\r\n\r\n", False),
        (b"POST /RankingsFile HTTP/1.1\r\nContent-Length: 2\r\n\r\nab", False),
    ],
)
def test_only_a_whole_upload_with_its_length_is_served_in_the_main_thread(data, here):
    assert whole_upload(data) is here


class _Cfg:
    is_ssl = False


def _lingering_worker() -> DeadlineThreadWorker:
    """The parts of a worker that lingering uses (its poller and lingering connections), without gunicorn's set-up."""
    worker = object.__new__(DeadlineThreadWorker)
    worker.cfg = _Cfg()
    worker.poller = selectors.DefaultSelector()
    worker.lingering = {}
    worker.keepalived_conns = collections.deque()
    worker.nr_conns = 0
    worker.turns = []
    return worker


def _dispatch(worker: DeadlineThreadWorker) -> None:
    for key, _ in worker.poller.select(0):
        key.data(key.fileobj)


def test_a_finished_connection_lingers_until_its_client_closes():
    worker = _lingering_worker()
    server, client = socket.socketpair()
    with client:
        conn = LingeringConn(worker, worker.cfg, server, "client", "server")
        conn.close(graceful=True)  # as gunicorn's finish_request closes a Connection: close answer
        assert client.recv(100) == b""  # the server's side is shut for writing at once
        client.sendall(b"more the server never reads")
        _dispatch(worker)
        assert list(worker.lingering) == [conn] and server.fileno() != -1  # read and dropped, still open
        client.shutdown(socket.SHUT_WR)
        _dispatch(worker)
        assert worker.lingering == {} and server.fileno() == -1


def test_a_lingering_connection_is_closed_after_its_time(monkeypatch):
    worker = _lingering_worker()
    server, client = socket.socketpair()
    with client:
        conn = LingeringConn(worker, worker.cfg, server, "client", "server")
        conn.close(graceful=True)
        worker.murder_keepalived()
        assert list(worker.lingering) == [conn]
        later = time.monotonic() + serving.LINGER_SECONDS + 1
        monkeypatch.setattr(serving.time, "monotonic", lambda: later)
        worker.murder_keepalived()
        assert worker.lingering == {} and server.fileno() == -1


def test_an_evicted_connection_whose_client_closed_in_the_same_round_is_dropped_once(monkeypatch):
    """The oldest lingering connection is closed to make room while its own end-of-file waits in
    the same round of events: its event is then skipped, not a KeyError that ends the worker."""
    monkeypatch.setattr(serving, "MAX_LINGERING", 1)
    worker = _lingering_worker()
    first, first_client = socket.socketpair()
    second, second_client = socket.socketpair()
    with first_client, second_client:
        old = LingeringConn(worker, worker.cfg, first, "a", "server")
        old.close(graceful=True)
        first_client.close()  # its end of file is now waiting in the poller
        events = worker.poller.select(0)
        LingeringConn(worker, worker.cfg, second, "b", "server").close(graceful=True)  # evicts ``old``
        for key, _ in events:
            key.data(key.fileobj)
        assert list(worker.lingering) != [old] and len(worker.lingering) == 1 and first.fileno() == -1
    second.close()


def test_out_of_files_an_accept_closes_the_oldest_lingering_connection_instead_of_ending_the_worker():
    class Listener:
        def accept(self):
            raise OSError(errno.EMFILE, "Too many open files")

    worker = _lingering_worker()
    server, client = socket.socketpair()
    with client:
        LingeringConn(worker, worker.cfg, server, "client", "server").close(graceful=True)
        worker.accept(Listener())  # no exception: the worker goes on
        assert worker.lingering == {} and server.fileno() == -1
