"""Exact check of construction.compile_tm against the tm.py interpreter.

For every tick t >= |w| (tick |w| is the last loading tick and must decode to
the initial configuration; tick |w|+j must decode to the configuration after
TM step j) we compare decode(h_t) with the interpreter, check the readout
(0 while running, the verdict once stopped) and check unit ranges.  A few
extra ticks after halting check that everything stays frozen.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction as Fr

import tm as T
from construction import compile_tm, nnz

BIGBITS = 64


class Sim:
    """Sparse exact simulator: per tick, cost ~ sum over nonzero units of their
    out-degree (this mirrors the engine that skips exact zeros)."""

    def __init__(self, net):
        self.net = net
        n = len(net["V"])
        self.cols = [[] for _ in range(n)]
        for i, row in enumerate(net["V"]):
            for j, v in enumerate(row):
                if v:
                    self.cols[j].append((i, v))
        self.wcols = [[(i, net["W"][i][c]) for i in range(n) if net["W"][i][c]]
                      for c in range(len(net["input_symbols"]))]
        self.b = list(net["b"])
        self.h = list(net["h0"])
        self.ro = [(i, v) for i, v in enumerate(net["readout_w"]) if v]
        self.kind = net["unit_kind"]
        big = set(net["big_units"])
        self.isbig = [i in big for i in range(n)]
        # bound on what big (stack-carrying, values in [0,1]) sources can add
        self.bigbound = [sum(v for j, v in enumerate(row) if v > 0 and j in big) for row in net["V"]]

    def tick(self, sym):
        net = self.net
        pre = list(self.b)
        pairs = bigpairs = 0
        for j, hj in enumerate(self.h):
            if hj:
                col = self.cols[j]
                pairs += len(col)
                if hj.denominator != 1:
                    bigpairs += len(col)
                for i, v in col:
                    pre[i] += v * hj
        for i, v in self.wcols[net["input_symbols"].index(sym)]:
            pre[i] += v
        # "lazy" engine: small part first; a unit whose small part + bound of
        # its big inputs is <= 0 is exactly 0 and needs no big-number work.
        small = list(self.b)
        for j, hj in enumerate(self.h):
            if hj and not self.isbig[j]:
                for i, v in self.cols[j]:
                    small[i] += v * hj
        for i, v in self.wcols[net["input_symbols"].index(sym)]:
            small[i] += v
        bound = [Fr(0)] * len(small)
        for j, hj in enumerate(self.h):
            if hj and self.isbig[j]:
                for i, v in self.cols[j]:
                    if v > 0:
                        bound[i] += v          # big values are in (0, 1]
        live = [small[i] + bound[i] > 0 for i in range(len(small))]
        lazypairs = 0
        for j, hj in enumerate(self.h):
            if hj and self.isbig[j]:
                lazypairs += sum(1 for i, v in self.cols[j] if live[i])
        for i in range(len(pre)):
            if not live[i] and pre[i] > 0:
                raise AssertionError("lazy bound wrong")
        h = []
        for i, p in enumerate(pre):
            k = self.kind[i]
            if k in ("copy", "loadbig") and p > 1:
                raise AssertionError(f"value unit {net['unit_names'][i]} clipped from above: {p}")
            if k == "gate" and not (p <= 0 or p == 1):
                raise AssertionError(f"gate/load unit {net['unit_names'][i]} pre {p}")
            h.append(Fr(0) if p <= 0 else (Fr(1) if p >= 1 else p))
        for i, v in enumerate(h):
            if self.kind[i] in ("gate", "step", "load") and v not in (0, 1):
                raise AssertionError(f"unit {net['unit_names'][i]} = {v} not 0/1")
        self.h = h
        nbig = sum(1 for v in h if v.denominator != 1)
        nnzs = sum(1 for v in h if v)
        return dict(pairs=pairs, bigpairs=bigpairs, nbig=nbig, nnz=nnzs, lazypairs=lazypairs)

    def readout(self):
        return sum((v * self.h[i] for i, v in self.ro), Fr(0)) + self.net["readout_c"]


def trim(cfg, blank):
    q, head, tape = cfg
    return (q, head, {c: s for c, s in tape.items() if s != blank})


def check_machine(tm, word, encoding, tape, max_steps, extra=3, stats=None, quiet=True,
                  counter=True, penalty="tight"):
    net = compile_tm(tm, encoding, tape, counter=counter, penalty=penalty)
    configs, verdict = T.run(tm, word, tape, max_steps=max_steps)
    steps = len(configs) - 1
    sim = Sim(net)
    n = len(word)
    assert net["load_ticks"](n) == n
    # decode(h0): initial config of the empty word
    total = n + steps + (extra if verdict else 0)
    if verdict and steps == 0:
        total = n + 1 + extra
    tick_stats = []
    for t in range(1, total + 1):
        sym = word[t - 1] if t <= n else "EOS"
        st = sim.tick(sym)
        if t > n:
            tick_stats.append(st)
        y = sim.readout()
        if t < n:
            if y != 0:
                return f"readout {y} during loading at tick {t}"
            got = net["decode"](sim.h)
            exp = (tm.start, 0, {c: s for c, s in enumerate(word[:t]) if s != tm.blank})
            if got != exp:
                return f"loading tick {t}: decode {got} != {exp}"
            continue
        j = t - n                           # TM steps performed by now
        jj = min(j, steps)
        exp = trim(configs[jj], tm.blank)
        if not net["counter"] and tape == "two-way":     # head-relative tape
            q_, hd_, tp_ = exp
            exp = (q_, 0, {c - hd_: s_ for c, s_ in tp_.items()})
        got = net["decode"](sim.h)
        if got != exp:
            return f"tick {t} (step {j}): decode {got} != interpreter {exp}"
        stopped = verdict != 0 and j >= steps and (j >= 1)
        exp_y = verdict if stopped else 0
        if y != exp_y:
            return f"tick {t} (step {j}): readout {y} expected {exp_y}"
    if stats is not None:
        stats.append(dict(machine=tm.name, encoding=encoding, tape=tape, steps=steps,
                          units=net["n_units"], nnz=nnz(net), ticks=tick_stats))
    return None


def summarize(stats_entry):
    ts = stats_entry["ticks"]
    if not ts:
        return ""
    mb = max(t["nbig"] for t in ts)
    mp = max(t["pairs"] for t in ts)
    mbp = max(t["bigpairs"] for t in ts)
    mn = max(t["nnz"] for t in ts)
    ml = max(t["lazypairs"] for t in ts)
    return f"max nonzero units/tick {mn}, max fractional(=stack-carrying) units/tick {mb}, max (weight x nonzero) pairs/tick {mp}, of them with fractional source {mbp} (lazy engine: {ml})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--random", type=int, default=200)
    ap.add_argument("--bb5", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    fails = 0
    ok = 0
    stats = []

    def report(name, err):
        nonlocal fails, ok
        if err:
            fails += 1
            print("FAIL", name, err)
        else:
            ok += 1

    t0 = time.time()
    for enc in ("base4", "cantor3"):
        for key in ("BB2", "BB3", "BB4", "BB2x3"):
            tm_ = T.parse_bb(T.BB[key], key)
            for tape in ("two-way", "one-way"):
                err = check_machine(tm_, [], enc, tape, max_steps=10**6, stats=stats)
                report(f"{key} {enc} {tape}", err)
                if tape == "two-way":
                    print(f"{key:6s} {enc:8s} {tape:8s} steps={stats[-1]['steps']:5d} "
                          f"{'ok' if not err else 'FAIL'}  {summarize(stats[-1])}")
        for key in ("BB4", "BB2x3"):
            tm_ = T.parse_bb(T.BB[key], key)
            err = check_machine(tm_, [], enc, "two-way", max_steps=10**6, counter=False)
            report(f"{key} {enc} two-way no-counter", err)
            print(f"{key:6s} {enc:8s} two-way  without head counter (head-relative decode) {'ok' if not err else 'FAIL ' + err}")
        tm5 = T.parse_bb(T.BB["BB5"], "BB5")
        for tape in ("two-way", "one-way"):
            err = check_machine(tm5, [], enc, tape, max_steps=args.bb5, stats=stats)
            report(f"BB5 {enc} {tape}", err)
            print(f"BB5    {enc:8s} {tape:8s} first {args.bb5} steps {'ok' if not err else 'FAIL ' + err}  {summarize(stats[-1])}")
        # penalty='syntactic' variant (lazy-engine friendly constants)
        for key in ("BB2", "BB3", "BB4", "BB2x3"):
            tm_ = T.parse_bb(T.BB[key], key)
            for tape in ("two-way", "one-way"):
                err = check_machine(tm_, [], enc, tape, max_steps=10**6, penalty="syntactic", stats=stats)
                report(f"{key} {enc} {tape} syntactic", err)
        err = check_machine(tm5, [], enc, "two-way", max_steps=args.bb5, penalty="syntactic", stats=stats)
        report(f"BB5 {enc} syntactic", err)
        print(f"BB5    {enc:8s} two-way  penalty=syntactic {'ok' if not err else 'FAIL ' + err}  {summarize(stats[-1])}")
        # a^n b^n decider (one-way, and also two-way: it never goes left of 0)
        anbn = T.anbn_tm()
        words = [list("a" * i + "b" * j) for i in range(4) for j in range(4)] + \
                [list("abab"), list("ba"), list("aabbb"), list("b"), list("aab"), list("abba")]
        res = {}
        for tape in ("one-way", "two-way"):
            for w in words:
                err = check_machine(anbn, w, enc, tape, max_steps=10**5)
                report(f"anbn {enc} {tape} {''.join(w)}", err)
                cfgs, v = T.run(anbn, w, tape)
                res["".join(w)] = v
        acc = sorted(w for w, v in res.items() if v == 1)
        print(f"a^n b^n {enc}: {len(words)} words x 2 tapes checked; accepted: {acc}")
        # random machines
        rng = random.Random(args.seed)
        nrand = 0
        vcount = {}
        for r in range(args.random):
            ns = rng.randint(2, 4)
            nsym = rng.randint(2, 3)
            tm_ = T.random_tm(rng, ns, nsym, with_accept_reject=rng.random() < 0.7)
            w = T.random_word(rng, tm_, 5)
            ms = rng.choice([30, 60, 120])
            for tape in ("two-way", "one-way"):
                err = check_machine(tm_, w, enc, tape, max_steps=ms,
                                    penalty="syntactic" if r % 4 == 3 else "tight")
                report(f"random#{r} {enc} {tape} {tm_.delta} w={w}", err)
                _, v = T.run(tm_, w, tape, max_steps=ms)
                vcount[v] = vcount.get(v, 0) + 1
            nrand += 1
        print(f"random {enc}: {nrand} machines x 2 tapes done; outcomes (verdict: count, 0 = still running at the step cap) {vcount}")
    print(f"{ok} passed, {fails} failed   ({time.time() - t0:.1f}s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
