"""A small, readable pure-Python simulator of the simple RNN: the test oracle.

Exact runs use ``fractions.Fraction``; float runs use numpy scalars of the format and do
exactly what the Rust float engine documents:

    weights: each exact value rounded once to the format (nearest, ties to even)
    h_t[i] = act(((b_i + W_i0 x_0) + W_i1 x_1 ...) + V_i0 h_0 + V_i1 h_1 ...)

with every product and every sum rounded to the format (no fused multiply-add). bfloat16 has
no numpy dtype: it is emulated on float32 by rounding the bit pattern to its top 16 bits.
A custom format "fp(M,E)" (rnnsim.FloatFormat: p = M + 1, emax = 2**(E-1) - 1,
emin = 1 - emax) is emulated with exact Fractions: every product and sum is computed
exactly and rounded with ``round_exact`` (the IEEE rule: ties to even, gradual underflow,
±inf past the largest finite value); tanh/sigmoid are the correctly rounded float64 values
(``correctly_rounded``) rounded once to the format, as for the builtin formats (formats whose
values are all float64s only).

Definition 4.1 of the lecture notes (seed 001): h_0 = s, h_t = act(V h_{t-1} + W x_t + b),
y_t = w h_t + c.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import correctly_rounded

Matrix = Sequence[Sequence[Fraction]]
Vector = Sequence[Fraction]

# (significand bits incl. hidden bit, emin, emax) of each float format
FORMATS = {"f64": (53, -1022, 1023), "f32": (24, -126, 127), "bf16": (8, -126, 127), "f16": (11, -14, 15)}


def piecewise(name: str, x: Any, zero: Any, one: Any, half: Any) -> Any:
    """The piecewise-linear and saturated activations in any number type, None for the
    others: identity, relu = max(0, x), slu = min(1, max(0, x)), step = [x > 0], sign, and
    sat_sigmoid = 1, 1/2, 0 for x >, =, < 0 (the saturated limits of tanh and sigmoid).
    Written with strict comparisons only, so a float NaN gives what the engines give."""
    if name == "identity":
        return x
    if name == "relu":
        return x if x > zero else zero
    if name == "slu":
        return one if x > one else x if x > zero else zero
    if name == "step":
        return one if x > zero else zero
    if name == "sign":
        return one if x > zero else -one if x < zero else zero
    if name == "sat_sigmoid":
        return one if x > zero else zero if x < zero else half
    return None


def activate_exact(name: str, x: Fraction) -> Fraction:
    """``piecewise`` over the rationals (tanh and sigmoid have no exact form)."""
    y = piecewise(name, x, Fraction(0), Fraction(1), Fraction(1, 2))
    if y is None:
        raise ValueError(f"{name} has no exact form")
    return y


def run_exact(V: Matrix, W: Matrix, b: Vector, h0: Vector, activation: str, xs: Sequence[Vector],
              readout: tuple[Matrix, Vector] | None = None) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """States h_0..h_T and outputs y_0..y_T of a simple RNN, in exact rational arithmetic."""
    h = [Fraction(v) for v in h0]
    states = [h]
    outputs = [_readout_exact(readout, h)]
    for x in xs:
        h = [activate_exact(activation,
                            sum((Fraction(V[i][j]) * h[j] for j in range(len(h))), Fraction(0))
                            + sum((Fraction(W[i][k]) * Fraction(x[k]) for k in range(len(x))), Fraction(0))
                            + Fraction(b[i]))
             for i in range(len(b))]
        states.append(h)
        outputs.append(_readout_exact(readout, h))
    return states, outputs


def _readout_exact(readout: tuple[Matrix, Vector] | None, h: list[Fraction]) -> list[Fraction]:
    if readout is None:
        return []
    w, c = readout
    return [sum((Fraction(w[o][j]) * h[j] for j in range(len(h))), Fraction(c[o])) for o in range(len(c))]


def format_params(fmt: str | tuple[int, int, int]) -> tuple[int, int, int]:
    """(p, emin, emax) of a builtin name, of "fp(M,E)" (IEEE style: p = M + 1,
    emax = 2**(E-1) - 1, emin = 1 - emax), or of a (p, emin, emax) tuple."""
    if isinstance(fmt, tuple):
        return fmt
    if fmt in FORMATS:
        return FORMATS[fmt]
    inner = fmt.replace(" ", "").lower().removeprefix("fp(").removesuffix(")")
    m, e = (int(v) for v in inner.split(","))
    emax = 2 ** (e - 1) - 1
    return (m + 1, 1 - emax, emax)


def round_exact(x: Fraction, fmt: str | tuple[int, int, int]) -> Fraction | float:
    """x rounded to the nearest value of ``fmt`` (ties to even, gradual underflow below
    2**emin, ±inf when the rounded value exceeds (2 - 2**(1-p)) * 2**emax), as an exact
    Fraction (or a float ±inf). IEEE 754-2019 §4.3.1 and §7.4."""
    p, emin, emax = format_params(fmt)
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(Fraction(x))
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e, emin) - p + 1
    m = round(a / Fraction(2) ** q)  # Python's round on Fraction: ties to even
    value = Fraction(m) * Fraction(2) ** q
    if value > (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax:
        return sign * math.inf
    return sign * value


def round_fraction(x: Fraction, fmt: str | tuple[int, int, int]) -> float:
    """x rounded to the nearest value of ``fmt`` (ties to even, overflow to ±inf), as a float."""
    p, emin, emax = format_params(fmt)
    if x == 0:
        return 0.0
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e, emin) - p + 1
    scaled = a / Fraction(2) ** q
    m = round(scaled)  # Python's round on Fraction: ties to even
    value = Fraction(m) * Fraction(2) ** q
    if value > (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax:
        return sign * math.inf
    return sign * float(value)


def _fma_specials(w: float, z: float, acc: float) -> float:
    """w*z + acc when an operand is ±inf or nan (IEEE: a finite product never overflows on
    its own inside an fma, so it only matters as 0 next to an infinite addend)."""
    prod = w * z if not (math.isfinite(w) and math.isfinite(z)) else 0.0
    return prod + (acc if not math.isfinite(acc) else 0.0)


def _fused_zero_is_negative(w: float, z: float, acc: float) -> bool:
    """IEEE 754 §6.3: an exactly zero w*z + acc is -0 only when the (zero) product and the
    addend are both -0; otherwise +0 in round-to-nearest."""
    return w * z == 0 and acc == 0 and math.copysign(1.0, w) * math.copysign(1.0, z) < 0 and math.copysign(1.0, acc) < 0


class _Fmt:
    """Scalar arithmetic of one format on numpy scalars, each result rounded to the format.
    ``fma=True``: the product-sum step ``mac`` is one fused, once-rounded operation.
    ``approx=True`` (f32): tanh and sigmoid are the approximations of ``reference_approx``.
    ``accumulate="f32"`` (bf16, f16): a sum's steps ``mac`` are f32's, and ``end_sum``
    rounds the finished sum to the format (README "Half formats with f32 sums")."""

    def __init__(self, fmt: str, fma: bool = False, approx: bool = False, accumulate: str | None = None) -> None:
        if approx and fmt != "f32":
            raise ValueError("the approximate activations are f32 only")
        if accumulate not in (None, "f32") or (accumulate == "f32" and fmt not in ("bf16", "f16", "f32")):
            raise ValueError(f"accumulate={accumulate!r} with {fmt}")
        self.fmt = fmt
        self.fused = fma
        self.approx = approx
        self.np = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32}[fmt]
        self.sums = _Fmt("f32", fma) if accumulate == "f32" and fmt != "f32" else None

    def round(self, v: np.floating) -> np.floating:
        if self.fmt != "bf16":
            return v
        bits = np.array([v], dtype=np.float32).view(np.uint32)
        if np.isnan(v):
            return v
        lsb = (bits >> 16) & 1
        bits = (bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)[0]

    def const(self, x: Fraction) -> np.floating:
        return self.np(round_fraction(Fraction(x), self.fmt))

    def add(self, a: np.floating, b: np.floating) -> np.floating:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is IEEE behaviour
            return self.round(self.np(a + b))

    def mul(self, a: np.floating, b: np.floating) -> np.floating:
        with np.errstate(over="ignore", invalid="ignore"):
            return self.round(self.np(a * b))

    def fma(self, w: np.floating, z: np.floating, acc: np.floating) -> np.floating:
        """round(w*z + acc) with one rounding (IEEE fusedMultiplyAdd), from the exact
        Fraction value; numpy has no fma of its own."""
        wf, zf, af = float(w), float(z), float(acc)
        if not (math.isfinite(wf) and math.isfinite(zf) and math.isfinite(af)):
            return self.np(_fma_specials(wf, zf, af))
        exact = Fraction(wf) * Fraction(zf) + Fraction(af)
        if exact == 0:
            return self.np(-0.0 if _fused_zero_is_negative(wf, zf, af) else 0.0)
        return self.np(round_fraction(exact, self.fmt))

    def mac(self, acc: np.floating, w: np.floating, z: np.floating) -> np.floating:
        """The product-sum step acc + w*z: two roundings, or one when fused (in f32 when the
        sums are f32's: ``end_sum`` then rounds the sum to the format)."""
        if self.sums is not None:
            return self.sums.mac(np.float32(acc), np.float32(w), np.float32(z))
        return self.fma(w, z, acc) if self.fused else self.add(acc, self.mul(w, z))

    def end_sum(self, acc: np.floating) -> np.floating:
        """A finished sum as the format stores it: rounded once from f32 when the sums are
        f32's, else already the format's."""
        if self.sums is None:
            return acc
        with np.errstate(over="ignore"):  # overflow to inf is IEEE behaviour
            return self.round(np.float32(acc)) if self.fmt == "bf16" else np.float16(acc)

    def act(self, name: str, x: np.floating) -> np.floating:
        y = piecewise(name, x, self.np(0), self.np(1), self.np(0.5))
        if y is not None:
            return y
        if self.approx and name in ("tanh", "sigmoid"):
            from . import reference_approx
            return reference_approx.approx_tanh(x) if name == "tanh" else reference_approx.approx_sigmoid(x)
        if name == "tanh":
            return self._from_f64(correctly_rounded.tanh(float(x)))
        if name == "sigmoid":
            return self._from_f64(correctly_rounded.sigmoid(float(x)))
        raise ValueError(name)

    def _from_f64(self, v: float) -> np.floating:
        """An f64 result rounded once to the format (NaN stays NaN)."""
        return self.np(v) if v != v else self.const(Fraction(v))


class _ExactFmt:
    """Scalar arithmetic of a custom format on exact Fractions (float ±inf and nan for the
    special values): each exact result rounded by ``round_exact``."""

    def __init__(self, fmt: str, fma: bool = False) -> None:
        self.fused = fma
        self.params = format_params(fmt)
        p, emin, emax = self.params
        self.fits_f64 = p <= 53 and emax <= 1023 and emin - p + 1 >= -1074

    def const(self, x: Fraction) -> Fraction | float:
        return round_exact(Fraction(x), self.params)

    @staticmethod
    def _float(v, mul: bool) -> float:
        """A special operand as is; a finite one as 0.0 (add) or its sign (mul), which is
        all an operation with ±inf or nan depends on."""
        if not isinstance(v, Fraction):
            return v
        return float((v > 0) - (v < 0)) if mul else 0.0

    def add(self, a, b):
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return self.const(a + b)
        return self._float(a, False) + self._float(b, False)

    def mul(self, a, b):
        if isinstance(a, Fraction) and isinstance(b, Fraction):
            return self.const(a * b)
        return self._float(a, True) * self._float(b, True)

    def fma(self, w, z, acc):
        """round(w*z + acc) once (exact Fractions; no signed zeros here)."""
        if isinstance(w, Fraction) and isinstance(z, Fraction) and isinstance(acc, Fraction):
            return self.const(w * z + acc)
        return self._float(w, True) * self._float(z, True) + self._float(acc, False)

    @staticmethod
    def end_sum(acc):
        return acc

    def mac(self, acc, w, z):
        return self.fma(w, z, acc) if self.fused else self.add(acc, self.mul(w, z))

    def act(self, name: str, x):
        y = piecewise(name, x, Fraction(0), Fraction(1), Fraction(1, 2))
        if y is not None:
            return y
        if not self.fits_f64:
            raise NotImplementedError("tanh/sigmoid of formats wider than float64 are not emulated")
        if name == "tanh":
            y = correctly_rounded.tanh(float(x))
        elif name == "sigmoid":
            y = correctly_rounded.sigmoid(float(x))
        else:
            raise ValueError(name)
        return y if y != y else self.const(Fraction(y))


def run_float(V: Matrix, W: Matrix, b: Vector, h0: Vector, activation: str, xs: Sequence[Vector], fmt: str,
              readout: tuple[Matrix, Vector] | None = None, fma: bool = False,
              approx_activations: bool = False, accumulate: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """States and outputs of a simple RNN computed in float format ``fmt`` in the documented
    order. Inputs are exact values rounded to the format. Returns float64 arrays (object
    arrays of Fractions / float ±inf for a custom format "fp(M,E)" wider than float64).
    ``fma=True``: each acc + w*z is one fused operation, rounded once.
    ``approx_activations=True`` (f32): tanh and sigmoid as ``reference_approx`` defines them.
    ``accumulate="f32"`` (bf16, f16): each sum in f32, rounded to the format at its end."""
    f = _Fmt(fmt, fma, approx_activations, accumulate) if fmt in FORMATS else _ExactFmt(fmt, fma)
    Vf = [[f.const(v) for v in row] for row in V]
    Wf = [[f.const(v) for v in row] for row in W]
    bf = [f.const(v) for v in b]
    h = [f.const(v) for v in h0]
    rw = rc = None
    if readout is not None:
        rw = [[f.const(v) for v in row] for row in readout[0]]
        rc = [f.const(v) for v in readout[1]]

    def out(h: list) -> list:
        if rw is None:
            return []
        res = []
        for o in range(len(rc)):
            acc = rc[o]
            for j in range(len(h)):
                acc = f.mac(acc, rw[o][j], h[j])
            res.append(f.end_sum(acc))
        return res

    states, outputs = [list(h)], [out(h)]
    for x in xs:
        xf = [f.const(Fraction(v)) for v in x]
        new = []
        for i in range(len(bf)):
            acc = bf[i]
            for k in range(len(xf)):
                acc = f.mac(acc, Wf[i][k], xf[k])
            for j in range(len(h)):
                acc = f.mac(acc, Vf[i][j], h[j])
            new.append(f.act(activation, f.end_sum(acc)))
        h = new
        states.append(list(h))
        outputs.append(out(h))
    if isinstance(f, _ExactFmt) and not f.fits_f64:
        st_arr = np.empty((len(states), len(h0)), dtype=object)
        out_arr = np.empty((len(outputs), len(outputs[0])), dtype=object)
        for t, row in enumerate(states):
            st_arr[t, :] = row
        for t, row in enumerate(outputs):
            out_arr[t, :] = row
        return st_arr, out_arr
    return (np.array([[float(v) for v in row] for row in states], dtype=np.float64).reshape(len(states), len(h0)),
            np.array([[float(v) for v in row] for row in outputs], dtype=np.float64).reshape(len(outputs), -1))
