"""Flag, unflag and roll back battles by uploader, address, time and client (issue 8, integrity):
the log keeps every row, the tables equal a rebuild of what remains, and everything is audited."""

from __future__ import annotations

from collections import defaultdict

import pytest
from admin_jobs import post_and_wait, wait_for_all
from click.testing import CliRunner
from conftest import audit_rows as _audit
from conftest import battle, post_upload, vouch_for_local_uploads
from conftest import maintainer_token as _token

from rumble import store
from rumble.cli import cli
from rumble.maintenance.rebuild import rebuild_rumble
from rumble.protocol.games import load_rumbles
from rumble.protocol.replies import Kind
from rumble.store.tables import snapshot

BOTS = ["a.Alpha 1.0", "b.Beta 1.0", "c.Gamma 1.0", "d.Delta 1.0", "e.Eps 1.0"]


def _send(client, result, addr: str = "127.0.0.1") -> Kind:
    """Upload ``result`` from ``addr``; what became of it."""
    return post_upload(client, result, environ_base={"REMOTE_ADDR": addr})[0].kind


def _season(app, client, now: int) -> dict[str, list]:
    """Every pair of BOTS meets three times: twice from honest Jane at 10.0.0.1, once from Mallory at
    10.6.6.6 with lopsided scores; a few more from Bob on an older client. Returns what each sent."""
    app.config["RUMBLE"]["ACCEPTED_CLIENTS"] = ("1.9.3.9", "1.9.3.8")
    sent = defaultdict(list)
    n = 0
    for i, a in enumerate(BOTS):
        for b in BOTS[i + 1 :]:
            for k in range(2):
                r = battle(
                    a,
                    b,
                    (3000 + 250 * i + 40 * k, 2600 + 30 * k),
                    (20, 15),
                    time_ms=now - (n := n + 1),
                    uploader="Jane",
                )
                assert _send(client, r, "10.0.0.1") is Kind.ACCEPTED
                sent["Jane"].append(r)
            r = battle(a, b, (100, 6000), (0, 35), time_ms=now - (n := n + 1), uploader="Mallory")
            assert _send(client, r, "10.6.6.6") is Kind.ACCEPTED
            sent["Mallory"].append(r)
    for a, b in ((BOTS[0], BOTS[1]), (BOTS[2], BOTS[3])):
        r = battle(a, b, (4000, 2000), (30, 5), time_ms=now - (n := n + 1), uploader="Bob", client="1.9.3.8")
        assert _send(client, r, "10.0.0.2") is Kind.ACCEPTED
        sent["Bob"].append(r)
    return sent


def _db(app) -> store.Store:
    return store.connect(app.config["RUMBLE"]["DB"])


def _fresh_rebuild_equals_tables(app) -> dict:
    """Rebuild roborumble from its log in a throwaway transaction: the tables must not change."""
    db = _db(app)
    online = snapshot(db)
    db.conn.execute("BEGIN IMMEDIATE")
    rebuild_rumble(db, "roborumble", load_rumbles()["roborumble"].rounds, 3)
    rebuilt = snapshot(db)
    db.conn.execute("ROLLBACK")
    db.close()
    assert rebuilt == online
    return online


def _states(app) -> dict[str, dict[str, int]]:
    db = _db(app)
    rows = db.execute(
        "SELECT u.name, state, count(*) FROM battles JOIN uploaders u ON u.id = uploader_id GROUP BY u.name, state"
    ).fetchall()
    db.close()
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for uploader, state, count in rows:
        found[uploader][state] = count
    return dict(found)


def _pairing_battles(app) -> dict[tuple[str, str], int]:
    db = _db(app)
    rows = db.execute(
        "SELECT a.full_name, b.full_name, p.battles FROM pairings p JOIN bots a ON a.id = p.bot_id JOIN bots b ON b.id = p.opponent_id"
    ).fetchall()
    db.close()
    return {(a, b): n for a, b, n in rows}


def _generation(app) -> int:
    db = _db(app)
    found = db.execute("SELECT generation FROM rumbles WHERE name = 'roborumble'").fetchone()[0]
    db.close()
    return found


def test_rollback_by_uploader_equals_a_rebuild_and_unflag_restores(app, client, clock):
    sent = _season(app, client, clock.now_ms())
    token = _token(app)
    before = _fresh_rebuild_equals_tables(app)
    generation = _generation(app)

    auth = {"Authorization": f"Bearer {token}"}
    answer, job = post_and_wait(client, "/admin/rollback", auth, json={"uploader": "Mallory"})
    assert answer["battles"] == len(sent["Mallory"]) == 10 and answer["state"] == "queued"
    assert answer["per_rumble"] == {"roborumble": 10}
    assert (job["kind"], job["result"]["battles"], job["result"]["per_rumble"]) == ("rollback", 10, {"roborumble": 10})
    # Every row is still in the log; Mallory's are marked removed.
    assert _states(app) == {"Jane": {"ok": 20}, "Mallory": {"removed": 10}, "Bob": {"ok": 2}}
    after = _fresh_rebuild_equals_tables(app)
    assert after != before
    assert _generation(app) > generation  # every worker's copy and the batch schedule notice
    # Independently: each pairing now counts exactly the battles Jane and Bob sent for it.
    expected: dict[tuple[str, str], int] = defaultdict(int)
    for r in sent["Jane"] + sent["Bob"]:
        expected[r.first.name, r.second.name] += 1
        expected[r.second.name, r.first.name] += 1
    assert _pairing_battles(app) == expected
    entry = _audit(app)[0]
    assert (entry["who"], entry["action"], entry["battles"]) == ("alice", "rollback", 10)
    assert entry["details"]["criteria"] == {"uploader": "Mallory"}

    # An upload after the rollback goes through the worker's reloaded copy and still equals a rebuild.
    assert _send(client, battle(BOTS[0], BOTS[4], (3300, 3100), uploader="Jane"), "10.0.0.1") is Kind.ACCEPTED
    _fresh_rebuild_equals_tables(app)

    answer, _ = post_and_wait(client, "/admin/unflag", auth, json={"uploader": "Mallory"})
    assert answer["battles"] == 10
    restored = _fresh_rebuild_equals_tables(app)
    assert _states(app)["Mallory"] == {"ok": 10}
    # The same log again as before the rollback, plus the one battle since: re-rolling that one back
    # must give exactly the tables from before the rollback.
    post_and_wait(client, "/admin/rollback", auth, json={"uploader": "Jane", "since": _last_received(app)})
    assert _fresh_rebuild_equals_tables(app) == before != restored


def _last_received(app) -> str:
    db = _db(app)
    found = db.execute("SELECT max(received_at) FROM battles").fetchone()[0]
    db.close()
    return found


def test_flag_by_remote_address_time_range_and_client_version(app, client, clock):
    sent = _season(app, client, clock.now_ms())
    token = _token(app)
    auth = {"Authorization": f"Bearer {token}"}
    assert post_and_wait(client, "/admin/flag", auth, json={"remote_addr": "10.6.6.6"})[0]["battles"] == 10
    assert _states(app)["Mallory"] == {"flagged": 10}
    _fresh_rebuild_equals_tables(app)
    flagged = client.get("/admin/flagged", headers=auth).json
    assert len(flagged) == 10 and {b["uploader"] for b in flagged} == {"Mallory"}
    html = client.get("/admin", headers=auth).get_data(as_text=True)
    assert html.count("10.6.6.6") >= 10
    # A rollback takes flagged battles too; flagging again finds nothing left in state ok.
    assert post_and_wait(client, "/admin/flag", auth, json={"remote_addr": "10.6.6.6"})[1]["result"]["battles"] == 0
    assert (
        post_and_wait(client, "/admin/rollback", auth, json={"client": "1.9.3.8"})[1]["result"]["battles"]
        == len(sent["Bob"])
        == 2
    )
    assert _states(app)["Bob"] == {"removed": 2}
    _fresh_rebuild_equals_tables(app)
    # A time range: everything received from the first battle on, until far in the future.
    db = _db(app)
    first = db.execute("SELECT min(received_at) FROM battles").fetchone()[0]
    db.close()
    answer, job = post_and_wait(client, "/admin/unflag", auth, json={"since": first, "until": "2999-01-01"})
    assert answer["battles"] == job["result"]["battles"] == 12
    assert {s for states in _states(app).values() for s in states} == {"ok"}
    _fresh_rebuild_equals_tables(app)
    # An empty time range before the first battle touches nothing.
    answer, job = post_and_wait(client, "/admin/rollback", auth, json={"since": "2000-01-01", "until": "2000-01-02"})
    assert answer["battles"] == job["result"]["battles"] == 0
    # Ids, as a JSON array or as text.
    db = _db(app)
    bobs = [
        row[0]
        for row in db.execute(
            "SELECT id FROM battles WHERE uploader_id = (SELECT id FROM uploaders WHERE name = 'Bob') ORDER BY id"
        )
    ]
    db.close()
    assert post_and_wait(client, "/admin/flag", auth, json={"ids": bobs})[1]["result"]["battles"] == 2
    assert (
        post_and_wait(client, "/admin/unflag", auth, json={"ids": f"{bobs[0]}, {bobs[1]}"})[1]["result"]["battles"] == 2
    )
    _fresh_rebuild_equals_tables(app)


def test_a_dry_run_counts_and_changes_nothing(app, client, clock):
    _season(app, client, clock.now_ms())
    token = _token(app)
    before = _fresh_rebuild_equals_tables(app)
    response = client.post(
        "/admin/rollback", json={"uploader": "Mallory", "dry_run": True}, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.json == {
        "action": "rollback",
        "dry_run": True,
        "battles": 10,
        "per_rumble": {"roborumble": 10},
        "replayed": {},
    }
    assert _states(app)["Mallory"] == {"ok": 10} and _fresh_rebuild_equals_tables(app) == before


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({}, "give at least one of"),
        ({"game": "roborumble"}, "give at least one of"),
        ({"uploader": "Mallory", "game": "nosuch"}, "no rumble called 'nosuch'"),
        ({"since": "yesterday"}, "since must be a date or time"),
        ({"until": "2026-13-01"}, "until must be a date or time"),
        ({"since": "2026-11-22", "until": "2026-11-21"}, "since must come before until"),
        ({"ids": "1, two"}, "battle ids must be whole numbers"),
    ],
)
def test_unusable_criteria_are_refused_with_the_reason_and_change_nothing(app, client, fields, reason, clock):
    _season(app, client, clock.now_ms())
    token = _token(app)
    before = _fresh_rebuild_equals_tables(app)
    response = client.post("/admin/rollback", json=fields, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 400 and reason in response.json["error"]
    assert _fresh_rebuild_equals_tables(app) == before and "removed" not in str(_states(app))
    assert _audit(app)[0]["details"]["error"] == response.json["error"]


def test_a_browser_form_rolls_back_with_its_csrf_token(app, client, clock):
    import re

    _season(app, client, clock.now_ms())
    token = _token(app)
    page = client.get("/admin/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    client.post("/admin/login", data={"token": token, "csrf_token": csrf, "next": "/admin"})
    browser = {"Accept": "text/html"}
    page = client.get("/admin", headers=browser).get_data(as_text=True)
    assert 'action="/admin/rollback"' in page
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    assert client.post("/admin/rollback", data={"uploader": "Mallory"}, headers=browser).status_code == 403
    assert _states(app)["Mallory"] == {"ok": 10}
    response = client.post(
        "/admin/rollback", data={"uploader": "Mallory", "game": "", "csrf_token": csrf}, headers=browser
    )
    assert response.status_code == 303
    wait_for_all(app.config["RUMBLE"]["DB"])
    assert _states(app)["Mallory"] == {"removed": 10}
    _fresh_rebuild_equals_tables(app)


def test_the_command_line_rolls_back_with_a_token_and_is_audited(app, client, clock):
    sent = _season(app, client, clock.now_ms())
    db = app.config["RUMBLE"]["DB"]
    token = _token(app)
    runner = CliRunner()
    refused = runner.invoke(
        cli, ["admin", "rollback", "--db", db, "--uploader", "Mallory"], env={"RUMBLE_ADMIN_TOKEN": ""}
    )
    assert refused.exit_code == 1 and "needs a maintainer token" in refused.output
    assert _states(app)["Mallory"] == {"ok": 10}
    dry = runner.invoke(
        cli, ["admin", "rollback", "--db", db, "--uploader", "Mallory", "--dry-run"], env={"RUMBLE_ADMIN_TOKEN": token}
    )
    assert dry.exit_code == 0 and "would change 10 battles" in dry.output and _states(app)["Mallory"] == {"ok": 10}
    done = runner.invoke(
        cli,
        ["admin", "rollback", "--db", db, "--remote-addr", "10.6.6.6", "--game", "roborumble"],
        env={"RUMBLE_ADMIN_TOKEN": token},
    )
    assert done.exit_code == 0, done.output
    assert "changed 10 battles" in done.output and _states(app)["Mallory"] == {"removed": 10}
    _fresh_rebuild_equals_tables(app)
    entry = _audit(app)[0]
    assert (entry["who"], entry["action"], entry["battles"]) == ("alice", "rollback", len(sent["Mallory"]))
    bad = runner.invoke(cli, ["admin", "unflag", "--db", db, "--since", "soon"], env={"RUMBLE_ADMIN_TOKEN": token})
    assert bad.exit_code == 2 and "since must be a date or time" in bad.output
    back = runner.invoke(
        cli, ["admin", "unflag", "--db", db, "--uploader", "Mallory"], env={"RUMBLE_ADMIN_TOKEN": token}
    )
    assert back.exit_code == 0 and _states(app)["Mallory"] == {"ok": 10}


def test_another_workers_copy_reloads_after_a_rollback(app, client, clock):
    """Two threads with one connection each stand for two gunicorn workers (rumble.web.get_db is per
    thread): B's in-memory copy of the rumble is loaded by its upload, A rolls back; B's next upload
    must start from the rolled-back tables, because the rollback moved the rumble's generation."""
    from concurrent.futures import ThreadPoolExecutor

    from rumble.web import close_thread_db

    _season(app, client, clock.now_ms())
    token = _token(app)
    worker_b = ThreadPoolExecutor(max_workers=1)  # one thread, one connection, one copy

    def upload_on_b(a: str, b: str, scores: tuple[int, int], ago: int) -> Kind:
        result = battle(a, b, scores, uploader="Jane", time_ms=clock.now_ms() - ago)
        return worker_b.submit(_send, client, result, "10.0.0.1").result()

    try:
        assert upload_on_b(BOTS[1], BOTS[2], (3500, 3000), 7) is Kind.ACCEPTED
        _fresh_rebuild_equals_tables(app)
        answer, _ = post_and_wait(
            client, "/admin/rollback", {"Authorization": f"Bearer {token}"}, json={"uploader": "Mallory"}
        )
        assert answer["battles"] == 10
        assert upload_on_b(BOTS[0], BOTS[3], (3600, 3000), 9) is Kind.ACCEPTED
        _fresh_rebuild_equals_tables(app)
    finally:
        worker_b.submit(close_thread_db).result()
        worker_b.shutdown()


def test_rolling_back_the_battle_that_revived_a_bot_retires_it_again(app, client, clock):
    """C is retired, then revived by Mallory's battle (a revival logs no event); rolling that battle
    back leaves C retired, as a rebuild of the remaining log has it, and the tables stay equal to a
    rebuild through later uploads and a second retirement (found in review: C stayed active)."""
    a, b, c, d = BOTS[:4]
    now = clock.now_ms()
    vouch_for_local_uploads(app.config["RUMBLE"]["DB"], "Jane@127.0.0.0/24")  # Jane retires C below
    n = 0
    for i, x in enumerate((a, b, c, d)):
        for y in (a, b, c, d)[i + 1 :]:
            assert (
                _send(
                    client, battle(x, y, (3000 + 100 * i, 2500), (20, 15), time_ms=now - (n := n + 1), uploader="Jane")
                )
                is Kind.ACCEPTED
            )
    retire = "version=1&game=roborumble&name=c.Gamma_1.0&dummy=NA\n"
    assert (
        client.post("/RemoveOldParticipant", data=retire).get_data(as_text=True)
        == "OK. c.Gamma 1.0 retired from roborumble\n"
    )
    assert (
        _send(client, battle(c, a, (5000, 1000), (30, 5), time_ms=now - (n := n + 1), uploader="Mallory"), "10.6.6.6")
        is Kind.ACCEPTED
    )
    token = _token(app)
    post_and_wait(client, "/admin/rollback", {"Authorization": f"Bearer {token}"}, json={"uploader": "Mallory"})
    db = _db(app)
    (active,) = db.execute(
        "SELECT p.active FROM participants p JOIN bots b ON b.id = p.bot_id WHERE b.full_name = ?", (c,)
    ).fetchone()
    db.close()
    assert active == 0
    _fresh_rebuild_equals_tables(app)
    for x, y in ((a, b), (b, d)):
        assert (
            _send(client, battle(x, y, (3300, 2500), (20, 15), time_ms=now - (n := n + 1), uploader="Jane"))
            is Kind.ACCEPTED
        )
    _fresh_rebuild_equals_tables(app)
    assert (
        client.post("/RemoveOldParticipant", data=retire).get_data(as_text=True)
        == "OK. c.Gamma 1.0 was already retired from roborumble\n"
    )
    _fresh_rebuild_equals_tables(app)
