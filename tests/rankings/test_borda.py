"""Borda count (row sums of the pairwise matrix) on the textbook example and rumble cases."""

from __future__ import annotations

import numpy as np

from rumble.rankings import borda

NAN = np.nan


def test_tennessee_example():
    """Wikipedia, "Borda count", Tennessee capital (3 points for a first place down to 0), per 100
    voters: Memphis 42·3 = 126; Nashville 26·3 + 42·2 + 32·1 = 194; Chattanooga 15·3 + 43·2 + 42·1
    = 173; Knoxville 17·3 + 15·2 + 26·1 = 107. The row sums of the pairwise tally are the same:
    Nashville 58 + 68 + 68 = 194."""
    d = np.array([[NAN, 42, 42, 42], [58, NAN, 68, 68], [58, 32, NAN, 83], [58, 32, 17, NAN]])
    result = borda.rank(d)
    assert result.scores.tolist() == [126, 194, 173, 107]
    assert result.ranks.tolist() == [3, 1, 2, 4]


def test_condorcet_cycle_is_a_tie():
    d = np.array([[NAN, 40, 60], [60, NAN, 40], [40, 60, NAN]])  # rock, paper, scissors
    result = borda.rank(d)
    assert result.scores.tolist() == [100, 100, 100]
    assert result.ranks.tolist() == [1, 1, 1]


def test_exact_ties():
    """B and C have the same pairings' total: 40 + 55 = 45 + 50 = 95."""
    d = np.array([[NAN, 60, 50], [40, NAN, 55], [50, 45, NAN]])
    result = borda.rank(d)
    assert result.scores.tolist() == [110, 95, 95]
    assert result.ranks.tolist() == [1, 2, 2]


def test_a_missing_pairing_counts_as_an_even_50():
    """A-C never met: A 60 + 50 = 110, B 40 + 70 = 110, C 50 + 30 = 80; counting it as 0 instead
    gives A 60, B 110, C 30."""
    d = np.array([[NAN, 60, NAN], [40, NAN, 70], [NAN, 30, NAN]])
    assert borda.scores(d).tolist() == [110, 110, 80]
    assert borda.rank(d).ranks.tolist() == [1, 1, 3]
    assert borda.scores(d, missing=0.0).tolist() == [60, 110, 30]


def test_full_1v1_rumble_ranks_as_aps():
    """Every pairing played: the count is (n − 1)·APS. APS 65, 55, 30 → counts 130, 110, 60."""
    d = np.array([[NAN, 60, 70], [40, NAN, 70], [30, 30, NAN]])
    assert borda.scores(d).tolist() == [130, 110, 60]
    assert borda.rank(d).ranks.tolist() == [1, 2, 3]
