"""LiteRumble's batch scores (symmetrisation, Vote, NPP/ANPP, KNNPBI) on a small rumble done by hand.

The rumble: five bots A..E, row = the bot's pairing APS against the column's bot, as uploaded.
A and B disagree (60 + 44 ≠ 100); D and E never met.

        A    B    C    D    E        APS (mean of the row)
    A   -   60   70   80   90        300/4 = 75
    B  44    -   55   60   85        244/4 = 61
    C  30   45    -   62   30        167/4 = 41.75
    D  20   40   38    -   ·          98/3 = 32.67
    E  10   15   70    ·   -          95/3 = 31.67

Symmetrised, s = (d + 100 − dᵀ)/2: A-B becomes (60 + 100 − 44)/2 = 58 and 42; every other pairing
already sums to 100 and stays; D-E stays missing.

Vote: each column's highest entry gets that voter's vote. Against A: B 42 (best). Against B: A 58.
Against C: A 70 and E 70 tie, ½ each. Against D: A 80. Against E: A 90. Votes: A 3½, B 1, E ½,
C 0, D 0; pairings 4, 4, 4, 3, 3; Vote = 100·votes/pairings: A 87.5, B 25, C 0, D 0, E 16.667.

NPP: per column, (s − lowest)/(highest − lowest)·100.
    against A: 42 30 20 10 → range 32: B 100, C 62.5, D 31.25, E 0
    against B: 58 45 40 15 → range 43: A 100, C 30/43 = 69.767, D 25/43 = 58.140, E 0
    against C: 70 55 38 70 → range 32: A 100, B 17/32 = 53.125, D 0, E 100
    against D: 80 60 62    → range 20: A 100, B 0, C 2/20 = 10
    against E: 90 85 30    → range 60: A 100, B 55/60 = 91.667, C 0
ANPP: A 100; B (100 + 53.125 + 0 + 91.667)/4 = 61.198; C (62.5 + 69.767 + 10 + 0)/4 = 35.567;
D (31.25 + 58.140 + 0)/3 = 29.797; E (0 + 0 + 100)/3 = 33.333.

KNNPBI: N = 5, h = ceil(sqrt(5)/2) = ceil(1.118) = 2. In APS order A B C D E (places 0-4), place i
takes places i−2, i−1 and i+1 … min(4, i+2) − 1: A {B}, B {A, C}, C {A, B, D}, D {B, C}, E {C, D}.
E, last, is nobody's neighbour. KNNPBI[X, Y] = s[X, Y] − mean of the neighbours' s[·, Y]:
    A: vs B no neighbour met B (B itself) → 0; vs C 70 − 55 = 15; vs D 80 − 60 = 20; vs E 90 − 85 = 5
    B: vs A 42 − 30 = 12; vs C 55 − 70 = −15; vs D 60 − (80 + 62)/2 = −11; vs E 85 − (90 + 30)/2 = 25
    C: vs A 30 − (42 + 20)/2 = −1; vs B 45 − (58 + 40)/2 = −4; vs D 62 − (80 + 60)/2 = −8;
       vs E 30 − (90 + 85)/2 = −57.5 (D never met E)
    D: vs A 20 − (42 + 30)/2 = −16; vs B 40 − 45 = −5; vs C 38 − 55 = −17; vs E missing
    E: vs A 10 − (30 + 20)/2 = −15; vs B 15 − (45 + 40)/2 = −27.5; vs C 70 − 38 = 32; vs D missing
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from rumble.rankings import batch, knnpbi, npp, vote
from rumble.rankings.pairwise import symmetrise

NAN = np.nan
RUMBLE = np.array(
    [
        [NAN, 60, 70, 80, 90],
        [44, NAN, 55, 60, 85],
        [30, 45, NAN, 62, 30],
        [20, 40, 38, NAN, NAN],
        [10, 15, 70, NAN, NAN],
    ]
)


def test_symmetrise_averages_both_sides_of_a_pairing():
    s = symmetrise(RUMBLE)
    assert (s[0, 1], s[1, 0]) == (58.0, 42.0)
    assert (s[2, 4], s[4, 2]) == (30.0, 70.0)
    assert np.isnan(s[3, 4]) and np.isnan(s[4, 3]) and np.isnan(np.diag(s)).all()


def test_symmetrise_drops_a_pairing_known_from_one_side_only():
    s = symmetrise(np.array([[NAN, 60.0], [NAN, NAN]]))
    assert np.isnan(s).all()


def test_vote_splits_a_tied_vote_and_divides_by_pairings():
    assert vote.votes(RUMBLE).tolist() == [3.5, 1.0, 0.0, 0.0, 0.5]
    result = vote.rank(RUMBLE)
    np.testing.assert_allclose(result.scores, [87.5, 25.0, 0.0, 0.0, 50 / 3])
    assert result.ranks.tolist() == [1, 2, 4, 4, 3]


def test_npp_per_pairing():
    expected = [
        [NAN, 100, 100, 100, 100],
        [100, NAN, 53.125, 0, 55 / 60 * 100],
        [62.5, 30 / 43 * 100, NAN, 10, 0],
        [31.25, 25 / 43 * 100, 0, NAN, NAN],
        [0, 0, 100, NAN, NAN],
    ]
    np.testing.assert_allclose(npp.npp(RUMBLE), expected)


def test_anpp_ranking():
    result = npp.rank(RUMBLE)
    np.testing.assert_allclose(result.scores, [100, 61.197917, 35.566860, 29.796512, 33.333333], atol=1e-6)
    assert result.ranks.tolist() == [1, 2, 3, 5, 4]


def test_npp_is_100_when_everyone_scored_the_same_against_an_opponent():
    """B-C never met. Only A met B and only A met C, so A's 60 and 70 are both the lowest and the
    highest score against them: 100. Against A, B's 40 is the best (100) and C's 30 the worst (0)."""
    d = np.array([[NAN, 60, 70], [40, NAN, NAN], [30, NAN, NAN]])
    np.testing.assert_allclose(npp.npp(d), [[NAN, 100, 100], [100, NAN, NAN], [0, NAN, NAN]])


def test_anpp_of_a_bot_without_pairings_is_minus_one():
    d = np.array([[NAN, 60, NAN], [40, NAN, NAN], [NAN, NAN, NAN]])
    assert npp.scores(d).tolist() == [100.0, 100.0, -1.0]
    assert npp.rank(d).ranks.tolist() == [1, 1, 3]


def test_knnpbi_neighbourhoods_follow_literumbles_code():
    assert knnpbi.aps_order(RUMBLE) == [0, 1, 2, 3, 4]
    assert knnpbi.neighbourhoods(RUMBLE) == [[1], [0, 2], [0, 1, 3], [1, 2], [2, 3]]


def test_knnpbi_per_pairing():
    expected = [
        [NAN, 0, 15, 20, 5],
        [12, NAN, -15, -11, 25],
        [-1, -4, NAN, -8, -57.5],
        [-16, -5, -17, NAN, NAN],
        [-15, -27.5, 32, NAN, NAN],
    ]
    np.testing.assert_allclose(knnpbi.knnpbi(RUMBLE), expected)


def test_knnpbi_never_uses_the_last_ranked_bot():
    """Changing E's scores (keeping it last by APS) leaves every other bot's KNNPBI unchanged."""
    changed = RUMBLE.copy()
    changed[4, :3] = [5, 5, 5]
    changed[:3, 4] = [95, 95, 95]
    np.testing.assert_allclose(knnpbi.knnpbi(changed)[:4, :3], knnpbi.knnpbi(RUMBLE)[:4, :3])


@pytest.mark.parametrize("n, above", [(5, 2), (100, 5), (1194, 18), (1200, 18)])
def test_knnpbi_takes_ceil_sqrt_n_over_2_above_and_one_fewer_below(n, above):
    """h = ceil(sqrt(N)/2): 1194 bots give 18 above and 17 below (the page's K = ceil(sqrt(N/2)) would be 25)."""
    strength = np.linspace(1, 0, n)
    d = 100 / (1 + np.exp(strength[None, :] - strength[:, None]))
    np.fill_diagonal(d, NAN)
    middle = n // 2
    below = list(range(middle + 1, middle + above))  # h − 1 of them
    assert knnpbi.neighbourhoods(d)[middle] == list(range(middle - above, middle)) + below
    assert math.ceil(math.sqrt(n) / 2) == above


def test_every_method_ranks_the_small_rumble():
    """Schulze: A and B beat everyone below them; E→C (70) and C→D (62) give E > C > D (D-E unmet,
    p[E,D] = min(70, 62) = 62 > 0). Ranked Pairs locks the same. Copeland: A 4, B 3, C 1, E 1, D 0.
    Borda (missing as 50): A 300, B 244, C 167, D 98 + 50 = 148, E 95 + 50 = 145."""
    results = batch.rank_all(RUMBLE)
    assert set(results) == {"schulze", "ranked_pairs", "copeland", "borda", "batch_elo", "npp", "vote"}
    assert results["schulze"].ranks.tolist() == [1, 2, 4, 5, 3]
    assert results["ranked_pairs"].ranks.tolist() == [1, 2, 4, 5, 3]
    assert results["copeland"].ranks.tolist() == [1, 2, 3, 5, 3]
    assert results["borda"].scores.tolist() == [300, 244, 167, 148, 145]
    assert sorted(results["batch_elo"].ranks.tolist()) == [1, 2, 3, 4, 5]
    assert results["npp"].ranks.tolist() == [1, 2, 3, 5, 4]
    assert results["vote"].ranks.tolist() == [1, 2, 4, 4, 3]
    assert set(batch.PAIRING_METHODS) == {"knnpbi", "npp"}


def test_condorcet_cycle_ties_vote_and_anpp():
    """Rock-paper-scissors at 60:40: each bot gets one vote (Vote 50) and NPPs of 100 and 0 (ANPP 50)."""
    d = np.array([[NAN, 40, 60], [60, NAN, 40], [40, 60, NAN]])
    assert vote.scores(d).tolist() == [50.0, 50.0, 50.0]
    assert npp.scores(d).tolist() == [50.0, 50.0, 50.0]
    assert vote.rank(d).ranks.tolist() == npp.rank(d).ranks.tolist() == [1, 1, 1]


def test_batch_methods_load_neither_flask_nor_sqlite():
    code = (
        "import sys, rumble.rankings.batch\n"
        "bad = ('flask', 'sqlite3', 'sqlite_utils', 'rumble.store', 'rumble.web')\n"
        "print(','.join(m for m in bad if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


@pytest.mark.parametrize("n", [0, 1, 3])
def test_every_method_accepts_a_rumble_without_pairings(n):
    """A new rumble: every bot ties at rank 1, and nothing raises or warns."""
    d = np.full((n, n), NAN)
    for name, method in batch.METHODS.items():
        assert method(d).ranks.tolist() == [1] * n, name
    assert np.isnan(knnpbi.knnpbi(d)).all()
