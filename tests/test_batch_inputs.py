"""The batch engines' input and output paths: float32 and float16 arrays read directly
(dtype="f32" and "f16" runs get no float64 round trip), arrays of any memory layout (strided, Fortran-ordered,
handed to the core directly), non-finite float32 values reported; gated stacks (LSTM,
GRU, Doubling-LSTM) with ragged lengths split over many blocks, against single runs."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import rnnsim as rs
from rnnsim.errors import InvalidInputError
from rnnsim.reference import round_fraction

FORMATS = ["f64", "f32", "f16", "bf16"]


def simple_net(seed=0, d=6, n=3):
    rng = np.random.default_rng(seed)
    return rs.SimpleRNN(V=rng.normal(size=(d, d)) / d, W=rng.normal(size=(d, n)), b=rng.normal(size=d),
                        activation="tanh", readout=rs.Linear(rng.normal(size=(2, d)), rng.normal(size=2)))


def q(rng, *shape):
    return rng.integers(-24, 25, size=shape) / 8.0


def gated_stack(rng, n=3):
    lstm = rs.LSTM(q(rng, 20, n), q(rng, 20, 5), q(rng, 20), q(rng, 20))
    gru = rs.GRU(q(rng, 12, 5), q(rng, 12, 4), q(rng, 12), q(rng, 12))
    dbl = rs.DoublingLSTM(q(rng, 15, 4), q(rng, 15, 3))
    return rs.Stacked([lstm, gru, dbl])


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", FORMATS)
def test_float32_inputs_give_the_bits_of_their_float64_values(dtype):
    net = simple_net()
    x32 = np.random.default_rng(1).normal(size=(7, 9, 3)).astype(np.float32)
    a = net.run_batch(x32, dtype=dtype, lengths=[9, 0, 4, 9, 1, 7, 2])
    b = net.run_batch(x32.astype(np.float64), dtype=dtype, lengths=[9, 0, 4, 9, 1, 7, 2])
    for name in ("states", "final", "outputs", "final_outputs"):
        assert same(getattr(a, name), getattr(b, name)), name
    one = net.run(x32[3], dtype=dtype)
    assert same(one.states, net.run(x32[3].astype(np.float64), dtype=dtype).states)
    assert same(one.states[1:], a.states[3])
    cell = gated_stack(np.random.default_rng(2))
    xs = np.random.default_rng(3).normal(size=(5, 4, 3)).astype(np.float32)
    assert same(cell.run_batch(xs, dtype=dtype).states, cell.run_batch(xs.astype(np.float64), dtype=dtype).states)
    assert same(cell.run(xs[1], dtype=dtype).states, cell.run(xs[1].astype(np.float64), dtype=dtype).states)


@pytest.mark.parametrize("dtype", FORMATS)
def test_float16_inputs_and_weights_give_the_bits_of_their_float64_values(dtype):
    rng = np.random.default_rng(11)
    x16 = rng.normal(size=(7, 9, 3)).astype(np.float16)
    x16[2, 4, 1] = np.float16(6.0e-8)  # a subnormal binary16
    lengths = [9, 0, 4, 9, 1, 7, 2]
    net = simple_net()
    a = net.run_batch(x16, dtype=dtype, lengths=lengths)
    b = net.run_batch(x16.astype(np.float64), dtype=dtype, lengths=lengths)
    for name in ("states", "final", "outputs", "final_outputs"):
        assert same(getattr(a, name), getattr(b, name)), name
    for th in (2, 3):
        assert same(net.run_batch(x16, dtype=dtype, lengths=lengths, threads=th).states, a.states)
    assert same(net.run(x16[3], dtype=dtype).states, net.run(x16[3].astype(np.float64), dtype=dtype).states)
    cell = gated_stack(np.random.default_rng(2))
    xs = rng.normal(size=(5, 4, 3)).astype(np.float16)
    assert same(cell.run_batch(xs, dtype=dtype).states, cell.run_batch(xs.astype(np.float64), dtype=dtype).states)
    # weights given as float16 arrays: their values, as from float64
    w = {k: rng.normal(size=s).astype(np.float16) for k, s in (("V", (4, 4)), ("W", (4, 3)), ("b", (4,)))}
    n16 = rs.SimpleRNN(**w, activation="sigmoid")
    n64 = rs.SimpleRNN(**{k: v.astype(np.float64) for k, v in w.items()}, activation="sigmoid")
    assert same(n16.run_batch(x16, dtype=dtype).states, n64.run_batch(x16, dtype=dtype).states)


def test_float16_inputs_run_exactly_as_their_rationals_and_report_non_finite_values():
    rng = np.random.default_rng(9)
    net = rs.SimpleRNN(V=q(rng, 3, 3), W=q(rng, 3, 2), b=q(rng, 3), activation="relu")
    x16 = ((np.arange(12).reshape(2, 3, 2) - 5) / 7).astype(np.float16)
    a = net.run_batch(x16, dtype="exact")
    b = net.run_batch(x16.astype(np.float64), dtype="exact")
    assert np.array_equal(a.states, b.states) and np.array_equal(a.final, b.final)
    x16[1, 2, 0] = np.nan
    x16[0, 1, 1] = np.inf
    with pytest.raises(InvalidInputError) as e:
        net.run_batch(x16, dtype="f16")
    assert "x[1, 2, 0] is NaN" in str(e.value) and "x[0, 1, 1] is inf" in str(e.value)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_float64_inputs_are_rounded_once_to_the_half_formats(dtype):
    """float64 inputs one f64 ulp off a midpoint of the half format, which f32 cannot hold:
    rounded once from their own values (rust/num/round.rs, through f32 rounded to odd).
    Rounded to nearest f32 first, each would land on the midpoint and go to the even
    neighbour, the wrong one for half of them."""
    p = 11 if dtype == "f16" else 8
    xs = []
    for scale in (1.0, 2.0 ** -5, 37.0, -3.0):
        for mid in (1 + 2.0 ** -p, 1 + 3 * 2.0 ** -p, 1 + 5 * 2.0 ** -p):
            m = mid * 2.0 ** int(np.floor(np.log2(abs(scale))))
            m = m if scale > 0 else -m
            xs += [np.nextafter(m, np.inf), np.nextafter(m, -np.inf), m]
    x64 = np.array(xs[:36]).reshape(1, 12, 3)
    assert any(np.float64(np.float32(v)) != v for v in xs)
    once = np.array([round_fraction(Fraction(v), dtype) for v in x64.ravel()]).reshape(x64.shape)
    net = simple_net()
    for threads in (1, 2):
        a = net.run_batch(x64, dtype=dtype, threads=threads)
        b = net.run_batch(once, dtype=dtype, threads=threads)
        assert same(a.states, b.states) and same(a.final, b.final)
    assert same(net.run(x64[0], dtype=dtype).states, net.run(once[0], dtype=dtype).states)
    # and it matters: the inputs rounded to nearest f32 first (their double rounding) differ
    twice = np.array([round_fraction(Fraction(float(np.float32(v))), dtype) for v in x64.ravel()])
    assert (twice != once.ravel()).sum() >= 6


def test_float32_inputs_run_exactly_as_their_rationals():
    rng = np.random.default_rng(8)
    net = rs.SimpleRNN(V=q(rng, 3, 3), W=q(rng, 3, 2), b=q(rng, 3), activation="relu")
    x32 = (np.arange(12, dtype=np.float32).reshape(2, 3, 2) - 5) / 7
    a = net.run_batch(x32, dtype="exact")
    b = net.run_batch(x32.astype(np.float64), dtype="exact")
    assert np.array_equal(a.states, b.states) and np.array_equal(a.final, b.final)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16])
def test_arrays_of_any_layout_given_to_the_core_read_in_logical_order(dt):
    rng = np.random.default_rng(4)
    base = rng.normal(size=(6, 10, 8)).astype(dt)
    contiguous = np.ascontiguousarray(base[:, ::2, 1:4])
    views = [base[:, ::2, 1:4], np.asfortranarray(contiguous), np.ascontiguousarray(contiguous.transpose(2, 1, 0)).transpose(2, 1, 0)]
    net = simple_net(seed=5)
    cell = gated_stack(rng)
    want = net._core.run_batch(contiguous, "f32", None, None, 1, "all")
    want_cell = cell._core.run_batch(contiguous, "f32", None, None, None, 2, "all")
    for v in views:
        assert not v.flags.c_contiguous
        got = net._core.run_batch(v, "f32", None, None, 1, "all")
        assert same(got["states"], want["states"]) and same(got["final"], want["final"])
        got_cell = cell._core.run_batch(v, "f32", None, None, None, 2, "all")
        assert same(got_cell["states"], want_cell["states"])
    # and through the public API (which hands over a C-ordered copy)
    assert same(net.run_batch(views[1], dtype="f32").states, want["states"])


def test_non_finite_float32_inputs_are_reported_with_their_index():
    net = simple_net()
    x = np.zeros((2, 4, 3), dtype=np.float32)
    x[1, 2, 0] = np.nan
    x[0, 3, 2] = -np.inf
    with pytest.raises(InvalidInputError) as e:
        net.run_batch(x, dtype="f32")
    assert "x[1, 2, 0] is NaN" in str(e.value) and "x[0, 3, 2] is -inf" in str(e.value)
    with pytest.raises(InvalidInputError):
        net._core.run_batch(x, "f32", None, None, 1, "all")


@pytest.mark.parametrize("dtype", FORMATS + ["f16+f32"])
def test_large_inputs_copied_and_converted_on_several_threads_give_the_same_bits(dtype):
    """Inputs of at least 2^18 values are copied, checked and rounded in chunks on the run's
    threads (`sim::parallel_copy`): the same bits on 1 and 2 threads, from every input dtype,
    as single runs of each sequence (whose inputs are read on one thread)."""
    fmt, acc = (dtype.split("+") + [None])[:2]
    net = simple_net(seed=7)
    x64 = np.random.default_rng(8).normal(size=(12, 8000, 3))  # 288000 values, 36 chunks
    runs = {(th, dt): net.run_batch(x64.astype(dt), dtype=fmt, accumulate=acc, threads=th)
            for th in (1, 2) for dt in (np.float64, np.float32, np.float16)}
    for dt in (np.float64, np.float32, np.float16):
        assert same(runs[(1, dt)].states, runs[(2, dt)].states), dt
        one = net.run(x64[11].astype(dt), dtype=fmt, accumulate=acc)
        assert same(one.states[1:], runs[(2, dt)].states[11]), dt
    # 3 sequences on 2 threads: a block of 2 (f16: the tile reads the inputs' own bits) and
    # a block of 1 (the register kernel, which reads them as f32 lanes)
    x3 = x64[:3].astype(np.float32)
    three = net.run_batch(x3, dtype=fmt, accumulate=acc, threads=2)
    for s in range(3):
        assert same(net.run(x3[s], dtype=fmt, accumulate=acc).states[1:], three.states[s]), s
    cell = gated_stack(np.random.default_rng(9))
    xc = x64.astype(np.float32)
    a, b = cell.run_batch(xc, dtype=fmt, accumulate=acc, threads=1), cell.run_batch(xc, dtype=fmt, accumulate=acc, threads=2)
    assert same(a.states, b.states)
    assert same(cell.run(xc[5], dtype=fmt, accumulate=acc).states[1:], a.states[5])


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16])
def test_non_finite_values_of_large_inputs_are_found_in_every_chunk(dt):
    net = simple_net()
    x = np.zeros((12, 8000, 3), dtype=dt)  # 288000 values: checked in chunks of 8192 on 2 threads
    x[0, 0, 0], x[5, 4000, 1], x[11, 7999, 2] = np.nan, np.inf, -np.inf
    if dt != np.float16:
        x[3, 7, 0] = 1e5  # finite, though f16 rounds it to +inf as the run reads it
    for threads in (1, 2):
        with pytest.raises(InvalidInputError) as e:
            net.run_batch(x, dtype="f16", threads=threads)
        msg = str(e.value)
        assert "x[0, 0, 0] is NaN" in msg and "x[5, 4000, 1] is inf" in msg and "x[11, 7999, 2] is -inf" in msg
        assert "x[3, 7, 0]" not in msg and msg.count(" is ") == 3, msg
    # the finite value alone is no error: the f16 run reads it as +inf (as from a float16 array)
    big = np.zeros((12, 8000, 3), dtype=dt)
    big[3, 7, 0] = 1e5 if dt != np.float16 else np.float16(65504)
    r = net.run_batch(big, dtype="f16", threads=2)
    want = net.run(big[3], dtype="f16")
    assert same(r.states[3], want.states[1:])
    # a strided array (read element by element) in an f16 run: the same values and reports
    strided = np.zeros((12, 8000, 6), dtype=dt)[:, :, ::2]
    strided[...] = big
    assert not strided.flags.c_contiguous
    assert same(net._core.run_batch(strided, "f16", None, None, 2, "states")["states"], r.states)
    strided[0, 0, 0] = np.nan
    with pytest.raises(InvalidInputError) as e:
        net._core.run_batch(strided, "f16", None, None, 2, "states")
    assert "x[0, 0, 0] is NaN" in str(e.value) and "x[3, 7, 0]" not in str(e.value)


@pytest.mark.parametrize("dtype", FORMATS)
def test_gated_stacks_with_ragged_lengths_over_many_blocks_equal_single_runs(dtype):
    rng = np.random.default_rng(6)
    net = gated_stack(rng)
    b, t = 40, 7
    x = q(rng, b, t, 3).astype(np.float32)
    lengths = rng.integers(0, t + 1, size=b).tolist()
    lengths[5] = t
    # the core's dict: states and cells (B, T, H) of the top layer, final/final_c per layer
    runs = [net._core.run_batch(x, dtype, None, None, lengths, th, "all") for th in (1, 3, 7)]
    res = runs[0]
    for r in runs[1:]:
        assert same(r["states"], res["states"]) and same(r["cells"], res["cells"])
        assert all(same(f, g) for f, g in zip(r["final"] + r["final_c"][:1], res["final"] + res["final_c"][:1]))
    for s in range(b):
        n = lengths[s]
        one = net.run(x[s, :n], dtype=dtype)
        assert same(res["states"][s, :n], one.states[1:])
        assert same(res["cells"][s, :n], one.cells[1:])
        assert not np.any(res["states"][s, n:]) and not np.any(res["cells"][s, n:])
        assert same(res["final"][-1][s], one.states[-1])
    # every layer's final h and c: against one-sequence batches
    for s in (0, 5, 17):
        alone = net._core.run_batch(x[s:s + 1], dtype, None, None, [lengths[s]], 1, "final")
        for layer in range(3):
            assert same(alone["final"][layer][0], res["final"][layer][s])
            if alone["final_c"][layer] is not None:
                assert same(alone["final_c"][layer][0], res["final_c"][layer][s])
