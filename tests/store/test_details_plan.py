"""The pairing page's battle query looks the pair up by index, not through the rumble's whole log."""

from __future__ import annotations

from conftest import battle

from rumble import store
from rumble.store import details
from rumble.store.rumbles import rumble_id


def test_pairing_battles_are_found_through_battles_by_pairing(app, upload):
    upload(battle())
    db = store.connect(app.config["RUMBLE"]["DB"])
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        page = details.pairing_page(db, rumble_id(db, "roborumble"), "sample.Corners 1.0", "sample.RamFire 1.0")
        assert len(page["battles"]) == 1
        query = next(s for s in statements if "FROM battles" in s)
        plan = " ".join(row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + query))
    finally:
        db.close()
    assert "battles_by_pairing (rumble_id=? AND first_bot_id=? AND second_bot_id=?)" in plan, plan
