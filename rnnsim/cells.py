"""Gated, deep and second-order recurrent networks (thin wrappers over ``_core.CellNetwork``).

Every class here is a stack of one or more layers; the output sequence of layer k is the
input sequence of layer k + 1 (seed 002). Equations, each in the docstring of its class:
LSTM and GRU exactly as PyTorch (seeds 003, 004), the Doubling-LSTM and the QRNN (seed 003),
the second-order RNN (seed 002), the residual cell (seed 004) and the MLP cell (seed 000).

Parameters are exact rationals; a float run rounds them once to its format and rounds every
operation (no FMA) in the documented order (README, "Gated, deep and second-order cells").
Exact runs work whenever every gate function is piecewise linear or saturated (identity,
relu, slu, step, sign, sat_sigmoid); ``saturate(net)`` gives that network for any other.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Sequence

import numpy as np

from . import _coerce, _core
from .errors import InvalidInputError, InvalidNetworkError, raise_problems
from .network import BatchRun, Run, SimpleRNN, _fraction_array, _progress_bar


def _payload(name: str, value: Any, problems: list[str]) -> Any:
    return _coerce.tensor(name, value, problems)


def _torch_value(v: Any) -> Any:
    """A torch tensor (duck-typed: .detach().cpu().numpy()) or anything array-like, as numpy."""
    if hasattr(v, "detach"):
        v = v.detach()
        if hasattr(v, "cpu"):
            v = v.cpu()
        if "bfloat16" in str(getattr(v, "dtype", "")) and hasattr(v, "float"):
            v = v.float()  # numpy has no bfloat16; widening is exact
        if hasattr(v, "numpy"):
            v = v.numpy()
    return v


def _act(name: Any, what: str, problems: list[str]) -> str:
    if not isinstance(name, str):
        problems.append(f"{what} must be an activation name such as 'sigmoid', got {name!r}")
        return "identity"
    return name.lower()


class CellNetwork:
    """Base of the gated, deep and second-order networks: a stack of layers.

    ``run(x, dtype)`` runs one sequence, ``run_batch(x, ...)`` a batch (PyTorch shapes);
    ``saturate()`` gives the saturated network; ``save``/``rnnsim.load`` keep it exactly.
    """

    _label = "stacked"

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - subclasses
        raise TypeError("use a concrete class: LSTM, GRU, QRNN, SecondOrderRNN, Stacked, ...")

    @classmethod
    def _wrap(cls, core: Any) -> "CellNetwork":
        net = object.__new__(cls)
        net._core = core
        return net

    # ---- structure ---------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self._core.hidden_sizes)

    @property
    def hidden_size(self) -> int:
        """The top layer's hidden size."""
        return self._core.hidden_sizes[-1]

    @property
    def hidden_sizes(self) -> list[int]:
        return list(self._core.hidden_sizes)

    @property
    def input_size(self) -> int:
        return self._core.input_size

    @property
    def layer_kinds(self) -> list[str]:
        return list(self._core.layer_kinds)

    @property
    def output_size(self) -> int:
        return 0

    def params(self, layer: int = 0) -> dict[str, np.ndarray]:
        """Layer ``layer``'s exact parameters as Fraction arrays, by name (PyTorch names for
        the gated cells: weight_ih, weight_hh, bias_ih, bias_hh)."""
        _kind, tensors, _opts = self._core.layer_parts(layer)
        return {k: _fraction_array(*v) for k, v in tensors.items()}

    def options(self, layer: int = 0) -> dict[str, str]:
        """Layer ``layer``'s options (activation names, window, pooling)."""
        return dict(self._core.layer_parts(layer)[2])

    def _layer_specs(self) -> list[tuple[str, dict, dict]]:
        return [self._core.layer_parts(k) for k in range(self.num_layers)]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(input={self.input_size}, hidden={self.hidden_sizes}, "
                f"layers={self.layer_kinds})")

    def saturate(self) -> "CellNetwork":
        """The saturated network (Merrill 2019): every sigmoid → sat_sigmoid ∈ {0, 1/2, 1},
        tanh → sign ∈ {-1, 0, 1}, slu → step; weights unchanged. It runs exactly."""
        return type(self)._wrap(self._core.saturate())

    # ---- running -------------------------------------------------------------------------
    def _starts(self, name: str, value: Any, batch: int | None) -> list | None:
        """Per-layer start states from (layers, [B,] H) arrays or a list of per-layer arrays."""
        if value is None:
            return None
        problems: list[str] = []
        per_layer = _split_layers(value, self.num_layers, batch is not None)
        out = []
        for layer, v in enumerate(per_layer):
            out.append(None if v is None else _payload(f"{name}[{layer}]", v, problems))
        raise_problems(InvalidInputError, problems)
        return out

    def _inputs(self, value: Any) -> Any:
        problems: list[str] = []
        payload = _payload("x", value, problems)
        raise_problems(InvalidInputError, problems)
        return payload

    def run(self, x: Any, dtype: Any = "exact", h0: Any = None, c0: Any = None, fma: bool = False,
            approx_activations: bool = False, accumulate: str | None = None) -> Run:
        """Runs one sequence ``x`` (T, input_size): ``states`` (T+1, hidden) = the top layer's
        h_0..h_T, ``cells`` (T+1, hidden) = its c_0..c_T when it has a cell state (LSTM,
        Doubling-LSTM, QRNN). ``h0``/``c0``: (layers, hidden) or (hidden,) for one layer.
        dtype "exact" needs piecewise-linear gate functions (else UnsupportedError).
        ``fma=True`` fuses every product-sum step of the affine maps:
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
        (README "Half formats with f32 sums")."""
        name = _coerce.dtype_name(dtype)
        res = self._core.run(self._inputs(x), name, self._starts("h0", h0, None), self._starts("c0", c0, None),
                             fma=bool(fma), approx_activations=bool(approx_activations),
                             accumulate=None if accumulate is None else str(accumulate))
        return Run(states=res["states"], outputs=None, dtype=name, cells=res.get("cells"))

    def run_batch(self, x: Any, dtype: Any = "f32", h0: Any = None, c0: Any = None, lengths: Any = None,
                  threads: int | None = None, keep: str = "all", progress: bool = False,
                  fma: bool = False, approx_activations: bool = False,
                  accumulate: str | None = None) -> BatchRun:
        """Runs a batch ``x`` (B, T, input_size), PyTorch style: ``states`` (B, T, hidden) of
        the top layer (h_1..h_T), ``final`` (layers, B, hidden) and ``final_c`` (layers, B,
        hidden) of every layer (lists of per-layer arrays when the hidden sizes differ or only
        some layers have a cell state). ``h0``/``c0`` are (layers, B, hidden) as in PyTorch.
        Parallel over sequences with the GIL released; bitwise identical for any ``threads``.
        ``fma=True`` fuses every product-sum step of the affine maps:
        acc = fma(w, z, acc) = round(w·z + acc), one rounding instead of two, in the same
        order (IEEE fusedMultiplyAdd; what BLAS and PyTorch use). Elementwise formulas and
        the activations are unchanged. Exact runs are unaffected (nothing is rounded).
        ``keep``: "all" (also ``cells`` (B, T, hidden), c_1..c_T of an LSTM-like top layer),
        "states" (the states without the cells: PyTorch's ``output``, half an LSTM's
        memory) or "final" (only ``final`` and ``final_c``).
        ``approx_activations=True`` (dtype "f32" only; UnsupportedError otherwise) computes
        tanh and sigmoid by a fixed sequence of f32 operations (Cephes' expf/tanhf,
        ``rnnsim.reference.approx_tanh``) instead of rounding the true value correctly: about
        three times faster, at most 2 ulps off (all 2^32 inputs measured), the same bits on
        every CPU and thread count (README "Approximate activations").
        ``accumulate="f32"`` (dtype "bf16" or "f16"; UnsupportedError for others but "f32")
        sums each affine map in f32 and rounds the sum to the half format once, at its end,
        as hardware with f32 accumulators does (PyTorch's bf16 matrix products): weights,
        inputs, states and every elementwise operation stay the half format's
        (README "Half formats with f32 sums")."""
        name = _coerce.dtype_name(dtype)
        xs = self._inputs(x)
        lens = None if lengths is None else [int(v) for v in np.asarray(lengths).reshape(-1)]
        batch = _batch_size(x)
        h = self._starts("h0", h0, batch)
        c = self._starts("c0", c0, batch)
        with _progress_bar(progress, "simulating") as cb:
            res = self._core.run_batch(xs, name, h, c, lens, threads, keep, progress=cb, fma=bool(fma),
                                       approx_activations=bool(approx_activations),
                                       accumulate=None if accumulate is None else str(accumulate))
        final = _stack_layers(res["final"])
        cells = [v for v in res["final_c"] if v is not None]
        if not cells:
            final_c = None
        elif len(cells) == len(res["final_c"]):
            final_c = _stack_layers(res["final_c"])
        else:
            final_c = list(res["final_c"])
        return BatchRun(states=res.get("states"), final=final, outputs=None, final_outputs=None, dtype=name,
                        final_c=final_c, cells=res.get("cells"))

    # ---- saving ----------------------------------------------------------------------------
    def to_json(self, meta: dict | None = None) -> str:
        """The versioned JSON form (format "rnnsim.network" v1, exact rationals as strings)."""
        return self._core.to_json(None if meta is None else json.dumps(meta))

    def save(self, path: str | os.PathLike[str], meta: dict | None = None) -> None:
        """Writes the network to ``path``; ``rnnsim.load`` reads it back losslessly."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json(meta))


def _batch_size(x: Any) -> int | None:
    try:
        shape = np.shape(x)
    except ValueError:
        return None
    return int(shape[0]) if len(shape) == 3 else None


def _split_layers(value: Any, layers: int, batched: bool) -> list:
    """(layers, [B,] H) array → list of per-layer arrays; a list/tuple of per-layer arrays
    is taken as it is; one layer also accepts ([B,] H)."""
    if isinstance(value, (list, tuple)) and (len(value) == 0 or value[0] is None or np.ndim(value[0]) == (2 if batched else 1)):
        return list(value)
    arr = np.asarray(value) if not isinstance(value, np.ndarray) else value
    rank = 2 if batched else 1
    if arr.ndim == rank and layers == 1:
        return [arr]
    if arr.ndim == rank + 1:
        return [arr[k] for k in range(arr.shape[0])]
    want = "(layers, B, hidden)" if batched else "(layers, hidden)"
    raise InvalidInputError(f"start states must have shape {want} or be a list of per-layer arrays, got shape {arr.shape}")


def _stack_layers(arrays: Sequence[Any]) -> Any:
    """(layers, B, H) when every layer has the same shape, else the list."""
    if all(a is not None for a in arrays) and len({np.shape(a) for a in arrays}) == 1:
        if arrays and isinstance(arrays[0], np.ndarray) and arrays[0].dtype == object:
            out = np.empty((len(arrays),) + arrays[0].shape, dtype=object)
            for k, a in enumerate(arrays):
                out[k] = a
            return out
        return np.stack(arrays)
    return list(arrays)


def _gated_spec(kind: str, weight_ih: Any, weight_hh: Any, bias_ih: Any, bias_hh: Any,
                options: dict[str, str], problems: list[str]) -> tuple[str, dict, dict]:
    tensors = {"weight_ih": _payload("weight_ih", weight_ih, problems),
               "weight_hh": _payload("weight_hh", weight_hh, problems)}
    if bias_ih is not None:
        tensors["bias_ih"] = _payload("bias_ih", bias_ih, problems)
    if bias_hh is not None:
        tensors["bias_hh"] = _payload("bias_hh", bias_hh, problems)
    return kind, {k: v for k, v in tensors.items() if v is not None}, options


def _from_torch(cls: type, module: str, state_dict: Any, nonlinearity: str = "tanh", prefix: str = "") -> Any:
    problems: list[str] = []
    if not hasattr(state_dict, "items"):
        raise InvalidNetworkError(f"state_dict must be a mapping of names to tensors, got {type(state_dict).__name__}")
    tensors = {}
    for key, value in state_dict.items():
        key = str(key)
        if prefix:
            if not key.startswith(prefix):
                continue
            key = key[len(prefix):]
        payload = _payload(key, _torch_value(value), problems)
        if payload is not None:
            tensors[key] = payload
    if not isinstance(nonlinearity, str):
        problems.append(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        nonlinearity = "tanh"
    core = _core.CellNetwork.from_torch(module, tensors, nonlinearity, problems)
    return core


class LSTM(CellNetwork):
    """LSTM with PyTorch's equations, gate order (i, f, g, o) and layout (torch.nn.LSTM):

        gi = W_ih x_t + b_ih,  gh = W_hh h_{t-1} + b_hh   (4H rows: blocks i, f, g, o)
        i, f, o = gate(gi + gh) blocks;  g = candidate(gi_g + gh_g)
        c_t = f * c_{t-1} + i * g;       h_t = o * output(c_t)

    gate = sigmoid, candidate = output = tanh by default (Hochreiter & Schmidhuber 1997;
    seeds 003, 004). weight_ih (4H, input), weight_hh (4H, H), biases (4H,) (optional).
    ``LSTM.from_torch(state_dict)`` reads any number of layers.
    """

    _label = "lstm"
    _kind = "lstm"

    def __init__(self, weight_ih: Any, weight_hh: Any, bias_ih: Any = None, bias_hh: Any = None, *,
                 gate: str = "sigmoid", candidate: str = "tanh", output: str = "tanh") -> None:
        problems: list[str] = []
        opts = {"gate": _act(gate, "gate", problems), "candidate": _act(candidate, "candidate", problems),
                "output": _act(output, "output", problems)}
        spec = _gated_spec(self._kind, weight_ih, weight_hh, bias_ih, bias_hh, opts, problems)
        self._core = _core.CellNetwork.from_layers(self._label, [spec], problems)

    @classmethod
    def from_torch(cls, state_dict: Any, prefix: str = "") -> "LSTM":
        """From a torch.nn.LSTM state_dict (weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k},
        bias_hh_l{k}; torch tensors or numpy arrays, taken exactly). ``prefix`` selects and
        strips the keys of a submodule ("rnn."). Every problem is reported at once."""
        return cls._wrap(_from_torch(cls, "lstm", state_dict, prefix=prefix))


class DoublingLSTM(LSTM):
    """The Doubling-LSTM of seed 003: an LSTM whose forget gate is f = f1 + f2 ∈ (0, 2)
    (two sigmoid gates with their own weights), so the cell can reset, keep, halve and
    double. Layout as the LSTM with 5 blocks i, f1, f2, g, o: weight_ih (5H, input)."""

    _label = "doubling_lstm"
    _kind = "doubling_lstm"

    @classmethod
    def from_torch(cls, state_dict: Any, prefix: str = "") -> "LSTM":
        raise InvalidNetworkError("PyTorch has no Doubling-LSTM; build it from its weights")


class GRU(CellNetwork):
    """GRU with PyTorch's equations, gate order (r, z, n) and layout (torch.nn.GRU):

        r = gate(gi_r + gh_r);  z = gate(gi_z + gh_z)
        n = candidate(gi_n + r * gh_n)        (r multiplies W_hn h + b_hn)
        h_t = (1 - z) * n + z * h_{t-1}       (computed as n + z * (h_{t-1} - n))

    gate = sigmoid, candidate = tanh by default (Cho et al. 2014; seeds 003, 004).
    weight_ih (3H, input), weight_hh (3H, H), biases (3H,).
    """

    _label = "gru"

    def __init__(self, weight_ih: Any, weight_hh: Any, bias_ih: Any = None, bias_hh: Any = None, *,
                 gate: str = "sigmoid", candidate: str = "tanh") -> None:
        problems: list[str] = []
        opts = {"gate": _act(gate, "gate", problems), "candidate": _act(candidate, "candidate", problems)}
        spec = _gated_spec("gru", weight_ih, weight_hh, bias_ih, bias_hh, opts, problems)
        self._core = _core.CellNetwork.from_layers(self._label, [spec], problems)

    @classmethod
    def from_torch(cls, state_dict: Any, prefix: str = "") -> "GRU":
        """From a torch.nn.GRU state_dict (any number of layers); see LSTM.from_torch."""
        return cls._wrap(_from_torch(cls, "gru", state_dict, prefix=prefix))


class QRNN(CellNetwork):
    """Quasi-recurrent network (Bradbury et al. 2016; seed 003): gates from the last
    ``window`` = k inputs only, x^{t,k} = (x_t, ..., x_{t+1-k}) (zeros before the start),

        pre = weight @ x^{t,k} + bias          (column block j multiplies x_{t-j})
        z = candidate(pre_z);  f, o, i = gate(pre_f), gate(pre_o), gate(pre_i)
        pooling "ifo" (default, the slides): c_t = f*c_{t-1} + i*z;      h_t = o*c_t
        pooling "fo":  c_t = f*c_{t-1} + (1-f)*z;  h_t = o*c_t
        pooling "f":   c_t = f*c_{t-1} + (1-f)*z;  h_t = c_t

    weight (G*H, k*input) with blocks z, f, o, i (G = 4, 3, 2 for ifo, fo, f).
    """

    _label = "qrnn"

    def __init__(self, weight: Any, bias: Any = None, *, window: int = 1, pooling: str = "ifo",
                 gate: str = "sigmoid", candidate: str = "tanh") -> None:
        problems: list[str] = []
        tensors = {"weight": _payload("weight", weight, problems)}
        if bias is not None:
            tensors["bias"] = _payload("bias", bias, problems)
        opts = {"window": str(window), "pooling": str(pooling), "gate": _act(gate, "gate", problems),
                "candidate": _act(candidate, "candidate", problems)}
        spec = ("qrnn", {k: v for k, v in tensors.items() if v is not None}, opts)
        self._core = _core.CellNetwork.from_layers(self._label, [spec], problems)


class SecondOrderRNN(CellNetwork):
    """Second-order RNN (2RNN; seed 002, Definition 2):

        h_t = act(A x_2 h_{t-1} x_3 x_t + V h_{t-1} + U x_t + b),  (A x_2 h x_3 x)_i = sum_jk A_ijk h_j x_k

    with A a full (H, H, input) tensor, or CP factors (A_out (H, R), A_h (R, H), A_x (R, input)):
    A_ijk = sum_r A_out[i, r] A_h[r, j] A_x[r, k].
    """

    _label = "second_order"

    def __init__(self, V: Any, U: Any, b: Any = None, A: Any = None, *, A_out: Any = None, A_h: Any = None,
                 A_x: Any = None, activation: str = "tanh") -> None:
        problems: list[str] = []
        given = {"V": V, "U": U, "b": b, "A": A, "A_out": A_out, "A_h": A_h, "A_x": A_x}
        tensors = {k: _payload(k, v, problems) for k, v in given.items() if v is not None}
        spec = ("second_order", {k: v for k, v in tensors.items() if v is not None},
                {"activation": _act(activation, "activation", problems)})
        self._core = _core.CellNetwork.from_layers(self._label, [spec], problems)


class ResidualRNN(CellNetwork):
    """Residual recurrent cell (seed 004, §2.2): h_t = h_{t-1} + act(V h_{t-1} + W x_t + b)."""

    _label = "residual"

    def __init__(self, V: Any, W: Any, b: Any = None, activation: str = "tanh") -> None:
        problems: list[str] = []
        given = {"V": V, "W": W, "b": b}
        tensors = {k: _payload(k, v, problems) for k, v in given.items() if v is not None}
        spec = ("residual", {k: v for k, v in tensors.items() if v is not None},
                {"activation": _act(activation, "activation", problems)})
        self._core = _core.CellNetwork.from_layers(self._label, [spec], problems)


class MLPCell(CellNetwork):
    """A deep feed-forward network as the transition (seed 000):

        z_0 = [x_t ; h_{t-1}],  z_l = act_l(W_l z_{l-1} + b_l) (l = 1..L),  h_t = z_L

    ``layers`` = [(W_1, b_1, act_1), ...]: W_1 has input + hidden columns (inputs first),
    the last W has hidden rows.
    """

    _label = "mlp"

    def __init__(self, layers: Iterable[tuple[Any, Any, str]]) -> None:
        problems: list[str] = []
        tensors: dict[str, Any] = {}
        opts: dict[str, str] = {}
        for l, layer in enumerate(layers):
            try:
                w, b, act = layer
            except (TypeError, ValueError):
                problems.append(f"layer {l} must be (weight, bias, activation)")
                continue
            tensors[f"weight_{l}"] = _payload(f"weight_{l}", w, problems)
            if b is not None:
                tensors[f"bias_{l}"] = _payload(f"bias_{l}", b, problems)
            opts[f"activation_{l}"] = _act(act, f"activation of layer {l}", problems)
        spec = ("mlp", {k: v for k, v in tensors.items() if v is not None}, opts)
        self._core = _core.CellNetwork.from_layers(self._label, [spec], problems)


class Stacked(CellNetwork):
    """A deep RNN (seed 002): ``layers`` of any networks (SimpleRNN, LSTM, GRU, QRNN, 2RNN,
    ... or other stacks), the output sequence of layer k being the input of layer k + 1.
    A multi-layer network contributes all its layers. Readouts are not allowed inside."""

    _label = "stacked"

    def __init__(self, layers: Sequence[Any]) -> None:
        problems: list[str] = []
        specs: list[tuple[str, dict, dict]] = []
        for k, net in enumerate(layers):
            if isinstance(net, CellNetwork):
                specs.extend(net._layer_specs())
            elif isinstance(net, SimpleRNN):
                if net.output_size:
                    problems.append(f"layer {k}: a SimpleRNN with a readout cannot be a layer (drop the readout)")
                p = net._core.params()
                specs.append(("simple_rnn", {n: p[n] for n in ("V", "W", "b", "h0")}, {"activation": net.activation}))
            else:
                problems.append(f"layer {k}: expected an rnnsim network (SimpleRNN, LSTM, GRU, ...), got {type(net).__name__}")
        self._core = _core.CellNetwork.from_layers(self._label, specs, problems)


_CLASSES: dict[str, type[CellNetwork]] = {c._label: c for c in
                                          (LSTM, DoublingLSTM, GRU, QRNN, SecondOrderRNN, ResidualRNN, MLPCell, Stacked)}


def wrap_core(core: Any) -> CellNetwork:
    """The Python class for a core network, by its label."""
    return _CLASSES.get(core.label, Stacked)._wrap(core)


def simple_rnn_from_torch(state_dict: Any, nonlinearity: str = "tanh", prefix: str = "") -> Any:
    """torch.nn.RNN state_dict → SimpleRNN (one layer; b = b_ih + b_hh exactly) or Stacked."""
    core = _from_torch(SimpleRNN, "rnn", state_dict, nonlinearity, prefix)
    if len(core.hidden_sizes) > 1:
        return Stacked._wrap(core.relabel("stacked"))
    _kind, tensors, opts = core.layer_parts(0)
    return SimpleRNN(V=_fraction_array(*tensors["V"]), W=_fraction_array(*tensors["W"]),
                     b=_fraction_array(*tensors["b"]), activation=opts["activation"])


def saturate(net: Any) -> Any:
    """The saturated network (Merrill 2019, "Sequential neural networks as automata"): the
    limit rho -> infinity of the network with every weight scaled by rho, activation by
    activation: sigmoid -> sat_sigmoid (1, 1/2, 0 for x >, =, < 0), tanh -> sign, slu -> step;
    relu and identity are kept (no finite limit). Weights are unchanged. For LSTMs the output
    tanh(c_t) becomes sign(c_t) too, so a saturated LSTM is a counter machine (c_t counts in
    steps of 1/2) and runs exactly. Works for SimpleRNN and every cell network."""
    if isinstance(net, CellNetwork):
        return net.saturate()
    if isinstance(net, SimpleRNN):
        act = {"sigmoid": "sat_sigmoid", "tanh": "sign", "slu": "step"}.get(net.activation, net.activation)
        return SimpleRNN(V=net.V, W=net.W, b=net.b, h0=net.h0, activation=act, readout=net.readout)
    raise InvalidInputError(f"saturate expects an rnnsim network, got {type(net).__name__}")
