"""rnnsim: exact and finite-precision simulation of recurrent neural networks.

Compile machines into networks that provably simulate them, run the networks exactly
(rationals) or in f64/f32/bf16/f16, decode hidden states back into configurations, and
extract automata back out. See DESIGN.md and the README for the map.
"""

from . import _core
from .errors import (
    InvalidInputError,
    InvalidMachineError,
    InvalidNetworkError,
    LimitExceededError,
    RnnSimError,
    UnsupportedError,
)
from .compiled import CompiledDFA, compile, extract, two_layer_to_rnn
from .compiled_tm import CompiledRun, CompiledTM, Snapshot, TMView
from .dfa import DFA, parity, tomita
from .turing import TMRun, TuringMachine
from .formats import FloatFormat
from .network import BatchRun, Linear, Run, SimpleRNN, load, loads
from . import counters
from .counters import precision_sweep
from .cells import (
    GRU,
    LSTM,
    QRNN,
    CellNetwork,
    DoublingLSTM,
    MLPCell,
    ResidualRNN,
    SecondOrderRNN,
    Stacked,
    saturate,
)

__version__ = _core.__version__

__all__ = [
    "BatchRun",
    "CellNetwork",
    "DoublingLSTM",
    "GRU",
    "LSTM",
    "MLPCell",
    "QRNN",
    "ResidualRNN",
    "SecondOrderRNN",
    "Stacked",
    "saturate",
    "counters",
    "precision_sweep",
    "CompiledDFA",
    "CompiledRun",
    "CompiledTM",
    "Snapshot",
    "TMRun",
    "TMView",
    "TuringMachine",
    "DFA",
    "FloatFormat",
    "compile",
    "extract",
    "parity",
    "tomita",
    "two_layer_to_rnn",
    "InvalidInputError",
    "InvalidMachineError",
    "InvalidNetworkError",
    "LimitExceededError",
    "Linear",
    "RnnSimError",
    "Run",
    "SimpleRNN",
    "UnsupportedError",
    "load",
    "loads",
]
