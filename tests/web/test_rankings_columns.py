"""/Rankings on a phone and on a desk: the main columns by default, every column with ``columns=all``
(kept by the sort links, the pager and the search), the batch columns only once a run has ranked,
the column sorted by always shown, and the search by the start of a bot's name (``prefix``)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import maintainer_token

from rumble.schedule import hourly
from rumble.web.lookup import BATCH_TITLES
from rumble.web.page_data import COLUMN_TITLES
from rumble.web.pages import MAIN_COLUMNS

DEMO_BOTS = 20
WIDE = f"All {3 + len(COLUMN_TITLES) + len(BATCH_TITLES)} columns"  # with rank, LOS to next and the name


@pytest.fixture
def db(demo_db):
    return demo_db


@pytest.fixture
def ranked(db):
    """The demo rumble after one complete batch run."""
    return hourly.run_rumble(db, "roborumble")


def _page(client, **args) -> str:
    response = client.get("/Rankings", query_string={"game": "roborumble", **args})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data(as_text=True)


def _titles(page: str) -> list[str]:
    """The column titles of the rankings table, without the sort arrows."""
    head = page[page.index('<table class="rankings ladder') : page.index("</thead>")]
    return [re.sub(r"<[^>]+>| [▼▲]", "", th) for th in re.findall(r"<th[^>]*>(.*?)</th>", head)]


def _rows(page: str) -> list[list[str]]:
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def _links(page: str, text: str) -> list[dict]:
    """The query of each link whose text is ``text``."""
    return [
        {k: v[0] for k, v in parse_qs(urlsplit(href.replace("&amp;", "&")).query).items()}
        for href in re.findall(rf'<a href="([^"]*)">{re.escape(text)}</a>', page)
    ]


def test_by_default_the_main_columns_only(ranked, client):
    page = _page(client)
    titles = _titles(page)
    assert titles == ["Rank", "Competitor", *(COLUMN_TITLES[k] for k in MAIN_COLUMNS)]
    assert titles[2:4] == ["APS", "PWIN"] and "LOS to next" not in titles
    assert not set(BATCH_TITLES.values()) & set(titles)  # the batch ranks are in the wide table
    rows = _rows(page)
    assert len(rows) == DEMO_BOTS and all(len(row) == len(titles) for row in rows)
    (wide,) = _links(page, WIDE)
    assert wide == {"game": "roborumble", "columns": "all"}


def test_the_control_gives_every_column_and_back(ranked, client):
    page = _page(client, columns="all")
    titles = _titles(page)
    assert titles == [
        "Rank",
        "Competitor",
        "LOS to next",
        *COLUMN_TITLES.values(),
        *BATCH_TITLES.values(),
    ]
    assert all(len(row) == len(titles) for row in _rows(page))
    (main,) = _links(page, "Main columns only")
    assert main == {"game": "roborumble"}


def test_sorting_stays_server_side_and_keeps_the_columns_in_the_url(ranked, client):
    page = _page(client, columns="all", order="-glicko2")
    (battles,) = _links(page, "Battles")
    assert battles == {"game": "roborumble", "columns": "all", "order": "-battles"}
    (main,) = _links(page, "Main columns only")
    assert main == {"game": "roborumble", "order": "-glicko2"}  # the order stays when the columns change
    search = page[page.index('<form class="search"') : page.index("</form>")]  # a search from here keeps both
    assert (
        '<input type="hidden" name="columns" value="all"><input type="hidden" name="order" value="-glicko2">' in search
    )
    narrow = _page(client, order="-battles")
    (wide,) = _links(narrow, WIDE)
    assert wide == {"game": "roborumble", "order": "-battles", "columns": "all"}
    counts = [int(row[_titles(narrow).index("Battles")]) for row in _rows(narrow)]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_a_hidden_column_sorted_by_is_shown(ranked, client):
    page = _page(client, order="-survival")
    assert "Survival ▼" in page and "PL" not in _titles(page)
    page = _page(client, order="-schulze")
    titles = _titles(page)
    assert [t for t in titles if t in BATCH_TITLES.values()] == [BATCH_TITLES["schulze"]] == titles[-1:]
    ranks = [int(row[-1].split()[0]) for row in _rows(page)]
    assert ranks == sorted(ranks)


def test_batch_columns_stay_hidden_until_a_run_has_ranked(db, client):
    titles = _titles(_page(client, columns="all"))
    assert not set(BATCH_TITLES.values()) & set(titles) and "LOS to next" in titles
    assert "get their columns once the server has run them" in _page(client, columns="all")
    hourly.run_rumble(db, "roborumble")
    titles = _titles(_page(client, columns="all"))
    assert [t for t in titles if t in BATCH_TITLES.values()] == list(BATCH_TITLES.values())


def test_the_search_shows_the_bots_whose_name_starts_so_with_their_ranks(ranked, client):
    everyone = {row["name"]: row["rank"] for row in client.get("/Rankings?game=roborumble&api=1").json}
    page = _page(client, prefix="demo.")
    names = [re.sub(r"<[^>]+>", "", row[1]) for row in _rows(page)]
    assert names == sorted((n for n in everyone if n.startswith("demo.")), key=everyone.get)
    assert [int(row[0].split()[0]) for row in _rows(page)] == [everyone[n] for n in names]  # ranks in the whole table
    assert f"{len(names)} of {DEMO_BOTS} active bots have a name starting with “demo.”" in page
    assert 'value="demo."' in page  # the search field says what was searched
    # without the package, any case, and _ for the space as in RatingsFile
    for prefix in ("aurora", "AURORA_2", "demo.Aurora_2.1"):
        assert [re.sub(r"<[^>]+>", "", row[1]) for row in _rows(_page(client, prefix=prefix))] == ["demo.Aurora 2.1"]
    (every,) = _links(_page(client, prefix="aurora", columns="all", order="-pwin"), "Every bot")
    assert every == {"game": "roborumble", "columns": "all", "order": "-pwin"}
    (sort,) = _links(_page(client, prefix="demo."), "APS ▼")
    assert sort == {"game": "roborumble", "prefix": "demo.", "order": "aps"}
    found = client.get("/Rankings?game=roborumble&prefix=demo.&api=1").json  # the JSON twin searches too
    assert [(row["name"], row["rank"]) for row in found] == [(n, everyone[n]) for n in names]


def test_a_search_that_finds_no_active_bot_says_so_and_names_the_retired_ones(app, ranked, client):
    assert "No active bot's name starts with “nosuch”." in _page(client, prefix="nosuch")
    token = maintainer_token(app)
    retired = client.post(
        "/admin/retire",
        json={"game": "roborumble", "name": "demo.Heron 1.0"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert retired.json["changed"] is True
    page = _page(client, prefix="heron")
    assert "No active bot's name starts with “heron”." in page
    assert 'retired:\n<a href="/BotDetails?game=roborumble&amp;name=demo.Heron+1.0">demo.Heron 1.0</a>' in page


def test_the_pager_keeps_the_columns_and_the_search(ranked, client):
    page = _page(client, prefix="demo.", columns="all", limit=4)
    following, _ = _links(page, "next")  # the pager above the table and below
    assert following == {"game": "roborumble", "prefix": "demo.", "columns": "all", "limit": "4", "page": "2"}
    assert "Page 1 of 3 (11 bots, 4 a page)" in page
