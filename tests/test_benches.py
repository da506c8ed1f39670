"""The benchmark scripts still run (their --quick mode), so the figures in the README can be
re-measured. Nothing here looks at timings."""

from __future__ import annotations

import pathlib
import subprocess
import sys

BENCHES = pathlib.Path(__file__).resolve().parent.parent / "benches"


def run(script: str, *args: str) -> str:
    r = subprocess.run([sys.executable, str(BENCHES / script), "--quick", *args], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_engine_benchmark_runs_and_agrees_across_engines():
    out = run("bench_engines.py")
    assert "final states identical across engines: True" in out
    assert "ratios" in out


def test_dfa_benchmark_runs():
    out = run("bench_dfa.py")
    assert "10000 states" in out and "the Python loop" in out


def test_tm_benchmark_runs_and_engines_agree():
    # bench_tm.py asserts that rnnsim's and python-flint's final states are identical
    out = run("bench_tm.py")
    assert "Tape sweep" in out and "BB(5)" in out
    assert "ratio" in out or "flint n/a" in out


def test_cell_benchmark_runs():
    out = run("bench_cells.py")
    assert "lstm" in out and "gru" in out and "ratios" in out


def test_torch_benchmark_runs():
    out = run("bench_torch.py")
    assert "rnn" in out and "lstm" in out and "gru" in out and "ratios rnnsim / torch" in out


def test_torch_benchmark_takes_the_approximate_activations():
    out = run("bench_torch.py", "--only", "lstm", "--threads", "1", "--dtypes", "f32+fma+approx")
    assert "f32+fma+approx" in out and "ratios rnnsim / torch" in out
    bad = subprocess.run([sys.executable, str(BENCHES / "bench_torch.py"), "--quick", "--dtypes", "f64+approx"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "--dtypes" in bad.stderr
