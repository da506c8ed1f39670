"""Command line: ``python -m rnnsim [demo]``.

``demo`` (the default) runs a built-in network exactly and prints its states: a base-4
stack (Siegelmann–Sontag; seed 003) that pushes the bits of a word, s' = s/4 + (2·bit+1)/4,
decoded back into the word after every tick.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction

from rich.console import Console
from rich.table import Table

from . import SimpleRNN


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rnnsim", description="rnnsim command line")
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="run a built-in network exactly and print its states")
    d.add_argument("--input", default="1101", help="a word over {0,1} (default 1101)")
    args = parser.parse_args(argv)
    console = Console()
    word = getattr(args, "input", "1101")
    if any(c not in "01" for c in word):
        parser.error(f"--input must be a word over 0 and 1, got {word!r}")
    return demo(word, console)


if __name__ == "__main__":
    sys.exit(main())
