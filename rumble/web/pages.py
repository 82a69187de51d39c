"""Pages for people: the rumbles, a rankings table and the alternative rankings (each with its JSON
twin), and the score explanation; the bot pages (details, pairing, compare) are in ``bot_pages.py``."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote_plus

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request, url_for
from markupsafe import Markup

from rumble.parameters import MAX_PAGE, ParameterError, whole_number
from rumble.rankings.uploader_consistency import ALPHA
from rumble.ratings.online import PROVISIONAL_RD
from rumble.store import batch_runs, tables
from rumble.store.rumbles import known_rumble_id, rumble_rows
from rumble.web import cells, confidence_data, get_db, now, search
from rumble.web.lookup import BATCH_TITLES
from rumble.web.page_data import MELEE_TITLES, columns, ranking_table, stats_page
from rumble.web.uploader_data import uploader_table_state

bp = Blueprint("pages", __name__)
MAX_LIMIT = 100_000  # rows a /Rankings page may ask for: every bot of any rumble (by default a page has them all)


@bp.app_template_filter("query_value")
def query_value(value: str) -> str:
    """A value for a URL's query string, as url_for writes it (a space as +): for links built in a
    loop from one url_for prefix, which is much faster than a url_for per row."""
    return quote_plus(value, safe="/")


KINDS = {"1v1": "One on one", "melee": "Melee", "teams": "Teams"}  # the home page's groups, in this order


@bp.app_context_processor
def header_links() -> dict:
    """``site``: the URLs every page's head and header link (base.html): the style sheet, the script,
    the pages, the search's target and the feeds. Built once per app and script root (url_for takes
    a few µs each, and every page has a dozen), then looked up."""
    kept = current_app.extensions.setdefault("rumble.header_links", {})
    links = kept.get(request.script_root)
    if links is None:
        links = kept[request.script_root] = {
            "icon": url_for("static", filename="favicon.svg"),
            "css": url_for("static", filename="rumble.css"),
            "js": url_for("static", filename="rumble.js"),
            "home": url_for("pages.home"),
            "explanation": url_for("pages.score_explanation"),
            "stats": url_for("pages.rumble_stats"),
            "api": url_for("api.reference"),
            "rankings": url_for("pages.rankings"),
            "feed": url_for("feed.all_feed"),
            "feeds": {
                game: url_for("feed.rumble_feed", game=game) for game in current_app.extensions["rumble.rumbles"]
            },
        }
    return {"site": links}


@bp.get("/")
def home():
    rows = rumble_rows(get_db())
    if request.args.get("api") == "1":
        return jsonify(rows)
    return render_template("home.html", groups=group_rumbles(rows, now()), kinds=KINDS)


def group_rumbles(rows: list[dict], now: datetime) -> dict[str, dict[str, list[dict]]]:
    """kind (1v1, melee, teams) -> family -> its rumbles (the general division first, as rumble_rows
    sorts them), each with ``age``: how long ago its last battle came, in words."""
    groups: dict[str, dict[str, list[dict]]] = {kind: {} for kind in KINDS}
    for row in rows:
        kind = "melee" if row["melee"] else "teams" if row["teams"] else "1v1"
        groups[kind].setdefault(row["family"], []).append({**row, "age": age(row["last_battle"], now)})
    return {kind: families for kind, families in groups.items() if families}


def age(moment: str | None, now: datetime) -> str:
    """'never', 'just now', or how long before ``now`` the store time ``moment`` was, in the largest whole unit."""
    if not moment:
        return "never"
    seconds = (now - datetime.strptime(moment[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)).total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"


# The columns /Rankings shows unless asked for all of them (columns=all): what a competitor reads
# first. The column the table is sorted by is shown too.
MAIN_COLUMNS = ("aps", "pwin", "elo", "glicko2", "pairings", "battles")
MELEE_MAIN_COLUMNS = ("aps", "pwin", "conservative", "pairings", "battles", "melee_battles")


def shown_columns(melee: bool, wide: bool, order: str, ranked: set[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The rankings columns a page shows (key -> title), and its batch columns: every column with
    ``wide``, less the batch methods no run has ranked (not in ``ranked``); else the main ones. The
    column of ``order`` always."""
    key = order.lstrip("-")
    if wide:
        return columns(melee), {k: t for k, t in BATCH_TITLES.items() if k in ranked or k == key}
    main = MELEE_MAIN_COLUMNS if melee else MAIN_COLUMNS
    return (
        {k: t for k, t in columns(melee).items() if k in main or k == key},
        {k: t for k, t in BATCH_TITLES.items() if k == key},
    )


def rank_cell(row: dict) -> Markup:
    """A rankings row's rank, with its range when the bot is statistically tied (as cells.py, one
    call per row: the page has 1,200)."""
    if not row["tied"]:
        return Markup(f'<td class="num">{row["rank"]}</td>')
    best, worst = row["rank_range"]
    return Markup(
        f'<td class="num" title="statistically tied: with its APS interval it could rank anywhere from {best} to '
        f'{worst}">{row["rank"]} <span class="tie">({best}–{worst})</span></td>'
    )


def los_cell(row: dict) -> Markup:
    """A rankings row's LOS to next."""
    return Markup('<td class="num los">' + ("" if row["los_next"] is None else f"{row['los_next']:.3f}") + "</td>")


def alternative_cells(row: dict, methods: list[str]) -> Markup:
    """The cells of an /AlternativeRankings row after the bot's name: its APS rank and score, its
    rank under each method (the one furthest from its APS rank marked), the spread. The table's
    columns are numbers by the style sheet (table.alternative)."""
    score = "" if row["aps_score"] is None else f"{row['aps_score']:.2f}"
    html = f"<td>{row['aps_rank']} <small>({score})</small></td>"
    for method in methods:
        rank = row[f"{method}_rank"]
        html += ('<td class="furthest">' if row["furthest"] == method else "<td>") + ("" if rank is None else f"{rank}")
        html += "</td>"
    return Markup(html + "<td>" + ("" if row["spread"] is None else f"{row['spread']}") + "</td>")


@bp.get("/Rankings")
def rankings():
    game = request.args.get("game", "roborumble")
    if game not in current_app.extensions["rumble.rumbles"]:
        abort(404, description=f"There is no rumble called {game!r}.")
    order = request.args.get("order", "-aps")
    db = get_db()
    rid = known_rumble_id(db, game)
    melee = current_app.extensions["rumble.rumbles"][game].melee
    try:
        rows, state, banner = ranking_table(db, rid, order, now().timestamp(), melee)
    except KeyError:
        keys = [*tables.RANKING_ORDER, *(MELEE_TITLES if melee else ())]
        abort(400, description=f"Cannot sort by {order!r}; use one of {', '.join(keys)} (with - for descending).")
    everyone = len(rows)
    ranked = {k for k in BATCH_TITLES if any(r[f"{k}_rank"] is not None for r in rows)}  # over the whole table
    prefix = request.args.get("prefix", "").strip()  # the search form's: bots whose name starts so (rumble.web.search)
    if prefix:
        rows = [r for r in rows if search.matches(r["name"], prefix)]
    limit, page = _positive("limit", len(rows) or 1, MAX_LIMIT), _positive("page", 1, MAX_PAGE)
    total = len(rows)
    rows = rows[(page - 1) * limit : page * limit]
    if request.args.get("api") == "1":
        return jsonify(rows)
    wide = request.args.get("columns") == "all"
    titles, batch_titles = shown_columns(melee, wide, order, ranked)
    latest = batch_runs.runs(db, rid, limit=1)
    return render_template(
        "rankings.html",
        game=game,
        rows=rows,
        order=order,
        titles=titles,
        melee=melee,
        batch_titles=batch_titles,
        batch_run=latest[0] if latest else None,
        provisional_rd=PROVISIONAL_RD,
        state=state,
        banner=banner,
        page=page,
        limit=limit,
        pages=max(1, -(-total // limit)),
        total=total,
        everyone=everyone,
        wide=wide,
        every_column=len(columns(melee)) + len(ranked) + 3,  # with rank, LOS to next and the name
        prefix=prefix,
        retired=[b for b in search.found(db, rid, prefix) if not b["active"]] if prefix else [],
        cells=cells.ranking_cells,
        rank_cell=rank_cell,
        los_cell=los_cell,
    )


@bp.get("/AlternativeRankings")
def alternative_rankings():
    """Each bot's rank under every batch method side by side, from the latest runs."""
    game = request.args.get("game", "roborumble")
    if game not in current_app.extensions["rumble.rumbles"]:
        abort(404, description=f"There is no rumble called {game!r}.")
    page = batch_runs.alternative_rankings(get_db(), known_rumble_id(get_db(), game), tuple(BATCH_TITLES))
    page["los_matrix"] = confidence_data.los_matrix(
        get_db(), known_rumble_id(get_db(), game)
    )  # the pairwise LOS of the top bots
    if request.args.get("api") == "1":
        return jsonify({"game": game, **page})
    return render_template(
        "alternative_rankings.html", game=game, titles={"aps": "APS", **BATCH_TITLES}, cells=alternative_cells, **page
    )


def _positive(name: str, default: int, most: int) -> int:
    """A whole-number query parameter from 1 to ``most`` (rumble.parameters), or a 400 that says what is wrong."""
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return whole_number(raw, name, 1, most)
    except ParameterError as error:
        abort(400, description=f"{error}.")


@bp.get("/RumbleStats")
def rumble_stats():
    """Uploads per uploader (all time and the last 30 days), uploads per day, bots lacking pairings."""
    game = request.args.get("game")
    if game is not None and game not in current_app.extensions["rumble.rumbles"]:
        abort(404, description=f"There is no rumble called {game!r}.")
    page = stats_page(get_db(), game)
    # one rumble's uploader consistency (rumble.web.uploader_data); every rumble at once would scan every log
    table = uploader_table_state(get_db(), known_rumble_id(get_db(), game)) if game else None
    page["consistency"] = table.rows if table is not None else []
    page["consistency_source"] = table.source if table is not None else "live"
    page["consistency_computed_at"] = table.computed_at if table is not None else None
    page["alpha"] = ALPHA
    if request.args.get("api") == "1":
        return jsonify(page)
    return render_template("rumble_stats.html", **page)


@bp.get("/favicon.ico")
def favicon():
    """The icon, for browsers that ask for it without a page (an image opened on its own)."""
    return current_app.send_static_file("favicon.svg")


ROBOTS = """\
# Pages are welcome; the rest would only cost the server: the client's endpoints, maintainers'
# pages, the JSON (/api/v1/ and the pages' api=1), the same tables sorted every other way, the bots'
# jars (binaries for the battle clients) and the competitors' forms.
User-agent: *
Disallow: /UploadedResults
Disallow: /RatingsFile
Disallow: /RemoveOldParticipant
Disallow: /admin
Disallow: /api/
Disallow: /*api=1
Disallow: /*order=
Disallow: /*columns=
Disallow: /*prefix=
Disallow: /Pairing
Disallow: /BotCompare
Disallow: /BotDetails/
Disallow: /RumbleStats/
Disallow: /jars/
Disallow: /Participants/enter
"""


@bp.get("/robots.txt")
def robots() -> Response:
    """What crawlers may fetch: the pages, not the uploads, the maintainers' pages or the JSON."""
    response = Response(ROBOTS, mimetype="text/plain")
    response.headers["Cache-Control"] = "max-age=86400"
    return response


@bp.get("/ScoreExplanation")
def score_explanation():
    return render_template("explanation.html", provisional_rd=PROVISIONAL_RD)
