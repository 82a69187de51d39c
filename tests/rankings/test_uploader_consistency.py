"""Uploader consistency (rumble/rankings/uploader_consistency.py): each step on hand-computed examples,
the simulated rumble of issue 14 on one fixed seed, and the settled result's coherence (issue 33
item 5) checked against a recomputation from the building blocks."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from rumble.rankings import uploader_consistency as uc
from rumble.rankings.uploader_consistency import Residual, Share

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sim_uploaders.py"


def test_normal_upper_tail_matches_the_table():
    # standard normal table: P(Z > 1.959964) = 0.025, P(Z > 0) = 0.5, P(Z > 2.326348) = 0.01
    assert uc.normal_upper(1.959964) == pytest.approx(0.025, abs=1e-6)
    assert uc.normal_upper(0.0) == 0.5
    assert uc.normal_upper(2.326348) == pytest.approx(0.01, abs=1e-6)


def test_holm_adjusts_step_down_and_keeps_the_order_given():
    # sorted: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised to the running 0.06
    assert uc.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert uc.holm([0.6, 0.5]) == pytest.approx([1.0, 1.0])  # 0.5 x 2 = 1, capped
    assert uc.holm([]) == []


def test_spread_is_one_at_fifty_and_the_floor_at_the_ends():
    assert uc.spread(50.0) == pytest.approx(1.0 + uc.SPREAD_FLOOR)
    assert uc.spread(100.0) == pytest.approx(uc.SPREAD_FLOOR)
    assert uc.spread(90.0) == pytest.approx(90 * 10 / 2500 + uc.SPREAD_FLOOR)


def test_residuals_of_a_three_battle_pairing_by_hand():
    # One pairing A-B: u reported 60; v reported 50 and 54.
    shares = [Share("u", "A", "B", 60.0), Share("v", "A", "B", 50.0), Share("v", "A", "B", 54.0)]
    totals = uc.totals(shares)
    # All three battles: mean 164/3, SS = (16/3)² + (14/3)² + (2/3)² = 456/9 = 50.667 on 2 degrees of
    # freedom; one pairing, so c · spread(mean) = SS / 2 = 25.333 and c = 25.333 / spread(54.667).
    assert uc.pooled_scale(totals, frozenset()) == pytest.approx((456 / 9 / 2) / uc.spread(164 / 3))
    prior = 456 / 9 / 2  # c · spread(m) at the pairing's mean of every battle, K = 5 pseudo-battles of it
    assert uc.SHRINK == 5.0
    # u: the others (v) have n = 2, mean 52, SS = 8: s² = (5 · 25.333 + 8) / (5 + 2 − 1) = 22.444;
    # z = (60 − 52) / sqrt(22.444 · (1/1 + 1/2)) = 8 / 5.8023 = 1.3788
    (found,) = uc.residuals(totals, "u")
    s2 = (5 * prior + 8) / 6
    assert (found.battles, found.residual) == (1, pytest.approx(8.0))
    assert found.z == pytest.approx(8 / math.sqrt(s2 * 1.5)) and found.z == pytest.approx(1.3788, abs=1e-4)
    # v: its mean 52 against u's single 60 (n = 1, SS = 0): s² = 5 · 25.333 / 5 = 25.333;
    # z = (52 − 60) / sqrt(25.333 · (1/2 + 1/1)) = −8 / sqrt(38) = −1.2978
    (found,) = uc.residuals(totals, "v")
    assert (found.battles, found.residual) == (2, pytest.approx(-8.0))
    assert found.z == pytest.approx(-8 / math.sqrt(38), abs=1e-9)
    # with v left out of the consensus, u shares no pairing with anyone
    assert uc.residuals(totals, "u", frozenset({"v"})) == []


def test_bot_shifts_take_each_bot_s_side():
    found = [Residual("A", "B", 1, 8.0, 2.0), Residual("A", "C", 3, 4.0, 1.0)]
    rows = uc.bot_shifts(found, uc.Reference())  # an empty reference: w_b = 1
    # A: T = (2 + 1) / sqrt(2); mean residual per battle (8·1 + 4·3) / 4 = 5. B: −2 / 1. C: −1 / 1.
    assert [(r["bot"], r["battles"]) for r in rows] == [("A", 4), ("B", 1), ("C", 3)]
    assert rows[0]["t"] == pytest.approx(3 / math.sqrt(2)) and rows[0]["mean_residual"] == pytest.approx(5.0)
    assert rows[1]["t"] == pytest.approx(-2.0) and rows[2]["mean_residual"] == pytest.approx(-4.0)


def test_dispersion_and_bias_tests_by_hand():
    found = [
        Residual("A", "B", 1, 0.0, 2.0),
        Residual("A", "C", 1, 0.0, -2.0),
        Residual("B", "C", 1, 0.0, 1.0),
        Residual("C", "D", 1, 0.0, -1.0),
    ]
    rms, p_dispersion, worst, p_bias, _ = uc.uploader_tests(found, uc.Reference())
    # an empty reference stands in a normal z: E|z| = sqrt(2/π) = 0.797885, Var|z| = 1 − 2/π = 0.363380,
    # and μ counts as estimated from MIN_REFERENCE = 10 residuals: D = (6 − 4 · 0.797885) / sqrt(4 · 0.363380 · 1.4)
    # = 2.808460 / 1.426509 = 1.968770, one-sided p = 0.02449
    assert uc.MIN_REFERENCE == 10
    assert rms == pytest.approx(math.sqrt(10 / 4))
    assert p_dispersion == pytest.approx(0.02449, abs=5e-5)
    # A is a in A-B (z 2) and A-C (z −2): 0. B is b in A-B (−2) and a in B-C (+1): −1/sqrt(2).
    # C is b in A-C (+2) and B-C (−1), a in C-D (−1): 0. D is b in C-D (+1): 1/1 = 1, the largest.
    assert worst == pytest.approx(1.0)
    assert p_bias == pytest.approx(min(1.0, 4 * 2 * uc.normal_upper(1.0)))  # Bonferroni over 4 bots: 1.0


def _uploader(name: str, rng_values: list[float], bias: float = 0.0) -> list[Share]:
    pairs = [(f"b{i}", f"b{j}") for i in range(6) for j in range(i + 1, 6)]
    out = []
    for k, value in enumerate(rng_values):
        a, b = pairs[k % len(pairs)]
        out.append(Share(name, a, b, value + (bias if a == "b0" else 0.0)))
    return out


def test_an_uploader_that_favours_one_bot_is_flagged_and_named():
    import random

    rng = random.Random(7)
    shares = []
    for name in ("h1", "h2", "h3"):
        shares += _uploader(name, [50 + rng.gauss(0, 5) for _ in range(60)])
    shares += _uploader("cheat", [50 + rng.gauss(0, 5) for _ in range(60)], bias=15.0)
    verdicts = {v.uploader: v for v in uc.consistency(shares)}
    assert {u for u, v in verdicts.items() if v.flagged} == {"cheat"}
    assert verdicts["cheat"].top_bots[0]["bot"] == "b0"
    assert verdicts["cheat"].top_bots[0]["mean_residual"] == pytest.approx(15.0, abs=3.0)
    assert verdicts["cheat"].reason.startswith("flagged: b0 scores +")
    assert all(v.tested and v.p is not None and v.p >= uc.ALPHA for u, v in verdicts.items() if u != "cheat")


def test_an_uploader_with_too_few_shared_battles_is_not_tested():
    shares = [Share("a", "x", "y", 50.0), Share("b", "x", "y", 52.0)]
    verdicts = uc.consistency(shares)
    assert [(v.tested, v.flagged, v.p) for v in verdicts] == [(False, False, None)] * 2
    assert verdicts[0].reason.startswith("not tested: fewer than 20 battles")


def test_simulated_rumble_flags_both_biased_uploaders_and_no_honest_one():
    # issue 14: 24 bots, four honest uploaders, one adding 15 points to one bot, one sending random
    # shares, 350 battles each; seed 0 of scripts/sim_uploaders.py
    answer = subprocess.run(
        [sys.executable, str(SCRIPT), "--seeds", "1"], capture_output=True, text=True, check=True, timeout=120
    )
    assert "seed  0: flagged biased, random\n" in answer.stdout


def test_uploaders_that_agree_exactly_are_consistent_not_a_crash():
    """Two uploaders report exactly 60 % for every pairing of 8 bots (a small or deterministic
    rumble): every residual is 0, which once divided by a zero variance. Neither is flagged."""
    bots = [f"b.B{i} 1.0" for i in range(8)]
    shares = [Share(u, a, b, 60.0) for u in ("alice", "bob") for i, a in enumerate(bots) for b in bots[i + 1 :]]
    verdicts = {v.uploader: v for v in uc.consistency(shares)}
    assert set(verdicts) == {"alice", "bob"}
    assert [v.flagged for v in verdicts.values()] == [False, False]
    assert all(v.p is None or v.p >= 0.01 for v in verdicts.values())


def _spread_forgery(seed: int, forgers: int, per_forger: int) -> list[Share]:
    """A target with two honest uploaders (3 battles each on each of its 60 pairings) and
    ``forgers`` names of ``per_forger`` battles each that report the target at 85 %."""
    import random

    rng = random.Random(seed)
    target = "t.Target 1.0"
    opponents = [f"o.Opp{i:02d} 1.0" for i in range(60)]
    truth = {o: rng.uniform(20.0, 80.0) for o in opponents}  # the target's true share against each
    shares = []
    for honest in ("honest1", "honest2"):
        for o in opponents:
            for _ in range(3):
                x = min(100.0, max(0.0, rng.gauss(truth[o], 8.0)))
                shares.append(Share(honest, o, target, 100.0 - x) if o < target else Share(honest, target, o, x))
    for k in range(forgers):
        for o in rng.sample(opponents, per_forger):
            shares.append(Share(f"forger{k}", o, target, 15.0) if o < target else Share(f"forger{k}", target, o, 85.0))
    return shares


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_forgery_split_over_small_names_is_tested_pooled_and_never_flags_the_honest(seed):
    """Eight names of 15 battles each (each below the 20-battle minimum): tested together, the pool
    is flagged; the honest uploaders, measured without the flagged pool, are not."""
    verdicts = {v.uploader: v for v in uc.consistency(_spread_forgery(seed, 8, 15))}
    assert verdicts[uc.POOL].flagged and verdicts[uc.POOL].battles == 120
    assert verdicts[uc.POOL].reason.startswith("8 uploaders with fewer than 20 battles each, tested together: flagged")
    assert [verdicts[h].flagged for h in ("honest1", "honest2")] == [False, False]
    assert verdicts["forger0"].reason == (
        "tested pooled with the 7 other uploaders of fewer than 20 battles (the row 'small uploaders, pooled'): "
        "the pool is flagged"
    )


def test_a_lone_small_uploader_is_untested_and_left_out_of_the_consensus():
    """One forger of 15 battles: too few to test, so it cannot count in the consensus either."""
    verdicts = {v.uploader: v for v in uc.consistency(_spread_forgery(4, 1, 15))}
    assert uc.POOL not in verdicts
    assert (verdicts["forger0"].tested, verdicts["forger0"].flagged) == (False, False)
    assert [verdicts[h].flagged for h in ("honest1", "honest2")] == [False, False]
    # its residuals did not move the honest uploaders' consensus: each honest one is measured
    # against the other alone, as if the forger had not uploaded at all
    alone = {v.uploader: v for v in uc.consistency([s for s in _spread_forgery(4, 1, 15) if s.uploader != "forger0"])}
    assert verdicts["honest1"].p_raw == pytest.approx(alone["honest1"].p_raw)


def _battle(rng, strength: dict[str, float], a: str, b: str, bias: float = 0.0) -> float:
    """A battle's share for a < b around the logistic of their strengths (SD 2 + 8·sqrt(p(1 − p))·2
    points, as scripts/sim_uploaders.py), plus ``bias``, kept in [0, 100]."""
    mean = 100.0 / (1.0 + math.exp(-(strength[a] - strength[b]) / 12.0))
    x = rng.gauss(mean, 2.0 + 8.0 * math.sqrt(mean * (100.0 - mean)) / 50.0) + bias
    return min(100.0, max(0.0, x))


def _dragged(seed: int) -> list[Share]:
    """A forger adds 20 points to b00 on its 12 pairings with b01..b12 (12 battles each); "narrow"
    plays only those (8 each), "broad1" and "broad2" once each, so narrow's consensus there is mostly
    the forger's. "buddy" plays 4 pairings of b18 (6 battles each) that only narrow also plays (4
    each). forger, broad1..3 also play 250 battles each among b01..b17."""
    import random

    rng = random.Random(seed)
    bots = [f"b{i:02d}" for i in range(24)]
    strength = {b: rng.uniform(20.0, 80.0) for b in bots}
    shares = []
    for o in bots[1:13]:
        shares += [Share("narrow", "b00", o, _battle(rng, strength, "b00", o)) for _ in range(8)]
        shares += [Share("forger", "b00", o, _battle(rng, strength, "b00", o, 20.0)) for _ in range(12)]
        shares += [Share(u, "b00", o, _battle(rng, strength, "b00", o)) for u in ("broad1", "broad2")]
    for o in bots[19:23]:
        shares += [Share("narrow", "b18", o, _battle(rng, strength, "b18", o)) for _ in range(4)]
        shares += [Share("buddy", "b18", o, _battle(rng, strength, "b18", o)) for _ in range(6)]
    for u in ("forger", "broad1", "broad2", "broad3"):
        for _ in range(250):
            a, b = sorted(rng.sample(bots[1:18], 2))
            shares.append(Share(u, a, b, _battle(rng, strength, a, b)))
    return shares


def _shared_pairings(shares: list[Share], uploader: str, out: set[str]) -> int:
    """Pairings ``uploader`` played that another uploader not in ``out`` also played."""
    players: dict[tuple[str, str], set[str]] = {}
    for s in shares:
        players.setdefault((s.a, s.b), set()).add(s.uploader)
    return sum(1 for who in players.values() if uploader in who and who - out - {uploader})


def _left_out(verdicts: list[uc.Verdict]) -> set[str]:
    """The uploaders a coherent result leaves out of the consensus: the flagged (every pooled one when
    the pool is) and the untested."""
    pool_flagged = any(v.uploader == uc.POOL and v.flagged for v in verdicts)
    return {
        v.uploader
        for v in verdicts
        if v.uploader != uc.POOL and (v.flagged or (v.pooled and pool_flagged) or (not v.tested and not v.pooled))
    }


def _recomputed(shares: list[Share], out: frozenset[str]) -> dict[str, tuple[float, float]]:
    """Each unit's (p before Holm, Holm-corrected p), recomputed from the building blocks against the
    consensus of the uploaders not in ``out``: its residuals (less the pooled ones of small
    uploaders), the reference of every other uploader in the consensus, the two tests, Holm."""
    by_pairing = uc.totals(shares)
    uploaders = sorted({s.uploader for s in shares})
    scale = uc.pooled_scale(by_pairing, out)
    found = {u: uc.residuals(by_pairing, u, out, scale) for u in uploaders}
    small = [u for u in uploaders if sum(r.battles for r in found[u]) < uc.MIN_BATTLES]
    units = {u: [u] for u in uploaders if u not in small}
    if len(small) > 1 and sum(r.battles for u in small for r in found[u]) >= uc.MIN_BATTLES:
        units[uc.POOL] = small
    raw = {}
    for unit, members in units.items():
        reference = uc.Reference()
        for u in uploaders:
            if u not in out and u not in members and (u in units or uc.POOL in units):
                reference.add(found[u])
        _, p_dispersion, _, p_bias, _ = uc.uploader_tests([r for u in members for r in found[u]], reference)
        raw[unit] = min(1.0, 2.0 * min(p_dispersion, p_bias))
    return {unit: (raw[unit], p) for unit, p in zip(raw, uc.holm(list(raw.values())))}


def _coherent(shares: list[Share], verdicts: list[uc.Verdict]) -> bool:
    """Whether ``verdicts`` are each unit's figures against the consensus that leaves out exactly the
    flagged and the untested, flagged exactly when the corrected p is below ALPHA."""
    figures = _recomputed(shares, frozenset(_left_out(verdicts)))
    tested = {v.uploader: v for v in verdicts if v.tested}
    return set(tested) == set(figures) and all(
        v.p_raw == pytest.approx(figures[u][0], rel=1e-9, abs=1e-300)
        and v.p == pytest.approx(figures[u][1], rel=1e-9, abs=1e-300)
        and v.flagged == (figures[u][1] < uc.ALPHA)
        for u, v in tested.items()
    )


@pytest.mark.parametrize("seed", [0, 2, 5])
def test_an_honest_uploader_flagged_while_a_forger_dragged_its_consensus_comes_back(seed):
    """Issue 33 item 5. narrow's consensus on b00's pairings is mostly the forger's: narrow is flagged
    first and left out; once the forger is out too, narrow is consistent with the rest. The loop
    that only grew kept narrow out, showed it consistent, and left buddy (whose pairings only narrow
    shares) untested. Now narrow comes back, buddy is tested, and only the forger is flagged."""
    shares = _dragged(seed)
    verdicts = uc.consistency(shares)
    by_name = {v.uploader: v for v in verdicts}
    assert {v.uploader for v in verdicts if v.flagged} == {"forger"}
    # narrow and buddy count in the consensus: each is measured on every pairing it shares with an
    # uploader not flagged (narrow: b00's 12 with broad1/broad2, and buddy's 4; buddy: those 4)
    assert (by_name["narrow"].tested, by_name["narrow"].flagged) == (True, False)
    assert by_name["narrow"].pairings_shared == _shared_pairings(shares, "narrow", {"forger"}) == 16
    assert (by_name["buddy"].tested, by_name["buddy"].flagged) == (True, False)
    assert by_name["buddy"].pairings_shared == _shared_pairings(shares, "buddy", {"forger"}) == 4
    assert _coherent(shares, verdicts)
    found = uc.settle(shares)
    assert found.excluded == {"forger"} and "narrow" in found.readmitted and found.unsettled == []


def _random_rumble(seed: int) -> list[Share]:
    """A small random rumble: 12 bots; on b00's 11 pairings "narrow" (4-10 battles each), "forger"
    (4-12, b00 pushed by 0 or 10-30 points), broad1 and broad2 (0-2); forger and broad1..3 40-150
    battles elsewhere; up to three uploaders of 3-15 battles anywhere."""
    import random

    rng = random.Random(seed)
    bots = [f"b{i:02d}" for i in range(12)]
    strength = {b: rng.uniform(20.0, 80.0) for b in bots}
    own = [("b00", b) for b in bots[1:]]
    rest = [(a, b) for i, a in enumerate(bots) if i for b in bots[i + 1 :]]
    bias = rng.choice([0.0, rng.uniform(10.0, 30.0)])
    shares = []

    def play(uploader: str, pairing: tuple[str, str], push: float = 0.0) -> None:
        a, b = pairing
        shares.append(Share(uploader, a, b, _battle(rng, strength, a, b, push if a == "b00" else 0.0)))

    for pairing in own:
        for _ in range(rng.randint(4, 10)):
            play("narrow", pairing)
        for _ in range(rng.randint(4, 12)):
            play("forger", pairing, bias)
        for u in ("broad1", "broad2"):
            for _ in range(rng.randint(0, 2)):
                play(u, pairing)
    for u in ("forger", "broad1", "broad2", "broad3"):
        for _ in range(rng.randint(40, 150)):
            play(u, rng.choice(rest))
    for k in range(rng.randint(0, 3)):
        for _ in range(rng.randint(3, 15)):
            play(f"small{k}", rng.choice(own + rest))
    return shares


def test_the_result_is_coherent_on_random_rumbles():
    """Over 60 seeded random rumbles: the uploaders left out of the final consensus are exactly the
    flagged and untested ones, and every p is the unit's against that consensus (recomputed from the
    building blocks), flagged exactly when below ALPHA. Where ``settle`` reports a unit unsettled,
    no subset of units left out would be coherent. Some rumbles need a unit re-admitted."""
    readmitted = 0
    for seed in range(60):
        shares = _random_rumble(seed)
        found = uc.settle(shares)
        assert found.verdicts == uc.consistency(shares)  # the same figures, in the same order
        readmitted += bool(found.readmitted)
        if not found.unsettled:
            assert found.excluded == _left_out(found.verdicts), seed
            assert _coherent(shares, found.verdicts), seed
            continue
        units = [v.uploader for v in found.verdicts if v.tested]
        pooled = [v.uploader for v in found.verdicts if v.pooled]
        untested = {v.uploader for v in found.verdicts if not v.tested and not v.pooled and v.uploader != uc.POOL}
        for k in range(2 ** len(units)):
            flagged = {unit for i, unit in enumerate(units) if k >> i & 1}
            out = untested | {u for unit in flagged for u in (pooled if unit == uc.POOL else [unit])}
            figures = _recomputed(shares, frozenset(out))
            assert {unit for unit, (_, p) in figures.items() if p < uc.ALPHA} != flagged, seed
    assert readmitted >= 3
