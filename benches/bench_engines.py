#!/usr/bin/env python
"""Side-by-side benchmark of rnnsim against numpy, PyTorch, fractions and python-flint.

    python benches/bench_engines.py            # full run (about a minute)
    python benches/bench_engines.py --quick    # every section in a few seconds (smoke test)
    python benches/bench_engines.py --blas-threads 2   # numpy BLAS on 2 threads (default 1;
                                                       # 0 = OpenBLAS's own default)

Sections
--------
float   A tanh SimpleRNN h_t = tanh(W x_t + V h_{t-1} + b), h_0 = 0, all states kept, at the
        shapes (B, T, H, I) of issue 7 (--quick: T/50, B <= 256), in
        rnnsim (``run_batch``, f32 and f64, threads=1 and 2) vs numpy (one batched
        ``x_t @ W.T + h @ V.T + b`` per step, BLAS) vs ``torch.nn.RNN`` on the CPU with the
        same weights (only if torch imports). Throughput is token-steps/s = batch*T/seconds.
        Outputs are compared (max abs difference of all states): rnnsim rounds in a fixed
        order without FMA, BLAS does not, so small differences are expected.
exact   A 4-unit slu "stack machine" with rational weights that pushes one random base-4
        digit per tick (s' = s/4 + x0/4 + 3*x1/4) plus units reading the top digit, in
        rnnsim (exact) vs a pure-Python ``fractions.Fraction`` loop (sparse, own) vs
        ``rnnsim.reference.run_exact`` (the dense test oracle, if present) vs python-flint
        (``fmpq_mat`` products each tick, slu applied elementwise). The network is pre-run
        in rnnsim to the stack depth (1k / 10k digits); that exact start state is handed
        to all three, which then run the same N further ticks (so the depth grows from D to
        D+N during the measurement). All final states are checked to be equal.

Timing is the best of a few repeats (wall clock, ``time.perf_counter``); nothing here ever
asserts on time. Ratios > 1 mean rnnsim is faster.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from fractions import Fraction

# numpy's BLAS thread count must be fixed before numpy is imported. Default: 1 thread, the
# like-for-like comparison with rnnsim threads=1 (and robust: a multi-threaded OpenBLAS
# spin-waits at every small matmul and collapses when the cores are shared with other
# work). --blas-threads N sets N; --blas-threads 0 leaves the library's own default.
BLAS_THREADS = "1"
for _i, _a in enumerate(sys.argv):
    if _a.startswith("--blas-threads"):
        BLAS_THREADS = _a.split("=", 1)[1] if "=" in _a else (sys.argv[_i + 1] if _i + 1 < len(sys.argv) else "1")
if BLAS_THREADS.strip() != "0":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = BLAS_THREADS.strip()

import numpy as np  # noqa: E402

import rnnsim as rs  # noqa: E402

# rnnsim's Python layer hands exact values to the core as decimal "p/q" strings; a 10k-digit
# base-4 stack has ~6000-decimal-digit numerators, above CPython's default int->str limit.
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)

try:
    import torch  # type: ignore
except Exception as e:  # noqa: BLE001 - any import problem means "no torch"
    torch = None
    TORCH_ERR = f"{type(e).__name__}: {e}"
else:
    TORCH_ERR = ""

try:
    from rnnsim import reference as rs_reference  # the test oracle (pure Python, dense)
except ImportError:
    rs_reference = None

try:
    import flint  # type: ignore
except Exception as e:  # noqa: BLE001
    flint = None
    FLINT_ERR = f"{type(e).__name__}: {e}"
else:
    FLINT_ERR = ""


# ---------------------------------------------------------------------------- helpers
def timed(fn, repeats: int, min_total: float = 0.0):
    """(best seconds, result of the last call). Calls fn at least `repeats` times, and
    keeps repeating until `min_total` seconds were spent (at most 50 calls)."""
    best = float("inf")
    out = None
    spent = 0.0
    n = 0
    if repeats == 1:  # --quick: one untimed warm-up call (thread pools, caches)
        fn()
    while n < repeats or spent < min_total:
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        n += 1
        if n >= 50:
            break
    return best, out


def fmt_rate(r: float) -> str:
    if r >= 1e6:
        return f"{r / 1e6:8.2f} M"
    if r >= 1e3:
        return f"{r / 1e3:8.2f} k"
    return f"{r:8.1f}  "


def header() -> None:
    cores = os.cpu_count()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = cores
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        load = "n/a"
    print("=" * 78)
    print("rnnsim benchmark")
    print(f"machine : {cpu}, {cores} logical cores ({affinity} usable), load avg {load}")
    print(f"python  : {sys.version.split()[0]} ({platform.platform()})")
    ver = getattr(rs, "__version__", None)
    if ver is None:
        try:
            from importlib.metadata import version

            ver = version("rnnsim")
        except Exception:  # noqa: BLE001
            ver = "?"
    print(f"rnnsim  : {ver}")
    blas = ""
    try:
        cfg = np.show_config(mode="dicts")  # numpy >= 1.26
        b = cfg.get("Build Dependencies", {}).get("blas", {})
        blas = f", BLAS {b.get('name', '?')} {b.get('version', '')}".rstrip()
    except Exception:  # noqa: BLE001
        pass
    nthreads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "library default (all cores)"
    print(f"numpy   : {np.__version__}{blas}, BLAS threads: {nthreads}")
    print(f"torch   : {torch.__version__ if torch is not None else 'not available (' + TORCH_ERR + ')'}")
    print(f"flint   : {flint.__version__ if flint is not None else 'not available (' + FLINT_ERR + ')'}")
    print("=" * 78)


# ---------------------------------------------------------------------------- float
def numpy_rnn(x: np.ndarray, V: np.ndarray, W: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """All states (B, T, H) of h_t = tanh(x_t W^T + h_{t-1} V^T + b), h_0 = 0."""
    x = np.ascontiguousarray(x, dtype=dtype)
    VT = np.ascontiguousarray(V.T, dtype=dtype)
    WT = np.ascontiguousarray(W.T, dtype=dtype)
    bb = b.astype(dtype)
    B, T, _ = x.shape
    H = V.shape[0]
    out = np.empty((B, T, H), dtype=dtype)
    h = np.zeros((B, H), dtype=dtype)
    for t in range(T):
        h = np.tanh(x[:, t] @ WT + h @ VT + bb)
        out[:, t] = h
    return out


def torch_rnn_factory(V, W, b, dtype_name: str):
    tdtype = torch.float32 if dtype_name == "f32" else torch.float64
    H, I = W.shape
    rnn = torch.nn.RNN(I, H, num_layers=1, nonlinearity="tanh", bias=True, batch_first=True)
    rnn = rnn.to(tdtype)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.from_numpy(W.astype(np.float64)))
        rnn.weight_hh_l0.copy_(torch.from_numpy(V.astype(np.float64)))
        rnn.bias_ih_l0.copy_(torch.from_numpy(b.astype(np.float64)))
        rnn.bias_hh_l0.zero_()

    def run(x: np.ndarray, threads: int):
        torch.set_num_threads(threads)
        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32 if dtype_name == "f32" else np.float64))
        with torch.no_grad():
            out, _ = rnn(xt)
        return out.numpy()

    return run


# torch 2.13 CPU, f32 RNN tanh, M token-steps/s on this machine (issue 7's reference figures)
TORCH_REF = {"(1,10000,16,4)": 0.13, "(1024,1000,16,4)": 5.9, "(4096,256,64,8)": 1.5,
             "(256,256,256,64)": 0.49, "(64,100,1024,128)": 0.04}


def bench_float(quick: bool) -> None:
    # issue 7's shapes (batch, T, hidden, input); --quick cuts T (and the biggest batches)
    shapes = [(1, 10000, 16, 4), (1024, 1000, 16, 4), (4096, 256, 64, 8), (256, 256, 256, 64), (64, 100, 1024, 128)]
    if quick:
        shapes = [(min(B, 256), max(T // 50, 3), H, I) for (B, T, H, I) in shapes]
    repeats = 1 if quick else 2
    min_total = 0.0
    print()
    print("FLOAT BATCH: tanh SimpleRNN, all states kept; token-steps/s = batch*T/s")
    if torch is None:
        print(f"  (PyTorch not importable: {TORCH_ERR}; torch columns skipped)")
    print(f"  numpy: per step h = tanh(x_t @ W.T + h @ V.T + b) with BLAS "
          f"({os.environ.get('OPENBLAS_NUM_THREADS', 'default')} thread(s), see --blas-threads)")
    print()
    cols = f"  {'shape (B,T,H,I)':<20} {'impl':<18} {'dtype':<5} {'thr':>3} {'time ms':>10} {'tok-steps/s':>12}  {'max|diff| vs numpy':>18}"
    print(cols)
    print("  " + "-" * (len(cols) - 2))
    ratios = []
    for (B, T, H, I) in shapes:
        rng = np.random.default_rng(1234 + H)
        s = 1.0 / np.sqrt(H)
        V = rng.uniform(-s, s, (H, H)).astype(np.float32)
        W = rng.uniform(-s, s, (H, I)).astype(np.float32)
        b = rng.uniform(-s, s, (H,)).astype(np.float32)
        x = rng.uniform(-1, 1, (B, T, I)).astype(np.float32)
        # float64 arrays holding float32 values: the exact weights rnnsim stores are the
        # same numbers numpy and torch use in both precisions
        net = rs.SimpleRNN(V.astype(np.float64), W.astype(np.float64), b.astype(np.float64), activation="tanh")
        x64 = x.astype(np.float64)
        tok = B * T
        label = f"({B},{T},{H},{I})"
        for dt, npdt in (("f32", np.float32), ("f64", np.float64)):
            t_np, ref = timed(lambda: numpy_rnn(x, V, W, b, npdt), repeats, min_total)
            print(f"  {label:<20} {'numpy':<18} {dt:<5} {'-':>3} {t_np * 1e3:10.2f} {fmt_rate(tok / t_np):>12}  {'(reference)':>18}")
            t_torch = {}
            if torch is not None:
                run_t = torch_rnn_factory(V, W, b, dt)
                for th in (1, 2):
                    t, out = timed(lambda: run_t(x, th), repeats, min_total)
                    t_torch[th] = t
                    diff = float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64))))
                    print(f"  {label:<20} {'torch.nn.RNN':<18} {dt:<5} {th:>3} {t * 1e3:10.2f} {fmt_rate(tok / t):>12}  {diff:18.3g}")
            for th in (1, 2):
                t, res = timed(lambda: net.run_batch(x64, dtype=dt, threads=th, keep="all"), repeats, min_total)
                diff = float(np.max(np.abs(res.states.astype(np.float64) - ref.astype(np.float64))))
                print(f"  {label:<20} {'rnnsim run_batch':<18} {dt:<5} {th:>3} {t * 1e3:10.2f} {fmt_rate(tok / t):>12}  {diff:18.3g}")
                ratios.append((label, dt, th, t_np / t, (t_torch[th] / t) if th in t_torch else None, tok / t))
    print()
    print("  ratios (throughput of rnnsim / throughput of the other; > 1 means rnnsim is faster)")
    print("  'torch ref' = rnnsim f32 token-steps/s / the torch 2.13 CPU f32 figures quoted in issue 7")
    print("  for this machine (M token-steps/s: " + ", ".join(f"{k}: {v}" for k, v in TORCH_REF.items()) + ")")
    print(f"  {'shape':<20} {'dtype':<5} {'thr':>3} {'rnnsim/numpy':>13} {'rnnsim/torch':>13} {'torch ref':>10}")
    for label, dt, th, r_np, r_t, rate in ratios:
        rt = f"{r_t:13.3f}" if r_t is not None else f"{'n/a':>13}"
        ref = TORCH_REF.get(label) if dt == "f32" and not quick else None
        rr = f"{rate / (ref * 1e6):10.2f}" if ref else f"{'n/a':>10}"
        print(f"  {label:<20} {dt:<5} {th:>3} {r_np:13.3f} {rt} {rr}")


# ---------------------------------------------------------------------------- exact
# The stack machine (the same network as in benches/engines.rs):
#   unit 0  s   = slu(s/4 + x0/4 + 3*x1/4)      push digit 1 (x0=1) or 3 (x1=1)
#   unit 1  top = slu(4 s - 2)                   top digit is 3
#   unit 2  ne  = slu(4 s)                       stack nonempty
#   unit 3  one = slu(ne - top)                  top digit is 1 (reads units 1 and 2)
#   readout y = (top, one)
F = Fraction
STACK_V = [[F(1, 4), 0, 0, 0], [F(4), 0, 0, 0], [F(4), 0, 0, 0], [0, F(-1), F(1), 0]]
STACK_W = [[F(1, 4), F(3, 4)], [0, 0], [0, 0], [0, 0]]
STACK_B = [F(0), F(-2), F(0), F(0)]
STACK_RO = [[0, 1, 0, 0], [0, 0, 0, 1]]


def stack_net() -> rs.SimpleRNN:
    return rs.SimpleRNN(STACK_V, STACK_W, STACK_B, activation="slu", readout=rs.Linear(STACK_RO, [0, 0]))


def push_inputs(n: int, seed: int) -> np.ndarray:
    """(n, 2) one-hot rows: [1, 0] pushes digit 1, [0, 1] pushes digit 3."""
    bits = np.random.default_rng(seed).integers(0, 2, n)
    x = np.zeros((n, 2))
    x[np.arange(n), bits] = 1.0
    return x


def slu(p):
    return 0 if p <= 0 else (1 if p >= 1 else p)


def fraction_loop(h0: list[Fraction], xs: np.ndarray) -> list[Fraction]:
    """The recurrence in plain Fractions, in the documented order acc = b_i; += W_ik x_k;
    += V_ij h_j, skipping zero weights (as rnnsim's sparse engine does)."""
    V = [[(j, F(v)) for j, v in enumerate(row) if v != 0] for row in STACK_V]
    W = [[(k, F(w)) for k, w in enumerate(row) if w != 0] for row in STACK_W]
    B = [F(v) for v in STACK_B]
    X = [[int(v) for v in row] for row in xs]  # 0/1 inputs as ints
    h = list(h0)
    d = len(h)
    for x in X:
        nh = [None] * d
        for i in range(d):
            acc = B[i]
            for k, w in W[i]:
                if x[k]:
                    acc += w * x[k]
            for j, v in V[i]:
                acc += v * h[j]
            nh[i] = slu(acc)
        h = nh
    return [F(v) for v in h]


def reference_loop(h0: list[Fraction], xs: np.ndarray) -> list[Fraction]:
    """rnnsim.reference.run_exact (the test oracle): dense Fraction sums, keeps every state
    and evaluates the readout each tick."""
    X = [[int(v) for v in row] for row in xs]
    states, _ = rs_reference.run_exact(STACK_V, STACK_W, STACK_B, h0, "slu", X, readout=(STACK_RO, [0, 0]))
    return [F(v) for v in states[-1]]


def flint_loop(h0: list[Fraction], xs: np.ndarray) -> list[Fraction]:
    """python-flint: h = slu(V h + (W x + b)) with fmpq_mat products every tick."""
    fq = flint.fmpq
    d, n = len(STACK_V), len(STACK_W[0])
    Vm = flint.fmpq_mat(d, d, [fq(F(v).numerator, F(v).denominator) for row in STACK_V for v in row])
    Wm = flint.fmpq_mat(d, n, [fq(F(v).numerator, F(v).denominator) for row in STACK_W for v in row])
    Bm = flint.fmpq_mat(d, 1, [fq(v.numerator, v.denominator) for v in STACK_B])
    cols = {}
    for row in xs:
        key = tuple(int(v) for v in row)
        if key not in cols:
            cols[key] = flint.fmpq_mat(n, 1, list(key))
    X = [cols[tuple(int(v) for v in row)] for row in xs]
    zero, one = fq(0), fq(1)
    h = flint.fmpq_mat(d, 1, [fq(v.numerator, v.denominator) for v in h0])
    for xc in X:
        p = Vm * h + (Wm * xc + Bm)
        h = flint.fmpq_mat(d, 1, [zero if e <= 0 else (one if e >= 1 else e) for e in p.entries()])
    return [F(int(e.p), int(e.q)) for e in h.entries()]


def rnnsim_ticks(net: rs.SimpleRNN, h0: list[Fraction], xs: np.ndarray) -> list[Fraction]:
    h = np.empty((1, len(h0)), dtype=object)
    h[0, :] = h0
    res = net.run_batch(xs[None], dtype="exact", h0=h, keep="final", threads=1)
    return list(res.final[0, 0])


def bench_exact(quick: bool) -> None:
    depths = [(1000, 100 if quick else 1000), (10000, 50 if quick else 1000)]
    repeats = 1 if quick else 5
    print()
    print("EXACT: slu stack machine, 4 units (push one base-4 digit per tick + top-digit readers)")
    print("  pre-run in rnnsim to depth D, then the SAME start state is handed to every engine,")
    print("  which runs the same N further ticks (depth D -> D+N). rnnsim is timed through the")
    print("  Python API (run_batch keep='final': h0 in as 'p/q' strings, final state out as")
    print("  Fractions); 'rnnsim engine' subtracts the cost of a 1-tick call (conversion overhead).")
    if flint is None:
        print(f"  (python-flint not importable: {FLINT_ERR}; flint rows skipped)")
    print()
    cols = f"  {'depth D':>8} {'N':>5} {'impl':<22} {'time ms':>10} {'ticks/s':>12}  {'state bits':>10}"
    print(cols)
    print("  " + "-" * (len(cols) - 2))
    net = stack_net()
    ratios = []
    for depth, n in depths:
        pre = push_inputs(depth, seed=1)
        start = list(net.run_batch(pre[None], dtype="exact", keep="final").final[0, 0])
        xs = push_inputs(n, seed=2)
        bits = max(start[0].numerator.bit_length(), start[0].denominator.bit_length())
        t_rs, out_rs = timed(lambda: rnnsim_ticks(net, start, xs), repeats)
        t_rs1, _ = timed(lambda: rnnsim_ticks(net, start, xs[:1]), max(repeats, 3) * 2)
        # per-tick engine time; None when the N-tick call is not clearly longer than the
        # 1-tick call (timing noise on a loaded machine)
        engine = (t_rs - t_rs1) / (n - 1) if n > 1 and t_rs - t_rs1 > 0.1 * t_rs else None
        t_fr, out_fr = timed(lambda: fraction_loop(start, xs), repeats)
        rows = [("rnnsim (API call)", t_rs), ("fractions.Fraction loop", t_fr)]
        t_ref = None
        if rs_reference is not None:
            t_ref, out_ref = timed(lambda: reference_loop(start, xs), repeats)
            rows.append(("rnnsim.reference", t_ref))
        t_fl = None
        if flint is not None:
            t_fl, out_fl = timed(lambda: flint_loop(start, xs), repeats)
            rows.append(("python-flint fmpq_mat", t_fl))
        for name, t in rows:
            print(f"  {depth:>8} {n:>5} {name:<22} {t * 1e3:10.2f} {fmt_rate(n / t):>12}  {bits:>10}")
        if engine is not None:
            print(f"  {depth:>8} {n:>5} {'rnnsim engine (est.)':<22} {engine * n * 1e3:10.2f} {fmt_rate(1 / engine):>12}"
                  f"  (1-tick call: {t_rs1 * 1e3:.2f} ms)")
        else:
            print(f"  {depth:>8} {n:>5} {'rnnsim engine (est.)':<22} {'n/a':>10} {'n/a':>12}"
                  f"  (1-tick call: {t_rs1 * 1e3:.2f} ms: too close to the N-tick call)")
        ok = out_rs == out_fr and (flint is None or out_rs == out_fl) and (t_ref is None or out_rs == out_ref)
        print(f"  {'':>8} {'':>5} final states identical across engines: {ok}")
        ratios.append((depth, t_fr / t_rs, (t_ref / t_rs) if t_ref else None, (t_fl / t_rs) if t_fl else None,
                       (t_fr / (engine * n)) if engine else None,
                       (t_fl / (engine * n)) if t_fl and engine else None))
    print()
    print("  ratios (ticks/s of rnnsim / ticks/s of the other; > 1 means rnnsim is faster)")
    print(f"  {'depth':>8} {'rnnsim/Fraction':>16} {'rnnsim/reference':>17} {'rnnsim/flint':>13}"
          f" {'engine/Fraction':>16} {'engine/flint':>13}")
    na = lambda v, w: f"{v:{w}.2f}" if v is not None else f"{'n/a':>{w}}"  # noqa: E731
    for depth, a, r, b, c, e in ratios:
        print(f"  {depth:>8} {a:16.2f} {na(r, 17)} {na(b, 13)} {na(c, 16)} {na(e, 13)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (a few seconds)")
    ap.add_argument("--only", choices=["float", "exact"], help="run one section")
    ap.add_argument("--blas-threads", type=int, metavar="N",
                    help="threads numpy's BLAS may use (default 1; 0 = the library's default)")
    args = ap.parse_args()
    header()
    t0 = time.perf_counter()
    if args.only in (None, "float"):
        bench_float(args.quick)
    if args.only in (None, "exact"):
        bench_exact(args.quick)
    print()
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
