"""A worker that stops saves the counts it kept in memory (gunicorn's ``worker_exit`` hook,
rumble.app.save_counts): every upload answered and every refused removal is counted, although the
workers save them otherwise only with a request half a minute after their last save."""

from __future__ import annotations

import http.client
import signal
import time
from urllib.parse import urlsplit

import pytest

from rumble.protocol.upload import format_upload

from .e2e_support import live_server, post_like_java, read_only
from .test_gunicorn_uploads import make_battle

pytestmark = pytest.mark.e2e


def _remove(url: str) -> str:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("POST", "/RemoveOldParticipant", b"version=1&game=roborumble&name=no.Such_1.0&dummy=NA\n")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def _upload(server, count: int) -> None:
    """``count`` uploads, each answered as accepted."""
    now = int(time.time() * 1000)
    for k in range(count):
        sent = make_battle(f"count.A{k} 1.0", "count.B 1.0", (6000, 4000), (20, 15), now - k)
        status, _, text = post_like_java(server.url + "/UploadedResults", format_upload(sent))
        assert (status, text.splitlines()[-1]) == (
            200,
            f"OK. {sent.first.name} vs {sent.second.name} received for roborumble",
        )


def _refuse(server, count: int) -> None:
    """``count`` removals from an uploader nobody vouched for: refused before any lock, counted."""
    for _ in range(count):
        assert _remove(server.url).startswith("OK. ERROR: uploader Jane Doe@127.0.0.0/24 is not established")


def _saved(db_path) -> tuple[list, list]:
    """The saved counts: (outcome, uploads) and (reason, refused removals)."""
    with read_only(db_path) as db:
        uploads = db.execute("SELECT outcome, sum(uploads) FROM upload_stats GROUP BY outcome").fetchall()
        refusals = db.execute("SELECT reason, sum(requests) FROM removal_refusals GROUP BY reason").fetchall()
    return uploads, refusals


def test_a_stopping_server_saves_every_upload_and_refusal_it_counted(tmp_path):
    with live_server(tmp_path, stop_signal=signal.SIGTERM) as server:  # systemd's stop: gunicorn's graceful one
        _upload(server, 12)
        _refuse(server, 7)
    assert _saved(server.db_path) == ([("accepted", 12)], [("not established", 7)])


def test_a_server_stopped_with_ctrl_c_saves_its_counts_too(tmp_path):
    with live_server(tmp_path, stop_signal=signal.SIGINT) as server:  # gunicorn's quick shutdown
        _upload(server, 5)
        _refuse(server, 2)
    assert _saved(server.db_path) == ([("accepted", 5)], [("not established", 2)])


def test_a_running_server_saves_its_counts_on_a_timer_without_a_later_request(tmp_path):
    """No request comes after the uploads and the removals: each worker's timer saves the counts
    (COUNTS_SAVE_SECONDS, 1 s here) while the server runs. Waited for up to the client's 10 s."""
    expected = ([("accepted", 6)], [("not established", 3)])
    with live_server(tmp_path, settings={"COUNTS_SAVE_SECONDS": "1"}) as server:
        _upload(server, 6)
        _refuse(server, 3)
        deadline = time.monotonic() + 10.0
        while (saved := _saved(server.db_path)) != expected and time.monotonic() < deadline:
            time.sleep(0.2)
        assert saved == expected
        assert server.process.poll() is None  # saved by the running server, not as it stopped
