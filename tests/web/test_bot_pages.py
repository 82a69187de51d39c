"""The bot-details, pairing and comparison pages and their JSON, on a small rumble built by uploads.

Every figure is checked against a computation written out here from the uploaded scores, with
plain Python and ``statistics``, not with rumble's own functions.
"""

from __future__ import annotations

import json
import math
import sqlite3
import statistics

import pytest
from conftest import battle, now_ms

from rumble import store
from rumble.protocol.replies import Kind
from rumble.schedule import hourly

A, B, C, D, E = "alpha.Alpha 1.0", "beta.Beta 1.0", "gamma.Gamma 1.0", "delta.Delta 1.0", "eps.Eps 1.0"
# (first, second, first score, second score, first firsts, second firsts)
RESULTS = [
    (A, B, 6000, 4000, 20, 15),
    (B, A, 5000, 5000, 17, 18),  # A vs B in both orders
    (A, C, 7000, 3000, 25, 10),
    (B, C, 6500, 3500, 24, 11),
    (D, A, 2000, 8000, 5, 30),
    (B, D, 7500, 2500, 28, 7),
    (A, D, 7900, 2100, 29, 6),
    (A, E, 5200, 4800, 18, 17),
    (E, B, 5000, 5000, 17, 18),
]
T_975 = {2: 4.302652729749462, 3: 3.182446305284263}  # Student t(0.975, df), from a printed table (scipy.stats.t.ppf)


@pytest.fixture
def rumble(upload):
    """The small rumble: five bots, nine battles, each uploaded once."""
    now = now_ms()
    for i, (first, second, s1, s2, f1, f2) in enumerate(RESULTS):
        assert (
            upload(battle(first, second, scores=(s1, s2), firsts=(f1, f2), time_ms=now - 1000 * i)).kind
            is Kind.ACCEPTED
        )
    return RESULTS


def _percents(bot: str, vs: str) -> list[tuple[float, float]]:
    """(score %, survival %) of ``bot`` in each uploaded battle against ``vs``."""
    out = []
    for first, second, s1, s2, f1, f2 in RESULTS:
        if (first, second) == (bot, vs):
            out.append((100 * s1 / (s1 + s2), 100 * f1 / 35))
        elif (first, second) == (vs, bot):
            out.append((100 * s2 / (s1 + s2), 100 * f2 / 35))
    return out


def _aps(bot: str, vs: str) -> float:
    return statistics.fmean(p for p, _ in _percents(bot, vs))


def _ratings(client) -> dict[str, dict]:
    return {row["name"]: row for row in client.get("/Rankings?game=roborumble&api=1").json}


def _get(client, path: str, **args):
    return client.get(path, query_string={"game": "roborumble", **args})


def test_bot_details_json_has_each_pairing_from_the_uploaded_scores(rumble, client):
    data = _get(client, "/BotDetails", name=A, api="1").json
    assert data["bot"] == {"name": A, "active": True} and data["game"] == "roborumble"
    pairings = {p["name"]: p for p in data["pairings"]}
    assert sorted(pairings) == sorted([B, C, D, E])
    for vs, p in pairings.items():
        percents = _percents(A, vs)
        assert p["aps"] == pytest.approx(_aps(A, vs))
        assert p["survival"] == pytest.approx(statistics.fmean(s for _, s in percents))
        assert p["battles"] == len(percents)
    # A vs B: 60 % and 50 %; population variance 25 over 2 battles: 1.96·sqrt(25/1)
    assert pairings[B]["aps_ci"] == pytest.approx(1.96 * math.sqrt(25.0))
    assert pairings[C]["aps_ci"] is None  # one battle: no interval
    summary = data["summary"]
    assert summary["aps"] == pytest.approx(statistics.fmean(_aps(A, vs) for vs in (B, C, D, E)))
    assert summary["pairings"] == 4 and summary["battles"] == 6
    assert summary["ratings"]["elo"] == pytest.approx(_ratings(client)[A]["elo"])


def test_expected_score_and_pbi_follow_roborumble_elo(rumble, client):
    """Expected = 100/(1 + 20^((r_opp − r_bot)/800)) (seed 004); PBI = APS − expected (RRServer)."""
    elo = {name: row["elo"] for name, row in _ratings(client).items()}
    for p in _get(client, "/BotDetails", name=A, api="1").json["pairings"]:
        expected = 100.0 / (1.0 + 20.0 ** ((elo[p["name"]] - elo[A]) / 800.0))
        assert p["expected"] == pytest.approx(expected)
        assert p["pbi"] == pytest.approx(_aps(A, p["name"]) - expected)
        assert p["knnpbi"] is None and p["npp"] is None  # no batch run yet


def test_bot_details_carry_knnpbi_and_npp_after_a_batch_run(rumble, app, client):
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        hourly.run_rumble(db, "roborumble")
    finally:
        db.close()
    data = _get(client, "/BotDetails", name=A, api="1").json
    assert all(p["knnpbi"] is not None and 0 <= p["npp"] <= 100 for p in data["pairings"])
    assert data["summary"]["batch"]["schulze"]["rank"] >= 1
    page = _get(client, "/BotDetails", name=A).get_data(as_text=True)
    assert "Schulze rank" in page


@pytest.mark.parametrize(
    "order, key, reverse",
    [("-pbi", "pbi", True), ("aps", "aps", False), ("-battles", "battles", True), ("name", "name", False)],
)
def test_pairings_sort_server_side(rumble, client, order, key, reverse):
    rows = _get(client, "/BotDetails", name=A, order=order, api="1").json["pairings"]
    assert [r[key] for r in rows] == sorted((r[key] for r in rows), reverse=reverse)
    page = _get(client, "/BotDetails", name=A, order=order).get_data(as_text=True)
    positions = [page.index(f">{r['name']}</a>") for r in rows]
    assert positions == sorted(positions)
    assert ("▼" if reverse else "▲") in page


def test_an_unknown_sort_column_is_400_in_plain_words(rumble, client):
    response = _get(client, "/BotDetails", name=A, order="nosuch")
    assert response.status_code == 400 and response.mimetype == "text/plain"
    assert "Cannot sort by 'nosuch'" in response.get_data(as_text=True)


def test_bot_details_page_links_pairings_comparisons_and_has_a_compare_form(rumble, client):
    page = _get(client, "/BotDetails", name=A).get_data(as_text=True)
    assert 'href="/Pairing?game=roborumble&amp;bot=alpha.Alpha+1.0&amp;vs=beta.Beta+1.0"' in page
    assert 'href="/BotCompare?game=roborumble&amp;bota=alpha.Alpha+1.0&amp;botb=beta.Beta+1.0"' in page
    assert '<form action="/BotCompare" method="get"' in page and 'name="botb"' in page
    assert f'value="{A}"' in page


def test_rankings_link_each_bot_to_its_details(rumble, client):
    page = client.get("/Rankings?game=roborumble").get_data(as_text=True)
    for name in (A, B, C, D, E):
        assert f'<a href="/BotDetails?game=roborumble&amp;name={name.replace(" ", "+")}">{name}</a>' in page


def test_a_name_with_underscore_for_its_space_is_found(rumble, client):
    data = _get(client, "/BotDetails", name="alpha.Alpha_1.0", api="1").json
    assert data["bot"]["name"] == A


def test_pairing_lists_every_battle_in_both_orders_from_the_first_bots_side(rumble, client):
    data = _get(client, "/Pairing", bot=A, vs=B, api="1").json
    assert (data["bot"], data["vs"]) == (A, B)
    battles = data["battles"]
    assert [b["id"] for b in battles] == sorted((b["id"] for b in battles), reverse=True)
    seen = sorted((b["a_score"], b["b_score"], b["a_firsts"], b["b_firsts"], b["a_first"]) for b in battles)
    assert seen == sorted([(6000, 4000, 20, 15, True), (5000, 5000, 18, 17, False)])
    for b in battles:
        assert b["a_percent"] == pytest.approx(100 * b["a_score"] / (b["a_score"] + b["b_score"]))
        assert b["a_survival"] == pytest.approx(100 * b["a_firsts"] / 35)
        assert (b["uploader"], b["client"], b["state"]) == ("Jane Doe", "1.9.3.9", "ok")
        assert b["a_bullet_damage"] == b["a_score"] // 2  # conftest's battle() sends half the score
    assert data["pairing"]["aps"] == pytest.approx(statistics.fmean(b["a_percent"] for b in battles))
    assert data["pairing"]["battles"] == 2
    page = _get(client, "/Pairing", bot=A, vs=B).get_data(as_text=True)
    assert page.count("<tr>") == 1 + 2 and "Jane Doe" in page and "60.00 – 40.00" in page


def test_pairing_of_bots_that_never_met_is_empty_not_an_error(rumble, client):
    data = _get(client, "/Pairing", bot=C, vs=E, api="1").json
    assert data["pairing"] is None and data["battles"] == []
    assert "No battles between these two" in _get(client, "/Pairing", bot=C, vs=E).get_data(as_text=True)


def test_compare_gives_the_paired_t_interval_over_common_opponents(rumble, client):
    data = _get(client, "/BotCompare", bota=A, botb=B, api="1").json
    common = [C, D, E]  # both met each of these; A and B themselves are left out
    diffs = [_aps(A, o) - _aps(B, o) for o in common]
    assert [r["name"] for r in data["rows"]] == sorted(common)
    assert [r["diff"] for r in data["rows"]] == pytest.approx([_aps(A, o) - _aps(B, o) for o in sorted(common)])
    mean, half = statistics.mean(diffs), T_975[2] * statistics.stdev(diffs) / math.sqrt(3)
    assert data["common"] == 3
    assert data["diff"]["mean"] == pytest.approx(mean)
    assert (data["diff"]["low"], data["diff"]["high"]) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert data["a_aps"] == pytest.approx(statistics.mean(_aps(A, o) for o in common))
    expected = (
        "Tie" if mean - half <= 0 <= mean + half else f"{A} +{mean:.2f} (CI {mean - half:.2f} to {mean + half:.2f})"
    )
    assert data["verdict"] == expected
    assert data["head_to_head"]["aps"] == pytest.approx(_aps(A, B))


def test_compare_names_the_better_bot_when_the_interval_excludes_zero(upload, client, clock):
    """X beats every opponent by 10 to 12 points more than Y: the interval is far from 0."""
    now = clock.now_ms()
    opponents = ["o.One 1", "o.Two 1", "o.Three 1", "o.Four 1"]
    for i, (opp, extra) in enumerate(zip(opponents, (10, 11, 12, 11))):
        upload(battle("x.X 1", opp, scores=(60 + extra, 40 - extra), firsts=(20, 15), time_ms=now - 10 * i))
        upload(battle("y.Y 1", opp, scores=(60, 40), firsts=(20, 15), time_ms=now - 10 * i - 1))
    data = _get(client, "/BotCompare", bota="y.Y 1", botb="x.X 1", api="1").json
    diffs = [-10.0, -11.0, -12.0, -11.0]
    mean, half = statistics.mean(diffs), T_975[3] * statistics.stdev(diffs) / 2
    assert data["verdict"] == f"x.X 1 +{-mean:.2f} (CI {-(mean + half):.2f} to {-(mean - half):.2f})"
    assert data["diff"]["high"] == pytest.approx(mean + half) and data["diff"]["high"] < 0


def test_compare_win_probability_is_glicko_with_both_deviations(rumble, client):
    """P = 1/(1 + 10^(−g(√(RD_A² + RD_B²))·(r_A − r_B)/400)), g(RD) = 1/√(1 + 3q²RD²/π²), q = ln 10/400."""
    ratings = _ratings(client)
    q = math.log(10) / 400

    def p(r1, rd1, r2, rd2):
        g = 1 / math.sqrt(1 + 3 * q**2 * (rd1**2 + rd2**2) / math.pi**2)
        return 100 / (1 + 10 ** (-g * (r1 - r2) / 400))

    a, b = ratings[A], ratings[B]
    data = _get(client, "/BotCompare", bota=A, botb=B, api="1").json
    assert data["win_probability"]["glicko"] == pytest.approx(
        p(a["glicko"], a["glicko_rd"], b["glicko"], b["glicko_rd"])
    )
    assert data["win_probability"]["glicko2"] == pytest.approx(
        p(a["glicko2"], a["glicko2_rd"], b["glicko2"], b["glicko2_rd"])
    )
    page = _get(client, "/BotCompare", bota=A, botb=B).get_data(as_text=True)
    assert data["verdict"] in page and "paired t-interval" in page


@pytest.mark.parametrize("order", ["-diff", "b_aps"])
def test_compare_rows_sort_server_side(rumble, client, order):
    rows = _get(client, "/BotCompare", bota=A, botb=B, order=order, api="1").json["rows"]
    key = order.lstrip("-")
    assert [r[key] for r in rows] == sorted((r[key] for r in rows), reverse=order.startswith("-"))


@pytest.mark.parametrize(
    "path, args, message",
    [
        ("/BotDetails", {"game": "nosuch", "name": A}, "There is no rumble called 'nosuch'."),
        (
            "/BotDetails",
            {"game": "roborumble", "name": "no.Such 1"},
            "No bot called 'no.Such 1' has battled in roborumble.",
        ),
        ("/Pairing", {"game": "roborumble", "bot": A, "vs": "no.Such 1"}, "No bot called"),
        ("/BotCompare", {"game": "roborumble", "bota": "no.Such 1", "botb": B}, "No bot called"),
        ("/BotCompare", {"game": "minirumble", "bota": A, "botb": B}, "No bot called"),
    ],
)
def test_unknown_rumble_or_bot_is_404_with_a_plain_message(rumble, client, path, args, message):
    response = client.get(path, query_string=args)
    assert response.status_code == 404 and response.mimetype == "text/plain"
    assert message in response.get_data(as_text=True)
    response = client.get(path, query_string={**args, "api": "1"})
    assert response.status_code == 404 and message in response.json["error"]


def test_a_script_in_a_bot_name_is_escaped_in_html_and_kept_in_json(rumble, app, client):
    evil = "<script>alert(1)</script> 1.0"
    conn = sqlite3.connect(app.config["RUMBLE"]["DB"])
    conn.execute("UPDATE bots SET full_name = ? WHERE full_name = ?", (evil, B))
    conn.commit()
    conn.close()
    pages = [
        _get(client, "/BotDetails", name=A),
        _get(client, "/BotDetails", name=evil),
        _get(client, "/Pairing", bot=A, vs=evil),
        _get(client, "/BotCompare", bota=evil, botb=A),
        client.get("/Rankings?game=roborumble"),
    ]
    for response in pages:
        text = response.get_data(as_text=True)
        assert (
            response.status_code == 200
            and "<script>alert" not in text
            and "&lt;script&gt;alert(1)&lt;/script&gt; 1.0" in text
        )
    for response in (
        _get(client, "/BotDetails", name=A, api="1"),
        _get(client, "/BotCompare", bota=evil, botb=A, api="1"),
    ):
        assert response.mimetype == "application/json"
        data = json.loads(response.get_data(as_text=True))
        assert evil in [p["name"] for p in data.get("pairings", [])] or data.get("bota") == evil


def test_a_retired_opponent_is_marked_and_left_out_of_comparisons(rumble, client):
    body = b"version=1&game=roborumble&name=eps.Eps_1.0&dummy=NA\n"
    assert (
        client.post("/RemoveOldParticipant", data=body).get_data(as_text=True)
        == "OK. eps.Eps 1.0 retired from roborumble\n"
    )
    pairings = {p["name"]: p for p in _get(client, "/BotDetails", name=A, api="1").json["pairings"]}
    assert pairings[E]["active"] is False and pairings[C]["active"] is True
    assert f"{E}</a> (retired)" in _get(client, "/BotDetails", name=A).get_data(as_text=True)
    assert [r["name"] for r in _get(client, "/BotCompare", bota=A, botb=B, api="1").json["rows"]] == [D, C]
    assert _get(client, "/BotDetails", name=E, api="1").json["bot"] == {"name": E, "active": False}
