"""Pages for people: the rumbles, a rankings table and the alternative rankings (each with its JSON
twin), and the score explanation; the bot pages (details, pairing, compare) are in ``bots.py``."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta
from urllib.parse import quote_plus

from flask import Blueprint, abort, current_app, jsonify, render_template, request

from rumble.parameters import MAX_PAGE, ParameterError, whole_number
from rumble.rankings import details as figures
from rumble.rankings import ties
from rumble.ratings import weng_lin
from rumble.ratings.online import PROVISIONAL_RD, provisional
from rumble.store import batch as batch_store
from rumble.store import format_time, stats, tables, upload_stats
from rumble.store import melee as melee_store
from rumble.store import rumbles as rumble_store
from rumble.web import bots, cells, get_db, now, plots
from rumble.web.lookup import BATCH_TITLES, STATS_DAYS

bp = Blueprint("pages", __name__)
MAX_LIMIT = 100_000  # rows a /Rankings page may ask for: every bot of any rumble (by default a page has them all)
bots.register(bp)  # /BotDetails, /Pairing, /BotCompare
plots.register(bp)  # the SVG plots those pages and /RumbleStats show

COLUMN_TITLES = {
    "aps": "APS",
    "aps_ci": "APS CI",
    "pwin": "PWIN",
    "pl": "PL",
    "survival": "Survival",
    "elo": "Elo",
    "glicko": "Glicko ± 2RD",
    "glicko2": "Glicko-2 ± 2RD",
    "rank_points": "RP",
    "xonstat": "XonStat Elo",
    "pairings": "Pairings",
    "battles": "Battles",
    "last_battle": "Last battle (UTC)",
}
# A melee rumble's columns from its whole battles (rumble/melee.py), after XonStat Elo (which in a
# melee rumble is the battle-level one too).
MELEE_TITLES = {"mu": "μ", "sigma": "σ", "conservative": "μ − 3σ", "melee_battles": "Melee battles"}


@bp.app_template_filter("query_value")
def query_value(value: str) -> str:
    """A value for a URL's query string, as url_for writes it (a space as +): for links built in a
    loop from one url_for prefix, which is much faster than a url_for per row."""
    return quote_plus(value, safe="/")


KINDS = {"1v1": "One on one", "melee": "Melee", "teams": "Teams"}  # the home page's groups, in this order


@bp.get("/")
def home():
    rows = rumble_store.rumble_rows(get_db())
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


@bp.get("/Rankings")
def rankings():
    game = request.args.get("game", "roborumble")
    if game not in current_app.extensions["rumble.rumbles"]:
        abort(404, description=f"There is no rumble called {game!r}.")
    order = request.args.get("order", "-aps")
    db = get_db()
    rid = rumble_store.rumble_id(db, game)
    melee = current_app.extensions["rumble.rumbles"][game].melee
    try:
        rows, state, banner = ranking_table(db, rid, order, now().timestamp(), melee)
    except KeyError:
        keys = [*tables.RANKING_ORDER, *(MELEE_TITLES if melee else ())]
        abort(400, description=f"Cannot sort by {order!r}; use one of {', '.join(keys)} (with - for descending).")
    limit, page = _positive("limit", len(rows) or 1, MAX_LIMIT), _positive("page", 1, MAX_PAGE)
    total = len(rows)
    rows = rows[(page - 1) * limit : page * limit]
    if request.args.get("api") == "1":
        return jsonify(rows)
    latest = batch_store.runs(db, rid, limit=1)
    return render_template(
        "rankings.html",
        game=game,
        rows=rows,
        order=order,
        titles=_columns(melee),
        melee=melee,
        batch_titles=BATCH_TITLES,
        batch_run=latest[0] if latest else None,
        provisional_rd=PROVISIONAL_RD,
        state=state,
        banner=banner,
        page=page,
        limit=limit,
        pages=max(1, -(-total // limit)),
        total=total,
        cells=cells.ranking_cells,
    )


def _columns(melee: bool) -> dict[str, str]:
    """The rankings columns in page order: a melee rumble's Weng-Lin columns come after XonStat Elo."""
    if not melee:
        return COLUMN_TITLES
    keys = list(COLUMN_TITLES)
    at = keys.index("xonstat") + 1
    return {**{k: COLUMN_TITLES[k] for k in keys[:at]}, **MELEE_TITLES, **{k: COLUMN_TITLES[k] for k in keys[at:]}}


def ranking_table(db, rid: int, order: str, moment: float, melee: bool = False) -> tuple[list[dict], str, str]:
    """The rankings rows in ``order`` with provisional marks and statistical ties, and the stability
    banner (state, text): what /Rankings and /api/v1 show, with deviations grown up to ``moment``
    (seconds since 1970). A melee rumble's rows also carry its Weng-Lin columns, which ``order`` may
    name. KeyError for an unknown order."""
    # A melee rumble shows the whole-battle XonStat Elo (_with_melee), so it sorts by that one too.
    melee_order = melee and order.lstrip("-") in (*MELEE_TITLES, "xonstat")
    rows = [
        _with_provisional(figures.deviations_now(row, moment))
        for row in tables.ranking_rows(db, rid, "-aps" if melee_order else order)
    ]
    if melee:
        _with_melee(rows, melee_store.ratings_by_name(db, rid), order if melee_order else None, moment)
    for row, (best, worst) in zip(rows, ties.rank_ranges([r["aps"] for r in rows], [r["aps_ci"] for r in rows])):
        row["rank_range"], row["tied"] = [best, worst], best != worst
    state, banner = ties.stability([r["pairings"] for r in rows], tables.unrated_since_last_event(db, rid))
    return rows, state, banner


@bp.get("/AlternativeRankings")
def alternative_rankings():
    """Each bot's rank under every batch method side by side, from the latest runs."""
    game = request.args.get("game", "roborumble")
    if game not in current_app.extensions["rumble.rumbles"]:
        abort(404, description=f"There is no rumble called {game!r}.")
    page = batch_store.alternative_rankings(get_db(), rumble_store.rumble_id(get_db(), game), tuple(BATCH_TITLES))
    if request.args.get("api") == "1":
        return jsonify({"game": game, **page})
    return render_template("alternative_rankings.html", game=game, titles={"aps": "APS", **BATCH_TITLES}, **page)


def _positive(name: str, default: int, most: int) -> int:
    """A whole-number query parameter from 1 to ``most`` (rumble.parameters), or a 400 that says what is wrong."""
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return whole_number(raw, name, 1, most)
    except ParameterError as error:
        abort(400, description=f"{error}.")


def _with_provisional(row: dict) -> dict:
    """Mark a bot whose Glicko-2 deviation (grown up to now) is high (rumble.ratings.online.provisional)."""
    row["provisional"] = row["glicko2_rd"] is None or provisional(row["glicko2_rd"])
    return row


def _with_melee(rows: list[dict], found: dict, order: str | None, moment: float) -> None:
    """Add each bot's Weng-Lin mu, sigma (grown for its inactivity up to ``moment``), mu − 3σ and rated
    melee battles, and its XonStat Elo from whole battles; sort by ``order`` if it is one of those."""
    for row in rows:
        rating = found.get(row["name"])
        sigma = weng_lin.grown_sigma(rating.sigma, rating.rated_at, moment) if rating else None
        row.update(
            mu=rating.mu if rating else None,
            sigma=sigma,
            conservative=weng_lin.conservative(rating.mu, sigma) if rating else None,
            melee_battles=rating.battles if rating else 0,
            xonstat=rating.xonstat if rating else None,
        )
    if order:
        key, descending = order.lstrip("-"), order.startswith("-")
        present = sorted((r for r in rows if r[key] is not None), key=lambda r: r[key], reverse=descending)
        rows[:] = present + [r for r in rows if r[key] is None]


@bp.get("/RumbleStats")
def rumble_stats():
    """Uploads per uploader (all time and the last 30 days), uploads per day, bots lacking pairings."""
    game = request.args.get("game")
    if game is not None and game not in current_app.extensions["rumble.rumbles"]:
        abort(404, description=f"There is no rumble called {game!r}.")
    page = stats_page(get_db(), game)
    if request.args.get("api") == "1":
        return jsonify(page)
    return render_template("rumble_stats.html", **page)


@bp.get("/favicon.ico")
def favicon():
    """The icon, for browsers that ask for it without a page (an image opened on its own)."""
    return current_app.send_static_file("favicon.svg")


def stats_page(db, game: str | None) -> dict:
    """What /RumbleStats and /api/v1's stats show, for one rumble or (``game`` None) all of them."""
    rid = rumble_store.rumble_id(db, game) if game else None
    since = format_time(now() - timedelta(days=STATS_DAYS))
    return {
        "game": game,
        "days": STATS_DAYS,
        "rumbles": [r for r in rumble_store.rumble_rows(db) if game is None or r["name"] == game],
        "uploaders": stats.uploaders(db, rid, since),
        "uploads_per_day": stats.uploads_per_day(db, rid, since),
        "lacking_pairings": stats.lacking_pairings(db, rid) if rid is not None else [],
        "uploads": upload_stats.per_day(db, game, since[:10]),
        "upload_errors": upload_stats.latest_errors(db) if game is None else [],
        "retirements": [dict(r, source=public_source(r["source"])) for r in stats.retirements(db, rid)],
    }


def public_source(source: str) -> str:
    """A retirement's source as the public pages show it: the address (after the last " from ")
    cut to its network, /24 or /48, so that an author sees who retired their bot and where from
    without the page publishing uploaders' addresses (/admin shows them whole)."""
    head, found, addr = source.rpartition(" from ")
    if not found:
        return source
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return head
    if ip.version == 4:
        return f"{head} from {'.'.join(str(ip).split('.')[:3])}.x"
    return f"{head} from {ipaddress.ip_network(f'{ip}/48', strict=False)}"


@bp.get("/ScoreExplanation")
def score_explanation():
    return render_template("explanation.html", provisional_rd=PROVISIONAL_RD)
