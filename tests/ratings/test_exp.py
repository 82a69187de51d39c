"""``rumble.ratings.exp`` against the C library's ``exp`` (CPython's ``math.exp``): within one ulp
over the whole range of doubles whose exponential is neither 0 nor infinite, the special values
and the edges of overflow and underflow exactly; and the same bits whether the compiler vectorises
the loop it is in or it is called on one value at a time."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rumble.ratings.exp import exp


def _c_exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


@njit(cache=True)
def _exp_in_place(values: np.ndarray) -> None:
    for i in range(len(values)):
        values[i] = exp(values[i])


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(2024)
    return np.concatenate(
        [
            rng.uniform(-746.0, 710.0, 400_000),
            rng.uniform(-10.0, 10.0, 400_000),  # the rating step's usual exponents
            np.linspace(-745.5, -708.0, 20_000),  # results below the smallest normal double
            np.linspace(709.0, 709.8, 20_000),  # results near the largest double
            rng.uniform(-1e-10, 1e-10, 1_000),
        ]
    )


def test_within_one_ulp_of_the_c_library_and_the_same_vectorised_or_not():
    x = _inputs()
    expected = np.array([_c_exp(v) for v in x.tolist()])
    vectorised = x.copy()
    _exp_in_place(vectorised)
    one_at_a_time = np.array([exp(v) for v in x.tolist()])
    assert np.array_equal(vectorised.view(np.int64), one_at_a_time.view(np.int64))
    ulps = np.abs(vectorised.view(np.int64) - expected.view(np.int64))  # both non-negative doubles
    assert ulps.max() <= 1
    assert np.count_nonzero(ulps) < 0.2 * len(x)  # mostly the correctly rounded value itself


def test_special_values_and_the_edges_of_the_range():
    exactly = [
        (0.0, 1.0),
        (-0.0, 1.0),
        (1e-300, 1.0),
        (-1e-300, 1.0),
        (math.inf, math.inf),
        (-math.inf, 0.0),
        (1000.0, math.inf),
        (-1000.0, 0.0),
        (709.7827128933841, math.inf),  # the smallest x whose exponential overflows
        (-745.1332191019411, 5e-324),  # the largest x whose exponential is the smallest subnormal
        (-745.1332191019412, 0.0),
    ]
    for x, expected in exactly:
        assert exp(x) == expected, x
    assert math.isnan(exp(math.nan))
    for x in (1.0, -1.0, 709.782712893384, -708.3964185322641, 0.5, -0.5):  # the largest finite, the smallest normal
        assert abs(np.float64(exp(x)).view(np.int64) - np.float64(_c_exp(x)).view(np.int64)) <= 1, x
