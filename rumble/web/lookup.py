"""What the page and API views share to find what a request names, and to say when it is not there.

``rumble_or_404`` and ``found_or_404`` raise ``NotFound``, which ``failure`` answers in plain words
(or JSON for ``api=1``); the titles of the batch methods and the stats window are here too, so that
pages, bots, plots and the API import them from one place and not from one another.
"""

from __future__ import annotations

from flask import Response, current_app, jsonify, request

from rumble.rankings.batch import METHODS
from rumble.store.rumbles import known_rumble_id
from rumble.web import get_db

STATS_DAYS = 30  # the "recent" window of /RumbleStats (LiteRumble shows 31 days)
BATCH_TITLES = {name: method.title for name, method in METHODS.items()}  # the batch columns, after the ratings


class NotFound(Exception):
    """A request names an unknown rumble or bot, or a bad sort order: answered in plain words."""

    def __init__(self, message: str, status: int = 404):
        super().__init__(message)
        self.status = status


def failure(error: NotFound) -> Response:
    """The error as JSON for ``api=1``, else as plain text."""
    if request.args.get("api") == "1":
        response = jsonify({"error": str(error)})
    else:
        response = Response(str(error) + "\n", mimetype="text/plain")
    response.status_code = error.status
    return response


def rumble_or_404(game: str) -> int:
    """The id of the rumble called ``game``; NotFound if the server runs no such rumble."""
    if game not in current_app.extensions["rumble.rumbles"]:
        raise NotFound(f"There is no rumble called {game!r}.")
    return known_rumble_id(get_db(), game)


def found_or_404(page: dict | None, game: str, *names: str) -> dict:
    """``page``, or NotFound naming the bots that have not battled in ``game``."""
    if page is None:
        raise NotFound(f"No bot called {' or '.join(repr(n) for n in names)} has battled in {game}.")
    return page
