"""Trust earned by agreement (rumble/rankings/uploader_trust.py), on simulated uploads."""

from __future__ import annotations

import random

import pytest

from rumble.rankings.uploader_consistency import Share
from rumble.rankings.uploader_trust import chi_square_upper, network, party, standings

BOTS = [f"sim.Bot{i:02d} 1.0" for i in range(24)]


def _truth(rng: random.Random) -> dict[tuple[str, str], float]:
    strength = {bot: rng.gauss(0, 1) for bot in BOTS}
    return {(a, b): 100.0 / (1.0 + 10 ** (-(strength[a] - strength[b]) / 2.0)) for a in BOTS for b in BOTS if a < b}


def _uploads(rng, truth, who: str, pairs, per_pair: int, lean: dict[str, float] | None = None) -> list[Share]:
    """``per_pair`` battles on each of ``pairs`` as ``who`` reports them; ``lean`` adds points to a bot."""
    found = []
    for a, b in pairs:
        mean = truth[a, b] + (lean or {}).get(a, 0.0) - (lean or {}).get(b, 0.0)
        for _ in range(per_pair):
            found.append(Share(who, a, b, min(100.0, max(0.0, rng.gauss(mean, 7.0)))))
    return found


def test_the_networks_a_party_is_known_by():
    assert network("203.0.113.77") == "203.0.113.0/24"
    assert network("::ffff:203.0.113.77") == "203.0.113.0/24"  # an IPv4 client on a dual-stack socket
    assert network("2001:db8:1234:5678::1") == "2001:db8:1234::/48"
    assert network(None) == network("") == network("not an address") == "unknown"
    assert party("Jane", "198.51.100.9") == "Jane@198.51.100.0/24"
    assert party("Jane", "198.51.100.0/24") == "Jane@198.51.100.0/24"


def test_chi_square_tail_matches_the_tables():
    # χ² upper 5 % and 1 % points (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.4)
    assert chi_square_upper(18.307, 10) == pytest.approx(0.05, abs=0.002)
    assert chi_square_upper(37.566, 20) == pytest.approx(0.01, abs=0.001)
    assert chi_square_upper(124.342, 100) == pytest.approx(0.05, abs=0.001)


def test_without_a_vouched_party_nobody_is_established():
    rng = random.Random(1)
    truth = _truth(rng)
    pairs = list(truth)
    shares = _uploads(rng, truth, "A@10.0.0.0/24", pairs, 2) + _uploads(rng, truth, "B@10.0.1.0/24", pairs, 2)
    found = standings(shares, vouched=set())
    assert {p: s.established for p, s in found.items()} == {"A@10.0.0.0/24": False, "B@10.0.1.0/24": False}


def test_honest_parties_earn_trust_and_a_forger_does_not():
    rng = random.Random(7)
    truth = _truth(rng)
    pairs = list(truth)
    target = BOTS[5]
    shares = (
        _uploads(rng, truth, "Op@10.0.0.0/24", pairs, 2)
        + _uploads(rng, truth, "Honest@10.9.0.0/24", rng.sample(pairs, 120), 1)
        + _uploads(rng, truth, "Forger@10.66.0.0/24", [p for p in pairs if target in p], 1, {target: 30.0})
        + _uploads(rng, truth, "Late@10.8.0.0/24", rng.sample(pairs, 5), 1)  # too little to judge
    )
    found = standings(shares, vouched={"Op@10.0.0.0/24"})
    assert (found["Op@10.0.0.0/24"].established, found["Op@10.0.0.0/24"].how) == (True, "vouched")
    assert (found["Honest@10.9.0.0/24"].established, found["Honest@10.9.0.0/24"].how) == (True, "earned")
    assert (found["Forger@10.66.0.0/24"].established, found["Forger@10.66.0.0/24"].how) == (False, "disagrees")
    assert target in found["Forger@10.66.0.0/24"].why
    assert (found["Late@10.8.0.0/24"].established, found["Late@10.8.0.0/24"].how) == (False, "not yet")
    assert found["Late@10.8.0.0/24"].battles == 5


def test_many_strangers_who_agree_with_each_other_earn_nothing_without_the_established():
    """Eight forgers report the same lean on pairings no established party played: they agree with
    each other, but trust is only measured against the established."""
    rng = random.Random(3)
    truth = _truth(rng)
    pairs = list(truth)
    own, others = pairs[:40], pairs[40:]
    shares = _uploads(rng, truth, "Op@10.0.0.0/24", own, 2)
    for k in range(8):
        shares += _uploads(rng, truth, f"F{k}@10.{k}.0.0/24", others, 1, {BOTS[23]: 30.0})
    found = standings(shares, vouched={"Op@10.0.0.0/24"})
    assert [p for p, s in found.items() if s.established] == ["Op@10.0.0.0/24"]


def test_trust_spreads_along_agreement_and_a_revocation_wins():
    """C shares pairings only with B, and B with the vouched A: B earns trust first, then C."""
    rng = random.Random(5)
    truth = _truth(rng)
    pairs = list(truth)
    first, second = pairs[:130], pairs[130:260]
    shares = (
        _uploads(rng, truth, "A@10.0.0.0/24", first, 1)
        + _uploads(rng, truth, "B@10.1.0.0/24", first + second, 1)
        + _uploads(rng, truth, "C@10.2.0.0/24", second, 1)
    )
    found = standings(shares, vouched={"A@10.0.0.0/24"})
    assert [found[p].how for p in ("A@10.0.0.0/24", "B@10.1.0.0/24", "C@10.2.0.0/24")] == [
        "vouched",
        "earned",
        "earned",
    ]
    found = standings(shares, vouched={"A@10.0.0.0/24"}, revoked={"B@10.1.0.0/24"})
    assert [found[p].how for p in ("A@10.0.0.0/24", "B@10.1.0.0/24", "C@10.2.0.0/24")] == [
        "vouched",
        "revoked",
        "not yet",
    ]
