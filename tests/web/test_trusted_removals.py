"""RemoveOldParticipant: POST only; it counts only from an established uploader (vouched for by a
maintainer, or earned by agreement: rumble/rankings/uploader_trust.py) whose address uploaded
accepted battles to the rumble within REMOVAL_TRUST_DAYS; every refusal is decided before any write
lock and only counted; /RumbleStats shows each retirement, who asked and the uploaders' standing;
/admin restores one in a single step."""

from __future__ import annotations

import html
import random
import re

import pytest
from conftest import battle, maintainer_token, post_upload

from rumble import store
from rumble.protocol.replies import Kind
from rumble.schedule import hourly
from rumble.store import removals
from rumble.web import client as client_views
from rumble.web.refusal_counter import refusals_for

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


def _vouch(app, client, uploader: str, network: str, action: str = "vouch") -> dict:
    auth = {"Authorization": f"Bearer {maintainer_token(app, f'm{random.random()}')}"}
    answer = client.post(f"/admin/uploaders/{action}", json={"uploader": uploader, "network": network}, headers=auth)
    assert answer.status_code == 200, answer.json
    return answer.json


def _refused_counts(app) -> dict[str, int]:
    db = store.connect(app.config["RUMBLE"]["DB"])
    refusals_for(app.config["RUMBLE"]["DB"]).flush(db, force=True)
    rows = db.execute("SELECT reason, sum(requests) FROM removal_refusals GROUP BY reason").fetchall()
    db.close()
    return dict(rows)


@pytest.fixture
def ladder(app, client):
    """Walls and Corners in roborumble, uploaded from TRUSTED by Jane Doe, whom a maintainer vouched for."""
    assert _upload_from(client, TRUSTED, first="sample.Walls 0.9b", second="sample.Corners 1.0").kind is Kind.ACCEPTED
    assert _vouch(app, client, "Jane Doe", "10.1.1.0/24") == {
        "action": "vouch",
        "party": "Jane Doe@10.1.1.0/24",
        "standing": "vouched",
    }


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


def test_a_post_from_an_address_that_never_uploaded_is_refused_counted_and_changes_nothing(app, client, ladder):
    assert _remove(client, STRANGER) == (
        "OK. ERROR: your address uploaded no accepted battles to roborumble in the last 7 days; "
        "only an established uploader of a rumble may retire its bots\n"
    )
    assert "sample.Walls_0.9b" in _ratings_keys(client)
    assert _logged(app) == []  # counted, not stored one row each
    assert _refused_counts(app) == {"not an uploader": 1}
    assert client.get("/RumbleStats?api=1").json["retirements"] == []


def test_one_accepted_upload_does_not_make_a_stranger_established(app, client, ladder):
    """A stranger's accepted battle makes its address an uploader of the rumble, not a trusted one."""
    assert _upload_from(client, STRANGER, uploader="Mallory").kind is Kind.ACCEPTED
    assert _remove(client, STRANGER) == (
        "OK. ERROR: uploader Mallory@10.66.6.0/24 is not established in roborumble (not yet assessed); "
        "only an established uploader may retire bots: a maintainer can vouch for yours\n"
    )
    db = store.connect(app.config["RUMBLE"]["DB"])
    hourly.refresh_standings(db)  # what the hourly batch run computes
    db.close()
    assert _remove(client, STRANGER) == (
        "OK. ERROR: uploader Mallory@10.66.6.0/24 is not established in roborumble (0 battles on 0 pairings "
        "shared with established uploaders; trust needs 100 battles on 20 pairings); only an established "
        "uploader may retire bots: a maintainer can vouch for yours\n"
    )
    assert "sample.Walls_0.9b" in _ratings_keys(client) and _logged(app) == []
    assert _refused_counts(app) == {"not established": 2}
    standing = {
        (r["uploader"], r["network"]): r for r in client.get("/RumbleStats?game=roborumble&api=1").json["standings"]
    }
    assert (standing["Jane Doe", "10.1.1.0/24"]["established"], standing["Jane Doe", "10.1.1.0/24"]["how"]) == (
        True,
        "vouched",
    )
    assert (standing["Mallory", "10.66.6.0/24"]["established"], standing["Mallory", "10.66.6.0/24"]["how"]) == (
        False,
        "not yet",
    )
    api = client.get("/api/v1/rumbles/roborumble/uploaders").json["standings"]
    assert [(r["uploader"], r["network"], r["established"]) for r in api] == [
        ("Jane Doe", "10.1.1.0/24", True),
        ("Jane Doe", "127.0.0.0/24", True),  # the test app's operator vouched for its local client
        ("Mallory", "10.66.6.0/24", False),
    ]


def test_the_same_name_from_another_network_is_another_uploader(app, client, ladder):
    assert _upload_from(client, "10.1.2.1").kind is Kind.ACCEPTED  # "Jane Doe", typed from another /24
    assert _remove(client, "10.1.2.1").startswith("OK. ERROR: uploader Jane Doe@10.1.2.0/24 is not established")
    assert _remove(client, "10.1.1.200") == (  # the vouched network, another address that never uploaded
        "OK. ERROR: your address uploaded no accepted battles to roborumble in the last 7 days; "
        "only an established uploader of a rumble may retire its bots\n"
    )
    assert "sample.Walls_0.9b" in _ratings_keys(client)


def test_a_revoked_uploader_is_refused(app, client, ladder):
    assert _vouch(app, client, "Jane Doe", "10.1.1.9", action="revoke")["standing"] == "revoked"
    assert _remove(client, TRUSTED) == (
        "OK. ERROR: uploader Jane Doe@10.1.1.0/24 is not established in roborumble (revoked by a maintainer); "
        "only an established uploader may retire bots: a maintainer can vouch for yours\n"
    )
    assert "sample.Walls_0.9b" in _ratings_keys(client)


def test_an_uploader_earns_trust_by_agreeing_with_the_vouched_one(app, client, clock, ladder):
    """Jane (vouched) and Bob upload the same 25 pairings, 4 battles each, from the same kind of
    battles: the batch computation finds Bob agreeing (100 battles on 25 shared pairings), and Bob's
    address may then retire a bot. Before that computation, Bob is refused."""
    app.config["RUMBLE"]["STRANGER_BATTLES_PER_BOT_PER_DAY"] = 0  # no bound here: tested on its own below
    rng = random.Random(4)
    bots = [f"trust.Bot{i} 1.0" for i in range(8)]
    pairs = [(a, b) for i, a in enumerate(bots) for b in bots[i + 1 :]][:25]
    for k in range(4):
        for n, (a, b) in enumerate(pairs):
            share = 0.3 + 0.4 * ((n * 7) % 10) / 10  # each pairing's true score share
            for offset, (who, addr) in enumerate((("Jane Doe", TRUSTED), ("Bob", "10.2.2.2"))):
                first = int(6000 * share + rng.gauss(0, 250))
                sent = dict(
                    first=a, second=b, scores=(first, 6000 - first), firsts=(round(35 * share), 35 - round(35 * share))
                )
                when = clock.now_ms() - 1000 * (k * 100 + n) - offset
                assert _upload_from(client, addr, uploader=who, time_ms=when, **sent).kind is Kind.ACCEPTED
    assert _remove(client, "10.2.2.2").startswith("OK. ERROR: uploader Bob@10.2.2.0/24 is not established")
    db = store.connect(app.config["RUMBLE"]["DB"])
    assert hourly.refresh_standings(db) == {"roborumble": 3}  # Bob, Jane Doe, and the test app's local client
    db.close()
    assert _remove(client, "10.2.2.2") == "OK. sample.Walls 0.9b retired from roborumble\n"
    assert _logged(app) == [("10.2.2.2", "sample.Walls_0.9b", "retired")]


def test_refusals_from_many_addresses_take_no_write_lock_and_store_no_row(app, client, ladder, monkeypatch):
    """250 addresses, each with an accepted upload (untrusted), send removals: each is decided in a
    read snapshot; no write transaction is begun for any of them."""
    strangers = [f"10.{100 + k // 250}.{k % 250}.{1 + k % 7}" for k in range(250)]
    for k, addr in enumerate(strangers[:50]):
        assert _upload_from(client, addr, uploader=f"Sybil{k}").kind is Kind.ACCEPTED
    writes = []
    real_write = client_views.store.write
    monkeypatch.setattr(client_views.store, "write", lambda db: writes.append(1) or real_write(db))
    for addr in strangers:
        assert _remove(client, addr).startswith("OK. ERROR: ")
    assert _remove(client, "10.1.1.1", game="nosuchrumble") == "OK. ERROR: unknown game 'nosuchrumble'\n"
    monkeypatch.undo()
    assert writes == []
    assert _logged(app) == []
    assert _refused_counts(app) == {"not established": 50, "not an uploader": 200, "unknown game": 1}
    assert "sample.Walls_0.9b" in _ratings_keys(client)


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
        "only an established uploader of a rumble may retire its bots\n"
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


def test_a_stranger_moves_a_bot_by_a_bounded_number_of_battles_a_day(app, client, clock, ladder):
    """A forger not established uploads 30 battles of Walls against 30 new opponents: the first 20
    count, the other 10 are held for review with the reason; the next day 20 count again. The
    vouched uploader's battles are never held."""
    app.config["RUMBLE"]["STRANGER_BATTLES_PER_BOT_PER_DAY"] = 20
    kinds = []
    for k in range(30):
        body = battle(first="sample.Walls 0.9b", second=f"victim.V{k} 1.0", uploader="Forger")
        outcome, answer = post_upload(client, body, environ_base={"REMOTE_ADDR": "10.77.0.1"})
        kinds.append(outcome.kind)
    assert kinds == [Kind.ACCEPTED] * 20 + [Kind.HELD] * 10
    assert answer.splitlines()[-1].startswith("OK. ")  # held is still acknowledged: the client drops it
    db = store.connect(app.config["RUMBLE"]["DB"])
    reasons = [r for (r,) in db.execute("SELECT reason FROM battle_flags ORDER BY battle_id")]
    states = dict(
        db.execute(
            "SELECT state, count(*) FROM battles WHERE uploader_id = (SELECT id FROM uploaders WHERE name = 'Forger') GROUP BY state"
        )
    )
    db.close()
    assert states == {"ok": 20, "flagged": 10}
    assert set(reasons) == {
        "held for review: 20 battles of sample.Walls 0.9b from Forger@10.77.0.0/24, an uploader not established, "
        "already count today (at most 20 a bot and day)"
    }
    for k in range(25):  # the vouched uploader, from its own network: none held
        assert _upload_from(client, TRUSTED, first="sample.Walls 0.9b", second=f"victim.V{k} 1.0").kind is Kind.ACCEPTED
    clock.advance(days=1)
    sent = dict(first="sample.Walls 0.9b", second="victim.V0 1.0", uploader="Forger")
    assert _upload_from(client, "10.77.0.1", **sent).kind is Kind.ACCEPTED


def test_newcomers_only_strangers_uploaded_leave_the_field_after_unconfirmed_bot_days(app, client, clock, ladder):
    """Ten addresses each enter an invented bot against Walls; an eleventh enters Fresh, which the
    vouched uploader then fights. Six days on, the hourly run retires nobody; eight days on, it
    retires the ten that no established uploader ever reported, logged like a removal, and keeps
    Fresh and the bots that joined before anyone was vouched for. A retired invention comes back
    with its next accepted upload, as any retired bot does."""
    app.config["RUMBLE"]["STRANGER_BATTLES_PER_BOT_PER_DAY"] = 0
    junk = [f"junk.J{k} 1.0" for k in range(10)]
    for k, name in enumerate(junk):
        sent = dict(first=name, second="sample.Walls 0.9b", uploader=f"Spammer{k}")
        assert _upload_from(client, f"10.{90 + k}.{k}.7", **sent).kind is Kind.ACCEPTED
    sent = dict(first="good.Fresh 1.0", second="sample.Corners 1.0", uploader="Author")
    assert _upload_from(client, "10.200.0.1", **sent).kind is Kind.ACCEPTED
    assert _upload_from(client, TRUSTED, first="good.Fresh 1.0", second="sample.Walls 0.9b").kind is Kind.ACCEPTED
    everyone = {"sample.Walls_0.9b", "sample.Corners_1.0", "good.Fresh_1.0"} | {n.replace(" ", "_") for n in junk}
    assert _ratings_keys(client) == everyone

    def hourly_run() -> None:
        db = store.connect(app.config["RUMBLE"]["DB"])
        hourly.refresh_standings(db, unconfirmed_days=7, now=clock.now())
        db.close()

    clock.advance(days=6)
    hourly_run()
    assert _ratings_keys(client) == everyone
    clock.advance(days=2)
    hourly_run()
    assert _ratings_keys(client) == {"sample.Walls_0.9b", "sample.Corners_1.0", "good.Fresh_1.0"}
    db = store.connect(app.config["RUMBLE"]["DB"])
    sources = {s for (s,) in db.execute("SELECT DISTINCT source FROM participant_events WHERE active = 0")}
    db.close()
    assert sources == {"unconfirmed: no battle from an established uploader within 7 days of joining"}
    sent = dict(first=junk[0], second="sample.Corners 1.0", uploader="Spammer0")
    assert _upload_from(client, "10.90.0.7", **sent).kind is Kind.ACCEPTED
    assert "junk.J0_1.0" in _ratings_keys(client)
