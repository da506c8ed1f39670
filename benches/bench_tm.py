"""Compiled Turing machines run exactly: rnnsim's engine vs python-flint on the same network.

    python benches/bench_tm.py            # 1k and 10k tape cells, plus BB(5) rates (~2 min)
    python benches/bench_tm.py --quick    # small sizes (smoke test)
    python benches/bench_tm.py --bb5-full # also the whole BB(5) run (minutes)

Tape sweep: the machine walks right over a word of n 1s and back (the left stack grows to
n symbols, i.e. 2n-bit numbers). Both engines run the same compiled network (Theorem 4.6,
base4, 29 units) tick for tick on the same input matrix: rnnsim's exact engine
(CompiledTM.run), and python-flint's fmpq_mat (h = slu(V h + W x + b): one rational
matrix-vector product per tick, slu applied elementwise). Their final states must agree.

BB(5): steps per second of the compiled champion (40 units) in windows as its tape grows.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from fractions import Fraction as F
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rnnsim as rs  # noqa: E402

try:
    import flint  # type: ignore
except Exception as e:  # noqa: BLE001
    flint, FLINT_ERR = None, f"{type(e).__name__}: {e}"
else:
    FLINT_ERR = ""


def sweep_machine() -> rs.TuringMachine:
    return rs.TuringMachine(
        states=["right", "left", "done"], tape_alphabet=["0", "1"], blank="0",
        transitions={"right": {"1": ("right", "1", "R"), "0": ("left", "0", "L")},
                     "left": {"1": ("left", "1", "L"), "0": ("done", "0", "R")}},
        start="right", accept=["done"])


def flint_run(net: rs.SimpleRNN, x) -> list[F]:
    fq = flint.fmpq
    d, n = net.hidden_size, net.input_size
    V = flint.fmpq_mat(d, d, [fq(v.numerator, v.denominator) for row in net.V for v in row])
    W = flint.fmpq_mat(d, n, [fq(v.numerator, v.denominator) for row in net.W for v in row])
    B = flint.fmpq_mat(d, 1, [fq(v.numerator, v.denominator) for v in net.b])
    cols = {}
    for row in x:
        key = tuple(int(v) for v in row)
        if key not in cols:
            cols[key] = W * flint.fmpq_mat(n, 1, list(key)) + B
    zero, one = fq(0), fq(1)
    h = flint.fmpq_mat(d, 1, [fq(v.numerator, v.denominator) for v in net.h0])
    for row in x:
        p = V * h + cols[tuple(int(v) for v in row)]
        h = flint.fmpq_mat(d, 1, [zero if e <= 0 else (one if e >= 1 else e) for e in p.entries()])
    return [F(int(e.p), int(e.q)) for e in h.entries()]


def sweep(n: int) -> None:
    c = rs.compile(sweep_machine())
    word = "1" * n
    steps = c.machine.run(word).steps
    t0 = time.perf_counter()
    r = c.run(word, max_steps=steps + 10)
    t_rs = time.perf_counter() - t0
    assert r.halted and r.output == 1 and r.steps == steps, r
    ticks = r.ticks
    line = f"  {n:>6} {ticks:>7} {r.bits:>7}   rnnsim {ticks / t_rs:>10.0f} ticks/s"
    if flint is None:
        print(line + f"   flint n/a ({FLINT_ERR})")
        return
    x = c.encode(word, ticks=ticks)
    t0 = time.perf_counter()
    h = flint_run(c.network, x)
    t_fl = time.perf_counter() - t0
    assert c.decode(h).ones == n, "flint's final state decodes differently"
    ours = list(c.trace(word, start=ticks, stop=ticks))[0].state
    assert ours == h, "rnnsim and flint disagree on the final state"
    print(line + f"   flint {ticks / t_fl:>9.0f} ticks/s   ratio {t_fl / t_rs:6.1f}x")


def bb5_windows(marks: list[int], window: int) -> None:
    c = rs.compile(rs.TuringMachine.builtin("bb5"))
    t = c._core.tracer([], "exact")
    done = 0
    for m in marks:
        t.advance(m - done)
        cfg = t.config()
        t0 = time.perf_counter()
        t.advance(window)
        dt = time.perf_counter() - t0
        done = m + window
        print(f"  step {m:>10,}  tape {len(cfg['tape']):>6} cells  {t.bits:>6} bits  {window / dt:>10.0f} steps/s")


def bb5_full() -> None:
    c = rs.compile(rs.TuringMachine.builtin("bb5"))
    t0 = time.perf_counter()
    r = c.run("", max_steps=50_000_000)
    dt = time.perf_counter() - t0
    print(f"  BB(5) whole run: {r.steps:,} steps, halted={r.halted}, output={r.output}, ones={r.config.ones}, "
          f"max {r.bits} bits, {dt:.0f} s ({r.steps / dt:,.0f} steps/s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--bb5-full", action="store_true")
    a = ap.parse_args()
    print(f"rnnsim {rs.__version__}, python {platform.python_version()}, flint "
          f"{flint.__version__ if flint else 'n/a'}")
    print("Tape sweep (n cells; ticks = n loading + 2n+2 steps), exact, same network tick for tick:")
    for n in ([50, 200] if a.quick else [1000, 10_000]):
        sweep(n)
    print("BB(5), exact, windows of steps as the tape grows:")
    if a.quick:
        bb5_windows([0, 5000], 5000)
    else:
        bb5_windows([0, 1_000_000, 4_000_000], 200_000)
    if a.bb5_full:
        bb5_full()


if __name__ == "__main__":
    main()
