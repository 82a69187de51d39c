"""XonStat Elo (seed 002): Wikipedia's Elo example, the blog's duel, the K schedule and the match fraction."""

from __future__ import annotations

import pytest

from rumble.ratings import xonstat


def test_wikipedia_elo_example():
    """Wikipedia, "Elo rating system", Mathematical details: a 1613 player loses to 1609, draws with
    1477, beats 1388 and 1586, loses to 1720: score 2.5, expected 0.51 + 0.69 + 0.79 + 0.54 + 0.35
    = 2.88, and with K = 32 the new rating is 1613 + 32·(2.5 - 2.88) = 1601.

    The article's 2.88 adds its rounded terms; unrounded the sum is 2.8665663 (10^(-4/400) = 0.9772372
    → 0.5057562, …) and the new rating 1613 + 32·(2.5 - 2.8665663) = 1601.2699, still 1601."""
    opponents, results = [1609, 1477, 1388, 1586, 1720], [0.0, 0.5, 1.0, 1.0, 0.0]
    expected = [xonstat.expected_score(1613.0, r) for r in opponents]
    assert [round(e, 2) for e in expected] == [0.51, 0.69, 0.79, 0.54, 0.35]
    assert round(sum(round(e, 2) for e in expected), 2) == 2.88
    assert sum(expected) == pytest.approx(2.8665663, abs=1e-7)
    assert expected == pytest.approx([1 / (1 + 10 ** ((r - 1613) / 400)) for r in opponents], rel=1e-15)
    new = 1613 + 32 * (sum(results) - sum(expected))
    assert round(new) == 1601 and new == pytest.approx(1601.2699, abs=1e-4)


def test_blog_duel_when_the_favourite_wins():
    """The blog: 350 plays Mirio (450), both past 32 games (K = 40); Mirio wins.
    E_Mirio = 10^(450/400)/(10^(450/400) + 10^(350/400)) = 13.335/(13.335 + 7.499) = 0.6400650;
    Mirio +40·(1 - 0.6400650) = +14.3974 ("14.40"), the loser -14.3974 ("-14.40")."""
    me, mirio = xonstat.update(350.0, 450.0, 32, 32, 0.0)
    assert (round(me - 350.0, 2), round(mirio - 450.0, 2)) == (-14.40, 14.40)
    assert mirio - 450.0 == pytest.approx(40 * (1 - 1 / (1 + 10 ** (-100 / 400))), rel=1e-12)
    assert mirio - 450.0 == pytest.approx(14.3974, abs=1e-4)


def test_blog_duel_when_the_underdog_wins():
    """Same duel, 350 wins: +40·(1 - 0.3599350) = +25.6026 ("25.60"), Mirio -25.6026 ("-25.60")."""
    me, mirio = xonstat.update(350.0, 450.0, 32, 32, 1.0)
    assert (round(me - 350.0, 2), round(mirio - 450.0, 2)) == (25.60, -25.60)
    assert me - 350.0 == pytest.approx(25.6026, abs=1e-4)


def test_k_falls_linearly_from_200_at_the_first_battle_to_40_at_the_33rd():
    """K = 200 - 160·n/32 with n the battles already played: 1st battle 200, 2nd 195, 32nd 45, 33rd on 40."""
    battles_before = (0, 1, 16, 31, 32, 33, 10_000)
    assert [xonstat.k_factor(n) for n in battles_before] == [200.0, 195.0, 120.0, 45.0, 40.0, 40.0, 40.0]
    with pytest.raises(ValueError):
        xonstat.k_factor(-1)


def test_each_bot_uses_its_own_k():
    """A newcomer (K 200) beats a veteran (K 40) at equal ratings with 75 % of the score: +50 and -10."""
    new, veteran = xonstat.update(1500.0, 1500.0, 0, 50, 0.75)
    assert (new, veteran) == (1550.0, 1490.0)


def test_k_scales_with_the_fraction_of_the_battle_played():
    """The blog's 800 of 1000 seconds: 80 % of K, so the duel's 14.3974 becomes 11.5179."""
    me, mirio = xonstat.update(350.0, 450.0, 32, 32, 0.0, fraction=0.8)
    assert mirio - 450.0 == pytest.approx(0.8 * 14.3974, abs=1e-4)
    with pytest.raises(ValueError):
        xonstat.update(350.0, 450.0, 32, 32, 0.0, fraction=1.5)


def test_the_outcome_is_the_score_share():
    assert [xonstat.score_share(*s) for s in [(3000, 1000), (0, 2500), (0, 0)]] == [0.75, 0.0, 0.5]
    assert xonstat.update(1500.0, 1500.0, 40, 40, 0.5) == (1500.0, 1500.0)


def test_defaults():
    assert (xonstat.BASE, xonstat.SCALE, xonstat.START) == (10.0, 400.0, 1500.0)
    assert (xonstat.K_START, xonstat.K_END, xonstat.K_BATTLES) == (200.0, 40.0, 32)


def test_melee_change_is_the_mean_of_the_pairwise_changes():
    """Three new bots (1500, K 200) score 600, 300, 100. Expected scores are all 1/2, so A's pairwise
    changes are 200·(600/900 − ½) = 33.333 and 200·(600/700 − ½) = 71.429, mean 52.381; B's are
    200·(300/900 − ½) = −33.333 and 200·(300/400 − ½) = 50, mean 8.333; C's −71.429 and −50, mean −60.714."""
    a, b, c = xonstat.update_melee([1500.0] * 3, [0, 0, 0], [600, 300, 100])
    assert a == pytest.approx(1500 + (200 / 6 + 200 * (6 / 7 - 0.5)) / 2)
    assert (a - 1500, b - 1500, c - 1500) == (
        pytest.approx(52.381, abs=1e-3),
        pytest.approx(8.333, abs=1e-3),
        pytest.approx(-60.714, abs=1e-3),
    )


def test_melee_uses_each_bots_own_k_and_the_old_ratings():
    """A (1600, 40 battles: K 40) and B (1500, new: K 200); B wins 3000 to 1000. E_A = 1/(1 + 10^(−100/400))
    = 0.640065; A: 1600 + 40·(0.25 − 0.640065) = 1584.397; B: 1500 + 200·(0.75 − 0.359935) = 1578.013."""
    a, b = xonstat.update_melee([1600.0, 1500.0], [40, 0], [1000, 3000])
    assert (a, b) == (pytest.approx(1584.397, abs=1e-3), pytest.approx(1578.013, abs=1e-3))


def test_melee_needs_two_bots():
    with pytest.raises(ValueError):
        xonstat.update_melee([1500.0], [0], [10])
