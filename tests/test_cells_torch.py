"""rs.LSTM / rs.GRU / rs.SimpleRNN.from_torch against PyTorch's own outputs.

tests/fixtures/torch_cells.npz (a copy of the project's shared fixture, written by PyTorch;
$RNNSIM_FIXTURES overrides the folder) holds, per case,
``<case>/x`` (T, B, input) as PyTorch stores it, ``/h0``, ``/c0`` (layers, B, hidden), the
outputs ``/y`` (T, B, hidden), ``/hn``, ``/cn`` and the state_dict ``/sd/<name>``. Our runs
must agree within 1e-5 (f32) and 1e-12 (f64).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import rnnsim as rs

FIXTURE = Path(os.environ.get("RNNSIM_FIXTURES", Path(__file__).parent / "fixtures")) / "torch_cells.npz"
pytestmark = pytest.mark.skipif(not FIXTURE.exists(), reason="PyTorch fixture not available")


def _load():
    z = np.load(FIXTURE)
    return {k: z[k] for k in z.files}


DATA = _load() if FIXTURE.exists() else {}
CASES = sorted({k.split("/")[0] for k in DATA})
TOL = {"f32": 1e-5, "f64": 1e-12}


class FakeTorchTensor:
    """Duck-types a torch tensor: .detach().cpu().numpy()."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self.dtype = f"torch.{a.dtype}"

    def detach(self) -> "FakeTorchTensor":
        return self

    def cpu(self) -> "FakeTorchTensor":
        return self

    def numpy(self) -> np.ndarray:
        return self._a


def state_dict(case: str, torch_like: bool = False) -> dict:
    p = f"{case}/sd/"
    sd = {k[len(p):]: v for k, v in DATA.items() if k.startswith(p)}
    return {k: FakeTorchTensor(v) for k, v in sd.items()} if torch_like else sd


def build(case: str, torch_like: bool = False):
    kind = case.split("_")[0]
    sd = state_dict(case, torch_like)
    if kind == "lstm":
        return rs.LSTM.from_torch(sd)
    if kind == "gru":
        return rs.GRU.from_torch(sd)
    return rs.SimpleRNN.from_torch(sd, nonlinearity=case.split("_")[1])


def test_fixture_lists_the_expected_cases():
    assert {"lstm_L1_f32", "lstm_L2_f64", "gru_L2_f32", "rnn_tanh_L3_f64", "rnn_relu_L1_f32"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_batch_matches_pytorch(case):
    dtype = case.rsplit("_", 1)[1]
    tol = TOL[dtype]
    net = build(case, torch_like=True)
    layers = DATA[f"{case}/h0"].shape[0]
    x = np.transpose(DATA[f"{case}/x"], (1, 0, 2))  # (T, B, in) -> batch first
    kwargs = {"h0": DATA[f"{case}/h0"]}
    if case.startswith("lstm"):
        kwargs["c0"] = DATA[f"{case}/c0"]
    if isinstance(net, rs.SimpleRNN):
        assert layers == 1
    else:
        assert net.num_layers == layers
    b = net.run_batch(x, dtype=dtype, threads=2, **kwargs)
    want_y = np.transpose(DATA[f"{case}/y"], (1, 0, 2))
    assert b.states.shape == want_y.shape
    assert b.states.dtype == np.dtype("float32" if dtype == "f32" else "float64")
    assert np.max(np.abs(b.states.astype(np.float64) - want_y)) <= tol
    assert b.final.shape == DATA[f"{case}/hn"].shape
    assert np.max(np.abs(b.final.astype(np.float64) - DATA[f"{case}/hn"])) <= tol
    if case.startswith("lstm"):
        assert np.max(np.abs(b.final_c.astype(np.float64) - DATA[f"{case}/cn"])) <= tol
    else:
        assert b.final_c is None


@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("rnn")])
def test_single_run_is_the_batch_row(case):
    dtype = case.rsplit("_", 1)[1]
    net = build(case)
    x = np.transpose(DATA[f"{case}/x"], (1, 0, 2))
    h0, kw = DATA[f"{case}/h0"], {}
    if case.startswith("lstm"):
        kw["c0"] = DATA[f"{case}/c0"]
    b = net.run_batch(x, dtype=dtype, h0=h0, **kw)
    for s in range(x.shape[0]):
        one = net.run(x[s], dtype=dtype, h0=h0[:, s], **{k: v[:, s] for k, v in kw.items()})
        assert np.array_equal(one.states[0], h0[-1, s])
        assert np.array_equal(one.states[1:], b.states[s])
        if case.startswith("lstm"):
            assert np.array_equal(one.cells[-1], b.final_c[-1, s])


def test_prefix_selects_a_submodule_and_torch_bias_free_modules_work():
    sd = {f"encoder.rnn.{k}": v for k, v in state_dict("gru_L1_f64").items()}
    sd["decoder.weight"] = np.zeros((2, 2))
    net = rs.GRU.from_torch(sd, prefix="encoder.rnn.")
    assert net.num_layers == 1 and net.hidden_size == 7
    no_bias = {k: v for k, v in state_dict("lstm_L1_f64").items() if k.startswith("weight")}
    net = rs.LSTM.from_torch(no_bias)
    assert all(v == 0 for v in net.params()["bias_ih"])
