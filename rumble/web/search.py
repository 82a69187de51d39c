"""Finding a bot by the start of its name: ``/api/v1/rumbles/<game>/search?prefix=P`` answers the
matching participants as JSON (for scripts, and for the suggestions the pages' name fields show as
one types, static/rumble.js); ``/Rankings?prefix=P`` (rumble.web.pages) shows the same bots in the
rankings table, which is where the search form on every page goes without JavaScript.

A prefix matches a bot whose full name starts with it (``demo.``, ``demo.Aurora 2``) or whose name
without its package does (``aurora``), case ignored; ``_`` may stand for the space, as in
RatingsFile. Retired bots are found too, after the active ones.
"""

from __future__ import annotations

from urllib.parse import quote_plus

from flask import Blueprint, Response, jsonify, request, url_for

from rumble.parameters import ParameterError, whole_number
from rumble.store import bots, read
from rumble.web import get_db
from rumble.web.lookup import NotFound, rumble_or_404

bp = Blueprint("search", __name__)
DEFAULT_LIMIT, MAX_LIMIT = 20, 100  # names in one answer

# The endpoint's entry on the API reference page (templates/api_reference.html adds it to rumble.web.api's).
ENDPOINT = {
    "rule": "/api/v1/rumbles/<game>/search",
    "summary": "The bots whose name starts with a prefix (or whose name without its package does; case ignored, "
    "_ may stand for the space), active ones first, then by name: what the search fields of the pages suggest.",
    "params": {
        "prefix": "the start of the name (demo., demo.Aurora, aurora)",
        "limit": f"names at most, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})",
    },
    "fields": "game, prefix, total (bots matching in all), items: [{name, active, url (its /BotDetails page)}]",
}


def matches(name: str, prefix: str) -> bool:
    """Whether ``name`` (package.Class version) starts with ``prefix``, or does without its package,
    case ignored; ``_`` in the prefix may stand for the name's space."""
    folded, wanted = name.casefold(), prefix.casefold()
    head, space, tail = folded.partition(" ")
    bare = head.rpartition(".")[2] + space + tail  # the name without its package
    wanted_spaced = wanted.replace("_", " ")
    return any(text.startswith(w) for text in (folded, bare) for w in (wanted, wanted_spaced))


def found(db, rid: int, prefix: str) -> list[dict]:
    """The rumble's participants matching ``prefix``: {name, active}, active ones first, then by name."""
    with read(db):
        everyone = bots.participant_names(db, rid, active_only=False)
        active = bots.participant_names(db, rid)
    names = sorted((n for n in everyone if matches(n, prefix)), key=lambda n: (n not in active, n.casefold(), n))
    return [{"name": n, "active": n in active} for n in names]


class SearchError(Exception):
    """A bad search request, answered as JSON with ``status``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@bp.errorhandler(SearchError)
@bp.errorhandler(NotFound)
def _error(error) -> Response:
    response = jsonify({"error": str(error)})
    response.status_code = error.status
    return response


@bp.after_request
def _no_sniffing(response: Response) -> Response:
    """JSON is JSON, never sniffed into HTML (as the rest of /api/v1)."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@bp.get("/api/v1/rumbles/<game>/search")
def api_search(game: str) -> Response:
    rid = rumble_or_404(game)
    prefix = request.args.get("prefix", "").strip()
    if not prefix:
        raise SearchError("Give the start of a bot's name: prefix=NAME (like prefix=demo.Aur or prefix=aurora).")
    raw = request.args.get("limit")
    try:
        limit = DEFAULT_LIMIT if raw is None else whole_number(raw, "limit", 1, MAX_LIMIT)
    except ParameterError as error:
        raise SearchError(f"{error}.") from None
    bots_found = found(get_db(), rid, prefix)
    details = url_for("bot_pages.bot_details", game=game) + "&name="  # as url_for writes a name, once per answer
    items = [{**bot, "url": details + quote_plus(bot["name"], safe="/")} for bot in bots_found[:limit]]
    return jsonify({"game": game, "prefix": prefix, "total": len(bots_found), "items": items})


@bp.record_once
def _documented(state) -> None:
    """The endpoint on the API reference page, beside the ones rumble.web.api lists."""
    state.app.jinja_env.globals["more_api_endpoints"] = [ENDPOINT]
