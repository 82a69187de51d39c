"""Issue 14 items 1, 2 and 5 through the app: the uploader table (API, /RumbleStats, /admin), the
rollback preview, unconfirmed pairings (bot pages, API, priority queue) and the Atom feed."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest
from admin_jobs import post_and_wait
from conftest import audit_rows, battle, forget_pages, post_upload, vouch_for_local_uploads
from conftest import maintainer_token as _token

from rumble import store
from rumble.ingest import apply
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.replies import Kind
from rumble.schedule import hourly
from rumble.store import batch_tables, bots, history, priority_queue
from rumble.store.confirmation_queue import pop_for_uploader
from rumble.store.rumbles import rumble_id
from rumble.store.tables import snapshot

ATOM = "{http://www.w3.org/2005/Atom}"
BOTS = [f"p.Bot{i} 1.0" for i in range(5)]
STRENGTH = {name: 10.0 * i for i, name in enumerate(BOTS)}  # Bot4 strongest


def _auth(app) -> dict:
    return {"Authorization": f"Bearer {_token(app)}"}


def _share(a: str, b: str, rng: random.Random, bias: float = 0.0) -> tuple[int, int]:
    """Scores for a battle of a and b: a's share 50 + its strength edge, noise of SD 4, plus ``bias``."""
    share = min(95.0, max(5.0, 50.0 + STRENGTH[a] - STRENGTH[b] + rng.gauss(0, 4) + bias))
    return round(share * 100), round((100 - share) * 100)


def _rumble_with_a_cheat(upload, clock) -> None:
    """Three honest uploaders and one that adds 15 points to Bot0, 40 battles each over the 10 pairings."""
    rng = random.Random(3)
    pairs = [(a, b) for i, a in enumerate(BOTS) for b in BOTS[i + 1 :]]
    now = clock.now_ms()
    for u, uploader in enumerate(("honest1", "honest2", "honest3", "cheat")):
        for k in range(40):
            a, b = pairs[k % len(pairs)]
            bias = 15.0 if uploader == "cheat" and a == BOTS[0] else 0.0
            outcome = upload(
                battle(a, b, scores=_share(a, b, rng, bias), uploader=uploader, time_ms=now - 1000 * (40 * u + k))
            )
            assert outcome.kind == Kind.ACCEPTED


def test_api_lists_every_uploader_and_flags_the_cheat(client, upload, clock):
    _rumble_with_a_cheat(upload, clock)
    answer = client.get("/api/v1/rumbles/roborumble/uploaders")
    assert answer.status_code == 200
    body = answer.json
    assert (body["game"], body["alpha"], body["total"]) == ("roborumble", 0.01, 4)
    rows = {row["uploader"]: row for row in body["items"]}
    assert {u for u, row in rows.items() if row["flagged"]} == {"cheat"}
    assert body["items"][0]["uploader"] == "cheat"  # flagged ones first
    cheat = rows["cheat"]
    assert (cheat["battles"], cheat["pairings_shared"]) == (40, 10)
    assert cheat["top_bots"][0]["bot"] == BOTS[0] and cheat["top_bots"][0]["battles"] == 16  # 4 pairings x 4 battles
    assert cheat["reason"].startswith(f"flagged: {BOTS[0]} scores +")
    assert all(row["tested"] and row["p"] >= 0.01 for u, row in rows.items() if u != "cheat")
    assert set(cheat) >= {"uploader", "battles", "pairings_shared", "z", "p", "flagged", "reason", "top_bots"}


def _states(app) -> dict[str, dict[str, int]]:
    db = store.connect(app.config["RUMBLE"]["DB"])
    rows = db.execute(
        "SELECT u.name, state, count(*) FROM battles JOIN uploaders u ON u.id = uploader_id GROUP BY u.name, state"
    ).fetchall()
    db.close()
    found: dict[str, dict[str, int]] = {}
    for uploader, state, n in rows:
        found.setdefault(uploader, {})[state] = n
    return found


def test_the_scheduled_run_holds_a_flagged_uploaders_battles_until_a_maintainer_releases_them(
    app, client, upload, clock
):
    """The batch run's consistency test flags the cheat: its battles are held for review (state
    flagged, audited as the consistency test's), the tables equal a rebuild without them; once a
    maintainer released them (unflag), the next run leaves them alone."""
    _rumble_with_a_cheat(upload, clock)
    db = store.connect(app.config["RUMBLE"]["DB"])
    assert hourly.hold_flagged(db, 3) == {"roborumble": {"cheat": 40}}
    online = snapshot(db)
    db.conn.execute("BEGIN IMMEDIATE")
    rebuild_rumble(db, "roborumble", 35, 3)
    assert snapshot(db) == online
    db.conn.execute("ROLLBACK")
    db.close()
    assert _states(app) == {
        "honest1": {"ok": 40},
        "honest2": {"ok": 40},
        "honest3": {"ok": 40},
        "cheat": {"flagged": 40},
    }
    (entry,) = [row for row in audit_rows(app) if row["action"] == "flag"]
    assert entry["who"] == hourly.AUTO_HOLD and entry["battles"] == 40
    assert entry["details"]["reason"].startswith(f"flagged: {BOTS[0]} scores +")
    answer, job = post_and_wait(client, "/admin/unflag", _auth(app), json={"uploader": "cheat"})
    assert job["result"]["battles"] == 40
    db = store.connect(app.config["RUMBLE"]["DB"])
    assert hourly.hold_flagged(db, 3) == {}  # released by a maintainer: left to the maintainers
    db.close()
    assert _states(app)["cheat"] == {"ok": 40}


def test_rumble_stats_shows_the_uploader_table(client, upload, clock):
    _rumble_with_a_cheat(upload, clock)
    page = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert '<h2 id="uploaders">Uploader consistency</h2>' in page
    assert '<tr class="flagged"><td>cheat</td>' in page
    assert client.get("/RumbleStats?game=roborumble&api=1").json["consistency"][0]["uploader"] == "cheat"
    assert "preview rollback" not in page  # the preview is for maintainers only


def test_uploaders_of_an_unknown_rumble_is_a_404(client):
    answer = client.get("/api/v1/rumbles/nosuch/uploaders")
    assert answer.status_code == 404 and "nosuch" in answer.json["error"]


def test_admin_uploader_table_and_preview_need_a_maintainer(app, client, upload, clock):
    upload(battle("a.A 1", "b.B 1", uploader="U1"))
    for url in ("/admin/uploaders?game=roborumble", "/admin/uploader-preview?game=roborumble&uploader=U1"):
        answer = client.get(url)
        assert answer.status_code == 401 and answer.json["error"]
    headers = _auth(app)
    assert client.get("/admin/uploaders?game=roborumble&api=1", headers=headers).json["items"][0]["uploader"] == "U1"
    page = client.get("/admin?uploaders=roborumble", headers=headers).get_data(as_text=True)
    assert "preview rollback" in page and "<td>U1</td>" in page


def test_rollback_preview_by_hand_and_nothing_changes(app, client, upload, clock, db):
    now = clock.now_ms()
    # U1: A-B at 70 %; U2: A-B at 50 %, A-C at 60 %, B-C at 45 % for B (55 % for C).
    for i, (a, b, scores, uploader) in enumerate(
        [
            ("a.A 1", "b.B 1", (7000, 3000), "U1"),
            ("a.A 1", "b.B 1", (5000, 5000), "U2"),
            ("a.A 1", "c.C 1", (6000, 4000), "U2"),
            ("b.B 1", "c.C 1", (4500, 5500), "U2"),
        ]
    ):
        assert upload(battle(a, b, scores=scores, uploader=uploader, time_ms=now - i)).kind == Kind.ACCEPTED
    headers = _auth(app)

    def table() -> list[tuple]:  # what a rollback would change (deviations grow with the clock, so not those)
        items = client.get("/api/v1/rumbles/roborumble/rankings").json["items"]
        return [(r["name"], r["aps"], r["battles"], r["pairings"], r["elo"]) for r in items]

    before = table()
    found = client.get("/admin/uploader-preview?game=roborumble&uploader=U1&api=1", headers=headers).json
    # Now: A-B mean 60; A = (60 + 60)/2 = 60, B = (40 + 45)/2 = 42.5, C = (40 + 55)/2 = 47.5.
    # Without U1: A-B is 50; A = (50 + 60)/2 = 55, B = (50 + 45)/2 = 47.5, C = 47.5 (B before C by name).
    rows = {r["name"]: r for r in found["rows"]}
    assert (found["battles"], found["pairings_lost"], found["bots_dropped"]) == (1, 0, [])
    assert [r["name"] for r in found["rows"]] == ["a.A 1", "b.B 1", "c.C 1"]
    assert rows["a.A 1"]["aps"] == pytest.approx(55.0) and rows["a.A 1"]["aps_now"] == pytest.approx(60.0)
    assert rows["b.B 1"]["aps"] == pytest.approx(47.5) and rows["b.B 1"]["aps_now"] == pytest.approx(42.5)
    assert (rows["b.B 1"]["rank_now"], rows["b.B 1"]["rank"], rows["b.B 1"]["rank_change"]) == (3, 2, 1)
    # Without U2, only A-B is left: C has no pairing at all.
    found = client.get("/admin/uploader-preview?game=roborumble&uploader=U2&api=1", headers=headers).json
    assert (found["battles"], found["pairings_lost"], found["bots_dropped"]) == (3, 2, ["c.C 1"])
    page = client.get("/admin/uploader-preview?game=roborumble&uploader=U2", headers=headers).get_data(as_text=True)
    assert "Nothing has changed" in page
    assert table() == before
    missing = client.get("/admin/uploader-preview?game=roborumble&uploader=nobody&api=1", headers=headers)
    assert missing.status_code == 404 and "nobody" in missing.json["error"]


def test_a_pairing_from_one_uploader_is_unconfirmed_until_another_plays_it(client, upload, clock):
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", uploader="U1", time_ms=now))
    upload(battle("a.A 1", "b.B 1", uploader="U1", time_ms=now - 1))
    upload(battle("c.C 1", "a.A 1", uploader="U1", time_ms=now - 2))
    upload(battle("c.C 1", "a.A 1", uploader="U2", time_ms=now - 3))
    rows = {r["name"]: r for r in client.get("/api/v1/rumbles/roborumble/bots/a.A 1").json["items"]}
    assert (rows["b.B 1"]["confirmed"], rows["b.B 1"]["sole_uploader"]) == (False, "U1")
    assert (rows["c.C 1"]["confirmed"], rows["c.C 1"]["sole_uploader"]) == (True, None)
    page = client.get("/BotDetails?game=roborumble&name=a.A 1").get_data(as_text=True)
    assert page.count('<small class="unconfirmed"') == 1 and "1 of these pairings are <em>unconfirmed</em>" in page
    upload(battle("b.B 1", "a.A 1", uploader="U2", time_ms=now - 4))  # the other order counts too
    rows = {r["name"]: r for r in client.get("/BotDetails?game=roborumble&name=a.A 1&api=1").json["pairings"]}
    assert rows["b.B 1"]["confirmed"] is True


def test_a_waiting_unconfirmed_pairing_goes_to_another_uploader_first(app, upload, clock, db):
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", uploader="U1", time_ms=now))  # A-B: U1 alone
    upload(battle("c.C 1", "d.D 1", uploader="U1", time_ms=now - 1))
    upload(battle("c.C 1", "d.D 1", uploader="U2", time_ms=now - 2))  # C-D: confirmed
    rid = rumble_id(db, "roborumble")
    a, b, c, d = (bots.find_bot(db, n) for n in ("a.A 1", "b.B 1", "c.C 1", "d.D 1"))
    moment = store.format_time(clock.now())
    with store.write(db):
        db.execute("DELETE FROM priority_battles")  # the uploads above queued their own batches
        priority_queue.enqueue(db, rid, [(min(a, b), max(a, b), "test"), (min(c, d), max(c, d), "test")], moment)
        # U1 is not handed its own unconfirmed A-B, though it waits first: it gets C-D
        assert set(pop_for_uploader(db, rid, "U1", moment)) == {"c.C 1", "d.D 1"}
        priority_queue.enqueue(db, rid, [(min(c, d), max(c, d), "test")], moment)
        # U2 is handed A-B, which only U1 has played, though C-D waits too
        assert set(pop_for_uploader(db, rid, "U2", moment)) == {"a.A 1", "b.B 1"}
        # U3 finds only the confirmed C-D: no preference, the queue goes on as before (oldest first)
        assert pop_for_uploader(db, rid, "U3", moment) is None
        assert set(apply.next_priority_battle(db, "roborumble", 8, 3, 10, random.Random(1), clock.now(), "U3")) == {
            "c.C 1",
            "d.D 1",
        }


def _entries(client, url: str) -> dict[str, ET.Element]:
    answer = client.get(url)
    assert answer.status_code == 200 and answer.mimetype == "application/atom+xml"
    root = ET.fromstring(answer.data)
    assert root.tag == f"{ATOM}feed"
    for tag in ("id", "title", "updated"):
        assert root.find(f"{ATOM}{tag}").text
    assert root.find(f"{ATOM}author/{ATOM}name").text == "rumble"
    entries = root.findall(f"{ATOM}entry")
    ids = [e.find(f"{ATOM}id").text for e in entries]
    assert len(set(ids)) == len(ids) and all(i.startswith("urn:uuid:") for i in ids)
    for e in entries:
        datetime.strptime(e.find(f"{ATOM}updated").text, "%Y-%m-%dT%H:%M:%SZ")
    return {e.find(f"{ATOM}title").text: e for e in entries}


def test_feed_lists_completions_new_leaders_retirements_and_flags(app, client, upload, clock, db):
    _rumble_with_a_cheat(upload, clock)
    day = datetime.fromtimestamp(clock.now_ms() / 1000, UTC)
    with store.write(db):
        history.snapshot_day(db, day.strftime("%Y-%m-%d"))  # Bot4, strongest, is number 1
    answer = client.post("/admin/retire", json={"game": "roborumble", "name": BOTS[4]}, headers=_auth(app))
    assert answer.status_code == 200 and answer.json["changed"] is True
    with store.write(db):
        history.snapshot_day(db, (day + timedelta(days=1)).strftime("%Y-%m-%d"))  # now Bot3
    entries = _entries(client, "/feed/roborumble")
    titles = set(entries)
    assert {f"{name} has met every active participant of roborumble" for name in BOTS[:4]} <= titles
    assert f"New number 1 in roborumble: {BOTS[4]}" in titles
    assert f"New number 1 in roborumble: {BOTS[3]}" in titles
    assert f"{BOTS[4]} retired from roborumble" in titles
    assert "Uploader cheat flagged in roborumble" in titles
    assert not any("honest" in t for t in titles)
    second = entries[f"New number 1 in roborumble: {BOTS[3]}"]
    assert second.find(f"{ATOM}updated").text == (day + timedelta(days=1)).strftime("%Y-%m-%dT00:00:00Z")
    assert BOTS[4] in second.find(f"{ATOM}summary").text  # "after Bot4"
    assert second.find(f"{ATOM}category").get("term") == "leader"
    # the feed of every rumble holds the same events; its ids are the same for the same event
    every = _entries(client, "/feed")
    assert titles <= set(every)
    assert every[f"{BOTS[4]} retired from roborumble"].find(f"{ATOM}id").text == (
        entries[f"{BOTS[4]} retired from roborumble"].find(f"{ATOM}id").text
    )


def test_feed_of_an_unknown_rumble_is_a_404(client):
    answer = client.get("/feed/nosuch")
    assert answer.status_code == 404 and "nosuch" in answer.get_data(as_text=True)


def test_the_uploader_table_is_kept_until_the_rumble_changed_and_it_is_old_enough(app, client, upload, clock):
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", uploader="U1", time_ms=now))

    def battles() -> int:
        return client.get("/api/v1/rumbles/roborumble/uploaders").json["items"][0]["battles"]

    assert battles() == 1
    upload(battle("a.A 1", "b.B 1", uploader="U1", time_ms=now - 1))
    assert battles() == 1  # changed, but the kept table is younger than UPLOADERS_MAX_AGE_MINUTES (5)
    app.config["RUMBLE"]["UPLOADERS_MAX_AGE_MINUTES"] = 0
    forget_pages(app)  # a setting changed under the running app, not the database: the answer kept would be served
    assert battles() == 2  # changed, and any age is old enough now


def test_an_uploader_name_xml_cannot_carry_leaves_the_feed_readable(client, upload):
    """An uploader called "x\\ufffe" (U+FFFE passes the protocol's name check but XML 1.0 cannot
    carry it) retires a bot: its retirement's summary names it, and the feed still parses, the
    character replaced by U+FFFD."""
    outcome, _ = post_upload(client, battle(uploader="x\ufffe"), environ_base={"REMOTE_ADDR": "10.9.9.9"})
    assert outcome.kind is Kind.ACCEPTED
    vouch_for_local_uploads(client.application.config["RUMBLE"]["DB"], "x\ufffe@10.9.9.0/24")
    body = b"version=1&game=roborumble&name=sample.Corners_1.0&dummy=NA\n"
    answer = client.post("/RemoveOldParticipant", data=body, environ_base={"REMOTE_ADDR": "10.9.9.9"})
    assert answer.get_data(as_text=True) == "OK. sample.Corners 1.0 retired from roborumble\n"
    summary = _entries(client, "/feed/roborumble")["sample.Corners 1.0 retired from roborumble"].find(f"{ATOM}summary")
    assert "uploader x\ufffd" in summary.text and "\ufffe" not in summary.text


def test_a_forged_host_header_does_not_reach_the_links_other_readers_get(client, upload, clock):
    """The feed's events are kept per worker: the links in them must not carry the Host header of
    whoever asked first."""
    _rumble_with_a_cheat(upload, clock)
    forged = client.get("/feed/roborumble", headers={"Host": "evil.example"})
    assert forged.status_code == 200
    links = [e.find(f"{ATOM}link").get("href") for e in _entries(client, "/feed/roborumble").values()]
    assert links and all(link.startswith("http://localhost/") for link in links)


def test_a_burst_of_requests_computes_a_kept_table_once(app):
    """Eight requests at once for a table nobody has kept yet: one computes it, the others wait for
    its rows instead of reading the whole log each (a stranger's burst costs one computation)."""
    import threading
    import time

    from rumble.web import uploader_data

    calls, results, start = [], [], threading.Barrier(8)

    def compute() -> list[dict]:
        calls.append(1)
        time.sleep(0.3)
        return [{"uploader": "u", "battles": len(calls)}]

    def ask() -> None:
        conn = store.connect(app.config["RUMBLE"]["DB"])
        try:
            with app.app_context():
                rid = rumble_id(conn, "roborumble")
                start.wait()
                results.append(uploader_data.kept(conn, rid, "burst", compute))
        finally:
            conn.close()

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (len(calls), results) == (1, [[{"uploader": "u", "battles": 1}]] * 8)


def test_a_large_rumbles_uploader_table_is_the_batch_runs_and_no_request_works_it_out(
    app, client, upload, clock, monkeypatch
):
    """Past LIVE_SUMS rows of sums, a request reads the table the scheduled run stored and never
    reads the sums themselves: none before the first run (said so), the run's rows after it (as of
    its time), still shown after more battles, until the next run."""
    from rumble.rankings.uploader_consistency import consistency_of
    from rumble.store import uploader_sums
    from rumble.web import uploader_data

    _rumble_with_a_cheat(upload, clock)
    db = store.connect(app.config["RUMBLE"]["DB"])
    rid = rumble_id(db, "roborumble")
    with store.read(db):  # worked out here, independently of the stored rows
        expected = [v.as_dict() for v in consistency_of(uploader_sums.consistency_totals(db, rid))]
    monkeypatch.setattr(uploader_data, "LIVE_SUMS", 1)  # this rumble (dozens of rows) is now "large"

    def no_reading(*args):
        raise AssertionError("a request read the uploader sums")

    monkeypatch.setattr(uploader_sums, "consistency_totals", no_reading)
    assert client.get("/api/v1/rumbles/roborumble/uploaders").json["items"] == []
    page = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert "Not worked out yet: for a rumble this large the scheduled batch run does it (hourly)." in page
    monkeypatch.undo()  # the scheduled run reads them
    monkeypatch.setattr(uploader_data, "LIVE_SUMS", 1)
    assert hourly.hold_flagged(db, 3) == {"roborumble": {"cheat": 40}}
    computed_at = db.execute(
        "SELECT computed_at FROM batch_tables WHERE rumble_id = ? AND what = 'uploaders'", (rid,)
    ).fetchone()[0]
    db.close()
    with store.read(db := store.connect(app.config["RUMBLE"]["DB"])):
        after_hold = [v.as_dict() for v in consistency_of(uploader_sums.consistency_totals(db, rid))]
    db.close()
    monkeypatch.setattr(uploader_sums, "consistency_totals", no_reading)
    items = client.get("/api/v1/rumbles/roborumble/uploaders").json["items"]
    assert items == after_hold and after_hold != expected  # the table as it stands after the hold
    assert {row["uploader"] for row in items} == {"honest1", "honest2", "honest3"}
    more = battle(BOTS[0], BOTS[1], uploader="honest1", time_ms=clock.now_ms() + 5)
    assert upload(more).kind == Kind.ACCEPTED
    page = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert f"As of the scheduled batch run at {computed_at} UTC" in page
    assert client.get("/api/v1/rumbles/roborumble/uploaders").json["items"] == after_hold


def test_a_small_rumbles_stale_stored_table_gives_way_to_one_worked_out_now(app, client, upload, clock):
    """Under LIVE_SUMS a request works the table out itself when the stored one is older than the log."""
    _rumble_with_a_cheat(upload, clock)
    db = store.connect(app.config["RUMBLE"]["DB"])
    rid = rumble_id(db, "roborumble")
    with store.write(db):
        batch_tables.put(db, rid, batch_tables.UPLOADERS, [{"uploader": "stale"}], (0,), "2000-01-01 00:00:00.000")
    db.close()
    items = client.get("/api/v1/rumbles/roborumble/uploaders").json["items"]
    assert {row["uploader"] for row in items} == {"honest1", "honest2", "honest3", "cheat"}


def test_many_new_complete_bots_come_to_the_feed_from_the_batch_run(app, client, upload, clock, monkeypatch):
    """Past LIVE_CANDIDATES new complete bots, a request reads the completions the scheduled run
    stored and never reads a bot's battles: none before the run, each bot after it, dated by the
    first battle of its last pairing (read back from the log here)."""
    from rumble.store import ladder_events
    from rumble.web import feed

    monkeypatch.setattr(feed, "LIVE_CANDIDATES", 0)  # any new complete bot is "many"
    now = clock.now_ms()
    for k, (a, b) in enumerate((a, b) for i, a in enumerate(BOTS[:3]) for b in BOTS[i + 1 : 3]):
        for repeat in range(2):  # the pairing's first battle, then a later one
            sent = battle(a, b, uploader="honest1", time_ms=now - 100_000 + 10_000 * k + 1_000 * repeat)
            assert upload(sent).kind == Kind.ACCEPTED
            clock.advance(seconds=1)
    db = store.connect(app.config["RUMBLE"]["DB"])
    rows = db.execute(
        "SELECT x.full_name, y.full_name, min(b.received_at) FROM battles b JOIN bots x ON x.id = b.first_bot_id "
        "JOIN bots y ON y.id = b.second_bot_id GROUP BY b.first_bot_id, b.second_bot_id"
    ).fetchall()
    first_battle = {frozenset((a, b)): at for a, b, at in rows}
    expected = {
        bot: max(at for pair, at in first_battle.items() if bot in pair)[:19].replace(" ", "T") + "Z"
        for bot in BOTS[:3]
    }
    real = ladder_events.completions

    def no_reading(*args):
        raise AssertionError("a request read a bot's battles")

    monkeypatch.setattr(ladder_events, "completions", no_reading)
    assert not any("has met every active participant" in title for title in _entries(client, "/feed/roborumble"))
    monkeypatch.setattr(ladder_events, "completions", real)
    assert hourly.store_completions(db, clock.now()) == 1
    db.close()
    monkeypatch.setattr(ladder_events, "completions", no_reading)
    entries = _entries(client, "/feed/roborumble")  # the worker's kept events give way to the stored run's
    for bot in BOTS[:3]:
        assert (
            entries[f"{bot} has met every active participant of roborumble"].find(f"{ATOM}updated").text
            == (expected[bot])
        )
