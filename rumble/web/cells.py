"""The number cells of the two long tables, formatted in Python: the rankings (1,200 rows of 20-odd
columns in the real roborumble) and a bot's pairings (1,199 rows).

Jinja evaluates each ``'%.2f'|format(x) if x is not none else ''`` with several calls; over 30,000
cells that was most of the pages' time (about 130 ms of 160). One call per row here keeps both
pages under the 100 ms target of issue 7 (scripts/bench_pages.py). Only numbers and store times go
in, each formatted or escaped here; names and links stay in the templates.
"""

from __future__ import annotations

from markupsafe import Markup, escape

_NUM = '<td class="num">{}</td>'


def _fmt(fmt: str, value: float | None, missing: str = "") -> str:
    return missing if value is None else fmt % value


def _with_deviation(value: float | None, deviation: float | None, mark: str) -> str:
    return "" if value is None else f"{value:.1f} ± {2 * deviation:.1f}{mark}"


def ranking_cells(row: dict, batch_keys) -> Markup:
    """The cells of a rankings row after the competitor's name, in the order of the page's titles
    (pages.COLUMN_TITLES, then pages.BATCH_TITLES); a provisional rating is marked ``?``."""
    mark = "?" if row["provisional"] else ""
    cells = [
        _fmt("%.2f", row["aps"]), _fmt("±%.2f", row["aps_ci"], "n/a"), _fmt("%.2f", row["pwin"]),
        _fmt("%d", row["pl"]), _fmt("%.2f", row["survival"]),
        _fmt("%.1f", row["elo"]) + (mark if row["elo"] is not None else ""),
        _with_deviation(row["glicko"], row["glicko_rd"], mark), _with_deviation(row["glicko2"], row["glicko2_rd"], mark),
        _fmt("%.0f", row["rank_points"]) + (mark if row["rank_points"] is not None else ""),
        _fmt("%.1f", row["xonstat"]) + (mark if row["xonstat"] is not None else ""),
        _fmt("%d", row["pairings"]), _fmt("%d", row["battles"]),
    ]  # fmt: skip
    html = "".join(_NUM.format(cell) for cell in cells) + f"<td>{escape(row['last_battle'] or '')}</td>"
    for key in batch_keys:
        rank, score = row[f"{key}_rank"], row[f"{key}_score"]
        small = "" if score is None else f" <small>({score:.1f})</small>"
        html += _NUM.format(_fmt("%d", rank) + small)
    return Markup(html)


def pairing_cells(row: dict) -> Markup:
    """The cells of a bot-details pairing row after the opponent's name (bots.PAIRING_TITLES' order)."""
    cells = [
        _fmt("%.2f", row["aps"]), _fmt("±%.2f", row["aps_ci"], "n/a"), _fmt("%.2f", row["survival"]), _fmt("%d", row["battles"]),
    ]
    html = "".join(_NUM.format(cell) for cell in cells) + f"<td>{escape(row['last_battle'] or '')}</td>"
    html += "".join(_NUM.format(_fmt("%.2f", row[key])) for key in ("expected", "pbi", "knnpbi", "npp", "opponent_aps"))
    return Markup(html)
