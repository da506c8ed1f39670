"""Tiny Turing-machine interpreter, busy-beaver text parser, random machines.

Conventions
-----------
* A configuration is ``(state, head, tape)`` with ``tape`` a dict cell -> symbol
  holding only non-blank cells.  The input word ``w`` is written on cells
  ``0 .. |w|-1`` and the head starts on cell 0.
* ``tape='two-way'``: cells are all integers.
  ``tape='one-way'``: cells are ``>= 0``; a left move on cell 0 writes and stays
  there (Sipser).
* A transition is ``delta[(q, a)] = (q2, a2, move)`` with move in 'L', 'R', 'N'.
  A missing transition halts and rejects *without* performing a step.
* ``accept``, ``reject`` and ``halt`` are sets of states; entering one of them
  stops the machine (verdict +1 for accept/halt, -1 for reject).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class TM:
    states: list            # all states, halting ones included
    symbols: list           # tape alphabet; blank is one of them
    blank: object
    delta: dict             # (q, a) -> (q2, a2, move)
    start: object
    accept: set = field(default_factory=set)
    reject: set = field(default_factory=set)
    halt: set = field(default_factory=set)
    input_symbols: list = None   # default: symbols minus blank
    name: str = ""

    def __post_init__(self):
        if self.input_symbols is None:
            self.input_symbols = [s for s in self.symbols if s != self.blank]
        for st in list(self.accept) + list(self.reject) + list(self.halt) + [self.start]:
            assert st in self.states, st
        for (q, a), (q2, a2, mv) in self.delta.items():
            assert q in self.states and q2 in self.states, (q, q2)
            assert a in self.symbols and a2 in self.symbols
            assert mv in ("L", "R", "N")
            assert q not in self.halting(), "halting states have no transitions"

    def halting(self):
        return set(self.accept) | set(self.reject) | set(self.halt)

    def verdict_of_state(self, q):
        if q in self.accept or q in self.halt:
            return 1
        if q in self.reject:
            return -1
        return 0


def initial_config(tm: TM, word=()):
    tape = {i: a for i, a in enumerate(word) if a != tm.blank}
    return (tm.start, 0, tape)


def step(tm: TM, cfg, tape_mode="two-way"):
    """One TM step.  Returns (new_cfg, status); status is 'running' or a verdict
    +1/-1 meaning the machine has stopped in new_cfg.  For a missing transition
    the config is returned unchanged with status -1 and *no* step happened
    (callers detect this with ``stepped``)."""
    q, head, tape = cfg
    if q in tm.halting():
        return cfg, tm.verdict_of_state(q)
    a = tape.get(head, tm.blank)
    if (q, a) not in tm.delta:
        return cfg, -1
    q2, a2, mv = tm.delta[(q, a)]
    tape = dict(tape)
    if a2 == tm.blank:
        tape.pop(head, None)
    else:
        tape[head] = a2
    if mv == "R":
        head += 1
    elif mv == "L":
        head -= 1
        if tape_mode == "one-way" and head < 0:
            head = 0
    v = tm.verdict_of_state(q2)
    return (q2, head, tape), ("running" if v == 0 else v)


def status_of(tm: TM, cfg):
    """'running' or the verdict of a configuration."""
    q, head, tape = cfg
    if q in tm.halting():
        return tm.verdict_of_state(q)
    if (q, tape.get(head, tm.blank)) not in tm.delta:
        return -1
    return "running"


def run(tm: TM, word=(), tape_mode="two-way", max_steps=10**6):
    """Returns (configs, verdict) where configs[j] is the config after j steps
    (configs[0] initial).  verdict is +1/-1, or 0 if max_steps was reached."""
    cfg = initial_config(tm, word)
    configs = [cfg]
    st = status_of(tm, cfg)
    while st == "running" and len(configs) <= max_steps:
        cfg, _ = step(tm, cfg, tape_mode)
        configs.append(cfg)
        st = status_of(tm, cfg)
    return configs, (0 if st == "running" else st)


# ---------------------------------------------------------------- BB parser
def parse_bb(text: str, name: str = "") -> TM:
    """Busy-beaver standard text, e.g. "1RB1LB_1LA1RZ".  Rows per state
    A, B, C, ...; 3 chars per read symbol 0,1,2..: write, move, next.
    Next state Z or H (or any letter beyond the rows) = halt; '---' means a
    halting transition that keeps the symbol, does not move, and counts as a
    step.  The blank is '0'."""
    rows = text.strip().split("_")
    nsym = len(rows[0]) // 3
    assert all(len(r) == 3 * nsym for r in rows), "ragged rows"
    letters = [chr(ord("A") + i) for i in range(len(rows))]
    symbols = [str(i) for i in range(nsym)]
    HALT = "Z"
    states = letters + [HALT]
    delta = {}
    for q, row in zip(letters, rows):
        for i in range(nsym):
            cell = row[3 * i:3 * i + 3]
            a = symbols[i]
            if cell == "---":
                delta[(q, a)] = (HALT, a, "N")
                continue
            w, mv, nxt = cell[0], cell[1], cell[2]
            assert mv in "LRN", cell
            if nxt not in letters:          # Z, H, or any unused letter
                nxt = HALT
            delta[(q, a)] = (nxt, w, mv)
    return TM(states=states, symbols=symbols, blank="0", delta=delta,
              start="A", halt={HALT}, name=name or text)


# ------------------------------------------------------------ random TMs
def random_tm(rng: random.Random, n_states=3, n_symbols=2, p_missing=0.08,
              p_halt=0.08, p_N=0.1, with_accept_reject=True) -> TM:
    states = [f"q{i}" for i in range(n_states)]
    symbols = ["_"] + [chr(ord("a") + i) for i in range(n_symbols - 1)]
    extra = ["acc", "rej"] if with_accept_reject else ["halt"]
    delta = {}
    for q in states:
        for a in symbols:
            r = rng.random()
            if r < p_missing:
                continue
            if rng.random() < p_halt:
                q2 = rng.choice(extra)
            else:
                q2 = rng.choice(states)
            mv = "N" if rng.random() < p_N else rng.choice("LR")
            delta[(q, a)] = (q2, rng.choice(symbols), mv)
    acc = {"acc"} if with_accept_reject else set()
    rej = {"rej"} if with_accept_reject else set()
    hal = set() if with_accept_reject else {"halt"}
    return TM(states=states + extra, symbols=symbols, blank="_", delta=delta,
              start="q0", accept=acc, reject=rej, halt=hal,
              name=f"random{n_states}x{n_symbols}")


def random_word(rng: random.Random, tm: TM, max_len=6):
    n = rng.randint(0, max_len)
    return [rng.choice(tm.input_symbols) for _ in range(n)]


# --------------------------------------------------------- example machines
def anbn_tm() -> TM:
    """Decides { a^n b^n : n >= 0 } on a one-way tape (Sipser-style zigzag).
    Uses an explicit reject state for some cases and missing transitions
    (= reject) for others."""
    S = ["_", "a", "b", "X", "Y"]
    d = {
        ("q0", "a"): ("q1", "X", "R"),
        ("q0", "Y"): ("q3", "Y", "R"),
        ("q0", "_"): ("qa", "_", "N"),
        ("q0", "b"): ("qr", "b", "N"),
        ("q1", "a"): ("q1", "a", "R"),
        ("q1", "Y"): ("q1", "Y", "R"),
        ("q1", "b"): ("q2", "Y", "L"),
        # ("q1", "_") missing -> reject
        ("q2", "a"): ("q2", "a", "L"),
        ("q2", "Y"): ("q2", "Y", "L"),
        ("q2", "X"): ("q0", "X", "R"),
        ("q3", "Y"): ("q3", "Y", "R"),
        ("q3", "_"): ("qa", "_", "R"),
        ("q3", "a"): ("qr", "a", "R"),
        # ("q3", "b") missing -> reject
    }
    return TM(states=["q0", "q1", "q2", "q3", "qa", "qr"], symbols=S, blank="_",
              delta=d, start="q0", accept={"qa"}, reject={"qr"},
              input_symbols=["a", "b"], name="a^n b^n")


BB = {
    "BB2": "1RB1LB_1LA1RZ",
    "BB3": "1RB1RZ_1LB0RC_1LC1LA",
    "BB4": "1RB1LB_1LA0LC_1RZ1LD_1RD0RA",
    "BB5": "1RB1LC_1RC1RB_1RD0LE_1LA1LD_1RZ0LA",
    "BB2x3": "1RB2LB1RZ_2LA2RB1LB",
}

if __name__ == "__main__":
    for k, txt in BB.items():
        tm = parse_bb(txt)
        cfgs, v = run(tm, max_steps=50_000_000 if k != "BB5" else 100_000)
        q, h, t = cfgs[-1]
        print(k, "steps", len(cfgs) - 1, "verdict", v, "nonblank", len(t),
              "ones", sum(1 for s in t.values() if s == "1"))
