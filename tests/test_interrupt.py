"""Ctrl-C stops long runs promptly with KeyboardInterrupt, and the interpreter stays usable."""

from __future__ import annotations

import _thread
import threading
import time
from fractions import Fraction

import numpy as np
import pytest

import rnnsim as rs


class interrupt_after:
    """Ctrl-C (`_thread.interrupt_main`) after `seconds`, and once more after `again` seconds
    if the call is still running then: a pending interrupt that lands while the main thread
    runs a finalizer (a `__del__` called by the garbage collector) is raised inside it and
    swallowed there ("Exception ignored in ..."), and the run it was meant for would go on
    (a CI run once grew to 24 GB in the exact case before the OOM killer stopped it). The
    second interrupt reaches the binding's wait loop, which is all the call is doing by
    then. Use as a context manager around the call."""

    def __init__(self, seconds: float, again: float = 4.0):
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._fire, args=(seconds, again), daemon=True)

    def _fire(self, seconds: float, again: float) -> None:
        if not self.done.wait(seconds):
            _thread.interrupt_main()
            if not self.done.wait(again):
                _thread.interrupt_main()

    def __enter__(self) -> "interrupt_after":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


@pytest.mark.parametrize("kind", ["exact", "batch"])
def test_ctrl_c_stops_a_long_run(kind):
    if kind == "exact":
        # ~10^6 ticks of growing rationals: minutes of work if not stopped
        net = rs.SimpleRNN(V=[[Fraction(1, 3), 0], [1, Fraction(1, 2)]], W=[[1], [0]], b=[0, 0], activation="identity")
        job = lambda: net.run(np.ones((1_000_000, 1)), dtype="exact")  # noqa: E731
    else:
        net = rs.SimpleRNN(V=np.eye(64) * 0.5, W=np.ones((64, 1)), b=np.zeros(64), activation="tanh")
        x = np.ones((64, 200_000, 1), dtype=np.float32)
        job = lambda: net.run_batch(x, dtype="f32", keep="final")  # noqa: E731
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt), interrupt_after(0.5):
        job()
    elapsed = time.perf_counter() - start
    assert elapsed < 10, f"the run kept going for {elapsed:.1f}s after Ctrl-C"
    # still usable afterwards
    assert net.run(np.ones((2, 1)), dtype="f64").states.shape[0] == 3


def test_ctrl_c_stops_a_long_lstm_batch():
    h = 32
    net = rs.LSTM(np.full((4 * h, 1), 0.01), np.eye(4 * h, h) * 0.1)
    x = np.ones((16, 200_000, 1), dtype=np.float32)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt), interrupt_after(0.5):
        net.run_batch(x, dtype="f64", keep="final")
    elapsed = time.perf_counter() - start
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
