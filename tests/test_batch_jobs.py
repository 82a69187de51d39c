"""Batch runs as jobs: the matrix they read, what they store, when a rumble is stale, and the schedule."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest
from conftest import battle, maintainer_token, post_upload

from rumble import store
from rumble.protocol.replies import Kind
from rumble.rankings import knnpbi
from rumble.rankings.batch import METHODS
from rumble.schedule import hourly
from rumble.store import batch_runs
from rumble.store.rating_rows import bump_generation
from rumble.store.rumbles import rumble_id

WAIT_S = 20  # bound on waiting for the scheduler thread; a run of 20 bots takes well under a second


@pytest.fixture
def db(demo_db):
    return demo_db


def rid(db) -> int:
    return rumble_id(db, "roborumble")


def retire(client, name: str) -> None:
    """Retire ``name`` (its ratings-file key) as a maintainer does from /admin."""
    auth = {"Authorization": f"Bearer {maintainer_token(client.application, f'retirer{time.monotonic_ns()}')}"}
    answer = client.post("/admin/retire", json={"game": "roborumble", "name": name.replace("_", " ")}, headers=auth)
    assert (answer.status_code, answer.json["changed"]) == (200, True)


def test_matrix_holds_each_pairing_aps_of_the_active_bots_in_id_order(db):
    m = batch_runs.read_matrix(db, rid(db))
    assert m.ids.tolist() == sorted(m.ids.tolist()) and len(m.names) == 20
    assert np.isnan(np.diag(m.d)).all() and np.isfinite(m.d[~np.eye(20, dtype=bool)]).all()
    index = {bot: i for i, bot in enumerate(m.ids.tolist())}
    for bot, opponent, aps in db.execute("SELECT bot_id, opponent_id, aps FROM pairings"):
        assert m.d[index[bot], index[opponent]] == aps


def test_matrix_leaves_out_retired_bots(db, client):
    retire(client, "sample.Walls_0.9b")
    m = batch_runs.read_matrix(db, rid(db))
    assert len(m.names) == 19 and "sample.Walls 0.9b" not in m.names and m.d.shape == (19, 19)


def test_a_run_stores_every_method_with_its_time_and_battles_seen(db):
    report = hourly.run_rumble(db, "roborumble", source=hourly.SCHEDULED)
    [run] = batch_runs.runs(db, rid(db))
    assert run["id"] == report.run_id and run["source"] == "schedule" and run["bots"] == 20 and run["battles"] == 250
    assert run["methods"] == [*METHODS, "knnpbi"] and run["failures"] == [] and run["finished_at"] >= run["started_at"]
    ranks = db.execute("SELECT method, count(*) FROM batch_ranks GROUP BY method").fetchall()
    assert dict(ranks) == {method: 20 for method in ("aps", *METHODS)}


def test_stored_pairing_values_are_the_runs_knnpbi_and_npp(db):
    hourly.run_rumble(db, "roborumble")
    m = batch_runs.read_matrix(db, rid(db))
    values = batch_runs.pairing_values(db, rid(db), int(m.ids[0]))
    expected = knnpbi.knnpbi(m.d)[0]
    assert len(values) == 19
    for j, name in enumerate(m.names[1:], start=1):
        assert values[name][0] == pytest.approx(expected[j], abs=1e-4)  # stored as float32
        assert 0.0 <= values[name][1] <= 100.0


def test_a_one_method_run_replaces_only_that_methods_ranks(db):
    first = hourly.run_rumble(db, "roborumble").run_id
    second = hourly.run_rumble(db, "roborumble", ("schulze",)).run_id
    page = batch_runs.alternative_rankings(db, rid(db), tuple(METHODS))
    assert page["method_runs"]["schulze"] == page["method_runs"]["aps"] == second
    assert page["method_runs"]["borda"] == first and [run["id"] for run in page["runs"]] == [second, first]


def test_only_rumbles_with_battles_are_stale_and_a_run_makes_them_current(db):
    assert batch_runs.stale_rumbles(db, hourly.COMPLETE) == ["roborumble"]
    hourly.run_rumble(db, "roborumble")
    assert batch_runs.stale_rumbles(db, hourly.COMPLETE) == []
    assert hourly.run_stale(db) == []


def test_a_one_method_run_does_not_make_a_rumble_current(db):
    hourly.run_rumble(db, "roborumble", ("borda",))
    assert batch_runs.stale_rumbles(db, hourly.COMPLETE) == ["roborumble"]


def _upload(client, db):
    assert post_upload(client, _body())[0].kind is Kind.ACCEPTED


def _body() -> str:
    from rumble.protocol.upload import format_upload

    return format_upload(battle("sample.Corners 1.0", "demo.Aurora 2.1"))


@pytest.mark.parametrize(
    "change",
    [
        _upload,
        lambda client, db: retire(client, "sample.Walls_0.9b"),
        lambda client, db: _in_transaction(db, lambda: bump_generation(db, rid(db))),  # what a rebuild does
    ],
    ids=["upload", "retirement", "rebuild"],
)
def test_a_change_to_the_log_makes_the_rumble_stale(db, client, change):
    hourly.run_rumble(db, "roborumble")
    change(client, db)
    assert batch_runs.stale_rumbles(db, hourly.COMPLETE) == ["roborumble"]
    [report] = hourly.run_stale(db)
    assert report.game == "roborumble" and batch_runs.stale_rumbles(db, hourly.COMPLETE) == []


def _in_transaction(db, action) -> None:
    with store.write(db):
        action()


def test_a_method_that_fails_is_recorded_and_the_others_are_stored(app, upload):
    # two pairs that never met each other: no common scale for batch Elo
    assert upload(battle("a.A 1", "a.B 1")).kind is Kind.ACCEPTED
    assert upload(battle("a.C 1", "a.D 1")).kind is Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    report = hourly.run_rumble(db, "roborumble")
    [run] = batch_runs.runs(db, rid(db))
    stale = batch_runs.stale_rumbles(db, hourly.COMPLETE)
    db.close()
    assert list(report.ranked.failures) == ["batch_elo"] and "never met" in run["failures"][0]
    assert "batch_elo" not in report.ranked.ranks and "schulze" in report.ranked.ranks
    assert stale == []  # not retried every hour: only a change to the log makes it stale again


def test_of_two_lock_holders_exactly_one_leads_and_the_other_takes_over_when_it_goes(tmp_path):
    path = str(tmp_path / "r.db.scheduler.lock")
    first, second = hourly.try_lead(path), hourly.try_lead(path)
    assert first is not None and second is None
    first.close()  # as when the leading worker dies
    second = hourly.try_lead(path)
    assert second is not None
    second.close()


def test_two_schedules_on_one_database_elect_exactly_one_runner(app):
    settings = {**app.config["RUMBLE"], "BATCH_INTERVAL_MINUTES": 60}
    a, b = hourly.BatchSchedule(settings), hourly.BatchSchedule(settings)
    try:
        assert [a.elect(), b.elect()] == [True, False]
        assert a.scheduler.get_job("batch") is not None and b.scheduler.get_job("batch") is None
        a.shutdown()
        assert b.elect() and b.scheduler.get_job("batch") is not None
    finally:
        a.shutdown(), b.shutdown()


def test_the_lead_is_kept_when_no_one_holds_the_schedule_object(app):
    """`rumble serve` keeps no reference of its own: the scheduler's job must keep the lock file open."""
    settings = {**app.config["RUMBLE"], "BATCH_INTERVAL_MINUTES": 60}
    schedule = hourly.start_scheduler(settings, election_seconds=0.05)
    scheduler, lock_path = schedule.scheduler, schedule.lock_path
    del schedule
    deadline = time.monotonic() + WAIT_S
    while scheduler.get_job("batch") is None and time.monotonic() < deadline:
        time.sleep(0.02)
    gc.collect()
    try:
        assert hourly.try_lead(lock_path) is None
    finally:
        scheduler.get_job("batch").func.__self__.shutdown(wait=True)


def test_an_interval_of_zero_starts_no_schedule(app):
    assert hourly.start_scheduler(app.config["RUMBLE"]) is None


def test_a_scheduled_run_shows_on_the_alternative_rankings_page(db, app, client):
    settings = {**app.config["RUMBLE"], "BATCH_INTERVAL_MINUTES": 60}
    schedule = hourly.start_scheduler(settings, election_seconds=0.05)  # elects at once, then runs at once
    try:
        deadline = time.monotonic() + WAIT_S
        while not batch_runs.runs(db, rid(db)) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        schedule.shutdown(wait=True)
    [run] = batch_runs.runs(db, rid(db))
    assert run["source"] == "schedule"
    page = client.get("/AlternativeRankings?game=roborumble").get_data(as_text=True)
    assert f"Run {run['id']} (schedule): finished {run['finished_at']} UTC, 20 bots ranked" in page
    assert "250 battles in the log" in page and "No batch run" not in page


def test_batch_elo_is_fitted_to_pairing_win_rates_not_aps(app, upload):
    """Seed 004: MN's batch Elo is "based on pairing win rates (i.e. # wins/battles for each
    pairing)". A beats B in 3 battles of 4 by a hair (51 %) and loses one 10:90, so A's APS against
    B is (3·51 + 10)/4 = 40.75 but it won 3 of 4; C draws both of its 2 battles with A and with B.
    With the one virtual draw per pairing the rates are (3 + ½)/5 = 70 % for A, 30 % for B and
    (1 + ½)/3 = 50 % for C's pairings. An APS fit would put B first; the win-rate fit puts A first,
    C at the 1500 mean, A and B symmetric around it at the gap solving A's likelihood equation
    0.7 + 0.5 = E(2h) + E(h) (found by bisection here, independently of rumble)."""
    for k, scores in enumerate(((5100, 4900), (5100, 4900), (5100, 4900), (1000, 9000))):
        assert upload(battle("a.A 1", "a.B 1", scores=scores, firsts=(20 + k, 15))).kind is Kind.ACCEPTED
    for other in ("a.A 1", "a.B 1"):
        for k in range(2):
            assert upload(battle("a.C 1", other, scores=(4000, 4000), firsts=(17 + k, 17))).kind is Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    matrix = batch_runs.read_matrix(db, rid(db))
    report = hourly.run_rumble(db, "roborumble", ("batch_elo",))
    db.close()
    assert matrix.names == ["a.A 1", "a.B 1", "a.C 1"]
    np.testing.assert_array_equal(
        matrix.wins, np.array([[np.nan, 70.0, 50.0], [30.0, np.nan, 50.0], [50.0, 50.0, np.nan]])
    )
    assert matrix.d[0, 1] == pytest.approx(40.75, abs=1e-9)  # APS says B is ahead of A
    scores = report.ranked.ranks["batch_elo"].scores

    def excess(half_gap: float) -> float:
        e = lambda x: 1.0 / (1.0 + 10.0 ** (-x / 400.0))  # noqa: E731
        return (0.7 + 0.5) - (e(2 * half_gap) + e(half_gap))

    lo, hi = 0.0, 400.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    assert scores.tolist() == [
        pytest.approx(1500 + lo, abs=1e-6),
        pytest.approx(1500 - lo, abs=1e-6),
        pytest.approx(1500.0, abs=1e-6),
    ]
    assert report.ranked.ranks["batch_elo"].ranks.tolist() == [1, 3, 2]
