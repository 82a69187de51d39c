#!/usr/bin/env python3
"""Page benchmark: the server time of every page on the 1,200-bot rumble of bench_upload.py.

1. Takes the ladder database of bench_upload.py (1,200 bots, every pairing played: 719,400
   battles, ratings computed), from its cache in --workdir if one is there (any schema version: the
   pending migrations are applied to a copy), else builds it with bench_upload's code. On the copy it
   runs a complete batch ranking (KNNPBI for the bot pages) and takes the daily rank snapshot, and
   caches the result as pages-*.db in --workdir.
2. Builds the app on that database (as a gunicorn worker does) and requests each page --repeat
   times through Flask's test client, after one warm-up request: what is timed is the server's own
   work (routing, queries, rendering), not the network.
3. Prints per page the median and slowest time and the answer's size and, for the two pages with a target (rankings and
   bot details, < 100 ms), a baseline: a bare sqlite3 read of the same rows (the 1,200 bots' summary
   rows with names; the bot's 1,199 pairings with opponent names), and the page's ratio to it.

A missed target is printed, not failed.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote, quote_plus

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's rumble, even if another is installed
import bench_upload  # noqa: E402  (the ladder and its cache)

from rumble import settings, store  # noqa: E402
from rumble.protocol.games import load_rumbles  # noqa: E402

TARGET_MS = 100.0
GAME = bench_upload.GAME


def source_database(args: argparse.Namespace) -> Path:
    """bench_upload's cached ladder database (the newest), built first if there is none."""
    cached = sorted(args.workdir.glob(f"{bench_upload.cache_prefix(args)}*.db"), key=lambda p: p.stat().st_mtime)
    if cached:
        return cached[-1]
    ladder = bench_upload.load_ladder(args.data, args.bots, args.seed)
    rumble = load_rumbles(settings.load()["RUMBLES_FILE"])[GAME]
    return bench_upload.ladder_database(args, ladder, rumble)


def pages_database(args: argparse.Namespace) -> Path:
    """The ladder with this branch's schema, a batch run and a rank snapshot; cached in --workdir."""
    from rumble.schedule.hourly import run_rumble, take_daily_snapshot

    source = source_database(args)
    path = args.workdir / f"pages-from-{source.stem}.db"
    if path.exists() and path.stat().st_mtime >= Path(__file__).stat().st_mtime and not args.rebuild_data:
        print(f"using cached {path} (--rebuild-data builds it anew)")
        return path
    building = path.with_suffix(".building")
    bench_upload.remove_database(building)
    shutil.copyfile(source, building)
    db = store.connect(building)  # applies this branch's pending migrations
    try:
        started = time.perf_counter()
        report = run_rumble(db, GAME)
        print(f"batch run     {int(report.ranked.kept.sum())} bots in {time.perf_counter() - started:.1f} s")
        take_daily_snapshot(db)
    finally:
        db.close()
    Path(f"{building}.lock").unlink(missing_ok=True)
    building.rename(path)
    print(f"built {path} from {source}")
    return path


def time_page(client, url: str, repeat: int) -> tuple[list[float], int]:
    """Milliseconds of each of ``repeat`` requests after one warm-up, and the answer's size in
    bytes (its body, as sent: no compression here); fails loudly on a non-200."""
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url}: {response.status_code} {response.get_data(as_text=True)[:200]}")
    size = len(response.get_data())
    response.close()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        response.get_data()
        times.append((time.perf_counter() - started) * 1000)
        response.close()
    return times, size


def baseline_ms(path: Path, sql: str, params: tuple, repeat: int) -> float:
    """Median milliseconds of a bare sqlite3 read of the rows a page shows."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        times = []
        for _ in range(repeat + 1):
            started = time.perf_counter()
            rows = conn.execute(sql, params).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        assert rows
        return statistics.median(times[1:])
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=bench_upload.DEFAULT_DATA, help="the LiteRumble snapshot of bench_upload.py"
    )
    parser.add_argument("--bots", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument(
        "--workdir", type=Path, default=Path("/tmp/rumble-bench"), help="bench_upload's cache, and this one's"
    )
    parser.add_argument("--repeat", type=int, default=15, help="timed requests per page")
    parser.add_argument("--rebuild-data", action="store_true", help="rebuild the pages database even if cached")
    args = parser.parse_args(argv)
    args.battles_per_pairing = 1  # bench_upload's ladder: one battle per pairing
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = pages_database(args)

    from rumble.app import create_app
    from rumble.web import close_thread_db

    app = create_app({"DB": str(path), "BATCH_INTERVAL_MINUTES": 0})
    client = app.test_client()
    top = client.get(f"/Rankings?game={GAME}&api=1&limit=2").json
    bot, other = quote_plus(top[0]["name"]), quote_plus(top[1]["name"])
    print(
        f"rumble        {GAME}: {len(client.get(f'/Rankings?game={GAME}&api=1').json)} active bots; pages for {top[0]['name']}"
    )
    g = f"game={GAME}"
    pages = [
        ("home", "/"),
        ("rankings (all 1,200 rows)", f"/Rankings?{g}"),
        ("rankings, 100 a page", f"/Rankings?{g}&limit=100"),
        ("rankings JSON (api=1)", f"/Rankings?{g}&api=1"),
        ("rankings sorted by Glicko-2", f"/Rankings?{g}&order=-glicko2"),
        ("bot details (1,199 pairings)", f"/BotDetails?{g}&name={bot}"),
        ("bot details JSON (api=1)", f"/BotDetails?{g}&name={bot}&api=1"),
        ("bot details sorted by KNNPBI", f"/BotDetails?{g}&name={bot}&order=knnpbi"),
        ("pairing", f"/Pairing?{g}&bot={bot}&vs={other}"),
        ("compare", f"/BotCompare?{g}&bota={bot}&botb={other}"),
        ("alternative rankings", f"/AlternativeRankings?{g}"),
        ("rumble statistics (one rumble)", f"/RumbleStats?{g}"),
        ("rumble statistics (all)", "/RumbleStats"),
        ("score explanation", "/ScoreExplanation"),
        ("plot: score vs opponent APS", f"/BotDetails/scores.svg?{g}&name={bot}"),
        ("plot: rank history", f"/BotDetails/history.svg?{g}&name={bot}"),
        ("plot: uploads per day", f"/RumbleStats/uploads.svg?{g}"),
        ("api: rankings (100)", f"/api/v1/rumbles/{GAME}/rankings"),
        ("api: bot (100 pairings)", f"/api/v1/rumbles/{GAME}/bots/{quote(top[0]['name'])}"),
        ("api: reference", "/api/v1/"),
        ("export: rankings.csv", f"/api/v1/rumbles/{GAME}/export/rankings.csv"),
    ]
    results = {}
    print(
        f"\n{'page':34} {'median ms':>10} {'max ms':>8} {'KB':>8}   (server time, {args.repeat} requests after a "
        "warm-up; the answer's size)"
    )
    for label, url in pages:
        times, size = time_page(client, url, args.repeat)
        results[label] = statistics.median(times)
        print(f"{label:34} {results[label]:10.1f} {max(times):8.1f} {size / 1000:8.1f}")
    close_thread_db()

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rid, bot_id = conn.execute(
        "SELECT r.id, b.id FROM rumbles r, bots b WHERE r.name = ? AND b.full_name = ?", (GAME, top[0]["name"])
    ).fetchone()
    conn.close()
    baselines = {
        "rankings (all 1,200 rows)": baseline_ms(
            path,
            "SELECT b.full_name, s.* FROM bot_summaries s JOIN bots b ON b.id = s.bot_id WHERE s.rumble_id = ?",
            (rid,),
            args.repeat,
        ),
        "bot details (1,199 pairings)": baseline_ms(
            path,
            "SELECT o.full_name, x.* FROM pairings x JOIN bots o ON o.id = x.opponent_id WHERE x.rumble_id = ? AND x.bot_id = ?",
            (rid, bot_id),
            args.repeat,
        ),
    }
    print(f"\n{'target page':34} {'median ms':>10} {'baseline':>9} {'ratio':>6}   target < {TARGET_MS:.0f} ms")
    for label, base in baselines.items():
        verdict = "met" if results[label] < TARGET_MS else "MISSED"
        print(f"{label:34} {results[label]:10.1f} {base:9.2f} {results[label] / base:6.1f}   {verdict}")
    print("baseline: a bare sqlite3 read of the same rows (no ratings, ties, batch ranks or rendering)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
