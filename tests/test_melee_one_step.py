"""One melee battle, uploaded as the real client sends it, is one rating step for each of its bots
in every rating, taken at once (issue 13, items 1 and 2).

The client sends an ordinary battle of 10 bots as 45 pair results and a prioritized one as the 17
pairs of its two chosen bots (protocol.md 7.5). Expected values are written out here from the
sources: RoboRumble Elo (seed 004), Glickman's Glicko step 2, Rank Points (seed 000) and XonStat's
pairwise mean (seed 002); Glicko-2 is one call of the pure module (tested on Glickman's example in
tests/ratings/test_glicko2.py) over the games computed here.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from conftest import battle

from rumble import store
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.battle import Battle, Side
from rumble.protocol.replies import Kind
from rumble.ratings import glicko2
from rumble.store.tables import snapshot

Q = math.log(10) / 400


def pairs_of_battle(scores: dict[str, int], time_ms: int, priority: tuple[str, str] | None = None) -> list[Battle]:
    """The client's pair results of one battle (protocol.md 7.5): i < j over the final ranking,
    whole-battle figures in each; only the pairs of the two ``priority`` bots if prioritized."""
    ranked = sorted(scores, key=lambda name: -scores[name])
    sides = {name: Side(name, scores[name], scores[name] // 3, min(35, scores[name] // 800)) for name in ranked}
    return [
        replace(
            battle(game="meleerumble", melee=True, field="1000x1000", time_ms=time_ms + k // 20),
            first=sides[a],
            second=sides[b],
        )
        for k, (a, b) in enumerate(
            (a, b)
            for i, a in enumerate(ranked)
            for b in ranked[i + 1 :]
            if priority is None or a in priority or b in priority
        )
    ]


def ratings(app) -> dict[str, dict]:
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        rows = db.execute(
            "SELECT b.full_name, g.* FROM ratings g JOIN bots b ON b.id = g.bot_id JOIN rumbles r ON r.id = g.rumble_id "
            "WHERE r.name = 'meleerumble'"
        )
        names = [d[0] for d in rows.description]
        return {row[0]: dict(zip(names, row)) for row in rows.fetchall()}
    finally:
        db.close()


def expected_one_step(scores: dict[str, int]) -> dict[str, dict]:
    """Every bot's ratings after one battle from a fresh start (all at 1600 Elo, 1500 ± 350, RP 0,
    XonStat 1500 with K 200): each bot's games are its 9 pairs, score share s_i/(s_i + s_j)."""
    out = {}
    for name in scores:
        shares = [
            0.5 if scores[name] + scores[o] == 0 else scores[name] / (scores[name] + scores[o])
            for o in scores
            if o != name
        ]
        # RoboRumble Elo: Σ 3·(APS − E), E = 1/2 between equal ratings, over its 9 pairings (APS = share)
        elo = 1600 + sum(3 * (s - 0.5) for s in shares)
        # Glicko step 2 against opponents at 1500 ± 350
        g = 1 / math.sqrt(1 + 3 * Q * Q * 350**2 / math.pi**2)
        d2 = 1 / (Q * Q * sum(g * g * 0.25 for _ in shares))
        precision = 1 / 350**2 + 1 / d2
        glicko = 1500 + Q / precision * sum(g * (s - 0.5) for s in shares)
        glicko_rd = max(math.sqrt(1 / precision), 25.0)
        new2 = glicko2.update(1500.0, 350.0, 0.06, [1500.0] * 9, [350.0] * 9, shares)
        # Rank Points (seed 000): half way from 0 towards r − 3RD mapped from [450, 2550] onto [0, 10000],
        # up only on a win (mean share above 0.5), 1 to 500 points, at most r + 3RD mapped; no upset bonus
        # between equal ratings
        points = lambda r: min(max((r - 450) / 2100 * 10000, 0), 10000)  # noqa: E731
        mean = sum(shares) / len(shares)
        rp = min(max(0.5 * (points(new2.r - 3 * new2.rd) - 0), 1), 500) if mean > 0.5 else 0.0
        rp = min(rp, points(new2.r + 3 * new2.rd)) if mean > 0.5 else rp
        xonstat = 1500 + sum(200 * (s - 0.5) for s in shares) / 9
        out[name] = dict(
            elo=elo,
            glicko=glicko,
            glicko_rd=glicko_rd,
            glicko2=new2.r,
            glicko2_rd=new2.rd,
            glicko2_volatility=new2.sigma,
            rank_points=rp,
            xonstat=xonstat,
        )
    return out


def check(got: dict[str, dict], scores: dict[str, int], received_at: float) -> None:
    expected = expected_one_step(scores)
    assert set(got) == set(scores)
    for name, values in expected.items():
        row = got[name]
        assert row["xonstat_battles"] == 1 and row["rated_at"] == received_at, name  # one step each, at once
        for key, value in values.items():
            assert row[key] == pytest.approx(value, rel=1e-9, abs=1e-9), (name, key)
        assert 0 <= row["rank_points"] <= 500


def fresh_scores(seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    return {f"mel.Bot{i} 1.0": rng.randint(2_000, 20_000) for i in range(10)}


def last_received(app) -> float:
    """The receive time of the newest logged pair, in seconds since 1970."""
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        (when,) = db.execute("SELECT max(received_at) FROM battles").fetchone()
        return (datetime.fromisoformat(when) - datetime(1970, 1, 1)).total_seconds()
    finally:
        db.close()


def test_a_45_pair_battle_is_one_step_of_every_rating_for_each_bot(app, upload, clock):
    """Nothing is rated while the pairs arrive; the 45th completes the battle and rates each of the
    10 bots once. (Rated per pair, the winner had over 4,000 Rank Points after this one battle.)"""
    scores = fresh_scores(1)
    pairs = pairs_of_battle(scores, clock.now_ms() - 60_000)
    assert len(pairs) == 45
    for pair in pairs[:-1]:
        assert upload(pair).kind is Kind.ACCEPTED
    assert ratings(app) == {}
    assert upload(pairs[-1]).kind is Kind.ACCEPTED
    check(ratings(app), scores, last_received(app))


def test_a_prioritized_17_pair_battle_is_rated_at_once_one_step_each(app, upload, clock):
    """The 17 pairs of the two chosen bots (3rd and 6th here) are the whole battle: its 17th pair
    rates all 10 bots once, no 5-minute wait. Every pair carries whole-battle scores, so each bot's
    games are its 9 pair results all the same."""
    scores = fresh_scores(2)
    ranked = sorted(scores, key=lambda name: -scores[name])
    pairs = pairs_of_battle(scores, clock.now_ms() - 60_000, priority=(ranked[2], ranked[5]))
    assert len(pairs) == 17
    for pair in pairs[:-1]:
        assert upload(pair).kind is Kind.ACCEPTED
    assert ratings(app) == {}
    assert upload(pairs[-1]).kind is Kind.ACCEPTED
    got = ratings(app)
    expected = expected_one_step(scores)
    assert set(got) == set(scores) and all(row["xonstat_battles"] == 1 for row in got.values())
    for name in scores:  # Elo sums the bot's pairings, which are only the pairs sent: the others' step
        if name in (ranked[2], ranked[5]):  # is over their 2 pairings; the chosen two have all 9
            assert got[name]["elo"] == pytest.approx(expected[name]["elo"], rel=1e-12)
        for key in ("glicko", "glicko_rd", "glicko2", "glicko2_rd", "rank_points", "xonstat"):
            assert got[name][key] == pytest.approx(expected[name][key], rel=1e-9, abs=1e-9), (name, key)


def test_two_battles_rebuild_to_the_same_ratings_bit_for_bit(app, upload, clock):
    for n, seed in enumerate((3, 4)):
        scores = fresh_scores(seed)
        ranked = sorted(scores, key=lambda name: -scores[name])
        for pair in pairs_of_battle(
            scores, clock.now_ms() - 120_000 + 30_000 * n, priority=(ranked[1], ranked[7]) if n else None
        ):
            assert upload(pair).kind is Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        online = snapshot(db)
        assert len(online["ratings"]) == 10
        with store.write(db):
            rebuild_rumble(db, "meleerumble", 35, min_battles=3)
        assert snapshot(db) == online
    finally:
        db.close()


def test_two_workers_keep_their_copies_current_when_the_other_closes_a_battle(app, clock):
    """Two server workers (two connections, each with its own copy of the field) take turns: the
    one that closes a battle changes ten bots' ratings; the other must reload them before it rates
    the next battle of the same bots, and after a sweep by either. Online then equals a rebuild."""
    from rumble.ingest import melee
    from rumble.ingest.apply import apply_battle, with_receipt

    workers = [store.connect(app.config["RUMBLE"]["DB"]) for _ in range(2)]
    try:
        base = clock.now()
        scores = [fresh_scores(5), fresh_scores(6), fresh_scores(7)]
        ranked = sorted(scores[2], key=lambda name: -scores[2][name])
        battles = [
            pairs_of_battle(scores[0], clock.now_ms() - 300_000),
            pairs_of_battle(scores[1], clock.now_ms() - 200_000),
            pairs_of_battle(scores[2], clock.now_ms() - 100_000, priority=(ranked[0], ranked[1])),
        ]
        k = 0
        for pairs in battles:
            for pair in pairs:
                k += 1
                worker = workers[k % 2]
                with store.write(worker):
                    apply_battle(
                        worker, with_receipt(pair, None, base.replace(microsecond=0) + timedelta(seconds=k)), 35, 3
                    )
        rid = worker.execute("SELECT id FROM rumbles WHERE name = 'meleerumble'").fetchone()[0]
        with store.write(workers[0]):  # the last battle (the two best chosen) waits for the timeout: a sweep
            assert len(melee.sweep(workers[0], rid, (base + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.000"))) == 1
        extra = pairs_of_battle(fresh_scores(5), clock.now_ms() - 50_000)  # the same bots again, on the other worker
        for pair in extra:
            with store.write(workers[1]):
                apply_battle(workers[1], with_receipt(pair, None, base + timedelta(hours=2)), 35, 3)
        online = snapshot(workers[0])
        steps = [n for (n,) in workers[0].execute("SELECT xonstat_battles FROM ratings WHERE rumble_id = ?", (rid,))]
        assert steps == [4] * 10  # four battles, one step each
        with store.write(workers[0]):
            rebuild_rumble(workers[0], "meleerumble", 35, min_battles=3)
        assert snapshot(workers[0]) == online
    finally:
        for worker in workers:
            worker.close()
