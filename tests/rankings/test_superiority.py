"""Likelihood of superiority (rumble.rankings.superiority) on hand-computed examples.

Φ is checked against a printed normal table; the LOS values against statistics.NormalDist, the
standard library's own normal distribution (an implementation independent of math.erf's use here).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from rumble.rankings import superiority
from rumble.rankings.scores import Pairing, add_battle, summary, totals_of
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
    """Three bots from their summaries (APS, half-width, live pairings n, pairings of 2+ battles k, battles):
    A: APS 60, CI 1.96·√1.5, n = k = 2, 5 battles: Var 1.5; σ² = m·5/2 with m = Var·n = 3, so 7.5.
    B: APS 58, CI 1.96·√2, n = 2, k = 1, 4 battles: m = 2·2 = 4, σ² = 4·(4 − 1)/1 = 12,
       Var = (1·4 + 1·12)/2² = 4.
    C: APS 55, CI 1.96, n = 2, k = 1, 3 battles: m = 1·2 = 2, σ² = 2·(3 − 1)/1 = 4, Var = (1·2 + 1·4)/2² = 1.5."""
    return [
        superiority.standing("A", 60.0, 1.96 * math.sqrt(1.5), 2, 2, 5),
        superiority.standing("B", 58.0, 1.96 * math.sqrt(2), 2, 1, 4),
        superiority.standing("C", 55.0, 1.96, 2, 1, 3),
    ]


def test_standings_carry_the_aps_variance_and_the_battle_variance():
    a, b, c = three_bots()
    assert (a.variance, a.battle_variance) == (pytest.approx(1.5), pytest.approx(7.5))
    assert (b.variance, b.battle_variance) == (pytest.approx(4.0), pytest.approx(12.0))
    assert (c.variance, c.battle_variance) == (pytest.approx(1.5), pytest.approx(4.0))
    assert (a.pairings, b.pairings, c.pairings) == (2, 2, 2)
    unknown = superiority.standing("U", 50.0, None, 1, 0, 1)
    assert unknown.variance is None and unknown.battle_variance is None


def test_los_to_next_for_three_bots_by_hand():
    a, b, c = three_bots()
    # A-B: 3 battles, M2 24 -> SE² 4; shared term 2·4/(2·2) = 2; LOS = Φ((60 − 58)/√(1.5 + 4 + 2)) = Φ(2/√7.5)
    ab = superiority.shared_variance(a, b, superiority.squared_error(3, 24.0), met=True)
    assert ab == pytest.approx(2.0)
    # B-C: 1 battle, so a whole battle's variance, the two bots' σ² pooled: (12 + 4)/2 = 8, over 1 battle;
    # term 2·8/(2·2) = 4; LOS = Φ((58 − 55)/√(4 + 1.5 + 4)) = Φ(3/√9.5)
    bc = superiority.shared_variance(b, c, None, met=True)
    assert bc == pytest.approx(4.0)
    los = superiority.los_to_next([a, b, c], [ab, bc])
    assert los[0] == pytest.approx(PHI(2 / math.sqrt(7.5)), abs=1e-12)  # Φ(0.7303) = 0.7674
    assert los[1] == pytest.approx(PHI(3 / math.sqrt(9.5)), abs=1e-12)  # Φ(0.9733) = 0.8348
    assert los[2] is None
    assert los[0] is not None and los[1] is not None
    assert round(los[0], 4) == 0.7674 and round(los[1], 4) == 0.8348  # a printed table, interpolated


def test_a_shared_pairing_of_one_battle_takes_the_pooled_battle_variance():
    """The fix of issue 33 item 6: the SE² of a shared single-battle pairing is σ²/1, σ² the battle
    variance pooled from the two bots, not their mean per-pairing SE² (which a single battle's
    uncertainty is several times larger than) and not zero."""
    _, b, c = three_bots()
    # σ²_B = 12, σ²_C = 4 (three_bots): pooled 8, term 2·8/(2·2) = 4.
    term = superiority.shared_variance(b, c, None, met=True)
    assert term == pytest.approx(4.0)
    # The old rule, the mean per-pairing SE² (Var·n): (4·2 + 1.5·2)/2 = 5.5, term 2.75; nor is it 0.
    assert term != pytest.approx(2.75) and term > 0.0
    # A pairing of one battle against bots whose pairings have many battles: the mean SE² is small,
    # a single battle's variance is not. P: CI 1.96·√0.5 over n = 10 pairings, k = 9 of them with 2+
    # battles, 9·10 + 1 = 91 battles: m = 0.5·10 = 5, σ² = 5·(91 − 1)/9 = 50, Var = (9·5 + 1·50)/100 = 0.95.
    # Q the same. Term 2·50/(10·10) = 1 (the old rule: mean SE² 0.95·10 = 9.5, term 0.19).
    p = superiority.standing("P", 52.0, 1.96 * math.sqrt(0.5), 10, 9, 91)
    q = superiority.standing("Q", 50.0, 1.96 * math.sqrt(0.5), 10, 9, 91)
    assert p.variance == pytest.approx(0.95) and p.battle_variance == pytest.approx(50.0)
    assert superiority.shared_variance(p, q, None, met=True) == pytest.approx(1.0)
    # LOS(P > Q) = Φ(2/√(0.95 + 0.95 + 1)) = Φ(2/√2.9)
    assert superiority.los(p, q, 1.0) == pytest.approx(PHI(2 / math.sqrt(2.9)), abs=1e-12)
    # Only one bot's σ² known: that one; neither: an error, not a silent guess
    half = Standing("H", 50.0, 0.95, 10)
    assert superiority.shared_variance(p, half, None, met=True) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="battle variance"):
        superiority.shared_variance(half, half, None, met=True)


def test_bots_that_never_met_share_nothing_and_the_matrix_is_complementary():
    a, b, c = three_bots()
    assert superiority.shared_variance(a, c, None, met=False) == 0.0
    # A over C without a shared pairing: Φ((60 − 55)/√(1.5 + 1.5)) = Φ(5/√3)
    matrix = superiority.los_matrix([a, b, c], {(0, 1): 2.0, (1, 2): 4.0})
    assert matrix[0][2] == pytest.approx(PHI(5 / math.sqrt(3)), abs=1e-12)
    assert matrix[2][0] == pytest.approx(1 - PHI(5 / math.sqrt(3)), abs=1e-12)
    assert matrix[0][1] == pytest.approx(PHI(2 / math.sqrt(7.5)), abs=1e-12)
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
    # the battle variance behind it: σ² = m·6/k = 12; with k unknown, all n taken to have 2+: 4·8/4 = 8
    assert superiority.battle_variance(1.96, 4, 2, 8) == pytest.approx(12.0)
    assert superiority.battle_variance(1.96, 4, None, 8) == pytest.approx(8.0)
    assert superiority.battle_variance(None, 4, 2, 8) is None


def test_battle_variance_and_aps_variance_from_real_pairings():
    """Pairings through rankings.scores (Welford, LiteRumble's CI): four opponents with battles 40, 50,
    60 (mean 50, sample variance s² = (100 + 0 + 100)/2 = 100, SE² = 100/3) and one with a single
    battle. n = 5, k = 4, 13 battles: the CI's variance (4·100/3)/(5·4) = 20/3, m = 100/3, and
    σ² = m·(13 − 1)/4 = 100, the battles' own s² (equal battle counts: no Jensen gap). The true
    Var(APS) = Σ SE²_p/n² with the single battle's SE² = σ²/1: (4·100/3 + 100)/25 = 28/3."""
    three = Pairing()
    for x in (40.0, 50.0, 60.0):
        three = add_battle(three, x, 0.0, "")
    one = add_battle(Pairing(), 70.0, 0.0, "")
    totals = totals_of([three] * 4 + [one])
    row = summary(totals)
    assert (row.pairings, totals.ci_count, row.battles) == (5, 4, 13)
    assert superiority.battle_variance(row.aps_ci, 5, 4, 13) == pytest.approx(100.0)
    assert superiority.aps_variance(row.aps_ci, 5, 4, 13) == pytest.approx(28 / 3)
