"""Batch runs: shapes, lengths, keep, start states, thread-count independence, errors."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest

import rnnsim as rs


def random_net(seed=0, d=6, n=3, activation="tanh"):
    rng = np.random.default_rng(seed)
    return rs.SimpleRNN(V=rng.normal(size=(d, d)) / d, W=rng.normal(size=(d, n)), b=rng.normal(size=d),
                        activation=activation, readout=rs.Linear(rng.normal(size=(2, d)), rng.normal(size=2)))


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16", "bf16"])
def test_batch_is_bitwise_identical_for_any_thread_count(dtype):
    net = random_net()
    x = np.random.default_rng(1).normal(size=(33, 40, 3))
    runs = [net.run_batch(x, dtype=dtype, threads=t) for t in (1, 2, 4)]
    for r in runs[1:]:
        assert np.array_equal(r.states, runs[0].states)
        assert np.array_equal(r.final, runs[0].final)
        assert np.array_equal(r.outputs, runs[0].outputs)


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16"])
def test_large_weights_and_small_batches_split_units_between_threads_with_the_same_bits(dtype):
    # weights above 1 MiB and fewer than 16 sequences per thread: the threads share each
    # tick's units (README "Kernel"); every thread count gives single runs' bits
    rng = np.random.default_rng(7)
    d, n = 560, 5
    net = rs.SimpleRNN(V=rng.normal(size=(d, d)) / np.sqrt(d), W=rng.normal(size=(d, n)), b=rng.normal(size=d), activation="tanh")
    lstm = rs.LSTM.from_torch({"weight_ih_l0": rng.normal(size=(4 * 300, n)), "weight_hh_l0": rng.normal(size=(4 * 300, 300)) / 20,
                               "bias_ih_l0": rng.normal(size=4 * 300), "bias_hh_l0": rng.normal(size=4 * 300)})
    x = rng.normal(size=(3, 6, n))
    for m in (net, lstm):
        runs = [m.run_batch(x, dtype=dtype, threads=t, lengths=[6, 2, 5]) for t in (1, 2, 3)]
        for r in runs[1:]:
            assert r.states.tobytes() == runs[0].states.tobytes()
            assert np.array_equal(np.asarray(r.final), np.asarray(runs[0].final))
        single = m.run(x[2, :5], dtype=dtype)
        assert np.array_equal(single.states[-1], runs[1].states[2, 4])


def test_batch_equals_single_runs_and_lengths_pad_with_zeros():
    net = random_net(activation="relu")
    x = np.random.default_rng(2).normal(size=(5, 9, 3))
    lengths = [9, 0, 4, 1, 7]
    b = net.run_batch(x, dtype="f64", lengths=lengths)
    assert b.states.shape == (5, 9, 6) and b.final.shape == (1, 5, 6) and b.outputs.shape == (5, 9, 2)
    for i, n in enumerate(lengths):
        single = net.run(x[i, :n], dtype="f64")
        assert np.array_equal(b.states[i, :n], single.states[1:])
        assert np.array_equal(b.final[0, i], single.states[-1])
        assert np.array_equal(b.outputs[i, :n], single.outputs[1:])
        assert np.array_equal(b.final_outputs[i], single.outputs[-1])
        assert not b.states[i, n:].any()


def test_keep_final_skips_states_but_keeps_finals():
    net = random_net()
    x = np.random.default_rng(3).normal(size=(4, 20, 3))
    full = net.run_batch(x, dtype="f32")
    fin = net.run_batch(x, dtype="f32", keep="final")
    assert fin.states is None and fin.outputs is None
    assert np.array_equal(fin.final, full.final)
    assert np.array_equal(fin.final_outputs, full.outputs[:, -1])


@pytest.mark.parametrize("dtype", ["exact", "f64", "f32", "f16"])
def test_keep_states_keeps_the_states_of_keep_all_without_the_outputs(dtype):
    net = random_net(activation="relu" if dtype == "exact" else "tanh")
    x = np.random.default_rng(4).integers(-3, 4, size=(6, 11, 3)) / 4
    lengths = [11, 0, 5, 3, 11, 8]
    full = net.run_batch(x, dtype=dtype, lengths=lengths)
    st = net.run_batch(x, dtype=dtype, lengths=lengths, keep="states", threads=2)
    assert st.outputs is None and st.states.shape == full.states.shape == (6, 11, 6)
    assert np.array_equal(st.states, full.states)
    assert np.array_equal(st.final, full.final)
    assert np.array_equal(st.final_outputs, full.final_outputs)


def test_start_states_torch_shape_and_flat_shape():
    net = random_net(d=4)
    x = np.zeros((3, 2, 3))
    h0 = np.arange(12, dtype=float).reshape(1, 3, 4) / 10
    a = net.run_batch(x, dtype="f64", h0=h0)
    b = net.run_batch(x, dtype="f64", h0=h0[0])
    assert np.array_equal(a.final, b.final)
    assert np.array_equal(a.states[1, 0], net.run(x[1, :1], dtype="f64", h0=h0[0, 1]).states[1])


def test_exact_batch_returns_fractions_and_matches_single_runs():
    net = rs.SimpleRNN(V=[[Fraction(1, 2), 1], [0, Fraction(-1, 3)]], W=[[1], [2]], b=[0, 1], activation="relu",
                       readout=rs.Linear([[1, 1]], [0]))
    x = np.array([[[1], [0], [2]], [[Fraction(1, 3)], [1], [1]]], dtype=object)
    b = net.run_batch(x, dtype="exact", threads=2, lengths=[3, 2])
    for i, n in enumerate([3, 2]):
        single = net.run(x[i, :n], dtype="exact")
        assert b.states[i, :n].tolist() == single.states[1:].tolist()
        assert b.final[0, i].tolist() == single.states[-1].tolist()
        assert b.final_outputs[i].tolist() == single.outputs[-1].tolist()
    assert isinstance(b.final[0, 0, 0], Fraction)


@pytest.mark.parametrize("kw,needle", [
    (dict(x=np.zeros((2, 3, 4))), "width 4"),
    (dict(x=np.zeros((3, 3))), "batch, T, input_size"),
    (dict(x=np.full((2, 3, 3), np.nan)), "NaN"),
    (dict(lengths=[1, 5]), "longer than"),
    (dict(lengths=[1]), "lengths has 1 entries"),
    (dict(lengths=[-1, 2]), "non-negative"),
    (dict(dtype="f8"), "unknown dtype"),
    (dict(keep="some"), "keep"),
    (dict(threads=0), "threads"),
    (dict(h0=np.zeros((2, 5))), "h0 must have shape"),
    (dict(x=[[["a", 0, 0]] * 3] * 2), "x[0, 0, 0]"),
])
def test_bad_batch_inputs_raise_invalid_input(kw, needle):
    net = random_net()
    args = dict(x=np.zeros((2, 3, 3)), dtype="f32")
    args.update(kw)
    with pytest.raises(rs.InvalidInputError) as e:
        net.run_batch(**args)
    assert needle in str(e.value)


def test_progress_bar_runs_and_changes_nothing(capsys):
    net = random_net()
    x = np.random.default_rng(4).normal(size=(8, 10, 3))
    a = net.run_batch(x, progress=True)
    b = net.run_batch(x)
    assert np.array_equal(a.states, b.states)


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_large_results_reuse_freed_buffers_but_never_a_live_one(kind, dtype):
    # results of 4 MiB or more go back to rnnsim when their arrays die, and a later run writes
    # into them (README "Memory between runs"); an array still alive, or through a view, keeps its
    # buffer, and a reused buffer holds exactly the new run's values
    if os.environ.get("RNNSIM_RECYCLE_MIB", "").strip() == "0":
        pytest.skip("buffer reuse turned off in this environment")
    rng = np.random.default_rng(11)
    h, n = 128, 4
    if kind == "rnn":
        net = rs.SimpleRNN(V=rng.normal(size=(h, h)) / np.sqrt(h), W=rng.normal(size=(h, n)), b=rng.normal(size=h), activation="tanh")
    else:
        net = rs.LSTM.from_torch({"weight_ih_l0": rng.normal(size=(4 * h, n)), "weight_hh_l0": rng.normal(size=(4 * h, h)) / np.sqrt(h),
                                  "bias_ih_l0": rng.normal(size=4 * h), "bias_hh_l0": rng.normal(size=4 * h)})
    xs = [rng.normal(size=(80, 128, n)) for _ in range(3)]
    addr = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    run = lambda x, threads=1: net.run_batch(x, dtype=dtype, keep="states", threads=threads)  # noqa: E731
    first = run(xs[0])
    assert first.states.nbytes >= 4 << 20
    kept0, view = first.states.copy(), first.states[1:3]
    a0 = addr(first.states)
    del first
    second = run(xs[1])
    assert addr(second.states) != a0, "a buffer still seen through a view was reused"
    assert np.array_equal(view, kept0[1:3])
    a1, kept1 = addr(second.states), second.states.copy()
    del second
    third = run(xs[2])
    assert addr(third.states) == a1, "the freed result's buffer was not reused"
    fresh = run(xs[2], threads=2)
    assert addr(fresh.states) != a1
    assert np.array_equal(third.states, fresh.states)
    assert not np.array_equal(third.states, kept1)
    assert np.array_equal(view, kept0[1:3])
