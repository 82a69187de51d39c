"""Maintenance never blocks uploads, against a real ``rumble serve``: while ``rumble rebuild`` and an
/admin rollback replay a rumble of 300,000 battles, every upload is answered as accepted, in order,
none lost, the write lock is held only for the swap (as the server measures it, against the length of
the replay beside the uploads), and the tables end equal to a fresh rebuild.

No assertion here is on a wall-clock threshold of this machine: the only bound is the client's own
read timeout (10 s, protocol.md), past which it counts an upload as failed. How fast uploads are
answered during maintenance is measured by scripts/bench_maintenance.py."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import time

import requests

from rumble import settings, store
from rumble.app import prepare_database
from rumble.ingest import apply
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.battle import Battle, Side
from rumble.protocol.games import load_rumbles
from rumble.protocol.upload import format_upload
from rumble.store import battle_log, bots
from rumble.store.rumbles import rumble_id
from rumble.store.tables import snapshot

from .e2e_support import live_server, post_like_java

BOTS = [f"load.Bot{i:03d} 1.0" for i in range(600)]
LOGGED = 300_000  # battles: their replay takes seconds, long enough for many uploads to arrive during it
CLIENT_TIMEOUT_S = 10.0  # the real client's read timeout (protocol.md): an answer later than this is a failure
# One logged battle in MALLORY_EVERY is Mallory's, and the rollback takes them back. Under the lock the
# swap marks those battles and writes the rows they changed: work in proportion to them, not to the log
# (3,000 of 300,000 held it for 0.07-0.08 of the replay, idle or beside a busy core; 30,000, 0.24-0.30).
MALLORY_EVERY = 100
LOCK_SHARE = 0.2  # the swap holds the write lock for at most this share of the replay beside the uploads
ROBORUMBLE = load_rumbles()["roborumble"]


def _battle(rng: random.Random, time_ms: int, uploader: str, received_at: str = "") -> Battle:
    a, b = rng.sample(BOTS, 2)
    total = rng.randint(2000, 8000)
    first = rng.randint(total // 2, total)
    return Battle(
        "roborumble",
        "1",
        "1.9.3.9",
        False,
        False,
        ROBORUMBLE.rounds,
        ROBORUMBLE.field,
        uploader,
        time_ms,
        Side(a, first, first // 3, 20),
        Side(b, total - first, (total - first) // 3, 15),
        received_at,
        "10.0.0.9" if received_at else None,
    )


def _build(path) -> None:
    """A roborumble of 600 bots and 100,000 logged battles, its tables computed by the rebuild."""
    values = settings.load({"DB": str(path)})
    prepare_database(values, load_rumbles())
    db = store.connect(path)
    rng, now = random.Random(11), store.utc_now()
    start_ms = int(time.time() * 1000) - 2 * LOGGED
    with store.write(db):
        rid = rumble_id(db, "roborumble")
        for n in range(LOGGED):
            result = _battle(rng, start_ms + n, "Mallory" if n % MALLORY_EVERY == 0 else "Jane", now)
            battle_log.append_battle(
                db, rid, bots.bot_id(db, result.first.name, now), bots.bot_id(db, result.second.name, now), result
            )
        for name in BOTS:
            apply.activate(db, rid, bots.bot_id(db, name, now), now)
        rebuild_rumble(db, "roborumble", ROBORUMBLE.rounds, 3)
    db.close()


class Uploader(threading.Thread):
    """Uploads one battle after another on new connections; keeps (start, seconds, whole answer)."""

    def __init__(self, url: str, index: int):
        super().__init__(daemon=True)
        self.url, self.rng, self.index = url, random.Random(index), index
        self.stop, self.seen = threading.Event(), []

    def run(self) -> None:
        time_ms = int(time.time() * 1000)
        while not self.stop.is_set():
            time_ms += 1
            result = _battle(self.rng, time_ms, f"client-{self.index}")
            began = time.time()
            try:
                status, _, text = post_like_java(self.url + "/UploadedResults", format_upload(result))
            except OSError as error:
                status, text = 0, repr(error)
            self.seen.append((began, time.time() - began, status, text, result))

    def during(self, start: float, end: float) -> list[tuple]:
        return [row for row in self.seen if start <= row[0] <= end]


def _answered_ok(row) -> bool:
    _, _, status, text, result = row
    expected = f"OK. {result.first.name} vs {result.second.name} received for roborumble"
    return status == 200 and text.splitlines()[-1] == expected


def _assert_answered(clients: list[Uploader], start: float, end: float) -> None:
    """Every upload begun in [start, end] was answered as accepted within the client's timeout, and
    each client had uploads answered while the maintenance ran (not all at its end)."""
    rows = [row for client in clients for row in client.during(start, end)]
    assert [row[3] for row in rows if not _answered_ok(row)] == []
    assert [row[1] for row in rows if row[1] >= CLIENT_TIMEOUT_S] == []
    for client in clients:
        assert [row for row in client.seen if start <= row[0] and row[0] + row[1] <= end], (
            f"client {client.index} had no upload answered while the maintenance ran"
        )


def _lock_was_brief(aside_ms: float, locked_ms: float) -> None:
    assert 0 < locked_ms < LOCK_SHARE * aside_ms, f"the swap held the lock {locked_ms} ms of a {aside_ms} ms replay"


def test_uploads_are_answered_during_a_rebuild_and_a_rollback_and_the_lock_is_held_only_for_the_swap(tmp_path):
    _build(tmp_path / "rumble.db")
    with live_server(tmp_path) as server:
        token = subprocess.run(
            [sys.executable, "-m", "rumble", "admin", "create-token", "--db", str(server.db_path), "alice"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        clients = [Uploader(server.url, i) for i in range(3)]
        for client in clients:
            client.start()
        try:
            time.sleep(1.0)
            t0 = time.time()
            done = subprocess.run(
                [sys.executable, "-m", "rumble", "rebuild", "--db", str(server.db_path), "--game", "roborumble"],
                capture_output=True,
                text=True,
            )
            t1 = time.time()
            assert done.returncode == 0, done.stderr
            said = re.fullmatch(
                r"roborumble: replayed (\d+) battles in ([\d.]+) s beside the uploads; "
                r"the swap held the write lock ([\d.]+) ms",
                done.stdout.splitlines()[-1],
            )
            assert said is not None, done.stdout
            assert int(said[1]) >= LOGGED
            _lock_was_brief(float(said[2]) * 1000, float(said[3]))
            time.sleep(1.0)  # the uploads begun during the rebuild have been answered
            auth = {"Authorization": f"Bearer {token}"}
            answer = requests.post(
                server.url + "/admin/rollback", json={"uploader": "Mallory"}, headers=auth, timeout=10
            )
            assert answer.status_code == 202 and answer.json()["battles"] == LOGGED // MALLORY_EVERY
            while (job := requests.get(server.url + answer.json()["url"], headers=auth, timeout=10).json())[
                "state"
            ] not in ("done", "failed"):
                time.sleep(0.1)
            t2 = time.time()
            assert job["state"] == "done" and job["result"]["battles"] == LOGGED // MALLORY_EVERY, job
            _lock_was_brief(job["result"]["aside_ms"]["roborumble"], job["result"]["locked_ms"]["roborumble"])
            time.sleep(1.0)
        finally:
            for client in clients:
                client.stop.set()
            for client in clients:
                client.join(30)
        _assert_answered(clients, t0, t1)
        _assert_answered(clients, t1, t2)
    db = store.connect(server.db_path)
    for client in clients:  # every accepted upload is in the log, once, in the order it was sent
        sent = [(row[4].first.name, row[4].second.name, row[4].time_ms) for row in client.seen if _answered_ok(row)]
        logged = db.execute(
            "SELECT a.full_name, b.full_name, client_time FROM battles JOIN bots a ON a.id = first_bot_id"
            " JOIN bots b ON b.id = second_bot_id WHERE uploader_id = (SELECT id FROM uploaders WHERE name = ?) ORDER BY battles.id",
            (f"client-{client.index}",),
        ).fetchall()
        assert [tuple(row) for row in logged] == sent
    served = snapshot(db)
    with store.write(db):
        rebuild_rumble(db, "roborumble", ROBORUMBLE.rounds, 3)
    assert snapshot(db) == served
    assert db.execute("SELECT count(*) FROM battles WHERE state = 'removed'").fetchone()[0] == LOGGED // MALLORY_EVERY
    db.close()
