"""New bots under attack: a flood of invented bots against `rumble serve`, and what a new bot costs the writer.

1. The flood. Copies bench_upload.py's cached ladder (1,200 bots; built the first time), vouches
   with the CLI (``rumble admin vouch``) for the operator party (uploader ``operator`` from
   127.0.0.1) and starts ``python -m rumble serve`` (``--workers``, 2 by default) on a free loopback
   port. The cached ladder's participants all joined when it was built: built within the hour,
   they fill NEW_BOTS_PER_HOUR_PER_RUMBLE's window by themselves, which no running ladder does, so
   the copy's joins in the last hour are moved two hours back first (printed; ``--fresh-ladder``
   leaves them). From ``--addresses`` loopback addresses (127.20.K.1, the client socket bound to
   it), one thread each, as ``newbot-K``, uploads that each name a new invented bot against a
   random ladder bot, one after another as fast as the server answers, each address until it has
   had ``--refusals`` refusals (at most ``--max-per-address`` uploads and ``--seconds`` in all).
   Prints the new bots accepted against the rumble's allowance (NEW_BOTS_PER_HOUR_PER_RUMBLE less
   the joins of the last hour; NEW_BOTS_PER_HOUR is the per-address bound), every distinct answer
   (the new bot's name replaced by <new>) and the rows the database gained. Then the operator
   uploads a battle naming a new bot: it must be accepted (its last line exactly
   ``OK. <first> vs <second> received for roborumble``); a stranger's new bot after it is still
   refused.
2. The writer's cost of a new bot, in-process as scripts/profile_upload.py's ``--group`` does
   (the writer's connection, ``single_writer.open_database``): on a copy of the ladder, interleaved,
   ``--battles`` ordinary battles (two ladder bots) and as many that each name a bot never seen
   (against a ladder bot), each ``rumble.ingest.apply.apply_battle`` in a write transaction of its
   own; the apply and the whole transaction (with its commit) are timed. Then the same on a copy
   grown to ``--grow-to`` participants (3,000, MAX_PARTICIPANTS' default) by new-bot battles through
   ``apply_battle``. Prints the mean and median of each, the new bot's extra cost in ms and the
   ratio new/ordinary, at both sizes, the ordinary battles being the baseline of the same run.
3. PASS if the flood got exactly the allowance and no more, every other answer was a refusal for
   the new-bot limits, the refused uploads left no bot row, the operator's new bot was accepted
   and the stranger's after it refused; exit status 1 otherwise. The cost figures are printed, not
   judged.

Only loopback addresses; every loop is bounded in count and time; the server is stopped at the end,
also on errors. Run with the project's venv: ``.venv/bin/python scripts/newbot_flood.py --help``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sqlite3
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload as bench  # noqa: E402  (the ladder, the server and the battles)
import ladder_attacks as attacks  # noqa: E402  (the bound client socket, the CLI, the answer reader)

from rumble import settings, store  # noqa: E402
from rumble.ingest import apply, fields  # noqa: E402
from rumble.protocol.battle import Battle  # noqa: E402
from rumble.protocol.games import RumbleSettings, load_rumbles  # noqa: E402
from rumble.protocol.upload import format_upload  # noqa: E402
from rumble.server import single_writer  # noqa: E402

GAME = bench.GAME
OPERATOR, OPERATOR_ADDRESS = attacks.OPERATOR, attacks.OPERATOR_ADDRESS
AFTER_ADDRESS = "127.21.0.1"  # a stranger trying once more after the operator's new bot
CHECKPOINT_EVERY = 20  # pairs of timed battles between two checkpoints of the WAL (untimed)
BACKDATE = timedelta(hours=2)  # how far the copy's joins of the last hour are moved back
# The refusals of new bots (rumble/ingest/growth.py), by what their answers say.
REFUSALS = (
    ("address limit (NEW_BOTS_PER_HOUR)", "too many new bots from your address"),
    ("rumble limit (NEW_BOTS_PER_HOUR_PER_RUMBLE)", "from uploaders not established"),
    ("rumble full (MAX_PARTICIPANTS)", "is full:"),
)


# --- the flood -------------------------------------------------------------------------------


def new_bot_battle(
    rumble: RumbleSettings, ladder: bench.Ladder, new: str, rng: np.random.Generator, uploader: str, ms: int
) -> Battle:
    """A battle of the invented bot ``new`` against a random ladder bot, as the client uploads it."""
    opponent = ladder.names[int(rng.integers(len(ladder.names)))]
    figures = bench.sample_figures(rng, np.zeros(1), rumble.rounds).tolist()[0]
    return bench.to_battle(rumble, opponent, new, figures, ms, uploader)


def accepted_line(battle: Battle) -> str:
    return f"OK. {battle.first.name} vs {battle.second.name} received for {GAME}"


def classify(status: int, text: str, battle: Battle, new: str) -> tuple[str, str]:
    """(kind, the answer's last line with the new bot's name replaced by <new>)."""
    last = text.strip().splitlines()[-1] if text.strip() else ""
    shown = last.replace(new, "<new>")
    if status != 200:
        return f"HTTP {status}", shown
    if last == accepted_line(battle):
        return "accepted", shown
    if last.startswith(accepted_line(battle) + ", held for review"):
        return "held", shown
    if last.startswith("OK. ERROR"):
        return next((kind for kind, marker in REFUSALS if marker in last), "other refusal"), shown
    return "unexpected", shown


@dataclass
class Tally:
    """What the flood's threads saw."""

    kinds: collections.Counter = field(default_factory=collections.Counter)
    answers: collections.Counter = field(default_factory=collections.Counter)
    accepted_ms: list[float] = field(default_factory=list)
    refused_ms: list[float] = field(default_factory=list)
    # answers of accepted new bots that arrived after a refusal's: the writer applies a group's uploads
    # in order, but their answers reach the clients' connections in any order
    accepted_after_refusal: int = 0
    first_refusal_at: float | None = None  # seconds into the flood
    lock: threading.Lock = field(default_factory=threading.Lock)


def flood(port: int, ladder: bench.Ladder, rumble: RumbleSettings, args: argparse.Namespace) -> tuple[Tally, float]:
    """``--addresses`` threads, each uploading new bots from its own address until refused; (tally, seconds)."""
    tally = Tally()
    began = time.monotonic()
    deadline = began + args.seconds

    def one_address(k: int) -> None:
        source, uploader = f"127.20.{k}.1", f"newbot-{k}"
        rng = np.random.default_rng([args.seed, 3, k])
        refusals, last_ms = 0, 0
        for n in range(args.max_per_address):
            if refusals >= args.refusals or time.monotonic() >= deadline:
                return
            last_ms = max(int(time.time() * 1000), last_ms + 1)
            new = f"flood.Newbot{k:02d}x{n:03d} 1.0"
            battle = new_bot_battle(rumble, ladder, new, rng, uploader, last_ms)
            clock = time.perf_counter()
            try:
                status, text = attacks.post(port, attacks.UPLOAD_PATH, format_upload(battle), source)
                kind, shown = classify(status, text, battle, new)
            except OSError as error:
                kind, shown = type(error).__name__, str(error)
            ms = (time.perf_counter() - clock) * 1000
            with tally.lock:
                tally.kinds[kind] += 1
                tally.answers[shown] += 1
                if kind == "accepted":
                    tally.accepted_ms.append(ms)
                    if tally.first_refusal_at is not None:
                        tally.accepted_after_refusal += 1
                else:
                    tally.refused_ms.append(ms)
                    if tally.first_refusal_at is None:
                        tally.first_refusal_at = time.monotonic() - began
            if kind != "accepted":
                refusals += 1

    threads = [threading.Thread(target=one_address, args=(k,), daemon=True) for k in range(args.addresses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()) + 2 * attacks.hostile.CLIENT_TIMEOUT_S)
    return tally, time.monotonic() - began


def single_new_bot(
    port: int, ladder: bench.Ladder, rumble: RumbleSettings, source: str, uploader: str, new: str, seed: int
) -> tuple[str, str, str]:
    """One upload from ``source`` as ``uploader`` naming the new bot ``new``: (kind, last line, expected line)."""
    battle = new_bot_battle(rumble, ladder, new, np.random.default_rng([seed, 4]), uploader, int(time.time() * 1000))
    try:
        status, text = attacks.post(port, attacks.UPLOAD_PATH, format_upload(battle), source)
    except OSError as error:
        return type(error).__name__, str(error), accepted_line(battle)
    last = text.strip().splitlines()[-1] if text.strip() else ""
    return classify(status, text, battle, new)[0], last, accepted_line(battle)


def hour_ago() -> str:
    return store.format_time(datetime.now(UTC) - timedelta(hours=1))


def joined_last_hour(path: Path) -> int:
    return attacks.read_db(
        path,
        "SELECT count(*) FROM participants p JOIN rumbles r ON r.id = p.rumble_id "
        f"WHERE r.name = '{GAME}' AND p.first_seen >= '{hour_ago()}'",
    )


def backdate_joins(path: Path) -> int:
    """Move the copy's joins of the last hour (the ladder's build) two hours back; how many moved."""
    conn = sqlite3.connect(path, timeout=30)
    try:
        with conn:
            moved = conn.execute(
                "UPDATE participants SET first_seen = strftime('%Y-%m-%d %H:%M:%f', first_seen, ?) WHERE first_seen >= ?",
                (f"-{int(BACKDATE.total_seconds())} seconds", hour_ago()),
            ).rowcount
    finally:
        conn.close()
    return moved


def flood_part(ladder: bench.Ladder, rumble: RumbleSettings, cached: Path, args: argparse.Namespace) -> dict:
    """The flood on `rumble serve`, then the operator's new bot; the figures and checks."""
    config = settings.load()
    per_rumble, per_address = config["NEW_BOTS_PER_HOUR_PER_RUMBLE"], config["NEW_BOTS_PER_HOUR"]
    run_dir = args.workdir / f"newbots-{os.getpid()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    db, log = run_dir / "rumble.db", run_dir / "server.log"
    shutil.copyfile(cached, db)
    try:
        print(
            f"ladder        {len(ladder.names)} bots, {attacks.logged_battles(db):,} battles (a copy of {cached.name})"
        )
        fresh = joined_last_hour(db)
        if fresh and not args.fresh_ladder:
            moved = backdate_joins(db)
            print(
                f"joins         {fresh} participants of the copy joined in the last hour (the cache's build): "
                f"{moved} moved {BACKDATE} back (--fresh-ladder leaves them)"
            )
        print(f"vouch         {attacks.cli(db, 'vouch', OPERATOR, OPERATOR_ADDRESS, '--note', 'newbot_flood').strip()}")
        joined_before = joined_last_hour(db)
        allowance = max(0, per_rumble - joined_before)
        participants_before = attacks.read_db(db, "SELECT count(*) FROM participants")
        bots_before = attacks.read_db(db, "SELECT count(*) FROM bots")
        port = bench.free_port()
        server = bench.start_server(db, port, args.workers, log)
        print(f"server        `rumble serve`, {args.workers} workers on 127.0.0.1:{port} (output in {log})")
        try:
            print(
                f"\n=== the flood: {args.addresses} addresses (127.20.K.1) as newbot-K, each new bot against a ladder "
                f"bot, until {args.refusals} refusals each (at most {args.max_per_address} uploads each, {args.seconds:g} s)"
            )
            print(
                f"limits        NEW_BOTS_PER_HOUR_PER_RUMBLE {per_rumble}, NEW_BOTS_PER_HOUR {per_address} (per address); "
                f"joined in the last hour before the flood {joined_before}: allowance {allowance}"
            )
            tally, spent = flood(port, ladder, rumble, args)
            flood_bots = attacks.read_db(
                db, "SELECT count(*) FROM bot_origins WHERE remote_addr LIKE '127.20.%'"
            )  # rows of the new bots the flood's addresses named
            operator = single_new_bot(
                port, ladder, rumble, OPERATOR_ADDRESS, OPERATOR, "flood.OperatorNewbot 1.0", args.seed
            )
            after = single_new_bot(
                port, ladder, rumble, AFTER_ADDRESS, "newbot-after", "flood.AfterNewbot 1.0", args.seed
            )
        finally:
            bench.stop_server(server)
        participants_after = attacks.read_db(db, "SELECT count(*) FROM participants")
        bots_after = attacks.read_db(db, "SELECT count(*) FROM bots")
    finally:
        bench.remove_database(db)  # the server's log stays
    sent = sum(tally.kinds.values())
    accepted = tally.kinds["accepted"]
    refusal_kinds = {kind for kind, _ in REFUSALS}
    other = {kind: n for kind, n in tally.kinds.items() if kind != "accepted" and kind not in refusal_kinds}
    print(
        f"sent          {sent} uploads in {spent:.1f} s ({sent / spent:.0f}/s); first refusal "
        + (f"at {tally.first_refusal_at:.2f} s" if tally.first_refusal_at is not None else "never")
    )
    print(f"by kind       {dict(tally.kinds)}")
    for text, count in sorted(tally.answers.items(), key=lambda item: -item[1])[:12]:
        print(f"  {count:4d} x {text}")
    if len(tally.answers) > 12:
        print(f"  ... {len(tally.answers) - 12} more distinct answers")
    for label, values in (("accepted", tally.accepted_ms), ("refused", tally.refused_ms)):
        if values:
            print(
                f"latency       {label}: median {statistics.median(values):.1f} ms, "
                f"slowest {max(values):.1f} ms ({len(values)} answers)"
            )
    print(
        f"accepted      {accepted} new bots against an allowance of {allowance} "
        f"{bench.verdict(accepted == allowance)}; answers of accepted ones that arrived after the first refusal's: "
        f"{tally.accepted_after_refusal} (a group's answers reach their connections in any order)"
    )
    print(
        f"database      bots {bots_before:,} -> {bots_after:,} (+{bots_after - bots_before}), participants "
        f"{participants_before:,} -> {participants_after:,} (+{participants_after - participants_before}); "
        f"bot rows named from the flood's addresses: {flood_bots} (= accepted: {bench.verdict(flood_bots == accepted)})"
    )
    print(
        f"operator      {OPERATOR} from {OPERATOR_ADDRESS}, a new bot: {operator[1]!r} {bench.verdict(operator[0] == 'accepted' and operator[1] == operator[2])}"
    )
    print(
        f"after         a stranger ({AFTER_ADDRESS}), a new bot: {after[1]!r} {bench.verdict(after[0] in refusal_kinds)}"
    )
    checks = {
        "the flood got exactly its allowance": accepted == allowance,
        "every other answer a new-bot refusal": not other,
        "refused uploads left no bot row": flood_bots == accepted
        and bots_after - bots_before == accepted + (operator[0] == "accepted"),
        "the operator's new bot accepted exactly": operator[0] == "accepted" and operator[1] == operator[2],
        "a stranger after it still refused": after[0] in refusal_kinds,
    }
    return {
        "allowance": allowance,
        "joined_before": joined_before,
        "sent": sent,
        "seconds": spent,
        "kinds": dict(tally.kinds),
        "answers": dict(tally.answers),
        "accepted": accepted,
        "accepted_after_refusal": tally.accepted_after_refusal,
        "bots_added": bots_after - bots_before,
        "participants_added": participants_after - participants_before,
        "operator": operator[1],
        "after": after[1],
        "checks": checks,
    }


# --- the writer's cost of a new bot ----------------------------------------------------------


def stamped(battle: Battle, address: str) -> Battle:
    return apply.with_receipt(battle, address, datetime.now(UTC))


def ordinary_battle(rumble: RumbleSettings, ladder: bench.Ladder, rng: np.random.Generator, ms: int) -> Battle:
    a, b = attacks.random_pair(ladder, rng)
    figures = bench.sample_figures(rng, ladder.strength[[a]] - ladder.strength[[b]], rumble.rounds).tolist()[0]
    return bench.to_battle(rumble, ladder.names[a], ladder.names[b], figures, ms, "cost-ordinary")


def grow(path: Path, ladder: bench.Ladder, rumble: RumbleSettings, target: int, seed: int) -> float:
    """Add invented bots (one new-bot battle each, through apply_battle) until the rumble has ``target``; seconds."""
    values = settings.load({"DB": str(path)})
    db = store.connect(path, values["SYNCHRONOUS"])
    rng = np.random.default_rng([seed, 5])
    began = time.perf_counter()
    try:
        count = db.execute("SELECT count(*) FROM participants").fetchone()[0]
        ms = int(time.time() * 1000) - 10 * target
        for start in range(count, target, 100):  # 100 new bots a transaction
            with store.write(db):
                for k in range(start, min(start + 100, target)):
                    battle = new_bot_battle(rumble, ladder, f"grow.Invented{k:04d} 1.0", rng, "cost-grow", ms + k)
                    apply.apply_battle(db, stamped(battle, "10.9.9.9"), rumble.rounds, values["PRIORITY_MIN_BATTLES"])
    finally:
        db.close()
    return time.perf_counter() - began


def time_battles(path: Path, ladder: bench.Ladder, rumble: RumbleSettings, args: argparse.Namespace, tag: str) -> dict:
    """Interleaved ordinary and new-bot battles on the writer's connection; each one's apply and transaction in ms."""
    config = settings.load()
    db = single_writer.open_database(path, config["SYNCHRONOUS"])
    fields.preload_all(db)
    rng = np.random.default_rng([args.seed, 6])
    times: dict[str, dict[str, list[float]]] = {kind: {"apply": [], "transaction": []} for kind in ("ordinary", "new")}
    ms = int(time.time() * 1000) - 10 * (args.battles + args.warmup_battles)
    try:
        size = db.execute("SELECT count(*) FROM participants").fetchone()[0]
        for n in range(args.warmup_battles + args.battles):
            if n % CHECKPOINT_EVERY == 0:  # as the writer's checkpoint thread does, outside the timed work
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            order = ("ordinary", "new") if n % 2 == 0 else ("new", "ordinary")  # ABBA: drift weighs on both
            for kind in order:
                ms += 1
                if kind == "ordinary":
                    battle = ordinary_battle(rumble, ladder, rng, ms)
                else:
                    battle = new_bot_battle(rumble, ladder, f"cost.{tag}New{n:04d} 1.0", rng, "cost-new", ms)
                battle = stamped(battle, "10.8.8.8")
                began = time.perf_counter()
                with store.write(db):
                    applying = time.perf_counter()
                    applied = apply.apply_battle(db, battle, rumble.rounds, config["PRIORITY_MIN_BATTLES"])
                    applied_ms = (time.perf_counter() - applying) * 1000
                total_ms = (time.perf_counter() - began) * 1000
                if not applied.stored:
                    raise RuntimeError(f"battle not stored: {battle}")
                if n >= args.warmup_battles:
                    times[kind]["apply"].append(applied_ms)
                    times[kind]["transaction"].append(total_ms)
    finally:
        db.close()
    return {"participants": size, "times": times}


def cost_part(ladder: bench.Ladder, rumble: RumbleSettings, cached: Path, args: argparse.Namespace) -> dict:
    """The new bot's cost at the ladder's size and at ``--grow-to``."""
    print(
        f"\n=== the writer's cost of a new bot: {args.battles} ordinary and {args.battles} new-bot battles, interleaved "
        f"(after {args.warmup_battles} of each unmeasured), each apply_battle in its own write transaction"
    )
    results = {}
    for size in (len(ladder.names), args.grow_to):
        path = args.workdir / f"newbot-cost-{size}-{os.getpid()}.db"
        bench.remove_database(path)
        shutil.copyfile(cached, path)
        try:
            if size > len(ladder.names):
                seconds = grow(path, ladder, rumble, size, args.seed)
                print(f"grown         a copy to {size:,} participants through apply_battle in {seconds:.1f} s")
            measured = time_battles(path, ladder, rumble, args, str(size))
        finally:
            bench.remove_database(path)
        results[size] = summarize(measured)
    print_costs(results)
    return results


def summarize(measured: dict) -> dict:
    out: dict = {"participants": measured["participants"]}
    for part in ("apply", "transaction"):
        ordinary, new = measured["times"]["ordinary"][part], measured["times"]["new"][part]
        out[part] = {
            "ordinary_mean_ms": statistics.fmean(ordinary),
            "ordinary_median_ms": statistics.median(ordinary),
            "new_mean_ms": statistics.fmean(new),
            "new_median_ms": statistics.median(new),
            "new_max_ms": max(new),
            "ordinary_max_ms": max(ordinary),
        }
        row = out[part]
        row["extra_ms"] = row["new_mean_ms"] - row["ordinary_mean_ms"]
        row["ratio_mean"] = row["new_mean_ms"] / row["ordinary_mean_ms"]
        row["ratio_median"] = row["new_median_ms"] / row["ordinary_median_ms"]
    return out


def print_costs(results: dict) -> None:
    for out in results.values():
        print(f"at {out['participants']:,} participants")
        for part, label in (("apply", "apply_battle"), ("transaction", "transaction (with commit)")):
            row = out[part]
            print(
                f"  {label:<26} ordinary {row['ordinary_mean_ms']:.2f} ms mean / {row['ordinary_median_ms']:.2f} median "
                f"(max {row['ordinary_max_ms']:.1f}); new bot {row['new_mean_ms']:.2f} ms mean / "
                f"{row['new_median_ms']:.2f} median (max {row['new_max_ms']:.1f}); per new bot +{row['extra_ms']:.2f} ms, "
                f"ratio {row['ratio_mean']:.2f} (means) {row['ratio_median']:.2f} (medians)"
            )
    sizes = list(results)
    if len(sizes) == 2:
        small, large = (results[s]["transaction"] for s in sizes)
        print(
            f"growth        new bot's transaction {small['new_mean_ms']:.2f} -> {large['new_mean_ms']:.2f} ms "
            f"(x{large['new_mean_ms'] / small['new_mean_ms']:.2f}); ordinary {small['ordinary_mean_ms']:.2f} -> "
            f"{large['ordinary_mean_ms']:.2f} ms (x{large['ordinary_mean_ms'] / small['ordinary_mean_ms']:.2f})"
        )


# --- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=bench.DEFAULT_DATA, help="bench_upload.py's LiteRumble snapshot")
    parser.add_argument("--seed", type=int, default=2023, help="the ladder's seed (as bench_upload.py) and the runs'")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="the ladder cache and the run")
    parser.add_argument("--workers", type=bench.at_least(1), default=2, help="gunicorn workers of `rumble serve`")
    parser.add_argument("--addresses", type=bench.at_least(1), default=50, help="the flood's addresses (127.20.K.1)")
    parser.add_argument("--refusals", type=bench.at_least(1), default=3, help="refusals after which an address stops")
    parser.add_argument("--max-per-address", type=bench.at_least(1), default=60, help="uploads per address at most")
    parser.add_argument("--seconds", type=bench.at_least(1.0, float), default=120.0, help="the flood's time bound")
    parser.add_argument(
        "--fresh-ladder",
        action="store_true",
        help="leave the copy's joins of the last hour as they are (a ladder built within the hour fills the allowance)",
    )
    parser.add_argument("--battles", type=bench.at_least(1), default=200, help="measured battles of each kind and size")
    parser.add_argument(
        "--warmup-battles", type=bench.at_least(0), default=10, help="unmeasured battles of each kind first"
    )
    parser.add_argument("--grow-to", type=bench.at_least(1201), default=3000, help="participants of the grown copy")
    parser.add_argument("--skip-flood", action="store_true", help="only the writer's cost")
    parser.add_argument("--skip-cost", action="store_true", help="only the flood")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object on the last line")
    args = parser.parse_args(argv)
    if (
        args.addresses > 256
        or args.max_per_address > 1000
        or args.seconds > 600
        or args.battles > 5000
        or args.grow_to > 20000
    ):
        parser.error(
            "--addresses <= 256, --max-per-address <= 1,000, --seconds <= 600, --battles <= 5,000, --grow-to <= 20,000"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[GAME]
    ladder = bench.load_ladder(args.data, 1200, args.seed)
    build = argparse.Namespace(
        bots=1200, battles_per_pairing=1, seed=args.seed, data=args.data, workdir=args.workdir, rebuild_data=False
    )
    cached = bench.ladder_database(build, ladder, rumble)
    figures: dict = {}
    if not args.skip_flood:
        figures["flood"] = flood_part(ladder, rumble, cached, args)
    if not args.skip_cost:
        figures["cost"] = cost_part(ladder, rumble, cached, args)
    checks = figures.get("flood", {}).get("checks", {})
    print("\n=== summary")
    for goal, met in checks.items():
        print(f"{bench.verdict(met)}  {goal}")
    passed = all(checks.values())
    if "flood" in figures:
        flood_figures = figures["flood"]
        print(
            f"{bench.verdict(passed)}: {flood_figures['accepted']} new bots accepted of {flood_figures['sent']} sent "
            f"(allowance {flood_figures['allowance']}); refusals {sum(flood_figures['kinds'].values()) - flood_figures['accepted']}"
        )
    for out in figures.get("cost", {}).values():
        row = out["transaction"]
        print(
            f"new bot at {out['participants']:,}: +{row['extra_ms']:.2f} ms per new bot, ratio {row['ratio_mean']:.2f} "
            f"to an ordinary upload ({row['ordinary_mean_ms']:.2f} ms)"
        )
    if args.json:
        print(json.dumps(figures, default=str))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
