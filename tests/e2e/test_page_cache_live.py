"""Pages kept and served again by real ``rumble serve`` workers: ETags, 304s, and a page that
stays as built while uploads change the log, for up to PAGE_CACHE_SECONDS."""

from __future__ import annotations

import requests

from rumble.protocol.battle import Battle
from rumble.protocol.upload import format_upload

from .e2e_support import live_server, post_like_java
from .test_gunicorn_uploads import make_battle


def _upload(url: str, battle: Battle) -> None:
    status, _, text = post_like_java(url + "/UploadedResults", format_upload(battle, "\n"))
    assert (status, text.splitlines()[-1]) == (
        200,
        f"OK. {battle.first.name} vs {battle.second.name} received for roborumble",
    ), text


def test_a_worker_serves_a_page_as_built_while_uploads_change_the_log(tmp_path):
    # A minute of staleness allowed (kept pages are built anew after a minute anyway): what this
    # test reads a few requests later is the page as it was built, however slow the machine.
    with live_server(tmp_path, settings={"PAGE_CACHE_SECONDS": "600"}) as server:
        _upload(server.url, make_battle("live.A 1.0", "live.B 1.0", (6000, 4000), (21, 14)))
        with requests.Session() as session:  # one kept-alive connection: one worker, its pages
            first = session.get(server.url + "/Rankings?game=roborumble", timeout=30)
            assert first.status_code == 200 and "live.B 1.0" in first.text
            etag = first.headers["ETag"]
            repeat = session.get(server.url + "/Rankings?game=roborumble", headers={"If-None-Match": etag}, timeout=30)
            assert (repeat.status_code, repeat.content, repeat.headers["ETag"]) == (304, b"", etag)

            _upload(server.url, make_battle("live.A 1.0", "live.C 1.0", (6000, 4000), (21, 14)))
            kept = session.get(server.url + "/Rankings?game=roborumble", timeout=30)
            assert (kept.status_code, kept.headers["ETag"], kept.text) == (200, etag, first.text)
            # A page this worker had not built shows the upload: the log has it.
            built = session.get(server.url + "/Rankings?game=roborumble&order=-aps", timeout=30)
            assert built.status_code == 200 and "live.C 1.0" in built.text


def test_a_page_is_built_anew_after_a_change_when_no_staleness_is_allowed(live_server):
    _upload(live_server.url, make_battle("live.A 1.0", "live.B 1.0", (6000, 4000), (21, 14)))
    with requests.Session() as session:
        first = session.get(live_server.url + "/api/v1/rumbles/roborumble/rankings", timeout=30)
        again = session.get(live_server.url + "/api/v1/rumbles/roborumble/rankings", timeout=30)
        assert first.headers["ETag"] == again.headers["ETag"] and first.content == again.content
        _upload(live_server.url, make_battle("live.A 1.0", "live.C 1.0", (6000, 4000), (21, 14)))
        after = session.get(live_server.url + "/api/v1/rumbles/roborumble/rankings", timeout=30)
        assert after.status_code == 200 and after.headers["ETag"] != first.headers["ETag"]
        assert "live.C 1.0" in {row["name"] for row in after.json()["items"]}
