"""Plausibility checks on uploads (RRServer's limits, peers.md section 2, scaled to each rumble's
rounds): a suspicious battle is logged, answered OK, held for review and counted only once a
maintainer unflags it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from admin_jobs import post_and_wait
from conftest import battle, post_upload

from rumble import store
from rumble.admin_tokens import hash_token, new_token, token_id
from rumble.ingest.plausibility import max_score, min_firsts, suspicion
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.battle import Side
from rumble.protocol.games import load_rumbles
from rumble.protocol.replies import Kind
from rumble.store import maintainers
from rumble.store.tables import snapshot


def test_the_limits_are_rrservers_at_35_rounds_and_scale_with_the_rounds():
    # RRServer: each score <= 10000 and survival1 + survival2 >= 34, for its 35-round 1v1 games.
    assert max_score(35) == 10_000 and min_firsts(35) == 34
    # twinduel-like 75 rounds: 10000 * 75 / 35 = 21428.57 -> 21428; one round of slack per 35 begun: 75 - 3 = 72.
    assert max_score(75) == 21_428 and min_firsts(75) == 72
    # 10 rounds: 10000 * 10 / 35 = 2857.14 -> 2857; 10 - 1 = 9.
    assert max_score(10) == 2_857 and min_firsts(10) == 9


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"first": Side("a.A 1", 10_001, 100, 20)}, "a.A 1's score 10001 is above 10000"),
        ({"second": Side("b.B 1", 3000, 3001, 15)}, "b.B 1's bullet damage 3001 exceeds its total score 3000"),
        (
            {"first": Side("a.A 1", 5000, 100, 20), "second": Side("b.B 1", 3000, 100, 13)},
            "finished first in 20 + 13 rounds, fewer than 34 of 35",
        ),
    ],
)
def test_each_check_names_its_reason(changes, reason):
    fields = dict(first=Side("a.A 1", 5000, 100, 20), second=Side("b.B 1", 3000, 100, 15))
    fields.update(changes)
    assert reason in suspicion(replace(battle(), **fields))


def test_plausible_results_pass_including_the_edges():
    assert suspicion(battle()) is None  # the captured real result of protocol.md 7.1: 6598/4883, 32 + 3 firsts
    assert suspicion(battle(first="a.A 1", second="b.B 1", scores=(10_000, 0), firsts=(34, 0))) is None
    assert (
        suspicion(battle(first="a.A 1", second="b.B 1", scores=(5000, 5000), firsts=(35, 35))) is None
    )  # both die at once


def test_melee_and_team_results_only_get_the_bullet_damage_check():
    melee = battle(first="a.A 1", second="b.B 1", scores=(12_000, 500), firsts=(3, 0), melee=True, game="meleerumble")
    assert suspicion(melee) is None
    team = replace(battle(game="teamrumble", teams=True), second=Side("b.B 1", 10, 11, 0))
    assert "exceeds its total score" in suspicion(team)


def _db(app) -> store.Store:
    return store.connect(app.config["RUMBLE"]["DB"])


def test_a_suspicious_upload_is_answered_ok_logged_flagged_and_not_counted_until_unflagged(app, client, upload):
    assert upload(battle("a.A 1", "b.B 1", (3000, 2000), (20, 15))).kind is Kind.ACCEPTED
    db = _db(app)
    counted = snapshot(db)
    outcome, answer = post_upload(client, battle("a.A 1", "b.B 1", (3000, 2000), (5, 5)))
    # The client is done with it (OK), the counts are the counted battles (1 each), and it says why.
    assert (outcome.kind, outcome.counts) == (Kind.HELD, (1, 1)) and "fewer than 34 of 35" in outcome.reason
    assert answer == f"<1 1>\nOK. a.A 1 vs b.B 1 received for roborumble, held for review: {outcome.reason}\n"
    assert "[" not in answer
    assert snapshot(db) == counted
    assert db.execute("SELECT state FROM battles ORDER BY id").fetchall() == [("ok",), ("flagged",)]
    assert (
        upload(battle("a.A 1", "b.B 1", (3000, 2000), (5, 5), time_ms=_time(db, 2))).kind is Kind.DUPLICATE
    )  # a retry
    token = new_token()
    with store.write(db):
        maintainers.add_maintainer(db, "alice", token_id(token), hash_token(token), store.utc_now())
    auth = {"Authorization": f"Bearer {token}"}
    listed = client.get("/admin/flagged", headers=auth).json
    assert [(b["id"], b["first"], b["first_firsts"], b["second_firsts"]) for b in listed] == [(2, "a.A 1", 5, 5)]
    assert "fewer than 34 of 35" in listed[0]["reason"]
    page = client.get("/admin", headers=auth).get_data(as_text=True)
    assert "fewer than 34 of 35" in page
    # The maintainer approves it: it counts, and the tables equal a rebuild of both battles.
    assert post_and_wait(client, "/admin/unflag", auth, json={"ids": "2"})[1]["result"]["battles"] == 1
    after = snapshot(db)
    pairing = db.execute("SELECT battles FROM pairings WHERE bot_id < opponent_id").fetchone()[0]
    assert pairing == 2 and client.get("/admin/flagged", headers=auth).json == []
    with store.write(db):
        rebuild_rumble(db, "roborumble", load_rumbles()["roborumble"].rounds, 3)
    assert snapshot(db) == after
    db.close()


def _time(db, battle_id: int) -> int:
    return db.execute("SELECT client_time FROM battles WHERE id = ?", (battle_id,)).fetchone()[0]
