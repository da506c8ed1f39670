"""Run the compiled networks in IEEE floating point (numpy) and report when
the simulated machine first diverges from the interpreter.

Divergence = the (state, head symbol) one-hot read off h_t (argmax of the
gate forms Gh) differs from the interpreter's configuration after the same
number of steps, or the one-hot is no longer clean.  We also report the
stack depths (in cells) at the divergence tick, and the largest |stack| seen.
"""
from __future__ import annotations

import sys
import numpy as np

import tm as T
from construction import compile_tm


def depths(cfg, blank):
    q, head, tape = cfg
    cells = [c for c, s in tape.items() if s != blank]
    left = max([head - c for c in cells if c < head], default=0)
    right = max([c - head for c in cells if c > head], default=0)
    return left, right


def float_run(tm, enc, tape, dtype, max_steps, word=(), penalty="tight"):
    net = compile_tm(tm, enc, tape, penalty=penalty)
    V = np.array([[float(v) for v in r] for r in net["V"]], dtype=dtype)
    W = np.array([[float(v) for v in r] for r in net["W"]], dtype=dtype)
    b = np.array([float(v) for v in net["b"]], dtype=dtype)
    h = np.array([float(v) for v in net["h0"]], dtype=dtype)
    Gh = net["forms"]["Gh"]
    idx = net["forms"]["idx"]
    keys = list(Gh)
    G = np.zeros((len(keys), len(h)), dtype=dtype)
    for r, key in enumerate(keys):
        for u, c in Gh[key].items():
            G[r, idx[u]] = float(c)
    cols = {s: i for i, s in enumerate(net["input_symbols"])}
    configs, verdict = T.run(tm, list(word), tape, max_steps=max_steps)
    one, zero = dtype(1), dtype(0)
    n = len(word)
    maxdepth = 0
    for t in range(1, n + len(configs)):
        x = np.zeros(len(cols), dtype=dtype)
        x[cols[word[t - 1] if t <= n else "EOS"]] = 1
        h = np.minimum(one, np.maximum(zero, V @ h + W @ x + b))
        if t <= n:
            continue
        j = t - n
        if j >= len(configs):
            break
        q, head, tp = configs[j]
        e = None if tape == "two-way" else (1 if head == 0 else 0)
        exp = (q, tp.get(head, tm.blank), e)
        g = G @ h
        r = int(np.argmax(g))
        dl, dr = depths(configs[j], tm.blank)
        clean = abs(g[r] - 1) < 0.25 and np.sum(np.abs(g)) < 1.25
        if keys[r] != exp or not clean:
            dl0, dr0 = depths(configs[j - 1], tm.blank)
            return dict(diverged_at_step=j, depth_before=(dl0, dr0), maxdepth=maxdepth,
                        got=keys[r], exp=exp)
        maxdepth = max(maxdepth, dl, dr)
    return dict(diverged_at_step=None, steps=len(configs) - 1, maxdepth=maxdepth)


def sweep_tm(nsym):
    """Walk right to the end of the input, then back left, then halt: every
    input cell is pushed onto L and popped back, so this measures how many
    symbols a stack holds in floating point."""
    S = [str(i) for i in range(nsym)]
    d = {}
    for s in S[1:]:
        d[("A", s)] = ("A", s, "R")
        d[("B", s)] = ("B", s, "L")
    d[("A", "0")] = ("B", "0", "L")
    d[("B", "0")] = ("H", "0", "R")
    return T.TM(states=["A", "B", "H"], symbols=S, blank="0", delta=d, start="A",
                halt={"H"}, name=f"sweep{nsym}")


def capacity(enc, dtype, nsym, seed=0, top=80, penalty="tight"):
    import random
    rng = random.Random(seed)
    tm_ = sweep_tm(nsym)
    best = 0
    for m in range(1, top):
        w = [rng.choice(tm_.input_symbols) for _ in range(m)]
        r = float_run(tm_, enc, "two-way", dtype, 10 * m + 10, word=w, penalty=penalty)
        if r["diverged_at_step"] is not None:
            return best
        best = m
    return best


def main():
    for dtype in (np.float64, np.float32):
        for enc in ("base4", "cantor3"):
            for nsym in (2, 3):
                print(np.dtype(dtype).name, enc, f"|Gamma|={nsym}",
                      "sweep capacity (longest input pushed+popped intact): tight", capacity(enc, dtype, nsym),
                      "syntactic", capacity(enc, dtype, nsym, penalty="syntactic"))
    cases = [("BB4", 200), ("BB5", 200000), ("BB2x3", 100)]
    for dtype in (np.float64, np.float32):
        for enc in ("base4", "cantor3"):
            for key, ms in cases:
                tm_ = T.parse_bb(T.BB[key], key)
                r = float_run(tm_, enc, "two-way", dtype, ms)
                print(np.dtype(dtype).name, enc, key, r)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
