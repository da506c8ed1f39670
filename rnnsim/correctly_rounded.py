"""tanh and sigmoid correctly rounded to float64: the Python reference of the definition every
float format's activations are built on (the Rust side: ``rust/num/correctly_rounded.rs``, and
its fast evaluation ``rust/sim/activation_f64.rs``).

    tanh(x), sigmoid(x) = 1/(1 + e^-x): the exact value at the exact float x, rounded to the
    nearest float64 (ties to even; they do not occur: for x != 0 the values are transcendental)

Computed independently of the Rust code, with mpmath and Ziv's strategy: at working precision
p, mpmath's value v is within a few ulps of the true one (allowed: |v| * 2^-(p-8)); when both
ends of that interval round to the same float64 (``float`` of an exact ``Fraction`` rounds
correctly, subnormals included), it is the result, else p doubles. Far out the results are
1, -1 or +0 (bounds at each shortcut; its exact values would need huge Fractions). Results
are cached (the reference runs call it once per activation).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache


def _exact(v) -> Fraction:
    """The exact value of an mpmath mpf."""
    sign, man, exp, _ = v._mpf_
    return (-1) ** sign * Fraction(int(man)) * (Fraction(2) ** int(exp))


def _ziv(f, x: float) -> float:
    import mpmath

    p = 80
    while True:
        with mpmath.workprec(p):
            v = _exact(f(mpmath.mpf(x)))
        slack = abs(v) / 2 ** (p - 8)
        lo, hi = float(v - slack), float(v + slack)
        if lo == hi and math.copysign(1, lo) == math.copysign(1, hi):
            return lo
        p *= 2


def tanh(x: float) -> float:
    """tanh(x) correctly rounded to float64 (tanh(-0.0) = -0.0, tanh(nan) = nan)."""
    # zeros before the cache: 0.0 == -0.0 and both hash alike, so a cached tanh(-0.0)
    # would answer tanh(0.0)
    if x != x or x == 0:
        return x
    return _tanh_nonzero(x)


@lru_cache(maxsize=1 << 16)
def _tanh_nonzero(x: float) -> float:
    if abs(x) >= 40:  # 1 - tanh(40) = 2/(e^80 + 1) < 2^-115: rounds to 1
        return math.copysign(1.0, x)
    import mpmath

    return _ziv(mpmath.tanh, x)


@lru_cache(maxsize=1 << 16)
def sigmoid(x: float) -> float:
    """1/(1 + e^-x) correctly rounded to float64 (sigmoid(nan) = nan)."""
    if x != x:
        return x
    if x >= 50:  # 1 - sigmoid(50) < e^-50 < 2^-72: rounds to 1
        return 1.0
    if x <= -800:  # sigmoid(x) < e^x < 2^-1154: rounds to +0
        return 0.0
    import mpmath

    return _ziv(lambda v: 1 / (1 + mpmath.exp(-v)), x)
