"""The figures of the bot, pairing and comparison pages, pure: pairing rows, a paired interval, a verdict.

- Expected score of a pairing: RoboRumble Elo's E(A,B) (rumble.ratings.elo.expected_score) of the
  two bots' current Elo ratings, in percent.
- Problem-bot index (PBI): the pairing APS minus that expected score, as RRServer defined it
  (peers.md section 2, "ProblemBot Index = pct − expected"): negative where the bot does worse
  against an opponent than the ratings predict.
- Comparison of two bots over their common opponents: per opponent d = APS(A) − APS(B); the mean
  of d with a paired Student t-interval, mean ± t(0.975, n−1)·s/√n, s the sample standard deviation
  of the n differences. It treats the common opponents as a sample of the bots A and B could meet
  and ignores each pairing's own sampling error (LiteRumble's BotCompare shows the same kind of
  interval). The verdict names the better bot when the interval excludes 0, else "Tie".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import overload

from rumble.rankings.scores import Pairing, pairing_ci
from rumble.ratings import elo, glicko, glicko2

CONFIDENCE = 0.95


def pairing_figures(pairing: Pairing, rating: float | None, opponent_rating: float | None) -> dict:
    """A pairing's CI half-width, expected score (Elo, %) and PBI; None where a rating is missing."""
    expected = None
    if rating is not None and opponent_rating is not None:
        expected = 100.0 * float(elo.expected_score(rating, opponent_rating))
    return {
        "aps_ci": pairing_ci(pairing),
        "expected": expected,
        "pbi": None if expected is None else pairing.aps - expected,
    }


def sort_rows(rows: list[dict], order: str, keys: Iterable[str]) -> list[dict]:
    """``rows`` sorted by ``order`` (a key, ``-`` for descending); None last either way; KeyError if unknown."""
    key = order.lstrip("-")
    if key not in keys:
        raise KeyError(key)
    present = [r for r in rows if r.get(key) is not None]
    missing = [r for r in rows if r.get(key) is None]
    present.sort(key=lambda r: r[key], reverse=order.startswith("-"))
    return present + missing


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for aa in (
            m * (b - m) * x / ((qam + 2 * m) * (a + 2 * m)),
            -(a + m) * (qab + m) * x / ((a + 2 * m) * (qap + 2 * m)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0 or x >= 1.0:
        return max(0.0, min(1.0, x))
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The t with P(T <= t) = p (0.5 <= p < 1), by bisection on ``t_cdf``: no scipy needed for one number."""
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2.0


@dataclass(frozen=True)
class Interval:
    """The mean of n values with its two-sided CONFIDENCE interval (None below two values)."""

    n: int
    mean: float | None
    low: float | None
    high: float | None


def paired_interval(differences: list[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean of the paired differences ± t(1 − α/2, n − 1)·s/√n (the paired t-interval)."""
    n = len(differences)
    if n == 0:
        return Interval(0, None, None, None)
    mean = statistics.fmean(differences)
    if n < 2:
        return Interval(n, mean, None, None)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * statistics.stdev(differences) / math.sqrt(n)
    return Interval(n, mean, mean - half, mean + half)


def verdict(name_a: str, name_b: str, interval: Interval) -> str:
    """ "A +x (CI lo to hi)" for the bot ahead when the interval excludes 0, else "Tie" (as BotCompare)."""
    if interval.low is None or interval.high is None or interval.low <= 0.0 <= interval.high:
        return "Tie"
    assert interval.mean is not None  # set whenever low and high are
    if interval.low > 0.0:
        return f"{name_a} +{interval.mean:.2f} (CI {interval.low:.2f} to {interval.high:.2f})"
    return f"{name_b} +{-interval.mean:.2f} (CI {-interval.high:.2f} to {-interval.low:.2f})"


def win_probabilities(a: dict | None, b: dict | None) -> dict:
    """A's win probability against B, in percent, from each rating with both deviations where it has one.

    Glicko: seed 001's 1/(1 + 10^(−g(√(RD_A² + RD_B²))·(r_A − r_B)/400)). Glicko-2: the same
    expression over the Glicko-2 values, which are kept on the Glicko-1 scale (the Glicko-2
    paper's E with the combined phi is this formula). Elo: E(A,B) of RoboRumble Elo.
    """
    if a is None or b is None:
        return {"glicko": None, "glicko2": None, "elo": None}
    prob: Callable[..., float] = glicko.win_probability
    return {
        "glicko": 100.0 * prob(a["glicko"], a["glicko_rd"], b["glicko"], b["glicko_rd"]),
        "glicko2": 100.0 * prob(a["glicko2"], a["glicko2_rd"], b["glicko2"], b["glicko2_rd"]),
        "elo": 100.0 * float(elo.expected_score(a["elo"], b["elo"])),
    }


@overload
def deviations_now(ratings: dict, now: float | None) -> dict: ...
@overload
def deviations_now(ratings: None, now: float | None) -> None: ...
def deviations_now(ratings: dict | None, now: float | None) -> dict | None:
    """``ratings`` (a row with ``glicko_rd``, ``glicko2_rd``, ``glicko2_volatility`` and ``rated_at``,
    s since 1970) with both deviations grown for the bot's inactivity up to ``now``, as the next
    battle would grow them (seed 001's decay in real days, seed 000's in whole days); ``rated_at``
    is dropped. Unchanged when ``now`` is None or the bot was never rated."""
    if ratings is None:
        return None
    ratings = dict(ratings)
    rated_at = ratings.pop("rated_at", None)
    if now is None or rated_at is None or ratings.get("glicko_rd") is None or math.isnan(rated_at):
        return ratings
    elapsed = max(now - rated_at, 0.0)  # a clock stepped back grows nothing
    ratings["glicko_rd"] = glicko.decay(ratings["glicko_rd"], glicko.periods(elapsed))
    ratings["glicko2_rd"] = glicko2.inactivity(
        ratings["glicko2_rd"], ratings["glicko2_volatility"], glicko2.whole_days(elapsed)
    )
    return ratings
