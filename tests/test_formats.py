"""Custom float formats rs.FloatFormat(mantissa_bits, exponent_bits): bit identity with the
builtin formats, bit identity with the Fraction emulation of rnnsim/reference.py for odd
formats, hand-checked rounding (ties to even, subnormals, overflow, p = 2), errors."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rnnsim as rs
from rnnsim import reference as ref
from strategies import dyadic_floats, fractions, networks, sequences
from test_engines import as_input, build

BUILTIN_TWINS = [("f16", rs.FloatFormat(10, 5)), ("bf16", rs.FloatFormat(7, 8)),
                 ("f32", rs.FloatFormat(23, 8)), ("f64", rs.FloatFormat(52, 11))]


def bits_equal(a, b) -> bool:
    """Same float64 bits (so -0.0 != 0.0), NaNs anywhere both have one."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(np.uint64), b[~nan].view(np.uint64)))


def spread_values():
    """Weights that round in every format: thirds, small dyadics, wide-range floats."""
    return st.one_of(fractions(dens=(1, 3, 7, 10)), dyadic_floats().map(Fraction),
                     st.floats(-1e3, 1e3, width=32).map(Fraction),
                     st.builds(lambda m, e: Fraction(m, 2**e), st.integers(-9, 9), st.integers(10, 30)))


@pytest.mark.parametrize("name,fmt", BUILTIN_TWINS, ids=[n for n, _ in BUILTIN_TWINS])
@given(data=st.data())
def test_builtin_formats_and_their_float_format_twins_agree_bitwise(name, fmt, data):
    spec = data.draw(networks(values=spread_values(), activations=["identity", "relu", "slu", "step", "tanh", "sigmoid"]))
    xs = data.draw(sequences(spec["n"], values=spread_values()))
    net = build(spec)
    x = as_input(xs, spec["n"])
    a, b = net.run(x, dtype=name), net.run(x, dtype=fmt)
    assert b.dtype == fmt.name and b.states.dtype == np.float64
    assert bits_equal(a.states, b.states), (a.states, b.states)
    if spec["readout"]:
        assert bits_equal(a.outputs, b.outputs)
    # the batch path, with the string form of the dtype and per-sequence lengths
    batch = np.asarray([np.asarray(x, dtype=np.float64)] * 3) if len(xs) else np.zeros((3, 0, spec["n"]))
    lengths = [len(xs), len(xs) // 2, 0]
    ba = net.run_batch(batch, dtype=name, lengths=lengths, threads=2)
    bb = net.run_batch(batch, dtype=str(fmt), lengths=lengths, threads=1)
    assert bits_equal(ba.states, bb.states) and bits_equal(ba.final, bb.final)


ODD_FORMATS = [rs.FloatFormat(1, 2), rs.FloatFormat(3, 4), rs.FloatFormat(12, 6), rs.FloatFormat(24, 12),
               rs.FloatFormat(60, 15), rs.FloatFormat(112, 15)]


def exact_equal(got, want) -> bool:
    """Elementwise equality of Fraction/float object arrays (or float64 arrays)."""
    got, want = np.asarray(got, dtype=object), np.asarray(want, dtype=object)
    if got.shape != want.shape:
        return False
    for g, w in zip(got.reshape(-1), want.reshape(-1)):
        if isinstance(w, float) and w != w:
            if not (isinstance(g, float) and g != g):
                return False
        elif g != w:
            return False
    return True


@pytest.mark.parametrize("fmt", ODD_FORMATS, ids=str)
@given(data=st.data())
def test_odd_formats_equal_the_fraction_emulation(fmt, data):
    wide = fmt.precision > 53 or fmt.exponent_bits > 11
    acts = ["identity", "relu", "slu", "step"] + ([] if wide else ["tanh", "sigmoid"])
    spec = data.draw(networks(values=spread_values(), activations=acts))
    xs = data.draw(sequences(spec["n"], values=spread_values()))
    run = build(spec).run(as_input(xs, spec["n"]), dtype=fmt)
    states, outputs = ref.run_float(spec["V"], spec["W"], spec["b"], spec["h0"], spec["activation"], xs, str(fmt),
                                    spec["readout"])
    assert (run.states.dtype == object) == wide
    assert exact_equal(run.states, states), (run.states, states)
    if spec["readout"]:
        assert exact_equal(run.outputs, outputs)


def product(fmt, a, b):
    """a·b in fmt through the engine: h = identity(0 + a·x) with x = b."""
    net = rs.SimpleRNN(V=[[0]], W=[[a]], b=[0], activation="identity")
    return net.run([[b]], dtype=fmt).states[-1, 0]


def total(fmt, a, b):
    """a + b in fmt: h = identity(a + 1·b)."""
    net = rs.SimpleRNN(V=[[0]], W=[[1]], b=[a], activation="identity")
    return net.run([[b]], dtype=fmt).states[-1, 0]


def test_hand_checked_rounding():
    p2 = rs.FloatFormat(1, 2)  # p = 2, emax = 1, emin = 0: 0, 0.5 (subnormal), 1, 1.5, 2, 3
    assert total(p2, 1, 1.5) == 2.0           # 2.5 ties to the even 2
    assert product(p2, 1.5, 1.5) == 2.0       # 2.25
    assert product(p2, 1.5, 3) == np.inf      # 4.5: overflow
    assert total(p2, 1.5, 2) == np.inf        # 3.5 rounds to 4 > 3
    assert product(p2, 0.5, 0.5) == 0.0       # 0.25: half the smallest subnormal, tie to 0
    assert product(p2, 0.5, 1.5) == 1.0       # 0.75: tie between 0.5 and 1, to even 1
    f16 = rs.FloatFormat(10, 5)
    assert total(f16, 2048, 1) == 2048.0      # tie to even
    assert total(f16, 2048, 3) == 2052.0
    assert product(f16, 2.0**-14, 2.0**-10) == 2.0**-24   # the smallest subnormal
    assert product(f16, 2.0**-14, 2.0**-11) == 0.0        # half of it: tie to 0
    assert product(f16, 256, 256) == np.inf               # 65536 > 65504
    q = rs.FloatFormat(112, 15)
    assert total(q, 1, Fraction(1, 2**113)) == 1                         # tie to even
    assert total(q, 1, Fraction(3, 2**113)) == 1 + Fraction(1, 2**111)
    assert product(q, Fraction(1, 3), 3) == 1                            # (1/3 rounded)·3 = 1 - 2^-114 -> 1
    assert product(q, 2**16000, 2**400) == np.inf


def test_dtype_forms_and_errors():
    f = rs.FloatFormat(10, 5)
    assert (str(f), f.precision, f.emin, f.emax) == ("fp(10,5)", 11, -14, 15)
    net = rs.SimpleRNN(V=[[Fraction(1, 3)]], W=[[1]], b=[0], activation="identity")
    for dt in ("fp(10,5)", "FP( 10 , 5 )", "FloatFormat(10, 5)", "fp(mantissa_bits=10, exponent_bits=5)", f):
        assert net.run([[1]], dtype=dt).dtype == "fp(10,5)"
    with pytest.raises(rs.InvalidInputError, match="mantissa_bits") as e:
        rs.FloatFormat(0, 40)
    assert len(e.value.problems) == 2
    for bad in ("fp(10)", "fp(a,b)", "fp(10,1)", "fp(128,8)"):
        with pytest.raises(rs.InvalidInputError):
            net.run([[1]], dtype=bad)


def test_compiled_dfa_runs_in_custom_formats():
    c = rs.compile(rs.tomita(3))
    assert c.verify(8, dtype=rs.FloatFormat(2, 3)) is None
    assert c.accepts("0110", dtype="fp(60,15)") == rs.tomita(3).accepts("0110")
    assert c.accepts_batch(["0", "011", "1101"], dtype=rs.FloatFormat(3, 4)) == [rs.tomita(3).accepts(w) for w in ["0", "011", "1101"]]


def test_wide_format_batches_return_exact_fractions():
    net = rs.SimpleRNN(V=[[Fraction(1, 3)]], W=[[1]], b=[0], activation="relu")
    b = net.run_batch(np.ones((2, 3, 1)), dtype=rs.FloatFormat(112, 15), lengths=[3, 1])
    assert b.states.dtype == object and b.states.shape == (2, 3, 1) and b.final.shape == (1, 2, 1)
    third = ref.round_exact(Fraction(1, 3), "fp(112,15)")
    h1 = ref.round_exact(third * 0 + 1, "fp(112,15)")
    assert b.states[1, 0, 0] == h1 and b.states[1, 1, 0] == 0 and b.final[0, 1, 0] == h1
    h2 = ref.round_exact(1 + ref.round_exact(third * h1, "fp(112,15)"), "fp(112,15)")
    assert b.states[0, 1, 0] == h2 and isinstance(h2, Fraction) and h2.denominator > 2**100
