"""The bot search's API, /api/v1/rumbles/<game>/search?prefix=P: the bots whose name (or whose name
without its package) starts with P, active ones first, with the link to each one's page; and the
API reference page that documents it."""

from __future__ import annotations

import pytest
from conftest import maintainer_token

from rumble.web.search import matches


@pytest.fixture
def db(demo_db):
    return demo_db


def _search(client, status=200, **args):
    response = client.get("/api/v1/rumbles/roborumble/search", query_string=args)
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json" and response.headers["X-Content-Type-Options"] == "nosniff"
    return response.json


@pytest.mark.parametrize(
    ("prefix", "found"),
    [
        ("demo.Aurora 2.1", True),
        ("demo.au", True),  # case ignored
        ("Aurora", True),  # without the package
        ("aurora 2", True),
        ("aurora_2", True),  # _ for the space, as in RatingsFile
        ("demo.Aurora_2.1", True),
        ("urora", False),  # the start only
        ("2.1", False),
        ("demo.Aurora 2.10", False),
    ],
)
def test_a_prefix_matches_the_start_of_the_name_with_or_without_its_package(prefix, found):
    assert matches("demo.Aurora 2.1", prefix) is found


def test_the_search_finds_bots_by_the_start_of_their_name(db, client):
    data = _search(client, prefix="demo.")
    names = [item["name"] for item in data["items"]]
    assert data["game"] == "roborumble" and data["prefix"] == "demo." and data["total"] == 11 == len(names)
    assert names == sorted(names) and all(n.startswith("demo.") for n in names)
    assert data["items"][0] == {
        "name": "demo.Aurora 2.1",
        "active": True,
        "url": "/BotDetails?game=roborumble&name=demo.Aurora+2.1",
    }
    assert client.get(data["items"][0]["url"]).status_code == 200
    found = [item["name"] for item in _search(client, prefix="  TRACK ")["items"]]  # trimmed, any case
    assert found == ["sample.Tracker 1.0", "sample.TrackFire 1.0"]  # by name, case ignored
    assert _search(client, prefix="nosuch") == {"game": "roborumble", "prefix": "nosuch", "total": 0, "items": []}


def test_the_limit_cuts_the_list_not_the_total(db, client):
    data = _search(client, prefix="s", limit="3")
    assert data["total"] == 9 and [i["name"] for i in data["items"]] == [
        "sample.Corners 1.0",
        "sample.Crazy 1.0",
        "sample.Fire 1.0",
    ]


def test_retired_bots_are_found_after_the_active_ones(app, db, client):
    retired = client.post(
        "/admin/retire",
        json={"game": "roborumble", "name": "demo.Aurora 2.1"},
        headers={"Authorization": f"Bearer {maintainer_token(app)}"},
    )
    assert retired.json["changed"] is True
    items = _search(client, prefix="demo.")["items"]
    assert items[-1] == {
        "name": "demo.Aurora 2.1",
        "active": False,
        "url": "/BotDetails?game=roborumble&name=demo.Aurora+2.1",
    }
    assert all(item["active"] for item in items[:-1])


@pytest.mark.parametrize(
    ("args", "status", "error"),
    [
        ({}, 400, "Give the start of a bot's name"),
        ({"prefix": "  "}, 400, "Give the start of a bot's name"),
        ({"prefix": "demo", "limit": "0"}, 400, "limit must be a whole number from 1 to 100, not '0'."),
        ({"prefix": "demo", "limit": "²"}, 400, "limit must be a whole number from 1 to 100"),
    ],
)
def test_a_bad_search_is_a_400_in_plain_words(db, client, args, status, error):
    assert error in _search(client, status, **args)["error"]


def test_an_unknown_rumble_is_a_404_in_json(client):
    response = client.get("/api/v1/rumbles/nosuch/search?prefix=a")
    assert response.status_code == 404 and response.json == {"error": "There is no rumble called 'nosuch'."}


def test_the_reference_page_documents_the_search(client):
    page = client.get("/api/v1/").get_data(as_text=True)
    assert "<code>/api/v1/rumbles/&lt;game&gt;/search</code>" in page and "<code>prefix</code>" in page
