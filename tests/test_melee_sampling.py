"""The melee pair-sampling remedy (rumble/ingest/priority.py, melee), on a synthetic melee rumble.

A simulated client plays meleerumble through the real upload path as the real one does (protocol.md
7.5 and 8): battles of 10 bots; the new bot, while missing from the ratings, gets an ordinary battle
of 45 pairs; a priority pair [a,b] from the server's answers becomes a battle of a, b and 8 random
others, uploaded as the 17 pairs of a and b; one iteration's priority lines are used by the next
iteration's battles in order, and the rest dropped (the client deletes its priority file).

Measured over the 20 battles after the new bot's first (5 iterations of 4), averaged over 3 runs: the share of battles it
is in, and the share of old bots' pairs (pairs without it) recorded in battles it was in. By
chance, with 25 bots and battles of 10, a bot is in 10/25 = 0.4 of the battles, and a battle holding
two given old bots holds the new one with probability 8/23 = 0.348. Without the remedy (the 1v1
rules, a priority line on every pair upload) the new bot is in nearly every battle while it lacks
pairings or has pairings of fewer than 3 battles, and so are old bots' pairs. With it (one priority
line per battle, a bot in at most 2 of a batch's 8 pairs) it is in at most 2/8 of the priority
battles plus its chance 8/23 of the 6/8 others, 0.51, and still meets every old bot. (The server's
priority handed-out hold is 0 here: simulated battles take no time, so a hold of minutes would keep
every pair once handed out away for the whole simulation.)
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from conftest import battle, post_upload

from rumble import store
from rumble.app import create_app
from rumble.ingest import decide, priority
from rumble.ingest.apply import apply_battle
from rumble.protocol.battle import Battle, Side
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.store import melee_battles

OLD = [f"old.Bot{i} 1.0" for i in range(24)]
NEW = "new.Bot 1.0"
PER_ITERATION = 4  # battles per client iteration
ITERATIONS = 5
SEEDS = (1, 2, 3)
CHANCE = 8 / 23


class SimulatedClient:
    def __init__(self, upload, seed: int, clock):
        self.upload, self.rng, self.clock = upload, random.Random(seed), clock
        self.skill = {name: self.rng.uniform(0.5, 2.0) for name in OLD + [NEW]}
        self.time = clock.now_ms() - 3_600_000
        self.lines: list[tuple[str, str]] = []
        self.old_pairs = self.old_pairs_with_new = 0

    def pairs(self, bots: list[str], chosen: tuple[str, str] | None = None) -> list[Battle]:
        """One battle's pair uploads: all of them, or only the 17 of the priority pair ``chosen``."""
        scores = {b: round(1000 * self.skill[b] * self.rng.uniform(0.5, 1.5)) for b in bots}
        ranked = sorted(bots, key=lambda b: -scores[b])
        self.time += 60_000
        return [
            replace(
                battle(game="meleerumble", melee=True, field="1000x1000", time_ms=self.time),
                first=Side(first, scores[first], scores[first] // 3, scores[first] // 400),
                second=Side(second, scores[second], scores[second] // 3, scores[second] // 400),
            )
            for i, first in enumerate(ranked)
            for second in ranked[i + 1 :]
            if not chosen or {first, second} & set(chosen)
        ]

    def establish(self, db, battles: int) -> None:
        """Random battles of the old bots straight into the store (fast): an established rumble."""
        for _ in range(battles):
            with store.write(db):
                for pair in self.pairs(self.rng.sample(OLD, 10)):
                    apply_battle(db, replace(pair, received_at=store.format_time(self.clock.now())), 35, 3)

    def fight(self, bots: list[str], chosen: tuple[str, str] | None = None) -> None:
        """One battle uploaded pair by pair; keeps the [a,b] answers."""
        for pair in self.pairs(bots, chosen):
            outcome = self.upload(pair)
            assert outcome.kind is Kind.ACCEPTED, outcome
            if outcome.priority is not None:
                self.lines.append(outcome.priority)
            if NEW not in (pair.first.name, pair.second.name):
                self.old_pairs += 1
                self.old_pairs_with_new += NEW in bots

    def iteration(self, participants: list[str]) -> list[list[str]]:
        """PER_ITERATION battles, from the priority lines the last iteration's uploads brought."""
        lines, self.lines = self.lines, []
        fought = []
        for i in range(PER_ITERATION):
            if i < len(lines):
                a, b = lines[i]
                bots = [a, b] + self.rng.sample([p for p in participants if p not in (a, b)], 8)
                self.fight(bots, (a, b))
            else:
                bots = self.rng.sample(participants, 10)
                self.fight(bots)
            fought.append(bots)
        return fought


def simulate(app, upload, seed: int, extra_iterations: int = 0) -> dict[str, float]:
    """The established rumble, the new bot's first battle, then ITERATIONS measured iterations (and
    ``extra_iterations`` more, not measured)."""
    client = SimulatedClient(upload, seed, app.config["RUMBLE"]["CLOCK"])
    db = store.connect(app.config["RUMBLE"]["DB"])
    client.establish(db, 60)  # 24 bots, 2,700 pairs: every pairing has met, nearly all 3 times or more
    db.close()
    client.fight([NEW] + client.rng.sample(OLD, 9))  # the client's own battle for a bot missing from the ratings
    client.old_pairs = client.old_pairs_with_new = 0
    battles = [b for _ in range(ITERATIONS) for b in client.iteration(OLD + [NEW])]
    found = {
        "share": sum(NEW in b for b in battles) / len(battles),
        "old_pairs": client.old_pairs_with_new / client.old_pairs,
    }
    for _ in range(extra_iterations):
        client.iteration(OLD + [NEW])
    return found


def new_bot_pairings(client) -> int:
    (row,) = [r for r in client.get("/Rankings?game=meleerumble&api=1").json if r["name"] == NEW]
    return row["pairings"]


def mean_over_seeds(tmp_path, monkeypatch, clock, extra_iterations: int = 0) -> tuple[dict[str, float], list[int]]:
    """The measures averaged over SEEDS runs, each on a fresh database, and the new bot's pairings after each."""
    totals, met = {"share": 0.0, "old_pairs": 0.0}, []
    for seed in SEEDS:
        monkeypatch.setattr(decide, "_rng", random.Random(seed))  # the server's draws, repeatable
        settings = {
            "DB": str(tmp_path / f"rumble{seed}.db"),
            "BATCH_INTERVAL_MINUTES": 0,
            "PRIORITY_HOLD_MINUTES": 0,
            "CLOCK": clock,
        }
        client = create_app(settings).test_client()

        def upload(pair, client=client) -> UploadOutcome:
            return post_upload(client, pair)[0]

        for key, value in simulate(client.application, upload, seed, extra_iterations).items():
            totals[key] += value / len(SEEDS)
        met.append(new_bot_pairings(client))
    return totals, met


def test_without_the_remedy_the_new_bot_is_in_nearly_every_battle(tmp_path, monkeypatch, clock):
    monkeypatch.setattr(priority, "MELEE_SHARE", 1.0)  # no cap on a bot's share of a batch
    monkeypatch.setattr(melee_battles, "opens_battle", lambda db, battle_id: True)  # a priority line per pair
    found, _ = mean_over_seeds(tmp_path, monkeypatch, clock)
    assert found["share"] >= 0.75 and found["old_pairs"] >= CHANCE + 0.25, found


def test_with_the_remedy_the_new_bot_takes_its_share_and_meets_everyone(tmp_path, monkeypatch, clock):
    found, met = mean_over_seeds(tmp_path, monkeypatch, clock, extra_iterations=5)
    assert found["share"] <= 0.6 and found["old_pairs"] <= CHANCE + 0.15, found
    assert met == [len(OLD)] * len(SEEDS)  # after 5 more iterations it has met every old bot


@pytest.mark.parametrize("batch,cap", [(8, 2), (3, 1), (1, 1), (20, 5)])
def test_melee_cap(batch, cap):
    assert priority.melee_cap(batch) == cap


def test_within_cap_keeps_pairs_in_order_until_a_bot_has_its_share():
    counts: dict[int, int] = {}
    pairs = [(1, 2, "missing"), (1, 3, "missing"), (1, 4, "missing"), (2, 3, "few battles")]
    assert priority.within_cap(pairs, counts, 2) == [(1, 2, "missing"), (1, 3, "missing"), (2, 3, "few battles")]
    assert counts == {1: 2, 2: 2, 3: 2}
    assert priority.within_cap(pairs, {}, None) == pairs
