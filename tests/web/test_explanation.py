"""The score-explanation page says what the code does (issue 13's items, one line each)."""

from __future__ import annotations

import re

import pytest


@pytest.fixture
def page(client) -> str:
    html = client.get("/ScoreExplanation").get_data(as_text=True)
    return re.sub(r"\s+", " ", html)


@pytest.mark.parametrize(
    "statement",
    [
        "PWIN is 50 × PL<sub>L</sub> / pairings + 50",  # 5: the peers' PWIN
        "An exact 50 is no win here either",
        "Condorcet's paradox) is therefore a three-way tie",  # 6: Ranked Pairs tiers
        'the paper\'s optional "variance damping factor" σ/c (its page 26), which the openskill package applies by default, is left out',  # 7
        '"based on pairing win rates (i.e. # wins/battles for each pairing)", not on APS',  # 3
        '"At least 1" has two exceptions, both bounds of seed 000',  # RP's ceiling and floor
        "Three of them (Elo, Glicko and Glicko-2) follow Darkcanuck's RRServer",
        "move by 40 × (0.6 − 0.5) = 4 points each here",  # XonStat's score share, not 1/0
        "gives c = 0.366",  # 9: Glicko's c
        "t is a real number of days",  # 9: real-valued elapsed days
        "allowed 100 steps, not the 20 RRServer bounded it to",  # 9: volatility iteration
    ],
)
def test_explanation_page_states(page, statement):
    assert statement in page


def test_explanation_says_deviations_are_grown_to_now(page):
    assert "show and use both deviations grown for the bot's inactivity up to the present" in page


def test_explanation_says_daily_ranks_are_by_xonstat_elo(page):
    assert "The XonStat rank is the one seed 002 describes" in page


def test_explanation_says_a_melee_battle_is_one_step_of_every_rating(page):
    assert "each of its robots gets exactly one step of every rating" in page
    assert "or all 17 pairs of a prioritized battle" in page
