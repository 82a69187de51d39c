"""Capacity per request class (rumble/web/capacity.py): pages and exports answer 503 with
Retry-After when their slots are taken; the client's endpoints never do."""

from __future__ import annotations

import pytest
from conftest import battle, now_ms

from rumble.app import create_app
from rumble.protocol.upload import format_upload
from rumble.web.capacity import request_class

BUSY_PAGES = "503 busy: this server process is serving 1 page requests at once; try again in 5 s.\n"
BUSY_EXPORTS = "503 busy: this server process is serving 1 exports and plots at once; try again in 5 s.\n"
EXPORT = "/api/v1/rumbles/roborumble/export/battles.csv"


@pytest.fixture
def small_app(tmp_path):
    return create_app(
        {"DB": str(tmp_path / "c.db"), "PAGE_REQUESTS": 2, "EXPORT_REQUESTS": 1, "BATCH_INTERVAL_MINUTES": 0}
    )


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/UploadedResults", "client"),
        ("/RatingsFile", "client"),
        ("/RemoveOldParticipant", "client"),
        (EXPORT, "export"),
        ("/api/v1/rumbles/roborumble/export/rumble.sqlite", "export"),
        ("/BotDetails/scores.svg", "export"),
        ("/RumbleStats/uploads.svg", "export"),
        ("/Rankings", "page"),
        ("/api/v1/rumbles/roborumble/rankings", "page"),
        ("/admin", "page"),
        ("/", "page"),
        ("/UploadedResults/x", "page"),
    ],
)
def test_requests_are_sorted_by_path(path, kind):
    assert request_class(path) == kind


def test_a_held_export_slot_refuses_the_next_export_but_not_pages_or_uploads(small_app):
    client = small_app.test_client()
    held = client.get(EXPORT, buffered=False)  # streaming, not read: keeps its slot
    assert held.status_code == 200
    busy = client.get(EXPORT, buffered=True)
    assert (busy.status_code, busy.headers["Retry-After"], busy.get_data(as_text=True)) == (503, "5", BUSY_EXPORTS)
    assert client.get("/RumbleStats/uploads.svg").status_code == 503  # a plot is an export too
    assert client.get("/Rankings?game=roborumble").status_code == 200
    held.close()
    assert client.get(EXPORT, buffered=True).status_code == 200  # buffered: the test client closes the file


def test_full_page_slots_answer_503_while_uploads_are_accepted(small_app):
    client = small_app.test_client()
    pages = [f"/Rankings?game=roborumble&order={order}" for order in ("-aps", "-pwin", "-elo")]
    held = [client.get(page, buffered=False) for page in pages[:2]]
    busy = client.get(pages[2])
    assert (busy.status_code, busy.headers["Retry-After"], busy.mimetype) == (503, "5", "text/plain")
    assert busy.get_data(as_text=True) == BUSY_PAGES.replace("serving 1 page", "serving 2 page")
    assert client.get("/admin").status_code == 503
    assert client.get(pages[0]).status_code == 200  # a page kept (rumble.web.page_cache) takes no slot
    now = now_ms()
    answer = client.post("/UploadedResults", data=format_upload(battle("a.A 1", "b.B 1", (6000, 4000), time_ms=now)))
    assert (answer.status_code, answer.get_data(as_text=True)) == (
        200,
        "[a.A_1,b.B_1]\n<1 1>\nOK. a.A 1 vs b.B 1 received for roborumble\n",
    )  # the only pairing is also the priority
    assert client.get("/RatingsFile?version=1&game=roborumble").status_code == 200
    for response in held:
        response.close()
    assert client.get("/Rankings?game=roborumble").status_code == 200


def test_a_page_read_in_full_gives_its_slot_back(small_app):
    client = small_app.test_client()
    for _ in range(5):  # more than the slots: each is released once its answer is read
        assert client.get("/Rankings?game=roborumble").status_code == 200


@pytest.mark.parametrize("values", [{"PAGE_REQUESTS": 0}, {"EXPORT_REQUESTS": 0}, {"TRUSTED_PROXIES": -1}])
def test_unusable_capacity_settings_are_refused(tmp_path, values):
    with pytest.raises(ValueError):
        create_app({"DB": str(tmp_path / "c.db"), **values})
