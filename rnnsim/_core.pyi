"""Type stubs for the native module ``rnnsim._core`` (Rust, PyO3).

Tensors cross the boundary in one of two forms: a float64, float32 or float16 ndarray of any
memory layout (each float taken at its exact binary value; a C-contiguous array is read with
one copy, and a float32 array run with dtype="f32" or a float16 array run with dtype="f16"
needs no conversion) or a pair
``(shape, ["p/q", ...])`` of exact rational strings. The
Python package (``rnnsim.network``) produces these forms; use it rather than this module.
"""

from typing import Any, Callable, Sequence

import numpy as np

__version__: str
DEFAULT_MAX_BITS: int
"""Default cap (bits) on any exact numerator or denominator: 2**26."""
AVX512_TILES: bool
"""Whether this build has the AVX-512 matrix tiles (``build.rs``: compiled where the building
machine has AVX-512, or with ``RNNSIM_AVX512_TILES=1``). Without them an AVX-512 CPU runs the
AVX2 tiles, with the same bits."""

Tensor = np.ndarray | tuple[Sequence[int], Sequence[str]]

def dtype_name(dtype: str) -> str:
    """Canonical name of a dtype ("exact", "f64", ..., "fp(M,E)" for a custom format);
    InvalidInputError for an unknown name or a custom format out of range
    (1 <= M <= 127 stored mantissa bits, 2 <= E <= 20 exponent bits)."""
    ...

class SimpleRNN:
    """h_t = act(V h_{t-1} + W x_t + b), y_t = w h_t + c (Definition 4.1, seed 001).

    Exact parameters are the source of truth; float runs round them once to the format and
    round every multiply and add (order: bias, input terms, recurrent terms; no FMA).
    """

    def __init__(
        self,
        v: Tensor,
        w: Tensor,
        b: Tensor,
        h0: Tensor | None = None,
        activation: str = "relu",
        readout: tuple[Tensor, Tensor] | None = None,
        problems: list[str] = ...,
    ) -> None:
        """Validates every parameter; raises InvalidNetworkError listing all problems,
        including the ``problems`` the caller already found."""

    @property
    def hidden_size(self) -> int: ...
    @property
    def input_size(self) -> int: ...
    @property
    def output_size(self) -> int:
        """Readout rows (0 without a readout)."""
    @property
    def activation(self) -> str:
        """identity | relu | slu | step | tanh | sigmoid."""
    @property
    def nonzero_weights(self) -> int:
        """Nonzero entries of V, W and b."""
    def params(self) -> dict[str, tuple[list[int], list[str]]]:
        """Exact parameters: V, W, b, h0 (and readout_w, readout_b) as (shape, ["p/q", ...])."""
    def run(self, x: Tensor, dtype: str = "exact", h0: Tensor | None = None, max_bits: int = ...,
            fma: bool = False, approx_activations: bool = False,
            accumulate: str | None = None) -> dict[str, Any]:
        """One sequence x (T, input): {"states": h_0..h_T, "outputs": y_0..y_T}; lists of
        Fractions for "exact", numpy arrays of the format otherwise (bf16 as float32).
        fma: every acc + w·z of the affine maps and the readout rounded once (fused).
        approx_activations: tanh/σ by the f32 approximation (f32 only, else UnsupportedError).
        accumulate: "f32" sums the affine maps of a bf16/f16 run in f32 (README "Half formats
        with f32 sums")."""
    def run_batch(
        self,
        x: Tensor,
        dtype: str = "f32",
        h0: Tensor | None = None,
        lengths: list[int] | None = None,
        threads: int | None = None,
        keep: str = "all",
        max_bits: int = ...,
        progress: Callable[[int, int], None] | None = None,
        fma: bool = False,
        approx_activations: bool = False,
        accumulate: str | None = None,
    ) -> dict[str, Any]:
        """A batch x (B, T, input), parallel over sequences with the GIL released:
        {"states" (B, T, d) (keep="all" or "states"), "outputs" (B, T, out) (keep="all"),
        "final" (1, B, d), "final_outputs" (B, out)}; keep is "all", "states" or "final". Bitwise identical for any ``threads``; Ctrl-C raises
        KeyboardInterrupt within a tick; ``progress(done, total)`` is called every 50 ms.
        fma, approx_activations: as in ``run``."""
    def to_json(self, meta: str | None = None) -> str:
        """The versioned JSON text ({"format": "rnnsim.network", "version": 1, ...})."""
    @staticmethod
    def from_json(text: str) -> tuple[SimpleRNN, str]:
        """Parses saved JSON: (network, metadata JSON text); InvalidNetworkError if corrupt."""

class DFA:
    """A DFA (Q, Σ, δ, q0, F) with string names; its own interpreter is the reference."""

    def __init__(self, states: list[str], alphabet: list[str], transitions: list[tuple[str, str, str]], start: str,
                 accept: list[str]) -> None:
        """Validates everything at once (InvalidMachineError listing every problem)."""
    states: list[str]
    alphabet: list[str]
    start: str
    accept: list[str]
    transitions: list[tuple[str, str, str]]
    def accepts(self, word: list[str]) -> bool: ...
    def run(self, word: list[str]) -> list[str | None]:
        """The state path q_0..q_n (None after a missing transition)."""
    def is_complete(self) -> bool: ...
    def complete(self) -> DFA:
        """Adds a rejecting dead state for missing transitions."""
    def minimize(self) -> DFA:
        """Hopcroft (1971) on the completed reachable DFA; states in BFS order."""
    def equivalent(self, other: DFA) -> list[str] | None:
        """None, or a shortest word on which the two differ (BFS on the product)."""
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> DFA: ...
    @staticmethod
    def tomita(n: int) -> DFA:
        """Tomita (1982) grammar n = 1..7 over {0, 1}."""
    @staticmethod
    def parity() -> DFA:
        """Odd number of 1s (Example 4.2, seed 001)."""
    @staticmethod
    def random(n_states: int, n_symbols: int, seed: int) -> DFA: ...

class CompiledDFA:
    """Theorem 4.3 (Minsky) via Lemma 4.4: a ReLU RNN with hidden size |Q|·|Σ| + 1."""

    network: SimpleRNN
    dfa: DFA
    def word(self, word: list[str]) -> list[int]: ...
    def encode(self, word: list[str]) -> tuple[list[int], list[str]]:
        """The one-hot input matrix (T, |Σ|) as (shape, ["p/q", ...])."""
    def decode(self, h: Tensor) -> str:
        """The DFA state a hidden state encodes (InvalidInputError if none)."""
    def accepts(self, word: list[str], dtype: str = "exact") -> bool: ...
    def accepts_batch(self, words: list[list[str]], dtype: str = "exact", threads: int | None = None,
                      progress: Callable[[int, int], None] | None = None) -> list[bool]: ...
    def verify(self, max_len: int, dtype: str = "f32", threads: int | None = None) -> list[str] | None:
        """Every word up to max_len vs the DFA: None or the first counterexample."""
    def alphabet_vectors(self) -> list[tuple[str, list[Any]]]: ...

def compile_dfa(dfa: DFA) -> CompiledDFA: ...
def extract_dfa(net: SimpleRNN, alphabet: list[tuple[str, Tensor]], threshold: str = "1/2",
                max_states: int = 100000) -> DFA:
    """Theorem 4.5: explore reachable states exactly (BFS), accept where readout[0] > threshold, minimise."""

def two_layer_to_rnn(s: Tensor, u: Tensor, v: Tensor, w: Tensor, b: Tensor, out_w: Tensor, out_b: Tensor,
                     activation: str = "relu") -> SimpleRNN:
    """Lemma 4.4 (seed 001): h_t = U·ReLU(V h + W x + b), y = out_w h + out_b, h_0 = s, as one
    simple RNN of hidden size k + 1 with the same outputs at every t (readout out_w·[s U])."""

TmConfigDict = dict[str, Any]

class TuringMachine:
    """A deterministic Turing machine with accept/reject/halt states and a one-way or two-way
    tape (Sipser 2013, Def. 3.3; busy-beaver conventions of bbchallenge.org). A missing
    transition stops and rejects without counting a step. Immutable, validated at once."""

    def __init__(self, states: list[str], input_alphabet: list[str], tape_alphabet: list[str], blank: str,
                 transitions: list[tuple[str, str, str, str, str]], start: str, accept: list[str],
                 reject: list[str], halt: list[str], tape: str) -> None: ...
    @staticmethod
    def parse(text: str) -> TuringMachine:
        """The busy-beaver text format, e.g. "1RB1LB_1LA1RZ" (InvalidInputError saying where)."""
    def format(self) -> str: ...
    @staticmethod
    def builtin(name: str) -> TuringMachine: ...
    @staticmethod
    def builtin_names() -> list[str]: ...
    @staticmethod
    def random(n_states: int, n_symbols: int, seed: int) -> TuringMachine: ...
    states: list[str]
    input_alphabet: list[str]
    tape_alphabet: list[str]
    blank: str
    start: str
    accept: list[str]
    reject: list[str]
    halt: list[str]
    tape: str
    transitions: list[tuple[str, str, str, str, str]]
    def run(self, input: list[str], max_steps: int) -> TmConfigDict:
        """The reference interpreter: {state, head, offset, tape, steps, status}."""
    def configs(self, input: list[str], max_steps: int, limit: int) -> list[TmConfigDict]: ...

class CompiledTM:
    """Theorem 4.6 (Siegelmann–Sontag): h_t = slu(V h_{t−1} + W x_t + b), rational weights,
    |w| loading ticks then one tick per TM step; readout 0 while running, ±1 once stopped."""

    network: SimpleRNN
    machine: TuringMachine
    encoding: str
    bases: tuple[int, int]
    unit_names: list[str]
    unit_kinds: list[str]
    input_columns: list[str]
    def encode(self, word: list[str], ticks: int) -> tuple[list[int], list[str]]:
        """The one-hot input matrix (word, then EOS up to `ticks` rows) as (shape, strings)."""
    def decode(self, h: Tensor) -> TmConfigDict:
        """The configuration a state encodes, exactly: {state, head, offset, tape, loading, verdict}."""
    def run(self, word: list[str], dtype: str = "exact", max_steps: int = 10_000_000, max_bits: int = ...,
            progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """{ticks, steps, halted, output, bits, config | decode_error}."""
    def verify(self, word: list[str], max_steps: int = 100_000) -> dict[str, Any] | None:
        """The exact network vs the interpreter, configuration by configuration."""
    def precision_horizon(self, word: list[str], dtype: str = "f64", max_steps: int = 100_000) -> int | None:
        """The first TM step where the float run decodes differently from the exact run."""
    def tracer(self, word: list[str], dtype: str = "exact", max_bits: int = ...) -> TmTrace: ...

class TmTrace:
    """The compiled network fed word then EOS, one tick at a time."""

    tick: int
    steps: int
    loading: bool
    signal: int
    bits: int
    def advance(self, n: int = 1, stop_on_halt: bool = True) -> int: ...
    def output(self) -> list[Any]: ...
    def state(self) -> list[Any]: ...
    def state_f64(self) -> list[float]: ...
    def config(self) -> TmConfigDict | str: ...

def compile_tm(tm: TuringMachine, encoding: str = "base4", base: int | None = None, counter: bool = True,
               penalty: str = "tight") -> CompiledTM: ...

LayerSpec = tuple[str, dict[str, Tensor], dict[str, str]]

class CellNetwork:
    """A stack of recurrent layers of any kind (simple_rnn, lstm, gru, doubling_lstm, qrnn,
    second_order, residual, mlp); the output sequence of layer k is the input of layer k+1.

    Equations and the float operation order: README, "Gated, deep and second-order cells".
    Exact runs need piecewise-linear gate functions (identity, relu, slu, step, sign,
    sat_sigmoid); ``saturate()`` gives such a network for any other.
    """

    @staticmethod
    def from_layers(label: str, layers: list[LayerSpec], problems: list[str] = ...) -> CellNetwork:
        """Builds from [(cell kind, {name: tensor}, {option: text}), ...]; ``label`` is the
        public kind ("lstm", "stacked", ...). Raises InvalidNetworkError listing every problem
        (plus the ``problems`` the caller found)."""
    @staticmethod
    def from_torch(module: str, tensors: dict[str, Tensor], nonlinearity: str = "tanh", problems: list[str] = ...) -> CellNetwork:
        """From a torch.nn.LSTM ("lstm"), GRU ("gru") or RNN ("rnn", nonlinearity tanh|relu)
        state_dict; missing/unexpected keys and inconsistent layers are all reported."""
    @property
    def label(self) -> str: ...
    @property
    def input_size(self) -> int: ...
    @property
    def hidden_sizes(self) -> list[int]: ...
    @property
    def layer_kinds(self) -> list[str]: ...
    @property
    def cell_states(self) -> list[bool]:
        """Per layer: True when it has a cell state c (lstm, doubling_lstm, qrnn)."""
    def layer_parts(self, k: int) -> tuple[str, dict[str, tuple[list[int], list[str]]], dict[str, str]]:
        """Layer k as (cell kind, {name: (shape, ["p/q", ...])}, {option: text})."""
    def saturate(self) -> CellNetwork:
        """Merrill 2019: sigmoid → sat_sigmoid, tanh → sign, slu → step; weights unchanged."""
    def relabel(self, label: str) -> CellNetwork: ...
    def run(self, x: Tensor, dtype: str = "exact", h0: list[Tensor | None] | None = None,
            c0: list[Tensor | None] | None = None, fma: bool = False,
            approx_activations: bool = False) -> dict[str, Any]:
        """One sequence x (T, input): {"states" (T+1, H) top-layer h_0..h_T, "cells" (T+1, H)
        when the top layer has a cell state, "final": [h per layer], "final_c": [c or None]}.
        h0/c0: one (H_l,) tensor per layer. fma: every acc + w·z of the affine maps (and
        the 2RNN's bilinear sums) rounded once (fused). approx_activations: tanh/σ by the
        f32 approximation (f32 only, else UnsupportedError)."""
    def run_batch(
        self,
        x: Tensor,
        dtype: str = "f32",
        h0: list[Tensor | None] | None = None,
        c0: list[Tensor | None] | None = None,
        lengths: list[int] | None = None,
        threads: int | None = None,
        keep: str = "all",
        progress: Callable[[int, int], None] | None = None,
        fma: bool = False,
        approx_activations: bool = False,
        accumulate: str | None = None,
    ) -> dict[str, Any]:
        """A batch x (B, T, input), parallel over sequences, GIL released, bitwise identical
        for any ``threads``: {"states" (B, T, H) (keep="all" or "states"), "cells" (B, T, H)
        (keep="all", LSTM-like top layer), "final":
        [(B, H_l) per layer], "final_c": [(B, H_l) or None per layer]}. h0/c0: one (B, H_l)
        tensor per layer. Exact runs return object arrays of Fractions. fma, approx_activations:
        as in ``run``."""
    def to_json(self, meta: str | None = None) -> str:
        """{"format": "rnnsim.network", "version": 1, "kind": label, "layers": [...], "meta": ...}."""
    @staticmethod
    def from_json(text: str) -> tuple[CellNetwork, str]:
        """Parses saved JSON: (network, metadata JSON text); InvalidNetworkError if corrupt."""

def saved_network_kind(text: str) -> str | None:
    """The "kind" of a saved network text ("simple_rnn", "lstm", ...), None if not one."""


class Counter:
    """A counter network for a counting language (rnnsim.counters; Weiss et al. 2018)."""
    @staticmethod
    def build(language: str, cell: str, saturation: str | None = None) -> "Counter":
        """saturation: the LSTM weight scale ρ as "p/q" (None: saturated gates)."""
    language: str
    cell: str
    saturation: str | None
    alphabet: list[str]
    view_names: list[str]
    def network(self) -> CellNetwork: ...
    def starts(self) -> tuple[list[list[str]], list[list[str] | None]]: ...
    def readout(self) -> tuple[list[str], str]: ...
    def decode(self, state: list[str]) -> list[str]: ...
    def accepts_batch(self, words: list[list[int]], dtype: str = "exact", threads: int | None = None) -> list[bool]: ...
    def trace(self, word: list[int], dtype: str = "exact") -> list[tuple[list[str | None], str | None, bool]]: ...
    def precision_sweep(self, dtypes: list[str], max_n: int, threads: int | None = None
                        ) -> list[tuple[int, int, list[tuple[int, int]], bool] | None]:
        """Per dtype: None or (n, prefix, runs, accepted); parallel over formats."""
