"""Team rumbles: teams are the competitors as the client names them; teamrumble is scored like 1v1
and twinduel by rounds won (RRServer's twin duel, peers.md section 2; rumble/rumbles.toml)."""

from __future__ import annotations

import pytest
from conftest import battle, now_ms

from rumble import store
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.games import ConfigError, load_rumbles, parse_rumbles
from rumble.protocol.replies import Kind
from rumble.store.tables import snapshot

A, B, C = "sample.SpinAndTrack 1.0", "sampleteam.LeaderAndDroid 1.0", "sampleteam.MyFirstTeam 1.0"


def team_battle(game: str, first: str, second: str, scores: tuple[int, int], firsts: tuple[int, int], n: int):
    settings = load_rumbles()[game]
    return battle(
        first,
        second,
        scores,
        firsts,
        game=game,
        teams=True,
        rounds=settings.rounds,
        field=settings.field,
        time_ms=now_ms() + n,
    )


def test_twinduel_percentages_are_of_rounds_won(client, upload):
    """A outscores B (30000 to 15000) but wins fewer rounds (30 to 45 of 75): in twinduel A's battle
    % is 100·30/75 = 40; a second battle, 50 to 25 rounds, gives 66.667; A's APS is their mean,
    53.333. The same two battles in teamrumble count by score: 66.667 and 100·8000/12000 = 66.667."""
    for result in (
        team_battle("twinduel", A, B, (30_000, 15_000), (30, 45), 1),
        team_battle("twinduel", A, B, (8_000, 4_000), (50, 25), 2),
        team_battle("teamrumble", A, C, (30_000, 15_000), (3, 7), 3),
        team_battle("teamrumble", A, C, (8_000, 4_000), (5, 5), 4),
    ):
        assert upload(result).kind is Kind.ACCEPTED
    duel = {row["name"]: row for row in client.get("/Rankings?game=twinduel&api=1").json}
    assert duel[A]["aps"] == pytest.approx((40 + 200 / 3) / 2)
    assert duel[B]["aps"] == pytest.approx((60 + 100 / 3) / 2)
    assert duel[A]["survival"] == pytest.approx((100 * 30 / 75 + 100 * 50 / 75) / 2)  # survival keeps its meaning
    team = {row["name"]: row for row in client.get("/Rankings?game=teamrumble&api=1").json}
    assert team[A]["aps"] == pytest.approx(200 / 3)
    battles = client.get("/Pairing", query_string={"game": "twinduel", "bot": A, "vs": B, "api": "1"}).json["battles"]
    assert sorted(b["a_percent"] for b in battles) == [pytest.approx(40), pytest.approx(200 / 3)]


def test_twinduel_rebuild_equals_online(app, upload):
    for n in range(30):
        first, second = (A, B) if n % 2 else (B, C)
        upload(team_battle("twinduel", first, second, (1000 + 97 * n, 900 + 13 * n), (n % 75, (7 * n) % 75), n))
    db = store.connect(app.config["RUMBLE"]["DB"])
    online = snapshot(db)
    with store.write(db):
        rebuild_rumble(db, "twinduel", 75, min_battles=3)
    assert snapshot(db) == online
    db.close()


def test_scoring_setting_is_checked():
    text = '[t]\nrounds = 10\nfield = "800x800"\nteams = true\nscoring = "%s"\n'
    assert parse_rumbles(text % "survival")["t"].scoring == "survival"
    assert load_rumbles()["roborumble"].scoring == "score"
    with pytest.raises(ConfigError, match="scoring must be one of score, survival"):
        parse_rumbles(text % "rounds")
