"""Ctrl-C stops long runs promptly with KeyboardInterrupt, and the interpreter stays usable."""

from __future__ import annotations

import _thread
import signal
import threading
import time
from fractions import Fraction

import numpy as np
import pytest

import rnnsim as rs


@pytest.fixture(autouse=True)
def sigint_handled():
    """Python's own SIGINT handler for each test: a process started in the background by a
    non-interactive shell inherits SIGINT ignored, and Python then installs no handler, so
    `_thread.interrupt_main` does nothing and the runs meant to be stopped go on (a CI
    started that way grew the exact case to 24 GB before the OOM killer stopped it)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def interrupted(job, after: float = 0.5) -> float:
    """Runs `job` with a Ctrl-C `after` seconds in; it must raise KeyboardInterrupt. Returns
    the seconds it took. A job that ends first fails the test, and its Ctrl-C is cancelled
    (else it would land in pytest itself and end the whole session)."""
    timer = threading.Timer(after, _thread.interrupt_main)
    timer.start()
    start = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            job()
    finally:
        timer.cancel()
        timer.join()
    return time.perf_counter() - start


@pytest.mark.parametrize("kind", ["exact", "batch"])
def test_ctrl_c_stops_a_long_run(kind):
    if kind == "exact":
        # ~10^6 ticks of growing rationals: minutes of work if not stopped
        net = rs.SimpleRNN(V=[[Fraction(1, 3), 0], [1, Fraction(1, 2)]], W=[[1], [0]], b=[0, 0], activation="identity")
        job = lambda: net.run(np.ones((1_000_000, 1)), dtype="exact")  # noqa: E731
    else:
        # 64 × 200,000 token-steps of 2·384² operations, ~10 s on 2 cores at 400 G flop/s
        # (hidden 64 took 0.5 s on session 42's Zen 5: the run ended before the Ctrl-C)
        net = rs.SimpleRNN(V=np.eye(384) * 0.5, W=np.ones((384, 1)), b=np.zeros(384), activation="tanh")
        x = np.ones((64, 200_000, 1), dtype=np.float32)
        job = lambda: net.run_batch(x, dtype="f32", keep="final")  # noqa: E731
    elapsed = interrupted(job)
    assert elapsed < 10, f"the run kept going for {elapsed:.1f}s after Ctrl-C"
    # still usable afterwards
    assert net.run(np.ones((2, 1)), dtype="f64").states.shape[0] == 3


def test_ctrl_c_stops_a_long_lstm_batch():
    # 16 × 200,000 token-steps of 2·4h·(h + 1) f64 operations: ~4 s at 100 G flop/s
    h = 128
    net = rs.LSTM(np.full((4 * h, 1), 0.01), np.eye(4 * h, h) * 0.1)
    x = np.ones((16, 200_000, 1), dtype=np.float32)
    elapsed = interrupted(lambda: net.run_batch(x, dtype="f64", keep="final"))
    assert elapsed < 10, f"the run kept going for {elapsed:.1f}s after Ctrl-C"
    assert net.run(np.ones((2, 1)), dtype="f64").states.shape == (3, h)


@pytest.mark.parametrize("threads", [1, 2, None])
def test_calls_from_several_python_threads_at_once(threads):
    # the jobs share the bindings' persistent pools (`py/interrupt.rs`): eight calls from
    # four Python threads, each checked bit for bit against the same call made alone
    rng = np.random.default_rng(7)
    h = 16
    net = rs.LSTM(rng.uniform(-0.5, 0.5, (4 * h, 3)), rng.uniform(-0.5, 0.5, (4 * h, h)))
    xs = [rng.standard_normal((b, 50, 3)).astype(np.float32) for b in (1, 3, 8, 33)]
    alone = [net.run_batch(x, dtype="f32", threads=threads).states for x in xs]
    got: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        got[i] = [net.run_batch(xs[i], dtype="f32", threads=threads).states for _ in range(2)]

    workers = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    assert sorted(got) == list(range(len(xs)))
    for i, runs in got.items():
        for r in runs:
            assert np.array_equal(r, alone[i])
