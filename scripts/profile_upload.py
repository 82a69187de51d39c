"""Where an upload's server time goes: cProfile around the WSGI app, in one process.

Copies bench_upload.py's cached 1,200-bot ladder, builds the app as a `rumble serve` worker does
(``create_app(preload_fields=True)``, no batch schedule) and posts --uploads real-format upload bodies
through Flask's test client (the whole WSGI app: routing, parsing, the write transaction, the
answer), in the living scenario of bench_upload.py (random ladder pairs; --newcomers new bots
entering evenly during the run, each then in 10 % of the uploads) or the melee one. Prints the
functions with the most cumulative and the most own time, and writes the raw profile (--out) for
``python -m pstats``. gunicorn's own overhead is not in it (bench_upload.py's bare run measures that).
``--group N`` profiles the writer process's work instead; ``--worker`` times a worker's own part
beside the bare stack's Flask app.

Run with the project's venv: ``.venv/bin/python scripts/profile_upload.py --help``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pickle
import pstats
import shutil
import sys
import time
from collections.abc import Callable
from functools import partial
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upload  # noqa: E402  (the ladder and the load of the upload benchmark)

from rumble import settings, store  # noqa: E402
from rumble.app import create_app  # noqa: E402
from rumble.clock import Clock  # noqa: E402
from rumble.ingest import decide, fields  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402
from rumble.protocol.replies import Kind, UploadOutcome  # noqa: E402
from rumble.protocol.upload import format_upload, parse_upload  # noqa: E402
from rumble.server import single_writer  # noqa: E402
from rumble.server.serving import Deadlines  # noqa: E402
from rumble.store.group_commit import Work, apply_group  # noqa: E402


def bodies(ladder: bench_upload.Ladder, rumbles: dict, args: argparse.Namespace) -> list[bytes]:
    """The upload bodies, newcomers entering evenly over them (as bench_upload.py's clients send)."""
    scenario = "melee" if args.melee else "living"
    rumble = rumbles[bench_upload.MELEE_GAME if args.melee else bench_upload.GAME]
    newcomers = tuple(f"bench.Newcomer{k:03d} 1.0" for k in range(args.newcomers))
    rng = np.random.default_rng(11)
    plain = bench_upload.ClientJob(ladder, rumble, 0, 1, 0, 0.0, 0.0, scenario)
    pairs = bench_upload.pair_uploads(plain, rng)  # ladder pairs; newcomers put in below
    found: list[bytes] = []
    last_ms = int(time.time() * 1000) - (bench_upload.MELEE_PAST_MS if args.melee else 10 * args.uploads)
    while len(found) < args.uploads:
        entered = min(args.newcomers, len(found) * args.newcomers // args.uploads + 1)
        if args.melee:
            entry_at = (0.0,) * entered + (float("inf"),) * (args.newcomers - entered)
            job = bench_upload.ClientJob(
                ladder, rumble, 0, 1, 0, 0.0, 0.0, scenario, newcomers, entry_at, args.melee_bots
            )
            uploads = bench_upload.melee_battle(job, rng)
        else:
            a, b, row = next(pairs)
            if newcomers and rng.random() < bench_upload.NEWCOMER_SHARE:
                b = newcomers[int(rng.integers(entered))]
            uploads = [(a, b, row)]
        last_ms += bench_upload.MELEE_BATTLE_MS if args.melee else 1  # melee: battles apart, as bench_upload.py's
        for a, b, row in uploads:
            found.append(format_upload(bench_upload.to_battle(rumble, a, b, row, last_ms, "profile")))
    return found[: args.uploads]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uploads", type=int, default=3000, help="uploads profiled")
    parser.add_argument("--newcomers", type=int, default=10, help="new bots entering during the run")
    parser.add_argument("--melee", action="store_true", help="meleerumble battles as 45 pairs each")
    parser.add_argument("--melee-bots", type=int, default=100, help="ladder bots in the melee battles")
    parser.add_argument("--top", type=int, default=30, help="functions listed per order")
    parser.add_argument("--out", type=Path, help="write the raw profile here")
    parser.add_argument(
        "--group", type=int, default=0, help="profile the writer process's work instead: transactions of N uploads"
    )
    parser.add_argument(
        "--worker",
        action="store_true",
        help="time a worker's own part instead (no profiler): the app as rumble serve wraps it, the writer "
        "replaced by one that only pickles the work and answers, beside the bare stack's Flask app",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="bench_upload.py's cache")
    args = parser.parse_args(argv)
    upload_args = bench_upload.parse_args(["--workdir", str(args.workdir)])
    rumbles = load_rumbles(settings.load()["RUMBLES_FILE"])
    ladder = bench_upload.load_ladder(upload_args.data, upload_args.bots, upload_args.seed)
    cached = bench_upload.ladder_database(upload_args, ladder, rumbles[bench_upload.GAME])
    copy = args.workdir / "profile-run.db"
    bench_upload.remove_database(copy)
    shutil.copyfile(cached, copy)
    try:
        if args.worker:
            return worker_times(copy, bodies(ladder, rumbles, args))
        if args.group > 0:
            profile, spent, count = writer_profile(copy, bodies(ladder, rumbles, args), rumbles, args.group)
            return report(profile, spent, count, args)
        client = create_app({"DB": str(copy), "BATCH_INTERVAL_MINUTES": 0}, preload_fields=True).test_client()
        sent = bodies(ladder, rumbles, args)
        profile = cProfile.Profile()
        began = time.perf_counter()
        profile.enable()
        for body in sent:
            answer = client.post("/UploadedResults", data=body).get_data(as_text=True)
            if "OK" not in answer or "ERROR" in answer:
                raise RuntimeError(f"upload not accepted: {answer!r}")
        profile.disable()
        spent = time.perf_counter() - began
    finally:
        bench_upload.remove_database(copy)
    return report(profile, spent, len(sent), args)


def writer_profile(db_path: Path, sent: list[bytes], rumbles: dict, group: int) -> tuple[cProfile.Profile, float, int]:
    """What `rumble serve`'s writer process does for these uploads: each one's transaction, built as
    the upload endpoint builds it, applied in groups of ``group`` (rumble.store.group_commit), no HTTP."""
    config = settings.load()
    store.connect(db_path, config["SYNCHRONOUS"]).close()  # migrated, as `rumble serve` leaves it
    db = single_writer.open_database(db_path, config["SYNCHRONOUS"])
    fields.preload_all(db)
    works = []
    clock = Clock()
    kept = {name: config[name] for name in decide.UPLOAD_SETTINGS}
    for body in sent:  # checked as a worker checks them, before the writer's transaction
        checked = decide.check(body, rumbles[parse_upload(body).game], kept, clock.now_ms(), db)
        if not isinstance(checked, tuple):
            raise RuntimeError(f"upload refused: {checked}")
        works.append(partial(decide.store_checked, *checked, kept, clock, "127.0.0.1"))
    profile = cProfile.Profile()
    began = time.perf_counter()
    profile.enable()
    for start in range(0, len(works), group):
        done = [Work(work) for work in works[start : start + group]]
        apply_group(db, done)
        failed = next((work.error for work in done if work.error is not None), None)
        if failed is not None or any(work.result.kind is not Kind.ACCEPTED for work in done):
            raise RuntimeError(f"upload not accepted: {failed or [work.result for work in done]}")
    profile.disable()
    spent = time.perf_counter() - began
    db.close()
    return profile, spent, len(works)


def _started(statuses: list[str], status: str, headers: list, exc_info: object = None) -> None:
    """A WSGI ``start_response`` that keeps the status."""
    statuses.append(status)


class _Answering:
    """In place of the writer process: the work pickled and read back, as the hand-off does, and
    answered accepted without storing it; ``calls`` counts the works it was given."""

    calls = 0

    def run(self, db: store.Store, apply: partial, prepare: partial) -> UploadOutcome:
        self.calls += 1
        pickle.loads(ForkingPickler.dumps(prepare))
        battle = pickle.loads(ForkingPickler.dumps(apply)).args[0]
        outcome = UploadOutcome(Kind.ACCEPTED, battle.game, battle.first.name, battle.second.name, (1, 1))
        return pickle.loads(pickle.dumps((True, outcome)))[1]


def worker_times(db_path: Path, sent: list[bytes]) -> int:
    """CPU an upload of a worker's own part, each WSGI callable called directly (no HTTP, no hand-off's
    sockets): rumble's app with and without rumble serve's deadline middleware, with and without
    pickling the work; the bare stack's Flask app (scripts/bare_http.py) for comparison."""
    import bare_http

    config = settings.load()
    app = create_app({"DB": str(db_path), "BATCH_INTERVAL_MINUTES": 0})

    class Instant(_Answering):
        def run(self, db: store.Store, apply: partial, prepare: partial) -> UploadOutcome:
            self.calls += 1
            battle = apply.args[0]
            return UploadOutcome(Kind.ACCEPTED, battle.game, battle.first.name, battle.second.name, (1, 1))

    def timed(wsgi: Callable, writer: _Answering | None) -> float:
        app.extensions["rumble.writer"] = writer
        for _ in range(2):  # the first round warms the caches up
            calls = writer.calls if writer else 0
            began = time.process_time()
            for body in sent:
                environ = {
                    "REQUEST_METHOD": "POST",
                    "PATH_INFO": "/UploadedResults",
                    "SERVER_NAME": "127.0.0.1",
                    "SERVER_PORT": "80",
                    "SERVER_PROTOCOL": "HTTP/1.1",
                    "wsgi.url_scheme": "http",
                    "wsgi.input": io.BytesIO(body),
                    "wsgi.errors": sys.stderr,
                    "CONTENT_TYPE": "application/x-www-form-urlencoded",
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_ADDR": "127.0.0.1",
                }
                statuses: list[str] = []
                answer = wsgi(environ, partial(_started, statuses))
                text = b"".join(answer)
                getattr(answer, "close", lambda: None)()
                if statuses != ["200 OK"] or (writer is None and text != b"OK\n"):
                    raise RuntimeError(f"not answered as the bare app or a stored upload is: {statuses} {text!r}")
            spent = time.process_time() - began
            if writer is not None and writer.calls - calls != len(sent):  # else some were refused before it
                raise RuntimeError(f"{len(sent) - writer.calls + calls} uploads never reached the writer")
        return 1e6 * spent / len(sent)

    deadlines = Deadlines(app, config["READ_TIMEOUT_SECONDS"], config["SEND_TIMEOUT_SECONDS"])
    rows = [
        ("the bare stack's Flask app", timed(bare_http.bare_app(), None)),
        ("rumble's app, the writer answering at once", timed(app, Instant())),
        ("... and the work pickled and read back", timed(app, _Answering())),
        ("... and rumble serve's deadline middleware", timed(deadlines, _Answering())),
    ]
    print(f"{len(sent)} uploads, each WSGI callable called directly; CPU an upload:")
    for what, micros in rows:
        print(f"  {micros:7.1f} µs  {what}")
    return 0


def report(profile: cProfile.Profile, spent: float, count: int, args: argparse.Namespace) -> int:
    print(f"{count} uploads in {spent:.2f} s under the profiler: {1000 * spent / count:.3f} ms each")
    if args.out:
        profile.dump_stats(args.out)
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(order).print_stats(args.top)
        print(text.getvalue().split("\n", 6)[-1] if order == "tottime" else text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
