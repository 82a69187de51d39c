"""A rebuild from the log equals the online tables bit for bit, and an import of an export too."""

from __future__ import annotations

import csv
import random
from collections import defaultdict

import pytest
from conftest import battle, now_ms

from rumble import store
from rumble.app import create_app
from rumble.ingest.apply import restore, retire
from rumble.maintenance import rebuild
from rumble.maintenance.importer import read_battles, store_battles
from rumble.maintenance.rebuild import rebuild_rumble, start
from rumble.protocol.games import load_rumbles
from rumble.protocol.replies import Kind
from rumble.store import uploader_sums
from rumble.store.battle_log import LOG_COLUMNS, log_rows, newest_id
from rumble.store.bots import find_bot
from rumble.store.rumbles import rumble_id
from rumble.store.tables import snapshot

BOTS = [f"pkg{i % 3}.Bot{i} 1.{i}" for i in range(12)]


def _random_session(client, upload, rng: random.Random, uploads: int = 300) -> list:
    """Uploads in random order across bots and games, with repeats, retirements and revivals."""
    sent = []
    now = now_ms()
    for n in range(uploads):
        a, b = rng.sample(BOTS, 2)
        total = rng.randint(0, 8000)
        share = rng.random()
        firsts = rng.randint(0, 35)
        result = battle(
            a,
            b,
            (round(total * share), total - round(total * share)),
            (firsts, rng.randint(34 - firsts, 35) if firsts < 34 else rng.randint(0, 35)),
            game=rng.choice(["roborumble", "minirumble"]),
            time_ms=now - n,
        )
        upload(result)
        sent.append(result)
        if rng.random() < 0.1:
            upload(rng.choice(sent))  # a client retry
        if rng.random() < 0.05:
            key = rng.choice(BOTS).replace(" ", "_")
            client.post(
                "/RemoveOldParticipant",
                data=f"version=1&game={rng.choice(['roborumble', 'minirumble'])}&name={key}&dummy=NA\n".encode(),
            )
    return sent


def _rebuild_all(db) -> None:
    rumbles = load_rumbles()
    with store.write(db):
        for game in ("roborumble", "minirumble"):
            rebuild_rumble(db, game, rumbles[game].rounds, min_battles=3)


@pytest.mark.parametrize("seed", [1, 2])
def test_rebuild_equals_online_bit_for_bit(app, client, upload, seed):
    _random_session(client, upload, random.Random(seed))
    db = store.connect(app.config["RUMBLE"]["DB"])
    online, sums = snapshot(db), uploader_sums.rows(db)
    assert len(online["pairings"]) > 100 and len(sums) > 50
    _rebuild_all(db)
    assert snapshot(db) == online
    assert uploader_sums.rows(db) == sums
    db.close()


def test_aps_matches_an_independent_computation_from_the_log(app, client, upload):
    """From the log alone: per game, each active bot's APS = mean over live opponents of the mean battle %."""
    _random_session(client, upload, random.Random(5), uploads=200)
    db = store.connect(app.config["RUMBLE"]["DB"])
    active = set(
        db.execute(
            "SELECT r.name || '|' || b.full_name FROM participants p JOIN bots b ON b.id = p.bot_id "
            "JOIN rumbles r ON r.id = p.rumble_id WHERE p.active"
        ).fetchall()
    )
    active = {row[0] for row in active}
    percents = defaultdict(list)
    for row in log_rows(db):
        s1, s2 = row["first_score"], row["second_score"]
        pct = 50.0 if s1 + s2 == 0 else 100 * s1 / (s1 + s2)
        percents[row["game"], row["first_name"], row["second_name"]].append(pct)
        percents[row["game"], row["second_name"], row["first_name"]].append(
            50.0 if s1 + s2 == 0 else 100 * s2 / (s1 + s2)
        )
    for game in ("roborumble", "minirumble"):
        for row in client.get(f"/Rankings?game={game}&api=1").json:
            pairings = [
                sum(v) / len(v)
                for (g, me, other), v in percents.items()
                if g == game and me == row["name"] and f"{game}|{other}" in active
            ]
            assert row["pairings"] == len(pairings)
            assert row["aps"] == pytest.approx(sum(pairings) / len(pairings), abs=1e-9)
    db.close()


def test_import_of_an_export_reproduces_the_tables(app, client, upload, tmp_path):
    _random_session(client, upload, random.Random(9), uploads=150)
    client.post(
        "/RemoveOldParticipant", data=f"version=1&game=roborumble&name={BOTS[0].replace(' ', '_')}&dummy=NA\n".encode()
    )
    db = store.connect(app.config["RUMBLE"]["DB"])
    path = tmp_path / "log.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=LOG_COLUMNS)
        writer.writeheader()
        writer.writerows(log_rows(db))
    fresh_app = create_app({"DB": str(tmp_path / "fresh.db")})
    fresh = store.connect(fresh_app.config["RUMBLE"]["DB"])
    rumbles = load_rumbles()
    assert store_battles(fresh, read_battles(path, rumbles), rumbles, 3) == len(list(log_rows(db)))
    # Retirements are not battles: apply the same ones; pairings and summaries then agree bit for
    # bit with no rebuild, because a summary depends only on the final pairings and who is active.
    # (Ratings also depend on *when* each retirement happened, which an export of battles lacks.)
    retired = db.execute(
        "SELECT r.name, b.full_name FROM participants p JOIN rumbles r ON r.id = p.rumble_id "
        "JOIN bots b ON b.id = p.bot_id WHERE NOT p.active"
    ).fetchall()
    assert retired
    with store.write(fresh):
        for game, name in retired:
            retire(fresh, rumble_id(fresh, game), find_bot(fresh, name), store.utc_now(), "test")
    tables = ("pairings", "bot_summaries")
    assert [snapshot(fresh)[t] for t in tables] == [snapshot(db)[t] for t in tables]
    db.close()
    fresh.close()


GAMES = {"roborumble": {}, "minirumble": {}, "twinduel": {"rounds": 75, "field": "800x800", "teams": True}}


def _session_with_events(app, client, upload, rng: random.Random, uploads: int = 400) -> None:
    """Uploads to two 1v1 rumbles and twin duel (scored by rounds won), with client retries,
    retirements (their next battle revives them) and maintainers' restorations in between."""
    now = now_ms()
    retired: list[tuple[int, int]] = []
    for n in range(uploads):
        a, b = rng.sample(BOTS, 2)
        game = rng.choice(list(GAMES))
        rounds = GAMES[game].get("rounds", 35)
        total = rng.randint(0, 8000)
        share = rng.random()
        firsts = rng.randint(0, rounds)
        scores_ = (round(total * share), total - round(total * share))
        other = rng.randint(rounds - 1 - firsts, rounds) if firsts < rounds - 1 else rng.randint(0, rounds)
        sent = battle(a, b, scores_, (firsts, other), game=game, time_ms=now - n, **GAMES[game])
        # an implausible one is held for review: logged, not counted, online or in a replay
        assert upload(sent).kind in (Kind.ACCEPTED, Kind.HELD)
        if rng.random() < 0.05:
            upload(sent)  # a client retry: acknowledged, not counted again
        if rng.random() < 0.08:
            db = store.connect(app.config["RUMBLE"]["DB"])
            with store.write(db):
                # restore the latest retired bot if no battle revived it yet, else retire another
                if not (retired and rng.random() < 0.5 and restore(db, *retired.pop(), "2026-01-01 00:00:00.000", "t")):
                    rid, bot = rumble_id(db, rng.choice(list(GAMES))), find_bot(db, rng.choice(BOTS))
                    if bot is not None and retire(db, rid, bot, "2026-01-01 00:00:00.000", "test"):
                        retired.append((rid, bot))
            db.close()


def _replayed(db, game: str, compiled: bool) -> tuple[dict, list, list, list, list]:
    """A replay's pairings and the field's every value, through the compiled path or the Python one."""
    replay = start(db, game, load_rumbles()[game].rounds)
    assert rebuild.compiled(replay)
    (rebuild.advance_compiled if compiled else rebuild.advance)(db, replay, newest_id(db))
    f = replay.field
    n = len(f.ids)
    return (
        rebuild.state_of(replay),
        f.ids,
        f.active[:n].tolist(),
        f.table[:, :n].tolist(),
        f.xonstat_battles[:n].tolist(),
    )


@pytest.mark.parametrize("seed", [3, 4])
def test_compiled_replay_equals_the_python_replay_and_online_bit_for_bit(app, client, upload, seed, monkeypatch):
    """The compiled replay (rumble.maintenance.compiled_replay) against the battle-by-battle Python replay and the
    online tables, every stored value compared with ==, on 1v1 rumbles with retirements, revivals,
    restorations and a rumble scored by survival (twin duel); its tables written a few bots at a time,
    its log read a few battles at a time (each next run read in a thread meanwhile)."""
    monkeypatch.setattr(rebuild, "WRITE_BOTS", 5)  # 12 bots: blocks of 5, 5 and 2
    monkeypatch.setattr(rebuild, "REPLAY_RUN", 7)  # the log read ahead in many runs, events between them
    _session_with_events(app, client, upload, random.Random(seed))
    db = store.connect(app.config["RUMBLE"]["DB"])
    events = db.execute("SELECT count(*), sum(active) FROM participant_events").fetchone()
    assert events[0] > 10 and 0 < events[1] < events[0]  # retirements and restorations both replayed
    for game in GAMES:
        compiled_state, *compiled_field = _replayed(db, game, compiled=True)
        python_state, *python_field = _replayed(db, game, compiled=False)
        assert len(compiled_state) > 50
        assert compiled_state == python_state  # Pairing dataclasses: every field with ==
        assert compiled_field == python_field
    online = snapshot(db)
    assert {row[0] for row in online["ratings"]} == {rumble_id(db, game) for game in GAMES}
    rumbles = load_rumbles()
    with store.write(db):
        for game in GAMES:
            rebuild_rumble(db, game, rumbles[game].rounds, min_battles=3)
    assert snapshot(db) == online
    compiled_rows = _every_derived_row(db)
    with store.write(db):
        for game in GAMES:
            rebuild_rumble(db, game, rumbles[game].rounds, min_battles=3, battle_by_battle=True)
    assert _every_derived_row(db) == compiled_rows  # the priority index too, which snapshot() leaves out
    db.close()


def _every_derived_row(db) -> dict[str, list[tuple]]:
    return {
        table: db.execute(f"SELECT * FROM {table} ORDER BY rumble_id, bot_id").fetchall()
        for table in ("pairings", "bot_summaries", "ratings", "missing_pairings", "participants")
    }
