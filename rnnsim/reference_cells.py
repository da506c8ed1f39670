"""A readable pure-Python reference for the gated, deep and second-order cells: the test
oracle of the Rust cell engine (``rust/sim/cells``).

It performs the same operations in the same order as the engine, each rounded to the
format by ``reference._Fmt`` (numpy scalars; bfloat16 emulated on float32), or exactly with
``fractions.Fraction`` (``fmt="exact"``). The order, per cell (every + and * rounded):

    affine row r:  acc = b_r; acc = acc + w_rk * z_k for k ascending over z = [x ; h]
                   (fma=True: acc = fma(w_rk, z_k, acc), one rounding; also the 2RNN sums)
    LSTM:  p = gi + gh; i, f, g, o = gate(p_i), gate(p_f), cand(p_g), gate(p_o)
           c' = (f*c) + (i*g); h' = o * out(c')        (Doubling: f = gate(p_f1) + gate(p_f2))
    GRU:   r = gate(gi_r + gh_r); z = gate(gi_z + gh_z); n = cand(gi_n + (r*gh_n))
           h' = n + (z * (h + (-n)))
    QRNN:  pre = b + W [x_t ; x_{t-1} ; ...]; z = cand, f = gate, o = gate, i = gate
           c' = (f*c) + ((1 + (-f)) * z)  [f, fo]   or   (f*c) + (i*z)  [ifo];  h' = c' or o*c'
    2RNN:  acc = b + U x + V h; full: acc += (sum_k A_ijk x_k) * h_j;  CP: acc += P_ir (q_r s_r)
    residual: h' = h + act(b + W x + V h);  MLP: z_l = act_l(b_l + W_l z_{l-1}), z_0 = [x ; h]

Layers are given as ``(kind, tensors, options)`` with nested lists of Fractions, exactly as
``rnnsim._core.CellNetwork.layer_parts`` describes them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from .reference import _Fmt, activate_exact

Layer = tuple[str, dict[str, Any], dict[str, str]]


class _Exact:
    """Fraction arithmetic with the interface of ``reference._Fmt``."""

    fmt = "exact"

    def const(self, x: Any) -> Fraction:
        return Fraction(x)

    def add(self, a: Fraction, b: Fraction) -> Fraction:
        return a + b

    def mul(self, a: Fraction, b: Fraction) -> Fraction:
        return a * b

    def mac(self, acc: Fraction, w: Fraction, z: Fraction) -> Fraction:
        return acc + w * z

    def end_sum(self, acc: Fraction) -> Fraction:
        return acc

    def act(self, name: str, x: Fraction) -> Fraction:
        return activate_exact(name, x)


def arithmetic(fmt: str, fma: bool = False, approx: bool = False, accumulate: str | None = None) -> Any:
    return _Exact() if fmt == "exact" else _Fmt(fmt, fma, approx, accumulate)


def _mat(f: Any, m: Any) -> list[list[Any]]:
    return [[f.const(Fraction(v)) for v in row] for row in np.asarray(m, dtype=object).tolist()]


def _vec(f: Any, v: Any, n: int) -> list[Any]:
    if v is None:
        return [f.const(0)] * n
    return [f.const(Fraction(x)) for x in np.asarray(v, dtype=object).reshape(-1).tolist()]


def _affine(f: Any, w: list[list[Any]], b: list[Any], z: list[Any]) -> list[Any]:
    out = []
    for r, row in enumerate(w):
        acc = b[r]
        for k, zk in enumerate(z):
            acc = f.mac(acc, row[k], zk)
        out.append(f.end_sum(acc))
    return out


class _LayerRef:
    """One layer prepared in an arithmetic: weights rounded once, then ``step``."""

    def __init__(self, f: Any, layer: Layer) -> None:
        kind, t, o = layer
        self.f, self.kind, self.o = f, kind, o
        if kind in ("lstm", "gru", "doubling_lstm"):
            self.w_ih, self.w_hh = _mat(f, t["weight_ih"]), _mat(f, t["weight_hh"])
            rows = len(self.w_hh)
            self.b_ih, self.b_hh = _vec(f, t.get("bias_ih"), rows), _vec(f, t.get("bias_hh"), rows)
            self.hidden = len(self.w_hh[0])
        elif kind == "qrnn":
            self.w = _mat(f, t["weight"])
            g = {"f": 2, "fo": 3, "ifo": 4}[o.get("pooling", "ifo")]
            self.b = _vec(f, t.get("bias"), len(self.w))
            self.hidden = len(self.w) // g
            self.k = int(o.get("window", "1"))
            self.n = len(self.w[0]) // self.k
        elif kind in ("simple_rnn", "residual", "second_order"):
            v = t["V"]
            self.hidden = len(v)
            x_w = t["U"] if kind == "second_order" else t["W"]
            self.w = [wr + vr for wr, vr in zip(_mat(f, x_w), _mat(f, v))]
            self.b = _vec(f, t.get("b"), self.hidden)
            self.h0 = _vec(f, t.get("h0"), self.hidden)
            if kind == "second_order":
                if "A" in t:
                    self.a = np.asarray(t["A"], dtype=object).tolist()
                    self.a = [[[f.const(Fraction(v)) for v in row] for row in m] for m in self.a]
                else:
                    self.p, self.q, self.s = _mat(f, t["A_out"]), _mat(f, t["A_h"]), _mat(f, t["A_x"])
        elif kind == "mlp":
            self.layers = []
            l = 0
            while f"weight_{l}" in t:
                w = _mat(f, t[f"weight_{l}"])
                self.layers.append((w, _vec(f, t.get(f"bias_{l}"), len(w)), o.get(f"activation_{l}", "tanh")))
                l += 1
            self.hidden = len(self.layers[-1][0])
        else:
            raise ValueError(kind)

    @property
    def has_cell(self) -> bool:
        return self.kind in ("lstm", "doubling_lstm", "qrnn")

    def start(self, h0: Sequence[Any] | None, c0: Sequence[Any] | None) -> dict[str, list[Any]]:
        f, n = self.f, self.hidden
        default_h = self.h0 if self.kind == "simple_rnn" else [f.const(0)] * n
        st = {"h": [f.const(Fraction(v)) for v in h0] if h0 is not None else list(default_h)}
        if self.has_cell:
            st["c"] = [f.const(Fraction(v)) for v in c0] if c0 is not None else [f.const(0)] * n
        if self.kind == "qrnn":
            st["past"] = [f.const(0)] * ((self.k - 1) * self.n)
        return st

    def step(self, st: dict[str, list[Any]], x: list[Any]) -> dict[str, list[Any]]:
        f, o, H = self.f, self.o, self.hidden
        h = st["h"]
        if self.kind in ("lstm", "doubling_lstm"):
            gi, gh = _affine(f, self.w_ih, self.b_ih, x), _affine(f, self.w_hh, self.b_hh, h)
            p = [f.add(a, b) for a, b in zip(gi, gh)]
            gate, cand, out = o.get("gate", "sigmoid"), o.get("candidate", "tanh"), o.get("output", "tanh")
            dbl = self.kind == "doubling_lstm"
            hs, cs = [], []
            for u in range(H):
                i = f.act(gate, p[u])
                fg = f.act(gate, p[H + u])
                if dbl:
                    fg = f.add(fg, f.act(gate, p[2 * H + u]))
                g = f.act(cand, p[(3 if dbl else 2) * H + u])
                og = f.act(gate, p[(4 if dbl else 3) * H + u])
                c = f.add(f.mul(fg, st["c"][u]), f.mul(i, g))
                hs.append(f.mul(og, f.act(out, c)))
                cs.append(c)
            return {"h": hs, "c": cs}
        if self.kind == "gru":
            gi, gh = _affine(f, self.w_ih, self.b_ih, x), _affine(f, self.w_hh, self.b_hh, h)
            gate, cand = o.get("gate", "sigmoid"), o.get("candidate", "tanh")
            hs = []
            for u in range(H):
                r = f.act(gate, f.add(gi[u], gh[u]))
                z = f.act(gate, f.add(gi[H + u], gh[H + u]))
                n = f.act(cand, f.add(gi[2 * H + u], f.mul(r, gh[2 * H + u])))
                hs.append(f.add(n, f.mul(z, f.add(h[u], -n))))
            return {"h": hs}
        if self.kind == "qrnn":
            pre = _affine(f, self.w, self.b, list(x) + st["past"])
            gate, cand, pool = o.get("gate", "sigmoid"), o.get("candidate", "tanh"), o.get("pooling", "ifo")
            hs, cs = [], []
            for u in range(H):
                z = f.act(cand, pre[u])
                fg = f.act(gate, pre[H + u])
                keep = f.mul(fg, st["c"][u])
                if pool == "ifo":
                    c = f.add(keep, f.mul(f.act(gate, pre[3 * H + u]), z))
                else:
                    c = f.add(keep, f.mul(f.add(f.const(1), -fg), z))
                hs.append(c if pool == "f" else f.mul(f.act(gate, pre[2 * H + u]), c))
                cs.append(c)
            past = (list(x) + st["past"])[: (self.k - 1) * self.n]
            return {"h": hs, "c": cs, "past": past}
        if self.kind in ("simple_rnn", "residual", "second_order"):
            acc = _affine(f, self.w, self.b, list(x) + list(h))
            act = o.get("activation", "tanh")
            if self.kind == "second_order":
                if hasattr(self, "a"):
                    for i in range(H):
                        for j in range(H):
                            m = f.const(0)
                            for k, xk in enumerate(x):
                                m = f.mac(m, self.a[i][j][k], xk)
                            acc[i] = f.mac(acc[i], f.end_sum(m), h[j])
                else:
                    zero = [f.const(0)] * len(self.q)
                    s = _affine(f, self.s, zero, x)
                    q = _affine(f, self.q, zero, h)
                    prod = [f.mul(a, b) for a, b in zip(q, s)]
                    for i in range(H):
                        for r, pr in enumerate(prod):
                            acc[i] = f.mac(acc[i], self.p[i][r], pr)
            out = [f.act(act, f.end_sum(a)) for a in acc]
            if self.kind == "residual":
                out = [f.add(a, b) for a, b in zip(h, out)]
            return {"h": out}
        if self.kind == "mlp":
            z = list(x) + list(h)
            for w, b, act in self.layers:
                z = [f.act(act, a) for a in _affine(f, w, b, z)]
            return {"h": z}
        raise ValueError(self.kind)


def run(layers: Sequence[Layer], xs: Sequence[Sequence[Any]], fmt: str,
        h0: Sequence[Sequence[Any] | None] | None = None, c0: Sequence[Sequence[Any] | None] | None = None,
        fma: bool = False, approx_activations: bool = False, accumulate: str | None = None,
        ) -> tuple[list[list[Any]], list[list[Any]], list[list[Any] | None]]:
    """Runs one sequence through the stack: (top-layer h_1..h_T, final h per layer, final c
    per layer or None). Values are numpy scalars of the format, or Fractions for "exact".
    ``fma=True``: fused product-sums (one rounding each) in the affine maps and 2RNN sums.
    ``approx_activations=True`` (f32): tanh and sigmoid as ``reference_approx`` defines them.
    ``accumulate="f32"`` (bf16, f16): each sum in f32, rounded to the format at its end."""
    f = arithmetic(fmt, fma, approx_activations, accumulate)
    refs = [_LayerRef(f, layer) for layer in layers]
    states = [r.start(None if h0 is None else h0[k], None if c0 is None else c0[k]) for k, r in enumerate(refs)]
    top = []
    for x in xs:
        inp = [f.const(Fraction(v)) for v in x]
        for k, r in enumerate(refs):
            states[k] = r.step(states[k], inp)
            inp = states[k]["h"]
        top.append(list(inp))
    return top, [s["h"] for s in states], [s.get("c") for s in states]
