"""Every score on small examples computed by hand (the arithmetic is in each docstring)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from rumble.rankings import scores
from rumble.rankings.scores import Pairing, Totals, add_battle, contribution, summary, totals_of


def test_battle_percent_is_the_share_of_the_total_score():
    """6598 / (6598 + 4883) = 6598 / 11481 = 0.57468862...; both zero counts as an even 50."""
    assert scores.battle_percent(6598, 4883) == pytest.approx(57.468862, abs=1e-6)
    assert scores.battle_percent(4883, 6598) == pytest.approx(42.531138, abs=1e-6)
    assert scores.battle_percent(0, 0) == 50.0
    assert scores.battle_percent(0, 10) == 0.0


def test_survival_percent_is_firsts_over_the_rumbles_rounds():
    """32 of 35 rounds first: 32/35 = 0.9142857...; 3 of 35: 0.0857142..."""
    assert scores.survival_percent(32, 35) == pytest.approx(91.428571, abs=1e-6)
    assert scores.survival_percent(3, 35) == pytest.approx(8.571429, abs=1e-6)


def _pairing(*percents: float, survival: float = 50.0) -> Pairing:
    p = Pairing()
    for i, x in enumerate(percents):
        p = add_battle(p, x, survival, f"2026-01-01 00:00:0{i}.000")
    return p


def test_pairing_aps_is_the_true_running_mean_with_its_variance():
    """Battles of 60, 70 and 80 %: mean (60+70+80)/3 = 70; squared deviations 100 + 0 + 100 = 200,
    population variance 200/3 = 66.667; CI = 1.96·sqrt(66.667/(3−1)) = 1.96·5.773503 = 11.316065."""
    p = _pairing(60, 70, 80)
    assert p.battles == 3
    assert p.aps == pytest.approx(70.0, abs=1e-12)
    assert p.aps_m2 == pytest.approx(200.0, abs=1e-9)
    assert scores.pairing_ci(p) == pytest.approx(11.316065, abs=1e-6)
    assert p.last_battle == "2026-01-01 00:00:02.000"


def test_pairing_ci_needs_two_battles():
    assert scores.pairing_ci(_pairing(60)) is None


def test_pairing_mean_does_not_cap_like_literumble():
    """After 6000 battles of 0 and one of 100 the mean is 100/6001 = 0.016664 (LiteRumble's capped
    mean would give 100/5001 = 0.019996)."""
    p = Pairing(battles=6000, aps=0.0, aps_m2=0.0, survival=0.0, last_battle="")
    p = add_battle(p, 100.0, 0.0, "x")
    assert p.aps == pytest.approx(100 / 6001, rel=1e-12)


def test_bot_summary_from_three_pairings():
    """Pairings: B at 60/70/80 (APS 70, var 200/3), C at 40 (1 battle), D at 40/60 (APS 50, var 100).

    APS = (70 + 40 + 50)/3 = 53.3333; wins 1 (B), losses 1 (C), draws 1 (D): PL = 0,
    PWIN = 100·1/3 (the draw is no win). CI terms over the k = 2 pairings with 2+ battles:
    B 66.667/2 = 33.333, D 100/1 = 100, sum 133.333; CI = 1.96·sqrt(133.333/(3·2)) = 1.96·4.714045 = 9.239528.
    Battles 3 + 1 + 2 = 6. Survival: 30, 60, 90 → 60.
    """
    pairings = [_pairing(60, 70, 80, survival=30), _pairing(40, survival=60), _pairing(40, 60, survival=90)]
    s = summary(totals_of(pairings))
    assert s.aps == pytest.approx(53.333333, abs=1e-6)
    assert (s.wins, s.draws, s.losses, s.pl) == (1, 1, 1, 0)
    assert s.pwin == 100.0 / 3.0
    assert s.aps_ci == pytest.approx(9.239528, abs=1e-6)
    assert s.pairings == 3 and s.battles == 6
    assert s.survival == pytest.approx(60.0, abs=1e-12)


def test_pwin_without_draws_matches_literumbles_formula():
    """3 won, 1 lost of 4: PL = 2, PWIN = 50·2/4 + 50 = 75 (LiteRumble) = 100·3/4."""
    s = summary(totals_of([_pairing(60), _pairing(70), _pairing(55), _pairing(10)]))
    assert (s.pl, s.pwin) == (2, 75.0)


def literumble_pwin(pairing_aps: list[float]) -> float:
    """LiteRumble's published PWIN (peers.md section 1, its Rankings code): PL_L = Σ (+1 if APS > 50
    else −1), PWIN = 50·PL_L/pairings + 50; written out here, independently of rumble."""
    pl = sum(1 if aps > 50 else -1 for aps in pairing_aps)
    return 50.0 * pl / len(pairing_aps) + 50.0


@pytest.mark.parametrize("percents", [[60, 50, 40, 50], [50, 50], [51, 50, 49, 50, 50, 70, 30, 100], [50]])
def test_pwin_equals_literumbles_with_draws(percents):
    """Exact 50s are no win on LiteRumble (nor on RRServer, whose "pairs won" counts APS > 50): PWIN
    agrees with LiteRumble's formula whatever the draws, while PL and the counts keep the draws apart."""
    s = summary(totals_of([_pairing(p) for p in percents]))
    assert s.pwin == pytest.approx(literumble_pwin(percents), abs=1e-12)
    assert (s.wins, s.draws, s.losses) == (
        sum(p > 50 for p in percents),
        percents.count(50),
        sum(p < 50 for p in percents),
    )


def test_no_pairings_gives_empty_scores():
    s = summary(Totals())
    assert (s.aps, s.aps_ci, s.survival, s.pwin, s.pl, s.pairings) == (None, None, None, None, 0, 0)


def test_aps_is_the_correctly_rounded_mean_whatever_the_order():
    """The exact sums make APS the exact mean of the pairing values rounded once, so it is the
    same for any order of additions and removals (checked against Fraction arithmetic)."""
    rng = random.Random(3)
    values = [rng.uniform(0, 100) for _ in range(500)]
    pairings = [Pairing(1, v, 0.0, v, "") for v in values]
    expected = float(sum(Fraction(v) for v in values) / len(values))
    forward = summary(totals_of(pairings))
    shuffled = pairings[:]
    rng.shuffle(shuffled)
    total = totals_of(shuffled + pairings[:50])
    for p in pairings[:50]:
        total = total - contribution(p)
    assert forward.aps == expected
    assert summary(total) == forward


def test_removing_a_pairing_restores_the_totals_exactly():
    a, b = _pairing(61.3, 12.9), _pairing(44.4)
    assert totals_of([a, b]) - contribution(b) == totals_of([a])


def test_a_pairings_new_contribution_gives_the_totals_summed_afresh():
    """scores.replace_contribution (every upload's update of two bots' totals) against totals_of
    over the bot's pairings after the battle: first battles (no old pairing), pairings passing
    from one battle to two (their interval term appears) and later battles."""
    rng = random.Random(11)
    for _ in range(300):
        pairings = [
            _pairing(*(rng.uniform(0, 100) for _ in range(rng.randrange(1, 4)))) for _ in range(rng.randrange(6))
        ]
        old = rng.choice([*pairings, None])
        new = add_battle(old or Pairing(), rng.uniform(0, 100), rng.uniform(0, 100), "2026")
        after = [new if p is old else p for p in pairings] + ([new] if old is None else [])
        assert scores.replace_contribution(totals_of(pairings), old, new) == totals_of(after)


def test_exact_sums_equal_the_exact_integers_added_one_by_one():
    """scores.exact_sums against scores.exact summed in Python, over normal, subnormal, negative and
    zero values in several groups (many sharing an exponent: the int64 parts must not overflow)."""
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            rng.uniform(0.0, 100.0, 3000),
            np.full(2000, np.nextafter(64.0, 0.0)),  # 2,000 largest significands of one exponent
            -rng.uniform(0.0, 1e-3, 500),
            [5e-324, 2.2250738585072014e-308, 1e-310, 0.0, -0.0, 1e300],
        ]
    )
    groups = rng.integers(0, 4, len(values))
    groups[3000:5000] = 2
    expected = [sum(scores.exact(float(v)) for v, g in zip(values, groups) if g == k) for k in range(5)]
    assert scores.exact_sums(groups, values, 5) == expected
    assert expected[4] == 0  # an empty group


def test_totals_by_group_equal_totals_of_each_bot():
    """scores.totals_by_group against scores.totals_of over Pairing objects, bot by bot."""
    rng = np.random.default_rng(8)
    count = 300
    groups = rng.integers(0, 3, count)
    battles = rng.integers(1, 6, count)
    aps = rng.uniform(0.0, 100.0, count)
    aps[:10] = 50.0  # draws
    aps_m2 = np.where(battles > 1, rng.uniform(0.0, 500.0, count), 0.0)
    survival = rng.uniform(0.0, 100.0, count)
    pairings = [Pairing(int(n), float(a), float(m), float(s)) for n, a, m, s in zip(battles, aps, aps_m2, survival)]
    expected = [scores.totals_of(p for p, g in zip(pairings, groups) if g == k) for k in range(4)]
    assert scores.totals_by_group(groups, battles, aps, aps_m2, survival, 4) == expected
