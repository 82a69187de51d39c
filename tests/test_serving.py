"""The deadlines ``rumble serve`` puts around the app under gunicorn's gevent worker
(rumble/server/serving.py), on gevent's own sockets and timers; tests/e2e/test_hostile_clients.py
checks them end to end against a real server."""

from __future__ import annotations

import errno
import io
import threading

import gevent
import pytest
from gevent import socket as green_socket

from rumble.server.serving import (
    SEND_BLOCK_BYTES,
    WHOLE_ANSWER_BYTES,
    Deadlines,
    Paced,
    PagesInThreads,
    TimedAnswer,
    TimedInput,
)


class _SocketBody:
    """A request body read from one end of a gevent socket pair, as gunicorn's reader reads it."""

    def __init__(self, sock) -> None:
        self.sock = sock

    def read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                break
            data += chunk
        return data


def test_a_body_that_arrives_in_time_is_read_whole():
    server, client = green_socket.socketpair()
    with server, client:
        body = TimedInput(_SocketBody(server), 2.0)
        gevent.spawn_later(0.05, client.sendall, b"x" * 100)
        assert body.read(100) == b"x" * 100


def test_a_body_trickled_past_its_deadline_fails_with_a_timeout_that_says_so():
    server, client = green_socket.socketpair()
    with server, client:
        body = TimedInput(_SocketBody(server), 0.3)
        trickle = gevent.spawn(lambda: [client.sendall(b"x") or gevent.sleep(0.05) for _ in range(100)])
        with pytest.raises(TimeoutError) as raised:
            body.read(100)
        trickle.kill()
    assert str(raised.value) == "the request body did not arrive within 0.3 s"


def test_the_deadline_counts_from_the_start_not_from_each_read():
    server, client = green_socket.socketpair()
    with server, client:
        body = TimedInput(_SocketBody(server), 1.0)
        client.sendall(b"ab")
        assert body.read(1) == b"a"
        gevent.sleep(1.05)
        with pytest.raises(TimeoutError):
            body.read(1)  # the byte is there, but the body's time is up


class _Result:
    def __init__(self, items: list[bytes]) -> None:
        self.items, self.closed = items, False

    def __iter__(self):
        return iter(self.items)

    def close(self) -> None:
        self.closed = True


def test_an_answer_is_handed_over_in_blocks_and_closed_once_sent():
    big = bytes(range(256)) * (SEND_BLOCK_BYTES // 256 * 2 + 3)  # two whole blocks and a part
    result = _Result([b"head", big])
    answer = TimedAnswer(result, 1.0, "127.0.0.1")
    blocks = list(answer)
    answer.close()
    assert blocks[0] == b"head"
    assert [len(block) for block in blocks[1:]] == [SEND_BLOCK_BYTES, SEND_BLOCK_BYTES, len(big) - 2 * SEND_BLOCK_BYTES]
    assert b"".join(blocks[1:]) == big
    assert result.closed


def test_a_block_the_client_does_not_take_in_time_fails_its_write_with_a_broken_pipe():
    """gunicorn writes each block between two requests for the next: a write that waits longer
    than the timeout (a client that reads nothing) is interrupted, as EPIPE, which gunicorn takes
    as a client gone; a write that keeps up is not."""
    result = _Result([b"one", b"two"])
    answer = TimedAnswer(result, 0.5, "127.0.0.1")
    assert next(answer) == b"one"
    gevent.sleep(0)  # a write that takes no time
    assert next(answer) == b"two"
    with pytest.raises(BrokenPipeError) as raised:
        gevent.sleep(30.0)  # a write that never ends
    answer.close()
    assert raised.value.errno == errno.EPIPE
    assert result.closed


def test_the_end_of_an_answer_is_timed_too_until_close():
    answer = TimedAnswer(_Result([b"all"]), 0.2, None)
    assert list(answer) == [b"all"]
    with pytest.raises(BrokenPipeError):
        gevent.sleep(30.0)  # gunicorn ending the answer (a chunked one's last chunk) to a client that reads nothing
    answer.close()


def test_a_closed_answer_leaves_no_timer_behind():
    answer = TimedAnswer(_Result([b"all"]), 0.1, None)
    assert list(answer) == [b"all"]
    answer.close()
    gevent.sleep(0.3)  # nothing fires


@pytest.mark.parametrize("read, send", [(0, 1), (1, 0), (-1, 1)])
def test_the_timeouts_must_be_positive(read, send):
    with pytest.raises(ValueError):
        Deadlines(lambda environ, start_response: [], read, send)


def test_the_middleware_times_the_input_and_the_answer():
    seen = {}

    def app(environ, start_response):
        seen["input"] = environ["wsgi.input"]
        start_response("200 OK", [])
        return [b"ok"]

    answer = Deadlines(app, 5, 5)({"wsgi.input": object(), "REMOTE_ADDR": "127.0.0.1"}, lambda *a: None)
    assert isinstance(seen["input"], TimedInput) and isinstance(answer, TimedAnswer)
    assert list(answer) == [b"ok"]
    answer.close()


def _thread_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    body = environ["wsgi.input"].read()
    return iter([f"{threading.get_native_id()}".encode(), b"|", body])  # a generator-like answer, made whole


def _call(app, method: str, path: str, body: bytes = b"") -> tuple[list[bytes], str]:
    status = []
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "wsgi.input": io.BytesIO(body),
    }
    result = app(environ, lambda s, headers: status.append(s))
    return list(result), status[0]


def test_a_page_get_is_served_in_a_pool_thread_and_made_whole_there():
    pages = PagesInThreads(_thread_app, 2, lambda path: path != "/UploadedResults")
    blocks, status = _call(pages, "GET", "/Rankings", b"ignored")
    assert status == "200 OK" and len(blocks) == 1  # joined in the thread
    thread, _, body = blocks[0].partition(b"|")
    assert int(thread) != threading.get_native_id() and body == b""  # a GET's body is not passed on


def test_posts_and_the_clients_paths_are_served_where_they_came():
    pages = PagesInThreads(_thread_app, 2, lambda path: path != "/UploadedResults")
    here = str(threading.get_native_id()).encode()
    assert b"".join(_call(pages, "POST", "/admin/retire", b"name=x")[0]) == here + b"|name=x"
    assert b"".join(_call(pages, "GET", "/UploadedResults")[0]) == here + b"|"


def test_a_large_answer_is_made_whole_only_up_to_its_limit_and_closed_once_sent():
    """An export of 40 blocks of 64 KB: the thread reads the blocks up to WHOLE_ANSWER_BYTES, the
    rest is read as it is sent; every byte comes through, and the answer is closed at the end."""
    block = bytes(range(256)) * 256
    pulled, closed = [0], []

    class Export:
        def __iter__(self):
            for _ in range(40):
                pulled[0] += 1
                yield block

        def close(self):
            closed.append(True)

    def app(environ, start_response):
        start_response("200 OK", [])
        return Export()

    pages = PagesInThreads(app, 2, lambda path: True)
    answer = pages({"REQUEST_METHOD": "GET", "PATH_INFO": "/export", "wsgi.input": io.BytesIO()}, lambda *a: None)
    assert pulled[0] == WHOLE_ANSWER_BYTES // len(block) + 1 and not closed  # the rest waits for the sending
    assert b"".join(answer) == block * 40
    answer.close()
    assert pulled[0] == 40 and closed == [True]


def test_paced_requests_run_a_few_at_a_time_and_the_overflow_is_answered_busy_at_once():
    """Twenty RemoveOldParticipant requests at once, 2 slots, 4 waiting: never more than 2 in the
    app together; the 14 beyond the waiting room are answered busy without reaching the app; the
    others get the app's answer, and other paths are not paced."""
    inside, most, served = [0], [0], []

    def app(environ, start_response):
        paced_path = environ["PATH_INFO"] == "/RemoveOldParticipant"
        inside[0] += paced_path
        most[0] = max(most[0], inside[0])
        gevent.sleep(0.01)
        inside[0] -= paced_path
        served.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"OK. ERROR: refused\n"]

    paced = Paced(app, frozenset({"/RemoveOldParticipant"}), 2, 0.02, 4, "OK. ERROR: busy\n")

    def call(path: str) -> bytes:
        return b"".join(paced({"PATH_INFO": path}, lambda status, headers: None))

    removals = [gevent.spawn(call, "/RemoveOldParticipant") for _ in range(20)]
    other = gevent.spawn(call, "/RatingsFile")
    gevent.joinall([*removals, other])
    answers = [g.value for g in removals]
    assert most[0] == 2
    assert answers.count(b"OK. ERROR: busy\n") == 14 and answers.count(b"OK. ERROR: refused\n") == 6
    assert served.count("/RemoveOldParticipant") == 6 and other.value == b"OK. ERROR: refused\n"
