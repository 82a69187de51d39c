"""Likelihood of superiority (LOS): the probability that one bot's true APS is above another's.

Choice: from the pairing APS and their battle-level variances, not a Bradley-Terry fit with a
bootstrap. A bot's APS is a mean over its pairings, and the rankings already estimate its variance
(scores.py, LiteRumble's 2026 interval): Var(APS) = (CI / 1.96)^2 = Σ Var_p/(n_p − 1) / (live·k).
That costs nothing per page, is exact arithmetic over stored sums, and ranks by the same quantity
the table is sorted by; a bootstrap over a million battles would have to run on the schedule.

For bots a and b with live pairings counts n_a, n_b:

    LOS(a > b) = Φ((APS_a − APS_b) / sqrt(Var_a + Var_b − 2 Cov_ab)),

Φ the standard normal distribution function (the normal approximation of a mean over hundreds of
battles, as Ordo and BayesElo use for their LOS tables). The two APS are independent except through
the one pairing they share: a's APS holds x_ab/n_a and b's holds x_ba/n_b with x_ba = 100 − x_ab
(the two sides of a battle add up to 100 %), so Cov_ab = −SE²_ab/(n_a n_b), SE²_ab = Var_ab/(m − 1)
the squared standard error of that pairing's APS over its m battles, and

    Var(APS_a − APS_b) = Var_a + Var_b + 2 SE²_ab/(n_a n_b).

Every pairing's SE² is the battle-to-battle variance of its score % over its battle count m: for
m ≥ 2 its own, Var_p/(m − 1) = s²_p/m with s²_p = M2/(m − 1); for m = 1 it has none, and a pooled
battle variance σ² stands in for it (battle_variance: the bot's pairings of 2 battles or more
pooled), SE² = σ²/1. Var_a counts a's single-battle pairings so (aps_variance): the CI lets them
stand at the mean SE² of the others, which made LOS overconfident where many pairings have one
battle (scripts/sim_confidence.py --min-battles 1 showed pairs given 0.95 to 0.99 truly ordered in
94 % of cases before, 97 % after). A shared pairing with one battle takes the mean of the two bots'
σ² (shared_variance). The statistical ties (ties.py) take their intervals from the same Var, so the
table's rank ranges and the LOS agree on how uncertain each APS is.

Approximations: the variances are estimates treated as known; opponents are fixed (the APS is over
this field, not a sample of possible opponents); σ² is estimated from the stored sum of SE² and the
battle count, which errs high (battle_variance); bots that never met share nothing. With a thousand
pairings the shared term is about 1/n of the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rumble.rankings.scores import Z95

MATRIX_SIZE = 20  # the top bots shown in the pairwise LOS matrix on /AlternativeRankings


@dataclass(frozen=True, slots=True)
class Standing:
    """A bot as the LOS needs it: its APS, the APS's variance (None if unknown), live pairings and
    its battle variance σ² (battle_variance; a shared pairing of one battle needs it). ``standing``
    builds one from a rankings row."""

    name: str
    aps: float
    variance: float | None
    pairings: int
    battle_variance: float | None = None


def normal_cdf(x: float) -> float:
    """Φ(x), the standard normal distribution function, through math.erf."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def battle_variance(aps_ci: float | None, pairings: int, ci_count: int | None, battles: int) -> float | None:
    """σ², the battle-to-battle variance of a bot's score %, pooled over its pairings of 2 battles or
    more, from its 95 % half-width (scores.summary), live ``pairings`` n, ``ci_count`` k (its pairings
    of 2 battles or more; None: taken as all n) and ``battles``; None without a half-width.

    The CI's variance (CI / 1.96)² = Σ SE²_p/(n·k) gives the mean SE² of those k pairings,
    m = n·(CI / 1.96)², and SE²_p = s²_p/m_p for a pairing of m_p battles, so m is σ² times the mean
    1/m_p. σ² ≈ m·(battles in those k pairings)/k = m·(battles − (n − k))/k, the mean m_p standing
    for 1/(mean 1/m_p): by Jensen's inequality this errs high, never low.
    """
    if aps_ci is None or pairings <= 0:
        return None
    k = ci_count if ci_count is not None and 0 < ci_count <= pairings else pairings
    return _pooled((aps_ci / Z95) ** 2, pairings, k, battles)


def _pooled(variance: float, pairings: int, ci_count: int, battles: int) -> float:
    """σ² from the CI's variance: m·(battles − (n − k))/k, m = variance·n (battle_variance)."""
    return variance * pairings * (battles - (pairings - ci_count)) / ci_count


def aps_variance(
    aps_ci: float | None, pairings: int = 0, ci_count: int | None = None, battles: int = 0
) -> float | None:
    """The variance of a bot's APS from its 95 % half-width (scores.summary): (CI / 1.96)^2, with
    the single-battle pairings counted when ``ci_count`` (its pairings of 2 battles or more) is given.

    The CI averages SE² over the k = ``ci_count`` pairings that have one (m = Var·n per pairing) and
    lets the n − k single-battle pairings stand at that mean, though a pairing of one battle has the
    SE² of a whole battle, σ²/1 (battle_variance). So Var = (k·m + (n − k)·σ²)/n².
    """
    if aps_ci is None:
        return None
    variance = (aps_ci / Z95) ** 2
    if ci_count is None or not 0 < ci_count < pairings:
        return variance
    sigma2 = _pooled(variance, pairings, ci_count, battles)
    return (ci_count * variance * pairings + (pairings - ci_count) * sigma2) / pairings**2


def standing(
    name: str, aps: float, aps_ci: float | None, pairings: int, ci_count: int | None, battles: int
) -> Standing:
    """A bot's Standing from its summary: APS, half-width, live pairings, pairings of 2 battles or more
    (None if unknown: all of them) and battles, with aps_variance and battle_variance from the same figures."""
    return Standing(
        name,
        aps,
        aps_variance(aps_ci, pairings, ci_count, battles),
        pairings,
        battle_variance(aps_ci, pairings, ci_count, battles),
    )


def squared_error(battles: int, aps_m2: float) -> float | None:
    """SE² of one pairing's APS: its population variance over (battles − 1), i.e. the sample variance
    M2/(battles − 1) over battles; None below 2 battles (shared_variance then uses σ²/1)."""
    if battles < 2:
        return None
    return aps_m2 / battles / (battles - 1)


def shared_variance(a: Standing, b: Standing, pairing_se2: float | None, met: bool) -> float:
    """The term 2 SE²_ab/(n_a n_b) that the pairing a-vs-b adds to Var(APS_a − APS_b).

    ``pairing_se2`` None for a pairing of one battle: its SE² is a whole battle's variance, σ²/1,
    σ² pooled as the mean of the two bots' battle variances (either one alone if the other is unknown).
    ValueError if neither is known (Standings built without ``battle_variance``: use ``standing``)."""
    if not met or a.variance is None or b.variance is None or not a.pairings or not b.pairings:
        return 0.0
    if pairing_se2 is None:
        known = [s for s in (a.battle_variance, b.battle_variance) if s is not None]
        if not known:
            raise ValueError(f"{a.name} and {b.name} share a one-battle pairing and neither has a battle variance")
        pairing_se2 = sum(known) / len(known)  # σ² over the pairing's count, 1
    return 2.0 * pairing_se2 / (a.pairings * b.pairings)


def los(a: Standing, b: Standing, shared: float = 0.0) -> float | None:
    """P(true APS of a > true APS of b); None while either variance is unknown.

    Both variances zero (every pairing's battles identical): 1, 0 or 0.5 by the sign of the gap."""
    if a.variance is None or b.variance is None:
        return None
    spread = a.variance + b.variance + shared
    gap = a.aps - b.aps
    if spread <= 0.0:
        return 1.0 if gap > 0 else 0.0 if gap < 0 else 0.5
    return normal_cdf(gap / math.sqrt(spread))


def los_to_next(standings: list[Standing], shared: list[float]) -> list[float | None]:
    """Each bot's LOS over the bot just below it (``standings`` in APS order, best first);
    ``shared[i]`` is the shared-pairing term of bots i and i + 1. The last bot gets None."""
    return [los(standings[i], standings[i + 1], shared[i]) for i in range(len(standings) - 1)] + (
        [None] if standings else []
    )


def los_matrix(standings: list[Standing], shared: dict[tuple[int, int], float]) -> list[list[float | None]]:
    """matrix[i][j] = LOS(bot i > bot j) for i ≠ j (None on the diagonal); ``shared[i, j]`` (i < j)
    the shared-pairing terms. LOS(j > i) = 1 − LOS(i > j), so each pair is computed once."""
    n = len(standings)
    matrix: list[list[float | None]] = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            p = los(standings[i], standings[j], shared.get((i, j), 0.0))
            matrix[i][j] = p
            matrix[j][i] = None if p is None else 1.0 - p
    return matrix
