"""RemoveOldParticipant (issue 11, item 2): POST only; it counts only from an address that uploaded
accepted battles to the rumble within REMOVAL_TRUST_DAYS; /RumbleStats shows each retirement and
who asked; /admin restores one in a single step."""

from __future__ import annotations

import html
import re

import pytest
from conftest import battle, maintainer_token, post_upload

from rumble import store
from rumble.protocol.replies import Kind
from rumble.store import removals

BROWSER = {"Accept": "text/html,application/xhtml+xml"}
TRUSTED, STRANGER = "10.1.1.1", "10.66.6.6"
QUERY = "version=1&game=roborumble&name=sample.Walls_0.9b&dummy=NA"


def _upload_from(client, addr: str, **fields):
    outcome, _ = post_upload(client, battle(**fields), environ_base={"REMOTE_ADDR": addr})
    return outcome


def _remove(client, addr: str, name: str = "sample.Walls_0.9b", game: str = "roborumble") -> str:
    body = f"version=1&game={game}&name={name}&dummy=NA\n".encode()
    return client.post("/RemoveOldParticipant", data=body, environ_base={"REMOTE_ADDR": addr}).get_data(as_text=True)


def _ratings_keys(client) -> set[str]:
    text = client.get("/RatingsFile?version=1&game=roborumble").get_data(as_text=True)
    return {line.split("=")[0] for line in text.splitlines()}


def _logged(app) -> list[tuple]:
    db = store.connect(app.config["RUMBLE"]["DB"])
    rows = [(r["remote_addr"], r["name"], r["outcome"]) for r in reversed(removals.recent(db))]
    db.close()
    return rows


@pytest.fixture
def ladder(client):
    """Walls and Corners in roborumble, uploaded from TRUSTED by Jane Doe."""
    assert _upload_from(client, TRUSTED, first="sample.Walls 0.9b", second="sample.Corners 1.0").kind is Kind.ACCEPTED


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_get_and_head_are_refused_with_405_and_the_bot_stays(app, client, ladder, method):
    response = client.open(f"/RemoveOldParticipant?{QUERY}", method=method, environ_base={"REMOTE_ADDR": TRUSTED})
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.mimetype == "text/plain"
    if method == "GET":
        assert response.get_data(as_text=True) == (
            "RemoveOldParticipant retires a bot only when POSTed, as the RoboRumble client sends it; a GET or HEAD changes nothing.\n"
        )
    assert "sample.Walls_0.9b" in _ratings_keys(client)
    assert _logged(app) == []


def test_a_post_from_an_address_that_never_uploaded_is_refused_logged_and_changes_nothing(app, client, ladder):
    assert _remove(client, STRANGER) == (
        "OK. ERROR: your address uploaded no accepted battles to roborumble in the last 7 days; "
        "only an address that uploads to a rumble may retire its bots\n"
    )
    assert "sample.Walls_0.9b" in _ratings_keys(client)
    assert _logged(app) == [(STRANGER, "sample.Walls_0.9b", "not trusted")]
    assert client.get("/RumbleStats?api=1").json["retirements"] == []


def test_uploads_to_another_rumble_or_held_for_review_do_not_make_an_address_trusted(app, client, ladder):
    assert _upload_from(client, STRANGER, game="minirumble").kind is Kind.ACCEPTED
    held = _upload_from(client, STRANGER, first="sample.Walls 0.9b", second="sample.Corners 1.0", scores=(12000, 3000))
    assert held.kind is Kind.HELD  # a score above 10,000 in 35 rounds: held for review, not accepted
    assert _remove(client, STRANGER).startswith("OK. ERROR: your address uploaded no accepted battles to roborumble")
    assert "sample.Walls_0.9b" in _ratings_keys(client)


def test_trust_ends_after_removal_trust_days(app, client, clock, ladder):
    app.config["RUMBLE"]["REMOVAL_TRUST_DAYS"] = 2
    clock.advance(days=2, seconds=1)  # the address's one upload is now older than two days
    assert _remove(client, TRUSTED) == (
        "OK. ERROR: your address uploaded no accepted battles to roborumble in the last 2 days; "
        "only an address that uploads to a rumble may retire its bots\n"
    )
    assert "sample.Walls_0.9b" in _ratings_keys(client)


def test_a_post_from_an_address_that_uploads_to_the_rumble_retires_the_bot(app, client, clock, ladder):
    app.config["RUMBLE"]["REMOVAL_TRUST_DAYS"] = 2
    clock.advance(days=2, seconds=-1)  # still within two days of its upload
    assert _remove(client, TRUSTED) == "OK. sample.Walls 0.9b retired from roborumble\n"
    assert "sample.Walls_0.9b" not in _ratings_keys(client)
    assert _logged(app) == [(TRUSTED, "sample.Walls_0.9b", "retired")]


def test_rumble_stats_lists_the_retirement_with_who_asked_and_a_masked_address(app, client, clock, ladder):
    before = clock.now().strftime("%Y-%m-%d %H:%M:%S")
    assert _remove(client, TRUSTED) == "OK. sample.Walls 0.9b retired from roborumble\n"
    after = clock.now().strftime("%Y-%m-%d %H:%M:%S")
    (row,) = client.get("/RumbleStats?api=1").json["retirements"]
    assert before <= row["at"] <= after
    assert {k: v for k, v in row.items() if k != "at"} == {
        "game": "roborumble",
        "name": "sample.Walls 0.9b",
        "source": "RemoveOldParticipant (uploader Jane Doe) from 10.1.1.x",
        "retired": True,
    }
    page = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert "<td>RemoveOldParticipant (uploader Jane Doe) from 10.1.1.x</td><td>retired</td>" in page
    assert TRUSTED not in page  # the whole address is for maintainers only
    assert client.get("/RumbleStats?game=minirumble&api=1").json["retirements"] == []


def test_admin_restores_a_retirement_with_the_button_next_to_it(app, client, ladder):
    assert _remove(client, TRUSTED) == "OK. sample.Walls 0.9b retired from roborumble\n"
    page = client.get("/admin/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    client.post("/admin/login", data={"token": maintainer_token(app), "csrf_token": csrf, "next": "/admin"})
    page = client.get("/admin", headers=BROWSER).get_data(as_text=True)
    section = page.split("<h2>Recent retirements</h2>")[1].split("<h2>")[0]
    assert "<td>RemoveOldParticipant (uploader Jane Doe) from 10.1.1.1</td>" in section  # whole, for maintainers
    (form,) = re.findall(r'<form method="post" action="([^"]+)".*?</form>', section, re.S)
    assert form == "/admin/restore"
    fields = {
        name: html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', section)
    }
    assert {k: v for k, v in fields.items() if k != "csrf_token"} == {"game": "roborumble", "name": "sample.Walls 0.9b"}
    assert client.post(form, data=fields, headers=BROWSER).status_code == 303  # the one step
    assert "sample.Walls_0.9b" in _ratings_keys(client)
    section = (
        client.get("/admin", headers=BROWSER)
        .get_data(as_text=True)
        .split("<h2>Recent retirements</h2>")[1]
        .split("<h2>")[0]
    )
    assert "<td>back</td>" in section and "/admin/restore" not in section


@pytest.mark.parametrize(
    "source, shown",
    [
        (
            "RemoveOldParticipant (uploader Jane Doe) from 203.0.113.77",
            "RemoveOldParticipant (uploader Jane Doe) from 203.0.113.x",
        ),
        (
            "RemoveOldParticipant (uploader Jane Doe) from 2001:db8:1:2::5",
            "RemoveOldParticipant (uploader Jane Doe) from 2001:db8:1::/48",
        ),
        (
            "RemoveOldParticipant from 127.0.0.1",
            "RemoveOldParticipant from 127.0.0.x",
        ),  # as sources read before migration 0013
        (
            "RemoveOldParticipant (uploader x from 10.0.0.1) from 192.0.2.9",
            "RemoveOldParticipant (uploader x from 10.0.0.1) from 192.0.2.x",
        ),
        ("admin retire by alice", "admin retire by alice"),
    ],
)
def test_the_public_source_shows_the_network_not_the_address(source, shown):
    from rumble.web.page_data import public_source

    assert public_source(source) == shown
