"""Turning user values (ints, Fractions, "p/q" strings, floats, numpy arrays) into the two
forms the native core accepts: a float64, float32 or float16 ndarray (taken at its exact
binary values; float32 and float16 arrays go as they are, so a dtype="f32" or "f16" run
reads them without a float64 round trip) or a pair ``(shape, ["p/q", ...])`` of exact
strings. Problems are collected, never raised one by one.
"""

from __future__ import annotations

import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

_EXACT_FLOAT_INT = 2**53


def _index(name: str, shape: tuple[int, ...], flat: int) -> str:
    if not shape:
        return name
    idx = np.unravel_index(flat, shape)
    return f"{name}[{', '.join(str(int(i)) for i in idx)}]"


def _int_text(n: int) -> str:
    """Decimal for small ints, hexadecimal for big ones (no int-to-str digit limit, linear time)."""
    return str(n) if -(2**63) < n < 2**63 else hex(n)


def _element(value: Any) -> str | None:
    """Exact string for one scalar, or None when it is not a number."""
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, (int, np.integer)):
        return _int_text(int(value))
    if isinstance(value, Fraction):
        return f"{_int_text(value.numerator)}/{_int_text(value.denominator)}"
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if f != f or f in (float("inf"), float("-inf")):
            return "nan"  # the core reports it with its index
        n, d = f.as_integer_ratio()
        return f"{_int_text(n)}/{_int_text(d)}"
    if isinstance(value, Decimal):
        if not value.is_finite():
            return "nan"
        fr = Fraction(value)
        return f"{fr.numerator}/{fr.denominator}"
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Rational):
        return f"{value.numerator}/{value.denominator}"
    return None


def tensor(name: str, value: Any, problems: list[str]) -> Any:
    """Payload for the core, or None after recording why ``value`` cannot be a tensor."""
    if isinstance(value, np.ndarray) and value.dtype in (np.float32, np.float16):
        return np.ascontiguousarray(value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return np.ascontiguousarray(value, dtype=np.float64)
    if isinstance(value, np.ndarray) and value.dtype.kind in "iub":
        if value.size == 0 or int(np.max(np.abs(value.astype(object)))) < _EXACT_FLOAT_INT:
            return np.ascontiguousarray(value, dtype=np.float64)
    if isinstance(value, np.ndarray) and value.dtype.kind not in "iubfO":
        problems.append(f"{name}: arrays of dtype {value.dtype} are not numbers")
        return None
    try:
        arr = np.asarray(value, dtype=object)
    except ValueError as e:  # ragged nesting numpy cannot even hold
        problems.append(f"{name}: not a rectangular array ({e})")
        return None
    shape = tuple(int(s) for s in arr.shape)
    strings: list[str] = []
    bad = 0
    for i, v in enumerate(arr.reshape(-1)):
        if isinstance(v, (float, np.floating, Decimal)) and not _finite(v):
            if bad < 5:
                problems.append(f"{_index(name, shape, i)} is {v}: values must be finite")
            bad += 1
            strings.append("0")
            continue
        s = _element(v)
        if s is None:
            if bad < 5:
                kind = "a list (ragged nesting?)" if isinstance(v, (list, tuple)) else type(v).__name__
                problems.append(f"{_index(name, shape, i)}: {kind} {v!r:.40} is not a number")
            bad += 1
            s = "0"
        strings.append(s)
    if bad > 5:
        problems.append(f"{name}: {bad - 5} more values that are not numbers")
    return (list(shape), strings)


def _finite(v: Any) -> bool:
    return bool(v.is_finite()) if isinstance(v, Decimal) else bool(np.isfinite(float(v)))


def dtype_name(dtype: Any) -> str:
    """The canonical name ("exact", "f64", ..., "fp(M,E)") of a dtype given as a name,
    a numpy dtype (np.float16) or a FloatFormat; InvalidInputError if unknown."""
    from . import _core
    from .formats import FloatFormat

    if isinstance(dtype, FloatFormat):
        return dtype.name
    if not isinstance(dtype, str):
        try:
            dtype = np.dtype(dtype).name
        except TypeError:
            dtype = str(dtype)
    return _core.dtype_name(dtype)
