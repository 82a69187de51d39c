"""Bounded growth (issue 11, item 3): NEW_BOTS_PER_HOUR per address and MAX_PARTICIPANTS per
rumble refuse an upload in the protocol's form with nothing stored, and a worker's ratings field
grows with its participants, not by doubling."""

from __future__ import annotations

import sqlite3

import numpy as np
from conftest import battle, maintainer_token, post_upload

from rumble.ingest import fields
from rumble.protocol.replies import Kind
from rumble.ratings.online import GROWTH_STEP, Field
from rumble.store.rumbles import rumble_id

FLOODER, OTHER = "10.9.9.9", "10.8.8.8"


def _upload_from(client, addr: str, **kwargs):
    return post_upload(client, battle(**kwargs), environ_base={"REMOTE_ADDR": addr})


def _counts(app) -> tuple[int, int, int, int]:
    """Battles, bots, bot origins and participants in the database."""
    conn = sqlite3.connect(app.config["RUMBLE"]["DB"])
    found = tuple(
        conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("battles", "bots", "bot_origins", "participants")
    )
    conn.close()
    return found


def _bot_names(app) -> set[str]:
    conn = sqlite3.connect(app.config["RUMBLE"]["DB"])
    names = {name for (name,) in conn.execute("SELECT full_name FROM bots")}
    conn.close()
    return names


def test_a_flood_of_invented_names_is_refused_after_new_bots_per_hour_with_nothing_stored(app, client, clock):
    app.config["RUMBLE"]["NEW_BOTS_PER_HOUR"] = 5
    # The first upload names two new bots (flood.B0 and Corners), each later one one more: 2, 3, 4, 5.
    for i in range(4):
        outcome, _ = _upload_from(
            client, FLOODER, first=f"flood.B{i} 1.0", second="sample.Corners 1.0", time_ms=clock.now_ms() - i
        )
        assert outcome.kind is Kind.ACCEPTED
    before = _counts(app)
    assert before == (4, 5, 5, 5)
    for i in range(4, 9):
        outcome, answer = _upload_from(
            client, FLOODER, first=f"flood.B{i} 1.0", second="sample.Corners 1.0", time_ms=clock.now_ms() - i
        )
        assert outcome.kind is Kind.REFUSED
        assert (
            answer
            == f"OK. ERROR: too many new bots from your address: 5 in the last hour, at most 5; flood.B{i} 1.0 is not added\n"
        )
    assert _counts(app) == before  # not the battle, not the bot row
    assert not {f"flood.B{i} 1.0" for i in range(4, 9)} & _bot_names(app)
    # The flooding address may still upload battles of bots that exist; another address may add bots.
    outcome, _ = _upload_from(client, FLOODER, first="flood.B0 1.0", second="flood.B1 1.0")
    assert outcome.kind is Kind.ACCEPTED
    outcome, _ = _upload_from(client, OTHER, first="other.New 1.0", second="sample.Corners 1.0")
    assert outcome.kind is Kind.ACCEPTED
    # An hour later the flooding address may add bots again.
    clock.advance(hours=1, seconds=1)
    outcome, _ = _upload_from(client, FLOODER, first="flood.B4 1.0", second="sample.Corners 1.0")
    assert outcome.kind is Kind.ACCEPTED


def test_an_upload_naming_two_new_bots_needs_room_for_both(app, client):
    app.config["RUMBLE"]["NEW_BOTS_PER_HOUR"] = 1
    outcome, answer = _upload_from(client, FLOODER, first="new.A 1.0", second="new.B 1.0")
    assert (
        answer
        == "OK. ERROR: too many new bots from your address: 0 in the last hour, at most 1; new.A 1.0 is not added\n"
    )
    assert _counts(app) == (0, 0, 0, 0)


def test_a_full_rumble_refuses_a_new_participant_with_nothing_stored(app, client, clock):
    app.config["RUMBLE"]["MAX_PARTICIPANTS"] = 3
    assert _upload_from(client, OTHER, first="a.A 1", second="b.B 1")[0].kind is Kind.ACCEPTED
    assert _upload_from(client, OTHER, first="a.A 1", second="c.C 1")[0].kind is Kind.ACCEPTED
    auth = {"Authorization": f"Bearer {maintainer_token(app)}"}  # a retired participant still counts
    retired = client.post("/admin/retire", json={"game": "roborumble", "name": "c.C 1"}, headers=auth)
    assert (retired.status_code, retired.json["changed"]) == (200, True)
    before = _counts(app)
    outcome, answer = _upload_from(client, OTHER, first="a.A 1", second="d.D 1")
    assert outcome.kind is Kind.REFUSED
    assert (
        answer == "OK. ERROR: roborumble is full: 3 participants, at most 3; d.D 1 is not added\n"
    )  # a retired bot keeps its place
    assert _counts(app) == before and "d.D 1" not in _bot_names(app)
    # Bots already in the rumble still battle, a retired one comes back; another rumble has room of its own.
    assert (
        _upload_from(client, OTHER, first="b.B 1", second="c.C 1", time_ms=clock.now_ms() - 5)[0].kind is Kind.ACCEPTED
    )
    assert _upload_from(client, OTHER, first="a.A 1", second="d.D 1", game="minirumble")[0].kind is Kind.ACCEPTED
    # A bot that exists (in minirumble) but is new to roborumble counts as a new participant here.
    outcome, answer = _upload_from(client, OTHER, first="a.A 1", second="d.D 1", time_ms=clock.now_ms() - 7)
    assert answer == "OK. ERROR: roborumble is full: 3 participants, at most 3; d.D 1 is not added\n"


def test_the_field_grows_by_a_bounded_step_not_by_doubling():
    field = Field()
    for n in range(1, 1201):
        field.set_active(n, True)
        capacity = field.capacity
        # Room for every bot and at most one step more; doubling held up to 2n (2,048 at 1,025 bots).
        assert n <= capacity <= n + GROWTH_STEP, (n, capacity)
        assert field.aps.shape == (capacity, capacity) and field.table.shape[1] == capacity
    assert field.aps.nbytes <= (1200 + GROWTH_STEP) ** 2 * 8 < 2048**2 * 8


def test_a_loaded_field_is_sized_to_its_participants(app, client, demo_db):
    copy = fields.load(demo_db, rumble_id(demo_db, "roborumble"))
    assert len(copy.field.ids) == 20
    assert 20 <= copy.field.capacity <= 20 + GROWTH_STEP
    assert not np.isnan(copy.field.aps[:20, :20][~np.eye(20, dtype=bool)]).any()  # every pair met, loaded in place


def test_many_addresses_are_bounded_per_rumble_and_an_established_newcomer_still_gets_in(app, client, clock):
    """Fifty addresses in fifty networks, each within its own NEW_BOTS_PER_HOUR, add new bots until
    the rumble's hourly bound for uploaders not established (20 here) refuses them, with nothing of
    the refused uploads stored; the rumble then fills to MAX_PARTICIPANTS from a later hour. A
    newcomer uploaded by the vouched local client is taken all the same."""
    app.config["RUMBLE"].update(NEW_BOTS_PER_HOUR=4, NEW_BOTS_PER_HOUR_PER_RUMBLE=20, MAX_PARTICIPANTS=30)
    answers, k = [], 0
    for n in range(50):
        address = f"10.{n}.{n % 7}.{1 + n % 200}"
        for _ in range(2):
            k += 1
            outcome, answer = _upload_from(
                client, address, first=f"sybil.S{k} 1.0", second=f"sybil.T{k} 1.0", uploader=f"sybil{n}"
            )
            answers.append((outcome.kind, answer))
    accepted = [a for kind, a in answers if kind is Kind.ACCEPTED]
    refused = {a for kind, a in answers if kind is Kind.REFUSED}
    assert len(accepted) == 10  # 10 uploads of two new bots each: the rumble's 20 an hour
    assert refused == {
        "OK. ERROR: roborumble took 20 new bots in the last hour, at most 20 from uploaders not established; "
        f"sybil.S{k2} 1.0 is not added, try again later\n"
        for k2 in range(11, 101)
    }
    assert _counts(app) == (10, 20, 20, 20)
    clock.advance(hours=1, seconds=1)
    for n in range(50, 60):  # the next hour: five more uploads fill the rumble to 30, then it is full
        k += 1
        outcome, answer = _upload_from(
            client, f"10.{n}.0.1", first=f"sybil.S{k} 1.0", second=f"sybil.T{k} 1.0", uploader=f"sybil{n}"
        )
        if n < 55:
            assert outcome.kind is Kind.ACCEPTED
        else:
            assert (
                answer == f"OK. ERROR: roborumble is full: 30 participants, at most 30; sybil.S{k} 1.0 is not added\n"
            )
    # The operator's own client (vouched for by the app fixture: Jane Doe from the test client's address).
    outcome, answer = post_upload(client, battle(first="operator.Newcomer 1.0", second="sybil.S1 1.0"))
    assert outcome.kind is Kind.ACCEPTED
    assert answer.splitlines()[-1] == "OK. operator.Newcomer 1.0 vs sybil.S1 1.0 received for roborumble"
    assert _counts(app)[3] == 31


def test_an_established_uploaders_newcomers_leave_the_hours_allowance_to_strangers(app, client):
    """The vouched local client brings 25 new bots into the rumble, more than the 20 an hour that
    strangers may bring: a stranger's newcomer is still taken, counted as the first of its 20."""
    app.config["RUMBLE"].update(NEW_BOTS_PER_HOUR=100, NEW_BOTS_PER_HOUR_PER_RUMBLE=20, MAX_PARTICIPANTS=100)
    for k in range(25):  # the operator's own client (vouched for by the app fixture)
        outcome, _ = post_upload(
            client, battle(first=f"operator.Bot{k} 1.0", second="operator.Bot0 1.0" if k else "operator.Base 1.0")
        )
        assert outcome.kind is Kind.ACCEPTED
    assert _counts(app)[3] == 26
    for k in range(10):  # ten uploads from ten strangers, each bringing two bots: the hour's 20
        outcome, _ = _upload_from(
            client, f"10.{k}.0.1", first=f"stranger.S{k} 1.0", second=f"stranger.T{k} 1.0", uploader=f"s{k}"
        )
        assert outcome.kind is Kind.ACCEPTED
    outcome, answer = _upload_from(client, "10.99.0.1", first="stranger.X 1.0", second="stranger.Y 1.0", uploader="x")
    assert answer == (
        "OK. ERROR: roborumble took 20 new bots in the last hour, at most 20 from uploaders not established; "
        "stranger.X 1.0 is not added, try again later\n"
    )
