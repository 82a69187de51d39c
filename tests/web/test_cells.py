"""The rankings' number cells written in Python (rumble.web.cells): each column of COLUMN_TITLES gets
its cell (in the table with every column, ``columns=all``), including one added without a format."""

from __future__ import annotations

import re

from conftest import battle, forget_pages

from rumble.web import page_data


def _with_copy(function):
    def rows(*args, **kwargs):
        return [{**row, "aps_copy": row["aps"]} for row in function(*args, **kwargs)]

    return rows


def _cells(page: str, name: str) -> list[str]:
    row = re.search(rf">{re.escape(name)}</a></td>\s*(.*?)</tr>", page, re.S).group(1)
    return re.findall(r"<td[^>]*>([^<]*)", row)


def test_every_column_gets_its_cell_and_a_new_one_two_decimals(monkeypatch, client, upload):
    upload(battle("a.A 1.0", "b.B 1.0", scores=(6000, 4000), firsts=(21, 14)))
    _, *cells = _cells(client.get("/Rankings?game=roborumble&columns=all").get_data(as_text=True), "a.A 1.0")  # LOS
    assert len(cells) == len(page_data.COLUMN_TITLES)  # no batch run yet: no batch columns (test_rankings_columns.py)
    by_title = dict(zip(page_data.COLUMN_TITLES, cells))
    # one battle: 6000 / 10000 = 60 % of the score, 21 / 35 rounds = 60 % survival, 1 pairing won
    assert (by_title["aps"], by_title["aps_ci"], by_title["survival"], by_title["pl"]) == ("60.00", "n/a", "60.00", "1")
    assert (by_title["pairings"], by_title["battles"]) == ("1", "1") and re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", by_title["last_battle"]
    )
    assert by_title["elo"].endswith("?") and " ± " in by_title["glicko2"]  # one battle: still provisional

    monkeypatch.setitem(page_data.COLUMN_TITLES, "aps_copy", "APS again")
    monkeypatch.setattr(page_data.tables, "ranking_rows", _with_copy(page_data.tables.ranking_rows))
    forget_pages(client.application)  # the code changed, not the database: the page kept would be served
    _, *cells = _cells(client.get("/Rankings?game=roborumble&columns=all").get_data(as_text=True), "a.A 1.0")
    assert cells[len(page_data.COLUMN_TITLES) - 1] == "60.00"
