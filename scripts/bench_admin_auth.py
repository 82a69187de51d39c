"""What bogus admin credentials cost a real `rumble serve`, and what the failure limit saves.

1. Makes a database with ``--maintainers`` maintainers (``rumble admin create-token``).
2. Prints the time of one scrypt verify (``admin_tokens.verify_token``) in this process.
3. Starts ``python -m rumble serve --workers N`` with ADMIN_FAILURES_PER_HOUR so high that it never
   applies, and floods ``GET /admin`` with ``--clients`` threads for ``--seconds``, one kind of bad
   ``Authorization: Bearer`` token per run: a real token's id with a wrong secret, an unknown id, a
   token without an id. Meanwhile a probe fetches ``/RatingsFile`` every 100 ms on a fresh
   connection. Prints the flood's requests/s and p50/p99 latency and the probe's p50/p99/max.
4. The same flood with the default ADMIN_FAILURES_PER_HOUR (20): prints how many answers were
   401 and 429, and the same figures.

It works on any version of rumble that has ``rumble admin create-token`` (for a before/after
comparison, run it with ``PYTHONPATH`` pointing at an older checkout). It is not a test.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from click.testing import CliRunner


def make_maintainers(db: Path, count: int) -> str:
    """``count`` maintainers made through the CLI; the last one's token."""
    from rumble.cli import cli

    token = ""
    for i in range(count):
        result = CliRunner().invoke(
            cli, ["admin", "create-token", "--db", str(db), f"m{i:03d}"], env={"RUMBLE_ADMIN_TOKEN": token}
        )
        if result.exit_code != 0:
            raise RuntimeError(result.output)
        token = result.output.strip()
    return token


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(db: Path, workers: int, env_extra: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = (
        {k: v for k, v in os.environ.items() if not k.startswith("RUMBLE_")}
        | env_extra
        | {"RUMBLE_BATCH_INTERVAL_MINUTES": "0"}
    )
    command = [sys.executable, "-m", "rumble", "serve", "--db", str(db), "--port", str(port), "--workers", str(workers)]
    import rumble

    checkout = Path(rumble.__file__).resolve().parent.parent  # the server runs the rumble this script imported
    server = subprocess.Popen(
        command, cwd=checkout, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if requests.get(url + "/", timeout=5).status_code == 200:
                return server, url
        except requests.ConnectionError:
            time.sleep(0.1)
    server.terminate()
    raise RuntimeError(f"the server did not start; see {log}")


def flood(url: str, header: str, clients: int, seconds: float) -> dict:
    """``clients`` threads sending ``GET /admin`` with ``header`` for ``seconds``; a probe meanwhile."""
    stop = time.monotonic() + seconds
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    probe: list[float] = []
    lock = threading.Lock()

    def attacker() -> None:
        session = requests.Session()
        while time.monotonic() < stop:
            start = time.perf_counter()
            status = session.get(url + "/admin", headers={"Authorization": header}, timeout=60).status_code
            with lock:
                latencies.append(time.perf_counter() - start)
                statuses[status] = statuses.get(status, 0) + 1

    def prober() -> None:
        while time.monotonic() < stop:
            start = time.perf_counter()
            requests.get(url + "/RatingsFile", params={"version": "1", "game": "roborumble"}, timeout=60)
            probe.append(time.perf_counter() - start)
            time.sleep(0.1)

    threads = [threading.Thread(target=attacker) for _ in range(clients)] + [threading.Thread(target=prober)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "rate": len(latencies) / seconds,
        "statuses": dict(sorted(statuses.items())),
        "latency": latencies,
        "probe": probe,
    }


def ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.1f} ms"


def report(name: str, result: dict) -> None:
    print(
        f"  {name:<28} {result['rate']:7.1f} req/s  p50 {ms(result['latency'], 0.5):>9}  p99 {ms(result['latency'], 0.99):>9}"
        f"  answers {result['statuses']}  | probe p50 {ms(result['probe'], 0.5)}, p99 {ms(result['probe'], 0.99)},"
        f" max {ms(result['probe'], 1.0)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maintainers", type=int, default=50)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    import rumble
    from rumble.admin_tokens import hash_token, verify_token

    print(f"rumble from {Path(rumble.__file__).parent}")
    stored = hash_token("x")
    times = []
    for _ in range(20):
        start = time.perf_counter()
        verify_token("y", stored)
        times.append(time.perf_counter() - start)
    print(f"one scrypt verify: median {1000 * statistics.median(times):.1f} ms (20 runs)")
    with tempfile.TemporaryDirectory() as work:
        db = Path(work) / "rumble.db"
        token = make_maintainers(db, args.maintainers)
        wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
        kinds = {
            "real id, wrong secret": f"Bearer {wrong}",
            "unknown id": "Bearer rmb_0123456789abcdef_" + "x" * 43,
            "no id (old form)": "Bearer " + "y" * 43,
        }
        for label, limit in (("limit off", str(10**9)), ("ADMIN_FAILURES_PER_HOUR=20", "20")):
            print(
                f"{args.maintainers} maintainers, {args.workers} workers, {args.clients} flooding clients x {args.seconds:.0f} s, {label}:"
            )
            for name, header in kinds.items():
                server, url = start_server(
                    db, args.workers, {"RUMBLE_ADMIN_FAILURES_PER_HOUR": limit}, Path(work) / "server.log"
                )
                try:
                    report(name, flood(url, header, args.clients, args.seconds))
                finally:
                    server.terminate()
                    server.wait(30)
                _forget_failures(db)
    return 0


def _forget_failures(db: Path) -> None:
    """Start each run with no failures logged (the table exists from migration 0012 on)."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        conn.execute("DELETE FROM admin_failures")
        conn.commit()
    except sqlite3.OperationalError:
        pass  # an older schema without the failure log
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
