"""Pages about bots, at LiteRumble's URLs: /BotDetails, /Pairing and /BotCompare, each with its
``api=1`` JSON twin from the same store call (rumble.store.details). Registered on the pages
blueprint by ``pages.py``."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, render_template, request, url_for
from markupsafe import Markup

from rumble.ratings.columns import RATINGS
from rumble.ratings.online import PROVISIONAL_RD
from rumble.store import details, jars, melee_battles
from rumble.web import confidence_data, get_db, now
from rumble.web.cells import pairing_cells, rating_cell
from rumble.web.lookup import BATCH_TITLES, NotFound, found_or_404, rumble_or_404
from rumble.web.page_data import melee_values
from rumble.web.participants import jar_url
from rumble.web.uploader_data import with_confirmation

PAIRING_TITLES = {
    "aps": "APS",
    "aps_ci": "APS CI",
    "survival": "Survival",
    "battles": "Battles",
    "last_battle": "Last battle (UTC)",
    "expected": "Expected",
    "pbi": "PBI",
    "knnpbi": "KNNPBI",
    "npp": "NPP",
    "opponent_aps": "Opponent APS",
}
COMPARE_TITLES = {
    "a_aps": "APS (A)",
    "b_aps": "APS (B)",
    "diff": "Diff APS",
    "a_survival": "Survival (A)",
    "b_survival": "Survival (B)",
    "diff_survival": "Diff survival",
    "opponent_aps": "Opponent APS",
}


def _difference(value: float | None) -> str:
    """A difference A − B, signed: green where A is ahead, red where B is (the style sheet's up and down)."""
    if value is None:
        return "<td></td>"
    return ('<td class="up">' if value > 0 else '<td class="down">' if value < 0 else "<td>") + f"{value:+.2f}</td>"


def compare_cells(row: dict) -> Markup:
    """The cells of a /BotCompare row after both APS (which link to the pairings): the APS
    difference, both survivals and their difference, the opponent's APS. As cells.py, one call per
    row; the columns are numbers by the style sheet (table.compare)."""

    def number(value: float | None) -> str:
        return "<td></td>" if value is None else f"<td>{value:.2f}</td>"

    return Markup(
        _difference(row["diff"])
        + number(row["a_survival"])
        + number(row["b_survival"])
        + _difference(row["diff_survival"])
        + number(row["opponent_aps"])
    )


def _call(function, *args, order: str, orders) -> dict | None:
    """``function(*args, order=order, now=...)``: a bot page's deviations are grown up to the app's now."""
    try:
        return function(*args, order=order, now=now().timestamp())
    except KeyError:
        raise NotFound(
            f"Cannot sort by {order!r}; use one of {', '.join(orders)} (with - for descending).", 400
        ) from None


def bot_details() -> Response | str:
    """A bot's summary and every pairing (LiteRumble's /BotDetails?game=G&name=N)."""
    game, name, order = (
        request.args.get("game", "roborumble"),
        request.args.get("name", ""),
        request.args.get("order", "name"),
    )
    page = found_or_404(
        _call(details.bot_details, get_db(), rumble_or_404(game), name, order=order, orders=details.PAIRING_ORDER),
        game,
        name,
    )
    with_confirmation(get_db(), rumble_or_404(game), page)  # unconfirmed pairings: one uploader only
    if current_app.extensions["rumble.rumbles"][game].melee:
        page["melee"] = _melee(melee_battles.bot_page(get_db(), rumble_or_404(game), page["bot"]["name"]))
    page["jar"] = _jar(page["bot"]["name"])
    if request.args.get("api") == "1":
        return jsonify({"game": game, **page})

    return render_template(
        "bot_details.html",
        game=game,
        order=order,
        titles=PAIRING_TITLES,
        batch_titles=BATCH_TITLES,
        provisional_rd=PROVISIONAL_RD,
        cells=pairing_cells,
        ratings=RATINGS,
        rating_cell=rating_cell,
        **page,
    )


def _jar(name: str) -> dict | None:
    """The bot's jar, if it was entered here (rumble/web/participants.py): its SHA-256, size and URLs."""
    found = jars.jar(get_db(), name)
    if found is None:
        return None
    page = url_for("participants.jar_page", name=name, _external=True)
    return {"sha256": found["sha256"], "size": found["size"], "url": jar_url(name), "page": page}


def _melee(found: dict | None) -> dict | None:
    """A melee bot's whole-battle ratings for the page: Weng-Lin with σ grown up to now, μ − 3σ,
    XonStat Elo per battle, and its latest reassembled battles (rumble/ingest/melee.py)."""
    if found is None:
        return None
    return {**melee_values(found["rating"], now().timestamp()), "battles": found["battles"]}


def pairing() -> Response | str:
    """Every battle of one pairing from the log (RRServer's ViewPairing)."""
    game, bot, vs = request.args.get("game", "roborumble"), request.args.get("bot", ""), request.args.get("vs", "")
    page = found_or_404(details.pairing_page(get_db(), rumble_or_404(game), bot, vs), game, bot, vs)
    if request.args.get("api") == "1":
        return jsonify({"game": game, **page})
    return render_template("pairing.html", game=game, **page)


def bot_compare() -> Response | str:
    """Two bots over their common opponents (LiteRumble's /BotCompare?game=G&bota=A&botb=B)."""
    args = request.args
    game, a, b, order = (
        args.get("game", "roborumble"),
        args.get("bota", ""),
        args.get("botb", ""),
        args.get("order", "name"),
    )
    page = found_or_404(
        _call(details.bot_compare, get_db(), rumble_or_404(game), a, b, order=order, orders=details.COMPARE_ORDER),
        game,
        a,
        b,
    )
    page["version_test"] = confidence_data.version_test_of(page)  # A (new) against B (old)
    if args.get("api") == "1":
        return jsonify({"game": game, **page})
    return render_template(
        "bot_compare.html", game=game, order=order, titles=COMPARE_TITLES, cells=compare_cells, **page
    )


bp = Blueprint("bot_pages", __name__)
bp.add_url_rule("/BotDetails", view_func=bot_details)
bp.add_url_rule("/Pairing", view_func=pairing)
bp.add_url_rule("/BotCompare", view_func=bot_compare)
