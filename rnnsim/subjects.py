"""What the command line can trace, run, verify and describe: a *subject* is a compiled
machine or a network, named by a built-in name, inline busy-beaver text, or a file.

Every subject gives streaming *frames*: one per network tick, with the raw hidden state, the
readout, and (for machines) the decoded configuration. Frames come from the native
tick-by-tick steppers, so memory does not grow with the number of ticks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from . import _core
from .compiled import CompiledDFA, compile
from . import counters
from .compiled_tm import CompiledTM
from .counters import LANGUAGES
from .dfa import DFA, parity, tomita
from .errors import InvalidInputError, UnsupportedError
from .network import SimpleRNN, loads
from .turing import TuringMachine

TM_TEXT = re.compile(r"^([0-9][LRN][A-Z]|---)+(_([0-9][LRN][A-Z]|---)+)*$")


@dataclass
class Frame:
    """One tick. ``config``: the decoded configuration as a dict (TM: state, head, offset,
    tape, verdict; DFA: state, read), None when undecodable (``decode_error``) or for a
    bare network."""

    tick: int
    step: int | None
    loading: bool
    state: list[Any]
    output: list[Any]
    signal: int
    config: dict | None = None
    decode_error: str | None = None
    bits: int = 0
    halted: bool = False


@dataclass
class Subject:
    """A named thing to trace: kind "tm", "dfa" or "network"."""

    name: str
    kind: str
    machine: Any = None
    compiled: Any = None
    network: SimpleRNN | None = None
    unit_names: list[str] = field(default_factory=list)

    def frames(self, word: Any, dtype: str, start: int = 0, stop: int | None = None, every: int = 1,
               max_steps: int = 10_000) -> Iterator[Frame]:
        if self.kind == "counter":
            return _counter_frames(self, word, dtype, start, stop, every)
        if self.kind == "tm":
            return _tm_frames(self, word, dtype, start, stop, every, max_steps)
        return _net_frames(self, word, dtype, start, stop, every)

    def info(self) -> dict[str, Any]:
        net = self.network
        if self.kind == "counter":
            c = self.compiled
            return {"subject": self.name, "kind": self.kind, "language": c.language, "cell": c.cell,
                    "network": repr(net), "alphabet": c.alphabet, "counters": c.view_names,
                    "ticks_per_symbol": 1}
        nz = {"V": int(np.count_nonzero(np.asarray(net.V, dtype=object) != 0)),
              "W": int(np.count_nonzero(np.asarray(net.W, dtype=object) != 0)),
              "b": int(np.count_nonzero(np.asarray(net.b, dtype=object) != 0))}
        out: dict[str, Any] = {"subject": self.name, "kind": self.kind, "neurons": net.hidden_size,
                               "inputs": net.input_size, "activation": net.activation, "nonzero_weights": nz}
        if self.kind == "tm":
            c: CompiledTM = self.compiled
            kinds: dict[str, int] = {}
            for k in c.unit_kinds:
                kinds[k] = kinds.get(k, 0) + 1
            out.update(states=len(self.machine.states), tape_symbols=len(self.machine.tape_alphabet),
                       tape=self.machine.tape, encoding=c.encoding, bases=list(c.bases), units_by_kind=kinds,
                       ticks_per_step=1, loading_ticks="|w| (one per input symbol)")
        elif self.kind == "dfa":
            out.update(states=len(self.compiled.dfa.states), alphabet=self.compiled.dfa.alphabet, ticks_per_symbol=1)
        return out


def resolve(spec: str, encoding: str = "base4") -> Subject:
    """A built-in name, inline busy-beaver text, or a file (TM text, DFA JSON, network JSON)."""
    low = spec.strip().lower()
    if low in TuringMachine.builtin_names():
        return tm_subject(spec, TuringMachine.builtin(low), encoding)
    m = re.fullmatch(r"(anbn|anbncn|dyck1|anbn_sigma)-([a-z]+)", low)
    if m:
        return counter_subject(spec, m.group(1), m.group(2))
    m = re.fullmatch(r"tomita([1-7])", low)
    if m:
        return dfa_subject(spec, tomita(int(m.group(1))))
    if low == "parity":
        return dfa_subject(spec, parity())
    if TM_TEXT.match(spec.strip()):
        return tm_subject(spec.strip(), TuringMachine.parse(spec.strip()), encoding)
    path = Path(spec)
    if path.exists():
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidInputError(f"cannot read {spec}: {e}") from None
        return _from_text(spec, text, encoding)
    raise InvalidInputError(
        f"unknown subject {spec!r}: expected a built-in ({', '.join(builtin_names())}), "
        "busy-beaver text such as 1RB1LB_1LA1RZ, or a file")


def builtin_names() -> list[str]:
    counters = [f"{lang}-{cell}" for lang in LANGUAGES for cell in ("lstm", "relu")] + ["anbn-qrnn", "anbncn-qrnn"]
    return TuringMachine.builtin_names() + [f"tomita{i}" for i in range(1, 8)] + ["parity"] + counters


def _from_text(name: str, text: str, encoding: str) -> Subject:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            fmt = json.loads(stripped).get("format")
        except (json.JSONDecodeError, AttributeError):
            raise InvalidInputError(f"{name}: not valid JSON") from None
        if fmt == "rnnsim.dfa":
            return dfa_subject(name, DFA.from_json(stripped))
        net = loads(stripped)
        if not isinstance(net, SimpleRNN):
            raise UnsupportedError(f"{name}: the tracer follows SimpleRNN networks; this file holds a "
                                   f"{type(net).__name__} (run it with rnnsim.load(path).run(x, dtype))")
        return Subject(name=name, kind="network", network=net,
                       unit_names=[f"h{i}" for i in range(net.hidden_size)])
    first = stripped.splitlines()[0].strip() if stripped else ""
    if TM_TEXT.match(first):
        return tm_subject(name, TuringMachine.parse(first), encoding)
    raise InvalidInputError(f"{name}: neither busy-beaver text nor rnnsim JSON")


def tm_subject(name: str, tm: TuringMachine, encoding: str) -> Subject:
    c = compile(tm, encoding=encoding)
    return Subject(name=name, kind="tm", machine=tm, compiled=c, network=c.network, unit_names=c.unit_names)


def dfa_subject(name: str, dfa: DFA) -> Subject:
    c = compile(dfa)
    a = len(c.dfa.alphabet)
    names = ["start"] + [f"g[{q},{s}]" for q in c.dfa.states for s in c.dfa.alphabet]
    return Subject(name=name, kind="dfa", machine=dfa, compiled=c, network=c.network, unit_names=names[: 1 + len(c.dfa.states) * a])


def counter_subject(name: str, language: str, cell: str) -> Subject:
    """A counter network (rnnsim.counters): per tick the decoded counters are the state."""
    c = counters.build(language, cell)
    return Subject(name=name, kind="counter", compiled=c, network=c.network, unit_names=list(c.view_names))


def _counter_frames(s: Subject, word: Any, dtype: str, start: int, stop: int | None, every: int) -> Iterator[Frame]:
    c = s.compiled
    word = "" if word is None else word
    rows = c.trace(word, dtype)
    last = len(rows) - 1
    for t in _window(start, stop, every, last):
        r = rows[t]
        bad = any(v is None for v in r["counters"].values()) or r["y"] is None
        state = [Fraction(0) if v is None else v for v in r["counters"].values()]
        cfg = {"counters": {k: (None if v is None else str(v)) for k, v in r["counters"].items()},
               "read": r["read"], "accepting": r["accepting"]}
        yield Frame(tick=t, step=t, loading=False, state=state, output=[] if r["y"] is None else [r["y"]],
                    signal=int(r["accepting"]), config=cfg, decode_error="NaN or ∞ in the state" if bad else None,
                    halted=t == last)


def _window(start: int, stop: int | None, every: int, last: int) -> Iterator[int]:
    end = last if stop is None else min(stop, last)
    t = max(0, start)
    while t <= end:
        yield t
        if t == end:
            return
        t = min(t + max(1, every), end)


def _tm_frames(s: Subject, word: Any, dtype: str, start: int, stop: int | None, every: int,
               max_steps: int) -> Iterator[Frame]:
    c: CompiledTM = s.compiled
    syms = c.machine.symbols(word)
    t = c._core.tracer(syms, dtype)
    last = len(syms) + int(max_steps)
    for target in _window(start, stop, every, last):
        if t.tick < target:
            t.advance(target - t.tick)
        halted = t.tick > len(syms) and t.signal != 0
        cfg = t.config()
        ok = isinstance(cfg, dict)
        yield Frame(tick=t.tick, step=t.steps, loading=t.loading, state=t.state(), output=t.output(),
                    signal=t.signal, config=cfg if ok else None, decode_error=None if ok else cfg,
                    bits=t.bits, halted=halted)
        if halted:
            return


def _net_frames(s: Subject, word: Any, dtype: str, start: int, stop: int | None, every: int) -> Iterator[Frame]:
    if s.kind == "dfa":
        c: CompiledDFA = s.compiled
        syms = c.dfa.symbols(word)
        x = c.encode(syms) if syms else np.zeros((0, len(c.dfa.alphabet)), dtype=np.int64)
    else:
        syms = None
        x = _input_matrix(word, s.network.input_size)
    t = _core.NetTrace(s.network._core, _rows(x), dtype)
    for target in _window(start, stop, 1 if every < 1 else every, len(x)):
        if t.tick < target:
            t.advance(target - t.tick)
        state, out = t.state(), t.output()
        cfg, err = None, None
        if s.kind == "dfa":
            try:
                cfg = {"state": s.compiled.decode(state), "read": syms[t.tick - 1] if t.tick else None}
            except InvalidInputError as e:
                err = str(e)
        sig = 1 if out and out[0] > Fraction(1, 2) else 0
        yield Frame(tick=t.tick, step=t.tick, loading=False, state=state, output=out, signal=sig,
                    config=cfg, decode_error=err, bits=t.bits, halted=t.tick == len(x))


def _rows(x: np.ndarray) -> Any:
    from ._coerce import tensor

    problems: list[str] = []
    payload = tensor("x", x, problems)
    if problems:
        raise InvalidInputError("; ".join(problems), problems)
    return payload


def _input_matrix(word: Any, width: int) -> np.ndarray:
    """A network's input: a JSON matrix such as [[0,1],[1,0]] (or a .npy/.json file)."""
    if word in (None, ""):
        return np.zeros((0, width))
    if isinstance(word, str) and Path(word).exists():
        word = np.load(word) if word.endswith(".npy") else json.loads(Path(word).read_text())
    elif isinstance(word, str):
        try:
            word = json.loads(word)
        except json.JSONDecodeError:
            raise InvalidInputError("a network's --input is a JSON matrix such as [[0,1],[1,0]] or a .npy file") from None
    arr = np.asarray(word, dtype=object)
    if arr.ndim != 2 or arr.shape[1] != width:
        raise InvalidInputError(f"the input must be a (T, {width}) matrix, got shape {arr.shape}")
    return arr
