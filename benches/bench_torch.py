#!/usr/bin/env python
"""rnnsim vs PyTorch on the CPU, side by side (issue 7): SimpleRNN (tanh), LSTM and GRU,
f32 and f64, the same weights and inputs, token-steps per second and the ratio.

    python benches/bench_torch.py            # full run (about 2-3 minutes)
    python benches/bench_torch.py --quick    # smoke test (seconds; tests/test_benches.py)
    python benches/bench_torch.py --only lstm --threads 2
    python benches/bench_torch.py --only rnn --threads 1 --dtypes f32,f16,bf16

Shapes (batch, T, hidden, input) are issue 7's; T is shortened for the big ones (what
matters is token-steps/s = batch*T/seconds, and every step costs the same). PyTorch runs
``torch.nn.RNN/LSTM/GRU`` (no_grad, batch_first) with ``torch.set_num_threads`` equal to
rnnsim's ``threads``. When torch does not import, the torch column uses the f32 figures
quoted in issue 7 for this machine (torch 2.13 CPU), labelled "quoted". rnnsim rounds every
operation to the format in a fixed order without FMA (bitwise reproducible, see README);
torch/BLAS do not, so the largest |difference| of the states is printed as a sanity check.

The two libraries' calls alternate (`best_times`), so each ratio is measured in one phase of a
shared machine. Also printed: rnnsim's 1 → 2 thread scaling, and at hidden 1024 the fraction
of the machine's non-FMA peak at the measured clock (`measured_ghz`; cores × 2 vector ports
× lanes × clock on Intel, 4 ports on AMD Zen, whose adds have their own; with AVX-512 16 f32
lanes, 8 f64, 32 f16 (AVX512-FP16), 16 bf16 (computed in f32 lanes); with AVX2 half as many)
reached by the 2·(H·(H+I)) multiply/add operations of a SimpleRNN token-step. Last, every
measured ratio against issue 7's goal (20× at batch 1, 3× at hidden ≤ 64, else 1×) and
against this machine's bound (`peak_bound`: products at the peak of their arithmetic, the
FMA peak with +fma and the non-FMA one without (`fused`), everything else free): a goal
above the bound is out of reach on this machine whatever the code does; then how many rows
met their goal, and the README's table of ratios in markdown (`ratio_table`: 1 / 2 threads,
bold where both meet the goal). Nothing asserts on time.

``--dtypes`` picks the formats (default f32,f64); a format written ``f32+fma`` runs rnnsim with
``fma=True`` (every product-sum rounded once, as BLAS does; README "Fused multiply-add"), and its
peak fraction is against the FMA peak (twice the non-FMA one on Intel); ``f32+approx`` (or
``f32+fma+approx``) runs it with ``approx_activations=True`` (tanh and sigmoid within 2 ulps
instead of correctly rounded, as torch's own are; README "Approximate activations"); ``bf16+f32``
(or ``f16+f32``, each optionally ``+fma``) runs the half format with f32 sums
(``accumulate="f32"``, README "Half formats with f32 sums"). The half formats f16 and bf16 print
rnnsim-only rows (torch's CPU recurrent modules are not a like-for-like half reference), and
a table of their rates relative to rnnsim's f32 with the same flags on the same shape
(issue 7: "f16/bf16 batches at least as fast as f32"; ``bf16+f32+fma`` against ``f32+fma``).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import rnnsim as rs  # noqa: E402

try:
    import torch  # type: ignore
except Exception as e:  # noqa: BLE001 - any import problem means "no torch"
    torch = None
    TORCH_ERR = f"{type(e).__name__}: {e}"
else:
    TORCH_ERR = ""

SHAPES = [(1, 10000, 16, 4), (1024, 1000, 16, 4), (4096, 256, 64, 8), (256, 256, 256, 64), (64, 100, 1024, 128)]
# T actually run (full mode): issue 7's T. Until session 31 the shapes ran 4000, 100, 16, 16 and 8
# ticks to keep the run near 6 minutes; but a shorter T also shrinks the (B, T, H) output that
# both libraries write, whose fresh pages torch pays for on every call (its clear_page took 12%
# of a SimpleRNN run at (4096, 256, 64, 8)), so the issue's own shapes are timed now (~15
# minutes for f32 and f64). --shapes 'B,T,H,I,T run' still times fewer ticks.
# issue 7: torch 2.13 CPU, f32, M token-steps/s on this machine
QUOTED = {"rnn": [0.13, 5.9, 1.5, 0.49, 0.04], "lstm": [1.5, 7.6, 0.9, 0.15, 0.013], "gru": [0.05, 5.1, 0.30, 0.14, 0.003]}
GATES = {"rnn": 1, "lstm": 4, "gru": 3}


def weights(kind: str, H: int, I: int, seed: int) -> dict:
    """PyTorch-style parameters (f32 values, so both libraries hold the same numbers)."""
    g, s = GATES[kind], 1.0 / np.sqrt(H)
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-s, s, shape).astype(np.float32) for name, shape in
            [("weight_ih_l0", (g * H, I)), ("weight_hh_l0", (g * H, H)), ("bias_ih_l0", (g * H,)), ("bias_hh_l0", (g * H,))]}


def rnnsim_net(kind: str, w: dict):
    if kind == "rnn":
        # one bias: torch adds b_ih and b_hh; here b_hh = 0 on both sides
        return rs.SimpleRNN(w["weight_hh_l0"].astype(np.float64), w["weight_ih_l0"].astype(np.float64),
                            w["bias_ih_l0"].astype(np.float64), activation="tanh")
    return (rs.LSTM if kind == "lstm" else rs.GRU).from_torch(w)


def torch_module(kind: str, w: dict, I: int, H: int, dt: str):
    mod = {"rnn": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind](I, H, batch_first=True)
    mod = mod.to(torch.float32 if dt == "f32" else torch.float64)
    with torch.no_grad():
        for name, v in w.items():
            src = np.zeros_like(v) if (kind == "rnn" and name == "bias_hh_l0") else v
            getattr(mod, name).copy_(torch.from_numpy(src.astype(np.float64)))
    return mod


def best_times(fns, repeats: int, budget: float = 1.0) -> list[tuple[float, object]]:
    """Best time and last result of each of `fns`, called in turn (one call of each per round,
    the order alternating between rounds): at least `repeats` rounds, more while under
    `budget` seconds per function (up to 20). On a shared machine whose speed drifts by tens
    of percent between seconds, interleaving puts every library through the same phases, so
    their ratio is measured under one set of conditions; the best of many short runs is the
    stable figure."""
    outs = [fn() for fn in fns]  # warm-up: plan, thread pool, caches
    best, spent, n = [float("inf")] * len(fns), 0.0, 0
    while n < repeats or (spent < budget * len(fns) and n < 20):
        order = range(len(fns)) if n % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            t0 = time.perf_counter()
            outs[i] = fns[i]()
            dt = time.perf_counter() - t0
            best[i], spent = min(best[i], dt), spent + dt
        n += 1
    return list(zip(best, outs))


def measured_ghz() -> float:
    """The clock a core sustains, measured (0.0 when it cannot be): x86-64 machine code for a
    chain of dependent 64-bit multiplications (`imul rax, rcx`, 3 cycles each on every
    x86-64 core since Sandy Bridge and Zen), run through ctypes from an executable page,
    best of 5 runs of 6·10^8 cycles (on a core that another process shares, it reads low).
    Not a chain of `add rax, 1`: Intel's Golden Cove and later fold small immediate adds
    at rename (a Xeon of 2026 ran such a chain at 16 "GHz"; its `imul` and register-add
    chains both read 4.05). The clock /proc/cpuinfo reports is the nominal one; boost
    clocks run above it (2.45 GHz reported, 2.9–3.15 measured on the EPYC 7003 of issue 7;
    2.6 reported, 4.05 measured on that Xeon), so a peak from it overstates the fraction
    reached."""
    import ctypes
    import mmap
    import platform

    # the System V calling convention (the count in rdi): Linux, the BSDs, macOS
    if platform.machine() not in ("x86_64", "amd64") or platform.system() == "Windows":
        return 0.0
    imul = bytes.fromhex("480fafc1")  # imul rax, rcx
    # mov eax,3; mov ecx,1; loop: 4 x imul rax,rcx; dec rdi; jnz loop; ret
    # (rdi: iterations, 12 cycles each; rax stays 3)
    loop = imul * 4 + bytes.fromhex("48ffcf")
    code = bytes.fromhex("b803000000" "b901000000") + loop + bytes([0x75, 0x100 - (len(loop) + 2)]) + bytes.fromhex("c3")
    try:
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except (OSError, ValueError, AttributeError, TypeError):
        return 0.0  # no executable anonymous pages here
    page.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
    chain = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(addr)
    iters, best = 50_000_000, float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        got = chain(iters)
        best = min(best, time.perf_counter() - t0)
        if got != 3:
            return 0.0
    return 12 * iters / best / 1e9


def cpuinfo(field: str) -> str:
    """The first value of `field` in /proc/cpuinfo ("" when it cannot be read or is absent)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                name, sep, value = line.partition(":")
                if sep and name.strip() == field:
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_label() -> str:
    """The CPU as /proc/cpuinfo names it, with its family and model (the VMs this runs on
    change between sessions, and their tables are only comparable on the same CPU) and the
    vector extensions the engines choose between."""
    flags = cpu_flags()
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_fp16", "avx512_bf16") if f in flags]
    return (f"{cpuinfo('model name') or 'unknown'} ({cpuinfo('vendor_id') or '?'} family "
            f"{cpuinfo('cpu family') or '?'} model {cpuinfo('model') or '?'}; {' '.join(isa) or 'no AVX2'})")


def cpuinfo_mhz() -> float:
    """The clock /proc/cpuinfo reports (2.1 GHz when it says nothing)."""
    return float(cpuinfo("cpu MHz") or 2100.0)


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty when it cannot be read)."""
    return set(cpuinfo("flags").split())


def tile_flags(flags: set[str], avx512_tiles: bool) -> set[str]:
    """The CPU's flags as the tiles see them: without the AVX-512 tiles in the build
    (`rnnsim._core.AVX512_TILES`, `build.rs`) an AVX-512 CPU runs the AVX2 ones, so its
    AVX-512 flags are dropped for the peak's lanes and pipes."""
    return flags if avx512_tiles else {f for f in flags if not f.startswith("avx512")}


def vector_lanes(dt: str, flags: set[str]) -> int:
    """Lanes per vector of the tiles rnnsim runs for `dt` on this CPU: AVX-512 (16 f32, 8 f64,
    32 f16 with AVX512-FP16, bf16/f16 otherwise in f32 lanes) or AVX2 (half that)."""
    wide = "avx512f" in flags
    # (Linux spells the flag avx512_fp16)
    if dt == "f16" and wide and ({"avx512_fp16", "avx512fp16"} & flags):
        return 32
    return {"f64": 4, "f32": 8, "f16": 8, "bf16": 8}[dt] * (2 if wide else 1)


def vectors_per_cycle(flags: set[str], vendor: str, family: str) -> int:
    """FMA instructions on `vector_lanes`' vectors one core retires per cycle: 2, except on
    Zen 4 (AMD family 25) with AVX-512, whose FMA pipes are 256 bits wide and run a 512-bit
    operation as two halves: 1 (measured here, session 24: a register-only loop of
    `vfmadd231ps zmm` ran 3.65 G/s, one of `ymm` 7.3 G/s, on a 3.65 GHz clock)."""
    return 1 if "avx512f" in flags and vendor == "AuthenticAMD" and family == "25" else 2


def peak_ops(threads: int, lanes: int, mhz: float, fused: bool, vendor: str, per_cycle: int = 2) -> float:
    """Peak multiply/add operations per second: threads × `per_cycle` FMA instructions
    (`vectors_per_cycle`) × lanes × clock × 2 with FMA; without, Intel's adds share those
    ports (half that), while AMD Zen has as many further ports for the adds (a multiply and
    an add per port pair and cycle: the same)."""
    ports = 2 * per_cycle if fused or vendor == "AuthenticAMD" else per_cycle
    return threads * ports * lanes * mhz * 1e6


def ops_per_step(kind: str, H: int, I: int) -> int:
    """Multiply/add operations of one token-step's products: 2·G·H·(H + I) for G gate blocks
    (1 SimpleRNN, 3 GRU, 4 LSTM) of W_hh h and W_ih x. The pointwise updates and the
    activations are not counted."""
    return 2 * GATES[kind] * H * (H + I)


def goal(shape: tuple[int, int, int, int]) -> float:
    """Issue 7's goal for the ratio rnnsim / torch at `shape`: 20 at batch 1, 3 at hidden
    ≤ 64, else 1."""
    B, _, H, _ = shape
    return 20.0 if B == 1 else 3.0 if H <= 64 else 1.0


def peak_bound(kind: str, shape: tuple[int, int, int, int], torch_rate: float, peak: float) -> float:
    """The largest ratio rnnsim / torch any kernel could reach on this machine at `shape`:
    its products at `peak` operations per second (`peak_ops` for the entry's arithmetic:
    fused or a multiply and an add, `fused`) and its
    activations, pointwise updates, stores and dependences free, against torch's measured
    token-steps/s. A goal above it is out of this machine's reach whatever the code does."""
    _, _, H, I = shape
    return peak / ops_per_step(kind, H, I) / torch_rate


def verdict(ratio: float, target: float, bound: float) -> str:
    """Where a measured ratio stands against its goal and the machine's `peak_bound`."""
    if ratio >= target:
        return "met"
    if bound < target:
        return "out of reach: bound < goal"
    return f"short ({ratio / target:.0%} of the goal)"


def ratio_table(rows: list[tuple], kinds: list[str], dtypes: list[str], shapes: list[tuple[int, int, int, int]]) -> list[str]:
    """The README's table of ratios rnnsim / torch, as markdown lines: a row per format and
    cell (formats in `dtypes` order, f32/f64 only), a column per shape that has a measured
    entry, each entry the ratios in thread-count order as measured (`rows`: (kind, shape,
    label, threads, rnnsim rate, torch rate, torch source)), **bold** where every thread
    count meets issue 7's goal (`goal`). Rows without a measured torch rate are left out;
    an empty list when none is measured."""
    ratios: dict[tuple, list[float]] = {}
    for (k, s, d, _, r, t, src) in sorted(rows, key=lambda row: row[3]):
        if src == "measured" and t:
            ratios.setdefault((k, s, d), []).append(r / t)
    columns = [s for s in dict.fromkeys(shapes) if any(key[1] == s for key in ratios)]
    lines = []
    for label in (d for d in dtypes if base(d) in ("f32", "f64")):
        for kind in kinds:
            got = [ratios.get((kind, s, label), []) for s in columns]
            if any(got):
                entries = [" / ".join(f"{ratio:.2f}" for ratio in g) for g in got]
                lines.append(f"| {kind.upper()} {label} | " + " | ".join(
                    f"**{e}**" if g and min(g) >= goal(s) else e for e, g, s in zip(entries, got, columns)) + " |")
    if not lines:
        return []
    return ["| cell, dtype | " + " | ".join(str(tuple(s)) for s in columns) + " |", "|" + "---|" * (len(columns) + 1)] + lines


def fmt(r: float) -> str:
    return f"{r / 1e6:9.3f} M" if r >= 1e5 else f"{r / 1e3:9.2f} k"


def base(label: str) -> str:
    """The format of a --dtypes entry ("f32+fma+approx" -> "f32")."""
    return label.split("+")[0]


# the modifiers each format takes in --dtypes: +fma (fused sums), +approx (f32's approximate
# tanh/σ), +f32 (bf16/f16 with f32 sums, accumulate="f32")
MODIFIERS = {"f32": {"fma", "approx"}, "f64": {"fma"}, "f16": {"fma", "f32"}, "bf16": {"fma", "f32"}}


def fused(label: str) -> bool:
    """Whether a --dtypes entry rounds each product-sum once ("+fma"). Without, every
    product is rounded and then added: a multiply and an add per product, which on Intel
    share the FMA ports (`peak_ops`), so its bound is half the fused one there."""
    return "fma" in label.split("+")[1:]


def f32_twin(label: str) -> str:
    """The f32 entry a half format is compared with: f32 with the same flags, the f32 sums
    dropped ("bf16+f32+fma" -> "f32+fma")."""
    return "+".join(["f32"] + [m for m in label.split("+")[1:] if m != "f32"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["rnn", "lstm", "gru"])
    ap.add_argument("--threads", type=int, default=0, help="only this thread count (default: 1 and 2)")
    ap.add_argument("--dtypes", default="f32,f64",
                    help="comma-separated formats among f32,f64,f16,bf16, each optionally +fma; f32 also "
                         "+approx, f16 and bf16 also +f32 (f32 sums, accumulate='f32') (default f32,f64)")
    ap.add_argument("--max-hidden", type=int, default=0, help="skip the shapes with a larger hidden size")
    ap.add_argument("--min-hidden", type=int, default=0, help="skip the shapes with a smaller hidden size")
    ap.add_argument("--ghz", type=float, default=0.0,
                    help="clock for the peak FLOP rate (default: measured, else /proc/cpuinfo's; a VM may report a nominal "
                         "clock below the one its cores sustain)")
    ap.add_argument("--shapes", default="",
                    help="other shapes instead of issue 7's: 'B,T,H,I[,T run];...' (T run: steps timed, default T)")
    args = ap.parse_args()
    shapes, t_runs = SHAPES, [s[1] for s in SHAPES]
    if args.shapes:
        try:
            given = [tuple(int(v) for v in part.split(",")) for part in args.shapes.split(";") if part.strip()]
        except ValueError:
            ap.error(f"--shapes: not a list of integers {args.shapes!r}")
        if not given or any(len(g) not in (4, 5) or min(g) < 1 for g in given):
            ap.error("--shapes: each shape is B,T,H,I or B,T,H,I,T_run, all positive")
        shapes = [g[:4] for g in given]
        # one T run per row (a shape may be given twice with different T runs)
        t_runs = [min(g[4] if len(g) == 5 else g[1], g[1]) for g in given]
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = [d for d in dtypes if base(d) not in ("f32", "f64", "f16", "bf16")
               or not set(d.split("+")[1:]) <= MODIFIERS[base(d)]]
    if unknown or not dtypes:
        ap.error(f"--dtypes: unknown or empty format list {args.dtypes!r}")
    kinds = [args.only] if args.only else ["rnn", "lstm", "gru"]
    thread_counts = [args.threads] if args.threads else [1, 2]
    repeats, budget = (1, 0.0) if args.quick else (3, 1.0)
    try:
        load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        load = "n/a"
    print(f"rnnsim vs PyTorch CPU; {os.cpu_count()} cores, load average {load} (shared machine: figures vary)")
    print(f"CPU: {cpu_label()}")
    ghz, nominal = args.ghz or measured_ghz(), cpuinfo_mhz()
    mhz, clock_src = (ghz * 1000, "--ghz" if args.ghz else "measured") if ghz else (nominal, "/proc/cpuinfo")
    avx512_tiles, cpu = rs._core.AVX512_TILES, cpu_flags()
    flags, vendor, family = tile_flags(cpu, avx512_tiles), cpuinfo("vendor_id"), cpuinfo("cpu family")
    if not avx512_tiles and "avx512f" in cpu:
        print("rnnsim built without its AVX-512 tiles (RNNSIM_AVX512_TILES, build.rs): the AVX2 tiles run, and the peak is AVX2's")
    per_cycle = vectors_per_cycle(flags, vendor, family)
    print(f"torch: {torch.__version__ if torch is not None else 'not importable (' + TORCH_ERR + '); using the figures quoted in issue 7'}")
    print("token-steps/s = batch*T/seconds, best of repeats; ratio = rnnsim / torch (> 1: rnnsim faster)")
    print()
    head = f"{'cell':<5} {'shape (B,T,H,I)':<20} {'T run':>6} {'dtype':<14} {'thr':>3} {'rnnsim':>12} {'torch':>12} {'ratio':>7} {'torch src':<9} {'max|diff|':>9}"
    print(head)
    print("-" * len(head))
    rows = []
    for kind in kinds:
        for i, shape in enumerate(shapes):
            B, T, H, I = shape
            t_run = max(3, t_runs[i] // 20) if args.quick else t_runs[i]
            if (args.max_hidden and H > args.max_hidden) or H < args.min_hidden:
                continue
            if args.quick:
                B = min(B, 64)
                if H >= 1024:
                    continue
            w = weights(kind, H, I, seed=7 + i)
            net = rnnsim_net(kind, w)
            x = np.random.default_rng(100 + i).uniform(-1, 1, (B, t_run, I)).astype(np.float32)
            x64 = x.astype(np.float64)
            tok = B * t_run
            for label in dtypes:
                mods = label.split("+")[1:]
                dt, fma, approx = base(label), fused(label), "approx" in mods
                sums = {"accumulate": "f32"} if "f32" in mods else {}
                half = dt in ("f16", "bf16")
                mod = torch_module(kind, w, I, H, dt) if torch is not None and not half else None
                for th in thread_counts:
                    # each library gets its dtype's array (rnnsim reads float32 input directly;
                    # the half formats round those same float32 values once); keep="states"
                    # returns what torch does: every h_t and the final (h, c), not every c_t
                    xr = x64 if dt == "f64" else x

                    def run_rnnsim():
                        return net.run_batch(xr, dtype=dt, threads=th, keep="states", fma=fma, approx_activations=approx, **sums)

                    diff, src, r_t = float("nan"), "", None
                    if mod is not None:
                        torch.set_num_threads(th)
                        xt = torch.from_numpy(x if dt == "f32" else x64)

                        def run_torch():
                            with torch.no_grad():
                                return mod(xt)[0]

                        # torch's threads and rnnsim's pool both stay alive between calls;
                        # only one computes at a time
                        (t_rs, res), (t_t, out) = best_times([run_rnnsim, run_torch], repeats, budget)
                        r_t, src = tok / t_t, "measured"
                        diff = float(np.max(np.abs(res.states.astype(np.float64) - out.numpy().astype(np.float64))))
                    else:
                        [(t_rs, res)] = best_times([run_rnnsim], repeats, budget)
                        if dt == "f32" and not args.quick and not half and shape in SHAPES:
                            r_t, src = QUOTED[kind][SHAPES.index(shape)] * 1e6, "quoted"
                    r_rs = tok / t_rs
                    ratio = f"{r_rs / r_t:7.2f}" if r_t else f"{'n/a':>7}"
                    tcol = fmt(r_t) if r_t else f"{'n/a':>11}"
                    print(f"{kind:<5} {str(shape).replace(' ', ''):<20} {t_run:>6} {label:<14} {th:>3} {fmt(r_rs):>12} {tcol:>12} {ratio} {src:<9} {diff:9.2g}",
                          flush=True)
                    rows.append((kind, shape, label, th, r_rs, r_t, src))
    print()
    print("ratios rnnsim / torch (measured torch when importable, else issue 7's quoted f32 figures)")
    for kind in kinds:
        for dt in (d for d in dtypes if base(d) in ("f32", "f64")):
            for th in thread_counts:
                cells = [f"{r / t:6.2f}" if t else "   n/a" for (k, s, d, h, r, t, _) in rows if k == kind and d == dt and h == th]
                if cells:
                    print(f"  {kind:<5} {dt:<14} threads={th}: " + " ".join(cells))
    measured = [row for row in rows if row[6] == "measured" and base(row[2]) in ("f32", "f64")]
    if measured:
        print()
        print(f"issue 7's goals against this machine's bound (bound = the ratio of a kernel whose products run at the "
              f"peak of their arithmetic, {mhz / 1000:.2f} GHz {clock_src}: the FMA peak with +fma, without it a "
              f"multiply and an add per product (half that on Intel); its activations, updates, stores and "
              f"dependences free; against torch's rate in this run)")
        print(f"  {'cell':<5} {'shape (B,T,H,I)':<20} {'dtype':<14} {'thr':>3} {'goal':>5} {'ratio':>6} {'bound':>6}  verdict")
        met = 0
        for (kind, shape, label, th, r, t, _) in measured:
            peak = peak_ops(th, vector_lanes(base(label), flags), mhz, fused(label), vendor, per_cycle)
            b = peak_bound(kind, shape, t, peak)
            said = verdict(r / t, goal(shape), b)
            met += said == "met"
            print(f"  {kind:<5} {str(shape).replace(' ', ''):<20} {label:<14} {th:>3} {goal(shape):>5.0f} {r / t:6.2f} {b:6.2f}  {said}")
        print(f"  goals met: {met} of {len(measured)} rows")
        print()
        print("the README's table (ratio rnnsim / torch, threads " + " / ".join(map(str, thread_counts))
              + "; bold: the goal met at every thread count)")
        for line in ratio_table(rows, kinds, dtypes, shapes):
            print(line)
    halves = [d for d in dtypes if base(d) in ("f16", "bf16")]
    # each half format against f32 with the same flags (bf16+fma against f32+fma)
    twin = {d: f32_twin(d) for d in halves}
    if halves and any(t in dtypes for t in twin.values()):
        print()
        print("rnnsim half formats relative to rnnsim f32 with the same flags (rate / f32 rate; >= 1: at least as fast)")
        f32 = {(k, s, d, h): r for (k, s, d, h, r, *_ ) in rows if base(d) == "f32"}
        for kind in kinds:
            for dt in halves:
                for th in thread_counts:
                    cells = [f"{r / f32[(k, s, twin[d], h)]:6.2f}" for (k, s, d, h, r, *_ ) in rows
                             if k == kind and d == dt and h == th and (k, s, twin[d], h) in f32]
                    if cells:
                        print(f"  {kind:<5} {dt:<14} threads={th}: " + " ".join(cells))
        if vector_lanes("f16", flags) == vector_lanes("f32", flags):
            print("  (no AVX512-FP16 here: every f16 operation is an f32 operation and a rounding to f16"
                  + ("; bf16's f32 sums run AVX512-BF16's vdpbf16ps, two products per f32 lane" if "avx512_bf16" in flags else "")
                  + ")")
    if 1 in thread_counts and 2 in thread_counts:
        print()
        print("rnnsim scaling 1 -> 2 threads (rate at 2 / rate at 1)")
        for kind in kinds:
            for dt in dtypes:
                one = {s: r for (k, s, d, h, r, *_ ) in rows if k == kind and d == dt and h == 1}
                two = {s: r for (k, s, d, h, r, *_ ) in rows if k == kind and d == dt and h == 2}
                print(f"  {kind:<5} {dt:<14}: " + " ".join(f"{two[s] / one[s]:5.2f}" for s in one if s in two))
    big = [(dt, th, r) for (k, s, dt, th, r, *_ ) in rows if k == "rnn" and s[2] == 1024]
    if big:
        print()
        H, I = 1024, 128
        ops = ops_per_step("rnn", H, I)
        print(f"SimpleRNN hidden 1024: {ops / 1e6:.2f} M multiply/add operations per token-step; "
              f"peak at {mhz / 1000:.2f} GHz ({clock_src}; /proc/cpuinfo says {nominal / 1000:.2f})")
        for dt, th, r in big:
            # the f32 sums of bf16+f32 / f16+f32 run in f32 lanes; bf16's with AVX512-BF16 as
            # vdpbf16ps, two products per lane (`tile_bf16_pairs`; as many per cycle as FMAs
            # on Zen 5, measured: 7.65 G/s each in a register-only loop)
            sums = "f32" in dt.split("+")[1:]
            pairs = sums and base(dt) == "bf16" and "avx512_bf16" in flags
            lanes = vector_lanes("f32" if sums else base(dt), flags) * (2 if pairs else 1)
            peak = peak_ops(th, lanes, mhz, fused(dt) or pairs, vendor, per_cycle)
            what = "vdpbf16ps" if pairs else "FMA" if fused(dt) else "non-FMA"
            print(f"  {dt:<14} threads={th}: {r * ops / 1e9:6.1f} G ops/s = {r * ops / peak:5.1%} of the {what} peak")


if __name__ == "__main__":
    main()
