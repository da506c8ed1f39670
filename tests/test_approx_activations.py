"""approx_activations=True: tanh and sigmoid by the fixed f32 operation sequence of
``rnnsim.reference_approx`` (README "Approximate activations"). The engines against that
reference bit for bit (hypothesis, every cell kind, single runs and batches, fused or
not); the error against the correctly rounded activations; the plan cache keeps both kinds
of plan apart; every other dtype refuses the option."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rnnsim as rs
from rnnsim import reference as ref
from rnnsim import reference_cells as ref_cells
from rnnsim.reference_approx import approx_sigmoid, approx_tanh
from strategies import float_cases
from test_cells_reference import ALL_ACTS, as_array, build as build_stack, run_batch_of_one, stacks
from test_engines import as_input, build


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in f32 steps (both finite, float32)."""
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def _inputs() -> np.ndarray:
    """f32 values across the ranges where the formulas change: the polynomial of tanh
    (|x| < 0.625), the exponential, the clamps (tanh at 9.5, sigmoid at 104), subnormal
    results of sigmoid, signed zeros, huge values (inputs must be finite)."""
    rng = np.random.default_rng(5)
    xs = np.concatenate([
        rng.uniform(-1, 1, 600), rng.uniform(-12, 12, 600), rng.uniform(-110, 30, 600),
        np.float32(0.625) * np.array([1, -1]), np.nextafter(np.float32(0.625), np.float32(0)) * np.array([1, -1]),
        [0.0, -0.0, 1e-40, -1e-40, 9.5, -9.5, -87.0, -100.0, -103.9, -104.0, -200.0, 1e30, -1e30]])
    return xs.astype(np.float32)


def _through_network(act: str, xs: np.ndarray, **kw) -> np.ndarray:
    """act(x) for every x, as states of a one-unit network h = act(1·x) (batch rows)."""
    net = rs.SimpleRNN(V=[[0]], W=[[1]], b=[0], activation=act)
    return net.run_batch(xs.reshape(-1, 1, 1), dtype="f32", **kw).states[:, 0, 0]


@pytest.mark.parametrize("act,fn", [("tanh", approx_tanh), ("sigmoid", approx_sigmoid)])
def test_each_value_is_the_reference_and_within_two_ulps(act, fn):
    xs = _inputs()
    got = _through_network(act, xs, approx_activations=True)
    pre = np.float32(0) + xs  # the network's pre-activation 0 + 1·x (so −0 becomes +0)
    want = np.array([fn(x) for x in pre], dtype=np.float32)
    assert got.tobytes() == want.tobytes()
    exact = _through_network(act, xs)
    assert _ulps(got, exact).max() <= 2
    # the option does something: some values differ from the correctly rounded ones
    assert (got != exact).sum() > 0


@settings(max_examples=40)
@given(case=float_cases(), fma=st.booleans())
def test_simple_rnn_equals_the_reference_bitwise(case, fma):
    spec, xs = case
    net = build(spec)
    run = net.run(as_input(xs, spec["n"]), dtype="f32", fma=fma, approx_activations=True)
    states, outputs = ref.run_float(spec["V"], spec["W"], spec["b"], spec["h0"], spec["activation"], xs, "f32",
                                    spec["readout"], fma=fma, approx_activations=True)
    assert np.array_equal(np.asarray(run.states, dtype=np.float64), states, equal_nan=True)
    if spec["readout"]:
        assert np.array_equal(np.asarray(run.outputs, dtype=np.float64), outputs, equal_nan=True)
    if xs:
        b = net.run_batch(np.array(xs, dtype=object).reshape(1, len(xs), spec["n"]), dtype="f32", fma=fma,
                          h0=np.array(spec["h0"], dtype=object).reshape(1, -1), approx_activations=True)
        assert np.array_equal(np.asarray(b.states[0], dtype=np.float64), states[1:], equal_nan=True)


@settings(max_examples=40)
@given(stacks(ALL_ACTS), st.booleans())
def test_cells_equal_the_reference_bitwise(case, fma):
    layers, n, xs, h0, c0 = case
    net = build_stack(layers)
    b = run_batch_of_one(net, case, "f32", fma=fma, approx_activations=True)
    top, _, _ = ref_cells.run(layers, xs, "f32", h0, c0, fma=fma, approx_activations=True)
    assert np.array_equal(b.states[0].astype(np.float64), as_array(top, net.hidden_size, "f32"), equal_nan=True)
    one = net.run(np.array(xs, dtype=object).reshape(len(xs), n), dtype="f32", h0=h0, c0=c0, fma=fma,
                  approx_activations=True)
    assert np.array_equal(np.asarray(one.states[1:], dtype=np.float64), as_array(top, net.hidden_size, "f32"),
                          equal_nan=True)


def _torch_style(kind: str, hidden: int, inputs: int, seed: int):
    g = {"lstm": 4, "gru": 3}[kind]
    rng = np.random.default_rng(seed)
    sc = 2 / np.sqrt(hidden)
    sd = {name: rng.uniform(-sc, sc, shape).astype(np.float32) for name, shape in
          (("weight_ih_l0", (g * hidden, inputs)), ("weight_hh_l0", (g * hidden, hidden)),
           ("bias_ih_l0", (g * hidden,)), ("bias_hh_l0", (g * hidden,)))}
    return (rs.LSTM if kind == "lstm" else rs.GRU).from_torch(sd), sd


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("hidden", [5, 16, 40])
def test_vector_kernels_equal_the_reference(kind, hidden):
    """Batch 1 (the single-sequence register kernel), batch 6 (the tiles) and one-sequence
    runs give the reference's bits, for any thread count."""
    net, sd = _torch_style(kind, hidden, 3, seed=hidden)
    x = np.random.default_rng(hidden).standard_normal((6, 5, 3)).astype(np.float32) * 2
    layer = (kind, {k[:-3]: v for k, v in sd.items()}, {})  # the reference reads floats exactly
    batch = net.run_batch(x, dtype="f32", fma=True, approx_activations=True, threads=2)
    one = net.run_batch(x[:1], dtype="f32", fma=True, approx_activations=True, threads=1)
    for s in (0, 5):
        top, _, _ = ref_cells.run([layer], x[s].tolist(), "f32", fma=True, approx_activations=True)
        want = as_array(top, hidden, "f32").astype(np.float32)
        assert batch.states[s].tobytes() == want.tobytes()
    assert one.states[0].tobytes() == batch.states[0].tobytes()
    assert net.run_batch(x, dtype="f32", fma=True, approx_activations=True, threads=1).states.tobytes() == \
        batch.states.tobytes()


def test_the_plan_cache_keeps_both_kinds_apart():
    net, _ = _torch_style("lstm", 16, 3, seed=1)
    x = np.random.default_rng(0).standard_normal((4, 30, 3)).astype(np.float32)
    first = net.run_batch(x, dtype="f32").states
    approx = net.run_batch(x, dtype="f32", approx_activations=True).states
    again = net.run_batch(x, dtype="f32").states
    assert first.tobytes() == again.tobytes()
    assert first.tobytes() != approx.tobytes()
    assert np.abs(first - approx).max() < 1e-4


@pytest.mark.parametrize("dtype", ["f64", "f16", "bf16", "fp(10,5)", "exact"])
def test_other_dtypes_refuse_the_option(dtype):
    simple = rs.SimpleRNN(V=[[0]], W=[[1]], b=[0], activation="tanh" if dtype != "exact" else "relu")
    cells, _ = _torch_style("gru", 4, 2, seed=0)
    with pytest.raises(rs.UnsupportedError, match="f32"):
        simple.run([[1]], dtype=dtype, approx_activations=True)
    with pytest.raises(rs.UnsupportedError, match="f32"):
        simple.run_batch([[[1]]], dtype=dtype, approx_activations=True)
    with pytest.raises(rs.UnsupportedError, match="f32"):
        cells.run([[1, 2]], dtype=dtype, approx_activations=True)
    with pytest.raises(rs.UnsupportedError, match="f32"):
        cells.run_batch([[[1, 2]]], dtype=dtype, approx_activations=True)
