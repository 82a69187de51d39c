"""The daily rank snapshot, the SVG plots and the bot's other versions on /BotDetails."""

from __future__ import annotations

import re
from datetime import timedelta

from conftest import battle, now_ms

from rumble import store
from rumble.protocol.replies import Kind
from rumble.schedule.hourly import take_daily_snapshot
from rumble.store.history import snapshot_day, today

OLD, NEW, B, C = "alpha.Alpha 1.0", "alpha.Alpha 1.1", "beta.Beta 1.0", "gamma.Gamma 1.0"


def _upload_all(upload) -> None:
    now = now_ms()
    results = [
        (OLD, B, 6000, 4000),
        (OLD, C, 7000, 3000),
        (NEW, B, 8000, 2000),
        (NEW, C, 4500, 5500),
        (B, C, 5000, 5000),
    ]
    for i, (first, second, s1, s2) in enumerate(results):
        assert upload(battle(first, second, scores=(s1, s2), time_ms=now - 1000 * i)).kind is Kind.ACCEPTED


def test_the_daily_snapshot_records_each_active_bots_rank_once_a_day(app, client, upload):
    _upload_all(upload)
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        assert take_daily_snapshot(db) == 4
        assert take_daily_snapshot(db) == 0  # today is taken
        with store.write(db):
            assert snapshot_day(db, "2020-01-01") == 4
        rows = db.execute(
            "SELECT b.full_name, h.day, h.rank, h.aps, h.battles FROM rank_history h JOIN bots b ON b.id = h.bot_id "
            "WHERE h.day = ? ORDER BY h.rank",
            (today(),),
        ).fetchall()
    finally:
        db.close()
    ranking = client.get("/Rankings?game=roborumble&api=1").json
    assert [(r[0], r[2], r[4]) for r in rows] == [(row["name"], row["rank"], row["battles"]) for row in ranking]
    # APS by hand: NEW 80 % against B and 45 % against C
    assert dict((r[0], r[3]) for r in rows)[NEW] == (80 + 45) / 2


def test_the_plots_are_svg_images_of_the_pages_figures(app, client, upload):
    _upload_all(upload)
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):
        snapshot_day(db, "2020-01-01")
        snapshot_day(db, "2020-01-02")
    db.close()
    scores = client.get("/BotDetails/scores.svg", query_string={"game": "roborumble", "name": NEW})
    assert scores.status_code == 200 and scores.mimetype == "image/svg+xml"
    text = scores.get_data(as_text=True)
    (dots,) = re.findall(r'<g id="PathCollection_1">(.*?)</g>', text, flags=re.S)
    assert dots.count("<use ") == 2  # one dot per live pairing: B and C
    assert "score in the pairing" in text
    history = client.get("/BotDetails/history.svg", query_string={"game": "roborumble", "name": NEW}).get_data(
        as_text=True
    )
    assert "APS (%)" in history and "rank" in history and "No daily snapshot" not in history
    uploads = client.get("/RumbleStats/uploads.svg?game=roborumble")
    assert uploads.status_code == 200 and "battles uploaded" in uploads.get_data(as_text=True)
    missing = client.get("/BotDetails/scores.svg", query_string={"game": "roborumble", "name": "no.Such 1.0"})
    assert missing.status_code == 404 and "no.Such 1.0" in missing.get_data(as_text=True)
    page = client.get("/BotDetails", query_string={"game": "roborumble", "name": NEW}).get_data(as_text=True)
    assert (
        "/BotDetails/scores.svg?game=roborumble&amp;name=alpha.Alpha+1.1" in page and "/BotDetails/history.svg" in page
    )


def test_bot_details_lists_the_other_versions_of_the_bot(client, upload):
    _upload_all(upload)
    page = client.get("/BotDetails", query_string={"game": "roborumble", "name": NEW, "api": "1"}).json
    (other,) = page["versions"]
    assert other["name"] == OLD and other["active"] is True
    assert other["aps"] == (60 + 70) / 2 and other["battles"] == 2 and other["pairings"] == 2
    # ranks by APS: OLD 65, NEW 62.5, B (40 + 20 + 50) / 3 = 36.7, C (30 + 55 + 50) / 3 = 45
    assert other["rank"] == 1
    assert client.get("/BotDetails", query_string={"game": "roborumble", "name": B, "api": "1"}).json["versions"] == []
    html = client.get("/BotDetails", query_string={"game": "roborumble", "name": NEW}).get_data(as_text=True)
    assert "Other versions" in html and f">{OLD}</a>" in html


def test_the_daily_snapshot_ranks_by_xonstat_elo_too(app, client, upload):
    """Seed 002: ranks by the Elo values at the start of the day, per game type. The snapshot's
    xonstat_rank is the order of the XonStat Elo the rankings table shows (ties by name), beside
    the APS rank; the plot draws both. A beats B 60:40 and C beats D 55:45 (XonStat: A 1520, C 1510);
    then E beats A 52:48 (A's APS falls to 54 below C's 55, its XonStat only to about 1510.5, still
    above C's), so APS and XonStat Elo order A and C differently."""
    now = now_ms()
    for i, (first, second, s1, s2) in enumerate(
        (("a.A 1", "a.B 1", 6000, 4000), ("a.C 1", "a.D 1", 5500, 4500), ("a.E 1", "a.A 1", 5200, 4800))
    ):
        assert upload(battle(first, second, scores=(s1, s2), time_ms=now - 1000 * i)).kind is Kind.ACCEPTED
    ranking = client.get("/Rankings?game=roborumble&api=1").json
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        assert take_daily_snapshot(db) == 5
        rows = dict(
            db.execute(
                "SELECT b.full_name, h.xonstat_rank FROM rank_history h JOIN bots b ON b.id = h.bot_id"
            ).fetchall()
        )
    finally:
        db.close()
    by_xonstat = sorted(ranking, key=lambda r: (-r["xonstat"], r["name"]))
    assert rows == {r["name"]: k for k, r in enumerate(by_xonstat, start=1)}
    assert [r["name"] for r in by_xonstat][:2] == ["a.A 1", "a.C 1"] and [r["name"] for r in ranking][:2] == [
        "a.C 1",
        "a.A 1",
    ]
    history = client.get("/api/v1/rumbles/roborumble/bots/a.A 1/history").json["items"]
    assert [(h["rank"], h["xonstat_rank"]) for h in history] == [(2, 1)]
    plot = client.get("/BotDetails/history.svg", query_string={"game": "roborumble", "name": "a.A 1"}).get_data(
        as_text=True
    )
    assert "rank by XonStat Elo" in plot and "rank by APS" in plot


def _tick_labels(svg: str, axis: int) -> list[str]:
    """The tick labels of matplotlib's axis number ``axis`` in an SVG plot (1 the first axes' x, 2 its y, ...)."""
    start = svg.index(f'<g id="matplotlib.axis_{axis}">')
    following = svg.find('<g id="matplotlib.axis_', start + 1)
    segment = svg[start : following if following > 0 else len(svg)]
    ticks = re.split(r'<g id="[xy]tick_\d+">', segment)[1:]
    return ["".join(re.findall(r">([^<>]*)<", tick[tick.index("<text") : tick.index("</text>") + 7])) for tick in ticks]


def test_the_history_plot_ranks_on_whole_numbers_in_plain_words(app, client, upload):
    """A bot that held one rank every day gets that one tick, not 0.6 … 1.4; one whose rank moved
    gets whole ranks only, 1 on top."""
    _upload_all(upload)
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):
        snapshot_day(db, "2020-01-01")
        snapshot_day(db, "2020-01-02")
    db.close()
    svg = client.get("/BotDetails/history.svg", query_string={"game": "roborumble", "name": OLD}).get_data(as_text=True)
    assert _tick_labels(svg, 2) == ["1"]  # rank 1 both days
    assert "rank (1 = best)" in svg and "seed" not in svg
    now = now_ms()
    for i in range(3):  # C beats everyone now: the ranks move
        for other in (OLD, NEW, B):
            assert upload(battle(C, other, scores=(9000, 1000), time_ms=now + 1000 * (i + 1))).kind is Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    with store.write(db):
        snapshot_day(db, "2020-01-03")
    db.close()
    history = client.get(f"/api/v1/rumbles/roborumble/bots/{OLD}/history").json["items"]
    ranks = [h["rank"] for h in history]
    assert ranks[0] == 1 and ranks[-1] > 1
    svg = client.get("/BotDetails/history.svg", query_string={"game": "roborumble", "name": OLD}).get_data(as_text=True)
    labels = _tick_labels(svg, 2)
    assert labels and all(label.isdigit() for label in labels), labels
    assert set(range(1, max(ranks) + 1)) >= {int(label) for label in labels}
    assert "1" in labels


def test_the_server_time_axis_reads_as_plain_numbers(app, client, clock, monkeypatch):
    """Log-scale ticks as 20 and 30, never 2×10¹."""
    from rumble.web import plots

    today = clock.now().date()
    counted = [
        {"day": today.isoformat(), "accepted": 5, "held": 0, "duplicate": 0, "refused": 1, "error": 0},
        {
            "day": (today - timedelta(days=1)).isoformat(),
            "accepted": 5,
            "held": 0,
            "duplicate": 0,
            "refused": 0,
            "error": 0,
        },
    ]
    counted[0] |= {"mean_ms": 12.0, "max_ms": 35.0}
    counted[1] |= {"mean_ms": 14.0, "max_ms": 28.0}
    monkeypatch.setattr(plots.upload_stats, "per_day", lambda db, game, since: counted)
    svg = client.get("/RumbleStats/uploads.svg").get_data(as_text=True)
    assert "server time per upload (ms)" in svg
    labels = [label for label in _tick_labels(svg, 4) if label]
    assert labels and all(re.fullmatch(r"\d+(\.\d+)?", label) for label in labels), labels
