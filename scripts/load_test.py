"""Load and crash test of a real `rumble serve` (gunicorn): the figures of issue 8.

1. Load: CLIENTS concurrent clients each send UPLOADS real-client upload bodies (random pairs of
   BOTS bots, plausible scores, a few retries of earlier results) to a fresh server. Then, with
   the server stopped: the log holds each distinct result exactly once, every pairing's battle
   count equals the number of its battles in the log, and the tables equal a rebuild from the log.
2. Crash: the same load against another fresh server, and once half of it has been answered, a
   SIGKILL to the server's whole process group (the gunicorn master and all its workers at once).
   Then a restart on the same database, and the checks: every upload that had been answered OK
   is in the log, nothing is half-applied (pairing counts equal the log, tables equal a rebuild).
   Then the clients finish, resending what got no answer (as the real client does), and the
   checks of step 1 run again over the whole load.
3. Rollback: the same load against a third fresh server; once half of it has been answered, one
   maintainer rolls back client 0's uploads through POST /admin/rollback (bearer token) while the
   other clients keep uploading. With the server stopped: the rolled-back rows are in the log in
   state 'removed', every pairing counts exactly the log's battles in state 'ok', and the tables
   equal a rebuild. Then /admin/unflag brings them back, and the checks run again.

Run from the repository root: ``python scripts/load_test.py`` (defaults: 8 clients x 1,000
uploads, 2 workers). tests/e2e/test_load_and_crash.py runs the same code with a smaller load.
The log is checked with plain sqlite3 queries; the rebuild comparison uses rumble's rebuild.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rumble.protocol.battle import Battle, Side  # noqa: E402
from rumble.protocol.upload import format_upload  # noqa: E402

GAME = "roborumble"
START_TIMEOUT_S = 30


@dataclass
class Server:
    """A `python -m rumble serve` process group on a database file."""

    db: Path
    port: int
    process: subprocess.Popen
    log: Path

    @property
    def host(self) -> tuple[str, int]:
        return "127.0.0.1", self.port


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(db: Path, workers: int) -> Server:
    """Start the server in its own session (so one killpg reaches the master and every worker)."""
    port = free_port()
    log = db.with_suffix(f".{port}.out")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUMBLE_")}
    env.update(PYTHONUNBUFFERED="1", RUMBLE_BATCH_INTERVAL_MINUTES="0")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "rumble", "serve", "--db", str(db), "--port", str(port), "--workers", str(workers)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    server = Server(db, port, process, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"rumble serve exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            status, _ = request(server, "GET", "/", b"")
            if status == 200:
                return server
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"rumble serve did not start:\n{log.read_text(errors='replace')}")


def stop(server: Server) -> None:
    """SIGTERM to the master (a clean stop), SIGKILL to the group if it hangs."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(20)
        except subprocess.TimeoutExpired:
            kill(server)


def group_members(group: int) -> list[int]:
    """The pids in process group ``group``, from /proc (a bare Debian may lack pgrep)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, ...
            if int(fields[2]) == group:
                found.append(int(entry))
    return sorted(found)


def kill(server: Server) -> list[int]:
    """kill -9 of the master, all its workers and the writer process at once; returns the pids killed."""
    pids = group_members(server.process.pid)
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()
    return pids


def request(server: Server, method: str, path: str, body: bytes) -> tuple[int, str]:
    conn = HTTPConnection(*server.host, timeout=30)
    try:
        conn.request(
            method,
            path,
            body=body,
            headers={"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "Java/17"},
        )
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def make_uploads(client: int, count: int, bots: int, seed: int, now_ms: int) -> list[Battle]:
    """A client's uploads: random pairs, plausible figures (the firsts add up to the 35 rounds),
    unique by (uploader, time), and about 3 % resends of one of its earlier results."""
    rng = random.Random(seed * 1000 + client)
    names = [f"load.Bot{i:02d} 1.{i}" for i in range(bots)]
    uploads: list[Battle] = []
    for n in range(count):
        if uploads and rng.random() < 0.03:
            uploads.append(rng.choice(uploads))
            continue
        a, b = rng.sample(names, 2)
        total = rng.randint(3000, 7000)
        first = rng.randint(total // 5, total * 4 // 5)
        firsts = rng.randint(5, 30)
        uploads.append(
            Battle(
                game=GAME,
                version="1",
                client="1.9.3.9",
                teams=False,
                melee=False,
                rounds=35,
                field="800x600",
                uploader=f"load-client-{client}",
                time_ms=now_ms - 1000 * client - n - 1,
                first=Side(a, first, first // 3, firsts),
                second=Side(b, total - first, (total - first) // 3, 35 - firsts),
            )
        )
    return uploads


@dataclass
class ClientRun:
    """What one client sent and heard back."""

    uploads: list[Battle]
    position: int = 0  # the next upload to send
    answered_ok: list[Battle] = field(default_factory=list)  # answered with an OK line (stored or already stored)
    stored: int = 0
    repeats: int = 0
    errors: Counter = field(default_factory=Counter)  # connection failures and unexpected answers
    latencies: list[float] = field(default_factory=list)


def run_client(run: ClientRun, server: Server, stop_event: threading.Event, on_ok) -> None:
    """Send the uploads in order; an upload without an OK answer is sent again (as the real client
    does) until it gets one, or until ``stop_event`` (the server is being killed)."""
    while run.position < len(run.uploads) and not stop_event.is_set():
        battle = run.uploads[run.position]
        started = time.perf_counter()
        try:
            status, text = request(server, "POST", "/UploadedResults", format_upload(battle))
        except (OSError, HTTPException) as error:  # no answer, or half of one (the server died meanwhile)
            run.errors[type(error).__name__] += 1
            if stop_event.wait(0.05):
                return
            continue
        run.latencies.append(time.perf_counter() - started)
        if status != 200 or "OK" not in text or "ERROR" in text or "held for review" in text:
            run.errors[f"answer {status}: {text.strip()[:80]}"] += 1
            run.position += 1  # a refusal for good: the client drops it (never expected here)
            continue
        if "already received" in text:
            run.repeats += 1
        else:
            run.stored += 1
        run.answered_ok.append(battle)
        run.position += 1
        on_ok()


def drive(runs: list[ClientRun], server: Server, kill_after_oks: int | None = None) -> dict:
    """Run every client in its own thread; with ``kill_after_oks``, kill -9 the server once that many
    uploads were answered OK. Returns timing and what was killed."""
    stop_event = threading.Event()
    lock = threading.Lock()
    oks = [0]
    killed: dict = {}

    def on_ok() -> None:
        with lock:
            oks[0] += 1
            count = oks[0]
        if kill_after_oks is not None and count == kill_after_oks:
            killed["pids"] = kill(server)  # the other clients' requests in flight meanwhile may still be answered
            killed["after_oks"] = count
            stop_event.set()

    started = time.perf_counter()
    threads = [threading.Thread(target=run_client, args=(run, server, stop_event, on_ok)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"seconds": time.perf_counter() - started, **killed}


def identity(b: Battle) -> tuple:
    return (b.uploader, b.time_ms, b.first.name, b.second.name, b.first.score, b.second.score)


def check_log(db: Path, expected_present: list[Battle], exactly: bool, all_ok: bool = True) -> dict:
    """Plain sqlite3 checks with the server stopped. Every battle in ``expected_present`` is in the log
    once; with ``exactly``, the log holds nothing else. Every pairing's battle count (both sides)
    equals the log's count of that pair's battles, and every bot's summary counts its pairings' battles."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT (SELECT name FROM uploaders WHERE id = b.uploader_id), b.client_time, f.full_name, s.full_name, b.first_score, b.second_score, b.state "
            "FROM battles b JOIN bots f ON f.id = b.first_bot_id JOIN bots s ON s.id = b.second_bot_id"
        ).fetchall()
        logged = Counter(tuple(row[:6]) for row in rows)
        if all_ok:
            assert all(row[6] == "ok" for row in rows), "a battle of the load is not in state ok"
        assert max(logged.values(), default=1) == 1, "a result is in the log twice"
        missing = {identity(b) for b in expected_present} - set(logged)
        assert not missing, f"{len(missing)} uploads answered OK are not in the log, e.g. {sorted(missing)[:3]}"
        if exactly:
            extra = set(logged) - {identity(b) for b in expected_present}
            assert not extra, f"{len(extra)} battles in the log that no client sent"
        per_pair = Counter()
        for row in conn.execute("SELECT first_bot_id, second_bot_id FROM battles WHERE state = 'ok'"):
            per_pair[row[0], row[1]] += 1
            per_pair[row[1], row[0]] += 1
        pairings = {(a, b): n for a, b, n in conn.execute("SELECT bot_id, opponent_id, battles FROM pairings")}
        assert pairings == dict(per_pair), "a pairing's battle count differs from the log's"
        summaries = dict(conn.execute("SELECT bot_id, battles FROM bot_summaries"))
        per_bot = Counter()
        for (a, _), n in per_pair.items():
            per_bot[a] += n
        assert summaries == dict(per_bot), "a bot's battle count differs from the log's"
        return {"log_rows": len(rows), "pairings": len(pairings) // 2, "bots": len(summaries)}
    finally:
        conn.close()


def check_rebuild(db: Path) -> int:
    """The derived tables equal a rebuild from the log (rebuilt in a transaction that is rolled back)."""
    from rumble import store
    from rumble.maintenance.rebuild import rebuild_rumble
    from rumble.protocol.games import load_rumbles
    from rumble.store.tables import snapshot

    conn = store.connect(db)
    try:
        online = snapshot(conn)
        conn.conn.execute("BEGIN IMMEDIATE")
        try:
            replayed = rebuild_rumble(conn, GAME, load_rumbles()[GAME].rounds, 3)
            rebuilt = snapshot(conn)
        finally:
            conn.conn.execute("ROLLBACK")
        assert rebuilt == online, "the tables differ from a rebuild of the log"
        return replayed
    finally:
        conn.close()


def summary(runs: list[ClientRun]) -> dict:
    latencies = sorted(x for run in runs for x in run.latencies)
    errors = sum((run.errors for run in runs), Counter())
    pick = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0.0  # noqa: E731
    return {
        "uploads": sum(len(run.uploads) for run in runs),
        "answered_ok": sum(len(run.answered_ok) for run in runs),
        "stored": sum(run.stored for run in runs),
        "repeats": sum(run.repeats for run in runs),
        "errors": dict(errors),
        "p50_ms": round(pick(0.5), 1),
        "p99_ms": round(pick(0.99), 1),
    }


def distinct(runs: list[ClientRun]) -> list[Battle]:
    return list({identity(b): b for run in runs for b in run.uploads}.values())


def load_phase(directory: Path, clients: int, uploads: int, bots: int, workers: int, seed: int) -> dict:
    db = directory / "load.db"
    now_ms = int(time.time() * 1000)
    runs = [ClientRun(make_uploads(c, uploads, bots, seed, now_ms)) for c in range(clients)]
    server = start(db, workers)
    try:
        timing = drive(runs, server)
    finally:
        stop(server)
    figures = summary(runs)
    assert figures["answered_ok"] == figures["uploads"], figures
    assert not figures["errors"], figures
    assert figures["stored"] == len(distinct(runs)), figures
    log = check_log(db, distinct(runs), exactly=True)
    replayed = check_rebuild(db)
    return {
        **figures,
        **log,
        "rebuild_replayed": replayed,
        "seconds": round(timing["seconds"], 1),
        "uploads_per_s": round(figures["uploads"] / timing["seconds"], 1),
    }


def crash_phase(directory: Path, clients: int, uploads: int, bots: int, workers: int, seed: int) -> dict:
    db = directory / "crash.db"
    now_ms = int(time.time() * 1000)
    runs = [ClientRun(make_uploads(c, uploads, bots, seed + 1, now_ms)) for c in range(clients)]
    server = start(db, workers)
    timing = drive(runs, server, kill_after_oks=clients * uploads // 2)
    assert "pids" in timing, "the server was not killed"
    before = summary(runs)
    answered = [b for run in runs for b in run.answered_ok]
    # Restart: SQLite recovers the WAL; nothing else is done to the database.
    server = start(db, workers)
    stop(server)
    after_crash = check_log(db, answered, exactly=False)
    check_rebuild(db)
    # The clients go on, resending what got no answer; then the whole load must be there exactly once.
    server = start(db, workers)
    try:
        drive(runs, server)
    finally:
        stop(server)
    total = summary(runs)
    assert total["answered_ok"] == total["uploads"], total
    final = check_log(db, distinct(runs), exactly=True)
    replayed = check_rebuild(db)
    return {
        "killed_pids": len(timing["pids"]),
        "killed_after_oks": timing["after_oks"],
        "answered_ok_before_kill": len(answered),
        "log_rows_after_restart": after_crash["log_rows"],
        "connection_errors_around_kill": sum(before["errors"].values()),
        # stored counts "received" answers: an upload committed just before the kill whose answer was
        # lost is answered "already received" when resent, so the log may hold more than that.
        "final": {**total, **final, "distinct_uploads": len(distinct(runs)), "rebuild_replayed": replayed},
    }


def admin_post(server: Server, path: str, token: str, body: bytes) -> tuple[int, str]:
    conn = HTTPConnection(*server.host, timeout=300)
    try:
        conn.request(
            "POST", path, body=body, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        )
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def wait_for_job(server: Server, url: str, token: str, timeout: float = 600) -> dict:
    """Follow a maintenance job /admin started (``url``: /admin/jobs?id=N) until it is done or failed; its row."""
    import json

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = HTTPConnection(*server.host, timeout=30)
        try:
            conn.request("GET", url, headers={"Authorization": f"Bearer {token}"})
            job = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {url} not done after {timeout} s")


def rollback_phase(directory: Path, clients: int, uploads: int, bots: int, workers: int, seed: int) -> dict:
    """A rollback by uploader through /admin while the other clients keep uploading, then an unflag:
    after each, every pairing counts the log's battles in state ok and the tables equal a rebuild."""
    import json

    db = directory / "rollback.db"
    made = subprocess.run(
        [sys.executable, "-m", "rumble", "admin", "create-token", "--db", str(db), "loadtest"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    token = made.stdout.strip()
    now_ms = int(time.time() * 1000)
    runs = [ClientRun(make_uploads(c, uploads, bots, seed + 2, now_ms)) for c in range(clients)]
    server = start(db, workers)
    try:
        rolled: dict = {}
        stop_event = threading.Event()
        lock = threading.Lock()
        oks = [0]

        def on_ok() -> None:
            with lock:
                oks[0] += 1
                count = oks[0]
            if count == clients * uploads // 2:
                status, text = admin_post(
                    server, "/admin/rollback", token, json.dumps({"uploader": "load-client-0"}).encode()
                )
                rolled.update(status=status, **json.loads(text), after_oks=count)

        threads = [threading.Thread(target=run_client, args=(run, server, stop_event, on_ok)) for run in runs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert rolled.get("status") == 202, rolled  # a maintenance job: recomputed aside while the uploads went on
        rolled["job"] = wait_for_job(server, rolled["url"], token)
    finally:
        stop(server)
    assert rolled["job"]["state"] == "done", rolled
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    removed = conn.execute("SELECT count(*) FROM battles WHERE state = 'removed'").fetchone()[0]
    conn.close()
    assert removed == rolled["battles"] == rolled["job"]["result"]["battles"] > 0, (removed, rolled)
    after_rollback = check_log(db, distinct(runs), exactly=True, all_ok=False)
    check_rebuild(db)
    server = start(db, workers)
    try:
        status, text = admin_post(server, "/admin/unflag", token, json.dumps({"uploader": "load-client-0"}).encode())
        assert status == 202, text
        job = wait_for_job(server, json.loads(text)["url"], token)
    finally:
        stop(server)
    unflagged = json.loads(text)
    assert job["state"] == "done" and unflagged["battles"] == job["result"]["battles"] == removed, job
    check_log(db, distinct(runs), exactly=True)
    replayed = check_rebuild(db)
    return {
        "rolled_back_after_oks": rolled["after_oks"],
        "rolled_back": rolled["battles"],
        "log_rows": after_rollback["log_rows"],
        "unflagged": unflagged["battles"],
        "rebuild_replayed_at_end": replayed,
        **{k: v for k, v in summary(runs).items() if k != "errors"},
        "errors": summary(runs)["errors"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--uploads", type=int, default=1000, help="uploads per client")
    parser.add_argument("--bots", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (rumble serve --workers)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-crash", action="store_true")
    parser.add_argument("--skip-rollback", action="store_true")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the databases go (default: a temporary directory)"
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        directory = args.dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        directory.mkdir(parents=True, exist_ok=True)
        print(
            f"load: {args.clients} clients x {args.uploads} uploads, {args.bots} bots, {args.workers} workers",
            flush=True,
        )
        print(
            "load:", load_phase(directory, args.clients, args.uploads, args.bots, args.workers, args.seed), flush=True
        )
        if not args.skip_crash:
            print(
                "crash:",
                crash_phase(directory, args.clients, args.uploads, args.bots, args.workers, args.seed),
                flush=True,
            )
        if not args.skip_rollback:
            print(
                "rollback:",
                rollback_phase(directory, args.clients, args.uploads, args.bots, args.workers, args.seed),
                flush=True,
            )
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
