"""The confirmation queue's check of a waiting pair (rumble.store.confirmation_queue), run on every
priority hand-out inside the write transaction, seeks the pair in battles_by_pairing, never scans
the rumble's log: on the system's SQLite and on a newer one (SQLite 3.50 and 3.51 planned the
second order of each pair as a read of the rumble's whole log until its join order was fixed)."""

from __future__ import annotations

import pytest
from conftest import SQLITE_LIBRARIES, battle, query_plan

from rumble.protocol.replies import Kind
from rumble.store import bots, uploader_battles
from rumble.store.rumbles import rumble_id


@pytest.mark.parametrize("library", SQLITE_LIBRARIES)
def test_sole_uploaders_seek_both_orders_of_each_pair(db, upload, library):
    assert upload(battle()).kind is Kind.ACCEPTED
    rid = rumble_id(db, "roborumble")
    known = bots.participant_names(db, rid, active_only=False)
    a, b = sorted(known.values())
    # Either order of the pair finds the battle; a pair never played has no sole uploader.
    assert uploader_battles.pair_sole_uploaders(db, rid, [(a, b), (b, a), (a, a)]) == {
        (a, b): "Jane Doe",
        (b, a): "Jane Doe",
    }
    plan = query_plan(db, lambda: uploader_battles.pair_sole_uploaders(db, rid, [(a, b), (b, a)]), library)
    seek = "battles_by_pairing (rumble_id=? AND first_bot_id=? AND second_bot_id=?)"
    assert plan.count(seek) == 2, plan  # one seek per order, for every pair; no scan of the log
    assert "SCAN x" not in plan and "SCAN battles" not in plan, plan
    assert "battles_by_pairing (rumble_id=?)" not in plan, plan  # the whole rumble's log, through the first column
