"""A battle is logged once (protocol.md 7.4: a retry repeats the rumble, uploader, client time, bots
and figures): rumble.store.battle_log.append_battle looks for an equal result through the pairing
index under the write lock (migrations/0030_battle_identity_through_the_pairing_index.sql) where a
unique index on the eleven columns used to refuse the second insert."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.protocol.battle import Battle, Side
from rumble.store import battle_log
from rumble.store.migrations import migrate
from tests.store.older_schema import older_copy


def _log(db, fought: Battle, clock, address: str = "10.0.0.1") -> bool:
    """Whether ``fought`` was stored (False: a repeat of a logged result)."""
    with store.write(db):
        return apply.apply_battle(db, apply.with_receipt(fought, address, clock.now()), 35, 3).stored


def _side(side: Side, **changed) -> Side:
    return replace(side, **changed)


def test_a_repeat_is_not_logged_whatever_its_client_field_address_or_arrival(db, clock):
    first = battle()
    assert _log(db, first, clock)
    clock.advance(minutes=3)
    for again in (
        first,
        replace(first, client="1.9.3.8"),
        replace(first, field="1000x1000"),
        replace(first, version="2"),
    ):
        assert not _log(db, again, clock, address="10.9.9.9")
    assert battle_log.count_battles(db) == 1


@pytest.mark.parametrize(
    "change",
    [
        lambda b: replace(b, uploader="Someone Else"),
        lambda b: replace(b, time_ms=b.time_ms + 1),
        lambda b: replace(b, first=b.second, second=b.first),  # the same bots the other way round
        lambda b: replace(b, first=_side(b.first, score=b.first.score + 1)),
        lambda b: replace(b, second=_side(b.second, score=b.second.score - 1)),
        lambda b: replace(b, first=_side(b.first, bullet_damage=b.first.bullet_damage + 1)),
        lambda b: replace(b, second=_side(b.second, bullet_damage=b.second.bullet_damage + 1)),
        lambda b: replace(b, first=_side(b.first, firsts=b.first.firsts - 1)),
        lambda b: replace(b, second=_side(b.second, firsts=b.second.firsts + 1)),
        lambda b: replace(b, game="minirumble"),
    ],
)
def test_a_result_that_differs_in_one_figure_of_its_identity_is_another_battle(db, clock, change):
    first = battle(first="mini.Bot 1.0", second="mini.Other 1.0")
    assert _log(db, first, clock)
    assert _log(db, change(first), clock)
    assert not _log(db, change(first), clock)  # and that one is logged once too
    assert battle_log.count_battles(db) == 2


def test_the_look_is_a_seek_in_the_pairing_index(db, clock):
    fought = battle()
    assert _log(db, fought, clock)
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        assert not _log(db, fought, clock)
    finally:
        db.conn.set_trace_callback(None)
    query = next(s for s in statements if s.startswith("SELECT 1 FROM battles"))
    plan = " ".join(row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + query))
    assert "battles_by_pairing (rumble_id=? AND first_bot_id=? AND second_bot_id=? AND client_time=?)" in plan, plan


def test_a_log_migrated_from_the_unique_index_still_knows_its_battles(db, clock, tmp_path):
    logged = [battle(time_ms=clock.now_ms() - 1000 * k) for k in range(1, 6)]
    for fought in logged:
        assert _log(db, fought, clock)
    old = older_copy(db, tmp_path / "old.db", "0030_battle_identity_through_the_pairing_index")
    try:
        indexes = {row[1] for row in old.execute("PRAGMA index_list(battles)")}
        assert "battles_identity" in indexes
        assert migrate(old)[0] == "0030_battle_identity_through_the_pairing_index"  # (and any after it)
        indexes = {row[1] for row in old.execute("PRAGMA index_list(battles)")}
        assert "battles_identity" not in indexes
        columns = [row[2] for row in old.execute("PRAGMA index_info(battles_by_pairing)")]
        assert columns == ["rumble_id", "first_bot_id", "second_bot_id", "client_time"]
        for fought in logged:
            assert not _log(old, fought, clock)
        assert _log(old, battle(time_ms=clock.now_ms()), clock)
        assert battle_log.count_battles(old) == 6
    finally:
        old.close()
