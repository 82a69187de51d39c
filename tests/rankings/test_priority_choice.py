"""The priority order: few battles first, then the largest variance reduction, near-ties boosted."""

from __future__ import annotations

import random

import numpy as np

from rumble.ingest.priority import FEW_BATTLES, choose_pairs, pairing_priorities, pairing_priority
from rumble.rankings.scores import Pairing


def test_fewer_battles_come_first_below_the_minimum():
    one, two = Pairing(1, 60.0, 0.0, 50.0, ""), Pairing(2, 60.0, 50.0, 50.0, "")
    assert pairing_priority(one, 3) > pairing_priority(two, 3) >= FEW_BATTLES - 3


def test_variance_reduction_of_the_mean():
    """n = 4, M2 = 400 → Var = 100; one more battle shrinks Var/n by Var/(n(n+1)) = 100/20 = 5.
    Its CI, 1.96·sqrt(100/3) = 11.3, does not reach 50 from APS 70, so no boost."""
    p = Pairing(4, 70.0, 400.0, 50.0, "")
    assert pairing_priority(p, 3) == 5.0


def test_an_interval_straddling_50_is_boosted_tenfold():
    """Same spread at APS 55: the interval 55 ± 11.3 contains 50, so 5 × 10 = 50."""
    assert pairing_priority(Pairing(4, 55.0, 400.0, 50.0, ""), 3) == 50.0


def test_choose_pairs_takes_few_battles_by_count_then_draws_from_the_top_band():
    candidates = [(1, 2, FEW_BATTLES - 2), (3, 4, FEW_BATTLES - 1), (5, 6, 50.0), (7, 8, 30.0), (9, 10, 10.0)]
    chosen = choose_pairs(candidates, 4, random.Random(1))
    assert chosen[:2] == [(3, 4, "few battles"), (1, 2, "few battles")]
    assert {pair[:2] for pair in chosen[2:]} == {(5, 6), (7, 8)}  # 10 is below half of the best (50)
    assert all(reason == "uncertain" for *_, reason in chosen[2:])


def test_pairing_priorities_equal_pairing_priority_one_by_one():
    """priority.pairing_priorities (a rebuild's, in numpy) against pairing_priority, value for value:
    few battles, intervals straddling 50 and not."""
    rng = np.random.default_rng(9)
    battles = rng.integers(1, 12, 2000)
    aps = rng.uniform(30.0, 70.0, 2000)
    aps_m2 = rng.uniform(0.0, 3000.0, 2000) * (battles - 1)
    expected = [pairing_priority(Pairing(int(n), float(a), float(m)), 3) for n, a, m in zip(battles, aps, aps_m2)]
    found = pairing_priorities(battles, aps, aps_m2, 3).tolist()
    assert found == expected
    assert {p >= FEW_BATTLES - 12 for p in expected} == {True, False}  # both tiers
