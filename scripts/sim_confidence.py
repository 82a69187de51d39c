"""Simulated rumbles of known truth for the likelihood of superiority and the version test.

1. LOS calibration: ``--bots`` bots with true strengths; pairing (a, b) has a true APS
   100/(1 + e^(s_b − s_a)); each battle's score % is drawn from a Beta law with that mean
   (concentration ``--kappa``, a per-battle spread of about 12 points, as real 35-round battles), and
   each pairing gets ``--min-battles`` to ``--max-battles`` battles. The pairings go through rumble's own scores
   (rankings.scores: Welford's variance, LiteRumble's APS interval) and superiority.py. Of the
   ordered pairs given LOS ≥ 0.95 it prints the share truly ordered that way (true APS = the mean of
   the true pairing APS), for every pair and for the adjacent pairs ("LOS to next"), and a
   calibration table by LOS bin.
2. Version test: an old version with one battle against each of ``--opponents`` opponents; a new
   version whose true pairing APS is the old one's plus the difference plus a per-opponent
   deviation (sd ``--spread``, centred so the true APS difference is exactly the one asked). The
   test's battles go round the opponents in a random order, one for each version against the same
   opponent, and the test (version_test.py) is read every ``--look`` opponents; it stops at the
   first verdict or after ``--rounds`` rounds (no verdict). For true differences 0, +0.5, +1, +2 APS
   points: the share of runs ending better, worse, no difference and without a verdict, and the mean
   battles (both versions, during the test) to a verdict.

    .venv/bin/python scripts/sim_confidence.py                # about 1 to 2 minutes
    .venv/bin/python scripts/sim_confidence.py --runs 50      # quicker
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rumble.rankings import superiority, version_test  # noqa: E402
from rumble.rankings.scores import Pairing, add_battle, summary, totals_of  # noqa: E402


def beta_scores(rng: np.random.Generator, mean: np.ndarray, kappa: float) -> np.ndarray:
    """Battle score % with the given true means (Beta law, concentration kappa)."""
    m = np.clip(mean / 100.0, 1e-3, 1 - 1e-3)
    return 100.0 * rng.beta(m * kappa, (1 - m) * kappa)


def simulate_los(
    rng: np.random.Generator, bots: int, kappa: float, battles: tuple[int, int]
) -> list[tuple[float, bool, bool]]:
    """(LOS(a > b), truly a > b, adjacent) for every pair of one simulated rumble, a above b by APS."""
    strength = rng.normal(0.0, 0.35, bots)
    true_p = 100.0 / (1.0 + np.exp(strength[None, :] - strength[:, None]))  # true_p[a, b]: a's APS vs b
    np.fill_diagonal(true_p, np.nan)
    true_aps = np.nanmean(true_p, axis=1)
    pairings: dict[tuple[int, int], Pairing] = {}
    for a in range(bots):
        for b in range(a + 1, bots):
            n = int(rng.integers(battles[0], battles[1] + 1))
            scores = beta_scores(rng, np.full(n, true_p[a, b]), kappa)
            pa, pb = Pairing(), Pairing()
            for x in scores:
                pa, pb = add_battle(pa, float(x), 0.0, ""), add_battle(pb, 100.0 - float(x), 0.0, "")
            pairings[a, b], pairings[b, a] = pa, pb
    standings = []
    for a in range(bots):
        t = totals_of(pairings[a, b] for b in range(bots) if b != a)
        s = summary(t)
        variance = superiority.aps_variance(s.aps_ci, s.pairings, t.ci_count, s.battles)
        standings.append((a, superiority.Standing(str(a), s.aps, variance, s.pairings)))
    standings.sort(key=lambda item: -item[1].aps)
    out = []
    for i, (a, sa) in enumerate(standings):
        for j in range(i + 1, len(standings)):
            b, sb = standings[j]
            p = pairings[a, b]
            shared = superiority.shared_variance(sa, sb, superiority.squared_error(p.battles, p.aps_m2), True)
            out.append((superiority.los(sa, sb, shared), bool(true_aps[a] > true_aps[b]), j == i + 1))
    return out


def report_los(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    rows: list[tuple[float, bool, bool]] = []
    for _ in tqdm(range(args.rumbles), desc="LOS rumbles", file=sys.stderr):
        rows += simulate_los(rng, args.bots, args.kappa, (args.min_battles, args.max_battles))
    print(
        f"LOS calibration: {args.rumbles} rumbles of {args.bots} bots, "
        f"{args.min_battles} to {args.max_battles} battles a pairing"
    )
    for label, chosen in (("all pairs", rows), ("adjacent pairs (LOS to next)", [r for r in rows if r[2]])):
        sure = [truth for p, truth, _ in chosen if p is not None and p >= 0.95]
        share = sum(sure) / len(sure) if sure else float("nan")
        print(f"  {label}: {len(sure)} of {len(chosen)} given LOS >= 0.95; truly ordered: {share:.4f}")
    print("  calibration by LOS bin (all pairs): bin, pairs, mean LOS, share truly ordered")
    edges = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0001]
    for lo, hi in zip(edges, edges[1:]):
        inside = [(p, t) for p, t, _ in rows if p is not None and lo <= p < hi]
        if inside:
            mean_p = sum(p for p, _ in inside) / len(inside)
            share = sum(t for _, t in inside) / len(inside)
            print(f"    [{lo:.2f}, {min(hi, 1.0):.2f}): {len(inside):6d}  {mean_p:.4f}  {share:.4f}")


def run_version_test(rng: np.random.Generator, args: argparse.Namespace, difference: float) -> tuple[str, int]:
    """One test: (verdict, battles played during the test) or ("no verdict", battles) at the cap."""
    k = args.opponents
    old_true = rng.uniform(20.0, 80.0, k)
    deviation = rng.normal(0.0, args.spread, k)
    new_true = old_true + difference + deviation - deviation.mean()
    old_sum = beta_scores(rng, old_true, args.kappa)  # one battle each before the test
    old_n = np.ones(k)
    new_sum, new_n = np.zeros(k), np.zeros(k)
    battles = 0
    upper, lower = version_test.bounds()
    for _ in range(args.rounds):
        order = rng.permutation(k)
        for start in range(0, k, args.look):
            chunk = order[start : start + args.look]
            new_sum[chunk] += beta_scores(rng, new_true[chunk], args.kappa)
            old_sum[chunk] += beta_scores(rng, old_true[chunk], args.kappa)
            new_n[chunk] += 1
            old_n[chunk] += 1
            battles += 2 * len(chunk)
            met = new_n > 0
            n = int(met.sum())
            if n < version_test.MIN_OPPONENTS:
                continue
            d = new_sum[met] / new_n[met] - old_sum[met] / old_n[met]
            mean, var = float(d.mean()), max(float(d.var(ddof=1)), version_test.VARIANCE_FLOOR)
            info = n / var
            plus = version_test.llr(mean, info, version_test.DELTA)
            minus = version_test.llr(-mean, info, version_test.DELTA)
            verdict = version_test.verdict_of(plus, minus, upper, lower)
            if verdict != "not yet":
                check = version_test.version_test([float(x) for x in d], battles)
                assert check.verdict == verdict, (check, verdict)
                return verdict, battles
    return "no verdict", battles


def report_version_test(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed + 1)
    print(
        f"Version test: {args.runs} runs per difference, {args.opponents} opponents, per-opponent spread "
        f"{args.spread}, delta {version_test.DELTA}, alpha = beta = {version_test.ALPHA}, looks every {args.look} "
        f"opponents, at most {args.rounds} rounds ({2 * args.rounds * args.opponents} battles)"
    )
    print("  true diff | better | worse | no difference | no verdict | mean battles to a verdict (runs with one)")
    for difference in (0.0, 0.5, 1.0, 2.0):
        counts = {"better": 0, "worse": 0, "no difference": 0, "no verdict": 0}
        spent = []
        for _ in tqdm(range(args.runs), desc=f"diff {difference:+.1f}", file=sys.stderr):
            verdict, battles = run_version_test(rng, args, difference)
            counts[verdict] += 1
            if verdict != "no verdict":
                spent.append(battles)
        shares = " | ".join(f"{counts[v] / args.runs:.3f}" for v in counts)
        mean_battles = f"{sum(spent) / len(spent):.0f}" if spent else "n/a"
        print(f"  {difference:+9.1f} | {shares} | {mean_battles}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--kappa", type=float, default=15.0, help="Beta concentration of a battle's score %%")
    parser.add_argument("--bots", type=int, default=80)
    parser.add_argument("--rumbles", type=int, default=10)
    parser.add_argument("--min-battles", type=int, default=2, help="1 shows the APS CI's blind spot (README)")
    parser.add_argument("--max-battles", type=int, default=4)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--opponents", type=int, default=500)
    parser.add_argument("--spread", type=float, default=2.0, help="sd of the per-opponent difference, APS points")
    parser.add_argument("--look", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--skip-los", action="store_true")
    parser.add_argument("--skip-version", action="store_true")
    args = parser.parse_args()
    if not args.skip_los:
        report_los(args)
    if not args.skip_version:
        report_version_test(args)


if __name__ == "__main__":
    main()
