"""Behind a reverse proxy: with TRUSTED_PROXIES=1 and Debian's nginx in front of ``rumble serve``, the
battle log records the client's address (X-Forwarded-For as nginx sets it), not the proxy's; with the
default 0, a direct client's forged X-Forwarded-For is ignored.

The client connects from 127.0.0.7, nginx from 127.0.0.1 (both loopback), so the two addresses differ.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rumble.protocol.battle import Battle, Side
from rumble.protocol.upload import format_upload

from .e2e_support import JAVA_POST_HEADERS, live_server, read_only, skip_unless_ci
from .nginx_support import NGINX, PROXY_LOCATION, REMOVAL_LOCATION, REMOVAL_ZONES, available, running_nginx

pytestmark = pytest.mark.e2e
CLIENT_ADDR = "127.0.0.7"
FORGED = "203.0.113.9"


def _upload(url: str, first: str, forged: str | None) -> str:
    """One real-format upload from CLIENT_ADDR (with a forged X-Forwarded-For if given); the answer's last line."""
    body = format_upload(
        Battle(
            "roborumble",
            "1",
            "1.9.3.9",
            False,
            False,
            35,
            "800x600",
            "Jane Doe",
            int(time.time() * 1000),
            Side(first, 6000, 3000, 25),
            Side("b.B 1.0", 4000, 2000, 10),
        )
    )
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10, source_address=(CLIENT_ADDR, 0))
    try:
        conn.putrequest("POST", "/UploadedResults", skip_accept_encoding=True)
        for name, value in JAVA_POST_HEADERS:
            conn.putheader(name, value)
        if forged:
            conn.putheader("X-Forwarded-For", forged)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        assert response.status == 200
        return response.read().decode("ascii").splitlines()[-1]
    finally:
        conn.close()


def _recorded(server) -> dict[str, str]:
    """First bot's name -> remote_addr of its battle in the log."""
    with read_only(server.db_path) as db:
        rows = db.execute(
            "SELECT f.full_name, d.remote_addr FROM battles b JOIN bots f ON f.id = b.first_bot_id "
            "JOIN uploader_addresses d ON d.id = b.address_id"
        ).fetchall()
    return dict(rows)


def test_behind_nginx_with_one_trusted_proxy_the_log_records_the_client_address(tmp_path):
    if not available():
        skip_unless_ci("nginx is not installed (scripts/test.sh installs it)")
    with live_server(tmp_path, settings={"TRUSTED_PROXIES": "1"}) as server:
        with running_nginx(tmp_path / "nginx", int(urlsplit(server.url).port), urlsplit(server.url).hostname) as proxy:
            assert _upload(proxy, "a.Plain 1.0", None) == "OK. a.Plain 1.0 vs b.B 1.0 received for roborumble"
            assert _upload(proxy, "a.Forged 1.0", FORGED) == "OK. a.Forged 1.0 vs b.B 1.0 received for roborumble"
        assert _recorded(server) == {
            "a.Plain 1.0": CLIENT_ADDR,
            "a.Forged 1.0": CLIENT_ADDR,
        }  # nginx appends the real one


def test_without_trusted_proxies_a_forged_forwarded_for_is_ignored(tmp_path):
    with live_server(tmp_path) as server:
        assert _upload(server.url, "a.Forged 1.0", FORGED) == "OK. a.Forged 1.0 vs b.B 1.0 received for roborumble"
        assert _recorded(server) == {"a.Forged 1.0": CLIENT_ADDR}


def test_nginx_in_front_without_trusted_proxies_records_the_proxy(tmp_path):
    """The default is safe but blind behind a proxy: every upload seems to come from nginx."""
    if not available():
        skip_unless_ci("nginx is not installed (scripts/test.sh installs it)")
    with live_server(tmp_path) as server:
        with running_nginx(tmp_path / "nginx", int(urlsplit(server.url).port), urlsplit(server.url).hostname) as proxy:
            assert _upload(proxy, "a.Plain 1.0", FORGED) == "OK. a.Plain 1.0 vs b.B 1.0 received for roborumble"
        assert _recorded(server) == {"a.Plain 1.0": "127.0.0.1"}


def _remove(url: str, source: str) -> int:
    """A RemoveOldParticipant POST from ``source`` of a bot nobody uploaded; the answer's status."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10, source_address=(source, 0))
    try:
        conn.request("POST", "/RemoveOldParticipant", b"version=1&game=roborumble&name=no.Such_1.0&dummy=NA\n")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_nginx_holds_a_flood_of_removals_from_many_addresses_to_its_rate_and_uploads_go_on(tmp_path):
    """150 removals from 30 addresses as fast as they come: nginx passes at most its bursts plus its
    rates on (answering the rest 429, which the client only prints), and an upload meanwhile is accepted."""
    if not available():
        skip_unless_ci("nginx is not installed (scripts/test.sh installs it)")
    with live_server(tmp_path, settings={"TRUSTED_PROXIES": "1"}) as server:
        url = urlsplit(server.url)
        with running_nginx(tmp_path / "nginx", int(url.port), url.hostname) as proxy:
            started = time.monotonic()
            statuses = [_remove(proxy, f"127.0.0.{10 + k % 30}") for k in range(150)]
            elapsed = time.monotonic() - started
            assert _upload(proxy, "a.During 1.0", None) == "OK. a.During 1.0 vs b.B 1.0 received for roborumble"
    assert set(statuses) == {200, 429}
    # what reached rumble: at most the global burst (20) and its rate (5 a second) over the flood
    assert statuses.count(200) <= 20 + 5 * elapsed + 1


def _readme_nginx_site() -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    return readme.split("```nginx\n", 1)[1].split("```", 1)[0]


def test_the_readmes_nginx_site_is_the_tested_one_and_nginx_accepts_it(tmp_path):
    """The README's production site has the tested ``location /`` block, and ``nginx -t`` accepts it (TLS included)."""
    site = _readme_nginx_site()
    for block in (REMOVAL_ZONES, REMOVAL_LOCATION, PROXY_LOCATION):  # the test's, one level deeper
        assert "".join(line.removeprefix("    ") + "\n" for line in block.splitlines()) in site
    if not available() or shutil.which("openssl") is None:
        skip_unless_ci("nginx or openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=rumble.example.org",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    site = site.replace("/etc/letsencrypt/live/rumble.example.org/fullchain.pem", str(cert))
    site = site.replace("/etc/letsencrypt/live/rumble.example.org/privkey.pem", str(key))
    config = tmp_path / "nginx.conf"
    config.write_text(f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\nhttp {{\n{site}}}\n")
    check = subprocess.run(
        [NGINX, "-t", "-c", str(config), "-p", str(tmp_path), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert "test is successful" in check.stderr
