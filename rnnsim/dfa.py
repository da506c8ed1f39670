"""Deterministic finite automata with their own interpreter (the reference semantics that
compiled networks are checked against), built-in languages, and automata-lib interop.

States and symbols are named by strings (other hashables are converted with ``str``).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

from . import _core
from .errors import InvalidInputError

Word = Sequence[str] | str


def _transition_triples(transitions: Any) -> list[tuple[str, str, str]]:
    """Accepts {state: {symbol: next}} (automata-lib), {(state, symbol): next}, or triples."""
    if isinstance(transitions, Mapping):
        triples = []
        for key, value in transitions.items():
            if isinstance(value, Mapping):
                triples.extend((str(key), str(a), str(n)) for a, n in value.items())
            elif isinstance(key, tuple) and len(key) == 2:
                triples.append((str(key[0]), str(key[1]), str(value)))
            else:
                raise InvalidInputError(f"transition {key!r}: {value!r} is neither {{symbol: next}} nor (state, symbol): next")
        return triples
    try:
        return [(str(q), str(a), str(n)) for q, a, n in transitions]
    except (TypeError, ValueError):
        raise InvalidInputError("transitions must be a dict or an iterable of (state, symbol, next) triples") from None


class DFA:
    """A DFA (Q, Σ, δ, q0, F), immutable, built with keyword arguments and validated: every
    problem (unknown states or symbols, conflicting transitions, duplicates, bad start or
    accept states) is reported at once in an InvalidMachineError. Missing transitions make
    a partial DFA: such a word is rejected (``complete()`` adds an explicit dead state)."""

    def __init__(self, *, states: Iterable[Any], alphabet: Iterable[Any], transitions: Any, start: Any,
                 accept: Iterable[Any]) -> None:
        self._core = _core.DFA([str(q) for q in states], [str(a) for a in alphabet],
                               _transition_triples(transitions), str(start), [str(q) for q in accept])

    @classmethod
    def _wrap(cls, core: Any) -> "DFA":
        d = cls.__new__(cls)
        d._core = core
        return d

    states = property(lambda self: list(self._core.states), doc="State names, in index order.")
    alphabet = property(lambda self: list(self._core.alphabet), doc="Symbols, in index order (one-hot order).")
    start = property(lambda self: self._core.start, doc="The start state.")
    accept = property(lambda self: frozenset(self._core.accept), doc="The accepting states.")

    @property
    def transitions(self) -> dict[str, dict[str, str]]:
        """δ as {state: {symbol: next}} (missing entries are missing transitions)."""
        out: dict[str, dict[str, str]] = {q: {} for q in self.states}
        for q, a, n in self._core.transitions:
            out[q][a] = n
        return out

    def symbols(self, word: Word) -> list[str]:
        """A word as a list of symbols: a string is split into characters when every symbol
        is one character; otherwise give a sequence of symbols."""
        if isinstance(word, str):
            if all(len(a) == 1 for a in self.alphabet):
                return list(word)
            if word == "":
                return []
            raise InvalidInputError("this alphabet has multi-character symbols: give the word as a list of symbols")
        return [str(a) for a in word]

    def accepts(self, word: Word) -> bool:
        """Whether the DFA accepts ``word`` (InvalidInputError for unknown symbols)."""
        return self._core.accepts(self.symbols(word))

    def run(self, word: Word) -> list[str | None]:
        """The state path q_0 .. q_n (None from a missing transition on)."""
        return self._core.run(self.symbols(word))

    def is_complete(self) -> bool:
        return self._core.is_complete()

    def complete(self) -> "DFA":
        """The same language with a rejecting dead state for missing transitions."""
        return DFA._wrap(self._core.complete())

    def minimize(self) -> "DFA":
        """The minimal complete DFA (Hopcroft 1971), states in breadth-first order."""
        return DFA._wrap(self._core.minimize())

    def equivalent(self, other: "DFA") -> Word | None:
        """None when both accept the same language, else a shortest word where they differ."""
        w = self._core.equivalent(other._core)
        if w is None:
            return None
        return "".join(w) if all(len(a) == 1 for a in self.alphabet) else tuple(w)

    def to_json(self) -> str:
        return self._core.to_json()

    @classmethod
    def from_json(cls, text: str) -> "DFA":
        return cls._wrap(_core.DFA.from_json(text))

    def save(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "DFA":
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())

    @classmethod
    def random(cls, n_states: int, n_symbols: int = 2, seed: int = 0) -> "DFA":
        """A complete random DFA (symbols "0", "1", ...; each state accepting w.p. 1/2)."""
        return cls._wrap(_core.DFA.random(n_states, n_symbols, seed))

    @classmethod
    def from_automata_lib(cls, dfa: Any) -> "DFA":
        """From an ``automata.fa.dfa.DFA`` (automata-lib); names become strings."""
        return cls(states=dfa.states, alphabet=sorted(map(str, dfa.input_symbols)), transitions=dfa.transitions,
                   start=dfa.initial_state, accept=dfa.final_states)

    def to_automata_lib(self) -> Any:
        """An ``automata.fa.dfa.DFA`` with the same states, symbols and transitions."""
        from automata.fa.dfa import DFA as ALDFA

        return ALDFA(states=set(self.states), input_symbols=set(self.alphabet), transitions=self.transitions,
                     initial_state=self.start, final_states=set(self.accept), allow_partial=not self.is_complete())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DFA) and self._core == other._core

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        return f"DFA(states={len(self.states)}, alphabet={self.alphabet}, start={self.start!r}, accept={sorted(self.accept)})"


def tomita(n: int) -> DFA:
    """Tomita's grammar n (Tomita 1982) over {0, 1}: 1: 1*; 2: (10)*; 3: no odd-length run
    of 1s is followed, anywhere later, by an odd-length run of 0s; 4: no 000; 5: even number
    of 0s and of 1s; 6: (#0 - #1) = 0 mod 3; 7: 0*1*0*1*. Minimal complete DFAs."""
    return DFA._wrap(_core.DFA.tomita(int(n)))


def parity() -> DFA:
    """PARITY (Example 4.2, seed 001): words over {0, 1} with an odd number of 1s."""
    return DFA._wrap(_core.DFA.parity())
