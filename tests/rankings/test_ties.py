"""Rank ranges from APS intervals, and the table's banner (hand-worked examples)."""

from __future__ import annotations

import pytest

from rumble.rankings import superiority
from rumble.rankings.ties import rank_ranges, stability


def variance(half_width: float) -> float:
    """The APS variance whose 95 % half-width 1.96·√Var is ``half_width``."""
    return (half_width / 1.96) ** 2


def test_rank_ranges_from_overlapping_intervals():
    """Intervals: A [69, 71], B [63, 67], C [62, 66], D [49, 51], E unknown [0, 100].
    A: no interval lies wholly above 71 → best 1; intervals reaching 69: A, E → worst 2.
    B: above 67 only A (69) → best 2; reaching 63: A, B, C, E → worst 4. C likewise (2, 4).
    D: above 51: A, B, C → best 4; all five reach 49 → worst 5. E: best 1, worst 5."""
    variances = [variance(1), variance(2), variance(2), variance(1), None]
    assert rank_ranges([70, 65, 64, 50, None], variances) == [(1, 2), (2, 4), (2, 4), (4, 5), (1, 5)]


def test_separated_intervals_are_not_ties_and_order_does_not_matter():
    assert rank_ranges([50, 90, 70], [variance(1)] * 3) == [(3, 3), (1, 1), (2, 2)]


def test_single_battle_pairings_widen_the_interval_as_in_the_los():
    """The fix of issue 33 item 6: the interval is 1.96·√Var with the LOS's Var, not the bare APS CI.
    X: APS 60, CI 1.96 over n = 4 pairings, k = 2 of them with 2+ battles, 8 battles: m = 1·4 = 4,
    σ² = 4·(8 − 2)/2 = 12, Var = (2·4 + 2·12)/4² = 2, half-width 1.96·√2 = 2.772: [57.228, 62.772].
    Y: APS 55.7, CI 1.96, every pairing with 2+ battles: Var 1, [53.74, 57.66].
    The bare CIs, [58.04, 61.96] and [53.74, 57.66], are apart (X 1st, Y 2nd); the corrected ones
    overlap (57.228 < 57.66), so both could be 1st or 2nd."""
    assert superiority.aps_variance(1.96, 4, 2, 8) == pytest.approx(2.0)
    assert rank_ranges([60.0, 55.7], [2.0, 1.0]) == [(1, 2), (1, 2)]
    los_variances = [superiority.aps_variance(1.96, 4, 2, 8), superiority.aps_variance(1.96, 4, 4, 8)]
    assert rank_ranges([60.0, 55.7], los_variances) == [(1, 2), (1, 2)]
    # The same two bots as the LOS sees them (superiority.standing): the same variances
    x = superiority.standing("X", 60.0, 1.96, 4, 2, 8)
    y = superiority.standing("Y", 55.7, 1.96, 4, 4, 8)
    assert rank_ranges([x.aps, y.aps], [x.variance, y.variance]) == [(1, 2), (1, 2)]
    # Without single-battle pairings (k = n for X too) the intervals stay apart
    assert rank_ranges([60.0, 55.7], [1.0, 1.0]) == [(1, 1), (2, 2)]


def test_banner_states():
    assert stability([3, 3, 3, 3], 0)[0] == "complete"
    state, words = stability([3, 2, 3, 2], 0)  # 4 bots: one pairing (between the two with 2) missing
    assert state == "incomplete" and "2 of 4 bots" in words and "(1 pairing missing)" in words
    state, words = stability([3, 3, 3, 3], 2)
    assert state == "unstable" and "2 bots have not battled since" in words


def test_the_banner_counts_one_in_the_singular_and_more_in_the_plural():
    assert stability([3, 3, 3, 3], 1)[1] == (
        "Ratings unstable: the field changed and 1 bot has not battled since; "
        "their ratings catch up at their next battle."
    )
    _, words = stability([3, 1, 2, 2], 0)  # 4 bots: the one with 1 lacks two pairings
    assert words == "Pairings incomplete: 3 of 4 bots have not met everyone (2 pairings missing)."
