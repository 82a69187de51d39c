"""Uploads under a hostile mix of connections, against `rumble serve` as the README starts it.

1. Builds (or reuses from the cache) a roborumble ladder with at least ``--battles`` battles
   (synthetic bots, every pairing once; scripts/bench_upload.py's builder), and runs the batch
   rankings on it once, as the schedule of a running server would have.
2. Starts ``python -m rumble serve --db COPY --port P`` (its default workers: one per core), and
   with ``--proxy`` Debian's nginx in front of it (TRUSTED_PROXIES=1; tests/e2e/nginx_support.py).
3. Holds ``--per-kind`` connections of each hostile kind for ``--seconds`` (reopening one the
   server closed, at most MAX_OPENS times each):
   - ``trickle``: ``POST /UploadedResults`` headers never finished; every other one sends one more
     header byte every 2 s;
   - ``short-body``: a real upload announced with ``Content-Length: 4000``, then silence;
   - ``unread-export``: a 4 KB receive buffer, a multi-MB export requested (battles.csv, or
     rumble.sqlite), never read (held to the end; ``--renew`` asks anew on a new connection);
   - ``idle``: connected, sends nothing.
   Optionally ``--readers`` clients that download exports in full, one after another (issue 11 1(d)).
4. Meanwhile sends one real-format upload a second, each on a fresh connection with the real
   client's headers and its 10 s timeout, and prints the share answered with the exact accepted
   line within 2 s (goal: at least 95 %), and the slowest, then PASS or FAIL.

Everything runs on the loopback; every loop is bounded in time and count. Exit status 1 if the
goal is missed. Run with the project's venv: ``.venv/bin/python scripts/hostile_mix.py --help``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from http.client import HTTPConnection
from pathlib import Path

import numpy as np
from bench_upload import (
    Ladder,
    build_database,
    fit_strengths,
    free_port,
    remove_database,
    sample_figures,
    to_battle,
    wait_until_serving,
)

from rumble import settings
from rumble.protocol.games import load_rumbles
from rumble.protocol.upload import format_upload
from rumble.store.migrations import migration_files

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.e2e.nginx_support import running_nginx  # noqa: E402  (the same nginx set-up as the proxy tests)

GAME = "roborumble"
LADDER_VERSION = 1  # part of the cache key: raise it when synthetic_ladder or ladder_database changes
KINDS = ("trickle", "short-body", "unread-export", "idle")
GOAL_SECONDS, GOAL_SHARE = 2.0, 0.95
CLIENT_TIMEOUT_S = 10.0  # the real client's
MAX_OPENS = 2000  # per hostile connection slot
TCP_ESTABLISHED = 1
JAVA_HEADERS = (
    "User-Agent: Java/17.0.21.1\r\nAccept: text/html, image/gif, image/jpeg, */*; q=0.2\r\n"
    "Connection: keep-alive\r\nContent-type: application/x-www-form-urlencoded\r\n"
)
EXPORTS = ("/api/v1/rumbles/roborumble/export/battles.csv", "/api/v1/rumbles/roborumble/export/rumble.sqlite")


# --- the database ----------------------------------------------------------------------------


def bots_for(battles: int) -> int:
    """The fewest bots whose every pairing, played once, gives at least ``battles`` battles."""
    n = max(2, math.ceil((1 + math.sqrt(1 + 8 * battles)) / 2))
    return n


def synthetic_ladder(n: int) -> Ladder:
    names = [f"hostile.Bot{k:04d} 1.0" for k in range(n)]
    target = np.linspace(35.0, 65.0, n)
    return Ladder(names, target, np.zeros(n, dtype=bool), fit_strengths(target))


def ladder_database(workdir: Path, n: int, seed: int) -> Path:
    """The cached database of an ``n``-bot ladder (built, and batch-ranked once, if missing)."""
    digest = hashlib.sha256(json.dumps([n, seed, LADDER_VERSION]).encode())
    for path in [REPO / "scripts" / "bench_upload.py", *migration_files()]:
        digest.update(path.read_bytes())
    path = workdir / f"hostile-{n}bots-seed{seed}-{digest.hexdigest()[:12]}.db"
    if path.exists():
        return path
    workdir.mkdir(parents=True, exist_ok=True)
    for stale in workdir.glob(f"hostile-{n}bots-seed{seed}-*.db"):
        remove_database(stale)
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[GAME]
    building = path.with_suffix(".tmp.db")
    build_database(building, synthetic_ladder(n), rumble, 1, seed)
    subprocess.run(
        [sys.executable, "-m", "rumble", "batch", "--db", str(building)], check=True, stdout=subprocess.DEVNULL
    )
    Path(f"{building}.lock").unlink(missing_ok=True)
    building.rename(path)
    return path


# --- the server ------------------------------------------------------------------------------


def start_server(python: str, db: Path, port: int, log: Path, extra_env: dict[str, str]) -> subprocess.Popen:
    """``python -m rumble serve`` as the README starts it (default workers), once it answers ``GET /``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RUMBLE_")}
    env.update(extra_env)
    with log.open("wb") as out:
        server = subprocess.Popen(
            [python, "-m", "rumble", "serve", "--db", str(db), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=db.parent,
            start_new_session=True,
        )  # (the interpreter's own rumble, not ./rumble)
    return wait_until_serving(server, port, log, stop_server)


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, 9)
        server.wait()


# --- the hostile connections -----------------------------------------------------------------


@dataclass
class KindStats:
    opens: int = 0
    closed_by_server: int = 0
    refused: int = 0  # connect() failed
    lifetimes: list[float] = field(default_factory=list)


def tcp_state(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


def open_hostile(kind: str, index: int, address: tuple[str, int], upload: bytes) -> socket.socket:
    """A new connection of ``kind``, its first bytes sent."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if kind == "unread-export":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window stays small
    sock.settimeout(5)
    sock.connect(address)
    if kind == "trickle":
        sock.sendall(b"POST /UploadedResults HTTP/1.1\r\nHost: x\r\n")
    elif kind == "short-body":
        head = f"POST /UploadedResults HTTP/1.1\r\nHost: x\r\n{JAVA_HEADERS}Content-Length: 4000\r\n\r\n"
        sock.sendall(head.encode("ascii") + upload)
    elif kind == "unread-export":
        sock.sendall(f"GET {EXPORTS[index % 2]} HTTP/1.1\r\nHost: x\r\n\r\n".encode("ascii"))
    return sock


def hold(
    kind: str, index: int, address: tuple[str, int], upload: bytes, stop_at: float, renew: float, stats: KindStats
) -> None:
    """Keep one hostile connection of ``kind`` open until ``stop_at``, reopening it when the server closes it."""
    for _ in range(MAX_OPENS):
        if time.monotonic() >= stop_at:
            return
        try:
            sock = open_hostile(kind, index, address, upload)
        except OSError:
            stats.refused += 1
            time.sleep(0.5)
            continue
        stats.opens += 1
        opened, last_byte = time.monotonic(), time.monotonic()
        try:
            while time.monotonic() < stop_at:
                time.sleep(0.25)
                if tcp_state(sock) != TCP_ESTABLISHED:  # the server closed it (FIN or RST)
                    stats.closed_by_server += 1
                    break
                if kind == "trickle" and index % 2 and time.monotonic() - last_byte >= 2.0:
                    sock.send(b"X")
                    last_byte = time.monotonic()
                if kind == "unread-export" and renew and time.monotonic() - opened >= renew:
                    break
        except OSError:
            stats.closed_by_server += 1
        finally:
            stats.lifetimes.append(time.monotonic() - opened)
            sock.close()
        time.sleep(0.1)


# --- the uploads -----------------------------------------------------------------------------


@dataclass
class Upload:
    started: float
    seconds: float | None = None  # None: no answer within the client's timeout
    ok: bool = False
    error: str = ""


def post_upload(address: tuple[str, int], body: bytes, expected: str, record: Upload) -> None:
    """One upload on a fresh connection with the client's headers; ``record`` gets its time and outcome."""
    began = time.monotonic()
    try:
        with socket.create_connection(address, timeout=CLIENT_TIMEOUT_S) as sock:
            sock.settimeout(max(0.1, CLIENT_TIMEOUT_S - (time.monotonic() - began)))
            head = f"POST /UploadedResults HTTP/1.1\r\nHost: {address[0]}:{address[1]}\r\n{JAVA_HEADERS}Content-Length: {len(body)}\r\n\r\n"
            sock.sendall(head.encode("ascii") + body)
            response = read_response(sock, began)
        record.seconds = time.monotonic() - began
        status, text = response
        last = text.splitlines()[-1] if text.strip() else ""
        record.ok = status == 200 and last == expected
        if not record.ok:
            record.error = f"HTTP {status}: {text.strip()[-120:]!r}"
    except OSError as error:
        record.error = f"{type(error).__name__}: {error}"


def read_response(sock: socket.socket, began: float) -> tuple[int, str]:
    """Read one HTTP/1.1 answer with a Content-Length (the server's), within the client's timeout."""
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(0.01, CLIENT_TIMEOUT_S - (time.monotonic() - began)))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the answer's headers")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next((int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), None)
    if length is None:
        raise ConnectionError("an answer without Content-Length")
    while len(body) < length:
        sock.settimeout(max(0.01, CLIENT_TIMEOUT_S - (time.monotonic() - began)))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the middle of the answer")
        body += chunk
    return int(lines[0].split(" ", 2)[1]), body[:length].decode("utf-8", "replace")


def upload_pairs(ladder: Ladder, count: int, seed: int) -> list[tuple[str, str, list[int]]]:
    """``count`` random pairs of the ladder with sampled battle figures (the client time is set when sent)."""
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[GAME]
    rng = np.random.default_rng(seed)
    n = len(ladder.names)
    a = rng.integers(0, n, count)
    b = (a + rng.integers(1, n, count)) % n
    figures = sample_figures(rng, ladder.strength[a] - ladder.strength[b], rumble.rounds).tolist()
    return [(ladder.names[i], ladder.names[j], row) for i, j, row in zip(a.tolist(), b.tolist(), figures, strict=True)]


def battle_body(rumble, pair: tuple[str, str, list[int]], time_ms: int) -> tuple[bytes, str]:
    """The real-format upload of ``pair`` and the exact line that accepts it."""
    battle = to_battle(rumble, pair[0], pair[1], pair[2], time_ms, "hostile-mix")
    return format_upload(battle), f"OK. {battle.first.name} vs {battle.second.name} received for {GAME}"


# --- the readers (issue 11, 1(d)) ------------------------------------------------------------


@dataclass
class ReaderStats:
    complete: int = 0
    busy: int = 0  # answered 503
    failed: int = 0
    seconds: list[float] = field(default_factory=list)
    bytes: int = 0


def read_exports(index: int, address: tuple[str, int], stop_at: float, rate_kb: float, stats: ReaderStats) -> None:
    """Download exports one after another until ``stop_at``; at most ``rate_kb`` KB/s if given (a slow link)."""
    for _ in range(MAX_OPENS):
        if time.monotonic() >= stop_at:
            return
        began = time.monotonic()
        connection = HTTPConnection(*address, timeout=60)
        try:
            connection.request("GET", EXPORTS[index % 2])
            response = connection.getresponse()
            size = read_body(response, began, stop_at, rate_kb)
            if size is None:  # the run ended first
                return
            if response.status == 200:
                stats.complete += 1
                stats.bytes += size
                stats.seconds.append(time.monotonic() - began)
            elif response.status == 503:
                stats.busy += 1
                time.sleep(1.0)
            else:
                stats.failed += 1
        except OSError:
            stats.failed += 1
        finally:
            connection.close()


def read_body(response, began: float, stop_at: float, rate_kb: float) -> int | None:
    """Read an answer's body whole (at ``rate_kb`` KB/s if given); its size, or None if the run ended first."""
    if not rate_kb:
        return len(response.read())
    size = 0
    while chunk := response.read(4096):
        size += len(chunk)
        time.sleep(max(0.0, began + size / (rate_kb * 1024) - time.monotonic()))
        if time.monotonic() >= stop_at:
            return None
    return size


# --- the run ---------------------------------------------------------------------------------


def run_mix(address: tuple[str, int], ladder: Ladder, args: argparse.Namespace) -> dict:
    start = time.monotonic()
    stop_at = start + args.ramp + args.seconds
    kinds = {kind: KindStats() for kind in KINDS}
    readers = ReaderStats()
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[GAME]
    pairs = upload_pairs(ladder, int(args.seconds) + 1, args.seed)
    sample, _ = battle_body(
        rumble, pairs[-1], int(time.time() * 1000) - 1000
    )  # what short-body connections start to send
    threads = []
    for kind in KINDS:
        for index in range(args.per_kind):
            threads.append(
                threading.Thread(
                    target=hold, args=(kind, index, address, sample, stop_at, args.renew, kinds[kind]), daemon=True
                )
            )
    for index in range(args.readers):
        threads.append(
            threading.Thread(target=read_exports, args=(index, address, stop_at, args.reader_kb, readers), daemon=True)
        )
    for thread in threads:
        thread.start()
    uploads: list[Upload] = []
    senders = []
    for k, pair in enumerate(pairs[: int(args.seconds)]):
        time.sleep(max(0.0, start + args.ramp + k - time.monotonic()))
        body, expected = battle_body(rumble, pair, int(time.time() * 1000))
        record = Upload(time.monotonic() - start)
        uploads.append(record)
        sender = threading.Thread(target=post_upload, args=(address, body, expected, record), daemon=True)
        sender.start()
        senders.append(sender)
    for thread in senders + threads:
        thread.join(timeout=max(0.0, stop_at + CLIENT_TIMEOUT_S + 15 - time.monotonic()))
    return summarise(uploads, kinds, readers, args)


def summarise(
    uploads: list[Upload], kinds: dict[str, KindStats], readers: ReaderStats, args: argparse.Namespace
) -> dict:
    answered = [u.seconds for u in uploads if u.seconds is not None]
    in_time = sum(1 for u in uploads if u.ok and u.seconds is not None and u.seconds <= GOAL_SECONDS)
    return {
        "uploads": len(uploads),
        "ok_within_2s": in_time,
        "ok": sum(1 for u in uploads if u.ok),  # answered as accepted within the client's timeout
        "share": in_time / len(uploads) if uploads else 0.0,
        "slowest_s": max(answered) if answered else None,
        "p50_s": float(np.percentile(answered, 50)) if answered else None,
        "unanswered": sum(1 for u in uploads if u.seconds is None),
        "errors": [u.error for u in uploads if u.error][:10],
        "late": [
            [round(u.started, 1), None if u.seconds is None else round(u.seconds, 2)]
            for u in uploads
            if u.seconds is None or u.seconds > GOAL_SECONDS
        ],  # [sent at (s into the run), took]
        "hostile": {
            kind: {
                "opens": s.opens,
                "closed_by_server": s.closed_by_server,
                "connect_failed": s.refused,
                "longest_held_s": round(max(s.lifetimes), 1) if s.lifetimes else None,
            }
            for kind, s in kinds.items()
        },
        "readers": {
            "complete": readers.complete,
            "busy_503": readers.busy,
            "failed": readers.failed,
            "mean_s": round(float(np.mean(readers.seconds)), 2) if readers.seconds else None,
            "bytes": readers.bytes,
        }
        if args.readers
        else None,
    }


def report(result: dict, args: argparse.Namespace, battles: int, n: int, target: str) -> None:
    print(
        f"database      {battles:,} battles, {n} bots in {GAME}"
        + (f" ({args.db})" if args.db else " (every pairing once)")
    )
    print(f"target        {target}{' (nginx in front, TRUSTED_PROXIES=1)' if args.proxy else ''}")
    print(
        f"hostile       {args.per_kind * len(KINDS)} connections ({args.per_kind} each: {', '.join(KINDS)}) held {args.seconds:g} s"
        + (f"; {args.readers} export readers" if args.readers else "")
    )
    for kind, figures in result["hostile"].items():
        print(
            f"  {kind:<14} opened {figures['opens']}, closed by the server {figures['closed_by_server']}, "
            f"connect failed {figures['connect_failed']}, longest held {figures['longest_held_s']} s"
        )
    if result["readers"]:
        r = result["readers"]
        print(
            f"  readers        {r['complete']} complete exports ({r['bytes']:,} bytes, mean {r['mean_s']} s), {r['busy_503']} answered 503, {r['failed']} failed"
        )
    print(
        f"server        {result['send_timeouts']} answers cut off after SEND_TIMEOUT_SECONDS without progress (its log)"
    )
    slowest = "-" if result["slowest_s"] is None else f"{result['slowest_s'] * 1000:.0f} ms"
    p50 = "-" if result["p50_s"] is None else f"{result['p50_s'] * 1000:.0f} ms"
    verdict = "met" if result["share"] >= GOAL_SHARE else "MISSED"
    print(
        f"uploads       {result['ok_within_2s']}/{result['uploads']} answered OK within 2 s: {result['share'] * 100:.1f} % "
        f"(goal >= {GOAL_SHARE * 100:.0f} %: {verdict}); p50 {p50}, slowest {slowest}, unanswered in 10 s {result['unanswered']}"
    )
    if result["late"]:
        print(
            "  late: "
            + ", ".join(f"sent at {at} s took {'-' if took is None else f'{took} s'}" for at, took in result["late"])
        )
    for error in result["errors"]:
        print(f"  error: {error}")
    print(f"{'PASS' if result['share'] >= GOAL_SHARE else 'FAIL'}: {result['share'] * 100:.1f} % within 2 s")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--battles", type=int, default=40_000, help="at least this many battles in the database")
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="run on a copy of this database instead (e.g. bench_upload.py's 1,200-bot ladder); uploads pair its roborumble bots",
    )
    parser.add_argument("--per-kind", type=int, default=16, help="hostile connections of each of the four kinds")
    parser.add_argument(
        "--seconds",
        type=float,
        default=40.0,
        help="how long the hostile connections are held (one upload a second meanwhile)",
    )
    parser.add_argument(
        "--ramp", type=float, default=2.0, help="seconds of hostile connections before the first upload"
    )
    parser.add_argument(
        "--renew",
        type=float,
        default=0.0,
        help="seconds after which an unread export is requested anew on a new connection (0: held until the run ends)",
    )
    parser.add_argument(
        "--readers", type=int, default=0, help="clients downloading exports in full meanwhile (issue 11, 1(d))"
    )
    parser.add_argument(
        "--reader-kb", type=float, default=0.0, help="the readers' speed in KB/s (0: as fast as they can)"
    )
    parser.add_argument("--proxy", action="store_true", help="run nginx in front of the server (TRUSTED_PROXIES=1)")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that runs `-m rumble serve` (another checkout's venv to compare)",
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--workdir", type=Path, default=Path("/tmp/rumble-hostile"), help="the cached database, the run's copy and logs"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object on the last line")
    args = parser.parse_args(argv)
    if not (0 <= args.per_kind <= 256 and 1 <= args.seconds <= 600 and 0 <= args.readers <= 16 and args.battles >= 1):
        parser.error("--per-kind 0..256, --seconds 1..600, --readers 0..16, --battles >= 1")
    return args


def database_ladder(path: Path) -> tuple[Ladder, int]:
    """The roborumble bots of an existing database as a ladder of equal strengths, and its battles."""
    from rumble import store
    from rumble.store import bots
    from rumble.store.battle_log import count_battles
    from rumble.store.rumbles import rumble_id

    db = store.connect(path, migrate=False)
    try:
        names = sorted(bots.participant_names(db, rumble_id(db, GAME)))
        battles = count_battles(db)
    finally:
        db.close()
    if len(names) < 2:
        raise SystemExit(f"{path} has fewer than 2 active bots in {GAME}")
    n = len(names)
    return Ladder(names, np.full(n, 50.0), np.zeros(n, dtype=bool), np.zeros(n)), battles


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.db is not None:
        cached = args.db
        ladder, battles = database_ladder(args.db)
    else:
        n = bots_for(args.battles)
        cached = ladder_database(args.workdir, n, args.seed)
        ladder, battles = synthetic_ladder(n), n * (n - 1) // 2
    run_dir = args.workdir / f"run-{os.getpid()}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    run_db = run_dir / "rumble.db"
    shutil.copyfile(cached, run_db)
    port = free_port()
    extra = {"RUMBLE_TRUSTED_PROXIES": "1"} if args.proxy else {}
    server = start_server(args.python, run_db, port, run_dir / "server.log", extra)
    try:
        with ExitStack() as stack:
            target = f"http://127.0.0.1:{port}"
            if args.proxy:
                target = stack.enter_context(running_nginx(run_dir / "nginx", port))
            host, _, target_port = target.removeprefix("http://").partition(":")
            result = run_mix((host, int(target_port)), ladder, args)
    finally:
        stop_server(server)
        remove_database(run_db)  # the logs stay
    result["send_timeouts"] = (run_dir / "server.log").read_text(errors="replace").count("took none of its answer")
    report(result, args, battles, len(ladder.names), target)
    print(f"logs          {run_dir}")
    if args.json:
        print(json.dumps(result))
    return 0 if result["share"] >= GOAL_SHARE else 1


if __name__ == "__main__":
    sys.exit(main())
