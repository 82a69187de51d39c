"""The pages in a real headless Chromium against a real gunicorn server (``rumble serve``) on the
demo rumble: every page loads with no console error and every image (the plots) loads, sorting by a
column title reorders the table, and a bot whose name is a ``<script>`` element shows as text.

One server and one browser serve the whole module: starting Chromium costs about a second.
"""

from __future__ import annotations

import sqlite3
import time
from urllib.parse import parse_qs, quote_plus, urlsplit

import pytest
from click.testing import CliRunner

from rumble.cli import cli

from .browser_support import Browser, require_chromium
from .e2e_support import live_server

pytestmark = pytest.mark.e2e

EVIL = "<script>window.rumbleXss = 1</script> 1.0"  # a bot renamed in the database: no upload may carry it
BOT, OTHER = "demo.Aurora 2.1", "sample.Walls 0.9b"
DEMO_BOTS = 20
READY_WAIT_S = 30


def _q(value: str) -> str:
    return quote_plus(value)


PAGES = [
    "/",
    "/Rankings?game=roborumble",
    "/Rankings?game=roborumble&order=-battles&limit=7&page=2",
    "/AlternativeRankings?game=roborumble",
    f"/BotDetails?game=roborumble&name={_q(BOT)}",
    f"/BotDetails?game=roborumble&name={_q(EVIL)}",
    f"/Pairing?game=roborumble&bot={_q(BOT)}&vs={_q(OTHER)}",
    f"/BotCompare?game=roborumble&bota={_q(BOT)}&botb={_q(OTHER)}",
    "/RumbleStats",
    "/RumbleStats?game=roborumble",
    "/ScoreExplanation",
    "/api/v1/",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A server on the demo rumble (250 battles, one bot renamed to EVIL), after its first batch run."""
    require_chromium()
    directory = tmp_path_factory.mktemp("browser")
    demo = CliRunner().invoke(cli, ["demo", "--db", str(directory / "rumble.db"), "--battles", "250"])
    assert demo.exit_code == 0, demo.output
    with sqlite3.connect(directory / "rumble.db") as db:
        db.execute("UPDATE bots SET full_name = ? WHERE full_name = 'demo.Kestrel 0.7'", (EVIL,))
    db.close()
    with live_server(directory) as server:
        deadline = time.monotonic() + READY_WAIT_S  # the scheduled job: the daily snapshot, then a batch run
        while not server.get("/AlternativeRankings", game="roborumble", api="1").json()["rows"]:
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.2)
        yield server


@pytest.fixture(scope="module")
def browser(site):
    browser = Browser()
    yield browser
    browser.quit()


@pytest.mark.parametrize("path", PAGES)
def test_every_page_loads_without_console_errors_and_with_its_plots(site, browser, path):
    browser.console()  # drop what earlier pages left
    browser.open(site.url + path)
    heading = browser.driver.find_element("tag name", "h1").text
    assert heading, path
    assert browser.errors() == [], path
    assert browser.broken_images() == [], path
    assert "Internal Server Error" not in browser.driver.page_source


def _column(browser, index: int) -> list[str]:
    return [
        cell.text
        for cell in browser.driver.find_elements("css selector", f"table.rankings tbody tr td:nth-child({index})")
    ]


def test_clicking_a_column_title_sorts_the_rankings_by_it(site, browser):
    browser.open(site.url + "/Rankings?game=roborumble")
    titles = [th.text for th in browser.driver.find_elements("css selector", "table.rankings thead th")]
    battles = titles.index("Battles") + 1
    browser.driver.find_element("link text", "Battles").click()
    assert parse_qs(urlsplit(browser.driver.current_url).query)["order"] == ["-battles"]
    counts = [int(text) for text in _column(browser, battles)]
    assert len(counts) == DEMO_BOTS and counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    browser.driver.find_element("partial link text", "Battles").click()  # again: ascending
    assert [int(text) for text in _column(browser, battles)] == sorted(counts)
    browser.driver.find_element("link text", "Competitor").click()  # a new column sorts descending first
    assert parse_qs(urlsplit(browser.driver.current_url).query)["order"] == ["-name"]
    names = _column(browser, titles.index("Competitor") + 1)
    assert len(names) == DEMO_BOTS and names == sorted(names, reverse=True)
    assert browser.errors() == []


def test_the_plots_render_as_images_with_one_dot_per_opponent(site, browser):
    browser.open(site.url + f"/BotDetails?game=roborumble&name={_q(BOT)}")
    sizes = browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('figure.plot img')).map(i => [i.naturalWidth, i.naturalHeight]);"
    )
    assert len(sizes) == 2 and all(w >= 300 and h >= 100 for w, h in sizes), sizes
    # the scatter plot on its own: matplotlib draws each dot as a <use> of one marker path
    browser.open(site.url + f"/BotDetails/scores.svg?game=roborumble&name={_q(BOT)}")
    dots = browser.driver.execute_script("return document.querySelectorAll('g[id^=\"PathCollection\"] use').length;")
    assert dots == DEMO_BOTS - 1  # the demo's every pair met: one pairing per other bot
    browser.open(site.url + "/RumbleStats?game=roborumble")
    assert browser.broken_images() == [] and browser.errors() == []


def test_a_bot_named_with_a_script_element_shows_as_text(site, browser):
    for path in (
        "/Rankings?game=roborumble",
        f"/BotDetails?game=roborumble&name={_q(EVIL)}",
        f"/BotCompare?game=roborumble&bota={_q(EVIL)}&botb={_q(BOT)}",
    ):
        browser.open(site.url + path)
        assert browser.driver.execute_script("return window.rumbleXss === undefined;"), path
        assert browser.driver.find_elements("tag name", "script") == [], path
        assert EVIL in browser.driver.find_element("tag name", "body").text, path


def test_the_exports_stream_whole_through_gunicorn(site, tmp_path):
    """Not the browser: the bulk exports as a script downloads them from the real server."""
    import csv
    import io

    battles = list(csv.DictReader(io.StringIO(site.get("/api/v1/rumbles/roborumble/export/battles.csv").text)))
    assert len(battles) == 250 and {row["uploader"] for row in battles} == {"demo"}
    response = site.get("/api/v1/rumbles/roborumble/export/rumble.sqlite")
    assert response.status_code == 200
    (tmp_path / "copy.sqlite").write_bytes(response.content)
    copy = sqlite3.connect(tmp_path / "copy.sqlite")
    try:
        assert copy.execute("SELECT count(*) FROM battles").fetchone() == (250,)
        assert copy.execute("SELECT count(*) FROM bots WHERE full_name = ?", (EVIL,)).fetchone() == (1,)
    finally:
        copy.close()
