"""The pages in a real headless Chromium against a real gunicorn server (``rumble serve``) on the
demo rumble: every page loads with no console error and every image (the plots) loads, sorting by a
column title reorders the table, and a bot whose name is a ``<script>`` element shows as text; the
bot search suggests names as one types and finds them, the column control shows every column and
back while the sort stays in the URL, a phone's width never scrolls the page sideways (the tables
scroll in their box, the name column stays), and the system's dark mode darkens the pages.

One server and one browser serve the whole module: starting Chromium costs about a second.
"""

from __future__ import annotations

import re
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
SUGGEST_WAIT_S = 10  # the suggestions' answer, after the field's 150 ms pause
OWN_SCRIPT = "/static/rumble.js"
PHONE, DESK = 390, 1400  # CSS pixels wide


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
        f"/Rankings?game=roborumble&prefix={_q(EVIL[:20])}",
        f"/BotDetails?game=roborumble&name={_q(EVIL)}",
        f"/BotCompare?game=roborumble&bota={_q(EVIL)}&botb={_q(BOT)}",
    ):
        browser.open(site.url + path)
        assert browser.driver.execute_script("return window.rumbleXss === undefined;"), path
        assert _scripts(browser) == [OWN_SCRIPT], path  # the site's own file, nothing inline
        assert EVIL in browser.driver.find_element("tag name", "body").text, path
    browser.open(site.url + "/Rankings?game=roborumble")  # typed into the search: a suggestion, as text
    _type_search(browser, "<scr")
    assert _suggested(browser, "<scr") == [EVIL]
    assert browser.driver.execute_script("return window.rumbleXss === undefined;")


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


def _scripts(browser) -> list[str]:
    """Each script element of the page: its source's path, or its text if inline."""
    return browser.driver.execute_script(
        "return Array.from(document.scripts).map(s => s.src ? new URL(s.src).pathname : s.text);"
    )


def _type_search(browser, text: str) -> None:
    field = browser.driver.find_element("css selector", "form.search input[name=prefix]")
    field.clear()
    field.send_keys(text)


def _suggested(browser, prefix: str) -> list[str]:
    """The names the search field suggests for ``prefix``, once they have come."""
    from selenium.webdriver.support.ui import WebDriverWait

    script = "const l = document.querySelector('form.search datalist'); return l && l.dataset.prefix;"
    WebDriverWait(browser.driver, SUGGEST_WAIT_S).until(lambda driver: driver.execute_script(script) == prefix)
    return browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('form.search datalist option')).map(o => o.value);"
    )


def _query(browser) -> dict[str, list[str]]:
    return parse_qs(urlsplit(browser.driver.current_url).query)


def _titles(browser) -> list[str]:
    return [th.text for th in browser.driver.find_elements("css selector", "table.rankings thead th")]


def test_searching_for_a_bot_and_toggling_the_columns(site, browser):
    """Type the start of a name: the field suggests the bots; Enter shows them in the rankings with
    their ranks; all columns, a sort and back keep the search and the order in the URL."""
    from selenium.webdriver.common.keys import Keys

    rankings = site.rankings("roborumble")
    demo = sorted((n for n in rankings if n.startswith("demo.")), key=lambda n: rankings[n]["rank"])
    browser.open(site.url + "/RumbleStats")  # the search is on every page
    _type_search(browser, "demo.")
    assert _suggested(browser, "demo.") == sorted(demo)
    browser.driver.find_element("css selector", "form.search input[name=prefix]").send_keys(Keys.ENTER)
    browser.driver.find_element("css selector", "table.rankings")  # the rankings page has loaded
    assert _query(browser) == {"game": ["roborumble"], "prefix": ["demo."]}
    names = _column(browser, 2)
    assert names == demo and [int(r.split()[0]) for r in _column(browser, 1)] == [rankings[n]["rank"] for n in demo]
    main = _titles(browser)
    assert main[:4] == ["Rank", "Competitor", "APS ▼", "PWIN"] and "LOS to next" not in main

    browser.driver.find_element("partial link text", "columns").click()  # "All 23 columns"
    assert _query(browser) == {"game": ["roborumble"], "prefix": ["demo."], "columns": ["all"]}
    wide = _titles(browser)
    assert len(wide) > len(main) + 10 and {"LOS to next", "Survival", "Schulze"} <= set(wide)
    browser.driver.find_element("link text", "Survival").click()  # sorted on the server, columns kept
    assert _query(browser) == {"game": ["roborumble"], "prefix": ["demo."], "columns": ["all"], "order": ["-survival"]}
    survival = [float(text) for text in _column(browser, wide.index("Survival") + 1)]
    assert len(survival) == len(demo) and survival == sorted(survival, reverse=True)

    browser.driver.find_element("link text", "Main columns only").click()
    assert _query(browser) == {"game": ["roborumble"], "prefix": ["demo."], "order": ["-survival"]}
    assert _titles(browser) == [*main[:2], "APS", main[3], "Survival ▼", *main[4:]]  # the sorted one stays
    browser.driver.find_element("link text", "Every bot").click()
    assert _query(browser) == {"game": ["roborumble"], "order": ["-survival"]} and len(_column(browser, 2)) == DEMO_BOTS

    _type_search(browser, "aurora")  # a suggestion picked: straight to its page
    assert _suggested(browser, "aurora") == [BOT]
    field = browser.driver.find_element("css selector", "form.search input[name=prefix]")
    field.clear()
    field.send_keys(BOT, Keys.ENTER)
    browser.driver.find_element("css selector", "table.pairings")
    assert urlsplit(browser.driver.current_url).path == "/BotDetails" and _query(browser)["name"] == [BOT]
    assert browser.errors() == []


def test_the_compare_form_suggests_opponents(site, browser):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser.open(site.url + f"/BotDetails?game=roborumble&name={_q(BOT)}")
    field = browser.driver.find_element("css selector", "form.compare input[name=botb]")
    field.send_keys("sample.W")
    script = "const l = document.querySelector('form.compare datalist'); return l && l.dataset.prefix;"
    WebDriverWait(browser.driver, SUGGEST_WAIT_S).until(lambda driver: driver.execute_script(script) == "sample.W")
    options = browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('form.compare datalist option')).map(o => o.value);"
    )
    assert options == [OTHER]
    field.send_keys(Keys.BACKSPACE * len("sample.W"), OTHER, Keys.ENTER)
    browser.driver.find_element("css selector", "table.compare")
    assert _query(browser) == {"game": ["roborumble"], "bota": [BOT], "botb": [OTHER]}
    assert browser.errors() == []


def _emulate(browser, width: int, dark: bool = False) -> None:
    """A window ``width`` CSS pixels wide (a phone's, touch and all, below 500) and the system's colour scheme."""
    browser.driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500},
    )
    browser.driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]},
    )


@pytest.fixture
def phone(browser):
    _emulate(browser, PHONE)
    yield browser
    browser.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


@pytest.mark.parametrize("path", [*PAGES, "/Rankings?game=roborumble&columns=all"])
def test_on_a_phone_no_page_scrolls_sideways(site, phone, path):
    phone.open(site.url + path)
    wide = phone.driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth,"
        " Array.from(document.querySelectorAll('.scroll')).filter(b => b.scrollWidth > b.clientWidth).length];"
    )
    assert wide[1] == PHONE and wide[0] <= PHONE, (path, wide)
    if path.startswith("/Rankings") or path.startswith("/BotDetails"):
        assert wide[2] >= 1, path  # the wide table scrolls in its box instead


def test_on_a_phone_the_name_column_stays_while_the_table_scrolls(site, phone):
    phone.open(site.url + "/Rankings?game=roborumble&columns=all")
    where = phone.driver.execute_script(
        "const box = document.querySelector('.scroll'), name = box.querySelector('tbody tr td:nth-child(2)');"
        "const before = name.getBoundingClientRect().left - box.getBoundingClientRect().left;"
        "box.scrollLeft = 600;"
        "return [before, name.getBoundingClientRect().left - box.getBoundingClientRect().left, box.scrollLeft];"
    )
    assert where[2] == 600 and where[0] > 0 and abs(where[1]) < 1, where  # pinned to the box's left edge


def _colours(browser) -> tuple[str, str]:
    return tuple(
        browser.driver.execute_script("const s = getComputedStyle(document.body); return [s.backgroundColor, s.color];")
    )


def _lightness(rgb: str) -> float:
    return sum(int(v) for v in re.findall(r"\d+", rgb)[:3]) / 3


def test_the_pages_follow_the_systems_dark_mode(site, browser):
    try:
        for dark in (False, True):
            _emulate(browser, DESK, dark)
            browser.open(site.url + "/Rankings?game=roborumble")
            background, text = _colours(browser)
            head = browser.driver.execute_script(
                "return getComputedStyle(document.querySelector('table.rankings th')).backgroundColor;"
            )
            if dark:
                assert _lightness(background) < 60 and _lightness(text) > 180 and _lightness(head) < 80
            else:
                assert _lightness(background) > 240 and _lightness(text) < 60 and _lightness(head) > 200
    finally:
        browser.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
