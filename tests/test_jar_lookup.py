"""A jar URL's host name lookup is bounded like the rest of the fetch (rumble.ingest.jar_fetch): a
name server that never answers costs the fetch its timeout, not the resolver's, and holds at most
LOOKUPS_AT_ONCE threads. The resolver is replaced by one that waits until the test releases it."""

from __future__ import annotations

import socket
import threading

import pytest

from rumble.ingest import jar_fetch
from rumble.ingest.jar_check import JarRefused


@pytest.fixture
def silent_resolver(monkeypatch):
    """``socket.getaddrinfo`` answering nothing until the test's end, then 127.0.0.1; the lookups'
    threads are joined before the next test."""
    release = threading.Event()
    asked: list[str] = []

    def lookup(host, port, *args, **kwargs):
        asked.append(host)
        release.wait()
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    yield asked
    release.set()
    for thread in threading.enumerate():
        if thread.name == "rumble-jar-lookup":
            thread.join()


def test_a_lookup_that_never_answers_is_refused_at_the_fetchs_timeout(silent_resolver):
    with pytest.raises(JarRefused) as refused:
        jar_fetch.fetch_jar("http://silent.example/bot.jar", 100_000, 0.3)
    assert str(refused.value) == "fetching the jar took longer than 0.3 s (looking up 'silent.example')"
    assert silent_resolver == ["silent.example"]


def test_at_most_so_many_lookups_wait_on_the_resolver_at_once(silent_resolver):
    for k in range(jar_fetch.LOOKUPS_AT_ONCE):  # each gives up at its timeout; its lookup waits on
        with pytest.raises(JarRefused, match="took longer than"):
            jar_fetch.fetch_jar(f"http://silent{k}.example/bot.jar", 100_000, 0.05)
    with pytest.raises(JarRefused) as refused:
        jar_fetch.fetch_jar("http://one-more.example/bot.jar", 100_000, 0.05)
    assert str(refused.value) == (
        f"{jar_fetch.LOOKUPS_AT_ONCE} jar URLs' hosts are being looked up already; try again in a minute"
    )
    assert "one-more.example" not in silent_resolver  # refused before any thread was started


def test_a_lookup_that_answers_in_time_goes_on_to_the_address_check(monkeypatch):
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", port))],
    )
    with pytest.raises(JarRefused) as refused:
        jar_fetch.fetch_jar("http://private.example/bot.jar", 100_000, 5.0)
    assert str(refused.value) == "the jar URL's host 'private.example' is not on the public internet"


def test_a_lookup_that_fails_says_the_host_could_not_be_resolved(monkeypatch):
    def fails(host, port, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fails)
    with pytest.raises(JarRefused) as refused:
        jar_fetch.fetch_jar("http://nowhere.example/bot.jar", 100_000, 5.0)
    assert str(refused.value) == "the jar URL's host 'nowhere.example' could not be resolved"
