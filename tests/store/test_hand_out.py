"""``confirmation_queue.hand_out`` (one read of the waiting entries, one write) hands out what the
queue's rule says, checked against a reference written here from the rule itself over the raw
rows: for the uploader, the oldest waiting pair (both bots active) that another uploader alone has
played; else, if some waiting pair is the uploader's own unconfirmed one, the oldest that is not;
else the queue's oldest waiting pair, after dropping (as handed out) the older ones that have a
retired bot. Random queues over pairs played by one, two or no uploaders, with flagged battles
(not counted) and retired bots."""

from __future__ import annotations

import random

import pytest
from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.protocol.replies import Kind
from rumble.store import bots, priority_queue
from rumble.store.confirmation_queue import hand_out
from rumble.store.rumbles import rumble_id

BOTS = [f"h.Bot{i} 1.0" for i in range(7)]
UPLOADERS = ("U1", "U2", "U3")


class Rollback(Exception):
    """Raised to undo a round's writes."""


def _reference(db: store.Store, rid: int, uploader: str) -> tuple[tuple[str, str] | None, list[int]]:
    """The pair the rule gives ``uploader`` and the queue entries it marks handed out, from raw rows."""
    waiting = db.execute(
        "SELECT id, bot_id, opponent_id FROM priority_battles WHERE rumble_id = ? AND handed_out_at IS NULL ORDER BY id",
        (rid,),
    ).fetchall()
    active = {
        bot for (bot,) in db.execute("SELECT bot_id FROM participants WHERE rumble_id = ? AND active = 1", (rid,))
    }
    names = dict(db.execute("SELECT id, full_name FROM bots").fetchall())
    uploaders: dict[frozenset, set[str]] = {}
    for a, b, who in db.execute(
        "SELECT first_bot_id, second_bot_id, (SELECT name FROM uploaders WHERE id = uploader_id) FROM battles WHERE rumble_id = ? AND state = 'ok'",
        (rid,),
    ):
        uploaders.setdefault(frozenset((a, b)), set()).add(who)

    def sole(a: int, b: int) -> str | None:
        found = uploaders.get(frozenset((a, b)), set())
        return next(iter(found)) if len(found) == 1 else None

    live = [(entry, a, b) for entry, a, b in waiting if a in active and b in active]
    chosen = next(((e, a, b) for e, a, b in live if sole(a, b) not in (None, uploader)), None)
    if chosen is None and any(sole(a, b) == uploader for _, a, b in live):
        chosen = next(((e, a, b) for e, a, b in live if sole(a, b) != uploader), None)
    if chosen is not None:
        return (names[chosen[1]], names[chosen[2]]), [chosen[0]]
    marked = []
    for entry, a, b in waiting:  # the queue's own way: oldest first, retired pairs dropped on the way
        marked.append(entry)
        if a in active and b in active:
            return (names[a], names[b]), marked
    return None, marked


@pytest.mark.parametrize("seed", range(4))
def test_hand_out_follows_the_rule(app, upload, db, clock, seed):
    rng = random.Random(seed)
    now = clock.now_ms()
    pairs = [(a, b) for i, a in enumerate(BOTS) for b in BOTS[i + 1 :]]
    for k, (a, b) in enumerate(pairs):
        played_by = rng.choice([(), ("U1",), ("U2",), ("U3",), ("U1", "U2"), ("U2", "U2")])
        for j, who in enumerate(played_by):
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            assert upload(battle(first, second, uploader=who, time_ms=now - 1000 * k - j)).kind is Kind.ACCEPTED
    rid = rumble_id(db, "roborumble")
    ids = {name: bots.find_bot(db, name) for name in BOTS}
    moment = store.format_time(clock.now())
    # A flagged battle does not count: the pair's other uploaders decide.
    flagged = db.execute("SELECT id FROM battles ORDER BY id LIMIT 1").fetchone()[0]
    with store.write(db):
        db.execute("UPDATE battles SET state = 'flagged' WHERE id = ?", (flagged,))
    with store.write(db):
        for name in rng.sample(BOTS, 2):
            apply.retire(db, rid, ids[name], moment, "test")
    checked = 0
    for _ in range(40):
        queue = rng.sample(pairs, rng.randrange(0, 9))
        uploader = rng.choice(UPLOADERS)
        try:
            with store.write(db):
                db.execute("DELETE FROM priority_battles")
                entries = [(min(ids[a], ids[b]), max(ids[a], ids[b]), "test") for a, b in queue]
                priority_queue.enqueue(db, rid, entries, moment)
                expected, marked = _reference(db, rid, uploader)
                assert hand_out(db, rid, uploader, moment) == expected
                handed = [
                    entry
                    for (entry,) in db.execute(
                        "SELECT id FROM priority_battles WHERE handed_out_at IS NOT NULL ORDER BY id"
                    )
                ]
                assert handed == marked
                checked += expected is not None
                raise Rollback
        except Rollback:
            pass
    assert checked >= 20  # most rounds hand something out
