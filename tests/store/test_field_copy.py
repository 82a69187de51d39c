"""A process's in-memory ratings copy (rumble/ingest/fields.py) on a real database file: ``current`` asks
the database for the rumble's version only when another connection committed or this one wrote
to the log, and over random sequences of battles (counted, held for review, repeated), retirements,
restorations, rebuilds and rolled-back transactions, on this connection and on another, the copy
it gives is the one a fresh connection loads."""

from __future__ import annotations

import random

import pytest
from conftest import battle

from rumble import store
from rumble.ingest import apply, fields
from rumble.maintenance import swap
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.store import battle_states, bots, rating_rows
from rumble.store.rumbles import rumble_id

BOTS = [f"f.Bot{i} 1.0" for i in range(6)]


class Undone(Exception):
    """Raised to roll a transaction back after it wrote."""


def _view(field) -> tuple:
    """What the copy holds, comparable: participants, active flags, pairing APS and ratings (NaN as None)."""
    n = len(field.ids)
    aps = field.aps[:n, :n]
    return (
        list(field.ids),
        field.active[:n].tolist(),
        [_no_nan(row) for row in aps.tolist()],
        [_no_nan(field.ratings(bot).values) + (field.ratings(bot).xonstat_battles,) for bot in field.ids],
    )


def _no_nan(values) -> tuple:
    return tuple(None if v != v else v for v in values)  # NaN (never rated) equals itself here


def _fresh(path: str, rid: int) -> tuple:
    conn = store.connect(path)
    try:
        with store.read(conn):
            return _view(fields.load(conn, rid).field)
    finally:
        conn.close()


def _fight(conn: store.Store, clock, rng: random.Random, stamp: list[int], state: str = "ok") -> None:
    stamp[0] += 1
    a, b = rng.sample(BOTS, 2)
    scores = (rng.randrange(1000, 6000), rng.randrange(1000, 6000))
    fought = battle(a, b, scores=scores, uploader="U", time_ms=stamp[0], state=state)
    apply.apply_battle(conn, apply.with_receipt(fought, "127.0.0.1", clock.now()), 35, 3)


def test_uploads_on_one_connection_ask_for_the_version_once(app, db, clock, monkeypatch):
    """The writer process's case: nobody else writes, so after the first upload brought the copy up
    to date, the next ones use it as it is (and it stays the copy a fresh connection loads)."""
    rng = random.Random(1)
    stamp = [clock.now_ms() - 10_000_000]
    with store.write(db):  # the first reads the rumble into memory
        _fight(db, clock, rng, stamp)
    asked = []
    real_version = rating_rows.version
    monkeypatch.setattr(  # asked on this test's connection (a fresh one's load asks too)
        rating_rows, "version", lambda conn, rid: (conn is db and asked.append(rid)) or real_version(conn, rid)
    )
    for _ in range(20):
        with store.write(db):
            _fight(db, clock, rng, stamp)
    rid = rumble_id(db, "roborumble")
    with store.write(db):
        held = _view(fields.current(db, rid).field)
    assert held == _fresh(app.config["RUMBLE"]["DB"], rid)
    assert asked == []
    other = store.connect(app.config["RUMBLE"]["DB"])  # another process's battle: asked again, and caught up
    other.shared = {}  # its own copies, as in another process
    try:
        with store.write(other):
            _fight(other, clock, rng, stamp)
    finally:
        other.close()
    with store.write(db):
        held = _view(fields.current(db, rid).field)
    assert held == _fresh(app.config["RUMBLE"]["DB"], rid)
    assert asked == [rid]


@pytest.mark.parametrize("seed", range(3))
def test_the_copy_is_what_a_fresh_connection_loads_through_every_change(app, db, clock, seed):
    rng = random.Random(seed)
    path = app.config["RUMBLE"]["DB"]
    other = store.connect(path)
    other.shared = {}  # another process's connection: copies of its own
    stamp = [clock.now_ms() - 10_000_000]
    with store.write(db):
        for _ in range(10):
            _fight(db, clock, rng, stamp)
    rid = rumble_id(db, "roborumble")
    ids = [bots.find_bot(db, name) for name in BOTS]
    moment = store.format_time(clock.now())
    kinds = dict.fromkeys(("here", "other", "held", "repeat", "retire", "undone", "rebuild", "maintenance"), 0)
    try:
        for _ in range(150):
            kind = rng.choice(
                ["here"] * 4 + ["other"] * 2 + ["held", "repeat", "retire", "undone", "rebuild", "maintenance"]
            )
            kinds[kind] += 1
            conn = (
                other
                if kind == "other" or (kind in ("retire", "rebuild", "maintenance") and rng.random() < 0.5)
                else db
            )
            if kind == "maintenance":  # recomputed aside and swapped in, one bot's battles rolled back
                gone = rng.choice(ids)
                found = conn.execute(
                    "SELECT id FROM battles WHERE state = 'ok' AND ? IN (first_bot_id, second_bot_id)", (gone,)
                ).fetchall()
                moved = frozenset(row[0] for row in found)
                with swap.one_at_a_time(conn):
                    swap.recompute(
                        conn,
                        "roborumble",
                        35,
                        3,
                        None,
                        moved,
                        "removed",
                        lambda c, job, moved=moved: battle_states.set_state_of(c, moved, ("ok",), "removed"),
                    )
            try:
                with store.write(conn):
                    if kind in ("here", "other"):
                        _fight(conn, clock, rng, stamp)
                    elif kind == "held":  # logged, not counted: the log moves, the ratings do not
                        _fight(conn, clock, rng, stamp, state="flagged")
                    elif kind == "repeat":  # the same result again: nothing is logged
                        _fight(conn, clock, rng, stamp)
                        stamp[0] -= 1
                        rng_state = rng.getstate()
                        _fight(conn, clock, rng, stamp)
                        rng.setstate(rng_state)
                    elif kind == "retire":
                        bot = rng.choice(ids)
                        if not apply.retire(conn, rid, bot, moment, "test"):
                            apply.restore(conn, rid, bot, moment, "test")
                    elif kind == "undone":
                        _fight(conn, clock, rng, stamp)
                        raise Undone
                    elif kind == "rebuild":
                        rebuild_rumble(conn, "roborumble", 35, 3)
            except Undone:
                pass
            with store.write(db):
                held = _view(fields.current(db, rid).field)
            assert held == _fresh(path, rid), kind
    finally:
        other.close()
    assert all(kinds.values()), kinds
