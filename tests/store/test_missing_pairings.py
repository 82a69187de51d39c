"""The missing pairings table (rumble/store/missing_pairings.py) follows bots entering, retiring,
meeting and being held in the priority queue, and a rebuild or the migration computes the same."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

from conftest import battle

from rumble import store
from rumble.ingest import apply
from rumble.maintenance import swap
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.store import battle_states, bots, missing_pairings
from rumble.store.migrations import migrate, migration_files
from rumble.store.rumbles import rumble_id

GAME = "roborumble"


def _play(db, clock, first: str, second: str, offset: int = 0) -> None:
    result = replace(battle(first, second, time_ms=clock.now_ms() + offset), received_at=store.format_time(clock.now()))
    with store.write(db):
        apply.apply_battle(db, result, 35, 3)


def _missing(db) -> set[frozenset[str]]:
    names = {bots.find_bot(db, f"{c.lower()}.{c} 1"): c for c in "ABCDE"}
    return {frozenset((names[a], names[b])) for a, b in missing_pairings.pairs_of(db, rumble_id(db, GAME))}


def _triangle_and_newcomer(db, clock) -> None:
    """A, B and C have met each other; D enters with a battle against A."""
    for n, (x, y) in enumerate([("A", "B"), ("B", "C"), ("A", "C"), ("D", "A")]):
        _play(db, clock, f"{x.lower()}.{x} 1", f"{y.lower()}.{y} 1", n)


def test_a_newcomer_lacks_every_active_participant_but_the_one_it_played(db, clock):
    _triangle_and_newcomer(db, clock)
    assert _missing(db) == {frozenset("BD"), frozenset("CD")}


def test_a_retired_bot_lacks_nothing_and_comes_back_lacking_only_the_unplayed(db, clock):
    _triangle_and_newcomer(db, clock)
    rid, d = rumble_id(db, GAME), bots.find_bot(db, "d.D 1")
    with store.write(db):
        apply.retire(db, rid, d, store.utc_now(), "test")
    assert _missing(db) == set()
    _play(db, clock, "e.E 1", "a.A 1", 10)  # E enters while D is retired: it lacks B and C, not D
    assert _missing(db) == {frozenset("BE"), frozenset("CE")}
    with store.write(db):
        apply.restore(db, rid, d, store.utc_now(), "test")
    assert _missing(db) == {frozenset(p) for p in ("BD", "CD", "DE", "BE", "CE")}


def test_pairs_queued_as_priority_battles_are_held_out_until_forgotten(db, clock):
    _triangle_and_newcomer(db, clock)
    now = clock.now()
    with store.write(db):
        first = apply.next_priority_battle(db, GAME, 8, 3, 5.0, random.Random(1), now)
    assert set(first) <= {"b.B 1", "c.C 1", "d.D 1"} and "d.D 1" in first  # a missing pairing first
    assert _missing(db) == set()  # both missing pairings are queued now
    with store.write(db):  # six minutes later the hold of five has passed: unplayed pairs may be asked for again
        for _ in range(8):  # empty the queue (the rest of the batch is handed out)
            apply.next_priority_battle(db, GAME, 8, 3, 5.0, random.Random(1), now)
        apply.next_priority_battle(db, GAME, 8, 3, 5.0, random.Random(1), now + timedelta(minutes=6))
    # Both came back and one was queued again at once (it is first in the new batch); none of it is lost.
    queued = {frozenset(p) for p in db.execute("SELECT bot_id, opponent_id FROM priority_battles").fetchall()}
    ids = {bots.find_bot(db, f"{c.lower()}.{c} 1"): c for c in "BCD"}
    held = {frozenset(ids.get(x, "?") for x in pair) for pair in queued}
    assert {frozenset("BD"), frozenset("CD")} <= held | _missing(db)


def test_the_table_kept_up_to_date_equals_a_refill_and_a_rebuild(db, clock):
    _triangle_and_newcomer(db, clock)
    _play(db, clock, "e.E 1", "b.B 1", 10)
    _play(db, clock, "e.E 1", "d.D 1", 11)
    kept = _missing(db)
    assert kept == {frozenset(p) for p in ("BD", "CD", "AE", "CE")}
    rid = rumble_id(db, GAME)
    with store.write(db):
        missing_pairings.refill(db, rid)
    assert _missing(db) == kept
    with store.write(db):
        db.execute("DELETE FROM missing_pairings")
        rebuild_rumble(db, GAME, 35, 3)
    assert _missing(db) == kept


def test_a_held_pairing_played_during_its_hold_stays_out_of_the_priority_index_as_a_rebuild_has_it(db, clock):
    """A queued pairing has no priority (``enqueue``); a battle of it while it is held must not give
    it one back: the rebuild leaves every held pairing without one, and the two must be equal."""
    _triangle_and_newcomer(db, clock)
    rid = rumble_id(db, GAME)
    with store.write(db):
        apply.next_priority_battle(db, GAME, 8, 3, 5.0, random.Random(1), clock.now())
    held = db.execute("SELECT bot_id, opponent_id FROM priority_battles WHERE rumble_id = ?", (rid,)).fetchall()
    played = db.execute("SELECT bot_id, opponent_id FROM pairings WHERE priority IS NULL AND bot_id < opponent_id")
    a, b = sorted(set(held) & set(played.fetchall()))[0]  # a pairing with battles, queued for another
    names = {bot: db.execute("SELECT full_name FROM bots WHERE id = ?", (bot,)).fetchone()[0] for bot in (a, b)}
    _play(db, clock, names[b], names[a], 20)

    def pairings_table() -> list[tuple]:
        return db.execute("SELECT * FROM pairings ORDER BY rumble_id, bot_id, opponent_id").fetchall()

    online = pairings_table()
    (priority, battles) = db.execute(
        "SELECT priority, battles FROM pairings WHERE bot_id = ? AND opponent_id = ?", (a, b)
    ).fetchone()
    assert (priority, battles) == (None, 2)  # played twice now, and still held
    with store.write(db):
        rebuild_rumble(db, GAME, 35, 3)
    assert pairings_table() == online


def test_a_rollback_swapped_in_by_a_maintenance_job_makes_its_pairing_missing_again(db, clock):
    _triangle_and_newcomer(db, clock)  # battle 3 is A-C, the only battle of that pairing
    (ac,) = db.execute("SELECT id FROM battles WHERE id = 3").fetchone()

    def roll_back(db, job) -> None:
        battle_states.set_state_of(db, [ac], ["ok"], "removed")

    with swap.one_at_a_time(db):
        swap.recompute(db, GAME, 35, 3, moved=frozenset({ac}), moved_to="removed", in_swap=roll_back)
    assert _missing(db) == {frozenset("AC"), frozenset("BD"), frozenset("CD")}
    with store.write(db):
        missing_pairings.refill(db, rumble_id(db, GAME))
    assert _missing(db) == {frozenset("AC"), frozenset("BD"), frozenset("CD")}


def test_migration_0016_fills_the_table_from_existing_participants_and_pairings(tmp_path):
    """Three active bots of which 1 and 2 have met, and a retired 4: only 1-3 and 2-3 are missing."""
    db = store.connect(tmp_path / "r.db", migrate=False)
    before = tmp_path / "before"
    before.mkdir()
    for path in migration_files():
        if int(path.name[:4]) < 16:
            (before / path.name).write_text(path.read_text())
    migrate(db, before)
    db.conn.execute(
        "INSERT INTO rumbles (id, name, rounds, field, melee, teams, division, family, created_at) "
        "VALUES (7, 'roborumble', 35, '800x600', 0, 0, 'general', 'roborumble', '')"
    )
    db.conn.execute(
        "INSERT INTO participants (rumble_id, bot_id, active, first_seen) "
        "VALUES (7, 1, 1, ''), (7, 2, 1, ''), (7, 3, 1, ''), (7, 4, 0, '')"
    )
    db.conn.execute(
        "INSERT INTO pairings (rumble_id, bot_id, opponent_id, battles, aps, aps_m2, survival, last_battle) "
        "VALUES (7, 1, 2, 1, 60, 0, 60, ''), (7, 2, 1, 1, 40, 0, 40, '')"
    )
    migrate(db)
    rows = db.execute("SELECT rumble_id, bot_id, opponent_id, draw FROM missing_pairings ORDER BY bot_id").fetchall()
    # draw = (a·2654435761 + b·2246822519) mod 2^32, by hand: 1-3 gives 9394903318 mod 4294967296 = 804968726,
    # 2-3 gives 12049339079 mod 4294967296 = 3459404487.
    assert rows == [(7, 1, 3, 804968726), (7, 2, 3, 3459404487)]
    db.close()


class _Undo(Exception):
    """Raised inside a write transaction to roll it back."""


def test_every_missing_pairing_is_about_equally_likely_in_a_batch(db, clock):
    """Ten bots that have met nobody: 45 missing pairings, a batch takes 8, so over 600 batches
    each pairing is expected 600·8/45 = 106.7 times; none may be drawn under half or over 1.5
    times that (the draw's window evens out the gaps between keys; chance alone rarely moves a
    count by more than 3 standard deviations, sqrt(106.7) ≈ 10)."""
    rid = rumble_id(db, GAME)
    now = store.utc_now()
    with store.write(db):
        for k in range(10):
            apply.activate(db, rid, bots.bot_id(db, f"p.Bot{k} 1", now), now)
    assert len(missing_pairings.pairs_of(db, rid)) == 45
    rng, counts = random.Random(5), {}
    for _ in range(600):
        try:
            with store.write(db):
                apply.next_priority_battle(db, GAME, 8, 3, 5.0, rng, clock.now())
                for pair in db.execute("SELECT bot_id, opponent_id FROM priority_battles").fetchall():
                    counts[pair] = counts.get(pair, 0) + 1
                raise _Undo
        except _Undo:
            pass
    assert len(counts) == 45 and sum(counts.values()) == 600 * 8
    assert 0.5 * 106.7 <= min(counts.values()) and max(counts.values()) <= 1.5 * 106.7, sorted(counts.values())


def test_a_newcomers_pairs_are_written_a_batch_per_battle_and_end_as_a_refill_has_them(db, clock, monkeypatch):
    """With batches of 2 opponents, a newcomer F among A to E (by id) has its pairs with A and B
    written with the battle that brings it (A's is then played), with C and D at the rumble's next
    battle (any pair's), with E at the one after, which finds no opponent left: F is done, and the
    pairs are those a refill computes from scratch."""
    monkeypatch.setattr(missing_pairings, "FILL_BATCH", 2)
    for n, (x, y) in enumerate([("A", "B"), ("C", "D"), ("E", "A")]):
        _play(db, clock, f"{x.lower()}.{x} 1", f"{y.lower()}.{y} 1", n)
    rid = rumble_id(db, GAME)
    with store.write(db):
        missing_pairings.refill(db, rid)  # A..E complete, nothing pending
    names = {bots.find_bot(db, f"{c.lower()}.{c} 1"): c for c in "ABCDE"}

    def lacking() -> set[str]:
        return {names[a if b == f else b] for a, b in missing_pairings.pairs_of(db, rid) if f in (a, b)}

    _play(db, clock, "f.F 1", "a.A 1", 10)
    f = bots.find_bot(db, "f.F 1")
    assert lacking() == {"B"} and missing_pairings.pending(db, rid) == [f]
    _play(db, clock, "b.B 1", "c.C 1", 11)
    assert lacking() == {"B", "C", "D"} and missing_pairings.pending(db, rid) == [f]
    _play(db, clock, "d.D 1", "e.E 1", 12)
    assert lacking() == {"B", "C", "D", "E"} and missing_pairings.pending(db, rid) == []
    kept = missing_pairings.pairs_of(db, rid)
    with store.write(db):
        missing_pairings.refill(db, rid)
    assert missing_pairings.pairs_of(db, rid) == kept


def test_a_bot_retired_while_its_pairs_are_written_leaves_none_behind(db, clock, monkeypatch):
    monkeypatch.setattr(missing_pairings, "FILL_BATCH", 1)
    for n, (x, y) in enumerate([("A", "B"), ("C", "D")]):
        _play(db, clock, f"{x.lower()}.{x} 1", f"{y.lower()}.{y} 1", n)
    _play(db, clock, "e.E 1", "a.A 1", 5)
    rid, e = rumble_id(db, GAME), bots.find_bot(db, "e.E 1")
    assert e in missing_pairings.pending(db, rid)
    with store.write(db):
        apply.retire(db, rid, e, store.utc_now(), "test")
    assert e not in missing_pairings.pending(db, rid)
    assert not any(e in pair for pair in missing_pairings.pairs_of(db, rid))
