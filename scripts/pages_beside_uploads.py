"""Uploads while clients pull the heaviest pages, with the pages served in threads and in greenlets.

1. Takes the 1,200-bot, 719,400-battle ladder of ``bench_upload.py`` (built once, then cached) and
   starts ``python -m rumble serve`` (``--workers``, 2 by default) on a copy, with
   ``PAGES_IN_THREADS`` on (the default: page, API, plot and export GETs run in a pool of threads per
   worker, rumble/server/serving.py) or off (each runs in its connection's greenlet, in the thread
   that runs all the worker's greenlets).
2. In each run, ``--clients`` processes upload the real client's bodies one request at a time
   (bench_maintenance.py's clients), and ``--readers`` threads request heavy pages one after
   another: the whole rankings table, a bot's page with its 1,199 pairings, a comparison, the
   rankings API at 5,000 a page (the pages that cut uploads the most when served beside them).
3. Runs alternate (on, off, on, off, ... ``--rounds`` each) on fresh copies, so that a drift of the
   machine's speed weighs on both; prints per run and per mode (medians): uploads/s, the uploads'
   p99 and slowest answer, failed uploads, pages/s and page 503s; then the ratio off/on of uploads/s
   and of p99. Nothing is judged: the figures are what the mode buys.

Run with the project's venv: ``.venv/bin/python scripts/pages_beside_uploads.py --help``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import threading
import time
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import quote

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_maintenance  # noqa: E402  (its upload clients)
import bench_upload as bench  # noqa: E402  (the ladder and the server)

from rumble import settings  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402


def heavy_pages(ladder: bench.Ladder) -> list[str]:
    first, second = (quote(name) for name in ladder.names[:2])
    return [
        f"/Rankings?game={bench.GAME}&limit=100000",
        f"/BotDetails?game={bench.GAME}&name={first}",
        f"/BotCompare?game={bench.GAME}&bota={first}&botb={second}",
        f"/api/v1/rumbles/{bench.GAME}/rankings?limit=5000",
    ]


def read_pages(port: int, paths: list[str], stop: threading.Event, counts: dict) -> None:
    """One reader: request the pages in turn until ``stop``; count answers by status."""
    k = 0
    while not stop.is_set():
        connection = HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("GET", paths[k % len(paths)])
            response = connection.getresponse()
            response.read()
            counts[response.status] = counts.get(response.status, 0) + 1
        except OSError:
            counts["error"] = counts.get("error", 0) + 1
        finally:
            connection.close()
        k += 1


def one_run(cached: Path, ladder, rumble, args, threads_on: bool, index: int) -> dict:
    run_db = args.workdir / f"pages-beside-{os.getpid()}-{index}.db"
    shutil.copyfile(cached, run_db)
    os.environ["RUMBLE_PAGES_IN_THREADS"] = "1" if threads_on else "0"
    port, log = bench.free_port(), args.workdir / "pages-beside-server.log"
    server = bench.start_server(run_db, port, args.workers, log)
    stop, out = multiprocessing.Event(), multiprocessing.Queue()
    clients = [
        multiprocessing.Process(
            target=bench_maintenance.upload_loop, args=(port, ladder, rumble, i, args.seed + index, stop, out)
        )
        for i in range(args.clients)
    ]
    page_stop, page_counts = threading.Event(), [dict() for _ in range(args.readers)]
    readers = [
        threading.Thread(target=read_pages, args=(port, heavy_pages(ladder), page_stop, page_counts[i]), daemon=True)
        for i in range(args.readers)
    ]
    try:
        for client in clients:
            client.start()
        for reader in readers:
            reader.start()
        time.sleep(args.warmup)
        t0 = time.time()
        time.sleep(args.seconds)
        t1 = time.time()
    finally:
        page_stop.set()
        stop.set()
        rows = [row for _ in clients for row in out.get(timeout=60)]
        for client in clients:
            client.join()
        for reader in readers:
            reader.join(timeout=60)
        bench.stop_server(server)
        bench.remove_database(run_db)
    inside = [(seconds, error) for began, seconds, error in rows if t0 <= began <= t1]
    times = np.array([s for s, _ in inside]) if inside else np.array([0.0])
    pages = sum(n for counts in page_counts for status, n in counts.items() if status == 200)
    busy = sum(n for counts in page_counts for status, n in counts.items() if status == 503)
    return {
        "uploads_per_s": len(inside) / (t1 - t0),
        "p99_ms": float(np.percentile(times, 99) * 1000),
        "slowest_s": float(times.max()),
        "failed": sum(1 for _, error in inside if error),
        "pages_per_s": pages / (t1 - t0),
        "page_503s": busy,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=bench.DEFAULT_DATA, help="LiteRumble snapshot (as bench_upload.py)"
    )
    parser.add_argument("--bots", type=int, default=1200, help="bots in the ladder")
    parser.add_argument("--seed", type=int, default=2023, help="seed of the ladder and the uploads")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="the ladder cache and copies")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--clients", type=int, default=4, help="uploading client processes")
    parser.add_argument("--readers", type=int, default=8, help="threads pulling heavy pages")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds before")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each mode, alternating")
    args = parser.parse_args(argv)
    args.battles_per_pairing, args.rebuild_data = 1, False
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[bench.GAME]
    ladder = bench.load_ladder(args.data, args.bots, args.seed)
    cached = bench.ladder_database(args, ladder, rumble)
    results: dict[bool, list[dict]] = {True: [], False: []}
    for index in range(2 * args.rounds):
        threads_on = index % 2 == 0
        found = one_run(cached, ladder, rumble, args, threads_on, index)
        results[threads_on].append(found)
        mode = "in threads  " if threads_on else "in greenlets"
        print(
            f"pages {mode}  uploads {found['uploads_per_s']:7.1f}/s, p99 {found['p99_ms']:6.0f} ms, "
            f"slowest {found['slowest_s']:.2f} s, failed {found['failed']}; "
            f"pages {found['pages_per_s']:.1f}/s, 503s {found['page_503s']}",
            flush=True,
        )
    medians = {
        mode: {key: statistics.median(run[key] for run in runs) for key in runs[0]} for mode, runs in results.items()
    }
    on, off = medians[True], medians[False]
    print(
        f"\nmedians: in threads {on['uploads_per_s']:.1f} uploads/s (p99 {on['p99_ms']:.0f} ms, pages "
        f"{on['pages_per_s']:.1f}/s); in greenlets {off['uploads_per_s']:.1f} uploads/s (p99 {off['p99_ms']:.0f} ms, "
        f"pages {off['pages_per_s']:.1f}/s); uploads/s greenlets/threads {off['uploads_per_s'] / max(on['uploads_per_s'], 1e-9):.2f}, "
        f"p99 greenlets/threads {off['p99_ms'] / max(on['p99_ms'], 1e-9):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
