"""Simulated rumble for the uploader-consistency test (rumble/rankings/uploader_consistency.py).

24 bots of known strengths; four honest uploaders, one that adds ``--bias`` points to one bot
whenever it fights, one that sends random shares (uniform 0 to 100); each sends ``--battles``
battles on pairings drawn at random. Prints, over ``--seeds`` seeds, the detection rate of each
biased uploader and the false-flag rate of the honest ones.

Then the spread forgery of a public ladder: a target bot with two honest uploaders (3 battles each
on each of its 60 pairings) and ``--forgers`` names of ``--per-forger`` battles each, every one
reporting the target at 85 % (each name below the test's 20-battle minimum). Prints how often the
forgery is flagged (the pooled small uploaders), how often an honest uploader is, and the target's
mean share with and without the forgers' battles.

    .venv/bin/python scripts/sim_uploaders.py            # 20 seeds, 350 battles each
"""

from __future__ import annotations

import argparse
import math
import random

from tqdm import tqdm

from rumble.rankings.uploader_consistency import POOL, Share, consistency

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


def target_mean(shares: list[Share], target: str, without: str = "") -> float:
    """The target's mean share over its pairings, each pairing's battles averaged (as APS counts)."""
    per: dict[str, list[float]] = {}
    for s in shares:
        if without and s.uploader.startswith(without):
            continue
        opponent, x = (s.b, s.share) if s.a == target else (s.a, 100.0 - s.share)
        per.setdefault(opponent, []).append(x)
    return sum(sum(v) / len(v) for v in per.values()) / len(per)


def spread_report(seeds: int, forgers: int, per_forger: int) -> None:
    caught = honest_flags = 0
    moved = []
    for seed in tqdm(range(seeds), desc="spread forgery"):
        shares, target = spread_forgery(seed, forgers, per_forger)
        verdicts = {v.uploader: v for v in consistency(shares)}
        caught += POOL in verdicts and verdicts[POOL].flagged
        honest_flags += verdicts["honest1"].flagged + verdicts["honest2"].flagged
        moved.append(target_mean(shares, target) - target_mean(shares, target, without="forger"))
    print(f"spread forgery: {forgers} names x {per_forger} battles at 85 % against 2 honest uploaders, {seeds} seeds")
    print(f"  detection rate (the pooled small uploaders flagged): {caught}/{seeds} = {caught / seeds:.2f}")
    print(
        f"  false-flag rate, honest uploaders:                    {honest_flags}/{2 * seeds} = {honest_flags / (2 * seeds):.3f}"
    )
    print(f"  the target's APS moved by the forgery (if counted): mean {sum(moved) / len(moved):+.1f} points")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--battles", type=int, default=350, help="battles per uploader")
    parser.add_argument("--bias", type=float, default=15.0, help="points the biased uploader adds to its bot")
    parser.add_argument("--forgers", type=int, default=8, help="names of the spread forgery")
    parser.add_argument("--per-forger", type=int, default=15, help="battles per forger name")
    args = parser.parse_args()
    caught = {BIASED: 0, RANDOM: 0}
    false_flags, top_right = 0, 0
    for seed in tqdm(range(args.seeds), desc="seeds"):
        shares, favoured = simulate(seed, args.battles, args.bias)
        verdicts = {v.uploader: v for v in consistency(shares)}
        for name in caught:
            caught[name] += verdicts[name].flagged
        false_flags += sum(verdicts[h].flagged for h in HONEST)
        top_right += bool(verdicts[BIASED].top_bots) and verdicts[BIASED].top_bots[0]["bot"] == favoured
        flagged = sorted(v.uploader for v in verdicts.values() if v.flagged)
        tqdm.write(f"seed {seed:2d}: flagged {', '.join(flagged) or 'none'}")
    n = args.seeds
    print(f"{n} seeds, 24 bots, 6 uploaders x {args.battles} battles, bias {args.bias:+.0f} points")
    print(f"detection rate, biased (+{args.bias:.0f} to one bot): {caught[BIASED]}/{n} = {caught[BIASED] / n:.2f}")
    print(f"detection rate, random shares:               {caught[RANDOM]}/{n} = {caught[RANDOM] / n:.2f}")
    print(f"false-flag rate, honest uploaders:          {false_flags}/{4 * n} = {false_flags / (4 * n):.3f}")
    print(f"biased uploader's favoured bot listed first: {top_right}/{n}")
    spread_report(args.seeds, args.forgers, args.per_forger)


if __name__ == "__main__":
    main()
