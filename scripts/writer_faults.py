"""Uploads while the writer process hangs and dies: a real `rumble serve` (rumble/server/single_writer.py).

On a copy of a small generated database (`rumble demo`, 600 battles), CLIENTS threads upload
distinct battles one after another for SECONDS, each on a new connection with the real client's
10 s read timeout. Meanwhile the writer process is stopped (SIGSTOP) at --stop-at and, unless
--no-resume, resumed (SIGCONT) --stop-for seconds later if it is still there (its supervisor
should have killed and replaced it well before); at --kill-at the writer then serving is killed
outright (kill -9). With the server stopped, the battle log is read with plain sqlite3.

Prints the share of uploads answered OK within 2 s (goal: at least 95 %), the slowest answer, the
longest time in which the server answered no upload, what the writer's supervisor said, the
writer's pid before and after each fault, and lost and doubled uploads (an upload answered OK but
not in the log is lost; one in the log more than once is doubled); then PASS or FAIL. Loopback only.

    .venv/bin/python scripts/writer_faults.py            # 8 clients, 25 s, stop at 6 s, kill at 16 s
    .venv/bin/python scripts/writer_faults.py --help
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from load_test import Server, start, stop  # scripts/load_test.py: `rumble serve` in a session of its own

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rumble.protocol.battle import Battle, Side  # noqa: E402
from rumble.protocol.upload import format_upload  # noqa: E402

GOAL_SECONDS, GOAL_SHARE = 2.0, 0.95
CLIENT_TIMEOUT_S = 10.0  # the real client's read timeout
MAX_UPLOADS = 200_000  # per client: its loop ends by count as well as by time
BOTS = [f"faults.Bot{k:02d} 1.0" for k in range(12)]


@dataclass(frozen=True)
class Sent:
    """One upload and its fate: when it was sent and answered (monotonic seconds) and the answer."""

    battle: Battle
    sent: float
    answered: float
    outcome: str  # "accepted", "repeat" (an OK for a result already stored), "other: ..." or "no answer: ..."


def battle_for(client: int, k: int, now_ms: int) -> Battle:
    """A plausible roborumble result, unique by (uploader, time)."""
    first, second = BOTS[k % len(BOTS)], BOTS[(k + 1 + client) % len(BOTS)]
    if first == second:
        second = BOTS[(k + 2) % len(BOTS)]
    score = 3000 + (37 * k + 101 * client) % 4000
    return Battle(
        game="roborumble",
        version="1",
        client="1.9.3.9",
        teams=False,
        melee=False,
        rounds=35,
        field="800x600",
        uploader=f"faults-client-{client}",
        time_ms=now_ms - k - 1,
        first=Side(first, score, score // 3, 18),
        second=Side(second, 7000 - score, (7000 - score) // 3, 17),
    )


def upload(port: int, battle: Battle) -> str:
    """Send ``battle`` as the client does; its outcome."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT_S)
    try:
        conn.request(
            "POST",
            "/UploadedResults",
            body=format_upload(battle),
            headers={"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "Java/17"},
        )
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as error:
        return f"no answer: {type(error).__name__}"
    finally:
        conn.close()
    last = text.splitlines()[-1] if text else ""
    pair = f"{battle.first.name} vs {battle.second.name}"
    if response.status == 200 and last == f"OK. {pair} received for roborumble":
        return "accepted"
    if response.status == 200 and last == f"OK. {pair} for roborumble was already received; not counted again":
        return "repeat"
    return f"other: {response.status} {last[:60]}"


def run_client(client: int, port: int, until: float, now_ms: int, into: list[Sent], lock: threading.Lock) -> None:
    for k in range(MAX_UPLOADS):
        if time.monotonic() >= until:
            return
        battle = battle_for(client, k, now_ms)
        sent = time.monotonic()
        outcome = upload(port, battle)
        with lock:
            into.append(Sent(battle, sent, time.monotonic(), outcome))


def writer_pid(server: Server) -> int:
    """The arbiter's child that runs rumble.server.single_writer."""
    children = {
        int(child)
        for task in Path(f"/proc/{server.process.pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    }
    (writer,) = (child for child in children if b"single_writer" in Path(f"/proc/{child}/cmdline").read_bytes())
    return writer


def replacement(server: Server, old: int, deadline: float) -> int | None:
    """The writer the supervisor started in place of ``old``, once it says so (until ``deadline``)."""
    while time.monotonic() < deadline:
        found = re.search(rf"started writer process (\d+) in place of {old}$", server.log.read_text(), re.MULTILINE)
        if found:
            return int(found[1])
        time.sleep(0.05)
    return None


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def faults(server: Server, start_at: float, args: argparse.Namespace, pids: dict[str, int | None]) -> None:
    """SIGSTOP the writer at ``--stop-at``, SIGCONT it ``--stop-for`` later (if still there), kill -9
    the writer then serving at ``--kill-at``; the pids seen are put in ``pids``."""
    first = pids["before"] = writer_pid(server)
    time.sleep(max(0.0, start_at + args.stop_at - time.monotonic()))
    os.kill(first, signal.SIGSTOP)
    time.sleep(args.stop_for)
    if not args.no_resume:
        with contextlib.suppress(ProcessLookupError):
            os.kill(first, signal.SIGCONT)  # (gone already if the supervisor killed it)
    second = pids["after stop"] = replacement(server, first, start_at + args.kill_at)
    pids["stopped one still there"] = first if alive(first) else None
    serving = second if second is not None else first  # (a server without a supervisor: the first one)
    time.sleep(max(0.0, start_at + args.kill_at - time.monotonic()))
    with contextlib.suppress(ProcessLookupError):
        os.kill(serving, signal.SIGKILL)
    pids["killed"] = serving
    pids["after kill"] = replacement(server, serving, start_at + args.seconds)


def log_counts(db: Path, uploaders: list[str]) -> dict[tuple, int]:
    """Rows of the log per result identity (uploader, time, bots, scores) for the given uploaders."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(uploaders))
        rows = conn.execute(
            "SELECT (SELECT name FROM uploaders WHERE id = b.uploader_id), b.client_time, f.full_name, s.full_name, b.first_score, b.second_score, count(*) "
            "FROM battles b JOIN bots f ON f.id = b.first_bot_id JOIN bots s ON s.id = b.second_bot_id "
            f"WHERE b.uploader_id IN (SELECT id FROM uploaders WHERE name IN ({marks})) GROUP BY 1, 2, 3, 4, 5, 6",
            uploaders,
        ).fetchall()
    finally:
        conn.close()
    return {tuple(row[:6]): row[6] for row in rows}


def identity(battle: Battle) -> tuple:
    return (
        battle.uploader,
        battle.time_ms,
        battle.first.name,
        battle.second.name,
        battle.first.score,
        battle.second.score,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=25.0, help="how long the clients upload")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (rumble serve --workers)")
    parser.add_argument("--stop-at", type=float, default=6.0, help="SIGSTOP the writer this long into the run")
    parser.add_argument("--stop-for", type=float, default=5.0, help="then SIGCONT it this long after (if still there)")
    parser.add_argument("--no-resume", action="store_true", help="never SIGCONT the stopped writer")
    parser.add_argument("--kill-at", type=float, default=16.0, help="kill -9 the writer serving then, this long in")
    parser.add_argument("--dir", type=Path, default=None, help="where the databases go (default: a temporary one)")
    args = parser.parse_args(argv)
    if not args.stop_at + args.stop_for < args.kill_at < args.seconds:
        parser.error("need --stop-at + --stop-for < --kill-at < --seconds")
    with contextlib.ExitStack() as stack:
        directory = args.dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        directory.mkdir(parents=True, exist_ok=True)
        base = directory / "demo.db"
        if not base.exists():
            subprocess.run(
                [sys.executable, "-m", "rumble", "demo", "--db", str(base)],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={k: v for k, v in os.environ.items() if not k.startswith("RUMBLE_")},
                cwd=REPO,
            )
        db = directory / "faults.db"
        for stale in directory.glob("faults.db*"):
            stale.unlink()
        with sqlite3.connect(base) as source, sqlite3.connect(db) as copy:
            source.backup(copy)
        source.close()
        copy.close()
        server = start(db, args.workers)
        sent: list[Sent] = []
        pids: dict[str, int | None] = {}
        try:
            lock = threading.Lock()
            now_ms = int(time.time() * 1000)
            begun = time.monotonic()
            until = begun + args.seconds
            clients = [
                threading.Thread(target=run_client, args=(k, server.port, until, now_ms - 10_000_000 * k, sent, lock))
                for k in range(args.clients)
            ]
            for thread in clients:
                thread.start()
            faults(server, begun, args, pids)
            for thread in clients:
                thread.join(args.seconds + 2 * CLIENT_TIMEOUT_S)
            said = [
                line.split(": ", 1)[1]
                for line in server.log.read_text().splitlines()
                if "rumble.server.single_writer:" in line
            ]
        finally:
            for pid in (pids.get("before"), pids.get("after stop")):
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGCONT)  # never leave a stopped process behind
            stop(server)
        counts = log_counts(db, [f"faults-client-{k}" for k in range(args.clients)])
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)

    oks = [s for s in sent if s.outcome in ("accepted", "repeat")]
    fast = sum(s.answered - s.sent <= GOAL_SECONDS for s in oks)
    share = fast / len(sent) if sent else 0.0
    slowest = max((s.answered - s.sent for s in sent), default=0.0)
    answers = sorted(s.answered for s in sent)
    gap = max((later - earlier for earlier, later in zip(answers, answers[1:], strict=False)), default=0.0)
    lost = sum(counts.get(identity(s.battle), 0) == 0 for s in oks)
    doubled = sum(count > 1 for count in counts.values())
    unanswered_stored = sum(
        counts.get(identity(s.battle), 0) > 0 for s in sent if s.outcome not in ("accepted", "repeat")
    )
    outcomes: dict[str, int] = {}
    for s in sent:
        outcomes[s.outcome] = outcomes.get(s.outcome, 0) + 1
    print(f"writer faults: {args.clients} clients, {args.workers} workers, {args.seconds:g} s of uploads")
    print(f"  SIGSTOP at {args.stop_at:g} s, SIGCONT {'never' if args.no_resume else f'{args.stop_for:g} s later'}")
    print(f"  kill -9 at {args.kill_at:g} s")
    print(f"uploads sent: {len(sent)}; outcomes: {dict(sorted(outcomes.items()))}")
    print(f"answered OK within {GOAL_SECONDS:g} s: {share:.2%} (goal >= {GOAL_SHARE:.0%})")
    print(f"slowest answer: {slowest:.2f} s; longest time without any answer: {gap:.2f} s")
    print(f"log rows of these uploads: {sum(counts.values())}; answered OK: {len(oks)}")
    print(f"lost (answered OK, not in the log): {lost}; doubled (in the log twice or more): {doubled}")
    print(
        f"stored but not answered OK (the client sends them again, then told 'already received'): {unanswered_stored}"
    )
    print(f"writer pids: {pids}")
    for line in said:
        print(f"  server: {line}")
    replaced = (
        pids.get("after stop") not in (None, pids.get("before"))
        and pids.get("after kill") not in (None, pids.get("killed"))
        and pids.get("stopped one still there") is None
    )
    passed = share >= GOAL_SHARE and lost == 0 and doubled == 0 and replaced
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
