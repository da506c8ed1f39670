"""Turing machines: the interpreter, the text format, automata-lib interop, and the compiled
networks (Theorem 4.6) checked against the interpreter configuration by configuration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rnnsim as rs

BB = {"bb2": (6, 4), "bb3": (21, 5), "bb4": (107, 13), "bb5": (47_176_870, 4098)}


def sweep_machine() -> rs.TuringMachine:
    """Walks right over a word of 1s, then back to its start, and accepts: the left stack
    holds the whole word at the turn."""
    return rs.TuringMachine(
        states=["right", "left", "done"], tape_alphabet=["0", "1"], blank="0",
        transitions={"right": {"1": ("right", "1", "R"), "0": ("left", "0", "L")},
                     "left": {"1": ("left", "1", "L"), "0": ("done", "0", "R")}},
        start="right", accept=["done"])


# ---------------------------------------------------------------- the interpreter

@pytest.mark.parametrize("name", sorted(BB))
def test_busy_beaver_champions(name):
    tm = rs.TuringMachine.builtin(name)
    r = tm.run("", max_steps=50_000_000)
    assert (r.steps, r.ones, r.halted, r.status) == (*BB[name], True, "halted")


def test_parse_format_round_trip_and_errors():
    text = "1RB1LC_1RC1RB_1RD0LE_1LA1LD_1RZ0LA"
    tm = rs.TuringMachine.parse(text)
    assert tm.format() == text
    assert tm == rs.TuringMachine.builtin("bb5")
    assert rs.TuringMachine.parse("1RB---_1LA1RZ").run().steps > 0
    with pytest.raises(rs.InvalidInputError) as e:
        rs.TuringMachine.parse("1RB1L_1LA1RZ")
    assert "row 1" in str(e.value)
    with pytest.raises(rs.InvalidInputError):
        rs.TuringMachine.parse("1XB1LB_1LA1RZ")


def test_validation_reports_every_problem():
    with pytest.raises(rs.InvalidMachineError) as e:
        rs.TuringMachine(states=["a", "b"], tape_alphabet=["_", "x"], blank="_",
                         transitions=[("a", "y", "b", "x", "R"), ("c", "x", "a", "x", "Q")],
                         start="z", accept=["b"])
    text = str(e.value)
    assert len(e.value.problems) >= 4
    for needle in ['"y"', '"c"', '"z"', "Q"]:
        assert needle in text


def test_one_way_tape_and_missing_transitions():
    # a left move on cell 0 stays (Sipser); a missing transition rejects without a step
    tm = rs.TuringMachine(states=["a", "b"], tape_alphabet=["_", "1"], blank="_",
                          transitions={"a": {"1": ("b", "1", "L")}, "b": {"1": ("b", "1", "L")}},
                          start="a", tape="one-way")
    r = tm.run("1", max_steps=5)
    assert (r.head, r.steps, r.halted) == (0, 5, False)
    r2 = tm.run("", max_steps=5)
    assert (r2.steps, r2.status, r2.accepted) == (0, "rejected", False)


def test_automata_lib_round_trip():
    from automata.tm.dtm import DTM

    dtm = DTM(states={"q0", "q1", "q2", "q3", "q4"}, input_symbols={"0", "1"},
              tape_symbols={"0", "1", "x", "y", "."},
              transitions={"q0": {"0": ("q1", "x", "R"), "y": ("q3", "y", "R")},
                           "q1": {"0": ("q1", "0", "R"), "1": ("q2", "y", "L"), "y": ("q1", "y", "R")},
                           "q2": {"0": ("q2", "0", "L"), "x": ("q0", "x", "R"), "y": ("q2", "y", "L")},
                           "q3": {"y": ("q3", "y", "R"), ".": ("q4", ".", "R")}},
              initial_state="q0", blank_symbol=".", final_states={"q4"})
    tm = rs.TuringMachine.from_automata_lib(dtm)
    back = tm.to_automata_lib()
    for n in range(7):
        for w in map("".join, itertools.product("01", repeat=n)):
            want = dtm.accepts_input(w)
            assert (tm.run(w, 10_000).accepted is True) == want, w
            assert back.accepts_input(w) == want
            assert rs.compile(tm).run(w, max_steps=10_000).output == (1 if want else -1), w


# ---------------------------------------------------------------- the compiled networks

@pytest.mark.parametrize("encoding", ["base4", "cantor3"])
@pytest.mark.parametrize("name", ["bb2", "bb3", "bb4"])
def test_busy_beavers_run_in_full_through_the_network(name, encoding):
    c = rs.compile(rs.TuringMachine.builtin(name), encoding=encoding)
    assert c.verify("", max_steps=1000) is None
    r = c.run("", dtype="exact")
    steps, ones = BB[name]
    assert (r.steps, r.ticks, r.halted, r.output) == (steps, steps, True, 1)
    assert r.config.ones == ones and r.state == "Z"


def test_bb5_first_100k_steps_configuration_by_configuration():
    c = rs.compile(rs.TuringMachine.builtin("bb5"))
    assert c.verify("", max_steps=100_000) is None
    r = c.run("", max_steps=100_000)
    want = rs.TuringMachine.builtin("bb5").run("", 100_000)
    assert (r.steps, r.halted, r.head, r.config.ones) == (100_000, False, want.head, want.ones)


@pytest.mark.parametrize("encoding", ["base4", "cantor3"])
@pytest.mark.parametrize("name", ["binary_increment", "sipser_pow2", "anbncn"])
def test_classic_machines_on_all_short_words(name, encoding):
    tm = rs.TuringMachine.builtin(name)
    c = rs.compile(tm, encoding=encoding)
    n = 4 if len(tm.input_alphabet) > 2 else 5
    for k in range(n + 1):
        for w in itertools.product(tm.input_alphabet, repeat=k):
            assert c.verify(list(w), max_steps=2000) is None, w
            want = tm.run(list(w), 2000)
            got = c.run(list(w), max_steps=2000)
            assert (got.steps, got.halted) == (want.steps, want.halted), w
            assert got.output == {True: 1, False: -1, None: 1 if want.halted else 0}[want.accepted]


@settings(max_examples=40, deadline=None)
@given(n_states=st.integers(1, 4), n_symbols=st.integers(2, 3), seed=st.integers(0, 2**32),
       encoding=st.sampled_from(["base4", "cantor3"]), word=st.lists(st.integers(1, 2), max_size=4))
def test_random_machines_agree_with_the_interpreter(n_states, n_symbols, seed, encoding, word):
    tm = rs.TuringMachine.random(n_states, n_symbols, seed)
    w = [str(min(s, n_symbols - 1)) for s in word]
    c = rs.compile(tm, encoding=encoding)
    assert c.verify(w, max_steps=300) is None
    want, got = tm.run(w, 300), c.run(w, max_steps=300)
    assert (got.steps, got.halted) == (want.steps, want.halted)
    if got.halted:
        assert got.config.ones == want.ones and got.head == want.head


def test_sizes_one_tick_per_step_and_encode():
    c = rs.compile(rs.TuringMachine.builtin("bb5"))
    assert c.hidden_size == 40 and c.nonzeros == {"V": 380, "W": 20, "b": 26, "readout": 3}
    assert c.ticks_per_step == 1
    x = c.encode("", ticks=3)
    assert x.shape == (3, 2) and x.tolist() == [[0, 1]] * 3
    m = rs.compile(rs.TuringMachine.builtin("anbncn"))
    assert m.encode("ab", ticks=4).tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]]
    with pytest.raises(rs.InvalidInputError):
        m.encode("abd")


def test_decode_states_of_a_run_and_reject_garbage():
    tm = rs.TuringMachine.builtin("bb3")
    c = rs.compile(tm)
    snaps = list(c.trace(""))
    configs = tm.configs("", max_steps=100)
    assert len(snaps) == 22 and snaps[-1].signal == 1
    for s, want in zip(snaps, configs):
        v = c.decode(s.state)
        assert (v.state, v.head, v.ones) == (want.state, want.head, want.ones)
        assert v == s.config
    bad = list(snaps[5].state)
    bad[0] = bad[0] + 1
    with pytest.raises(rs.InvalidInputError):
        c.decode(bad)
    with pytest.raises(rs.InvalidInputError):
        c.decode([0, 1])


def test_trace_windows_stream():
    c = rs.compile(rs.TuringMachine.builtin("bb4"))
    ticks = [s.tick for s in c.trace("", start=10, stop=40, every=10)]
    assert ticks == [10, 20, 30, 40]
    last = list(c.trace("", every=25))[-1]
    assert (last.tick, last.signal, last.config.ones) == (107, 1, 13)


def test_float_runs_and_the_precision_horizon():
    c = rs.compile(rs.TuringMachine.builtin("bb4"))
    assert c.run("", dtype="f64").config.ones == 13
    assert c.precision_horizon("", dtype="f64") is None
    assert c.precision_horizon("", dtype="exact") is None
    bb5 = rs.compile(rs.TuringMachine.builtin("bb5"))
    h = {dt: bb5.precision_horizon("", dtype=dt, max_steps=5000) for dt in ["f16", "f32", "f64"]}
    assert h["f16"] < h["f32"] < h["f64"], h


@pytest.mark.parametrize("dtype, precision", [("f64", 53), ("f32", 24), ("bf16", 8), ("f16", 11)])
def test_horizon_follows_stack_depth_and_format_bits(dtype, precision):
    # base 4, binary tape: a stack of n 1s is the dyadic number 0.1010...10 (binary) with
    # 2n - 1 significant bits, so a format with p bits holds n = (p + 1) // 2 of them exactly
    # (27 in f64, 12 in f32, 6 in f16, 4 in bf16); with one more the bottom symbol is lost
    c = rs.compile(sweep_machine())
    fits = (precision + 1) // 2
    assert c.verify("1" * (fits + 1), max_steps=1000) is None
    assert c.precision_horizon("1" * fits, dtype=dtype) is None
    assert c.precision_horizon("1" * (fits + 1), dtype=dtype) is not None


def test_compile_options_and_errors():
    tm = rs.TuringMachine.builtin("bb2")
    assert rs.compile(tm, counter=False).hidden_size == 22
    assert rs.compile(tm, penalty="syntactic").verify("") is None
    assert rs.compile(tm, base=6).bases == (6, 6)
    with pytest.raises(rs.UnsupportedError):
        rs.compile(tm, base=3)
    with pytest.raises(rs.InvalidInputError):
        rs.compile(tm, encoding="base7")
    with pytest.raises(rs.InvalidInputError):
        rs.compile(tm, speed="fast")
    with pytest.raises(rs.InvalidInputError):
        rs.compile(tm).run("2")


def test_the_network_is_an_ordinary_network():
    # SimpleRNN.run on the encoded input gives the same states as the machine run
    c = rs.compile(rs.TuringMachine.builtin("bb2"))
    x = c.encode("", ticks=6)
    run = c.network.run(x, dtype="exact")
    assert run.outputs[-1][0] == 1 and all(y[0] == 0 for y in run.outputs[:-1])
    assert c.decode(run.states[-1]).ones == 4
    f = c.network.run(x, dtype="f32")
    assert np.array_equal(f.states.astype(object), np.array(run.states, dtype=object))


def test_custom_formats_run_the_same_networks():
    # FloatFormat(52, 11) is f64 and (23, 8) is f32 bit for bit; more mantissa, later horizon
    c = rs.compile(rs.TuringMachine.builtin("bb5"))
    h = {dt: c.precision_horizon("", dtype=dt, max_steps=5000) for dt in ["f64", "f32", "fp(52,11)", "fp(23,8)"]}
    assert h["fp(52,11)"] == h["f64"] and h["fp(23,8)"] == h["f32"]
    wide = c.precision_horizon("", dtype=rs.FloatFormat(60, 15), max_steps=5000)
    assert wide is not None and wide > h["f64"]
    sweep = rs.compile(sweep_machine())
    assert sweep.precision_horizon("1" * 30, dtype=rs.FloatFormat(60, 15)) is None  # (61 + 1) // 2 = 31
    assert sweep.precision_horizon("1" * 32, dtype=rs.FloatFormat(60, 15)) is not None
