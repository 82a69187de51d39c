"""The real RoboRumble client (Robocode 1.9.3.9, headless, via ../shared/real-client/run.sh) against
a real gunicorn server (``rumble serve`` on 127.0.0.1).

Everything expected is taken from what the client itself printed: the codesizes of the bots it
downloaded, each battle's two bots (``Fighting battle i ... A,B``) and its result
(``RESULT = <first> wins <fscore> to <sscore>``), and the lines it printed while uploading. The
client prints no bullet damage and no firsts, and deletes its results file once every upload is
acknowledged, so those two figures are only checked for consistency, not against the client.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .e2e_support import LiveServer, PairResult, assert_standings, expected_standings, skip_unless_ci

pytestmark = pytest.mark.e2e

RUN_SH = Path(__file__).resolve().parents[2].parent / "shared" / "real-client" / "run.sh"
ROBORUMBLE_JAR = Path("/usr/share/java/roborumble.jar")
CLIENT_TIMEOUT_S = 300  # run.sh kills one client run after this
USER = "rumble-harness"  # run.sh's default USER
ROUNDS = 35  # roborumble's rounds (rumble/rumbles.toml, the stock roborumble.txt)
# The games one roborumble result goes to, with the codesize both bots must be under (protocol.md 7.2).
DIVISIONS = (("roborumble", None), ("minirumble", 1500), ("microrumble", 750), ("nanorumble", 250))


def require_real_client() -> None:
    """Skip when Robocode is not installed; under CI=true that is a failure instead."""
    missing = []
    if not ROBORUMBLE_JAR.exists():
        missing.append(f"{ROBORUMBLE_JAR}, Debian's robocode package (`bash scripts/test.sh` as root installs it)")
    if not RUN_SH.exists():
        missing.append(f"{RUN_SH}, the real-client harness kept beside this repository (../shared/real-client/)")
    if missing:
        skip_unless_ci("the real-client test needs " + " and ".join(missing))


@dataclass(frozen=True)
class Upload:
    """One upload the client makes: battle number ``battle`` of the run, sent to ``game``."""

    battle: int
    game: str
    result: PairResult


@dataclass
class ClientLog:
    """What one client run printed, parsed."""

    codesizes: dict[str, int] = field(default_factory=dict)
    results: list[PairResult] = field(default_factory=list)
    upload_lines: list[str] = field(default_factory=list)  # what it printed of the server's answers

    def uploads(self) -> list[Upload]:
        """Every upload the client makes, in its order: result after result, game after game (protocol.md 7.2)."""
        return [Upload(i, game, result) for i, result in enumerate(self.results) for game in self.games_of(result)]

    def games_of(self, result: PairResult) -> list[str]:
        size = max(self.codesizes[result.first], self.codesizes[result.second])
        return [game for game, limit in DIVISIONS if limit is None or size < limit]


def parse_client_log(text: str, codesizes: dict[str, int] | None = None) -> ClientLog:
    """Parse a client log; ``codesizes`` of bots downloaded by an earlier run of the same client."""
    log = ClientLog(codesizes=dict(codesizes or {}))
    fighting: list[str] | None = None
    uploading = False
    for line in text.splitlines():
        if found := re.fullmatch(r"Downloaded (.+) into \S+ \(Codesize: (\d+)\)", line):
            log.codesizes[found[1]] = int(found[2])
        elif found := re.fullmatch(r"Fighting battle \d+ \.\.\. (.+)", line):
            fighting = found[1].split(",")
        elif found := re.fullmatch(r"RESULT = (.+) wins (\d+) to (\d+)", line):
            assert fighting and len(fighting) == 2 and found[1] in fighting, (fighting, line)
            (loser,) = [name for name in fighting if name != found[1]]
            log.results.append(PairResult(found[1], loser, int(found[2]), int(found[3])))
            fighting = None
        elif line.startswith("Uploading results ..."):
            uploading = True
        elif line.startswith("Updating number of battles fought ..."):
            uploading = False
        elif uploading:
            log.upload_lines.append(line)
    return log


@dataclass
class ClientRun:
    """A finished run.sh: its exit status, output, summary fields and working directory."""

    status: int
    output: str
    summary: dict[str, str]
    workdir: Path

    def log(self, run: int | None = None) -> str:
        """The client's output: all runs, or run ``run`` (1-based)."""
        return (self.workdir / ("client.log" if run is None else f"client-{run}.log")).read_text(errors="replace")

    def client_file(self, config_key: str) -> Path:
        """A file the client's roborumble.txt names (e.g. BATTLESNUMFILE), under its working directory."""
        config = (self.workdir / "client" / "roborumble" / "roborumble.txt").read_text(encoding="latin-1")
        (value,) = re.findall(rf"^{config_key}=(.*)$", config, re.MULTILINE)
        return self.workdir / "client" / value.strip()


def run_client(server: LiveServer, tmp_path: Path, *args: str, runs: int = 1) -> ClientRun:
    """Run run.sh against ``server`` (roborumble) and wait for it, within run.sh's own time limits."""
    workdir = tmp_path / "client-work"
    command = [
        "bash",
        str(RUN_SH),
        "--server",
        server.url,
        "--game",
        "roborumble",
        "--timeout",
        str(CLIENT_TIMEOUT_S),
        "--runs",
        str(runs),
        "--workdir",
        str(workdir),
        *args,
    ]
    out_path = tmp_path / "run.sh.out"
    with open(out_path, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            process.wait(timeout=runs * (CLIENT_TIMEOUT_S + 60))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)  # run.sh's trap stops the client and its file server
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            pytest.fail(f"run.sh did not finish in time:\n{out_path.read_text(errors='replace')[-5000:]}")
    output = out_path.read_text(errors="replace")
    found = re.search(r"^\[run\.sh\] summary: (.*)$", output, re.MULTILINE)
    assert found, f"run.sh printed no summary (exit {process.returncode}):\n{output[-5000:]}"
    summary = dict(part.split("=", 1) for part in found[1].split())
    return ClientRun(process.returncode, output, summary, workdir)


ENGINE_SKIP = "Skipping battle because can't load robots"


def engine_skips(log: str) -> int:
    """Battles the client's own Robocode engine skipped because it could not load a robot's jar
    (seen in CI as ``java.io.IOException: Stream closed`` in its class loader), or fought to no
    result after a team member's jar fault (``FAULTED_BATTLE``): nothing reaches the server for
    them, so they say nothing about the server."""
    return log.count(ENGINE_SKIP) + len(FAULTED_BATTLE.findall(log))


# The same jar-reading fault of the client's engine, for a member of a team: the engine reports it
# and fights the battle without that robot (seen in CI in the teamrumble run), or ends the battle
# with no result (seen in CI as "ClassNotFoundException: Inflater has been closed", with no stack
# before it). Nothing of it reaches the server but a result, which the client uploads as any other.
ENGINE_MEMBER_FAULT = re.compile(
    r"^(?:java\.io\.IOException: Stream closed\n(?:\tat [^\n]*\n)*\n?)?"
    r"Got an error with [^\n:]+: java\.lang\.ClassNotFoundException: [^\n]*\n",
    re.MULTILINE,
)
# A battle whose block holds a member's jar fault and neither a result nor an engine skip (counted
# apart) before the next battle or the uploads.
_OTHER_LINE = r"(?:(?!Fighting battle|RESULT = |Uploading results|Skipping battle)[^\n]*\n)*?"
FAULTED_BATTLE = re.compile(
    rf"^Fighting battle \d+ \.\.\. [^\n]*\n{_OTHER_LINE}Got an error with [^\n:]+: "
    rf"java\.lang\.ClassNotFoundException: [^\n]*\n{_OTHER_LINE}(?=Fighting battle|Uploading results|\Z)",
    re.MULTILINE,
)


def without_engine_skips(log: str) -> str:
    """The client log without the blocks from ``Fighting battle`` to an engine skip or of a battle
    that faulted to no result, and without the engine's faults reading a team member's jar
    (``ENGINE_MEMBER_FAULT``)."""
    log = FAULTED_BATTLE.sub("", log)
    log = re.sub(
        rf"^Fighting battle \d+ \.\.\. [^\n]*\n(?:(?!Fighting battle)[^\n]*\n)*?{re.escape(ENGINE_SKIP)}[^\n]*\n",
        "",
        log,
        flags=re.MULTILINE,
    )
    return ENGINE_MEMBER_FAULT.sub("", log)


def assert_client_saw_no_error(run: ClientRun, battles: int) -> int:
    """The run ended cleanly with every battle fought and uploaded; returns the engine's skips,
    which may not be more than one, or a third of the battles (a broken set-up still fails)."""
    log = run.log()
    skipped = engine_skips(log)
    assert skipped <= max(1, battles // 3) and skipped < battles, log[-5000:]
    assert run.status == 0, run.output[-5000:]
    assert run.summary["client_exit"] == "0"
    assert run.summary["battles_run"] == str(battles - skipped), run.output[-5000:]
    assert (run.summary["upload_failures"], run.summary["results_kept_for_retry"]) == ("0", "0"), run.output[-5000:]
    assert "Unable to upload" not in log
    assert "Exception" not in without_engine_skips(log), log[-5000:]
    return skipped


def test_real_client_results_are_logged_and_ranked(live_server: LiveServer, tmp_path):
    """Six stock-rounds battles of the real client: every result it reports uploading is in the log
    with its scores, the client saw no error, and RatingsFile and Rankings?api=1 of each game it
    uploaded to show the APS and battle counts computed here from the client's own results."""
    require_real_client()
    run = run_client(live_server, tmp_path, "--battles", "6")
    skipped = assert_client_saw_no_error(run, battles=6)
    client = parse_client_log(run.log())
    assert len(client.results) == 6 - skipped
    uploads = client.uploads()

    # The client printed one acknowledgement per upload, none of them an error or a repeat.
    assert len(client.upload_lines) == len(uploads), client.upload_lines
    stored = uploads
    for line, upload in zip(client.upload_lines, uploads):
        assert line == f"OK. {upload.result.first} vs {upload.result.second} received for {upload.game}", (line, upload)

    # The log holds exactly those uploads, in the client's order, with the client's scores.
    rows = live_server.log_rows()
    logged = [
        (row["game"], PairResult(row["first"], row["second"], row["first_score"], row["second_score"])) for row in rows
    ]
    assert logged == [(upload.game, upload.result) for upload in stored]
    assert live_server.battle_count() == len(stored)
    assert_rows_are_consistent(rows, stored)

    for game, _ in DIVISIONS:
        assert_standings(live_server, game, expected_standings(u.result for u in stored if u.game == game))
    assert_client_counts_match(run, stored)
    assert_priority_battles_are_participants(run, client)


def assert_rows_are_consistent(rows: list[dict], stored: list[Upload]) -> None:
    """The figures the client does not print: sane, and the same in every game one result went to."""
    copies: dict[int, set[tuple]] = defaultdict(set)
    for row, upload in zip(rows, stored, strict=True):
        figures = (
            row["client_time"],
            row["first_bullet_damage"],
            row["second_bullet_damage"],
            row["first_firsts"],
            row["second_firsts"],
        )
        copies[upload.battle].add(figures)
        assert (
            row["uploader"],
            row["client"],
            row["rounds"],
            row["field"],
            row["teams"],
            row["melee"],
            row["state"],
        ) == (
            USER,
            "1.9.3.9",
            ROUNDS,
            "800x600",
            0,
            0,
            "ok",
        ), row
        assert (
            row["first_bullet_damage"] <= row["first_score"] and row["second_bullet_damage"] <= row["second_score"]
        ), row
        assert max(row["first_firsts"], row["second_firsts"]) <= ROUNDS, row
    assert all(len(figures) == 1 for figures in copies.values()), copies


def assert_client_counts_match(run: ClientRun, stored: list[Upload]) -> None:
    """The ``<n m>`` answers the client wrote down (BATTLESNUMFILE) end at each bot's battle count."""
    last: dict[tuple[str, str], int] = {}
    for line in run.client_file("BATTLESNUMFILE").read_text().splitlines():
        game, name, number = line.rsplit(",", 2)
        last[game, name] = int(float(number))
    expected: dict[tuple[str, str], int] = defaultdict(int)
    for upload in stored:
        expected[upload.game, upload.result.first] += 1
        expected[upload.game, upload.result.second] += 1
    assert last == dict(expected)


def assert_priority_battles_are_participants(run: ClientRun, client: ClientLog) -> None:
    """Priority battles the server asked for (``[a,b]`` answers) reached the client as known bots."""
    path = run.client_file("PRIORITYBATTLESFILE")
    for line in path.read_text().splitlines() if path.exists() else []:
        first, second, runonly = line.split(",")
        assert first in client.codesizes and second in client.codesizes and first != second and runonly == "SERVER", (
            line
        )


def test_real_client_drops_refused_results(live_server: LiveServer, tmp_path):
    """Battles of 3 rounds are refused with ``OK. ERROR: ...rounds must be 35``: the client takes the
    OK as final and drops them (nothing kept, nothing resent by the second run), and nothing is stored."""
    require_real_client()
    run = run_client(live_server, tmp_path, "--battles", "2", "--rounds", "3", runs=2)
    assert_client_saw_no_error(run, battles=4)
    codesizes = parse_client_log(run.log(1)).codesizes  # the second run downloads nothing
    for number in (1, 2):
        client = parse_client_log(run.log(number), codesizes)
        assert len(client.results) == 2 - engine_skips(run.log(number))
        # Each run uploads its own two results only: the first run's were not kept for the second.
        assert len(client.upload_lines) == len(client.uploads()), client.upload_lines
        for line, upload in zip(client.upload_lines, client.uploads()):
            assert line.startswith("OK. ERROR: ") and upload.game in line and f"rounds must be {ROUNDS}" in line, line
    assert live_server.battle_count() == 0
    for game, _ in DIVISIONS:
        assert live_server.ratings(game) == {} and live_server.rankings(game) == {}


CI_LOG_WITH_ENGINE_SKIP = """\
Fighting battle 0 ... sample.Corners 1.0,sample.Target 1.0
RESULT = sample.Corners 1.0 wins 5794 to 61
Fighting battle 1 ... sample.Crazy 1.0,sample.Target 1.0
java.io.IOException: Stream closed
\tat java.base/java.util.zip.InflaterInputStream.ensureOpen(InflaterInputStream.java:67)
\tat roborumble.RoboRumbleAtHome.main(RoboRumbleAtHome.java:127)

Got an error with sample.Crazy: java.lang.ClassNotFoundException: sample.Crazy
Could not load robot: sample.Crazy
Skipping battle because can't load robots: sample.Crazy 1.0,sample.Target 1.0
Fighting battle 2 ... sample.Fire 1.0,sample.Corners 1.0
RESULT = sample.Fire 1.0 wins 5792 to 2744
"""


def test_engine_skips_are_told_apart_from_errors():
    """A CI run's log (abridged) where Robocode could not load a jar: one skip, the exception is
    the skipped battle's, both results are parsed; an exception elsewhere still shows."""
    assert engine_skips(CI_LOG_WITH_ENGINE_SKIP) == 1
    assert "Exception" not in without_engine_skips(CI_LOG_WITH_ENGINE_SKIP)
    assert "RESULT = sample.Fire 1.0" in without_engine_skips(CI_LOG_WITH_ENGINE_SKIP)
    client = parse_client_log(CI_LOG_WITH_ENGINE_SKIP)
    assert client.results == [
        PairResult("sample.Corners 1.0", "sample.Target 1.0", 5794, 61),
        PairResult("sample.Fire 1.0", "sample.Corners 1.0", 5792, 2744),
    ]
    broken = CI_LOG_WITH_ENGINE_SKIP + "java.net.ConnectException: Connection refused\n"
    assert "Exception" in without_engine_skips(broken)


CI_TEAM_LOG_WITH_MEMBER_FAULT = """\
Fighting battle 1 ... sample.WallsSquad 1.0,sample.MixedSquad 1.0
java.io.IOException: Stream closed
\tat java.base/java.util.zip.InflaterInputStream.ensureOpen(InflaterInputStream.java:67)
\tat roborumble.RoboRumbleAtHome.main(RoboRumbleAtHome.java:127)

Got an error with sample.Crazy: java.lang.ClassNotFoundException: sample.Crazy
RESULT = sample.WallsSquad 1.0 wins 8956 to 7217
Uploading results ...
OK. sample.WallsSquad 1.0 vs sample.MixedSquad 1.0 received for teamrumble
"""


CI_TEAM_LOG_WITH_FAULTED_BATTLE = """\
Fighting battle 0 ... sampleteam.MyFirstTeam 1.0,sample.MixedSquad 1.0
RESULT = sampleteam.MyFirstTeam 1.0 wins 14272 to 9195
Fighting battle 1 ... sample.WallsSquad 1.0,sampleteam.MyFirstTeam 1.0
Got an error with sample.Walls: java.lang.ClassNotFoundException: Inflater has been closed
Uploading results ...
OK. sampleteam.MyFirstTeam 1.0 vs sample.MixedSquad 1.0 received for teamrumble
"""


def test_a_battle_the_engine_ended_without_a_result_after_a_member_fault_is_a_skip():
    """A CI teamrumble log (abridged): a member's jar fault and no result for that battle, so
    nothing of it reached the server: one engine skip, no error; the other battle's result parsed."""
    assert engine_skips(CI_TEAM_LOG_WITH_FAULTED_BATTLE) == 1
    assert "Exception" not in without_engine_skips(CI_TEAM_LOG_WITH_FAULTED_BATTLE)
    assert parse_client_log(CI_TEAM_LOG_WITH_FAULTED_BATTLE).results == [
        PairResult("sampleteam.MyFirstTeam 1.0", "sample.MixedSquad 1.0", 14272, 9195)
    ]
    assert engine_skips(CI_TEAM_LOG_WITH_MEMBER_FAULT) == 0  # fought without the member: a result, no skip


def test_an_engine_fault_reading_a_team_members_jar_is_told_apart_from_errors():
    """A CI teamrumble log (abridged): the engine could not read a member's jar and fought the
    battle without it. That is no skip and no error of the server's; any other exception still shows."""
    assert engine_skips(CI_TEAM_LOG_WITH_MEMBER_FAULT) == 0
    kept = without_engine_skips(CI_TEAM_LOG_WITH_MEMBER_FAULT)
    assert "Exception" not in kept
    assert "RESULT = sample.WallsSquad 1.0 wins 8956 to 7217\n" in kept
    other = CI_TEAM_LOG_WITH_MEMBER_FAULT.replace("Stream closed", "Connection reset")
    assert "Exception" in without_engine_skips(other)
