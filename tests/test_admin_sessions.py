"""Admin sessions live on the server (logout and revoke end them at once), failed attempts are
logged with their address and limited per address, and a token costs one scrypt at most."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from conftest import audit_rows, battle, maintainer_token

from rumble import store
from rumble.admin_tokens import hash_token, new_token, token_id
from rumble.cli import cli
from rumble.store.maintainers import add_maintainer
from rumble.store.migrations import MIGRATIONS_DIR, migrate

BROWSER = {"Accept": "text/html,application/xhtml+xml"}
BOTS = ["a.Alpha 1.0", "b.Beta 1.0", "c.Gamma 1.0"]
ATTACKER = "203.0.113.9"  # TEST-NET-3: an address no real client has


def _bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _form_csrf(client, url: str) -> str:
    page = client.get(url, headers=BROWSER).get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def _login(client, token: str, **kwargs):
    csrf = _form_csrf(client, "/admin/login")
    return client.post("/admin/login", data={"token": token, "csrf_token": csrf, "next": "/admin"}, **kwargs)


def _ladder(upload) -> None:
    for i, a in enumerate(BOTS):
        for b in BOTS[i + 1 :]:
            upload(battle(a, b, (3000 + 300 * i, 2500), time_ms=None))


def _active(client) -> set[str]:
    return {row["name"] for row in client.get("/Rankings?game=roborumble&api=1").json}


def _rows(app, sql: str) -> list[tuple]:
    """Rows read with a plain sqlite3 connection, not through rumble.store."""
    conn = sqlite3.connect(app.config["RUMBLE"]["DB"])
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _cli(app, *args: str, token: str = ""):
    return CliRunner().invoke(
        cli, ["admin", args[0], "--db", app.config["RUMBLE"]["DB"], *args[1:]], env={"RUMBLE_ADMIN_TOKEN": token}
    )


@pytest.fixture
def scrypt_calls(monkeypatch) -> list[int]:
    """Counts every scrypt run in this process (one entry per call)."""
    calls: list[int] = []
    real = hashlib.scrypt

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "scrypt", counting)
    return calls


def test_a_cookie_replayed_after_logout_is_refused_and_nothing_is_done_or_audited(app, client, upload):
    _ladder(upload)
    _login(client, maintainer_token(app))
    csrf = _form_csrf(client, "/admin")
    assert (
        client.post(
            "/admin/retire", data={"game": "roborumble", "name": BOTS[0], "csrf_token": csrf}, headers=BROWSER
        ).status_code
        == 303
    )
    old_cookie = client.get_cookie("rumble_admin", path="/admin").value
    assert client.post("/admin/logout", data={"csrf_token": csrf}, headers=BROWSER).status_code == 303
    before = audit_rows(app)
    assert [r["action"] for r in before] == ["logout", "retire", "login"]
    client.set_cookie("rumble_admin", old_cookie, path="/admin")  # an attacker who kept the cookie
    response = client.post(
        "/admin/restore", data={"game": "roborumble", "name": BOTS[0], "csrf_token": csrf}, headers=BROWSER
    )
    assert response.status_code == 302 and response.headers["Location"] == "/admin/login?next=/admin/restore"
    client.set_cookie("rumble_admin", old_cookie, path="/admin")
    assert (
        client.post("/admin/restore", data={"game": "roborumble", "name": BOTS[0], "csrf_token": csrf}).status_code
        == 401
    )
    assert BOTS[0] not in _active(client)  # the restore was not executed
    assert audit_rows(app) == before  # nor audited
    assert _rows(app, "SELECT maintainer, ended_why FROM admin_sessions") == [("alice", "logout")]


def test_revoke_ends_a_live_session_at_once_and_a_new_token_does_not_revive_it(app, client, upload):
    _ladder(upload)
    alice, bob = maintainer_token(app, "alice"), maintainer_token(app, "bob")
    _login(client, alice)
    csrf = _form_csrf(client, "/admin")
    assert _cli(app, "revoke", "alice", token=bob).exit_code == 0
    assert _cli(app, "create-token", "alice", token=bob).exit_code == 0  # alice gets a new token
    before = audit_rows(app)
    response = client.post(
        "/admin/retire", data={"game": "roborumble", "name": BOTS[1], "csrf_token": csrf}, headers=BROWSER
    )
    assert response.status_code == 302 and response.headers["Location"].startswith("/admin/login")
    assert BOTS[1] in _active(client) and audit_rows(app) == before
    # ended by the revocation itself, not found dead at the next request
    [(maintainer, ended_at, ended_why)] = _rows(app, "SELECT maintainer, ended_at, ended_why FROM admin_sessions")
    [(revoked_at,)] = _rows(app, "SELECT at FROM audit_log WHERE action = 'revoke'")
    assert (maintainer, ended_why) == ("alice", "revoked") and ended_at <= revoked_at


def test_a_failed_login_is_logged_with_its_address_and_never_the_token(app, client):
    token = maintainer_token(app)
    wrong = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")  # alice's id, a wrong secret
    start = datetime.now(UTC) - timedelta(seconds=1)
    response = _login(client, wrong, environ_base={"REMOTE_ADDR": ATTACKER})
    assert response.status_code == 401 and "That token is not valid." in response.get_data(as_text=True)
    [(at, addr, kind, tried, path)] = _rows(app, "SELECT at, remote_addr, kind, tried, path FROM admin_failures")
    public_id = token.split("_")[1]
    assert (addr, kind, tried, path) == (
        ATTACKER,
        "login",
        f"token id {public_id} (maintainer alice): wrong secret",
        "/admin/login",
    )
    assert start <= datetime.strptime(at, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC) <= datetime.now(UTC)
    assert wrong[len("rmb_") + 17 :] not in tried
    assert _rows(app, "SELECT count(*) FROM audit_log") == [(0,)]


@pytest.mark.parametrize(
    "header, tried",
    [
        ("Bearer rmb_0123456789abcdef_" + "x" * 43, "token id 0123456789abcdef: no valid token has this id"),
        (
            "Bearer an-old-token-without-any-id",
            "a token without an id (27 characters; tokens made before migration 0012 must be re-issued)",
        ),
        ("Bearer rmb_short", "a malformed rmb_ token (9 characters)"),
        ("Bearer ", "an empty Bearer token"),
        ("Basic YWxpY2U6eA==", "an Authorization header of scheme Basic"),
        ("rmb_0123456789abcdef_" + "s" * 43, "an Authorization header of scheme not 'Bearer <token>'"),
    ],
)
def test_a_bad_bearer_token_is_logged_with_its_address_and_shown_on_admin(app, client, header, tried):
    token = maintainer_token(app)
    response = client.get("/admin/flagged", headers={"Authorization": header}, environ_base={"REMOTE_ADDR": ATTACKER})
    assert response.status_code == 401
    assert _rows(app, "SELECT remote_addr, kind, tried, path FROM admin_failures") == [
        (ATTACKER, "bearer", tried, "/admin/flagged")
    ]
    listed = client.get("/admin/failures", headers=_bearer(token)).json
    assert [(f["remote_addr"], f["kind"], f["tried"]) for f in listed] == [(ATTACKER, "bearer", tried)]
    page = client.get("/admin", headers=_bearer(token)).get_data(as_text=True)
    assert f"<td>{ATTACKER}</td><td>bearer</td>" in page
    assert "x" * 43 not in page and "s" * 43 not in page


def test_over_the_limit_an_address_gets_429_and_no_scrypt_runs(app, client, scrypt_calls):
    app.config["RUMBLE"]["ADMIN_FAILURES_PER_HOUR"] = 3
    token = maintainer_token(app)
    wrong = _bearer(token[:-1] + ("A" if token[-1] != "A" else "B"))
    attacker = {"REMOTE_ADDR": ATTACKER}
    scrypt_calls.clear()
    for _ in range(3):
        assert client.get("/admin", headers=wrong, environ_base=attacker).status_code == 401
    assert len(scrypt_calls) == 3  # one per attempt while under the limit
    expected = (
        "Too many failed maintainer logins or tokens from your address (3 in the last hour). "
        "Nothing was checked or done; try again in an hour."
    )
    for headers in (wrong, _bearer(token)):  # beyond it, even the right token is not checked
        response = client.get("/admin", headers=headers, environ_base=attacker)
        assert (response.status_code, response.mimetype, response.get_data(as_text=True)) == (
            429,
            "text/plain",
            expected,
        )
        assert response.headers["Retry-After"] == "3600"
    csrf = _form_csrf(client, "/admin/login")
    response = client.post("/admin/login", data={"token": token, "csrf_token": csrf}, environ_base=attacker)
    assert response.status_code == 429 and expected in response.get_data(as_text=True)
    assert len(scrypt_calls) == 3  # none since the limit
    assert _rows(app, "SELECT kind, count(*) FROM admin_failures GROUP BY kind ORDER BY kind") == [
        ("bearer", 3),
        ("limited", 1),
    ]
    assert client.get("/admin", headers=_bearer(token), environ_base={"REMOTE_ADDR": "198.51.100.7"}).status_code == 200


def test_a_live_session_keeps_working_when_its_address_is_over_the_limit(app, client):
    app.config["RUMBLE"]["ADMIN_FAILURES_PER_HOUR"] = 2
    _login(client, maintainer_token(app))
    for _ in range(3):
        client.get("/admin", headers=_bearer("rmb_0123456789abcdef_" + "x" * 43))
    assert client.get("/admin", headers=_bearer("rmb_0123456789abcdef_" + "x" * 43)).status_code == 429
    assert client.get("/admin", headers=BROWSER).status_code == 200


def test_with_50_maintainers_a_bad_token_costs_one_scrypt_at_most(app, client, scrypt_calls):
    tokens = [new_token() for _ in range(50)]
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):
        for i, token in enumerate(tokens):
            add_maintainer(db, f"m{i}", token_id(token), hash_token(token), store.utc_now())
    db.close()
    cases = [
        (tokens[-1][:-1] + ("A" if tokens[-1][-1] != "A" else "B"), 401, 1),  # the last one's id, a wrong secret
        ("rmb_0123456789abcdef_" + "x" * 43, 401, 0),  # an unknown id
        ("a-token-without-an-id", 401, 0),
        (tokens[-1], 200, 1),  # the right one: one check, not fifty
    ]
    for token, status, hashes in cases:
        scrypt_calls.clear()
        assert client.get("/admin", headers=_bearer(token)).status_code == status
        assert len(scrypt_calls) == hashes, token


def test_create_token_prints_a_token_with_an_id_that_works(app, client):
    created = _cli(app, "create-token", "alice")
    token = created.output.strip()
    assert created.exit_code == 0 and re.fullmatch(r"rmb_[0-9a-f]{16}_[A-Za-z0-9_-]{43}", token)
    assert _rows(app, "SELECT name, token_id FROM maintainers") == [("alice", token[4:20])]
    assert client.get("/admin", headers=_bearer(token)).status_code == 200


def test_an_old_token_in_the_environment_is_refused_with_a_hint(app):
    maintainer_token(app)
    result = _cli(app, "list", token="an-old-token-without-any-id")
    assert result.exit_code == 1 and "made before migration 0012 must be re-issued" in result.output


def test_migration_0012_revokes_the_tokens_without_an_id_and_audits_it(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        if path.name >= "0012":
            break
        shutil.copy(path, old / path.name)
    db = store.connect(tmp_path / "r.db", migrate=False)
    migrate(db, old)
    db.execute(
        "INSERT INTO maintainers (name, token_hash, created_at) VALUES ('alice', ?, '2026-01-01 00:00:00.000')",
        (hash_token("old"),),
    )
    db.execute(
        "INSERT INTO maintainers (name, token_hash, created_at, revoked_at) VALUES ('bob', 'x', '2026-01-01', '2026-01-02')"
    )
    assert "0012_admin_sessions" in migrate(db, MIGRATIONS_DIR)
    rows = db.execute("SELECT name, token_id, revoked_at FROM maintainers ORDER BY name").fetchall()
    assert [(name, public_id) for name, public_id, _ in rows] == [("alice", None), ("bob", None)]
    assert rows[0][2] is not None and rows[1][2] == "2026-01-02"  # bob stays as he was
    audit = db.execute("SELECT who, action, json_extract(details, '$.maintainer') FROM audit_log").fetchall()
    assert audit == [("migration 0012", "revoke", "alice")]
    db.close()
