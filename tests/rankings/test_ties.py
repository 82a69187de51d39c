"""Rank ranges from APS intervals, and the table's banner (hand-worked examples)."""

from __future__ import annotations

from rumble.rankings.ties import rank_ranges, stability


def test_rank_ranges_from_overlapping_intervals():
    """Intervals: A [69, 71], B [63, 67], C [62, 66], D [49, 51], E unknown [0, 100].
    A: no interval lies wholly above 71 → best 1; intervals reaching 69: A, E → worst 2.
    B: above 67 only A (69) → best 2; reaching 63: A, B, C, E → worst 4. C likewise (2, 4).
    D: above 51: A, B, C → best 4; all five reach 49 → worst 5. E: best 1, worst 5."""
    assert rank_ranges([70, 65, 64, 50, None], [1, 2, 2, 1, None]) == [(1, 2), (2, 4), (2, 4), (4, 5), (1, 5)]


def test_separated_intervals_are_not_ties_and_order_does_not_matter():
    assert rank_ranges([50, 90, 70], [1, 1, 1]) == [(3, 3), (1, 1), (2, 2)]


def test_banner_states():
    assert stability([3, 3, 3, 3], 0)[0] == "complete"
    state, words = stability([3, 2, 3, 2], 0)  # 4 bots: one pairing (between the two with 2) missing
    assert state == "incomplete" and "2 of 4 bots" in words and "1 pairings missing" in words
    state, words = stability([3, 3, 3, 3], 2)
    assert state == "unstable" and "2 bots have not battled since" in words
