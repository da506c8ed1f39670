"""Hypothesis strategies for random networks and inputs, shared by the engine tests."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import strategies as st

PIECEWISE_LINEAR = ["identity", "relu", "slu", "step", "sign", "sat_sigmoid"]


def fractions(max_num: int = 8, dens: tuple[int, ...] = (1, 2, 3, 4, 8)) -> st.SearchStrategy[Fraction]:
    return st.builds(Fraction, st.integers(-max_num, max_num), st.sampled_from(dens))


def dyadic_floats() -> st.SearchStrategy[float]:
    """Floats with few significant bits (exact in every format down to f16)."""
    return st.builds(lambda n, e: n / 2.0**e, st.integers(-64, 64), st.integers(0, 5))


@st.composite
def networks(draw, values=None, activations=None, max_hidden: int = 5, max_input: int = 3, readout: bool = True):
    values = values if values is not None else fractions()
    d = draw(st.integers(1, max_hidden))
    n = draw(st.integers(0, max_input))
    V = [[draw(values) for _ in range(d)] for _ in range(d)]
    W = [[draw(values) for _ in range(n)] for _ in range(d)]
    b = [draw(values) for _ in range(d)]
    h0 = [draw(values) for _ in range(d)]
    act = draw(st.sampled_from(activations or PIECEWISE_LINEAR))
    ro = None
    if readout and draw(st.booleans()):
        out = draw(st.integers(1, 2))
        ro = ([[draw(values) for _ in range(d)] for _ in range(out)], [draw(values) for _ in range(out)])
    return dict(V=V, W=W, b=b, h0=h0, activation=act, readout=ro, d=d, n=n)


@st.composite
def sequences(draw, n: int, values=None, max_len: int = 8):
    values = values if values is not None else fractions()
    t = draw(st.integers(0, max_len))
    return [[draw(values) for _ in range(n)] for _ in range(t)]


@st.composite
def float_cases(draw):
    """(network spec, input rows) for bitwise float tests: piecewise-linear activations and
    values that are Fractions, dyadic floats or float32 numbers (so products and sums round)."""
    values = st.one_of(fractions(), dyadic_floats().map(Fraction), st.floats(-3, 3, width=32).map(Fraction))
    spec = draw(networks(values=values, activations=PIECEWISE_LINEAR))
    return spec, draw(sequences(spec["n"], values=values))
