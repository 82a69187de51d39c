"""Issue 11's bad inputs, each with the specific answer it gets: whole numbers that str.isdigit()
takes but int() does not, a chunked body whose framing is broken, admin fields and JSON bodies
that used to end in a 500 (tests/web/test_bad_input_sweep.py sweeps every route for the rest)."""

from __future__ import annotations

import pytest
from conftest import audit_rows, battle, maintainer_token
from gunicorn.http.body import Body, ChunkedReader
from gunicorn.http.unreader import IterUnreader
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from rumble.protocol.upload import format_upload

SUPERSCRIPT_TWO = "%C2%B2"


def test_a_superscript_page_of_the_rankings_is_a_400_naming_it(client, demo_db):
    response = client.get(f"/Rankings?game=roborumble&page={SUPERSCRIPT_TWO}")
    assert response.status_code == 400
    assert "page must be a whole number from 1 to 1000000, not &#39;²&#39;." in response.get_data(as_text=True)


@pytest.mark.parametrize(
    "url, error",
    [
        (
            f"/api/v1/rumbles/roborumble/rankings?page={SUPERSCRIPT_TWO}",
            "page must be a whole number from 1 to 1000000, not '²'.",
        ),
        (
            f"/api/v1/rumbles/roborumble/rankings?limit={SUPERSCRIPT_TWO}",
            "limit must be a whole number from 1 to 5000, not '²'.",
        ),
        (
            f"/api/v1/rumbles/roborumble/bots/sample.Corners 1.0?limit={SUPERSCRIPT_TWO}",
            "limit must be a whole number from 1 to 5000, not '²'.",
        ),
        (
            "/api/v1/rumbles/roborumble/pairing?bot=sample.Corners 1.0&vs=sample.Fire 1.0&page=%D9%A3",
            "page must be a whole number from 1 to 1000000, not '٣'.",
        ),
        (
            "/api/v1/rumbles/roborumble/compare?bota=sample.Corners 1.0&botb=sample.Fire 1.0&page=" + "9" * 10240,
            "page must be a whole number from 1 to 1000000, not '" + "9" * 20 + "'....",
        ),
    ],
)
def test_api_pagination_refuses_what_is_not_ascii_digits_in_bounds(client, demo_db, url, error):
    response = client.get(url)
    assert (response.status_code, response.json) == (400, {"error": error})


def test_pages_with_leading_zeros_are_the_pages_they_name(client, demo_db):
    every = client.get("/Rankings?game=roborumble&api=1").json  # 20 bots, unpaginated
    page = client.get("/api/v1/rumbles/roborumble/rankings?limit=0006&page=002").json
    assert (page["page"], page["limit"], page["pages"]) == (2, 6, 4)  # 20 rows, 6 a page: 4 pages
    assert [row["name"] for row in page["items"]] == [row["name"] for row in every[6:12]]
    assert client.get("/api/v1/rumbles/roborumble/rankings?page=1000000").json["items"] == []
    assert client.get("/api/v1/rumbles/roborumble/rankings?page=1000001").status_code == 400


def post_chunked(client, path: str, body: bytes):
    """POST ``body`` as gunicorn hands a chunked body to the app: read through its own chunk parser."""
    environ = EnvironBuilder(
        path=path,
        method="POST",
        headers={"Transfer-Encoding": "chunked"},
        content_type="application/x-www-form-urlencoded",
    ).get_environ()
    environ.update({"wsgi.input": Body(ChunkedReader(None, IterUnreader([body]))), "wsgi.input_terminated": True})
    environ.pop("CONTENT_LENGTH", None)
    return client.open(Request(environ))


def test_an_upload_whose_chunks_are_malformed_gets_the_protocols_refusal(client, app):
    response = post_chunked(client, "/UploadedResults", b"zz\r\nabc\r\n0\r\n\r\n")
    assert (response.status_code, response.mimetype) == (200, "text/plain")
    assert response.get_data(as_text=True) == "OK. ERROR: the request body cannot be read: Invalid chunk size: b'zz'\n"


def test_a_well_chunked_upload_is_still_stored(client, app):
    body = format_upload(battle())
    framed = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    assert (
        post_chunked(client, "/UploadedResults", framed).get_data(as_text=True).endswith(" received for roborumble\n")
    )


def test_a_removal_whose_chunks_are_malformed_gets_the_protocols_refusal(client, demo_db):
    response = post_chunked(client, "/RemoveOldParticipant", b"zz\r\nabc\r\n0\r\n\r\n")
    assert response.get_data(as_text=True) == "OK. ERROR: the request body cannot be read: Invalid chunk size: b'zz'\n"
    assert (
        client.get("/RatingsFile?version=1&game=roborumble").get_data(as_text=True).count("\n") == 20
    )  # every bot still active


@pytest.fixture
def auth(app, demo_db) -> dict:
    return {"Authorization": f"Bearer {maintainer_token(app)}"}


@pytest.mark.parametrize("body", [b'{"game": ', b'["roborumble"]', b'"roborumble"', b'{"game": "\\ud800"}'])
def test_an_admin_json_body_that_is_not_an_object_of_text_is_refused_and_nothing_runs(app, client, auth, body):
    before = audit_rows(app)
    response = client.post("/admin/rebuild", data=body, content_type="application/json", headers=auth)
    assert (response.status_code, response.json) == (
        400,
        {"error": "the body must be a JSON object whose strings are valid Unicode"},
    )
    assert audit_rows(app) == before  # before: read as no fields, so every rumble was rebuilt


def test_a_lone_surrogate_in_a_retirement_is_refused_and_retires_nothing(app, client, auth):
    response = client.post(
        "/admin/retire", json={"game": "roborumble", "name": "sample.Corners 1.0\ud800"}, headers=auth
    )
    assert response.status_code == 400
    assert client.get("/RatingsFile?version=1&game=roborumble").get_data(as_text=True).count("\n") == 20


@pytest.mark.parametrize(
    "fields, error",
    [
        (
            {"game": "roborumble", "key": "rounds", "value": "²"},
            "rounds must be a whole number from 1 to 10000, not '²'",
        ),
        (
            {"game": "roborumble", "key": "rounds", "value": "9" * 5000},
            "rounds must be a whole number from 1 to 10000, not '" + "9" * 20 + "'...",
        ),
        ({"game": "roborumble", "key": "field", "value": "²x²"}, "field: field must look like '800x600', not '²x²'"),
    ],
)
def test_a_rumble_setting_that_is_not_ascii_digits_is_refused(client, auth, fields, error):
    response = client.post("/admin/rumble-settings", data=fields, headers=auth)
    assert (response.status_code, response.json["error"]) == (400, error)


def test_a_client_version_in_other_digits_is_refused(client, auth):
    response = client.post(
        "/admin/clients", data={"clients": "١.٩.٣.٩"}, headers=auth
    )  # before: stored, and 1.9.3.9 refused
    assert (response.status_code, response.json["error"]) == (
        400,
        "a client version is digits separated by dots, like 1.9.3.9, not '١.٩.٣.٩'",
    )


@pytest.mark.parametrize(
    "fields, error",
    [
        (
            {"ids": str(10**32)},
            "battle ids must be whole numbers separated by commas or spaces: battle id must be a whole number "
            "from 1 to 9223372036854775807, not '10000000000000000000'...",
        ),
        (
            {"ids": "1 ²"},
            "battle ids must be whole numbers separated by commas or spaces: battle id must be a whole number "
            "from 1 to 9223372036854775807, not '²'",
        ),
        (
            {"ids": " ".join(["1"] * 10001)},
            "at most 10000 battle ids at once; choose more by time range, uploader or address",
        ),
        (
            {"since": "9999-12-31T23:59:59-12:00"},
            "since must be a date or time like 2026-11-22 or 2026-11-22 16:05:00, not '9999-12-31T23:59:59-'...",
        ),
        (
            {"until": "0001-01-01T00:00:00+12:00"},
            "until must be a date or time like 2026-11-22 or 2026-11-22 16:05:00, not '0001-01-01T00:00:00+'...",
        ),
    ],
)
def test_battle_selections_past_what_sqlite_and_datetime_hold_are_refused(client, auth, fields, error):
    for action in ("flag", "rollback", "unflag"):
        response = client.post(f"/admin/{action}", data=fields, headers=auth)
        assert (response.status_code, response.json) == (400, {"action": action, "error": error})
