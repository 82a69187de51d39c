"""MN's batch Elo: ratings fitted to every pairing at once by maximum likelihood.

Source: MN's proposal on the RoboWiki, as run once by Darkcanuck (seed 004, "Alternative Systems");
the model is Bradley-Terry (R. A. Bradley and M. E. Terry, Biometrika 39 (1952) 324-345) on the
Elo scale, and the fit is Zermelo's (Math. Zeitschrift 29 (1929) 436-460): at the maximum, every
bot's expected total equals its actual total, Σ_Y n_XY·E(X, Y) = Σ_Y s_XY.

Model: E(X, Y) = 1 / (1 + base^((R_Y − R_X)/scale)), the expected share of the pairing for X.
Default base 10 and scale 400 (chess Elo: 400 points are 10:1 odds, so a 75 % share is
400·log10(3) = 190.85 points); ``base=20, scale=800, mean=1600`` gives RoboRumble's Elo curve and
start (seed 004). Ratings are anchored so that their mean is ``mean`` (1500).

Data: s_XY = d[X, Y]/100, the fraction of the pairing X took. For a rumble that is the pairing's
win rate, as seed 004 says MN's system is "based on pairing win rates (i.e. # wins/battles for each
pairing)": the battles X won (a drawn battle half) over the pairing's battles, counting one virtual
drawn battle per pairing so that an undefeated bot keeps a finite rating (rumble.store.batch_runs
``win_rates``, chosen by rumble.rankings.batch WIN_RATE_METHODS). Each present pairing counts once,
as n_XY = s_XY + s_YX games (1 in a 1v1 rumble), whatever its number of battles.
Log-likelihood ℓ = Σ s_XY·ln E(X, Y) over present pairings, maximised by Newton's method on
θ = R·ln(base)/scale, whose Hessian is a weighted graph Laplacian; a step that would lower ℓ is
halved. The fit stops once the full Newton step would move no rating by TOLERANCE or more, and
raises NotConverged after MAX_ITERATIONS, or earlier if the weights vanish: with no finite maximum
(a bot that took every point of every pairing, Zermelo's condition) the ratings run off.

Ties: equal ratings share a rank (bots in symmetric positions, e.g. a balanced Condorcet cycle).
Missing pairings: left out of the likelihood. A bot without pairings gets a NaN rating and ranks
last; pairings that split the bots into groups with no pairing between them raise ValueError,
because nothing would tie the groups' scales together.
"""

from __future__ import annotations

import math

import numpy as np

from rumble.rankings.pairwise import Ranking, as_matrix, present, ranks_from_scores

TOLERANCE = 1e-6  # rating points: far below the 0.01 a table shows
MAX_ITERATIONS = 100  # Newton needs under ten on a real rumble; more means no finite maximum
MAX_HALVINGS = 50
START_SWEEPS, START_STEP = 20, 0.05  # first-guess sweeps; a θ step this small (8.7 points at 10/400) ends them


class NotConverged(ArithmeticError):
    """The fit did not settle within MAX_ITERATIONS."""


def ratings(d: np.ndarray, base: float = 10.0, scale: float = 400.0, mean: float = 1500.0) -> np.ndarray:
    """Each bot's batch Elo rating (NaN for a bot without pairings)."""
    d = as_matrix(d)
    active = present(d).any(axis=1)
    out = np.full(len(d), np.nan)
    if not active.any():
        return out
    sub = d[np.ix_(active, active)]
    mask = present(sub)
    if not _connected(mask):
        raise ValueError("the pairings split the bots into groups that never met")
    s = np.where(mask, sub / 100.0, 0.0)
    theta = _fit(s, s + s.T, unit=scale / math.log(base))
    out[active] = mean + theta * scale / math.log(base)
    return out


def rank(d: np.ndarray, base: float = 10.0, scale: float = 400.0, mean: float = 1500.0) -> Ranking:
    """Batch Elo ranks, with the ratings as scores."""
    r = ratings(d, base, scale, mean)
    return Ranking(ranks=ranks_from_scores(r), scores=r)


def _expected(theta: np.ndarray) -> np.ndarray:
    """E[i, j] = 1/(1 + exp(θ_j − θ_i)), written with tanh so that no exp can overflow."""
    return 0.5 * (1.0 + np.tanh((theta[:, None] - theta[None, :]) / 2.0))


def _log_likelihood(theta: np.ndarray, s: np.ndarray) -> float:
    """ℓ(θ) = Σ s_ij·ln E_ij = −Σ s_ij·ln(1 + exp(θ_j − θ_i))."""
    return -float((s * np.logaddexp(0.0, theta[None, :] - theta[:, None])).sum())


def _fit(s: np.ndarray, n: np.ndarray, unit: float) -> np.ndarray:
    """θ with mean 0 maximising ℓ; ``unit`` converts θ to rating points for the stopping test."""
    theta = _start(s, n)
    likelihood = _log_likelihood(theta, s)
    for _ in range(MAX_ITERATIONS):
        try:
            step = _newton_step(theta, s, n)
        except np.linalg.LinAlgError as error:  # every E saturated at 0 or 1: ratings running off
            raise NotConverged("batch Elo has no finite maximum for these pairings") from error
        if np.max(np.abs(step), initial=0.0) * unit < TOLERANCE:
            return theta + step
        theta, likelihood = _damped(theta, step, s, likelihood)
    raise NotConverged(f"batch Elo did not converge in {MAX_ITERATIONS} iterations")


def _start(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """A first guess: the log-odds of each bot's share, then Jacobi sweeps of one-bot Newton steps.

    Full Newton steps move far-out ratings (a bot with a 10 % share) by only a bounded amount per
    iteration; a sweep solves each bot's own equation with the others held, at the cost of one
    matrix of E, and brings the tails close in a few sweeps.
    """
    share = np.clip(s.sum(axis=1) / n.sum(axis=1), 0.001, 0.999)
    theta = np.log(share / (1.0 - share))
    for _ in range(START_SWEEPS):
        e = _expected(theta)
        slope = (n * e * e.T).sum(axis=1)
        step = np.clip((s - n * e).sum(axis=1) / np.maximum(slope, 1e-12), -2.0, 2.0)
        theta = theta + step
        if np.max(np.abs(step), initial=0.0) < START_STEP:
            break
    return theta - theta.mean()


def _newton_step(theta: np.ndarray, s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Solve L·Δ = g: g_i = Σ_j (s_ij − n_ij·E_ij), L the Laplacian of the weights n_ij·E_ij·E_ji.

    L is singular along (1, ..., 1) (adding a constant to every θ changes nothing) and g sums to 0,
    so (L + 11ᵀ)·Δ = g has the one solution with Σ Δ = 0, which keeps the mean of θ at 0.
    """
    e = _expected(theta)
    g = (s - n * e).sum(axis=1)
    w = n * e * e.T
    laplacian = np.diag(w.sum(axis=1)) - w
    return np.linalg.solve(laplacian + 1.0, g)


def _damped(theta: np.ndarray, step: np.ndarray, s: np.ndarray, before: float) -> tuple[np.ndarray, float]:
    """(θ + the Newton step halved until ℓ does not fall, ℓ there); ``before`` is ℓ(θ)."""
    for _ in range(MAX_HALVINGS):
        after = _log_likelihood(theta + step, s)
        if after >= before:
            break
        step = step / 2.0
    return theta + step, after


def _connected(mask: np.ndarray) -> bool:
    """Whether the pairings link every bot to every other (breadth-first over the boolean matrix)."""
    if len(mask) == 0:
        return True
    seen = np.zeros(len(mask), dtype=bool)
    seen[0] = True
    frontier = seen.copy()
    while frontier.any():
        frontier = mask[frontier].any(axis=0) & ~seen
        seen |= frontier
    return bool(seen.all())
