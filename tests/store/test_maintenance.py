"""Maintenance computed aside (rumble/maintenance/swap.py): uploads, retirements and revivals that arrive
while a rebuild or a rollback replays the log end in the same tables as a fresh blocking rebuild,
bit for bit, and the upload path keeps the tables equal to a rebuild after the swap."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import battle, now_ms, vouch_for_local_uploads

from rumble import store
from rumble.ingest import fields
from rumble.maintenance import jobs, swap
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.games import load_rumbles
from rumble.protocol.replies import Kind
from rumble.store import battle_states, rating_rows, uploader_sums
from rumble.store.battle_states import BattleFilter
from rumble.store.rumbles import rumble_id
from rumble.store.tables import snapshot
from rumble.web import get_db

BOTS = [f"pkg{i % 3}.Bot{i} 1.{i}" for i in range(10)]
ROUNDS = load_rumbles()["roborumble"].rounds


@pytest.fixture(autouse=True)
def operator_clients(app):
    """The local clients of these tests are the operator's own, vouched for: they may retire bots,
    and none of their battles is held as a stranger's (rumble/strangers.py)."""
    for name in ("Joe", "Jane", "Mallory"):
        vouch_for_local_uploads(app.config["RUMBLE"]["DB"], f"{name}@127.0.0.0/24")


def _season(upload, rng: random.Random, uploads: int, start_ms: int, uploader: str = "Jane") -> None:
    for n in range(uploads):
        a, b = rng.sample(BOTS, 2)
        total = rng.randint(1000, 8000)
        first = round(total * rng.random())
        assert (
            upload(battle(a, b, (first, total - first), (20, 15), time_ms=start_ms - n, uploader=uploader)).kind
            is Kind.ACCEPTED
        )


def _tables(db) -> tuple:
    participants = db.execute(
        "SELECT rumble_id, bot_id, active FROM participants ORDER BY rumble_id, bot_id"
    ).fetchall()
    return snapshot(db), participants, uploader_sums.rows(db)


def _fresh_rebuild(db) -> tuple:
    with store.write(db):
        rebuild_rumble(db, "roborumble", ROUNDS, 3)
    return _tables(db)


def _remove(client, name: str) -> str:
    body = f"version=1&game=roborumble&name={name.replace(' ', '_')}&dummy=NA\n".encode()
    return client.post("/RemoveOldParticipant", data=body).get_data(as_text=True)


def _assert_worker_copy_equals_a_fresh_load(app, caught_up: bool = True) -> None:
    """The test client's connection stands for a worker: its copy of the field, one generation behind
    after the swap, catches up on what the swap rewrote (or, if ``caught_up`` is False, is read
    again whole) and must equal a copy read afresh."""
    with app.app_context():
        db = get_db()
        rid = rumble_id(db, "roborumble")
        held = db.shared[("field", rid)]
        assert held.seen[2] + 1 == db.execute("SELECT generation FROM rumbles WHERE id = ?", (rid,)).fetchone()[0]
        assert (rating_rows.swap_after(db, rid, held.seen[2]) is not None) is caught_up
        with store.write(db):
            copy = fields.current(db, rid)
            fresh = fields.load(db, rid)
        assert (copy is held) is caught_up and copy.seen == fresh.seen
        n = len(fresh.field.ids)
        assert copy.field.ids == fresh.field.ids
        assert np.array_equal(copy.field.active[:n], fresh.field.active[:n])
        assert np.array_equal(copy.field.aps[:n, :n], fresh.field.aps[:n, :n], equal_nan=True)
        assert np.array_equal(copy.field.table[:, :n], fresh.field.table[:, :n], equal_nan=True)
        assert np.array_equal(copy.field.xonstat_battles[:n], fresh.field.xonstat_battles[:n])


class Meanwhile:
    """A progress callback that stands for the server's other workers: on the first calls (the
    replay aside and the first catch-up, both outside the write lock) it uploads battles and
    retires a bot, as clients would while the maintenance job runs. It is never called under the
    swap's lock (an upload from there would wait for that lock forever)."""

    def __init__(self, client, upload, rng: random.Random):
        self.client, self.upload, self.rng = client, upload, rng
        self.calls = 0
        self.now = now_ms() - 100_000

    def __call__(self, n: int) -> None:
        self.calls += 1
        if self.calls == 1:  # during the replay of the whole log
            _season(self.upload, self.rng, 12, self.now, uploader="Joe")
            assert _remove(self.client, BOTS[3]) == f"OK. {BOTS[3]} retired from roborumble\n"
        elif self.calls == 2:  # during the first catch-up, after the comparison with the live tables
            _season(self.upload, self.rng, 6, self.now - 50, uploader="Joe")
            assert _remove(self.client, BOTS[5]) == f"OK. {BOTS[5]} retired from roborumble\n"
            new = battle(BOTS[3], "new.Bot 1.0", (4000, 2000), (20, 15), time_ms=self.now - 99, uploader="Joe")
            assert self.upload(new).kind is Kind.ACCEPTED  # revives BOTS[3], brings in a new bot


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_uploads_during_a_rebuild_end_equal_to_a_fresh_rebuild(app, client, upload, seed):
    rng = random.Random(seed)
    _season(upload, rng, 150, now_ms())
    db = store.connect(app.config["RUMBLE"]["DB"])
    before = db.execute("SELECT generation FROM rumbles WHERE name = 'roborumble'").fetchone()[0]
    meanwhile = Meanwhile(client, upload, rng)
    with swap.one_at_a_time(db):
        job = swap.recompute(db, "roborumble", ROUNDS, 3, meanwhile)
    assert meanwhile.calls >= 2  # the aside replay, a catch-up (none under the swap's lock)
    assert job.replay.replayed == 150 + 12 + 6 + 1
    assert db.execute("SELECT generation FROM rumbles WHERE name = 'roborumble'").fetchone()[0] == before + 1
    swapped = _tables(db)
    _assert_worker_copy_equals_a_fresh_load(app)
    assert swapped == _fresh_rebuild(db)
    # The server's copy of the field reloads after the generation bump: later uploads still equal a rebuild.
    _season(upload, rng, 20, meanwhile.now - 200)
    assert _remove(client, BOTS[7]) == f"OK. {BOTS[7]} retired from roborumble\n"
    after = _tables(db)
    assert after == _fresh_rebuild(db) and after != swapped
    db.close()


def test_a_rollback_computed_aside_moves_only_the_battles_that_matched_when_asked(app, client, upload):
    rng = random.Random(7)
    now = now_ms()
    _season(upload, rng, 80, now)
    _season(upload, rng, 30, now - 1000, uploader="Mallory")
    db = store.connect(app.config["RUMBLE"]["DB"])
    max_id = jobs.newest_battle(db)
    meanwhile = Meanwhile(client, upload, rng)
    meanwhile.upload = lambda result: upload(
        result.__class__(**{**vars(result), "uploader": "Mallory"})
    )  # more of Mallory's
    outcome = jobs.change_battles(
        db,
        "rollback",
        BattleFilter(uploader="Mallory"),
        max_id,
        3,
        "alice",
        {"via": "test"},
        lambda game, done, total: meanwhile(done),
    )
    assert outcome.moved == {"roborumble": 30}
    _assert_worker_copy_equals_a_fresh_load(app)
    states = dict(
        db.execute(
            "SELECT state, count(*) FROM battles WHERE uploader_id = (SELECT id FROM uploaders WHERE name = 'Mallory') GROUP BY state"
        ).fetchall()
    )
    assert states == {"removed": 30, "ok": 12 + 6 + 1}  # those sent while it ran still count
    assert _tables(db) == _fresh_rebuild(db)
    (entry,) = db.execute("SELECT who, action, battles FROM audit_log").fetchall()
    assert entry == ("alice", "rollback", 30)
    db.close()


@pytest.mark.parametrize("moved_to", ["removed", "flagged", "ok"])
def test_a_state_change_is_replayed_in_compiled_code_and_equals_a_fresh_rebuild(app, client, upload, moved_to):
    """A rollback, a flag and an unflag replay the log aside in compiled code (the replay's pairings
    in arrays), counting the moved battles as in their new state, with uploads meanwhile; the
    tables equal a blocking rebuild of the log with those states written."""
    rng = random.Random(17)
    _season(upload, rng, 60, now_ms())
    _season(upload, rng, 25, now_ms() - 1000, uploader="Mallory")
    db = store.connect(app.config["RUMBLE"]["DB"])
    mallory = [
        battle_id
        for (battle_id,) in db.execute(
            "SELECT id FROM battles WHERE uploader_id = (SELECT id FROM uploaders WHERE name = 'Mallory')"
        )
    ]
    if moved_to == "ok":  # an unflag: Mallory's battles flagged first, the tables rebuilt to match
        with store.write(db):
            battle_states.set_state_of(db, mallory, ("ok",), "flagged")
            rebuild_rumble(db, "roborumble", ROUNDS, 3)
    before = _tables(db)

    def in_swap(conn, job) -> None:
        battle_states.set_state_of(conn, mallory, ("ok", "flagged"), moved_to)

    with swap.one_at_a_time(db):
        job = swap.recompute(
            db, "roborumble", ROUNDS, 3, Meanwhile(client, upload, rng), frozenset(mallory), moved_to, in_swap
        )
    assert job.replay.arrays is not None and job.replay.state == {}  # the compiled replay's arrays
    after = _tables(db)
    assert after == _fresh_rebuild(db) and after != before
    counted = db.execute(
        "SELECT count(*) FROM battles WHERE uploader_id = (SELECT id FROM uploaders WHERE name = 'Mallory') AND state = 'ok'"
    ).fetchone()[0]
    assert counted == (25 if moved_to == "ok" else 0)
    db.close()


@pytest.mark.parametrize("share", [0.1, 1.0])
def test_a_worker_catches_up_on_the_pairs_a_swap_rewrote_unless_they_are_a_large_share(
    app, client, upload, monkeypatch, share
):
    """The swap records the pairs it rewrote for the workers to catch up on while they are at most
    WORKER_CATCH_UP_SHARE of the rumble's pairs (here with no floor of a fixed number); beyond
    that it records none, and a worker reads the rumble again. Either way its copy equals a fresh load."""
    monkeypatch.setattr(swap, "WORKER_CATCH_UP_PAIRS", 0)
    monkeypatch.setattr(swap, "WORKER_CATCH_UP_SHARE", share)
    rng = random.Random(7)
    now = now_ms()
    _season(upload, rng, 80, now)
    _season(upload, rng, 30, now - 1000, uploader="Mallory")
    db = store.connect(app.config["RUMBLE"]["DB"])
    pairs = {tuple(sorted(p)) for p in db.execute("SELECT first_bot_id, second_bot_id FROM battles")}
    rolled = {
        tuple(sorted(p))
        for p in db.execute(
            "SELECT first_bot_id, second_bot_id FROM battles WHERE uploader_id = (SELECT id FROM uploaders WHERE name = 'Mallory')"
        )
    }
    assert 0.1 * len(pairs) < len(rolled) <= len(pairs)  # more than a tenth of the rumble's pairs change
    outcome = jobs.change_battles(
        db, "rollback", BattleFilter(uploader="Mallory"), jobs.newest_battle(db), 3, "alice", {"via": "test"}
    )
    assert outcome.moved == {"roborumble": 30}
    _assert_worker_copy_equals_a_fresh_load(app, caught_up=share == 1.0)
    db.close()


def test_a_rebuild_rewrites_a_pairing_whose_time_is_the_same_instant_in_another_text(app, upload):
    """The comparison with the live tables (``swap._compare_arrays``) compares each pairing's time as
    text: one stored in another form than "YYYY-MM-DD HH:MM:SS.mmm" (a T, microseconds, no fraction)
    is rewritten, as a fresh rebuild writes it."""
    _season(upload, random.Random(5), 40, now_ms())
    db = store.connect(app.config["RUMBLE"]["DB"])
    fresh = _fresh_rebuild(db)
    keys = db.execute("SELECT bot_id, opponent_id FROM pairings ORDER BY bot_id, opponent_id LIMIT 3").fetchall()
    changes = ("replace(last_battle, ' ', 'T')", "last_battle || '000'", "substr(last_battle, 1, 19)")
    with store.write(db):
        for (a, b), change in zip(keys, changes):
            db.execute(f"UPDATE pairings SET last_battle = {change} WHERE bot_id = ? AND opponent_id = ?", (a, b))
    assert _tables(db) != fresh
    with swap.one_at_a_time(db):
        job = swap.recompute(db, "roborumble", ROUNDS, 3)
    assert job.written["pairings"] == 3
    assert _tables(db) == fresh
    db.close()


def test_a_restore_or_a_blocking_rebuild_meanwhile_stops_it_with_nothing_written(app, client, upload):
    _season(upload, random.Random(4), 40, now_ms())
    db = store.connect(app.config["RUMBLE"]["DB"])
    other = store.connect(app.config["RUMBLE"]["DB"])
    before = _tables(db)

    def rebuild_elsewhere(n: int) -> None:
        if not hasattr(rebuild_elsewhere, "done"):
            rebuild_elsewhere.done = True
            with store.write(other):
                rebuild_rumble(other, "roborumble", ROUNDS, 3)

    with pytest.raises(swap.Conflict, match="restored or rebuilt by other means"):
        swap.recompute(db, "roborumble", ROUNDS, 3, rebuild_elsewhere, frozenset({1, 2}), "removed")
    assert _tables(db) == before
    assert db.execute("SELECT count(*) FROM battles WHERE state != 'ok'").fetchone()[0] == 0
    other.close()
    db.close()
