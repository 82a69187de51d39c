"""One battle's rating step, compiled: both bots rated over all their live pairings, in place.

RoboRumble Elo, Glicko-1 and Glicko-2 each sum one term per live pairing of a bot (seed 004's
all-pairings method), so one battle means two passes over a 1,200-bot field: some 2,400 games,
each with three exponentials. Written with numpy that was about sixty array operations per
battle, whose call overhead dominated both the upload and the rebuild. Here the step is one
compiled call (``step``) of three parts:

1. ``gather`` (compiled with numba): one vectorised pass over the field for every bot's
   g-factors as an opponent (its deviations grown for the time since its own last update), then
   one pass over A's pairings and one over B's that lay out each live game's score, g-factors
   and three exponents;
2. the exponentials of all the exponents, in compiled code (``rumble.ratings.exp``: plain
   arithmetic, which the compiler vectorises, unlike a call to the C library's ``exp``);
3. ``finish`` (compiled): each game's terms summed per bot in position order, then Glicko's and
   Glicko-2's combine steps, Rank Points and XonStat Elo, written into the field's table.

Every formula is the pure modules' own (``elo.exponent``, ``glicko.decay``/``opponent_g``/
``exponent``/``combine``, ``glicko2.inactivity``/``opponent_g``/``exponent``/``combine_values``,
``glicko_common.terms``, ``rank_points.update``, ``xonstat.update``), written once for floats
and arrays and marked ``register_jitable`` so that numba compiles them here (``decayed`` and
``inactive`` are ``decay`` and ``inactivity`` without their check for a negative time, which
this step never passes). Compiled with numpy's error model (no ZeroDivisionError checks, which
would stop the loops from vectorising: every battle's two bots have at least each other as a
live pairing) and with two of LLVM's fast-math licences, reciprocals for divisions by constants
and fused multiply-adds, plus reassociation in ``finish``'s sums; none of them touches NaN or
infinity handling.

The games are laid out in position (bot-id) order, exponentiated and summed by one compiled
function, ``step``, which the upload path and the rebuild's replay both call: the two agree bit for
bit by construction. Against the pure modules' numpy versions, which sum in another order and take
numpy's exp (within an ulp of this one), the results agree to rounding
(tests/ratings/test_all_pairings.py). "The same compiled function" means the same machine and
build: LLVM's vector code for the sums follows the CPU's instruction set, so a log moved to another
machine rebuilds to values equal in all but the last bits, and online and rebuild agree bit for
bit there again.

Compiled code is cached next to this file (numba's ``cache=True``): a worker or a rebuild
compiles once per installation, not once per process.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rumble.ratings import elo, glicko, glicko2, rank_points, xonstat
from rumble.ratings.columns import ROW
from rumble.ratings.exp import exp
from rumble.ratings.glicko_common import terms

# Rows of a field's value table (rumble.ratings.online.Field.table), as the declaration lays them out
# (rumble.ratings.columns.ROWS): this step's methods first, then the update time, so a method added
# with a step of its own comes after them and never moves these numbers (numba's cache, which the
# compiled code is read from, watches this file only).
ELO, GLICKO, GLICKO_RD, GLICKO2, GLICKO2_RD, GLICKO2_VOLATILITY, RANK_POINTS, XONSTAT, RATED_AT = (
    ROW[name]
    for name in (
        "elo",
        "glicko",
        "glicko_rd",
        "glicko2",
        "glicko2_rd",
        "glicko2_volatility",
        "rank_points",
        "xonstat",
        "rated_at",
    )
)
VALUES = RATED_AT + 1  # the rows this step writes: its methods' values and the update time
# Rows of the work array: per game, the score, the two g-factors, then the three exponents
# (exponentials after step 2).
SCORE, G1, G2, X_ELO, X_GLICKO, X_GLICKO2 = range(6)
# and, in the first n columns of two more rows, every bot's g-factors as an opponent now.
OPPONENT_G1, OPPONENT_G2 = 6, 7
WORK_ROWS = 8


@njit(cache=True, error_model="numpy", fastmath={"arcp", "contract"})
def _elapsed(now: float, rated_at: float) -> float:
    """Seconds since a bot's last update: 0 if never rated (NaN), never negative (a clock stepped back)."""
    elapsed = now - rated_at
    return elapsed if elapsed > 0.0 else 0.0


@njit(cache=True, error_model="numpy", fastmath={"arcp", "contract"})
def _deviations(table: np.ndarray, i: int, now: float) -> tuple[float, float]:
    """Bot i's Glicko RD and Glicko-2 RD, grown for the time since its last update."""
    elapsed = _elapsed(now, table[RATED_AT, i])
    rd1 = glicko.decayed(table[GLICKO_RD, i], glicko.periods(elapsed))
    rd2 = glicko2.inactive(table[GLICKO2_RD, i], table[GLICKO2_VOLATILITY, i], glicko2.whole_days(elapsed))
    return rd1, rd2


@njit(cache=True, error_model="numpy", fastmath={"arcp", "contract"})
def _opponent_factors(table: np.ndarray, n: int, now: float, work: np.ndarray) -> None:
    """Every bot's g-factors as an opponent now (its deviations grown since its last update).

    One branch-free pass over the field, which the compiler vectorises; cheaper than picking out
    the live opponents first.
    """
    for j in range(n):
        rd1, rd2 = _deviations(table, j, now)
        work[OPPONENT_G1, j] = glicko.opponent_g(rd1)
        work[OPPONENT_G2, j] = glicko2.opponent_g(rd2)


@njit(cache=True, error_model="numpy", fastmath={"arcp", "contract"})
def gather(
    aps: np.ndarray, active: np.ndarray, table: np.ndarray, n: int, a: int, b: int, now: float, work: np.ndarray
) -> tuple[int, int]:
    """Lay out the games of A's live pairings, then B's, in ``work``; return (A's count, total).

    ``aps[i, j]``: bot i's pairing APS against j as a fraction (NaN: never met); ``active``: who
    counts; ``table``: every bot's values before the battle; ``n``: bots in use; ``now``: the
    battle's time in seconds; ``work``: at least WORK_ROWS × 2n. Both bots are rated over their
    pairings after the battle (already in ``aps``), each opponent's deviations grown for the time
    since its own last update, from the values as they stood before the battle.
    """
    _opponent_factors(table, n, now, work)
    at = 0
    count_a = 0
    for k in range(2):
        i = a if k == 0 else b
        for j in range(n):
            score = aps[i, j]
            if active[j] and score == score:  # False for NaN: never met
                g1, g2 = work[OPPONENT_G1, j], work[OPPONENT_G2, j]
                work[SCORE, at] = score
                work[G1, at] = g1
                work[G2, at] = g2
                work[X_ELO, at] = elo.exponent(table[ELO, i], table[ELO, j])
                work[X_GLICKO, at] = glicko.exponent(table[GLICKO, i], table[GLICKO, j], g1)
                work[X_GLICKO2, at] = glicko2.exponent(table[GLICKO2, i], table[GLICKO2, j], g2)
                at += 1
        if k == 0:
            count_a = at
    return count_a, at


@njit(cache=True, error_model="numpy", fastmath={"arcp", "contract", "reassoc"})
def finish(
    table: np.ndarray,
    xonstat_battles: np.ndarray,
    a: int,
    b: int,
    now: float,
    work: np.ndarray,
    count_a: int,
    total: int,
    share_a: float,
    tau: float,
    upset_bonus: float,
) -> None:
    """Sum each bot's games (``work`` after the exponentials), update every rating and write both bots' new values."""
    new = np.empty((2, VALUES))
    for k in range(2):
        i = a if k == 0 else b
        start, stop = (0, count_a) if k == 0 else (count_a, total)
        elo_sum = g1_variance = g1_improvement = g2_variance = g2_improvement = 0.0
        for at in range(start, stop):
            score = work[SCORE, at]
            elo_sum += score - 1.0 / (1.0 + work[X_ELO, at])
            variance, improvement = terms(work[G1, at], 1.0 / (1.0 + work[X_GLICKO, at]), score)
            g1_variance += variance
            g1_improvement += improvement
            variance, improvement = terms(work[G2, at], 1.0 / (1.0 + work[X_GLICKO2, at]), score)
            g2_variance += variance
            g2_improvement += improvement
        rd1, rd2 = _deviations(table, i, now)
        new[k, ELO] = table[ELO, i] + elo.WEIGHT * elo_sum
        new[k, GLICKO], new[k, GLICKO_RD] = glicko.combine(table[GLICKO, i], rd1, g1_variance, g1_improvement)
        new[k, GLICKO2], new[k, GLICKO2_RD], new[k, GLICKO2_VOLATILITY] = glicko2.combine_values(
            table[GLICKO2, i], rd2, table[GLICKO2_VOLATILITY, i], g2_variance, g2_improvement, tau
        )
    new[0, XONSTAT], new[1, XONSTAT] = xonstat.update(
        table[XONSTAT, a], table[XONSTAT, b], xonstat_battles[a], xonstat_battles[b], share_a, 1.0
    )
    for k in range(2):
        i, other, share = (a, b, share_a) if k == 0 else (b, a, 1.0 - share_a)
        new[k, RANK_POINTS] = rank_points.update(
            table[RANK_POINTS, i],
            new[k, GLICKO2],
            new[k, GLICKO2_RD],
            share,
            table[GLICKO2, i],
            table[GLICKO2, other],
            upset_bonus,
        )
        new[k, RATED_AT] = now
    for k in range(2):
        i = a if k == 0 else b
        table[:VALUES, i] = new[k]
        xonstat_battles[i] += 1


@njit(cache=True)
def step(
    aps: np.ndarray,
    active: np.ndarray,
    table: np.ndarray,
    xonstat_battles: np.ndarray,
    n: int,
    a: int,
    b: int,
    share_a: float,
    now: float,
    work: np.ndarray,
    tau: float,
    upset_bonus: float,
) -> None:
    """``gather``, the exponentials of the three exponent rows, ``finish``: the whole step in one
    compiled call, which the upload path (``rate_pair``) and the rebuild's replay both make."""
    count_a, total = gather(aps, active, table, n, a, b, now, work)
    for row in range(X_ELO, X_GLICKO2 + 1):
        for at in range(total):
            work[row, at] = exp(work[row, at])
    finish(table, xonstat_battles, a, b, now, work, count_a, total, share_a, tau, upset_bonus)


def rate_pair(
    aps: np.ndarray,
    active: np.ndarray,
    table: np.ndarray,
    xonstat_battles: np.ndarray,
    n: int,
    a: int,
    b: int,
    share_a: float,
    now: float,
    work: np.ndarray,
    tau: float = glicko2.TAU,
    upset_bonus: float = rank_points.UPSET_BONUS,
) -> None:
    """Rate the battle of the bots at positions ``a`` and ``b`` (A's score share ``share_a``), in place.

    ``table`` and ``xonstat_battles`` gain both bots' new values; ``work`` is scratch space of at
    least WORK_ROWS × 2n (see ``gather``).
    """
    step(aps, active, table, xonstat_battles, n, a, b, share_a, now, work, tau, upset_bonus)
