"""The maintainers' blueprint under /admin: the audit log page and the maintainers' actions.

Who may use it (bearer tokens, server-side browser sessions, CSRF, the failure log and its limit)
is decided in ``rumble.web.admin_auth``. Every action is audited in the same transaction as the
action itself.
"""

from __future__ import annotations

from datetime import timedelta

from flask import Blueprint, current_app, g, jsonify, redirect, render_template, request, url_for
from flask.sessions import SecureCookieSessionInterface

from rumble import overrides, store
from rumble.ingest import apply
from rumble.maintenance import integrity, jobs
from rumble.rankings.uploader_consistency import ALPHA
from rumble.store import admin_sessions, battle_states, bots, maintainers, removals, stats, trust
from rumble.store.rumbles import known_rumble_id, rumble_id
from rumble.web import admin_auth, admin_uploaders, get_db, now
from rumble.web.admin_auth import admin_required, csrf_token
from rumble.web.body import MalformedBody, form_or_json
from rumble.web.uploader_data import uploader_table_state

bp = Blueprint("admin", __name__, url_prefix="/admin")
bp.register_blueprint(admin_uploaders.bp)  # /admin/uploaders and /admin/uploader-preview


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
        app.secret_key = maintainers.secret(db, "flask_secret_key")
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


@bp.route("/login", methods=["GET", "POST"])
def login():
    """The browser's login form: a valid token starts a server-side session (rumble.web.admin_auth)."""
    return admin_auth.login()


@bp.post("/logout")
@admin_required
def logout():
    """End the browser's session at once: its cookie opens nothing afterwards."""
    return admin_auth.logout()


@bp.get("/failures")
@admin_required
def failures_page():
    """The newest failed logins, bad tokens and dead sessions (where from, when, what was tried), as JSON."""
    return jsonify(admin_sessions.recent_failures(get_db(), limit=500))


@bp.get("")
@admin_required
def audit_page():
    """The audit log, newest first (``?api=1``: JSON)."""
    db = get_db()
    with store.read(db):
        rows = maintainers.audit_rows(db)
        flagged = battle_states.battles_in_state(db, "flagged")
        removal_requests = removals.recent(db)
        failures = admin_sessions.recent_failures(db)
        retirements = stats.retirements(db, None, limit=50)
        stored = overrides.load(db)
        recent_jobs = jobs.recent(db)
        words = trust.words(db)
    if request.args.get("api") == "1":
        return jsonify(rows)
    games = sorted(current_app.extensions["rumble.rumbles"])
    default_game = "roborumble" if "roborumble" in games else next(iter(games), None)  # the 1v1 ladder, not meleerumble
    chosen = request.args.get("uploaders")  # the rumble whose uploader-consistency table to show, if any
    table = uploader_table_state(db, known_rumble_id(db, chosen)) if chosen is not None and chosen in games else None
    csrf = csrf_token() if g.admin_via == "session" else ""
    return render_template(
        "admin.html",
        rows=rows,
        admin=g.admin,
        games=games,
        default_game=default_game,
        csrf_token=csrf,
        flagged=flagged,
        removals=removal_requests,
        failures=failures,
        retirements=retirements,
        jobs=recent_jobs,
        words=words,
        uploaders_game=chosen if table is not None else None,
        consistency=table.rows if table is not None else None,
        consistency_source=table.source if table is not None else "live",
        consistency_computed_at=table.computed_at if table is not None else None,
        alpha=ALPHA,
        clients=stored.accepted_clients(current_app.config["RUMBLE"]["ACCEPTED_CLIENTS"]),
        rumbles=stored.rumbles(current_app.extensions["rumble.rumbles"]),
    )


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
    return _participation("retire", apply.retire)


@bp.post("/restore")
@admin_required
def restore():
    """Bring a retired bot back into a rumble (form or JSON: game, name)."""
    return _participation("restore", apply.restore)


def _participation(action: str, change):
    """Retire or restore ``name`` in ``game``, audited together in one transaction."""
    values = _values()
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
            details["changed"] = change(db, rid, bot, store.format_time(now()), f"admin {action} by {g.admin}")
            battles = maintainers.bot_battles(db, rid, bot) if details["changed"] else 0
        maintainers.audit(db, g.admin, action, details, battles, store.format_time(now()))
    if g.admin_via == "session":
        return redirect(url_for("admin.audit_page"), code=303)
    response = jsonify(
        action=action, game=game, bot=name, changed=details["changed"], battles=battles, error=details.get("error")
    )
    response.status_code = status
    return response


def _values():
    """The request's fields: a form, or a JSON object (any other JSON body is a 400, see ``_malformed``)."""
    return form_or_json()


@bp.errorhandler(MalformedBody)
def _malformed(error: MalformedBody):
    """A body that cannot be read or is not a JSON object of text: a 400 with the reason, nothing done."""
    response = jsonify(error=error.description)
    response.status_code = 400
    return response


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
    text = {
        key: str(values.get(key, "")) for key in ("game", "uploader", "remote_addr", "client", "since", "until", "ids")
    }
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
            maintainers.audit(db, g.admin, action, details, 0, store.format_time(now()))
        return _done(action, 400, error=str(problem))
    with store.read(db):  # what it will move: the battles that match now (the job moves these, and no later ones)
        max_id = jobs.newest_battle(db)
        counts = battle_states.count_matching(db, selection, integrity.TRANSITIONS[action][0], max_id)
    if dry_run:
        with store.write(db):
            maintainers.audit(
                db,
                g.admin,
                action,
                {**details, "criteria": selection.describe(), "per_rumble": counts},
                0,
                store.format_time(now()),
            )
        return _done(action, dry_run=True, battles=sum(counts.values()), per_rumble=counts, replayed={})
    args = {
        "criteria": jobs.criteria(selection),
        "max_id": max_id,
        "details": details,
        "min_battles": current_app.config["RUMBLE"]["PRIORITY_MIN_BATTLES"],
    }
    return _start_job(action, args, battles=sum(counts.values()), per_rumble=counts)


def _start_job(kind: str, args: dict, **fields):
    """Record a maintenance job, start its process, answer 202 with its id (a browser: back to /admin)."""
    job_id = jobs.submit(get_db(), kind, args, g.admin)
    jobs.spawn(current_app.config["RUMBLE"]["DB"], job_id)
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
        return jsonify(jobs.recent(get_db()))
    found = (
        jobs.job_state(get_db(), int(wanted)) if wanted.isascii() and wanted.isdigit() and len(wanted) < 19 else None
    )
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
            maintainers.audit(
                db,
                g.admin,
                "rebuild",
                {**details, "game": game, "error": f"no rumble called {game!r}"},
                0,
                store.format_time(now()),
            )
        return _done("rebuild", 400, error=f"no rumble called {game!r}")
    with store.read(db):
        games = [game] if game else [name for name in known if battle_states.logged_battles(db, name)]
    args = {"games": games, "details": details, "min_battles": current_app.config["RUMBLE"]["PRIORITY_MIN_BATTLES"]}
    return _start_job("rebuild", args, games=games)


@bp.post("/batch")
@admin_required
def batch():
    """Run the batch rankings now: for ``game``, or for every rumble whose log changed since its last run."""
    from rumble.schedule import hourly

    game = str(_values().get("game", "")).strip()
    details = {"via": g.admin_via, "remote_addr": request.remote_addr, "game": game or "stale"}
    db = get_db()
    if game and game not in current_app.extensions["rumble.rumbles"]:
        details["error"] = f"no rumble called {game!r}"
        with store.write(db):
            maintainers.audit(db, g.admin, "batch", details, 0, store.format_time(now()))
        return _done("batch", 400, error=details["error"])
    source = f"admin {g.admin}"
    reports = [hourly.run_rumble(db, game, source=source)] if game else hourly.run_stale(db, source)
    runs = {r.game: {"run": r.run_id, "bots": int(r.ranked.kept.sum()), "battles": r.seen.battles} for r in reports}
    details["runs"] = runs
    with store.write(db):
        maintainers.audit(db, g.admin, "batch", details, 0, store.format_time(now()))
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
            maintainers.audit(db, g.admin, "set-clients", details, 0, store.format_time(now()))
            return _done("set-clients", 400, error=str(error))
        overrides.set_clients(db, versions, store.format_time(now()), g.admin)
        after = overrides.load(db).accepted_clients(current_app.config["RUMBLE"]["ACCEPTED_CLIENTS"])
        details.update(before=list(before), after=list(after), reset=reset)
        maintainers.audit(db, g.admin, "set-clients", details, 0, store.format_time(now()))
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
            after = overrides.set_rumble(db, base, key, value, store.format_time(now()), g.admin)
        except overrides.SettingError as error:
            details.update(error=str(error), sent=raw)
            maintainers.audit(db, g.admin, "set-rumble", details, 0, store.format_time(now()))
            return _done("set-rumble", 400, error=str(error))
        details.update(before=getattr(before, key), after=getattr(after, key), reset=reset)
        maintainers.audit(db, g.admin, "set-rumble", details, 0, store.format_time(now()))
    return _done("set-rumble", game=game, key=key, value=getattr(after, key))
