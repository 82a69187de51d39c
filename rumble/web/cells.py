"""The number cells of the two long tables, formatted in Python: the rankings (1,200 rows of 20-odd
columns in the real roborumble) and a bot's pairings (1,199 rows).

Jinja evaluates each ``'%.2f'|format(x) if x is not none else ''`` with several calls, and over
30,000 cells those calls dominate a page; one call per row here keeps it cheap
(scripts/bench_pages.py measures it). Only numbers and store times go in, each formatted or escaped
here; names and links stay in the templates.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from rumble.ratings.columns import RATINGS, Rating

_NUM = '<td class="num">{}</td>'


def _fmt(fmt: str, value: float | None, missing: str = "") -> str:
    return missing if value is None else fmt % value


def _rated(fmt: str, key: str):
    """A rating cell: ``fmt`` of the value, marked ``?`` while provisional."""
    return lambda row, mark: "" if row[key] is None else (fmt % row[key]) + mark


def _deviation(fmt: str, key: str, deviation: str):
    """A rating with its 2RD interval, marked ``?`` while provisional."""
    return lambda row, mark: "" if row[key] is None else f"{fmt % row[key]} ± {fmt % (2 * row[deviation])}{mark}"


def rating_cell(rating: Rating, values: dict, mark: str) -> Markup:
    """A rating's cell on the bot's page: its value (± 2RD, and its volatility, where it has them)."""
    value = values[rating.name]
    if value is None:
        return Markup("")
    text = rating.format % value
    if rating.deviation:
        text += " ± " + rating.format % (2 * values[rating.deviation])
    text += mark
    if rating.volatility:
        text += f" <small>(volatility {values[rating.volatility]:.4f})</small>"
    return Markup(text)


# How each rankings column (page_data.COLUMN_TITLES) is written; a column not listed here is written by
# ``_plain`` (two decimals for a number), so a new column shows even before it gets a format.
RANKING_FORMATS = {
    "aps_ci": lambda row, mark: _fmt("±%.2f", row["aps_ci"], "n/a"),
    "pl": lambda row, mark: _fmt("%d", row["pl"]),
    **{
        r.name: _deviation(r.format, r.name, r.deviation) if r.deviation else _rated(r.format, r.name)
        for r in RATINGS  # rumble.ratings.columns
    },
    "pairings": lambda row, mark: _fmt("%d", row["pairings"]),
    "battles": lambda row, mark: _fmt("%d", row["battles"]),
}


def _plain(value) -> str:
    if value is None:
        return ""
    return f"{value:.2f}" if isinstance(value, float) else str(escape(value))


def ranking_cells(row: dict, keys, batch_keys) -> Markup:
    """The cells of a rankings row after the competitor's name: one per column of ``keys`` (the
    page's COLUMN_TITLES; ``last_battle`` as text), then the batch ranks with their scores."""
    mark = "?" if row["provisional"] else ""
    html = ""
    for key in keys:
        if key == "last_battle":
            html += f"<td>{escape(row['last_battle'] or '')}</td>"
        else:
            write = RANKING_FORMATS.get(key)
            html += _NUM.format(write(row, mark) if write else _plain(row.get(key)))
    for key in batch_keys:
        rank, score = row[f"{key}_rank"], row[f"{key}_score"]
        small = "" if score is None else f" <small>({score:.1f})</small>"
        html += _NUM.format(_fmt("%d", rank) + small)
    return Markup(html)


def pairing_cells(row: dict) -> Markup:
    """The cells of a bot-details pairing row after the opponent's name (bots.PAIRING_TITLES' order)."""
    cells = [
        _fmt("%.2f", row["aps"]),
        _fmt("±%.2f", row["aps_ci"], "n/a"),
        _fmt("%.2f", row["survival"]),
        _fmt("%d", row["battles"]),
    ]
    html = "".join(_NUM.format(cell) for cell in cells) + f"<td>{escape(row['last_battle'] or '')}</td>"
    html += "".join(_NUM.format(_fmt("%.2f", row[key])) for key in ("expected", "pbi", "knnpbi", "npp", "opponent_aps"))
    return Markup(html)
