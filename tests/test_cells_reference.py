"""The cell engine against the pure-Python reference (rnnsim/reference_cells.py), bit for
bit in every float format and exactly (Fractions) for piecewise-linear / saturated cells,
on random stacks of random cells (hypothesis)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import rnnsim as rs
from rnnsim import _coerce, _core
from rnnsim import reference_cells as ref
from rnnsim.cells import wrap_core

EXACT_ACTS = ["identity", "relu", "slu", "step", "sign", "sat_sigmoid"]
ALL_ACTS = EXACT_ACTS + ["tanh", "sigmoid"]
KINDS = ["lstm", "gru", "doubling_lstm", "qrnn", "second_order", "residual", "mlp", "simple_rnn"]

values = st.builds(Fraction, st.integers(-6, 6), st.sampled_from([1, 2, 4, 8]))


def mat(draw, r, c):
    return [[draw(values) for _ in range(c)] for _ in range(r)]


def vec(draw, n):
    return [draw(values) for _ in range(n)]


@st.composite
def layer(draw, n: int, acts: list[str], kinds: list[str] = KINDS):
    kind = draw(st.sampled_from(kinds))
    h = draw(st.integers(1, 3))
    act = lambda: draw(st.sampled_from(acts))  # noqa: E731
    t: dict = {}
    o: dict = {}
    if kind in ("lstm", "gru", "doubling_lstm"):
        g = {"lstm": 4, "gru": 3, "doubling_lstm": 5}[kind]
        t = {"weight_ih": mat(draw, g * h, n), "weight_hh": mat(draw, g * h, h)}
        if draw(st.booleans()):
            t.update(bias_ih=vec(draw, g * h), bias_hh=vec(draw, g * h))
        o = {"gate": act(), "candidate": act()}
        if kind != "gru":
            o["output"] = act()
    elif kind == "qrnn":
        pooling = draw(st.sampled_from(["f", "fo", "ifo"]))
        k = draw(st.integers(1, 3))
        g = {"f": 2, "fo": 3, "ifo": 4}[pooling]
        t = {"weight": mat(draw, g * h, k * n), "bias": vec(draw, g * h)}
        o = {"window": str(k), "pooling": pooling, "gate": act(), "candidate": act()}
    elif kind == "second_order":
        t = {"V": mat(draw, h, h), "U": mat(draw, h, n), "b": vec(draw, h)}
        if draw(st.booleans()):
            t["A"] = [[vec(draw, n) for _ in range(h)] for _ in range(h)]
        else:
            r = draw(st.integers(1, 2))
            t.update(A_out=mat(draw, h, r), A_h=mat(draw, r, h), A_x=mat(draw, r, n))
        o = {"activation": act()}
    elif kind in ("residual", "simple_rnn"):
        t = {"V": mat(draw, h, h), "W": mat(draw, h, n), "b": vec(draw, h)}
        if kind == "simple_rnn":
            t["h0"] = vec(draw, h)
        o = {"activation": act()}
    else:  # mlp
        depth = draw(st.integers(1, 3))
        widths = [n + h] + [draw(st.integers(1, 3)) for _ in range(depth - 1)] + [h]
        for l in range(depth):
            t[f"weight_{l}"] = mat(draw, widths[l + 1], widths[l])
            t[f"bias_{l}"] = vec(draw, widths[l + 1])
            o[f"activation_{l}"] = act()
    return kind, t, o, h


@st.composite
def stacks(draw, acts: list[str], max_layers: int = 3):
    n = draw(st.integers(1, 3))
    layers = []
    inp = n
    for _ in range(draw(st.integers(1, max_layers))):
        kind, t, o, h = draw(layer(inp, acts))
        layers.append((kind, t, o))
        inp = h
    steps = draw(st.integers(0, 6))
    xs = [vec(draw, n) for _ in range(steps)]
    hs = [len(t["weight_hh"][0]) if k in ("lstm", "gru", "doubling_lstm") else
          len(t["weight"]) // {"f": 2, "fo": 3, "ifo": 4}[o["pooling"]] if k == "qrnn" else
          len(t["V"]) if "V" in t else len(t[f"weight_{sum(1 for x in t if x.startswith('weight'))-1}"])
          for k, t, o in layers]
    h0 = [vec(draw, h) for h in hs] if draw(st.booleans()) else None
    c0 = [vec(draw, h) for h in hs] if draw(st.booleans()) else None
    return layers, n, xs, h0, c0


def build(layers):
    problems: list[str] = []
    specs = [(k, {name: _coerce.tensor(name, v, problems) for name, v in t.items()}, o) for k, t, o in layers]
    assert not problems
    return wrap_core(_core.CellNetwork.from_layers("stacked", specs))


def run_batch_of_one(net, case, dtype, **kw):
    """A `stacks` case (layers, n, xs, h0, c0) run as a batch of one sequence (h0/c0 given
    per layer, as (layers, 1, H))."""
    _, n, xs, h0, c0 = case
    x = np.array(xs, dtype=object).reshape(1, len(xs), n)
    per_layer = None if h0 is None else [[row] for row in h0]
    cells = None if c0 is None else [[row] for row in c0]
    return net.run_batch(x, dtype=dtype, h0=per_layer, c0=cells, **kw)


def as_array(rows, h, fmt):
    return np.array([[float(v) for v in r] for r in rows], dtype=np.float64).reshape(len(rows), h)



@settings(max_examples=80)
@given(stacks(ALL_ACTS), st.sampled_from(["f64", "f32", "bf16", "f16"]))
def test_float_runs_match_the_reference_bit_for_bit(case, fmt):
    layers, n, xs, h0, c0 = case
    net = build(layers)
    b = run_batch_of_one(net, case, fmt)
    top, fin_h, fin_c = ref.run(layers, xs, fmt, h0, c0)
    want = as_array(top, net.hidden_size, fmt)
    assert np.array_equal(b.states[0].astype(np.float64), want, equal_nan=True)
    finals = b.final if isinstance(b.final, list) else list(b.final)
    for k, fh in enumerate(fin_h):
        assert np.array_equal(np.asarray(finals[k][0], dtype=np.float64), np.array(fh, dtype=np.float64), equal_nan=True)
    if any(c is not None for c in fin_c):
        fc = b.final_c if isinstance(b.final_c, list) else list(b.final_c)
        for k, c in enumerate(fin_c):
            if c is not None:
                assert np.array_equal(np.asarray(fc[k][0], dtype=np.float64), np.array(c, dtype=np.float64), equal_nan=True)


@settings(max_examples=80)
@given(stacks(EXACT_ACTS))
def test_exact_runs_match_fractions(case):
    layers, n, xs, h0, c0 = case
    net = build(layers)
    run = net.run(np.array(xs, dtype=object).reshape(len(xs), n), dtype="exact", h0=h0, c0=c0)
    top, fin_h, fin_c = ref.run(layers, xs, "exact", h0, c0)
    assert [list(r) for r in run.states[1:]] == top
    b = net.run_batch(np.array(xs, dtype=object).reshape(1, len(xs), n), dtype="exact",
                      h0=None if h0 is None else [[r] for r in h0], c0=None if c0 is None else [[r] for r in c0])
    finals = b.final if isinstance(b.final, list) else list(b.final)
    assert [list(f[0]) for f in finals] == fin_h


@settings(max_examples=40)
@given(stacks(ALL_ACTS))
def test_saturated_networks_run_exactly(case):
    layers, n, xs, h0, c0 = case
    sat = rs.saturate(build(layers))
    run = sat.run(np.array(xs, dtype=object).reshape(len(xs), n), dtype="exact", h0=h0, c0=c0)
    sat_layers = [sat._core.layer_parts(k) for k in range(sat.num_layers)]
    assert all(a not in ("tanh", "sigmoid", "slu") for _, _, o in sat_layers for key, a in o.items()
               if key not in ("window", "pooling"))
    top, _, _ = ref.run([(k, {n_: _frac(v) for n_, v in t.items()}, o) for k, t, o in sat_layers], xs, "exact", h0, c0)
    assert [list(r) for r in run.states[1:]] == top


def _frac(pair):
    shape, strings = pair
    return np.array([Fraction(s) for s in strings], dtype=object).reshape(shape).tolist()
