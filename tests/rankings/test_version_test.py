"""The version test (rumble.rankings.version_test): its bounds (Ville's limit, the χ² allowance for the
estimated variance), the log-likelihood ratios and the expected information on hand-computed
examples, and its error rates when read after every new opponent (a seeded Monte Carlo run)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rumble.rankings import version_test

# The bound at 10 opponents by hand: ν = 9, counted as k = 9/2 degrees of freedom; (1 + 2a/k)^(−k/2) = 1/20
# gives a = (k/2)·(20^(2/k) − 1) = (9/4)·(20^(4/9) − 1); 20^(4/9) = e^((4/9)·2.995732) = e^1.331437 = 3.786479,
# so a = 2.25·2.786479 = 6.269578.
A_10 = 6.269578


def test_the_limit_bounds_are_villes():
    # Ville (1939): a nonnegative martingale of mean 1 ever reaches 1/α with chance at most α, so A = ln(1/α);
    # α = β = 0.05: ±ln 20 = ±2.9957; α = 0.01, β = 0.1: ln 100 = 4.6052 and ln 0.1 = −2.3026
    upper, lower = version_test.limit_bounds(0.05, 0.05)
    assert upper == pytest.approx(math.log(20)) and lower == pytest.approx(-math.log(20))
    assert round(upper, 4) == 2.9957
    upper, lower = version_test.limit_bounds(0.01, 0.1)
    assert (round(upper, 4), round(lower, 4)) == (4.6052, -2.3026)


def chi_square_average(a: float, k: float) -> float:
    """E e^(−a·W) with k·W ~ χ²_k, by quadrature of the χ² density (not by its moment generating function)."""
    x = np.linspace(0.0, 40.0 * k + 200.0, 400_001)[1:]
    log_density = (k / 2 - 1) * np.log(x) - x / 2 - (k / 2) * math.log(2) - math.lgamma(k / 2)
    f = np.exp(log_density - a * x / k)
    return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(x)))


@pytest.mark.parametrize(("opponents", "freedom"), [(10, 4.5), (20, 9.5), (101, 50.0)])
def test_the_bounds_make_the_average_chance_over_the_variance_estimate_alpha(opponents, freedom):
    """A_n is the a with E e^(−a·W) = α when k·W ~ χ²_k, k = (n − 1)/2: checked by integrating the χ²
    density numerically, so the χ² moment generating function the module relies on is checked too."""
    upper, lower = version_test.bounds(opponents)
    assert chi_square_average(upper, freedom) == pytest.approx(0.05, rel=1e-5)
    assert lower == pytest.approx(-upper)


def test_the_bounds_at_ten_opponents_by_hand_and_towards_the_limit():
    upper, lower = version_test.bounds(10)
    assert upper == pytest.approx(A_10, abs=1e-6) and lower == pytest.approx(-A_10, abs=1e-6)
    # α = 0.01 with 10 opponents: (9/4)·(100^(4/9) − 1) = 2.25·(e^(4.605170·4/9) − 1) = 2.25·(7.742637 − 1)
    # = 15.170933; β = 0.1: −(9/4)·(10^(4/9) − 1) = −2.25·(2.782559 − 1) = −4.010758
    assert version_test.bounds(10, 0.01, 0.1) == (pytest.approx(15.170933), pytest.approx(-4.010758))
    # a = (k/2)(e^(2L/k) − 1) = L + L²/k + ...: with k = 5·10⁶, ln 20 + (ln 20)²/k = 2.9957341
    assert version_test.bounds(10_000_001)[0] == pytest.approx(math.log(20) + math.log(20) ** 2 / 5e6, abs=1e-9)
    found = [version_test.bounds(n)[0] for n in (10, 20, 50, 100, 500, 5000)]
    assert found == sorted(found, reverse=True) and found[-1] > math.log(20)


def test_a_clear_improvement_is_called_better_by_hand():
    # ten opponents, differences 2, 4, 2, 4, ...: mean 3, each 1 from the mean, s² = 10/9, I = n/s² = 9;
    # LLR better = δ·I·(d̄ − δ/2) = 1·9·(3 − 0.5) = 22.5 ≥ A_10 = 6.27; LLR worse = 9·(−3 − 0.5) = −31.5
    outcome = version_test.version_test([2.0, 4.0] * 5, battles=20)
    assert outcome.mean == 3.0 and outcome.variance == pytest.approx(10 / 9)
    assert outcome.information == pytest.approx(9.0)
    assert outcome.llr_better == pytest.approx(22.5) and outcome.llr_worse == pytest.approx(-31.5)
    assert outcome.upper == pytest.approx(A_10) and outcome.lower == pytest.approx(-A_10)
    assert outcome.verdict == "better" and outcome.more_battles is None


def test_the_mirror_calls_worse_and_small_differences_no_difference():
    assert version_test.version_test([-2.0, -4.0] * 5, battles=20).verdict == "worse"
    # differences 0.5 and −0.5 over 40 opponents: d̄ = 0, s² = 40·0.25/39 = 10/39, I = 40·39/10 = 156;
    # LLR better = LLR worse = 156·(0 − 0.5) = −78; B_40 = −(39/4)·(20^(4/39) − 1) = −9.75·0.359687 = −3.5069,
    # and −78 <= −3.5069: neither 1 point better nor worse
    outcome = version_test.version_test([0.5, -0.5] * 20, battles=80)
    assert outcome.information == pytest.approx(156.0) and outcome.lower == pytest.approx(-3.5069, abs=1e-4)
    assert outcome.llr_better == pytest.approx(-78.0) and outcome.verdict == "no difference"


def test_a_llr_past_the_limit_bound_but_short_of_a_10_is_not_yet():
    # d = 1.5 ± 1 over 10 opponents: d̄ = 1.5, s² = 10/9, I = 9, LLR better = 9·(1.5 − 0.5) = 9 ≥ A_10
    assert version_test.version_test([0.5, 2.5] * 5, battles=20).verdict == "better"
    # d = 1 ± 1: d̄ = 1, I = 9, LLR better = 9·0.5 = 4.5: past ln 19 and ln 20, short of A_10 = 6.27
    outcome = version_test.version_test([0.0, 2.0] * 5, battles=20)
    assert outcome.llr_better == pytest.approx(4.5) and outcome.verdict == "not yet"


def test_fewer_than_ten_opponents_is_not_yet():
    outcome = version_test.version_test([5.0] * 9, battles=18)
    assert outcome.verdict == "not yet" and outcome.llr_better is None and outcome.more_battles is None
    assert outcome.upper == pytest.approx(A_10)  # the bounds of the first look


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
    # LLR worse = 1·(−0.5 − 0.5) = −1; bounds ±A_10. Better's drift δ(d̄ − δ/2) = 0 -> not heading up; worse's
    # drift −1 -> not either; so the later of the two: better from 0 with no drift: A_10² = 39.3076 units of I;
    # worse from −1 with drift −1 (θ = 2): a = A_10 + 1, b = −A_10 + 1, P_A = (1 − e^{2b})/(e^{2a} − e^{2b}).
    outcome = version_test.version_test([3.5, -2.5] * 5, battles=40)
    assert outcome.mean == 0.5 and outcome.variance == pytest.approx(10.0) and outcome.verdict == "not yet"
    a, b = A_10 + 1, -A_10 + 1
    p = (1 - math.exp(2 * b)) / (math.exp(2 * a) - math.exp(2 * b))
    worse = (p * a + (1 - p) * b) / -1.0
    assert worse == pytest.approx(5.2696, abs=1e-3)  # P_A is about 5e-7: E ≈ −b
    # 40 battles gave I = 1: 40 battles per unit of information, so about ceil(39.3076·40) = ceil(1572.30) = 1573
    assert outcome.more_battles == math.ceil(A_10**2 * 40) == 1573


@pytest.mark.parametrize("drift", [0.0, 3e-10, 1e-9, 1e-7, 1e-5])
def test_expected_information_near_no_drift_is_the_brownian_exit_time_not_a_cancellation(drift):
    """From 0 between ±2.944 with δ = 1 (variance 1 per unit of information) and (almost) no drift,
    Wald's expected information is −ab/σ² = 2.944² = 8.667136; the exact formula's cancellation
    once gave −308.4 at a drift of 3e-10."""
    found = version_test.expected_information(0.0, 2.944, -2.944, drift, 1.0)
    assert found == pytest.approx(2.944**2, rel=1e-6)


def read_after_every_opponent(rng: np.random.Generator, difference: float, spread: float, runs: int, opponents: int):
    """The verdict codes (0 not yet, 1 better, 2 worse, 3 no difference) of runs in which each new common
    opponent brings one normal difference (mean ``difference``, sd ``spread``) and the test is read after
    each, from the first, stopping at the first verdict; the first 100 verdicts are checked against
    version_test.version_test itself."""
    delta = version_test.DELTA
    d = rng.normal(difference, spread, (runs, opponents))
    total, squares = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
    code, at = np.zeros(runs, dtype=int), np.zeros(runs, dtype=int)
    active = np.arange(runs)
    for n in range(version_test.MIN_OPPONENTS, opponents + 1):
        s, q = total[active, n - 1], squares[active, n - 1]
        mean = s / n
        information = n / np.maximum((q - s * mean) / (n - 1), version_test.VARIANCE_FLOOR)
        plus, minus = version_test.llr(mean, information, delta), version_test.llr(-mean, information, delta)
        upper, lower = version_test.bounds(n)
        found = np.select([plus >= upper, minus >= upper, (plus <= lower) & (minus <= lower)], [1, 2, 3], 0)
        hit = found != 0
        code[active[hit]], at[active[hit]] = found[hit], n
        active = active[~hit]
    names = ("not yet", "better", "worse", "no difference")
    for run in np.nonzero(code)[0][:100]:
        assert version_test.version_test([float(x) for x in d[run, : at[run]]], 0).verdict == names[code[run]]
    return code


@pytest.mark.parametrize(("spread", "opponents"), [(2.0, 200), (3.0, 300), (5.0, 500)])
def test_read_after_every_opponent_false_better_stays_within_alpha_and_a_1_point_gain_is_found(spread, opponents):
    """The property of issue 33: a competitor who reloads the page after every new opponent. 3,000 seeded runs
    a case: a binomial share's standard error at p = 0.05 is √(0.05·0.95/3000) = 0.40 %, so the false-better
    share must stay below 5 % + 3·0.40 % = 6.2 % (the test before issue 33, Wald's ±ln 19, gives about
    6 to 7 % here); and with a true gain of 1 point, "better" in at least 90 % of the runs (β = 5 %)."""
    rng = np.random.default_rng(33)
    runs = 3000
    limit = 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)
    assert round(limit, 4) == 0.0619
    null = read_after_every_opponent(rng, 0.0, spread, runs, opponents)
    assert np.mean(null == 1) <= limit and np.mean(null == 2) <= limit
    gain = read_after_every_opponent(rng, 1.0, spread, runs, opponents)
    assert np.mean(gain == 1) >= 0.9 and np.mean(gain == 2) <= 0.01
