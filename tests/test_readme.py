"""The README's Python examples still run, in the order and namespace a reader would use
them: an API rename or a changed signature breaks them here instead of silently in the
documentation. Blocks that continue an earlier one, or use the reader's own tensors
(``x``, ``torch_lstm``, ...), get the smallest values of those names that fit; the Turing
machine block runs BB(3) instead of BB(5) (the same calls; the exact run of BB(5) takes
about 6 minutes). The quick-start block's commented results are checked as well.
"""
from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import numpy as np

import rnnsim as rs

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(marker: str) -> str:
    """The README's one ```python block containing ``marker``."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S) if marker in b]
    assert len(blocks) == 1, f"{len(blocks)} README python blocks contain {marker!r}"
    return blocks[0]


def _run(code: str, ns: dict) -> dict:
    exec(compile(code, "README.md", "exec"), ns)  # noqa: S102 - the README's own examples
    return ns


def test_every_python_block_is_covered_here() -> None:
    """A new example in the README gets a test here (each marker names one block)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    markers = [QUICK_START, MINIFLOAT, CELLS, DFA, TURING, COUNTERS]
    assert len(blocks) == len(markers)
    assert all(sum(m in b for m in markers) == 1 for b in blocks)


QUICK_START = "a base-4 stack (Siegelmann"
MINIFLOAT = "rs.FloatFormat(3, 4))        # x (T, input): a 4-bit-significand minifloat"
CELLS = "rs.LSTM.from_torch(torch_lstm.state_dict())"
DFA = "dfa = rs.tomita(3)"
TURING = 'tm = rs.TuringMachine.parse("1RB1LC_1RC1RB_1RD0LE_1LA1LD_1RZ0LA")'
COUNTERS = 'rs.counters.build("anbn", "lstm")'


def test_quick_start_gives_its_commented_results() -> None:
    ns = _run(_block(QUICK_START), {})
    assert ns["run"].states[-1, 0] == Fraction(55, 64)
    assert ns["net"].run([[0, 1]] * 40, dtype="f32").states[-1, 0] == 1.0
    assert (ns["b"].states.shape, ns["b"].final.shape) == ((1000, 50, 1), (1, 1000, 1))


def test_custom_formats_continue_the_quick_start() -> None:
    ns = _run(_block(QUICK_START), {})
    ns["x"] = [[0, 1], [1, 0], [0, 1]]
    ns["xs"] = [ns["x"], [[1, 0], [1, 0], [0, 1]]]
    _run(_block(MINIFLOAT), ns)
    exact = ns["net"].run_batch(ns["xs"], dtype="fp(112,15)").states
    assert isinstance(exact[0, -1, 0], Fraction)


class _TorchLike:
    """What the cells block reads of a torch module: ``state_dict()``."""

    def __init__(self, sd: dict[str, np.ndarray]) -> None:
        self.sd = sd

    def state_dict(self) -> dict[str, np.ndarray]:
        return self.sd


def test_cells_block_runs_on_small_tensors() -> None:
    rng = np.random.default_rng(0)
    h, n, batch, t = 3, 2, 4, 5
    u = lambda *shape: rng.uniform(-0.5, 0.5, shape).astype(np.float32)  # noqa: E731
    ns = {
        "torch_lstm": _TorchLike({"weight_ih_l0": u(4 * h, n), "weight_hh_l0": u(4 * h, h), "bias_ih_l0": u(4 * h), "bias_hh_l0": u(4 * h)}),
        "x": u(batch, t, n), "h0": np.zeros((1, batch, h), np.float32), "c0": np.zeros((1, batch, h), np.float32),
        # GRU (hidden 3 over 2 inputs) → QRNN (hidden 2, window 2, over 3) → SimpleRNN (hidden 2 over 2)
        "w_ih": u(3 * h, n), "w_hh": u(3 * h, h), "b_ih": u(3 * h), "b_hh": u(3 * h),
        "w": u(4 * 2, 2 * h), "V": u(2, 2), "W": u(2, 2), "c": u(2),
    }
    _run(_block(CELLS), ns)
    assert ns["b"].states.shape == (batch, t, h)
    assert ns["deep"].run(ns["x"][0], dtype="f32").states[-1].shape == (2,)


def test_dfa_block_runs() -> None:
    ns = _run(_block(DFA), {"rs": rs})
    assert ns["c"].network.hidden_size == 11


def test_turing_machine_block_runs_on_bb3() -> None:
    code = _block(TURING).replace('rs.TuringMachine.parse("1RB1LC_1RC1RB_1RD0LE_1LA1LD_1RZ0LA")', 'rs.TuringMachine.builtin("bb3")')
    ns = _run(code, {"rs": rs})
    want = ns["tm"].run("", max_steps=10**8)
    assert (ns["r"].steps, ns["r"].config.ones) == (want.steps, want.ones)


def test_counters_block_runs() -> None:
    ns = _run(_block(COUNTERS), {})
    assert ns["c"].accepts("aaabbb") and not ns["c"].accepts("aab")
