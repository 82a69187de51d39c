"""Schulze's method on Wikipedia's worked example and on small cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import pairwise_from_ballots

from rumble.rankings import schulze

NAN = np.nan

# Wikipedia, "Schulze method", Example: 45 voters, 5 candidates (count, ballot best to worst)
WIKIPEDIA_BALLOTS = [
    (5, "ACBED"),
    (5, "ADECB"),
    (8, "BEDAC"),
    (3, "CABED"),
    (7, "CAEBD"),
    (2, "CBADE"),
    (7, "DCEBA"),
    (8, "EBADC"),
]
# its published matrix of pairwise preferences d[X, Y] and strongest paths p[X, Y], rows and columns A..E
WIKIPEDIA_D = [
    [NAN, 20, 26, 30, 22],
    [25, NAN, 16, 33, 18],
    [19, 29, NAN, 17, 24],
    [15, 12, 28, NAN, 14],
    [23, 27, 21, 31, NAN],
]
WIKIPEDIA_P = [
    [NAN, 28, 28, 30, 24],
    [25, NAN, 28, 33, 24],
    [25, 29, NAN, 29, 24],
    [25, 28, 28, NAN, 24],
    [25, 28, 28, 31, NAN],
]


def test_wikipedia_ballots_tally_to_the_published_matrix():
    np.testing.assert_array_equal(pairwise_from_ballots(WIKIPEDIA_BALLOTS, "ABCDE"), np.array(WIKIPEDIA_D))


def test_wikipedia_example_strongest_paths():
    np.testing.assert_array_equal(schulze.strongest_paths(np.array(WIKIPEDIA_D)), np.array(WIKIPEDIA_P))


def test_wikipedia_example_ranking_is_e_a_c_b_d():
    ranks = schulze.rank(np.array(WIKIPEDIA_D)).ranks
    assert dict(zip("ABCDE", ranks.tolist())) == {"E": 1, "A": 2, "C": 3, "B": 4, "D": 5}


def test_balanced_condorcet_cycle_is_a_three_way_tie():
    """Rock beats scissors, scissors paper, paper rock, each 60:40: every strongest path is 60."""
    d = np.array([[NAN, 40, 60], [60, NAN, 40], [40, 60, NAN]])  # rock, paper, scissors
    assert schulze.rank(d).ranks.tolist() == [1, 1, 1]


def test_unbalanced_cycle_is_decided_by_its_weakest_link():
    """R→S 70, S→P 60, P→R 55. p[R,S] = 70, p[S,P] = 60, p[P,R] = 55, p[R,P] = min(70, 60) = 60,
    p[S,R] = min(60, 55) = 55, p[P,S] = min(55, 70) = 55: R > S (70 > 55), R > P (60 > 55),
    S > P (60 > 55), so R > S > P."""
    d = np.array([[NAN, 45, 70], [55, NAN, 40], [30, 60, NAN]])  # rock, paper, scissors
    assert schulze.rank(d).ranks.tolist() == [1, 3, 2]


def test_winning_votes_and_margins_differ_when_voters_abstain():
    """A→B 30:10, B→C 28:2, C→A 29:20 (the two sides need not sum alike).

    Winning votes: links 30, 28, 29; p[A,B] = 30, p[B,C] = 28, p[C,A] = 29, p[A,C] = min(30, 28) = 28,
    p[B,A] = min(28, 29) = 28, p[C,B] = min(29, 30) = 29: A > B, C > A, C > B, so C > A > B.
    Margins: links 20, 26, 9; p[A,B] = 20, p[B,C] = 26, p[C,A] = 9, p[A,C] = 20, p[B,A] = 9,
    p[C,B] = 9: A > B > C. Ratios: links 3, 14, 1.45; p[A,C] = 3, p[C,A] = 1.45, ...: A > B > C.
    """
    d = np.array([[NAN, 30, 20], [10, NAN, 28], [29, 2, NAN]])
    assert schulze.rank(d).ranks.tolist() == [2, 3, 1]
    assert schulze.rank(d, strength="margin").ranks.tolist() == [1, 2, 3]
    assert schulze.rank(d, strength="ratio").ranks.tolist() == [1, 2, 3]


def test_exact_ties_make_no_links():
    d = np.full((4, 4), 50.0)
    assert schulze.rank(d).ranks.tolist() == [1, 1, 1, 1]
    assert np.nansum(schulze.strongest_paths(d)) == 0


def test_a_missing_pairing_is_bridged_by_a_path():
    """A beats B 60:40 and B beats C 70:30, A-C never met: p[A,C] = min(60, 70) = 60 > p[C,A] = 0."""
    d = np.array([[NAN, 60, NAN], [40, NAN, 70], [NAN, 30, NAN]])
    assert schulze.rank(d).ranks.tolist() == [1, 2, 3]


def test_a_bot_without_pairings_is_never_below_anyone():
    d = np.array([[NAN, 60, NAN], [40, NAN, NAN], [NAN, NAN, NAN]])
    assert schulze.rank(d).ranks.tolist() == [1, 2, 1]


def _textbook_strongest_paths(d: np.ndarray) -> np.ndarray:
    """Wikipedia's triple loop (Schulze method, Implementation), written out plainly."""
    n = len(d)
    p = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j and d[i, j] > d[j, i]:
                p[i, j] = d[i, j]
    for i in range(n):
        for j in range(n):
            if i != j:
                for k in range(n):
                    if i != k and j != k:
                        p[j, k] = max(p[j, k], min(p[j, i], p[i, k]))
    return p


@pytest.mark.parametrize("seed", range(20))
def test_vectorised_paths_match_the_textbook_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    d = np.round(rng.uniform(0, 100, (n, n)) / 10) * 10  # coarse values: many equal strengths
    np.fill_diagonal(d, NAN)
    p = schulze.strongest_paths(d)
    np.fill_diagonal(p, 0.0)
    np.testing.assert_array_equal(p, _textbook_strongest_paths(d))


def test_unknown_strength_is_refused():
    with pytest.raises(ValueError, match="unknown strength"):
        schulze.rank(np.array(WIKIPEDIA_D), strength="votes")


def test_input_is_not_changed():
    d = np.array(WIKIPEDIA_D)
    schulze.rank(d)
    np.testing.assert_array_equal(d, np.array(WIKIPEDIA_D))
