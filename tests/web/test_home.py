"""The home page: an introduction, the rumbles grouped by kind and family, their counts and the age of
their last upload; battle counts stay right as uploads come (counted incrementally per connection)."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime

from conftest import battle

from rumble.web.pages import age


def _battles(client) -> dict[str, int]:
    return {r["name"]: r["battles"] for r in client.get("/?api=1").json}


def test_rumbles_are_grouped_by_kind_with_counts_and_age(app, client, upload):
    upload(battle("a.A 1.0", "b.B 1.0"))
    upload(battle("a.A 1.0", "c.C 1.0"))
    upload(battle("a.A 1.0", "b.B 1.0", game="minirumble"))
    page = client.get("/").get_data(as_text=True)
    assert "New here?" in page
    headings = re.findall(r"<h2>(.*?)</h2>", page)
    assert headings == ["One on one", "Melee", "Teams"]
    row = re.search(r'<tr>\s*<td><a href="/Rankings\?game=roborumble">roborumble</a></td>(.*?)</tr>', page, re.S).group(
        1
    )
    assert re.findall(r"<td>(\d+)</td>", row) == ["35", "3", "2"]  # rounds, participants, battles
    assert "just now" in row
    # the melee table lists meleerumble before its divisions, which are indented
    melee = page[page.index("<h2>Melee</h2>") : page.index("<h2>Teams</h2>")]
    names = re.findall(r'game=(\w+)">\1</a>', melee)
    assert names[0] == "meleerumble" and set(names) >= {"minimeleerumble", "micromeleerumble", "nanomeleerumble"}
    assert melee.count('class="division"') == 3


def test_battle_counts_follow_new_uploads_and_agree_with_the_log(app, client, upload):
    upload(battle("a.A 1.0", "b.B 1.0"))
    assert _battles(client)["roborumble"] == 1  # counted in full, then cached
    upload(battle("a.A 1.0", "c.C 1.0"))
    upload(battle("b.B 1.0", "c.C 1.0"))
    upload(battle("b.B 1.0", "c.C 1.0", game="microrumble"))
    counts = _battles(client)  # only the battles since are counted
    with sqlite3.connect(app.config["RUMBLE"]["DB"]) as db:
        expected = dict(
            db.execute(
                "SELECT r.name, count(b.id) FROM rumbles r LEFT JOIN battles b ON b.rumble_id = r.id AND b.state = 'ok' GROUP BY r.name"
            )
        )
    db.close()
    assert counts == expected and counts["roborumble"] == 3 and counts["microrumble"] == 1


def test_age_in_words():
    now = datetime(2026, 5, 3, 12, 0, 0, tzinfo=UTC)
    assert age(None, now) == "never"
    assert age("2026-05-03 11:59:30.250", now) == "just now"
    assert age("2026-05-03 11:58:59.000", now) == "1 minute ago"
    assert age("2026-05-03 09:00:00.000", now) == "3 hours ago"
    assert age("2026-04-30 12:00:00.000", now) == "3 days ago"
