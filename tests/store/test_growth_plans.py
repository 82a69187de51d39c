"""The queries behind trusted removals and bounded growth seek an index, never scan the log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import SQLITE_LIBRARIES, battle, query_plan

from rumble import store
from rumble.store import battle_log, bots
from rumble.store.rumbles import rumble_id


@pytest.mark.parametrize("library", SQLITE_LIBRARIES)
def test_the_trust_check_seeks_battles_by_address(db, upload, clock, library):
    upload(battle())
    rid = rumble_id(db, "roborumble")
    since = store.format_time(clock.now() - timedelta(days=400))
    assert battle_log.latest_uploader(db, "127.0.0.1", rid, since) == "Jane Doe"
    plan = query_plan(db, lambda: battle_log.latest_uploader(db, "127.0.0.1", rid, since), library)
    assert "battles_by_address (address_id=? AND rumble_id=?)" in plan, plan


@pytest.mark.parametrize("library", SQLITE_LIBRARIES)
def test_new_bots_are_counted_through_bot_origins_by_address(db, upload, clock, library):
    upload(battle())
    since = store.format_time(clock.now() - timedelta(days=400))
    assert bots.new_bots_since(db, "127.0.0.1", since) == 2
    plan = query_plan(db, lambda: bots.new_bots_since(db, "127.0.0.1", since), library)
    assert "bot_origins_by_address (remote_addr=? AND created_at>?)" in plan, plan


def test_the_latest_uploader_is_the_newest_accepted_battle_of_the_address_since_then(db, clock):
    """Walking back from the address's newest battle: a held one is passed over, another address's
    battles are not its own, and a battle received before ``since`` ends the walk."""
    from dataclasses import replace

    rid = rumble_id(db, "roborumble")
    assert rid is not None
    start = clock.now()

    def logged(uploader: str, address: str, days: int, state: str = "ok", offset: int = 0) -> None:
        at = store.format_time(start + timedelta(days=days))
        found = replace(battle(uploader=uploader, time_ms=clock.now_ms() + offset), received_at=at, remote_addr=address)
        with store.write(db):
            a = bots.bot_id(db, found.first.name, at)
            b = bots.bot_id(db, found.second.name, at)
            assert battle_log.append_battle(db, rid, a, b, replace(found, state=state)) is not None

    logged("Old Name", "10.0.0.1", 0, offset=1)
    logged("Other Address", "10.0.0.2", 5, offset=2)
    logged("Held Later", "10.0.0.1", 6, state="flagged", offset=3)
    ten_days = store.format_time(start + timedelta(days=10))
    day_one = store.format_time(start + timedelta(days=1))
    day_zero = store.format_time(start)
    assert battle_log.latest_uploader(db, "10.0.0.1", rid, day_zero) == "Old Name"  # past the held one
    assert battle_log.latest_uploader(db, "10.0.0.1", rid, day_one) is None  # the accepted one is too old
    assert battle_log.latest_uploader(db, "10.0.0.2", rid, day_one) == "Other Address"
    assert battle_log.latest_uploader(db, "10.0.0.1", rid, ten_days) is None
    logged("New Name", "10.0.0.1", 7, offset=4)
    assert battle_log.latest_uploader(db, "10.0.0.1", rid, day_one) == "New Name"
    assert battle_log.latest_uploader(db, "10.0.0.9", rid, day_zero) is None
