"""What every page shares and the site around them: the feed advertised on each page, the style sheet
with its dark mode, the one script (suggestions), tables in boxes that scroll on a phone, a table of
contents on /ScoreExplanation, bot names linked wherever they appear, BotCompare's coloured
differences, and robots.txt."""

from __future__ import annotations

import re
from urllib.parse import quote_plus
from urllib.robotparser import RobotFileParser

import pytest

from rumble.schedule import hourly

A, B = "demo.Aurora 2.1", "sample.Walls 0.9b"
GAME_PAGES = [
    "/Rankings?game=roborumble",
    "/Rankings?game=roborumble&columns=all",
    "/AlternativeRankings?game=roborumble",
    f"/BotDetails?game=roborumble&name={quote_plus(A)}",
    f"/Pairing?game=roborumble&bot={quote_plus(A)}&vs={quote_plus(B)}",
    f"/BotCompare?game=roborumble&bota={quote_plus(A)}&botb={quote_plus(B)}",
    "/RumbleStats?game=roborumble",
]
OTHER_PAGES = ["/", "/RumbleStats", "/ScoreExplanation", "/api/v1/", "/admin/login"]


@pytest.fixture
def db(demo_db):
    return demo_db


@pytest.fixture
def ranked(db):
    """The demo rumble after one complete batch run."""
    return hourly.run_rumble(db, "roborumble")


def _html(client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200 and response.mimetype == "text/html", path
    return response.get_data(as_text=True)


@pytest.mark.parametrize("path", GAME_PAGES + OTHER_PAGES)
def test_every_page_advertises_the_feed_and_links_it(ranked, client, path):
    page = _html(client, path)
    feed = "/feed/roborumble" if path in GAME_PAGES else "/feed"  # a rumble's page: that rumble's feed
    assert f'<link rel="alternate" type="application/atom+xml" href="{feed}"' in page
    assert f'<a href="{feed}">Feed</a>' in page
    response = client.get(feed)
    assert response.status_code == 200 and response.mimetype == "application/atom+xml"


@pytest.mark.parametrize("path", GAME_PAGES + OTHER_PAGES)
def test_every_page_has_the_style_sheet_the_search_and_only_its_own_script(ranked, client, path):
    page = _html(client, path)
    assert '<link rel="stylesheet" href="/static/rumble.css">' in page
    assert re.findall(r"<script[^>]*>.*?</script>", page, re.S) == ['<script src="/static/rumble.js" defer></script>']
    game = "roborumble"  # the page's rumble, else the first one's
    assert (
        f'<form class="search" action="/Rankings" role="search"><input type="hidden" name="game" value="{game}">'
        in page
    )


def test_the_style_sheet_follows_the_systems_dark_mode(client):
    with client.get("/static/rumble.css") as response:  # a file: closed after
        css = response.get_data(as_text=True)
    assert "color-scheme: light dark" in css
    light = css[: css.index("@media (prefers-color-scheme: dark)")]
    dark = css[css.index("@media (prefers-color-scheme: dark)") :]
    dark = dark[: dark.index("\n}\n")]
    defined = set(re.findall(r"(--[a-z]+):", light))
    assert {"--bg", "--fg", "--link", "--head", "--line", "--up", "--down"} <= defined
    assert set(re.findall(r"(--[a-z]+):", dark)) == defined  # every colour has its dark twin
    # the rules name the variables, not colours of their own (the dark block would miss them)
    rules = css[css.index("\n}\n") :]
    assert re.findall(r"#[0-9a-fA-F]{3,6}\b", rules) == []
    assert "figure.plot img { filter: invert" in dark  # the plots' white turns dark too


def test_the_script_is_served_and_uses_the_search_api(client):
    with client.get("/static/rumble.js") as response:
        assert response.status_code == 200 and "javascript" in response.mimetype
        text = response.get_data(as_text=True)
    assert "api/v1/rumbles/" in text and "/search" in text and "innerHTML" not in text  # names go in as text


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/Rankings?game=roborumble",
        "/AlternativeRankings?game=roborumble",
        f"/BotDetails?game=roborumble&name={quote_plus(A)}",
        f"/Pairing?game=roborumble&bot={quote_plus(A)}&vs={quote_plus(B)}",
        f"/BotCompare?game=roborumble&bota={quote_plus(A)}&botb={quote_plus(B)}",
        "/RumbleStats?game=roborumble",
    ],
)
def test_the_tables_scroll_in_their_box_not_the_page(ranked, client, path):
    """A phone shows the page's width: a wide table scrolls inside its own box (the browser test
    measures it). The two-column summaries fit as they are."""
    page = _html(client, path)
    tables = re.findall(r"(.{0,20})<table( class=\"[^\"]*\")?>", page)
    assert tables
    for before, attributes in tables:
        assert before.endswith('<div class="scroll">') or "summary" in attributes, (path, attributes)


def test_numeric_columns_have_their_titles_over_their_numbers(client, db):
    """Right-aligned as their numbers: marked num, or by column in a table of numbers (the style sheet)."""
    page = _html(client, "/RumbleStats?game=roborumble")
    assert '<table class="counts">\n<thead><tr><th>Rumble</th><th>Participants</th><th>Battles</th>' in page
    assert '<table class="daily">' in page and '<table class="standing">' in page
    with client.get("/static/rumble.css") as response:
        css = response.get_data(as_text=True)
    assert "table.counts :is(th, td):is(:nth-child(2), :nth-child(3))" in css
    rankings = _html(client, "/Rankings?game=roborumble")
    assert '<th class="num sorted"><a href="/Rankings?game=roborumble&amp;order=aps">APS ▼</a></th>' in rankings
    assert '<th><a href="/Rankings?game=roborumble&amp;order=-name">Competitor</a></th>' in rankings


def test_the_score_explanation_has_a_table_of_contents(client):
    page = _html(client, "/ScoreExplanation")
    toc = page[page.index('<nav class="toc"') : page.index("</nav>", page.index('<nav class="toc"'))]
    targets = re.findall(r'<a href="#([\w-]+)">', toc)
    ids = set(re.findall(r' id="([\w-]+)"', page))
    assert len(targets) == 11 and set(targets) <= ids
    sections = re.findall(r'<h2 id="([\w-]+)">', page)
    assert sections == [t for t in targets if t != "scores"]  # every section, in the page's order
    assert len(re.findall(r"<h2[ >]", page)) == len(sections)  # none without an id to link


def test_bot_names_are_links_on_the_alternative_rankings(ranked, client):
    page = _html(client, "/AlternativeRankings?game=roborumble")
    names = re.findall(r"<tr[^>]*>\s*<td>(?:\d+\. )?(.*?)</td>", page)  # each row's first cell
    assert len(names) == 40  # 20 in the ranks, 20 in the LOS matrix
    for cell in names:
        name = re.sub(r"<[^>]+>", "", cell)
        assert cell == f'<a href="/BotDetails?game=roborumble&amp;name={quote_plus(name)}">{name}</a>', cell


def test_bot_compare_colours_and_signs_the_differences(db, client):
    data = client.get(f"/BotCompare?game=roborumble&bota={quote_plus(A)}&botb={quote_plus(B)}&api=1").json
    page = _html(client, f"/BotCompare?game=roborumble&bota={quote_plus(A)}&botb={quote_plus(B)}")
    for row in data["rows"]:
        cells = page[page.index(f">{row['name']}</a></td>") :].split("</tr>")[0]
        for value in (row["diff"], row["diff_survival"]):
            colour = ' class="up"' if value > 0 else ' class="down"' if value < 0 else ""
            assert f"<td{colour}>{value:+.2f}</td>" in cells
    assert '<span class="up">green where A scores more</span>' in page
    mean = data["diff"]
    ahead = "up" if mean["low"] > 0 else "down" if mean["high"] < 0 else ""
    assert f'<p class="verdict {ahead}"><strong>{data["verdict"]}</strong></p>' in page


def test_robots_txt_lets_crawlers_read_the_pages_and_nothing_else(client):
    response = client.get("/robots.txt")
    assert response.status_code == 200 and response.mimetype == "text/plain"
    text = response.get_data(as_text=True)
    robots = RobotFileParser()
    robots.parse(text.splitlines())
    for path in ("/", "/Rankings?game=roborumble", f"/BotDetails?game=roborumble&name={quote_plus(A)}", "/feed"):
        assert robots.can_fetch("AnyBot", path), path
    assert robots.can_fetch("AnyBot", "/Participants?game=roborumble")
    for path in (
        "/admin",
        "/admin/login",
        "/api/v1/rumbles",
        "/UploadedResults",
        "/RatingsFile?game=roborumble",
        "/jars/sample.Corners/1.0.jar",
        "/Participants/enter",
    ):
        assert not robots.can_fetch("AnyBot", path), path
    # the same tables in every order, and the JSON twins (wildcards, RFC 9309; Python's parser has none)
    assert {"Disallow: /*order=", "Disallow: /*api=1", "Disallow: /*columns="} <= set(text.splitlines())
