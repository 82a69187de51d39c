"""The connection's copy of the bot summaries' exact totals (rumble/store/pairings.py
``totals_of``, ``put_totals``) on a real database file: over random sequences of battles and
retirements on this connection and on another, a transaction rolled back after writing totals,
and a rebuild, what ``totals_of`` gives is what a fresh connection reads from the table."""

from __future__ import annotations

import random

import pytest
from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.store import battle_states, bots, pairings
from rumble.store.rumbles import rumble_id

BOTS = [f"t.Bot{i} 1.0" for i in range(6)]


class Undone(Exception):
    """Raised to roll a transaction back after it wrote totals."""


def _fresh(path: str, rid: int, ids: list[int]) -> dict:
    conn = store.connect(path)
    try:
        return pairings.totals_of(conn, rid, ids)
    finally:
        conn.close()


@pytest.mark.parametrize("seed", range(3))
def test_totals_from_the_copy_are_the_tables_through_every_change(app, db, clock, seed):
    rng = random.Random(seed)
    path = app.config["RUMBLE"]["DB"]
    other = store.connect(path)
    stamp = [clock.now_ms() - 10_000_000]

    def fight(conn: store.Store) -> None:
        stamp[0] += 1
        a, b = rng.sample(BOTS, 2)
        scores = (rng.randrange(1000, 6000), rng.randrange(1000, 6000))
        fought = battle(a, b, scores=scores, uploader="U", time_ms=stamp[0])
        apply.apply_battle(conn, apply.with_receipt(fought, "127.0.0.1", clock.now()), 35, 3)

    with store.write(db):
        for _ in range(10):
            fight(db)
    rid = rumble_id(db, "roborumble")
    ids = [bots.find_bot(db, name) for name in BOTS]
    moment = store.format_time(clock.now())
    kinds = dict.fromkeys(("here", "other", "retire", "undone", "rebuild"), 0)
    for _ in range(120):
        kind = rng.choice(["here"] * 4 + ["other"] * 3 + ["retire", "undone", "rebuild"])
        kinds[kind] += 1
        conn = other if kind == "other" or (kind in ("retire", "rebuild") and rng.random() < 0.5) else db
        try:
            with store.write(conn):
                if kind in ("here", "other"):
                    fight(conn)
                elif kind == "retire":
                    bot = rng.choice(ids)
                    if not apply.retire(conn, rid, bot, moment, "test"):
                        apply.restore(conn, rid, bot, moment, "test")
                elif kind == "undone":
                    fight(conn)
                    raise Undone
                else:  # the summaries deleted and written again, here or on the other connection,
                    # sometimes after one bot's battles were all rolled back (it then has none)
                    if rng.random() < 0.5:
                        gone = rng.choice(ids)
                        found = conn.execute(
                            "SELECT id FROM battles WHERE ? IN (first_bot_id, second_bot_id)", (gone,)
                        ).fetchall()
                        battle_states.set_state_of(conn, [row[0] for row in found], ("ok",), "removed")
                    rebuild_rumble(conn, "roborumble", 35, 3)
        except Undone:
            pass
        assert pairings.totals_of(db, rid, ids) == _fresh(path, rid, ids)
    assert min(kinds.values()) >= 5
