"""The battle log keeps a battle's protocol version, client version and battlefield as one number
(migrations/0029_battle_setups.sql, rumble.store.battle_log.setup_id): a log that kept them as text
keeps the same values, and a maintainer's filter by client version selects the same battles."""

from __future__ import annotations

from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.store import battle_log, battle_states
from rumble.store.battle_states import BattleFilter
from rumble.store.migrations import migrate
from tests.store.older_schema import older_copy

BOTS = ("a.One 1.0", "b.Two 1.0", "c.Three 1.0")
# (protocol version, client version, battlefield): two clients on the usual field, one on another field
SETUPS = [("1", "1.9.3.9", "800x600"), ("1", "1.9.3.8", "800x600"), ("1", "1.9.3.9", "1000x1000")]


def _log(db, clock, count: int, offset: int = 0) -> None:
    """``count`` battles, the setups taken in turn, each a new result (its own client time)."""
    with store.write(db):
        for k in range(offset, offset + count):
            version, client, field = SETUPS[k % len(SETUPS)]
            fought = battle(
                BOTS[k % 3],
                BOTS[(k + 1) % 3],
                version=version,
                client=client,
                field=field,
                time_ms=clock.now_ms() - 1000 * (k + 1),
            )
            assert apply.apply_battle(db, apply.with_receipt(fought, "10.0.0.1", clock.now()), 35, 3).stored


def _setups(db) -> list[tuple]:
    return db.execute("SELECT version, client, field FROM battle_setups ORDER BY id").fetchall()


def test_a_log_that_kept_the_setups_as_text_keeps_them_as_numbers(app, clock, tmp_path):
    db = store.connect(app.config["RUMBLE"]["DB"])
    _log(db, clock, 12)
    before = list(battle_log.log_rows(db))
    assert {(row["version"], row["client"], row["field"]) for row in before} == set(SETUPS)
    old = older_copy(db, tmp_path / "old.db", "0029_battle_setups")
    db.close()
    texts = old.execute("SELECT version, client, field FROM battles ORDER BY id").fetchall()
    assert texts == [(row["version"], row["client"], row["field"]) for row in before]

    assert migrate(old)[0] == "0029_battle_setups"  # (and the migrations after it)
    assert list(battle_log.log_rows(old)) == before
    assert sorted(_setups(old)) == sorted(SETUPS)  # each setup once, however many battles share it
    columns = {row[1] for row in old.execute("PRAGMA table_info(battles)")}
    assert {"version", "client", "field"}.isdisjoint(columns) and "setup_id" in columns

    # The log goes on: a known setup is found again, a new one made on its first battle.
    _log(old, clock, 3, offset=12)
    assert len(_setups(old)) == 3
    with store.write(old):
        newer = battle(BOTS[0], BOTS[2], client="1.10.0", time_ms=clock.now_ms() - 99_000)
        assert apply.apply_battle(old, apply.with_receipt(newer, "10.0.0.1", clock.now()), 35, 3).stored
    assert _setups(old)[-1] == ("1", "1.10.0", "800x600")
    rows = list(battle_log.log_rows(old))
    assert rows[:12] == before and (rows[-1]["client"], rows[-1]["field"]) == ("1.10.0", "800x600")
    old.close()


def test_a_filter_by_client_version_selects_that_clients_battles(app, clock):
    db = store.connect(app.config["RUMBLE"]["DB"])
    _log(db, clock, 9)
    logged = list(battle_log.log_rows(db))
    for client in ("1.9.3.9", "1.9.3.8", "1.0"):
        wanted = [row["id"] for row in logged if row["client"] == client]
        found = battle_states.matching_ids(db, BattleFilter(client=client), ["ok"], logged[-1]["id"])
        assert sorted(sum(found.values(), [])) == wanted
    assert [row["client"] for row in battle_states.battles_in_state(db, "ok")] == [
        row["client"] for row in reversed(logged)
    ]
    db.close()
