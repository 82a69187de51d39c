"""The read deadlines of ``rumble serve``'s worker (rumble/serving.py), on real socket pairs."""

from __future__ import annotations

import socket
import threading
import time

from rumble.serving import Deadlines


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
