"""Plots as SVG images at their own URLs, drawn server-side with matplotlib: they work without
JavaScript, need no CDN, and each page shows the same figures as a table next to the image.

- ``/BotDetails/scores.svg``: each pairing's APS against the opponent's APS;
- ``/BotDetails/history.svg``: the bot's rank (by APS and by XonStat Elo), APS and ratings from the daily
  snapshot (rank_history), on whole-rank ticks;
- ``/RumbleStats/uploads.svg``: battles uploaded per day, refusals, and the server time per upload.

Each is built from the same store call as its page (rumble.store.details, history, stats).
matplotlib is imported on the first plot only, so that workers that never draw do not pay for it.
"""

from __future__ import annotations

import io
import threading
from datetime import date, timedelta
from typing import Any

from flask import Blueprint, Response, request
from matplotlib.typing import RcKeyType

from rumble.ratings.columns import PLOTTED
from rumble.store import details, format_time, history, read, stats, upload_stats
from rumble.web import get_db, now
from rumble.web.lookup import STATS_DAYS, found_or_404, rumble_or_404

SVG = "image/svg+xml"
WIDTH, HEIGHT = 7.5, 4.0  # inches at 72 dpi: 540 x 288 px
_RENDERING = threading.Lock()  # rc_context swaps matplotlib's global rcParams: one thread at a time
_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "rumble",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


def _figure(rows: int = 1, height: float = HEIGHT):
    """A figure with ``rows`` stacked axes sharing x (the OO API: no pyplot state across threads)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH, height), layout="constrained")
    axes = figure.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return figure, axes


def _svg(figure) -> Response:
    import matplotlib

    with _RENDERING, matplotlib.rc_context(_RC):
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    response = Response(buffer.getvalue(), mimetype=SVG)
    response.headers["Cache-Control"] = "max-age=60"
    return response


def _empty(axes, text: str) -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes)
    axes.set_xticks([])
    axes.set_yticks([])


def scores_plot() -> Response:
    """A pairing's APS (y) against its opponent's APS (x), live opponents only."""
    game, name = request.args.get("game", "roborumble"), request.args.get("name", "")
    page = found_or_404(details.bot_details(get_db(), rumble_or_404(game), name, now=now().timestamp()), game, name)
    points = [(p["opponent_aps"], p["aps"]) for p in page["pairings"] if p["active"] and p["opponent_aps"] is not None]
    import matplotlib

    with matplotlib.rc_context(_RC):
        figure, (axes,) = _figure()
        if points:
            axes.scatter([x for x, _ in points], [y for _, y in points], s=12, alpha=0.7, color="#2f5d8a")
            axes.axhline(50, color="#999", linewidth=0.8)
            axes.set_xlabel("opponent's APS (%)")
            axes.set_ylabel(f"{page['bot']['name']}'s score in the pairing (%)")
            axes.set_ylim(0, 100)
        else:
            _empty(axes, "No pairings with active opponents yet.")
        return _svg(figure)


def history_plot() -> Response:
    """The bot's APS rank and XonStat rank, APS and ratings per day, from the daily snapshot."""
    game, name = request.args.get("game", "roborumble"), request.args.get("name", "")
    db = get_db()
    rid = rumble_or_404(game)
    with read(db):
        bot = found_or_404(details.find_participant(db, rid, name), game, name)
        rows = history.bot_history(db, rid, bot["id"])
    import matplotlib

    with matplotlib.rc_context(_RC):
        if not rows:
            figure, (axes,) = _figure(height=1.5)
            _empty(axes, "No daily snapshot yet: the hourly run takes one each day.")
            return _svg(figure)
        days = [date.fromisoformat(r["day"]) for r in rows]
        figure, (rank, aps, ratings) = _figure(3, height=6.0)
        marker = "o" if len(rows) < 40 else None
        rank.plot(days, [r["rank"] for r in rows], marker=marker, color="#8a2f2f", label="rank by APS")
        xonstat_ranks = [r["xonstat_rank"] for r in rows]
        if any(v is not None for v in xonstat_ranks):  # seed 002's daily rank by XonStat Elo
            rank.plot(
                days,
                [float("nan") if v is None else v for v in xonstat_ranks],
                marker=marker,
                color="#5d8a2f",
                label="rank by XonStat Elo",
            )
            rank.legend(loc="best", fontsize=8)
        _rank_axis(rank, [r["rank"] for r in rows] + [v for v in xonstat_ranks if v is not None])
        aps.plot(days, [r["aps"] for r in rows], marker=marker, color="#2f5d8a")
        aps.set_ylabel("APS (%)")
        for rating in PLOTTED:  # rumble.ratings.columns
            values = [r[rating.name] for r in rows]
            if any(v is not None for v in values):
                nan_for_none = [float("nan") if v is None else v for v in values]
                ratings.plot(days, nan_for_none, marker=marker, label=rating.label)
        ratings.set_ylabel("rating")
        ratings.legend(loc="best", fontsize=8)
        _date_axis(ratings, days)
        return _svg(figure)


def _rank_axis(axes, ranks: list[int]) -> None:
    """Ranks are whole numbers, 1 (the best) at the top: ticks on whole ranks only, half a rank
    of room around the ones drawn (a bot that held rank 8 every day gets the one tick 8, not 7.6 … 8.4)."""
    from matplotlib.ticker import MaxNLocator

    axes.set_ylim(max(ranks) + 0.5, min(ranks) - 0.5)  # upside down: rank 1 on top
    axes.yaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True, min_n_ticks=1))
    axes.set_ylabel("rank (1 = best)")


def _date_axis(axes, days: list[date]) -> None:
    """Short date labels; a week around a lone day instead of matplotlib's years."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    locator = AutoDateLocator(maxticks=8)
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    if days[0] == days[-1]:
        axes.set_xlim(days[0] - timedelta(days=3), days[0] + timedelta(days=3))


def uploads_plot() -> Response:
    """Battles received per UTC day over the /RumbleStats window (days without any shown as 0) and,
    once the upload counts have days, the refused uploads and the mean and longest server time."""
    game = request.args.get("game") or None
    db = get_db()
    rid = rumble_or_404(game) if game else None
    moment = now()
    since = format_time(moment - timedelta(days=STATS_DAYS))
    rows = {r["day"]: r["battles"] for r in stats.uploads_per_day(db, rid, since)}
    counted = {r["day"]: r for r in upload_stats.per_day(db, game, since[:10])}
    days = [(moment - timedelta(days=n)).date() for n in range(STATS_DAYS, -1, -1)]
    import matplotlib

    with matplotlib.rc_context(_RC):
        figure, axes = _figure(2 if counted else 1, height=4.8 if counted else 3.0)
        axes[0].bar(
            days, [rows.get(d.isoformat(), 0) for d in days], color="#2f5d8a", width=0.8, label="battles stored"
        )
        axes[0].set_ylabel("battles uploaded")
        if counted:
            refused = [counted[d.isoformat()]["refused"] if d.isoformat() in counted else 0 for d in days]
            axes[0].bar(days, refused, color="#c0504d", width=0.4, label="uploads refused")
            axes[0].legend(loc="upper left", fontsize=8)
            timed = [d for d in days if d.isoformat() in counted and counted[d.isoformat()]["mean_ms"] is not None]
            axes[1].plot(timed, [counted[d.isoformat()]["mean_ms"] for d in timed], marker="o", label="mean")
            axes[1].plot(
                timed, [counted[d.isoformat()]["max_ms"] for d in timed], marker="v", linestyle=":", label="longest"
            )
            axes[1].set_ylabel("server time per upload (ms)")
            _plain_log_axis(axes[1])
            axes[1].legend(loc="upper left", fontsize=8)
        _date_axis(axes[-1], days)
        return _svg(figure)


def _plain_log_axis(axes) -> None:
    """A logarithmic y axis whose ticks read as plain numbers (20, 50, 0.5), never 2×10¹."""
    from matplotlib.ticker import LogFormatter

    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(LogFormatter())
    axes.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


bp = Blueprint("plots", __name__)
bp.add_url_rule("/BotDetails/scores.svg", view_func=scores_plot)
bp.add_url_rule("/BotDetails/history.svg", view_func=history_plot)
bp.add_url_rule("/RumbleStats/uploads.svg", view_func=uploads_plot)
