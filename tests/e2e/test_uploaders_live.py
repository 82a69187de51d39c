"""Uploader consistency on a real gunicorn server: uploads over HTTP from two uploaders, then the
uploaders API, the unconfirmed pairings of a bot's JSON and the Atom feed, read back over HTTP."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from .e2e_support import live_server as start_live_server
from .test_gunicorn_uploads import make_battle, upload

pytestmark = pytest.mark.e2e
ATOM = "{http://www.w3.org/2005/Atom}"
A, B, C = "a.Alpha 1.0", "b.Beta 1.0", "c.Gamma 1.0"


@pytest.fixture
def live_server(tmp_path):
    """``rumble serve`` without the batch schedule: its daily rank snapshot, taken whenever its
    process has started, would add a "New number 1" entry to the feed this test reads."""
    with start_live_server(tmp_path, settings={"BATCH_INTERVAL_MINUTES": "0"}) as server:
        yield server


def test_uploaders_confirmation_and_feed_over_http(live_server):
    now = int(time.time() * 1000)  # the live server runs on the system clock
    for n, (first, second, uploader) in enumerate(
        [(A, B, "U1"), (A, B, "U1"), (A, C, "U1"), (C, A, "U2"), (B, C, "U2")]
    ):
        upload(live_server.url, replace(make_battle(first, second, (6000, 4000), (25, 10), now - n), uploader=uploader))

    answer = live_server.get("/api/v1/rumbles/roborumble/uploaders")
    assert answer.status_code == 200
    rows = {row["uploader"]: row for row in answer.json()["items"]}
    assert {u: (r["battles"], r["tested"], r["flagged"]) for u, r in rows.items()} == {
        "U1": (3, False, False),  # fewer than 20 battles on shared pairings: not tested
        "U2": (2, False, False),
    }

    pairings = {p["name"]: p for p in live_server.get("/api/v1/rumbles/roborumble/bots/" + A).json()["items"]}
    assert (pairings[B]["confirmed"], pairings[B]["sole_uploader"]) == (False, "U1")  # A-B: U1 alone
    assert (pairings[C]["confirmed"], pairings[C]["sole_uploader"]) == (True, None)  # A-C: U1 and U2

    feed = live_server.get("/feed/roborumble")
    assert feed.status_code == 200 and feed.headers["Content-Type"].startswith("application/atom+xml")
    root = ET.fromstring(feed.content)
    assert root.tag == f"{ATOM}feed" and root.find(f"{ATOM}id").text.startswith("urn:uuid:")
    titles = {e.find(f"{ATOM}title").text for e in root.findall(f"{ATOM}entry")}
    assert titles == {f"{name} has met every active participant of roborumble" for name in (A, B, C)}
