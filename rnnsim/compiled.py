"""Machines compiled into networks, with their codecs: ``rs.compile(machine)``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Sequence

import numpy as np

from . import _coerce, _core
from .dfa import DFA, Word
from .errors import InvalidInputError, UnsupportedError
from .network import SimpleRNN, _progress_bar


class CompiledDFA:
    """A DFA compiled into a simple ReLU RNN with integer weights and a linear readout
    (Theorem 4.3, Minsky 1967, through Lemma 4.4; lecture notes seed 001 §4.2.1).

    Hidden size |Q|·|Σ| + 1 (|Q| after completing the DFA with a dead state): unit 0 is 1
    at t = 0 only, unit 1 + i·|Σ| + j is g[i, j] = ReLU(h[q_i] + x[a_j] − 1), "the previous
    state was q_i and the symbol read was a_j". The readout Σ_{q ∈ F} (U h)[q] (plus the
    start state's acceptance through unit 0) is exactly 1 after an accepted prefix and 0
    after a rejected one, at every t including t = 0. Accept iff y > 1/2.
    """

    def __init__(self, core: Any, source: DFA) -> None:
        self._core = core
        self.source = source
        self.network: SimpleRNN = SimpleRNN._wrap(core.network)
        self.dfa: DFA = DFA._wrap(core.dfa)  # the completed DFA the network simulates

    @property
    def hidden_size(self) -> int:
        return self.network.hidden_size

    def encode(self, word: Word) -> np.ndarray:
        """The input matrix (T, |Σ|) the network is fed: one-hot rows in alphabet order."""
        shape, strings = self._core.encode(self.dfa.symbols(word))
        return np.array([int(s) for s in strings], dtype=np.int64).reshape(shape)

    def decode(self, h: Any) -> str:
        """The DFA state a hidden state encodes, read through the construction's U."""
        problems: list[str] = []
        payload = _coerce.tensor("h", h, problems)
        if problems:
            raise InvalidInputError("; ".join(problems), problems)
        return self._core.decode(payload)

    def accepts(self, word: Word, dtype: Any = "exact") -> bool:
        """Runs the network on ``word`` in ``dtype`` and reads the readout (y > 1/2)."""
        return self._core.accepts(self.dfa.symbols(word), _coerce.dtype_name(dtype))

    def accepts_batch(self, words: Iterable[Word], dtype: Any = "exact", threads: int | None = None,
                      progress: bool = False) -> list[bool]:
        """Many words at once, in parallel (GIL released), padded with ``lengths``."""
        ws = [self.dfa.symbols(w) for w in words]
        with _progress_bar(progress, "words") as cb:
            return self._core.accepts_batch(ws, _coerce.dtype_name(dtype), threads, cb)

    def verify(self, max_len: int, dtype: Any = "f32", threads: int | None = None) -> Word | None:
        """Every word of length ≤ max_len through the batch engine against the DFA's own
        interpreter: None, or the first counterexample (shortest, then in alphabet order).
        Words are expanded as a tree, one network tick per word, so verify(20) on a binary
        alphabet (2,097,151 words) takes about a second."""
        w = self._core.verify(int(max_len), _coerce.dtype_name(dtype), threads)
        if w is None:
            return None
        return "".join(w) if all(len(a) == 1 for a in self.dfa.alphabet) else tuple(w)

    def alphabet_vectors(self) -> dict[str, list[Fraction]]:
        """Each symbol's input vector."""
        return dict(self._core.alphabet_vectors())

    def __repr__(self) -> str:
        return f"CompiledDFA(states={len(self.dfa.states)}, alphabet={self.dfa.alphabet}, hidden={self.hidden_size})"


def compile(machine: Any, **options: Any) -> Any:
    """Compiles a machine into a network that provably simulates it.

    - DFA -> CompiledDFA (Theorem 4.3, Minsky; ReLU, integer weights). No options.
    - TuringMachine -> CompiledTM (Theorem 4.6, Siegelmann-Sontag; slu, rational weights,
      one tick per step). Options: ``encoding="base4"|"cantor3"``, ``base=None`` (base4: the
      stacks' base, default 2|Γ|), ``counter=True`` (two-way tapes: keep the head-position
      counter so the head decodes absolutely), ``penalty="tight"|"syntactic"``.
    """
    from .turing import TuringMachine

    if isinstance(machine, DFA):
        if options:
            raise InvalidInputError(f"compile(DFA) takes no options, got {sorted(options)}")
        return CompiledDFA(_core.compile_dfa(machine._core), machine)
    if isinstance(machine, TuringMachine):
        from .compiled_tm import CompiledTM

        allowed = {"encoding", "base", "counter", "penalty"}
        if set(options) - allowed:
            raise InvalidInputError(f"compile(TuringMachine) options are {sorted(allowed)}, got {sorted(set(options) - allowed)}")
        return CompiledTM(_core.compile_tm(machine._core, **options), machine)
    raise UnsupportedError(f"cannot compile a {type(machine).__name__}: expected an rnnsim.DFA or rnnsim.TuringMachine")


def extract(obj: Any, alphabet: dict[str, Sequence[Any]] | None = None, threshold: Any = Fraction(1, 2),
            max_states: int = 100_000) -> DFA:
    """Theorem 4.5 (seed 001): the minimal DFA of the language a network recognises.

    Explores the reachable hidden states exactly, breadth first from h_0, feeding each
    symbol's input vector; a state accepts iff readout[0] > threshold (default 1/2); the
    result is minimised. Integer-weight networks with slu/step units are finite (at most
    2^d states); other piecewise-linear networks are explored too and stop with
    LimitExceededError past ``max_states``; tanh/sigmoid raise UnsupportedError.

    ``obj`` is a CompiledDFA (its alphabet is used) or a SimpleRNN with
    ``alphabet={symbol: input vector}``.
    """
    if isinstance(obj, CompiledDFA):
        net, vectors = obj.network, obj.alphabet_vectors()
    elif isinstance(obj, SimpleRNN):
        if alphabet is None:
            raise InvalidInputError("extract(net) needs alphabet={symbol: input vector}")
        net, vectors = obj, alphabet
    else:
        raise InvalidInputError(f"extract needs a CompiledDFA or a SimpleRNN, got {type(obj).__name__}")
    problems: list[str] = []
    items = [(str(s), _coerce.tensor(f"alphabet[{s!r}]", v, problems)) for s, v in vectors.items()]
    if problems:
        raise InvalidInputError("; ".join(problems), problems)
    thr = Fraction(threshold)
    return DFA._wrap(_core.extract_dfa(net._core, items, f"{thr.numerator}/{thr.denominator}", int(max_states)))


def two_layer_to_rnn(s: Any, U: Any, V: Any, W: Any, b: Any, out_w: Any, out_b: Any = None,
                     activation: str = "relu") -> SimpleRNN:
    """Lemma 4.4 (lecture notes, seed 001): a recurrence with a two-layer step

        h_0 = s,   h_t = U·ReLU(V h_{t-1} + W x_t + b),   y_t = out_w h_t + out_b

    becomes ONE simple ReLU RNN g (hidden size k + 1, k = len(b)) with the same outputs:
    g.h_0 = [1, 0...], g.h_t = ReLU([[0, 0], [V s, V U]] g.h_{t-1} + [0; W] x_t + [0; b]),
    readout out_w·[s U] g.h_t + out_b. The first unit carries s into the readout at t = 0
    (the lecture notes' [0 U] would read 0 there) and is 0 from t = 1 on. Shapes: s (d,),
    U (d, k), V (k, d), W (k, d_in), b (k,), out_w (d_out, d), out_b (d_out,). ``activation``
    may be "slu" or "step" when every first-layer pre-activation stays where they equal ReLU.
    """
    problems: list[str] = []
    if out_b is None:
        out_b = [0] * len(np.asarray(out_w, dtype=object).reshape(len(out_w), -1))
    args = [_coerce.tensor(n, v, problems) for n, v in
            [("s", s), ("U", U), ("V", V), ("W", W), ("b", b), ("out_w", out_w), ("out_b", out_b)]]
    if problems:
        from .errors import InvalidNetworkError
        raise InvalidNetworkError("; ".join(problems), problems)
    return SimpleRNN._wrap(_core.two_layer_to_rnn(*args, activation))


__all__ = ["CompiledDFA", "compile", "extract", "two_layer_to_rnn"]
