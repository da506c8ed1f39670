"""Custom binary float formats: ``FloatFormat(mantissa_bits, exponent_bits)``, IEEE style.

``mantissa_bits`` counts the *stored* fraction bits and ``exponent_bits`` the exponent field
(IEEE 754-2019 §3.6): precision p = mantissa_bits + 1, emax = 2**(exponent_bits - 1) - 1,
emin = 1 - emax, subnormals below 2**emin, overflow to ±inf past (2 - 2**(1-p)) * 2**emax.
(10, 5) is float16, (7, 8) bfloat16, (23, 8) float32, (52, 11) float64, (112, 15) binary128.
A format is accepted wherever a dtype is, as the object or as its name ``"fp(M,E)"``; every
multiply and add is rounded to it (nearest, ties to even), see the README.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _core


@dataclass(frozen=True)
class FloatFormat:
    """A float format with ``mantissa_bits`` stored fraction bits (1..127) and
    ``exponent_bits`` exponent bits (2..20); ``str(fmt)`` is its dtype name ``"fp(M,E)"``."""

    mantissa_bits: int
    exponent_bits: int

    def __post_init__(self) -> None:
        # the core checks the ranges (InvalidInputError listing every problem)
        _core.dtype_name(f"fp({int(self.mantissa_bits)},{int(self.exponent_bits)})")

    @property
    def name(self) -> str:
        return f"fp({int(self.mantissa_bits)},{int(self.exponent_bits)})"

    @property
    def precision(self) -> int:
        """Significand bits including the hidden bit: p = mantissa_bits + 1."""
        return int(self.mantissa_bits) + 1

    @property
    def emax(self) -> int:
        return 2 ** (int(self.exponent_bits) - 1) - 1

    @property
    def emin(self) -> int:
        return 1 - self.emax

    def __str__(self) -> str:
        return self.name
