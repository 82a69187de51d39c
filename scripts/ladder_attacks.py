"""RemoveOldParticipant under attack: strangers who upload once, and a flood of refused removals, on `rumble serve`.

1. Copies bench_upload.py's cached ladder (1,200 bots by default, built the first time; ``--bots 200``
   for a quick run), vouches with the CLI (``rumble admin vouch``) for one operator party (uploader
   ``operator`` from 127.0.0.1) and for the parties of attack 2's upload clients (``bench-K`` from
   127.0.0.1), and computes the standings (``rumble admin standings``): the ladder has established
   uploaders, as a running ladder has its operator's and its regular clients (a stranger's battles
   beyond STRANGER_BATTLES_PER_BOT_PER_DAY of a bot are held for review, rumble/strangers.py).
2. Starts ``python -m rumble serve`` on it (``--workers``, 2 by default) on a free loopback port.
3. Attack 1, one upload buys nothing: from ``--strangers`` distinct loopback addresses (127.10.K.1,
   the client socket bound to it), each uploads one accepted battle of two ladder bots as
   ``stranger-K``, then POSTs RemoveOldParticipant for each of the ``--top`` bots by APS (from
   /RatingsFile); one more address (127.11.0.1) does the same under the operator's own name. Prints
   every distinct answer and the retirements (goal: none), and checks the bots are still in
   /RatingsFile. Then the operator (an upload as ``operator`` from 127.0.0.1) retires one of them,
   which must succeed, and an upload of it revives it.
4. Attack 3, one forger on the ladder: a party never vouched for (``forger`` from 127.12.0.1) uploads,
   as fast as they are answered, a battle of the bot in the middle of /RatingsFile against each
   other bot, every one won by the target with 85 % of the score. Prints the answers by kind
   (accepted, held for review), the bot's APS and rank before and after, and the README's bound
   (STRANGER_BATTLES_PER_BOT_PER_DAY × 100 / its pairings).
5. Attack 2, a flood of refused removals: ``--clients`` processes upload for ``--seconds`` (after
   ``--warmup``), one request per connection with the real client's headers, alone; and the same
   with ``--flood-threads`` threads (in ``--flood-processes`` processes, apart from the uploads'
   clients) POSTing RemoveOldParticipant as fast as they can (or ``--flood-rate`` requests/s in all)
   from ``--flood-addresses`` loopback addresses that never uploaded, and, in a second variant, from
   as many that each uploaded one accepted battle first. The runs go: alone, flood, alone, flood (uploaded once), alone (times
   ``--rounds``), so that a drift of the machine's speed shows. A variant's ratio is the median of
   its runs' uploads/s over the median of the runs alone (one disturbed run moves it little); each
   flood run's ratio to the mean of the runs alone just before and after it shows the drift. Prints
   uploads/s, the ratio (goal: at least RATIO_GOAL), the flood's requests/s and answers by kind, the
   CPU used and the machine's load average (other processes share its cores), the rows of
   removal_requests (must not grow) and, once the server has stopped, the refusals it counted
   (each worker saves its counts at most every 30 s, so the last ones are not saved).
6. PASS if no stranger retired anything, the operator could, the forger moved its bot within the
   bound, every upload of attacks 1 and 2 was answered as accepted (its last line exactly ``OK.
   <first> vs <second> received for roborumble``), removal_requests did not grow under the flood
   and each flood's ratio is at least RATIO_GOAL; exit status 1 otherwise.

Only loopback addresses; every loop is bounded in time and count; the server is stopped at the end,
also on errors. Run with the project's venv: ``.venv/bin/python scripts/ladder_attacks.py --help``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import multiprocessing
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.client import HTTPConnection
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload as bench  # noqa: E402  (the ladder, the server and the upload bodies)
import hostile_mix as hostile  # noqa: E402  (the real client's headers and the answer reader)

from rumble import settings  # noqa: E402
from rumble.protocol.games import RumbleSettings, load_rumbles  # noqa: E402
from rumble.protocol.names import to_key  # noqa: E402
from rumble.protocol.upload import format_upload  # noqa: E402
from tests.e2e.nginx_support import running_nginx  # noqa: E402  (the README's nginx site, as the proxy tests run it)

GAME = bench.GAME
RATIO_GOAL = 0.8  # uploads/s under a flood of refused removals over uploads/s alone
OPERATOR, OPERATOR_ADDRESS = "operator", "127.0.0.1"  # the vouched-for party: operator@127.0.0.0/24
IMPERSONATOR_ADDRESS = "127.11.0.1"  # the operator's name typed from another network: another party
FORGER, FORGER_ADDRESS = "forger", "127.12.0.1"  # attack 3's party: never vouched for, never established
FORGED_SHARE = 0.85  # of the score, for the forger's target in every battle
FLOOD_NETWORKS = {"never uploaded": "127.20", "uploaded once": "127.30"}  # the flood's two variants
ALONE = "alone"
UPLOAD_PATH, REMOVE_PATH = "/UploadedResults", "/RemoveOldParticipant"
MAX_REQUESTS = 1_000_000  # per load process or flood thread and run: a bound besides the stop time
PASSED = ("retired", "already retired")  # the answers of a removal that passed every check
# What each refusal's answer says (rumble/web/client.py, _decide_removal), as the counter's reasons.
REFUSALS = (
    ("not an uploader", "uploaded no accepted battles"),
    ("not established", "is not established"),
    ("rate limited", "RemoveOldParticipant requests from your address"),
    ("unknown bot", "OK. ERROR: no bot"),
)


# --- requests --------------------------------------------------------------------------------


PROXY_REFILL_S = 5.0  # the README's nginx takes 5 removals a second in all, with a burst of 20


# Linux's IP_BIND_ADDRESS_NO_PORT (linux/in.h; Python names it from 3.12 on): a socket bound to an
# address before it connects gets its port at connect time, where a port in TIME_WAIT towards
# another peer (or, on loopback, the same one) can be taken again. Bound with a port at bind time,
# the tens of thousands of connections of a run fill the port range for a minute, and each bind
# then searches it: the upload clients' CPU grew fourfold and their rate fell as much from one run
# to the next, whatever the server did.
BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


def post(port: int, path: str, body: bytes, source: str) -> tuple[int, str]:
    """POST ``body`` to ``path`` on a new connection from the loopback address ``source`` (the socket
    bound to it before connecting: the server sees it as the client's address), with the real
    client's headers and its 10 s timeout; (status, answer text)."""
    began = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.IPPROTO_IP, BIND_ADDRESS_NO_PORT, 1)
        sock.settimeout(hostile.CLIENT_TIMEOUT_S)
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{hostile.JAVA_HEADERS}"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode("ascii") + body)
        return hostile.read_response(sock, began)


def get_text(port: int, path: str) -> str:
    """The body of ``GET path`` (RuntimeError unless 200)."""
    connection = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        text = response.read().decode("utf-8", "replace")
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}")
    return text


def removal_body(key: str) -> bytes:
    """The real client's RemoveOldParticipant body for the bot whose ratings-file key is ``key``."""
    return f"version=1&game={GAME}&name={key}&dummy=NA\n".encode()


def battle_upload(
    rumble: RumbleSettings, ladder: bench.Ladder, a: int, b: int, rng: np.random.Generator, uploader: str, ms: int
) -> tuple[bytes, str]:
    """The real client's upload body of a new battle of ladder bots ``a`` and ``b`` at client time ``ms``,
    and the exact last line of the answer that accepts it."""
    figures = bench.sample_figures(rng, ladder.strength[[a]] - ladder.strength[[b]], rumble.rounds).tolist()[0]
    battle = bench.to_battle(rumble, ladder.names[a], ladder.names[b], figures, ms, uploader)
    return format_upload(battle), f"OK. {battle.first.name} vs {battle.second.name} received for {GAME}"


def random_pair(ladder: bench.Ladder, rng: np.random.Generator) -> tuple[int, int]:
    """Two distinct ladder bots."""
    a = int(rng.integers(len(ladder.names)))
    return a, (a + int(rng.integers(1, len(ladder.names)))) % len(ladder.names)


def upload_error(status: int, text: str, expected: str) -> str | None:
    """Why an upload's answer is not the exact acceptance ``expected``, or None if it is."""
    last = text.splitlines()[-1] if text.strip() else ""
    if status == 200 and last == expected:
        return None
    return f"HTTP {status}: {text.strip()[-100:]!r}"


def upload_once(
    port: int, rumble: RumbleSettings, ladder: bench.Ladder, rng: np.random.Generator, source: str, uploader: str
) -> str | None:
    """One accepted upload of a random pair from ``source`` as ``uploader``: None, or why it was not accepted."""
    body, expected = battle_upload(rumble, ladder, *random_pair(ladder, rng), rng, uploader, int(time.time() * 1000))
    try:
        return upload_error(*post(port, UPLOAD_PATH, body, source), expected)
    except OSError as error:
        return f"{type(error).__name__}: {error}"


def answer_kind(status: int, text: str) -> str:
    """What a RemoveOldParticipant answer says, in a word: a refusal's reason, or that it passed."""
    line = text.strip()
    if status != 200:
        return f"HTTP {status}"
    if line.startswith("OK. ERROR"):
        return next((kind for kind, marker in REFUSALS if marker in line), "other refusal")
    if line.endswith(f" was already retired from {GAME}"):
        return "already retired"
    if line.endswith(f" retired from {GAME}"):
        return "retired"
    return f"unexpected: {line[:60]!r}"


def ratings(port: int) -> dict[str, float]:
    """Ratings-file key -> APS of every active bot (/RatingsFile, as the client reads it)."""
    found = {}
    for line in get_text(port, f"/RatingsFile?version=1&game={GAME}").splitlines():
        key, _, rest = line.partition("=")
        if rest:
            found[key] = float(rest.split(",", 1)[0])
    return found


# --- the database, read beside the server ----------------------------------------------------


def read_db(path: Path, sql: str) -> int:
    """One number from the run's database, read-only (WAL: the server keeps writing meanwhile)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql).fetchone()[0] or 0
    finally:
        conn.close()


def removal_rows(path: Path) -> int:
    return read_db(path, "SELECT count(*) FROM removal_requests")


def saved_refusals(path: Path) -> int:
    return read_db(path, "SELECT sum(requests) FROM removal_refusals")


def logged_battles(path: Path) -> int:
    return read_db(path, "SELECT count(*) FROM battles")


def cli(db: Path, *arguments: str) -> str:
    """``python -m rumble admin ARGUMENTS --db DB`` (no RUMBLE_ variables from this shell); its output."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RUMBLE_")}
    done = subprocess.run(
        [sys.executable, "-m", "rumble", "admin", arguments[0], "--db", str(db), *arguments[1:]],
        cwd=bench.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"rumble admin {arguments[0]} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


# --- attack 1: one upload buys nothing -------------------------------------------------------


def attack_one(port: int, ladder: bench.Ladder, rumble: RumbleSettings, args: argparse.Namespace, db: Path) -> dict:
    """Strangers who each uploaded one accepted battle ask to retire the top bots; then the operator does."""
    rng = np.random.default_rng([args.seed, 1])
    standing = ratings(port)
    top = sorted(standing, key=lambda key: -standing[key])[: args.top]
    names = {to_key(name): name for name in ladder.names}
    print(f"\n=== attack 1: one upload buys nothing; the top {args.top} by APS: {', '.join(top)}")
    askers = [(f"127.10.{k}.1", f"stranger-{k}") for k in range(args.strangers)]
    askers.append((IMPERSONATOR_ADDRESS, OPERATOR))  # the operator's name, from another network
    answers: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    upload_errors = []
    for source, uploader in askers:
        error = upload_once(port, rumble, ladder, rng, source, uploader)
        if error:
            upload_errors.append(f"{uploader} from {source}: {error}")
        for key in top:
            status, text = post(port, REMOVE_PATH, removal_body(key), source)
            answers[text.strip()] += 1
            kinds[answer_kind(status, text)] += 1
    passed = sum(kinds[kind] for kind in PASSED)
    still = ratings(port)
    missing = [key for key in top if key not in still]
    print(
        f"strangers     {args.strangers} addresses (127.10.K.1) as stranger-K and 1 ({IMPERSONATOR_ADDRESS}) as "
        f"{OPERATOR!r}: {len(askers) - len(upload_errors)} of {len(askers)} uploads accepted, then "
        f"{sum(kinds.values())} removals asked"
    )
    print(f"answers       {len(answers)} distinct (the party differs); by kind: {dict(kinds)}")
    for text, count in sorted(answers.items()):
        print(f"  {count:3d} x {text}")
    for error in upload_errors:
        print(f"  upload not accepted: {error}")
    print(
        f"retired       {passed} by strangers (goal 0) {bench.verdict(passed == 0)}; the top {args.top} still in "
        f"/RatingsFile: {args.top - len(missing)} of {args.top} {bench.verdict(not missing)}"
    )
    # The vouched-for operator: its address's newest accepted battle must be its own.
    victim = top[-1]
    if args.proxy:  # the strangers' removals spent the proxy's burst for all removals: let it refill
        time.sleep(PROXY_REFILL_S)
    error = upload_once(port, rumble, ladder, rng, OPERATOR_ADDRESS, OPERATOR)
    status, text = post(port, REMOVE_PATH, removal_body(victim), OPERATOR_ADDRESS)
    expected = f"OK. {names[victim]} retired from {GAME}"
    operator_ok = error is None and status == 200 and text.strip() == expected
    gone = victim not in ratings(port)
    print(f"operator      {OPERATOR} from {OPERATOR_ADDRESS} uploads, then asks: {text.strip()!r}")
    print(f"              gone from /RatingsFile: {gone}; {bench.verdict(operator_ok and gone)}")
    # Its next upload revives it (rumble.ingest.apply.activate), so attack 2 runs on the whole ladder.
    other = next(i for i, name in enumerate(ladder.names) if to_key(name) != victim)
    body, accept = battle_upload(
        rumble, ladder, ladder.names.index(names[victim]), other, rng, OPERATOR, int(time.time() * 1000)
    )
    revive_error = upload_error(*post(port, UPLOAD_PATH, body, OPERATOR_ADDRESS), accept)
    back = victim in ratings(port)
    print(f"              revived by its next upload: {back}" + (f" ({revive_error})" if revive_error else ""))
    return {
        "top": top,
        "askers": len(askers),
        "uploads_not_accepted": upload_errors + [e for e in (error, revive_error) if e],
        "answers": dict(answers),
        "kinds": dict(kinds),
        "retired_by_strangers": passed,
        "top_missing": missing,
        "operator_answer": text.strip(),
        "operator_retired": operator_ok and gone,
        "revived": back,
        "removal_rows": removal_rows(db),
    }


# --- attack 3: one forger on the ladder ------------------------------------------------------


def forged_upload(
    rumble: RumbleSettings, ladder: bench.Ladder, target: int, other: int, rng: np.random.Generator, ms: int
) -> bytes:
    """A battle of ``target`` against ``other`` in which the target took FORGED_SHARE of the score."""
    total = int(rng.integers(3000, 8000))
    won = round(total * FORGED_SHARE)
    firsts = round(rumble.rounds * 0.9)
    figures = [won, round(won * 0.7), firsts, total - won, round((total - won) * 0.7), rumble.rounds - firsts]
    return format_upload(bench.to_battle(rumble, ladder.names[target], ladder.names[other], figures, ms, FORGER))


def attack_three(port: int, ladder: bench.Ladder, rumble: RumbleSettings, args: argparse.Namespace) -> dict:
    """One party that is not established forges a battle of one bot against every other, each won by
    FORGED_SHARE, as fast as they are answered: how far does the bot move?"""
    rng = np.random.default_rng([args.seed, 3])
    before = ratings(port)
    order = sorted(before, key=lambda key: -before[key])
    names = {to_key(name): name for name in ladder.names}
    key = order[len(order) // 2]  # the middle of the ladder: the most room to climb
    target = ladder.names.index(names[key])
    bound = settings.load()["STRANGER_BATTLES_PER_BOT_PER_DAY"]
    print(
        f"\n=== attack 3: one forger; {key} at rank {order.index(key) + 1} of {len(order)}, APS {before[key]:.2f}; "
        f"{FORGER!r} from {FORGER_ADDRESS} uploads it against each of the {len(order) - 1} others at "
        f"{FORGED_SHARE:.0%} for it"
    )
    kinds: collections.Counter[str] = collections.Counter()
    began = time.monotonic()
    ms = int(time.time() * 1000) - len(order)
    for other in range(len(ladder.names)):
        if other == target or to_key(ladder.names[other]) not in before:
            continue
        status, text = post(port, UPLOAD_PATH, forged_upload(rumble, ladder, target, other, rng, ms), FORGER_ADDRESS)
        ms += 1
        last = text.strip().splitlines()[-1] if text.strip() else ""
        if status == 200 and ", held for review: " in last:
            kinds["held for review"] += 1
        elif status == 200 and last.endswith(f" received for {GAME}") and last.startswith("OK. "):
            kinds["accepted"] += 1
        else:
            kinds[f"HTTP {status}: {last[:80]!r}"] += 1
    spent = time.monotonic() - began
    after = ratings(port)
    rank_after = sorted(after, key=lambda name: -after[name]).index(key) + 1
    moved = after[key] - before[key]
    limit = bound * 100 / (len(order) - 1)  # rumble/ingest/strangers.py: each counted battle moves one pairing
    print(f"uploads       {sum(kinds.values())} in {spent:.1f} s: {dict(kinds)}")
    print(
        f"moved         APS {before[key]:.2f} -> {after[key]:.2f} ({moved:+.2f}), rank {order.index(key) + 1} -> "
        f"{rank_after}; the bound {bound} battles x 100 / {len(order) - 1} pairings = {limit:.2f} "
        f"{bench.verdict(moved <= limit)}"
    )
    return {
        "target": key,
        "aps": [before[key], after[key]],
        "rank": [order.index(key) + 1, rank_after],
        "answers": dict(kinds),
        "seconds": spent,
        "bound": limit,
        "within_bound": moved <= limit and kinds["accepted"] <= bound,
    }


# --- attack 2: a flood of refused removals ---------------------------------------------------


@dataclass(frozen=True)
class Window:
    """When a run's processes start, stop starting requests, and from when on they are measured."""

    start_at: float  # time.time()
    measure_from: float
    stop_at: float

    def measured(self, began: float) -> bool:
        return self.measure_from <= began < self.stop_at


@dataclass(frozen=True)
class UploadJob:
    ladder: bench.Ladder
    rumble: RumbleSettings
    port: int
    seed: int
    index: int
    window: Window


@dataclass(frozen=True)
class FloodJob:
    port: int
    addresses: tuple[str, ...]  # this process's addresses, spread over its threads
    keys: tuple[str, ...]  # the bots it asks to retire
    threads: int
    window: Window
    interval: float = 0.0  # seconds between one thread's requests (0: as fast as the server answers)
    first: int = 0  # the flood's number of this process's first thread: the threads' schedules are staggered
    total: int = 1  # the flood's threads


@dataclass
class Tally:
    """What one process saw: requests started in the measured window, by outcome; latencies there."""

    measured: collections.Counter = field(default_factory=collections.Counter)
    everything: collections.Counter = field(default_factory=collections.Counter)  # warm-up included
    latencies_ms: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0


def upload_client(job: UploadJob) -> Tally:
    """One upload process: random pairs of the ladder, one request per connection, until the stop time."""
    rng = np.random.default_rng([job.seed, job.index, int(job.window.start_at)])
    tally, last_ms, uploader = Tally(), 0, f"bench-{job.index}"
    time.sleep(max(0.0, job.window.start_at - time.time()))
    cpu = time.process_time()
    for _ in range(MAX_REQUESTS):
        began = time.time()
        if began >= job.window.stop_at:
            break
        last_ms = max(int(began * 1000), last_ms + 1)  # unique per uploader: never a duplicate
        body, expected = battle_upload(job.rumble, job.ladder, *random_pair(job.ladder, rng), rng, uploader, last_ms)
        clock = time.perf_counter()
        try:
            outcome = upload_error(*post(job.port, UPLOAD_PATH, body, OPERATOR_ADDRESS), expected) or "accepted"
        except OSError as error:
            outcome = f"{type(error).__name__}: {error}"
        tally.everything[outcome] += 1
        if job.window.measured(began):
            tally.measured[outcome] += 1
            tally.latencies_ms.append((time.perf_counter() - clock) * 1000)
    tally.cpu_seconds = time.process_time() - cpu
    return tally


def flood_process(job: FloodJob) -> Tally:
    """One flood process: ``job.threads`` threads POSTing RemoveOldParticipant, each from its own
    addresses in turn, as fast as the server answers (or one every ``job.interval`` seconds), until
    the stop time."""
    tallies = [Tally() for _ in range(job.threads)]

    def flood(k: int) -> None:
        mine, tally = job.addresses[k :: job.threads] or job.addresses, tallies[k]
        stagger = job.interval * (job.first + k) / job.total
        time.sleep(max(0.0, job.window.start_at - time.time()))
        for n in range(MAX_REQUESTS):
            if job.interval:  # on a fixed schedule: a thread that fell behind catches up
                time.sleep(max(0.0, job.window.start_at + stagger + n * job.interval - time.time()))
            began = time.time()
            if began >= job.window.stop_at:
                return
            body = removal_body(job.keys[n % len(job.keys)])
            try:
                kind = answer_kind(*post(job.port, REMOVE_PATH, body, mine[n % len(mine)]))
            except OSError as error:
                kind = type(error).__name__
            tally.everything[kind] += 1
            if job.window.measured(began):
                tally.measured[kind] += 1

    cpu = time.process_time()
    threads = [threading.Thread(target=flood, args=(k,), daemon=True) for k in range(job.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, job.window.stop_at - time.time()) + 2 * hostile.CLIENT_TIMEOUT_S)
    merged = Tally(cpu_seconds=time.process_time() - cpu)
    for tally in tallies:
        merged.measured.update(tally.measured)
        merged.everything.update(tally.everything)
    return merged


def flood_addresses(variant: str, count: int) -> list[str]:
    """``count`` distinct loopback addresses of a flood variant: 127.N.x.y, 200 per /24."""
    return [f"{FLOOD_NETWORKS[variant]}.{i // 200}.{i % 200 + 1}" for i in range(count)]


def prime_addresses(port: int, ladder: bench.Ladder, rumble: RumbleSettings, addresses: list[str], seed: int) -> list:
    """Each address uploads one accepted battle (as ``flood-I``), eight at a time: the errors."""
    rng = np.random.default_rng([seed, 2])
    pairs = [(address, f"flood-{i}", int(rng.integers(1 << 30))) for i, address in enumerate(addresses)]

    def one(item: tuple[str, str, int]) -> str | None:
        address, uploader, own_seed = item
        return upload_once(port, rumble, ladder, np.random.default_rng(own_seed), address, uploader)

    with ThreadPoolExecutor(8) as pool:
        return [error for error in pool.map(one, pairs, timeout=600) if error]


def measured_run(
    variant: str,
    port: int,
    ladder: bench.Ladder,
    rumble: RumbleSettings,
    keys: list[str],
    args: argparse.Namespace,
    server_pid: int,
    db: Path,
) -> dict:
    """One run: the upload clients, with the flood of ``variant`` beside them unless it is ALONE."""
    start_at = time.time() + 1.0  # the processes are forked and waiting by then
    window = Window(start_at, start_at + args.warmup, start_at + args.warmup + args.seconds)
    uploads = [UploadJob(ladder, rumble, port, args.seed, k, window) for k in range(args.clients)]
    floods = []
    if variant != ALONE:
        addresses = flood_addresses(variant, args.flood_addresses)
        per = -(-args.flood_threads // args.flood_processes)
        interval = args.flood_threads / args.flood_rate if args.flood_rate else 0.0
        for k in range(args.flood_processes):
            threads = min(per, args.flood_threads - k * per)
            if threads > 0:
                mine = tuple(addresses[k :: args.flood_processes])
                job = FloodJob(port, mine, tuple(keys), threads, window, interval, k * per, args.flood_threads)
                floods.append(job)
    rows_before, battles_before = removal_rows(db), logged_battles(db)
    server = bench.process_tree(server_pid)
    cpu_before = bench.cpu_seconds(server)
    with multiprocessing.Pool(len(uploads) + len(floods)) as pool:
        pending_uploads = [pool.apply_async(upload_client, (job,)) for job in uploads]
        pending_floods = [pool.apply_async(flood_process, (job,)) for job in floods]
        wait = window.stop_at - time.time() + 3 * hostile.CLIENT_TIMEOUT_S
        upload_tallies = [p.get(timeout=max(1.0, wait)) for p in pending_uploads]
        flood_tallies = [p.get(timeout=max(1.0, wait)) for p in pending_floods]
    cpu_server = bench.cpu_seconds(server) - cpu_before
    span = window.stop_at - window.start_at
    measured = sum((t.measured for t in upload_tallies), collections.Counter())
    everything = sum((t.everything for t in upload_tallies), collections.Counter())
    flood = sum((t.measured for t in flood_tallies), collections.Counter())
    flood_all = sum((t.everything for t in flood_tallies), collections.Counter())
    latencies = [ms for t in upload_tallies for ms in t.latencies_ms]
    p50, p99 = np.percentile(latencies, [50, 99]) if latencies else (np.nan, np.nan)
    return {
        "variant": variant,
        "uploads_per_s": measured["accepted"] / args.seconds,
        "p50_ms": float(p50),
        "p99_ms": float(p99),
        "upload_errors": {k: v for k, v in everything.items() if k != "accepted"},
        "accepted": everything["accepted"],  # warm-up included: what the log must have gained
        "log_grew": logged_battles(db) - battles_before,
        "flood_per_s": sum(flood.values()) / args.seconds,
        "flood_answers": dict(flood),
        "flood_answers_all": dict(flood_all),  # warm-up included: what the server answered (and counted)
        "flood_passed": sum(flood_all[kind] for kind in PASSED),
        "removal_rows": (rows_before, removal_rows(db)),
        "load_average": os.getloadavg()[0],  # the machine's, 1 min, at the end of the run
        "cpu_cores": {
            "server": cpu_server / span,
            "upload clients": sum(t.cpu_seconds for t in upload_tallies) / span,
            "flood clients": sum(t.cpu_seconds for t in flood_tallies) / span,
        },
    }


def print_run(run: dict, args: argparse.Namespace) -> None:
    label = "uploads alone" if run["variant"] == ALONE else f"with flood ({run['variant']})"
    errors = sum(run["upload_errors"].values())
    print(
        f"{label:<30} {run['uploads_per_s']:7.1f} uploads/s, p50 {run['p50_ms']:.1f} ms, p99 {run['p99_ms']:.1f} ms, "
        f"{errors} not accepted; log +{run['log_grew']:,} for {run['accepted']:,} accepted"
    )
    if run["variant"] != ALONE:
        print(
            f"{'':30} flood {run['flood_per_s']:7.1f} requests/s, answers {run['flood_answers']}; "
            f"removal_requests rows {run['removal_rows'][0]} -> {run['removal_rows'][1]}"
        )
    cores = ", ".join(f"{role} {value:.2f}" for role, value in run["cpu_cores"].items())
    print(f"{'':30} CPU cores: {cores} (of {os.cpu_count()}); load average {run['load_average']:.1f}")
    for error, count in list(run["upload_errors"].items())[:5]:
        print(f"{'':30}   {count} x {error}")


def attack_two(
    port: int, ladder: bench.Ladder, rumble: RumbleSettings, keys: list[str], args, server_pid: int, db: Path
) -> dict:
    """The runs alone and under each flood variant, alternating; each flood run against its neighbours alone."""
    print(
        f"\n=== attack 2: a flood of refused removals; {args.clients} upload processes, {args.seconds:g} s measured "
        f"after {args.warmup:g} s; flood: {args.flood_threads} threads in {args.flood_processes} processes from "
        f"{args.flood_addresses} addresses, "
        + (f"{args.flood_rate:g} requests/s in all" if args.flood_rate else "as fast as the server answers")
        + f", asking to retire {', '.join(keys)}"
    )
    primed = prime_addresses(port, ladder, rumble, flood_addresses("uploaded once", args.flood_addresses), args.seed)
    print(
        f"primed        {args.flood_addresses - len(primed)} of {args.flood_addresses} 'uploaded once' addresses "
        "uploaded one accepted battle each"
    )
    for error in primed[:5]:
        print(f"  not accepted: {error}")
    rows_before = removal_rows(db)
    order = [ALONE]  # alone, flood, alone, the other flood, alone, ...: a flood run always between two alone
    for _ in range(args.rounds):
        for variant in FLOOD_NETWORKS:
            order += [variant, ALONE]
    runs = []
    for variant in order:
        run = measured_run(variant, port, ladder, rumble, keys, args, server_pid, db)
        print_run(run, args)
        runs.append(run)
    alone = float(np.median([run["uploads_per_s"] for run in runs if run["variant"] == ALONE]))
    ratios, each = {}, collections.defaultdict(list)
    for variant in FLOOD_NETWORKS:
        flood = float(np.median([run["uploads_per_s"] for run in runs if run["variant"] == variant]))
        ratios[variant] = flood / alone if alone else 0.0
    for k, run in enumerate(runs):
        if run["variant"] != ALONE:  # alone before and after it, by construction of the order
            neighbours = (runs[k - 1]["uploads_per_s"] + runs[k + 1]["uploads_per_s"]) / 2
            each[run["variant"]].append(run["uploads_per_s"] / neighbours if neighbours else 0.0)
    return {
        "runs": runs,
        "alone_per_s": alone,
        "ratios": ratios,
        "each_ratio": dict(each),
        "primed_errors": primed,
        "removal_rows": (rows_before, removal_rows(db)),
    }


# --- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=bench.DEFAULT_DATA, help="bench_upload.py's LiteRumble snapshot")
    parser.add_argument(
        "--bots", type=bench.at_least(10), default=1200, help="bots of bench_upload.py's ladder (cached per count)"
    )
    parser.add_argument("--battles-per-pairing", type=bench.at_least(1), default=1, help="the ladder's, as there")
    parser.add_argument("--seed", type=int, default=2023, help="the ladder's seed (as bench_upload.py) and the runs'")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="the ladder cache and the run")
    parser.add_argument("--rebuild-data", action="store_true", help="build the ladder database even if it is cached")
    parser.add_argument("--workers", type=bench.at_least(1), default=2, help="gunicorn workers of `rumble serve`")
    parser.add_argument("--strangers", type=bench.at_least(1), default=20, help="attack 1's stranger addresses")
    parser.add_argument("--top", type=bench.at_least(1), default=5, help="attack 1's bots to retire, by APS")
    parser.add_argument("--clients", type=bench.at_least(1), default=4, help="upload processes of attack 2")
    parser.add_argument("--seconds", type=bench.at_least(1.0, float), default=15.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=bench.at_least(0.0, float), default=2.0, help="unmeasured seconds before")
    parser.add_argument("--flood-threads", type=bench.at_least(1), default=32, help="threads POSTing removals")
    parser.add_argument("--flood-processes", type=bench.at_least(1), default=4, help="processes holding them")
    parser.add_argument("--flood-addresses", type=bench.at_least(1), default=250, help="addresses of each variant")
    parser.add_argument(
        "--flood-rate",
        type=bench.at_least(0.0, float),
        default=0.0,
        help="the flood's requests/s in all, spread evenly over its threads (0: as fast as the server answers; "
        "the attack measured before trusted removals made about 400)",
    )
    parser.add_argument(
        "--rounds", type=bench.at_least(1), default=1, help="floods of each variant, each between two runs alone"
    )
    parser.add_argument("--skip-standings", action="store_true", help="do not run `rumble admin standings` first")
    parser.add_argument(
        "--proxy",
        action="store_true",
        help="run nginx in front with the README's site (its rate limits on RemoveOldParticipant; TRUSTED_PROXIES=1)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object on the last line")
    args = parser.parse_args(argv)
    if args.strangers > 256 or args.flood_addresses > 200 * 256 or args.seconds > 600 or args.rounds > 10:
        parser.error("--strangers <= 256, --flood-addresses <= 51,200, --seconds <= 600, --rounds <= 10")
    return args


def verdicts(one: dict, two: dict, three: dict) -> dict[str, bool]:
    """Each goal and whether it was met."""
    runs = two["runs"]
    return {
        "no stranger retired a bot": one["retired_by_strangers"] == 0
        and not one["top_missing"]
        and all(run["flood_passed"] == 0 for run in runs),
        "the operator retired one": one["operator_retired"],
        "every upload accepted exactly": not one["uploads_not_accepted"]
        and not two["primed_errors"]
        and all(not run["upload_errors"] and run["log_grew"] == run["accepted"] for run in runs),
        "removal_requests did not grow": two["removal_rows"][0] == two["removal_rows"][1],
        f"uploads under a flood >= {RATIO_GOAL} of alone": all(r >= RATIO_GOAL for r in two["ratios"].values()),
        "one forger moved its bot within the stated bound": three["within_bound"],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[GAME]
    ladder = bench.load_ladder(args.data, args.bots, args.seed)
    cached = bench.ladder_database(args, ladder, rumble)
    run_dir = args.workdir / f"attacks-{os.getpid()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    db, log = run_dir / "rumble.db", run_dir / "server.log"
    shutil.copyfile(cached, db)
    try:
        print(f"ladder        {len(ladder.names)} bots, {logged_battles(db):,} battles (a copy of {cached.name})")
        # The operator, and the upload clients of attack 2: the established uploaders that make most
        # of a ladder's uploads (a stranger's would be held for review beyond a few a bot and day).
        for uploader in [OPERATOR] + [f"bench-{k}" for k in range(args.clients)]:
            print(f"vouch         {cli(db, 'vouch', uploader, OPERATOR_ADDRESS, '--note', 'ladder_attacks').strip()}")
        if not args.skip_standings:
            began = time.monotonic()
            established = cli(db, "standings", "--game", GAME).splitlines()[0]
            print(f"standings     {established} (`rumble admin standings`, {time.monotonic() - began:.1f} s)")
        port = bench.free_port()
        if args.proxy:  # the clients' addresses as nginx forwards them (X-Forwarded-For)
            os.environ["RUMBLE_TRUSTED_PROXIES"] = "1"
        server = bench.start_server(db, port, args.workers, log)
        print(f"server        `rumble serve`, {args.workers} workers on 127.0.0.1:{port} (output in {log})")
        rows_at_start = removal_rows(db)
        try:
            with contextlib.ExitStack() as stack:
                target = port
                if args.proxy:
                    url = stack.enter_context(running_nginx(run_dir / "nginx", port, listen_host="127.0.0.1"))
                    target = int(url.rsplit(":", 1)[1])
                    print(f"proxy         nginx on 127.0.0.1:{target} with the README's site (rate limits on removals)")
                one = attack_one(target, ladder, rumble, args, db)
                three = attack_three(target, ladder, rumble, args)
                two = attack_two(target, ladder, rumble, one["top"], args, server.pid, db)
        finally:
            bench.stop_server(server)
        saved = saved_refusals(db)  # what the workers saved of their counts before they stopped
    finally:
        bench.remove_database(db)  # the server's log stays
    reasons = {reason for reason, _ in REFUSALS}
    answered = [one["kinds"]] + [run["flood_answers_all"] for run in two["runs"]]
    refused = sum(count for kinds in answered for kind, count in kinds.items() if kind in reasons)
    figures = {
        "attack_1": one,
        "attack_2": two,
        "attack_3": three,
        "removal_rows_at_start": rows_at_start,
        "refusals_answered": refused,
        "refusals_saved": saved,
    }
    return report(figures, args)


def report(figures: dict, args: argparse.Namespace) -> int:
    one, two = figures["attack_1"], figures["attack_2"]
    print("\n=== summary")
    for variant, ratio in two["ratios"].items():
        each = ", ".join(f"{r:.3f}" for r in two["each_ratio"][variant])
        flood = [run for run in two["runs"] if run["variant"] == variant]
        print(
            f"flood ({variant}): {np.median([r['uploads_per_s'] for r in flood]):.1f} uploads/s against "
            f"{two['alone_per_s']:.1f} alone (medians), ratio {ratio:.3f}, goal >= {RATIO_GOAL}: "
            f"{bench.verdict(ratio >= RATIO_GOAL)} (against the runs alone beside it: {each}); the flood "
            f"{np.median([r['flood_per_s'] for r in flood]):.0f} requests/s"
        )
    print(
        f"removal_requests rows {figures['removal_rows_at_start']} before attack 1, {one['removal_rows']} after it "
        f"(the operator's retirement), {two['removal_rows'][0]} before attack 2, {two['removal_rows'][1]} after"
    )
    print(
        f"removal_refusals {figures['refusals_saved']:,} requests saved after the server stopped, of "
        f"{figures['refusals_answered']:,} refusals answered (each worker saves its counts every "
        "COUNTS_SAVE_SECONDS and as it stops)"
    )
    three = figures["attack_3"]
    print(
        f"one forger: {three['target']} APS {three['aps'][0]:.2f} -> {three['aps'][1]:.2f}, rank {three['rank'][0]} -> "
        f"{three['rank'][1]} after {sum(three['answers'].values())} forged uploads {three['answers']} "
        f"(bound {three['bound']:.2f} points a day)"
    )
    checks = verdicts(one, two, three)
    for goal, met in checks.items():
        print(f"{bench.verdict(met)}  {goal}")
    passed = all(checks.values())
    print(f"{bench.verdict(passed)}: retired by strangers {one['retired_by_strangers']}, ratios {two['ratios']}")
    if args.json:
        figures["checks"] = checks
        print(json.dumps(figures, default=str))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
