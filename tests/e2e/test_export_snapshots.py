"""Bulk exports through a real gunicorn server (``rumble serve``, 2 workers, default settings):
sent from their snapshot file with Content-Length, ETag and Last-Modified, 304 to a conditional
GET, the previous snapshot within EXPORT_MAX_AGE_MINUTES (5) of a change and a new one after it,
one snapshot for requests that arrive together, and CSV cells that would start a formula escaped.
"""

from __future__ import annotations

import csv
import io
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from rumble.protocol.battle import Battle, Side
from rumble.protocol.upload import format_upload

from .e2e_support import live_server as start_live_server
from .e2e_support import post_like_java

pytestmark = pytest.mark.e2e

BATTLES = "/api/v1/rumbles/roborumble/export/battles.csv"


def _upload(url: str, first: str, second: str, time_ms: int, uploader: str) -> None:
    battle = Battle(
        game="roborumble",
        version="1",
        client="1.9.3.9",
        teams=False,
        melee=False,
        rounds=35,
        field="800x600",
        uploader=uploader,
        time_ms=time_ms,
        first=Side(first, 6000, 3000, 30),
        second=Side(second, 4000, 2000, 5),
    )
    status, _, text = post_like_java(url + "/UploadedResults", format_upload(battle))
    assert status == 200 and f"OK. {first} vs {second} received for roborumble" in text.splitlines(), text


def _get(url: str, **headers) -> requests.Response:
    response = requests.get(url, headers=headers, timeout=30)
    response.close()
    return response


# A request waits this long for a snapshot being written (not the default 2 s): on a busy machine a
# small build can take longer, and the request would get the previous snapshot or a 503.
WAIT = {"EXPORT_WAIT_SECONDS": "10"}


def test_exports_come_from_snapshot_files_with_conditional_get(tmp_path):
    with start_live_server(tmp_path, settings=WAIT) as live_server:
        _from_snapshot_files(live_server)


def _from_snapshot_files(live_server) -> None:
    now = int(time.time() * 1000)
    _upload(live_server.url, "alpha.Alpha 1.0", "beta.Beta 1.0", now - 2000, '=HYPERLINK("http://x")')
    _upload(live_server.url, "alpha.Alpha 1.0", "gamma.Gamma 1.0", now - 1000, "@SUM(1+1)")

    first = _get(live_server.url + BATTLES)
    assert first.status_code == 200 and first.headers["Content-Length"] == str(len(first.content))
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    rows = list(csv.reader(io.StringIO(first.text)))
    assert [row[12] for row in rows[1:]] == ['\'=HYPERLINK("http://x")', "'@SUM(1+1)"]
    assert _get(live_server.url + BATTLES, **{"If-None-Match": etag}).status_code == 304
    assert _get(live_server.url + BATTLES, **{"If-Modified-Since": modified}).status_code == 304

    _upload(live_server.url, "beta.Beta 1.0", "gamma.Gamma 1.0", now, "Jane Doe")
    stale = _get(live_server.url + BATTLES)  # within the default 5 minutes: the previous snapshot
    assert (stale.headers["ETag"], stale.content) == (etag, first.content)
    folder = live_server.db_path.parent / "exports" / "roborumble"
    (path,) = folder.glob("battles.csv.*")
    six_minutes_ago = time.time() - 6 * 60
    os.utime(path, (six_minutes_ago, six_minutes_ago))
    fresh = _get(live_server.url + BATTLES, **{"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.headers["ETag"] != etag
    assert len(list(csv.DictReader(io.StringIO(fresh.text)))) == 3
    assert [p.name for p in folder.glob("battles.csv.*")] == ["battles.csv." + fresh.headers["ETag"].strip('"')]


def test_requests_that_arrive_together_share_one_snapshot(tmp_path):
    """Six requests at once (the server allowing that many exports at once per worker) get one
    snapshot, written once."""
    with start_live_server(tmp_path, settings={"EXPORT_REQUESTS": "8", "PAGE_REQUESTS": "8", **WAIT}) as live_server:
        _together(live_server)


def _together(live_server) -> None:
    now = int(time.time() * 1000)
    for k in range(5):
        _upload(live_server.url, f"bot.B{k} 1.0", f"bot.C{k} 1.0", now - k, "Jane Doe")
    with ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(lambda _: _get(live_server.url + "/api/v1/rumbles/roborumble/export/rumble.sqlite"), range(6))
        )
    assert [a.status_code for a in answers] == [200] * 6
    assert len({(a.headers["ETag"], a.content) for a in answers}) == 1
    assert len(list((live_server.db_path.parent / "exports" / "roborumble").glob("rumble.sqlite.*"))) == 1
