"""/admin: rebuild and batch runs on demand; the client whitelist and rumble settings stored in the
database (over the settings and the rumbles file), each change audited."""

from __future__ import annotations

import re

from admin_jobs import post_and_wait
from conftest import audit_rows as _audit
from conftest import battle, post_upload
from conftest import maintainer_token as _token

from rumble import store
from rumble.app import create_app
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.store.tables import snapshot
from rumble.web import close_thread_db

BOTS = ["a.Alpha 1.0", "b.Beta 1.0", "c.Gamma 1.0"]


def _refusal(outcome: UploadOutcome) -> str:
    """The reason of a refused upload (and a failure if it was not refused)."""
    assert outcome.kind is Kind.REFUSED, outcome
    return outcome.reason


def _auth(app) -> dict:
    return {"Authorization": f"Bearer {_token(app)}"}


def _ladder(upload) -> None:
    for i, a in enumerate(BOTS):
        for b in BOTS[i + 1 :]:
            assert upload(battle(a, b, (3000 + 300 * i, 2500), (20, 15))).kind is Kind.ACCEPTED


def test_rebuild_from_admin_replays_the_log_and_is_audited(app, client, upload):
    _ladder(upload)
    auth = _auth(app)
    db = store.connect(app.config["RUMBLE"]["DB"])
    before = snapshot(db)
    generation = db.execute("SELECT generation FROM rumbles WHERE name = 'roborumble'").fetchone()[0]
    answer, job = post_and_wait(client, "/admin/rebuild", auth, json={"game": "roborumble"})
    assert answer["games"] == ["roborumble"] and job["result"]["replayed"] == {"roborumble": 3}
    assert snapshot(db) == before
    assert db.execute("SELECT generation FROM rumbles WHERE name = 'roborumble'").fetchone()[0] == generation + 1
    everything, job = post_and_wait(client, "/admin/rebuild", auth, json={})
    assert everything["games"] == ["roborumble"] and job["result"]["replayed"] == {
        "roborumble": 3
    }  # only the rumbles with battles
    assert client.post("/admin/rebuild", json={"game": "nosuch"}, headers=auth).status_code == 400
    db.close()
    assert [(r["action"], r["details"]["game"]) for r in _audit(app)] == [
        ("rebuild", "nosuch"),
        ("rebuild", "roborumble"),
        ("rebuild", "roborumble"),
    ]


def test_the_batch_runs_from_admin_and_is_audited(app, client, upload):
    _ladder(upload)
    auth = _auth(app)
    response = client.post("/admin/batch", json={"game": "roborumble"}, headers=auth)
    assert response.status_code == 200 and response.json["runs"]["roborumble"]["bots"] == 3
    alternative = client.get("/AlternativeRankings?game=roborumble&api=1").json
    assert alternative  # the run is stored and shown
    stale = client.post("/admin/batch", json={}, headers=auth)
    assert stale.json["runs"] == {}  # nothing changed since
    entry = _audit(app)[1]
    assert entry["action"] == "batch" and entry["details"]["runs"]["roborumble"]["battles"] == 3


def test_the_client_whitelist_is_edited_in_the_database_and_shared(app, client, upload, tmp_path):
    auth = _auth(app)
    old = battle(*BOTS[:2], (3000, 2500), (20, 15), client="1.9.3.8")
    assert _refusal(upload(old)).startswith("CLIENT NOT SUPPORTED")
    response = client.post("/admin/clients", json={"clients": "1.9.3.9, 1.9.3.8"}, headers=auth)
    assert response.json["accepted_clients"] == ["1.9.3.9", "1.9.3.8"]
    assert upload(old).kind is Kind.ACCEPTED
    # Another app (another gunicorn worker) on the same database sees it at once.
    other = create_app({"DB": app.config["RUMBLE"]["DB"], "BATCH_INTERVAL_MINUTES": 0})
    outcome, _ = post_upload(other.test_client(), battle(*BOTS[1:], (3000, 2500), (20, 15), client="1.9.3.8"))
    assert outcome.kind is Kind.ACCEPTED
    for bad in ("", "1.9.3.9; DROP TABLE battles", "x" * 30):
        refused = client.post("/admin/clients", json={"clients": bad}, headers=auth)
        assert refused.status_code == 400 and refused.json["error"]
    assert client.post("/admin/clients", json={"reset": "1"}, headers=auth).json["accepted_clients"] == ["1.9.3.9"]
    assert _refusal(upload(battle(*BOTS[:2], (3100, 2500), (20, 15), client="1.9.3.8"))).startswith(
        "CLIENT NOT SUPPORTED"
    )
    actions = [(r["action"], r["details"].get("after"), "error" in r["details"]) for r in reversed(_audit(app))]
    assert actions == [
        ("set-clients", ["1.9.3.9", "1.9.3.8"], False),
        ("set-clients", None, True),
        ("set-clients", None, True),
        ("set-clients", None, True),
        ("set-clients", ["1.9.3.9"], False),
    ]
    close_thread_db()


def test_rumble_settings_are_edited_in_the_database_and_rounds_only_while_the_log_is_empty(app, client, upload):
    auth = _auth(app)

    def post(**fields):
        return client.post("/admin/rumble-settings", json=fields, headers=auth)

    # An empty rumble may change its rounds: uploads of the new rounds fit, of the old ones not.
    assert post(game="twinduel", key="rounds", value="50").json["value"] == 50
    fifty = battle(*BOTS[:2], (3000, 2500), (30, 20), game="twinduel", rounds=50, field="800x800", teams=True)
    assert upload(fifty).kind is Kind.ACCEPTED
    assert "rounds must be 50" in _refusal(
        upload(battle(*BOTS[:2], (3000, 2500), (40, 35), game="twinduel", rounds=75, field="800x800", teams=True))
    )
    # Now it has battles: its rounds are frozen, its field is not.
    frozen = post(game="twinduel", key="rounds", value="75")
    assert frozen.status_code == 400 and "already has battles" in frozen.json["error"]
    assert post(game="roborumble", key="field", value="1000x1000").json["value"] == "1000x1000"
    assert "field must be 1000x1000" in _refusal(upload(battle(*BOTS[:2], (3000, 2500), (20, 15))))
    assert upload(battle(*BOTS[:2], (3000, 2500), (20, 15), field="1000x1000")).kind is Kind.ACCEPTED
    assert post(game="roborumble", key="field", reset="1").json["value"] == "800x600"
    for fields, reason in (
        ({"game": "nosuch", "key": "field", "value": "800x600"}, "no rumble called"),
        ({"game": "roborumble", "key": "colour", "value": "red"}, "no rumble setting"),
        ({"game": "roborumble", "key": "field", "value": "800 by 600"}, "field must look like"),
        ({"game": "minirumble", "key": "rounds", "value": "-3"}, "rounds must be a whole number"),
        ({"game": "minirumble", "key": "melee", "value": "maybe"}, "melee must be true or false"),
    ):
        response = post(**fields)
        assert response.status_code == 400 and reason in response.json["error"]
    # The stored values survive a restart, which syncs the rumbles file into the table again.
    again = create_app({"DB": app.config["RUMBLE"]["DB"], "BATCH_INTERVAL_MINUTES": 0})
    rows = {r["name"]: r for r in again.test_client().get("/?api=1").json}
    assert rows["twinduel"]["rounds"] == 50 and rows["roborumble"]["field"] == "800x600"
    page = client.get("/admin", headers=auth).get_data(as_text=True)
    assert re.search(r"<td>twinduel</td><td class=\"num\">50</td>", page)
    entries = [
        (r["details"]["game"], r["details"]["key"], r["details"].get("before"), r["details"].get("after"))
        for r in reversed(_audit(app))
        if "error" not in r["details"]
    ]
    assert entries == [
        ("twinduel", "rounds", 75, 50),
        ("roborumble", "field", "800x600", "1000x1000"),
        ("roborumble", "field", "1000x1000", "800x600"),
    ]
    close_thread_db()


def test_a_browser_sets_the_whitelist_with_its_csrf_token(app, client):
    token = _auth(app)["Authorization"].split()[1]
    page = client.get("/admin/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    client.post("/admin/login", data={"token": token, "csrf_token": csrf, "next": "/admin"})
    page = client.get("/admin", headers={"Accept": "text/html"}).get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    assert (
        client.post("/admin/clients", data={"clients": "1.9.3.8"}, headers={"Accept": "text/html"}).status_code == 403
    )
    response = client.post(
        "/admin/clients", data={"clients": "1.9.3.8", "csrf_token": csrf}, headers={"Accept": "text/html"}
    )
    assert response.status_code == 303
    assert "Accepted clients: 1.9.3.8." in client.get("/admin", headers={"Accept": "text/html"}).get_data(as_text=True)
