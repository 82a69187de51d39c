"""The real client (Robocode 1.9.3.9) playing meleerumble and teamrumble against a real gunicorn server.

Melee: every pair the client reports uploading is in the log in its order; each battle it fought
(``Fighting battle i ... A,B,C,...``) is reassembled once per rumble it went to, with exactly its
bots and pairs, winner and second as the client printed them (``RESULT = X wins, Y is second.``);
the Weng-Lin and XonStat tables equal a computation written here (tests/weng_lin_paper.py) from the
figures the client uploaded. Kept small for CI: two battles of ten bots (the stock MELEEBOTS, so a
battle is complete at its 45th pair).
"""

from __future__ import annotations

import re

import pytest
from weng_lin_paper import paper_update

from .e2e_support import LiveServer, PairResult, assert_standings, expected_standings, read_only
from .test_real_client import assert_client_saw_no_error, parse_client_log, require_real_client, run_client

pytestmark = pytest.mark.e2e

MELEE_DIVISIONS = (
    ("meleerumble", None),
    ("minimeleerumble", 1500),
    ("micromeleerumble", 750),
    ("nanomeleerumble", 250),
)


def parse_melee_log(text: str) -> tuple[dict[str, int], list[tuple[list[str], str, str]], list[str]]:
    """Codesizes, the battles fought ((bots, winner, second), engine skips left out) and the upload lines."""
    codesizes, battles, uploads = {}, [], []
    fighting, uploading = None, False
    for line in text.splitlines():
        if found := re.fullmatch(r"Downloaded (.+) into \S+ \(Codesize: (\d+)\)", line):
            codesizes[found[1]] = int(found[2])
        elif found := re.fullmatch(r"Fighting battle \d+ \.\.\. (.+)", line):
            fighting = found[1].split(",")
        elif found := re.fullmatch(r"RESULT = (.+) wins, (.+) is second\.", line):
            assert fighting and found[1] in fighting and found[2] in fighting, (fighting, line)
            battles.append((fighting, found[1], found[2]))
            fighting = None
        elif line.startswith("Uploading results ..."):
            uploading = True
        elif line.startswith("Updating number of battles fought ..."):
            uploading = False
        elif uploading and " received for " in line:
            uploads.append(line)
    return codesizes, battles, uploads


def reassembled(server: LiveServer, game: str) -> list[dict]:
    with read_only(server.db_path) as db:
        rows = db.execute(
            "SELECT m.id, m.state, m.pairs, m.late_pairs, m.closed_by FROM melee_battles m JOIN rumbles r ON r.id = m.rumble_id "
            "WHERE r.name = ? ORDER BY m.id",
            (game,),
        ).fetchall()
        result = []
        for melee_id, state, pairs, late, closed_by in rows:
            bots = db.execute(
                "SELECT b.full_name, e.score, e.rank FROM melee_entries e JOIN bots b ON b.id = e.bot_id "
                "WHERE e.melee_battle_id = ?",
                (melee_id,),
            ).fetchall()
            result.append(
                dict(state=state, pairs=pairs, late=late, closed_by=closed_by, bots={n: (s, r) for n, s, r in bots})
            )
    return result


def melee_ratings(server: LiveServer, game: str) -> dict[str, tuple]:
    with read_only(server.db_path) as db:
        rows = db.execute(
            "SELECT b.full_name, m.mu, m.sigma, m.battles, m.xonstat FROM melee_ratings m JOIN bots b ON b.id = m.bot_id "
            "JOIN rumbles r ON r.id = m.rumble_id WHERE r.name = ?",
            (game,),
        ).fetchall()
    return {row[0]: row[1:] for row in rows}


def rating_steps(server: LiveServer, game: str) -> dict[str, tuple]:
    """Each bot's count of rating steps (every rating moves together, counted by XonStat's battles),
    its XonStat Elo and Rank Points in the rumble's ratings table."""
    with read_only(server.db_path) as db:
        rows = db.execute(
            "SELECT b.full_name, g.xonstat_battles, g.xonstat, g.rank_points FROM ratings g JOIN bots b ON b.id = g.bot_id "
            "JOIN rumbles r ON r.id = g.rumble_id WHERE r.name = ?",
            (game,),
        ).fetchall()
    return {row[0]: row[1:] for row in rows}


def expected_melee_ratings(battles: list[dict[str, int]]) -> dict[str, tuple]:
    """The paper's Weng-Lin and XonStat's mean of pairwise changes, battle after battle."""
    state: dict[str, tuple] = {}
    for scores in battles:
        names = sorted(scores)
        old = [state.get(n, (25.0, 25 / 3, 0, 1500.0)) for n in names]
        new = paper_update(
            [o[0] for o in old], [o[1] for o in old], [1 + sum(scores[o] > scores[n] for o in names) for n in names]
        )
        for i, n in enumerate(names):
            k = 200 - 5 * min(old[i][2], 32)
            changes = [
                k
                * (
                    (0.5 if scores[n] + scores[o] == 0 else scores[n] / (scores[n] + scores[o]))
                    - 1 / (1 + 10 ** ((old[j][3] - old[i][3]) / 400))
                )
                for j, o in enumerate(names)
                if j != i
            ]
            state[n] = (new[i][0], new[i][1], old[i][2] + 1, old[i][3] + sum(changes) / len(changes))
    return state


def test_real_client_melee_battles_are_reassembled_and_rated_once(live_server: LiveServer, tmp_path):
    require_real_client()
    run = run_client(live_server, tmp_path, "--game", "meleerumble", "--battles", "2", "--melee-bots", "10")
    skipped = assert_client_saw_no_error(run, battles=2)
    codesizes, fought, upload_lines = parse_melee_log(run.log())
    assert len(fought) == 2 - skipped and fought
    assert all(re.fullmatch(r"OK\. (.+) vs (.+) received for (\S+)", line) for line in upload_lines), upload_lines

    # Every pair the client reported uploading is in the log, in its order, and nothing else.
    rows = live_server.log_rows()
    reported = [re.fullmatch(r"OK\. (.+) vs (.+) received for (\S+)", line).groups() for line in upload_lines]
    assert [(row["first"], row["second"], row["game"]) for row in rows] == reported
    assert all((row["melee"], row["field"], row["rounds"], row["state"]) == (1, "1000x1000", 35, "ok") for row in rows)

    scores_by_battle = []
    for game, limit in MELEE_DIVISIONS:
        found = reassembled(live_server, game)
        expected_battles = []
        for bots, winner, second in fought:
            members = [b for b in bots if limit is None or codesizes[b] < limit]
            if len(members) >= 2:
                expected_battles.append((members, winner, second))
        assert len(found) == len(expected_battles), game
        for battle, (members, winner, second) in zip(found, expected_battles):
            assert set(battle["bots"]) == set(members), game
            assert battle["pairs"] == len(members) * (len(members) - 1) // 2 and battle["late"] == 0, game
            mine = [
                r
                for r in rows
                if r["game"] == game
                and battle["bots"].get(r["first"], (None,))[0] == r["first_score"]
                and battle["bots"].get(r["second"], (None,))[0] == r["second_score"]
            ]
            assert len(mine) == battle["pairs"], game  # the logged pairs with this battle's figures
            if len(members) == 10:  # the stock battle size: complete at its 45th pair, rated once
                assert (battle["state"], battle["closed_by"]) == ("rated", "complete"), game
                ranked = sorted(battle["bots"], key=lambda name: battle["bots"][name][1])
                assert ranked[:2] == [winner, second] and battle["bots"][winner][1] == 1, game
            else:  # a division's share of the battle waits for the timeout (rumble/ingest/melee.py)
                assert (battle["state"], battle["closed_by"]) == ("open", None), game
            if game == "meleerumble":
                scores_by_battle.append({name: score for name, (score, _) in battle["bots"].items()})
        assert sum(b["pairs"] for b in found) == sum(r["game"] == game for r in rows), game  # every pair in a battle
    got, expected = melee_ratings(live_server, "meleerumble"), expected_melee_ratings(scores_by_battle)
    assert set(got) == set(expected)
    for name, values in expected.items():
        assert got[name] == pytest.approx(values, rel=1e-12), name
    # One step of every rating per battle, not one per pair upload (issue 13): each bot's ratings
    # moved once per battle it fought, XonStat as the pairwise mean, Rank Points at most 500 a step
    steps = rating_steps(live_server, "meleerumble")
    assert set(steps) == set(expected)
    for name, (_, _, battles, xonstat) in expected.items():
        assert steps[name][0] == battles and steps[name][1] == pytest.approx(xonstat, rel=1e-12), name
        assert 0 <= steps[name][2] <= 500 * battles, name
    rankings = live_server.rankings("meleerumble")
    for name, (mu, sigma, battles, _) in expected.items():
        row = rankings[name]
        assert (row["mu"], row["sigma"], row["melee_battles"]) == (pytest.approx(mu), pytest.approx(sigma), battles)
        assert row["conservative"] == pytest.approx(mu - 3 * sigma)


def test_real_client_team_battles_are_logged_and_ranked(live_server: LiveServer, tmp_path):
    """teamrumble: each battle is one upload with the team names and team totals (protocol.md 7.6),
    in the log as the client printed it (``RESULT = A wins x to y``), ranked like 1v1."""
    require_real_client()
    run = run_client(live_server, tmp_path, "--game", "teamrumble", "--battles", "2")
    skipped = assert_client_saw_no_error(run, battles=2)
    client = parse_client_log(run.log())
    assert len(client.results) == 2 - skipped and client.results
    assert len(client.upload_lines) == len(client.results)
    for line, result in zip(client.upload_lines, client.results):
        assert line == f"OK. {result.first} vs {result.second} received for teamrumble", line
    rows = live_server.log_rows()
    assert [PairResult(r["first"], r["second"], r["first_score"], r["second_score"]) for r in rows] == client.results
    assert all(
        (r["game"], r["teams"], r["melee"], r["field"], r["rounds"], r["state"])
        == ("teamrumble", 1, 0, "1200x1200", 10, "ok")
        for r in rows
    )
    assert_standings(live_server, "teamrumble", expected_standings(client.results))
