"""The half formats with f32 sums (``accumulate="f32"``, README "Half formats with f32
sums"): every engine against the pure-Python reference bit for bit (hypothesis), batches
against single runs for any thread count, hand-checked sums, and the refusals."""

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

HALF = ["bf16", "f16"]


@pytest.mark.parametrize("fmt", HALF)
@pytest.mark.parametrize("fma", [False, True])
@given(case=float_cases())
def test_simple_rnn_equals_the_reference_bitwise(fmt, fma, case):
    spec, xs = case
    net = build(spec)
    run = net.run(as_input(xs, spec["n"]), dtype=fmt, fma=fma, accumulate="f32")
    states, outputs = ref.run_float(spec["V"], spec["W"], spec["b"], spec["h0"], spec["activation"], xs, fmt,
                                    spec["readout"], fma=fma, accumulate="f32")
    assert np.array_equal(np.asarray(run.states, dtype=np.float64), states, equal_nan=True)
    if spec["readout"]:
        assert np.array_equal(np.asarray(run.outputs, dtype=np.float64), outputs, equal_nan=True)
    if xs:
        b = net.run_batch(np.array(xs, dtype=object).reshape(1, len(xs), spec["n"]), dtype=fmt, fma=fma,
                          h0=np.array(spec["h0"], dtype=object).reshape(1, -1), accumulate="f32")
        assert np.array_equal(np.asarray(b.states[0], dtype=np.float64), states[1:], equal_nan=True)
        if spec["readout"]:
            assert np.array_equal(np.asarray(b.outputs[0], dtype=np.float64), outputs[1:], equal_nan=True)


@settings(max_examples=60)
@given(stacks(ALL_ACTS), st.sampled_from(HALF), st.booleans())
def test_cells_equal_the_reference_bitwise(case, fmt, fma):
    layers, n, xs, h0, c0 = case
    net = build_stack(layers)
    top, _, _ = ref_cells.run(layers, xs, fmt, h0, c0, fma=fma, accumulate="f32")
    want = as_array(top, net.hidden_size, fmt)
    b = run_batch_of_one(net, case, fmt, fma=fma, accumulate="f32")
    assert np.array_equal(b.states[0].astype(np.float64), want, equal_nan=True)
    one = net.run(np.array(xs, dtype=object).reshape(len(xs), n), dtype=fmt, h0=h0, c0=c0, fma=fma, accumulate="f32")
    assert np.array_equal(np.asarray(one.states[1:], dtype=np.float64), want, equal_nan=True)


def torch_net(kind: str, hidden: int, inputs: int, seed: int):
    rng = np.random.default_rng(seed)
    g = {"rnn": 1, "lstm": 4, "gru": 3}[kind]
    sd = {"weight_ih_l0": rng.uniform(-1, 1, (g * hidden, inputs)), "weight_hh_l0": rng.uniform(-1, 1, (g * hidden, hidden)) / 2,
          "bias_ih_l0": rng.uniform(-1, 1, g * hidden), "bias_hh_l0": rng.uniform(-1, 1, g * hidden)}
    return {"rnn": rs.SimpleRNN.from_torch, "lstm": rs.LSTM.from_torch, "gru": rs.GRU.from_torch}[kind](sd)


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("fmt", HALF)
@pytest.mark.parametrize("hidden", [16, 20])
def test_batches_equal_single_runs_for_any_thread_count(kind, fmt, hidden):
    # hidden 16: whole vectors per gate, where the tiles' gate split makes R(R(gi) + R(gh))
    # from the f32 sums as its last step (hidden 20: the cells' loops make it)
    B, T, inputs = 13, 9, 3
    net = torch_net(kind, hidden, inputs, seed=hidden)
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (B, T, inputs))
    lengths = rng.integers(0, T + 1, B)
    for fma in (False, True):
        runs = [net.run_batch(x, dtype=fmt, lengths=lengths, threads=t, fma=fma, accumulate="f32") for t in (1, 2, 3)]
        for r in runs[1:]:
            assert np.array_equal(r.states, runs[0].states) and np.array_equal(r.final, runs[0].final)
        for s in range(B):
            one = net.run(x[s, : lengths[s]], dtype=fmt, fma=fma, accumulate="f32").states[1:]
            assert np.array_equal(runs[0].states[s, : lengths[s]], one)
        own = net.run_batch(x, dtype=fmt, lengths=lengths, fma=fma).states
        assert not np.array_equal(own, runs[0].states), "f32 sums change some values of a real-valued run"


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_f32_sums_are_closer_to_f64_than_the_half_formats_own(kind):
    net = torch_net(kind, 64, 8, seed=3)
    x = np.random.default_rng(4).uniform(-1, 1, (32, 20, 8))
    exact = net.run_batch(x, dtype="f64").states
    for fmt in HALF:
        own = np.abs(net.run_batch(x, dtype=fmt).states - exact).mean()
        wide = np.abs(net.run_batch(x, dtype=fmt, accumulate="f32").states - exact).mean()
        assert wide < own, (fmt, wide, own)


def test_hand_checked_sums():
    # bf16: 256 + 1·1 + 1·1: the format's own steps stay at 256 (its quantum there is 2; each
    # 257 ties to even), f32's reach 258, which bf16 holds
    net = rs.SimpleRNN(V=[[0]], W=[[1, 1]], b=[256], activation="identity")
    x = [[1, 1]]
    assert net.run(x, dtype="bf16").states[1, 0] == 256
    assert net.run(x, dtype="bf16", accumulate="f32").states[1, 0] == 258
    assert net.run_batch(np.array([x] * 3), dtype="bf16", accumulate="f32").states[:, 0, 0].tolist() == [258] * 3
    # f16: the same at 2048 (quantum 2)
    net = rs.SimpleRNN(V=[[0]], W=[[1, 1]], b=[2048], activation="identity")
    assert net.run(x, dtype="f16").states[1, 0] == 2048
    assert net.run(x, dtype="f16", accumulate="f32").states[1, 0] == 2050
    # one rounding at the end: 256 + 3·1 = 259 is a tie between 258 and 260 -> 260 (even)
    net = rs.SimpleRNN(V=[[0]], W=[[1, 1, 1]], b=[256], activation="identity")
    assert net.run([[1, 1, 1]], dtype="bf16", accumulate="f32").states[1, 0] == 260
    # elementwise operations stay the half format's: the sum is rounded before the activation
    net = rs.SimpleRNN(V=[[0]], W=[[Fraction(1, 1024)]], b=[1], activation="relu")
    assert net.run([[1]], dtype="bf16", accumulate="f32").states[1, 0] == 1  # 1 + 2^-10 -> 1 in bf16


def test_accumulate_is_refused_where_it_means_nothing():
    net = rs.SimpleRNN(V=[[0]], W=[[1]], b=[0], activation="identity")
    lstm = torch_net("lstm", 2, 1, seed=0)
    for dtype in ("f64", "exact", rs.FloatFormat(5, 4)):
        with pytest.raises(rs.UnsupportedError, match="accumulate"):
            net.run([[1]], dtype=dtype, accumulate="f32")
        with pytest.raises(rs.UnsupportedError, match="accumulate"):
            lstm.run_batch(np.zeros((1, 1, 1)), dtype=dtype, accumulate="f32")
    for bad in ("f64", "bf16", ""):
        with pytest.raises(rs.InvalidInputError, match="accumulate"):
            net.run_batch(np.zeros((1, 1, 1)), dtype="bf16", accumulate=bad)
    # f32's own sums are f32's: the option names them
    x = np.random.default_rng(0).uniform(-1, 1, (2, 5, 1))
    assert np.array_equal(lstm.run_batch(x, dtype="f32", accumulate="f32").states, lstm.run_batch(x, dtype="f32").states)
