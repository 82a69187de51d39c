"""Uploads while clients pull the heaviest pages: with the pages kept, rebuilt, or in greenlets.

1. Takes the 1,200-bot, 719,400-battle ladder of ``bench_upload.py`` (built once, then cached) and
   starts ``python -m rumble serve`` (``--workers``, 2 by default) on a copy for each run.
2. In each run, ``--clients`` processes upload the real client's bodies one request at a time
   (bench_maintenance.py's clients); but for the ``alone`` runs, ``--readers`` threads request the
   heaviest pages one after another (the whole rankings table, a bot's page with its 1,199
   pairings, a comparison, the rankings API at 5,000 a page, the alternative rankings, a scores
   plot), and one more thread asks for a cheap page (``/api/v1/rumbles``) four times a second,
   timing each answer. The readers stand for clients on other machines: they run at nice 19
   (``--readers-nice``), taking the CPU the server and the uploading clients leave (at nice 0, a
   single process of reader threads pulls up to a gigabyte of kept pages a second and takes a
   core of the two from the server). They accept gzip, as browsers do (``--accept-encoding``).
3. The modes (``--modes``), alternating round by round on fresh copies so that a drift of the
   machine's speed weighs on all of them:
   - ``alone``: uploads only, the baseline;
   - ``kept``: with the readers, the server as configured by default (a page built once and
     served for up to ``PAGE_CACHE_SECONDS``, 15, while uploads change the log: rumble.web.page_cache);
   - ``rebuilt``: with the readers, ``PAGE_CACHE_SECONDS=0``: every page built anew after each
     change, that is for nearly every request while uploads flow;
   - ``greenlets``: as ``rebuilt``, with ``PAGES_IN_THREADS=0`` (each page computed in its
     connection's greenlet, in the thread that runs the worker's uploads).
4. Prints per run and per mode (medians): uploads/s, their p99 and slowest answer, failed uploads,
   heavy pages/s and their 503s, the cheap page's median and slowest time and its 503s; then each
   mode's uploads/s against ``alone`` with PASS or FAIL for issue 36's goals (uploads keep >= 0.8
   of their rate beside the readers; the cheap page under 0.5 s).

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

MODES = {  # mode -> (readers on, the server's environment)
    "alone": (False, {}),
    "kept": (True, {}),
    "rebuilt": (True, {"RUMBLE_PAGE_CACHE_SECONDS": "0"}),
    "greenlets": (True, {"RUMBLE_PAGE_CACHE_SECONDS": "0", "RUMBLE_PAGES_IN_THREADS": "0"}),
}
CHEAP_PAGE = "/api/v1/rumbles"
UPLOADS_GOAL = 0.8  # issue 36: uploads beside the readers, against alone
CHEAP_GOAL_S = 0.5


def heavy_pages(ladder: bench.Ladder) -> list[str]:
    first, second = (quote(name) for name in ladder.names[:2])
    return [
        f"/Rankings?game={bench.GAME}&limit=100000",
        f"/BotDetails?game={bench.GAME}&name={first}",
        f"/BotCompare?game={bench.GAME}&bota={first}&botb={second}",
        f"/api/v1/rumbles/{bench.GAME}/rankings?limit=5000",
        f"/AlternativeRankings?game={bench.GAME}",
        f"/BotDetails/scores.svg?game={bench.GAME}&name={first}",
    ]


def read_pages(port: int, paths: list[str], stop: threading.Event, counts: dict, nice: int, encoding: str) -> None:
    """One reader: request the pages in turn until ``stop``, with ``encoding`` as Accept-Encoding;
    count answers by status. At ``nice`` (its thread's nice value): readers stand for clients on
    other machines, whose CPU is not the server's."""
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    k = 0
    while not stop.is_set():
        connection = HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("GET", paths[k % len(paths)], headers={"Accept-Encoding": encoding} if encoding else {})
            response = connection.getresponse()
            response.read()
            counts[response.status] = counts.get(response.status, 0) + 1
        except OSError:
            counts["error"] = counts.get("error", 0) + 1
        finally:
            connection.close()
        k += 1


def probe_cheap(port: int, stop: threading.Event, found: list[tuple[float, int | str]]) -> None:
    """Ask for the cheap page four times a second until ``stop``: (seconds, status) of each."""
    while not stop.is_set():
        began = time.perf_counter()
        connection = HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("GET", CHEAP_PAGE)
            response = connection.getresponse()
            response.read()
            found.append((time.perf_counter() - began, response.status))
        except OSError as error:
            found.append((time.perf_counter() - began, type(error).__name__))
        finally:
            connection.close()
        time.sleep(0.25)


def one_run(cached: Path, ladder, rumble, args, mode: str, index: int) -> dict:
    readers_on, environment = MODES[mode]
    run_db = args.workdir / f"pages-beside-{os.getpid()}-{index}.db"
    shutil.copyfile(cached, run_db)
    saved = {key: os.environ.get(key) for key in ("RUMBLE_PAGE_CACHE_SECONDS", "RUMBLE_PAGES_IN_THREADS")}
    for key in saved:
        os.environ.pop(key, None)
    os.environ.update(environment)
    if mode == "kept" and args.cache_seconds is not None:
        os.environ["RUMBLE_PAGE_CACHE_SECONDS"] = str(args.cache_seconds)
    port, log = bench.free_port(), args.workdir / "pages-beside-server.log"
    try:
        server = bench.start_server(run_db, port, args.workers, log)
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value
    stop, out = multiprocessing.Event(), multiprocessing.Queue()
    clients = [
        multiprocessing.Process(
            target=bench_maintenance.upload_loop, args=(port, ladder, rumble, i, args.seed + index, stop, out)
        )
        for i in range(args.clients)
    ]
    readers_count = args.readers if readers_on else 0
    page_stop, page_counts, cheap = threading.Event(), [dict() for _ in range(readers_count)], []
    readers = [
        threading.Thread(
            target=read_pages,
            args=(port, heavy_pages(ladder), page_stop, page_counts[i], args.readers_nice, args.accept_encoding),
            daemon=True,
        )
        for i in range(readers_count)
    ]
    readers.append(threading.Thread(target=probe_cheap, args=(port, page_stop, cheap), daemon=True))
    try:
        for client in clients:
            client.start()
        for reader in readers:
            reader.start()
        time.sleep(args.warmup)
        t0 = time.time()
        cheap.clear()
        time.sleep(args.seconds)
        t1 = time.time()
        measured_cheap = list(cheap)
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
    cheap_times = [seconds for seconds, _ in measured_cheap] or [0.0]
    return {
        "uploads_per_s": len(inside) / (t1 - t0),
        "p99_ms": float(np.percentile(times, 99) * 1000),
        "slowest_s": float(times.max()),
        "failed": sum(1 for _, error in inside if error),
        "pages_per_s": pages / (t1 - t0),
        "page_503s": busy,
        "cheap_median_s": statistics.median(cheap_times),
        "cheap_slowest_s": max(cheap_times),
        "cheap_not_200": sum(1 for _, status in measured_cheap if status != 200),
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
    parser.add_argument("--readers", type=int, default=16, help="threads pulling heavy pages")
    parser.add_argument(
        "--readers-nice", type=int, default=19, help="the readers' nice value (0: they take the CPU as the server does)"
    )
    parser.add_argument(
        "--accept-encoding",
        default="gzip",
        help="the readers' Accept-Encoding (browsers' and python-requests' include gzip; '': none)",
    )
    parser.add_argument(
        "--cache-seconds", type=float, help="PAGE_CACHE_SECONDS of the kept mode (default: the server's default)"
    )
    parser.add_argument("--modes", default="alone,kept,rebuilt", help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds before")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each mode, alternating")
    args = parser.parse_args(argv)
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or not modes:
        parser.error(f"--modes: unknown {unknown}; choose from {', '.join(MODES)}")
    args.battles_per_pairing, args.rebuild_data = 1, False
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[bench.GAME]
    ladder = bench.load_ladder(args.data, args.bots, args.seed)
    cached = bench.ladder_database(args, ladder, rumble)
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    for index in range(len(modes) * args.rounds):
        mode = modes[index % len(modes)]
        found = one_run(cached, ladder, rumble, args, mode, index)
        results[mode].append(found)
        print(f"{mode:9}  {describe(found)}", flush=True)
    medians = {
        mode: {key: statistics.median(run[key] for run in runs) for key in runs[0]} for mode, runs in results.items()
    }
    print("\nmedians")
    for mode, found in medians.items():
        print(f"{mode:9}  {describe(found)}")
    if "alone" in medians:
        alone = medians["alone"]["uploads_per_s"]
        for mode, found in medians.items():
            if mode == "alone":
                continue
            ratio = found["uploads_per_s"] / max(alone, 1e-9)
            cheap_ok = found["cheap_slowest_s"] < CHEAP_GOAL_S and found["cheap_not_200"] == 0
            verdict = "PASS" if ratio >= UPLOADS_GOAL and cheap_ok else "FAIL"
            print(
                f"{mode:9}  uploads {ratio:.3f} of alone (goal {UPLOADS_GOAL}); cheap page slowest "
                f"{found['cheap_slowest_s']:.3f} s, {found['cheap_not_200']:.0f} not 200 (goal < {CHEAP_GOAL_S} s): {verdict}"
            )
    return 0


def describe(found: dict) -> str:
    return (
        f"uploads {found['uploads_per_s']:7.1f}/s, p99 {found['p99_ms']:5.0f} ms, slowest {found['slowest_s']:.2f} s, "
        f"failed {found['failed']:.0f}; heavy pages {found['pages_per_s']:6.1f}/s, 503s {found['page_503s']:.0f}; "
        f"cheap page median {found['cheap_median_s'] * 1000:.0f} ms, slowest {found['cheap_slowest_s'] * 1000:.0f} ms, "
        f"not 200: {found['cheap_not_200']:.0f}"
    )


if __name__ == "__main__":
    sys.exit(main())
