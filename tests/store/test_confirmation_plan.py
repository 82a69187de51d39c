"""The confirmation queue's check of a waiting pair (rumble.store.confirmation_queue), run on every
priority hand-out inside the write transaction, seeks the pair in battles_by_pairing, never scans
the rumble's log."""

from __future__ import annotations

from conftest import battle

from rumble import store
from rumble.protocol.replies import Kind
from rumble.store import bots, uploader_battles
from rumble.store.rumbles import rumble_id


def _plan(db, call) -> str:
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        call()
    finally:
        db.conn.set_trace_callback(None)
    (query,) = statements
    return " ".join(row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + query))


def test_sole_uploader_seeks_both_orders_of_the_pair(app, upload):
    assert upload(battle()).kind is Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    rid = rumble_id(db, "roborumble")
    known = bots.participant_names(db, rid, active_only=False)
    a, b = sorted(known.values())
    assert uploader_battles.sole_uploader(db, rid, a, b) == "Jane Doe"
    assert uploader_battles.sole_uploader(db, rid, b, a) == "Jane Doe"
    plan = _plan(db, lambda: uploader_battles.sole_uploader(db, rid, a, b))
    seek = "battles_by_pairing (rumble_id=? AND first_bot_id=? AND second_bot_id=?)"
    assert plan.count(seek) == 2, plan
