"""Maintainers' views of the uploaders: the consistency table of a rumble and the preview of a
rollback of one uploader (the APS table without its battles, computed in memory; nothing changes
until a maintainer then rolls it back from /admin). Under /admin, so the same authentication."""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from rumble import store
from rumble.rankings.uploader_consistency import ALPHA
from rumble.rankings.uploader_trust import named_party
from rumble.store import maintainers, stats, trust
from rumble.web import get_db, now
from rumble.web.admin_auth import admin_required
from rumble.web.body import form_or_json
from rumble.web.lookup import NotFound, failure, rumble_or_404
from rumble.web.uploader_data import rollback, uploader_table_state

bp = Blueprint("uploaders", __name__)  # nested in the admin blueprint (rumble/web/admin.py): under /admin
PREVIEW_ROWS = 30  # rows of the preview table (the JSON has them all)


def _game() -> tuple[str, int]:
    """The ``game`` parameter and its rumble's id, or NotFound in plain words."""
    game = request.args.get("game", "")
    return game, rumble_or_404(game)


@bp.get("/uploaders")
@admin_required
def table() -> Response | str:
    """The uploader-consistency table of ``game`` with a rollback preview link per uploader (api=1: JSON)."""
    try:
        game, rid = _game()
    except NotFound as error:
        return failure(error)
    table = uploader_table_state(get_db(), rid)
    if request.args.get("api") == "1":
        return jsonify({"game": game, "alpha": ALPHA, "items": table.rows})
    return render_template(
        "admin_uploaders.html",
        game=game,
        consistency=table.rows,
        consistency_source=table.source,
        consistency_computed_at=table.computed_at,
        alpha=ALPHA,
        preview=True,
    )


@bp.get("/uploader-preview")
@admin_required
def preview() -> Response | str:
    """What rolling back ``uploader``'s battles in ``game`` would give, before anything changes (api=1: JSON)."""
    try:
        game, rid = _game()
        uploader = request.args.get("uploader", "")
        known = {row["uploader"] for row in stats.uploaders(get_db(), rid, "0000-00-00")}
        if uploader not in known:
            raise NotFound(f"No battles from an uploader called {uploader!r} in {game}.", 404)
    except NotFound as error:
        return failure(error)
    found = rollback(get_db(), rid, uploader)
    if request.args.get("api") == "1":
        return jsonify({"game": game, **found})
    return render_template("admin_uploader_preview.html", game=game, preview=found, rows=found["rows"][:PREVIEW_ROWS])


@bp.post("/uploaders/vouch")
@admin_required
def vouch() -> ResponseReturnValue:
    """Vouch for an uploader (form or JSON: uploader, network (or an address of it), note): it is
    established in every rumble at once, and may retire bots (/ScoreExplanation#standing)."""
    return _word("vouched", "vouch")


@bp.post("/uploaders/revoke")
@admin_required
def revoke() -> ResponseReturnValue:
    """Revoke an uploader's trust (form or JSON: uploader, network, note), whatever it earned."""
    return _word("revoked", "revoke uploader")


def _word(standing: str, action: str) -> ResponseReturnValue:
    values = form_or_json()
    note = str(values.get("note", ""))[:300]
    try:
        party = named_party(str(values.get("uploader", "")), str(values.get("network", "")))
    except ValueError as error:
        response = jsonify(action=action, error=str(error))
        response.status_code = 400
        return response
    db, at = get_db(), store.format_time(now())
    with store.write(db):
        trust.set_word(db, party, standing, g.admin, at, note)
        maintainers.audit(db, g.admin, action, {"party": party, "note": note, "via": g.admin_via}, 0, at)
    if g.admin_via == "session":
        return redirect(url_for("admin.audit_page") + "#standing", code=303)
    return jsonify(action=action, party=party, standing=standing)
