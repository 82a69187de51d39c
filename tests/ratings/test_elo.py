"""RoboRumble Elo (seed 004 with peers.md section 7's minus signs): E on base 20/800, the all-pairings delta."""

from __future__ import annotations

import numpy as np
import pytest

from rumble.ratings import elo


def test_expected_score_is_one_over_one_plus_twenty_to_the_gap_over_800():
    """1800 against 1600: 20^((1600 - 1800)/800) = 20^-0.25 = 1/2.1147425 = 0.4728708; E = 1/1.4728708 = 0.6789462.
    (Chess Elo's 10^(-200/400) would give 0.7597.)"""
    assert elo.expected_score(1800.0, 1600.0) == pytest.approx(0.6789462, abs=1e-7)
    assert elo.expected_score(1800.0, 1600.0) == pytest.approx(1 / (1 + 20 ** ((1600 - 1800) / 800)), rel=1e-15)
    assert elo.expected_score(1600.0, 1800.0) == pytest.approx(1 - 0.6789462, abs=1e-7)
    assert elo.expected_score(1700.0, 1700.0) == 0.5


def test_expected_score_works_on_arrays():
    e = elo.expected_score(1600.0, np.array([1600.0, 1800.0, 1400.0]))
    assert e.tolist() == pytest.approx([0.5, 1 - 0.6789462, 0.6789462], abs=1e-7)


def test_delta_is_three_times_the_summed_surprise():
    """1600 with pairings 0.7 against 1600 and 0.5 against 1800: 3·((0.7 - 0.5) + (0.5 - 0.3210538)) = 1.1368386."""
    d = elo.delta(1600.0, np.array([1600.0, 1800.0]), np.array([0.7, 0.5]))
    assert type(d) is float
    assert d == pytest.approx(1.1368386, abs=1e-7)


def test_a_bot_without_pairings_does_not_move():
    assert elo.delta(1600.0, np.array([]), np.array([])) == 0.0


def upload(ratings, pairings, first, second, share):
    """One battle through RRServer's steps: the pairing's running mean first, then both bots' deltas
    from the ratings as they stood before the upload, over all their pairings (in a fixed order)."""
    pairings.setdefault((first, second), []).append(share)
    pairings.setdefault((second, first), []).append(1 - share)
    before = dict(ratings)
    for bot in (first, second):
        opponents = sorted(opp for own, opp in pairings if own == bot)
        scores = [np.mean(pairings[bot, opp]) for opp in opponents]
        ratings[bot] = before[bot] + elo.delta(before[bot], np.array([before[o] for o in opponents]), np.array(scores))


def test_three_bots_over_four_uploads_match_the_hand_computation():
    """A, B and C start at 1600. E(x, y) = 1/(1 + 20^((r_y - r_x)/800)); each term is 3·(Pair - E).

    1. A–B, A scores 60 %. Pair(A,B) = 0.6, Pair(B,A) = 0.4; every E is 0.5.
       A: 3·(0.6 - 0.5) = +0.3 → 1600.3.  B: 3·(0.4 - 0.5) = -0.3 → 1599.7.
    2. B–C, B scores 70 %. Before: A 1600.3, B 1599.7, C 1600.
       B vs A: 20^(0.6/800) = 20^0.00075 = e^(0.00075·2.9957323) = 1.0022493; E = 1/2.0022493 = 0.4994383;
               3·(0.4 - 0.4994383) = -0.2983149.
       B vs C: 20^(0.3/800) = 1.0011240; E = 0.4997192; 3·(0.7 - 0.4997192) = +0.6008425.
       B: -0.2983149 + 0.6008425 = +0.3025276 → 1600.0025276.
       C vs B: E = 1 - 0.4997192 = 0.5002808; 3·(0.3 - 0.5002808) = -0.6008425 → C 1599.3991575.
    3. C–A, C scores 55 %. Before: A 1600.3, B 1600.0025276, C 1599.3991575.
       C vs A: gap 0.9008425/800 = 0.0011261; 20^0.0011261 = 1.0033791; E = 0.4991567;
               3·(0.55 - 0.4991567) = +0.1525300.
       C vs B: gap 0.6033702/800 = 0.0007542; 20^0.0007542 = 1.0022620; E = 0.4994351;
               3·(0.3 - 0.4994351) = -0.5983054.
       C: +0.1525300 - 0.5983054 = -0.4457754 → 1598.9533820.
       A vs B: gap -0.2974724/800 = -0.0003718; 20^-0.0003718 = 0.9988867; E = 0.5002785;
               3·(0.6 - 0.5002785) = +0.2991645.
       A vs C: E = 1 - 0.4991567 = 0.5008433; 3·(0.45 - 0.5008433) = -0.1525300.
       A: +0.2991645 - 0.1525300 = +0.1466345 → 1600.4466345.
    4. A–B, A scores 80 %: Pair(A,B) = mean(0.6, 0.8) = 0.7, Pair(B,A) = 0.3.
       Before: A 1600.4466345, B 1600.0025276, C 1598.9533820.
       A vs B: gap -0.4441069/800 = -0.0005551; 20^-0.0005551 = 0.9983384; E = 0.5004158;
               3·(0.7 - 0.5004158) = +0.5987527.
       A vs C: gap -1.4932525/800 = -0.0018666; 20^-0.0018666 = 0.9944239; E = 0.5013979;
               3·(0.45 - 0.5013979) = -0.1541938.
       A: +0.5987527 - 0.1541938 = +0.4445589 → 1600.8911935.
       B vs A: E = 0.4995842; 3·(0.3 - 0.4995842) = -0.5987527.
       B vs C: gap -1.0491456/800 = -0.0013114; 20^-0.0013114 = 0.9960790; E = 0.5009822;
               3·(0.7 - 0.5009822) = +0.5970535.
       B: -0.5987527 + 0.5970535 = -0.0016992 → 1600.0008284.
    """
    ratings = {"A": elo.START, "B": elo.START, "C": elo.START}
    pairings: dict[tuple[str, str], list[float]] = {}
    steps = [
        ("A", "B", 0.6, {"A": 1600.3, "B": 1599.7, "C": 1600.0}),
        ("B", "C", 0.7, {"A": 1600.3, "B": 1600.0025276, "C": 1599.3991575}),
        ("C", "A", 0.55, {"A": 1600.4466345, "B": 1600.0025276, "C": 1598.9533820}),
        ("A", "B", 0.8, {"A": 1600.8911935, "B": 1600.0008284, "C": 1598.9533820}),
    ]
    for first, second, share, expected in steps:
        upload(ratings, pairings, first, second, share)
        assert ratings == pytest.approx(expected, abs=1e-6)


def test_start_rating_and_weight():
    assert (elo.START, elo.BASE, elo.SCALE, elo.WEIGHT) == (1600.0, 20.0, 800.0, 3.0)
