"""Is the new version better than the old one? A sequential probability ratio test (SPRT) on the
per-opponent APS differences of two versions of one bot over their common opponents, with bounds
that allow for the variance being estimated and for the test being read after every opponent.

Model: the differences d_i = APS_new,i − APS_old,i (one per common opponent, n of them) are normal
with mean μ and a variance σ² estimated from the data (their sample variance s², which holds both
the battle noise and how differently the versions fare against different opponents). The mean d̄
then has information I = n / s² (one over its squared standard error).

Two one-sided tests, each Wald's SPRT (Wald 1945, "Sequential tests of statistical hypotheses") of
a normal mean, written in information time as fishtest's normalized SPRT is:

- better: H0 μ = 0 against H1 μ = +δ, log-likelihood ratio LLR+ = δ·I·(d̄ − δ/2);
- worse (the mirror): H0 μ = 0 against H1 μ = −δ, LLR− = δ·I·(−d̄ − δ/2);

δ = 1 APS point and α = β = 0.05 by default. Verdict: *better* when LLR+ ≥ A_n, *worse* when
LLR− ≥ A_n, *no difference* (neither is δ better nor δ worse) when both are ≤ B_n, else *not yet*;
fewer than MIN_OPPONENTS common opponents is always *not yet*.

The bounds (A_n, B_n), at n common opponents (ν = n − 1 degrees of freedom of s²):

1. With σ² known, e^{LLR+} is a nonnegative martingale with mean 1 when μ = 0, so by Ville's
   inequality (Ville 1939, "Étude critique de la notion de collectif") the chance that it *ever*
   reaches 1/α is at most α, however often it is read and whatever the other test does. Hence the
   limit bounds A = ln(1/α) and B = −ln(1/β) (±ln 20 = ±2.996), not Wald's ln((1 − β)/α) = 2.944:
   Wald's bound assumes the better test stops at its own lower bound, and this one goes on while
   the worse test is open. Likewise under μ = +δ, e^{−LLR+} is a martingale: a false "no difference"
   is at most β.
2. With s² for σ², LLR+ is the known-variance LLR divided by W = s²/σ², so it reaches a bound a when
   the known-variance one reaches a·W, which happens with chance at most e^{−aW} (1.). For a
   variance estimate with k degrees of freedom, kW follows χ²_k, and the χ² moment generating
   function E e^{−tχ²_k} = (1 + 2t)^{−k/2} (any textbook; e.g. Johnson, Kotz & Balakrishnan,
   "Continuous Univariate Distributions", vol. 1, ch. 18) gives the average chance
   E e^{−aW} = (1 + 2a/k)^{−k/2}; setting it to α gives a = (k/2)·((1/α)^{2/k} − 1).
3. Taken with k = ν, 2. holds the variance still for the whole test. But the test re-estimates s²
   at every opponent and stops at the first crossing, which catches the estimate at its low points.
   The allowance for that is k = ν/2 (the estimate's error counted twice):
   A_n = (ν/4)·((1/α)^{4/ν} − 1), B_n = −(ν/4)·((1/β)^{4/ν} − 1). This halving is a calibration, not a
   theorem, chosen by simulation (below, ``--scan``). A_n falls from 6.270 at 10 opponents to 4.175 at
   20, 3.394 at 50, 3.185 at 100 and 3.032 at 500, towards ln 20.

So what is true: with σ² known, a false "better" has chance at most α and a false "no difference" at
μ = ±δ at most β, however often the test is read (1.); with s² they are approximations, measured by
scripts/sim_confidence.py (default seed), the verdict read after every new common opponent from the
first, each run stopped at its first verdict, δ = 1, α = β = 0.05, 500 opponents:

    per-opponent spread (APS points)               2        3        5
    a. one normal difference per new opponent, 20,000 runs a setting:
       false "better" (true difference 0)     2.70 %   3.64 %   4.19 %
       "better" at +1 (power)                 97.9 %   97.5 %   96.2 %
    b. battles (12-point battle noise on top of the spread; one battle per opponent of the old
       version, then one of each version against the same opponent in turn, read after each pair,
       at most 40 rounds = 40,000 battles), 6,000 runs a setting:
       false "better"                         3.85 %   3.18 %   1.55 %
       "better" at +1                         97.7 %   98.2 %   99.3 %

False "better" in a. (20,000 runs a spread) for spreads 1.5, 2, 2.5, 3, 3.5, 4, 5, 6 and 8 points:
this test 1.84 to 4.59 % (the highest at spread 4); with k = ν instead of ν/2, up to 5.18 % (spread
3.5); Wald's ±ln 19 with the variance plugged in (no allowance), 4.22 to 6.79 %. With σ² known and
the test read continuously, the bound of 1. is nearly reached (the "no difference" verdict ends few
of the runs that would cross A_n later), so small spreads read after every battle (b.) come closest
to α: with a spread of 1 point, b. gives 4.51 % ± 0.41 (``--skip-differences --spreads 1 --runs 10000``).

The LLRs shown are the plain plug-in ones (δ·I·(d̄ − δ/2)); only the bounds carry the corrections.
The test assumes independent, roughly normal differences; a version that is much better against a
few opponents only is not that (identical differences get the variance VARIANCE_FLOOR).

"About how many more battles": each LLR moves like a Brownian motion in I with drift δ(±d̄ − δ/2)
and variance δ² per unit of I. Wald's approximations (no overshoot) give the expected I to leave
(B_n, A_n) from the current LLR: E = (P_A·a + (1 − P_A)·b)/m, a = A_n − LLR, b = B_n − LLR, m the
drift, P_A = (1 − e^{θb})/(e^{θa} − e^{θb}) with θ = −2m/δ², and −a·b/δ² when m = 0. That information
is turned into battles at the rate seen so far, battles/I, the battles being both versions' battles
over the common opponents (more battles of either version add information; best shared evenly). It
assumes the current d̄ is the truth, that the bounds stay where they are (they narrow while new
opponents come in, so it errs high then) and that more battles keep adding information as they did,
which stops being true once every opponent is met and the spread between opponents dominates s²:
read it as an order of magnitude.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DELTA = 1.0  # APS points: the smallest improvement worth a verdict (H1)
ALPHA = 0.05  # P(verdict "better" | no improvement); the same for "worse"
BETA = 0.05  # P(verdict "no difference" | an improvement of DELTA)
MIN_OPPONENTS = 10  # below this, always "not yet"
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
    upper: float  # A_n at these opponents (at MIN_OPPONENTS while there are fewer)
    lower: float  # B_n, likewise
    delta: float
    alpha: float
    beta: float
    more_battles: int | None  # about how many more battles to a verdict; None once decided or unknown


def limit_bounds(alpha: float = ALPHA, beta: float = BETA) -> tuple[float, float]:
    """The bounds with σ² known, by Ville's inequality: (ln(1/α), −ln(1/β))."""
    return -math.log(alpha), math.log(beta)


def allowance(level: float, freedom: float) -> float:
    """The bound a with (1 + 2a/k)^(−k/2) = e^(−level): a = (k/2)(e^(2·level/k) − 1), k = ``freedom``."""
    return freedom / 2 * math.expm1(2 * level / freedom)


def bounds(opponents: int, alpha: float = ALPHA, beta: float = BETA) -> tuple[float, float]:
    """(A_n, B_n) at ``opponents`` = n ≥ 2 common opponents: the limit bounds allowed for a variance
    estimated with ν = n − 1 degrees of freedom, counted as ν/2 (module docstring, 2. and 3.)."""
    upper, lower = limit_bounds(alpha, beta)
    freedom = (opponents - 1) / 2
    return allowance(upper, freedom), -allowance(-lower, freedom)


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
    n = len(diffs)
    upper, lower = bounds(max(n, MIN_OPPONENTS), alpha, beta)
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
