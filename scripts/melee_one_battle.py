"""One 45-pair melee battle, applied as the client sends it (protocol.md 7.5), into a fresh database:
prints the winner's Rank Points and how many rating steps each bot took (issue 13, item 1).

    .venv/bin/python scripts/melee_one_battle.py

Run it with PYTHONPATH at an older checkout to compare (before issue 13: about 4,100 RP and 9 steps).
"""

import random
import tempfile
from datetime import UTC, datetime

from rumble import store
from rumble.ingest.apply import apply_battle, with_receipt
from rumble.protocol.battle import Battle, Side
from rumble.protocol.games import load_rumbles
from rumble.store.rumbles import sync_rumbles

rng = random.Random(1)
scores = {f"mel.Bot{i} 1.0": rng.randint(2_000, 20_000) for i in range(10)}
ranked = sorted(scores, key=lambda n: -scores[n])
now = datetime.now(UTC)
t = int(now.timestamp() * 1000) - 60_000
db = store.connect(tempfile.mkdtemp() + "/r.db")

with store.write(db):
    sync_rumbles(db, load_rumbles())
sides = {n: Side(n, scores[n], scores[n] // 3, min(35, scores[n] // 800)) for n in ranked}
for k, (a, b) in enumerate((a, b) for i, a in enumerate(ranked) for b in ranked[i + 1 :]):
    pair = Battle(
        game="meleerumble",
        version="1",
        client="1.9.3.9",
        teams=False,
        melee=True,
        rounds=35,
        field="1000x1000",
        uploader="Jane Doe",
        time_ms=t + k // 20,
        first=sides[a],
        second=sides[b],
    )
    with store.write(db):
        apply_battle(db, with_receipt(pair, None, now), 35, 3)
rows = db.execute(
    "SELECT b.full_name, g.rank_points, g.xonstat_battles FROM ratings g JOIN bots b ON b.id = g.bot_id "
    "JOIN rumbles r ON r.id = g.rumble_id WHERE r.name = 'meleerumble'"
).fetchall()
d = {n: (rp, steps) for n, rp, steps in rows}
print(
    "winner",
    ranked[0],
    "RP",
    round(d[ranked[0]][0], 1),
    "steps",
    d[ranked[0]][1],
    "max RP",
    round(max(v[0] for v in d.values()), 1),
    "steps per bot",
    sorted({v[1] for v in d.values()}),
)
