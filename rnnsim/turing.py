"""Turing machines with their own interpreter (the reference semantics compiled networks are
checked against), the busy-beaver text format, built-in machines and automata-lib interop.

Model (Sipser 2013, Def. 3.3, with the busy-beaver conventions of bbchallenge.org): states,
an input alphabet, a tape alphabet containing the blank, transitions
(state, read) -> (next, write, move) with move in L/R/N, a start state, and stopping states
of three kinds: accept, reject and plain halt (busy beavers' Z). A missing transition stops
the machine and rejects without counting a step (as automata-lib). The tape is "two-way"
(infinite both ways; busy beavers) or "one-way" (a left end at cell 0 where a left move
stays, as in Sipser). Cell 0 is where the input starts; head positions are absolute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from . import _core
from .errors import InvalidInputError, UnsupportedError

Word = Sequence[str] | str


class TapeView:
    """What a configuration with ``tape`` (from cell ``offset``), ``head`` and ``blank`` shows."""

    tape: tuple[str, ...]
    offset: int
    head: int
    blank: str

    @property
    def ones(self) -> int:
        """Non-blank cells (the busy-beaver score)."""
        return sum(1 for s in self.tape if s != self.blank)

    def tape_string(self) -> str:
        """The tape without leading/trailing blanks, the head's cell in brackets."""
        return _tape_string(self.tape, self.offset, self.head, self.blank)


@dataclass(frozen=True)
class TMRun(TapeView):
    """A configuration reached by the interpreter: ``tape[i]`` is cell ``offset + i``."""

    steps: int
    halted: bool
    accepted: bool | None
    status: str
    state: str
    head: int
    offset: int
    tape: tuple[str, ...]
    blank: str


def _tape_string(tape: Sequence[str], offset: int, head: int, blank: str) -> str:
    cells = {offset + i: s for i, s in enumerate(tape) if s != blank}
    lo, hi = min([head, *cells]), max([head, *cells])
    return " ".join(f"[{cells.get(c, blank)}]" if c == head else cells.get(c, blank) for c in range(lo, hi + 1))


def _run_from(d: Mapping[str, Any], blank: str) -> TMRun:
    status = d["status"]
    return TMRun(steps=d["steps"], halted=status != "running",
                 accepted={"accepted": True, "rejected": False}.get(status), status=status,
                 state=d["state"], head=d["head"], offset=d["offset"], tape=tuple(d["tape"]), blank=blank)


class TuringMachine:
    """A deterministic Turing machine, immutable, built with keyword arguments and validated:
    every problem is reported at once in an InvalidMachineError.

    ``transitions``: {state: {read: (next, write, move)}} (automata-lib's form),
    {(state, read): (next, write, move)}, or (state, read, next, write, move) tuples.
    ``input_alphabet`` defaults to every tape symbol but the blank."""

    def __init__(self, *, states: Iterable[Any], tape_alphabet: Iterable[Any], blank: Any, transitions: Any,
                 start: Any, input_alphabet: Iterable[Any] | None = None, accept: Iterable[Any] = (),
                 reject: Iterable[Any] = (), halt: Iterable[Any] = (), tape: str = "two-way") -> None:
        tape_syms = [str(a) for a in tape_alphabet]
        ins = [a for a in tape_syms if a != str(blank)] if input_alphabet is None else [str(a) for a in input_alphabet]
        self._core = _core.TuringMachine([str(q) for q in states], ins, tape_syms, str(blank),
                                         _transition_tuples(transitions), str(start), [str(q) for q in accept],
                                         [str(q) for q in reject], [str(q) for q in halt], tape)

    @classmethod
    def _wrap(cls, core: Any) -> "TuringMachine":
        t = cls.__new__(cls)
        t._core = core
        return t

    @classmethod
    def parse(cls, text: str) -> "TuringMachine":
        """The busy-beaver text format (bbchallenge.org), e.g. ``"1RB1LB_1LA1RZ"``: one
        ``_``-separated row per state A, B, C, ...; each transition write-move-next; ``---``
        or a next state past the last row (Z, H) halts; every step counts, the halting one
        included. Two-way tape, symbols "0" (blank), "1", ...; malformed text raises
        InvalidInputError saying where."""
        return cls._wrap(_core.TuringMachine.parse(text))

    def format(self) -> str:
        """The busy-beaver text of this machine (UnsupportedError if it does not fit it)."""
        return self._core.format()

    @classmethod
    def builtin(cls, name: str) -> "TuringMachine":
        """bb2..bb5 (the busy-beaver champions), binary_increment, sipser_pow2 ({0^(2^n)},
        Sipser's M2), anbncn."""
        return cls._wrap(_core.TuringMachine.builtin(name))

    @staticmethod
    def builtin_names() -> list[str]:
        return list(_core.TuringMachine.builtin_names())

    @classmethod
    def random(cls, n_states: int, n_symbols: int, seed: int) -> "TuringMachine":
        """A random busy-beaver-style machine (deterministic in ``seed``)."""
        return cls._wrap(_core.TuringMachine.random(n_states, n_symbols, seed))

    states = property(lambda self: list(self._core.states))
    input_alphabet = property(lambda self: list(self._core.input_alphabet))
    tape_alphabet = property(lambda self: list(self._core.tape_alphabet))
    blank = property(lambda self: self._core.blank)
    start = property(lambda self: self._core.start)
    accept = property(lambda self: frozenset(self._core.accept))
    reject = property(lambda self: frozenset(self._core.reject))
    halt = property(lambda self: frozenset(self._core.halt))
    tape = property(lambda self: self._core.tape, doc='"two-way" or "one-way"')

    @property
    def transitions(self) -> dict[str, dict[str, tuple[str, str, str]]]:
        """δ as {state: {read: (next, write, move)}}."""
        out: dict[str, dict[str, tuple[str, str, str]]] = {q: {} for q in self.states}
        for q, r, n, w, m in self._core.transitions:
            out[q][r] = (n, w, m)
        return out

    def symbols(self, word: Word) -> list[str]:
        """A word as a list of symbols (a string is split into characters when every input
        symbol is one character)."""
        if isinstance(word, str):
            if all(len(a) == 1 for a in self.input_alphabet):
                return list(word)
            if word == "":
                return []
            raise InvalidInputError("this alphabet has multi-character symbols: give the word as a list of symbols")
        return [str(a) for a in word]

    def run(self, input: Word = "", max_steps: int = 10_000_000) -> TMRun:
        """The reference interpreter: the configuration after at most ``max_steps`` steps
        (``halted`` False if it was still running). BB(5) runs in a fraction of a second."""
        return _run_from(self._core.run(self.symbols(input), int(max_steps)), self.blank)

    def configs(self, input: Word = "", max_steps: int = 10_000, limit: int = 100_000) -> list[TMRun]:
        """The configurations c_0, c_1, ... (at most ``limit``)."""
        return [_run_from(d, self.blank) for d in self._core.configs(self.symbols(input), int(max_steps), int(limit))]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TuringMachine) and self._core == other._core

    def __hash__(self) -> int:
        return hash(tuple(self._core.transitions))

    def __repr__(self) -> str:
        try:
            return f"TuringMachine.parse({self.format()!r})"
        except Exception:
            return f"TuringMachine(states={self.states}, tape_alphabet={self.tape_alphabet}, tape={self.tape!r})"

    # ---- automata-lib
    @classmethod
    def from_automata_lib(cls, dtm: Any) -> "TuringMachine":
        """automata-lib's DTM: two-way tape, final states accept, a missing transition
        rejects. Transitions out of final states (never taken: automata-lib stops on
        entering one) are dropped. States are ordered initial state first, then by name."""
        states = [dtm.initial_state] + sorted((q for q in dtm.states if q != dtm.initial_state), key=str)
        finals = set(dtm.final_states)
        trans = [(q, r, n, w, m) for q, row in dtm.transitions.items() if q not in finals
                 for r, (n, w, m) in row.items()]
        tape_syms = [dtm.blank_symbol] + sorted(s for s in dtm.tape_symbols if s != dtm.blank_symbol)
        return cls(states=states, tape_alphabet=tape_syms, blank=dtm.blank_symbol, transitions=trans,
                   start=dtm.initial_state, input_alphabet=sorted(dtm.input_symbols), accept=finals)

    def to_automata_lib(self) -> Any:
        """An automata-lib DTM with the same behaviour: accept and halt states become final
        states, reject states keep no transitions (automata-lib rejects there). Needs a
        two-way tape, one-character symbols and a start state that is not final."""
        from automata.tm.dtm import DTM

        if self.tape != "two-way":
            raise UnsupportedError("automata-lib's DTM has a two-way tape; this machine is one-way")
        if any(len(s) != 1 for s in self.tape_alphabet):
            raise UnsupportedError("automata-lib needs one-character tape symbols")
        finals = set(self.accept) | set(self.halt)
        if self.start in finals:
            raise UnsupportedError("automata-lib's DTM cannot start in a final state")
        trans = {q: dict(row) for q, row in self.transitions.items() if row}
        return DTM(states=set(self.states), input_symbols=set(self.input_alphabet),
                   tape_symbols=set(self.tape_alphabet), transitions=trans, initial_state=self.start,
                   blank_symbol=self.blank, final_states=finals)


def _transition_tuples(transitions: Any) -> list[tuple[str, str, str, str, str]]:
    out = []
    try:
        if isinstance(transitions, Mapping):
            for key, value in transitions.items():
                if isinstance(value, Mapping):
                    out.extend((str(key), str(r), str(n), str(w), str(m)) for r, (n, w, m) in value.items())
                else:
                    (q, r), (n, w, m) = key, value
                    out.append((str(q), str(r), str(n), str(w), str(m)))
        else:
            out = [(str(q), str(r), str(n), str(w), str(m)) for q, r, n, w, m in transitions]
    except (TypeError, ValueError):
        raise InvalidInputError("transitions must be {state: {read: (next, write, move)}}, "
                                "{(state, read): (next, write, move)} or (state, read, next, write, move) tuples") from None
    return out


__all__ = ["TMRun", "TuringMachine"]
