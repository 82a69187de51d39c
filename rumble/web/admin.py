"""The maintainers' blueprint under /admin: authentication, the audit log page, retire and restore.

Scripts send ``Authorization: Bearer <token>``; browsers log in once at /admin/login and then
carry a signed session cookie (HttpOnly, SameSite=Strict, Secure over https, path /admin) that
expires ADMIN_SESSION_MINUTES after the login. Every POST made with a session must carry the
session's CSRF token in the form: a cookie is sent by the browser on its own, a header is not.
A revoked token ends its sessions at their next request. Every action is audited in the same
transaction as the action itself.
"""

from __future__ import annotations

import functools
import hmac
import secrets
import time
from datetime import timedelta

from flask import Blueprint, current_app, g, jsonify, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface

from rumble import ingest, integrity, maintenance_jobs, overrides, store
from rumble.admin_tokens import verify_token
from rumble.store import admin as admin_store
from rumble.store import bots
from rumble.store import integrity as battle_states
from rumble.store import removals
from rumble.store.rumbles import rumble_id
from rumble.web import get_db

bp = Blueprint("admin", __name__, url_prefix="/admin")


class AdminSessionInterface(SecureCookieSessionInterface):
    """Flask's signed cookie session, marked Secure exactly when the request came over https."""

    def get_cookie_secure(self, app) -> bool:
        return request.is_secure

    def open_session(self, app, request):
        """Only /admin has a session (its cookie's path is /admin): every other request, the
        client's uploads above all, gets the empty null session without reading or signing anything."""
        if not request.path.startswith("/admin"):
            return self.null_session_class()
        return super().open_session(app, request)


def init_app(app) -> None:
    """Give the app the database's secret key and the admin session's cookie settings."""
    db = store.connect(app.config["RUMBLE"]["DB"], migrate=False)
    try:
        app.secret_key = admin_store.secret(db, "flask_secret_key")
    finally:
        db.close()
    app.session_interface = AdminSessionInterface()
    app.config.update(
        SESSION_COOKIE_NAME="rumble_admin",
        SESSION_COOKIE_PATH="/admin",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        PERMANENT_SESSION_LIFETIME=timedelta(minutes=app.config["RUMBLE"]["ADMIN_SESSION_MINUTES"]),
    )


def token_owner(db: store.Store, token: str) -> str | None:
    """The maintainer whose valid token ``token`` is, or None."""
    owner = None
    for name, stored in admin_store.active_hashes(db):
        if verify_token(token, stored) and owner is None:
            owner = name
    return owner


def csrf_token() -> str:
    """This session's CSRF token, made on first use (templates put it in every form)."""
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return session["csrf"]


def _csrf_ok() -> bool:
    sent, expected = request.form.get("csrf_token", ""), session.get("csrf", "")
    return bool(expected) and hmac.compare_digest(sent.encode(), expected.encode())


def _authenticate() -> tuple[str | None, int, str]:
    """(maintainer, 0, '') or (None, status, reason), from the bearer header or the session."""
    header = request.headers.get("Authorization")
    if header is not None:
        g.admin_via = "token"
        scheme, _, token = header.partition(" ")
        name = token_owner(get_db(), token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        return (name, 0, "") if name else (None, 401, "invalid or revoked token")
    g.admin_via = "session"
    name = session.get("admin")
    if name is None:
        return None, 401, "authentication required"
    if time.time() >= session.get("admin_until", 0) or not admin_store.is_active(get_db(), name):
        session.clear()
        return None, 401, "session expired or token revoked"
    if request.method not in ("GET", "HEAD") and not _csrf_ok():
        return None, 403, "missing or wrong CSRF token"
    return name, 0, ""


def _from_browser() -> bool:
    return g.admin_via == "session" and "text/html" in request.headers.get("Accept", "")


def admin_required(view):
    """Run ``view`` for an authenticated maintainer (``g.admin``); refuse everyone else:
    401 JSON for scripts, a redirect to the login page for browsers, 403 for a bad CSRF token."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        name, status, reason = _authenticate()
        if name is None:
            if status == 401 and _from_browser():
                return redirect(url_for("admin.login", next=request.path))
            response = jsonify(error=reason)
            response.status_code = status
            if status == 401:
                response.headers["WWW-Authenticate"] = 'Bearer realm="rumble admin"'
            return response
        g.admin = name
        return view(*args, **kwargs)

    return wrapped


@bp.route("/login", methods=["GET", "POST"])
def login():
    """The browser's login form: the token, checked against the valid ones, starts a session."""
    target = request.values.get("next", "")
    target = target if target.startswith("/admin") else url_for("admin.audit_page")  # no open redirect
    if request.method == "GET":
        return render_template("admin_login.html", csrf_token=csrf_token(), next=target, error=None)
    if not _csrf_ok():
        return render_template("admin_login.html", csrf_token=csrf_token(), next=target, error="The form expired; try again."), 403
    db = get_db()
    name = token_owner(db, request.form.get("token", "").strip())
    if name is None:
        return render_template("admin_login.html", csrf_token=csrf_token(), next=target, error="That token is not valid."), 401
    session.clear()  # a fresh session (and CSRF token) for the logged-in maintainer
    session.permanent = True
    session.update(admin=name, admin_until=time.time() + 60 * current_app.config["RUMBLE"]["ADMIN_SESSION_MINUTES"])
    csrf_token()
    with store.write(db):
        admin_store.audit(db, name, "login", {"remote_addr": request.remote_addr}, 0, store.utc_now())
    return redirect(target, code=303)


@bp.post("/logout")
@admin_required
def logout():
    db = get_db()
    with store.write(db):
        admin_store.audit(db, g.admin, "logout", {"remote_addr": request.remote_addr}, 0, store.utc_now())
    session.clear()
    return redirect(url_for("admin.login"), code=303)


@bp.get("")
@admin_required
def audit_page():
    """The audit log, newest first (``?api=1``: JSON)."""
    db = get_db()
    with store.read(db):
        rows = admin_store.audit_rows(db)
        flagged = battle_states.battles_in_state(db, "flagged")
        removal_requests = removals.recent(db)
        stored = overrides.load(db)
        jobs = maintenance_jobs.recent(db)
    if request.args.get("api") == "1":
        return jsonify(rows)
    games = sorted(current_app.extensions["rumble.rumbles"])
    csrf = csrf_token() if g.admin_via == "session" else ""
    return render_template("admin.html", rows=rows, admin=g.admin, games=games, csrf_token=csrf, flagged=flagged,
                           removals=removal_requests, jobs=jobs, clients=stored.accepted_clients(current_app.config["RUMBLE"]["ACCEPTED_CLIENTS"]),
                           rumbles=stored.rumbles(current_app.extensions["rumble.rumbles"]))


@bp.get("/removals")
@admin_required
def removals_page():
    """The newest RemoveOldParticipant requests (who, from where, what, outcome), as JSON."""
    return jsonify(removals.recent(get_db(), limit=500))


@bp.get("/flagged")
@admin_required
def flagged_page():
    """The newest 500 battles waiting for review (state 'flagged'), newest first, as JSON."""
    return jsonify(battle_states.battles_in_state(get_db(), "flagged", limit=500))


@bp.post("/retire")
@admin_required
def retire():
    """Retire a bot from a rumble (form or JSON: game, name)."""
    return _participation("retire", ingest.retire)


@bp.post("/restore")
@admin_required
def restore():
    """Bring a retired bot back into a rumble (form or JSON: game, name)."""
    return _participation("restore", ingest.restore)


def _participation(action: str, change):
    """Retire or restore ``name`` in ``game``, audited together in one transaction."""
    values = request.get_json(silent=True) if request.is_json else request.form
    if not hasattr(values, "get"):  # a JSON body that is not an object
        values = {}
    game, name = str(values.get("game", "")), str(values.get("name", "")).strip()
    details = {"game": game, "bot": name, "via": g.admin_via, "remote_addr": request.remote_addr}
    status, battles = 200, 0
    db = get_db()
    with store.write(db):
        rid = rumble_id(db, game) if game in current_app.extensions["rumble.rumbles"] else None
        bot = bots.find_bot(db, name)
        if rid is None or bot is None or bots.participant_state(db, rid, bot) is None:
            status, details["error"] = 404, f"no bot {name!r} in rumble {game!r}"
            details["changed"] = False
        else:
            details["changed"] = change(db, rid, bot, store.utc_now(), f"admin {action} by {g.admin}")
            battles = admin_store.bot_battles(db, rid, bot) if details["changed"] else 0
        admin_store.audit(db, g.admin, action, details, battles, store.utc_now())
    if g.admin_via == "session":
        return redirect(url_for("admin.audit_page"), code=303)
    response = jsonify(action=action, game=game, bot=name, changed=details["changed"], battles=battles, error=details.get("error"))
    response.status_code = status
    return response


def _values() -> dict:
    """The request's fields: a form, or a JSON object (anything else counts as no fields)."""
    values = request.get_json(silent=True) if request.is_json else request.form
    return values if hasattr(values, "get") else {}


@bp.post("/flag")
@admin_required
def flag():
    """Flag the battles the criteria select: held for review, no longer counted."""
    return _battle_action("flag")


@bp.post("/unflag")
@admin_required
def unflag():
    """Unflag the battles the criteria select (flagged or rolled back): they count again."""
    return _battle_action("unflag")


@bp.post("/rollback")
@admin_required
def rollback():
    """Roll back the battles the criteria select: marked removed, tables recomputed without them."""
    return _battle_action("rollback")


def _battle_action(action: str):
    """Move the selected battles' state, rebuild the rumbles they belong to, audit it: one transaction.

    Fields: game, uploader, remote_addr, client, since, until (receive times, UTC), ids, and
    dry_run (just count). A refused selection is a 400 with the reason, and audited too.
    """
    values = _values()
    text = {key: str(values.get(key, "")) for key in ("game", "uploader", "remote_addr", "client", "since", "until", "ids")}
    if isinstance(values.get("ids"), list):  # JSON may give the ids as an array
        text["ids"] = ",".join(str(i) for i in values["ids"])
    dry_run = str(values.get("dry_run", "")).lower() in ("1", "true", "on", "yes")
    details = {"via": g.admin_via, "remote_addr": request.remote_addr, "dry_run": dry_run}
    db = get_db()
    try:
        selection = integrity.make_filter(**text, known_games=current_app.extensions["rumble.rumbles"])
    except integrity.FilterError as problem:
        details.update(error=str(problem), criteria={k: v for k, v in text.items() if v})
        with store.write(db):
            admin_store.audit(db, g.admin, action, details, 0, store.utc_now())
        return _done(action, 400, error=str(problem))
    with store.read(db):  # what it will move: the battles that match now (the job moves these, and no later ones)
        max_id = maintenance_jobs.newest_battle(db)
        counts = battle_states.count_matching(db, selection, integrity.TRANSITIONS[action][0], max_id)
    if dry_run:
        with store.write(db):
            admin_store.audit(db, g.admin, action, {**details, "criteria": selection.describe(), "per_rumble": counts}, 0, store.utc_now())
        return _done(action, dry_run=True, battles=sum(counts.values()), per_rumble=counts, replayed={})
    args = {"criteria": maintenance_jobs.criteria(selection), "max_id": max_id, "details": details,
            "min_battles": current_app.config["RUMBLE"]["PRIORITY_MIN_BATTLES"]}  # fmt: skip
    return _start_job(action, args, battles=sum(counts.values()), per_rumble=counts)


def _start_job(kind: str, args: dict, **fields):
    """Record a maintenance job, start its process, answer 202 with its id (a browser: back to /admin)."""
    job_id = maintenance_jobs.submit(get_db(), kind, args, g.admin)
    maintenance_jobs.spawn(current_app.config["RUMBLE"]["DB"], job_id)
    if g.admin_via == "session":
        return redirect(url_for("admin.audit_page"), code=303)
    response = jsonify(action=kind, job=job_id, state="queued", url=url_for("admin.job_page", id=job_id), **fields)
    response.status_code = 202
    return response


@bp.get("/jobs")
@admin_required
def job_page():
    """The newest maintenance jobs as JSON, or with ``id`` that job's row (state, progress, result or error)."""
    wanted = request.args.get("id", "")
    if not wanted:
        return jsonify(maintenance_jobs.recent(get_db()))
    found = maintenance_jobs.job_state(get_db(), int(wanted)) if wanted.isascii() and wanted.isdigit() and len(wanted) < 19 else None
    if found is None:
        return _done("job", 404, error=f"no job {wanted!r}")
    return jsonify(found)


def _done(action: str, status: int = 200, **fields):
    """The answer to an admin POST: back to /admin for a browser that succeeded, JSON otherwise."""
    if g.admin_via == "session" and status < 400:
        return redirect(url_for("admin.audit_page"), code=303)
    response = jsonify(action=action, **fields)
    response.status_code = status
    return response


@bp.post("/rebuild")
@admin_required
def rebuild():
    """Recompute a rumble's tables from its log (``game``), or every rumble with battles (no game)."""
    game = str(_values().get("game", "")).strip()
    known = current_app.extensions["rumble.rumbles"]
    details = {"via": g.admin_via, "remote_addr": request.remote_addr}
    db = get_db()
    if game and game not in known:
        with store.write(db):
            admin_store.audit(db, g.admin, "rebuild", {**details, "game": game, "error": f"no rumble called {game!r}"}, 0, store.utc_now())
        return _done("rebuild", 400, error=f"no rumble called {game!r}")
    with store.read(db):
        games = [game] if game else [name for name in known if battle_states.logged_battles(db, name)]
    args = {"games": games, "details": details, "min_battles": current_app.config["RUMBLE"]["PRIORITY_MIN_BATTLES"]}
    return _start_job("rebuild", args, games=games)


@bp.post("/batch")
@admin_required
def batch():
    """Run the batch rankings now: for ``game``, or for every rumble whose log changed since its last run."""
    from rumble import jobs

    game = str(_values().get("game", "")).strip()
    details = {"via": g.admin_via, "remote_addr": request.remote_addr, "game": game or "stale"}
    db = get_db()
    if game and game not in current_app.extensions["rumble.rumbles"]:
        details["error"] = f"no rumble called {game!r}"
        with store.write(db):
            admin_store.audit(db, g.admin, "batch", details, 0, store.utc_now())
        return _done("batch", 400, error=details["error"])
    source = f"admin {g.admin}"
    reports = [jobs.run_rumble(db, game, source=source)] if game else jobs.run_stale(db, source)
    runs = {r.game: {"run": r.run_id, "bots": int(r.ranked.kept.sum()), "battles": r.seen.battles} for r in reports}
    details["runs"] = runs
    with store.write(db):
        admin_store.audit(db, g.admin, "batch", details, 0, store.utc_now())
    return _done("batch", runs=runs)


@bp.post("/clients")
@admin_required
def clients():
    """Set the client whitelist (``clients``: versions separated by commas), or ``reset`` it to the server's setting."""
    values = _values()
    reset = str(values.get("reset", "")).lower() in ("1", "true", "on", "yes")
    details = {"via": g.admin_via, "remote_addr": request.remote_addr}
    db = get_db()
    with store.write(db):
        before = overrides.load(db).accepted_clients(current_app.config["RUMBLE"]["ACCEPTED_CLIENTS"])
        try:
            versions = None if reset else overrides.parse_clients(str(values.get("clients", "")))
        except overrides.SettingError as error:
            details.update(error=str(error), sent=str(values.get("clients", "")))
            admin_store.audit(db, g.admin, "set-clients", details, 0, store.utc_now())
            return _done("set-clients", 400, error=str(error))
        overrides.set_clients(db, versions, store.utc_now(), g.admin)
        after = overrides.load(db).accepted_clients(current_app.config["RUMBLE"]["ACCEPTED_CLIENTS"])
        details.update(before=list(before), after=list(after), reset=reset)
        admin_store.audit(db, g.admin, "set-clients", details, 0, store.utc_now())
    return _done("set-clients", accepted_clients=list(after))


@bp.post("/rumble-settings")
@admin_required
def rumble_settings():
    """Set one of a rumble's settings (``game``, ``key``: rounds, field, melee or teams, ``value``), or ``reset`` it to the file's."""
    values = _values()
    game, key = str(values.get("game", "")).strip(), str(values.get("key", "")).strip()
    raw, reset = str(values.get("value", "")), str(values.get("reset", "")).lower() in ("1", "true", "on", "yes")
    details = {"via": g.admin_via, "remote_addr": request.remote_addr, "game": game, "key": key}
    base = current_app.extensions["rumble.rumbles"].get(game)
    db = get_db()
    with store.write(db):
        before = overrides.load(db).rumble(base)
        try:
            if base is None:
                raise overrides.SettingError(f"no rumble called {game!r}")
            value = None if reset else overrides.parse_rumble_value(key, raw)
            after = overrides.set_rumble(db, base, key, value, store.utc_now(), g.admin)
        except overrides.SettingError as error:
            details.update(error=str(error), sent=raw)
            admin_store.audit(db, g.admin, "set-rumble", details, 0, store.utc_now())
            return _done("set-rumble", 400, error=str(error))
        details.update(before=getattr(before, key), after=getattr(after, key), reset=reset)
        admin_store.audit(db, g.admin, "set-rumble", details, 0, store.utc_now())
    return _done("set-rumble", game=game, key=key, value=getattr(after, key))
