"""LOS to next and the version test from a real gunicorn server, after uploads sent as the Java
client sends them; the figures are worked out by hand (as in tests/web/test_confidence_pages.py)."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from .test_gunicorn_uploads import make_battle, upload

pytestmark = pytest.mark.e2e


def test_los_and_version_test_over_real_http(live_server):
    url = live_server.url
    # A-B 60 and 80 %, A-C 70 and 90 %, B-C 55 and 65 %: APS 75, 45, 30; Var(APS) 50, 31.25, 31.25;
    # LOS(B > C) = Φ(15/√(31.25 + 31.25 + 2·25/4)) = Φ(√3) = 0.9584; LOS(A > B) = Φ(30/√131.25)
    for first, second, share in [("t.A 1.0", "t.B 1.0", 60), ("t.A 1.0", "t.B 1.0", 80), ("t.A 1.0", "t.C 1.0", 70)]:
        upload(url, make_battle(first, second, (share * 10, 1000 - share * 10), (20, 15)))
    for first, second, share in [("t.A 1.0", "t.C 1.0", 90), ("t.B 1.0", "t.C 1.0", 55), ("t.B 1.0", "t.C 1.0", 65)]:
        upload(url, make_battle(first, second, (share * 10, 1000 - share * 10), (20, 15)))
    rows = live_server.rankings("roborumble")
    assert rows["t.A 1.0"]["los_next"] == pytest.approx(NormalDist().cdf(30 / math.sqrt(131.25)), abs=1e-12)
    assert rows["t.B 1.0"]["los_next"] == pytest.approx(NormalDist().cdf(math.sqrt(3)), abs=1e-12)
    assert rows["t.C 1.0"]["los_next"] is None

    # old 50 % against ten opponents, new 52 and 54 % in turn: d̄ = 3, s² = 10/9, I = 9, LLR better 22.5
    for i in range(10):
        upload(url, make_battle("pkg.Bot 1.0", f"opp.Foe{i} 1.0", (500, 500), (17, 17)))
        share = 52 if i % 2 == 0 else 54
        upload(url, make_battle("pkg.Bot 1.1", f"opp.Foe{i} 1.0", (share * 10, 1000 - share * 10), (18, 17)))
    answer = live_server.get("/api/v1/rumbles/roborumble/version-test", old="pkg.Bot 1.0", new="pkg.Bot 1.1")
    data = answer.json()
    assert answer.status_code == 200 and data["verdict"] == "better" and data["battles"] == 20
    assert data["llr_better"] == pytest.approx(22.5) and data["llr_worse"] == pytest.approx(-31.5)
    page = live_server.get("/BotCompare", game="roborumble", bota="pkg.Bot 1.1", botb="pkg.Bot 1.0").text
    assert "<strong>A is better than B</strong>" in page
    bad = live_server.get("/api/v1/rumbles/roborumble/version-test", old="pkg.Bot 1.0", new="pkg.Bot 1.1", delta="-1")
    assert bad.status_code == 400
    assert bad.json() == {"error": "delta must be a number of APS points from 0.1 to 20 (like 0.5), not '-1'."}
