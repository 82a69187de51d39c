"""The bad-input corpus (issue 8): malformed uploads and requests, sent as raw bytes over a socket
to a real gunicorn server. Each gets its own specific answer, and none changes anything: every
table an upload, a retirement or an admin action could touch is compared before and after.

The client endpoints answer ``200 text/plain`` with ``OK. ERROR: <reason>`` (the client drops a
result on an OK line and retries anything else forever, protocol.md 7.3); wrong methods get 405,
bad page parameters a 400 or 404 in plain words. RemoveOldParticipant requests are logged by
design (table removal_requests), so that table is left out of the comparison.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from rumble.protocol.battle import Battle, Side
from rumble.protocol.upload import format_upload

from .e2e_support import post_like_java, read_only

pytestmark = pytest.mark.e2e

TABLES = (
    "battles",
    "bots",
    "participants",
    "participant_events",
    "pairings",
    "bot_summaries",
    "ratings",
    "priority_battles",
    "battle_flags",
    "audit_log",
    "admin_settings",
    "maintainers",
    "rumbles",
    "bot_origins",
)


def _battle(**changes) -> Battle:
    values = dict(
        game="roborumble",
        version="1",
        client="1.9.3.9",
        teams=False,
        melee=False,
        rounds=35,
        field="800x600",
        uploader="Jane Doe",
        time_ms=int(time.time() * 1000),
        first=Side("sample.Corners 1.0", 6598, 3299, 32),
        second=Side("sample.RamFire 1.0", 4883, 2441, 3),
    )
    values.update(changes)
    return Battle(**values)


GOOD = format_upload(_battle()).decode()


def body(**fields: str | None) -> bytes:
    """The good upload with some fields replaced (None: left out); values are raw text, not encoded."""
    parts = dict(part.split("=", 1) for part in GOOD.rstrip("\n").split("&"))
    for key, value in fields.items():
        if value is None:
            parts.pop(key)
        else:
            parts[key] = value
    return ("&".join(f"{k}={v}" for k, v in parts.items()) + "\n").encode("utf-8", "surrogateescape")


def raw_body(text: bytes) -> bytes:
    return text


def post(path: str, data: bytes, extra: bytes = b"") -> bytes:
    return (
        (
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n"
        ).encode()
        + extra
        + b"\r\n"
        + data
    )


def request(method: str, path: str) -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()


NOW = int(time.time() * 1000)
UP = "/UploadedResults"
ERR = (200, "OK. ERROR: ")

# (what is wrong, raw HTTP request, expected status, expected text in the answer)
CORPUS: list[tuple[str, bytes, int, str]] = [
    # The body as a whole
    ("empty body", post(UP, b""), *ERR[:1], "OK. ERROR: empty upload"),
    ("only a line feed", post(UP, b"\n"), 200, "OK. ERROR: empty upload"),
    ("no '=' in a part", post(UP, body(user="Jane&Doe")), 200, "OK. ERROR: malformed field 'Doe'"),
    (
        "a field given twice",
        post(UP, GOOD.replace("&fscore=", "&fscore=1&fscore=").encode()),
        200,
        "field 'fscore' given twice",
    ),
    ("two fields only", post(UP, b"game=roborumble&version=1\n"), 200, "OK. ERROR: missing fields: client"),
    ("one field missing", post(UP, body(fscore=None)), 200, "OK. ERROR: missing field: fscore"),
    ("invalid UTF-8 throughout", post(UP, b"\xff\xfe\xfd" * 40), 200, "OK. ERROR: malformed field"),
    (
        "oversized body (Content-Length)",
        post(UP, b"game=" + b"x" * 5000),
        200,
        "OK. ERROR: upload of 5005 bytes is larger than 4096",
    ),
    (
        "oversized chunked body, no length",
        b"POST /UploadedResults HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        + b"1400\r\n"
        + b"y" * 5120
        + b"\r\n0\r\n\r\n",
        200,
        "OK. ERROR: upload is larger than 4096 bytes",
    ),
    # version, game, client
    ("version 2", post(UP, body(version="2")), 200, "OK. ERROR: version must be 1"),
    ("version empty", post(UP, body(version="")), 200, "OK. ERROR: version must be 1"),
    ("game empty", post(UP, body(game="")), 200, "OK. ERROR: game must be a rumble name"),
    ("game with a space", post(UP, body(game="robo rumble")), 200, "OK. ERROR: game must be a rumble name"),
    (
        "game SQL injection",
        post(UP, body(game="roborumble';DROP TABLE battles;--")),
        200,
        "OK. ERROR: game must be a rumble name",
    ),
    ("game unknown", post(UP, body(game="myrumble")), 200, "OK. ERROR: unknown game 'myrumble'"),
    ("client not whitelisted", post(UP, body(client="1.7.3.0")), 200, "OK. ERROR: CLIENT NOT SUPPORTED: 1.7.3.0"),
    ("client with markup", post(UP, body(client="<b>1.9</b>")), 200, "OK. ERROR: client must be a Robocode version"),
    # settings
    ("teams neither YES nor NOT", post(UP, body(teams="MAYBE")), 200, "OK. ERROR: teams must be YES or NOT"),
    (
        "melee where the rumble has none",
        post(UP, body(melee="YES")),
        200,
        "OK. ERROR: settings differ from roborumble's: melee must be NOT",
    ),
    ("rounds zero", post(UP, body(rounds="0")), 200, "OK. ERROR: rounds must be at least 1"),
    (
        "rounds not a number",
        post(UP, body(rounds="thirty")),
        200,
        "OK. ERROR: rounds must be a non-negative whole number",
    ),
    ("rounds not the rumble's", post(UP, body(rounds="10", fsurvival="9", ssurvival="1")), 200, "rounds must be 35"),
    ("field malformed", post(UP, body(field="800by600")), 200, "OK. ERROR: field must look like 800x600"),
    ("field not the rumble's", post(UP, body(field="1000x1000")), 200, "field must be 800x600"),
    # user and time
    ("user empty", post(UP, body(user="")), 200, "OK. ERROR: user is empty"),
    ("user too long", post(UP, body(user="x" * 51)), 200, "OK. ERROR: user is longer than 50 characters"),
    (
        "user with a control character",
        post(UP, body(user="Jane\x01Doe")),
        200,
        "OK. ERROR: user contains control characters",
    ),
    ("time not a number", post(UP, body(time="soon")), 200, "OK. ERROR: time must be a non-negative whole number"),
    (
        "time too old",
        post(UP, body(time=str(NOW - 25 * 3_600_000))),
        200,
        "OK. ERROR: your uploaded data is more than 24 hours old",
    ),
    (
        "time in the future",
        post(UP, body(time=str(NOW + 2 * 3_600_000))),
        200,
        "OK. ERROR: battle time lies in the future",
    ),
    ("time of 20 digits", post(UP, body(time="9" * 20)), 200, "OK. ERROR: time is too large"),
    # bot names
    (
        "fname without a package",
        post(UP, body(fname="Corners 1.0")),
        200,
        "OK. ERROR: fname must name a class inside a package",
    ),
    (
        "fname without a version",
        post(UP, body(fname="sample.Corners")),
        200,
        "OK. ERROR: fname must be 'package.Class version'",
    ),
    (
        "fname with two spaces",
        post(UP, body(fname="sample.Corners  1.0")),
        200,
        "OK. ERROR: fname must be 'package.Class version'",
    ),
    (
        "fname with a script tag",
        post(UP, body(fname="sample.C<script> 1.0")),
        200,
        "OK. ERROR: fname must be 'package.Class version'",
    ),
    (
        "fname SQL injection",
        post(UP, body(fname="a.B' OR '1'='1 1.0")),
        200,
        "OK. ERROR: fname must be 'package.Class version'",
    ),
    (
        "fname too long",
        post(UP, body(fname="a." + "x" * 70 + " 1.0")),
        200,
        "OK. ERROR: fname is longer than 70 characters",
    ),
    (
        "sname in invalid UTF-8",
        post(UP, body(sname="sample.Ram\udcff\udcfeFire 1.0")),
        200,
        "OK. ERROR: sname must be 'package.Class version'",
    ),
    (
        "a bot against itself",
        post(UP, body(sname="sample.Corners 1.0")),
        200,
        "OK. ERROR: sample.Corners 1.0 cannot battle itself",
    ),
    # figures
    ("fscore negative", post(UP, body(fscore="-1")), 200, "OK. ERROR: fscore must be a non-negative whole number"),
    ("fscore a decimal", post(UP, body(fscore="65.98")), 200, "OK. ERROR: fscore must be a non-negative whole number"),
    (
        "sscore in Arabic-Indic digits",
        post(UP, body(sscore="٤٨٨٣")),
        200,
        "OK. ERROR: sscore must be a non-negative whole number",
    ),
    ("fscore beyond any battle", post(UP, body(fscore="175001")), 200, "OK. ERROR: fscore is too large"),
    ("fscore beyond 64 bits", post(UP, body(fscore="9" * 25)), 200, "OK. ERROR: fscore is too large"),
    (
        "fbulletd not a number",
        post(UP, body(fbulletd="NaN")),
        200,
        "OK. ERROR: fbulletd must be a non-negative whole number",
    ),
    ("fsurvival above the rounds", post(UP, body(fsurvival="36")), 200, "OK. ERROR: fsurvival is too large"),
    (
        "ssurvival negative",
        post(UP, body(ssurvival="-3")),
        200,
        "OK. ERROR: ssurvival must be a non-negative whole number",
    ),
    (
        "sbulletd negative",
        post(UP, body(sbulletd="-1")),
        200,
        "OK. ERROR: sbulletd must be a non-negative whole number",
    ),
    ("sbulletd empty", post(UP, body(sbulletd="")), 200, "OK. ERROR: sbulletd must be a non-negative whole number"),
    (
        "fscore with a plus sign",
        post(UP, body(fscore="+6598")),
        200,
        "OK. ERROR: fscore must be a non-negative whole number",
    ),
    ("melee in lower case", post(UP, body(melee="yes")), 200, "OK. ERROR: melee must be YES or NOT"),
    (
        "teams where the rumble has none",
        post(UP, body(teams="YES")),
        200,
        "settings differ from roborumble's: teams must be NOT",
    ),
    ("user of spaces only", post(UP, body(user="   ")), 200, "OK. ERROR: user is empty"),
    ("user with a NUL byte", post(UP, body(user="Jane\x00Doe")), 200, "OK. ERROR: user contains control characters"),
    (
        "sname too long",
        post(UP, body(sname="b." + "y" * 70 + " 1.0")),
        200,
        "OK. ERROR: sname is longer than 70 characters",
    ),
    ("sname empty", post(UP, body(sname="")), 200, "OK. ERROR: sname is empty"),
    ("game with a NUL byte", post(UP, body(game="robo\x00rumble")), 200, "OK. ERROR: game must be a rumble name"),
    # wrong methods and other endpoints
    ("GET on the upload URL", request("GET", UP), 405, "Method Not Allowed"),
    ("PUT on the upload URL", request("PUT", UP), 405, "Method Not Allowed"),
    ("DELETE on the upload URL", request("DELETE", UP), 405, "Method Not Allowed"),
    ("POST on RatingsFile", request("POST", "/RatingsFile?game=roborumble"), 405, "Method Not Allowed"),
    ("PUT on RemoveOldParticipant", request("PUT", "/RemoveOldParticipant"), 405, "Method Not Allowed"),
    (
        "GET on RemoveOldParticipant (an <img> on any page)",
        request("GET", "/RemoveOldParticipant?version=1&game=roborumble&name=sample.Corners_1.0&dummy=NA"),
        405,
        "RemoveOldParticipant retires a bot only when POSTed, as the RoboRumble client sends it; a GET or HEAD changes nothing.\n",
    ),
    (
        "HEAD on RemoveOldParticipant",
        request("HEAD", "/RemoveOldParticipant?version=1&game=roborumble&name=sample.Corners_1.0&dummy=NA"),
        405,
        "",
    ),
    (
        "RemoveOldParticipant of an unknown game",
        post("/RemoveOldParticipant", b"version=1&game=nosuch&name=sample.Corners_1.0&dummy=NA\n"),
        200,
        "OK. ERROR: unknown game 'nosuch'",
    ),
    (
        "RemoveOldParticipant of an injected name",
        post("/RemoveOldParticipant", b"version=1&game=roborumble&name=x'%20OR%201=1--&dummy=NA\n"),
        200,
        "OK. ERROR: no bot",
    ),
    (
        "RemoveOldParticipant without '='",
        post("/RemoveOldParticipant", b"version=1&roborumble\n"),
        200,
        "OK. ERROR: malformed field",
    ),
    ("Rankings of a script game", request("GET", "/Rankings?game=%3Cscript%3E"), 404, "no rumble"),
    (
        "Rankings in an unknown order",
        request("GET", "/Rankings?game=roborumble&order=password"),
        400,
        "Cannot sort by &#39;password&#39;",
    ),
    ("Rankings with a negative limit", request("GET", "/Rankings?game=roborumble&limit=-1"), 400, "limit"),
    (
        "admin rollback without credentials",
        post("/admin/rollback", b"uploader=Jane+Doe"),
        401,
        "authentication required",
    ),
    (
        "admin rollback with a forged token",
        post("/admin/rollback", b"uploader=Jane+Doe", b"Authorization: Bearer forged\r\n"),
        401,
        "invalid or revoked token",
    ),
]


def test_the_corpus_has_at_least_forty_distinct_cases():
    assert len(CORPUS) >= 40
    assert len({label for label, *_ in CORPUS}) == len(CORPUS) and len({raw for _, raw, *_ in CORPUS}) == len(CORPUS)


def send_raw(url: str, raw: bytes, shutdown: bool = False) -> tuple[int, str]:
    """Send ``raw`` bytes as one HTTP request; the status and the body of the answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        if shutdown:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    head, _, content = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), content.decode("utf-8", "replace")


def _state(path) -> dict:
    with read_only(path) as db:
        return {table: db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in TABLES}


def test_every_malformed_request_gets_its_specific_answer_and_changes_nothing(live_server):
    # Accepted data that must stay undisturbed: two battles and their bots.
    for first in ("sample.Corners 1.0", "sample.Walls 0.9b"):
        status, _, text = post_like_java(
            live_server.url + UP, format_upload(_battle(first=Side(first, 6598, 3299, 32)))
        )
        assert (
            status == 200 and text.splitlines()[-1] == f"OK. {first} vs sample.RamFire 1.0 received for roborumble"
        ), text
    # The operator vouches for this local client, so that its removals reach the bot lookup.
    vouched = subprocess.run(
        [sys.executable, "-m", "rumble", "admin", "vouch", "--db", str(live_server.db_path), "Jane Doe", "127.0.0.1"],
        capture_output=True,
        text=True,
    )
    assert (vouched.returncode, vouched.stdout) == (0, "Jane Doe@127.0.0.0/24: vouched\n"), vouched.stderr
    before = _state(live_server.db_path)
    assert len(before["battles"]) == 2
    wrong = []
    for label, raw, status, expected in CORPUS:
        found = send_raw(live_server.url, raw)
        if found[0] != status or expected not in found[1] or (status == 200 and found[1].count("\n") != 1):
            wrong.append((label, found))  # a client answer is one line the client only prints
    assert not wrong
    # A truncated body: the request promises 300 bytes, sends the first 100 and stops writing.
    truncated = (
        f"POST {UP} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 300\r\nConnection: close\r\n\r\n"
    ).encode() + format_upload(_battle())[:100]
    status, text = send_raw(live_server.url, truncated, shutdown=True)
    assert (status, text.splitlines()[0]) == (200, "OK. ERROR: upload body ends after 100 of its 300 bytes"), text
    assert _state(live_server.db_path) == before
    # And the server still takes a good upload afterwards.
    status, _, text = post_like_java(live_server.url + UP, format_upload(_battle(time_ms=int(time.time() * 1000) + 5)))
    assert (
        status == 200
        and text.splitlines()[-1] == "OK. sample.Corners 1.0 vs sample.RamFire 1.0 received for roborumble"
    ), text
