"""DFAs: their interpreter, built-in languages, compilation (Theorem 4.3 via Lemma 4.4),
exhaustive verification, and extraction back out (Theorem 4.5), checked against the DFA's
own semantics and against plain Python predicates of the languages."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rnnsim as rs

# Tomita (1982) languages as plain predicates: the oracle for the built-in DFAs
def _runs(w):
    return [(m.group()[0], len(m.group())) for m in re.finditer(r"0+|1+", w)]


def _tomita3(w):
    seen_odd_ones = False
    for sym, n in _runs(w):
        if sym == "0" and n % 2 == 1 and seen_odd_ones:
            return False
        if sym == "1" and n % 2 == 1:
            seen_odd_ones = True
    return True


TOMITA = {
    1: lambda w: "0" not in w,
    2: lambda w: re.fullmatch(r"(10)*", w) is not None,
    3: _tomita3,
    4: lambda w: "000" not in w,
    5: lambda w: w.count("0") % 2 == 0 and w.count("1") % 2 == 0,
    6: lambda w: (w.count("0") - w.count("1")) % 3 == 0,
    7: lambda w: re.fullmatch(r"0*1*0*1*", w) is not None,
}


def words(max_len, alphabet="01"):
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield "".join(t)


@pytest.mark.parametrize("n", range(1, 8))
def test_tomita_dfas_recognise_their_languages(n):
    dfa = rs.tomita(n)
    assert all(dfa.accepts(w) == TOMITA[n](w) for w in words(10))
    assert dfa.minimize() == dfa


def test_parity_is_odd_number_of_ones():
    dfa = rs.parity()
    assert all(dfa.accepts(w) == (w.count("1") % 2 == 1) for w in words(10))


def test_construction_forms_and_interpreter():
    kw = dict(states=["even", "odd"], alphabet=["a", "b"], start="even", accept=["odd"])
    a = rs.DFA(transitions={"even": {"a": "odd", "b": "even"}, "odd": {"a": "even", "b": "odd"}}, **kw)
    b = rs.DFA(transitions={("even", "a"): "odd", ("even", "b"): "even", ("odd", "a"): "even", ("odd", "b"): "odd"}, **kw)
    c = rs.DFA(transitions=[("even", "a", "odd"), ("even", "b", "even"), ("odd", "a", "even"), ("odd", "b", "odd")], **kw)
    assert a == b == c
    assert a.run("aab") == ["even", "odd", "even", "even"]
    assert a.accepts("ab") and not a.accepts("")
    assert a.transitions["odd"]["a"] == "even"
    with pytest.raises(rs.InvalidInputError, match="'c'|\"c\""):
        a.accepts("abc")


def test_validation_reports_every_problem():
    with pytest.raises(rs.InvalidMachineError) as e:
        rs.DFA(states=["p", "q", "q"], alphabet=["0", "1"], transitions=[("p", "0", "r"), ("p", "2", "q")],
               start="s", accept=["z"])
    assert len(e.value.problems) == 5, e.value.problems
    assert isinstance(e.value, ValueError)


def test_partial_dfa_rejects_missing_transitions_and_completes():
    d = rs.DFA(states=["a", "b"], alphabet=["0", "1"], transitions={"a": {"1": "b"}}, start="a", accept=["b"])
    assert not d.is_complete() and d.accepts("1") and not d.accepts("10") and not d.accepts("0")
    assert d.run("01") == ["a", None, None]
    full = d.complete()
    assert full.is_complete() and len(full.states) == 3 and full.equivalent(d) is None


def test_equivalence_gives_a_shortest_counterexample():
    assert rs.tomita(1).equivalent(rs.tomita(2)) in ("0", "1")
    assert rs.tomita(4).equivalent(rs.tomita(7)) == "000"  # every shorter word is in both
    assert rs.tomita(5).equivalent(rs.tomita(5).minimize()) is None


def test_json_round_trip_and_corruption(tmp_path):
    d = rs.tomita(3)
    path = tmp_path / "t3.json"
    d.save(path)
    assert rs.DFA.load(path) == d
    with pytest.raises(rs.InvalidInputError):
        rs.DFA.from_json('{"format": "rnnsim.dfa", "version": 7}')
    with pytest.raises(rs.InvalidInputError):
        rs.DFA.from_json("{oops")


def test_automata_lib_round_trip():
    automata = pytest.importorskip("automata.fa.dfa")
    al = automata.DFA(states={"q0", "q1", "q2"}, input_symbols={"0", "1"},
                      transitions={"q0": {"0": "q0", "1": "q1"}, "q1": {"0": "q2", "1": "q0"}, "q2": {"0": "q1", "1": "q2"}},
                      initial_state="q0", final_states={"q0"})  # binary numbers divisible by 3
    d = rs.DFA.from_automata_lib(al)
    for w in words(9):
        assert d.accepts(w) == al.accepts_input(w) == (int(w or "0", 2) % 3 == 0)
    back = d.to_automata_lib()
    assert back == al


# ---- compilation -----------------------------------------------------------------------
BUILTINS = [rs.tomita(n) for n in range(1, 8)] + [rs.parity()]


@pytest.mark.parametrize("dfa", BUILTINS, ids=[f"tomita{n}" for n in range(1, 8)] + ["parity"])
def test_compiled_network_simulates_the_dfa_step_by_step(dfa):
    c = rs.compile(dfa)
    net = c.network
    assert net.hidden_size == len(c.dfa.states) * len(c.dfa.alphabet) + 1
    assert net.activation == "relu"
    assert all(v.denominator == 1 for v in net.V.reshape(-1))  # integer weights
    for w in words(7):
        run = net.run(c.encode(w) if w else np.zeros((0, 2)), dtype="exact")
        path = c.dfa.run(w)
        assert [c.decode(h) for h in run.states] == path
        assert [y[0] for y in run.outputs] == [1 if q in c.dfa.accept else 0 for q in path]
        assert c.accepts(w) == dfa.accepts(w)


@pytest.mark.parametrize("dtype", ["exact", "f64", "f32", "bf16", "f16"])
def test_verify_every_word_up_to_12_in_every_format(dtype):
    for dfa in BUILTINS:
        assert rs.compile(dfa).verify(12, dtype=dtype) is None


def test_f16_batches_give_the_dfa_answers():
    c = rs.compile(rs.tomita(3))
    ws = list(words(8))
    assert c.accepts_batch(ws, dtype="f16", threads=2) == [rs.tomita(3).accepts(w) for w in ws]


def test_a_broken_readout_is_caught_with_a_real_counterexample():
    """Flip one readout weight: extraction gives a different language, and the shortest
    counterexample it yields really is a word where the network and the DFA disagree."""
    dfa = rs.tomita(4)
    c = rs.compile(dfa)
    w = c.network.readout.w.copy()
    w[0, 1] = 1 - w[0, 1]
    broken = rs.SimpleRNN(V=c.network.V, W=c.network.W, b=c.network.b, h0=c.network.h0, activation="relu",
                          readout=rs.Linear(w, c.network.readout.b))
    extracted = rs.extract(broken, alphabet=c.alphabet_vectors())
    word = extracted.equivalent(dfa)
    assert word is not None
    y = broken.run(c.encode(word) if word else np.zeros((0, 2)), dtype="exact").outputs[-1, 0]
    assert (y > Fraction(1, 2)) != dfa.accepts(word)
    assert c.verify(10) is None  # the intact network still agrees everywhere


def test_unknown_symbols_and_bad_hidden_states_are_errors():
    c = rs.compile(rs.parity())
    with pytest.raises(rs.InvalidInputError):
        c.accepts("012")
    with pytest.raises(rs.InvalidInputError, match="one-hot"):
        c.decode([0] * c.hidden_size)
    with pytest.raises(rs.InvalidInputError):
        c.decode([0, 1])


@settings(max_examples=200)
@given(st.integers(1, 25), st.integers(1, 3), st.integers(0, 2**32))
def test_random_dfas_compile_verify_and_extract_back(n, k, seed):
    dfa = rs.DFA.random(n, k, seed)
    c = rs.compile(dfa)
    assert c.verify(6 if k < 3 else 4, dtype="exact") is None
    back = rs.extract(c)
    assert back.equivalent(dfa) is None
    assert len(back.states) == len(dfa.minimize().states)


@pytest.mark.parametrize("dfa", BUILTINS, ids=[f"tomita{n}" for n in range(1, 8)] + ["parity"])
def test_extract_of_compile_is_the_minimal_dfa(dfa):
    back = rs.extract(rs.compile(dfa))
    assert back.equivalent(dfa) is None
    assert len(back.states) == len(dfa.minimize().states)


def test_extract_from_a_hand_written_network():
    # parity with two step units: or' = [odd + x > 0], and' = [odd + x > 1], odd = or − and
    net = rs.SimpleRNN(V=[[1, -1], [1, -1]], W=[[1], [1]], b=[0, -1], activation="step",
                       readout=rs.Linear([[1, -1]], [0]))
    d = rs.extract(net, alphabet={"0": [0], "1": [1]})
    assert d.equivalent(rs.parity()) is None and len(d.states) == 2
    for w in words(8):
        y = net.run([[int(ch)] for ch in w] if w else np.zeros((0, 1))).outputs[-1, 0]
        assert d.accepts(w) == (y > 0.5)


def test_extract_limits_and_unsupported():
    counter = rs.SimpleRNN(V=[[1]], W=[[1]], b=[0], activation="relu", readout=rs.Linear([[1]], [0]))
    with pytest.raises(rs.LimitExceededError, match="100"):
        rs.extract(counter, alphabet={"a": [1]}, max_states=100)
    tanh = rs.SimpleRNN(V=[[1]], W=[[1]], b=[0], activation="tanh", readout=rs.Linear([[1]], [0]))
    with pytest.raises(rs.UnsupportedError):
        rs.extract(tanh, alphabet={"a": [1]})
    with pytest.raises(rs.InvalidInputError):
        rs.extract(counter)


def test_large_dfas_compile_sparsely_and_run_exactly():
    dfa = rs.DFA.random(10_000, 2, 1)
    c = rs.compile(dfa)
    assert c.hidden_size == 20_001 and c.network.nonzero_weights == 80_002
    ws = ["", "0", "1", "0110", "111000111", "0101010101"]
    assert c.accepts_batch(ws, dtype="exact", threads=2) == [dfa.accepts(w) for w in ws]
    with pytest.raises(rs.LimitExceededError, match="exact"):
        c.accepts("01", dtype="f32")  # the dense float engine refuses 4·10^8 weights


@settings(max_examples=40)
@given(st.data())
def test_lemma_4_4_on_random_two_layer_steps(data):
    """Any h_t = U·ReLU(V h + W x + b) with affine output becomes one simple RNN with the
    same outputs at every t, including t = 0 (checked exactly against the recurrence)."""
    from fractions import Fraction as F

    val = st.builds(F, st.integers(-4, 4), st.sampled_from([1, 2, 3]))
    d, k, n, o = (data.draw(st.integers(1, 3)) for _ in range(4))
    mat = lambda r, c: [[data.draw(val) for _ in range(c)] for _ in range(r)]  # noqa: E731
    s, U, V, W, b, ow, ob = [data.draw(val) for _ in range(d)], mat(d, k), mat(k, d), mat(k, n), \
        [data.draw(val) for _ in range(k)], mat(o, d), [data.draw(val) for _ in range(o)]
    xs = mat(data.draw(st.integers(0, 6)), n)
    net = rs.two_layer_to_rnn(s, U, V, W, b, ow, ob)
    assert net.hidden_size == k + 1
    got = net.run(xs if xs else np.zeros((0, n)), dtype="exact").outputs.tolist()
    h, want = list(s), []
    for t in range(len(xs) + 1):
        if t:
            g = [max(F(0), sum(V[i][j] * h[j] for j in range(d)) + sum(W[i][q] * xs[t - 1][q] for q in range(n)) + b[i])
                 for i in range(k)]
            h = [sum(U[i][j] * g[j] for j in range(k)) for i in range(d)]
        want.append([sum(ow[p][i] * h[i] for i in range(d)) + ob[p] for p in range(o)])
    assert got == want
