"""fma=True: every product-sum acc + w*z of the affine maps rounded once (README "Fused
multiply-add"). The engines against the pure-Python reference, whose fma is the exact
Fraction value rounded once; hand-checked cases where fusing changes the result; batches
against single runs for any thread count."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rnnsim as rs
from rnnsim import reference as ref
from rnnsim import reference_cells as ref_cells
from strategies import float_cases
from test_cells_reference import ALL_ACTS, as_array, build as build_stack, run_batch_of_one, stacks
from test_engines import as_input, build

FORMATS = ["f64", "f32", "f16", "bf16"]


@pytest.mark.parametrize("fmt", FORMATS + ["fp(4,3)", "fp(24,9)", "fp(60,15)"])
@given(case=float_cases())
def test_simple_rnn_fma_equals_the_reference_bitwise(fmt, case):
    spec, xs = case
    net = build(spec)
    run = net.run(as_input(xs, spec["n"]), dtype=fmt, fma=True)
    states, outputs = ref.run_float(spec["V"], spec["W"], spec["b"], spec["h0"], spec["activation"], xs, fmt,
                                    spec["readout"], fma=True)
    if fmt == "fp(60,15)":  # wider than f64: exact values on both sides
        got = [[Fraction(str(v)) if not isinstance(v, float) else v for v in row] for row in run.states.tolist()]
        assert got == states.tolist()
        return
    assert np.array_equal(np.asarray(run.states, dtype=np.float64), states, equal_nan=True)
    if spec["readout"]:
        assert np.array_equal(np.asarray(run.outputs, dtype=np.float64), outputs, equal_nan=True)
    # the batch engine (lock-step kernel for the builtin formats) gives the same bits
    if xs:
        b = net.run_batch(np.array(xs, dtype=object).reshape(1, len(xs), spec["n"]), dtype=fmt, fma=True,
                          h0=np.array(spec["h0"], dtype=object).reshape(1, -1))
        assert np.array_equal(np.asarray(b.states[0], dtype=np.float64), states[1:], equal_nan=True)


@settings(max_examples=60)
@given(stacks(ALL_ACTS), st.sampled_from(FORMATS))
def test_cells_fma_equal_the_reference_bitwise(case, fmt):
    layers, n, xs, h0, c0 = case
    net = build_stack(layers)
    b = run_batch_of_one(net, case, fmt, fma=True)
    top, fin_h, _ = ref_cells.run(layers, xs, fmt, h0, c0, fma=True)
    assert np.array_equal(b.states[0].astype(np.float64), as_array(top, net.hidden_size, fmt), equal_nan=True)
    one = net.run(np.array(xs, dtype=object).reshape(len(xs), n), dtype=fmt, h0=h0, c0=c0, fma=True)
    assert np.array_equal(np.asarray(one.states[1:], dtype=np.float64), as_array(top, net.hidden_size, fmt), equal_nan=True)


def test_fusing_changes_exactly_the_documented_cases():
    # f32: w = z = 1 + 2^-12, w*z = 1 + 2^-11 + 2^-24 (a tie in f32, rounded to 1 + 2^-11);
    # with b = -(1 + 2^-11) the separate operations cancel to 0, the fused one keeps 2^-24
    w = 1 + Fraction(1, 2**12)
    net = rs.SimpleRNN(V=[[0]], W=[[w]], b=[-(1 + Fraction(1, 2**11))], activation="identity")
    assert net.run([[w]], dtype="f32").states[1, 0] == 0
    assert net.run([[w]], dtype="f32", fma=True).states[1, 0] == 2.0**-24
    # f16: b + w*z = 2^-21 + 2^-24 + (1 + 2^-11 - 2^-21) is just above the midpoint 1 + 2^-11:
    # fused rounds up; separately w*z rounds to 1 and the sum stays 1. (An f32 fma followed
    # by a rounding to f16 would land on the midpoint and round down: double rounding.)
    net = rs.SimpleRNN(V=[[0]], W=[[1 + Fraction(1, 2**10)]], b=[Fraction(1, 2**21) + Fraction(1, 2**24)],
                       activation="identity")
    x = [[1 - Fraction(1, 2**11)]]
    assert net.run(x, dtype="f16").states[1, 0] == 1
    assert net.run(x, dtype="f16", fma=True).states[1, 0] == 1 + 2.0**-10
    assert net.run_batch(np.array([x] * 3, dtype=object), dtype="f16", fma=True).states[:, 0, 0].tolist() == [1 + 2.0**-10] * 3
    # exact runs round nothing: fma changes nothing
    assert net.run(x, dtype="exact", fma=True).states[1, 0] == net.run(x, dtype="exact").states[1, 0]


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_fused_batches_equal_single_runs_for_any_thread_count(kind, fmt):
    rng = np.random.default_rng(5)
    H, I, B, T = 20, 3, 11, 9
    g = {"rnn": 1, "lstm": 4, "gru": 3}[kind]
    sd = {"weight_ih_l0": rng.uniform(-1, 1, (g * H, I)), "weight_hh_l0": rng.uniform(-1, 1, (g * H, H)) / 3,
          "bias_ih_l0": rng.uniform(-1, 1, g * H), "bias_hh_l0": rng.uniform(-1, 1, g * H)}
    net = {"rnn": lambda: rs.SimpleRNN.from_torch(sd), "lstm": lambda: rs.LSTM.from_torch(sd),
           "gru": lambda: rs.GRU.from_torch(sd)}[kind]()
    x = rng.uniform(-2, 2, (B, T, I))
    lengths = rng.integers(0, T + 1, B)
    runs = [net.run_batch(x, dtype=fmt, lengths=lengths, threads=t, fma=True) for t in (1, 2, 3)]
    for r in runs[1:]:
        assert np.array_equal(r.states, runs[0].states) and np.array_equal(r.final, runs[0].final)
    for s in range(B):
        one = net.run(x[s, : lengths[s]], dtype=fmt, fma=True).states[1:]
        assert np.array_equal(runs[0].states[s, : lengths[s]], one)
    unfused = net.run_batch(x, dtype=fmt, lengths=lengths).states
    assert not np.array_equal(unfused, runs[0].states), "fusing changes some low bits of a real-valued run"
