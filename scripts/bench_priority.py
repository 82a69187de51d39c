"""Cost of choosing priority battles on the 1,200-bot ladder, with and without newcomers.

1. Copies bench_upload.py's cached ladder database (every pairing played; built first if missing).
2. Times ``rumble.ingest.apply.next_priority_battle`` with an empty queue, so that each call chooses a
   whole batch (``PRIORITY_BATCH`` pairs), inside a write transaction that is then rolled back, so
   every call starts from the same state.
3. Enters --newcomers new bots (one battle each against a ladder bot, through ``apply.apply_battle``:
   each then lacks nearly 1,200 pairings) and times the same choice again.

Prints the mean time per choice for both, and their ratio (newcomers / none): a choice that does not
grow with the missing pairings gives about 1. Both figures come from the same run.

Run with the project's venv: ``.venv/bin/python scripts/bench_priority.py --help``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload  # noqa: E402  (the ladder of the upload benchmark)

from rumble import settings, store  # noqa: E402
from rumble.ingest import apply  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402


class RolledBack(Exception):
    """Raised inside a write transaction to undo it."""


def time_choices(db: store.Store, game: str, values: dict, calls: int, seed: int) -> tuple[float, int]:
    """Mean seconds per batch choice over ``calls`` choices, each rolled back; and the missing
    pairings among the last batch (priority_battles rows with reason 'missing')."""
    rng = random.Random(seed)
    spent, missing = 0.0, 0
    for _ in range(calls):
        try:
            with store.write(db):
                began = time.perf_counter()
                apply.next_priority_battle(
                    db,
                    game,
                    values["PRIORITY_BATCH"],
                    values["PRIORITY_MIN_BATTLES"],
                    values["PRIORITY_HOLD_MINUTES"],
                    rng,
                    datetime.now(UTC),
                )
                spent += time.perf_counter() - began
                missing = db.execute("SELECT count(*) FROM priority_battles WHERE reason = 'missing'").fetchone()[0]
                raise RolledBack
        except RolledBack:
            pass
    return spent / calls, missing


def enter_newcomers(db: store.Store, ladder: bench_upload.Ladder, rumble, count: int, values: dict) -> None:
    """``count`` new bots, each with one battle against a ladder bot (so each lacks every other pairing)."""
    rng = np.random.default_rng(7)
    received = store.utc_now()
    for k in range(count):
        opponent = ladder.names[int(rng.integers(len(ladder.names)))]
        figures = bench_upload.sample_figures(rng, np.array([0.0]), rumble.rounds).tolist()[0]
        battle = bench_upload.to_battle(
            rumble, f"bench.Newcomer{k:03d} 1.0", opponent, figures, 1_000 + k, "bench-newcomers", received
        )
        with store.write(db):
            apply.apply_battle(db, battle, rumble.rounds, values["PRIORITY_MIN_BATTLES"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--newcomers", type=int, default=50, help="new bots entered for the second measurement")
    parser.add_argument("--calls", type=int, default=200, help="batch choices timed per measurement")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="bench_upload.py's cache")
    args = parser.parse_args(argv)
    upload_args = bench_upload.parse_args(["--workdir", str(args.workdir)])
    values = settings.load()
    rumble = load_rumbles(values["RUMBLES_FILE"])[bench_upload.GAME]
    ladder = bench_upload.load_ladder(upload_args.data, upload_args.bots, upload_args.seed)
    cached = bench_upload.ladder_database(upload_args, ladder, rumble)
    copy = args.workdir / "priority-run.db"
    bench_upload.remove_database(copy)
    shutil.copyfile(cached, copy)
    db = store.connect(copy)
    try:
        none, _ = time_choices(db, rumble.name, values, args.calls, 1)
        enter_newcomers(db, ladder, rumble, args.newcomers, values)
        some, missing = time_choices(db, rumble.name, values, args.calls, 1)
    finally:
        db.close()
        bench_upload.remove_database(copy)
    print(f"choice, 0 newcomers      {1000 * none:8.3f} ms per batch of {values['PRIORITY_BATCH']}")
    print(
        f"choice, {args.newcomers} newcomers     {1000 * some:8.3f} ms per batch "
        f"({missing} of its pairs missing pairings)"
    )
    print(f"ratio {args.newcomers} newcomers / 0    {some / none:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
