"""Copeland's method (1 per pairing won, ½ per tie) on textbook examples."""

from __future__ import annotations

import numpy as np
from conftest import pairwise_from_ballots

from rumble.rankings import copeland

NAN = np.nan


def test_lippman_scholarship_example_with_a_tie():
    """D. Lippman, "Math in Society", Voting Theory, example 11: 5 DACB, 5 ACBD, 6 CBDA, 4 BDAC.

    A-B 10:10 (½ each), A-C 14:6 (A), A-D 5:15 (D), B-C 4:16 (C), B-D 15:5 (B), C-D 11:9 (C):
    A 1½, B 1½, C 2, D 1, so C first, A and B tied second, D fourth.
    """
    d = pairwise_from_ballots([(5, "DACB"), (5, "ACBD"), (6, "CBDA"), (4, "BDAC")], "ABCD")
    assert d[0, 1] == d[1, 0] == 10
    result = copeland.rank(d)
    assert result.scores.tolist() == [1.5, 1.5, 2.0, 1.0]
    assert result.ranks.tolist() == [2, 2, 1, 4]


def test_tennessee_example():
    """Wikipedia, "Copeland's method", example with a Condorcet winner: Nashville wins 3, Chattanooga 2,
    Knoxville 1, Memphis 0 (Memphis, Nashville, Chattanooga, Knoxville in that order)."""
    d = np.array([[NAN, 42, 42, 42], [58, NAN, 68, 68], [58, 32, NAN, 83], [58, 32, 17, NAN]])
    result = copeland.rank(d)
    assert result.scores.tolist() == [0, 3, 2, 1]
    assert result.ranks.tolist() == [4, 1, 2, 3]


def test_condorcet_cycle_is_a_three_way_tie():
    d = np.array([[NAN, 40, 60], [60, NAN, 40], [40, 60, NAN]])  # rock, paper, scissors
    result = copeland.rank(d)
    assert result.scores.tolist() == [1, 1, 1]
    assert result.ranks.tolist() == [1, 1, 1]


def test_exact_50s_give_half_a_point_each():
    result = copeland.rank(np.full((4, 4), 50.0))
    assert result.scores.tolist() == [1.5, 1.5, 1.5, 1.5]
    assert result.ranks.tolist() == [1, 1, 1, 1]


def test_a_missing_pairing_counts_for_no_one():
    """A beats B 60:40, B-C 50:50, A-C never met: A 1, B 0 + ½, C ½."""
    d = np.array([[NAN, 60, NAN], [40, NAN, 50], [NAN, 50, NAN]])
    result = copeland.rank(d)
    assert result.scores.tolist() == [1.0, 0.5, 0.5]
    assert result.ranks.tolist() == [1, 2, 2]
