"""The real RoboRumble client (Robocode 1.9.3.9, headless, via ../shared/real-client/run.sh),
unchanged, whose PARTICIPANTSURL is rumble's own ``/Participants?game=G`` on a real ``rumble serve``:
the bots are entered over HTTP by a competitor account, the client downloads every jar from rumble
(run.sh starts no file server when given a participants URL), fights, and its uploads are
accepted; then a withdrawn bot is retired and the client's next run no longer fights it.

The jars are Robocode's sample robots, packaged as run.sh packages them (class files, source and
a ``.properties`` with ``robot.classname`` and ``robot.version``; a team jar's ``.team`` with
``team.members`` and ``team.version``), built here because rumble must serve them itself.
Without Robocode the client tests skip (CI fails instead), and the HTTP side is still checked
against the real server with jars built from scratch.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import signal
import subprocess
import zipfile
from pathlib import Path

import pytest
import requests
from conftest import battle
from jar_support import make_jar

from rumble.protocol.upload import format_upload

from .e2e_support import LiveServer, post_like_java
from .e2e_support import live_server as start_live_server
from .test_real_client import CLIENT_TIMEOUT_S, RUN_SH, engine_skips, require_real_client

pytestmark = pytest.mark.e2e

SAMPLES = Path("/usr/share/games/robocode/robots")  # where run.sh takes the sample robots from
SOLO = [
    ("sample.Corners", "1.0"),
    ("sample.Crazy", "1.0"),
    ("sample.Fire", "1.0"),
    ("sample.MyFirstJuniorRobot", "1.0"),
    ("sample.MyFirstRobot", "1.0"),
    ("sample.RamFire", "1.0"),
    ("sample.SittingDuck", "1.0"),
    ("sample.SpinBot", "1.2.3"),
    ("sample.Target", "1.0"),
    ("sample.TrackFire", "1.0"),
    ("sample.Tracker", "1.0"),
    ("sample.VelociRobot", "1.0"),
    ("sample.Walls", "0.9b"),
]
TEAMS5 = [
    ("sampleteam.MyFirstTeam", "1.0", ["sampleteam.MyFirstLeader"] + ["sampleteam.MyFirstDroid"] * 4),
    ("sample.WallsSquad", "1.0", ["sample.Walls"] * 5),
    (
        "sample.MixedSquad",
        "1.0",
        ["sample.SpinBot", "sample.Crazy", "sample.Fire", "sample.TrackFire", "sample.RamFire"],
    ),
]
TEAMS2 = [
    ("sampleteam.LeaderAndDroid", "1.0", ["sampleteam.MyFirstLeader", "sampleteam.MyFirstDroid"]),
    ("sample.WallsTwins", "1.0", ["sample.Walls", "sample.Walls"]),
    ("sample.SpinAndTrack", "1.0", ["sample.SpinBot", "sample.TrackFire"]),
]
HELPERS = {"sampleteam": ["Point", "RobotColors"]}  # classes the sample team's robots use
ENTRANTS = {
    "roborumble": [(n, v, None) for n, v in SOLO],
    "meleerumble": [(n, v, None) for n, v in SOLO],
    "teamrumble": TEAMS5,
    "twinduel": TEAMS2,
}
BATTLES = {"roborumble": 2, "meleerumble": 1, "teamrumble": 1, "twinduel": 1}
SERVER_SETTINGS = {"ENTRY_REQUESTS_PER_HOUR": "1000", "ENTRIES_PER_DAY": "1000"}


def _robot_properties(name: str, version: str) -> str:
    package, cls = name.rsplit(".", 1)
    stock = SAMPLES / package / f"{cls}.properties"
    lines = []
    if stock.exists():
        lines = [
            line
            for line in stock.read_text(encoding="latin-1").splitlines()
            if not line.startswith(("robot.version=", "robot.classname="))
        ]
    return "\n".join([*lines, f"robot.classname={name}", f"robot.version={version}"]) + "\n"


def _add_robot(archive: zipfile.ZipFile, name: str, version: str) -> None:
    package, cls = name.rsplit(".", 1)
    folder = SAMPLES / package
    if f"{package}/{cls}.properties" in archive.namelist():
        return
    for path in (
        sorted(folder.glob(f"{cls}.class")) + sorted(folder.glob(f"{cls}$*.class")) + sorted(folder.glob(f"{cls}.java"))
    ):
        archive.write(path, f"{package}/{path.name}")
    archive.writestr(f"{package}/{cls}.properties", _robot_properties(name, version))
    for helper in HELPERS.get(package, []):
        if f"{package}/{helper}.class" not in archive.namelist():
            archive.write(folder / f"{helper}.class", f"{package}/{helper}.class")


def sample_jar(name: str, version: str, members: list[str] | None) -> bytes:
    """The jar of a sample robot, or of a team of sample robots."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\nrobots: {name}\n\n")
        for member in members or [name]:
            _add_robot(archive, member, version)
        if members is not None:
            package, cls = name.rsplit(".", 1)
            archive.writestr(
                f"{package}/{cls}.team",
                f"team.members={','.join(members)}\nteam.version={version}\nteam.author.name=Robocode samples\n"
                "robocode.version=1.9.3.9\n",
            )
    return buffer.getvalue()


def sign_up(server: LiveServer, name: str) -> str:
    response = requests.post(f"{server.url}/Participants/account", data={"name": name}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["token"]


def enter(server: LiveServer, token: str, game: str, name: str, jar: bytes) -> requests.Response:
    return requests.post(
        f"{server.url}/Participants/enter",
        params={"game": game, "name": name},
        data=jar,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/java-archive"},
        timeout=30,
    )


def run_client(server: LiveServer, workdir: Path, game: str, battles: int) -> tuple[int, str, str]:
    """run.sh against ``server`` with rumble's own participants list: (exit status, its output, the client's log)."""
    command = [
        "bash",
        str(RUN_SH),
        "--server",
        server.url,
        "--game",
        game,
        "--battles",
        str(battles),
        "--participants-url",
        f"{server.url}/Participants?game={game}",
        "--timeout",
        str(CLIENT_TIMEOUT_S),
        "--workdir",
        str(workdir),
    ]
    out_path = workdir.parent / f"{workdir.name}.out"
    with open(out_path, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            process.wait(timeout=CLIENT_TIMEOUT_S + 60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)
            pytest.fail(f"run.sh did not finish in time:\n{out_path.read_text(errors='replace')[-5000:]}")
    return (
        process.returncode,
        out_path.read_text(errors="replace"),
        (workdir / "client.log").read_text(errors="replace"),
    )


def summary_of(output: str) -> dict[str, str]:
    found = re.search(r"^\[run\.sh\] summary: (.*)$", output, re.MULTILINE)
    assert found, output[-5000:]
    return dict(part.split("=", 1) for part in found[1].split())


def participants_file(workdir: Path, game: str) -> list[str]:
    """The participants the client saved from the list it downloaded (its PARTICIPANTSFILE)."""
    config = (workdir / "client" / "roborumble" / f"{game}.txt").read_text(encoding="latin-1")
    (path,) = re.findall(r"^PARTICIPANTSFILE=(.*)$", config, re.MULTILINE)
    return (workdir / "client" / path.strip()).read_text().splitlines()


def fought(log: str) -> set[str]:
    return {
        bot for line in re.findall(r"^Fighting battle \d+ \.\.\. (.+)$", log, re.MULTILINE) for bot in line.split(",")
    }


@pytest.fixture
def league(tmp_path):
    """``rumble serve`` with a competitor who entered every sample bot of the four stock games over HTTP."""
    with start_live_server(tmp_path, settings=SERVER_SETTINGS) as server:
        token = sign_up(server, "Sample Author")
        built: dict[str, bytes] = {}  # a jar built twice differs (its entries' times): one jar per name and version
        for game, bots in ENTRANTS.items():
            for name, version, members in bots:
                jar = built.setdefault(f"{name} {version}", sample_jar(name, version, members))
                response = enter(server, token, game, f"{name} {version}", jar)
                assert (response.status_code, response.json()["state"]) == (200, "listed"), response.text
        yield server, token


# A robot's jar (.properties) and a team's (.team); melee and twinduel read their lists as these do
# (tests/web/test_participants.py), and each real-client run costs CI half a minute.
@pytest.mark.parametrize("game", ["roborumble", "teamrumble"])
def test_the_real_client_takes_its_participants_and_jars_from_rumble(league, tmp_path, game):
    """Every jar the client uses came from rumble's list and rumble's /jars URLs; its uploads are accepted."""
    require_real_client()
    server, _ = league
    workdir = tmp_path / f"client-{game}"
    status, output, log = run_client(server, workdir, game, BATTLES[game])
    summary = summary_of(output)
    expected = [f"{n} {v}" for n, v, _ in ENTRANTS[game]]
    saved = participants_file(workdir, game)
    assert saved == [f"{name},{server.url}/jars/{name.replace(' ', '/')}.jar" for name in sorted(expected)]
    downloaded = dict(re.findall(r"^Downloaded (.+) into \S+ \(Codesize: (\d+)\)$", log, re.MULTILINE))
    assert sorted(downloaded) == sorted(expected), log[-5000:]
    assert not (workdir / "fileserver.jsonl").exists()  # run.sh served no jar: each came from rumble
    skipped = engine_skips(log)
    assert (status, summary["client_exit"]) == (0, "0"), output[-5000:]
    assert (summary["upload_failures"], summary["results_kept_for_retry"]) == ("0", "0"), output[-5000:]
    assert int(summary["battles_run"]) == BATTLES[game] - skipped
    assert "Participant ignored" not in log and "Downloaded file is wrong or corrupted" not in log
    if int(summary["battles_run"]):
        ranked = set(server.rankings(game))
        assert ranked and ranked <= set(expected) and fought(log) >= ranked


def test_a_withdrawn_bot_is_retired_and_the_next_run_does_not_fight_it(league, tmp_path):
    require_real_client()
    server, token = league
    withdrawn = "sample.Walls 0.9b"
    fought_once = battle(withdrawn, "sample.Corners 1.0")  # ranked before it is withdrawn
    status, _, text = post_like_java(f"{server.url}/UploadedResults", format_upload(fought_once))
    assert (status, text.splitlines()[-1]) == (200, f"OK. {withdrawn} vs sample.Corners 1.0 received for roborumble")
    assert withdrawn in server.rankings("roborumble")
    response = requests.post(
        f"{server.url}/Participants/withdraw",
        data={"game": "roborumble", "name": withdrawn},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert (response.status_code, response.json()["state"]) == (200, "withdrawn")
    assert withdrawn not in server.rankings("roborumble")
    assert "sample.Walls_0.9b" not in server.ratings("roborumble")
    status, output, log = run_client(server, tmp_path / "second", "roborumble", 6)
    assert (status, summary_of(output)["client_exit"], summary_of(output)["upload_failures"]) == (0, "0", "0"), output[
        -5000:
    ]
    assert [line.split(",")[0] for line in participants_file(tmp_path / "second", "roborumble")] == sorted(
        f"{n} {v}" for n, v in SOLO if f"{n} {v}" != withdrawn
    )
    assert withdrawn not in fought(log)
    assert f"Downloaded {withdrawn} " not in log


def test_the_list_and_the_jars_over_a_real_server(tmp_path):
    """Without Robocode too: the list and a jar as a real ``rumble serve`` answers them, byte for byte."""
    with start_live_server(tmp_path) as server:
        token = sign_up(server, "Jane")
        jar = make_jar("jd.Walls 1.0")
        assert enter(server, token, "roborumble", "jd.Walls 1.0", jar).status_code == 200
        listing = requests.get(
            f"{server.url}/Participants",
            params={"game": "nanorumble"},
            headers={"Accept-Encoding": "gzip, deflate"},
            timeout=10,
        )
        assert listing.status_code == 200
        lines = listing.text.splitlines()
        start, end = lines.index("<pre>"), lines.index("</pre>")
        assert lines[start + 1 : end] == [f"jd.Walls 1.0,{server.url}/jars/jd.Walls/1.0.jar"]
        response = requests.get(
            f"{server.url}/jars/jd.Walls/1.0.jar", headers={"Accept-Encoding": "gzip, deflate"}, timeout=10, stream=True
        )
        raw = response.raw.read()
        assert (response.status_code, raw) == (200, jar)
        assert response.headers["Content-Type"] == "application/java-archive"
        assert response.headers["Content-Length"] == str(len(jar))
        assert "Content-Encoding" not in response.headers and "Transfer-Encoding" not in response.headers
        etag = f'"{hashlib.sha256(jar).hexdigest()}"'
        assert response.headers["ETag"] == etag
        again = requests.get(f"{server.url}/jars/jd.Walls/1.0.jar", headers={"If-None-Match": etag}, timeout=10)
        assert (again.status_code, again.content) == (304, b"")
        bomb = make_jar("jd.Crazy 1.0", files={"jd/zeros.bin": bytes(64 * 1024 * 1024)})
        refused = enter(server, token, "roborumble", "jd.Crazy 1.0", bomb)
        assert (refused.status_code, refused.json()) == (
            400,
            {
                "error": "the jar is refused: the jar expands past 33554432 bytes (at jd/zeros.bin); "
                "at most 33554432 are taken"
            },
        )
