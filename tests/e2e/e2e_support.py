"""What the end-to-end tests share: a real ``rumble serve`` process, reads of its answers and of
its battle log, and the standings a rumble should show, computed independently of rumble's code.

The log is read with a plain read-only ``sqlite3`` connection, never through ``rumble.store``, so
that nothing here can hide a mistake of the server.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from .nginx_support import free_address

START_TIMEOUT_S = 60
# Longer than gunicorn's graceful_timeout (30 s, as rumble serve sets it): a stop that gunicorn itself
# bounds never reaches the test's SIGKILL, which is left for a server that hangs.
STOP_TIMEOUT_S = 45
# The headers Java's HttpURLConnection sends with the client's upload, in its order (protocol.md 2).
JAVA_POST_HEADERS = (
    ("User-Agent", "Java/17.0.21.1"),
    ("Accept", "text/html, image/gif, image/jpeg, */*; q=0.2"),
    ("Connection", "keep-alive"),
    ("Content-type", "application/x-www-form-urlencoded"),
)


@dataclass
class LiveServer:
    """A running ``python -m rumble serve`` (gunicorn) on a loopback address and its database file."""

    url: str
    db_path: Path
    process: subprocess.Popen
    output_path: Path

    def output(self) -> str:
        """Everything the server printed so far (stdout and stderr)."""
        return self.output_path.read_text(errors="replace")

    def get(self, path: str, **params) -> requests.Response:
        response = requests.get(self.url + path, params=params, timeout=10)
        response.close()
        return response

    def ratings(self, game: str) -> dict[str, tuple[float, int, str]]:
        """``RatingsFile`` of ``game``: key (``pkg.Bot_version``) -> (APS, battles, last battle)."""
        response = self.get("/RatingsFile", version="1", game=game)
        assert response.status_code == 200, response.text
        rows = {}
        for line in response.text.splitlines():
            key, _, value = line.partition("=")
            aps, battles, last = value.split(",")
            rows[key] = (float(aps), int(battles), last)
        return rows

    def rankings(self, game: str) -> dict[str, dict]:
        """``Rankings?api=1`` of ``game``: bot name -> its row."""
        response = self.get("/Rankings", game=game, api="1")
        assert response.status_code == 200, response.text
        return {row["name"]: row for row in response.json()}

    def log_rows(self) -> list[dict]:
        """The whole battle log with game and bot names, in log order."""
        with read_only(self.db_path) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute(
                "SELECT b.id, r.name AS game, f.full_name AS first, s.full_name AS second, b.first_score, "
                "b.second_score, b.first_bullet_damage, b.second_bullet_damage, b.first_firsts, b.second_firsts, "
                "b.client_time, n.name AS uploader, u.client, b.rounds, u.field, b.teams, b.melee, b.state "
                "FROM battles b JOIN rumbles r ON r.id = b.rumble_id JOIN battle_setups u ON u.id = b.setup_id "
                "JOIN uploaders n ON n.id = b.uploader_id "
                "JOIN bots f ON f.id = b.first_bot_id "
                "JOIN bots s ON s.id = b.second_bot_id ORDER BY b.id"
            ).fetchall()
        return [dict(row) for row in rows]

    def battle_count(self) -> int:
        with read_only(self.db_path) as db:
            return db.execute("SELECT count(*) FROM battles").fetchone()[0]


def skip_unless_ci(reason: str) -> None:
    """Skip the test for a missing tool, except under CI=true, where every test must run: fail there."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason + "; CI=true, so it must not be skipped")
    pytest.skip(reason)


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the server's database, closed afterwards."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        yield db
    finally:
        db.close()


def _server_env() -> dict[str, str]:
    """The test's environment without RUMBLE_* settings, so that only --db and the defaults apply;
    but pages are built anew after every change (PAGE_CACHE_SECONDS 0), as the tests read them
    right after the uploads they check (test_page_cache_live.py serves them as a server does)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RUMBLE_")}
    env["PYTHONUNBUFFERED"] = "1"
    env["RUMBLE_PAGE_CACHE_SECONDS"] = "0"
    return env


@contextlib.contextmanager
def live_server(
    directory: Path, workers: int = 2, settings: dict[str, str] | None = None, stop_signal: int = signal.SIGINT
) -> Iterator[LiveServer]:
    """Start ``rumble serve`` on a new database in ``directory`` (``settings``: RUMBLE_* values by
    name, else only the defaults apply); stop it after with ``stop_signal`` (then SIGKILL if it hangs).

    SIGINT (Ctrl-C) is gunicorn's quick shutdown: the workers stop at once. SIGTERM (systemd's) is
    its graceful one, which waits for every open connection, an idle keep-alive one included (up to
    READ_TIMEOUT_SECONDS): a test's client that keeps one would cost it ten seconds."""
    db_path = directory / "rumble.db"
    output_path = directory / "server.out"
    host, port = free_address()
    command = [
        sys.executable,
        "-m",
        "rumble",
        "serve",
        "--db",
        str(db_path),
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    with open(output_path, "wb") as output:
        process = subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**_server_env(), **{f"RUMBLE_{name}": value for name, value in (settings or {}).items()}},
            start_new_session=True,
        )
        server = LiveServer(f"http://{host}:{port}", db_path, process, output_path)
        try:
            _wait_until_up(server)
            yield server
        except BaseException:
            _stop(process, stop_signal)
            raise
        # A server that needs the SIGKILL fails its test: a slow stop would otherwise go unseen (and
        # cost every test STOP_TIMEOUT_S).
        if not _stop(process, stop_signal):
            raise AssertionError(
                f"rumble serve did not end within {STOP_TIMEOUT_S} s of {signal.Signals(stop_signal).name}, "
                f"so it was killed:\n{server.output()}"
            )


def _wait_until_up(server: LiveServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"rumble serve exited with {server.process.returncode}:\n{server.output()}")
        try:
            if server.get("/").status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"rumble serve did not answer GET / within {START_TIMEOUT_S} s:\n{server.output()}")


def _stop(process: subprocess.Popen, stop_signal: int) -> bool:
    """``stop_signal`` to the gunicorn master (it stops its workers); SIGKILL to its process group if
    it hangs. False if it had to be killed so."""
    if process.poll() is None:
        process.send_signal(stop_signal)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return False
    return True


def post_like_java(url: str, body: bytes) -> tuple[int, str, str]:
    """POST ``body`` to ``url`` byte for byte, with the client's headers; return (status, type, text)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.putrequest("POST", parts.path, skip_accept_encoding=True)
        for name, value in JAVA_POST_HEADERS:
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read().decode("ascii")
    finally:
        conn.close()


@dataclass(frozen=True)
class PairResult:
    """One pair result as the client knows it: ``first`` outranked ``second``."""

    first: str
    second: str
    first_score: int
    second_score: int


def battle_percent(score: int, other: int) -> float:
    return 50.0 if score + other == 0 else 100.0 * score / (score + other)


@dataclass(frozen=True)
class Standing:
    aps: float
    battles: int
    pairings: int


def expected_standings(results: Iterable[PairResult]) -> dict[str, Standing]:
    """Each bot's APS (mean over opponents of its mean battle %), battles and pairings."""
    percents: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        percents[result.first][result.second].append(battle_percent(result.first_score, result.second_score))
        percents[result.second][result.first].append(battle_percent(result.second_score, result.first_score))
    standings = {}
    for bot, by_opponent in percents.items():
        means = [sum(values) / len(values) for values in by_opponent.values()]
        battles = sum(len(values) for values in by_opponent.values())
        standings[bot] = Standing(sum(means) / len(means), battles, len(means))
    return standings


def to_key(name: str) -> str:
    """The ratings-file key of a bot name (the space becomes ``_``)."""
    return name.replace(" ", "_")


def assert_standings(server: LiveServer, game: str, expected: dict[str, Standing]) -> None:
    """``RatingsFile`` and ``Rankings?api=1`` of ``game`` list exactly the expected bots and figures."""
    ratings = server.ratings(game)
    assert sorted(ratings) == sorted(to_key(name) for name in expected), game
    rankings = server.rankings(game)
    assert sorted(rankings) == sorted(expected), game
    for name, standing in expected.items():
        aps, battles, last = ratings[to_key(name)]
        assert aps == pytest.approx(standing.aps, abs=1e-9), (game, name)
        assert battles == standing.battles, (game, name)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", last), (game, name, last)
        row = rankings[name]
        assert row["aps"] == pytest.approx(standing.aps, abs=1e-9), (game, name)
        assert (row["battles"], row["pairings"]) == (standing.battles, standing.pairings), (game, name)
