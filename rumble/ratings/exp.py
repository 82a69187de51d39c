"""``exp`` for compiled code, in plain IEEE arithmetic the compiler can vectorise.

The rating step (``all_pairings.step``) takes about 7,200 exponentials per battle of a 1,200-bot
field. Compiled to the C library's ``exp``, that is one call per value, which no compiler turns
into vector code: the step took about twice as long, and a rebuild ran at 15,500 battles/s instead
of 26,300. This ``exp`` is a few multiplications and additions with no call, branch or table, so
LLVM vectorises the step's loop over it; and since it is compiled without fast-math (no
reassociation, no fused multiply-adds), its vector and scalar code give the same bits, wherever
the compiler inlines it.

The method is the classic one of fdlibm's ``e_exp.c`` (Sun Microsystems, 1993; the facts, not its
code): reduce ``x = k·ln2 + r`` with ``|r| <= ln2/2`` (``ln2`` split in two so that ``k·LN2_HI``
is exact), take ``exp(r)`` from a degree-5 Remez approximation in ``r²`` (error below 2^-59), and
scale by ``2^k``. fdlibm states the result within 1 ulp; tests/ratings/test_exp.py checks it
against the C library's ``exp`` over the whole range, the special values included. ``2^k`` is
built from its bits, in two factors so that results near overflow and in the subnormal range are
rounded once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

INV_LN2 = 1.44269504088896338700e00
LN2_HI = 6.93147180369123816490e-01  # ln 2's first 32 bits: k·LN2_HI is exact for |k| < 2^20
LN2_LO = 1.90821492927058770002e-10  # ln 2 − LN2_HI
P1 = 1.66666666666666019037e-01
P2 = -2.77777777770155933842e-03
P3 = 6.61375632143793436117e-05
P4 = -1.65339022054652515390e-06
P5 = 4.13813679705723846039e-08
LOWEST = -746.0  # below this exp rounds to 0; above HIGHEST to infinity: x is clamped to them first
HIGHEST = 710.0


@intrinsic
def _float_from_bits(typingctx: Any, bits: Any) -> Any:
    """The float64 whose IEEE bits are the int64 ``bits`` (LLVM's ``bitcast``)."""
    signature = types.float64(types.int64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return signature, codegen


@njit(cache=True)
def _power_of_two(j: np.int64) -> float:
    """2^j for -1022 <= j <= 1023."""
    return _float_from_bits((j + np.int64(1023)) << np.int64(52))  # type: ignore[call-arg]


@njit(cache=True, error_model="numpy")  # a division without a ZeroDivisionError check, which would stop vectorisation
def exp(x: float) -> float:
    """e^x within 1 ulp (NaN for NaN, 0 for -inf, inf for inf)."""
    clamped = min(max(x, LOWEST), HIGHEST)  # NaN compares false: clamped to LOWEST, given back below
    k = np.floor(clamped * INV_LN2 + 0.5)
    hi = clamped - k * LN2_HI
    lo = k * LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    whole = np.int64(k)  # -1076 .. 1025
    half = whole >> np.int64(1)
    scaled = (y * _power_of_two(half)) * _power_of_two(whole - half)
    return scaled if x == x else x
