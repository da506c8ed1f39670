"""Compile a Turing machine into a simple slu-RNN that performs ONE tick per
TM step (after |w| loading ticks).

    h_t = slu(V h_{t-1} + W x_t + b),   slu(z) = min(1, max(0, z))
    y_t = readout_w . h_t + readout_c

See CONSTRUCTION.md for the full description.  All weights are Fractions.

Design in one paragraph: the hidden vector is the *first layer* of a two-layer
step function (Lemma 4.4 cut).  The *second layer* U is a set of linear
"config forms" (gate one-hot Gh[key], stack values L, R, head counters P, N)
that are evaluated on h_{t-1} inside every pre-activation, i.e. U is folded
into V.  Every hidden unit is gated by an exact 0/1 gate form, so at each tick
only the units of the transition actually taken are non-zero, and only
2 units (base4) / 2|Gamma| units (cantor3) carry a big stack value (+1 for the
two-way head counter).
"""
from __future__ import annotations

from fractions import Fraction as Fr
import math

ONE = "1"          # key of the constant term in a linear form
EOS = "EOS"


# ------------------------------------------------------------------ forms
def lf(*pairs):
    """Linear form from (coef, key) pairs; keys are unit names, ('x', sym) or ONE."""
    d = {}
    for c, key in pairs:
        c = Fr(c)
        if c:
            d[key] = d.get(key, Fr(0)) + c
            if d[key] == 0:
                del d[key]
    return d


def add(*terms):
    """add((c1, form1), (c2, form2), ...) -> sum c_i * form_i."""
    d = {}
    for c, f in terms:
        c = Fr(c)
        if not c:
            continue
        for k_, v in f.items():
            d[k_] = d.get(k_, Fr(0)) + c * v
            if d[k_] == 0:
                del d[k_]
    return d


def const(c):
    return lf((c, ONE))


def syntactic_bound(form):
    """Upper bound of a form over h in [0,1]^n (x not allowed)."""
    assert not any(isinstance(k_, tuple) for k_ in form), "payload must not read x"
    return sum((c for k_, c in form.items() if k_ != ONE and c > 0), Fr(0)) + form.get(ONE, Fr(0))


PENALTY = {"mode": "tight"}


def gated(payload, gate, K=None):
    """pre-activation  payload - K*(1 - gate).

    K defaults to the ceiling of the syntactic bound of the payload (sum of its
    positive coefficients on units, all of which lie in [0,1], plus its
    constant).  Then gate <= 0 gives pre <= 0 *syntactically*, so an engine can
    prove a unit is 0 from its small inputs alone (see CONSTRUCTION.md)."""
    if PENALTY["mode"] == "syntactic" or K is None:
        Ks = Fr(math.ceil(max(Fr(0), syntactic_bound(payload))))
        if K is None or K < Ks:
            K = Ks
    return add((1, payload), (-K, const(1)), (K, gate))


# ---------------------------------------------------------------- compiler
def compile_tm(tm, encoding="base4", tape="two-way", base=None, counter=True,
               penalty="tight"):
    """penalty: 'tight' = smallest provable gate constants K (float friendly);
    'syntactic' = K >= syntactic bound of the payload, so an engine can skip a
    unit from its small inputs alone (lazy big-number evaluation)."""
    assert penalty in ("tight", "syntactic")
    PENALTY["mode"] = penalty
    assert encoding in ("base4", "cantor3")
    assert tape in ("two-way", "one-way")
    oneway = tape == "one-way"
    syms = [tm.blank] + [s for s in tm.symbols if s != tm.blank]
    k = len(syms)
    si = {s: i for i, s in enumerate(syms)}
    E = [0, 1] if oneway else [None]
    e0 = 1 if oneway else None
    halting = tm.halting()
    inputs = list(tm.input_symbols)
    assert all(s in si and s != tm.blank for s in inputs)
    use_counter = (not oneway) and counter

    # ---- stack encodings
    if encoding == "base4":
        bR = Fr(base or 2 * k)
        bL = Fr(base or (2 * k + 2 if oneway else 2 * k))
        assert bR >= 2 * k and bL >= (2 * k + 2 if oneway else 2 * k), "base too small"
        compsL = ["L"]
        compsR = ["R"]
    else:
        bR = bL = Fr(3)
        compsL = [f"L{j}" for j in range(k)] + (["L$"] if oneway else [])
        compsR = [f"R{j}" for j in range(k)]
    DOLLAR = 2 * k        # base4: digit of the bottom marker '$' (one-way L only)

    # ---- actions (one hidden gate unit each)
    actions = []

    def new_action(kind, keys, q2, w, target=None, tag=""):
        a = dict(kind=kind, keys=keys, q2=q2, w=w, target=target, tag=tag)
        a["name"] = f"g[{kind}:{'|'.join(_kname(x) for x in keys)}]"
        actions.append(a)
        return a

    verdict = {}
    for q in tm.states:
        for s in syms:
            terminal = q in halting or (q, s) not in tm.delta
            for e in E:
                if q in halting:
                    verdict[(q, s, e)] = tm.verdict_of_state(q)
                elif (q, s) not in tm.delta:
                    verdict[(q, s, e)] = -1
                else:
                    verdict[(q, s, e)] = 0
            if terminal:
                for e in E:
                    new_action("N", [(q, s, e)], q, s, (q, s, e),
                               tag="halt" if q in halting else "missing")
                continue
            q2, s2, mv = tm.delta[(q, s)]
            if mv == "R":
                new_action("R", [(q, s, e) for e in E], q2, s2)
            elif mv == "N":
                for e in E:
                    new_action("N", [(q, s, e)], q2, s2, (q2, s2, e))
            else:
                for e in E:
                    if e == 1:      # left move at the left end: write and stay
                        new_action("N", [(q, s, e)], q2, s2, (q2, s2, 1), tag="bounce")
                    else:
                        new_action("L", [(q, s, e)], q2, s2)
    keys = [(q, s, e) for q in tm.states for s in syms for e in E]
    actR = [a for a in actions if a["kind"] == "R"]
    actL = [a for a in actions if a["kind"] == "L"]
    actN = [a for a in actions if a["kind"] == "N"]
    groups = {}
    for a in actR + actL:
        groups.setdefault((a["q2"], a["kind"]), []).append(a)

    # ---- declare units (name -> kind); pre-activations are filled later
    units, ukind, h0 = [], {}, {}

    def unit(name, kind, init=0):
        assert name not in ukind, name
        units.append(name)
        ukind[name] = kind
        if init:
            h0[name] = Fr(init)
        return name

    for a in actions:
        unit(a["name"], "gate")
    S, D = {}, {}          # step units per group
    for (q2, dr), acts in groups.items():
        gname = f"{q2},{dr}"
        if encoding == "base4":
            S[(q2, dr)] = {j: unit(f"S[{gname}][>={syms[j]}]", "step") for j in range(1, k)}
        else:
            S[(q2, dr)] = {j: unit(f"T[{gname}][{syms[j]}]", "step") for j in range(k)}
        if oneway and dr == "L":
            D[(q2, dr)] = {c: unit(f"D[{gname}][{syms[c]}$]", "step") for c in range(k)}
    classes = {"push": None, "pop": None, "keep": None}
    clsL = {"push": actR, "pop": actL, "keep": actN}
    clsR = {"push": actL, "pop": actR, "keep": actN}
    cL = {c: {comp: unit(f"c{comp}.{c}", "copy") for comp in compsL} for c in clsL if clsL[c]}
    cR = {c: {comp: unit(f"c{comp}.{c}", "copy") for comp in compsR} for c in clsR if clsR[c]}
    ctr = {}
    if use_counter:
        if actR:
            ctr.update(cPR=unit("cP.R", "copy"), cNR=unit("cN.R", "dbl"), eNR=unit("eN.R", "step"))
        if actL:
            ctr.update(cNL=unit("cN.L", "copy"), cPL=unit("cP.L", "dbl"), ePL=unit("eP.L", "step"))
        if actN:
            ctr.update(cPN=unit("cP.N", "copy"), cNN=unit("cN.N", "copy"))
    fresh = unit("fresh", "load", 1)
    LOAD = unit("LOAD", "load", 1)
    fu = {s: unit(f"f[{s}]", "load") for s in inputs}
    Psc = unit("Pscale", "loadbig")
    au = {s: unit(f"a[{s}]", "loadbig") for s in inputs}
    if encoding == "base4":
        acc = {"R": unit("acc", "loadbig")}
    else:
        acc = {f"R{si[s]}": unit(f"acc[{s}]", "loadbig") for s in inputs}

    # ---- config forms (the folded second layer U), over current-tick units
    Gh = {key: {} for key in keys}

    def addG(key, form):
        Gh[key] = add((1, Gh[key]), (1, form))

    for (q2, dr), acts in groups.items():
        gsum = lf(*[(1, a["name"]) for a in acts])
        Sg = S[(q2, dr)]
        if encoding == "base4":
            def Sj(j):
                if j == 0:
                    return gsum
                if j >= k:
                    return {}
                return lf((1, Sg[j]))
            top_is = {c: add((1, Sj(c)), (-1, Sj(c + 1))) for c in range(k)}
        else:
            top_is = {c: lf((1, Sg[c])) for c in range(1, k)}
            top_is[0] = add((1, gsum), *[(-1, lf((1, Sg[c]))) for c in range(1, k)])
        if oneway and dr == "L":
            Dg = D[(q2, dr)]
            for c in range(k):
                if encoding == "base4":
                    at_end = add((1, lf((1, Dg[c]))), (-1, Sj(c + 1)))     # top=c, 2nd=$
                    not_end = add((1, Sj(c)), (-1, lf((1, Dg[c]))))
                else:
                    at_end = lf((1, Dg[c]))
                    not_end = add((1, top_is[c]), (-1, at_end))
                addG((q2, syms[c], 1), at_end)
                addG((q2, syms[c], 0), not_end)
        else:
            e_new = 0 if oneway else None
            for c in range(k):
                addG((q2, syms[c], e_new), top_is[c])
    for a in actN:
        addG(a["target"], lf((1, a["name"])))

    def stack_forms(comps, cls, own_pop_groups, push_acts, b, load_form, is_L):
        forms = {}
        for comp in comps:
            parts = []
            if "push" in cls:
                parts.append((1 / b, lf((1, cls["push"][comp]))))
                for a in push_acts:
                    if encoding == "base4":
                        dig = 2 * si[a["w"]]
                        if dig:
                            parts.append((Fr(dig) / b, lf((1, a["name"]))))
                    else:
                        if comp[1:] == str(si[a["w"]]):
                            parts.append((Fr(2, 3), lf((1, a["name"]))))
            if "pop" in cls:
                parts.append((b, lf((1, cls["pop"][comp]))))
                for g in own_pop_groups:
                    if encoding == "base4":
                        for j, nm in S[g].items():
                            parts.append((-2, lf((1, nm))))
                    else:
                        if comp[1:] != "$":
                            parts.append((-2, lf((1, S[g][int(comp[1:])]))))
            if "keep" in cls:
                parts.append((1, lf((1, cls["keep"][comp]))))
            parts.append((1, load_form.get(comp, {})))
            forms[comp] = add(*parts)
        return forms

    loadL = {}
    if oneway:
        if encoding == "base4":
            loadL["L"] = lf((Fr(DOLLAR) / bL, LOAD))
        else:
            loadL["L$"] = lf((Fr(2, 3), LOAD))
    loadR = {}
    if encoding == "base4":
        loadR["R"] = add((1, lf((1, acc["R"]))), *[(1, lf((1, au[s]))) for s in inputs])
    else:
        for s in inputs:
            comp = f"R{si[s]}"
            loadR[comp] = lf((1, acc[comp]), (1, au[s]))
    Lf = stack_forms(compsL, cL, [g for g in groups if g[1] == "L"], actR, bL, loadL, True)
    Rf = stack_forms(compsR, cR, [g for g in groups if g[1] == "R"], actL, bR, loadR, False)
    Pf = Nf = None
    if use_counter:
        Pf = add((1, lf((1, LOAD))),
                 (Fr(1, 2), lf((1, ctr["cPR"]), (-1, ctr["eNR"]), *[(1, a["name"]) for a in actR])) if actR else (0, {}),
                 (1, lf((1, ctr["cPL"]))) if actL else (0, {}),
                 (1, lf((1, ctr["cPN"]))) if actN else (0, {}))
        Nf = add((1, lf((1, LOAD))),
                 (Fr(1, 2), lf((1, ctr["cNL"]), (-1, ctr["ePL"]), *[(1, a["name"]) for a in actL])) if actL else (0, {}),
                 (1, lf((1, ctr["cNR"]))) if actR else (0, {}),
                 (1, lf((1, ctr["cNN"]))) if actN else (0, {}))

    # start gates (depend on the current input, used only at the first EOS)
    startG = {}
    for s in inputs:
        startG[(tm.start, s, e0)] = lf((1, fu[s]), (1, ("x", EOS)), (-1, ONE))
    startG[(tm.start, tm.blank, e0)] = add(
        (1, lf((1, LOAD), (1, ("x", EOS)), (-1, ONE))),
        *[(-1, lf((1, fu[s]))) for s in inputs])

    def Gate(key):
        return add((1, Gh[key]), (1, startG.get(key, {})))

    def gate_of(acts):
        return add(*[(1, Gate(key)) for a in acts for key in a["keys"]])

    MR, ML, MN = gate_of(actR), gate_of(actL), gate_of(actN)

    # ---- pre-activations (over previous-tick units, x, const)
    pre = {}
    for a in actions:
        pre[a["name"]] = gate_of([a])
    def step(qform, lo, hi, qmax, gate):
        """0/1 threshold unit on the quantity q: 0 if q <= lo, 1 if q >= hi,
        with margin (hi-lo)/4 on both sides (float robustness)."""
        lo, hi, qmax = Fr(lo), Fr(hi), Fr(qmax)
        gap = hi - lo
        scale, off = 2 / gap, lo + gap / 4
        payload = add((scale, qform), (-scale * off, const(1)))
        return gated(payload, gate, Fr(max(1, math.ceil(scale * (qmax - off)))))

    for g, acts in groups.items():
        q2, dr = g
        gg = gate_of(acts)
        Xf, b = (Lf, bL) if dr == "L" else (Rf, bR)
        if encoding == "base4":
            if oneway and dr == "L":
                q = add((b * b, Xf["L"]))
                for j, nm in S[g].items():        # top >= j
                    pre[nm] = step(q, (2 * j - 2) * b + 2 * k, 2 * j * b, b * b, gg)
                for c, nm in D[g].items():        # top > c, or top = c and 2nd = $
                    pre[nm] = step(q, 2 * c * b + 2 * k - 2 + Fr(k, k + 1), 2 * c * b + 2 * k, b * b, gg)
            else:
                q = add((b, Xf[dr]))
                tau = Fr(2 * k - 2) / (b - 1)     # sup of b*pop(X)
                for j, nm in S[g].items():        # top >= j
                    pre[nm] = step(q, 2 * j - 2 + tau, 2 * j, 2 * k - 2 + tau, gg)
        else:
            for j, nm in S[g].items():            # top = symbol j
                pre[nm] = step(Xf[f"{dr}{j}"], Fr(1, 3), Fr(2, 3), 1, gg)
            if oneway and dr == "L":
                for c, nm in D[g].items():        # top = c and 2nd = $
                    pre[nm] = step(add((3, Xf[f"L{c}"]), (9, Xf["L$"])), Fr(11, 3), 4, 12, gg)
    for c, comps in cL.items():
        gate = {"push": MR, "pop": ML, "keep": MN}[c]
        for comp, nm in comps.items():
            pre[nm] = gated(Lf[comp], gate, 1)
    for c, comps in cR.items():
        gate = {"push": ML, "pop": MR, "keep": MN}[c]
        for comp, nm in comps.items():
            pre[nm] = gated(Rf[comp], gate, 1)
    if use_counter:
        if actR:
            pre[ctr["cPR"]] = gated(Pf, MR, 1)
            pre[ctr["cNR"]] = gated(add((2, Nf)), MR, 2)
            pre[ctr["eNR"]] = step(Nf, Fr(1, 2), 1, 1, MR)
        if actL:
            pre[ctr["cNL"]] = gated(Nf, ML, 1)
            pre[ctr["cPL"]] = gated(add((2, Pf)), ML, 2)
            pre[ctr["ePL"]] = step(Pf, Fr(1, 2), 1, 1, ML)
        if actN:
            pre[ctr["cPN"]] = gated(Pf, MN, 1)
            pre[ctr["cNN"]] = gated(Nf, MN, 1)
    xE = ("x", EOS)
    pre[fresh] = {}
    pre[LOAD] = lf((1, LOAD), (-1, xE))
    sumf = lf(*[(1, fu[s]) for s in inputs])
    for s in inputs:
        pre[fu[s]] = add((2, lf((1, fu[s]))), (1, lf((1, ("x", s)))), (-1, sumf),
                         (-2, lf((1, xE))), (-2, const(1)), (2, lf((1, LOAD))))
    pre[Psc] = lf((1 / bR, Psc), (1 / bR, fresh), (-1, xE))
    for s in inputs:
        dig = 2 * si[s] if encoding == "base4" else 2
        pre[au[s]] = lf((dig, Psc), (1, ("x", s)), (-1, ONE))
    if encoding == "base4":
        pre[acc["R"]] = add((1, lf((1, acc["R"]), (-1, xE))), *[(1, lf((1, au[s]))) for s in inputs])
    else:
        for s in inputs:
            comp = f"R{si[s]}"
            pre[acc[comp]] = lf((1, acc[comp]), (1, au[s]), (-1, xE))

    # ---- readout
    ro = add(*[(verdict[key], Gh[key]) for key in keys if verdict[key]])

    # ---- assemble matrices
    idx = {u: i for i, u in enumerate(units)}
    in_syms = inputs + [EOS]
    cidx = {s: i for i, s in enumerate(in_syms)}
    n = len(units)
    V = [[Fr(0)] * n for _ in range(n)]
    W = [[Fr(0)] * len(in_syms) for _ in range(n)]
    bvec = [Fr(0)] * n
    for u in units:
        i = idx[u]
        for key, c in pre[u].items():
            if key == ONE:
                bvec[i] += c
            elif isinstance(key, tuple) and key[0] == "x":
                W[i][cidx[key[1]]] += c
            else:
                V[i][idx[key]] += c
    readout_w = [Fr(0)] * n
    for key, c in ro.items():
        readout_w[idx[key]] += c
    h0v = [h0.get(u, Fr(0)) for u in units]

    def ev(form, h):
        return sum((c * h[idx[key]] for key, c in form.items() if key != ONE and h[idx[key]]), Fr(0)) + form.get(ONE, Fr(0))

    # ---- decode
    def dec_base(x, b, with_dollar):
        out = []
        x = Fr(x)
        while x:
            y = b * x
            d = math.floor(y)
            if with_dollar and d == DOLLAR:
                if y != d:
                    raise ValueError("garbage below $")
                return out, True
            if d % 2 or d > 2 * k - 2:
                raise ValueError(f"bad digit {d}")
            out.append(syms[d // 2])
            x = y - d
        return out, False

    def dec_cantor(z, names, with_dollar):
        z = [Fr(v) for v in z]
        out = []
        while any(z):
            tops = [j for j, v in enumerate(z) if v >= Fr(2, 3)]
            if len(tops) != 1 or any(not (v < Fr(1, 3)) for j, v in enumerate(z) if j != tops[0]):
                raise ValueError(f"not a cantor stack: {z}")
            j = tops[0]
            if names[j] == "L$":
                if any(z[i] for i in range(len(z)) if i != j) or z[j] != Fr(2, 3):
                    raise ValueError("garbage below $")
                return out, True
            out.append(syms[j])
            z = [3 * v - (2 if i == j else 0) for i, v in enumerate(z)]
        return out, False

    def log2_exact(v):
        v = Fr(v)
        if v.numerator != 1 or v.denominator & (v.denominator - 1):
            raise ValueError(f"counter not a power of 1/2: {v}")
        return v.denominator.bit_length() - 1

    def decode(h, with_key=False):
        hot = [key for key in keys if ev(Gh[key], h) != 0]
        if hot:
            if len(hot) != 1 or ev(Gh[hot[0]], h) != 1:
                raise ValueError(f"gate not one-hot: {[(k_, ev(Gh[k_], h)) for k_ in hot]}")
            q, head_sym, e = hot[0]
        else:                               # still loading
            q = tm.start
            on = [s for s in inputs if h[idx[fu[s]]] == 1]
            head_sym = on[0] if on else tm.blank
            e = e0
        if encoding == "base4":
            Ls, found = dec_base(ev(Lf["L"], h), bL, oneway)
            Rs, _ = dec_base(ev(Rf["R"], h), bR, False)
        else:
            Ls, found = dec_cantor([ev(Lf[c], h) for c in compsL], compsL, oneway)
            Rs, _ = dec_cantor([ev(Rf[c], h) for c in compsR], compsR, False)
        if oneway:
            if not found:
                raise ValueError("no $ in L")
            pos = len(Ls)
            if (pos == 0) != (e == 1):
                raise ValueError("left-end flag inconsistent")
        elif use_counter:
            pos = log2_exact(ev(Pf, h)) - log2_exact(ev(Nf, h))
        else:
            pos = 0                         # head-relative tape
        tape = {}
        for i, s in enumerate(Ls):
            tape[pos - 1 - i] = s
        tape[pos] = head_sym
        for i, s in enumerate(Rs):
            tape[pos + 1 + i] = s
        tape = {c: s for c, s in tape.items() if s != tm.blank}
        res = (q, pos, tape)
        return (res, hot[0] if hot else None) if with_key else res

    def input_vectors(word, n_eos):
        out = []
        for s in list(word) + [EOS] * n_eos:
            v = [Fr(0)] * len(in_syms)
            v[cidx[s]] = Fr(1)
            out.append(v)
        return out

    big_kinds = {"copy", "dbl", "loadbig"}
    return dict(
        V=V, W=W, b=bvec, h0=h0v, readout_w=readout_w, readout_c=Fr(0),
        input_symbols=in_syms, load_ticks=lambda word_len: word_len,
        load_ticks_formula="|w| ticks read the input; tick |w|+1 (first EOS) performs TM step 1; TM step j happens at tick |w|+j",
        decode=decode, input_vectors=input_vectors,
        unit_names=units, unit_kind=[ukind[u] for u in units],
        big_units=[i for i, u in enumerate(units) if ukind[u] in big_kinds],
        encoding=encoding, tape=tape, base=(bL, bR), counter=use_counter,
        n_units=n, actions=actions, groups=groups,
        forms=dict(Gh=Gh, L=Lf, R=Rf, P=Pf, N=Nf, idx=idx),
        verdict=verdict, pre=pre,
    )


def _kname(key):
    q, s, e = key
    return f"{q},{s}" + ("" if e is None else f",e{e}")


def nnz(net):
    V, W, b = net["V"], net["W"], net["b"]
    return (sum(1 for r in V for v in r if v), sum(1 for r in W for v in r if v),
            sum(1 for v in b if v))
