"""Building networks: accepted weight forms, exact attributes, validation, save/load."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import rnnsim as rs


def small(**kw):
    args = dict(V=[[1, 0], [0, 1]], W=[[1], [0]], b=[0, 0], activation="relu")
    args.update(kw)
    return rs.SimpleRNN(**args)


def test_weights_accept_ints_fractions_strings_floats_and_arrays():
    net = rs.SimpleRNN(
        V=np.array([[Fraction(1, 3), "2/4"], [0.1, Decimal("0.25")]], dtype=object),
        W=np.array([[1], [2]], dtype=np.int64),
        b=np.array([0.5, -1.5], dtype=np.float32),
        h0=["-7/3", 1],
        activation="slu",
    )
    assert net.V.tolist() == [[Fraction(1, 3), Fraction(1, 2)], [Fraction(0.1), Fraction(1, 4)]]
    assert net.V[1, 0] != Fraction(1, 10), "a float is its exact binary value, not the decimal"
    assert net.W.tolist() == [[1], [2]] and net.b.tolist() == [Fraction(1, 2), Fraction(-3, 2)]
    assert net.h0.tolist() == [Fraction(-7, 3), 1]
    assert all(isinstance(v, Fraction) for v in net.V.reshape(-1))
    assert (net.activation, net.hidden_size, net.input_size, net.output_size) == ("slu", 2, 1, 0)
    assert net.readout is None


def test_default_start_state_is_zero_and_readout_is_exact():
    net = small(readout=rs.Linear([["1/2", 1]], ["-1/4"]))
    assert net.h0.tolist() == [0, 0]
    assert net.readout.w.tolist() == [[Fraction(1, 2), 1]]
    assert net.readout.b.tolist() == [Fraction(-1, 4)]
    assert net.output_size == 1


def test_validation_reports_every_problem_at_once():
    with pytest.raises(rs.InvalidNetworkError) as e:
        rs.SimpleRNN(V=[[float("nan"), 0], [1, "abc"]], W=[[1, 2]], b=[0, float("inf")], h0=[1, 2, 3],
                     activation="gelu")
    problems = e.value.problems
    text = str(e.value)
    assert len(problems) == 6, problems
    for needle in ["gelu", "V[0, 0]", "V[1, 1]", "W must have 2 rows", "b[1]", "h0 must have length 2"]:
        assert needle in text, needle
    assert isinstance(e.value, ValueError) and isinstance(e.value, rs.RnnSimError)


@pytest.mark.parametrize("kw,needle", [
    (dict(V=[[1, 2, 3]]), "V must be square"),
    (dict(V=[1, 2]), "V must be a 2-D matrix"),
    (dict(b=[[0, 0]]), "b must be a vector"),
    (dict(readout=rs.Linear([[1, 2, 3]], [0])), "readout w must have 2 columns"),
    (dict(readout=rs.Linear([[1, 2]], [0, 1])), "readout b must have length 1"),
    (dict(V=[[1, 0], [0, None]]), "V[1, 1]"),
    (dict(V=[[1, 0], [0]]), "V"),
    (dict(activation=3), "activation"),
    (dict(readout="linear"), "readout must be an rnnsim.Linear"),
])
def test_each_kind_of_bad_weight_is_an_invalid_network_error(kw, needle):
    with pytest.raises(rs.InvalidNetworkError, match=None) as e:
        small(**kw)
    assert needle in str(e.value)


def test_save_load_round_trip_is_lossless(tmp_path):
    net = small(V=[[Fraction(1, 3), 2**100], [0.1, "-5/7"]], h0=[1, "1/9"],
                readout=rs.Linear([[1, -1]], [Fraction(1, 2)]), activation="step")
    path = tmp_path / "net.json"
    net.save(path)
    back = rs.load(path)
    for name in ["V", "W", "b", "h0"]:
        assert getattr(back, name).tolist() == getattr(net, name).tolist(), name
    assert back.readout.w.tolist() == net.readout.w.tolist()
    assert back.activation == "step"
    x = np.array([[1], [0], [1]])
    assert back.run(x).states.tolist() == net.run(x).states.tolist()
    doc = json.loads(path.read_text())
    assert doc["format"] == "rnnsim.network" and doc["version"] == 1
    assert doc["V"]["data"][0] == "1/3"


@pytest.mark.parametrize("mutate", [
    lambda d: d.update(version=99),
    lambda d: d.update(format="other"),
    lambda d: d["V"].update(data=["1", "x", "0", "1"]),
    lambda d: d["V"].update(shape=[3, 3]),
    lambda d: d.update(activation="gelu"),
    lambda d: d.pop("W"),
])
def test_corrupted_files_raise_invalid_network(tmp_path, mutate):
    doc = json.loads(small().to_json())
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(rs.InvalidNetworkError):
        rs.load(path)


def test_garbage_and_truncated_files_raise_invalid_network(tmp_path):
    text = small().to_json()
    for i, content in enumerate([text[: len(text) // 2].encode(), b"\x00\xff\xfe binary", b""]):
        path = tmp_path / f"g{i}.json"
        path.write_bytes(content)
        with pytest.raises(rs.InvalidNetworkError):
            rs.load(path)
