"""Command line: ``python -m rnnsim {trace,run,verify,compile,info,demo}``.

``trace`` (the default) shows a compiled machine or a network tick by tick (see trace.py);
without arguments it runs the BB(4) champion through its exact network. ``run`` sends a
batch of words through a subject; ``verify`` checks a compiled machine against its own
interpreter on every word up to a length; ``compile`` writes a subject's network as JSON;
``info`` prints its sizes; ``demo`` shows a base-4 stack network. Bad arguments, unknown
subjects and unreadable files give a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from fractions import Fraction

from rich.console import Console
from rich.table import Table

from . import SimpleRNN
from .errors import RnnSimError
from .network import _progress_bar

DEFAULT_SUBJECT = "bb4"
DTYPES = ["exact", "f64", "f32", "bf16", "f16"]


# ------------------------------------------------------------------ demo

def stack_network() -> SimpleRNN:
    """One slu unit holding a base-4 stack: push(s, bit) = s/4 + (2·bit + 1)/4."""
    return SimpleRNN(V=[[Fraction(1, 4)]], W=[[Fraction(1, 4), Fraction(3, 4)]], b=[0], activation="slu")


def decode_stack(s: Fraction) -> str:
    """Reads the stack top first: top = 1 iff 4s − 2 ≥ 0 (digit 3), then pop s ↦ 4s − digit."""
    bits = []
    while s > 0:
        digit = 3 if 4 * s >= 2 else 1
        bits.append("1" if digit == 3 else "0")
        s = 4 * s - digit
    return "".join(bits)


def demo(word: str, console: Console) -> int:
    net = stack_network()
    x = [[1, 0] if c == "0" else [0, 1] for c in word]
    run = net.run(x, dtype="exact")
    table = Table(title=f"base-4 stack pushing {word!r}, simulated exactly")
    for col in ("t", "read", "h_t (exact)", "bits", "decoded stack (top first)"):
        table.add_column(col)
    for t, (h,) in enumerate(run.states):
        table.add_row(str(t), word[t - 1] if t else "", str(h), str(h.denominator.bit_length() - 1),
                      decode_stack(h) or "(empty)")
    console.print(table)
    ok = decode_stack(run.states[-1, 0]) == word[::-1]
    console.print("decoded stack equals the reversed word:", "[green]yes[/]" if ok else "[red]NO[/]")
    return 0 if ok else 1


# ------------------------------------------------------------------ subcommands

def cmd_trace(a: argparse.Namespace, console: Console) -> int:
    from .subjects import resolve
    from .trace import trace

    subject = resolve(a.subject, a.encoding)
    trace(subject, word=a.input, dtype=a.dtype, compare=a.compare, start=a.from_, stop=a.to, every=a.every,
          max_steps=a.max_steps, fmt=a.format, console=console, delay=a.delay)
    return 0


def _words(a: argparse.Namespace) -> list[str]:
    src = sys.stdin if a.words in (None, "-") else open(a.words, encoding="utf-8")  # noqa: SIM115
    with src:
        return [line.rstrip("\n") for line in src if line.strip() != "" or line == "\n"]


def cmd_run(a: argparse.Namespace, console: Console) -> int:
    from .subjects import resolve

    subject = resolve(a.subject, a.encoding)
    words = _words(a)
    results = []
    if subject.kind == "dfa":
        acc = subject.compiled.accepts_batch(words, dtype=a.dtype, progress=a.progress)
        results = [{"word": w, "accepted": bool(x)} for w, x in zip(words, acc)]
    elif subject.kind == "counter":
        acc = subject.compiled.accepts_batch(words, dtype=a.dtype)
        results = [{"word": w, "accepted": bool(x)} for w, x in zip(words, acc)]
    elif subject.kind == "tm":
        with _progress_bar(a.progress, "words") as cb:
            for i, w in enumerate(words):
                r = subject.compiled.run(w, dtype=a.dtype, max_steps=a.max_steps)
                results.append({"word": w, "steps": r.steps, "ticks": r.ticks, "halted": r.halted,
                                "output": r.output, "state": r.state,
                                "tape": "".join(r.tape) if r.tape is not None else None})
                if cb:
                    cb(i + 1, len(words))
    else:
        raise RnnSimError("run needs a compiled machine (a TM or a DFA); trace a network instead")
    if a.format == "json":
        for r in results:
            print(json.dumps(r))
    else:
        table = Table(title=f"{subject.name} ({a.dtype})")
        for k in results[0] if results else ["word"]:
            table.add_column(k)
        for r in results:
            table.add_row(*[str(v) for v in r.values()])
        console.print(table)
    return 0


def cmd_verify(a: argparse.Namespace, console: Console) -> int:
    from .subjects import resolve

    subject = resolve(a.subject, a.encoding)
    if subject.kind == "dfa":
        cex = subject.compiled.verify(a.max_len, dtype=a.dtype)
        if cex is None:
            console.print(f"[green]ok[/]: the network agrees with the DFA on every word up to length {a.max_len} ({a.dtype})")
            return 0
        console.print(f"[red]counterexample[/]: {cex!r}")
        return 1
    if subject.kind != "tm":
        raise RnnSimError("verify needs a compiled machine (a TM or a DFA)")
    alphabet = subject.machine.input_alphabet
    words = [list(w) for n in range(a.max_len + 1) for w in itertools.product(alphabet, repeat=n)]
    with _progress_bar(a.progress, "words") as cb:
        for i, w in enumerate(words):
            m = subject.compiled.verify(w, max_steps=a.max_steps)
            if m is not None:
                console.print(f"[red]mismatch[/] on {''.join(w)!r} at step {m['step']}: expected {m['expected']}, got {m['got']}")
                return 1
            if cb:
                cb(i + 1, len(words))
    console.print(f"[green]ok[/]: the exact network agrees with the machine, configuration by configuration, "
                  f"on all {len(words)} words up to length {a.max_len} (at most {a.max_steps} steps each)")
    return 0


def cmd_compile(a: argparse.Namespace, console: Console) -> int:
    from .subjects import resolve

    subject = resolve(a.subject, a.encoding)
    text = subject.network.to_json(meta={"subject": subject.name, "kind": subject.kind})
    if a.output in (None, "-"):
        sys.stdout.write(text + "\n")
    else:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
        console.print(f"wrote {a.output} ({subject.network.hidden_size} neurons)")
    return 0


def cmd_info(a: argparse.Namespace, console: Console) -> int:
    from .subjects import resolve

    info = resolve(a.subject, a.encoding).info()
    if a.format == "json":
        print(json.dumps(info))
        return 0
    table = Table(title=f"rnnsim info · {info['subject']}", show_header=False)
    for k, v in info.items():
        table.add_row(k, json.dumps(v) if isinstance(v, (dict, list)) else str(v))
    console.print(table)
    return 0


# ------------------------------------------------------------------ parser

class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit code 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m rnnsim", description="rnnsim: exact and finite-precision RNN simulation")
    sub = p.add_subparsers(dest="command")

    def subject_args(sp: argparse.ArgumentParser, default: str | None = DEFAULT_SUBJECT) -> None:
        sp.add_argument("subject", nargs="?" if default else None, default=default,
                        help="bb2..bb5, binary_increment, sipser_pow2, anbncn, tomita1..tomita7, parity, "
                             "busy-beaver text (1RB1LB_1LA1RZ), or a file (TM text, DFA or network JSON)")
        sp.add_argument("--encoding", choices=["base4", "cantor3"], default="base4", help="stack encoding for TMs")

    t = sub.add_parser("trace", help="show a compiled machine or a network tick by tick (default)")
    subject_args(t)
    t.add_argument("--input", default="", help="the word (a network: a JSON matrix or .npy file)")
    t.add_argument("--dtype", default="exact", help=f"number format: {', '.join(DTYPES)}")
    t.add_argument("--compare", default=None, metavar="DTYPE",
                   help="run this number format beside --dtype (exact by default) and name the first divergence")
    t.add_argument("--from", dest="from_", type=int, default=0, metavar="TICK")
    t.add_argument("--to", type=int, default=None, metavar="TICK")
    t.add_argument("--every", type=int, default=1, metavar="N")
    t.add_argument("--max-steps", type=int, default=10_000)
    t.add_argument("--format", choices=["rich", "json", "csv"], default="rich")
    t.add_argument("--no-color", action="store_true")
    t.add_argument("--delay", type=float, default=None, help="seconds per shown tick in a live terminal (default 0.03)")

    r = sub.add_parser("run", help="run a batch of words (file or stdin) through a compiled machine")
    subject_args(r, default=None)
    r.add_argument("words", nargs="?", default=None, help="file with one word per line (default: stdin)")
    r.add_argument("--dtype", default="exact", help=f"number format: {', '.join(DTYPES)}")
    r.add_argument("--max-steps", type=int, default=100_000)
    r.add_argument("--format", choices=["table", "json"], default="table")
    r.add_argument("--progress", action="store_true")

    v = sub.add_parser("verify", help="check a compiled machine against its own interpreter on all words up to a length")
    subject_args(v, default=None)
    v.add_argument("--max-len", type=int, default=6)
    v.add_argument("--max-steps", type=int, default=10_000)
    v.add_argument("--dtype", default="f32", help="DFAs: the number format checked")
    v.add_argument("--progress", action="store_true")

    c = sub.add_parser("compile", help="write a subject's network as JSON (rnnsim.load reads it back)")
    subject_args(c, default=None)
    c.add_argument("-o", "--output", default=None, help="output file (default: stdout)")

    i = sub.add_parser("info", help="sizes: neurons, nonzero weights, ticks per step")
    subject_args(i, default=None)
    i.add_argument("--format", choices=["table", "json"], default="table")

    d = sub.add_parser("demo", help="a base-4 stack network, run exactly")
    d.add_argument("--input", default="1101", help="a word over {0,1} (default 1101)")
    return p


COMMANDS = {"trace": cmd_trace, "run": cmd_run, "verify": cmd_verify, "compile": cmd_compile, "info": cmd_info}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        args = parser.parse_args(["trace"])
    no_color = getattr(args, "no_color", False)
    console = Console(no_color=no_color, highlight=False)
    if args.command == "demo":
        if any(ch not in "01" for ch in args.input):
            parser.error(f"--input must be a word over 0 and 1, got {args.input!r}")
        return demo(args.input, console)
    try:
        return COMMANDS[args.command](args, console)
    except (RnnSimError, OSError, ValueError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"python -m rnnsim {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
