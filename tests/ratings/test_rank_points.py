"""Rank Points (seed 000): the 99.7 % lower bound on 0..10000, the half step, direction, 1..500, upset bonus.

Glicko-2's bounds put R_MIN = 450 and R_MAX = 2550 at 0 and 10000, so one rating point is 10000/2100
= 4.7619048 Rank Points. The examples use a bot at r = 1700, RD = 50: its lower bound 1550 maps to
(1550 - 450)·10000/2100 = 5238.0952381, its upper bound 1850 to 6666.6666667.
"""

from __future__ import annotations

import itertools

import pytest

from rumble.ratings import rank_points as rp

WIN, LOSS, DRAW = 0.6, 0.4, 0.5  # battle score shares
NO_UPSET = (1700.0, 1600.0)  # ratings before the battle: the bot was the favourite


def test_a_new_bot_starts_at_zero_which_is_an_unrated_bots_target():
    assert rp.START == 0.0
    assert rp.target(1500.0, 350.0) == 0.0  # 1500 - 3·350 = 450 = R_MIN


def test_target_and_ceiling_are_the_99_7_percent_bounds_on_the_rp_scale():
    assert rp.target(1700.0, 50.0) == pytest.approx(5238.0952381, abs=1e-7)
    assert rp.ceiling(1700.0, 50.0) == pytest.approx(6666.6666667, abs=1e-7)
    assert rp.target(1000.0, 300.0) == 0.0  # 100 is below R_MIN: clamped to 0
    assert rp.ceiling(2500.0, 100.0) == 10_000.0  # 2800 is above R_MAX: clamped to 10000


def test_a_win_steps_halfway_up_to_the_target():
    """From 5000: 5000 + (5238.0952381 - 5000)/2 = 5119.0476190."""
    assert rp.update(5000.0, 1700.0, 50.0, WIN, *NO_UPSET) == pytest.approx(5119.0476190, abs=1e-7)


def test_a_loss_steps_halfway_down_to_the_target():
    """From 6000: 6000 - (6000 - 5238.0952381)/2 = 5619.0476190."""
    assert rp.update(6000.0, 1700.0, 50.0, LOSS, *NO_UPSET) == pytest.approx(5619.0476190, abs=1e-7)


def test_a_win_never_lowers_rank_points_and_gains_at_least_one():
    """From 6000 the half step points down (to 5619.05); a win still gains the minimum 1."""
    assert rp.update(6000.0, 1700.0, 50.0, WIN, *NO_UPSET) == 6001.0


def test_a_loss_never_raises_rank_points_and_costs_at_least_one():
    """From 5000 the half step points up (to 5119.05); a loss still costs the minimum 1."""
    assert rp.update(5000.0, 1700.0, 50.0, LOSS, *NO_UPSET) == 4999.0


def test_no_battle_moves_more_than_500():
    """From 0 the half step is 2619.05; it is cut to 500 either way."""
    assert rp.update(0.0, 1700.0, 50.0, WIN, *NO_UPSET) == 500.0
    assert rp.update(9000.0, 1700.0, 50.0, LOSS, *NO_UPSET) == 8500.0


def test_an_exact_draw_leaves_rank_points_where_they_are():
    assert rp.update(5000.0, 1700.0, 50.0, DRAW, *NO_UPSET) == 5000.0


def test_a_win_stops_at_the_upper_bound_of_the_interval():
    """r = 1500, RD = 35: upper bound 1605 → 5500. A win at 5499.5 gains only 0.5; at or above 5500, nothing."""
    assert rp.ceiling(1500.0, 35.0) == pytest.approx(5500.0, abs=1e-9)
    assert rp.update(5499.5, 1500.0, 35.0, WIN, *NO_UPSET) == rp.ceiling(1500.0, 35.0)
    assert rp.update(5600.0, 1500.0, 35.0, WIN, *NO_UPSET) == 5600.0


def test_a_loss_stops_at_zero():
    assert rp.update(0.4, 1500.0, 350.0, LOSS, *NO_UPSET) == 0.0
    assert rp.update(0.0, 1500.0, 350.0, LOSS, *NO_UPSET) == 0.0


def test_an_upset_win_earns_the_bonus():
    """Rated 1500 before beating a 1710: 250·210/2100 = 25 extra, so 5000 + 119.0476190 + 25 = 5144.0476190."""
    assert rp.upset_bonus(1500.0, 1710.0) == pytest.approx(25.0, rel=1e-15)
    assert rp.update(5000.0, 1700.0, 50.0, WIN, 1500.0, 1710.0) == pytest.approx(5144.0476190, abs=1e-7)


def test_the_full_bonus_is_paid_at_the_largest_possible_gap():
    assert rp.upset_bonus(450.0, 2550.0) == rp.UPSET_BONUS == 250.0


def test_no_bonus_for_a_favourite_a_loss_or_when_turned_off():
    assert rp.upset_bonus(1710.0, 1500.0) == 0.0
    assert rp.update(6000.0, 1700.0, 50.0, LOSS, 1500.0, 1710.0) == pytest.approx(5619.0476190, abs=1e-7)
    assert rp.update(5000.0, 1700.0, 50.0, WIN, 1500.0, 1710.0, full_bonus=0.0) == pytest.approx(5119.0476190, abs=1e-7)


def test_the_bonus_counts_towards_the_500_cap():
    assert rp.update(0.0, 1700.0, 50.0, WIN, 450.0, 2550.0) == 500.0


@pytest.mark.parametrize("share", [WIN, LOSS])
def test_rank_points_move_only_with_the_result_and_by_1_to_500(share):
    """Over a grid of states: a win moves up, a loss down, by 1..500, except where 0 or the ceiling stops it."""
    starts, ratings = [0.0, 0.5, 2000.0, 5000.0, 9999.5], [450.0, 1200.0, 1700.0, 2550.0]
    states = itertools.product(starts, ratings, [30.4, 120.0, 350.0])
    for points, r, rd in states:
        for before in [(r - 300.0, r), (r + 300.0, r)]:
            new = rp.update(points, r, rd, share, *before)
            change = new - points
            if share > 0.5:
                assert 0.0 <= change <= 500.0
                assert change >= 1.0 or new == max(points, rp.ceiling(r, rd))
            else:
                assert -500.0 <= change <= 0.0
                assert change <= -1.0 or new == 0.0


def test_defaults():
    assert (rp.START, rp.RP_MAX, rp.APPROACH) == (0.0, 10_000.0, 0.5)
    assert (rp.MIN_STEP, rp.MAX_STEP, rp.UPSET_BONUS) == (1.0, 500.0, 250.0)
