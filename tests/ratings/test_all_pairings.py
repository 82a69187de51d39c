"""The compiled rating step against the pure modules it is built from.

``all_pairings.rate_pair`` composes the pure modules' formulas in one compiled loop; here the same
battle is rated a second, independent way: for each bot its live pairings are picked out with
numpy, its own and each opponent's deviations are grown with ``glicko.decay`` and
``glicko2.inactivity``, and ``elo.delta``, ``glicko.update``, ``glicko2.update``,
``rank_points.update`` and ``xonstat.update`` are called as documented (each tested on the
published examples in its own test file). The two differ only in summation order, so they agree
to rounding (relative 1e-12).
"""

from __future__ import annotations

import numpy as np
import pytest

from rumble.ratings import all_pairings, elo, glicko, glicko2, rank_points, xonstat
from rumble.ratings.exp import exp

DAY = 86_400.0


def random_field(rng: np.random.Generator, n: int, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A field of n bots: some inactive, some pairings never played, some bots never rated or rated 'in the future'."""
    aps = rng.random((n, n))
    aps[rng.random((n, n)) < 0.3] = np.nan
    np.fill_diagonal(aps, np.nan)
    active = rng.random(n) < 0.85
    table = np.empty((9, n))
    table[all_pairings.ELO] = 1600 + rng.normal(0, 250, n)
    table[all_pairings.GLICKO] = 1500 + rng.normal(0, 250, n)
    table[all_pairings.GLICKO_RD] = rng.uniform(25, 350, n)
    table[all_pairings.GLICKO2] = 1500 + rng.normal(0, 250, n)
    table[all_pairings.GLICKO2_RD] = rng.uniform(30.4, 350, n)
    table[all_pairings.GLICKO2_VOLATILITY] = rng.uniform(0.04, 0.08, n)
    table[all_pairings.RANK_POINTS] = rng.uniform(0, 10_000, n)
    table[all_pairings.XONSTAT] = 1500 + rng.normal(0, 200, n)
    table[all_pairings.RATED_AT] = now - rng.uniform(-DAY, 40 * DAY, n)  # some a day ahead: a clock stepped back
    table[all_pairings.RATED_AT, rng.random(n) < 0.1] = np.nan  # never rated
    battles = rng.integers(0, 60, n)
    return aps, active, table, battles


def reference(aps, active, table, battles, a: int, b: int, share_a: float, now: float) -> dict[int, list[float]]:
    """Both bots' new values (table rows) from the pure modules' documented functions."""

    def elapsed(i: int) -> float:
        return 0.0 if np.isnan(table[all_pairings.RATED_AT, i]) else max(now - table[all_pairings.RATED_AT, i], 0.0)

    def rd1(i: int) -> float:
        return glicko.decay(table[all_pairings.GLICKO_RD, i], glicko.periods(elapsed(i)))

    def rd2(i: int) -> float:
        return glicko2.inactivity(
            table[all_pairings.GLICKO2_RD, i], table[all_pairings.GLICKO2_VOLATILITY, i], glicko2.whole_days(elapsed(i))
        )

    result = {}
    for i, other, share in ((a, b, share_a), (b, a, 1.0 - share_a)):
        live = [j for j in range(len(active)) if active[j] and not np.isnan(aps[i, j])]
        scores = aps[i, live]
        new_elo = table[all_pairings.ELO, i] + elo.delta(
            table[all_pairings.ELO, i], table[all_pairings.ELO, live], scores
        )
        g_r, g_rd = glicko.update(
            table[all_pairings.GLICKO, i], rd1(i), table[all_pairings.GLICKO, live], [rd1(j) for j in live], scores
        )
        g2 = glicko2.update(
            table[all_pairings.GLICKO2, i],
            rd2(i),
            table[all_pairings.GLICKO2_VOLATILITY, i],
            table[all_pairings.GLICKO2, live],
            [rd2(j) for j in live],
            scores,
        )
        rp = rank_points.update(
            table[all_pairings.RANK_POINTS, i],
            g2.r,
            g2.rd,
            share,
            table[all_pairings.GLICKO2, i],
            table[all_pairings.GLICKO2, other],
        )
        result[i] = [new_elo, g_r, g_rd, g2.r, g2.rd, g2.sigma, rp, np.nan, now]
    xo_a, xo_b = xonstat.update(
        table[all_pairings.XONSTAT, a], table[all_pairings.XONSTAT, b], int(battles[a]), int(battles[b]), share_a
    )
    result[a][all_pairings.XONSTAT], result[b][all_pairings.XONSTAT] = xo_a, xo_b
    return result


@pytest.mark.parametrize("seed", range(6))
def test_compiled_step_equals_the_pure_modules(seed):
    rng = np.random.default_rng(seed)
    n, now = 60, 1.8e9
    aps, active, table, battles = random_field(rng, n, now)
    for _ in range(20):  # several battles in a row, each from the state the last one left
        a, b = (int(x) for x in rng.choice(n, 2, replace=False))
        active[[a, b]] = True
        aps[a, b], aps[b, a] = rng.random(), rng.random()
        share_a = float(rng.random())
        expected = reference(aps, active, table, battles, a, b, share_a, now)
        before = table.copy()
        counts = battles.copy()
        all_pairings.rate_pair(
            aps, active, table, battles, n, a, b, share_a, now, np.empty((all_pairings.WORK_ROWS, 2 * n))
        )
        for i in (a, b):
            assert table[:, i] == pytest.approx(expected[i], rel=1e-12, abs=1e-9), (seed, i)
        others = [j for j in range(n) if j not in (a, b)]
        assert np.array_equal(table[:, others], before[:, others], equal_nan=True)  # nobody else moves
        assert list(battles - counts) == [1 if j in (a, b) else 0 for j in range(n)]
        now += rng.uniform(0, 3 * DAY)


@pytest.mark.parametrize("seed", range(3))
def test_one_call_step_equals_gather_exp_and_finish_called_apart_bit_for_bit(seed):
    """``rate_pair`` (one compiled call, its exponentials in a loop the compiler vectorises)
    against its parts called from Python, with ``rumble.ratings.exp`` called on one value at a time
    between them: every value equal, bit for bit."""
    rng = np.random.default_rng(seed)
    n, now = 300, 1.8e9
    aps, active, table, battles = random_field(rng, n, now)
    one = (aps.copy(), active.copy(), table.copy(), battles.copy())
    work = np.empty((all_pairings.WORK_ROWS, 2 * n))
    for _ in range(200):
        a, b = (int(x) for x in rng.choice(n, 2, replace=False))
        share_a = float(rng.random())
        for field in (one, (aps, active, table, battles)):
            field[1][[a, b]] = True
        all_pairings.rate_pair(*one[:4], n, a, b, share_a, now, work)
        count_a, total = all_pairings.gather(aps, active, table, n, a, b, now, work)
        for row in range(all_pairings.X_ELO, all_pairings.X_GLICKO2 + 1):
            work[row, :total] = [exp(x) for x in work[row, :total].tolist()]
        all_pairings.finish(
            table, battles, a, b, now, work, count_a, total, share_a, glicko2.TAU, rank_points.UPSET_BONUS
        )
        now += rng.uniform(0, DAY)
    assert np.array_equal(one[2].view(np.int64), table.view(np.int64))
    assert np.array_equal(one[3], battles)
