"""Is the new version better than the old one? A sequential probability ratio test (SPRT) on the
per-opponent APS differences of two versions of one bot over their common opponents.

Model: the differences d_i = APS_new,i − APS_old,i (one per common opponent, n of them) are normal
with mean μ and a variance σ² estimated from the data (their sample variance s², which holds both
the battle noise and how differently the versions fare against different opponents). The mean d̄
then has information I = n / s² (one over its squared standard error).

Two one-sided tests, each Wald's SPRT (Wald 1945, "Sequential tests of statistical hypotheses") of
a normal mean with known variance, written in information time as fishtest's normalized SPRT is:

- better: H0 μ = 0 against H1 μ = +δ, log-likelihood ratio LLR+ = δ·I·(d̄ − δ/2);
- worse (the mirror): H0 μ = 0 against H1 μ = −δ, LLR− = δ·I·(−d̄ − δ/2);

with Wald's bounds A = ln((1 − β)/α) and B = ln(β/(1 − α)), δ = 1 APS point and α = β = 0.05 by
default (A = +2.944, B = −2.944). Verdict: *better* when LLR+ ≥ A, *worse* when LLR− ≥ A, *no
difference* (neither is δ better nor δ worse: both tests accepted H0) when both are ≤ B, else *not
yet*. Fewer than MIN_OPPONENTS common opponents is always *not yet*: s² from a handful of values is
too rough to plug in.

"About how many more battles": each LLR moves like a Brownian motion in I with drift δ(±d̄ − δ/2)
and variance δ² per unit of I. Wald's approximations (no overshoot) give the expected I to leave
(B, A) from the current LLR: E = (P_A·a + (1 − P_A)·b)/m, a = A − LLR, b = B − LLR, m the drift,
P_A = (1 − e^{θb})/(e^{θa} − e^{θb}) with θ = −2m/δ², and −a·b/δ² when m = 0. That information is
turned into battles at the rate seen so far, battles/I, the battles being both versions' battles
over the common opponents (more battles of either version add information; best shared evenly). It assumes the current d̄ is the
truth and that more battles keep adding information as they did, which stops being true once every
opponent is met and the spread between opponents dominates s²: read it as an order of magnitude.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DELTA = 1.0  # APS points: the smallest improvement worth a verdict (H1)
ALPHA = 0.05  # P(verdict "better" | no improvement); the same for "worse"
BETA = 0.05  # P(no verdict "better" | an improvement of DELTA)
MIN_OPPONENTS = 10  # below this the sample variance is too rough to stand in for σ²
VARIANCE_FLOOR = 1e-6  # APS points²: identical differences still give a finite information
EXPONENT_CAP = 700.0  # math.exp overflows past about 709


@dataclass(frozen=True)
class Outcome:
    """The test's state: its verdict, the figures behind it and the battles it may still need."""

    verdict: str  # "better", "worse", "no difference" or "not yet"
    opponents: int
    battles: int
    mean: float | None
    variance: float | None
    information: float | None
    llr_better: float | None
    llr_worse: float | None
    upper: float
    lower: float
    delta: float
    alpha: float
    beta: float
    more_battles: int | None  # about how many more battles to a verdict; None once decided or unknown


def bounds(alpha: float = ALPHA, beta: float = BETA) -> tuple[float, float]:
    """Wald's bounds (A, B) = (ln((1 − β)/α), ln(β/(1 − α)))."""
    return math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))


def llr(mean: float, information: float, delta: float) -> float:
    """Log-likelihood ratio of H1 μ = δ against H0 μ = 0 for a normal mean: δ·I·(mean − δ/2)."""
    return delta * information * (mean - delta / 2)


def expected_information(start: float, upper: float, lower: float, drift: float, delta: float) -> float:
    """Wald's expected information to leave (lower, upper) from ``start`` with ``drift`` per unit."""
    a, b, v = upper - start, lower - start, delta * delta
    if a <= 0 or b >= 0:
        return 0.0
    theta = -2.0 * drift / v
    if abs(theta) * (a - b) < 1e-4:  # the exact formula cancels catastrophically near no drift:
        return -a * b / v * (1.0 + theta * (a + b) / 3.0)  # its series, to first order in θ
    ea, eb = math.exp(min(theta * a, EXPONENT_CAP)), math.exp(min(theta * b, EXPONENT_CAP))
    p_upper = (1.0 - eb) / (ea - eb)
    return (p_upper * a + (1.0 - p_upper) * b) / drift


def verdict_of(llr_better: float, llr_worse: float, upper: float, lower: float) -> str:
    """better, worse, no difference or not yet, from the two log-likelihood ratios and the bounds."""
    if llr_better >= upper:
        return "better"
    if llr_worse >= upper:
        return "worse"
    if llr_better <= lower and llr_worse <= lower:
        return "no difference"
    return "not yet"


def version_test(
    diffs: list[float], battles: int, delta: float = DELTA, alpha: float = ALPHA, beta: float = BETA
) -> Outcome:
    """The test over per-opponent differences ``diffs`` (new − old), ``battles`` being both versions'
    battles over the common opponents so far (to turn information into battles)."""
    upper, lower = bounds(alpha, beta)
    n = len(diffs)
    if n < MIN_OPPONENTS:
        return Outcome("not yet", n, battles, None, None, None, None, None, upper, lower, delta, alpha, beta, None)
    mean = sum(diffs) / n
    variance = max(sum((d - mean) ** 2 for d in diffs) / (n - 1), VARIANCE_FLOOR)
    information = n / variance
    plus, minus = llr(mean, information, delta), llr(-mean, information, delta)
    verdict = verdict_of(plus, minus, upper, lower)
    more = None
    if verdict == "not yet" and battles > 0:
        need = remaining_information(plus, minus, mean, upper, lower, delta)
        more = math.ceil(need * battles / information) if math.isfinite(need) else None
    return Outcome(
        verdict, n, battles, mean, variance, information, plus, minus, upper, lower, delta, alpha, beta, more
    )


def remaining_information(plus: float, minus: float, mean: float, upper: float, lower: float, delta: float) -> float:
    """Expected further information to a verdict: the test heading for its upper bound if one is
    (positive drift), else the later of the two to finish."""
    drift_plus, drift_minus = delta * (mean - delta / 2), delta * (-mean - delta / 2)
    e_plus = expected_information(plus, upper, lower, drift_plus, delta)
    e_minus = expected_information(minus, upper, lower, drift_minus, delta)
    if plus <= lower:
        return e_minus
    if minus <= lower:
        return e_plus
    if drift_plus > 0:
        return e_plus
    if drift_minus > 0:
        return e_minus
    return max(e_plus, e_minus)
