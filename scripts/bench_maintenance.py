"""Uploads during maintenance: `rumble rebuild` and an /admin rollback of the 1,200-bot ladder while clients upload.

1. Takes the 1,200-bot, 719,400-battle ladder of ``bench_upload.py`` (built once, then cached) and
   times the old blocking rebuild on a copy of it: ``rebuild_rumble`` in one write transaction,
   which is what every upload had to wait for before.
2. Starts ``python -m rumble serve`` on another copy and ``--clients`` processes that upload the
   real client's bodies, one request at a time, each on a new connection (10 s timeout, the real
   client's), recording when each upload started and how long its answer took.
3. After ``--settle`` seconds runs ``rumble rebuild --game roborumble`` as a separate process; after
   it, another pause, then ``POST /admin/rollback`` of one client's uploads so far (a maintainer
   token made with ``rumble admin create-token``), and follows the job at /admin/jobs/ID until done.
4. Prints, for the uploads that started while each ran: how many, how many failed, p50, p99 and the
   slowest answer (goal: slowest < 2 s), and the maintenance's own time next to the blocking
   rebuild's time from step 1; then PASS or FAIL (exit status 1) for that goal. With ``--check`` the served tables are compared with a fresh rebuild.

Run with the project's venv: ``.venv/bin/python scripts/bench_maintenance.py --help``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from http.client import HTTPConnection
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload as bench  # noqa: E402  (the ladder, the server and the upload bodies)

from rumble import settings, store  # noqa: E402
from rumble.maintenance import rebuild  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402
from rumble.protocol.upload import format_upload  # noqa: E402
from rumble.store.tables import snapshot  # noqa: E402

GOAL_SLOWEST_S = 2.0


def upload_loop(port: int, ladder: bench.Ladder, rumble, index: int, seed: int, stop, out) -> None:
    """One client: upload random pairs until ``stop`` is set; put (start, seconds, error) rows on ``out``."""
    rng = np.random.default_rng([seed, index])
    rows, last_ms = [], 0
    while not stop.is_set():
        a = int(rng.integers(0, len(ladder.names)))
        b = (a + int(rng.integers(1, len(ladder.names)))) % len(ladder.names)
        figures = bench.sample_figures(rng, ladder.strength[[a]] - ladder.strength[[b]], rumble.rounds).tolist()[0]
        now = time.time()
        last_ms = max(int(now * 1000), last_ms + 1)
        body = format_upload(
            bench.to_battle(rumble, ladder.names[a], ladder.names[b], figures, last_ms, f"bench-{index}")
        )
        began = time.perf_counter()
        try:
            error = bench.answer_error(*bench.post_upload(port, body))
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
        rows.append((now, time.perf_counter() - began, error))
    out.put(rows)


def blocking_rebuild_seconds(db_path: Path) -> float:
    """The old way: replay and write the whole rumble inside one write transaction."""
    values = settings.load({"DB": str(db_path)})
    db = store.connect(db_path)
    try:
        started = time.perf_counter()
        with store.write(db):
            rebuild.rebuild_rumble(
                db, bench.GAME, load_rumbles(values["RUMBLES_FILE"])[bench.GAME].rounds, values["PRIORITY_MIN_BATTLES"]
            )
        return time.perf_counter() - started
    finally:
        db.close()


def admin_request(port: int, method: str, path: str, token: str, body: dict | None = None) -> dict:
    connection = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        connection.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
        response = connection.getresponse()
        return json.loads(response.read())
    finally:
        connection.close()


def during(rows: list[tuple], start: float, end: float, verdicts: list[bool] | None = None) -> str:
    """The figures of the uploads that started in [start, end]; whether the goal was met goes to ``verdicts``."""
    inside = [(seconds, error) for began, seconds, error in rows if start <= began <= end]
    if not inside:
        if verdicts is not None:
            verdicts.append(False)
        return "no uploads started meanwhile (MISSED)"
    times = np.array([s for s, _ in inside])
    failed = sum(1 for _, e in inside if e)
    verdict = "met" if times.max() < GOAL_SLOWEST_S and not failed else "MISSED"
    if verdicts is not None:
        verdicts.append(verdict == "met")
    return (
        f"{len(inside)} uploads, {failed} failed; p50 {np.percentile(times, 50) * 1000:.0f} ms, "
        f"p99 {np.percentile(times, 99) * 1000:.0f} ms, slowest {times.max():.2f} s "
        f"(goal < {GOAL_SLOWEST_S:.0f} s: {verdict})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=bench.DEFAULT_DATA, help="LiteRumble snapshot folder (as bench_upload.py)"
    )
    parser.add_argument("--bots", type=int, default=1200, help="bots in the ladder")
    parser.add_argument("--seed", type=int, default=2023, help="seed of the ladder and the uploads")
    parser.add_argument(
        "--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="the ladder cache and the run's copies"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--clients", type=int, default=8, help="uploading client processes")
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds of plain uploads before and between the two jobs"
    )
    parser.add_argument(
        "--check", action="store_true", help="afterwards, compare the served tables with a fresh rebuild"
    )
    parser.add_argument(
        "--restore",
        action="store_true",
        help="afterwards, back the database up and restore it: the time spent aside and under the write lock",
    )
    args = parser.parse_args(argv)
    args.battles_per_pairing, args.rebuild_data = 1, False
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[bench.GAME]
    ladder = bench.load_ladder(args.data, args.bots, args.seed)
    cached = bench.ladder_database(args, ladder, rumble)
    run_db, old_db = args.workdir / f"maint-{os.getpid()}.db", args.workdir / f"maint-old-{os.getpid()}.db"
    shutil.copyfile(cached, old_db)
    shutil.copyfile(cached, run_db)
    try:
        print("blocking      timing the old rebuild (one write transaction) on a copy ...", flush=True)
        old_seconds = blocking_rebuild_seconds(old_db)
        bench.remove_database(old_db)
        print(f"blocking      rebuild_rumble under the write lock: {old_seconds:.1f} s (every upload meanwhile waits)")
        env = {**os.environ, "RUMBLE_BATCH_INTERVAL_MINUTES": "0"}
        token = subprocess.run(
            [sys.executable, "-m", "rumble", "admin", "create-token", "--db", str(run_db), "bench"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout.strip()
        port, log = bench.free_port(), args.workdir / "maint-server.log"
        server = bench.start_server(run_db, port, args.workers, log)
        stop, out = multiprocessing.Event(), multiprocessing.Queue()
        clients = [
            multiprocessing.Process(target=upload_loop, args=(port, ladder, rumble, i, args.seed, stop, out))
            for i in range(args.clients)
        ]
        try:
            for client in clients:
                client.start()
            time.sleep(args.settle)
            t0 = time.time()
            done = subprocess.run(
                [sys.executable, "-m", "rumble", "rebuild", "--db", str(run_db), "--game", bench.GAME],
                capture_output=True,
                text=True,
                env={**env, "TQDM_DISABLE": "1"},
            )
            t1 = time.time()
            print(
                f"rumble rebuild {t1 - t0:.1f} s, exit {done.returncode}: {done.stdout.strip()} {done.stderr.strip()[-300:]}"
            )
            time.sleep(args.settle)
            t2 = time.time()
            answer = admin_request(port, "POST", "/admin/rollback", token, {"uploader": "bench-0"})
            while True:
                job = admin_request(port, "GET", answer["url"], token)
                if job["state"] in ("done", "failed"):
                    break
                time.sleep(0.2)
            t3 = time.time()
            print(
                f"rollback      /admin/rollback of bench-0's {answer.get('battles')} uploads: job {job['state']} after {t3 - t2:.1f} s "
                f"{job.get('error') or job.get('result')}"
            )
            time.sleep(1.0)
        finally:
            stop.set()
            rows = [row for _ in clients for row in out.get(timeout=60)]
            for client in clients:
                client.join()
            bench.stop_server(server)
        verdicts: list[bool] = []
        print(f"uploads       during `rumble rebuild`: {during(rows, t0, t1, verdicts)}")
        print(f"uploads       during the /admin rollback: {during(rows, t2, t3, verdicts)}")
        print(f"uploads       over the whole run: {during(rows, 0, float('inf'))}")
        print(
            f"rebuild time  aside: {t1 - t0:.1f} s (the whole `rumble rebuild` process) against {old_seconds:.1f} s blocking, "
            f"measured in this run on the same ladder"
        )
        if args.check:
            db = store.connect(run_db)
            served = snapshot(db)
            old = blocking_rebuild_seconds(run_db)
            print(f"check         tables equal a fresh rebuild: {snapshot(db) == served} (rebuilt in {old:.1f} s)")
            db.close()
        if args.restore:
            restore_report(run_db, args.workdir / f"maint-backup-{os.getpid()}.db")
    finally:
        bench.remove_database(run_db)
        bench.remove_database(old_db)
    passed = done.returncode == 0 and job["state"] == "done" and all(verdicts)
    print(
        f"{'PASS' if passed else 'FAIL'}: every upload during the rebuild and the rollback answered OK, the slowest"
        f" within {GOAL_SLOWEST_S:.0f} s"
    )
    return 0 if passed else 1


def restore_report(live: Path, copy: Path) -> None:
    """``rumble restore``'s two steps on the ladder: preparing the backup aside, and the copy under the lock."""
    from rumble.store import backup

    db = store.connect(live)
    try:
        backup.backup(db, copy)
        started = time.perf_counter()
        source = backup.open_backup(copy)
        prepared = backup.prepare(source, live)
        source.close()
        aside = time.perf_counter() - started
        started = time.perf_counter()
        backup.restore(db, prepared)
        locked = time.perf_counter() - started
        size = prepared.stat().st_size / 2**20
        prepared.unlink()
    finally:
        db.close()
        bench.remove_database(copy)
    print(
        f"restore       {size:.0f} MiB: prepared aside in {aside:.1f} s (uploads go on), copied in under the write lock in {locked:.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
