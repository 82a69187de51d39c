"""Simulated rumbles for the uploader-consistency test (rumble/rankings/uploader_consistency.py).

Every figure is taken over the whole procedure, as ``consistency`` returns it once its loop has
settled: an uploader counts as flagged when its final verdict is. Each case over many seeds:

1. issue 14: 24 bots of known strengths; four honest uploaders, one that adds ``--bias`` points
   to one bot whenever it fights, one that sends random shares (uniform 0 to 100); each sends
   ``--battles`` battles on pairings drawn at random. Detection rate of each biased uploader, the
   honest uploaders flagged, and the rumbles with any honest uploader flagged (family-wise).
2. honest rumbles: the same 24 bots, only honest uploaders, four of 50 to 700 battles and three
   of 5 to 19 (tested pooled); 2b the same with each battle drawn from the test's own variance
   model. The family-wise false-flag rate: the share of rumbles with any unit flagged, over the
   whole loop, after the first round alone, and by the loop before issue 33. ``ALPHA`` is the
   level of Holm's correction over the units of one rumble, so the family-wise rate is what it
   claims to bound: PASS when the rate is at most ``ALPHA``.
3. the spread forgery of a public ladder: a target bot with two honest uploaders (3 battles each
   on each of its 60 pairings) and ``--forgers`` names of ``--per-forger`` battles each, every one
   reporting the target at 85 % (each name below the test's 20-battle minimum). PASS when the pooled
   small uploaders are flagged and no honest uploader is, in every seed.
4. a dragged consensus: "forger" adds 20 points to one bot over 12 of its pairings (12 battles
   each); the honest "narrow" plays only those (8 each), so its consensus there is mostly the
   forger's and it tends to be flagged first; two broad honest uploaders play them once each; and
   "partner" adds 10 points to another bot on 4 pairings that only "narrow" also plays. The loop
   before issue 33 (kept below as ``old_consistency``) left "narrow" out for good, showed it
   consistent once the forger was out too, and so left "partner" untested; now "narrow" comes back.

Every run of the new procedure is also checked for coherence: the uploaders left out of the final
consensus are exactly the flagged ones and the untested small ones. Where ``settle`` reports a unit
unsettled, every subset of units is tried to show that no coherent state exists. The old loop's
incoherent runs (a tested unit left out yet shown consistent) are counted alongside.

    .venv/bin/python scripts/sim_uploaders.py    # 20 seeds, 2 x 1,000 honest rumbles: 1-2 minutes on 2 cores
    .venv/bin/python scripts/sim_uploaders.py --seeds 200 --honest-seeds 1000 --spread-seeds 100 --dragged-seeds 100
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's rumble, even if another is installed

from rumble.rankings import uploader_consistency as uc  # noqa: E402
from rumble.rankings.uploader_consistency import ALPHA, MIN_BATTLES, POOL, Settled, Share, Verdict, settle  # noqa: E402

BOTS = 24
HONEST = ("honest1", "honest2", "honest3", "honest4")
BIASED, RANDOM = "biased", "random"
SCALE = 12.0  # strength points per unit of the logistic: strengths 0..100 give expected shares 3..97
NOISE = 8.0  # battle-level SD of a share at a 50/50 pairing, in points (smaller for lopsided ones)


def expected_share(sa: float, sb: float) -> float:
    """A's expected score share against B, in points, from their strengths."""
    return 100.0 / (1.0 + math.exp(-(sa - sb) / SCALE))


def battle_share(rng: random.Random, mean: float) -> float:
    """One battle's share around ``mean``: normal noise, narrower near 0 and 100, kept in [0, 100]."""
    sd = 2.0 + NOISE * math.sqrt(mean * (100.0 - mean)) / 50.0
    return min(100.0, max(0.0, rng.gauss(mean, sd)))


def simulate(seed: int, battles: int, bias: float) -> tuple[list[Share], str]:
    """One rumble's battles and the name of the bot the biased uploader favours."""
    rng = random.Random(seed)
    strengths = {f"sim.Bot{i:02d} 1.0": rng.uniform(0.0, 100.0) for i in range(BOTS)}
    names = sorted(strengths)
    favoured = rng.choice(names)
    shares = []
    for uploader in (*HONEST, BIASED, RANDOM):
        for _ in range(battles):
            a, b = sorted(rng.sample(names, 2))
            x = battle_share(rng, expected_share(strengths[a], strengths[b]))
            if uploader == RANDOM:
                x = rng.uniform(0.0, 100.0)
            elif uploader == BIASED and favoured in (a, b):
                x = min(100.0, max(0.0, x + (bias if favoured == a else -bias)))
            shares.append(Share(uploader, a, b, x))
    return shares, favoured


def honest_rumble(seed: int, model_noise: bool = False) -> list[Share]:
    """Only honest uploaders: four of 50 to 700 battles, three of 5 to 19 (pooled). ``model_noise``:
    each battle drawn with the test's own variance model, c · spread(mean), instead of
    ``battle_share`` (normal, unclamped, the same SD at 50/50)."""
    rng = random.Random(1_000_000 + seed)
    strengths = {f"sim.Bot{i:02d} 1.0": rng.uniform(0.0, 100.0) for i in range(BOTS)}
    names = sorted(strengths)
    sizes = {f"honest{k}": rng.randint(50, 700) for k in range(1, 5)} | {
        f"small{k}": rng.randint(5, 19) for k in range(1, 4)
    }
    c = (2.0 + NOISE) ** 2 / uc.spread(50.0)  # battle_share's variance at 50/50
    shares = []
    for uploader, battles in sizes.items():
        for _ in range(battles):
            a, b = sorted(rng.sample(names, 2))
            mean = expected_share(strengths[a], strengths[b])
            x = rng.gauss(mean, math.sqrt(c * uc.spread(mean))) if model_noise else battle_share(rng, mean)
            shares.append(Share(uploader, a, b, x))
    return shares


def spread_forgery(seed: int, forgers: int, per_forger: int) -> tuple[list[Share], str]:
    """Two honest uploaders on a target's 60 pairings (3 battles each), ``forgers`` names of
    ``per_forger`` battles each reporting the target at 85 %; the target's name."""
    rng = random.Random(seed)
    target = "t.Target 1.0"
    opponents = [f"o.Opp{i:02d} 1.0" for i in range(60)]
    truth = {o: rng.uniform(20.0, 80.0) for o in opponents}
    shares = []

    def add(uploader: str, opponent: str, target_share: float) -> None:
        a, b = sorted((target, opponent))
        shares.append(Share(uploader, a, b, target_share if a == target else 100.0 - target_share))

    for honest in ("honest1", "honest2"):
        for o in opponents:
            for _ in range(3):
                add(honest, o, battle_share(rng, truth[o]))
    for k in range(forgers):
        for o in rng.sample(opponents, per_forger):
            add(f"forger{k}", o, 85.0)
    return shares, target


DRAGGED_BIAS = 20.0  # points the forger of case 4 adds to its bot
PARTNER_BIAS = 10.0  # points case 4's second forger adds to another bot
DRAGGED = ("narrow", "broad1", "broad2", "broad3")  # case 4's honest uploaders


def dragged_consensus(seed: int) -> list[Share]:
    """Case 4: "forger" adds 20 points to one bot on 12 of its pairings (12 battles each); "narrow"
    plays only those (8 each), "broad1" and "broad2" once each; "partner" adds 10 points to another
    bot on 4 of its pairings (6 battles each) that only "narrow" also plays (4 each); forger and
    broads also play 250 battles each on other pairings at random."""
    rng = random.Random(2_000_000 + seed)
    strengths = {f"sim.Bot{i:02d} 1.0": rng.uniform(20.0, 80.0) for i in range(BOTS)}
    names = sorted(strengths)
    target, opponents, others = names[0], names[1:13], names[1:]
    pushed, partner_opponents = names[13], names[14:18]
    shares = []

    def add(uploader: str, a: str, b: str, bias: float = 0.0, favoured: str = target) -> None:
        a, b = sorted((a, b))
        x = battle_share(rng, expected_share(strengths[a], strengths[b]))
        x = min(100.0, max(0.0, x + (bias if a == favoured else -bias)))
        shares.append(Share(uploader, a, b, x))

    for o in opponents:
        for _ in range(8):
            add("narrow", target, o)
        for _ in range(12):
            add("forger", target, o, DRAGGED_BIAS)
        for broad in ("broad1", "broad2"):
            add(broad, target, o)
    for o in partner_opponents:
        for _ in range(4):
            add("narrow", pushed, o)
        for _ in range(6):
            add("partner", pushed, o, PARTNER_BIAS, favoured=pushed)
    for uploader in ("forger", "broad1", "broad2", "broad3"):
        for _ in range(250):
            add(uploader, *rng.sample(others, 2))
    return shares


def old_consistency(
    shares: list[Share], alpha: float = ALPHA, min_battles: int = MIN_BATTLES
) -> tuple[dict[str, Verdict], frozenset[str]]:
    """The loop before issue 33, for comparison: the most significant newly flagged unit leaves the
    consensus until none is new, and none ever comes back. Its final verdicts (by unit) and the
    uploaders it left out."""
    counts: dict[str, int] = defaultdict(int)
    for s in shares:
        counts[s.uploader] += 1
    by_pairing = uc.totals(shares)
    excluded: frozenset[str] = frozenset()
    while True:
        scale = uc.pooled_scale(by_pairing, excluded)
        found = {u: uc.residuals(by_pairing, u, excluded, scale) for u in sorted(counts)}
        small = sorted(u for u, rows in found.items() if sum(r.battles for r in rows) < min_battles)
        pooled = sum(r.battles for u in small for r in found[u]) >= min_battles and len(small) > 1
        if not pooled and not set(small) <= excluded:
            excluded = excluded | frozenset(small)
            continue
        units = {u: found[u] for u in sorted(counts) if u not in small}
        members = {u: [u] for u in units}
        if pooled:
            units[POOL] = [r for u in small for r in found[u]]
            members[POOL] = small
        pool = uc.Reference()
        for unit, rows in units.items():
            if not set(members[unit]) <= excluded:
                pool.add(rows)
        verdicts = [
            uc.unit_verdict(
                unit,
                sum(counts[u] for u in members[unit]),
                rows,
                pool,
                not set(members[unit]) <= excluded,
                min_battles,
            )
            for unit, rows in units.items()
        ]
        tested = [v for v in verdicts if v.p_raw is not None]
        for v, p in zip(tested, uc.holm([v.p_raw for v in tested if v.p_raw is not None])):
            v.p, v.flagged = p, p < alpha
        newly = [v for v in verdicts if v.flagged and not set(members[v.uploader]) <= excluded]
        if not newly:
            break
        worst = min(newly, key=lambda v: (v.p_raw if v.p_raw is not None else 1.0, v.uploader))
        excluded = excluded | frozenset(members[worst.uploader])
    by_unit = {v.uploader: v for v in verdicts}
    for u in small:
        by_unit.setdefault(u, Verdict(u, counts[u], pooled=pooled))
    return by_unit, excluded


def flagged_uploaders(verdicts: Iterable[Verdict]) -> set[str]:
    """The uploaders a list of verdicts flags: each flagged row, and every pooled one if the pool is."""
    rows = list(verdicts)
    pool_flagged = any(v.uploader == POOL and v.flagged for v in rows)
    return {v.uploader for v in rows if v.uploader != POOL and (v.flagged or (v.pooled and pool_flagged))}


def coherent(found: Settled) -> bool:
    """The final consensus leaves out exactly the flagged uploaders and the untested small ones."""
    untested = {v.uploader for v in found.verdicts if not v.tested and not v.pooled and v.uploader != POOL}
    return not found.unsettled and found.excluded == flagged_uploaders(found.verdicts) | untested


def old_incoherent(verdicts: dict[str, Verdict], excluded: frozenset[str]) -> list[str]:
    """The old loop's tested units left out of the consensus yet shown consistent."""
    pooled = [u for u, v in verdicts.items() if v.pooled]
    out = []
    for unit, v in verdicts.items():
        members = pooled if unit == POOL else [unit]
        if v.tested and not v.flagged and members and set(members) <= excluded:
            out.append(unit)
    return sorted(out)


def counts_and_totals(shares: list[Share]) -> tuple[dict[str, int], uc.Totals]:
    """Battles per uploader, and the per-pairing totals."""
    counts: dict[str, int] = defaultdict(int)
    for s in shares:
        counts[s.uploader] += 1
    return counts, uc.totals(shares)


def first_round_flagged(shares: list[Share]) -> set[str]:
    """The uploaders flagged by the first round alone (everyone in the consensus but the untested)."""
    counts, by_pairing = counts_and_totals(shares)
    excluded: frozenset[str] = frozenset()
    while True:
        state = uc.one_round(by_pairing, counts, excluded, ALPHA, MIN_BATTLES)
        if not state.untested_in():
            break
        excluded = excluded | frozenset(state.untested_in())
    return {u for unit, v in state.verdicts.items() if v.flagged for u in state.members[unit]}


def coherent_state_exists(shares: list[Share], found: Settled) -> bool:
    """Whether any consensus is coherent: over every subset of the final round's units left out (with
    the untested small uploaders), one whose round flags exactly the units it leaves out and leaves
    none untested in. For the rare runs ``settle`` leaves unsettled (2^units rounds)."""
    counts, by_pairing = counts_and_totals(shares)
    untested = frozenset(v.uploader for v in found.verdicts if not v.tested and not v.pooled and v.uploader != POOL)
    units = [v.uploader for v in found.verdicts if v.tested]
    pooled = [v.uploader for v in found.verdicts if v.pooled]
    for k in range(2 ** len(units)):
        out = [unit for i, unit in enumerate(units) if k >> i & 1]
        excluded = untested | frozenset(u for unit in out for u in (pooled if unit == POOL else [unit]))
        state = uc.one_round(by_pairing, counts, excluded, ALPHA, MIN_BATTLES)
        if state.untested_in() or set(state.verdicts) != set(units):
            continue
        if all(v.flagged == (unit in out) for unit, v in state.verdicts.items()):
            return True
    return False


def compare(shares: list[Share]) -> dict[str, Any]:
    """Both procedures on one rumble: flagged uploaders, coherence, what the new one re-admitted."""
    found = settle(shares)
    old, old_out = old_consistency(shares)
    ok = coherent(found)
    return {
        "flagged": flagged_uploaders(found.verdicts),
        "first_round": first_round_flagged(shares),
        "coherent": ok,
        "coherent_exists": True if ok else coherent_state_exists(shares, found),
        "unsettled": found.unsettled,
        "readmitted": found.readmitted,
        "rounds": found.rounds,
        "verdicts": {v.uploader: v for v in found.verdicts},
        "old_flagged": flagged_uploaders(old.values()),
        "old_incoherent": old_incoherent(old, old_out),
        "old_out": old_out,
        "old_verdicts": old,
    }


def run_issue14(job: tuple[int, int, float]) -> dict[str, Any]:
    seed, battles, bias = job
    shares, favoured = simulate(seed, battles, bias)
    found = compare(shares)
    top = found["verdicts"][BIASED].top_bots
    found["top_right"] = bool(top) and top[0]["bot"] == favoured
    return found


def run_honest(seed: int) -> dict[str, Any]:
    return compare(honest_rumble(seed))


def run_honest_model(seed: int) -> dict[str, Any]:
    return compare(honest_rumble(seed, model_noise=True))


def run_spread(job: tuple[int, int, int]) -> dict[str, Any]:
    seed, forgers, per_forger = job
    shares, target = spread_forgery(seed, forgers, per_forger)
    found = compare(shares)
    found["moved"] = target_mean(shares, target) - target_mean(shares, target, without="forger")
    return found


def run_dragged(seed: int) -> dict[str, Any]:
    return compare(dragged_consensus(seed))


def target_mean(shares: list[Share], target: str, without: str = "") -> float:
    """The target's mean share over its pairings, each pairing's battles averaged (as APS counts)."""
    per: dict[str, list[float]] = {}
    for s in shares:
        if without and s.uploader.startswith(without):
            continue
        opponent, x = (s.b, s.share) if s.a == target else (s.a, 100.0 - s.share)
        per.setdefault(opponent, []).append(x)
    return sum(sum(v) / len(v) for v in per.values()) / len(per)


def upper_bound(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a binomial rate seen k times in n."""
    if k >= n:
        return 1.0

    def at_most_k(p: float) -> float:
        return sum(math.comb(n, i) * p**i * (1.0 - p) ** (n - i) for i in range(k + 1))

    lo, hi = k / n, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if at_most_k(mid) > 1.0 - confidence else (lo, mid)
    return hi


def rate(k: int, n: int, digits: int = 3) -> str:
    """k/n, the rate and its 95 % upper bound."""
    return f"{k}/{n} = {k / n:.{digits}f} (95 % upper bound {upper_bound(k, n):.{digits}f})"


def verdict_line(ok: bool, what: str) -> str:
    return f"{'PASS' if ok else 'FAIL'}  {what}"


def run_all(
    pool: ProcessPoolExecutor, fn: Callable[[Any], dict[str, Any]], jobs: list[Any], desc: str
) -> list[dict[str, Any]]:
    """``fn`` over ``jobs`` on the worker processes, in order, with a progress bar."""
    return list(tqdm(pool.map(fn, jobs, chunksize=max(1, len(jobs) // 40)), total=len(jobs), desc=desc))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20, help="issue-14 rumbles (and the scale of the others)")
    parser.add_argument("--battles", type=int, default=350, help="battles per uploader")
    parser.add_argument("--bias", type=float, default=15.0, help="points the biased uploader adds to its bot")
    parser.add_argument("--honest-seeds", type=int, help="honest rumbles (default 50 x --seeds)")
    parser.add_argument("--spread-seeds", type=int, help="spread forgeries (default 5 x --seeds)")
    parser.add_argument("--dragged-seeds", type=int, help="dragged consensus rumbles (default 5 x --seeds)")
    parser.add_argument("--forgers", type=int, default=8, help="names of the spread forgery")
    parser.add_argument("--per-forger", type=int, default=15, help="battles per forger name")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    args = parser.parse_args()
    n = args.seeds
    honest_n = args.honest_seeds if args.honest_seeds is not None else 50 * n
    spread_n = args.spread_seeds if args.spread_seeds is not None else 5 * n
    dragged_n = args.dragged_seeds if args.dragged_seeds is not None else 5 * n
    checks: list[str] = []
    everything: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        # 1. issue 14
        found = run_all(pool, run_issue14, [(seed, args.battles, args.bias) for seed in range(n)], "issue 14")
        for seed, one in enumerate(found):
            tqdm.write(f"seed {seed:2d}: flagged {', '.join(sorted(one['flagged'])) or 'none'}")
        everything += found
        caught = {name: sum(name in one["flagged"] for one in found) for name in (BIASED, RANDOM)}
        honest_flags = sum(len(one["flagged"] & set(HONEST)) for one in found)
        any_honest = sum(bool(one["flagged"] & set(HONEST)) for one in found)
        old_any = sum(bool(one["old_flagged"] & set(HONEST)) for one in found)
        print(f"\n1. issue 14: {n} seeds, 24 bots, 6 uploaders x {args.battles} battles, bias {args.bias:+.0f} points")
        print(
            f"  detection rate, biased (+{args.bias:.0f} to one bot): {caught[BIASED]}/{n} = {caught[BIASED] / n:.2f}"
        )
        print(f"  detection rate, random shares:               {caught[RANDOM]}/{n} = {caught[RANDOM] / n:.2f}")
        print(f"  honest uploaders flagged:                    {honest_flags}/{4 * n} = {honest_flags / (4 * n):.3f}")
        print(f"  rumbles with any honest uploader flagged:    {rate(any_honest, n)} (old loop: {old_any})")
        print(f"  biased uploader's favoured bot listed first: {sum(one['top_right'] for one in found)}/{n}")
        checks.append(
            verdict_line(any_honest / n <= ALPHA, f"issue 14: rumbles with an honest uploader flagged ≤ {ALPHA}")
        )

        # 2. honest rumbles
        for model_noise in (False, True):
            found = run_all(
                pool,
                run_honest_model if model_noise else run_honest,
                list(range(honest_n)),
                "honest rumbles, model noise" if model_noise else "honest rumbles",
            )
            everything += found
            any_flag = sum(bool(one["flagged"]) for one in found)
            first = sum(bool(one["first_round"]) for one in found)
            old_any = sum(bool(one["old_flagged"]) for one in found)
            pooled = sum(POOL in one["verdicts"] and one["verdicts"][POOL].tested for one in found)
            units = sum(len([v for v in one["verdicts"].values() if v.tested]) for one in found)
            flagged_units = sum(len([v for v in one["verdicts"].values() if v.flagged]) for one in found)
            pool_flags = sum(POOL in one["verdicts"] and one["verdicts"][POOL].flagged for one in found)
            label = "2b" if model_noise else "2."
            noise = "battles drawn with the test's own variance model" if model_noise else "battle_share's noise"
            print(
                f"\n{label} honest rumbles: {honest_n}, 24 bots, 4 uploaders of 50-700 battles and 3 of 5-19 "
                f"(pooled); {noise}"
            )
            print(
                f"  units tested: {units} (the pool in {pooled} rumbles); flagged: {flagged_units} ({pool_flags} pools)"
            )
            print(f"  family-wise false-flag rate, whole loop (any unit flagged): {rate(any_flag, honest_n)}")
            print(f"  the same, first round alone:                               {rate(first, honest_n)}")
            print(f"  the same, the old loop:                                    {rate(old_any, honest_n)}")
            checks.append(
                verdict_line(
                    any_flag / honest_n <= ALPHA,
                    f"honest rumbles ({noise}): family-wise false-flag rate over the whole loop ≤ ALPHA = {ALPHA}",
                )
            )

        # 3. spread forgery
        jobs = [(seed, args.forgers, args.per_forger) for seed in range(spread_n)]
        found = run_all(pool, run_spread, jobs, "spread forgery")
        everything += found
        caught_pool = sum(POOL in one["verdicts"] and one["verdicts"][POOL].flagged for one in found)
        honest_flags = sum(len(one["flagged"] & {"honest1", "honest2"}) for one in found)
        moved = sum(one["moved"] for one in found) / spread_n
        print(
            f"\n3. spread forgery: {args.forgers} names x {args.per_forger} battles at 85 % against 2 honest uploaders, {spread_n} seeds"
        )
        print(
            f"  detection rate (the pooled small uploaders flagged): {caught_pool}/{spread_n} = {caught_pool / spread_n:.2f}"
        )
        print(f"  honest uploaders flagged:                            {honest_flags}/{2 * spread_n}")
        print(f"  the target's APS moved by the forgery (if counted): mean {moved:+.1f} points")
        checks.append(
            verdict_line(
                caught_pool == spread_n and honest_flags == 0,
                "spread forgery: flagged in every seed, no honest uploader ever",
            )
        )

        # 4. dragged consensus
        found = run_all(pool, run_dragged, list(range(dragged_n)), "dragged consensus")
        everything += found
        honest = set(DRAGGED)

        def count(test: Callable[[dict[str, Any]], bool]) -> str:
            return f"{sum(bool(test(one)) for one in found)}/{dragged_n}"

        print(
            f"\n4. dragged consensus: forger +{DRAGGED_BIAS:.0f} on 12 pairings, partner +{PARTNER_BIAS:.0f} on 4 "
            f"pairings only 'narrow' shares, 4 honest uploaders, {dragged_n} seeds"
        )
        print(
            f"  old loop: 'narrow' left out of the consensus yet shown consistent: {count(lambda o: 'narrow' in o['old_incoherent'])}"
        )
        print(
            f"  new:      'narrow' re-admitted:                                    {count(lambda o: 'narrow' in o['readmitted'])}"
        )
        print(
            f"  new:      'narrow' left out and flagged at the end:                {count(lambda o: 'narrow' in o['flagged'])}"
        )
        print(
            f"  partner flagged:  old {count(lambda o: 'partner' in o['old_flagged'])}, new {count(lambda o: 'partner' in o['flagged'])}"
        )
        print(
            f"  partner untested: old {count(lambda o: not o['old_verdicts'].get('partner', Verdict('', 0)).tested)}, "
            f"new {count(lambda o: not o['verdicts']['partner'].tested)}"
        )
        print(
            f"  forger flagged:   old {count(lambda o: 'forger' in o['old_flagged'])}, new {count(lambda o: 'forger' in o['flagged'])}"
        )
        print(
            f"  rumbles with an honest uploader flagged: old {count(lambda o: o['old_flagged'] & honest)}, "
            f"new {count(lambda o: o['flagged'] & honest)}"
        )
        example = next((seed for seed, one in enumerate(found) if "narrow" in one["old_incoherent"]), None)
        if example is not None:
            one = found[example]
            print(
                f"  e.g. seed {example}: old loop left out {', '.join(sorted(one['old_out']))} and flagged "
                f"{', '.join(sorted(one['old_flagged'])) or 'none'}, 'narrow' shown consistent "
                f"(p {one['old_verdicts']['narrow'].p:.3g}) though out; new: left out {', '.join(sorted(one['flagged'])) or 'none'}, "
                f"flagged the same, 'narrow' back in (p {one['verdicts']['narrow'].p:.3g})"
            )
        checks.append(
            verdict_line(
                any("narrow" in one["old_incoherent"] for one in found)
                and not any("narrow" in one["old_incoherent"] and not one["coherent"] for one in found),
                "dragged consensus: the old loop's case occurs, and the new procedure is coherent there",
            )
        )

        # coherence over every run
        incoherent = [one for one in everything if not one["coherent"]]
        without = sum(not one["coherent_exists"] for one in incoherent)
        old_bad = sum(bool(one["old_incoherent"]) for one in everything)
        readmissions = sum(bool(one["readmitted"]) for one in everything)
        rounds = max(one["rounds"] for one in everything)
        print(f"\ncoherence over all {len(everything)} runs of the new procedure:")
        print(f"  incoherent (unsettled): {len(incoherent)}, of which with no coherent state at all: {without}")
        for one in incoherent:
            unit = one["unsettled"][0] if one["unsettled"] else "?"
            v = one["verdicts"].get(unit)
            print(f"    unsettled {unit}: {v.reason if v is not None else ''}")
        print(f"  runs with a re-admission: {readmissions}; most rounds in one run: {rounds}")
        print(f"  the old loop's runs with a tested unit left out yet shown consistent: {old_bad}")
        checks.append(
            verdict_line(
                len(incoherent) == without,
                "every run coherent (left out exactly the flagged and untested), unless no coherent state exists",
            )
        )
    print()
    for line in checks:
        print(line)


if __name__ == "__main__":
    main()
