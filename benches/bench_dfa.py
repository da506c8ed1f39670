"""DFA benchmarks: compile time of random DFAs, and exhaustive verification throughput
(CompiledDFA.verify through the batch engine) against a plain Python DFA loop over the same
words. Prints times and ratios; asserts nothing about time.

    python benches/bench_dfa.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

import rnnsim as rs


def python_loop(dfa: rs.DFA, max_len: int) -> tuple[int, float]:
    """What a user would otherwise write: a dict-based DFA walked over every word."""
    delta = dfa.transitions
    accept, start = dfa.accept, dfa.start
    t = time.perf_counter()
    count = 0
    for n in range(max_len + 1):
        for w in itertools.product(dfa.alphabet, repeat=n):
            q = start
            for a in w:
                q = delta[q][a]
            count += q in accept
    return count, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print(f"rnnsim {rs.__version__}, {os.cpu_count()} cores")

    print("\ncompile (Theorem 4.3 via Lemma 4.4), random complete binary DFAs")
    for n in ([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]):
        dfa = rs.DFA.random(n, 2, 1)
        t = time.perf_counter()
        c = rs.compile(dfa)
        dt = time.perf_counter() - t
        print(f"  {n:>7} states: {dt * 1e3:8.1f} ms   hidden {c.hidden_size:>7}   nonzero weights {c.network.nonzero_weights:>8}")

    max_len = 14 if args.quick else 20
    words = 2 ** (max_len + 1) - 1
    print(f"\nverify({max_len}) on Tomita 3: {words:,} words")
    c = rs.compile(rs.tomita(3))
    _, py = python_loop(rs.tomita(3), max_len)
    print(f"  plain Python DFA loop: {py:7.2f} s  ({words / py / 1e6:.2f} M words/s)")
    for dtype in ["f32", "f64", "bf16", "f16", "exact"]:
        for threads in [1, 2]:
            t = time.perf_counter()
            assert c.verify(max_len, dtype=dtype, threads=threads) is None
            dt = time.perf_counter() - t
            print(f"  rnnsim {dtype:>5} threads={threads}: {dt:7.2f} s  ({words / dt / 1e6:.2f} M words/s)  "
                  f"{py / dt:5.1f}x the Python loop")


if __name__ == "__main__":
    main()
