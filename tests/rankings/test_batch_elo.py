"""Batch Elo: maximum-likelihood ratings checked against solutions known in closed form."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from rumble.rankings import batch_elo

NAN = np.nan


def expected_percent(difference: float) -> float:
    """Chess Elo's expected share in percent: 100/(1 + 10^(−difference/400))."""
    return 100.0 / (1.0 + 10.0 ** (-difference / 400.0))


def test_two_bots_at_75_percent_are_400_log10_3_apart():
    """A 75 % share is 3:1 odds: the difference is 400·log10(3) = 190.8485, centred on 1500."""
    r = batch_elo.ratings(np.array([[NAN, 75.0], [25.0, NAN]]))
    assert r.tolist() == [pytest.approx(1595.424251, abs=1e-6), pytest.approx(1404.575749, abs=1e-6)]
    assert r[0] - r[1] == pytest.approx(400 * math.log10(3), abs=1e-6)


def test_roborumble_curve_option():
    """On the 20/800 curve 3:1 odds are 800·log20(3) = 800·ln 3/ln 20 = 293.3806 points."""
    r = batch_elo.ratings(np.array([[NAN, 75.0], [25.0, NAN]]), base=20.0, scale=800.0, mean=1600.0)
    assert r[0] - r[1] == pytest.approx(800 * math.log(3) / math.log(20), abs=1e-6)
    assert r.mean() == pytest.approx(1600.0, abs=1e-9)


def test_scores_that_fit_the_model_exactly_give_back_their_ratings():
    """Shares made from ratings 1700, 1500, 1300 by the model itself (E(200) = 75.97 %, E(400) =
    90.91 %) satisfy the likelihood equations exactly, so the fit must return those ratings."""
    truth = [1700.0, 1500.0, 1300.0]
    d = np.array([[expected_percent(a - b) if a != b else NAN for b in truth] for a in truth])
    np.testing.assert_allclose(batch_elo.ratings(d), truth, atol=1e-6)


def test_a_missing_pairing_is_left_out():
    """A-B and B-C at E(200) each, A-C never met: each pairing is fitted on its own, 200 apart."""
    e = expected_percent(200.0)
    d = np.array([[NAN, e, NAN], [100 - e, NAN, e], [NAN, 100 - e, NAN]])
    np.testing.assert_allclose(batch_elo.ratings(d), [1700.0, 1500.0, 1300.0], atol=1e-6)


def test_condorcet_cycle_rates_everyone_equal():
    d = np.array([[NAN, 40, 60], [60, NAN, 40], [40, 60, NAN]])  # rock, paper, scissors
    np.testing.assert_allclose(batch_elo.ratings(d), [1500.0] * 3, atol=1e-9)


def test_exact_ties_rate_everyone_equal_and_share_rank_1():
    result = batch_elo.rank(np.full((4, 4), 50.0))
    assert result.scores.tolist() == [1500.0] * 4
    assert result.ranks.tolist() == [1, 1, 1, 1]


def test_a_bot_without_pairings_is_unrated_and_last():
    d = np.array([[NAN, 75.0, NAN], [25.0, NAN, NAN], [NAN, NAN, NAN]])
    result = batch_elo.rank(d)
    assert np.isnan(result.scores[2])
    assert result.ranks.tolist() == [1, 2, 3]


def test_groups_that_never_met_are_refused():
    d = np.array([[NAN, 60, NAN, NAN], [40, NAN, NAN, NAN], [NAN, NAN, NAN, 55], [NAN, NAN, 45, NAN]])
    with pytest.raises(ValueError, match="never met"):
        batch_elo.ratings(d)


def test_a_bot_taking_every_point_has_no_finite_rating():
    with pytest.raises(batch_elo.NotConverged):
        batch_elo.ratings(np.array([[NAN, 100.0], [0.0, NAN]]))


def test_defaults_are_pinned():
    assert (batch_elo.TOLERANCE, batch_elo.MAX_ITERATIONS) == (1e-6, 100)
    defaults = {k: p.default for k, p in inspect.signature(batch_elo.ratings).parameters.items() if k != "d"}
    assert defaults == {"base": 10.0, "scale": 400.0, "mean": 1500.0}
