"""The one error family of rnnsim.

Every error rnnsim raises on purpose is an ``RnnSimError``; the subclasses also derive from
the matching builtin so ``except ValueError`` keeps working. ``problems`` lists every
problem found (validation reports them all at once).
"""

from __future__ import annotations


class RnnSimError(Exception):
    """Base class of every rnnsim error."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) if problems else [message]


class InvalidNetworkError(RnnSimError, ValueError):
    """Bad weights: shape mismatch, NaN or infinite values, unknown activation, corrupted file."""


class InvalidInputError(RnnSimError, ValueError):
    """Bad inputs: wrong width, NaN, bad lengths, unknown dtype, unknown symbol, malformed text."""


class InvalidMachineError(InvalidInputError):
    """A machine (DFA, Turing machine) that fails validation."""


class UnsupportedError(RnnSimError):
    """A request the engines cannot honour (e.g. tanh in exact arithmetic)."""


class LimitExceededError(RnnSimError):
    """A size, bit or step limit was reached (max_bits, max_states, ...)."""


def raise_problems(cls: type[RnnSimError], problems: list[str]) -> None:
    """Raise ``cls`` listing every problem, if there is any."""
    if not problems:
        return
    if len(problems) == 1:
        raise cls(problems[0], problems)
    raise cls(f"{len(problems)} problems:\n  - " + "\n  - ".join(problems), problems)
