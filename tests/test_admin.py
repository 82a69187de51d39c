"""The /admin blueprint and `rumble admin`: nothing without a valid token or session, CSRF on
browser forms, expiring sessions, audited actions whose tables equal a rebuild."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from conftest import audit_rows as _audit
from conftest import battle
from conftest import maintainer_token as _token

from rumble import store
from rumble.app import create_app
from rumble.cli import cli
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.games import load_rumbles
from rumble.store import maintainers
from rumble.store.tables import snapshot

ADMIN_URLS = [
    ("GET", "/admin"),
    ("POST", "/admin/retire"),
    ("POST", "/admin/restore"),
    ("POST", "/admin/logout"),
    ("GET", "/admin/flagged"),
    ("GET", "/admin/removals"),
    ("GET", "/admin/failures"),
    ("POST", "/admin/rebuild"),
    ("POST", "/admin/batch"),
    ("POST", "/admin/clients"),
    ("POST", "/admin/rumble-settings"),
    ("POST", "/admin/flag"),
    ("POST", "/admin/unflag"),
    ("POST", "/admin/rollback"),
    ("GET", "/admin/jobs"),
    ("GET", "/admin/uploaders"),
    ("GET", "/admin/uploader-preview"),
    ("POST", "/admin/uploaders/vouch"),
    ("POST", "/admin/uploaders/revoke"),
]
BROWSER = {"Accept": "text/html,application/xhtml+xml"}
BOTS = ["a.Alpha 1.0", "b.Beta 1.0", "c.Gamma 1.0", "d.Delta 1.0"]


def _bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _login(client, token: str):
    page = client.get("/admin/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    return client.post("/admin/login", data={"token": token, "csrf_token": csrf, "next": "/admin"})


def _csrf(client) -> str:
    page = client.get("/admin", headers=BROWSER).get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def _ladder(upload) -> None:
    for i, a in enumerate(BOTS):
        for b in BOTS[i + 1 :]:
            for n in range(2):
                upload(battle(a, b, (3000 + 400 * i + 100 * n, 2500), time_ms=None))


def _rebuilt_equals_online(app) -> None:
    db = store.connect(app.config["RUMBLE"]["DB"])
    online = snapshot(db)
    with store.write(db):
        rebuild_rumble(db, "roborumble", load_rumbles()["roborumble"].rounds, 3)
    assert snapshot(db) == online
    db.close()


def test_the_list_of_admin_urls_above_is_every_admin_url_but_the_login(app):
    """A new /admin URL must join ADMIN_URLS, and so every refusal test below."""
    found = {
        (method, rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/admin")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert found - {("GET", "/admin/login"), ("POST", "/admin/login")} == set(ADMIN_URLS)


def test_the_login_redirects_only_within_admin(app, client):
    token = _token(app)
    page = client.get("/admin/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    response = client.post(
        "/admin/login", data={"token": token, "csrf_token": csrf, "next": "https://evil.example/admin"}
    )
    assert response.status_code == 303 and response.headers["Location"] == "/admin"


@pytest.mark.parametrize("method, url", ADMIN_URLS)
def test_every_admin_url_refuses_a_script_without_credentials(client, method, url):
    response = client.open(url, method=method)
    assert response.status_code == 401
    assert response.json["error"] and response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("method, url", ADMIN_URLS)
def test_every_admin_url_sends_a_browser_without_a_session_to_the_login_page(client, method, url):
    response = client.open(url, method=method, headers=BROWSER)
    assert response.status_code == 302 and "/admin/login" in response.headers["Location"]


@pytest.mark.parametrize("method, url", ADMIN_URLS)
@pytest.mark.parametrize("header", ["Bearer wrong-token", "Bearer ", "Basic YWxpY2U6eA==", "bearer"])
def test_every_admin_url_refuses_a_wrong_token(app, client, method, url, header):
    _token(app)
    response = client.open(url, method=method, headers={"Authorization": header, **BROWSER})
    assert response.status_code == 401 and response.is_json


@pytest.mark.parametrize("method, url", ADMIN_URLS)
def test_every_admin_url_refuses_a_revoked_token(app, client, method, url):
    token = _token(app)
    assert client.get("/admin", headers=_bearer(token)).status_code == 200
    revoked = CliRunner().invoke(
        cli, ["admin", "revoke", "--db", app.config["RUMBLE"]["DB"], "alice"], env={"RUMBLE_ADMIN_TOKEN": token}
    )
    assert revoked.exit_code == 0
    assert client.open(url, method=method, headers=_bearer(token)).status_code == 401


def test_nothing_is_done_or_audited_without_credentials(app, client, upload):
    _ladder(upload)
    client.post("/admin/retire", data={"game": "roborumble", "name": BOTS[0]})
    assert BOTS[0] in {r["name"] for r in client.get("/Rankings?game=roborumble&api=1").json}
    assert _audit(app) == []


def test_a_login_post_without_the_form_token_is_refused(app, client):
    token = _token(app)
    client.get("/admin/login")  # the session now holds a CSRF token, but the form below lacks it
    response = client.post("/admin/login", data={"token": token})
    assert response.status_code == 403
    response = client.post("/admin/login", data={"token": token, "csrf_token": "guessed"})
    assert response.status_code == 403
    assert client.get("/admin", headers=BROWSER).status_code == 302  # not logged in


def test_a_login_with_a_wrong_token_is_refused(app, client):
    _token(app)
    assert _login(client, "not-the-token").status_code == 401
    assert client.get("/admin", headers=BROWSER).status_code == 302


def test_a_browser_logs_in_and_its_cookie_is_httponly_strict_and_scoped(app, client):
    token = _token(app)
    response = _login(client, token)
    assert response.status_code == 303 and response.headers["Location"].endswith("/admin")
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/admin" in cookie
    assert "Secure" not in cookie  # plain http here
    assert token not in cookie
    page = client.get("/admin", headers=BROWSER)
    assert page.status_code == 200 and "Logged in as alice" in page.get_data(as_text=True)
    assert [r["action"] for r in _audit(app)] == ["login"]


def test_the_session_cookie_is_secure_over_https(app, client):
    response = client.get("/admin/login", base_url="https://localhost")
    assert "Secure" in response.headers["Set-Cookie"]


def test_a_session_expires(app, client):
    token = _token(app)
    app.config["RUMBLE"]["ADMIN_SESSION_MINUTES"] = 0  # expires the moment it starts
    _login(client, token)
    assert client.get("/admin", headers=BROWSER).status_code == 302
    assert client.get("/admin").status_code == 401


def test_a_revoked_token_ends_its_sessions(app, client):
    token = _token(app)
    _login(client, token)
    assert client.get("/admin", headers=BROWSER).status_code == 200
    CliRunner().invoke(
        cli, ["admin", "revoke", "--db", app.config["RUMBLE"]["DB"], "alice"], env={"RUMBLE_ADMIN_TOKEN": token}
    )
    assert client.get("/admin", headers=BROWSER).status_code == 302


def test_a_browser_post_needs_the_sessions_csrf_token(app, client, upload):
    _ladder(upload)
    _login(client, _token(app))
    response = client.post("/admin/retire", data={"game": "roborumble", "name": BOTS[0]}, headers=BROWSER)
    assert response.status_code == 403
    response = client.post(
        "/admin/retire", data={"game": "roborumble", "name": BOTS[0], "csrf_token": _csrf(client)}, headers=BROWSER
    )
    assert response.status_code == 303
    assert BOTS[0] not in {r["name"] for r in client.get("/Rankings?game=roborumble&api=1").json}
    assert _audit(app)[0]["details"]["via"] == "session"


def test_retire_with_a_bearer_token_is_audited_and_equals_a_rebuild(app, client, upload):
    _ladder(upload)
    token = _token(app)
    response = client.post("/admin/retire", json={"game": "roborumble", "name": BOTS[1]}, headers=_bearer(token))
    assert response.status_code == 200
    assert response.json["changed"] is True and response.json["battles"] == 6
    assert BOTS[1] not in {r["name"] for r in client.get("/Rankings?game=roborumble&api=1").json}
    entry = _audit(app)[0]
    assert (entry["who"], entry["action"], entry["battles"]) == ("alice", "retire", 6)
    assert entry["details"]["bot"] == BOTS[1] and entry["details"]["changed"] is True
    _rebuilt_equals_online(app)
    again = client.post("/admin/retire", json={"game": "roborumble", "name": BOTS[1]}, headers=_bearer(token))
    assert again.json["changed"] is False and len(_audit(app)) == 2


def test_restore_revives_a_retired_bot_and_equals_a_rebuild(app, client, upload):
    _ladder(upload)
    token = _token(app)
    before = client.get("/Rankings?game=roborumble&api=1").json
    client.post("/admin/retire", data={"game": "roborumble", "name": BOTS[2]}, headers=_bearer(token))
    response = client.post("/admin/restore", data={"game": "roborumble", "name": BOTS[2]}, headers=_bearer(token))
    assert response.status_code == 200 and response.json["changed"] is True
    after = client.get("/Rankings?game=roborumble&api=1").json
    assert {r["name"]: r["aps"] for r in after} == {r["name"]: r["aps"] for r in before}
    assert [r["action"] for r in _audit(app)] == ["restore", "retire"]
    _rebuilt_equals_online(app)
    upload(battle(BOTS[2], BOTS[3], (4000, 2000)))  # the worker's copy knows it is active again
    _rebuilt_equals_online(app)
    assert (
        client.post("/admin/restore", data={"game": "roborumble", "name": BOTS[2]}, headers=_bearer(token)).json[
            "changed"
        ]
        is False
    )


def test_an_unknown_bot_or_game_is_404_and_audited(app, client, upload):
    _ladder(upload)
    token = _token(app)
    for game, name in (("roborumble", "no.Such 1.0"), ("nosuch", BOTS[0]), ("meleerumble", BOTS[0])):
        response = client.post("/admin/retire", data={"game": game, "name": name}, headers=_bearer(token))
        assert response.status_code == 404 and response.json["changed"] is False
    assert [r["details"]["error"] for r in _audit(app)] == [
        "no bot 'a.Alpha 1.0' in rumble 'meleerumble'",
        "no bot 'a.Alpha 1.0' in rumble 'nosuch'",
        "no bot 'no.Such 1.0' in rumble 'roborumble'",
    ]


def test_the_audit_page_lists_newest_first_and_escapes(app, client, upload):
    _ladder(upload)
    token = _token(app)
    client.post("/admin/retire", data={"game": "roborumble", "name": BOTS[0]}, headers=_bearer(token))
    client.post(
        "/admin/retire", data={"game": "roborumble", "name": "<script>alert(1)</script>"}, headers=_bearer(token)
    )
    html = client.get("/admin", headers=_bearer(token)).get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    audit = html.split("<h2>Audit log</h2>")[1]  # (the retired bot is also listed above, under Recent retirements)
    assert audit.index("&lt;script&gt;") < audit.index(BOTS[0])
    rows = client.get("/admin?api=1", headers=_bearer(token)).json
    assert [r["details"]["bot"] for r in rows] == ["<script>alert(1)</script>", BOTS[0]]


def test_the_secret_key_is_per_database_and_shared_by_every_app_on_it(app, tmp_path):
    again = create_app({"DB": app.config["RUMBLE"]["DB"], "BATCH_INTERVAL_MINUTES": 0})
    other = create_app({"DB": str(tmp_path / "other.db"), "BATCH_INTERVAL_MINUTES": 0})
    assert app.secret_key and len(app.secret_key) == 64
    assert again.secret_key == app.secret_key != other.secret_key


def _cli(db: str, *args: str, token: str = ""):
    return CliRunner().invoke(
        cli, ["admin", *args[:1], "--db", db, *args[1:]], catch_exceptions=False, env={"RUMBLE_ADMIN_TOKEN": token}
    )


def test_create_token_list_and_revoke_on_the_command_line(app, client):
    db = app.config["RUMBLE"]["DB"]
    created = _cli(db, "create-token", "alice")  # the first maintainer needs no token
    token = created.output.strip()
    assert created.exit_code == 0 and len(token) >= 43
    assert client.get("/admin", headers=_bearer(token)).status_code == 200
    refused = _cli(db, "list")  # from now on every admin command needs one
    assert refused.exit_code == 1 and "needs a maintainer token" in refused.output and "alice" not in refused.output
    assert _cli(db, "list", token="not-a-token").exit_code == 1
    listed = _cli(db, "list", token=token)
    assert "alice" in listed.output and "valid" in listed.output
    conn = store.connect(db)
    stored = conn.execute("SELECT token_hash FROM maintainers").fetchone()[0]
    conn.close()
    assert token not in stored and stored not in listed.output and "scrypt" not in listed.output
    assert _cli(db, "create-token", "bob").exit_code == 1  # no token
    assert _cli(db, "create-token", "alice", token=token).exit_code == 1  # already valid: revoke first
    bob = _cli(db, "create-token", "bob", token=token).output.strip()
    assert _cli(db, "revoke", "alice").exit_code == 1  # no token
    assert _cli(db, "revoke", "alice", token=bob).exit_code == 0
    assert "revoked" in _cli(db, "list", token=bob).output
    assert client.get("/admin", headers=_bearer(token)).status_code == 401
    assert _cli(db, "list", token=token).exit_code == 1  # a revoked token no longer works here either
    assert (
        _cli(db, "revoke", "alice", token=bob).exit_code == 1 and _cli(db, "revoke", "carol", token=bob).exit_code == 1
    )
    fresh = _cli(db, "create-token", "alice", token=bob).output.strip()  # a revoked maintainer gets a new token
    assert client.get("/admin", headers=_bearer(fresh)).status_code == 200
    assert client.get("/admin", headers=_bearer(token)).status_code == 401
    audit = [(r["who"], r["action"], r["details"]["maintainer"]) for r in reversed(_audit(app))]
    assert audit[0][0].startswith("cli") and audit[0][1:] == ("create-token", "alice")
    assert audit[1:] == [("alice", "create-token", "bob"), ("bob", "revoke", "alice"), ("bob", "create-token", "alice")]


def test_the_audit_log_is_append_only(app):
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):
        maintainers.audit(db, "alice", "test", {}, 0, store.utc_now())
    import sqlite3

    for sql in ("DELETE FROM audit_log", "UPDATE audit_log SET who = 'mallory'"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute(sql)
    db.close()


def test_every_admin_command_refuses_without_a_token_once_a_maintainer_exists(app, client, upload, tmp_path):
    """Each `rumble admin` subcommand, `rumble backup` and `rumble restore`: exit 1, nothing done, nothing audited.
    The list of commands comes from the click group itself, so a new one cannot be left out."""
    from rumble.cli.admin_commands import admin as admin_group

    db = app.config["RUMBLE"]["DB"]
    _ladder(upload)
    token = _token(app)
    backup = tmp_path / "copy.db"
    assert (
        CliRunner().invoke(cli, ["backup", "--db", db, str(backup)], env={"RUMBLE_ADMIN_TOKEN": token}).exit_code == 0
    )
    arguments = {
        "admin create-token": ["bob"],
        "admin revoke": ["alice"],
        "admin list": [],
        "admin flag": ["--uploader", "Jane Doe"],
        "admin rollback": ["--uploader", "Jane Doe"],
        "admin unflag": ["--uploader", "Jane Doe"],
        "admin vouch": ["Jane Doe", "10.0.0.1"],
        "admin revoke-uploader": ["Jane Doe", "10.0.0.1"],
        "admin standings": [],
        "backup": [str(tmp_path / "other.db")],
        "restore": ["--yes", str(backup)],
    }
    assert set(arguments) == {f"admin {name}" for name in admin_group.commands} | {"backup", "restore"}
    conn = store.connect(db)
    before = snapshot(conn), conn.execute("SELECT count(*) FROM audit_log").fetchone()[0], maintainers.maintainers(conn)
    conn.close()
    for command, args in arguments.items():
        for env in ({"RUMBLE_ADMIN_TOKEN": ""}, {"RUMBLE_ADMIN_TOKEN": "wrong"}):
            result = CliRunner().invoke(cli, [*command.split(), "--db", db, *args], env=env)
            assert result.exit_code == 1, (command, result.output)
            assert "token" in result.output and "Jane" not in result.output
    assert not (tmp_path / "other.db").exists()
    conn = store.connect(db)
    assert (
        snapshot(conn),
        conn.execute("SELECT count(*) FROM audit_log").fetchone()[0],
        maintainers.maintainers(conn),
    ) == before
    assert conn.execute("SELECT count(*) FROM battles WHERE state != 'ok'").fetchone()[0] == 0
    conn.close()


def test_only_admin_requests_open_the_session(app):
    """The admin cookie's path is /admin, so every other request (the client's uploads above all)
    gets the null session without reading or signing a cookie; /admin gets the signed one."""
    interface = app.session_interface
    with app.test_request_context("/UploadedResults", method="POST"):
        from flask import request

        assert interface.is_null_session(interface.open_session(app, request))
    with app.test_request_context("/admin/login"):
        from flask import request

        assert not interface.is_null_session(interface.open_session(app, request))


def test_the_admin_forms_default_to_the_1v1_ladder_and_say_the_rebuild_runs_aside(app, client):
    """The rumble drop-downs that need one rumble start on roborumble, not on the first name in
    alphabetical order (meleerumble); the rebuild button says it runs beside the uploads."""
    _login(client, _token(app, "jane"))
    page = client.get("/admin", headers=BROWSER).get_data(as_text=True)
    one_rumble = [f for f in re.findall(r'<select name="game">(.*?)</select>', page) if 'value=""' not in f]
    assert one_rumble  # the retire and restore forms
    for form in one_rumble:
        assert re.findall(r"<option selected>([^<]+)</option>", form) == ["roborumble"]
    assert "computed aside while uploads go on" in page and "uploads wait meanwhile" not in page
