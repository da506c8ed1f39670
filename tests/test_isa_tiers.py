"""The instruction set changes the speed, not the bits: the same float batches run in this
process (the best tier the CPU has) and in processes capped by ``RNNSIM_ISA=avx2`` (the
AVX2 tiles for f32/f64, the half formats' elementwise loops 8 lanes wide with AVX2 + F16C,
as on a CPU without AVX-512) and
``RNNSIM_ISA=baseline`` (the loops as compiled for the target), compared bit for bit.

Run as a script (``python tests/test_isa_tiers.py OUT.npz``) it writes the cases' results.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rnnsim as rs

GATES = {"rnn": 1, "lstm": 4, "gru": 3}


def _network(kind: str, hidden: int, inputs: int, layers: int, seed: int):
    """A torch-layout network with weights of scale 2/√hidden (saturating some units)."""
    rng = np.random.default_rng(seed)
    g, sc = GATES[kind], 2.0 / np.sqrt(hidden)
    sd = {}
    for layer in range(layers):
        width = inputs if layer == 0 else hidden
        for name, shape in (("weight_ih", (g * hidden, width)), ("weight_hh", (g * hidden, hidden)),
                            ("bias_ih", (g * hidden,)), ("bias_hh", (g * hidden,))):
            sd[f"{name}_l{layer}"] = rng.uniform(-sc, sc, shape).astype(np.float32)
    if kind == "rnn":
        return rs.cells.simple_rnn_from_torch(sd)
    return (rs.LSTM if kind == "lstm" else rs.GRU).from_torch(sd)


def cases() -> dict[str, np.ndarray]:
    """Every cell kind at hidden sizes around the panel widths (8, 16, 33, 64), batches of 1
    (the single-sequence kernel), 5 and 13 (the tiles: 8 rows with AVX-512, 6 with AVX2, and
    leftover rows), one and two layers,
    the four builtin formats, rounded and fused product-sums: each result array by name."""
    out = {}
    for kind in GATES:
        for hidden, layers in ((8, 1), (16, 1), (33, 1), (64, 1), (16, 2)):
            if kind == "rnn" and layers == 2:
                continue
            net = _network(kind, hidden, 3, layers, seed=hidden + layers)
            for batch in (1, 5, 13):
                x = np.random.default_rng(batch).standard_normal((batch, 7, 3)).astype(np.float32) * 2
                for dtype in ("f32", "f64", "f16", "bf16"):
                    for fma in (False, True):
                        run = net.run_batch(x, dtype, threads=1, keep="states", fma=fma)
                        key = f"{kind}-h{hidden}-l{layers}-b{batch}-{dtype}-fma{int(fma)}"
                        out[f"{key}-states"] = np.ascontiguousarray(run.states)
                        out[f"{key}-final"] = np.ascontiguousarray(run.final)
                        if run.final_c is not None:
                            out[f"{key}-final_c"] = np.ascontiguousarray(run.final_c)
                # bf16 with f32 sums: AVX512-BF16's pair tile where the CPU has it
                # (`tile_bf16_pairs`), f32's tiles or loops in the capped processes; both
                # half formats' f32 sums rounded by the cells' loops as they read them
                # (AVX-512 or AVX2) or by a pass after the tiles (baseline)
                for half in ("bf16", "f16"):
                    run = net.run_batch(x, half, threads=1, keep="states", fma=True, accumulate="f32")
                    out[f"{kind}-h{hidden}-l{layers}-b{batch}-{half}-f32sums-states"] = np.ascontiguousarray(run.states)
                # the approximate activations (f32 only): the same bits at every width too
                run = net.run_batch(x, "f32", threads=1, keep="states", fma=True, approx_activations=True)
                out[f"{kind}-h{hidden}-l{layers}-b{batch}-f32-approx-states"] = np.ascontiguousarray(run.states)
    return out


def _in_process_capped(isa: str, tmp: Path) -> dict[str, np.ndarray]:
    path = tmp / f"{isa}.npz"
    env = dict(os.environ, RNNSIM_ISA=isa)
    r = subprocess.run([sys.executable, __file__, str(path)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def _assert_same_bits(want: dict[str, np.ndarray], got: dict[str, np.ndarray], isa: str) -> None:
    assert want.keys() == got.keys()
    differ = [k for k in want if want[k].dtype != got[k].dtype or want[k].shape != got[k].shape
              or want[k].tobytes() != got[k].tobytes()]
    assert not differ, f"RNNSIM_ISA={isa}: {len(differ)} of {len(want)} arrays differ, e.g. {differ[:5]}"


@pytest.fixture(scope="module")
def want() -> dict[str, np.ndarray]:
    """The cases in this process (computed once for the module's tests)."""
    return cases()


def test_capped_instruction_sets_give_the_same_bits(want, tmp_path):
    assert len(want) > 300
    for isa in ("avx2", "baseline"):
        _assert_same_bits(want, _in_process_capped(isa, tmp_path), isa)


def test_the_comparison_sees_a_single_flipped_bit(want):
    got = {k: v.copy() for k, v in want.items()}
    key = next(k for k in got if k.startswith("lstm-h33") and k.endswith("-states"))
    got[key].view(np.uint8).reshape(-1)[0] ^= 1
    try:
        _assert_same_bits(want, got, "test")
    except AssertionError as e:
        assert key in str(e)
    else:
        raise AssertionError("a flipped bit went unnoticed")


def _symbols() -> list[str]:
    """The demangled names of the extension module's symbol table (`nm -C`); the test is
    skipped without binutils or a symbol table."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, "-C", rs._core.__file__], capture_output=True, text=True, check=True).stdout
    if not out.strip():
        pytest.skip("the extension module has no symbol table (stripped)")
    return sorted({line.split(" ", 2)[2] for line in out.splitlines() if line.count(" ") >= 2})


def test_no_vector_intrinsic_is_compiled_out_of_line():
    """Every `std::arch` vector intrinsic is inlined into a function compiled with its target
    features. One left out of line (an intrinsic called from a closure or helper that lacks
    `#[target_feature]` and `#[inline(always)]`) is a function call per vector operation:
    session 23's k-step closure did this and made the AVX2 tiles of streamed weights 70×
    slower, with the same bits, so only the symbol table shows it. `nm` lists such copies as
    `core::core_arch::x86::...` functions; `_xgetbv` (the CPU feature detection) is the one
    that belongs there."""
    names = [n for n in _symbols() if "core_arch::x86" in n]
    assert [n for n in names if not n.endswith("_xgetbv")] == [], names


def test_no_array_constructor_is_compiled_out_of_line():
    """`std::array::from_fn` builds its array through `core::array::try_from_fn`, which the
    compiler may leave as a function of its own, called once per array. Session 53 found one
    in the tile driver (`tile_x86::dests`, the destinations of a tile's rows): 12% of an f64
    LSTM's run at batch 1, hidden 32, 20–25% slower. The kernels build such arrays with plain
    loops; this keeps a new `from_fn` in them from costing a call per tile unseen."""
    assert [n for n in _symbols() if n.startswith("core::array::try_from_fn")] == []


if __name__ == "__main__":
    np.savez(sys.argv[1], **cases())

