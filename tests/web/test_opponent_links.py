"""/BotDetails' pairings table: each opponent's name leads to the opponent's own page, and each row
to the battles of the pairing and to the two bots compared; /AlternativeRankings' names to their
pages. The expected links are written out here with urllib, not with the app's url_for."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from conftest import battle

from rumble.protocol.replies import Kind
from rumble.schedule import hourly

BOT = "alpha.Alpha 1.0"
OPPONENTS = ("beta.Beta 1.0", "gamma.Gamma_x 2.0-b", "delta.Delta 1.0")


class Rows(HTMLParser):
    """The body rows of the first table of ``table_class``: per row, per cell, its links (href, text)."""

    def __init__(self, table_class: str) -> None:
        super().__init__()
        self.table_class, self.depth, self.done = table_class, 0, False
        self.rows: list[list[list[tuple[str, str]]]] = []
        self.in_body, self.href = False, None

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "table" and not self.done and self.table_class in (values.get("class") or "").split():
            self.depth = 1
        elif self.depth and tag == "tbody":
            self.in_body = True
        elif self.depth and self.in_body and tag == "tr":
            self.rows.append([])
        elif self.depth and self.in_body and tag == "td":
            self.rows[-1].append([])
        elif self.depth and self.in_body and tag == "a":
            self.href = values["href"]
            self.rows[-1][-1].append((self.href, ""))

    def handle_data(self, data):
        if self.href is not None:
            href, text = self.rows[-1][-1][-1]
            self.rows[-1][-1][-1] = (href, text + data)

    def handle_endtag(self, tag):
        if tag == "a":
            self.href = None
        elif tag == "table" and self.depth:
            self.depth, self.done, self.in_body = 0, True, False


def rows_of(html: str, table_class: str) -> list[list[list[tuple[str, str]]]]:
    parser = Rows(table_class)
    parser.feed(html)
    return parser.rows


@pytest.fixture
def ladder(upload, clock):
    for k, opponent in enumerate(OPPONENTS):
        assert upload(battle(BOT, opponent, time_ms=clock.now_ms() - k)).kind is Kind.ACCEPTED
    assert upload(battle(OPPONENTS[0], OPPONENTS[1])).kind is Kind.ACCEPTED


def test_each_opponent_links_to_its_page_its_battles_and_the_comparison(ladder, client):
    html = client.get("/BotDetails?" + urlencode({"game": "roborumble", "name": BOT})).get_data(as_text=True)
    rows = rows_of(html, "pairings")
    assert len(rows) == len(OPPONENTS)
    seen = set()
    for cells in rows:
        ((details, name),) = cells[0]
        seen.add(name)
        assert details == "/BotDetails?" + urlencode({"game": "roborumble", "name": name})
        assert cells[-1] == [
            ("/Pairing?" + urlencode({"game": "roborumble", "bot": BOT, "vs": name}), "battles"),
            ("/BotCompare?" + urlencode({"game": "roborumble", "bota": BOT, "botb": name}), "compare"),
        ]
        assert all(cell == [] for cell in cells[1:-1])  # the figures are not links
    assert seen == set(OPPONENTS)


def test_each_link_leads_to_a_page_about_that_opponent(ladder, client):
    html = client.get("/BotDetails?" + urlencode({"game": "roborumble", "name": BOT})).get_data(as_text=True)
    for cells in rows_of(html, "pairings"):
        ((details, name),) = cells[0]
        page = client.get(details)
        assert page.status_code == 200 and f"<h1>{name}</h1>" in page.get_data(as_text=True)
        for href, _ in cells[-1]:
            assert client.get(href).status_code == 200


def test_alternative_rankings_names_link_to_their_pages(ladder, db, client):
    hourly.run_rumble(db, "roborumble")
    html = client.get("/AlternativeRankings?game=roborumble").get_data(as_text=True)
    rows = rows_of(html, "alternative")
    names = set()
    for cells in rows:
        ((details, name),) = cells[0]
        names.add(name)
        assert details == "/BotDetails?" + urlencode({"game": "roborumble", "name": name})
    assert names == {BOT, *OPPONENTS}
