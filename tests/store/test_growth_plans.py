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
    assert "battles_by_address (remote_addr=? AND rumble_id=? AND received_at>?)" in plan, plan


@pytest.mark.parametrize("library", SQLITE_LIBRARIES)
def test_new_bots_are_counted_through_bot_origins_by_address(db, upload, clock, library):
    upload(battle())
    since = store.format_time(clock.now() - timedelta(days=400))
    assert bots.new_bots_since(db, "127.0.0.1", since) == 2
    plan = query_plan(db, lambda: bots.new_bots_since(db, "127.0.0.1", since), library)
    assert "bot_origins_by_address (remote_addr=? AND created_at>?)" in plan, plan
