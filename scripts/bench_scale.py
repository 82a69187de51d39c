#!/usr/bin/env python3
"""Scale benchmark: what a ladder's figures become as its battle log grows.

For each --sizes battles per pairing (default 1 and 3) of bench_upload.py's 1,200-bot roborumble
(719,400 battles per battle a pairing), built once and cached in --workdir:

1. Disk: the database file's bytes per battle (the log, its indexes and every derived table).
2. The scheduled batch job (``rumble.schedule.hourly.scheduled_run``: batch rankings, standings,
   the consistency holds and the stored uploader table) in a process of its own: seconds and peak
   memory.
3. Pages: ``rumble serve`` with one worker on a copy (no schedule); every page and API endpoint of
   bench_pages.py requested once (cold: the worker's first, its caches empty; but for /, which the
   start-up check asks for) and three times more
   (warm: their median), timed at the client over loopback (the server's time plus well under a
   millisecond); then one export snapshot built on request (``battles.csv``: the time to its last
   byte); then the peak resident memory (VmHWM) of the worker and of the writer process.
4. Backup under load: ``rumble serve`` with --workers workers, --clients upload processes for
   --seconds, and ``rumble backup`` started 2 s in: its seconds, uploads/s with every upload
   answered, and the WAL's largest size meanwhile (a long read keeps checkpoints from going
   past it, so uploads grow the WAL until it ends).
5. The rebuild's rate against reading the log (bench_rebuild.py's measurement of
   ``rebuild_rumble``, and of what the ``rumble rebuild`` command runs, each in a process
   of its own: its peak memory too).
6. Upload rate against the bare HTTP stack (bench_upload.py's ladder scenario, one round).

Then one table per figure, a column per size, with each figure's growth from the smallest size.
Each size's database is about 0.1 to 0.26 GB per battle a pairing (0.88 GB at 7, 2.95 GB at 28);
building one takes about 6 minutes on 2 cores at 7 battles a pairing (5,035,800 battles) and 26
at 28 (20,143,200 battles, in one transaction).
Run with the project's venv: ``.venv/bin/python scripts/bench_scale.py --help``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import quote, quote_plus

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload  # noqa: E402  (the ladder, its cache, the servers and the load)

from rumble import settings  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GAME = bench_upload.GAME
WARM = 3  # requests after the cold one
PAGE_TARGET_S = 0.5  # issue 36: every page and API endpoint cold within this at 5 M battles
MEMORY_TARGET_MB = 500.0
# Run in a process of its own, printing its peak memory: the scheduled job on the database argv[1].
# The peak is the process's own VmHWM: getrusage's ru_maxrss survives execve on Linux, so a child
# of this script would report this script's peak (up to a whole export held in memory) if larger.
SCHEDULED = (
    "import json, re, sys, time; from rumble import settings; "
    "from rumble.schedule.hourly import scheduled_run; began = time.perf_counter(); "
    "scheduled_run(settings.load({'DB': sys.argv[1], 'BATCH_INTERVAL_MINUTES': 0})); "
    "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()); "
    "print(json.dumps({'seconds': time.perf_counter() - began, 'peak_mb': int(hwm[1]) / 1024}))"
)


def pages(bot: str, other: str) -> list[tuple[str, str]]:
    """Every page and API endpoint bench_pages.py times, for ``bot`` and ``other``; (label, path)."""
    g, a, b = f"game={GAME}", quote_plus(bot), quote_plus(other)
    return [
        ("/", "/"),
        ("/Rankings", f"/Rankings?{g}"),
        ("/Rankings?columns=all", f"/Rankings?{g}&columns=all"),
        ("/Rankings?api=1", f"/Rankings?{g}&api=1"),
        ("/BotDetails", f"/BotDetails?{g}&name={a}"),
        ("/BotDetails?api=1", f"/BotDetails?{g}&name={a}&api=1"),
        ("/Pairing", f"/Pairing?{g}&bot={a}&vs={b}"),
        ("/BotCompare", f"/BotCompare?{g}&bota={a}&botb={b}"),
        ("/AlternativeRankings", f"/AlternativeRankings?{g}"),
        ("/RumbleStats?game", f"/RumbleStats?{g}"),
        ("/RumbleStats", "/RumbleStats"),
        ("/feed", "/feed"),
        ("/feed/roborumble", f"/feed/{GAME}"),
        ("/RatingsFile", f"/RatingsFile?version=1&{g}"),
        ("/Participants", f"/Participants?{g}"),
        ("scores.svg", f"/BotDetails/scores.svg?{g}&name={a}"),
        ("history.svg", f"/BotDetails/history.svg?{g}&name={a}"),
        ("uploads.svg", f"/RumbleStats/uploads.svg?{g}"),
        ("api rankings", f"/api/v1/rumbles/{GAME}/rankings"),
        ("api bot", f"/api/v1/rumbles/{GAME}/bots/{quote(bot)}"),
        ("api uploaders", f"/api/v1/rumbles/{GAME}/uploaders"),
        ("/healthz", "/healthz"),
        ("/metrics", "/metrics"),
    ]


def get(port: int, path: str, timeout: float = 600.0) -> tuple[int, int, float]:
    """GET ``path``: (status, body bytes, seconds to the last byte)."""
    began = time.perf_counter()
    conn = HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return response.status, len(body), time.perf_counter() - began


def peak_mb(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def roles(server: subprocess.Popen) -> dict[str, list[int]]:
    """`rumble serve`'s worker and writer pids (its other children: the schedule, none here)."""
    found: dict[str, list[int]] = {"workers": [], "writer": []}
    for pid in bench_upload.process_tree(server.pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"single_writer" in command:
            found["writer"].append(pid)
        elif pid != server.pid and b"rumble" in command and b"serve" in command:
            found["workers"].append(pid)
    return found


def page_figures(db: Path, args: argparse.Namespace) -> dict:
    """Cold and warm seconds of every page, the export's build, and the worker's and writer's peak memory."""
    port, log = bench_upload.free_port(), args.workdir / "scale-pages.log"
    server = bench_upload.start_server(db, port, 1, log)
    try:
        bench_upload.whole_tree(server.pid, 3, log)  # the master, its worker and the writer
        conn = HTTPConnection("127.0.0.1", port, timeout=600)
        conn.request("GET", f"/Rankings?game={GAME}&api=1&limit=2")
        top = json.loads(conn.getresponse().read())
        conn.close()
        # The worker has served one small API request: every page below is still cold for it.
        found = {}
        for label, path in pages(top[0]["name"], top[1]["name"]):
            status, size, cold = get(port, path)
            if status != 200:
                raise SystemExit(f"{path} answered {status}")
            warm = statistics.median(get(port, path)[2] for _ in range(WARM))
            found[label] = {"cold": cold, "warm": warm, "kb": size / 1000}
            print(f"  {label:24} cold {cold * 1000:9.1f} ms   warm {warm * 1000:8.1f} ms   {size / 1000:9.1f} KB")
        status, size, seconds = get(port, f"/api/v1/rumbles/{GAME}/export/battles.csv")
        print(f"  export battles.csv       {seconds:.1f} s to its last byte, {size / 1e6:.1f} MB (status {status})")
        processes = roles(server)
        memory = {
            "worker": max(peak_mb(pid) for pid in processes["workers"]),
            "writer": max(peak_mb(pid) for pid in processes["writer"]),
        }
        print(f"  peak memory              worker {memory['worker']:.0f} MB, writer {memory['writer']:.0f} MB")
        return {"pages": found, "export_s": seconds, "export_mb": size / 1e6, "memory": memory}
    finally:
        bench_upload.stop_server(server)


def backup_under_load(db: Path, ladder: bench_upload.Ladder, rumble, args: argparse.Namespace) -> dict:
    """`rumble backup` of ``db`` while upload clients run: its seconds, and the uploads' rate and errors."""
    port, log = bench_upload.free_port(), args.workdir / "scale-backup.log"
    target = args.workdir / "scale-backup-copy.db"
    bench_upload.remove_database(target)
    server = bench_upload.start_server(db, port, args.workers, log)
    results: list = []
    try:
        bench_upload.whole_tree(server.pid, args.workers + 2, log)
        load = threading.Thread(target=lambda: results.extend(bench_upload.run_load(ladder, rumble, port, args)))
        load.start()
        time.sleep(1.0 + args.warmup + 2.0)
        wal, sampled, done = Path(f"{db}-wal"), [0], threading.Event()
        sampler = threading.Thread(target=sample_size, args=(wal, sampled, done))
        sampler.start()
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "rumble", "backup", "--db", str(db), str(target)],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        seconds = time.perf_counter() - began
        load.join()
        done.set()
        sampler.join()
    finally:
        bench_upload.stop_server(server)
        bench_upload.remove_database(target)
    answered = sum(len(r.latencies_ms) for r in results)
    errors = sum(len(r.errors) for r in results)
    rate = sum(sum(r.accepted) for r in results) / (args.warmup + args.seconds)
    print(
        f"  backup                   {seconds:.1f} s while {answered:,} uploads were answered ({rate:.0f}/s, {errors} errors); "
        f"the WAL at most {sampled[0] / 1e6:.0f} MB meanwhile"
    )
    return {"backup_s": seconds, "uploads_per_s": rate, "upload_errors": errors, "wal_mb": sampled[0] / 1e6}


def sample_size(path: Path, largest: list[int], done: threading.Event) -> None:
    """Keep in ``largest[0]`` the largest size of the file ``path`` seen every 50 ms until ``done``."""
    while not done.wait(0.05):
        with contextlib.suppress(FileNotFoundError):
            largest[0] = max(largest[0], path.stat().st_size)


def rebuild_figures(db: Path) -> dict:
    """bench_rebuild.py's measurement on ``db`` (a copy it may change): rates and peak memory."""
    found = _bench_rebuild("--measure", db)
    rate, read = found["battles"] / found["rebuild_seconds"], found["read"] / found["read_seconds"]
    print(
        f"  rebuild                  {rate:,.0f} battles/s against {read:,.0f} reading the log ({rate / read:.3f}), peak {found['peak_rss_mb']:.0f} MB"
    )
    return {"rebuild_per_s": rate, "read_per_s": read, "rebuild_mb": found["peak_rss_mb"]}


def command_figures(db: Path, read_per_s: float) -> dict:
    """bench_rebuild.py's measurement of what the ``rumble rebuild`` command runs (swap.recompute:
    replay aside, then a short swap) on ``db``, a copy it may change: rate (also against
    ``read_per_s``, reading the log) and peak memory."""
    found = _bench_rebuild("--measure-command", db)
    rate = found["battles"] / found["seconds"]
    print(
        f"  rumble rebuild command   {rate:,.0f} battles/s ({rate / read_per_s:.3f} of reading the log),"
        f" write lock {found['locked_seconds'] * 1000:.0f} ms, peak {found['peak_rss_mb']:.0f} MB"
    )
    return {"command_per_s": rate, "command_mb": found["peak_rss_mb"]}


def _bench_rebuild(flag: str, db: Path) -> dict:
    """What bench_rebuild.py's child measurement ``flag`` printed on ``db``, in a process of its own."""
    child = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parent / "bench_rebuild.py"), flag, str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        check=True,
    )
    return json.loads(child.stdout.strip().splitlines()[-1])


def one_size(per_pairing: int, ladder: bench_upload.Ladder, rumbles: dict, args: argparse.Namespace) -> dict:
    """Every figure of the ladder with ``per_pairing`` battles a pairing."""
    upload_args = bench_upload.parse_args(
        [
            "--workdir", str(args.workdir),
            "--battles-per-pairing", str(per_pairing),
            "--workers", str(args.workers),
            "--clients", str(args.clients),
            "--seconds", str(args.seconds),
            "--warmup", str(args.warmup),
            "--rounds", "1",
        ]
    )  # fmt: skip
    upload_args.current = "ladder"
    cached = bench_upload.ladder_database(upload_args, ladder, rumbles[GAME])
    battles = bench_upload.ladder_report(cached, ladder, GAME)
    size = cached.stat().st_size
    print(
        f"\n=== {per_pairing} battles a pairing: {battles:,} battles, {size / 1e9:.2f} GB, {size / battles:.0f} bytes a battle"
    )
    copy = args.workdir / "scale-run.db"
    bench_upload.remove_database(copy)
    shutil.copyfile(cached, copy)
    # Snapshots an earlier run asked for beside the same file name: the batch job would refresh
    # them (its time then includes their build) and the page step would serve them as they are.
    shutil.rmtree(copy.parent / "exports", ignore_errors=True)
    try:
        job = subprocess.run(
            [sys.executable, "-c", SCHEDULED, str(copy)], cwd=REPO, stdout=subprocess.PIPE, text=True, check=True
        )
        batch = json.loads(job.stdout.strip().splitlines()[-1])
        print(f"  batch job                {batch['seconds']:.1f} s, peak {batch['peak_mb']:.0f} MB")
        served = page_figures(copy, args)
        backup = backup_under_load(copy, ladder, rumbles[GAME], upload_args)
        rebuild = rebuild_figures(copy)
        bench_upload.remove_database(copy)
        shutil.copyfile(cached, copy)
        rebuild |= command_figures(copy, rebuild["read_per_s"])
    finally:
        bench_upload.remove_database(copy)
    ((bare, real),) = bench_upload.run_scenario("ladder", cached, ladder, rumbles, upload_args)
    print(
        f"  uploads                  {real.rate:.0f}/s against the bare stack's {bare.rate:.0f}/s ({real.rate / bare.rate:.3f})"
    )
    return {
        "battles": battles,
        "bytes_per_battle": size / battles,
        "batch": batch,
        **served,
        **backup,
        **rebuild,
        "upload_ratio": real.rate / bare.rate,
        "uploads_real": real.rate,
        "uploads_bare": bare.rate,
    }


def table(results: dict[int, dict]) -> None:
    """Each figure per size, and its growth from the smallest size."""
    sizes = sorted(results)
    first = results[sizes[0]]
    head = "".join(f"{results[s]['battles']:>14,}" for s in sizes)
    print(f"\n{'battles':34}{head}   growth")

    def row(label: str, values: list[float], fmt: str) -> None:
        growth = values[-1] / values[0] if values[0] else float("nan")
        print(f"{label:34}" + "".join(f"{v:>14{fmt}}" for v in values) + f"   x{growth:.2f}")

    row("bytes a battle", [results[s]["bytes_per_battle"] for s in sizes], ",.0f")
    for label in first["pages"]:
        row(f"{label} cold ms", [1000 * results[s]["pages"][label]["cold"] for s in sizes], ",.1f")
    for label in first["pages"]:
        row(f"{label} warm ms", [1000 * results[s]["pages"][label]["warm"] for s in sizes], ",.1f")
    row("slowest page cold s", [max(p["cold"] for p in results[s]["pages"].values()) for s in sizes], ".2f")
    row("worker peak MB", [results[s]["memory"]["worker"] for s in sizes], ",.0f")
    row("writer peak MB", [results[s]["memory"]["writer"] for s in sizes], ",.0f")
    row("batch job s", [results[s]["batch"]["seconds"] for s in sizes], ",.1f")
    row("batch job peak MB", [results[s]["batch"]["peak_mb"] for s in sizes], ",.0f")
    row("export battles.csv s", [results[s]["export_s"] for s in sizes], ",.1f")
    row("backup under load s", [results[s]["backup_s"] for s in sizes], ",.1f")
    row("WAL during the backup MB", [results[s]["wal_mb"] for s in sizes], ",.0f")
    row("rebuild battles/s", [results[s]["rebuild_per_s"] for s in sizes], ",.0f")
    row("rebuild / reading the log", [results[s]["rebuild_per_s"] / results[s]["read_per_s"] for s in sizes], ".3f")
    row("rebuild peak MB", [results[s]["rebuild_mb"] for s in sizes], ",.0f")
    row("rumble rebuild command battles/s", [results[s]["command_per_s"] for s in sizes], ",.0f")
    row(
        "rumble rebuild / reading the log",
        [results[s]["command_per_s"] / results[s]["read_per_s"] for s in sizes],
        ".3f",
    )
    row("rumble rebuild command peak MB", [results[s]["command_mb"] for s in sizes], ",.0f")
    row("uploads / bare stack", [results[s]["upload_ratio"] for s in sizes], ".3f")
    largest = results[sizes[-1]]
    slow = [label for label, p in largest["pages"].items() if p["cold"] > PAGE_TARGET_S]
    peaks = {
        **largest["memory"],
        "batch job": largest["batch"]["peak_mb"],
        "rebuild": largest["rebuild_mb"],
        "rumble rebuild command": largest["command_mb"],
    }
    print(
        f"\nat {largest['battles']:,} battles: pages cold over {PAGE_TARGET_S} s: {slow or 'none'}; processes over "
        f"{MEMORY_TARGET_MB:.0f} MB: {[k for k, v in peaks.items() if v > MEMORY_TARGET_MB] or 'none'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--sizes", default="1,3", help="battles a pairing of each ladder, comma-separated (7: 5 M)")
    parser.add_argument("--data", type=Path, default=bench_upload.DEFAULT_DATA, help="bench_upload.py's snapshot")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="bench_upload.py's cache")
    parser.add_argument("--workers", type=int, default=2, help="workers of the backup and upload runs")
    parser.add_argument("--clients", type=int, default=4, help="upload processes of the backup and upload runs")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds of each upload run")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before")
    parser.add_argument("--json", action="store_true", help="print every figure as one JSON object at the end")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    rumbles = load_rumbles(settings.load()["RUMBLES_FILE"])
    ladder = bench_upload.load_ladder(args.data, 1200, 2023)
    results = {size: one_size(size, ladder, rumbles, args) for size in sizes}
    table(results)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
