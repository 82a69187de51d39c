"""Maintainers' views of the uploaders: the consistency table of a rumble and the preview of a
rollback of one uploader (the APS table without its battles, computed in memory; nothing changes
until a maintainer then rolls it back from /admin). Under /admin, so the same authentication."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, render_template, request

from rumble.rankings.uploader_consistency import ALPHA
from rumble.store import stats
from rumble.web import get_db
from rumble.web.admin_auth import admin_required
from rumble.web.lookup import NotFound, failure, rumble_or_404
from rumble.web.uploader_data import rollback, uploader_table

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
    rows = uploader_table(get_db(), rid)
    if request.args.get("api") == "1":
        return jsonify({"game": game, "alpha": ALPHA, "items": rows})
    return render_template("admin_uploaders.html", game=game, consistency=rows, alpha=ALPHA, preview=True)


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
