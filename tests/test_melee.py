"""Melee battles reassembled from their pair uploads (rumble/ingest/melee.py): each rated exactly once,
whatever order its pairs come in; missing pairs; late pairs; online equals rebuild bit for bit.

Expected ratings come from tests/weng_lin_paper.py (the paper's Algorithm 4, written separately)
and from XonStat's pairwise mean written out here, never from rumble's own output.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from conftest import battle
from weng_lin_paper import paper_update

from rumble import store
from rumble.ingest import melee
from rumble.ingest.apply import apply_battle
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.battle import Battle, Side
from rumble.protocol.games import load_rumbles
from rumble.protocol.replies import Kind
from rumble.store import melee_battles
from rumble.store.battle_states import set_state_of
from rumble.store.rumbles import rumble_id
from rumble.store.tables import snapshot

BOTS = [f"mel.Bot{i} 1.0" for i in range(16)]
T0 = 0  # the client time (ms) of a test's first battle, and START its first receive time:
START = datetime(1970, 1, 1)  # both set from the test's clock by `epoch`


@pytest.fixture(autouse=True)
def epoch(clock):
    """T0 an hour before the test's clock (well within the 24 hours an upload may be old), START a
    minute after it."""
    global T0, START
    T0 = clock.now_ms() - 3_600_000
    START = datetime.fromtimestamp(T0 / 1000 + 60, UTC).replace(tzinfo=None)


def melee_pairs(
    scores: dict[str, int],
    time_ms: int,
    uploader: str = "Jane Doe",
    game: str = "meleerumble",
    priority: tuple[str, str] | None = None,
) -> list[Battle]:
    """The pair uploads of one melee battle as the client makes them (protocol.md 7.5): for i < j
    over the final ranking, each pair with both bots' whole-battle figures; only the pairs of the two
    ``priority`` bots for a prioritized battle; ``time`` a millisecond apart every few pairs."""
    ranked = sorted(scores, key=lambda name: -scores[name])
    sides = {name: Side(name, scores[name], scores[name] // 3, min(35, scores[name] // 800)) for name in ranked}
    pairs = []
    for i, first in enumerate(ranked):
        for second in ranked[i + 1 :]:
            if priority is None or first in priority or second in priority:
                pairs.append(
                    replace(
                        battle(
                            game=game,
                            melee=True,
                            field="1000x1000",
                            uploader=uploader,
                            time_ms=time_ms + len(pairs) // 20,
                        ),
                        first=sides[first],
                        second=sides[second],
                    )
                )
    return pairs


def random_scores(rng: random.Random, n: int = 10) -> dict[str, int]:
    return {name: rng.randint(0, 20_000) for name in rng.sample(BOTS, n)}


def at(seconds: float) -> str:
    """A receive time ``seconds`` after START, as the store writes it."""
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def send(db, pairs: list[Battle], received: str | None = None) -> None:
    """Apply uploads in order, as the upload endpoint does (one transaction each)."""
    for pair in pairs:
        with store.write(db):
            apply_battle(db, pair if received is None else replace(pair, received_at=received), 35, 3)


def stamped(pairs: list[Battle], seconds: float) -> list[Battle]:
    return [replace(pair, received_at=at(seconds)) for pair in pairs]


def battles_of(db, game: str = "meleerumble") -> list[dict]:
    """Each reassembled battle: its state, pairs, late pairs and {bot name: (score, rank)}."""
    rid = rumble_id(db, game)
    result = []
    for row in db.execute(
        "SELECT id, state, pairs, late_pairs, closed_by FROM melee_battles WHERE rumble_id = ? ORDER BY id", (rid,)
    ):
        bots = db.execute(
            "SELECT b.full_name, e.score, e.rank FROM melee_entries e JOIN bots b ON b.id = e.bot_id "
            "WHERE e.melee_battle_id = ?",
            (row[0],),
        ).fetchall()
        result.append(
            dict(
                id=row[0],
                state=row[1],
                pairs=row[2],
                late=row[3],
                closed_by=row[4],
                bots={n: (s, r) for n, s, r in bots},
            )
        )
    return result


def melee_ratings(db, game: str = "meleerumble") -> dict[str, tuple[float, float, int, float]]:
    rows = db.execute(
        "SELECT b.full_name, m.mu, m.sigma, m.battles, m.xonstat FROM melee_ratings m JOIN bots b ON b.id = m.bot_id "
        "WHERE m.rumble_id = ?",
        (rumble_id(db, game),),
    ).fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}


def expected_ratings(battles: list[dict[str, int]]) -> dict[str, tuple[float, float, int, float]]:
    """Weng-Lin by the paper and XonStat's mean of pairwise changes, battle after battle (no idle time)."""
    state: dict[str, tuple[float, float, int, float]] = {}
    for scores in battles:
        names = sorted(scores)
        old = [state.get(n, (25.0, 25 / 3, 0, 1500.0)) for n in names]
        ranks = [1 + sum(scores[o] > scores[n] for o in names) for n in names]
        new = paper_update([o[0] for o in old], [o[1] for o in old], ranks)
        elo = []
        for i, n in enumerate(names):
            k = 200 - 5 * min(old[i][2], 32)
            changes = []
            for j, o in enumerate(names):
                if j != i:
                    total = scores[n] + scores[o]
                    share = 0.5 if total == 0 else scores[n] / total
                    changes.append(k * (share - 1 / (1 + 10 ** ((old[j][3] - old[i][3]) / 400))))
            elo.append(old[i][3] + sum(changes) / len(changes))
        for i, n in enumerate(names):
            state[n] = (new[i][0], new[i][1], old[i][2] + 1, elo[i])
    return state


def assert_ratings(got, expected):
    assert set(got) == set(expected)
    for name, values in expected.items():
        assert got[name][2] == values[2], name
        assert got[name][:2] + got[name][3:] == pytest.approx(values[:2] + values[3:], rel=1e-12), name


def test_shuffled_interleaved_battles_are_each_rated_once(db, upload):
    """Three 10-bot battles (two by one uploader 30 s apart, sharing bots; one by another uploader)
    have their 135 pairs uploaded shuffled together, then 20 of them again (client retries): three
    battles, 45 pairs each, rated once each, in the order their last pair arrived."""
    rng = random.Random(3)
    scores = [random_scores(rng) for _ in range(3)]
    pairs = [
        melee_pairs(scores[0], T0),
        melee_pairs(scores[1], T0 + 30_000),
        melee_pairs(scores[2], T0 + 5, uploader="Joe"),
    ]
    tagged = [(k, p) for k, battle_pairs in enumerate(pairs) for p in battle_pairs]
    rng.shuffle(tagged)
    for _, pair in tagged:
        assert upload(pair).kind is Kind.ACCEPTED
    for _, pair in rng.sample(tagged, 20):
        assert upload(pair).kind is Kind.DUPLICATE
    found = battles_of(db)
    assert len(found) == 3
    assert all(
        b["state"] == "rated" and b["pairs"] == 45 and b["late"] == 0 and b["closed_by"] == "complete" for b in found
    )
    assert sorted(tuple(sorted(b["bots"])) for b in found) == sorted(tuple(sorted(s)) for s in scores)
    for b in found:
        (original,) = [s for s in scores if set(s) == set(b["bots"])]
        assert {n: s for n, (s, _) in b["bots"].items()} == original
    last_pair = {k: max(i for i, (kk, _) in enumerate(tagged) if kk == k) for k in range(3)}
    order = sorted(range(3), key=lambda k: last_pair[k])
    assert_ratings(melee_ratings(db), expected_ratings([scores[k] for k in order]))


def test_each_division_reassembles_its_own_copy(db, upload):
    """The client sends each pair to meleerumble and to the divisions both bots qualify for: the
    division gets its own battle of the bots it saw, rated in its own tables."""
    rng = random.Random(4)
    scores = random_scores(rng)
    small = set(list(scores)[:6])
    for pair in melee_pairs(scores, T0):
        assert upload(pair).kind is Kind.ACCEPTED
        if pair.first.name in small and pair.second.name in small:
            assert upload(replace(pair, game="nanomeleerumble")).kind is Kind.ACCEPTED
    (general,) = battles_of(db)
    (nano,) = battles_of(db, "nanomeleerumble")
    assert (general["state"], set(general["bots"])) == ("rated", set(scores))
    assert (nano["state"], nano["pairs"], set(nano["bots"])) == ("open", 15, small)  # 6 bots: not the stock 10, waits
    assert melee_ratings(db, "nanomeleerumble") == {}


def top_two(scores: dict[str, int]) -> tuple[str, str]:
    """The two best scores: a prioritized battle of these two looks like an ordinary battle's first 17 pairs."""
    ranked = sorted(scores, key=lambda name: -scores[name])
    return ranked[0], ranked[1]


def test_a_prioritized_battle_is_rated_at_its_17th_pair_with_every_bot_it_named(db):
    """17 pairs of a prioritized battle (its two chosen bots 4th and 5th) name all 10 bots and are the
    whole battle: it is rated with all 10 as its last pair arrives, no timeout."""
    rng = random.Random(5)
    scores = random_scores(rng)
    chosen = tuple(sorted(scores, key=lambda name: -scores[name])[3:5])
    pairs = stamped(melee_pairs(scores, T0, priority=chosen), 0)
    send(db, pairs[:-1])
    assert [(b["state"], b["pairs"]) for b in battles_of(db)] == [("open", 16)]
    send(db, pairs[-1:])
    (first,) = battles_of(db)
    assert (first["state"], first["pairs"], first["closed_by"], set(first["bots"])) == (
        "rated",
        17,
        "prioritized",
        set(scores),
    )
    assert_ratings(melee_ratings(db), expected_ratings([scores]))


def test_a_prioritized_battle_of_the_two_best_waits_for_the_timeout(db):
    """When the two chosen bots finish first and second, the 17 pairs are exactly an ordinary
    battle's first 17 (ranking order). The server handed no priority pair out here (the client
    also prioritizes bots with few battles in its ratings files, protocol.md 8), so nothing says
    the battle is whole: it waits until an upload to the rumble comes TIMEOUT_S after its last
    pair, then is rated with all 10, before that upload."""
    rng = random.Random(5)
    scores = random_scores(rng)
    send(db, stamped(melee_pairs(scores, T0, priority=top_two(scores)), 0))
    other = random_scores(rng)
    later = melee_pairs(other, T0 + 600_000, uploader="Joe")
    send(db, stamped(later[:1], melee.TIMEOUT_S - 1))
    assert [b["state"] for b in battles_of(db)] == ["open", "open"]
    send(db, stamped(later[1:2], melee.TIMEOUT_S))
    first, second = battles_of(db)
    assert (first["state"], first["pairs"], first["closed_by"], set(first["bots"])) == (
        "rated",
        17,
        "timeout",
        set(scores),
    )
    assert second["state"] == "open"
    assert_ratings(melee_ratings(db), expected_ratings([scores]))


def the_battle(db, bots, game: str = "meleerumble") -> dict:
    """The one reassembled battle of exactly these bots."""
    (found,) = [b for b in battles_of(db, game) if set(b["bots"]) == set(bots)]
    return found


def assert_rebuild_equals_online(app, db, *games: str) -> None:
    """Each rumble recomputed aside (a maintenance job's TEMP copies of the melee tables, then a
    swap of what differs), then by a blocking rebuild: both leave every melee row and rating as online."""
    from rumble.maintenance import swap

    def state() -> dict:
        return {
            game: (melee_battles.dump(db, rumble_id(db, game)), snapshot(db, rumble_id(db, game))) for game in games
        }

    online, rumbles = state(), load_rumbles()
    job_db = store.connect(app.config["RUMBLE"]["DB"])
    for game in games:
        swap.recompute(job_db, game, rumbles[game].rounds, 3)
    job_db.close()
    assert state() == online
    with store.write(db):
        for game in games:
            rebuild_rumble(db, game, rumbles[game].rounds, min_battles=3)
    assert state() == online


def test_a_battle_of_a_priority_pair_handed_out_whose_pair_finish_first_and_second_is_rated_when_its_uploader_goes_on(
    app, db, upload, clock, monkeypatch
):
    """Issue 33 item 6, first case. The server answers the pair that opens a battle with a priority
    pair [a,b]; the client fights a, b and 8 others and sends only the 17 pairs of a and b. With a
    and b first and second those 17 are exactly the first 17 of an ordinary battle (ranking order),
    and an ordinary battle of the same uploader with a and b on top can come after the hand-out too
    (fought before the client had the line: the real client did this in a run of two iterations),
    so the 17th pair cannot close the battle. The uploader's next pair can: an ordinary battle's
    18th pair follows its 17th at once, so the ordinary battle completes at its 45th pair, and the
    prioritized one is rated as the uploader's next pair (another battle's) arrives, not 5 minutes
    later. Another uploader's battle with the same two on top (not handed to it) still waits. A
    rebuild closes the battle at the same pair."""
    from rumble.ingest import decide

    monkeypatch.setattr(decide, "_rng", random.Random(21))  # the server's draw of the priority pair, repeatable
    rng = random.Random(21)
    now = clock.now_ms()
    first = {name: rng.randint(2_000, 20_000) for name in BOTS[:10]}
    for pair in melee_pairs(first, now - 600_000):
        assert upload(pair).kind is Kind.ACCEPTED
    (opener,) = melee_pairs({BOTS[10]: 9_000, BOTS[11]: 8_000}, now - 500_000)  # opens a battle: answered [a,b]
    answer = upload(opener)
    assert answer.kind is Kind.ACCEPTED and answer.priority is not None
    a, b = answer.priority
    others = [name for name in BOTS if name not in (a, b)]

    def on_top(seed: int) -> dict[str, int]:
        """a and b first and second, 8 others below them."""
        draw = random.Random(seed)
        return {a: 30_000 + seed, b: 25_000 + seed} | {name: draw.randint(1_000, 20_000) for name in others[:8]}

    ordinary = on_top(1)
    for pair in melee_pairs(ordinary, now - 450_000):
        assert upload(pair).kind is Kind.ACCEPTED
    found = battles_of(db)[-1]
    assert (set(found["bots"]), found["state"], found["pairs"], found["late"], found["closed_by"]) == (
        set(ordinary),
        "rated",
        45,
        0,
        "complete",
    )
    prioritized = on_top(2)
    pairs = melee_pairs(prioritized, now - 300_000, priority=(a, b))
    assert len(pairs) == 17 and [(p.first, p.second) for p in pairs] == [
        (p.first, p.second) for p in melee_pairs(prioritized, now - 300_000)[:17]
    ]
    for pair in pairs:
        assert upload(pair).kind is Kind.ACCEPTED
    assert [(b["state"], b["pairs"]) for b in battles_of(db)[-1:]] == [("open", 17)]
    (next_pair,) = melee_pairs({BOTS[12]: 9_000, BOTS[13]: 8_000}, now - 200_000)  # the uploader goes on
    assert upload(next_pair).kind is Kind.ACCEPTED
    found = battles_of(db)[-2]
    assert (set(found["bots"]), found["state"], found["pairs"], found["closed_by"]) == (
        set(prioritized),
        "rated",
        17,
        "prioritized",
    )
    assert_ratings(melee_ratings(db), expected_ratings([first, ordinary, prioritized]))
    joes = on_top(3)
    for pair in melee_pairs(joes, now - 100_000, uploader="Joe", priority=(a, b)):
        assert upload(pair).kind is Kind.ACCEPTED
    (joes_next,) = melee_pairs({BOTS[14]: 9_000, BOTS[15]: 8_000}, now - 50_000, uploader="Joe")
    assert upload(joes_next).kind is Kind.ACCEPTED
    found = battles_of(db)[-2]
    assert (set(found["bots"]), found["state"], found["pairs"]) == (set(joes), "open", 17)
    assert_rebuild_equals_online(app, db, "meleerumble")


def client_order(pairs: list[Battle], divisions: dict[str, set[str]]) -> list[Battle]:
    """The uploads as the client sends them (protocol.md 7.2): each pair to the general game, then
    to each division (``divisions``: game -> its bots, in the order mini, micro, nano) both its bots
    are small enough for, before the next pair."""
    uploads = []
    for pair in pairs:
        uploads.append(pair)
        uploads += [
            replace(pair, game=game) for game, bots in divisions.items() if {pair.first.name, pair.second.name} <= bots
        ]
    return uploads


def test_a_division_copy_of_a_prioritized_battle_is_rated_with_its_last_pair(app, db):
    """Issue 33 item 6, second case. The chosen bots finish 3rd and 6th; the general copy's last pair
    (6th vs 10th) holds two bots small enough for minimeleerumble and nanomeleerumble, so it is also
    the last pair of both division copies: the mini copy (the 3rd, 4th, 6th and 10th: 2·4 − 3 = 5
    pairs) and the nano copy (the 4th, 6th and 10th, a star of the 6th: 2 pairs) are each rated as
    that pair arrives, with their own bots only."""
    scores = random_scores(random.Random(13))
    ranked = sorted(scores, key=lambda name: -scores[name])
    mini = {ranked[2], ranked[3], ranked[5], ranked[9]}
    nano = {ranked[3], ranked[5], ranked[9]}
    uploads = stamped(
        client_order(
            melee_pairs(scores, T0, priority=(ranked[2], ranked[5])), {"minimeleerumble": mini, "nanomeleerumble": nano}
        ),
        0,
    )
    assert len(uploads) == 17 + 5 + 2 and [p.game for p in uploads[-3:]] == [
        "meleerumble",
        "minimeleerumble",
        "nanomeleerumble",
    ]
    send(db, uploads[:-2])
    assert [(b["state"], b["closed_by"]) for b in battles_of(db)] == [("rated", "prioritized")]
    assert [(b["state"], b["pairs"]) for b in battles_of(db, "minimeleerumble")] == [("open", 4)]
    send(db, uploads[-2:-1])
    (copy,) = battles_of(db, "minimeleerumble")
    assert (copy["state"], copy["pairs"], copy["closed_by"], set(copy["bots"])) == ("rated", 5, "prioritized", mini)
    assert [(b["state"], b["pairs"]) for b in battles_of(db, "nanomeleerumble")] == [("open", 1)]
    send(db, uploads[-1:])
    (copy,) = battles_of(db, "nanomeleerumble")
    assert (copy["state"], copy["pairs"], copy["closed_by"], set(copy["bots"])) == ("rated", 2, "prioritized", nano)
    for game, bots in (("minimeleerumble", mini), ("nanomeleerumble", nano)):
        assert_ratings(melee_ratings(db, game), expected_ratings([{name: scores[name] for name in bots}]))
    assert_rebuild_equals_online(app, db, "meleerumble", "minimeleerumble", "nanomeleerumble")


@pytest.mark.parametrize("then", ["sweep", "upload"])
def test_a_division_copy_whose_last_pair_comes_before_the_general_copys_last_is_rated_at_the_next_check(app, db, then):
    """Issue 33 item 6, second case. Chosen 3rd and 6th again; only the 3rd, 4th and 5th are small
    enough for minimeleerumble, so its copy (the 3rd's pairs with the 4th and 5th) is all sent long
    before the general copy's last pair (6th vs 10th). Once that pair is in, the server knows
    nothing more is coming: the 6th is not a mini bot (its pair with the 3rd, a mini bot, was not
    sent there). The copy is rated by the next check of the rumble, a second later, not 5 minutes:
    the schedule's sweep (recorded, and replayed by a rebuild) or the next upload to the rumble."""
    rng = random.Random(14)
    scores = random_scores(rng)
    ranked = sorted(scores, key=lambda name: -scores[name])
    mini = {ranked[2], ranked[3], ranked[4]}
    uploads = client_order(melee_pairs(scores, T0, priority=(ranked[2], ranked[5])), {"minimeleerumble": mini})
    assert len(uploads) == 17 + 2 and uploads[-1].game == "meleerumble"
    send(db, stamped(uploads, 0))
    assert [(b["state"], b["pairs"]) for b in battles_of(db, "minimeleerumble")] == [("open", 2)]
    rid = rumble_id(db, "minimeleerumble")
    later = {name: rng.randint(0, 20_000) for name in BOTS[:2]}
    if then == "sweep":
        with store.write(db):
            assert len(melee.sweep(db, rid, at(1))) == 1
    else:
        send(db, stamped([replace(p, game="minimeleerumble") for p in melee_pairs(later, T0 + 600_000)], 1))
    copy = the_battle(db, mini, "minimeleerumble")
    assert (copy["state"], copy["pairs"], copy["closed_by"]) == ("rated", 2, "prioritized")
    assert_ratings(
        {name: r for name, r in melee_ratings(db, "minimeleerumble").items() if name in mini},
        expected_ratings([{name: scores[name] for name in mini}]),
    )
    assert_rebuild_equals_online(app, db, "meleerumble", "minimeleerumble")


def test_a_division_copy_that_cannot_know_its_last_pair_waits_for_the_timeout(db):
    """The limit of what the server can know: the mini bots are the 6th (the lower-ranked chosen)
    and the 4th. The general copy's last pair is the 6th vs the 10th, and the 10th met no other mini
    bot in the pairs sent (its pair with the 3rd, the other chosen, is not one for the mini rumble
    either way): whether that last pair comes to minimeleerumble too depends on a codesize the
    server does not have, so the copy waits for the timeout as before."""
    scores = random_scores(random.Random(15))
    ranked = sorted(scores, key=lambda name: -scores[name])
    mini = {ranked[3], ranked[5]}
    send(
        db,
        stamped(client_order(melee_pairs(scores, T0, priority=(ranked[2], ranked[5])), {"minimeleerumble": mini}), 0),
    )
    rid = rumble_id(db, "minimeleerumble")
    with store.write(db):
        assert melee.sweep(db, rid, at(1)) == []
        assert len(melee.sweep(db, rid, at(melee.TIMEOUT_S))) == 1
    assert [(b["state"], b["pairs"], b["closed_by"]) for b in battles_of(db, "minimeleerumble")] == [
        ("rated", 1, "timeout")
    ]


def test_a_sweep_rates_a_battle_nothing_follows_and_is_replayed(db, app):
    """No upload follows a prioritized battle: the schedule's sweep rates it once its time is up
    (not a millisecond before), records that, and a rebuild replays it in place."""
    rng = random.Random(8)
    scores = random_scores(rng)
    pairs = melee_pairs(scores, T0, priority=top_two(scores))
    send(db, stamped(pairs, 0))
    rid = rumble_id(db, "meleerumble")
    with store.write(db):
        assert melee.sweep(db, rid, at(melee.TIMEOUT_S - 0.001)) == []
    assert db.execute("SELECT count(*) FROM melee_sweeps").fetchone()[0] == 0  # nothing closed, nothing recorded
    with store.write(db):
        (rated,) = melee.sweep(db, rid, at(melee.TIMEOUT_S))
    (battle,) = battles_of(db)
    assert (battle["id"], battle["state"], battle["closed_by"], set(battle["bots"])) == (
        rated,
        "rated",
        "timeout",
        set(scores),
    )
    last = db.execute("SELECT max(id) FROM battles").fetchone()[0]
    assert db.execute("SELECT after_battle_id, swept_at FROM melee_sweeps").fetchall() == [(last, at(melee.TIMEOUT_S))]
    send(db, stamped(melee_pairs(random_scores(rng), T0 + 900_000)[:3], 900))
    online = melee_battles.dump(db, rid)
    with store.write(db):
        rebuild_rumble(db, "meleerumble", 35, min_battles=3)
    assert melee_battles.dump(db, rid) == online
    assert_ratings(
        melee_ratings(db), expected_ratings([scores]) | {n: v for n, v in melee_ratings(db).items() if n not in scores}
    )


def test_the_schedule_leader_sweeps_every_melee_rumble(app, db):
    from rumble.schedule.hourly import BatchSchedule

    scores = random_scores(random.Random(9))
    send(db, stamped(melee_pairs(scores, T0, priority=top_two(scores)), 0))  # long ago: its time is up
    schedule = BatchSchedule({**app.config["RUMBLE"], "BATCH_INTERVAL_MINUTES": 60})
    try:
        assert schedule.elect() and schedule.scheduler.get_job("melee") is not None
        assert schedule.sweep_melee() == 1
        assert [b["state"] for b in battles_of(db)] == ["rated"]
        assert schedule.sweep_melee() == 0
    finally:
        schedule.shutdown()


def test_missing_pairs_rate_the_bots_seen_and_late_pairs_rate_nothing(db):
    """A 5-bot battle whose pairs with bot E never arrive is rated (on timeout) with A..D only; a
    pair of it arriving after that is attached as late and changes no rating."""
    scores = {"mel.A 1.0": 9000, "mel.B 1.0": 7000, "mel.C 1.0": 7000, "mel.D 1.0": 3000, "mel.E 1.0": 1000}
    pairs = melee_pairs(scores, T0)
    without_e = [p for p in pairs if "mel.E 1.0" not in (p.first.name, p.second.name)]
    send(db, stamped(without_e, 0))
    send(db, stamped(melee_pairs(random_scores(random.Random(1)), T0 + 900_000)[:1], 400))
    battle = battles_of(db)[0]
    assert (battle["state"], battle["pairs"], set(battle["bots"])) == ("rated", 6, set(scores) - {"mel.E 1.0"})
    assert battle["bots"]["mel.B 1.0"][1] == battle["bots"]["mel.C 1.0"][1] == 2  # equal scores tied
    before = melee_ratings(db)
    send(db, stamped([p for p in pairs if p not in without_e][:1], 500))  # a retry an iteration later
    after = battles_of(db)[0]
    assert (after["pairs"], after["late"], set(after["bots"])) == (6, 1, set(battle["bots"]))
    assert melee_ratings(db) == before
    assert_ratings(
        {n: v for n, v in before.items() if n in scores},
        expected_ratings([{n: s for n, s in scores.items() if n != "mel.E 1.0"}]),
    )


def _melee_session(db, rng: random.Random) -> None:
    """Melee battles of three uploaders in two rumbles: shuffled, interleaved, prioritized, with lost
    pairs, retries, late pairs and timeouts, received over several simulated hours."""
    queue: list[Battle] = []
    clock = 0.0
    for n in range(14):
        scores = random_scores(rng, rng.choice([4, 10, 10]))
        priority = tuple(list(scores)[:2]) if rng.random() < 0.3 else None
        pairs = melee_pairs(scores, T0 + 40_000 * n, uploader=rng.choice(["A", "B", "C"]), priority=priority)
        pairs += [replace(p, game="minimeleerumble") for p in pairs if rng.random() < 0.6]
        kept = [p for p in pairs if rng.random() > 0.1] if rng.random() < 0.2 else pairs
        queue += kept
        if rng.random() < 0.4:
            rng.shuffle(queue)
            for pair in queue:
                pause = rng.random() < 0.01
                clock += 400 if pause else rng.uniform(0, 2)  # now and then a long pause
                if pause and rng.random() < 0.5:  # in which the server's schedule checks the timeouts
                    for game in ("meleerumble", "minimeleerumble"):
                        with store.write(db):
                            melee.sweep(db, rumble_id(db, game), at(clock - 1))
                send(db, [replace(pair, received_at=at(clock))])
                if rng.random() < 0.05:
                    send(db, [replace(pair, received_at=at(clock + 1))])  # a retry: logged once
            queue = []
            clock += rng.choice([5, 400, 3600])
            if rng.random() < 0.5:
                for game in ("meleerumble", "minimeleerumble"):
                    with store.write(db):
                        melee.sweep(db, rumble_id(db, game), at(clock - 1))
    scores = random_scores(rng)
    queue += melee_pairs(scores, T0 + 40_000 * 15, priority=top_two(scores))  # waits for a timeout
    send(db, [replace(p, received_at=at(clock + 10)) for p in queue])


@pytest.mark.parametrize("seed", [1, 2])
def test_rebuild_equals_online_bit_for_bit(db, seed):
    _melee_session(db, random.Random(seed))
    online = {game: melee_battles.dump(db, rumble_id(db, game)) for game in ("meleerumble", "minimeleerumble")}
    tables = snapshot(db)
    states = [b["closed_by"] for game in online for b in battles_of(db, game)]
    assert {"complete", "prioritized", "timeout", None} <= set(states)  # every way a battle ends (or waits) occurred
    assert db.execute("SELECT count(*) FROM melee_sweeps").fetchone()[0] > 0  # and sweeps that closed some
    assert sum(len(online[g]["battles"]) for g in online) > 15
    rumbles = load_rumbles()
    with store.write(db):
        for game in ("meleerumble", "minimeleerumble"):
            rebuild_rumble(db, game, rumbles[game].rounds, min_battles=3)
    assert {game: melee_battles.dump(db, rumble_id(db, game)) for game in online} == online
    assert snapshot(db) == tables


def test_every_logged_pair_is_in_exactly_one_battle(db):
    _melee_session(db, random.Random(7))
    logged = {row[0] for row in db.execute("SELECT id FROM battles")}
    gathered = [row[0] for row in db.execute("SELECT battle_id FROM melee_pairs")]
    assert sorted(gathered) == sorted(logged)
    assert (
        db.execute("SELECT count(*) FROM melee_battles WHERE state = 'rated' AND closed_by IS NULL").fetchone()[0] == 0
    )


def test_rankings_show_mu_sigma_and_the_conservative_rating(client, upload):
    """/Rankings of a melee rumble (HTML and JSON): μ, σ, μ − 3σ, melee battles, and XonStat Elo per
    battle, as the paper and XonStat's pairwise mean give them; sortable by each."""
    rng = random.Random(11)
    battles = [random_scores(rng), random_scores(rng)]
    for n, scores in enumerate(battles):
        for pair in melee_pairs(scores, T0 + 60_000 * n):
            assert upload(pair).kind is Kind.ACCEPTED
    expected = expected_ratings(battles)
    rows = client.get("/Rankings?game=meleerumble&api=1").json
    assert {row["name"] for row in rows} == set(expected)
    for row in rows:
        mu, sigma, count, elo = expected[row["name"]]
        assert (row["mu"], row["sigma"], row["melee_battles"]) == (
            pytest.approx(mu, rel=1e-12),
            pytest.approx(sigma, rel=1e-12),
            count,
        )
        assert row["conservative"] == pytest.approx(mu - 3 * sigma, rel=1e-12)
        assert row["xonstat"] == pytest.approx(elo, rel=1e-12)
    ordered = client.get("/Rankings?game=meleerumble&api=1&order=-conservative").json
    assert [r["name"] for r in ordered] == sorted(expected, key=lambda n: -(expected[n][0] - 3 * expected[n][1]))
    # XonStat Elo sorts by the per-battle value it shows, not by the pairwise one (found in review)
    ordered = client.get("/Rankings?game=meleerumble&api=1&order=-xonstat").json
    assert [r["name"] for r in ordered] == sorted(expected, key=lambda n: -expected[n][3])
    exported = client.get("/api/v1/rumbles/meleerumble/export/rankings.json", buffered=True).json
    assert {"mu", "sigma", "conservative", "melee_battles"} <= set(exported["columns"])
    assert {r["name"]: r["xonstat"] for r in exported["rows"]} == {r["name"]: r["xonstat"] for r in rows}
    page = client.get("/Rankings?game=meleerumble").get_data(as_text=True)
    assert "μ − 3σ" in page and "Melee battles" in page
    assert "μ − 3σ" not in client.get("/Rankings?game=roborumble").get_data(as_text=True)
    assert client.get("/Rankings?game=roborumble&order=mu").status_code == 400


def test_bot_details_show_the_whole_battles(client, upload):
    """/BotDetails of a melee bot: its Weng-Lin and XonStat figures and each reassembled battle it
    was in, newest first, with its score, rank and the ratings before and after (chained)."""
    rng = random.Random(12)
    name = "mel.Star 1.0"
    battles = [{**random_scores(rng, 9), name: rng.randint(0, 20_000)} for _ in range(3)]
    for n, scores in enumerate(battles):
        for pair in melee_pairs(scores, T0 + 60_000 * n):
            assert upload(pair).kind is Kind.ACCEPTED
    melee_part = client.get("/BotDetails", query_string={"game": "meleerumble", "name": name, "api": "1"}).json["melee"]
    found = melee_part["battles"]
    assert len(found) == 3 and all(b["state"] == "rated" and b["bots"] == 10 for b in found)
    for row, scores in zip(found, reversed(battles)):
        assert (row["score"], row["rank"]) == (scores[name], 1 + sum(v > scores[name] for v in scores.values()))
    assert [b["mu_before"] for b in found[:-1]] == [b["mu_after"] for b in found[1:]]
    assert found[-1]["mu_before"] == 25.0 and melee_part["mu"] == found[0]["mu_after"]
    mu, sigma, count, elo = expected_ratings(battles)[name]
    assert (melee_part["mu"], melee_part["melee_battles"], melee_part["xonstat"]) == (
        pytest.approx(mu, rel=1e-12),
        3,
        pytest.approx(elo, rel=1e-12),
    )
    assert melee_part["sigma"] == pytest.approx(sigma, rel=1e-12)  # just fought: no growth
    page = client.get("/BotDetails", query_string={"game": "meleerumble", "name": name}).get_data(as_text=True)
    assert "Whole melee battles" in page and "<th>XonStat Elo</th><td" not in page  # only the per-battle one


def test_the_explanation_has_the_melee_sections(client):
    page = client.get("/ScoreExplanation").get_data(as_text=True)
    for anchor in ('id="melee"', 'id="melee-sampling"', 'id="twinduel"'):
        assert anchor in page


@pytest.mark.parametrize("moved_to", ["ok", "removed"])
def test_a_rebuild_or_rollback_computed_aside_equals_a_blocking_one_with_pairs_arriving_meanwhile(app, db, moved_to):
    """rumble.maintenance.swap reassembles into TEMP copies of the melee tables outside the write lock;
    pairs (and a sweep) arriving meanwhile are caught up. The swap leaves exactly the melee rows and
    tables of a blocking rebuild of the same log; a rollback of uploader B's battles likewise."""
    from rumble.ingest.melee import sweep
    from rumble.maintenance import swap

    _melee_session(db, random.Random(3))
    rid = rumble_id(db, "meleerumble")
    moved = (
        frozenset(
            row[0]
            for row in db.execute(
                "SELECT id FROM battles WHERE uploader_id = (SELECT id FROM uploaders WHERE name = 'B') AND rumble_id = ?",
                (rid,),
            )
        )
        if moved_to == "removed"
        else frozenset()
    )
    job_db = store.connect(app.config["RUMBLE"]["DB"])
    calls = []

    def meanwhile(n: int) -> None:
        calls.append(n)
        if len(calls) == 1:  # during the replay aside: a new battle's pairs, then a sweep that closes it
            send(db, stamped(melee_pairs(random_scores(random.Random(9), 4), T0 + 40_000 * 30, uploader="C"), 200_000))
            with store.write(db):
                assert sweep(db, rid, at(201_000))

    def swap_in(conn, job) -> None:
        if moved:
            assert set_state_of(conn, sorted(moved), ("ok", "flagged"), "removed") == len(moved)

    swap.recompute(job_db, "meleerumble", 35, 3, meanwhile, moved, moved_to, swap_in)
    assert (
        len(calls) >= 2 and job_db.execute("SELECT count(*) FROM temp.sqlite_master").fetchone()[0] == 0
    )  # shadow dropped
    job_db.close()
    swapped = (melee_battles.dump(db, rid), snapshot(db, rid))
    with store.write(db):
        rebuild_rumble(db, "meleerumble", 35, min_battles=3)
    assert (melee_battles.dump(db, rid), snapshot(db, rid)) == swapped
