"""The rumble's core scores: battle percentages, pairing averages and a bot's summary.

Definitions (the score-explanation page says the same in words):

- battle score % = 100·s1/(s1+s2), or 50 when both scores are 0 (LiteRumble, RRServer);
- battle survival % = 100·firsts/rounds, rounds being the rumble's rounds (LiteRumble). The two
  sides need not add up to 100: Robocode may count a round as a first for both robots (the real
  client uploads 35-round battles with 30 + 6 firsts), and in melee most rounds are no one's first
  among a given pair;
- pairing APS and pairing survival: the true running means of those per-battle values (RRServer's
  exact mean, not LiteRumble's 5000-battle cap), with Welford's running variance of the score %;
- a bot's APS, Survival: means over its *live* pairings (the opponent is an active participant);
- a pairing is won when its APS is above 50, lost below 50 and drawn at exactly 50; PL = wins −
  losses (a draw is neither, as in Copeland's rule) and PWIN = 100·wins/pairings, the peers'
  definition: LiteRumble's PWIN = 50·PL_L/pairings + 50 with PL_L = Σ (+1 above 50, else −1) is
  the share of pairings *above* 50 (an exact 50 is not a win), as RRServer's "pairs won" is, so
  PWIN compares across servers; the draws stay visible in the won/drawn/lost columns;
- APS confidence interval: LiteRumble's 2026 definition, 1.96·sqrt(Σ Var_p/(n_p−1) / (live·k)) over
  the k live pairings with at least 2 battles, Var_p the population variance of pairing p.

A bot's summary is kept as sums over its live pairings so that an upload changes it in O(1). The
sums are exact: every float is an integer multiple of 2^-1074, so each pairing value is added as
that integer, and the mean is one correctly rounded division of the exact sum. The summary thus
depends only on which pairings are live and on their values, never on the order of uploads,
retirements and revivals (a float sum would), which is what lets a rebuild equal the online tables
bit for bit; and APS is the correctly rounded mean of the pairing APS, to the last bit.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numba.extending import register_jitable

EXACT_UNIT = 2**1074  # 1/2^-1074, the smallest positive float: every float times this is an integer
EXACT_SHIFT = 1075  # 1074 + 1: a denominator 2^k has bit_length k + 1
Z95 = 1.96


def exact(value: float) -> int:
    """``value`` as an exact integer multiple of 2^-1074."""
    numerator, denominator = value.as_integer_ratio()  # the denominator is a power of two, 2^k
    return numerator << (EXACT_SHIFT - denominator.bit_length())  # numerator·2^(1074 − k)


@register_jitable
def battle_percent(score: int, other: int) -> float:
    """A side's share of the battle's total score, in percent; 50 when neither scored."""
    total = score + other
    return 50.0 if total == 0 else 100.0 * score / total


@register_jitable
def survival_percent(firsts: int, rounds: int) -> float:
    """Rounds finished first, as a percentage of the rumble's rounds."""
    return 100.0 * firsts / rounds


@dataclass(frozen=True, slots=True)
class Pairing:
    """One bot's running averages against one opponent."""

    battles: int = 0
    aps: float = 0.0  # mean score %
    aps_m2: float = 0.0  # Welford's sum of squared deviations of score %
    survival: float = 0.0  # mean survival %
    last_battle: str = ""  # receive time of the latest battle


@register_jitable
def running_means(
    battles: int, aps: float, aps_m2: float, survival: float, percent: float, survival_now: float
) -> tuple[float, float, float]:
    """(APS, M2, survival) after battle number ``battles`` (Welford's update of the mean and of M2).

    Compiled as well (numba, without fast-math: the same IEEE operations) for the rebuild's replay.
    """
    delta = percent - aps
    new_aps = aps + delta / battles
    return new_aps, aps_m2 + delta * (percent - new_aps), survival + (survival_now - survival) / battles


def add_battle(pairing: Pairing, percent: float, survival: float, when: str) -> Pairing:
    """The pairing after one more battle (Welford's update of the mean and of M2)."""
    n = pairing.battles + 1
    aps, aps_m2, survival = running_means(n, pairing.aps, pairing.aps_m2, pairing.survival, percent, survival)
    return Pairing(battles=n, aps=aps, aps_m2=aps_m2, survival=survival, last_battle=max(pairing.last_battle, when))


def score_battle(
    first: Pairing | None,
    second: Pairing | None,
    scores: tuple[int, int],
    firsts: tuple[int, int],
    rounds: int,
    when: str,
) -> tuple[Pairing, Pairing]:
    """Both sides' pairings after one battle: (first against second, second against first)."""
    s1, s2 = scores
    return (
        add_battle(first or Pairing(), battle_percent(s1, s2), survival_percent(firsts[0], rounds), when),
        add_battle(second or Pairing(), battle_percent(s2, s1), survival_percent(firsts[1], rounds), when),
    )


def pairing_variance(pairing: Pairing) -> float:
    """Population variance of the pairing's battle score %."""
    return pairing.aps_m2 / pairing.battles if pairing.battles else 0.0


def pairing_ci(pairing: Pairing) -> float | None:
    """Half-width of the 95 % interval of the pairing APS; None below 2 battles (LiteRumble 2026)."""
    if pairing.battles < 2:
        return None
    return Z95 * math.sqrt(pairing_variance(pairing) / (pairing.battles - 1))


@dataclass(frozen=True)
class Totals:
    """Exact sums over a bot's live pairings; ``summary()`` turns them into the table's columns."""

    pairings: int = 0
    battles: int = 0
    aps_exact: int = 0  # Σ pairing APS, in units of 2^-1074
    survival_exact: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    ci_count: int = 0  # live pairings with at least 2 battles
    ci_exact: int = 0  # Σ Var_p/(n_p − 1) over them, in units of 2^-1074

    def __add__(self, other: Totals) -> Totals:
        return Totals(*map(operator.add, self.astuple(), other.astuple()))

    def __sub__(self, other: Totals) -> Totals:
        return Totals(*map(operator.sub, self.astuple(), other.astuple()))

    def astuple(self) -> tuple[int, ...]:
        return (
            self.pairings,
            self.battles,
            self.aps_exact,
            self.survival_exact,
            self.wins,
            self.draws,
            self.losses,
            self.ci_count,
            self.ci_exact,
        )


def contribution(pairing: Pairing | None) -> Totals:
    """What one live pairing adds to its bot's totals (nothing for a pairing not yet played)."""
    if pairing is None or pairing.battles == 0:
        return Totals()
    return Totals(*_contribution_values(pairing))


def replace_contribution(totals: Totals, old: Pairing | None, new: Pairing | None) -> Totals:
    """``totals - contribution(old) + contribution(new)`` without the two intermediate Totals (a
    bot's totals after a battle of one of its pairings; every upload computes two)."""
    values = totals.astuple()
    if old is not None and old.battles:
        values = tuple(map(operator.sub, values, _contribution_values(old)))
    if new is not None and new.battles:
        values = tuple(map(operator.add, values, _contribution_values(new)))
    return Totals(*values)


def _contribution_values(pairing: Pairing) -> tuple[int, ...]:
    """``contribution`` of a played pairing as a tuple in ``Totals`` field order."""
    has_ci = pairing.battles >= 2
    return (
        1,
        pairing.battles,
        exact(pairing.aps),
        exact(pairing.survival),
        int(pairing.aps > 50.0),
        int(pairing.aps == 50.0),
        int(pairing.aps < 50.0),
        int(has_ci),
        exact(pairing_variance(pairing) / (pairing.battles - 1)) if has_ci else 0,
    )


@dataclass(frozen=True)
class Summary:
    """A bot's row in the rankings table."""

    aps: float | None
    aps_ci: float | None
    survival: float | None
    pl: int
    pwin: float | None
    pairings: int
    battles: int
    wins: int
    draws: int
    losses: int


def totals_of(pairings: Iterable[Pairing]) -> Totals:
    """A bot's totals over the given live pairings (what a rebuild computes from scratch).

    The same integers as adding up ``contribution`` of each, summed column by column without a
    ``Totals`` per pairing (a rebuild does this for every pairing of the rumble).
    """
    columns = zip(*(_contribution_values(p) for p in pairings if p is not None and p.battles))
    return Totals(*(sum(column) for column in columns))  # no pairings: no columns, Totals()


_SPLIT = 26  # a signed 53-bit significand summed as its high and low parts: no int64 overflow for 2^30 terms


def exact_sums(groups: np.ndarray, values: np.ndarray, count: int) -> list[int]:
    """For each group g < ``count``, Σ ``exact(v)`` over the finite float64 ``values`` whose group is
    g: the same integers as summing ``exact`` one by one, in numpy (a rebuild sums millions).

    A float is ±M·2^(E−1075) (E its biased exponent, M its significand with the hidden bit when
    E > 0; IEEE 754), so exact(v) = ±M·2^(max(E, 1) − 1): the significands are summed exactly in
    int64 per (group, exponent), then shifted and added as Python integers.
    """
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    biased = (bits >> 52) & 0x7FF
    significand = bits & ((1 << 52) - 1)
    significand = np.where(biased > 0, significand | (1 << 52), significand)
    signed = np.where(bits < 0, -significand, significand)
    key = np.asarray(groups, dtype=np.int64) * 2047 + (np.maximum(biased, 1) - 1)
    keys, inverse = np.unique(key, return_inverse=True)
    high = np.zeros(len(keys), dtype=np.int64)
    low = np.zeros(len(keys), dtype=np.int64)
    np.add.at(high, inverse, signed >> _SPLIT)  # floor: signed = high·2^26 + low, also when negative
    np.add.at(low, inverse, signed & ((1 << _SPLIT) - 1))
    sums = [0] * count
    for k, h, lo in zip(keys.tolist(), high.tolist(), low.tolist()):
        group, shift = divmod(k, 2047)
        sums[group] += ((h << _SPLIT) + lo) << shift
    return sums


def totals_by_group(
    groups: np.ndarray, battles: np.ndarray, aps: np.ndarray, aps_m2: np.ndarray, survival: np.ndarray, count: int
) -> list[Totals]:
    """``totals_of`` for ``count`` bots at once, from played pairings as arrays (each one's bot in
    ``groups``): the same integers, with ``pairing_variance``'s and ``contribution``'s operations."""
    has_ci = battles >= 2
    per_pairing_ci = aps_m2[has_ci] / battles[has_ci] / (battles[has_ci] - 1)  # pairing_variance / (n − 1)

    def counts(mask: np.ndarray) -> list[int]:
        return np.bincount(groups[mask], minlength=count).tolist()

    columns = (
        np.bincount(groups, minlength=count).tolist(),
        _int_sums(groups, battles, count),
        exact_sums(groups, aps, count),
        exact_sums(groups, survival, count),
        counts(aps > 50.0),
        counts(aps == 50.0),
        counts(aps < 50.0),
        counts(has_ci),
        exact_sums(groups[has_ci], per_pairing_ci, count),
    )
    return [Totals(*values) for values in zip(*columns)]


def _int_sums(groups: np.ndarray, values: np.ndarray, count: int) -> list[int]:
    sums = np.zeros(count, dtype=np.int64)
    np.add.at(sums, groups, values)
    return sums.tolist()


def summary(totals: Totals) -> Summary:
    """The table columns from the exact totals (each a single correctly rounded division)."""
    n = totals.pairings
    aps_ci = None
    if totals.ci_count:
        aps_ci = Z95 * math.sqrt(totals.ci_exact / (EXACT_UNIT * n * totals.ci_count))
    return Summary(
        aps=totals.aps_exact / (EXACT_UNIT * n) if n else None,
        aps_ci=aps_ci,
        survival=totals.survival_exact / (EXACT_UNIT * n) if n else None,
        pl=totals.wins - totals.losses,
        pwin=100.0 * totals.wins / n if n else None,
        pairings=n,
        battles=totals.battles,
        wins=totals.wins,
        draws=totals.draws,
        losses=totals.losses,
    )
