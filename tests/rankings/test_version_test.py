"""The version test (rumble.rankings.version_test): Wald's bounds, the log-likelihood ratios and the
expected information on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from rumble.rankings import version_test


def test_wald_bounds_for_five_percent_errors():
    # Wald (1945): A = ln((1 − β)/α), B = ln(β/(1 − α)); with α = β = 0.05, ±ln 19 = ±2.9444
    upper, lower = version_test.bounds(0.05, 0.05)
    assert upper == pytest.approx(math.log(19)) and lower == pytest.approx(-math.log(19))
    assert round(upper, 4) == 2.9444
    # α = 0.01, β = 0.1: ln(0.9/0.01) = ln 90 = 4.4998, ln(0.1/0.99) = −2.2925
    upper, lower = version_test.bounds(0.01, 0.1)
    assert (round(upper, 4), round(lower, 4)) == (4.4998, -2.2925)


def test_a_clear_improvement_is_called_better_by_hand():
    # ten opponents, differences 2, 4, 2, 4, ...: mean 3, each 1 from the mean, s² = 10/9, I = n/s² = 9;
    # LLR better = δ·I·(d̄ − δ/2) = 1·9·(3 − 0.5) = 22.5; LLR worse = 9·(−3 − 0.5) = −31.5
    outcome = version_test.version_test([2.0, 4.0] * 5, battles=20)
    assert outcome.mean == 3.0 and outcome.variance == pytest.approx(10 / 9)
    assert outcome.information == pytest.approx(9.0)
    assert outcome.llr_better == pytest.approx(22.5) and outcome.llr_worse == pytest.approx(-31.5)
    assert outcome.verdict == "better" and outcome.more_battles is None


def test_the_mirror_calls_worse_and_small_differences_no_difference():
    assert version_test.version_test([-2.0, -4.0] * 5, battles=20).verdict == "worse"
    # differences 0.5 and −0.5 over 40 opponents: d̄ = 0, s² = 40·0.25/39 = 10/39, I = 40·39/10 = 156;
    # LLR better = LLR worse = 156·(0 − 0.5) = −78 <= B: neither 1 point better nor worse
    outcome = version_test.version_test([0.5, -0.5] * 20, battles=80)
    assert outcome.information == pytest.approx(156.0)
    assert outcome.llr_better == pytest.approx(-78.0) and outcome.verdict == "no difference"


def test_fewer_than_ten_opponents_is_not_yet():
    outcome = version_test.version_test([5.0] * 9, battles=18)
    assert outcome.verdict == "not yet" and outcome.llr_better is None and outcome.more_battles is None


def test_expected_information_with_no_drift_and_with_drift():
    # no drift: a Brownian motion with variance δ² = 1 leaves (−2, 3) from 0 after about a·|b|/δ² = 3·2 = 6
    assert version_test.expected_information(0.0, 3.0, -2.0, 0.0, 1.0) == pytest.approx(6.0)
    # drift m = 0.5, δ = 1: θ = −2m/δ² = −1; a = 3, b = −2; P_A = (1 − e^{2})/(e^{−3} − e^{2})
    # = (1 − 7.3891)/(0.04979 − 7.3891) = 0.87053; E = (0.87053·3 + 0.12947·(−2))/0.5 = 4.7053
    p_upper = (1 - math.exp(2)) / (math.exp(-3) - math.exp(2))
    assert round(p_upper, 5) == 0.87053
    assert version_test.expected_information(0.0, 3.0, -2.0, 0.5, 1.0) == pytest.approx(4.7053, abs=1e-4)
    assert version_test.expected_information(3.5, 3.0, -2.0, 0.5, 1.0) == 0.0


def test_not_yet_says_about_how_many_more_battles():
    # d = ±3 around 0.5 over 10 opponents: d̄ = 0.5, s² = 90/9 = 10, I = 1; LLR better = 1·(0.5 − 0.5) = 0,
    # LLR worse = 1·(−0.5 − 0.5) = −1. Better's drift δ(d̄ − δ/2) = 0 -> not heading up; worse's drift −1 -> not
    # either; so the later of the two: better from 0 with no drift: ln19·ln19 = 8.670 units of I; worse from −1
    # with drift −1 (θ = 2): a = 3.944, b = −1.944, P_A = (1 − e^{−3.889})/(e^{7.889} − e^{−3.889}).
    outcome = version_test.version_test([3.5, -2.5] * 5, battles=40)
    assert outcome.mean == 0.5 and outcome.variance == pytest.approx(10.0) and outcome.verdict == "not yet"
    a, b = math.log(19) + 1, -math.log(19) + 1
    p = (1 - math.exp(2 * b)) / (math.exp(2 * a) - math.exp(2 * b))
    worse = (p * a + (1 - p) * b) / -1.0
    need = max(math.log(19) ** 2, worse)  # 8.670 against 1.95
    assert need == pytest.approx(math.log(19) ** 2)
    # 40 battles gave I = 1: 40 battles per unit of information, so about ceil(8.670·40) = 347 more
    assert outcome.more_battles == math.ceil(math.log(19) ** 2 * 40) == 347


@pytest.mark.parametrize("drift", [0.0, 3e-10, 1e-9, 1e-7, 1e-5])
def test_expected_information_near_no_drift_is_the_brownian_exit_time_not_a_cancellation(drift):
    """From 0 between ±2.944 with δ = 1 (variance 1 per unit of information) and (almost) no drift,
    Wald's expected information is −ab/σ² = 2.944² = 8.667136; the exact formula's cancellation
    once gave −308.4 at a drift of 3e-10."""
    found = version_test.expected_information(0.0, 2.944, -2.944, drift, 1.0)
    assert found == pytest.approx(2.944**2, rel=1e-6)
