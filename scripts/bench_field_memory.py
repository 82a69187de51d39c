"""A server worker's memory at 1,200 bots and at MAX_PARTICIPANTS, with the field grown by a bounded
step (today) and by doubling (before issue 11), in the same run.

1. The 1,200-bot ladder of ``scripts/bench_upload.py`` (every pairing played once, 719,400
   battles): built by that script's own code into ``--workdir``, or copied from ``--ladder``.
2. The same ladder flooded up to ``--max-participants`` (default 3,000, MAX_PARTICIPANTS' default):
   invented bots, each with ``--flood-battles`` battles against random ladder bots, stored through
   the upload path's ``apply.apply_battle`` (as a flood of invented names would arrive).
3. For each database and each growth rule, starts ``rumble serve --workers 1`` (the real gunicorn
   server; the worker loads the rumble's field at start), sends one upload, and reads the worker's
   resident memory (VmRSS) and its peak (VmHWM) from /proc. The doubling rule is the old one,
   patched into the server process before it forks its worker.

Prints one line per database and rule: the field's capacity, its pairing matrix's size, and the
worker's RSS and peak; then, per rule, how long one growth of a full field takes at
``--max-participants`` (under the write lock, in an upload) and adding that many bots one by one. Run: ``.venv/bin/python scripts/bench_field_memory.py --help``.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload  # noqa: E402  (the ladder's builder and the server helpers)

from rumble import settings, store  # noqa: E402
from rumble.ingest import apply  # noqa: E402
from rumble.protocol.battle import Battle, Side  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402
from rumble.protocol.upload import format_upload  # noqa: E402
from rumble.ratings.online import capacity_for  # noqa: E402

GAME = bench_upload.GAME

# Run as the server process: the old rule (start at 16, double when full) patched over the new one.
SERVE = """
import sys
from rumble.ingest import fields
from rumble.ratings import online
if sys.argv[1] == "doubling":
    def doubling(n):
        capacity = 16
        while capacity <= n:
            capacity *= 2
        return capacity
    online.capacity_for = fields.capacity_for = doubling
from rumble.cli import cli
cli(sys.argv[2:], prog_name="rumble")
"""


def doubling(n: int) -> int:
    """The capacity the old rule reached with ``n`` bots: 16, doubled each time it was full."""
    capacity = 16
    while capacity <= n:
        capacity *= 2
    return capacity


def ladder_database(args: argparse.Namespace) -> Path:
    """The 1,200-bot ladder: a copy of ``--ladder``, or bench_upload's build (cached in the workdir)."""
    if args.ladder is not None:
        target = args.workdir / "ladder-1200.db"
        if not target.exists():
            source = sqlite3.connect(f"{args.ladder.resolve().as_uri()}?mode=ro", uri=True)
            copy = sqlite3.connect(target)
            source.backup(copy)  # one consistent snapshot, whatever else reads the file
            copy.close()
            source.close()
        return target
    build = argparse.Namespace(
        bots=1200, battles_per_pairing=1, seed=2023, data=args.data, workdir=args.workdir, rebuild_data=False
    )
    ladder = bench_upload.load_ladder(args.data, 1200, 2023)
    values = settings.load({"DB": str(args.workdir / "unused.db")})
    return bench_upload.ladder_database(build, ladder, load_rumbles(values["RUMBLES_FILE"])[GAME])


def flooded_database(ladder_db: Path, args: argparse.Namespace) -> Path:
    """The ladder with invented bots added until the rumble has ``--max-participants``."""
    target = args.workdir / f"flooded-{args.max_participants}.db"
    if target.exists():
        return target
    shutil.copyfile(ladder_db, target)
    values = settings.load({"DB": str(target)})
    rumble = load_rumbles(values["RUMBLES_FILE"])[GAME]
    db = store.connect(target)
    rng = np.random.default_rng(11)
    try:
        names = [
            name for (name,) in db.execute("SELECT b.full_name FROM participants p JOIN bots b ON b.id = p.bot_id")
        ]
        invented = [f"flood.Invented{k:04d} 1.0" for k in range(args.max_participants - len(names))]
        now_ms = int(time.time() * 1000)
        with store.write(db):
            for k, name in enumerate(invented):
                for n in range(args.flood_battles):
                    opponent = names[int(rng.integers(len(names)))]
                    score = int(rng.integers(1000, 6000))
                    battle = Battle(
                        GAME,
                        "1",
                        bench_upload.CLIENT,
                        False,
                        False,
                        rumble.rounds,
                        rumble.field,
                        "flooder",
                        now_ms - k * args.flood_battles - n,
                        Side(opponent, 6000, 3000, 20),
                        Side(name, score, score // 2, 15),
                        store.utc_now(),
                        "10.9.9.9",
                    )
                    apply.apply_battle(db, battle, rumble.rounds, values["PRIORITY_MIN_BATTLES"])
    finally:
        db.close()
    return target


def worker_memory(db_path: Path, rule: str, workdir: Path) -> tuple[int, int, int]:
    """Start ``rumble serve --workers 1`` with ``rule``, upload once; the worker's (pid, VmRSS, VmHWM) in kB."""
    run_db = workdir / f"run-{rule}.db"
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{run_db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(db_path, run_db)
    port = bench_upload.free_port()
    log = workdir / f"server-{rule}.log"
    command = [sys.executable, "-c", SERVE, rule, "serve", "--db", str(run_db), "--port", str(port), "--workers", "1"]
    env = {**__import__("os").environ, "RUMBLE_BATCH_INTERVAL_MINUTES": "0"}
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=bench_upload.REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_until_up(server, port, log)
        conn = sqlite3.connect(f"{run_db.resolve().as_uri()}?mode=ro", uri=True)
        a, b = [
            name
            for (name,) in conn.execute(
                "SELECT b.full_name FROM participants p JOIN bots b ON b.id = p.bot_id ORDER BY b.id LIMIT 2"
            )
        ]
        conn.close()
        values = settings.load({"DB": str(run_db)})
        rumble = load_rumbles(values["RUMBLES_FILE"])[GAME]
        battle = Battle(
            GAME,
            "1",
            bench_upload.CLIENT,
            False,
            False,
            rumble.rounds,
            rumble.field,
            "bench",
            int(time.time() * 1000),
            Side(a, 6000, 3000, 20),
            Side(b, 4000, 2000, 15),
        )
        status, text = bench_upload.post_upload(port, format_upload(battle))
        if status != 200 or "received for" not in text:
            raise RuntimeError(f"the upload was not accepted: {status} {text!r}")
        (worker,) = [pid for pid in bench_upload.process_tree(server.pid) if pid != server.pid]
        status_file = Path(f"/proc/{worker}/status").read_text()
        kb = {
            line.split(":")[0]: int(line.split()[1])
            for line in status_file.splitlines()
            if line.startswith(("VmRSS", "VmHWM"))
        }
        return worker, kb["VmRSS"], kb["VmHWM"]
    finally:
        bench_upload.stop_server(server)


def _wait_until_up(server: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode}; see {log}")
        try:
            status, _ = bench_upload.post_upload(port, b"", timeout=5)  # answered only once a worker is up
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the server did not answer within 300 s; see {log}")


def growth_times(n: int) -> tuple[float, float]:
    """Seconds to grow a full field at ``n`` bots once, and to add ``n`` bots one by one from empty
    (every copy of the matrix the growth rule makes on the way), with the rule in force."""
    from rumble.ratings.online import Field

    field = Field(n)
    for bot in range(1, n + 1):
        field.add(bot)
    start = time.perf_counter()
    field.add(n + 1)  # full: this one grows it
    once = time.perf_counter() - start
    start = time.perf_counter()
    field = Field()
    for bot in range(1, n + 1):
        field.add(bot)
    return once, time.perf_counter() - start


def participants(db_path: Path) -> int:
    conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT count(*) FROM participants p JOIN rumbles r ON r.id = p.rumble_id WHERE r.name = ?", (GAME,)
        ).fetchone()[0]
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--workdir", type=Path, default=Path("/tmp/rumble-field-bench"), help="databases and server logs"
    )
    parser.add_argument(
        "--data", type=Path, default=bench_upload.DEFAULT_DATA, help="the LiteRumble snapshot bench_upload reads"
    )
    parser.add_argument(
        "--ladder", type=Path, help="an existing 1,200-bot ladder database to copy instead of building one"
    )
    parser.add_argument("--max-participants", type=int, default=3000, help="participants of the flooded rumble")
    parser.add_argument("--flood-battles", type=int, default=2, help="battles of each invented bot")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    ladder = ladder_database(args)
    flooded = flooded_database(ladder, args)
    print(f"{'database':<34} {'rule':<9} {'capacity':>8} {'matrix MB':>9} {'worker RSS MB':>13} {'peak MB':>8}")
    for path in (ladder, flooded):
        n = participants(path)
        for rule, capacity in (("step", capacity_for(n)), ("doubling", doubling(n))):
            _, rss, peak = worker_memory(path, rule, args.workdir)
            print(
                f"{f'{path.name} ({n:,} bots)':<34} {rule:<9} {capacity:>8,} {capacity**2 * 8 / 1e6:>9.1f} "
                f"{rss / 1024:>13.1f} {peak / 1024:>8.1f}",
                flush=True,
            )
    from rumble.ingest import fields
    from rumble.ratings import online

    for rule in ("step", "doubling"):
        if rule == "doubling":
            online.capacity_for = fields.capacity_for = doubling
        once, total = growth_times(args.max_participants)
        print(
            f"{rule:<9} growing a full {args.max_participants:,}-bot field once: {once * 1000:.0f} ms; "
            f"adding {args.max_participants:,} bots one by one: {total:.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
