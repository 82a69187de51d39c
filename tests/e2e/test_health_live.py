"""/healthz and /metrics of a real ``rumble serve`` (gunicorn, two workers) while uploads flow, after
its writer process is killed, and after a restart: every worker answers the same figures, since
they are read from the database or from the writer's pulse; the upload and refusal counts the
workers saved when they stopped are there after the restart."""

from __future__ import annotations

import http.client
import os
import signal
import time
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rumble.protocol.upload import format_upload

from .e2e_support import live_server, post_like_java, read_only
from .test_group_commit import _writer_pid
from .test_gunicorn_uploads import make_battle

pytestmark = pytest.mark.e2e
UPLOADS, REMOVALS = 9, 4


def _remove(url: str) -> str:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("POST", "/RemoveOldParticipant", b"version=1&game=roborumble&name=no.Such_1.0&dummy=NA\n")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def _scrape(server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = server.get("/metrics")
    assert response.status_code == 200, response.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def _until(read, done, seconds: float = 60.0):
    """``read()`` again every tenth of a second until ``done`` of it (a failure after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            assert done(value), value
            return value
        time.sleep(0.1)


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_health_and_metrics_while_uploads_flow_and_after_a_restart(tmp_path):
    now = int(time.time() * 1000)
    with live_server(tmp_path, stop_signal=signal.SIGTERM) as server:
        for k in range(UPLOADS):
            sent = make_battle(f"live.A{k} 1.0", "live.B 1.0", (6000, 4000), (20, 15), now - k)
            status, _, text = post_like_java(server.url + "/UploadedResults", format_upload(sent))
            assert status == 200 and text.splitlines()[-1].startswith("OK. live.A"), text
        for _ in range(REMOVALS):  # an uploader nobody vouched for: refused, counted in the worker
            assert _remove(server.url).startswith("OK. ERROR: uploader Jane Doe@127.0.0.0/24 is not established")
        with read_only(server.db_path) as db:
            last = db.execute("SELECT max(received_at) FROM battles WHERE state = 'ok'").fetchone()[0]
        health = server.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        row = next(r for r in health.json()["rumbles"] if r["name"] == "roborumble")
        assert (row["last_accepted_upload"], row["battles"], row["active_bots"]) == (last, UPLOADS, UPLOADS + 1)
        assert row["age_seconds"] == round((_parse(health.json()["now"]) - _parse(last)).total_seconds(), 3)
        live = [_scrape(server) for _ in range(6)]  # the requests go to either worker
        for samples in live:
            assert samples[("rumble_logged_battles_total", (("rumble", "roborumble"),))] == UPLOADS
            assert samples[("rumble_active_bots", (("rumble", "roborumble"),))] == UPLOADS + 1
            key = ("rumble_last_accepted_upload_timestamp_seconds", (("rumble", "roborumble"),))
            assert samples[key] == _parse(last).timestamp()
            assert samples[("rumble_uploads_total", (("outcome", "accepted"), ("rumble", "roborumble")))] <= UPLOADS
            assert samples[("rumble_writer_answering", ())] == 1 and samples[("rumble_writer_restarts_total", ())] == 0
            assert samples[("rumble_writer_requests_total", ())] >= UPLOADS  # the workers' uploads (and saved counts)
        assert health.json()["writer"]["state"] == "answering" and health.json()["writer"]["restarts"] == 0
        # The writer killed outright: the supervisor replaces it; both endpoints say so.
        os.kill(_writer_pid(server), signal.SIGKILL)
        writer = _until(lambda: server.get("/healthz").json()["writer"], lambda w: w["restarts"] == 1)
        writer = _until(lambda: server.get("/healthz").json()["writer"], lambda w: w["state"] == "answering")
        assert writer["restarts"] == 1
        sent = make_battle("live.After 1.0", "live.B 1.0", (6000, 4000), (20, 15), now - UPLOADS)
        status, _, text = post_like_java(server.url + "/UploadedResults", format_upload(sent))
        assert status == 200 and text.splitlines()[-1] == "OK. live.After 1.0 vs live.B 1.0 received for roborumble"
        for samples in [_scrape(server) for _ in range(4)]:
            assert samples[("rumble_writer_restarts_total", ())] == 1 and samples[("rumble_writer_answering", ())] == 1
    with live_server(tmp_path) as server:  # the same database: the counts saved as the workers stopped
        after = [_scrape(server) for _ in range(4)]
        assert all(samples == after[0] for samples in after)
        refused = ("rumble_removal_refusals_total", (("reason", "not established"), ("rumble", "roborumble")))
        assert after[0][refused] == REMOVALS
        assert after[0][("rumble_logged_battles_total", (("rumble", "roborumble"),))] == UPLOADS + 1
        accepted = (("outcome", "accepted"), ("rumble", "roborumble"))
        assert after[0][("rumble_uploads_total", accepted)] == UPLOADS + 1
        assert after[0][("rumble_upload_answer_duration_seconds_count", accepted)] == UPLOADS + 1
        assert after[0][("rumble_writer_restarts_total", ())] == 0  # a new server, a new count
