"""The engines against the pure-Python reference (rnnsim/reference.py): exact runs equal
Fraction arithmetic; float runs equal numpy arithmetic of the format under the documented
rounding (every multiply and add rounded, bias then inputs then recurrent terms)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rnnsim as rs
from rnnsim import reference as ref
from strategies import float_cases, networks, sequences


def build(spec) -> rs.SimpleRNN:
    ro = rs.Linear(*spec["readout"]) if spec["readout"] else None
    W = spec["W"] if spec["n"] else np.zeros((spec["d"], 0))
    return rs.SimpleRNN(V=spec["V"], W=W, b=spec["b"], h0=spec["h0"], activation=spec["activation"], readout=ro)


def as_input(xs, n):
    return xs if xs else np.zeros((0, n))


@given(st.data())
def test_exact_engine_equals_fraction_reference(data):
    spec = data.draw(networks())
    xs = data.draw(sequences(spec["n"]))
    net = build(spec)
    run = net.run(as_input(xs, spec["n"]), dtype="exact")
    states, outputs = ref.run_exact(spec["V"], spec["W"], spec["b"], spec["h0"], spec["activation"], xs, spec["readout"])
    assert run.states.shape == (len(xs) + 1, spec["d"])
    assert run.states.tolist() == states
    if spec["readout"]:
        assert run.outputs.tolist() == outputs
    else:
        assert run.outputs is None


@pytest.mark.parametrize("fmt", ["f64", "f32", "f16", "bf16"])
@given(case=float_cases())
def test_float_engines_equal_numpy_arithmetic_bitwise(fmt, case):
    spec, xs = case
    net = build(spec)
    run = net.run(as_input(xs, spec["n"]), dtype=fmt)
    states, outputs = ref.run_float(spec["V"], spec["W"], spec["b"], spec["h0"], spec["activation"], xs, fmt, spec["readout"])
    got = np.asarray(run.states, dtype=np.float64)
    assert np.array_equal(got, states, equal_nan=True), (got, states)
    if spec["readout"]:
        assert np.array_equal(np.asarray(run.outputs, dtype=np.float64), outputs, equal_nan=True)


@pytest.mark.parametrize("fmt,tol", [("f64", 1e-15), ("f32", 1e-6), ("f16", 1e-3), ("bf16", 1e-2)])
@given(data=st.data())
def test_tanh_and_sigmoid_follow_the_reference(fmt, tol, data):
    spec = data.draw(networks(activations=["tanh", "sigmoid"]))
    xs = data.draw(sequences(spec["n"]))
    run = build(spec).run(as_input(xs, spec["n"]), dtype=fmt)
    states, _ = ref.run_float(spec["V"], spec["W"], spec["b"], spec["h0"], spec["activation"], xs, fmt)
    np.testing.assert_allclose(np.asarray(run.states, dtype=np.float64), states, rtol=tol, atol=tol)


def test_result_dtypes_are_the_formats():
    net = rs.SimpleRNN(V=[[Fraction(1, 3)]], W=[[1]], b=[0], activation="identity")
    x = [[1], [1]]
    assert net.run(x, dtype="f64").states.dtype == np.float64
    assert net.run(x, dtype="f32").states.dtype == np.float32
    assert net.run(x, dtype="f16").states.dtype == np.float16
    assert net.run(x, dtype=np.float16).states.dtype == np.float16
    bf = net.run(x, dtype="bf16").states
    third = Fraction(ref.round_fraction(Fraction(1, 3), "bf16"))
    assert bf.dtype == np.float32 and bf[1, 0] == 1.0
    assert bf[2, 0] == ref.round_fraction(1 + third, "bf16") == 1.3359375


def test_f16_accumulates_in_f16_not_wider():
    # 2048 + 1 + 1 in f16: each addition is a tie rounded to even, so it stays 2048
    net = rs.SimpleRNN(V=[[0]], W=[[2048, 1, 1]], b=[0], activation="identity")
    assert net.run([[1, 1, 1]], dtype="f16").states[1, 0] == 2048
    assert net.run([[1, 1, 1]], dtype="f32").states[1, 0] == 2050


@given(st.data())
def test_float_runs_of_integer_networks_equal_exact_runs(data):
    """Small integer networks stay exactly representable in every format: float = exact."""
    spec = data.draw(networks(values=st.integers(-2, 2).map(Fraction), activations=["relu", "slu", "step", "sign", "sat_sigmoid"]))
    xs = data.draw(sequences(spec["n"], values=st.integers(0, 1).map(Fraction), max_len=6))
    net = build(spec)
    exact = net.run(as_input(xs, spec["n"]), dtype="exact").states.astype(float)
    for fmt in ["f64", "f32", "f16", "bf16"]:
        got = np.asarray(net.run(as_input(xs, spec["n"]), dtype=fmt).states, dtype=float)
        if np.all(np.abs(exact) <= 256):
            assert np.array_equal(got, exact), fmt


def test_exact_engine_handles_deep_base4_stacks():
    """A push-only base-4 stack s' = s/4 + 3/4 for 3000 ticks: 6000-bit denominators, exact."""
    net = rs.SimpleRNN(V=[[Fraction(1, 4), 0], [0, 0]], W=[[Fraction(3, 4)], [0]], b=[0, 0], activation="slu")
    run = net.run(np.ones((3000, 1)), dtype="exact")
    last = run.states[-1, 0]
    assert last == 1 - Fraction(1, 4**3000)
    assert last.denominator.bit_length() == 6001


def test_exact_tanh_is_unsupported_and_says_what_to_do():
    net = rs.SimpleRNN(V=[[1]], W=[[1]], b=[0], activation="tanh")
    with pytest.raises(rs.UnsupportedError, match="float"):
        net.run([[1]], dtype="exact")
    assert isinstance(net.run([[1]], dtype="f64").states, np.ndarray)


def test_max_bits_stops_growth_with_limit_exceeded():
    net = rs.SimpleRNN(V=[[Fraction(1, 3)]], W=[[1]], b=[Fraction(1, 7)], activation="identity")
    with pytest.raises(rs.LimitExceededError, match="max_bits"):
        net.run(np.ones((500, 1)), dtype="exact", max_bits=256)
    assert net.run(np.ones((50, 1)), dtype="exact", max_bits=256).states.shape == (51, 1)


def test_start_state_override_and_readout_at_t0():
    net = rs.SimpleRNN(V=[[1, 0], [0, 1]], W=[[1], [0]], b=[0, 0], activation="relu",
                       readout=rs.Linear([[1, 1]], [Fraction(1, 2)]))
    run = net.run(np.zeros((0, 1)), dtype="exact", h0=["1/3", 2])
    assert run.states.tolist() == [[Fraction(1, 3), 2]]
    assert run.outputs.tolist() == [[Fraction(17, 6)]]


def test_huge_exact_states_round_trip_as_start_states():
    """A 20,000-bit state (beyond Python's 4,300-digit int-to-str limit) goes back in as h0."""
    net = rs.SimpleRNN(V=[[Fraction(1, 4)]], W=[[Fraction(3, 4)]], b=[0], activation="slu")
    deep = net.run(np.ones((10_000, 1)), dtype="exact").states[-1]
    assert deep[0].denominator.bit_length() == 20_001
    again = net.run(np.ones((1, 1)), dtype="exact", h0=deep)
    assert again.states[1, 0] == deep[0] / 4 + Fraction(3, 4)


def test_cancelling_denominators_stay_small():
    """h = slu(h/3 + 2/3) stays exactly 1; the shared denominator must not grow as 3^t."""
    net = rs.SimpleRNN(V=[[Fraction(1, 3)]], W=[[Fraction(2, 3)]], b=[0], h0=[1], activation="slu")
    run = net.run(np.ones((3000, 1)), dtype="exact", max_bits=512)
    assert run.states[-1, 0] == 1
