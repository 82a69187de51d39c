"""Likelihood of superiority (rumble.rankings.superiority) on hand-computed examples.

Φ is checked against a printed normal table; the LOS values against statistics.NormalDist, the
standard library's own normal distribution (an implementation independent of math.erf's use here).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from rumble.rankings import superiority
from rumble.rankings.superiority import Standing

PHI = NormalDist().cdf


@pytest.mark.parametrize(("x", "table"), [(0.0, 0.5), (1.0, 0.8413), (1.645, 0.9500), (1.96, 0.9750), (-1.0, 0.1587)])
def test_normal_cdf_matches_the_printed_table(x, table):
    assert superiority.normal_cdf(x) == pytest.approx(table, abs=5e-5)


def test_variance_from_the_aps_interval_and_a_pairings_squared_error():
    assert superiority.aps_variance(1.96) == pytest.approx(1.0)
    assert superiority.aps_variance(3.92) == pytest.approx(4.0)
    assert superiority.aps_variance(None) is None
    # 3 battles of population variance 24/3 = 8: SE² = 8 / (3 − 1) = 4
    assert superiority.squared_error(3, 24.0) == 4.0
    assert superiority.squared_error(1, 0.0) is None


def three_bots() -> list[Standing]:
    # A: APS 60, CI 1.96 -> Var 1; B: APS 58, CI 1.96·√2 -> Var 2; C: APS 55, Var 1; two live pairings each
    return [
        Standing("A", 60.0, superiority.aps_variance(1.96), 2),
        Standing("B", 58.0, superiority.aps_variance(1.96 * math.sqrt(2)), 2),
        Standing("C", 55.0, superiority.aps_variance(1.96), 2),
    ]


def test_los_to_next_for_three_bots_by_hand():
    a, b, c = three_bots()
    # A-B: 3 battles, M2 24 -> SE² 4; shared term 2·4/(2·2) = 2; LOS = Φ((60 − 58)/√(1 + 2 + 2)) = Φ(2/√5)
    ab = superiority.shared_variance(a, b, superiority.squared_error(3, 24.0), met=True)
    assert ab == pytest.approx(2.0)
    # B-C: 1 battle, so the mean per-pairing SE² of the two: (2·2 + 1·2)/2 = 3; term 2·3/(2·2) = 1.5;
    # LOS = Φ((58 − 55)/√(2 + 1 + 1.5)) = Φ(3/√4.5) = Φ(√2)
    bc = superiority.shared_variance(b, c, None, met=True)
    assert bc == pytest.approx(1.5)
    los = superiority.los_to_next([a, b, c], [ab, bc])
    assert los[0] == pytest.approx(PHI(2 / math.sqrt(5)), abs=1e-12)  # 0.8145
    assert los[1] == pytest.approx(PHI(math.sqrt(2)), abs=1e-12)  # 0.9214
    assert los[2] is None
    assert round(los[0], 4) == 0.8145 and round(los[1], 4) == 0.9214


def test_bots_that_never_met_share_nothing_and_the_matrix_is_complementary():
    a, b, c = three_bots()
    assert superiority.shared_variance(a, c, None, met=False) == 0.0
    # A over C without a shared pairing: Φ((60 − 55)/√(1 + 1)) = Φ(5/√2)
    matrix = superiority.los_matrix([a, b, c], {(0, 1): 2.0, (1, 2): 1.5})
    assert matrix[0][2] == pytest.approx(PHI(5 / math.sqrt(2)), abs=1e-12)
    assert matrix[2][0] == pytest.approx(1 - PHI(5 / math.sqrt(2)), abs=1e-12)
    assert matrix[0][1] == pytest.approx(PHI(2 / math.sqrt(5)), abs=1e-12)
    assert [matrix[i][i] for i in range(3)] == [None, None, None]


def test_an_unknown_variance_gives_no_los_and_zero_variance_gives_certainty():
    a, b, _ = three_bots()
    unknown = Standing("U", 50.0, None, 1)
    assert superiority.los(a, unknown) is None and superiority.los(unknown, a) is None
    sure_a, sure_b = Standing("X", 51.0, 0.0, 3), Standing("Y", 50.0, 0.0, 3)
    assert superiority.los(sure_a, sure_b) == 1.0 and superiority.los(sure_b, sure_a) == 0.0
    assert superiority.los(sure_a, sure_a) == 0.5
    assert superiority.los_to_next([], []) == []


def test_single_battle_pairings_count_a_whole_battles_variance():
    # CI 1.96 -> Var 1 over n = 4 pairings, k = 2 of them with 2+ battles, 8 battles in all: mean SE² over
    # the k, m = Var·n = 4; battles in the k pairings 8 − (4 − 2) = 6, so σ² ≈ m·6/k = 12; the two
    # single-battle pairings count σ² each: Var = (2·4 + 2·12)/4² = 32/16 = 2
    assert superiority.aps_variance(1.96, pairings=4, ci_count=2, battles=8) == pytest.approx(2.0)
    # every pairing with 2+ battles (k = n), or no counts given: the CI's variance as it is
    assert superiority.aps_variance(1.96, pairings=4, ci_count=4, battles=8) == pytest.approx(1.0)
    assert superiority.aps_variance(1.96) == pytest.approx(1.0)
