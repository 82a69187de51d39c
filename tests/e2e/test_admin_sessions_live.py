"""Admin sessions and failed attempts against a real ``rumble serve`` (gunicorn, 2 workers): a
logged-out cookie replayed over HTTP opens nothing in either worker, failures are logged with the
client's address, and past ADMIN_FAILURES_PER_HOUR (default 20) every worker answers 429."""

from __future__ import annotations

import re

import pytest
import requests
from click.testing import CliRunner

from rumble.cli import cli

from .e2e_support import read_only

pytestmark = pytest.mark.e2e
BROWSER = {"Accept": "text/html,application/xhtml+xml"}
DEFAULT_LIMIT = 20  # ADMIN_FAILURES_PER_HOUR's documented default


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def _rows(server, sql: str) -> list[tuple]:
    with read_only(server.db_path) as db:
        return db.execute(sql).fetchall()


def _token(server) -> str:
    result = CliRunner().invoke(
        cli, ["admin", "create-token", "--db", str(server.db_path), "alice"], env={"RUMBLE_ADMIN_TOKEN": ""}
    )
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_a_logged_out_cookie_replayed_to_the_real_server_opens_nothing(live_server):
    token = _token(live_server)
    browser = requests.Session()
    page = browser.get(live_server.url + "/admin/login", timeout=10).text
    response = browser.post(
        live_server.url + "/admin/login",
        data={"token": token, "csrf_token": _csrf(page), "next": "/admin"},
        allow_redirects=False,
        timeout=10,
    )
    assert response.status_code == 303
    old_cookie = browser.cookies.get("rumble_admin", path="/admin")
    csrf = _csrf(browser.get(live_server.url + "/admin", headers=BROWSER, timeout=10).text)
    assert (
        browser.post(
            live_server.url + "/admin/logout", data={"csrf_token": csrf}, allow_redirects=False, timeout=10
        ).status_code
        == 303
    )
    audited = _rows(live_server, "SELECT id, action FROM audit_log ORDER BY id")
    assert [action for _, action in audited] == ["create-token", "login", "logout"]
    for _ in range(4):  # both workers, more than once
        response = requests.post(
            live_server.url + "/admin/restore",
            data={"game": "roborumble", "name": "a.Alpha 1.0", "csrf_token": csrf},
            headers={**BROWSER, "Cookie": f"rumble_admin={old_cookie}"},
            allow_redirects=False,
            timeout=10,
        )
        assert response.status_code == 302 and response.headers["Location"] == "/admin/login?next=/admin/restore"
    assert _rows(live_server, "SELECT id, action FROM audit_log ORDER BY id") == audited
    assert (
        _rows(live_server, "SELECT remote_addr, kind, tried FROM admin_failures")
        == [("127.0.0.1", "session", "a session cookie: session ended (logout)")] * 4
    )


def test_failures_are_logged_with_the_address_and_limited_in_every_worker(live_server):
    token = _token(live_server)
    wrong = {"Authorization": "Bearer " + token[:-1] + ("A" if token[-1] != "A" else "B")}
    statuses = [
        requests.get(live_server.url + "/admin", headers=wrong, timeout=10).status_code
        for _ in range(DEFAULT_LIMIT + 5)
    ]
    assert statuses == [401] * DEFAULT_LIMIT + [429] * 5
    right = requests.get(live_server.url + "/admin", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert right.status_code == 429 and right.headers["Content-Type"].startswith("text/plain")
    assert right.text.startswith("Too many failed maintainer logins or tokens from your address (20 in the last hour).")
    kinds = _rows(live_server, "SELECT remote_addr, kind, count(*) FROM admin_failures GROUP BY 1, 2 ORDER BY 2")
    assert kinds == [("127.0.0.1", "bearer", DEFAULT_LIMIT), ("127.0.0.1", "limited", 1)]
