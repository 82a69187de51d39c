"""Who may use /admin: bearer tokens, server-side browser sessions, CSRF, and the failure log.

Scripts send ``Authorization: Bearer rmb_<id>_<secret>``; the id selects the one stored hash to
verify, so a token costs one scrypt at most however many maintainers there are. Browsers log in
once at /admin/login: the signed cookie (HttpOnly, SameSite=Strict, Secure over https, path
/admin) then carries a random session id whose SHA-256 names a row of ``admin_sessions``. Logout
and ``rumble admin revoke`` end that row, so the cookie, kept or replayed, opens nothing from the
next request on; the row also expires ADMIN_SESSION_MINUTES after the login. Every POST made with
a session must carry the session's CSRF token in the form: a cookie is sent by the browser on its
own, a header is not.

Each failed login, bad token and dead session is logged with its address and what was tried
(never a token). An address with ADMIN_FAILURES_PER_HOUR such failures in the last hour is
answered 429 before any token is checked, so a flood of guesses costs no scrypt.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from datetime import datetime, timedelta

from flask import current_app, g, jsonify, make_response, redirect, render_template, request, session, url_for

from rumble import admin_tokens, store
from rumble.store import admin_sessions, maintainers
from rumble.web import get_db, now

KEEP_FAILURES_DAYS = (
    30  # older failures are forgotten, so that a flood from many addresses cannot grow the table for ever
)


def csrf_token() -> str:
    """This session's CSRF token, made on first use (templates put it in every form)."""
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return session["csrf"]


def _csrf_ok() -> bool:
    sent, expected = request.form.get("csrf_token", ""), session.get("csrf", "")
    return bool(expected) and hmac.compare_digest(sent.encode(), expected.encode())


def _now() -> datetime:
    return now()  # the app's clock (the CLOCK setting)


def _over_limit(db: store.Store) -> bool:
    """True if this address failed ADMIN_FAILURES_PER_HOUR times in the last hour (then its 429 is
    logged, once an hour). A read only, and no scrypt."""
    limit = current_app.config["RUMBLE"]["ADMIN_FAILURES_PER_HOUR"]
    hour_ago = store.format_time(_now() - timedelta(hours=1))
    if admin_sessions.failures_since(db, request.remote_addr, hour_ago) < limit:
        return False
    if admin_sessions.failures_since(db, request.remote_addr, hour_ago, ("limited",)) == 0:
        _record_failure(db, "limited", f"refused: {limit} failures from this address in the last hour")
    return True


def _record_failure(db: store.Store, kind: str, tried: str) -> None:
    now = _now()
    with store.write(db):
        admin_sessions.record_failure(
            db,
            store.format_time(now),
            request.remote_addr,
            kind,
            tried,
            request.path,
            store.format_time(now - timedelta(days=KEEP_FAILURES_DAYS)),
        )


def limit_message() -> str:
    limit = current_app.config["RUMBLE"]["ADMIN_FAILURES_PER_HOUR"]
    return (
        f"Too many failed maintainer logins or tokens from your address ({limit} in the last hour). "
        "Nothing was checked or done; try again in an hour."
    )


def _bearer() -> tuple[str | None, int, str]:
    g.admin_via = "token"
    db = get_db()
    scheme, _, token = request.headers["Authorization"].partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer":  # the "scheme" may be a bare token: name only the schemes we know
        known = scheme if scheme.lower() in ("basic", "digest", "token", "negotiate") else "not 'Bearer <token>'"
        tried = f"an Authorization header of scheme {known}"
    elif not token:
        tried = "an empty Bearer token"
    else:
        tried = ""
    if _over_limit(db):  # before any scrypt
        return None, 429, limit_message()
    if not tried:
        name, tried = maintainers.check_token(db, token)
        if name is not None:
            return name, 0, ""
    _record_failure(db, "bearer", tried)
    return None, 401, "invalid or revoked token"


def _session() -> tuple[str | None, int, str]:
    g.admin_via = "session"
    session_id = session.get("sid")
    if not isinstance(session_id, str):
        return None, 401, "authentication required"
    db = get_db()
    name, why = admin_sessions.session_state(db, admin_tokens.session_hash(session_id), store.format_time(_now()))
    if name is None:
        session.clear()
        if _over_limit(db):
            return None, 429, limit_message()
        _record_failure(db, "session", f"a session cookie: {why}")
        return None, 401, "session ended, expired or revoked"
    if request.method not in ("GET", "HEAD") and not _csrf_ok():
        return None, 403, "missing or wrong CSRF token"
    return name, 0, ""


def _authenticate() -> tuple[str | None, int, str]:
    """(maintainer, 0, '') or (None, status, reason), from the bearer header or the session."""
    return _bearer() if request.headers.get("Authorization") is not None else _session()


def _from_browser() -> bool:
    return g.admin_via == "session" and "text/html" in request.headers.get("Accept", "")


def _too_many(body: str):
    response = make_response(body, 429)
    response.mimetype = "text/plain"
    response.headers["Retry-After"] = "3600"
    return response


def admin_required(view):
    """Run ``view`` for an authenticated maintainer (``g.admin``); refuse everyone else:
    401 JSON for scripts, a redirect to the login page for browsers, 403 for a bad CSRF token,
    429 in plain text for an address over ADMIN_FAILURES_PER_HOUR."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        name, status, reason = _authenticate()
        if name is None:
            if status == 429:
                return _too_many(reason)
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


def login():
    """The browser's login form: the token, checked against the valid ones, starts a session."""
    target = request.values.get("next", "")
    target = target if target.startswith("/admin") else url_for("admin.audit_page")  # no open redirect

    def form(error=None, status=200):
        return render_template("admin_login.html", csrf_token=csrf_token(), next=target, error=error), status

    if request.method == "GET":
        return form()
    if not _csrf_ok():
        return form("The form expired; try again.", 403)
    db = get_db()
    if _over_limit(db):
        return form(limit_message(), 429)
    token = request.form.get("token", "").strip()
    name, tried = maintainers.check_token(db, token)
    if name is None:
        _record_failure(db, "login", tried)
        return form("That token is not valid.", 401)
    session_id, now = admin_tokens.new_session_id(), _now()
    session.clear()  # a fresh session (and CSRF token) for the logged-in maintainer
    session.permanent = True
    session["sid"] = session_id
    csrf_token()
    expires = now + timedelta(minutes=current_app.config["RUMBLE"]["ADMIN_SESSION_MINUTES"])
    with store.write(db):
        admin_sessions.start_session(
            db,
            admin_tokens.session_hash(session_id),
            name,
            store.format_time(now),
            store.format_time(expires),
            request.remote_addr,
        )
        maintainers.audit(db, name, "login", {"remote_addr": request.remote_addr}, 0, store.format_time(now))
    return redirect(target, code=303)


def logout():
    """End the browser's session for good (a bearer token has none to end), audited."""
    db = get_db()
    now = store.format_time(_now())
    with store.write(db):
        if g.admin_via == "session":
            admin_sessions.end_session(db, admin_tokens.session_hash(session["sid"]), now, "logout")
        maintainers.audit(db, g.admin, "logout", {"remote_addr": request.remote_addr}, 0, now)
    session.clear()
    return redirect(url_for("admin.login"), code=303)
