"""The participants lists and the bot jars rumble serves, and the competitors' and maintainers'
requests that change them.

``GET /Participants?game=G`` is one HTML document for the real client and for people: the client
reads only the lines between a ``<pre>`` line and a ``</pre>`` line (protocol.md section 3), one
``package.Bot version,<jar URL>`` each, and ignores the rest, as it ignores the rest of a wiki page;
people see the table above it. (The client's ``Accept`` header names ``text/html`` too, so the two
cannot be told apart by it.) ``api=1`` gives the same list as JSON. A division (mini, micro, nano)
answers its general rumble's list: the client picks a division's bots by codesize.

Every jar is served at ``/jars/<package.Class>/<version>.jar`` for good: exactly its bytes, with
``Content-Length``, ``Content-Type: application/java-archive``, no content encoding, and its
SHA-256 as a strong ``ETag`` (``If-None-Match`` gets a 304).

Requests to enter or withdraw that carry a token of the right form (its check costs a lookup and
perhaps a scrypt), and accounts made, are counted per address (ENTRY_REQUESTS_PER_HOUR), and an
address past the limit is answered before anything is read or checked, so a flood costs no scrypt
and no unzipping. A refusal that costs at most a read (no token, a name no account may have or one
that is taken) is neither logged nor counted; what the requests change is decided in
rumble.ingest.entries.
"""

from __future__ import annotations

from datetime import timedelta

from flask import Blueprint, Response, current_app, g, jsonify, render_template, request, url_for
from werkzeug.exceptions import RequestEntityTooLarge

from rumble import admin_tokens, store
from rumble.ingest import entries
from rumble.ingest.entries import Actor, Refused
from rumble.ingest.jar_check import JarRefused, Limits, check_jar
from rumble.ingest.jar_fetch import fetch_jar
from rumble.store import competitors, jars, maintainers
from rumble.web import get_db, now
from rumble.web.admin_auth import admin_required
from rumble.web.body import MalformedBody, form_or_json

bp = Blueprint("participants", __name__)

JAR_TYPE = "application/java-archive"
RAW_TYPES = (JAR_TYPE, "application/octet-stream", "application/zip", "application/x-java-archive")
FORM_ROOM = 64 * 1024  # bytes a multipart body may add around the jar (its other fields and boundaries)
KEEP_REQUESTS_DAYS = 30


def _rumbles():
    return current_app.extensions["rumble.rumbles"]


def _settings() -> dict:
    return current_app.config["RUMBLE"]


def _wants_json() -> bool:
    return request.args.get("api") == "1"


def _problem(message: str, status: int):
    """A refusal: JSON for ``api=1`` and for scripts, a page for a browser's form."""
    if _from_browser():
        return render_template("participants_done.html", ok=False, message=message, game=None), status
    response = jsonify(error=message)
    response.status_code = status
    return response


def _from_browser() -> bool:
    return (
        not _wants_json()
        and "text/html" in request.headers.get("Accept", "")
        and request.headers.get("Authorization") is None
    )


def jar_url(name: str) -> str:
    """The absolute URL the jar of ``name`` is served at, on the host the request came to."""
    bot_class, version = name.split(" ", 1)
    return url_for("participants.jar_file", bot_class=bot_class, version=version, _external=True)


def _game():
    """The rumble settings ``game`` asks for, or an answer saying why not."""
    game = request.args.get("game", "")
    if not game:
        return None, _problem("give the rumble: /Participants?game=roborumble", 400)
    try:
        return entries.family_of(_rumbles(), game), None
    except Refused as refused:
        return None, _problem(str(refused), refused.status)


@bp.get("/Participants")
def participants_list():
    """The participants list of a rumble (its general rumble's, for a division): HTML with the
    client's ``<pre>`` block, or JSON with ``api=1``."""
    family, problem = _game()
    if family is None:
        return problem
    db = get_db()
    with store.read(db):
        listed = jars.entries(db, family.name, ("listed",))
        pending = jars.entries(db, family.name, ("pending",))
        approval = entries.approval_required(db, _settings()["ENTRIES_NEED_APPROVAL"])
    for row in listed + pending:
        row["url"] = jar_url(row["name"])
        row["page"] = url_for("participants.jar_page", name=row["name"])
    game = request.args["game"]
    divisions = entries.divisions_of(_rumbles(), family.name)
    if _wants_json():
        keys = ("name", "url", "sha256", "size", "owner", "listed_at")
        return jsonify(
            game=game,
            list=family.name,
            divisions=divisions,
            approval_required=approval,
            participants=[{k: row[k] for k in keys} for row in listed],
            pending=[{k: row[k] for k in (*keys[:-1], "created_at")} for row in pending],
        )
    response = Response(
        render_template(
            "participants.html",
            game=game,
            family=family.name,
            divisions=divisions,
            listed=listed,
            pending=pending,
            approval=approval,
            self_url=url_for("participants.participants_list", game=family.name, _external=True),
        ),
        mimetype="text/html",
    )
    response.headers["Cache-Control"] = "no-cache"
    return response


@bp.get("/jars/<bot_class>/<version>.jar")
def jar_file(bot_class: str, version: str):
    """The jar bound to ``bot_class version``, byte for byte, for good."""
    name = f"{bot_class} {version}"
    found = jars.jar_content(get_db(), name)
    if found is None:
        return Response(f"No jar of {name[:80]!r} was entered here.\n", status=404, mimetype="text/plain")
    sha256, content = found
    if request.if_none_match.contains_weak(sha256):
        response = Response(status=304)
    else:
        response = Response(content, content_type=JAR_TYPE)
        response.headers["Content-Disposition"] = f'attachment; filename="{bot_class}_{version}.jar"'
    response.set_etag(sha256)  # strong: the same bytes for ever
    response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@bp.get("/Participants/bot")
def jar_page():
    """A jar's page: its SHA-256, size, contents, owner, and its entries in every list (JSON with ``api=1``)."""
    name = request.args.get("name", "").strip()
    db = get_db()
    with store.read(db):
        found = jars.jar(db, name) if name else None
        history = jars.entries_of_jar(db, name) if found else []
    if found is None:
        return _problem(f"no jar of {name[:80]!r} was entered here", 404 if name else 400)
    found["url"] = jar_url(name)
    owner = next((row["owner"] for row in history if row["owner"]), None)
    if _wants_json():
        keys = ("family", "state", "entered_by", "created_at", "listed_at", "ended_at", "ended_by", "reason")
        return jsonify(
            {
                **{k: found[k] for k in ("name", "sha256", "size", "kind", "files", "unpacked", "created_at", "url")},
                "owner": owner,
                "entries": [{k: row[k] for k in keys} for row in history],
            }
        )
    return render_template("participants_bot.html", jar=found, owner=owner, history=history, game=None)


@bp.get("/Participants/enter")
def enter_page():
    """The competitor's page: sign up for a token, enter a bot, withdraw one."""
    db = get_db()
    approval = entries.approval_required(db, _settings()["ENTRIES_NEED_APPROVAL"])
    families = sorted({r.family or r.name for r in _rumbles().values()} & set(_rumbles()))
    return render_template(
        "participants_enter.html",
        families=families,
        approval=approval,
        settings=_settings(),
        sign_up=_settings()["SIGN_UPS_PER_DAY"] > 0,
        game=None,
    )


def _over_limit(db: store.Store) -> bool:
    """True if this address made ENTRY_REQUESTS_PER_HOUR requests in the last hour (a read only)."""
    since = store.format_time(now() - timedelta(hours=1))
    return jars.requests_since(db, request.remote_addr, since) >= _settings()["ENTRY_REQUESTS_PER_HOUR"]


def _account_over_limit(db: store.Store, competitor_id: int) -> bool:
    """True if the account made ENTRY_REQUESTS_PER_HOUR requests in the last hour from any
    addresses: a token used from many addresses, each under its own limit, is bounded too (each
    entry by URL makes the server fetch)."""
    since = store.format_time(now() - timedelta(hours=1))
    return jars.account_requests_since(db, competitor_id, since) >= _settings()["ENTRY_REQUESTS_PER_HOUR"]


def _too_many(whose: str = "your address"):
    limit = _settings()["ENTRY_REQUESTS_PER_HOUR"]
    response = _problem(
        f"too many requests from {whose} ({limit} in the last hour); nothing was checked or done: try again in an hour",
        429,
    )
    if isinstance(response, tuple):
        response = current_app.make_response(response)
    response.headers["Retry-After"] = "3600"
    return response


def _record(action: str, actor: Actor | None, outcome: str, audit: dict | None = None) -> None:
    """Log the request for the per-address limit, and audit a refusal of a known actor."""
    moment = now()
    db = get_db()
    with store.write(db):
        jars.record_request(
            db,
            store.format_time(moment),
            request.remote_addr,
            action,
            actor.competitor_id if actor else None,
            outcome,
            store.format_time(moment - timedelta(days=KEEP_REQUESTS_DAYS)),
        )
        if actor is not None and audit is not None:
            maintainers.audit(
                db, actor.who, action, {**audit, "remote_addr": request.remote_addr}, 0, store.format_time(moment)
            )


def _token(values) -> str:
    """The token the request carries: ``Authorization: Bearer <token>``, else the form's ``token``."""
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""
    return str(values.get("token", "")).strip()


def _costly(token: str) -> bool:
    """Whether checking ``token`` costs a lookup (and maybe a scrypt): it has a token's form. A
    request without one is refused at no cost, so it is neither logged nor counted."""
    return competitors.token_id(token) is not None or admin_tokens.token_id(token) is not None


def _actor(token: str) -> tuple[Actor | None, str]:
    """Who the token is: a competitor (``rmc_``) or a maintainer (``rmb_``); (None, why) otherwise."""
    db = get_db()
    if token.startswith("rmb_"):
        name, tried = maintainers.check_token(db, token)
        if name is None:
            return None, tried
        return Actor(who=name, maintainer=True, remote_addr=request.remote_addr), ""
    found, tried = competitors.check_token(db, token)
    if found is None:
        return None, tried if token else "no token"
    account, name = found
    return Actor(who=f"competitor {name}", competitor_id=account, remote_addr=request.remote_addr), ""


def _limits() -> Limits:
    settings = _settings()
    return Limits(
        size=settings["MAX_JAR_BYTES"], files=settings["MAX_JAR_FILES"], unpacked=settings["MAX_JAR_UNPACKED_BYTES"]
    )


def _jar_body(values) -> tuple[bytes | None, str, int]:
    """The jar the request carries: the multipart field ``jar``, the whole body when its type is a
    jar's, or what the field ``url`` points at, fetched once (rumble.ingest.jar_fetch); (None, why,
    status) otherwise. Never more than MAX_JAR_BYTES + 1 bytes are read of it."""
    limit = _settings()["MAX_JAR_BYTES"]
    url = "" if request.mimetype in RAW_TYPES else str(values.get("url", "")).strip()
    upload = None if request.mimetype in RAW_TYPES else request.files.get("jar")
    if request.mimetype in RAW_TYPES:
        data = request.stream.read(limit + 1)
    elif upload is not None and upload.filename:
        data = upload.stream.read(limit + 1)
    elif url:
        settings = _settings()
        try:
            data = fetch_jar(url, limit, settings["JAR_FETCH_TIMEOUT_SECONDS"], settings["JAR_FETCH_PRIVATE"])
        except JarRefused as refused:
            return None, str(refused), 400
    else:
        return (
            None,
            "no jar: send it as the multipart field 'jar', as the body with Content-Type application/java-archive, "
            "or give its URL in the field 'url'",
            400,
        )
    if len(data) > limit:
        return None, f"the jar is larger than {limit} bytes (MAX_JAR_BYTES)", 413
    if not data:
        return None, "the jar is empty", 400
    return data, "", 200


@bp.post("/Participants/enter")
def enter():
    """Enter a bot: the jar (multipart field ``jar`` or the raw body), ``game`` and ``name``
    (``package.Bot version``), with a competitor's or maintainer's token."""
    db = get_db()
    if _over_limit(db):
        return _too_many()
    request.max_content_length = _settings()["MAX_JAR_BYTES"] + FORM_ROOM
    try:
        values = request.values if request.mimetype in RAW_TYPES else _fields()
        token = _token(values)
        actor, tried = _actor(token)
        if actor is None:
            if _costly(token):
                _record("enter", None, f"bad token: {tried}")
            return _problem("a valid competitor (or maintainer) token is needed to enter a bot", 401)
        game, name = str(values.get("game", "")).strip(), str(values.get("name", "")).strip()
        asked = {"game": game, "bot": name}
        if actor.competitor_id is not None and _account_over_limit(db, actor.competitor_id):
            _record("enter", actor, "account limited")
            return _too_many("your account")
        try:
            family = entries.family_of(_rumbles(), game)
        except Refused as refused:
            _record("enter", actor, str(refused), {**asked, "error": str(refused)})
            return _problem(str(refused), refused.status)
        content, why, status = _jar_body(values)
    except RequestEntityTooLarge:
        limit = _settings()["MAX_JAR_BYTES"]
        _record("enter", None, "too large")
        return _problem(f"the request is larger than a jar of {limit} bytes (MAX_JAR_BYTES) with its form", 413)
    if content is None:
        _record("enter", actor, why, {**asked, "error": why})
        return _problem(why, status)
    try:
        checked = check_jar(content, name, family.teams, _limits())
        result = entries.enter(
            db,
            _rumbles(),
            game,
            checked,
            content,
            actor,
            entries.approval_required(db, _settings()["ENTRIES_NEED_APPROVAL"]),
            _settings()["ENTRIES_PER_DAY"],
            now(),
        )
    except JarRefused as refused:
        _record("enter", actor, str(refused), {**asked, "error": str(refused)})
        return _problem(f"the jar is refused: {refused}", 400)
    except Refused as refused:
        _record("enter", actor, str(refused), {**asked, "error": str(refused)})
        return _problem(str(refused), refused.status)
    _record("enter", actor, "ok")
    result["url"] = jar_url(result["name"])
    result["page"] = url_for("participants.jar_page", name=result["name"], _external=True)
    if _from_browser():
        words = "is listed" if result["state"] == "listed" else "waits for a maintainer's approval"
        message = f"{result['name']} {words} in {result['game']} (SHA-256 {result['sha256']})."
        if result["replaced"]:
            message += f" It replaces {result['replaced']}, which is retired."
        return render_template("participants_done.html", ok=True, message=message, result=result, game=None)
    return jsonify(result)


def _fields():
    """The request's form (a multipart or urlencoded body) or JSON object, with the query string's
    fields under it."""
    if request.is_json:
        return {**request.args, **form_or_json()}
    return request.values


@bp.post("/Participants/withdraw")
def withdraw():
    """Take a bot off a list (``game``, ``name``): its owner's token or a maintainer's; a listed
    bot is retired at once."""
    db = get_db()
    if _over_limit(db):
        return _too_many()
    values = _fields()
    token = _token(values)
    actor, tried = _actor(token)
    if actor is None:
        if _costly(token):
            _record("withdraw", None, f"bad token: {tried}")
        return _problem("a valid competitor (or maintainer) token is needed to withdraw a bot", 401)
    game, name = str(values.get("game", "")).strip(), str(values.get("name", "")).strip()
    try:
        result = entries.withdraw(db, _rumbles(), game, name, actor, now())
    except Refused as refused:
        _record("withdraw", actor, str(refused), {"game": game, "bot": name, "error": str(refused)})
        return _problem(str(refused), refused.status)
    _record("withdraw", actor, "ok")
    if _from_browser():
        message = f"{name} is withdrawn from {result['game']}" + (
            f" and retired from {', '.join(result['retired'])}." if result["retired"] else "."
        )
        return render_template("participants_done.html", ok=True, message=message, game=None)
    return jsonify(result)


@bp.post("/Participants/account")
def sign_up():
    """Make a competitor account (``name``) for oneself: its token is shown once. At most
    SIGN_UPS_PER_DAY per address; 0 leaves account making to maintainers."""
    db = get_db()
    if _over_limit(db):
        return _too_many()
    per_day = _settings()["SIGN_UPS_PER_DAY"]
    if per_day <= 0:
        return _problem("this ladder makes competitor accounts on request only: ask a maintainer", 403)
    moment = now()
    if competitors.sign_ups_since(db, request.remote_addr, store.format_time(moment - timedelta(days=1))) >= per_day:
        return _problem(f"your address made {per_day} accounts in the last 24 hours; that is the most it may", 429)
    name = str(_fields().get("name", "")).strip()
    problem = competitors.check_name(name)
    if problem is not None:
        return _problem(problem, 400)
    stamp = store.format_time(moment)
    try:
        with store.write(db):
            account, token = competitors.add(
                db, name, stamp, f"sign-up from {request.remote_addr}", request.remote_addr
            )
            maintainers.audit(
                db, f"competitor {name}", "sign-up", {"account": account, "remote_addr": request.remote_addr}, 0, stamp
            )
    except competitors.CompetitorExists as taken:
        return _problem(str(taken), 400)
    _record("sign-up", Actor(who=f"competitor {name}", competitor_id=account), "ok")
    if _from_browser():
        return render_template("participants_done.html", ok=True, message=None, token=token, name=name, game=None)
    return jsonify(name=name, token=token)


def _maintainer_actor() -> Actor:
    return Actor(who=g.admin, maintainer=True, remote_addr=request.remote_addr)


@bp.post("/Participants/approve")
@admin_required
def approve():
    """A maintainer lists a pending entry (``game``, ``name``)."""
    values = _fields()
    game, name = str(values.get("game", "")).strip(), str(values.get("name", "")).strip()
    try:
        return jsonify(entries.approve(get_db(), _rumbles(), game, name, _maintainer_actor(), now()))
    except Refused as refused:
        return _problem(str(refused), refused.status)


@bp.post("/Participants/refuse")
@admin_required
def refuse():
    """A maintainer refuses a pending entry (``game``, ``name``, ``reason`` shown to its competitor)."""
    values = _fields()
    game, name = str(values.get("game", "")).strip(), str(values.get("name", "")).strip()
    reason = str(values.get("reason", "")).strip()
    try:
        return jsonify(entries.refuse(get_db(), _rumbles(), game, name, reason, _maintainer_actor(), now()))
    except Refused as refused:
        return _problem(str(refused), refused.status)


@bp.post("/Participants/approval")
@admin_required
def approval():
    """A maintainer says whether new entries wait for approval (``required``: 1 or 0)."""
    value = str(_fields().get("required", "")).strip()
    if value not in ("0", "1"):
        return _problem(f"required must be 1 or 0, not {value[:20]!r}", 400)
    entries.set_approval(get_db(), value == "1", _maintainer_actor(), now())
    return jsonify(approval_required=value == "1")


@bp.errorhandler(MalformedBody)
def _malformed(error: MalformedBody):
    """A body that cannot be read or is not a JSON object of text: a 400 with the reason, nothing done."""
    return _problem(str(error.description), 400)


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(error: RequestEntityTooLarge):
    return _problem(f"the request is larger than a jar of {_settings()['MAX_JAR_BYTES']} bytes (MAX_JAR_BYTES)", 413)
