"""The confirmation queue's check of a waiting pair (rumble.store.confirmation_queue), run on every
priority hand-out inside the write transaction, seeks the pair in battles_by_pairing, never scans
the rumble's log."""

from __future__ import annotations

from conftest import battle, query_plan

from rumble import store
from rumble.protocol.replies import Kind
from rumble.store import bots, uploader_battles
from rumble.store.rumbles import rumble_id


def test_sole_uploaders_seek_both_orders_of_each_pair(app, upload):
    assert upload(battle()).kind is Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    rid = rumble_id(db, "roborumble")
    known = bots.participant_names(db, rid, active_only=False)
    a, b = sorted(known.values())
    # Either order of the pair finds the battle; a pair never played has no sole uploader.
    assert uploader_battles.pair_sole_uploaders(db, rid, [(a, b), (b, a), (a, a)]) == {
        (a, b): "Jane Doe",
        (b, a): "Jane Doe",
    }
    plan = query_plan(db, lambda: uploader_battles.pair_sole_uploaders(db, rid, [(a, b), (b, a)]))
    seek = "battles_by_pairing (rumble_id=? AND first_bot_id=? AND second_bot_id=?)"
    assert plan.count(seek) == 2, plan  # one seek per order, for every pair; no scan of the log
    assert "SCAN x" not in plan and "SCAN battles" not in plan, plan
