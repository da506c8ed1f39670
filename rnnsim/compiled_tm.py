"""A Turing machine compiled into a simple slu RNN (Theorem 4.6, Siegelmann & Sontag 1995;
lecture notes seed 001 §4.2.2), with its codec, runs, traces and precision horizons.

    h_t = slu(V h_{t-1} + W x_t + b),   slu(z) = min(1, max(0, z)),   y_t = w·h_t

The input is the word one-hot (input-alphabet order), then EOS (the last column). Ticks
1..|w| load the word; from then on ONE tick performs ONE TM step: tick |w|+j performs step j.
The readout is 0 while the machine runs and turns +1 (accept or halt) or -1 (reject, or no
transition) at the tick where it stops, then stays (the network freezes). Stacks: "base4"
(one rational per stack, digit 2i for the i-th symbol, blank first, in base b = 2|Γ|: 4 for
binary machines; seed 003) or "cantor3" (one base-3 Cantor component per tape symbol,
eqs. 4.22-4.26). The full construction: docs/tm_construction/CONSTRUCTION.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterator

import numpy as np

from . import _coerce
from .errors import InvalidInputError
from .network import SimpleRNN, _progress_bar
from .turing import TapeView, TuringMachine, Word


@dataclass(frozen=True)
class TMView(TapeView):
    """A configuration read out of a hidden state. ``loading``: the word is still being
    read (no step yet). ``verdict``: +1 accepting/halted, -1 rejecting/stuck, 0 running."""

    state: str
    head: int
    offset: int
    tape: tuple[str, ...]
    loading: bool
    verdict: int
    blank: str


def _view(d: dict, blank: str) -> TMView:
    return TMView(state=d["state"], head=d["head"], offset=d["offset"], tape=tuple(d["tape"]),
                  loading=d["loading"], verdict=d["verdict"], blank=blank)


@dataclass(frozen=True)
class CompiledRun:
    """A run of the compiled network: ``steps`` TM steps in ``ticks`` network ticks;
    ``output`` the readout's sign (+1 accept/halt, -1 reject, 0 running); the decoded
    final configuration (``config``, or ``decode_error`` when the state decodes to none);
    ``bits`` the largest exact number reached."""

    steps: int
    ticks: int
    halted: bool
    output: int
    config: TMView | None
    decode_error: str | None
    bits: int

    @property
    def state(self) -> str | None:
        return self.config.state if self.config else None

    @property
    def head(self) -> int | None:
        return self.config.head if self.config else None

    @property
    def tape(self) -> tuple[str, ...] | None:
        return self.config.tape if self.config else None


@dataclass(frozen=True)
class Snapshot:
    """One tick of a trace: the raw state (exact Fractions; a float state's binary values)
    and the configuration it decodes to (or the reason it decodes to none)."""

    tick: int
    step: int
    loading: bool
    output: Fraction
    signal: int
    state: list[Fraction]
    config: TMView | None
    decode_error: str | None
    bits: int


class CompiledTM:
    """See the module docstring. Sizes: ``network.hidden_size`` units; nonzero weights in
    ``nonzeros``; ``unit_names``/``unit_kinds`` say what every unit is."""

    ticks_per_step = 1

    def __init__(self, core: Any, source: TuringMachine) -> None:
        self._core = core
        self.machine = source
        self.network: SimpleRNN = SimpleRNN._wrap(core.network)

    encoding = property(lambda self: self._core.encoding)
    bases = property(lambda self: self._core.bases, doc="(left stack base, right stack base)")
    unit_names = property(lambda self: list(self._core.unit_names))
    unit_kinds = property(lambda self: list(self._core.unit_kinds))
    input_columns = property(lambda self: list(self._core.input_columns))

    @property
    def hidden_size(self) -> int:
        return self.network.hidden_size

    @property
    def nonzeros(self) -> dict[str, int]:
        """Nonzero weights in V, W, b and the readout."""
        n = self.network
        count = lambda a: int(sum(1 for x in np.asarray(a, dtype=object).ravel() if x != 0))  # noqa: E731
        return {"V": count(n.V), "W": count(n.W), "b": count(n.b), "readout": count(n.readout.w)}

    def load_ticks(self, word: Word) -> int:
        """Ticks spent reading the word before step 1: |w|."""
        return len(self.machine.symbols(word))

    def encode(self, word: Word = "", ticks: int | None = None) -> np.ndarray:
        """The input matrix (ticks, |Σ|+1) ``run`` feeds: the word one-hot, then EOS rows up
        to ``ticks`` (default: the word plus one EOS)."""
        syms = self.machine.symbols(word)
        n = len(syms) + 1 if ticks is None else int(ticks)
        shape, strings = self._core.encode(syms, n)
        return np.array([int(s) for s in strings], dtype=np.int64).reshape(shape)

    def decode(self, h: Any) -> TMView:
        """The configuration a hidden state encodes, exactly (CONSTRUCTION.md §9);
        InvalidInputError when it encodes none."""
        problems: list[str] = []
        payload = _coerce.tensor("h", h, problems)
        if problems:
            raise InvalidInputError("; ".join(problems), problems)
        return _view(self._core.decode(payload), self.machine.blank)

    def run(self, word: Word = "", dtype: Any = "exact", max_steps: int = 10_000_000,
            max_bits: int | None = None, progress: bool = False) -> CompiledRun:
        """Runs the network (the ordinary engine, no shortcut) on ``word`` then EOS until the
        readout says the machine stopped (|y| >= 1/2), or ``max_steps`` TM steps. Float
        runs decode with the network's own reading (nearest symbols)."""
        kw = {} if max_bits is None else {"max_bits": int(max_bits)}
        with _progress_bar(progress, "ticks") as cb:
            d = self._core.run(self.machine.symbols(word), _coerce.dtype_name(dtype), int(max_steps),
                               progress=cb, **kw)
        cfg = d.get("config")
        return CompiledRun(steps=d["steps"], ticks=d["ticks"], halted=d["halted"], output=d["output"],
                           config=_view(cfg, self.machine.blank) if cfg else None,
                           decode_error=d.get("decode_error"), bits=d["bits"])

    def trace(self, word: Word = "", dtype: Any = "exact", max_steps: int = 10_000,
              start: int = 0, stop: int | None = None, every: int = 1) -> Iterator[Snapshot]:
        """Per-tick snapshots, streaming: ticks ``start``, ``start+every``, ... up to ``stop``
        (inclusive) or until the machine stops or ``max_steps`` steps; tick 0 is h_0. Ticks
        between snapshots are run in Rust without building snapshots."""
        syms = self.machine.symbols(word)
        t = self._core.tracer(syms, _coerce.dtype_name(dtype))
        last = len(syms) + int(max_steps)
        if stop is not None:
            last = min(last, int(stop))
        every = max(1, int(every))
        target = max(0, int(start))
        while True:
            if t.tick < target:
                t.advance(target - t.tick)
            halted = t.tick > len(syms) and t.signal != 0
            yield self._snapshot(t)
            if halted or t.tick >= last:
                return
            target = min(t.tick + every, last)

    def _snapshot(self, t: Any) -> Snapshot:
        cfg = t.config()
        ok = isinstance(cfg, dict)
        return Snapshot(tick=t.tick, step=t.steps, loading=t.loading, output=t.output()[0], signal=t.signal,
                        state=t.state(), config=_view(cfg, self.machine.blank) if ok else None,
                        decode_error=None if ok else cfg, bits=t.bits)

    def verify(self, word: Word = "", max_steps: int = 100_000) -> dict | None:
        """The exact network against the machine's interpreter, configuration by
        configuration and readout by readout: None, or the first mismatch."""
        return self._core.verify(self.machine.symbols(word), int(max_steps))

    def precision_horizon(self, word: Word = "", dtype: Any = "f64", max_steps: int = 100_000) -> int | None:
        """The first TM step at which the ``dtype`` run's configuration (read the way the
        network reads it: nearest symbols, as deep as the exact stacks) or readout differs
        from the exact run's; None if they agree for ``max_steps`` steps or until the
        machine stops. 0: the word was already loaded wrongly."""
        return self._core.precision_horizon(self.machine.symbols(word), _coerce.dtype_name(dtype), int(max_steps))

    def __repr__(self) -> str:
        return (f"CompiledTM(encoding={self.encoding!r}, states={len(self.machine.states)}, "
                f"symbols={len(self.machine.tape_alphabet)}, hidden={self.hidden_size})")


__all__ = ["CompiledRun", "CompiledTM", "Snapshot", "TMView"]
