"""Simulated rumbles of known truth for the likelihood of superiority and the version test.

1. LOS calibration: ``--bots`` bots with true strengths; pairing (a, b) has a true APS
   100/(1 + e^(s_b − s_a)); each battle's score % is drawn from a Beta law with that mean
   (concentration ``--kappa``, a per-battle spread of about 12 points, as real 35-round battles), and
   each pairing gets ``--min-battles`` to ``--max-battles`` battles. The pairings go through rumble's own scores
   (rankings.scores: Welford's variance, LiteRumble's APS interval) and superiority.py. Of the
   ordered pairs given LOS ≥ 0.95 it prints the share truly ordered that way (true APS = the mean of
   the true pairing APS), for every pair and for the adjacent pairs ("LOS to next"), and a
   calibration table by LOS bin.
2. Version test, read after every new common opponent from the first (a competitor who reloads
   /BotCompare each time), for per-opponent spreads ``--spreads`` (2, 3, 5 APS points) and true
   differences 0, +0.5, +1 and +2 APS points, in two models:
   a. differences: each new common opponent brings one per-opponent APS difference, normal with
      the true difference as mean and sd the spread (the list /BotCompare shows), up to
      ``--opponents`` (500) opponents, ``--difference-runs`` runs (20,000) per setting;
   b. battles: an old version with one battle against each of ``--opponents`` opponents; a new
      version whose true pairing APS is the old one's plus the difference plus a per-opponent
      deviation (sd the spread, centred so the true APS difference is exactly the one asked); each
      battle's score % is drawn from a Beta law with that mean (concentration ``--kappa``, a
      per-battle spread of about 12 points, as real 35-round battles). The battles go round the
      opponents in a random order, one for each version against the same opponent, and the test is
      read after every such pair; at most ``--rounds`` (40) rounds, ``--runs`` runs (6,000) per setting.
   Each run stops at its first verdict. Printed: the share of runs ending better, worse, no
   difference and without a verdict (with a 95 % interval for "better"), the mean opponents or
   battles to a verdict, and PASS or FAIL for the targets: false "better" (true difference 0) at
   most 5 %, power (share "better" at +1) at least 0.9. The exit status is 1 if any fails. Every
   verdict of the first ``--check`` runs of a setting is checked against version_test.version_test.
   ``--scan``: the false-better rate in model a for spreads 1.5 to 8, of the test and of two
   variants: its bounds without the allowance for re-estimating the variance (k = ν, module
   docstring) and the test before issue 33 (Wald's bounds ±ln 19, no allowance at all).

    .venv/bin/python scripts/sim_confidence.py                # about 2 minutes on 2 cores (3 to 4 with --scan)
    .venv/bin/python scripts/sim_confidence.py --skip-los --runs 300 --difference-runs 3000   # quicker
    .venv/bin/python scripts/sim_confidence.py --skip-los --scan
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's rumble, even if another is installed

from rumble.rankings import superiority, version_test  # noqa: E402
from rumble.rankings.scores import Pairing, add_battle, summary, totals_of  # noqa: E402


def beta_scores(rng: np.random.Generator, mean: np.ndarray, kappa: float) -> np.ndarray:
    """Battle score % with the given true means (Beta law, concentration kappa)."""
    m = np.clip(mean / 100.0, 1e-3, 1 - 1e-3)
    return 100.0 * rng.beta(m * kappa, (1 - m) * kappa)


def simulate_los(
    rng: np.random.Generator, bots: int, kappa: float, battles: tuple[int, int]
) -> list[tuple[float | None, bool, bool]]:
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
        assert s.aps is not None  # every bot has its pairings
        standings.append((a, superiority.standing(str(a), s.aps, s.aps_ci, s.pairings, t.ci_count, s.battles)))
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
    rows: list[tuple[float | None, bool, bool]] = []
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


VERDICTS = ("not yet", "better", "worse", "no difference")  # the codes 0 to 3 below
DIFFERENCES = (0.0, 0.5, 1.0, 2.0)
FALSE_BETTER_TARGET, POWER_TARGET = 0.05, 0.9
Bounds = tuple[np.ndarray, np.ndarray]  # (upper, lower) by number of common opponents


def version_bounds(opponents: int) -> Bounds:
    """The version test's bounds at every number of common opponents up to ``opponents``."""
    found = [version_test.bounds(max(n, 2)) for n in range(opponents + 1)]
    return np.array([u for u, _ in found]), np.array([b for _, b in found])


def whole_freedom_bounds(opponents: int) -> Bounds:
    """The variant without the allowance for re-estimating the variance: k = ν (module docstring, 2.)."""
    upper, lower = version_test.limit_bounds()
    up = [version_test.allowance(upper, max(n - 1, 1)) for n in range(opponents + 1)]
    return np.array(up), -np.array([version_test.allowance(-lower, max(n - 1, 1)) for n in range(opponents + 1)])


def wald_bounds(opponents: int) -> Bounds:
    """The test before issue 33: Wald's bounds ±ln((1 − β)/α) = ±ln 19 at every n."""
    upper = math.log((1 - version_test.BETA) / version_test.ALPHA)
    return np.full(opponents + 1, upper), np.full(opponents + 1, -upper)


def verdicts(total: np.ndarray, squares: np.ndarray, n: int, bounds: Bounds) -> np.ndarray:
    """version_test's verdict code for each run, from the sum and the sum of squares of its n differences."""
    delta = version_test.DELTA
    mean = total / n
    variance = np.maximum((squares - total * mean) / (n - 1), version_test.VARIANCE_FLOOR)
    information = n / variance
    plus, minus = delta * information * (mean - delta / 2), delta * information * (-mean - delta / 2)
    upper, lower = bounds[0][n], bounds[1][n]
    code = np.zeros(len(total), dtype=np.int8)
    code[(plus <= lower) & (minus <= lower)] = 3
    code[minus >= upper] = 2
    code[plus >= upper] = 1
    return code


def check(diffs: np.ndarray, code: int, battles: int) -> None:
    """The vectorised verdict must be version_test's, up to rounding right at a bound."""
    found = version_test.version_test([float(x) for x in diffs], battles)
    if found.verdict != VERDICTS[code]:
        assert found.llr_better is not None and found.llr_worse is not None, found
        gap = min(abs(x - b) for x in (found.llr_better, found.llr_worse) for b in (found.upper, found.lower))
        assert gap < 1e-6 * max(1.0, abs(found.llr_better)), (found, VERDICTS[code])


def run_differences(
    rng: np.random.Generator, runs: int, opponents: int, spread: float, difference: float, bounds: Bounds, checked: int
) -> tuple[np.ndarray, np.ndarray]:
    """Model a: each run's verdict code and the common opponents at its verdict (0 without one)."""
    codes, at = np.zeros(runs, dtype=np.int8), np.zeros(runs, dtype=np.int64)
    for first in range(0, runs, 5000):  # blocks of runs, to bound the memory
        size = min(5000, runs - first)
        d = rng.normal(difference, spread, (size, opponents))
        total, squares = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
        code, when = np.zeros(size, dtype=np.int8), np.zeros(size, dtype=np.int64)
        active = np.arange(size)
        for n in range(version_test.MIN_OPPONENTS, opponents + 1):
            found = verdicts(total[active, n - 1], squares[active, n - 1], n, bounds)
            hit = found != 0
            code[active[hit]], when[active[hit]] = found[hit], n
            active = active[~hit]
            if active.size == 0:
                break
        if first == 0:
            for run in range(min(checked, size)):
                if code[run]:
                    check(d[run, : when[run]], int(code[run]), 0)
        codes[first : first + size], at[first : first + size] = code, when
    return codes, at


def run_battles(
    rng: np.random.Generator, args: argparse.Namespace, spread: float, difference: float, bounds: Bounds
) -> tuple[np.ndarray, np.ndarray]:
    """Model b: each run's verdict code and the battles played during the test to its verdict (or in all)."""
    runs, k = args.runs, args.opponents
    old_true = rng.uniform(20.0, 80.0, (runs, k))
    deviation = rng.normal(0.0, spread, (runs, k))
    new_true = old_true + difference + deviation - deviation.mean(axis=1, keepdims=True)
    old_sum, old_n = beta_scores(rng, old_true, args.kappa), np.ones((runs, k))  # one battle each before the test
    new_sum, new_n = np.zeros((runs, k)), np.zeros((runs, k))
    diff = np.zeros((runs, k))  # the current difference against each opponent met
    total, squares = np.zeros(runs), np.zeros(runs)
    code, battles = np.zeros(runs, dtype=np.int8), np.full(runs, 2 * k * args.rounds, dtype=np.int64)
    active = np.arange(runs)
    progress = tqdm(total=args.rounds * k, desc=f"battles, spread {spread:g}, diff {difference:+.1f}", file=sys.stderr)
    for r in range(args.rounds):
        order = np.argsort(rng.random((active.size, k)), axis=1)
        new_score = beta_scores(rng, new_true[active], args.kappa)
        old_score = beta_scores(rng, old_true[active], args.kappa)
        rows = np.arange(active.size)  # positions within this round's draws
        for j in range(k):
            i = order[rows, j]
            new_sum[active, i] += new_score[rows, i]
            old_sum[active, i] += old_score[rows, i]
            new_n[active, i] += 1
            old_n[active, i] += 1
            now = new_sum[active, i] / new_n[active, i] - old_sum[active, i] / old_n[active, i]
            before = diff[active, i]
            total[active] += now - before
            squares[active] += now * now - before * before
            diff[active, i] = now
            n = j + 1 if r == 0 else k
            if n >= version_test.MIN_OPPONENTS:
                found = verdicts(total[active], squares[active], n, bounds)
                hit = found != 0
                if hit.any():
                    for position in np.nonzero(hit)[0]:
                        run = active[position]
                        if run < args.check:
                            check(diff[run, new_n[run] > 0], int(found[position]), 2 * (r * k + j + 1))
                    code[active[hit]] = found[hit]
                    battles[active[hit]] = 2 * (r * k + j + 1)
                    active, rows = active[~hit], rows[~hit]
                    if active.size == 0:
                        break
        progress.update(k)
        if active.size == 0:
            break
        met = new_n[active] > 0  # the running sums drift by rounding: recompute them each round
        total[active] = np.where(met, diff[active], 0.0).sum(axis=1)
        squares[active] = np.where(met, diff[active] ** 2, 0.0).sum(axis=1)
    progress.close()
    return code, battles


def share_line(code: np.ndarray, spent: np.ndarray, difference: float, unit: str) -> str:
    runs = len(code)
    shares = [float(np.mean(code == c)) for c in (1, 2, 3, 0)]
    half = 1.96 * math.sqrt(max(shares[0] * (1 - shares[0]), 1e-12) / runs)
    decided = spent[code != 0]
    mean = f"{decided.mean():,.0f} {unit}" if decided.size else "n/a"
    return (
        f"  {difference:+5.1f} | {100 * shares[0]:6.2f} % (± {100 * half:.2f}) | {100 * shares[1]:5.2f} % | "
        f"{100 * shares[2]:6.2f} % | {100 * shares[3]:5.2f} % | {mean}"
    )


def judge(code_at_0: np.ndarray, code_at_1: np.ndarray, label: str) -> bool:
    false_better, power = float(np.mean(code_at_0 == 1)), float(np.mean(code_at_1 == 1))
    ok_false, ok_power = false_better <= FALSE_BETTER_TARGET, power >= POWER_TARGET
    print(
        f"  {label}: false better {100 * false_better:.2f} % <= 5 %: {'PASS' if ok_false else 'FAIL'}; "
        f"power at +1 {power:.3f} >= 0.9: {'PASS' if ok_power else 'FAIL'}"
    )
    return ok_false and ok_power


HEADER = "   diff | better (95 % interval) | worse | no difference | no verdict | mean to a verdict"


def report_version_test(args: argparse.Namespace) -> bool:
    rng = np.random.default_rng(args.seed + 1)
    bounds = version_bounds(args.opponents)
    a, b = version_test.bounds(version_test.MIN_OPPONENTS), version_test.bounds(args.opponents)
    print(
        f"Version test: delta {version_test.DELTA:g}, alpha = beta = {version_test.ALPHA:g}, bounds "
        f"+-{a[0]:.3f} at {version_test.MIN_OPPONENTS} opponents to +-{b[0]:.3f} at {args.opponents}; "
        "read after every new common opponent from the first"
    )
    passed = True
    if not args.skip_differences:
        print(
            f"a. differences: {args.difference_runs} runs per setting, one normal per-opponent difference per new "
            f"opponent, up to {args.opponents} opponents"
        )
        for spread in args.spreads:
            print(f" spread {spread:g} APS points\n{HEADER}")
            found = {}
            for difference in DIFFERENCES:
                code, at = run_differences(
                    rng, args.difference_runs, args.opponents, spread, difference, bounds, args.check
                )
                found[difference] = code
                print(share_line(code, at, difference, "opponents"), flush=True)
            passed &= judge(found[0.0], found[1.0], f"differences, spread {spread:g}")
    if not args.skip_battles:
        print(
            f"b. battles: {args.runs} runs per setting, {args.opponents} opponents, the old version with one battle "
            f"each, then one battle of each version against the same opponent in turn, at most {args.rounds} rounds "
            f"({2 * args.rounds * args.opponents:,} battles)"
        )
        for spread in args.spreads:
            print(f" spread {spread:g} APS points (plus about 12 points per battle)\n{HEADER}")
            found = {}
            for difference in DIFFERENCES:
                code, spent = run_battles(rng, args, spread, difference, bounds)
                found[difference] = code
                print(share_line(code, spent, difference, "battles"), flush=True)
            passed &= judge(found[0.0], found[1.0], f"battles, spread {spread:g}")
    print(f"Version test targets: {'PASS' if passed else 'FAIL'}")
    return passed


def report_scan(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed + 2)
    spreads = (1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0)
    print(
        f"False better by spread (model a, {args.difference_runs} runs each, up to {args.opponents} opponents, "
        "read after every opponent from the first)"
    )
    print(f"  {'variant':40s} | " + " | ".join(f"{s:5g}" for s in spreads))
    variants = (
        ("the test (k = nu/2)", version_bounds(args.opponents)),
        ("no re-estimation allowance (k = nu)", whole_freedom_bounds(args.opponents)),
        ("before issue 33 (+-ln 19, no allowance)", wald_bounds(args.opponents)),
    )
    for label, bounds in variants:
        rates = []
        for spread in tqdm(spreads, desc=label, file=sys.stderr):
            code, _ = run_differences(rng, args.difference_runs, args.opponents, spread, 0.0, bounds, 0)
            rates.append(100 * float(np.mean(code == 1)))
        print(f"  {label:40s} | " + " | ".join(f"{r:5.2f}" for r in rates), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--kappa", type=float, default=15.0, help="Beta concentration of a battle's score %%")
    parser.add_argument("--bots", type=int, default=80)
    parser.add_argument("--rumbles", type=int, default=10)
    parser.add_argument("--min-battles", type=int, default=2, help="1 shows the APS CI's blind spot (README)")
    parser.add_argument("--max-battles", type=int, default=4)
    parser.add_argument("--runs", type=int, default=6000, help="runs per setting of the battles model")
    parser.add_argument("--difference-runs", type=int, default=20000, help="runs per setting of the differences model")
    parser.add_argument("--opponents", type=int, default=500)
    parser.add_argument(
        "--spreads",
        type=float,
        nargs="+",
        default=[2.0, 3.0, 5.0],
        help="sd of the per-opponent difference, APS points",
    )
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--check", type=int, default=300, help="check the verdicts of this many runs a setting")
    parser.add_argument("--skip-los", action="store_true")
    parser.add_argument("--skip-version", action="store_true")
    parser.add_argument("--skip-differences", action="store_true")
    parser.add_argument("--skip-battles", action="store_true")
    parser.add_argument("--scan", action="store_true", help="false better by spread, the test and two variants")
    args = parser.parse_args()
    if args.opponents < version_test.MIN_OPPONENTS:
        parser.error(f"--opponents must be at least {version_test.MIN_OPPONENTS}")
    if not args.skip_los:
        report_los(args)
    passed = True
    if not args.skip_version:
        passed = report_version_test(args)
    if args.scan:
        report_scan(args)
    if not passed:
        sys.exit(1)


if __name__ == "__main__":
    main()
