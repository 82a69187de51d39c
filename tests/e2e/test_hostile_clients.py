"""Slow, silent and never-reading clients cannot stop uploads: ``rumble serve``'s gevent workers
with a header timeout, a body deadline and a send timeout (rumble/server/serving.py), and capacity
per request class (rumble/web/capacity.py).

The first two tests run scripts/hostile_mix.py, small, against a real ``rumble serve``. No test here
asserts a wall-clock threshold of this machine; the one bound is the real client's read timeout
(10 s, protocol.md), past which it counts an upload as failed. The 2 s goal is the script's own
PASS or FAIL, run as a benchmark (scripts/README.md).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import battle

from rumble.protocol.battle import Battle
from rumble.protocol.upload import format_upload

from .e2e_support import JAVA_POST_HEADERS, live_server, post_like_java

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "hostile_mix.py"
WAIT_S = 30  # far beyond the 2 s read timeout below: a connection still open after it was not cut
CLIENT_TIMEOUT_S = 10.0  # the real client's read timeout: an answer later than this is a failed upload


def _mix(tmp_path: Path, *args: str) -> dict:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--battles", "300", "--workdir", str(tmp_path), "--json", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.stdout.strip(), run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert run.returncode == (0 if result["share"] >= 0.95 else 1)  # its PASS or FAIL, whichever it was
    return result


def test_uploads_are_answered_while_sixteen_hostile_connections_are_held(tmp_path):
    result = _mix(tmp_path, "--per-kind", "4", "--seconds", "10")
    assert result["uploads"] == result["ok"] == 10 and result["errors"] == []  # each within the client's timeout
    assert result["hostile"]["trickle"]["opens"] >= 4 and result["hostile"]["unread-export"]["opens"] >= 4


def test_uploads_are_answered_while_four_clients_download_exports_slowly(tmp_path):
    """Four exports at once, read at 32 KB/s (each holds its request for seconds, as a large
    export does): they take export slots, never what uploads need. The sync workers of before
    answered no upload until an export was done."""
    result = _mix(tmp_path, "--per-kind", "0", "--readers", "4", "--reader-kb", "32", "--seconds", "10")
    assert result["uploads"] == result["ok"] == 10 and result["errors"] == []  # each within the client's timeout
    assert result["readers"]["complete"] >= 1 and result["readers"]["failed"] == 0


@pytest.fixture
def strict_server(tmp_path):
    """``rumble serve`` whose requests must arrive within 2 s."""
    with live_server(tmp_path, settings={"READ_TIMEOUT_SECONDS": "2", "BATCH_INTERVAL_MINUTES": "0"}) as server:
        yield server


def _connect(server) -> socket.socket:
    parts = urlsplit(server.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=WAIT_S)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (at most WAIT_S)."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_connection_that_sends_nothing_is_closed(strict_server):
    with _connect(strict_server) as sock:
        assert _read_all(sock) == b""


def test_headers_trickled_byte_by_byte_are_cut_off(strict_server):
    with _connect(strict_server) as sock:
        sock.sendall(b"POST /UploadedResults HTTP/1.1\r\nHost: x\r\n")
        with pytest.raises(OSError):
            for _ in range(WAIT_S * 4):  # one byte every 0.25 s: never idle, never finished
                sock.sendall(b"X")
                time.sleep(0.25)


def test_a_body_shorter_than_its_length_gets_the_protocols_refusal(strict_server):
    body = b"game=roborumble&version=1&"
    head = "POST /UploadedResults HTTP/1.1\r\nHost: x\r\n" + "".join(f"{k}: {v}\r\n" for k, v in JAVA_POST_HEADERS)
    with _connect(strict_server) as sock:
        sock.sendall(head.encode() + b"Content-Length: 4000\r\n\r\n" + body)
        answer = _read_all(sock)
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 200 OK"
    expected = "OK. ERROR: the request body cannot be read: the request body did not arrive within 2 s\n"
    assert rest.partition(b"\r\n\r\n")[2] == expected.encode()


def _read_and_keep_open(address: tuple[str, int], stop: threading.Event, held: list[socket.socket]) -> None:
    """A client that asks for a page with ``Connection: close``, reads the whole answer, and never
    closes its side of the connection (until the test ends)."""
    while not stop.is_set():
        sock = socket.create_connection(address, timeout=WAIT_S)
        held.append(sock)
        sock.sendall(b"GET /RatingsFile?game=roborumble HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass  # the server may cut the oldest lingering connections short: not what is tested here


def test_clients_that_never_close_their_side_do_not_hold_up_uploads(tmp_path):
    """Eight clients read their answer (``Connection: close``) and keep their side open: a worker
    that waited for them to close (gunicorn 27's threaded worker waits up to 2 s in its main
    thread) held every other request (an upload waited 15 s); the gevent worker closes at once."""
    with live_server(tmp_path, settings={"BATCH_INTERVAL_MINUTES": "0"}) as server:
        parts = urlsplit(server.url)
        stop, held = threading.Event(), []
        clients = [
            threading.Thread(target=_read_and_keep_open, args=((parts.hostname, parts.port), stop, held), daemon=True)
            for _ in range(8)
        ]
        try:
            for client in clients:
                client.start()
            time.sleep(1.0)
            slowest = 0.0
            for k in range(10):
                sent = battle(f"sample.Linger{k} 1.0", "sample.Walls 1.0")
                began = time.monotonic()
                status, _, text = post_like_java(server.url + "/UploadedResults", format_upload(sent))
                slowest = max(slowest, time.monotonic() - began)
                assert status == 200
                assert text.splitlines()[-1] == f"OK. {sent.first.name} vs {sent.second.name} received for roborumble"
            opened = len(held)
        finally:
            stop.set()
            for client in clients:
                client.join(WAIT_S)
            for sock in held:
                sock.close()
        assert slowest < CLIENT_TIMEOUT_S  # held behind the lingering clients, an upload waited 15 s
        assert opened >= 100  # the clients kept coming: each got its answer at once


def _upload_head(body: bytes, extra: str = "") -> bytes:
    """The real client's request head for an upload of ``body`` (plus ``extra`` header lines)."""
    return (
        "POST /UploadedResults HTTP/1.1\r\nHost: x\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in JAVA_POST_HEADERS)
        + extra
        + ("" if "chunked" in extra else f"Content-Length: {len(body)}\r\n")
        + "\r\n"
    ).encode()


def _received(sent: Battle) -> str:
    return f"OK. {sent.first.name} vs {sent.second.name} received for roborumble"


def test_uploads_are_answered_while_a_body_that_never_ends_is_read(tmp_path):
    """One worker, one connection holding a chunked upload body that never ends: uploads on other
    connections are answered meanwhile, before the held body's 8 s deadline, as its connection,
    still unanswered after them, shows; then it is cut and answered in the protocol's form."""
    settings = {"PAGE_REQUESTS": "1", "READ_TIMEOUT_SECONDS": "8", "BATCH_INTERVAL_MINUTES": "0"}
    with live_server(tmp_path, workers=1, settings=settings) as server, _connect(server) as held:
        held.sendall(_upload_head(b"", "Transfer-Encoding: chunked\r\n") + b"400\r\ngame=roborumble&")
        time.sleep(0.5)  # the thread is reading the body
        for k in range(5):
            sent = battle(first=f"main.Thread{k} 1.0")
            status, _, text = post_like_java(server.url + "/UploadedResults", format_upload(sent))
            assert (status, text.splitlines()[-1]) == (200, _received(sent))
        held.setblocking(False)
        with pytest.raises(BlockingIOError):
            held.recv(1)  # its greenlet still waits for the body: not answered yet
        held.setblocking(True)
        answer = _read_all(held)  # cut at its deadline, and answered in the protocol's form
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.split(b"\r\n\r\n", 1)[1].startswith(b"OK. ERROR: ")


def _upload_now_and_then(url: str, stop: threading.Event, waits: list[float], answers: list) -> None:
    k = 0
    while not stop.is_set():
        sent = battle(first=f"steady.Uploader{k % 40} 1.0")
        started = time.monotonic()
        status, _, text = post_like_java(url + "/UploadedResults", format_upload(sent))
        waits.append(time.monotonic() - started)
        answers.append((status, text.splitlines()[-1]) == (200, _received(sent)))
        k += 1
        time.sleep(0.05)


def test_a_client_that_never_reads_its_answers_is_closed_while_uploads_go_on(tmp_path):
    """One connection sends upload after upload and reads none of the answers (its receive buffer
    small). Its greenlet waits for the client to take its answers, and others' uploads go on; once
    an answer has waited 12 s (the send timeout), the connection is closed."""
    settings = {"SEND_TIMEOUT_SECONDS": "12", "BATCH_INTERVAL_MINUTES": "0"}
    body = format_upload(battle(game="nosuchrumble"))  # refused (unknown rumble): answered at once
    request = _upload_head(body) + body
    with live_server(tmp_path, workers=1, settings=settings) as server:
        parts = urlsplit(server.url)
        stop, waits, answers = threading.Event(), [], []
        steady = threading.Thread(target=_upload_now_and_then, args=(server.url, stop, waits, answers), daemon=True)
        steady.start()
        hostile = socket.socket()
        hostile.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hostile.connect((parts.hostname, parts.port))
        hostile.settimeout(WAIT_S)
        sent, deadline = 0, time.monotonic() + 90
        try:
            with pytest.raises(OSError):  # the server closed it (reset: it had unread uploads)
                while time.monotonic() < deadline:
                    hostile.sendall(request)
                    sent += 1
                    time.sleep(0.0005)
        finally:
            hostile.close()
            stop.set()
            steady.join(timeout=WAIT_S)
        output = server.output()
    assert sent > 100  # its answers filled the buffers first
    assert len(waits) >= 10 and all(answers) and max(waits) < CLIENT_TIMEOUT_S
    assert "that took none of its answer for 12 s" in output


def _answers(sock: socket.socket, count: int) -> list[bytes]:
    """The bodies of the next ``count`` answers on ``sock`` (each with a Content-Length)."""
    data, bodies = b"", []
    while len(bodies) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = data[:end].lower()
            length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
            if len(data) >= end + 4 + length:
                bodies.append(data[end + 4 : end + 4 + length])
                data = data[end + 4 + length :]
                continue
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    return bodies


def test_uploads_sent_together_on_one_connection_are_each_answered_in_order(strict_server):
    """Three uploads in one send (pipelined), then two more, one at a time, on the same connection:
    each gets its own answer, in order."""
    sent = [battle(first=f"piped.Bot{k} 1.0") for k in range(5)]
    requests_ = [_upload_head(format_upload(b)) + format_upload(b) for b in sent]
    with _connect(strict_server) as sock:
        sock.sendall(b"".join(requests_[:3]))
        bodies = _answers(sock, 3)
        for request in requests_[3:]:
            sock.sendall(request)
            bodies += _answers(sock, 1)
    assert [body.decode().splitlines()[-1] for body in bodies] == [_received(b) for b in sent]
    assert strict_server.battle_count() == 5
