#!/usr/bin/env python3
"""Rebuild benchmark: replay a 1,200-bot rumble's log of at least 1 M battles with every rating.

1. Builds (or reuses, cached in --workdir) a battle log only: the ladder of bench_upload.py (the
   2023 snapshot's 1,194 bots plus 6, scores sampled around their real APS) with
   --battles-per-pairing battles per pairing (default 2: 1,438,800 battles), logged through
   rumble's own store, with no derived table.
2. In a fresh process (so its peak memory is the rebuild's own), runs ``rumble.maintenance.rebuild.rebuild_rumble``
   on a copy: pairings, summaries and every rating (RoboRumble Elo, Glicko, Glicko-2, Rank Points,
   XonStat) replayed battle by battle, and prints battles/s and the peak resident memory.
3. In the same run, the baseline: the same process reading the same log through the same store
   iterator and nothing else, and the ratio of the two rates.
4. In another fresh process, on another copy, what the ``rumble rebuild`` command runs:
   ``rumble.maintenance.swap.recompute`` (replayed aside, compared with the live tables, swapped in
   under a short write lock), its rate and peak resident memory.

Target (issue 4): >= 20,000 battles/s (the real roborumble's 24.7 M battles in under 21 minutes).
A missed target is printed, not failed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload  # noqa: E402  (the ladder of the upload benchmark)

from rumble import settings, store  # noqa: E402
from rumble.app import prepare_database  # noqa: E402
from rumble.maintenance import swap  # noqa: E402
from rumble.maintenance.rebuild import rebuild_rumble  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402
from rumble.store import battle_log  # noqa: E402
from rumble.store.rumbles import rumble_id  # noqa: E402

TARGET = 20_000  # battles/s


def build_log(args: argparse.Namespace) -> Path:
    """The cached log-only database for these parameters, built first if needed."""
    path = args.workdir / f"log-{args.bots}bots-{args.battles_per_pairing}x-seed{args.seed}.db"
    if path.exists() and not args.rebuild_data:
        print(f"using cached {path} (--rebuild-data builds it anew)")
        return path
    args.workdir.mkdir(parents=True, exist_ok=True)
    bench_upload.remove_database(path)
    values = settings.load({"DB": str(path)})
    rumbles = load_rumbles(values["RUMBLES_FILE"])
    prepare_database(values, rumbles)
    ladder = bench_upload.load_ladder(args.data, args.bots, args.seed)
    db = store.connect(path)
    try:
        with store.write(db):
            bench_upload.append_ladder(db, ladder, rumbles[bench_upload.GAME], args.battles_per_pairing, args.seed)
    finally:
        db.close()
    print(f"built {path}")
    return path


def measure(db_path: Path, game: str) -> dict:
    """Replay the log (the child process's job): rates and peak memory as a dict."""
    db = store.connect(db_path)
    rid = rumble_id(db, game)
    total = battle_log.count_battles(db, rid)
    start = time.perf_counter()
    read = sum(1 for _ in battle_log.iter_scored_battles(db, rid))
    read_seconds = time.perf_counter() - start
    rumble = load_rumbles()[game]
    start = time.perf_counter()
    with tqdm(total=total, desc="rebuild", unit="battle", unit_scale=True) as bar, store.write(db):
        replayed = rebuild_rumble(db, game, rumble.rounds, settings.load()["PRIORITY_MIN_BATTLES"], bar.update)
    rebuild_seconds = time.perf_counter() - start
    db.close()
    return {
        "battles": replayed,
        "read": read,
        "read_seconds": read_seconds,
        "rebuild_seconds": rebuild_seconds,
        "peak_rss_mb": own_peak_mb(),
    }


def own_peak_mb() -> float:
    """This process's peak resident memory (VmHWM), in MB: its own since it started, unlike
    getrusage's ru_maxrss, which on Linux keeps the peak of the process that started it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure_command(db_path: Path, game: str) -> dict:
    """What ``rumble rebuild --game`` runs (the child process's job): its rate and peak memory as a dict."""
    db = store.connect(db_path)
    total = battle_log.count_battles(db, rumble_id(db, game))
    rumble = load_rumbles()[game]
    start = time.perf_counter()
    with tqdm(total=total, desc="rumble rebuild", unit="battle", unit_scale=True) as bar, swap.one_at_a_time(db):
        job = swap.recompute(db, game, rumble.rounds, settings.load()["PRIORITY_MIN_BATTLES"], bar.update)
    seconds = time.perf_counter() - start
    db.close()
    return {
        "battles": job.replay.replayed,
        "seconds": seconds,
        "locked_seconds": job.locked_seconds,
        "peak_rss_mb": own_peak_mb(),
    }


def report_command(result: dict) -> None:
    print(
        f"rumble rebuild     {result['battles'] / result['seconds']:,.0f} battles/s, {result['seconds']:.1f} s"
        f" (write lock {result['locked_seconds'] * 1000:.0f} ms), peak {result['peak_rss_mb']:,.0f} MB resident"
    )


def report(result: dict) -> None:
    rebuild_rate = result["battles"] / result["rebuild_seconds"]
    read_rate = result["read"] / result["read_seconds"]
    verdict = "PASS" if rebuild_rate >= TARGET else "FAIL"
    print(f"battles replayed   {result['battles']:,} in {result['rebuild_seconds']:.1f} s")
    print(f"rebuild            {rebuild_rate:,.0f} battles/s   target >= {TARGET:,}   {verdict}")
    print(f"peak memory        {result['peak_rss_mb']:,.0f} MB resident (the rebuild process)")
    print(
        f"baseline           {read_rate:,.0f} battles/s reading the same log, nothing else; rebuild/read = {rebuild_rate / read_rate:.3f}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=bench_upload.DEFAULT_DATA, help="the 2023 snapshot's folder")
    parser.add_argument("--bots", type=int, default=1200, help="bots in the ladder (the snapshot's, then synthesized)")
    parser.add_argument(
        "--battles-per-pairing", type=int, default=2, help="battles of every pairing (2 gives 1,438,800)"
    )
    parser.add_argument("--seed", type=int, default=2023, help="seed of the sampled scores")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="where the cached log lives")
    parser.add_argument("--rebuild-data", action="store_true", help="build the log even if it is cached")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child process's job
    parser.add_argument("--measure-command", type=Path, help=argparse.SUPPRESS)  # the other child's
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, bench_upload.GAME)))
        return 0
    if args.measure_command:
        print(json.dumps(measure_command(args.measure_command, bench_upload.GAME)))
        return 0
    source = build_log(args)
    copy = args.workdir / "rebuild-run.db"
    for flag, show in (("--measure", report), ("--measure-command", report_command)):
        bench_upload.remove_database(copy)
        shutil.copy(source, copy)
        child = subprocess.run(
            [sys.executable, __file__, flag, str(copy)], stdout=subprocess.PIPE, text=True, check=True
        )
        show(json.loads(child.stdout.strip().splitlines()[-1]))
    bench_upload.remove_database(copy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
