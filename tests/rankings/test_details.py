"""The pure figures of the bot pages: Student's t quantile, the paired interval, the verdict, sorting."""

from __future__ import annotations

import math
import statistics

import pytest

from rumble.rankings.page_figures import Interval, paired_interval, sort_rows, t_cdf, t_quantile, verdict

# t(0.975, df) from a printed table (to 3 decimals, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2)
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 100: 1.984}


@pytest.mark.parametrize("df, t", sorted(T_TABLE.items()))
def test_t_quantile_matches_the_printed_table(df, t):
    assert t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)
    assert t_cdf(t_quantile(0.975, df), df) == pytest.approx(0.975, abs=1e-12)


def test_t_cdf_is_symmetric_and_one_half_at_zero():
    assert t_cdf(0.0, 7) == pytest.approx(0.5)
    assert t_cdf(-1.5, 7) == pytest.approx(1 - t_cdf(1.5, 7))
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi


def test_paired_interval_is_mean_plus_minus_t_times_standard_error():
    d = [1.0, 3.0, 2.0, 6.0]
    got = paired_interval(d)
    half = 3.182446305284263 * statistics.stdev(d) / math.sqrt(4)
    assert (got.n, got.mean) == (4, 3.0)
    assert (got.low, got.high) == (pytest.approx(3.0 - half), pytest.approx(3.0 + half))


def test_paired_interval_needs_two_values():
    assert paired_interval([]) == Interval(0, None, None, None)
    assert paired_interval([4.0]) == Interval(1, 4.0, None, None)


@pytest.mark.parametrize(
    "interval, text",
    [
        (Interval(5, 1.5, 0.25, 2.75), "A +1.50 (CI 0.25 to 2.75)"),
        (Interval(5, -1.5, -2.75, -0.25), "B +1.50 (CI 0.25 to 2.75)"),
        (Interval(5, 0.5, -0.25, 1.25), "Tie"),
        (Interval(1, 3.0, None, None), "Tie"),
    ],
)
def test_verdict_names_the_bot_ahead_only_when_the_interval_excludes_zero(interval, text):
    assert verdict("A", "B", interval) == text


def test_sort_rows_puts_missing_values_last_both_ways():
    rows = [{"k": 2}, {"k": None}, {"k": 1}]
    assert [r["k"] for r in sort_rows(rows, "k", ["k"])] == [1, 2, None]
    assert [r["k"] for r in sort_rows(rows, "-k", ["k"])] == [2, 1, None]
    with pytest.raises(KeyError):
        sort_rows(rows, "x", ["k"])
