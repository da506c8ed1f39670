"""The terminal tracer: ``python -m rnnsim trace [SUBJECT]``.

Per tick it shows the decoded configuration first (TM: state, a tape window with the head
marked, the step count; DFA: the state and the symbol read), then the raw hidden state
(changed neurons highlighted; rationals as p/q with huge numbers shortened to their leading
digits and bit size; floats in their format), then the readout. With ``compare`` an exact
and a float run go side by side and the first divergence is highlighted and named. In a
terminal the view is live (rich Live); otherwise every shown tick is printed statically.
``json`` writes one object per tick and a final summary line; ``csv`` one row per tick.
Frames stream from the native steppers: memory does not grow with the number of ticks.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterator, TextIO

import numpy as np
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .subjects import Frame, Subject

MAX_ROWS = 48
TAPE_RADIUS = 24


# ------------------------------------------------------------------ formatting

def short_int(n: int, keep: int = 8) -> str:
    """n in full if short, else its leading digits, '…' and its bit size."""
    a = abs(n)
    if a < 10**12:
        return str(n)
    if a & (a - 1) == 0:
        return f"{'-' if n < 0 else ''}2^{a.bit_length() - 1}"
    digits = int(a.bit_length() * math.log10(2))
    lead = str(a >> max(0, a.bit_length() - 64))[:keep] if digits > 4000 else str(a)[:keep]
    return f"{'-' if n < 0 else ''}{lead}…({a.bit_length()} bits)"


def fmt_value(v: Any, dtype: str) -> str:
    if dtype == "exact":
        f = Fraction(v)
        if f.denominator == 1:
            return short_int(f.numerator)
        return f"{short_int(f.numerator)}/{short_int(f.denominator)}"
    x = float(v)
    if dtype == "f32":
        return repr(float(np.float32(x)))
    if dtype == "f16":
        return repr(float(np.float16(x)))
    return repr(x) if dtype == "f64" else f"{x:.4g}"


def tape_text(cfg: dict, blank: str) -> Text:
    head, offset, tape = cfg["head"], cfg["offset"], cfg["tape"]
    cells = {offset + i: s for i, s in enumerate(tape)}
    lo, hi = head - TAPE_RADIUS, head + TAPE_RADIUS
    lo = max(lo, min(cells, default=head) - 1)
    hi = min(hi, max(cells, default=head) + 1)
    t = Text()
    if lo > min(cells, default=lo):
        t.append("… ")
    for c in range(lo, hi + 1):
        s = cells.get(c, blank)
        if c == head:
            t.append(f"[{s}]", style="bold reverse")
        else:
            t.append(f" {s} ", style="dim" if s == blank else "")
    if hi < max(cells, default=hi):
        t.append(" …")
    return t


def config_line(subject: Subject, f: Frame) -> Text:
    t = Text()
    t.append(f"tick {f.tick}", style="bold")
    if subject.kind == "tm":
        t.append(f"  step {f.step}")
        if f.loading:
            t.append("  (loading the word)", style="cyan")
        if f.config:
            t.append(f"  state {f.config['state']}", style="bold green")
            t.append(f"  head {f.config['head']}")
    elif subject.kind == "counter" and f.config:
        read = f.config["read"]
        counts = "  ".join(f"{k}={v}" for k, v in f.config["counters"].items())
        verdict = "accept" if f.config["accepting"] else "reject"
        t.append(f"  read {read if read is not None else 'ε'}  {counts}  {verdict}", style="bold green")
    elif subject.kind == "dfa" and f.config:
        read = f.config["read"]
        t.append(f"  read {read if read is not None else 'ε'}  state {f.config['state']}", style="bold green")
    if f.decode_error:
        t.append(f"  does not decode: {f.decode_error}", style="bold red")
    out = f.output[0] if f.output else None
    if out is not None:
        t.append(f"  readout {fmt_value(out, 'exact')}", style="yellow" if f.signal else "")
    if f.bits > 64:
        t.append(f"  ({f.bits}-bit numbers)", style="dim")
    return t


def state_table(subject: Subject, frames: list[tuple[str, Frame, list | None]]) -> Table:
    """Units as rows, one value column per side; changed values highlighted; units that are
    zero and unchanged are left out (counted in the caption), at most MAX_ROWS rows."""
    table = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
    table.add_column("unit", style="dim")
    for dtype, _, _ in frames:
        table.add_column(f"h ({dtype})", overflow="fold")
    n = len(frames[0][1].state)
    rows = []
    for i in range(n):
        vals = [fr.state[i] for _, fr, _ in frames]
        changed = [prev is not None and prev[i] != fr.state[i] for _, fr, prev in frames]
        if any(changed) or any(v != 0 for v in vals):
            rows.append((i, vals, changed))
    hidden = 0
    if len(rows) > MAX_ROWS:
        hidden = len(rows) - MAX_ROWS
        rows = rows[:MAX_ROWS]
    for i, vals, changed in rows:
        name = subject.unit_names[i] if i < len(subject.unit_names) else f"h{i}"
        cells = [Text(fmt_value(v, dt), style="bold yellow" if ch else ("dim" if v == 0 else ""))
                 for (dt, _, _), v, ch in zip(frames, vals, changed)]
        table.add_row(Text(name), *cells)
    return table


def hidden_note(frames: list[tuple[str, Frame, list | None]]) -> Text | None:
    n = len(frames[0][1].state)
    shown = sum(1 for i in range(n) if any(fr.state[i] != 0 or (p is not None and p[i] != fr.state[i])
                                            for _, fr, p in frames))
    return Text(f"({n - min(shown, MAX_ROWS)} of {n} units zero and unchanged, not shown)", style="dim") if shown < n else None


def render(subject: Subject, sides: list[tuple[str, Frame, list | None]], divergence: str | None) -> Panel:
    parts: list[Any] = []
    for dtype, f, _ in sides:
        line = config_line(subject, f)
        if len(sides) > 1:
            line = Text(f"{dtype:>5}: ", style="bold") + line
        parts.append(line)
        if subject.kind == "tm" and f.config:
            parts.append(tape_text(f.config, subject.machine.blank))
    parts.append(state_table(subject, sides))
    note = hidden_note(sides)
    if note is not None:
        parts.append(note)
    if divergence:
        parts.append(Text(f"first divergence: {divergence}", style="bold white on red"))
    return Panel(Group(*parts), title=f"rnnsim trace · {subject.name}", border_style="blue")


# ------------------------------------------------------------------ comparing

def divergence(subject: Subject, a: Frame, b: Frame) -> str | None:
    """Names the first difference between the exact frame ``a`` and the other frame ``b``."""
    if b.decode_error and not a.decode_error:
        return f"the second run's state does not decode ({b.decode_error})"
    ca, cb = a.config, b.config
    if ca and cb and subject.kind == "counter":
        for k, v in ca["counters"].items():
            if cb["counters"].get(k) != v:
                return f"counter {k} = {v} (exact) vs {cb['counters'].get(k)}"
    elif ca and cb:
        if ca["state"] != cb["state"]:
            return f"state {ca['state']} (exact) vs {cb['state']}"
        if subject.kind == "tm":
            if ca["head"] != cb["head"]:
                return f"head {ca['head']} (exact) vs {cb['head']}"
            blank = subject.machine.blank
            cells_a = {ca["offset"] + i: s for i, s in enumerate(ca["tape"]) if s != blank}
            cells_b = {cb["offset"] + i: s for i, s in enumerate(cb["tape"]) if s != blank}
            for c in sorted(set(cells_a) | set(cells_b)):
                if cells_a.get(c, blank) != cells_b.get(c, blank):
                    return f"tape cell {c}: {cells_a.get(c, blank)} (exact) vs {cells_b.get(c, blank)}"
    if a.signal != b.signal:
        return f"readout {a.signal} (exact) vs {b.signal}"
    return None


# ------------------------------------------------------------------ driving

@dataclass
class Summary:
    ticks: int = 0
    steps: int | None = None
    output: Any = None
    halted: bool = False
    seconds: float = 0.0
    divergence: str | None = None
    divergence_tick: int | None = None
    config: dict | None = None


def _sides(subject: Subject, word: Any, dtype: str, compare: str | None, **window: Any) -> Iterator[list[Frame]]:
    if compare is None:
        for f in subject.frames(word, dtype, **window):
            yield [f]
        return
    first, second = ("exact", compare) if dtype == "exact" else (dtype, compare)
    for fa, fb in zip(subject.frames(word, first, **window), subject.frames(word, second, **window)):
        yield [fa, fb]


def trace(subject: Subject, word: Any = "", dtype: str = "exact", compare: str | None = None,
          start: int = 0, stop: int | None = None, every: int = 1, max_steps: int = 10_000,
          fmt: str = "rich", console: Console | None = None, out: TextIO | None = None,
          delay: float | None = None) -> Summary:
    """Streams the trace of ``subject`` on ``word`` and returns the summary."""
    console = console or Console()
    out = out or sys.stdout
    dtypes = [dtype] if compare is None else (["exact", compare] if dtype == "exact" else [dtype, compare])
    window = dict(start=start, stop=stop, every=every, max_steps=max_steps)
    summary = Summary()
    t0 = time.perf_counter()
    prev: list[list | None] = [None] * len(dtypes)
    writer = None
    live_ctx = None
    if fmt == "rich" and console.is_terminal:
        live_ctx = Live(console=console, refresh_per_second=20, transient=False)
        live_ctx.start()
        if delay is None:
            delay = 0.03
    try:
        for frames in _sides(subject, word, dtype, compare, **window):
            f0 = frames[0]
            summary.ticks, summary.steps = f0.tick, f0.step
            summary.output = f0.output[0] if f0.output else None
            summary.halted = f0.halted
            summary.config = f0.config
            div = None
            if len(frames) > 1 and summary.divergence is None:
                div = divergence(subject, frames[0], frames[1])
                if div:
                    summary.divergence, summary.divergence_tick = div, f0.tick
            if fmt == "json":
                for dt, f in zip(dtypes, frames):
                    out.write(json.dumps(frame_json(f, dt, len(frames) > 1)) + "\n")
            elif fmt == "csv":
                if writer is None:
                    writer = csv.writer(out)
                    writer.writerow(["dtype", "tick", "step", "state", "head", "tape", "output"] + subject.unit_names)
                for dt, f in zip(dtypes, frames):
                    writer.writerow(frame_csv(subject, f, dt))
            else:
                sides = [(dt, f, p) for dt, f, p in zip(dtypes, frames, prev)]
                panel = render(subject, sides, div)
                if live_ctx is not None:
                    live_ctx.update(panel)
                    if delay:
                        time.sleep(delay)
                else:
                    console.print(panel)
            prev = [f.state for f in frames]
    finally:
        if live_ctx is not None:
            live_ctx.stop()
    summary.seconds = time.perf_counter() - t0
    if fmt == "json":
        out.write(json.dumps({"summary": summary_json(summary), "halted": summary.halted}) + "\n")
    elif fmt == "rich":
        console.print(summary_text(subject, summary))
    return summary


def frame_json(f: Frame, dtype: str, tagged: bool) -> dict:
    d: dict[str, Any] = {"tick": f.tick, "step": f.step, "loading": f.loading, "config": f.config,
                         "output": [str(Fraction(y)) for y in f.output], "signal": f.signal,
                         "state": [str(Fraction(v)) for v in f.state]}
    if f.decode_error:
        d["decode_error"] = f.decode_error
    if tagged:
        d["dtype"] = dtype
    return d


def frame_csv(subject: Subject, f: Frame, dtype: str) -> list[Any]:
    cfg = f.config or {}
    tape = ""
    if subject.kind == "tm" and cfg:
        tape = "".join(cfg["tape"])
    return [dtype, f.tick, f.step, cfg.get("state", ""), cfg.get("head", ""), tape,
            ";".join(str(Fraction(y)) for y in f.output)] + [str(Fraction(v)) for v in f.state]


def summary_json(s: Summary) -> dict:
    return {"ticks": s.ticks, "steps": s.steps, "output": None if s.output is None else str(Fraction(s.output)),
            "halted": s.halted, "seconds": round(s.seconds, 4), "divergence": s.divergence,
            "divergence_tick": s.divergence_tick, "config": s.config}


def summary_text(subject: Subject, s: Summary) -> Text:
    t = Text()
    t.append("summary: ", style="bold")
    t.append(f"{s.ticks} ticks")
    if subject.kind == "tm":
        t.append(f", {s.steps} TM steps")
        if s.config:
            ones = sum(1 for c in s.config["tape"] if c != subject.machine.blank)
            t.append(f", {ones} non-blank cells")
    if s.output is not None:
        t.append(f", readout {fmt_value(s.output, 'exact')}")
    t.append(", halted" if s.halted and subject.kind == "tm" else (", stopped" if not s.halted else ""))
    t.append(f", {s.seconds:.2f} s")
    if s.divergence:
        t.append(f"\nfirst divergence at tick {s.divergence_tick}: {s.divergence}", style="bold red")
    return t
