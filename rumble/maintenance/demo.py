"""Demo data: a small 1v1 rumble of invented robots, so a newcomer sees a table at once.

Battles are generated from hidden strengths and go through the same path as real uploads. The
robots are entered on roborumble's participants list as any maintainer's would be (``rumble
participants add``), from jars made here: each holds the ``.properties`` file the client checks and
says it is a demo, but no robot code, since the robots are invented.
"""

from __future__ import annotations

import io
import math
import random
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from rumble.ingest.apply import apply_battle
from rumble.protocol.battle import Battle, Side
from rumble.store import Store, utc_now, write

DEMO_BOTS = (
    "sample.Corners 1.0",
    "sample.Crazy 1.0",
    "sample.Fire 1.0",
    "sample.RamFire 1.0",
    "sample.SpinBot 1.2.3",
    "sample.Tracker 1.0",
    "sample.TrackFire 1.0",
    "sample.Walls 0.9b",
    "sample.SittingDuck 1.0",
    "demo.Aurora 2.1",
    "demo.Basilisk 0.9",
    "demo.Cormorant 1.4",
    "demo.Drifter 3.0",
    "demo.Eclipse 1.1",
    "demo.Firefly 0.5",
    "demo.Gambit 2.2",
    "demo.Heron 1.0",
    "demo.Ironclad 4.0",
    "demo.Jackal 1.3",
    "demo.Kestrel 0.7",
)


def demo_battles(game: str, rounds: int, field: str, count: int, seed: int = 7) -> list[Battle]:
    """``count`` battles among DEMO_BOTS: every pair once, then random pairs."""
    rng = random.Random(seed)
    strength = {name: rng.gauss(0.0, 1.0) for name in DEMO_BOTS}
    strength["sample.SittingDuck 1.0"] = -3.0
    pairs = [(a, b) for i, a in enumerate(DEMO_BOTS) for b in DEMO_BOTS[i + 1 :]]
    while len(pairs) < count:
        a, b = rng.sample(DEMO_BOTS, 2)
        pairs.append((a, b))
    now_ms = int(time.time() * 1000)
    result = []
    for n, (a, b) in enumerate(pairs[:count]):
        share = 1.0 / (1.0 + math.exp(-(strength[a] - strength[b]) * 1.2))
        share = min(0.99, max(0.01, rng.gauss(share, 0.06)))
        total = rng.randint(4000, 7000)
        score_a = round(total * share)
        wins_a = sum(rng.random() < share for _ in range(rounds))
        sides = [
            Side(a, score_a, round(score_a * 0.6), wins_a),
            Side(b, total - score_a, round((total - score_a) * 0.6), rounds - wins_a),
        ]
        sides.sort(key=lambda s: -s.score)
        result.append(
            Battle(
                game,
                "1",
                "1.9.3.9",
                False,
                False,
                rounds,
                field,
                "demo",
                now_ms - count + n,
                sides[0],
                sides[1],
                utc_now(),
                None,  # from no network: no client, local or not, is the demo's uploader
            )
        )
    return result


def load_demo(
    db: Store, game: str, rounds: int, field: str, count: int = 600, progress: Callable[[int], None] | None = None
) -> int:
    """Apply demo battles to ``game`` in one transaction; return how many were new."""
    stored = 0
    with write(db):
        for battle in demo_battles(game, rounds, field, count):
            stored += apply_battle(db, battle, rounds, min_battles=3).stored
            if progress:
                progress(1)
    return stored


def write_demo_jars(directory: Path) -> list[Path]:
    """A jar for each demo robot in ``directory`` (``pkg.Bot_version.jar``), the same bytes every time."""
    paths = []
    for name in DEMO_BOTS:
        class_name, version = name.split(" ")
        properties = (
            f"robot.classname={class_name}\nrobot.version={version}\nrobot.author.name=rumble demo\n"
            "robot.description=A demo robot of rumble's demo data: its battles are invented, and this jar holds no "
            "robot code.\n"
        )
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for entry, text in (
                ("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\nrobots: {class_name}\n\n"),
                (class_name.replace(".", "/") + ".properties", properties),
            ):
                archive.writestr(zipfile.ZipInfo(entry, date_time=(1980, 1, 1, 0, 0, 0)), text, zipfile.ZIP_DEFLATED)
        jar = directory / f"{class_name}_{version}.jar"
        jar.write_bytes(buffer.getvalue())
        paths.append(jar)
    return paths
