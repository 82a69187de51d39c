"""Bulk exports served from snapshot files (rumble.schedule.exports): length, ETag and Last-Modified with
conditional GET, a new snapshot once the rumble changed (at once, or after EXPORT_MAX_AGE_MINUTES),
old snapshots removed, builds bounded (one per export, EXPORT_BUILDS in all, the previous snapshot
or a 503 meanwhile), the batch job's refresh, and CSV cells that would start a formula.

Times are derived from the clock now (os.utime back from time.time()), never from a date.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import sqlite3
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from conftest import battle, now_ms

from rumble import store
from rumble.app import create_app
from rumble.protocol.replies import Kind
from rumble.protocol.upload import format_upload
from rumble.schedule import exports, hourly
from rumble.web import close_thread_db

A, B, C = "alpha.Alpha 1.0", "beta.Beta 1.0", "gamma.Gamma 1.0"
URL = "/api/v1/rumbles/roborumble/export/"
NAMES = [
    "rankings.csv",
    "rankings.json",
    "pairings.csv",
    "pairings.json",
    "battles.csv",
    "battles.json",
    "rumble.sqlite",
]


@pytest.fixture(autouse=True)
def builds_are_waited_for(monkeypatch):
    """A request waits for a snapshot being built up to EXPORT_WAIT_SECONDS (2 s), then takes the
    previous one: on a busy machine a test's small build can take longer, and the request would get
    the old snapshot. These tests wait as long as the build takes (the client's 10 s timeout at most);
    the fallback to the previous snapshot is tested on its own, with a short wait."""
    monkeypatch.setenv("RUMBLE_EXPORT_WAIT_SECONDS", "10")


@pytest.fixture
def app(tmp_path):
    """An app that writes a new snapshot on the first request after any change (max age 0)."""
    app = create_app({"DB": str(tmp_path / "rumble.db"), "BATCH_INTERVAL_MINUTES": 0, "EXPORT_MAX_AGE_MINUTES": 0})
    yield app
    close_thread_db()


@pytest.fixture
def rumble(upload):
    now = now_ms()
    for i, (first, second) in enumerate([(A, B), (A, C), (B, C)]):
        assert upload(battle(first, second, scores=(6000, 4000), time_ms=now - 1000 * i)).kind is Kind.ACCEPTED


def get(client, name: str, **headers):
    return client.get(URL + name, headers=headers, buffered=True)  # buffered: the served file is closed


def snapshot_files(folder: Path, name: str) -> list[Path]:
    return sorted(p for p in folder.glob(f"{name}.*") if re.fullmatch(r"[0-9a-f]{32}", p.name[len(name) + 1 :]))


def battle_count(body: bytes, name: str, tmp_path: Path) -> int:
    """The battles an export of the battle log holds, read with csv, json or sqlite3."""
    if name == "battles.csv":
        return len(list(csv.DictReader(io.StringIO(body.decode()))))
    if name == "battles.json":
        return len(json.loads(body)["rows"])
    path = tmp_path / "copy.sqlite"
    path.write_bytes(body)
    copy = sqlite3.connect(path)
    try:
        return copy.execute("SELECT count(*) FROM battles").fetchone()[0]
    finally:
        copy.close()


@pytest.mark.parametrize("name", NAMES)
def test_an_export_has_its_length_etag_and_last_modified_and_answers_304_while_unchanged(
    app, client, rumble, tmp_path, name
):
    first = get(client, name)
    body = first.get_data()
    assert first.status_code == 200 and len(body) > 0
    assert first.headers["Content-Length"] == str(len(body))
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    (path,) = snapshot_files(tmp_path / "exports" / "roborumble", name)  # the default EXPORT_DIR: beside the database
    assert path.read_bytes() == body
    written = path.stat()

    by_etag = get(client, name, **{"If-None-Match": etag})
    assert (by_etag.status_code, by_etag.get_data(), by_etag.headers["ETag"]) == (304, b"", etag)
    by_date = get(client, name, **{"If-Modified-Since": modified})
    assert (by_date.status_code, by_date.get_data()) == (304, b"")
    other = get(client, name, **{"If-None-Match": '"' + "0" * 32 + '"'})
    assert (other.status_code, other.get_data(), other.headers["ETag"]) == (200, body, etag)
    assert [(p, p.stat().st_ino, p.stat().st_mtime_ns) for p in snapshot_files(path.parent, name)] == [
        (path, written.st_ino, written.st_mtime_ns)
    ]  # served again from the same file: nothing was rewritten


@pytest.mark.parametrize("name", NAMES)
def test_an_upload_gives_the_next_request_a_new_snapshot_and_the_old_one_is_removed(
    app, client, rumble, upload, tmp_path, name
):
    first = get(client, name)
    etag = first.headers["ETag"]
    left_over = tmp_path / "exports" / "roborumble" / f".{name}.died.tmp"  # as a build that died leaves it
    left_over.write_text("half")
    assert upload(battle(B, A, scores=(5000, 5000), uploader="Late")).kind is Kind.ACCEPTED
    second = get(client, name, **{"If-None-Match": etag})
    assert not left_over.exists()
    assert second.status_code == 200 and second.headers["ETag"] != etag
    assert second.headers["Content-Length"] == str(len(second.get_data()))
    (path,) = snapshot_files(tmp_path / "exports" / "roborumble", name)
    assert path.name == f"{name}.{second.headers['ETag'].strip(chr(34))}"
    if name.startswith("battles.") or name == "rumble.sqlite":
        assert battle_count(first.get_data(), name, tmp_path) == 3
        assert battle_count(second.get_data(), name, tmp_path) == 4


def test_within_the_max_age_the_previous_snapshot_is_served_then_a_new_one_is_written(tmp_path):
    app = create_app(
        {
            "DB": str(tmp_path / "rumble.db"),
            "BATCH_INTERVAL_MINUTES": 0,
            "EXPORT_DIR": str(tmp_path / "snaps"),
            "EXPORT_MAX_AGE_MINUTES": 5,
        }
    )
    client = app.test_client()
    try:

        def post(first: str, second: str) -> str:
            body = format_upload(battle(first, second))
            return client.post(
                "/UploadedResults", data=body, content_type="application/x-www-form-urlencoded"
            ).get_data(as_text=True)

        assert post(A, B).splitlines()[-1] == f"OK. {A} vs {B} received for roborumble"
        first = get(client, "battles.csv")
        (path,) = snapshot_files(tmp_path / "snaps" / "roborumble", "battles.csv")
        assert post(A, C).splitlines()[-1] == f"OK. {A} vs {C} received for roborumble"
        stale = get(client, "battles.csv")
        assert (stale.headers["ETag"], stale.get_data()) == (first.headers["ETag"], first.get_data())
        six_minutes_ago = time.time() - 6 * 60
        os.utime(path, (six_minutes_ago, six_minutes_ago))
        fresh = get(client, "battles.csv")
        assert fresh.headers["ETag"] != first.headers["ETag"]
        assert battle_count(fresh.get_data(), "battles.csv", tmp_path) == 2
        assert [p.name for p in snapshot_files(path.parent, "battles.csv")] == [
            f"battles.csv.{fresh.headers['ETag'].strip(chr(34))}"
        ]
    finally:
        close_thread_db()


def test_the_previous_snapshot_is_served_while_another_worker_writes_the_next(
    app, client, rumble, upload, tmp_path, monkeypatch
):
    app.config["RUMBLE"]["EXPORT_WAIT_SECONDS"] = 0.3  # the other worker's build never ends here: wait briefly
    first = get(client, "battles.json")
    assert upload(battle(B, A, scores=(5000, 5000))).kind is Kind.ACCEPTED
    snapshots = exports.Snapshots.from_settings(app.config["RUMBLE"])
    with snapshots.build_lock("roborumble", "battles.json") as held:  # as another worker's build would
        assert held
        during = get(client, "battles.json")
    assert (during.status_code, during.headers["ETag"], during.get_data()) == (
        200,
        first.headers["ETag"],
        first.get_data(),
    )
    after = get(client, "battles.json")
    assert after.headers["ETag"] != first.headers["ETag"] and len(json.loads(after.get_data())["rows"]) == 4


def test_with_every_build_slot_taken_an_export_without_a_snapshot_is_a_503_with_retry_after(
    app, client, rumble, tmp_path, monkeypatch
):
    app.config["RUMBLE"]["EXPORT_WAIT_SECONDS"] = 0.3
    snapshots = exports.Snapshots.from_settings(app.config["RUMBLE"])
    with snapshots.build_lock("roborumble", "pairings.csv") as held:  # EXPORT_BUILDS is 1: the only slot
        assert held
        busy = get(client, "battles.csv")
    assert (busy.status_code, busy.headers["Retry-After"], busy.json) == (
        503,
        "10",
        {"error": "The battles.csv export of roborumble is not written yet; try again in a few seconds."},
    )
    assert get(client, "battles.csv").status_code == 200


def test_builds_are_one_per_export_and_at_most_export_builds_at_once(tmp_path):
    """Twelve requests at once for three exports without snapshots, two build slots: each export
    is written once, never more than two at the same time, and every request gets its export
    (after 503s, None here, while its export waits for a slot or is being written)."""
    snapshots = exports.Snapshots(str(tmp_path / "rumble.db"), tmp_path / "exports", builds=2, max_age_minutes=0)
    guard, running, peak, written = threading.Lock(), [0], [0], Counter()

    def writer(name: str):
        def write(out: Path) -> tuple:
            with guard:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                written[name] += 1
            time.sleep(0.2)
            out.write_text(name)
            with guard:
                running[0] -= 1
            return ("v1",)

        return write

    served: list[tuple[str, str | None]] = []
    start = threading.Barrier(12)

    def request(name: str) -> None:
        start.wait()
        for _ in range(100):  # a None is a 503: try again, as Retry-After asks
            snapshot = snapshots.obtain("roborumble", name, snapshots.etag(name, ("v1",)), writer(name), wait=0.1)
            if snapshot is not None:
                break
            time.sleep(0.05)
        with guard:
            served.append((name, snapshot.path.read_text() if snapshot else None))

    threads = [threading.Thread(target=request, args=(name,)) for name in ("a.csv", "b.csv", "c.json") * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert written == {"a.csv": 1, "b.csv": 1, "c.json": 1}
    assert peak[0] <= 2
    assert sorted(served) == sorted((name, name) for name in ("a.csv", "b.csv", "c.json") * 4)


def test_a_build_that_finishes_between_a_requests_look_and_its_lock_is_not_done_again(tmp_path, monkeypatch):
    """The request looks (no snapshot yet), another worker's build finishes and lets go of the lock,
    then the request takes the lock: it serves what was just written instead of writing it again."""
    snapshots = exports.Snapshots(str(tmp_path / "rumble.db"), tmp_path / "exports", builds=2, max_age_minutes=0)
    writes = Counter()

    def write(out: Path) -> tuple:
        writes["a.csv"] += 1
        out.write_text("a")
        return ("v1",)

    snapshots.folder("roborumble").mkdir(parents=True)
    written = snapshots.write("roborumble", "a.csv", write)  # the other worker's build, finished
    real_newest, looks = snapshots.newest, []

    def newest(game: str, name: str):
        looks.append(name)
        return None if len(looks) == 1 else real_newest(game, name)  # the request's first look came too early

    monkeypatch.setattr(snapshots, "newest", newest)
    served = snapshots.obtain("roborumble", "a.csv", snapshots.etag("a.csv", ("v1",)), write, wait=0.5)
    assert (served.path, writes) == (written.path, Counter({"a.csv": 1}))


def test_the_batch_job_rewrites_the_stale_snapshots_that_were_asked_for(app, client, rumble, upload, tmp_path):
    asked = {name: get(client, name) for name in ("battles.csv", "rumble.sqlite", "rankings.json")}
    assert upload(battle(B, A, scores=(5000, 5000))).kind is Kind.ACCEPTED
    db = store.connect(app.config["RUMBLE"]["DB"])
    try:
        assert hourly.refresh_exports(db, app.config["RUMBLE"]) == [
            "roborumble/battles.csv",
            "roborumble/rumble.sqlite",
        ]
        assert hourly.refresh_exports(db, app.config["RUMBLE"]) == []  # nothing changed since
    finally:
        db.close()
    folder = tmp_path / "exports" / "roborumble"
    assert snapshot_files(folder, "pairings.csv") == []  # never asked for: not written
    (rankings,) = snapshot_files(folder, "rankings.json")  # the rankings: left to the next request
    assert rankings.name.endswith(asked["rankings.json"].headers["ETag"].strip('"'))
    for name in ("battles.csv", "rumble.sqlite"):
        (path,) = snapshot_files(folder, name)
        inode = path.stat().st_ino
        served = get(client, name)
        assert served.headers["ETag"] != asked[name].headers["ETag"] and path.name.endswith(
            served.headers["ETag"].strip('"')
        )
        assert (
            path.stat().st_ino == inode and battle_count(served.get_data(), name, tmp_path) == 4
        )  # the job's file, as it was


UPLOADERS = ['=HYPERLINK("http://x")', "@SUM(1+1)", "-2+3", "+cmd", "Jane Doe"]
# The same uploaders as their CSV cells, written by hand: a leading ' and the CSV quoting of a cell with quotes.
UPLOADER_CELLS = ['"\'=HYPERLINK(""http://x"")"', "'@SUM(1+1)", "'-2+3", "'+cmd", "Jane Doe"]


def test_csv_cells_that_would_start_a_formula_get_a_leading_quote_and_json_and_sqlite_keep_them(
    app, client, upload, tmp_path
):
    now = now_ms()
    for i, uploader in enumerate(UPLOADERS):
        assert (
            upload(
                battle(A, B, scores=(6000 + i, 4000), firsts=(30, 5), time_ms=now - 1000 * i, uploader=uploader)
            ).kind
            is Kind.ACCEPTED
        )
    rows = json.loads(get(client, "battles.json").get_data())["rows"]
    assert [r["uploader"] for r in rows] == UPLOADERS  # JSON: as stored
    lines = get(client, "battles.csv").get_data(as_text=True).split("\n")
    assert (
        lines[0] == "id,received_at,client_time,first,first_score,first_bullet_damage,first_firsts,second,second_score,"
        "second_bullet_damage,second_firsts,rounds,uploader,client,state"
    )
    assert lines[1:] == [
        f"{r['id']},{r['received_at']},{now - 1000 * i},{A},{6000 + i},{(6000 + i) // 2},30,{B},4000,2000,5,35,{cell},1.9.3.9,ok"
        for i, (r, cell) in enumerate(zip(rows, UPLOADER_CELLS))
    ] + [""]
    path = tmp_path / "copy.sqlite"
    path.write_bytes(get(client, "rumble.sqlite").get_data())
    copy = sqlite3.connect(path)
    try:
        assert [
            u
            for (u,) in copy.execute(
                "SELECT u.name FROM battles b JOIN uploaders u ON u.id = b.uploader_id ORDER BY b.id"
            )
        ] == UPLOADERS  # SQLite: as stored
    finally:
        copy.close()


def test_a_csv_cell_is_escaped_only_if_it_is_a_string_that_starts_a_formula():
    assert [exports.csv_cell(v) for v in ("=1+1", "+1", "-1", "@x", "\tx", "\rx", "a=b", "", " =x")] == [
        "'=1+1",
        "'+1",
        "'-1",
        "'@x",
        "'\tx",
        "'\rx",
        "a=b",
        "",
        " =x",
    ]
    assert [exports.csv_cell(v) for v in (-0.5, -3, 0, None, True)] == [-0.5, -3, 0, None, True]  # numbers stay numbers
    text = "".join(exports.csv_lines(["aps", "name", "note"], [(-0.5, "-0.5", "\tTAB")]))
    assert text == "aps,name,note\n-0.5,'-0.5,'\tTAB\n"


def test_a_slow_build_runs_beside_the_request_which_gets_the_previous_snapshot_meanwhile(tmp_path):
    snapshots = exports.Snapshots(str(tmp_path / "rumble.db"), tmp_path / "exports", builds=1, max_age_minutes=0)
    release = threading.Event()

    def writer(version: str):
        def write(out: Path) -> tuple:
            if version == "v2":
                assert release.wait(10)  # the build goes on only once the request has its answer
            out.write_text(version)
            return (version,)

        return write

    first = snapshots.obtain("roborumble", "battles.csv", snapshots.etag("battles.csv", ("v1",)), writer("v1"))
    assert first.path.read_text() == "v1"
    meanwhile = snapshots.obtain(
        "roborumble", "battles.csv", snapshots.etag("battles.csv", ("v2",)), writer("v2"), wait=0.2
    )
    assert meanwhile == first  # the previous snapshot, while v2 is being written
    release.set()
    for _ in range(100):
        newest = snapshots.newest("roborumble", "battles.csv")
        if newest.etag == snapshots.etag("battles.csv", ("v2",)):
            break
        time.sleep(0.05)
    assert newest.path.read_text() == "v2" and not first.path.exists()


@pytest.mark.parametrize("name", ["rankings.csv", "rankings.json"])
def test_a_quiet_rumbles_rankings_export_grows_its_deviations_and_says_to_when(app, client, rumble, name):
    """Nothing uploaded between two reads a day and an hour apart (the app's clock): the second is a new
    snapshot whose deviations_as_of moved by that much, each Glicko RD grown by Glickman's rule from
    the first, RD' = min(√(RD² + c²·t), 350) with c = √((350² − 50²)/365) and t in days (seed 001,
    /ScoreExplanation), and each Glicko-2 RD grown too."""

    def read() -> tuple[str, dict[str, dict]]:
        answer = get(client, name)
        body = answer.get_data(as_text=True)
        rows = list(csv.DictReader(io.StringIO(body))) if name.endswith(".csv") else json.loads(body)["rows"]
        return answer.headers["ETag"], {row["name"]: row for row in rows}

    etag, before = read()
    app.config["RUMBLE"]["CLOCK"].advance(days=1, hours=1)
    later_etag, after = read()
    assert later_etag != etag and set(after) == set(before) == {A, B, C}
    c = math.sqrt((350**2 - 50**2) / 365)
    for bot in (A, B, C):
        then = datetime.fromisoformat(before[bot]["deviations_as_of"].replace("Z", "+00:00"))
        now = datetime.fromisoformat(after[bot]["deviations_as_of"].replace("Z", "+00:00"))
        days = (now - then).total_seconds() / 86400
        assert 1 + 1 / 24 <= days < 1 + 1 / 24 + 0.01
        rd = float(before[bot]["glicko_rd"])
        assert float(after[bot]["glicko_rd"]) == pytest.approx(min(math.sqrt(rd**2 + c**2 * days), 350), abs=1e-6)
        assert float(after[bot]["glicko2_rd"]) > float(before[bot]["glicko2_rd"])
