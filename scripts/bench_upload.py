"""Upload throughput of `rumble serve` against the bare HTTP stack, on a full-size, living 1v1 ladder.

1. Builds (or reuses from the cache) a roborumble of 1,200 bots with every pairing played: the
   1,194 bots of the 2023 LiteRumble snapshot, plus synthesized ones at APS 50. Battle scores are
   sampled around a Bradley-Terry model fitted so that each bot's APS comes out near its real APS;
   the battles go into the log through ``rumble.store.battle_log.append_battle`` and the pairings and
   summaries are computed by ``rumble.maintenance.rebuild.rebuild_rumble``, in one transaction.
2. Runs each scenario twice, one after the other, with the same load: first against the bare HTTP
   stack (scripts/bare_http.py: stock gunicorn with `rumble serve`'s worker class, or with
   --bare-worker-class sync its default one, and its worker count, a Flask app answering OK),
   then against the real server (``python -m rumble serve``) on a copy of that database. Scenarios:
   - ``ladder``: random pairs of the complete ladder;
   - ``living``: the same, plus --newcomers new bots entering one by one during the measured
     window, each then in NEWCOMER_SHARE of the uploads (so the rumble has missing pairings to
     ask for, as a rumble with newcomers does);
   - ``melee``: meleerumble battles of 10 bots drawn from --melee-bots ladder bots and the
     newcomers, each uploaded as its 45 pairs, the real client's way (the melee rumble starts
     empty, so it grows throughout).
3. Drives the servers over loopback with concurrent client processes that send the real client's
   upload bodies (``format_upload``), one connection per request, as the real client does.
4. Prints per run uploads/s, p50/p99/p99.9 and slowest latency, errors and the server's CPU per upload, and per
   scenario rumble/bare (the goal: at least RATIO_GOAL with p99 under TARGET_P99_MS); for the
   real server also the rate of a bare sqlite3 loop inserting the same rows, and checks that the
   log grew by exactly the accepted uploads.

Only ratios taken within one run mean much: the machine's speed varies from day to day.
Run with the project's venv: ``.venv/bin/python scripts/bench_upload.py --help``.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import inspect
import json
import multiprocessing
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from http.client import HTTPConnection
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's rumble, even if another is installed

from rumble import settings, store  # noqa: E402
from rumble.app import prepare_database  # noqa: E402
from rumble.ingest import apply  # noqa: E402
from rumble.maintenance import rebuild  # noqa: E402
from rumble.protocol.battle import Battle, Side  # noqa: E402
from rumble.protocol.games import RumbleSettings, load_rumbles  # noqa: E402
from rumble.protocol.upload import format_upload  # noqa: E402
from rumble.store import battle_log, bots, tables  # noqa: E402
from rumble.store.migrations import migration_files  # noqa: E402
from rumble.store.rumbles import rumble_id  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "real-rumble" / "literumble_ratings_2023-05_wadribot"
GAME = "roborumble"
CLIENT = "1.9.3.9"
TARGET_RATE = 1000.0  # uploads/s, from issue 4
TARGET_P99_MS = 50.0
RATIO_GOAL = 0.45  # rumble/bare, from issue 32 (the serving on gunicorn's documented gevent worker)
NEWCOMER_SHARE = 0.1  # of the uploads once a newcomer has entered: one side is a newcomer
MELEE_FIELD = 10  # bots in a melee battle: 45 pair uploads each
# A client's melee battles in client time: further apart than the server's window for gathering
# one battle's pairs (rumble.ingest.melee.WINDOW_MS, 1 s), as a real battle's minutes keep them; starting
# far enough back that a run's battles stay in the past (the server refuses times ahead of its clock).
MELEE_BATTLE_MS = 2_000
MELEE_PAST_MS = 3_600_000
MELEE_GAME = "meleerumble"
BARE_SCRIPT = Path(__file__).resolve().parent / "bare_http.py"
# Spread of one battle's score share around the pairing's expected share: Beta(K·p, K·(1-p)) has
# a standard deviation of 7.8 points at p = 0.5, about what real 1v1 pairings show battle to battle.
SHARE_CONCENTRATION = 40.0
CHUNK = 50_000  # battles sampled at once while building the ladder


@dataclass(frozen=True)
class Ladder:
    """The bots, the APS each should reach, and the strengths that make it so."""

    names: list[str]
    target_aps: np.ndarray
    real: np.ndarray  # True for a bot of the snapshot, False for a synthesized one
    strength: np.ndarray


@dataclass(frozen=True)
class ClientJob:
    """What one load process needs: the ladder, where to upload, and when (``time.time()`` values)."""

    ladder: Ladder
    rumble: RumbleSettings
    port: int
    seed: int
    index: int
    start_at: float
    stop_at: float
    scenario: str = "ladder"
    newcomers: tuple[str, ...] = ()
    entry_at: tuple[float, ...] = ()  # when each newcomer enters (``time.time()``)
    melee_bots: int = 0


@dataclass
class ClientResult:
    """What one load process saw: per request its start (s after the common start) and latency."""

    starts: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    accepted: list[bool] = field(default_factory=list)  # answered OK (stored), per request
    errors: list[str] = field(default_factory=list)  # why each other request failed
    cpu_seconds: float = 0.0  # this process's own CPU time


# --- the ladder ------------------------------------------------------------------------------


def read_snapshot(data: Path) -> dict[str, float]:
    """Real name ("pkg.Bot version") -> APS, from the snapshot's ratings and participants files."""
    names = [line.split(",", 1)[0] for line in (data / "particip1v1.txt").read_text().splitlines() if line.strip()]
    by_key = {name.replace(" ", "_"): name for name in names}
    aps = {}
    for line in (data / f"ratings_{GAME}.txt").read_text().splitlines():
        key, _, rest = line.partition("=")
        if key in by_key:
            aps[by_key[key]] = float(rest.split(",", 1)[0])
    return aps


def load_ladder(data: Path, n_bots: int, seed: int) -> Ladder:
    """``n_bots`` bots: a seeded sample of the snapshot, topped up with synthesized bots at APS 50."""
    real = read_snapshot(data)
    names = sorted(real)
    if n_bots < len(names):
        picked = np.random.default_rng(seed).choice(len(names), n_bots, replace=False)
        names = [names[i] for i in sorted(picked)]
    aps = [real[name] for name in names]
    synthesized = [f"bench.Synthetic{k:03d} 1.0" for k in range(n_bots - len(names))]
    target = np.array(aps + [50.0] * len(synthesized))
    is_real = np.array([True] * len(names) + [False] * len(synthesized))
    return Ladder(names + synthesized, target, is_real, fit_strengths(target))


def expected_shares(strength: np.ndarray) -> np.ndarray:
    """Bradley-Terry expected score share of bot i against bot j (zero on the diagonal)."""
    share = 1.0 / (1.0 + np.exp(strength[None, :] - strength[:, None]))
    np.fill_diagonal(share, 0.0)
    return share


def fit_strengths(target_aps: np.ndarray, tolerance: float = 1e-9, max_steps: int = 500) -> np.ndarray:
    """Strengths whose expected APS against the whole field is ``target_aps`` (Newton steps per bot)."""
    target = target_aps / 100.0
    n = len(target)
    strength = np.log(np.clip(target, 1e-6, 1 - 1e-6) / np.clip(1 - target, 1e-6, 1 - 1e-6))
    for _ in range(max_steps):
        share = expected_shares(strength)
        gap = target - share.sum(axis=1) / (n - 1)
        if np.abs(gap).max() < tolerance:
            break
        slope = (share * (1 - share)).sum(axis=1) / (n - 1)
        strength += np.clip(gap / np.maximum(slope, 1e-12), -2.0, 2.0)
    return strength


def sample_figures(rng: np.random.Generator, gap: np.ndarray, rounds: int) -> np.ndarray:
    """Battle figures for pairs whose strength difference (a minus b) is ``gap``.

    One row per battle: a's score, bullet damage and firsts, then b's. The score share is drawn
    around the expected share; rounds won follow the share, sharpened (a 60 % share wins ~77 %).
    """
    expected = np.clip(1.0 / (1.0 + np.exp(-gap)), 1e-9, 1 - 1e-9)
    share = rng.beta(SHARE_CONCENTRATION * expected, SHARE_CONCENTRATION * (1 - expected))
    total = rng.integers(3000, 8000, len(gap))
    score_a = np.rint(total * share).astype(np.int64)
    score_b = total - score_a
    bullets_a = np.rint(score_a * rng.uniform(0.5, 0.8, len(gap))).astype(np.int64)
    bullets_b = np.rint(score_b * rng.uniform(0.5, 0.8, len(gap))).astype(np.int64)
    win = share**3 / (share**3 + (1 - share) ** 3)
    firsts_a = rng.binomial(rounds, win)
    return np.stack([score_a, bullets_a, firsts_a, score_b, bullets_b, rounds - firsts_a], axis=1)


def to_battle(
    rumble: RumbleSettings, a: str, b: str, figures: list[int], time_ms: int, uploader: str, received_at: str = ""
) -> Battle:
    """The upload for one sampled battle, the higher score first (as the client sorts them)."""
    sides = sorted((Side(a, *figures[:3]), Side(b, *figures[3:])), key=lambda side: -side.score)
    return Battle(
        rumble.name,
        "1",
        CLIENT,
        rumble.teams,
        rumble.melee,
        rumble.rounds,
        rumble.field,
        uploader,
        time_ms,
        sides[0],
        sides[1],
        received_at,
        "127.0.0.1" if received_at else None,
    )


def ladder_battles(ladder: Ladder, rumble: RumbleSettings, per_pairing: int, seed: int) -> Iterator[Battle]:
    """Every pairing ``per_pairing`` times, with distinct client times in the recent past."""
    rng = np.random.default_rng(seed)
    first, second = np.triu_indices(len(ladder.names), 1)
    first, second = np.repeat(first, per_pairing), np.repeat(second, per_pairing)
    received_at = store.utc_now()
    start_ms = int(time.time() * 1000) - len(first)
    for lo in range(0, len(first), CHUNK):
        a, b = first[lo : lo + CHUNK], second[lo : lo + CHUNK]
        figures = sample_figures(rng, ladder.strength[a] - ladder.strength[b], rumble.rounds).tolist()
        for k, (i, j, row) in enumerate(zip(a.tolist(), b.tolist(), figures, strict=True)):
            yield to_battle(
                rumble, ladder.names[i], ladder.names[j], row, start_ms + lo + k, "bench-preload", received_at
            )


# --- the cached database ---------------------------------------------------------------------


def cache_path(args: argparse.Namespace) -> Path:
    """The cache file for these parameters, input files, schema and this script."""
    digest = hashlib.sha256(json.dumps([args.bots, args.battles_per_pairing, args.seed]).encode())
    inputs = [args.data / "particip1v1.txt", args.data / f"ratings_{GAME}.txt"]
    for path in inputs + migration_files():
        digest.update(path.read_bytes())
    for builder in LADDER_CODE:  # the code that builds the ladder, not the rest of this script
        digest.update(inspect.getsource(builder).encode())
    return args.workdir / f"{cache_prefix(args)}{digest.hexdigest()[:12]}.db"


def cache_prefix(args: argparse.Namespace) -> str:
    """The start of the cache file names for these parameters (the rest is the inputs' digest)."""
    return f"ladder-{args.bots}bots-{args.battles_per_pairing}x-seed{args.seed}-"


def remove_database(path: Path) -> None:
    """Delete a database file with its WAL, shared-memory and write-lock companions."""
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def build_database(path: Path, ladder: Ladder, rumble: RumbleSettings, per_pairing: int, seed: int) -> None:
    """Write the ladder's battles to a new database at ``path`` (through a temporary file)."""
    building = path.with_suffix(".building")
    remove_database(building)
    values = settings.load({"DB": str(building)})
    prepare_database(values, load_rumbles(values["RUMBLES_FILE"]))
    db = store.connect(building, values["SYNCHRONOUS"])
    try:
        with store.write(db):
            append_ladder(db, ladder, rumble, per_pairing, seed)
            total = battle_log.count_battles(db)
            with tqdm(total=total, desc="rebuild pairings", unit="battle", unit_scale=True) as bar:
                rebuild.rebuild_rumble(db, rumble.name, rumble.rounds, values["PRIORITY_MIN_BATTLES"], bar.update)
    finally:
        db.close()  # the last connection to close checkpoints the WAL into the file
    Path(f"{building}.lock").unlink(missing_ok=True)
    building.rename(path)


def append_ladder(db: store.Store, ladder: Ladder, rumble: RumbleSettings, per_pairing: int, seed: int) -> None:
    """Log every battle of the ladder and make each bot an active participant."""
    rid = rumble_id(db, rumble.name)
    n = len(ladder.names)
    total = n * (n - 1) // 2 * per_pairing
    for battle in tqdm(
        ladder_battles(ladder, rumble, per_pairing, seed),
        total=total,
        desc="append battles",
        unit="battle",
        unit_scale=True,
    ):
        a = bots.bot_id(db, battle.first.name, battle.received_at)
        b = bots.bot_id(db, battle.second.name, battle.received_at)
        if battle_log.append_battle(db, rid, a, b, battle) is None:
            raise RuntimeError(f"sampled the same battle twice: {battle}")
    now = store.utc_now()
    for name in ladder.names:
        apply.activate(db, rid, bots.bot_id(db, name, now), now)


LADDER_CODE = (read_snapshot, load_ladder, fit_strengths, expected_shares, sample_figures, to_battle, ladder_battles)
LADDER_CODE += (build_database, append_ladder)


def ladder_database(args: argparse.Namespace, ladder: Ladder, rumble: RumbleSettings) -> Path:
    """The cached ladder database, built first if missing or if --rebuild-data is given."""
    path = cache_path(args)
    if args.rebuild_data or not path.exists():
        args.workdir.mkdir(parents=True, exist_ok=True)
        for stale in args.workdir.glob(f"{cache_prefix(args)}*.db"):  # built from older inputs
            remove_database(stale)
        build_database(path, ladder, rumble, args.battles_per_pairing, args.seed)
        print(f"built {path}")
    else:
        print(f"using cached {path} (--rebuild-data builds it anew)")
    return path


def ladder_report(path: Path, ladder: Ladder, game: str) -> int:
    """Print how close the ladder's APS came to the real APS; return the number of logged battles."""
    db = store.connect(path, migrate=False)
    try:
        rid = rumble_id(db, game)
        rows = {row["name"]: row for row in tables.ranking_rows(db, rid)}
        logged = battle_log.count_battles(db)
    finally:
        db.close()
    n = len(ladder.names)
    complete = sum(row["pairings"] == n - 1 for row in rows.values())
    got = np.array([rows[name]["aps"] for name in ladder.names])
    real = ladder.real
    diff = np.abs(got[real] - ladder.target_aps[real])
    r = np.corrcoef(got[real], ladder.target_aps[real])[0, 1]
    print(
        f"ladder        {n} bots ({real.sum()} from the snapshot, {n - real.sum()} synthesized at APS 50), "
        f"{complete} with all {n - 1} pairings, {logged:,} battles in the log"
    )
    print(
        f"APS vs real   mean |diff| {diff.mean():.3f}, max |diff| {diff.max():.3f}, Pearson r {r:.5f} ({real.sum()} real bots)"
    )
    return logged


# --- the server ------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(
    db: Path, port: int, workers: int, log: Path, environment: dict[str, str] | None = None
) -> subprocess.Popen:
    """``python -m rumble serve`` on ``db``, once it answers ``GET /``; ``environment``: more of it (RUMBLE_... settings)."""
    command = [sys.executable, "-m", "rumble", "serve", "--db", str(db), "--port", str(port), "--workers", str(workers)]
    # The hourly batch rankings would start at once on the fresh copy and take a core for seconds
    # of the measured 20: this measures uploads alone (the batch has scripts/bench_batch.py).
    env = {**os.environ, "RUMBLE_BATCH_INTERVAL_MINUTES": "0", **(environment or {})}
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
    return wait_until_serving(server, port, log, stop_server)


def start_bare(port: int, workers: int, log: Path, worker_class: str = "gevent") -> subprocess.Popen:
    """The bare HTTP stack (scripts/bare_http.py) with gunicorn's ``worker_class``, once it answers ``GET /``."""
    command = [sys.executable, str(BARE_SCRIPT), "--port", str(port), "--workers", str(workers)]
    command += ["--worker-class", worker_class]
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    return wait_until_serving(server, port, log, stop_server)


def wait_until_serving(server: subprocess.Popen, port: int, log: Path, stop) -> subprocess.Popen:
    """``server`` once it answers ``GET /`` on ``port``; ``stop(server)`` and RuntimeError if it
    exits first or has not answered within 120 s (``log`` says why)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode}; see {log}")
        connection = HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            connection.request("GET", "/")
            if connection.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.2)
        finally:
            connection.close()
    stop_server(server)
    raise RuntimeError(f"the server did not answer within 120 s; see {log}")


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux /proc)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            pids += process_tree(int(child))
    return pids


def whole_tree(pid: int, processes: int, log: Path) -> list[int]:
    """``process_tree(pid)`` once it has ``processes`` processes; RuntimeError after 120 s (``log`` says why)."""
    deadline = time.monotonic() + 120
    while len(pids := process_tree(pid)) < processes:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server has {len(pids)} processes, not {processes}, after 120 s; see {log}")
        time.sleep(0.05)
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time of the processes still alive (Linux /proc)."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def run_queue_waits(pids: list[int]) -> dict[tuple[int, int], float] | None:
    """Seconds each thread of the processes has spent runnable but not running (waiting for a
    CPU), by (process, thread): Linux's /proc/<pid>/task/<tid>/schedstat. None where the kernel
    keeps no such figures."""
    found: dict[tuple[int, int], float] = {}
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            continue
        for tid in threads:
            try:
                fields = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
            except FileNotFoundError:  # the process or thread ended meanwhile
                continue
            except OSError:
                return None
            found[pid, int(tid)] = int(fields[1]) / 1e9  # run time, wait time, time slices (ns, ns, count)
    return found


def waited_between(before: dict[tuple[int, int], float], after: dict[tuple[int, int], float], pid: int) -> float:
    """A process's threads' waits for a CPU between two ``run_queue_waits`` (a thread started
    meanwhile counts whole; one that ended meanwhile is not seen)."""
    return sum(wait - before.get(key, 0.0) for key, wait in after.items() if key[0] == pid)


def stop_server(server: subprocess.Popen) -> None:
    """Terminate the server (gunicorn stops its workers), killing it if it lingers."""
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


# --- the load --------------------------------------------------------------------------------


def post_upload(port: int, body: bytes, timeout: float = 10.0) -> tuple[int, str]:
    """POST one upload body on a new connection; (status, answer text). 10 s is the client's timeout."""
    head = (
        f"POST /UploadedResults HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode("ascii") + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    status_line, _, rest = response.partition(b"\r\n")
    return int(status_line.split(b" ", 2)[1]), rest.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


def answer_error(status: int, text: str) -> str | None:
    """Why an answer does not accept the upload (protocol.md 7.3), or None when it does."""
    if status != 200:
        return f"HTTP {status}"
    ok_lines = [line for line in text.splitlines() if "OK" in line]
    if not ok_lines:
        return f"no OK line: {text.strip()[:100]!r}"
    if any(line.startswith("OK. ERROR") for line in ok_lines) or "already received" in text:
        return ok_lines[0][:120]
    return None


def send(job: ClientJob, result: ClientResult, battle: Battle, now: float) -> None:
    """Upload one battle and record what came of it."""
    body = format_upload(battle)
    began = time.perf_counter()
    try:
        error = answer_error(*post_upload(job.port, body))
    except OSError as exc:
        error = f"{type(exc).__name__}: {exc}"
    result.latencies_ms.append((time.perf_counter() - began) * 1000)
    result.starts.append(now - job.start_at)
    result.accepted.append(error is None)
    if error:
        result.errors.append(error)


def entered(job: ClientJob, now: float) -> list[str]:
    """The newcomers that have entered by ``now``."""
    return [name for name, at in zip(job.newcomers, job.entry_at, strict=True) if at <= now]


def pair_uploads(job: ClientJob, rng: np.random.Generator) -> Iterator[tuple[str, str, list[int]]]:
    """Random pairs of the ladder (a, b, figures), one side a newcomer in NEWCOMER_SHARE of them
    once any has entered."""
    ladder = job.ladder
    while True:
        a = rng.integers(0, len(ladder.names), 1024)
        b = (a + rng.integers(1, len(ladder.names), 1024)) % len(ladder.names)
        figures = sample_figures(rng, ladder.strength[a] - ladder.strength[b], job.rumble.rounds).tolist()
        newcomer = rng.random(1024) < NEWCOMER_SHARE
        for i, j, row, new in zip(a.tolist(), b.tolist(), figures, newcomer.tolist(), strict=True):
            present = entered(job, time.time()) if new else []
            yield ladder.names[i], present[rng.integers(len(present))] if present else ladder.names[j], row


def melee_battle(job: ClientJob, rng: np.random.Generator) -> list[tuple[str, str, list[int]]]:
    """One melee battle of MELEE_FIELD bots (ladder bots and entered newcomers) as its pairs (a, b,
    figures), in the real client's order: every pair i < j over the final ranking, so the first
    bot always outranks the second (protocol.md 7.5)."""
    pool = job.ladder.names[: job.melee_bots] + entered(job, time.time())
    bots = [pool[k] for k in rng.choice(len(pool), MELEE_FIELD, replace=False)]
    rounds = job.rumble.rounds
    scores = sorted(rng.integers(300, 4000, MELEE_FIELD).tolist(), reverse=True)  # the ranking: best first
    bullets = [int(score * rng.uniform(0.3, 0.6)) for score in scores]
    firsts = rng.multinomial(rounds, [1 / MELEE_FIELD] * MELEE_FIELD).tolist()
    return [
        (bots[x], bots[y], [scores[x], bullets[x], firsts[x], scores[y], bullets[y], firsts[y]])
        for x in range(MELEE_FIELD)
        for y in range(x + 1, MELEE_FIELD)
    ]


def run_client(job: ClientJob) -> ClientResult:
    """One load process: upload until the stop time, one request at a time."""
    rng = np.random.default_rng([job.seed, job.index])
    uploader = f"bench-{job.index}"
    result, last_ms = ClientResult(), 0
    time.sleep(max(0.0, job.start_at - time.time()))
    cpu_start = time.process_time()
    pairs = pair_uploads(job, rng)
    while True:
        # a melee battle's pairs share their client time, as the real client's do
        uploads = melee_battle(job, rng) if job.scenario == "melee" else [next(pairs)]
        if job.scenario != "melee":
            last_ms = max(int(time.time() * 1000), last_ms + 1)  # unique per uploader: never a duplicate
        else:  # battles MELEE_BATTLE_MS apart, from MELEE_PAST_MS ago (one takes a real client minutes)
            last_ms = last_ms + MELEE_BATTLE_MS if last_ms else int(time.time() * 1000) - MELEE_PAST_MS
        for a, b, row in uploads:
            now = time.time()
            if now >= job.stop_at:
                result.cpu_seconds = time.process_time() - cpu_start
                return result
            send(job, result, to_battle(job.rumble, a, b, row, last_ms, uploader), now)


def run_load(
    ladder: Ladder, rumble: RumbleSettings, port: int, args: argparse.Namespace, scenario: str = "ladder"
) -> list[ClientResult]:
    """Run the client processes for warm-up plus measured seconds, with a progress bar. Newcomers
    (living and melee) enter evenly spread over the measured window."""
    start_at = time.time() + 1.0
    stop_at = start_at + args.warmup + args.seconds
    count = args.newcomers if scenario != "ladder" else 0
    newcomers = tuple(f"bench.Newcomer{k:03d} 1.0" for k in range(count))
    melee_bots = getattr(args, "melee_bots", 0)  # other benchmarks (bench_exports.py) run the ladder scenario
    entry_at = tuple(start_at + args.warmup + args.seconds * k / max(1, count) for k in range(count))
    jobs = [
        ClientJob(ladder, rumble, port, args.seed, index, start_at, stop_at, scenario, newcomers, entry_at, melee_bots)
        for index in range(args.clients)
    ]
    with multiprocessing.Pool(args.clients) as pool:
        pending = pool.map_async(run_client, jobs)
        with tqdm(
            total=round(stop_at - time.time()),
            desc=f"{scenario} load ({args.clients} clients)",
            bar_format="{l_bar}{bar}| {n}/{total} s",
        ) as bar:
            while not pending.ready():
                pending.wait(1.0)
                bar.n = min(bar.total, round(bar.total - (stop_at - time.time())))
                bar.refresh()
        return pending.get()


# --- the bare baseline and the report --------------------------------------------------------


def new_rows(db: Path, skip: int) -> tuple[list[str], list[tuple], list[str]]:
    """The battle-log columns (without id), the rows after the first ``skip``, and the DDL of the
    table and its indexes (not its triggers: the baseline is a bare insert into an indexed table)."""
    conn = sqlite3.connect(db)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(battles)") if row[1] != "id"]
        rows = conn.execute(
            f"SELECT {', '.join(columns)} FROM battles ORDER BY id LIMIT -1 OFFSET ?", (skip,)
        ).fetchall()
        ddl = [
            row[0]
            for row in conn.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'battles' AND type != 'trigger' AND sql IS NOT NULL"
            )
        ]
    finally:
        conn.close()
    return columns, rows, ddl


def bare_insert_rate(path: Path, columns: list[str], rows: list[tuple], ddl: list[str]) -> float:
    """Rows/s of plain sqlite3 inserting ``rows``, one transaction each, WAL, synchronous NORMAL."""
    remove_database(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for statement in ddl:
            conn.execute(statement)
        sql = f"INSERT INTO battles ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        began = time.perf_counter()
        for row in rows:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(sql, row)
            conn.execute("COMMIT")
        return len(rows) / (time.perf_counter() - began)
    finally:
        conn.close()
        remove_database(path)


def verdict(passed: bool) -> str:
    """The target's verdict."""
    return "PASS" if passed else "FAIL"


def load_report(results: list[ClientResult], args: argparse.Namespace) -> tuple[float, float, list[str]]:
    """Print rate, latency and errors of the measured window; return (uploads/s, p99 in ms, errors)."""
    starts = np.concatenate([r.starts for r in results])
    latencies = np.concatenate([r.latencies_ms for r in results])
    accepted = np.concatenate([r.accepted for r in results]).astype(bool)
    measured = starts >= args.warmup
    rate = (accepted & measured).sum() / args.seconds
    windows = max(1, round(args.seconds / 5))
    per_window = np.histogram(
        starts[accepted & measured], bins=windows, range=(args.warmup, args.warmup + args.seconds)
    )[0]
    p50, p99, p999 = np.percentile(latencies[measured], [50, 99, 99.9]) if measured.any() else (np.nan,) * 3
    slowest = latencies[measured].max() if measured.any() else np.nan
    errors = [error for r in results for error in r.errors]
    print(
        f"load          {args.clients} client processes, {measured.sum():,} uploads in {args.seconds:g} s "
        f"(after {(~measured).sum():,} in {args.warmup:g} s of warm-up)"
    )
    print(f"uploads/s     {rate:9.1f}      target >= {TARGET_RATE:.0f}      {verdict(rate >= TARGET_RATE)}")
    print(
        f"  per {args.seconds / windows:g} s      "
        + " ".join(f"{n / (args.seconds / windows):.0f}" for n in per_window)
    )
    print(f"latency p50   {p50:9.2f} ms")
    print(f"latency p99   {p99:9.2f} ms   target < {TARGET_P99_MS:.0f} ms     {verdict(p99 < TARGET_P99_MS)}")
    print(f"  p99.9 {p999:.2f} ms, slowest {slowest:.2f} ms (the server's pauses: a WAL checkpoint's, a lock's)")
    print(f"errors        {len(errors):9d}")
    for error, count in collections.Counter(errors).most_common(10):
        print(f"    {count:7d} x {error}")
    return rate, p99, errors


def cpu_report(
    server_cpu: dict[str, float],
    results: list[ClientResult],
    args: argparse.Namespace,
    waited: dict[str, float] | None = None,
) -> float:
    """Print the CPU the server (in all and by role) and the clients used during the load, against
    the machine's cores, and how long the server's processes waited for a CPU (``waited``, seconds
    by role); return the server's ms of CPU per upload."""
    uploads = max(1, sum(len(r.starts) for r in results))
    client_cpu = sum(r.cpu_seconds for r in results)
    span = args.warmup + args.seconds
    total = sum(server_cpu.values())
    roles = ", ".join(f"{role} {1000 * seconds / uploads:.2f}" for role, seconds in sorted(server_cpu.items()))
    print(
        f"CPU           server {total / span:.2f} cores ({1000 * total / uploads:.2f} ms/upload: {roles}), clients "
        f"{client_cpu / span:.2f} cores ({1000 * client_cpu / uploads:.2f} ms/upload), of {os.cpu_count()} cores"
    )
    if waited is not None:  # runnable but not running: the cores were busy with something else (the clients too)
        roles = ", ".join(f"{role} {seconds / span:.2f}" for role, seconds in sorted(waited.items()))
        print(
            f"CPU waits     server processes waited for a core {sum(waited.values()) / span:.2f} cores' worth "
            f"({roles}; runnable, not running: the cores were busy)"
        )
    return 1000 * total / uploads


def bare_report(run_db: Path, preloaded: int, rate: float, workdir: Path) -> None:
    """Print the bare sqlite3 insert rate of the rows the server logged, and the server's share of it."""
    columns, rows, ddl = new_rows(run_db, preloaded)
    if not rows:
        print("bare sqlite   n/a (the server logged no rows)")
        return
    bare = bare_insert_rate(workdir / f"bare-{os.getpid()}.db", columns, rows, ddl)
    print(
        f"bare sqlite   {bare:9.1f} inserts/s of the same {len(rows):,} rows, one transaction each "
        f"(WAL, synchronous NORMAL); server/bare = {rate / bare:.3f}"
    )


def consistency_report(run_db: Path, preloaded: int, results: list[ClientResult]) -> bool:
    """Check that the log holds the preloaded battles plus one per OK answer; print and return the result."""
    db = store.connect(run_db, migrate=False)
    try:
        logged = battle_log.count_battles(db)
    finally:
        db.close()
    accepted = sum(sum(r.accepted) for r in results)
    consistent = logged == preloaded + accepted
    print(
        f"log           {logged:,} battles = {preloaded:,} preloaded + {accepted:,} OK answers (warm-up included)? "
        f"{'yes' if consistent else 'NO: ' + f'{logged - preloaded - accepted:+,}'}"
    )
    return consistent


# --- main ------------------------------------------------------------------------------------


def at_least(minimum: float, kind: type = int) -> Callable[[str], float]:
    """An argparse type: a number of type ``kind`` no smaller than ``minimum``."""

    def parse(text: str) -> float:
        value = kind(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {text}")
        return value

    return parse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Builds a complete 1,200-bot roborumble, serves it with "
        "`rumble serve` and uploads to it from concurrent client processes; prints uploads/s, p50/p99 latency, "
        "errors, the bare sqlite3 insert rate and a log consistency check. Exit status 1 if any upload failed "
        "or the log does not match the answers (a missed target is reported, not an error).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="LiteRumble snapshot folder holding particip1v1.txt and ratings_roborumble.txt (read, never copied)",
    )
    parser.add_argument(
        "--bots",
        type=at_least(2),
        default=1200,
        help="bots in the ladder: a seeded sample of the snapshot if it has more, else all of it plus synthesized bots at APS 50",
    )
    parser.add_argument("--battles-per-pairing", type=at_least(1), default=1, help="preloaded battles of every pairing")
    parser.add_argument("--seed", type=int, default=2023, help="seed of every random choice (ladder, scores, uploads)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path("/tmp/rumble-bench"),
        help="where the ladder database is cached (keyed by --bots, --battles-per-pairing, --seed, the data files, "
        "migrations/*.sql and this script) and the run's copy, server log and bare database go",
    )
    parser.add_argument("--rebuild-data", action="store_true", help="build the ladder database even if it is cached")
    parser.add_argument(
        "--workers",
        type=at_least(1),
        default=min(os.cpu_count() or 2, 8),
        help="gunicorn workers of `rumble serve` (its default: one per CPU core)",
    )
    parser.add_argument(
        "--clients", type=at_least(1), default=8, help="concurrent client processes, one request in flight each"
    )
    parser.add_argument(
        "--seconds", type=at_least(1.0, float), default=10.0, help="measured duration of the load, per run"
    )
    parser.add_argument(
        "--rounds",
        type=at_least(1),
        default=3,
        help="runs of each server per scenario, alternating (bare first in odd rounds, rumble first in even ones); "
        "the summary takes the medians",
    )
    parser.add_argument(
        "--scenario",
        nargs="+",
        choices=("ladder", "living", "melee"),
        default=["living", "melee"],
        help="scenarios to run, each against the bare HTTP stack and then the real server",
    )
    parser.add_argument(
        "--newcomers", type=at_least(0), default=10, help="new bots entering during a living or melee run"
    )
    parser.add_argument(
        "--bare-worker-class",
        choices=("gevent", "sync"),
        default="gevent",
        help="the bare stack's gunicorn worker class: gevent (rumble serve's) or sync (gunicorn's default)",
    )
    parser.add_argument(
        "--melee-bots", type=at_least(MELEE_FIELD), default=100, help="ladder bots that fight in the melee scenario"
    )
    parser.add_argument(
        "--warmup",
        type=at_least(0.0, float),
        default=2.0,
        help="seconds of load before the measured window (not in the figures; in the consistency check)",
    )
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Run:
    """One server's figures under one scenario's load."""

    rate: float
    p99_ms: float
    cpu_ms: float  # server CPU per upload
    ok: bool  # no failed upload (and, for the real server, a consistent log)


def measure(
    start: Callable[[int, int, Path], subprocess.Popen],
    label: str,
    ladder: Ladder,
    rumble: RumbleSettings,
    args,
    processes: int,
) -> tuple[list[ClientResult], dict[str, float], dict[str, float] | None]:
    """Start a server with ``start(port, workers, log)`` (``processes`` in all, its own included),
    run the scenario's load, stop it: the clients' results, the server's CPU seconds by role
    (``process_roles``) and the seconds its processes waited for a CPU, by role (None if the kernel
    does not say)."""
    port, log = free_port(), args.workdir / f"{label}-{os.getpid()}.log"
    server = start(port, args.workers, log)
    print(f"server        {label}, {args.workers} workers on 127.0.0.1:{port} (output in {log})")
    try:
        # The server answers once one worker is up; the others' CPU counts only once they are there too.
        pids = whole_tree(server.pid, processes, log)
        before = {pid: cpu_seconds([pid]) for pid in pids}
        waits_before = run_queue_waits(pids)
        results = run_load(ladder, rumble, port, args, args.current)
        waits_after = run_queue_waits(pids)
        roles = process_roles(server.pid, pids, log)
        spent: dict[str, float] = {}
        for pid in pids:
            spent[roles[pid]] = spent.get(roles[pid], 0.0) + cpu_seconds([pid]) - before[pid]
        if waits_before is None or waits_after is None:
            return results, spent, None
        waited: dict[str, float] = {}
        for pid in pids:
            waited[roles[pid]] = waited.get(roles[pid], 0.0) + waited_between(waits_before, waits_after, pid)
        return results, spent, waited
    finally:
        stop_server(server)


def process_roles(master: int, pids: list[int], log: Path) -> dict[int, str]:
    """Each server process's role: ``master``, ``workers`` (the pids gunicorn logs as booting
    workers) or, for `rumble serve`, ``writer`` (its writer process, rumble.server.single_writer) and
    ``schedule`` (its batch schedule, ``rumble schedule``)."""
    booted = {int(pid) for pid in re.findall(r"Booting worker with pid: (\d+)", log.read_text(errors="replace"))}
    roles = {}
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            command = b""
        writer = b"single_writer" in command
        roles[pid] = "master" if pid == master else "workers" if pid in booted else "writer" if writer else "schedule"
    return roles


def run_scenario(scenario: str, cached: Path, ladder: Ladder, rumbles: dict, args) -> list[tuple[Run, Run]]:
    """The scenario's load against the bare stack and against `rumble serve` on a fresh copy, in
    --rounds rounds of one run each, in the order bare, rumble, then rumble, bare, and so on (so a
    drift of the machine's speed during the rounds weighs on both alike): each round's (bare, rumble)."""
    args.current = scenario
    rumble = rumbles[MELEE_GAME if scenario == "melee" else GAME]
    print(f"\n=== {scenario}: {rumble.name}, " + scenario_words(scenario, args))
    rounds = []
    for k in range(args.rounds):
        if args.rounds > 1:
            print(f"\n--- round {k + 1} of {args.rounds}")
        if k % 2 == 0:
            bare = bare_run(ladder, rumble, args)
            real = rumble_run(cached, ladder, rumble, args)
        else:
            real = rumble_run(cached, ladder, rumble, args)
            bare = bare_run(ladder, rumble, args)
        rounds.append((bare, real))
    return rounds


def bare_run(ladder: Ladder, rumble: RumbleSettings, args) -> Run:
    """One run of the load against the bare HTTP stack."""
    bare = partial(start_bare, worker_class=args.bare_worker_class)
    # its workers and its master
    results, cpu, waited = measure(
        bare, f"bare-{args.bare_worker_class}", ladder, rumble, args, processes=args.workers + 1
    )
    rate, p99, errors = load_report(results, args)
    return Run(rate, p99, cpu_report(cpu, results, args, waited), not errors)


def rumble_run(cached: Path, ladder: Ladder, rumble: RumbleSettings, args) -> Run:
    """One run of the load against `rumble serve` on a fresh copy of the cached ladder."""
    run_db = args.workdir / f"run-{os.getpid()}.db"
    shutil.copyfile(cached, run_db)
    try:
        preloaded = ladder_report(run_db, ladder, GAME)
        # The melee scenario fills an empty meleerumble with --melee-bots ladder bots and the
        # newcomers within its first seconds: an operator setting a rumble up, not the strangers'
        # flood the rumble-wide bound on new bots an hour is for (newbot_flood.py measures that).
        melee = {"RUMBLE_NEW_BOTS_PER_HOUR_PER_RUMBLE": "1000000"} if args.current == "melee" else None
        results, cpu, waited = measure(  # its master, the writer process and the workers
            partial(start_server, run_db, environment=melee), "rumble", ladder, rumble, args, processes=args.workers + 2
        )
        rate, p99, errors = load_report(results, args)
        cpu_ms = cpu_report(cpu, results, args, waited)
        bare_report(run_db, preloaded, rate, args.workdir)
        consistent = consistency_report(run_db, preloaded, results)
    finally:
        remove_database(run_db)
    return Run(rate, p99, cpu_ms, consistent and not errors)


def scenario_words(scenario: str, args) -> str:
    """What the scenario's clients upload, in words."""
    if scenario == "ladder":
        return "random pairs of the complete ladder"
    newcomers = f"{args.newcomers} newcomers entering during the measured {args.seconds:g} s"
    if scenario == "living":
        return f"random pairs of the complete ladder, {newcomers} (each then in {NEWCOMER_SHARE:.0%} of the uploads)"
    return f"battles of {MELEE_FIELD} of {args.melee_bots} ladder bots and the {newcomers}, 45 pair uploads each"


def summary(runs: dict[str, list[tuple[Run, Run]]]) -> None:
    """One line per scenario: the real server against the bare stack (the medians of the rounds'
    uploads/s, rumble's worst p99, the medians of the server CPU per upload), the goal's verdict,
    and each round's own ratio."""
    print(f"\n{'scenario':10} {'bare/s':>8} {'rumble/s':>9} {'rumble/bare':>12} {'p99 ms':>8} {'CPU ms/upload':>14}")
    for scenario, rounds in runs.items():
        bare = float(np.median([b.rate for b, _ in rounds]))
        real = float(np.median([r.rate for _, r in rounds]))
        ratio = real / bare if bare else float("nan")
        p99 = max(r.p99_ms for _, r in rounds)
        passed = ratio >= RATIO_GOAL and p99 < TARGET_P99_MS
        print(
            f"{scenario:10} {bare:8.0f} {real:9.0f} {ratio:12.3f} {p99:8.1f} "
            f"{float(np.median([r.cpu_ms for _, r in rounds])):6.2f} "
            f"(bare {float(np.median([b.cpu_ms for b, _ in rounds])):.2f})   "
            f"goal >= {RATIO_GOAL} with p99 < {TARGET_P99_MS:.0f} ms: {verdict(passed)}"
        )
        if len(rounds) > 1:
            each = ", ".join(f"{r.rate:.0f}/{b.rate:.0f} = {r.rate / b.rate:.3f}" for b, r in rounds if b.rate)
            print(f"{'':10} each round, rumble/bare: {each}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rumbles = load_rumbles(settings.load()["RUMBLES_FILE"])
    rumble = rumbles[GAME]
    print(f"rumble        {rumble.name}: {rumble.rounds} rounds, field {rumble.field}, client {CLIENT}")
    ladder = load_ladder(args.data, args.bots, args.seed)
    cached = ladder_database(args, ladder, rumble)
    runs = {scenario: run_scenario(scenario, cached, ladder, rumbles, args) for scenario in args.scenario}
    summary(runs)
    return 0 if all(bare.ok and real.ok for rounds in runs.values() for bare, real in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
