"""Weng & Lin (2011), JMLR 12, Algorithm 4 (Plackett-Luce, ties by 1/A_q), written out from the paper
for the tests, independently of openskill and of rumble.ratings.weng_lin (formulas in
tests/ratings/test_weng_lin.py's docstring). Without the variance damping factor γ (the paper's page
26) unless ``damping=True``, as o!TR uses the model (seed 003)."""

from __future__ import annotations

import math

BETA, TAU, KAPPA = 25 / 6, 25 / 300, 0.0001


def paper_update(
    mus: list[float], sigmas: list[float], ranks: list[int], damping: bool = False
) -> list[tuple[float, float]]:
    """New (μ, σ) of each team of one game; ``ranks``: 1 best, equal ranks tied."""
    sigmas = [math.sqrt(s * s + TAU * TAU) for s in sigmas]
    k = len(mus)
    c = math.sqrt(sum(s * s + BETA * BETA for s in sigmas))
    big_c = [sum(math.exp(mus[s] / c) for s in range(k) if ranks[s] >= ranks[q]) for q in range(k)]
    a = [sum(1 for s in range(k) if ranks[s] == ranks[q]) for q in range(k)]
    result = []
    for i in range(k):
        omega = delta = 0.0
        for q in range(k):
            if ranks[q] <= ranks[i]:
                p = math.exp(mus[i] / c) / big_c[q]
                omega += ((1.0 if q == i else 0.0) - p) / a[q]
                delta += p * (1 - p) / a[q]
        var = sigmas[i] ** 2
        omega *= var / c
        delta *= ((sigmas[i] / c) if damping else 1.0) * var / c**2
        result.append((mus[i] + omega, math.sqrt(var * max(1 - delta, KAPPA))))
    return result
