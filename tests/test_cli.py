"""The command line, driven as a user would: through a subprocess whose stdout is a pipe."""

from __future__ import annotations

import subprocess
import sys


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rnnsim", *args], capture_output=True, text=True, timeout=120)


def test_demo_shows_exact_states_and_the_decoded_stack():
    r = run_cli("demo", "--input", "10110")
    assert r.returncode == 0, r.stderr
    assert "503/1024" in r.stdout  # the exact state after pushing 1,0,1,1,0
    assert "01101" in r.stdout  # decoded stack, top first
    assert "yes" in r.stdout


def test_bad_arguments_give_a_one_line_error_and_exit_code_2():
    r = run_cli("demo", "--input", "12")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "--input" in r.stderr
    r = run_cli("nonsense")
    assert r.returncode == 2 and "Traceback" not in r.stderr
