"""Pages built once and served again (rumble.web.page_cache): while nothing changed, for at most
PAGE_CACHE_SECONDS after a change, with ETags and 304s; never across hosts, cookies or methods."""

from __future__ import annotations

import gzip

import pytest
from conftest import battle, forget_pages

from rumble import settings, store
from rumble.ingest import apply
from rumble.store import bots
from rumble.store.rumbles import rumble_id
from rumble.web import page_cache, page_data

RANKINGS = "/Rankings?game=roborumble"


@pytest.fixture
def builds(monkeypatch) -> list[int]:
    """One item per build of a rankings table (each /Rankings build reads it once)."""
    seen: list[int] = []
    read = page_data.tables.ranking_rows

    def counted(*args, **kwargs):
        seen.append(1)
        return read(*args, **kwargs)

    monkeypatch.setattr(page_data.tables, "ranking_rows", counted)
    return seen


DEFAULT_SECONDS = next(s.default for s in settings.SETTINGS if s.name == "PAGE_CACHE_SECONDS")


@pytest.fixture
def stale_app(app):
    """The test's app with a server's default bound on how far behind the log a page may be."""
    forget_pages(app, stale_seconds=DEFAULT_SECONDS)
    return app


def test_a_page_is_built_once_while_nothing_changes_and_again_after_an_upload(client, upload, builds):
    upload(battle("a.A 1.0", "b.B 1.0"))
    first = client.get(RANKINGS)
    again = client.get(RANKINGS)
    assert (first.status_code, again.status_code, len(builds)) == (200, 200, 1)
    assert again.get_data() == first.get_data() and again.headers["ETag"] == first.headers["ETag"]
    assert "c.C 1.0" not in first.get_data(as_text=True)

    upload(battle("a.A 1.0", "c.C 1.0"))
    after = client.get(RANKINGS)
    assert len(builds) == 2 and "c.C 1.0" in after.get_data(as_text=True)
    assert after.headers["ETag"] != first.headers["ETag"]


def test_a_change_another_connection_commits_is_seen(app, client, upload, db, builds, clock):
    upload(battle("a.A 1.0", "b.B 1.0"))
    assert "b.B 1.0" in client.get(RANKINGS).get_data(as_text=True)
    rid = rumble_id(db, "roborumble")
    with store.write(db):
        assert apply.retire(db, rid, bots.bot_id(db, "b.B 1.0", clock.now()), store.format_time(clock.now()), "test")
    page = client.get(RANKINGS).get_data(as_text=True)
    assert len(builds) == 2 and "b.B 1.0</a>" not in page


def test_a_repeat_with_the_etag_is_a_304_without_a_body(client, upload):
    upload(battle("a.A 1.0", "b.B 1.0"))
    first = client.get(RANKINGS)
    etag = first.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/") and first.headers["Cache-Control"] == "no-cache"
    repeat = client.get(RANKINGS, headers={"If-None-Match": etag})
    assert (repeat.status_code, repeat.get_data()) == (304, b"")
    assert repeat.headers["ETag"] == etag
    other = client.get(RANKINGS, headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and other.get_data() == first.get_data()


def test_a_page_built_anew_with_the_same_bytes_keeps_its_etag(client, clock):
    first = client.get("/ScoreExplanation")
    clock.advance(seconds=page_cache.IDLE_SECONDS)  # kept no longer: built anew, the same text
    repeat = client.get("/ScoreExplanation", headers={"If-None-Match": first.headers["ETag"]})
    assert repeat.status_code == 304


def test_an_unchanged_page_is_built_again_after_a_minute(client, upload, clock, builds):
    upload(battle("a.A 1.0", "b.B 1.0"))
    client.get(RANKINGS)
    clock.advance(seconds=page_cache.IDLE_SECONDS - 1)
    client.get(RANKINGS)
    assert len(builds) == 1
    clock.advance(seconds=1)
    client.get(RANKINGS)
    assert len(builds) == 2


def test_while_uploads_change_the_log_a_page_is_at_most_page_cache_seconds_behind(
    stale_app, client, upload, clock, builds
):
    upload(battle("a.A 1.0", "b.B 1.0"))
    assert "c.C 1.0" not in client.get(RANKINGS).get_data(as_text=True)
    upload(battle("a.A 1.0", "c.C 1.0"))
    clock.advance(seconds=DEFAULT_SECONDS - 0.1)
    assert "c.C 1.0" not in client.get(RANKINGS).get_data(as_text=True)  # kept: not quite that far behind
    assert len(builds) == 1
    clock.advance(seconds=0.1)
    assert "c.C 1.0" in client.get(RANKINGS).get_data(as_text=True)  # that far: built anew
    assert len(builds) == 2


def test_the_host_is_part_of_what_a_page_is_kept_under(client, upload):
    """A request with a forged Host must not leave its links in the page others get."""
    upload(battle("a.A 1.0", "b.B 1.0"))
    forged = client.get("/feed", headers={"Host": "evil.example"}).get_data(as_text=True)
    honest = client.get("/feed").get_data(as_text=True)
    assert "evil.example" in forged and "evil.example" not in honest


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer x"}], ids=["cookie", "authorization"])
def test_a_request_with_credentials_is_built_for_itself(client, upload, builds, headers):
    upload(battle("a.A 1.0", "b.B 1.0"))
    if not headers:
        client.set_cookie("session", "x")
    answers = [client.get(RANKINGS, headers=headers) for _ in range(2)]
    assert [answer.status_code for answer in answers] == [200, 200] and len(builds) == 2
    assert not any("ETag" in answer.headers for answer in answers)


@pytest.mark.parametrize("path, status", [("/healthz", 200), ("/Rankings?game=nosuch", 404), ("/admin", 401)])
def test_operators_pages_and_failures_are_never_kept(client, path, status):
    answers = [client.get(path) for _ in range(2)]
    assert [answer.status_code for answer in answers] == [status, status]
    assert not any("ETag" in answer.headers for answer in answers)


def test_the_least_recently_served_go_first_beyond_the_memory_bound():
    cache = page_cache.PageCache(0.0, 250)

    def answer(size: int) -> page_cache.Answer:
        return page_cache.Answer(page_cache.Body(b"x" * size, (), "etag"), None, generation=1, built=1000.0)

    cache.put("/a", answer(100))
    cache.put("/b", answer(100))
    assert cache.get("/a", 1, 1000.0) is not None  # /a served: /b is now the least recent
    cache.put("/c", answer(100))
    assert [url for url in ("/a", "/b", "/c") if cache.get(url, 1, 1000.0)] == ["/a", "/c"]
    cache.put("/huge", answer(251))  # larger than the whole bound: not kept, nothing dropped for it
    assert [url for url in ("/a", "/c", "/huge") if cache.get(url, 1, 1000.0)] == ["/a", "/c"]


def test_while_one_request_builds_an_outdated_page_the_others_get_the_outdated_one():
    cache = page_cache.PageCache(5.0, 1 << 20)
    cache.put("/p", page_cache.Answer(page_cache.Body(b"old", (), "etag"), None, generation=1, built=1000.0))
    assert cache.get("/p", 2, 1004.9).plain.data == b"old"  # changed, within the 5 s allowed
    assert cache.get("/p", 2, 1005.0) is None  # too far behind: this request builds it
    assert cache.get("/p", 2, 1005.1).plain.data == b"old"  # meanwhile the others get the old one
    cache.done("/p")  # the build failed or was not kept
    assert cache.get("/p", 2, 1005.2) is None  # the next request builds it
    cache.put("/p", page_cache.Answer(page_cache.Body(b"new", (), "etag2"), None, generation=2, built=1005.3))
    cache.done("/p")
    assert cache.get("/p", 2, 1005.4).plain.data == b"new"


@pytest.mark.parametrize("kept", [False, True], ids=["as built", "as kept"])
def test_a_client_that_accepts_gzip_gets_the_page_packed_with_an_etag_of_its_own(client, upload, kept):
    upload(battle("a.A 1.0", "b.B 1.0"))
    if kept:
        plain = client.get(RANKINGS)
    packed = client.get(RANKINGS, headers={"Accept-Encoding": "br;q=1.0, gzip;q=0.5"})
    if not kept:
        plain = client.get(RANKINGS)
    assert (packed.headers["Content-Encoding"], "Content-Encoding" in plain.headers) == ("gzip", False)
    assert gzip.decompress(packed.get_data()) == plain.get_data()
    assert int(packed.headers["Content-Length"]) == len(packed.get_data()) < len(plain.get_data())
    assert "Accept-Encoding" in packed.headers["Vary"] and "Accept-Encoding" in plain.headers["Vary"]
    assert packed.headers["ETag"] != plain.headers["ETag"]
    again = client.get(RANKINGS, headers={"Accept-Encoding": "gzip", "If-None-Match": packed.headers["ETag"]})
    assert again.status_code == 304
    refused = client.get(RANKINGS, headers={"Accept-Encoding": "gzip;q=0", "If-None-Match": packed.headers["ETag"]})
    assert refused.status_code == 200 and refused.get_data() == plain.get_data()
