"""The pieces Glicko-1 and Glicko-2 share: g, E and the Glicko-2 scale (Glickman's two papers).

Glickman, "The Glicko system" (1995), writes g and E on the rating scale with q = ln(10)/400;
"Example of the Glicko-2 system" (2013, revised 2022) writes the same two functions on its own
scale, mu = (r - 1500)/173.7178 and phi = RD/173.7178, where 173.7178 is 400/ln(10) = 1/q to the
digits the paper prints. So g and E are taken here in the Glicko-2 form (natural-log units), and
Glicko-1 calls them with q·r and q·RD: 10^(-g·(r - r_j)/400) = exp(-g·q·(r - r_j)).

Every function works on floats and on numpy arrays alike, and in compiled code
(``register_jitable``: numba compiles it when the all-pairings step calls it; Python calls run
the plain function).
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

Q = math.log(10.0) / 400.0  # Glicko-1's q (0.0057565): rating points to natural-log units
SCALE = 173.7178  # Glicko-2 steps 2 and 8: rating points per unit of mu and phi, as the paper prints it
R0 = 1500.0  # Glicko-2 step 2: the rating that maps to mu = 0


@register_jitable
def g(phi):
    """g(phi) = 1/sqrt(1 + 3·phi²/pi²): how much an opponent's deviation phi damps E (Glicko-2 step 3)."""
    return 1.0 / np.sqrt(1.0 + 3.0 * phi**2 / np.pi**2)


@register_jitable
def E(mu, mu_j, phi_j):
    """E(mu, mu_j, phi_j) = 1/(1 + exp(-g(phi_j)·(mu - mu_j))): the expected score against j (step 3)."""
    return 1.0 / (1.0 + np.exp(-g(phi_j) * (mu - mu_j)))


@register_jitable
def to_mu(r):
    """mu = (r - 1500)/173.7178 (Glicko-2 step 2)."""
    return (r - R0) / SCALE


@register_jitable
def to_phi(rd):
    """phi = RD/173.7178 (Glicko-2 step 2)."""
    return rd / SCALE


@register_jitable
def to_r(mu):
    """r = 173.7178·mu + 1500 (Glicko-2 step 8)."""
    return SCALE * mu + R0


@register_jitable
def to_rd(phi):
    """RD = 173.7178·phi (Glicko-2 step 8)."""
    return SCALE * phi


@register_jitable
def terms(g_j, e_j, score):
    """One game's terms of the two sums both papers take over a period's games:
    (g_j²·E_j·(1 − E_j), g_j·(s_j − E_j)) (Glicko step 2, Glicko-2 steps 3 and 4; floats or arrays)."""
    return g_j**2 * e_j * (1.0 - e_j), g_j * (score - e_j)
