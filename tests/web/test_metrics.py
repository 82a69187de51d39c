"""/metrics: the Prometheus text format, read by prometheus_client's own parser and compared with
figures each test counts itself; what is saved (upload and refusal counts) and what is live (the
log, the bots, the last accepted upload); who may read it."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from conftest import battle
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from rumble import settings
from rumble.app import create_app, save_counts
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.web import close_thread_db, health, refusal_counter, upload_counter

RUMBLES = ("roborumble", "minirumble")


@pytest.fixture(autouse=True)
def counts_kept_until_saved(monkeypatch):
    """The workers' counts stay in memory until the test saves them (as a worker does every half
    minute), however long the test takes."""
    monkeypatch.setattr(upload_counter, "FLUSH_SECONDS", float("inf"))
    monkeypatch.setattr(refusal_counter, "FLUSH_SECONDS", float("inf"))


def scrape(client, **kwargs) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """/metrics parsed: (sample name, its labels sorted) -> value."""
    response = client.get("/metrics", **kwargs)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.content_type == "text/plain; version=0.0.4; charset=utf-8"
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def of(samples: dict, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of one name: labels -> value."""
    return {labels: value for (sample, labels), value in samples.items() if sample == name}


def uploads(samples: dict) -> dict[tuple[str, str], float]:
    return {(dict(k)["rumble"], dict(k)["outcome"]): v for k, v in of(samples, "rumble_uploads_total").items()}


def by_rumble(samples: dict, name: str) -> dict[str, float]:
    return {dict(k)["rumble"]: v for k, v in of(samples, name).items()}


def save(app) -> None:
    """Save the counts this process holds, as a worker does (rumble.app.save_counts)."""
    save_counts(app.config["RUMBLE"]["DB"])


def test_an_empty_server_answers_every_rumble_at_zero(app, client):
    samples = scrape(client)
    assert of(samples, "rumble_database_readable") == {(): 1.0}
    names = set(app.extensions["rumble.rumbles"])
    assert set(by_rumble(samples, "rumble_active_bots")) == names
    assert set(by_rumble(samples, "rumble_active_bots").values()) == {0.0}
    assert set(by_rumble(samples, "rumble_logged_battles_total").values()) == {0.0}
    assert by_rumble(samples, "rumble_last_accepted_upload_timestamp_seconds") == {}
    expected = {(n, o): 0.0 for n in names for o in ("accepted", "held", "duplicate")}
    assert uploads(samples) == expected | {("", "refused"): 0.0, ("", "error"): 0.0}
    assert of(samples, "rumble_removal_refusals_total") == {}


def test_uploads_count_by_rumble_and_outcome_once_saved(app, client, upload):
    """Five accepted in roborumble, two in minirumble, one repeat, one held, two refused: none shows
    until the workers save their counts, then each exactly."""
    sent = [battle(f"a.A{k} 1.0", "b.B 1.0") for k in range(5)]
    for each in sent:
        assert upload(each).kind is Kind.ACCEPTED
    for k in range(2):
        assert upload(battle(f"a.A{k} 1.0", "b.B 1.0", game="minirumble")).kind is Kind.ACCEPTED
    assert upload(sent[0]).kind is Kind.DUPLICATE
    assert upload(battle("a.A0 1.0", "c.C 1.0", scores=(3000, 2000), firsts=(5, 5))).kind is Kind.HELD
    for body in (b"game=roborumble&version=1", b"nothing"):
        assert upload(body).kind is Kind.REFUSED
    assert uploads(scrape(client))[("roborumble", "accepted")] == 0  # in the worker's memory only
    save(app)
    samples = scrape(client)
    counted = {k: v for k, v in uploads(samples).items() if v}
    assert counted == {
        ("roborumble", "accepted"): 5,
        ("minirumble", "accepted"): 2,
        ("roborumble", "duplicate"): 1,
        ("roborumble", "held"): 1,
        ("", "refused"): 2,
    }
    seconds = {
        (dict(k)["rumble"], dict(k)["outcome"]): v for k, v in of(samples, "rumble_upload_answer_seconds_total").items()
    }
    assert set(seconds) == set(uploads(samples))
    assert all(seconds[key] > 0 for key in counted) and seconds[("", "error")] == 0
    save(app)  # nothing new to save: nothing counted twice
    assert {k: v for k, v in uploads(scrape(client)).items() if v} == counted


def test_the_log_the_bots_and_the_last_accepted_upload_are_live(app, client, upload, db, clock):
    """Without any save: battles logged (the held one too), active bots, and the newest accepted
    battle's receive time, which a later held battle does not move."""
    for k in range(4):
        assert upload(battle(f"a.A{k} 1.0", "b.B 1.0")).kind is Kind.ACCEPTED
        clock.advance(seconds=7)
    assert upload(battle("a.A0 1.0", "m.M 1.0", game="minirumble")).kind is Kind.ACCEPTED
    clock.advance(seconds=7)
    assert upload(battle("a.A0 1.0", "c.C 1.0", scores=(3000, 2000), firsts=(5, 5))).kind is Kind.HELD
    samples = scrape(client)
    assert by_rumble(samples, "rumble_logged_battles_total") == {n: 0 for n in app.extensions["rumble.rumbles"]} | {
        "roborumble": 5,
        "minirumble": 1,
    }
    active = by_rumble(samples, "rumble_active_bots")
    assert (active["roborumble"], active["minirumble"]) == (5, 2)  # A0..A3 and B (C only in a held battle); A0, M
    newest = dict(
        db.execute(
            "SELECT r.name, max(b.received_at) FROM battles b JOIN rumbles r ON r.id = b.rumble_id "
            "WHERE b.state = 'ok' GROUP BY r.name"
        ).fetchall()
    )
    expected = {n: datetime.fromisoformat(t).replace(tzinfo=UTC).timestamp() for n, t in newest.items()}
    assert by_rumble(samples, "rumble_last_accepted_upload_timestamp_seconds") == expected
    assert set(expected) == set(RUMBLES)


def test_refused_removals_count_by_rumble_and_reason_and_unknown_games_fold_into_one(app, client):
    def remove(game: str) -> None:
        body = f"version=1&game={game}&name=x.X_1.0&dummy=NA".encode()
        answer = client.post("/RemoveOldParticipant", data=body, content_type="application/x-www-form-urlencoded")
        assert answer.get_data(as_text=True).startswith("OK. ERROR")

    for game in ("nosuch", "other", "nosuch"):
        remove(game)
    for _ in range(3):
        remove("roborumble")  # this address uploaded nothing there
    save(app)
    refused = {
        (dict(k)["rumble"], dict(k)["reason"]): v
        for k, v in of(scrape(client), "rumble_removal_refusals_total").items()
    }
    assert refused == {("", "unknown game"): 3, ("roborumble", "not an uploader"): 3}


def test_two_workers_on_one_database_answer_the_same(app, client, upload, tmp_path, clock):
    for k in range(3):
        assert upload(battle(f"a.A{k} 1.0", "b.B 1.0")).kind is Kind.ACCEPTED
    save(app)
    other = create_app({"DB": app.config["RUMBLE"]["DB"], "BATCH_INTERVAL_MINUTES": 0, "CLOCK": clock})
    assert scrape(other.test_client()) == scrape(client)


def test_an_unreadable_database_is_said_without_a_500(app, client):
    path = app.config["RUMBLE"]["DB"]
    close_thread_db()
    for suffix in ("-wal", "-shm"):
        open(path + suffix, "wb").close()
    with open(path, "wb") as damaged:
        damaged.write(b"this is not an SQLite database, just text " * 100)
    samples = scrape(client)
    assert samples == {("rumble_database_readable", ()): 0.0}


def test_another_collector_joins_the_answer(app, client):
    class Writer:
        def collect(self):
            yield GaugeMetricFamily("rumble_writer_queue", "Uploads waiting for the writer.", value=3)

    health.add_collector(app, Writer())
    samples = scrape(client)
    assert samples[("rumble_writer_queue", ())] == 3 and samples[("rumble_database_readable", ())] == 1


@pytest.fixture
def restricted(tmp_path, clock):
    token = "metrics-token-for-the-test"
    app = create_app(
        {
            "DB": str(tmp_path / "rumble.db"),
            "BATCH_INTERVAL_MINUTES": 0,
            "CLOCK": clock,
            "METRICS_ADDRESSES": ("10.0.0.0/8", "2001:db8::1"),
            "METRICS_TOKEN_SHA256": hashlib.sha256(token.encode()).hexdigest(),
        }
    )
    return app.test_client(), token


def test_a_restricted_metrics_answers_only_its_addresses_with_the_token(restricted):
    client, token = restricted
    inside = {"environ_base": {"REMOTE_ADDR": "10.1.2.3"}}
    good = {"Authorization": f"Bearer {token}"}
    assert scrape(client, headers=good, **inside)[("rumble_database_readable", ())] == 1
    assert scrape(client, headers=good, environ_base={"REMOTE_ADDR": "2001:db8::1"})
    outside = client.get("/metrics", headers=good)  # 127.0.0.1
    assert outside.status_code == 403 and "METRICS_ADDRESSES" in outside.get_data(as_text=True)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}, {"Authorization": "Bearer "}):
        refused = client.get("/metrics", headers=headers, **inside)
        assert refused.status_code == 401, headers
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
        assert "METRICS_TOKEN_SHA256" in refused.get_data(as_text=True)


@pytest.mark.parametrize(
    ("name", "raw", "words"),
    [
        ("METRICS_ADDRESSES", "10.0.0.0/8,localhost", "'localhost' is not an IP address or network"),
        ("METRICS_TOKEN_SHA256", "secret", "not a SHA-256 digest"),
        ("METRICS_TOKEN_SHA256", "g" * 64, "not a SHA-256 digest"),
    ],
)
def test_a_bad_metrics_setting_is_refused_in_plain_words(name, raw, words):
    with pytest.raises(ValueError, match=words):
        settings.load(environ={f"RUMBLE_{name}": raw})


def test_metrics_settings_read_from_the_environment():
    digest = hashlib.sha256(b"t").hexdigest()
    values = settings.load(
        environ={"RUMBLE_METRICS_ADDRESSES": " 127.0.0.1, 10.0.0.0/8 ", "RUMBLE_METRICS_TOKEN_SHA256": digest.upper()}
    )
    assert values["METRICS_ADDRESSES"] == ("127.0.0.1/32", "10.0.0.0/8")
    assert values["METRICS_TOKEN_SHA256"] == digest
    assert settings.load(environ={"RUMBLE_METRICS_TOKEN_SHA256": ""})["METRICS_TOKEN_SHA256"] is None


def test_the_figures_are_small_reads_at_any_log_size(app, db):
    """Per rumble: its participants, its upload counts and the end of its log by index, never a scan of the log."""
    from conftest import query_plan

    from rumble.store import health_figures

    plan = query_plan(db, lambda: health_figures.rumble_figures(db))
    assert "SCAN b" not in plan and "battles_by_rumble" in plan, plan
    assert "SCAN c" not in plan, plan


def test_answer_times_form_a_histogram_by_rumble_and_outcome(app, client, clock):
    """Four answers of known server times, counted as the upload endpoint counts them: each bucket
    holds the answers up to its bound, cumulatively; the sum and the count are theirs."""
    counts = upload_counter.counts_for(app.config["RUMBLE"]["DB"])
    outcome = UploadOutcome(Kind.ACCEPTED, "roborumble", "a.A 1.0", "b.B 1.0", (1, 1))
    for elapsed_ms in (1.0, 3.0, 30.0, 20_000.0):
        counts.record(outcome, elapsed_ms, clock.now())
    counts.record(UploadOutcome(Kind.REFUSED, reason="no"), 2.5, clock.now())  # on the bound: in its bucket
    save(app)
    samples = scrape(client)
    labels = (("outcome", "accepted"), ("rumble", "roborumble"))
    buckets = {
        dict(k)["le"]: v
        for k, v in of(samples, "rumble_upload_answer_duration_seconds_bucket").items()
        if tuple((n, x) for n, x in k if n != "le") == labels
    }
    # 1 ms <= 2.5; 3 ms <= 5; 30 ms <= 50; 20 s above every finite bound (10 s).
    assert buckets == {
        "0.0025": 1,
        "0.005": 2,
        "0.01": 2,
        "0.025": 2,
        "0.05": 3,
        "0.1": 3,
        "0.25": 3,
        "0.5": 3,
        "1.0": 3,
        "2.5": 3,
        "5.0": 3,
        "10.0": 3,
        "+Inf": 4,
    }
    assert samples[("rumble_upload_answer_duration_seconds_count", labels)] == 4
    assert samples[("rumble_upload_answer_duration_seconds_sum", labels)] == pytest.approx(20.034)
    refused = (("outcome", "refused"), ("rumble", ""))
    assert samples[("rumble_upload_answer_duration_seconds_bucket", (("le", "0.0025"), *refused))] == 1
    save(app)  # nothing new: nothing counted twice
    assert scrape(client)[("rumble_upload_answer_duration_seconds_count", labels)] == 4


def test_requests_answered_busy_are_counted_by_class(tmp_path, clock):
    """A page request over the worker's one page slot is answered 503 and counted (saved as the
    upload counts are); the export class counts apart."""
    from rumble.web import page_cache
    from rumble.web.capacity import Capacity

    app = create_app({"DB": str(tmp_path / "rumble.db"), "BATCH_INTERVAL_MINUTES": 0, "CLOCK": clock})
    capacity = app.extensions[page_cache.MIDDLEWARE_KEY].app  # behind the kept pages, which take no slot
    assert isinstance(capacity, Capacity)
    client = app.test_client()
    held = [capacity.pages.acquire(blocking=False) for _ in range(capacity.limits["page"])]
    assert all(held)
    try:
        for path in ("/Rankings?game=roborumble", "/", "/api/v1/rumbles/roborumble/export/battles.csv"):
            assert client.get(path).status_code == 503
    finally:
        for _ in held:
            capacity.pages.release()
    save(app)
    busy = {dict(k)["class"]: v for k, v in of(scrape(client), "rumble_busy_answers_total").items()}
    assert busy == {"page": 2, "export": 1}
