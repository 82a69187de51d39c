"""Entering a bot by the URL of its jar (``POST /Participants/enter`` with ``url``): rumble fetches
it once, from a public address only unless JAR_FETCH_PRIVATE, and refuses each bad case in words
with nothing stored. The jars are served by a real HTTP server on a loopback port."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from jar_support import client_reads, make_jar
from test_participants import _app, _stored, sign_up

from rumble.web import close_thread_db

WALLS = make_jar("jd.Walls 1.0")


class _Jars(BaseHTTPRequestHandler):
    """/walls.jar, /moved (302 to it), /loop (302 to itself), /gone (404), /big.jar (past the
    limit), /gzip.jar (Content-Encoding: gzip), /slow.jar (its body a byte a second); counts requests."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.seen.append(self.path)
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError):  # rumble stopped reading: past its limit or its time
            pass

    def _serve(self) -> None:
        if self.path == "/moved":
            self._answer(302, b"", {"Location": "/walls.jar"})
        elif self.path == "/loop":
            self._answer(302, b"", {"Location": "/loop"})
        elif self.path == "/walls.jar":
            self._answer(200, WALLS)
        elif self.path == "/big.jar":
            self._answer(200, bytes(300_000))
        elif self.path == "/gzip.jar":
            self._answer(200, gzip.compress(WALLS), {"Content-Encoding": "gzip"})
        elif self.path == "/slow.jar":
            self.send_response(200)
            self.send_header("Content-Length", str(len(WALLS)))
            self.end_headers()
            for byte in WALLS[:30]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.5)
        else:
            self._answer(404, b"no such jar")

    def _answer(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def jar_host():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Jars)
    server.daemon_threads = True
    _Jars.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _enter_url(client, token: str, url: str, name: str = "jd.Walls 1.0"):
    return client.post(
        "/Participants/enter",
        data={"game": "roborumble", "name": name, "url": url},
        headers={"Authorization": f"Bearer {token}"},
    )


def test_by_default_a_url_on_this_machine_or_its_network_is_refused_unfetched(tmp_path, clock, jar_host):
    app = _app(tmp_path, clock)
    client = app.test_client()
    token = sign_up(client)
    for url, host in (
        (jar_host + "/walls.jar", "127.0.0.1"),
        ("http://localhost:9/walls.jar", "localhost"),
        ("http://10.1.2.3/walls.jar", "10.1.2.3"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),  # a cloud's metadata service
        ("http://[::1]:9/walls.jar", "::1"),
        ("http://[::ffff:127.0.0.1]/walls.jar", "::ffff:127.0.0.1"),
    ):
        response = _enter_url(client, token, url)
        assert (response.status_code, response.json) == (
            400,
            {"error": f"the jar URL's host {host!r} is not on the public internet"},
        ), url
    assert _Jars.seen == [] and _stored(app) == (0, 0, 0)
    close_thread_db()


def test_with_private_addresses_allowed_the_jar_is_fetched_once_and_served_from_here(tmp_path, clock, jar_host):
    app = _app(tmp_path, clock, JAR_FETCH_PRIVATE=True)
    client = app.test_client()
    token = sign_up(client)
    response = _enter_url(client, token, jar_host + "/moved")  # a redirect is followed
    assert response.status_code == 200, response.json
    assert (response.json["name"], response.json["state"]) == ("jd.Walls 1.0", "listed")
    assert _Jars.seen == ["/moved", "/walls.jar"]
    assert client_reads(client.get("/Participants?game=roborumble").get_data(as_text=True)) == [
        ("jd.Walls 1.0", "http://localhost/jars/jd.Walls/1.0.jar")
    ]
    assert client.get("/jars/jd.Walls/1.0.jar").data == WALLS  # from rumble now, whatever the URL does later
    assert _Jars.seen == ["/moved", "/walls.jar"]
    close_thread_db()


def test_each_bad_url_is_refused_in_words_and_nothing_is_stored(tmp_path, clock, jar_host):
    app = _app(tmp_path, clock, JAR_FETCH_PRIVATE=True, MAX_JAR_BYTES=200_000, JAR_FETCH_TIMEOUT_SECONDS=2)
    client = app.test_client()
    token = sign_up(client)
    cases = [
        (jar_host + "/gone", "the jar URL answered 404 Not Found"),
        (jar_host + "/loop", "the jar URL redirected more than 3 times"),
        (jar_host + "/big.jar", "the jar at the URL is larger than 200000 bytes (MAX_JAR_BYTES)"),
        (jar_host + "/gzip.jar", "the jar URL sent it with Content-Encoding 'gzip'; a jar is sent as it is"),
        (jar_host + "/slow.jar", "fetching the jar took longer than 2 s"),
        ("ftp://example.org/walls.jar", "the jar URL must be an http:// or https:// URL with a host"),
        ("http:///walls.jar", "the jar URL must be an http:// or https:// URL with a host"),
        ("http://user:secret@example.org/walls.jar", "the jar URL must not carry a user name or password"),
        ("http://example.org:99999/walls.jar", "the jar URL's port is not a number from 0 to 65535"),
        ("http://no-such-host.invalid/walls.jar", "the jar URL's host 'no-such-host.invalid' could not be resolved"),
        ("http://[::1/walls.jar", "the jar URL cannot be read as a URL"),
        (jar_host + "/wälls.jar", "the jar URL must be ASCII: percent-encode its other characters"),
    ]
    for url, error in cases:
        response = _enter_url(client, token, url)
        assert (response.status_code, response.json) == (400, {"error": error}), url
    wrong = _enter_url(client, token, jar_host + "/walls.jar", name="jd.Walls 2.0")  # the jar's own check still applies
    assert wrong.status_code == 400 and wrong.json["error"].startswith("the jar is refused: jd/Walls.properties names")
    none = client.post("/Participants/enter", data={"game": "roborumble", "name": "jd.Walls 1.0", "token": token})
    assert (none.status_code, none.json["error"]) == (
        400,
        "no jar: send it as the multipart field 'jar', as the body with Content-Type application/java-archive, "
        "or give its URL in the field 'url'",
    )
    assert _stored(app) == (0, 0, 0)
    close_thread_db()


def test_one_token_from_many_addresses_makes_the_server_fetch_only_its_accounts_allowance(tmp_path, clock, jar_host):
    app = _app(tmp_path, clock, JAR_FETCH_PRIVATE=True, ENTRY_REQUESTS_PER_HOUR=5)
    client = app.test_client()
    token = sign_up(client, addr="127.30.0.1")  # the account's first request of the hour
    answers = []
    for k in range(12):  # each from its own address, under that address's limit
        response = client.post(
            "/Participants/enter",
            data={"game": "roborumble", "name": "jd.Walls 1.0", "url": jar_host + "/gone"},
            headers={"Authorization": f"Bearer {token}"},
            environ_base={"REMOTE_ADDR": f"127.31.{k}.{k + 1}"},
        )
        answers.append((response.status_code, response.json["error"], response.headers.get("Retry-After")))
        response.close()
    limited = (
        "too many requests from your account (5 in the last hour); nothing was checked or done: try again in an hour"
    )
    assert answers == [(400, "the jar URL answered 404 Not Found", None)] * 4 + [(429, limited, "3600")] * 8
    assert _Jars.seen == ["/gone"] * 4 and _stored(app) == (0, 0, 0)
    close_thread_db()
