#!/usr/bin/env python3
"""Save a screenshot of every page of the demo data with Debian's headless Chromium.

Loads `rumble demo` into a new database, then battles of six more uploaders around the demo's
pairing means (four honest, one adding 15 points to one bot, one sending random shares; through
`rumble import`) for the uploader tables, then `rumble batch` (the batch ranks and the daily rank
snapshot); starts `rumble serve` on it, and has /usr/bin/chromium save one PNG per page in --out.
The maintainers' pages (ADMIN_PAGES) are fetched with a maintainer token made for the run and
shown from a local copy, as a headless screenshot cannot send the token. Nothing is downloaded;
the server and the browser are stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

CHEAT, FAVOURED = "mallory", "demo.Aurora 2.1"
LEFT_ALONE = "demo.Heron 1.0"  # the extra uploaders leave its pairings to the demo's: unconfirmed
PAGES = [
    ("home", "/", 1900),
    ("rankings", "/Rankings?game=roborumble", 1300),
    ("rankings-sorted-by-glicko2", "/Rankings?game=roborumble&order=-glicko2", 1300),
    ("alternative-rankings", "/AlternativeRankings?game=roborumble", 1500),
    ("bot-details", f"/BotDetails?game=roborumble&name={quote_plus(BOT)}", 2900),
    ("bot-details-unconfirmed", f"/BotDetails?game=roborumble&name={quote_plus(LEFT_ALONE)}", 2900),
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
    ("rumble-stats-roborumble", "/RumbleStats?game=roborumble", 2400),
    ("score-explanation", "/ScoreExplanation", 5000),
    ("api-reference", "/api/v1/", 2600),
    ("api-uploaders", "/api/v1/rumbles/roborumble/uploaders", 1500),
    ("feed-roborumble", "/feed/roborumble", 1500),
    ("participants", "/Participants?game=roborumble", 1300),
    ("participants-jar", f"/Participants/bot?name={quote_plus('demo.Aurora 2.1')}", 900),
    ("participants-enter", "/Participants/enter", 1100),
]  # (file name, path, window height)
ADMIN_PAGES = [
    ("admin-uploaders", "/admin/uploaders?game=roborumble", 1100),
    ("admin-uploader-preview", f"/admin/uploader-preview?game=roborumble&uploader={CHEAT}", 1300),
]


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

    from rumble.protocol.battle import Battle, Side
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


def add_uploaders(db: str, work: Path, battles: int = 150) -> None:
    """Import ``battles`` battles from each of six uploaders, their shares drawn around the demo's pairing means."""
    export = work / "demo.jsonl"
    rumble("export", "--db", db, "--format", "jsonl", str(export))
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    shares: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        total = r["first_score"] + r["second_score"]
        shares.setdefault((r["first_name"], r["second_name"]), []).append(100 * r["first_score"] / max(total, 1))
    means = {pair: sum(v) / len(v) for pair, v in shares.items() if LEFT_ALONE not in pair}
    rng, base, out = random.Random(14), rows[-1], []
    for uploader in ("alice", "bob", "carol", "dave", CHEAT, "randy"):
        for _ in range(battles):
            (a, b), mean = rng.choice(sorted(means.items()))
            share = rng.uniform(0, 100) if uploader == "randy" else rng.gauss(mean, 5)
            if uploader == CHEAT and FAVOURED in (a, b):
                share += 15 if a == FAVOURED else -15
            share = min(98.0, max(2.0, share))
            firsts = round(35 * share / 100)
            score_a, score_b = round(50 * share), round(50 * (100 - share))
            out.append(
                {
                    **{key: base[key] for key in ("game", "version", "client", "teams", "melee", "rounds", "field")},
                    "uploader": uploader,
                    "client_time": base["client_time"] + 1 + len(out),
                    "first_name": a,
                    "first_score": score_a,
                    "first_bullet_damage": score_a // 2,
                    "first_firsts": firsts,
                    "second_name": b,
                    "second_score": score_b,
                    "second_bullet_damage": score_b // 2,
                    "second_firsts": 35 - firsts,
                    "received_at": base["received_at"],
                }
            )
    extra = work / "uploaders.jsonl"
    extra.write_text("".join(json.dumps(row) + "\n" for row in out))
    rumble("import", "--db", db, str(extra))


def admin_copy(base: str, path: str, token: str, work: Path, name: str) -> str:
    """A maintainer's page fetched with ``token`` and saved with a <base> to the server: its file:// URL."""
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        html = answer.read().decode()
    copy = work / f"{name}.html"
    copy.write_text(html.replace("<head>", f'<head><base href="{base}/">', 1))
    return copy.as_uri() + ("#" + path.split("#", 1)[1] if "#" in path else "")


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


def screenshot(url: str, path: Path, height: int, width: int, dark: bool = False) -> None:
    """One PNG of ``url`` in a window ``width`` × ``height``; ``dark``: with the system's colour scheme dark
    (Chromium's ``--force-dark-mode``, which pages see as ``prefers-color-scheme: dark``)."""
    profile = tempfile.mkdtemp(prefix="rumble-shot-")
    try:
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                *(["--force-dark-mode"] if dark else []),
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


def reduce_colours(path: Path, colours: int) -> None:
    """Save the PNG at ``path`` again with a palette of ``colours`` colours (about a third of the
    bytes at 128 for these pages); nothing if ``colours`` is 0. Pillow comes with matplotlib."""
    if colours:
        from PIL import Image

        with Image.open(path) as image:
            reduced = image.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
        reduced.save(path, optimize=True)


def variant_suffix(width: int, dark: bool, widths: list[int]) -> str:
    """What a file name adds for its variant: the width when several are taken, ``-dark``."""
    return (f"-{width}px" if len(widths) > 1 else "") + ("-dark" if dark else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "screenshots", help="folder for the PNG files")
    parser.add_argument(
        "--widths", default="1400", help="comma-separated window widths in px (390: a phone); one PNG per width"
    )
    parser.add_argument("--dark", action="store_true", help="also a PNG of each page in the dark colour scheme")
    parser.add_argument("--only", default="", help="comma-separated page names (as in the file names) to take")
    parser.add_argument(
        "--colours",
        type=int,
        default=0,
        help="save each PNG with a palette of this many colours (0: as Chromium saved it)",
    )
    args = parser.parse_args(argv)
    widths = [int(width) for width in args.widths.split(",")]
    only = set(filter(None, args.only.split(",")))
    known = {name for name, _, _ in PAGES + ADMIN_PAGES}
    if only - known:
        parser.error(f"unknown pages {sorted(only - known)}; known: {sorted(known)}")
    variants = [(width, dark) for width in widths for dark in ((False, True) if args.dark else (False,))]
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rumble-screens-") as work:
        db = str(Path(work) / "rumble.db")
        rumble("demo", "--db", db)
        add_uploaders(db, Path(work))
        rumble("batch", "--db", db)
        token = subprocess.run(
            [sys.executable, "-m", "rumble", "admin", "create-token", "--db", db, "screenshots"],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        ).stdout.split()
        token = next(word for word in token if word.startswith("rmb_"))
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
                if only and name not in only:
                    continue
                for width, dark in variants:
                    target = args.out / f"{n:02d}-{name}{variant_suffix(width, dark, widths)}.png"
                    screenshot(base + path, target, height, width, dark)
                    reduce_colours(target, args.colours)
                    print(f"{target}  ({path})")
            for n, (name, path, height) in enumerate(ADMIN_PAGES, start=len(PAGES) + 1):
                if only and name not in only:
                    continue
                for width, dark in variants:
                    target = args.out / f"{n:02d}-{name}{variant_suffix(width, dark, widths)}.png"
                    screenshot(admin_copy(base, path, token, Path(work), name), target, height, width, dark)
                    reduce_colours(target, args.colours)
                    print(f"{target}  ({path}, as a maintainer)")
        finally:
            server.terminate()
            server.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
