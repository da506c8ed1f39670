"""Public API of the gated, deep and second-order cells: constructors, validation (every
problem at once), saturation, thread-count determinism, save/load, start states."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rnnsim as rs

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.integers(-8, 9, size=shape) / 8.0


def small_lstm(h=3, n=2):
    return rs.LSTM(rand(4 * h, n), rand(4 * h, h), rand(4 * h), rand(4 * h))


def small_gru(h=3, n=2):
    return rs.GRU(rand(3 * h, n), rand(3 * h, h), rand(3 * h), rand(3 * h))


def every_kind(n=2):
    return [
        small_lstm(3, n),
        small_gru(3, n),
        rs.DoublingLSTM(rand(15, n), rand(15, 3)),
        rs.QRNN(rand(12, 3 * n), rand(12), window=3),
        rs.QRNN(rand(6, n), window=1, pooling="f"),
        rs.SecondOrderRNN(V=rand(3, 3), U=rand(3, n), b=rand(3), A=rand(3, 3, n)),
        rs.SecondOrderRNN(V=rand(3, 3), U=rand(3, n), A_out=rand(3, 2), A_h=rand(2, 3), A_x=rand(2, n)),
        rs.ResidualRNN(V=rand(3, 3), W=rand(3, n), b=rand(3)),
        rs.MLPCell([(rand(4, n + 3), rand(4), "relu"), (rand(3, 4), rand(3), "tanh")]),
    ]


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16", "f16"])
def test_every_cell_runs_in_every_format_and_threads_do_not_matter(dtype):
    x = rand(9, 6, 2)
    for net in every_kind():
        one = net.run_batch(x, dtype=dtype, threads=1, lengths=[6, 0, 3, 6, 1, 2, 5, 4, 6])
        two = net.run_batch(x, dtype=dtype, threads=2, lengths=[6, 0, 3, 6, 1, 2, 5, 4, 6])
        assert one.states.shape == (9, 6, 3)
        assert one.states.tobytes() == two.states.tobytes()
        assert one.final.tobytes() == two.final.tobytes()
        assert np.all(one.states[1] == 0)  # length 0: padding only
        single = net.run(x[2, :3], dtype=dtype)
        assert np.array_equal(single.states[1:], one.states[2, :3])
        assert np.array_equal(single.states[-1], one.final[-1, 2])


def test_stacked_mixes_cells_and_simple_rnns():
    simple = rs.SimpleRNN(V=rand(4, 4), W=rand(4, 3), b=rand(4), h0=rand(4), activation="tanh")
    net = rs.Stacked([small_lstm(3, 2), small_gru(3, 3), rs.QRNN(rand(12, 6), window=2), simple])
    assert net.num_layers == 4 and net.hidden_sizes == [3, 3, 3, 4]
    assert net.layer_kinds == ["lstm", "gru", "qrnn", "simple_rnn"]
    b = net.run_batch(rand(5, 7, 2), dtype="f64")
    assert isinstance(b.final, list) and [f.shape for f in b.final] == [(5, 3)] * 3 + [(5, 4)]
    assert b.final_c[0].shape == (5, 3) and b.final_c[1] is None and b.final_c[3] is None
    # the simple layer starts from its own h0 unless told otherwise
    r = net.run(np.zeros((0, 2)), dtype="f64")
    assert np.array_equal(r.states[0], simple.h0.astype(float))
    # layer by layer by hand equals the stack
    x = rand(7, 2)
    s1 = small_lstm(3, 2)
    s2 = small_gru(3, 3)
    deep = rs.Stacked([s1, s2])
    h1 = s1.run(x, dtype="f32").states[1:]
    h2 = s2.run(h1, dtype="f32").states[1:]
    assert np.array_equal(deep.run(x, dtype="f32").states[1:], h2)


def test_start_states_are_pytorch_shaped():
    net = rs.Stacked([small_lstm(3, 2), small_lstm(3, 3)])
    h0, c0 = rand(2, 4, 3), rand(2, 4, 3)
    b = net.run_batch(rand(4, 5, 2), dtype="f64", h0=h0, c0=c0)
    assert b.final.shape == (2, 4, 3) and b.final_c.shape == (2, 4, 3)
    b0 = net.run_batch(rand(4, 0, 2), dtype="f64", h0=h0, c0=c0)
    assert np.array_equal(b0.final, h0) and np.array_equal(b0.final_c, c0)
    with pytest.raises(rs.InvalidInputError, match="h0 for layer 1"):
        net.run_batch(rand(4, 5, 2), dtype="f64", h0=[h0[0], rand(4, 2)])
    with pytest.raises(rs.InvalidInputError, match="one start state per layer"):
        net.run_batch(rand(4, 5, 2), dtype="f64", h0=h0[:1])


def test_saturated_lstm_counts_exactly():
    # one unit: i = o = 1, f = 1, g = sign(x): c_t = number of a's minus number of b's
    h = 1
    w_ih = np.array([[0, 0], [0, 0], [1, -1], [0, 0]])
    b_ih = np.array([5, 5, 0, 5])
    net = rs.saturate(rs.LSTM(w_ih, np.zeros((4 * h, h)), b_ih, np.zeros(4)))
    assert net.options() == {"gate": "sat_sigmoid", "candidate": "sign", "output": "sign"}
    word = "aaabbab"
    x = [[1, 0] if ch == "a" else [0, 1] for ch in word]
    r = net.run(x, dtype="exact")
    counts = np.cumsum([1 if ch == "a" else -1 for ch in word])
    assert list(r.cells[1:, 0]) == [Fraction(int(c)) for c in counts]
    assert list(r.states[1:, 0]) == [Fraction(int(np.sign(c))) for c in counts]
    # an f16 run of the saturated net is exact too while the counter fits
    assert np.array_equal(net.run(x, dtype="f16").cells.astype(float), r.cells.astype(float))


def test_exact_needs_piecewise_linear_functions():
    with pytest.raises(rs.UnsupportedError, match="saturate"):
        small_gru().run(rand(3, 2), dtype="exact")
    with pytest.raises(rs.UnsupportedError, match="layer 1"):
        rs.Stacked([rs.saturate(small_lstm()), small_gru(3, 3)]).run_batch(rand(2, 3, 2), dtype="exact")
    ok = rs.GRU(rand(9, 2), rand(9, 3), gate="step", candidate="slu")
    r = ok.run([["1/3", 0], [1, "-2/7"]], dtype="exact")
    assert all(isinstance(v, Fraction) for v in r.states.ravel())


def test_saturate_simple_rnn():
    net = rs.SimpleRNN(V=[[1]], W=[[1]], b=[0], activation="tanh")
    sat = rs.saturate(net)
    assert sat.activation == "sign"
    assert list(sat.run([[3], [-5], [1]], dtype="exact").states[:, 0]) == [0, 1, -1, 0]
    sig = rs.saturate(rs.SimpleRNN(V=[[0]], W=[[1]], b=[0], activation="sigmoid"))
    assert list(sig.run([[2], [0], [-1]], dtype="exact").states[1:, 0]) == [1, Fraction(1, 2), 0]
    assert list(sig.run([[2], [0], [-1]], dtype="f16").states[1:, 0]) == [1, 0.5, 0]


def test_validation_lists_every_problem():
    with pytest.raises(rs.InvalidNetworkError) as e:
        rs.LSTM([[1, float("nan")]] * 8, np.zeros((8, 3)), bias_ih=np.zeros(7), gate="gelu")
    text = str(e.value)
    assert "nan" in text.lower() and "gelu" in text and "bias_ih" in text and "weight_hh" in text
    assert len(e.value.problems) >= 4
    with pytest.raises(rs.InvalidNetworkError) as e:
        rs.QRNN(rand(7, 5), window=2, pooling="xyz")
    assert "pooling" in str(e.value)
    with pytest.raises(rs.InvalidNetworkError) as e:
        rs.QRNN(rand(7, 5), window=2)
    assert len(e.value.problems) == 2  # rows not a multiple of 4, columns not of 2
    with pytest.raises(rs.InvalidNetworkError, match="either the full tensor A or its CP factors"):
        rs.SecondOrderRNN(V=rand(2, 2), U=rand(2, 1), A=rand(2, 2, 1), A_out=rand(2, 1), A_h=rand(1, 2), A_x=rand(1, 1))
    with pytest.raises(rs.InvalidNetworkError, match="A must have shape"):
        rs.SecondOrderRNN(V=rand(2, 2), U=rand(2, 1), A=rand(2, 2, 3))
    with pytest.raises(rs.InvalidNetworkError, match="weight_1 must have shape"):
        rs.MLPCell([(rand(4, 5), None, "relu"), (rand(3, 3), None, "tanh")])
    with pytest.raises(rs.InvalidNetworkError, match=r"inf"):
        rs.ResidualRNN(V=[[float("inf")]], W=[[1]])
    with pytest.raises(rs.InvalidNetworkError) as e:
        rs.Stacked([small_lstm(3, 2), small_gru(3, 4), "nope"])
    assert len(e.value.problems) == 1 or "nope" in str(e.value)
    with pytest.raises(rs.InvalidNetworkError, match="readout"):
        rs.Stacked([rs.SimpleRNN(V=[[1]], W=[[1]], b=[0], readout=rs.Linear([[1]], [0]))])
    with pytest.raises(rs.InvalidNetworkError, match="takes inputs of size 4"):
        rs.Stacked([small_lstm(3, 2), small_gru(3, 4)])


def test_torch_state_dict_problems_are_all_reported():
    sd = {"weight_ih_l0": rand(12, 2), "weight_hh_l0": rand(12, 3), "bias_ih_l0": rand(12),
          "weight_ih_l1": rand(12, 3), "bias_hh_l1": rand(12), "weight_hh_l1_reverse": rand(12, 3),
          "weight_ih_l2": rand(12, 3), "weight_hh_l2": rand(12, 4), "extra": rand(1)}
    with pytest.raises(rs.InvalidNetworkError) as e:
        rs.LSTM.from_torch(sd)
    text = str(e.value)
    for part in ["missing key \"weight_hh_l1\"", "bias_ih is given without bias_hh", "bidirectional",
                 "unexpected key \"extra\"", "weight_hh_l2 has hidden size 4"]:
        assert part in text, text
    with pytest.raises(rs.InvalidNetworkError, match="nonlinearity"):
        rs.SimpleRNN.from_torch({"weight_ih_l0": rand(2, 1), "weight_hh_l0": rand(2, 2)}, nonlinearity="gelu")
    with pytest.raises(rs.InvalidNetworkError, match="no weight_ih_l0"):
        rs.GRU.from_torch({})


@pytest.mark.parametrize("dtype", ["exact", "f64", "f32", "bf16"])
def test_keep_states_drops_the_cells_and_keep_all_returns_them(dtype):
    net = rs.Stacked([small_gru(3, 2), small_lstm(4, 3)]) if dtype != "exact" else small_lstm()
    if dtype == "exact":
        net = rs.saturate(net)
    x = rand(5, 7, 2)
    lengths = [7, 2, 0, 5, 7]
    full = net.run_batch(x, dtype=dtype, lengths=lengths)
    st = net.run_batch(x, dtype=dtype, lengths=lengths, keep="states", threads=2)
    fin = net.run_batch(x, dtype=dtype, lengths=lengths, keep="final")
    assert st.cells is None and fin.cells is None and fin.states is None
    assert full.cells.shape == full.states.shape == st.states.shape
    assert np.array_equal(st.states, full.states)
    for r in (st, fin):
        assert all(np.array_equal(a, b) for a, b in zip(r.final, full.final))
        assert all(np.array_equal(a, b) for a, b in zip(r.final_c, full.final_c))
    for s, n in enumerate(lengths):
        one = net.run(x[s, :n], dtype=dtype)
        assert np.array_equal(full.cells[s, :n], one.cells[1:]) and not np.any(full.cells[s, n:])


def test_bad_inputs_are_invalid_input():
    net = small_lstm()
    with pytest.raises(rs.InvalidInputError, match="width"):
        net.run_batch(rand(2, 3, 5))
    with pytest.raises(rs.InvalidInputError, match="(?i)nan"):
        net.run([[0, float("nan")]], dtype="f32")
    with pytest.raises(rs.InvalidInputError, match="lengths"):
        net.run_batch(rand(2, 3, 2), lengths=[4, 1])
    with pytest.raises(rs.InvalidInputError, match="keep"):
        net.run_batch(rand(2, 3, 2), keep="some")
    with pytest.raises(rs.InvalidInputError, match="dtype"):
        net.run(rand(2, 2), dtype="f8")


def test_save_and_load_round_trip_every_kind(tmp_path):
    for k, net in enumerate(every_kind() + [rs.Stacked([small_lstm(), small_gru(3, 3)])]):
        path = tmp_path / f"net{k}.json"
        net.save(path, meta={"k": k})
        back = rs.load(path)
        assert type(back) is type(net)
        assert back.layer_kinds == net.layer_kinds
        for layer in range(net.num_layers):
            assert back.options(layer) == net.options(layer)
            for name, v in net.params(layer).items():
                assert np.array_equal(back.params(layer)[name], v)
        x = rand(2, 4, 2)
        assert np.array_equal(back.run_batch(x, dtype="f32").states, net.run_batch(x, dtype="f32").states)


def test_corrupted_cell_files_are_invalid_network():
    good = small_lstm().to_json()
    for bad in [good.replace('"weight_hh"', '"weight_hx"'), good.replace('"sigmoid"', '"gelu"'),
                good.replace('"layers"', '"lay"'), good.replace('"kind":"lstm","options"', '"kind":"tree","options"')]:
        with pytest.raises(rs.InvalidNetworkError):
            rs.loads(bad)
    assert isinstance(rs.loads(good), rs.LSTM)


def test_params_are_exact_and_torch_shaped():
    net = rs.LSTM([[0.1]] * 4, [[Fraction(1, 3)]] * 4)
    p = net.params()
    assert p["weight_ih"].shape == (4, 1) and p["bias_hh"].shape == (4,)
    assert p["weight_hh"][0, 0] == Fraction(1, 3)
    assert p["weight_ih"][0, 0] == Fraction(0.1)


def test_the_tracer_refuses_cell_networks_clearly(tmp_path):
    from rnnsim.subjects import _from_text

    with pytest.raises(rs.UnsupportedError, match="LSTM"):
        _from_text("net.json", small_lstm().to_json(), "base4")


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["lstm", "gru", "doubling_lstm"]), st.integers(1, 20), st.integers(1, 5), st.integers(1, 11),
       st.sampled_from(["f64", "f32", "bf16", "f16"]), st.integers(0, 2**32 - 1))
def test_lockstep_batches_equal_single_runs_bit_for_bit(kind, h, n, b, dtype, seed):
    # batches of gated cells run in lock-step (rust/sim/cells/gated_batch.rs); every
    # sequence must be bit for bit its own single run, with ragged lengths. A single run is
    # a batch of one on the same kernel, so this checks blocking and lengths; the kernel
    # against independent computations: test_cells_reference.py and the Rust tests.
    rng = np.random.default_rng(seed)
    r = lambda *s: rng.integers(-24, 25, size=s) / 8.0  # noqa: E731
    g = {"lstm": 4, "gru": 3, "doubling_lstm": 5}[kind]
    cls = {"lstm": rs.LSTM, "gru": rs.GRU, "doubling_lstm": rs.DoublingLSTM}[kind]
    net = cls(r(g * h, n), r(g * h, h), r(g * h), r(g * h))
    t = 6
    x = r(b, t, n)
    lengths = rng.integers(0, t + 1, size=b).tolist()
    res = net.run_batch(x, dtype=dtype, lengths=lengths, threads=2)
    for s in range(b):
        one = net.run(x[s, : lengths[s]], dtype=dtype)
        got = np.asarray(res.states[s, : lengths[s]], dtype=np.float64)
        assert np.array_equal(got, np.asarray(one.states[1:], dtype=np.float64), equal_nan=True)
        assert np.array_equal(np.asarray(res.final[0][s], dtype=np.float64), np.asarray(one.states[-1], dtype=np.float64), equal_nan=True)
        assert not np.any(np.asarray(res.states[s, lengths[s]:], dtype=np.float64))
