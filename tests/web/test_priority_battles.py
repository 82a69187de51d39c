"""Priority battles as the client receives them: missing pairings first, a queue shared by workers."""

from __future__ import annotations

import re

from conftest import battle

from rumble.app import create_app
from rumble.protocol.names import to_key
from rumble.protocol.replies import Kind, UploadOutcome
from rumble.protocol.upload import format_upload

PRIORITY = re.compile(r"^\[([^,\]]+),([^,\]]+)\]$", re.M)


def _pair(answer: str) -> frozenset | None:
    """The priority battle an answer's ``[a,b]`` line asks for, as the client reads it."""
    found = PRIORITY.search(answer)
    return frozenset(found.groups()) if found else None


def _asked(outcome: UploadOutcome) -> frozenset | None:
    """The priority battle handed out with an upload, by the bots' ratings-file keys."""
    assert outcome.kind in (Kind.ACCEPTED, Kind.DUPLICATE, Kind.REFUSED), outcome
    return frozenset(map(to_key, outcome.priority)) if outcome.priority else None


def test_missing_pairings_are_asked_for_first(upload, clock):
    now = clock.now_ms()
    upload(battle("a.A 1", "b.B 1", time_ms=now))
    # C and D arrive: each of the four bots now lacks two pairings.
    asked = [_asked(upload(battle("c.C 1", "d.D 1", time_ms=now + 1)))]
    for n in range(3):
        asked.append(_asked(upload(battle("a.A 1", "b.B 1", time_ms=now + 10 + n))))
    missing = {frozenset(p) for p in [("a.A_1", "c.C_1"), ("a.A_1", "d.D_1"), ("b.B_1", "c.C_1"), ("b.B_1", "d.D_1")]}
    assert set(asked) == missing  # each missing pairing once, before anything else


def test_the_queue_is_shared_by_every_worker(tmp_path, clock):
    """Two app instances on one database stand for two gunicorn workers (or a restart)."""
    config = {"DB": str(tmp_path / "shared.db"), "PRIORITY_BATCH": 4}
    first, second = create_app(config).test_client(), create_app(config).test_client()
    now = clock.now_ms()

    def post(client, result) -> str:
        return client.post("/UploadedResults", data=format_upload(result)).get_data(as_text=True)

    post(first, battle("a.A 1", "b.B 1", time_ms=now))
    post(first, battle("c.C 1", "d.D 1", time_ms=now + 1))
    pairs = [
        _pair(post(client, battle("a.A 1", "b.B 1", time_ms=now + 10 + n)))
        for n, client in enumerate([first, second, first, second])
    ]
    assert len(set(pairs)) == 4 and None not in pairs  # no pairing handed out twice


def test_no_priority_for_a_refused_or_repeated_upload(upload):
    result = battle()
    assert upload(result).kind is Kind.ACCEPTED
    repeat = upload(result)
    assert (repeat.kind, _asked(repeat)) == (Kind.DUPLICATE, None)
    refused = upload(battle(rounds=3, firsts=(1, 1)))
    assert (refused.kind, _asked(refused)) == (Kind.REFUSED, None)
