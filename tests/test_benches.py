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


def test_torch_benchmark_takes_the_f32_sums():
    # bf16 with f32 sums, and its row in the table against f32 with the same flags
    out = run("bench_torch.py", "--only", "rnn", "--threads", "1", "--dtypes", "f32+fma,bf16+f32+fma")
    assert "bf16+f32+fma" in out and "relative to rnnsim f32 with the same flags" in out
    bad = subprocess.run([sys.executable, str(BENCHES / "bench_torch.py"), "--quick", "--dtypes", "f32+f32"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "--dtypes" in bad.stderr


def test_torch_benchmark_helpers():
    # the interleaved timer and the measured clock of the peak fraction
    sys.path.insert(0, str(BENCHES))
    try:
        import bench_torch
    finally:
        sys.path.remove(str(BENCHES))
    calls: list[str] = []
    got = bench_torch.best_times([lambda: calls.append("a") or 1, lambda: calls.append("b") or 2], repeats=3, budget=0.0)
    assert [out for _, out in got] == [1, 2] and all(t >= 0.0 for t, _ in got)
    # a half format is compared with f32 under the same flags, its f32 sums aside
    assert [bench_torch.f32_twin(d) for d in ("bf16", "f16+fma", "bf16+f32", "f16+f32+fma")] == ["f32", "f32+fma", "f32", "f32+fma"]
    # a warm-up call of each, then 3 rounds in alternating order
    assert "".join(calls) == "ab" + "ab" + "ba" + "ab"
    # native f16 tiles where /proc/cpuinfo lists avx512_fp16 (Linux's spelling)
    assert bench_torch.vector_lanes("f16", {"avx512f", "avx512_fp16"}) == 32
    # a build without the AVX-512 tiles runs the AVX2 ones on an AVX-512 CPU: AVX2's lanes
    avx512 = {"avx2", "fma", "avx512f", "avx512_fp16"}
    assert bench_torch.tile_flags(avx512, True) == avx512
    assert bench_torch.vector_lanes("f32", bench_torch.tile_flags(avx512, False)) == 8
    assert bench_torch.vector_lanes("f16", bench_torch.tile_flags(avx512, False)) == 8
    assert bench_torch.vector_lanes("f16", {"avx512f"}) == 16 and bench_torch.vector_lanes("f64", {"avx2"}) == 4
    # Zen 4 runs a 512-bit FMA as two 256-bit halves: half the peak of its AVX-512 lanes
    zen4 = bench_torch.vectors_per_cycle({"avx2", "avx512f"}, "AuthenticAMD", "25")
    assert zen4 == 1 and bench_torch.vectors_per_cycle({"avx2"}, "AuthenticAMD", "25") == 2
    assert bench_torch.vectors_per_cycle({"avx512f"}, "GenuineIntel", "6") == 2
    assert bench_torch.peak_ops(1, 16, 1000.0, True, "AuthenticAMD", zen4) == bench_torch.peak_ops(1, 8, 1000.0, True, "AuthenticAMD")
    # issue 7's goals and the machine's bound: products at the peak, all else free
    assert [bench_torch.goal(s) for s in bench_torch.SHAPES] == [20.0, 3.0, 3.0, 1.0, 1.0]
    assert bench_torch.ops_per_step("lstm", 16, 4) == 4 * bench_torch.ops_per_step("rnn", 16, 4) == 2560
    # 2560 operations per token-step at 2.56e10 operations/s: 1e7 token-steps/s, 4x a torch at 2.5e6
    assert abs(bench_torch.peak_bound("lstm", (1, 10, 16, 4), 2.5e6, 2.56e10) - 4.0) < 1e-12
    assert bench_torch.verdict(3.2, 3.0, 5.0) == "met"
    assert bench_torch.verdict(2.0, 3.0, 2.5).startswith("out of reach")
    assert bench_torch.verdict(1.5, 3.0, 5.0) == "short (50% of the goal)"
    # unfused products (a multiply and an add each) bound at half the FMA peak on Intel
    assert bench_torch.fused("f32+fma") and bench_torch.fused("bf16+f32+fma") and bench_torch.fused("f32+fma+approx")
    assert not bench_torch.fused("f32") and not bench_torch.fused("f16+f32")
    intel = [bench_torch.peak_ops(1, 16, 1000.0, bench_torch.fused(d), "GenuineIntel") for d in ("f32+fma", "f32")]
    assert intel[0] == 2 * intel[1]
    # the README's table: 1 / 2 threads per entry, bold only where both meet the goal, f32/f64
    # rows in --dtypes order, no entry without a measured torch rate
    b1, h16 = bench_torch.SHAPES[0], bench_torch.SHAPES[1]
    rows = [("rnn", b1, "f32", 1, 21.0, 1.0, "measured"), ("rnn", b1, "f32", 2, 19.0, 1.0, "measured"),
            ("rnn", h16, "f32", 1, 6.0, 2.0, "measured"), ("rnn", h16, "f32", 2, 7.0, 2.0, "measured"),
            ("lstm", b1, "f64", 1, 50.0, 2.0, "measured"), ("lstm", h16, "f64", 2, 9.0, 1.0, "quoted"),
            ("lstm", b1, "bf16+f32", 1, 9.0, None, "")]
    table = bench_torch.ratio_table(rows, ["rnn", "lstm"], ["f64", "f32", "bf16+f32"], [b1, h16])
    assert table == ["| cell, dtype | (1, 10000, 16, 4) | (1024, 1000, 16, 4) |", "|---|---|---|",
                     "| LSTM f64 | **25.00** |  |", "| RNN f32 | 21.00 / 19.00 | **3.00 / 3.50** |"]
    assert bench_torch.ratio_table(rows[-2:], ["lstm"], ["f64", "bf16+f32"], [b1, h16]) == []
    # a column only for a shape with a measured entry
    assert bench_torch.ratio_table(rows[:2], ["rnn"], ["f32"], [b1, h16, b1])[0] == "| cell, dtype | (1, 10000, 16, 4) |"
    # the machine line of the output: the CPU's name, family and model
    label = bench_torch.cpu_label()
    assert " family " in label and " model " in label
    ghz = bench_torch.measured_ghz()
    # 0.0 where executable pages are refused or the CPU is not x86-64, else a real clock
    assert ghz == 0.0 or 0.3 < ghz < 8.0


def test_torch_benchmark_runs_a_shape_twice_with_its_own_t_runs():
    # the T runs were kept per shape, so a shape given twice ran the second's T both times
    out = run("bench_torch.py", "--only", "rnn", "--threads", "1", "--dtypes", "f32",
              "--shapes", "8,400,16,4,100;8,400,16,4,400")
    t_runs = [line.split()[2] for line in out.splitlines() if line.startswith("rnn   (8,400,16,4)")]
    assert t_runs == ["5", "20"], out  # --quick runs a twentieth
