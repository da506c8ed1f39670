"""The approximate f32 tanh and sigmoid of ``approx_activations=True``, one operation at a
time: the readable definition beside the vector code (``rust/sim/approx_activation.rs``).

Each step is one IEEE binary32 operation rounded to nearest (``fma``: the exact value
rounded once), so this computes the same bits as the Rust engines on every CPU. The
formulas are Cephes' ``expf`` and ``tanhf`` (S. Moshier) with their minimax coefficients:

    e^y, y in [-104, 0]:  k = round(y*log2(e)),  r = y - k*ln2 (Cody-Waite, two fmas),
                          e^r = 1 + r + r^2 * P(r),  e^y = e^r * 2^k (one rounding)
    sigmoid(x) = n / (1 + e^y),  y = max(-104, -|x|),  n = e^y if x < 0 else 1
    tanh(x)    = sign(x) * (a + a*z*Q(z))       for a = |x| < 0.625, z = a*a
               = sign(x) * (1 - e) / (1 + e)    otherwise, e = e^max(-19, -2a)
    NaN in, NaN out.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .reference import _Fmt, round_fraction

f32 = np.float32
_F32 = _Fmt("f32")
LN2_HI = f32(0.693145751953125)
LN2_LO = f32(1.428606765330187e-6)
LOG2_E = f32(1.4426950408889634)
MAGIC = f32(12582912.0)  # 1.5 * 2^23
EXP_P = [f32(c) for c in (1.98756915e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
                          5.0000001201e-1)]
TANH_Q = [f32(c) for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
                           -3.33332819422e-1)]


def fma(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """round_f32(a*b + c), one rounding: the references' fma (the exact Fraction value)."""
    return _F32.fma(a, b, c)


def exp_neg(y: np.float32) -> np.float32:
    """e^y for y in [-104, 0]."""
    t = fma(y, LOG2_E, MAGIC)
    k = f32(t - MAGIC)
    r = fma(-k, LN2_HI, y)
    r = fma(-k, LN2_LO, r)
    p = EXP_P[0]
    for c in EXP_P[1:]:
        p = fma(p, r, c)
    er = f32(fma(p, f32(r * r), r) + f32(1))
    return f32(round_fraction(Fraction(float(er)) * Fraction(2) ** int(k), "f32"))


def approx_sigmoid(x: np.float32) -> np.float32:
    x = f32(x)
    if np.isnan(x):
        return f32(x + f32(0))
    e = exp_neg(max(f32(-104), f32(-abs(x))))
    n = e if x < 0 else f32(1)
    return f32(n / f32(e + f32(1)))


def approx_tanh(x: np.float32) -> np.float32:
    x = f32(x)
    if np.isnan(x):
        return f32(x + f32(0))
    a = f32(abs(x))
    if a < f32(0.625):
        z = f32(a * a)
        q = TANH_Q[0]
        for c in TANH_Q[1:]:
            q = fma(q, z, c)
        t = fma(f32(a * z), q, a)
    else:
        e = exp_neg(max(f32(-19), f32(a * f32(-2))))
        t = f32(f32(f32(1) - e) / f32(f32(1) + e))
    return f32(-t) if math.copysign(1.0, float(x)) < 0 else t
