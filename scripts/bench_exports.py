#!/usr/bin/env python3
"""Export benchmark: what a bulk export costs per request on the 1,200-bot ladder of bench_upload.py,
and what 16 connections pulling exports do to 8 clients' uploads.

1. Takes bench_upload's cached ladder (719,400 battles; built with its code if missing), copies it
   and starts ``python -m rumble serve`` on the copy (this checkout's code: run the script from an
   older checkout to measure that one).
2. Per export (rankings, pairings and battles as CSV and JSON, rumble.sqlite): the time of a whole
   download over HTTP on an idle server, --repeat times; the first separately (the time until the
   first 200: it waits for the snapshot, asking again every 0.5 s while the answer is 503), and a
   conditional GET with the ETag if the server sends one.
3. The mixed load: --clients upload processes (bench_upload's) for --warmup + --seconds while
   --pullers threads download exports in a loop (each its own connection, the exports in turn,
   every body read to its end; by ``curl`` if there is one, so that the pullers read as fast as
   the server sends rather than at the speed of 16 Python threads). Prints the uploads' p50, p99 and slowest answer, their errors, and
   the pulls by status with their mean time.

Figures depend on the machine's load: run it on a quiet machine, and say so when it was not.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.client import HTTPConnection
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's rumble, even if another is installed
import bench_upload  # noqa: E402  (the ladder, its cache, the server and the upload clients)

from rumble import settings  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402

GAME = bench_upload.GAME
EXPORTS = (
    "rankings.csv",
    "rankings.json",
    "pairings.csv",
    "pairings.json",
    "battles.csv",
    "battles.json",
    "rumble.sqlite",
)


def download(
    port: int, name: str, headers: dict[str, str] | None = None, timeout: float = 120.0
) -> tuple[int, int, dict, float]:
    """GET one export on a new connection and read it to its end: (status, bytes, headers, seconds)."""
    began = time.perf_counter()
    connection = HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", f"/api/v1/rumbles/{GAME}/export/{name}", headers=headers or {})
        response = connection.getresponse()
        size = 0
        while chunk := response.read(1 << 20):
            size += len(chunk)
        return response.status, size, dict(response.getheaders()), time.perf_counter() - began
    finally:
        connection.close()


def per_request(port: int, repeat: int) -> None:
    """Print each export's first, median and slowest download time, and a conditional GET's."""
    print(
        f"\n{'export':15} {'size MB':>8} {'first s':>8} {'median s':>9} {'max s':>7} {'304 ms':>7}   (idle server, {repeat} downloads after the first)"
    )
    for name in EXPORTS:
        began, refused = time.perf_counter(), 0
        while (answer := download(port, name))[0] == 503:  # the snapshot is being written: ask again
            refused += 1
            time.sleep(0.5)
        status, size, headers, _ = answer
        first = time.perf_counter() - began
        if status != 200:
            raise SystemExit(f"{name}: HTTP {status}")
        if refused:
            print(f"{name}: {refused} answers 503 (snapshot being written) before the first 200")
        times = [download(port, name)[3] for _ in range(repeat)]
        etag = headers.get("ETag")
        conditional = "n/a"
        if etag:
            status, _, _, seconds = download(port, name, {"If-None-Match": etag})
            conditional = f"{seconds * 1000:.1f}" if status == 304 else f"HTTP {status}"
        print(
            f"{name:15} {size / 1e6:8.1f} {first:8.2f} {statistics.median(times):9.3f} {max(times):7.3f} {conditional:>7}"
        )


def curl_download(port: int, name: str, timeout: float = 60.0) -> tuple[int, float]:
    """GET one export with curl into /dev/null: (status, seconds)."""
    began = time.perf_counter()
    done = subprocess.run(
        [
            "curl",
            "-s",
            "-o",
            "/dev/null",
            "-m",
            str(timeout),
            "-w",
            "%{http_code}",
            f"http://127.0.0.1:{port}/api/v1/rumbles/{GAME}/export/{name}",
        ],
        capture_output=True,
        text=True,
    )
    return int(done.stdout or 0) or -1, time.perf_counter() - began


class Pullers:
    """``count`` threads that download exports in turn until stopped; what each pull got."""

    def __init__(self, port: int, count: int, curl: bool) -> None:
        self.port, self.count, self.curl = port, count, curl
        self.stop = threading.Event()
        self.pulls: list[tuple[float, str, int, float]] = []  # (start, export, status or -1, seconds)
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(k,), daemon=True) for k in range(count)]

    def run(self, k: int) -> None:
        n = k
        while not self.stop.is_set():
            name = EXPORTS[n % len(EXPORTS)]
            n += 1
            began = time.time()
            try:
                if self.curl:
                    status, seconds = curl_download(self.port, name)
                else:
                    status, _, _, seconds = download(self.port, name, timeout=60.0)
            except OSError:
                status, seconds = -1, time.time() - began
            with self.lock:
                self.pulls.append((began, name, status, seconds))

    def __enter__(self) -> Pullers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=130)


def mixed_load(port: int, args: argparse.Namespace) -> None:
    """Uploads from --clients processes while --pullers threads download exports; print both."""
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[GAME]
    ladder = bench_upload.load_ladder(args.data, args.bots, args.seed)
    curl = shutil.which("curl") is not None and not args.python_pullers
    with Pullers(port, args.pullers, curl) as pullers:
        results = bench_upload.run_load(ladder, rumble, port, args)
        ended = time.time()
    print(
        f"\nmixed load    {args.clients} upload clients and {args.pullers} export pullers ({'curl' if curl else 'Python'}), "
        f"{args.warmup:g} s warm-up + {args.seconds:g} s measured"
    )
    bench_upload.load_report(results, args)
    latencies = np.concatenate([r.latencies_ms for r in results])
    starts = np.concatenate([r.starts for r in results])
    measured = latencies[starts >= args.warmup]
    if len(measured):
        print(f"slowest       {measured.max():9.2f} ms (an upload's whole answer, measured window)")
    window_start = ended - args.seconds
    pulls = [p for p in pullers.pulls if p[0] >= window_start - 0.0]
    by_status = collections.Counter(status for _, _, status, _ in pulls)
    print(
        f"pulls         {len(pulls)} started in the measured window: "
        + ", ".join(f"{n} x {'no answer' if s == -1 else f'HTTP {s}'}" for s, n in sorted(by_status.items()))
    )
    for name in EXPORTS:
        times = [seconds for _, n, status, seconds in pulls if n == name and status == 200]
        if times:
            print(f"    {name:15} {len(times):5d} x 200, mean {statistics.mean(times):7.3f} s, max {max(times):7.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=bench_upload.DEFAULT_DATA, help="the LiteRumble snapshot of bench_upload.py"
    )
    parser.add_argument("--bots", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="bench_upload's cache")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers of `rumble serve`")
    parser.add_argument("--repeat", type=int, default=3, help="downloads of each export after the first, idle server")
    parser.add_argument("--clients", type=int, default=8, help="upload processes in the mixed load")
    parser.add_argument("--pullers", type=int, default=16, help="export-downloading connections in the mixed load")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured duration of the mixed load")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of mixed load before the measured window")
    parser.add_argument("--python-pullers", action="store_true", help="pull with Python threads even if curl is there")
    parser.add_argument("--skip-per-request", action="store_true", help="only the mixed load")
    parser.add_argument("--skip-load", action="store_true", help="only the per-request times")
    args = parser.parse_args(argv)
    args.battles_per_pairing, args.rebuild_data = 1, False
    ladder = bench_upload.load_ladder(args.data, args.bots, args.seed)
    cached = bench_upload.ladder_database(args, ladder, load_rumbles(settings.load()["RUMBLES_FILE"])[GAME])
    run_dir = args.workdir / f"exports-run-{time.time_ns()}"
    run_dir.mkdir(parents=True)
    run_db = run_dir / "rumble.db"
    shutil.copyfile(cached, run_db)
    try:
        port, log = bench_upload.free_port(), run_dir / "server.log"
        server = bench_upload.start_server(run_db, port, args.workers, log)
        print(
            f"server        python -m rumble serve --workers {args.workers} on 127.0.0.1:{port}, code from {bench_upload.REPO}"
        )
        try:
            if not args.skip_per_request:
                per_request(port, args.repeat)
            if not args.skip_load:
                mixed_load(port, args)
        finally:
            bench_upload.stop_server(server)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
