"""No 500 from bad input against a real gunicorn server (``rumble serve``), over raw sockets: a
malformed chunked body on every POST route, invalid UTF-8 raw in the request line of every route,
and a smaller sweep than tests/web/test_bad_input_sweep.py's of hostile values in every parameter
of every route (the routes from the app's url_map, the parameters from tests/bad_input.py).
"""

from __future__ import annotations

import http.client
import json
import socket
import time

import pytest
from bad_input import HOSTILE, KNOWN, PARAMS, encode, path_for, protocol_problem

from rumble import store
from rumble.admin_tokens import hash_token, new_token, token_id
from rumble.app import create_app
from rumble.protocol.battle import Battle, Side
from rumble.protocol.upload import format_upload
from rumble.store import maintainers

from .e2e_support import post_like_java

pytestmark = pytest.mark.e2e

SMALL = {
    label: HOSTILE[label]
    for label in ("superscript two", "10**32 in digits", "NUL", "invalid UTF-8", "10 KB of digits")
}
MALFORMED_CHUNKS = b"zz\r\nabc\r\n0\r\n\r\n"  # a chunk size that is not hexadecimal
LIMIT_REQUEST_LINE = 4094  # gunicorn's default limit_request_line, in bytes
UNREADABLE = "the request body cannot be read: Invalid chunk size: b'zz'"


def exchange(url: str, raw: bytes) -> tuple[int, str, bytes]:
    """Send ``raw`` as one request on a new connection: the answer's status, media type and body."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(raw)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = response.read()
    return response.status, (response.getheader("Content-Type") or "").split(";")[0], body


def request(method: str, target: bytes, body: bytes = b"", headers: bytes = b"", chunked: bool = False) -> bytes:
    framing = b"Transfer-Encoding: chunked\r\n" if chunked else b"Content-Length: %d\r\n" % len(body)
    return (
        method.encode() + b" " + target + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n" + framing + headers + b"\r\n" + body
    )


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    """Every registered route, from an app built the way the server builds its own."""
    app = create_app({"DB": str(tmp_path_factory.mktemp("routes") / "rumble.db"), "BATCH_INTERVAL_MINUTES": 0})
    return [rule for rule in app.url_map.iter_rules() if rule.endpoint != "static"] + [
        rule for rule in app.url_map.iter_rules() if rule.endpoint == "static"
    ]


@pytest.fixture
def server(live_server):
    """The live server with two battles stored, so that the sweep's bot names exist."""
    now = int(time.time() * 1000)
    for n, (first, second) in enumerate(
        (("sample.Corners 1.0", "sample.RamFire 1.0"), ("sample.Walls 0.9b", "sample.Corners 1.0"))
    ):
        battle = Battle(
            "roborumble",
            "1",
            "1.9.3.9",
            False,
            False,
            35,
            "800x600",
            "Jane Doe",
            now + n,
            Side(first, 6598, 3299, 32),
            Side(second, 4883, 2441, 3),
        )
        status, _, text = post_like_java(live_server.url + "/UploadedResults", format_upload(battle))
        assert status == 200 and text.splitlines()[-1] == f"OK. {first} vs {second} received for roborumble", text
    return live_server


def maintainer(server) -> bytes:
    """A maintainer's token in the server's database, as the Authorization header line."""
    token = new_token()
    db = store.connect(str(server.db_path), migrate=False)
    with store.write(db):
        maintainers.add_maintainer(db, "alice", token_id(token), hash_token(token), store.utc_now())
    db.close()
    return f"Authorization: Bearer {token}\r\n".encode()


def test_a_malformed_chunked_body_gets_the_protocols_refusal_on_the_client_endpoints_and_a_400_elsewhere(server, rules):
    token = maintainer(server)
    wrong = []
    for rule in (r for r in rules if "POST" in r.methods):
        target = path_for(rule, {}).encode()
        status, mimetype, body = exchange(server.url, request("POST", target, MALFORMED_CHUNKS, chunked=True))
        found = (status, mimetype, json.loads(body) if mimetype == "application/json" else body.decode())
        if rule.endpoint.startswith("client."):
            expected = (200, "text/plain", f"OK. ERROR: {UNREADABLE}\n")
        elif rule.endpoint in ("admin.login", "participants.enter", "participants.withdraw", "participants.sign_up"):
            # these read the body first: the login form for its CSRF token, a competitor's request for its fields
            expected = (400, "application/json", {"error": UNREADABLE})
        else:  # refused before the body is read
            expected = (401, "application/json", {"error": "authentication required"})
        if found != expected:
            wrong.append((rule.rule, found))
        if rule.endpoint.startswith("admin.") and rule.endpoint not in ("admin.login", "admin.logout"):
            status, mimetype, body = exchange(
                server.url, request("POST", target, MALFORMED_CHUNKS, headers=token, chunked=True)
            )
            found = (status, mimetype, json.loads(body) if mimetype == "application/json" else body[:100])
            if found != (400, "application/json", {"error": UNREADABLE}):
                wrong.append((rule.rule + " as a maintainer", found))
    assert wrong == []
    assert server.battle_count() == 2


def test_invalid_utf8_raw_in_the_request_line_is_a_400_on_every_route(server, rules):
    answers = {}
    for rule in rules:
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            target = path_for(rule, {name: b"\xff\xfe" for name in rule.arguments}).encode("latin-1", "replace")
            raw = target.replace(b"%FF%FE", b"\xff\xfe") + b"?game=\xff\xfe&name=\xc0\xaf"
            answers[(method, rule.rule)] = exchange(server.url, request(method, raw))[0]
    assert {key: status for key, status in answers.items() if status != 400} == {}


def test_hostile_values_in_every_parameter_of_every_route_get_no_500_from_gunicorn(server, rules):
    wrong = []
    sent = 0
    for rule in rules:
        names = PARAMS.get(rule.endpoint, KNOWN)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            cases = [({name: value}, {}) for name in names for value in SMALL.values()]
            cases += [({}, {name: value}) for name in rule.arguments for value in SMALL.values()]
            for params, in_path in cases:
                base = {
                    "game": "roborumble",
                    "name": "sample.Corners 1.0",
                    "bot": "sample.Corners 1.0",
                    "vs": "sample.RamFire 1.0",
                }
                query = encode({**{k: v for k, v in base.items() if k in names}, **params})
                target = path_for(rule, in_path)
                if method == "GET":
                    raw = request("GET", f"{target}?{query}".encode())
                else:
                    raw = request("POST", target.encode(), query.encode())
                for _ in range(
                    20
                ):  # a 503 "busy" (rumble/web/capacity.py) may come while the last plot's slot is let go
                    status, mimetype, body = exchange(server.url, raw)
                    if not (status == 503 and body.startswith(b"503 busy: ")):
                        break
                    time.sleep(0.05)
                sent += 1
                if status == 414 and raw.index(b"\r\n") > LIMIT_REQUEST_LINE:
                    problem = None  # gunicorn's own answer to a request line past its limit: the app never sees it
                elif rule.endpoint.startswith("client."):
                    problem = protocol_problem(rule.endpoint, status, mimetype, body.decode("utf-8", "replace"))
                elif rule.endpoint.startswith("admin.") and rule.endpoint != "admin.login":
                    problem = None if status == 401 else f"{status} without credentials"
                else:
                    problem = None if status in (200, 303, 308, 400, 401, 403, 404, 405) else f"status {status}"
                if problem:
                    wrong.append(f"{method} {rule.rule} {params or in_path!r:.60}: {problem}")
    assert wrong == []
    assert sent > 300
    assert server.battle_count() == 2


@pytest.mark.parametrize(
    "target, status, expected",
    [
        (
            "/Rankings?game=roborumble&page=%C2%B2",
            400,
            "page must be a whole number from 1 to 1000000, not &#39;²&#39;.",
        ),
        (
            "/api/v1/rumbles/roborumble/rankings?page=%C2%B2",
            400,
            '{"error":"page must be a whole number from 1 to 1000000, not \'\\u00b2\'."}',
        ),
        (
            "/api/v1/rumbles/roborumble/bots/sample.Corners%201.0?limit=%C2%B2",
            400,
            '{"error":"limit must be a whole number from 1 to 5000, not \'\\u00b2\'."}',
        ),
    ],
)
def test_the_issues_superscript_page_is_a_400_naming_the_parameter(server, target, status, expected):
    answer = exchange(server.url, request("GET", target.encode()))
    assert answer[0] == status
    assert expected in answer[2].decode()
