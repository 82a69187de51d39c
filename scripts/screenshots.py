#!/usr/bin/env python3
"""Save a screenshot of every page of the demo data with Debian's headless Chromium.

Loads `rumble demo` into a new database (then `rumble batch`: the batch ranks and the daily rank
snapshot), starts `rumble serve` on it, and has /usr/bin/chromium save one PNG per page in --out.
Nothing is downloaded; the server and the browser are stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote, quote_plus

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
BOT, OTHER = "demo.Aurora 2.1", "sample.Walls 0.9b"
NEW_VERSION = "demo.Aurora 2.2"  # uploaded by versions() so that /BotCompare shows a version test
PAGES = [
    ("home", "/", 1900),
    ("rankings", "/Rankings?game=roborumble", 1300),
    ("rankings-sorted-by-glicko2", "/Rankings?game=roborumble&order=-glicko2", 1300),
    ("alternative-rankings", "/AlternativeRankings?game=roborumble", 1500),
    ("bot-details", f"/BotDetails?game=roborumble&name={quote_plus(BOT)}", 2900),
    ("pairing", f"/Pairing?game=roborumble&bot={quote_plus(BOT)}&vs={quote_plus(OTHER)}", 900),
    ("bot-compare", f"/BotCompare?game=roborumble&bota={quote_plus(BOT)}&botb={quote_plus(OTHER)}", 1500),
    ("rankings-los-to-next", "/Rankings?game=roborumble&order=-aps", 900),
    ("alternative-rankings-los-matrix", "/AlternativeRankings?game=roborumble#los", 1500),
    (
        "bot-compare-version-test",
        f"/BotCompare?game=roborumble&bota={quote_plus(NEW_VERSION)}&botb={quote_plus(BOT)}",
        1200,
    ),
    ("rumble-stats", "/RumbleStats", 1500),
    ("rumble-stats-roborumble", "/RumbleStats?game=roborumble", 1500),
    ("score-explanation", "/ScoreExplanation", 5000),
    ("api-reference", "/api/v1/", 2600),
]  # (file name, path, window height)


def rumble(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "rumble", *args],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def versions(base: str, battles: int = 3) -> None:
    """Upload ``battles`` battles of NEW_VERSION against each of BOT's opponents, about 4 points
    better than BOT against each (a seeded spread of 6 points a battle), through /UploadedResults."""
    sys.path.insert(0, str(REPO))
    import json
    import random

    from rumble.battle import Battle, Side
    from rumble.protocol.upload import format_upload

    rng = random.Random(14)
    url = f"{base}/api/v1/rumbles/roborumble/bots/{quote(BOT)}?limit=100"
    with urllib.request.urlopen(url, timeout=10) as answer:
        pairings = json.load(answer)["items"]
    for row in pairings:
        for _ in range(battles):
            share = min(0.97, max(0.03, (row["aps"] + 4 + rng.gauss(0, 6)) / 100))
            mine = round(3000 * share)
            battle = Battle(
                "roborumble",
                "1",
                "1.9.3.9",
                False,
                False,
                35,
                "800x600",
                "screenshots",
                int(time.time() * 1000),
                Side(NEW_VERSION, mine, mine // 2, round(35 * share)),
                Side(row["name"], 3000 - mine, (3000 - mine) // 2, 35 - round(35 * share)),
            )
            request = urllib.request.Request(
                f"{base}/UploadedResults",
                data=format_upload(battle),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                answer.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"rumble serve exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"rumble serve did not answer within {seconds:.0f} s")


def screenshot(url: str, path: Path, height: int, width: int) -> None:
    profile = tempfile.mkdtemp(prefix="rumble-shot-")
    try:
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--screenshot={path}",
                url,
            ],
            check=True,
            timeout=120,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "screenshots", help="folder for the PNG files")
    parser.add_argument("--width", type=int, default=1400)
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rumble-screens-") as work:
        db = str(Path(work) / "rumble.db")
        rumble("demo", "--db", db)
        rumble("batch", "--db", db)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "rumble", "serve", "--db", db, "--port", str(port), "--workers", "1"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "RUMBLE_BATCH_INTERVAL_MINUTES": "0"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_up(base + "/", server)
            versions(base)
            for n, (name, path, height) in enumerate(PAGES, start=1):
                target = args.out / f"{n:02d}-{name}.png"
                screenshot(base + path, target, height, args.width)
                print(f"{target}  ({path})")
        finally:
            server.terminate()
            server.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
