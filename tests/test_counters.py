"""Counter networks (Weiss, Goldberg & Yahav 2018): exhaustive exact membership, float
agreement, the precision sweep against a word-by-word computation, errors."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction

import numpy as np
import pytest

import rnnsim as rs
from rnnsim.errors import InvalidInputError, UnsupportedError

ALPHABETS = {"anbn": "ab", "anbncn": "abc", "dyck1": "()", "anbn_sigma": "ab"}
SUPPORTED = [(l, c) for c in ("lstm", "relu") for l in ALPHABETS] + [("anbn", "qrnn"), ("anbncn", "qrnn")]


def member(lang: str, w: str) -> bool:
    """Plain membership predicates (the definitions in the README)."""
    if lang == "anbn":
        m = re.fullmatch(r"(a*)(b*)", w)
        return bool(m) and len(m[1]) == len(m[2])
    if lang == "anbncn":
        m = re.fullmatch(r"(a*)(b*)(c*)", w)
        return bool(m) and len(m[1]) == len(m[2]) == len(m[3])
    if lang == "dyck1":
        depth = 0
        for ch in w:
            depth += 1 if ch == "(" else -1
            if depth < 0:
                return False
        return depth == 0
    m = re.match(r"(a+)(b*)", w)  # anbn_sigma: a^n b^n w, n >= 1
    return bool(m) and len(m[2]) >= len(m[1])


def all_words(alphabet: str, max_len: int) -> list[str]:
    return ["".join(p) for k in range(max_len + 1) for p in itertools.product(alphabet, repeat=k)]


@pytest.mark.parametrize("lang,cell", SUPPORTED)
def test_exact_membership_on_every_short_word(lang, cell):
    c = rs.counters.build(lang, cell)
    words = all_words(ALPHABETS[lang], 8 if lang == "anbncn" else 12)
    got = c.accepts_batch(words, "exact")
    wrong = [w for w, g in zip(words, got) if g != member(lang, w)]
    assert wrong == []
    assert sum(got) > 0


@pytest.mark.parametrize("lang,cell", SUPPORTED)
@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16", "f16"])
def test_float_formats_agree_with_exact_for_small_words(lang, cell, dtype):
    c = rs.counters.build(lang, cell)
    words = all_words(ALPHABETS[lang], 6)
    assert c.accepts_batch(words, dtype) == c.accepts_batch(words, "exact")


def test_network_is_a_real_network_that_decodes():
    c = rs.counters.build("anbn", "lstm")
    assert isinstance(c.network, rs.LSTM)
    x = c.encode("aaab")
    r = c.network.run(x, dtype="exact", h0=c.h0, c0=c.c0)
    state = list(r.states[-1]) + list(r.cells[-1])
    assert c.decode(state) == {"a-b": 2, "error": 0, "seen_b": 1}
    w, b = c.readout
    y = sum(wi * hi for wi, hi in zip(w, r.states[-1])) + b
    assert (y > Fraction(1, 2)) == c.accepts("aaab") == False  # noqa: E712
    r = rs.counters.build("dyck1", "relu")
    assert isinstance(r.network, rs.SimpleRNN)
    run = r.network.run(r.encode("(())"), dtype="exact")
    assert run.outputs[-1, 0] > Fraction(1, 2) and run.outputs[0, 0] > Fraction(1, 2)
    assert r.decode(list(run.states[2])) == {"depth": 2, "error": 0}
    q = rs.counters.build("anbn", "qrnn")
    assert isinstance(q.network, rs.Stacked) and q.network.layer_kinds == ["qrnn", "simple_rnn"]


def test_trace_shows_counters_per_tick():
    c = rs.counters.build("anbncn", "relu")
    rows = c.trace("aabbcc")
    assert [r["counters"]["a-b"] for r in rows] == [0, 1, 2, 1, 0, 0, 0]
    assert [r["counters"]["b-c"] for r in rows] == [0, 0, 0, 1, 2, 1, 0]
    assert [r["read"] for r in rows] == [None, "a", "a", "b", "b", "c", "c"]
    assert rows[0]["accepting"] and rows[-1]["accepting"] and not rows[3]["accepting"]


def test_threads_do_not_change_answers():
    c = rs.counters.build("dyck1", "lstm")
    words = all_words("()", 9)
    assert c.accepts_batch(words, "f16", threads=1) == c.accepts_batch(words, "f16", threads=2)


def slow_sweep(c, lang: str, dtype: str, max_n: int):
    """The sweep's definition, word by word (each word run on its own)."""
    a, b = c.alphabet[0], c.alphabet[1]
    for n in range(max_n + 1):
        if lang in ("anbn", "dyck1"):
            words = [a * n + b * n, a * n + b * (n + 1), a * (n + 1) + b * n]
        elif lang == "anbncn":
            cc = c.alphabet[2]
            words = [a * n + b * n + cc * n, a * n + b * n + cc * (n + 1), a * n + b * (n + 1) + cc * n,
                     a * (n + 1) + b * n + cc * n]
        else:
            words = ["", "a"] if n == 0 else [a * n + b * n, a * n + b * n + a, a * (n + 1) + b * n,
                                              a * (n + 1) + b * n + a]
        for w in words:
            got = c.accepts(w, dtype)
            if got != member(lang, w):
                return n, w, got
    return None


@pytest.mark.parametrize("lang,cell,sat", [("anbn", "lstm", None), ("dyck1", "relu", None), ("anbn_sigma", "lstm", None),
                                           ("anbn_sigma", "relu", None), ("anbncn", "lstm", None), ("anbn", "qrnn", None),
                                           ("anbn", "lstm", 3), ("dyck1", "lstm", 4)])
def test_precision_sweep_matches_word_by_word(lang, cell, sat):
    c = rs.counters.build(lang, cell, saturation=sat)
    dtypes = ["bf16", "f16", "f32", "f64"] + ([] if sat else ["exact"])
    max_n = 140 if lang != "anbncn" else 130
    fast = rs.precision_sweep(c, dtypes, max_n)
    assert [r.dtype for r in fast] == dtypes
    for r in fast:
        slow = slow_sweep(c, lang, r.dtype, max_n)
        if slow is None:
            assert r.n is None
        else:
            n, w, got = slow
            assert r.n == n and r.accepted == got and r.expected == (not got)
            spelled = "".join(ch * int(k) for ch, k in re.findall(r"(.)\^(\d+)", r.word))
            assert spelled == w
    assert fast[-1].n is None or sat is not None  # exact never fails


def test_sweep_finds_capacity_limits():
    c = rs.counters.build("anbn", "lstm")
    res = {r.dtype: r.n for r in rs.precision_sweep(c, ["exact", "f16", "bf16"], 1100)}
    assert res == {"exact": None, "f16": 1024, "bf16": 128}  # c = K ± 1/2 needs K + 1 fraction bit
    r = rs.counters.build("anbn", "relu")
    assert [x.n for x in rs.precision_sweep(r, ["bf16"], 300)] == [256]


def test_unsaturated_lstm_leaks_and_saturates_back():
    c = rs.counters.build("anbn", "lstm", saturation=4)
    assert c.network.options(0)["gate"] == "sigmoid"
    leak = rs.precision_sweep(c, ["f64"], 200)[0]
    assert leak.n is not None and leak.n < 200  # f = σ(8) < 1: the count leaks
    sat = rs.saturate(c.network)
    words = all_words("ab", 8)
    exact = rs.counters.build("anbn", "lstm")
    for w in words[:60]:
        r1 = sat.run(exact.encode(w), dtype="exact", h0=c.h0, c0=c.c0).states[-1]
        r2 = exact.network.run(exact.encode(w), dtype="exact", h0=exact.h0, c0=exact.c0).states[-1]
        assert list(r1) == list(r2)


@pytest.mark.parametrize("lang", list(ALPHABETS))
@pytest.mark.parametrize("cell", ["gru", "tanh"])
def test_finite_state_cells_are_unsupported(lang, cell):
    with pytest.raises(UnsupportedError, match="finite"):
        rs.counters.build(lang, cell)


@pytest.mark.parametrize("lang", ["dyck1", "anbn_sigma"])
def test_qrnn_cannot_make_count_dependent_updates(lang):
    with pytest.raises(UnsupportedError, match="state"):
        rs.counters.build(lang, "qrnn")


def test_bad_names_list_the_options():
    with pytest.raises(InvalidInputError, match="anbn, anbncn, dyck1, anbn_sigma"):
        rs.counters.build("anbm", "lstm")
    with pytest.raises(InvalidInputError, match="lstm, relu, qrnn, gru, tanh"):
        rs.counters.build("anbn", "transformer")
    with pytest.raises(InvalidInputError, match="lstm counter only"):
        rs.counters.build("anbn", "relu", saturation=10)
    with pytest.raises(InvalidInputError, match="positive"):
        rs.counters.build("anbn", "lstm", saturation=-1)
    c = rs.counters.build("anbn", "lstm")
    with pytest.raises(InvalidInputError, match="alphabet"):
        c.accepts("abc")
    with pytest.raises(InvalidInputError):
        rs.precision_sweep(c, ["f8"], 10)
    with pytest.raises(InvalidInputError):
        rs.precision_sweep(c, ["f16"], -1)


def test_custom_formats_in_the_sweep_and_runs():
    c = rs.counters.build("anbn", "lstm")
    res = rs.precision_sweep(c, [rs.FloatFormat(10, 5), "fp(7,8)", "f16", "bf16", "fp(4,5)"], 1100)
    assert [r.dtype for r in res][:2] == ["fp(10,5)", "fp(7,8)"]
    assert (res[0].n, res[0].word) == (res[2].n, res[2].word) == (1024, "a^1025 b^1024")  # fp(10,5) is f16
    assert res[1].n == res[3].n == 128                                                     # fp(7,8) is bf16
    assert res[4].n == 16                                                                  # 5 significand bits
    words = all_words("ab", 6)
    assert c.accepts_batch(words, rs.FloatFormat(10, 5)) == c.accepts_batch(words, "exact")
    assert rs.precision_sweep(c, ["fp(60,11)"], 300)[0].n is None
