"""The hand-out's copy of the waiting priority battles (rumble/store/waiting.py) on a real database
file: over random sequences of committed transactions on one connection -- battles stored (often of
a waiting pair), battles flagged and counted again, bots retired and brought back, batches queued,
priority battles handed out -- and of battles another connection commits meanwhile, every hand-out
from the copy is what the queue's rule gives over the raw rows at that moment
(tests/store/test_hand_out.py's reference), and marks the same entries."""

from __future__ import annotations

import random

import pytest
from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.store import battle_states, bots, priority_queue
from rumble.store.confirmation_queue import hand_out
from rumble.store.rumbles import rumble_id
from tests.store.test_hand_out import _reference

BOTS = [f"w.Bot{i} 1.0" for i in range(8)]
UPLOADERS = ("U1", "U2", "U3")


def _handed(db: store.Store) -> set[int]:
    return {entry for (entry,) in db.execute("SELECT id FROM priority_battles WHERE handed_out_at IS NOT NULL")}


@pytest.mark.parametrize("seed", range(4))
def test_hand_outs_from_the_copy_follow_the_rule_while_everything_changes(app, db, clock, seed):
    rng = random.Random(seed)
    other = store.connect(app.config["RUMBLE"]["DB"])  # another connection: another worker, an admin action
    stamp = [clock.now_ms() - 10_000_000]

    def store_battle(conn: store.Store, a: str, b: str) -> None:
        stamp[0] += 1
        fought = battle(a, b, uploader=rng.choice(UPLOADERS), time_ms=stamp[0])
        apply.apply_battle(conn, apply.with_receipt(fought, "127.0.0.1", clock.now()), 35, 3)

    with store.write(db):
        for i, name in enumerate(BOTS):  # every bot a participant
            store_battle(db, name, BOTS[(i + 1) % len(BOTS)])
    rid = rumble_id(db, "roborumble")
    ids = {name: bots.find_bot(db, name) for name in BOTS}
    moment = store.format_time(clock.now())
    kinds = {"hand out": 0, "waiting battle": 0, "battle": 0, "other connection": 0, "flag": 0, "retire": 0}
    checked = 0
    for _ in range(300):
        kind = rng.choice(["hand out"] * 4 + ["waiting battle"] * 2 + ["battle", "other connection", "flag", "retire"])
        kinds[kind] += 1
        conn = other if kind == "other connection" else db
        with store.write(conn):
            waiting = conn.execute(
                "SELECT bot_id, opponent_id FROM priority_battles WHERE handed_out_at IS NULL ORDER BY id"
            ).fetchall()
            if not waiting and kind == "hand out":
                pairs = [(min(ids[a], ids[b]), max(ids[a], ids[b])) for i, a in enumerate(BOTS) for b in BOTS[i + 1 :]]
                conn.execute(
                    "DELETE FROM priority_battles WHERE handed_out_at IS NOT NULL"
                )  # held ones: queue them again
                priority_queue.enqueue(conn, rid, [(a, b, "test") for a, b in rng.sample(pairs, 8)], moment)
            names = {bot: name for name, bot in ids.items()}
            if kind == "hand out":
                uploader = rng.choice(UPLOADERS)
                expected, marked = _reference(conn, rid, uploader)
                before = _handed(conn)
                assert hand_out(conn, rid, uploader, moment) == expected
                assert sorted(_handed(conn) - before) == marked
                checked += expected is not None
            elif kind in ("waiting battle", "other connection") and waiting:
                a, b = rng.choice(waiting)
                store_battle(conn, names[a], names[b])
            elif kind in ("battle", "waiting battle", "other connection"):
                store_battle(conn, *rng.sample(BOTS, 2))
            elif kind == "flag":  # mostly a battle of a waiting pair
                found = [
                    battle_id
                    for a, b in waiting
                    for (battle_id,) in conn.execute(
                        "SELECT id FROM battles WHERE first_bot_id IN (?, ?) AND second_bot_id IN (?, ?)", (a, b, a, b)
                    )
                ] or [row[0] for row in conn.execute("SELECT id FROM battles")]
                battle_states.set_battle_state(conn, rng.choice(found), rng.choice(["flagged", "ok"]))
            else:
                bot = ids[rng.choice(BOTS)]
                if not apply.retire(conn, rid, bot, moment, "test"):
                    apply.restore(conn, rid, bot, moment, "test")
    assert checked >= 60  # most hand-outs hand something out
    assert min(kinds.values()) >= 10  # every kind of change happened between them
