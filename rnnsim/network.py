"""Networks: the simple RNN of Definition 4.1 (lecture notes, seed 001) and its readout.

    h_0 = s,   h_t = act(V h_{t-1} + W x_t + b),   y_t = w h_t + c   (read at every t >= 0)

Parameters are exact rationals (the source of truth). A float run rounds them once to its
format; every multiply and add is then rounded to the format in the fixed order
``acc = b_i; acc += W_ik x_k (k ascending); acc += V_ij h_j (j ascending)`` (no FMA), so
results are reproducible bit for bit and independent of the thread count.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from . import _coerce, _core
from .errors import InvalidInputError, InvalidNetworkError, raise_problems

ACTIVATIONS = ("identity", "relu", "slu", "step", "tanh", "sigmoid", "sign", "sat_sigmoid")


def _fraction_array(shape: Sequence[int], strings: Sequence[str]) -> np.ndarray:
    out = np.empty(len(strings), dtype=object)
    out[:] = [Fraction(s) for s in strings]
    return out.reshape(tuple(shape))


def _object_array(rows: list, ndim: int) -> np.ndarray:
    """Nested lists of Fractions -> object ndarray of exactly ``ndim`` dimensions."""
    arr = np.empty(_shape_of(rows, ndim), dtype=object)
    _fill(arr, rows, ndim)
    return arr


def _shape_of(rows: list, ndim: int) -> tuple[int, ...]:
    shape = []
    cur: Any = rows
    for _ in range(ndim):
        shape.append(len(cur))
        cur = cur[0] if len(cur) else []
    return tuple(shape)


def _fill(arr: np.ndarray, rows: list, ndim: int) -> None:
    if ndim == 1:
        arr[:] = rows
        return
    for i, r in enumerate(rows):
        _fill(arr[i], r, ndim - 1)


@dataclass(frozen=True)
class Linear:
    """Affine readout y = w h + b (eq. 4.5), w of shape (out, hidden), b of shape (out,)."""

    w: Any
    b: Any = None

    def _payloads(self, problems: list[str]) -> tuple[Any, Any]:
        w = self.w
        if isinstance(w, (list, tuple)) and w and not isinstance(w[0], (list, tuple, np.ndarray)):
            w = [list(w)]  # a single output row given as a vector
        w_arr = np.asarray(w, dtype=object) if not isinstance(w, np.ndarray) else w
        if isinstance(w_arr, np.ndarray) and w_arr.ndim == 1:
            w_arr = w_arr.reshape(1, -1)
        out = w_arr.shape[0] if isinstance(w_arr, np.ndarray) and w_arr.ndim >= 1 else 1
        b = self.b if self.b is not None else [0] * out
        if np.ndim(b) == 0:
            b = [b]
        return _coerce.tensor("readout w", w_arr, problems), _coerce.tensor("readout b", b, problems)


@dataclass(frozen=True)
class Run:
    """One sequence's run: ``states`` (T+1, hidden) h_0..h_T and ``outputs`` (T+1, out)
    y_0..y_T (None without a readout). Fractions (object arrays) for exact runs, numpy
    arrays of the format otherwise (bf16 values are returned exactly as float32). ``cells``
    (T+1, hidden) = c_0..c_T for networks whose top layer has a cell state (LSTM, QRNN)."""

    states: np.ndarray
    outputs: np.ndarray | None
    dtype: str
    cells: np.ndarray | None = None


@dataclass(frozen=True)
class BatchRun:
    """A batch's run, PyTorch style: ``states`` (B, T, hidden) h_1..h_T of the top layer
    (None with keep="final"), ``final`` (layers, B, hidden) the last state of each sequence
    (at its own length), ``outputs`` (B, T, out) y_1..y_T (keep="all" only) and
    ``final_outputs`` (B, out). Gated cells: ``cells`` (B, T, hidden) c_1..c_T of an
    LSTM-like top layer (keep="all" only) and ``final_c``. Steps past a sequence's length
    are zero padding."""

    states: np.ndarray | None
    final: np.ndarray
    outputs: np.ndarray | None
    final_outputs: np.ndarray | None
    dtype: str
    final_c: np.ndarray | None = None
    cells: np.ndarray | None = None


class SimpleRNN:
    """A simple RNN h_t = act(V h_{t-1} + W x_t + b) with an optional affine readout.

    Definition 4.1 of the lecture notes (seed 001; Elman 1990). ``activation`` is one of
    identity | relu | slu | step | tanh | sigmoid | sign | sat_sigmoid, with slu(x) =
    min(1, max(0, x)), step(x) = 1 if x > 0 else 0, sign(x) in {-1, 0, 1} and sat_sigmoid(x) =
    1, 1/2, 0 for x > 0, = 0, < 0 (the saturated limits of tanh and sigmoid). Weights may be ints, Fractions, "p/q" strings, floats
    (taken as their exact binary value) or numpy arrays; every problem is reported at once
    in one InvalidNetworkError.
    """

    def __init__(self, V: Any, W: Any, b: Any, h0: Any = None, activation: str = "relu",
                 readout: Linear | None = None) -> None:
        problems: list[str] = []
        v = _coerce.tensor("V", V, problems)
        w = _coerce.tensor("W", W, problems)
        bb = _coerce.tensor("b", b, problems)
        h = None if h0 is None else _coerce.tensor("h0", h0, problems)
        ro = None
        if readout is not None:
            if not isinstance(readout, Linear):
                problems.append("readout must be an rnnsim.Linear(w, b)")
            else:
                ro = readout._payloads(problems)
                if ro[0] is None or ro[1] is None:
                    ro = None
        if not isinstance(activation, str):
            problems.append(f"activation must be a name such as 'relu', got {activation!r}")
            activation = "relu"
        if v is None or w is None or bb is None:
            raise_problems(InvalidNetworkError, problems)
        # the core adds its own findings (values, shapes) to ours and raises them together
        self._core = _core.SimpleRNN(v, w, bb, h, activation.lower(), ro, problems)
        self._cache: dict[str, Any] = {}

    @classmethod
    def from_torch(cls, state_dict: Any, nonlinearity: str = "tanh", prefix: str = "") -> Any:
        """From a torch.nn.RNN state_dict (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0;
        torch tensors or numpy arrays, taken exactly): V = W_hh, W = W_ih, b = b_ih + b_hh
        (added exactly), activation = ``nonlinearity`` ("tanh" or "relu"). A multi-layer
        state_dict gives an ``rnnsim.Stacked`` of simple RNN layers."""
        from .cells import simple_rnn_from_torch

        return simple_rnn_from_torch(state_dict, nonlinearity, prefix)

    @classmethod
    def _wrap(cls, core: Any) -> "SimpleRNN":
        net = cls.__new__(cls)
        net._core = core
        net._cache = {}
        return net

    # ---- exact parameter views -------------------------------------------------------
    def _param(self, name: str) -> np.ndarray:
        if "params" not in self._cache:
            self._cache["params"] = self._core.params()
        shape, strings = self._cache["params"][name]
        return _fraction_array(shape, strings)

    @property
    def V(self) -> np.ndarray:
        """Recurrent weights (hidden, hidden), exact Fractions."""
        return self._param("V")

    @property
    def W(self) -> np.ndarray:
        """Input weights (hidden, input), exact Fractions."""
        return self._param("W")

    @property
    def b(self) -> np.ndarray:
        """Bias (hidden,), exact Fractions."""
        return self._param("b")

    @property
    def h0(self) -> np.ndarray:
        """Start state (hidden,), exact Fractions."""
        return self._param("h0")

    @property
    def activation(self) -> str:
        return self._core.activation

    @property
    def readout(self) -> Linear | None:
        if self._core.output_size == 0:
            return None
        return Linear(self._param("readout_w"), self._param("readout_b"))

    @property
    def hidden_size(self) -> int:
        return self._core.hidden_size

    @property
    def input_size(self) -> int:
        return self._core.input_size

    @property
    def output_size(self) -> int:
        return self._core.output_size

    @property
    def nonzero_weights(self) -> int:
        """Nonzero entries of V, W and b."""
        return self._core.nonzero_weights

    def __repr__(self) -> str:
        ro = f", readout={self.output_size}" if self.output_size else ""
        return (f"SimpleRNN(hidden={self.hidden_size}, input={self.input_size}, "
                f"activation={self.activation!r}{ro})")

    # ---- running -------------------------------------------------------------------
    def _inputs(self, name: str, value: Any) -> Any:
        problems: list[str] = []
        payload = _coerce.tensor(name, value, problems)
        raise_problems(InvalidInputError, problems)
        return payload

    def run(self, x: Any, dtype: Any = "exact", h0: Any = None, max_bits: int | None = None,
            fma: bool = False, approx_activations: bool = False, accumulate: str | None = None) -> Run:
        """Runs one sequence ``x`` of shape (T, input_size); returns h_0..h_T and y_0..y_T.

        dtype: "exact" (rationals) or "f64" | "f32" | "bf16" | "f16". ``h0`` overrides the
        start state. ``max_bits`` caps exact numbers' size (LimitExceededError past it).
        ``fma=True`` fuses every product-sum step of the affine maps (and the readout):
        acc = fma(w, z, acc) = round(w·z + acc), one rounding instead of two, in the same
        order (IEEE fusedMultiplyAdd; what BLAS and PyTorch use). Elementwise formulas and
        the activations are unchanged. Exact runs are unaffected (nothing is rounded).
        ``approx_activations=True`` (dtype "f32" only; UnsupportedError otherwise) computes
        tanh and sigmoid by a fixed sequence of f32 operations (Cephes' expf/tanhf,
        ``rnnsim.reference.approx_tanh``) instead of rounding the true value correctly: about
        three times faster, at most 2 ulps off (all 2^32 inputs measured), the same bits on
        every CPU and thread count (README "Approximate activations").
        ``accumulate="f32"`` (dtype "bf16" or "f16"; UnsupportedError for others but "f32")
        sums each affine map in f32 and rounds the sum to the half format once, at its end,
        as hardware with f32 accumulators does (PyTorch's bf16 matrix products): weights,
        inputs, states and every elementwise operation stay the half format's
        (README "Half formats with f32 sums").
        """
        name = _coerce.dtype_name(dtype)
        xs = self._inputs("x", x)
        h = None if h0 is None else self._inputs("h0", h0)
        kwargs: dict[str, Any] = {} if max_bits is None else {"max_bits": int(max_bits)}
        res = self._core.run(xs, name, h, fma=bool(fma), approx_activations=bool(approx_activations),
                             accumulate=None if accumulate is None else str(accumulate), **kwargs)
        if name == "exact":
            states = _object_array(res["states"], 2)
            outputs = _object_array(res["outputs"], 2) if self.output_size else None
        else:
            states = res["states"]
            outputs = res["outputs"] if self.output_size else None
        return Run(states=states, outputs=outputs, dtype=name)

    def run_batch(self, x: Any, dtype: Any = "f32", h0: Any = None, c0: Any = None,
                  lengths: Any = None, threads: int | None = None, keep: str = "all",
                  progress: bool = False, max_bits: int | None = None, fma: bool = False,
                  approx_activations: bool = False, accumulate: str | None = None) -> BatchRun:
        """Runs a batch ``x`` of shape (B, T, input_size) in parallel over sequences.

        The GIL is released, Ctrl-C stops the run within a fraction of a second
        (KeyboardInterrupt), and results are bitwise identical for any ``threads``.
        ``h0``: (1, B, hidden) as in PyTorch (or (B, hidden)). ``lengths``: per-sequence
        lengths <= T. ``keep="states"`` stores the states but not the per-step outputs;
        ``keep="final"`` only the final states (and outputs). ``progress=True``
        shows a rich progress bar.
        ``fma=True`` fuses every product-sum step of the affine maps (and the readout):
        acc = fma(w, z, acc) = round(w·z + acc), one rounding instead of two, in the same
        order (IEEE fusedMultiplyAdd; what BLAS and PyTorch use). Elementwise formulas and
        the activations are unchanged. Exact runs are unaffected (nothing is rounded).
        ``approx_activations=True`` (dtype "f32" only; UnsupportedError otherwise) computes
        tanh and sigmoid by a fixed sequence of f32 operations (Cephes' expf/tanhf,
        ``rnnsim.reference.approx_tanh``) instead of rounding the true value correctly: about
        three times faster, at most 2 ulps off (all 2^32 inputs measured), the same bits on
        every CPU and thread count (README "Approximate activations").
        ``accumulate="f32"`` (dtype "bf16" or "f16"; UnsupportedError for others but "f32")
        sums each affine map in f32 and rounds the sum to the half format once, at its end,
        as hardware with f32 accumulators does (PyTorch's bf16 matrix products): weights,
        inputs, states and every elementwise operation stay the half format's
        (README "Half formats with f32 sums").
        """
        if c0 is not None:
            raise InvalidInputError("c0 is only meaningful for LSTM cells; a SimpleRNN has no cell state")
        name = _coerce.dtype_name(dtype)
        xs = self._inputs("x", x)
        h = None if h0 is None else self._inputs("h0", h0)
        lens = None if lengths is None else [int(v) for v in np.asarray(lengths).reshape(-1)]
        kwargs: dict[str, Any] = {} if max_bits is None else {"max_bits": int(max_bits)}
        with _progress_bar(progress, "simulating") as cb:
            res = self._core.run_batch(xs, name, h, lens, threads, keep, progress=cb, fma=bool(fma),
                                       approx_activations=bool(approx_activations),
                                       accumulate=None if accumulate is None else str(accumulate), **kwargs)
        has_out = self.output_size > 0
        if name == "exact":
            states = _object_array(res["states"], 3) if "states" in res else None
            outputs = _object_array(res["outputs"], 3) if has_out and "outputs" in res else None
            final = _object_array(res["final"], 3)
            final_outputs = _object_array(res["final_outputs"], 2) if has_out else None
        else:
            states = res.get("states")
            outputs = res.get("outputs") if has_out else None
            final = res["final"]
            final_outputs = res["final_outputs"] if has_out else None
        return BatchRun(states=states, final=final, outputs=outputs, final_outputs=final_outputs, dtype=name)

    # ---- saving --------------------------------------------------------------------
    def to_json(self, meta: dict | None = None) -> str:
        """The versioned JSON form (exact rationals as strings); ``meta`` is carried along."""
        return self._core.to_json(None if meta is None else json.dumps(meta))

    def save(self, path: str | os.PathLike[str], meta: dict | None = None) -> None:
        """Writes the network to ``path`` as JSON; ``rnnsim.load`` reads it back losslessly."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json(meta))


def load(path: str | os.PathLike[str]) -> Any:
    """Reads a network saved by ``SimpleRNN.save``; a corrupted or unknown file raises
    InvalidNetworkError (a missing file raises FileNotFoundError)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise InvalidNetworkError(f"{path}: not a saved rnnsim network (not UTF-8 text: {e})") from None
    return loads(text)


def loads(text: str) -> Any:
    """Parses the JSON text of a saved network (a SimpleRNN, or an LSTM, GRU, Stacked, ...
    by its ``"kind"``)."""
    kind = _core.saved_network_kind(text)
    if kind is not None and kind != "simple_rnn":
        from .cells import wrap_core

        core, _meta = _core.CellNetwork.from_json(text)
        return wrap_core(core)
    core, _meta = _core.SimpleRNN.from_json(text)
    return SimpleRNN._wrap(core)


class _progress_bar:
    """Context manager giving a progress callback (done, total) or None."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled
        self.label = label
        self._progress: Any = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if not self.enabled:
            return None
        from rich.progress import Progress

        self._progress = Progress(transient=False)
        self._progress.__enter__()
        task = self._progress.add_task(self.label, total=None)

        def update(done: int, total: int) -> None:
            self._progress.update(task, completed=done, total=total)

        return update

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
