"""Uploads over real HTTP to a real gunicorn server, sent byte for byte as the Java client sends them."""

from __future__ import annotations

import itertools
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rumble.protocol.battle import Battle, Side
from rumble.protocol.upload import format_upload

from .e2e_support import PairResult, assert_standings, expected_standings, post_like_java

pytestmark = pytest.mark.e2e

COUNTS = re.compile(r"<(\d+) (\d+)>")
PRIORITY = re.compile(r"\[[\w.]+_[\w.\-]+,[\w.]+_[\w.\-]+\]")


def make_battle(
    first: str, second: str, scores: tuple[int, int], firsts: tuple[int, int], time_ms: int | None = None
) -> Battle:
    """A valid 1v1 roborumble result, as the stock 1.9.3.9 client would upload it."""
    return Battle(
        game="roborumble",
        version="1",
        client="1.9.3.9",
        teams=False,
        melee=False,
        rounds=35,
        field="800x600",
        uploader="Jane Doe",
        time_ms=int(time.time() * 1000) if time_ms is None else time_ms,
        first=Side(first, scores[0], scores[0] // 2, firsts[0]),
        second=Side(second, scores[1], scores[1] // 2, firsts[1]),
    )


def pair_result(battle: Battle) -> PairResult:
    return PairResult(battle.first.name, battle.second.name, battle.first.score, battle.second.score)


def upload(url: str, battle: Battle, newline: str = "\n") -> list[str]:
    """Upload ``battle`` like the client does; check the answer's form and return its lines."""
    status, content_type, text = post_like_java(url + "/UploadedResults", format_upload(battle, newline))
    assert status == 200, text
    assert content_type.startswith("text/plain"), content_type
    lines = text.splitlines()
    pair = f"{battle.first.name} vs {battle.second.name}"
    # Stored, or a repeat of a stored result: never a refusal (which would read "OK. ERROR: ...").
    assert lines[-1] in (
        f"OK. {pair} received for {battle.game}",
        f"OK. {pair} for {battle.game} was already received; not counted again",
    ), text
    for line in lines[:-1]:  # every other line must be one the client can read (protocol.md 7.3)
        assert COUNTS.fullmatch(line) or PRIORITY.fullmatch(line), text
    return lines


def counts(lines: list[str]) -> tuple[int, int]:
    (found,) = [COUNTS.fullmatch(line) for line in lines if COUNTS.fullmatch(line)]
    return int(found[1]), int(found[2])


def test_upload_is_stored_and_listed(live_server):
    """An upload is answered 200 with ``<1 1>`` and an OK line, and both bots appear in the tables."""
    battle = make_battle("sample.Corners 1.0", "sample.RamFire 1.0", (6598, 4883), (32, 3))
    lines = upload(live_server.url, battle)
    assert counts(lines) == (1, 1)
    assert "OK. sample.Corners 1.0 vs sample.RamFire 1.0 received for roborumble" in lines
    [row] = live_server.log_rows()
    assert (row["game"], row["first"], row["second"], row["first_score"], row["second_score"]) == (
        "roborumble",
        "sample.Corners 1.0",
        "sample.RamFire 1.0",
        6598,
        4883,
    )
    assert (row["first_bullet_damage"], row["second_bullet_damage"], row["first_firsts"], row["second_firsts"]) == (
        3299,
        2441,
        32,
        3,
    )
    assert (row["uploader"], row["client_time"]) == ("Jane Doe", battle.time_ms)
    assert_standings(live_server, "roborumble", expected_standings([pair_result(battle)]))


def _upload_figures(live_server) -> tuple:
    """The ratings file and every rankings column an upload changes: not the batch ranks, which the
    server's scheduled batch run may fill in at any moment (it runs once at start-up), nor Glicko's
    RD, shown grown for inactivity up to now (real-valued days: it moves by the second)."""
    batch = tuple(f"_{kind}" for kind in ("rank", "score"))
    rankings = {
        name: {k: v for k, v in row.items() if (k == "rank" or not k.endswith(batch)) and k != "glicko_rd"}
        for name, row in live_server.rankings("roborumble").items()
    }
    return live_server.ratings("roborumble"), rankings


def test_retry_is_acknowledged_and_not_counted_twice(live_server):
    """The same result sent again (also with a Windows line end) gets OK, and the log keeps one row."""
    battle = make_battle("sample.Walls 0.9b", "sample.Crazy 1.0", (5120, 1433), (30, 5))
    upload(live_server.url, battle)
    before = _upload_figures(live_server)
    for newline in ("\n", "\r\n"):
        lines = upload(live_server.url, battle, newline)
        assert counts(lines) == (1, 1)
        assert (
            "OK. sample.Walls 0.9b vs sample.Crazy 1.0 for roborumble was already received; not counted again" in lines
        )
    assert live_server.battle_count() == 1
    assert _upload_figures(live_server) == before
    assert_standings(live_server, "roborumble", expected_standings([pair_result(battle)]))


def test_concurrent_uploads_land_exactly_once(live_server):
    """Every pair of six bots uploaded twice, all at once from eight threads: each result is stored once."""
    bots = [f"e2e.Bot{i} 1.{i}" for i in range(6)]
    rng = random.Random(7)
    now = int(time.time() * 1000)
    battles = [
        make_battle(a, b, (rng.randint(2000, 7000), rng.randint(0, 2000)), (20, 15), now + i)
        for i, (a, b) in enumerate(itertools.combinations(bots, 2))
    ]
    sends = battles * 2
    rng.shuffle(sends)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda battle: (battle, upload(live_server.url, battle)), sends))
    for battle in battles:
        oks = [lines[-1] for sent, lines in answers if sent is battle]
        assert sorted("already received" in ok for ok in oks) == [False, True], oks
    logged = [(row["first"], row["second"], row["first_score"], row["second_score"]) for row in live_server.log_rows()]
    assert sorted(logged) == sorted((b.first.name, b.second.name, b.first.score, b.second.score) for b in battles)
    assert_standings(live_server, "roborumble", expected_standings(pair_result(b) for b in battles))
