"""The JSON API under ``/api/v1/``: the pages' data with stable field names and pagination, and the
bulk export of a rumble (CSV, JSON, and an SQLite file of its own).

Each endpoint calls the same store function as its page (rumble.store.details, tables through
``page_data.ranking_table``, stats through ``page_data.stats_page``), so page and API cannot disagree.
Errors are JSON ``{"error": "..."}`` with a 4xx status. ``GET /api/v1/`` is the reference page,
rendered from ENDPOINTS; a test checks that it documents every registered ``/api/v1`` route.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, render_template, request, send_file

from rumble.parameters import MAX_PAGE, ParameterError, whole_number
from rumble.rankings.uploader_consistency import ALPHA
from rumble.ratings.columns import STORED
from rumble.schedule import exports
from rumble.store import batch_runs, details, export, history, read
from rumble.store.rumbles import rumble_rows
from rumble.store.tables import RANKING_COLUMNS, RANKING_ORDER
from rumble.web import clock, confidence_data, get_db, now
from rumble.web.lookup import BATCH_TITLES, NotFound, found_or_404, rumble_or_404
from rumble.web.page_data import MELEE_TITLES, public_standings, ranking_table, stats_page
from rumble.web.uploader_data import uploader_table, with_confirmation

bp = Blueprint("api", __name__, url_prefix="/api/v1")
DEFAULT_LIMIT, MAX_LIMIT = 100, 5000
RETRY_AFTER_SECONDS = 10  # an export whose first snapshot is not written yet: ask again after this
PAGINATION = {
    "limit": f"items per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})",
    "page": f"the page, 1 to {MAX_PAGE:,} (default 1)",
}
PAGE_FIELDS = "total (items in all), page, limit, pages, items"

# The reference page: every endpoint with its parameters and fields (tests/web/test_api.py checks
# that every registered /api/v1 rule is here).
ENDPOINTS = [
    {"rule": "/api/v1/", "summary": "This reference page (HTML).", "params": {}, "fields": ""},
    {
        "rule": "/api/v1/rumbles",
        "summary": "Every rumble with its settings, participants, battles and last battle.",
        "params": {},
        "fields": "rumbles: [{id, name, rounds, field, melee, teams, division, family, participants, battles, last_battle}]",
    },
    {
        "rule": "/api/v1/rumbles/<game>/rankings",
        "summary": "The rankings table of a rumble, as /Rankings shows it.",
        "params": {"order": f"a column ({', '.join(RANKING_ORDER)}), - for descending (default -aps)", **PAGINATION},
        "fields": f"game, order, state (complete, incomplete or unstable), banner, {PAGE_FIELDS}: [{{rank, rank_range: [best, worst], "
        "tied, name, aps, aps_ci, pwin, pl, survival, pairings, battles, last_battle, wins, draws, losses, "
        f"{', '.join(STORED)}, provisional, <method>_rank, <method>_score, "
        "los_next (the likelihood that the bot is better than the next one down by APS)}]",
    },
    {
        "rule": "/api/v1/rumbles/<game>/alternative-rankings",
        "summary": "Each bot's rank under APS and every batch method, from the latest runs.",
        "params": {},
        "fields": "game, methods (those with stored ranks), method_runs ({method: run id}), runs: [{id, ...}], "
        "rows: [{name, aps_rank, aps_score, <method>_rank, <method>_score, and the disagreement marks}] in APS order, "
        "los_matrix: {names, aps, los} for the top 20 by APS, los[i][j] the likelihood that bot i is better than bot j "
        "(null on the diagonal)",
    },
    {
        "rule": "/api/v1/rumbles/<game>/bots/<path:name>",
        "summary": "A bot's summary, other versions and pairings, as /BotDetails shows them. "
        "name is the bot's full name (its space may be _).",
        "params": {
            "order": f"a pairing column ({', '.join(details.PAIRING_ORDER)}), - for descending (default name)",
            **PAGINATION,
        },
        "fields": f"game, bot: {{name, active}}, summary: {{aps, aps_ci, pwin, pl, survival, pairings, battles, last_battle, wins, draws, "
        f"losses, ratings, batch}}, versions: [{{{', '.join(details.VERSION_COLUMNS)}}}], {PAGE_FIELDS}: [{{name, active, aps, "
        "aps_ci, survival, battles, last_battle, expected, pbi, knnpbi, npp, opponent_aps, confirmed (false: every battle "
        "from one uploader), sole_uploader}], unconfirmed (how many pairings are)",
    },
    {
        "rule": "/api/v1/rumbles/<game>/bots/<path:name>/history",
        "summary": "The bot's row of each daily rank snapshot, oldest first.",
        "params": {},
        "fields": f"game, bot, items: [{{{', '.join(history.HISTORY_COLUMNS)}}}]",
    },
    {
        "rule": "/api/v1/rumbles/<game>/pairing",
        "summary": "Every logged battle of two bots, newest first, from bot's side (as /Pairing).",
        "params": {"bot": "one bot's full name", "vs": "the other's", **PAGINATION},
        "fields": f"game, bot, vs, pairing: {{battles, aps, aps_ci, survival, last_battle}} or null, {PAGE_FIELDS}: "
        f"[{{{', '.join(details.BATTLE_COLUMNS)}, a_percent, b_percent, a_survival, b_survival}}]",
    },
    {
        "rule": "/api/v1/rumbles/<game>/compare",
        "summary": "Two bots over their common active opponents (as /BotCompare).",
        "params": {
            "bota": "bot A's full name",
            "botb": "bot B's",
            "order": f"a column ({', '.join(details.COMPARE_ORDER)})",
            **PAGINATION,
        },
        "fields": f"game, bota, botb, common, a_aps, b_aps, a_survival, b_survival, diff: {{mean, low, high, confidence, method}}, verdict, "
        f"win_probability, head_to_head, {PAGE_FIELDS}: [{{name, a_aps, b_aps, diff, a_survival, b_survival, diff_survival, "
        "a_battles, b_battles, opponent_aps}], version_test (as /api/v1/rumbles/<game>/version-test with new = A, old = B; "
        "null unless A and B are two versions of one bot)",
    },
    {
        "rule": "/api/v1/rumbles/<game>/version-test",
        "summary": "Is the new version better than the old? A sequential probability ratio test over the per-opponent "
        "APS differences of two versions of one bot (see /ScoreExplanation#version-test).",
        "params": {
            "old": "the old version's full name (pkg.Bot 1.0)",
            "new": "the new version's full name (pkg.Bot 1.1); same package.Class as old",
            "delta": "the improvement the test looks for, in APS points, 0.1 to 20 (default 1)",
        },
        "fields": "game, new, old, verdict (better, worse, no difference, not yet), opponents, battles (both versions, "
        "over the common opponents), mean, variance, information, llr_better, llr_worse, upper, lower (the bounds at these opponents, A_n and B_n), "
        "delta, alpha, beta, more_battles (about how many more battles to a verdict; null once decided), min_opponents",
    },
    {
        "rule": "/api/v1/rumbles/<game>/uploaders",
        "summary": "Each uploader's standing (established or not, how and why: /ScoreExplanation#standing) and its "
        "consistency with the other uploaders on the same pairings, flagged ones first "
        "(/ScoreExplanation#uploaders; flagged when the Holm-corrected p is below alpha).",
        "params": {**PAGINATION},
        "fields": "game, alpha, standings: [{uploader, network, established, how (vouched, earned, revoked, not yet, "
        "disagrees), battles_shared, pairings_shared, p, why, computed_at}], "
        f"{PAGE_FIELDS}: [{{uploader, battles, pairings_shared, tested, z, p, p_raw, rms_z, "
        "p_dispersion, bias_z, p_bias, flagged, reason, top_bots: [{bot, battles, mean_residual, t}], pooled (tested "
        "with the other uploaders of fewer than 20 battles, in the row 'small uploaders, pooled')}]",
    },
    {
        "rule": "/api/v1/stats",
        "summary": "Contributors, battles per day and rumble counts over every rumble (as /RumbleStats).",
        "params": {},
        "fields": "game (null), days, rumbles, uploaders: [{uploader, battles, recent, last_upload}], uploads_per_day: [{day, battles}], retirements: [{game, name, at, source (address cut to its network), retired}], lacking_pairings ([]), stuck ([]), stuck_after_hours",
    },
    {
        "rule": "/api/v1/rumbles/<game>/stats",
        "summary": "The same for one rumble, with the bots lacking pairings.",
        "params": {},
        "fields": "as /api/v1/stats, and lacking_pairings: [{name, missing, battles, last_battle}], stuck: [{name, listed_at, entered_by}] (bots listed on its participants list for a day without a battle), stuck_after_hours",
    },
    {
        "rule": "/api/v1/rumbles/<game>/export/<any(rankings, pairings, battles):table>.<any(csv, json):fmt>",
        "summary": "Bulk export of a whole rumble: rankings (every active bot), pairings (every pairing, both sides) or "
        "battles (the whole log, no network addresses), as CSV with a header row or as JSON. Sent from a snapshot file "
        "with Content-Length, ETag and Last-Modified (If-None-Match and If-Modified-Since get 304); a snapshot may be up to "
        "EXPORT_MAX_AGE_MINUTES behind the log; 503 with Retry-After while a rumble's first one is written. A CSV cell "
        "holding a string that begins with =, +, -, @, tab or CR starts with ' (spreadsheet formula injection); JSON keeps values as stored.",
        "params": {},
        "fields": f"rankings: the columns of the rankings endpoint (rank_range as rank_best, rank_worst); pairings: "
        f"{', '.join(export.PAIRING_COLUMNS)}; battles: {', '.join(export.BATTLE_COLUMNS)}. JSON: "
        "{game, table, columns, rows: [{column: value}]}",
    },
    {
        "rule": "/api/v1/rumbles/<game>/export/rumble.sqlite",
        "summary": "The rumble as an SQLite file of its own, read in one snapshot: its rows of every table (battle log, pairings, "
        "summaries, ratings, batch runs, daily ranks), with their schema and indexes. Opens as-is in Datasette or sqlite3. "
        "A snapshot file like the other exports (ETag, Last-Modified, 304).",
        "params": {},
        "fields": "an SQLite 3 database (application/vnd.sqlite3)",
    },
]


class ApiError(Exception):
    """A bad request, answered as JSON with ``status``."""

    def __init__(self, message: str, status: int = 400, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@bp.errorhandler(ApiError)
@bp.errorhandler(NotFound)
def _error(error) -> Response:
    response = jsonify({"error": str(error)})
    response.status_code = error.status
    if getattr(error, "retry_after", None):
        response.headers["Retry-After"] = str(error.retry_after)
    return response


@bp.after_request
def _no_sniffing(response: Response) -> Response:
    """Browsers must take JSON and CSV for what they are, never sniff them into HTML."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _positive(name: str, default: int, most: int) -> int:
    """A whole-number query parameter from 1 to ``most`` (rumble.parameters), or an ApiError."""
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return whole_number(raw, name, 1, most)
    except ParameterError as error:
        raise ApiError(f"{error}.") from None


def _paginated(items: list) -> dict:
    """``limit`` and ``page`` from the query applied to ``items``: total, page, limit, pages, items."""
    limit, page = _positive("limit", DEFAULT_LIMIT, MAX_LIMIT), _positive("page", 1, MAX_PAGE)
    return {
        "total": len(items),
        "page": page,
        "limit": limit,
        "pages": max(1, -(-len(items) // limit)),
        "items": items[(page - 1) * limit : page * limit],
    }


def _ordered(function, *args, order: str, orders) -> dict | None:
    """``function(*args, order=order, now=...)``: a bot page's deviations are grown up to the app's now."""
    try:
        return function(*args, order=order, now=now().timestamp())
    except KeyError:
        raise ApiError(f"Cannot sort by {order!r}; use one of {', '.join(orders)} (with - for descending).") from None


@bp.get("/")
def reference() -> str:
    return render_template("api_reference.html", endpoints=ENDPOINTS, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)


@bp.get("/rumbles")
def rumbles() -> Response:
    return jsonify({"rumbles": rumble_rows(get_db())})


@bp.get("/rumbles/<game>/rankings")
def rankings(game: str) -> Response:
    rid, order = rumble_or_404(game), request.args.get("order", "-aps")
    try:
        rows, state, banner = ranking_table(
            get_db(), rid, order, now().timestamp(), current_app.extensions["rumble.rumbles"][game].melee
        )
    except KeyError:
        raise ApiError(
            f"Cannot sort by {order!r}; use one of {', '.join(RANKING_ORDER)} (with - for descending)."
        ) from None
    return jsonify({"game": game, "order": order, "state": state, "banner": banner, **_paginated(rows)})


@bp.get("/rumbles/<game>/alternative-rankings")
def alternative_rankings(game: str) -> Response:
    return jsonify(
        {
            "game": game,
            **batch_runs.alternative_rankings(get_db(), rumble_or_404(game), tuple(BATCH_TITLES)),
            "los_matrix": confidence_data.los_matrix(get_db(), rumble_or_404(game)),
        }
    )


@bp.get("/rumbles/<game>/bots/<path:name>")
def bot(game: str, name: str) -> Response:
    order = request.args.get("order", "name")
    page = found_or_404(
        _ordered(details.bot_details, get_db(), rumble_or_404(game), name, order=order, orders=details.PAIRING_ORDER),
        game,
        name,
    )
    pairings = with_confirmation(get_db(), rumble_or_404(game), page).pop("pairings")
    return jsonify({"game": game, "order": order, **page, **_paginated(pairings)})


@bp.get("/rumbles/<game>/bots/<path:name>/history")
def bot_history(game: str, name: str) -> Response:
    db, rid = get_db(), rumble_or_404(game)
    with read(db):
        found = found_or_404(details.find_participant(db, rid, name), game, name)
        rows = history.bot_history(db, rid, found["id"])
    return jsonify({"game": game, "bot": found["name"], "items": rows})


@bp.get("/rumbles/<game>/pairing")
def pairing(game: str) -> Response:
    a, b = request.args.get("bot", ""), request.args.get("vs", "")
    page = found_or_404(details.pairing_page(get_db(), rumble_or_404(game), a, b), game, a, b)
    battles = page.pop("battles")
    return jsonify({"game": game, **page, **_paginated(battles)})


@bp.get("/rumbles/<game>/compare")
def compare(game: str) -> Response:
    a, b, order = request.args.get("bota", ""), request.args.get("botb", ""), request.args.get("order", "name")
    page = found_or_404(
        _ordered(details.bot_compare, get_db(), rumble_or_404(game), a, b, order=order, orders=details.COMPARE_ORDER),
        game,
        a,
        b,
    )
    page["version_test"] = confidence_data.version_test_of(page)  # A (new) against B (old)
    rows = page.pop("rows")
    return jsonify({"game": game, "order": order, **page, **_paginated(rows)})


@bp.get("/rumbles/<game>/version-test")
def version_test(game: str) -> Response:
    """Is ``new`` better than ``old``, two versions of one bot? (rumble.rankings.version_test)"""
    rid = rumble_or_404(game)
    old, new = request.args.get("old"), request.args.get("new")
    if not old or not new:
        raise ApiError("Give both versions: old=NAME and new=NAME (like pkg.Bot 1.0 and pkg.Bot 1.1).")
    try:
        delta = confidence_data.parse_delta(request.args.get("delta"))
    except ValueError as error:
        raise ApiError(f"{error}.") from None
    page = found_or_404(details.bot_compare(get_db(), rid, new, old, now=now().timestamp()), game, new, old)
    found = confidence_data.version_test_of(page, delta)
    if found is None:
        raise ApiError(f"{page['botb']!r} and {page['bota']!r} are not two versions of one bot (package.Class).")
    return jsonify({"game": game, **found})


@bp.get("/rumbles/<game>/uploaders")
def uploaders(game: str) -> Response:
    rid = rumble_or_404(game)
    items = uploader_table(get_db(), rid)
    return jsonify({"game": game, "alpha": ALPHA, "standings": public_standings(get_db(), rid), **_paginated(items)})


@bp.get("/stats")
def all_stats() -> Response:
    return jsonify(stats_page(get_db(), None))


@bp.get("/rumbles/<game>/stats")
def rumble_stats(game: str) -> Response:
    rumble_or_404(game)
    return jsonify(stats_page(get_db(), game))


def _ranking_export(melee: bool, as_of: datetime) -> Callable[[Any, int], tuple[list[str], Iterable[list]]]:
    """The rankings table's columns and rows for the export, as /Rankings reads them (rank_range
    split in two), read on the connection the snapshot writer gives, with every deviation (and so
    ``provisional``) grown for inactivity up to ``as_of``, which the column ``deviations_as_of``
    states."""
    as_of = as_of.replace(microsecond=as_of.microsecond // 1000 * 1000)  # the moment stated, to the millisecond
    stated = as_of.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def read_rows(conn, rid: int) -> tuple[list[str], Iterable[list]]:
        rows, _, _ = ranking_table(conn, rid, "-aps", as_of.timestamp(), melee)
        for row in rows:
            row["rank_best"], row["rank_worst"] = row.pop("rank_range")
            row["deviations_as_of"] = stated
        columns = [
            "rank",
            "rank_best",
            "rank_worst",
            "tied",
            "provisional",
            *RANKING_COLUMNS,
            *(MELEE_TITLES if melee else ()),
            "deviations_as_of",
        ]
        return columns, ([row.get(c) for c in columns] for row in rows)

    return read_rows


def _snapshot_response(game: str, name: str, mimetype: str, download_name: str) -> Response:
    """The rumble's snapshot of ``name`` (rumble.schedule.exports), sent from its file with its ETag and
    Last-Modified; conditional GET (304) and ranges as werkzeug's send_file does them."""
    settings = current_app.config["RUMBLE"]
    rid, melee = rumble_or_404(game), current_app.extensions["rumble.rumbles"][game].melee
    # The rankings' deviations grow with inactivity: a snapshot has them grown to the moment it was
    # built (its column deviations_as_of) and serves the rest of that hour of the app's clock.
    moment = clock().now()
    hour = exports.hour_of(moment) if name.startswith("rankings.") else None
    snapshots = exports.Snapshots.from_settings(settings)
    writer = exports.table_writer(settings["DB"], rid, game, name, _ranking_export(melee, moment), hour)
    for _ in range(3):  # a newer build may remove the chosen file before it is opened: look again
        db = get_db()
        with read(db):
            etag = snapshots.etag(name, exports.with_clock(export.log_version(db, rid), hour))
        snapshot = snapshots.obtain(game, name, etag, writer, settings["EXPORT_WAIT_SECONDS"])
        if snapshot is None:
            raise ApiError(
                f"The {name} export of {game} is not written yet; try again in a few seconds.",
                503,
                retry_after=RETRY_AFTER_SECONDS,
            )
        try:
            return send_file(
                snapshot.path,
                mimetype=mimetype,
                as_attachment=True,
                download_name=download_name,
                etag=snapshot.etag,
                last_modified=snapshot.written,
                conditional=True,
            )
        except FileNotFoundError:
            continue
    raise ApiError(
        f"The {name} export of {game} keeps changing; try again in a few seconds.", 503, retry_after=RETRY_AFTER_SECONDS
    )


@bp.get("/rumbles/<game>/export/<any(rankings, pairings, battles):table>.<any(csv, json):fmt>")
def export_table(game: str, table: str, fmt: str) -> Response:
    return _snapshot_response(
        game, f"{table}.{fmt}", "text/csv" if fmt == "csv" else "application/json", f"{game}-{table}.{fmt}"
    )


@bp.get("/rumbles/<game>/export/rumble.sqlite")
def export_sqlite(game: str) -> Response:
    return _snapshot_response(game, exports.SQLITE, "application/vnd.sqlite3", f"{game}.sqlite")
