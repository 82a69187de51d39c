"""The read deadlines of ``rumble serve``'s worker (rumble/serving.py), on real socket pairs."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from rumble.serving import Deadlines, request_complete


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
