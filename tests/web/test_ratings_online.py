"""Ratings as uploads update them: the all-pairings Elo by hand, retirements, several workers."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import battle, now_ms, vouch_for_local_uploads

from rumble import store
from rumble.app import create_app
from rumble.ingest import fields
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.games import load_rumbles
from rumble.protocol.upload import format_upload
from rumble.ratings.online import Field
from rumble.store.tables import snapshot
from rumble.web import close_thread_db, get_db


def _elo(client) -> dict[str, float]:
    return {row["name"]: row["elo"] for row in client.get("/Rankings?game=roborumble&api=1").json}


def test_roborumble_elo_of_three_bots_over_four_uploads(client, upload, clock):
    """Independent computation, seed 004 with peers.md section 7's signs: start 1600;
    E(A,B) = 1/(1 + 20^((rB − rA)/800)); after an upload each of its two bots moves by
    Σ_j 3·(Pair(X,j) − E(X,j)) over its pairings *after* the upload, from the ratings before it.

    Upload 1, A beats B 6000:4000: Pair(A,B) = 0.6, E = 0.5 for both: A +0.3 → 1600.3, B −0.3 → 1599.7.
    Upload 2, B beats C 7000:3000. B: Pair(B,A) = 0.4, E(B,A) = 1/(1 + 20^(0.6/800)) = 1/2.0022493
    = 0.4994383; Pair(B,C) = 0.7, E(B,C) = 1/(1 + 20^(0.3/800)) = 1/2.0011240 = 0.4997191;
    Δ = 3·(−0.0994383 + 0.2002809) = 0.3025278 → B = 1600.0025278. C: Pair(C,B) = 0.3,
    E(C,B) = 1/(1 + 20^(−0.3/800)) = 1/1.9988773 = 0.5002809; Δ = 3·(0.3 − 0.5002809) = −0.6008427
    → C = 1599.3991573 (A keeps 1600.3). Uploads 3 and 4 follow the same rule, computed in the loop
    below with plain floats and no rumble code.
    """
    results = [
        ("a.A 1", "b.B 1", 6000, 4000),
        ("b.B 1", "c.C 1", 7000, 3000),
        ("a.A 1", "c.C 1", 5500, 4500),
        ("a.A 1", "b.B 1", 3000, 7000),
    ]
    rating = {}
    pct: dict[tuple[str, str], list[float]] = {}
    now = clock.now_ms()

    def expected(ra: float, rb: float) -> float:
        return 1.0 / (1.0 + 20.0 ** ((rb - ra) / 800.0))

    for n, (x, y, sx, sy) in enumerate(results):
        upload(battle(x, y, (sx, sy), time_ms=now + n))
        pct.setdefault((x, y), []).append(sx / (sx + sy))
        pct.setdefault((y, x), []).append(sy / (sx + sy))
        before = {bot: rating.get(bot, 1600.0) for bot in (x, y)}
        for bot in (x, y):
            opponents = [(o, sum(v) / len(v)) for (me, o), v in pct.items() if me == bot]
            rating[bot] = before[bot] + sum(
                3.0 * (p - expected(before[bot], rating.get(o, 1600.0) if o not in before else before[o]))
                for o, p in opponents
            )
        got = _elo(client)
        assert got == {bot: pytest.approx(value, abs=1e-9) for bot, value in rating.items()}
        if n == 0:
            assert (got["a.A 1"], got["b.B 1"]) == (pytest.approx(1600.3, abs=1e-9), pytest.approx(1599.7, abs=1e-9))
        if n == 1:
            assert got == {
                "a.A 1": pytest.approx(1600.3, abs=1e-9),
                "b.B 1": pytest.approx(1600.0025278, abs=1e-6),
                "c.C 1": pytest.approx(1599.3991573, abs=1e-6),
            }


def test_a_retired_opponent_no_longer_counts(client, upload, clock):
    """After C retires, an upload of A against B moves A by its pairing with B alone."""
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", (6000, 4000), time_ms=now))
    upload(battle("a.A 1", "c.C 1", (9000, 1000), time_ms=now + 1))
    client.post("/RemoveOldParticipant", data=b"version=1&game=roborumble&name=c.C_1&dummy=NA\n")
    before = _elo(client)
    upload(battle("a.A 1", "b.B 1", (6000, 4000), time_ms=now + 2))
    after = _elo(client)
    e = 1.0 / (1.0 + 20.0 ** ((before["b.B 1"] - before["a.A 1"]) / 800.0))
    assert after["a.A 1"] == pytest.approx(before["a.A 1"] + 3.0 * (0.6 - e), abs=1e-12)
    assert "c.C 1" not in after


def test_ratings_columns_and_provisional_mark(client, upload):
    upload(battle())
    row = client.get("/Rankings?game=roborumble&api=1").json[0]
    assert {"elo", "glicko", "glicko_rd", "glicko2", "glicko2_rd", "rank_points", "xonstat", "provisional"} <= set(row)
    assert row["provisional"] is True  # one pairing cannot pin a rating down
    assert row["xonstat"] == pytest.approx(1500 + 200 * (6598 / 11481 - 0.5), abs=1e-9)  # K = 200 on a first battle
    html = client.get("/Rankings?game=roborumble&order=-glicko2").get_data(as_text=True)
    assert "±" in html and "?" in html


def test_two_workers_and_a_rebuild_agree_bit_for_bit(tmp_path, monkeypatch, clock):
    """Uploads and a retirement alternate between two workers, each with its own connection and its
    own in-memory copy of the rumble (as two gunicorn workers): each copy must follow the other's
    writes exactly, a retirement included, without reloading the whole rumble."""
    config = {"DB": str(tmp_path / "w.db")}
    app = create_app(config)
    vouch_for_local_uploads(config["DB"])
    loads = []
    real_load = fields.load
    monkeypatch.setattr(fields, "load", lambda db, rid: loads.append(rid) or real_load(db, rid))
    workers = [ThreadPoolExecutor(max_workers=1) for _ in range(2)]  # one thread, one connection each
    caches: list[dict] = [{}, {}]  # and a process's cache each, as two processes have

    def post(worker: int, path: str, body: bytes) -> str:
        def call() -> str:
            with app.app_context():
                get_db().shared = caches[worker]
            return app.test_client().post(path, data=body).get_data(as_text=True)

        return workers[worker].submit(call).result()

    rng = random.Random(4)
    bots = [f"p.B{i} 1" for i in range(7)]
    now = clock.now_ms()
    for n in range(120):
        a, b = rng.sample(bots, 2)
        s = rng.randint(0, 6000)
        answer = post(n % 2, "/UploadedResults", format_upload(battle(a, b, (s, 6000 - s), time_ms=now + n)))
        assert answer.splitlines()[-1] == f"OK. {a} vs {b} received for roborumble", answer
        if n == 60:
            assert (
                post(1, "/RemoveOldParticipant", b"version=1&game=roborumble&name=p.B3_1&dummy=NA\n")
                == "OK. p.B3 1 retired from roborumble\n"
            )
    for worker in workers:
        worker.submit(close_thread_db).result()
        worker.shutdown()
    assert len(loads) == 2  # each worker read the rumble once, then only caught up
    db = store.connect(config["DB"])
    online = snapshot(db)
    assert len(online["ratings"]) == 7
    with store.write(db):
        rebuild_rumble(db, "roborumble", load_rumbles()["roborumble"].rounds, 3)
    assert snapshot(db) == online
    db.close()


def test_threads_of_one_worker_share_one_copy_and_agree_with_a_rebuild(tmp_path, monkeypatch):
    """Eight threads of one process upload at once, each on its own
    connection: they read the rumble into memory once between them, and the ratings they leave are
    those a rebuild computes from the log, bit for bit."""
    config = {"DB": str(tmp_path / "t.db")}
    app = create_app(config)
    loads = []
    real_load = fields.load
    monkeypatch.setattr(fields, "load", lambda db, rid: loads.append(rid) or real_load(db, rid))
    rng = random.Random(8)
    bots = [f"p.B{i} 1" for i in range(9)]
    now = now_ms()
    bodies, expected = [], []
    for n in range(160):
        a, b = rng.sample(bots, 2)
        s = rng.randint(0, 6000)
        bodies.append(format_upload(battle(a, b, (s, 6000 - s), time_ms=now + n)))
        expected.append(f"OK. {a} vs {b} received for roborumble")

    def post(body: bytes) -> str:
        try:
            return app.test_client().post("/UploadedResults", data=body).get_data(as_text=True)
        finally:
            close_thread_db()

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(post, bodies))
    assert [answer.splitlines()[-1] for answer in answers] == expected
    assert len(loads) == 1
    db = store.connect(config["DB"])
    online = snapshot(db)
    assert len(online["ratings"]) == 9
    with store.write(db):
        rebuild_rumble(db, "roborumble", load_rumbles()["roborumble"].rounds, 3)
    assert snapshot(db) == online
    db.close()


def test_field_keeps_bots_in_id_order_when_an_older_bot_joins():
    field = Field(capacity=2)
    for bot in (2, 5, 9):
        field.set_active(bot, True)
    field.set_pairing(9, 2, 70.0)
    field.set_pairing(2, 9, 30.0)
    field.set_active(4, False)  # an older bot (id 4) joins after 5 and 9
    assert field.ids == [2, 4, 5, 9]
    i2, i4, i9 = field.position[2], field.position[4], field.position[9]
    assert field.aps[i9, i2] == 0.7 and field.aps[i2, i9] == 0.3
    assert np.isnan(field.aps[i4]).all() and list(field.active[:4]) == [True, False, True, True]
