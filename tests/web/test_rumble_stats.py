"""/RumbleStats: contributors, uploads per day and bots lacking pairings, as HTML and JSON."""

from __future__ import annotations

import time

from conftest import battle


def test_contributors_and_days_count_the_log(client, upload):
    """Jane uploads two battles to roborumble and one to minirumble, Zoë one: in all rumbles Jane
    has 3 (all in the last 30 days), Zoë 1; today holds all 4; roborumble alone: Jane 2, Zoë 1."""
    now = int(time.time() * 1000)
    upload(battle("a.A 1", "b.B 1", time_ms=now))
    upload(battle("a.A 1", "c.C 1", time_ms=now + 1))
    upload(battle("a.A 1", "c.C 1", time_ms=now + 1, game="minirumble"))
    upload(battle("b.B 1", "c.C 1", time_ms=now + 2, uploader="Zoë <b>"))
    page = client.get("/RumbleStats?api=1").json
    assert [(u["uploader"], u["battles"], u["recent"]) for u in page["uploaders"]] == [("Jane Doe", 3, 3), ("Zoë <b>", 1, 1)]
    assert sum(d["battles"] for d in page["uploads_per_day"]) == 4
    one = client.get("/RumbleStats?game=roborumble&api=1").json
    assert [(u["uploader"], u["battles"]) for u in one["uploaders"]] == [("Jane Doe", 2), ("Zoë <b>", 1)]
    assert one["lacking_pairings"] == []  # A, B and C have all met
    html = client.get("/RumbleStats?game=roborumble").get_data(as_text=True)
    assert "Zoë &lt;b&gt;" in html and "Every active bot has met every other." in html


def test_bots_lacking_pairings_are_listed(client, upload):
    now = int(time.time() * 1000)
    upload(battle("a.A 1", "b.B 1", time_ms=now))
    upload(battle("c.C 1", "d.D 1", time_ms=now + 1))
    lacking = client.get("/RumbleStats?game=roborumble&api=1").json["lacking_pairings"]
    assert sorted((b["name"], b["missing"]) for b in lacking) == [("a.A 1", 2), ("b.B 1", 2), ("c.C 1", 2), ("d.D 1", 2)]


def test_unknown_rumble_is_404(client):
    assert client.get("/RumbleStats?game=nosuch").status_code == 404
