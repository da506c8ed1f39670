"""Counter networks for the counting languages of Weiss, Goldberg & Yahav (2018), "On the
practical computational power of finite precision RNNs for language recognition" (seed 003).

``build(language, cell, saturation=None)`` → a :class:`Counter`: a real rs.LSTM, rs.SimpleRNN
(ReLU) or rs.Stacked (QRNN + ReLU classifier) built from explicit weights, with its start
state, a readout y = w·h_T + c read on the final top-layer state (**accept iff y > 1/2**) and
named views decoding the counters from the state. Languages (alphabet):

- ``"anbn"``: {aⁿbⁿ : n ≥ 0} ({a, b});  ``"anbncn"``: {aⁿbⁿcⁿ : n ≥ 0} ({a, b, c});
- ``"dyck1"``: balanced parentheses ({"(", ")"});
- ``"anbn_sigma"``: {aⁿbⁿw : n ≥ 1, w ∈ {a, b}*} (seed 003's QRNN counterexample).

Weights (full derivation in rust/compile/counter_lstm.rs, counter_relu.rs, counter_qrnn.rs):

**LSTM** (``cell="lstm"``): c_t = f·c_{t−1} + i·g, h_t = o·sign(c_t); f = o = 1 (pre-activation
2), gates sat_sigmoid, candidate sign. Counter copies P, M with c_0 = K ± 1/2: i-pre 2,
g-pre = x_up − x_down, so c = K ± 1/2 and sign(K + 1/2) − sign(K − 1/2) = 2 iff K = 0. Flags F
start at c_0 = −1/2 and jump once to +1/2 (g-pre 1, i-pre = 2·(condition − 2F̂ − offset), F̂ =
(h_F + 1)/2): anbn: seen_b i = 2(x_b − 2B̂ − 1/2), error i = 2(x_a + B̂ − 2Ê − 3/2),
y = h_P − h_M − 2Ê. Every pre-activation is a nonzero integer, so gates are exactly 0 or 1.
``saturation=ρ`` multiplies all weights by ρ and uses the real σ/tanh (output stays sign):
f = σ(2ρ) < 1 and the counter leaks.

**ReLU SRN** (``cell="relu"``): h_t = relu(V h_{t−1} + W x_t + b), integer weights. One-hot
control units (Minsky): A' = relu(x_a + S + A − 1), B' = relu(x_b + S + A + B − 1) (S = 1 only in
h_0); signed counter K = K⁺ − K⁻, K⁺' = relu(K⁺ − K⁻ + x_a − x_b), K⁻' = relu(K⁻ − K⁺ + x_b − x_a);
anbn: y = S + A + B − K⁺ − K⁻.

**QRNN** (``cell="qrnn"``, anbn and anbncn only): a saturated window-2 QRNN counts (f = i = 1,
z = sign(x_a − x_b)) and counts bad bigrams ("ba"), a memoryless ReLU layer (the seed's
classifier g) takes relu(±K), y = 1 − Σ.

``gru`` and ``tanh`` raise UnsupportedError (finitely many saturated states); so does
``qrnn`` for dyck1 and anbn_sigma (count-dependent updates needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Sequence

import numpy as np

from . import _coerce, _core
from .cells import wrap_core
from .errors import InvalidInputError
from .network import Linear, SimpleRNN, _fraction_array

LANGUAGES = ("anbn", "anbncn", "dyck1", "anbn_sigma")
CELLS = ("lstm", "relu", "qrnn", "gru", "tanh")


def _frac(s: str) -> Fraction:
    return Fraction(s)


def _dtype(dtype: Any) -> str:
    return _coerce.dtype_name(dtype)


class Counter:
    """A counter network for one language (see the module docstring for the weights).

    ``network``: the rs.LSTM / rs.SimpleRNN / rs.Stacked; ``h0``/``c0``: its start state (per
    layer, Fractions); ``readout``: (w, c) with accept iff w·h_T + c > 1/2; ``encode(word)``:
    one-hot input matrix (T, |alphabet|); ``decode(state)``: the counters from layer 0's
    [h | c] vector; ``accepts``, ``accepts_batch``, ``trace``.
    """

    def __init__(self, core: Any) -> None:
        self._core = core
        self.language: str = core.language
        self.cell: str = core.cell
        self.alphabet: list[str] = list(core.alphabet)
        sat = core.saturation
        self.saturation: Fraction | None = None if sat is None else Fraction(sat)
        h0, c0 = core.starts()
        self.h0 = [np.array([_frac(v) for v in layer], dtype=object) for layer in h0]
        self.c0 = [None if layer is None else np.array([_frac(v) for v in layer], dtype=object) for layer in c0]
        w, c = core.readout()
        self.readout = ([_frac(v) for v in w], _frac(c))
        self.view_names: list[str] = list(core.view_names)
        self.network = self._network()

    def _network(self) -> Any:
        net = wrap_core(self._core.network())
        if self.cell != "relu":
            return net
        p = net.params(0)
        return SimpleRNN(V=p["V"], W=p["W"], b=p["b"], h0=self.h0[0], activation="relu",
                         readout=Linear([self.readout[0]], [self.readout[1]]))

    def __repr__(self) -> str:
        sat = "" if self.saturation is None else f", saturation={self.saturation}"
        return f"Counter({self.language!r}, {self.cell!r}{sat})"

    # ---- codec ------------------------------------------------------------------------
    def symbols(self, word: Any) -> list[int]:
        """Symbol indices of ``word`` (a string of alphabet characters or a sequence of symbols)."""
        out = []
        for k, ch in enumerate(word):
            if ch not in self.alphabet:
                raise InvalidInputError(f"symbol {ch!r} at position {k} is not in the alphabet {self.alphabet}")
            out.append(self.alphabet.index(ch))
        return out

    def encode(self, word: Any) -> np.ndarray:
        """One-hot input matrix (T, |alphabet|) of int64."""
        idx = self.symbols(word)
        x = np.zeros((len(idx), len(self.alphabet)), dtype=np.int64)
        x[np.arange(len(idx)), idx] = 1
        return x

    def decode(self, state: Sequence[Any]) -> dict[str, Fraction]:
        """The named counters and flags from layer 0's state [h | c] (Fractions; floats are
        taken at their exact value)."""
        strs = [str(Fraction(v)) if not isinstance(v, str) else v for v in state]
        return {k: Fraction(v) for k, v in zip(self.view_names, self._core.decode(strs))}

    # ---- running -----------------------------------------------------------------------
    def accepts(self, word: Any, dtype: Any = "exact") -> bool:
        """True iff the network accepts ``word`` (readout on the final state > 1/2)."""
        return self.accepts_batch([word], dtype)[0]

    def accepts_batch(self, words: Iterable[Any], dtype: Any = "exact", threads: int | None = None) -> list[bool]:
        """Accept/reject for every word, in parallel through the batch engine."""
        return list(self._core.accepts_batch([self.symbols(w) for w in words], _dtype(dtype), threads))

    def trace(self, word: Any, dtype: Any = "exact") -> list[dict]:
        """Per tick t = 0..T: {"counters": {name: Fraction or None}, "read": symbol or None,
        "y": Fraction or None, "accepting": bool} (None: NaN or ∞ in a float run)."""
        idx = self.symbols(word)
        rows = self._core.trace(idx, _dtype(dtype))
        out = []
        for t, (views, y, acc) in enumerate(rows):
            out.append({
                "counters": {k: (None if v is None else Fraction(v)) for k, v in zip(self.view_names, views)},
                "read": None if t == 0 else self.alphabet[idx[t - 1]],
                "y": None if y is None else Fraction(y),
                "accepting": bool(acc),
            })
        return out


@dataclass(frozen=True)
class SweepResult:
    """One format's precision sweep: ``n`` is the first n at which a sweep word is answered
    wrongly (None: none up to max_n), ``word`` that word (None), ``accepted`` the network's
    answer on it, ``expected`` the right one."""

    dtype: str
    n: int | None
    word: str | None = None
    accepted: bool | None = None
    expected: bool | None = None

    @property
    def ok(self) -> bool:
        return self.n is None


def build(language: str, cell: str, saturation: Any = None) -> Counter:
    """The counter network of ``language`` ∈ {anbn, anbncn, dyck1, anbn_sigma} on ``cell`` ∈
    {lstm, relu, qrnn, gru, tanh}. ``saturation`` (lstm only): None for saturated gates (exact
    in exact arithmetic), or a weight scale ρ > 0: weights ×ρ with real σ/tanh (leaks).
    Unknown names → InvalidInputError listing the options; impossible pairs → UnsupportedError."""
    if not isinstance(language, str) or not isinstance(cell, str):
        raise InvalidInputError(f"language and cell must be names: languages {', '.join(LANGUAGES)}; cells {', '.join(CELLS)}")
    sat = None
    if saturation is not None:
        try:
            sat = str(Fraction(saturation))
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"saturation must be a number (a weight scale ρ > 0) or None, got {saturation!r}") from e
    return Counter(_core.Counter.build(language, cell, sat))


def _spell(alphabet: list[str], prefix: int, runs: list[tuple[int, int]]) -> str:
    parts = [(0, prefix)] + list(runs)
    return " ".join(f"{alphabet[s]}^{k}" for s, k in parts if k)


def precision_sweep(counter: Counter, dtypes: Sequence[Any], max_n: int, threads: int | None = None) -> list[SweepResult]:
    """For each format in ``dtypes`` (names, "fp(M,E)" strings or FloatFormat objects; in the
    order given), the smallest n ≤ ``max_n`` at which the network answers a sweep word
    wrongly: aⁿbⁿ and its near misses aⁿbⁿ⁺¹, aⁿ⁺¹bⁿ (dyck1: (ⁿ)ⁿ, (ⁿ)ⁿ⁺¹, (ⁿ⁺¹)ⁿ; anbncn:
    aⁿbⁿcⁿ, aⁿbⁿcⁿ⁺¹, aⁿbⁿ⁺¹cⁿ, aⁿ⁺¹bⁿcⁿ; anbn_sigma: aⁿbⁿ, aⁿbⁿa (in), aⁿ⁺¹bⁿ, aⁿ⁺¹bⁿa (out)).
    Runs in Rust, parallel over formats, the prefix aⁿ shared and equal states reused (see
    README, "Counters")."""
    if not isinstance(counter, Counter):
        raise InvalidInputError(f"precision_sweep expects a counter from rnnsim.counters.build, got {type(counter).__name__}")
    if isinstance(dtypes, (str, bytes)) or not hasattr(dtypes, "__iter__"):
        dtypes = [dtypes]
    names = [_dtype(d) for d in dtypes]
    if isinstance(max_n, bool) or not isinstance(max_n, (int, np.integer)) or max_n < 0:
        raise InvalidInputError(f"max_n must be a non-negative integer, got {max_n!r}")
    raw = counter._core.precision_sweep(names, int(max_n), threads)
    out = []
    for name, r in zip(names, raw):
        if r is None:
            out.append(SweepResult(name, None))
        else:
            n, prefix, runs, acc = r
            out.append(SweepResult(name, n, _spell(counter.alphabet, prefix, runs), bool(acc), not acc))
    return out
