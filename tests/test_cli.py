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


# ---------------------------------------------------------------- trace and friends

import json  # noqa: E402

from rich.console import Console  # noqa: E402

import rnnsim as rs  # noqa: E402
from rnnsim.subjects import resolve  # noqa: E402
from rnnsim.trace import trace  # noqa: E402


def test_trace_default_runs_bb4_to_the_end_when_piped():
    r = run_cli()  # no arguments: trace bb4 exactly; stdout is a pipe, so static output
    assert r.returncode == 0, r.stderr
    assert "rnnsim trace · bb4" in r.stdout
    assert "[1]" in r.stdout or "[0]" in r.stdout  # the head cell on the tape window
    assert "summary: 107 ticks, 107 TM steps, 13 non-blank cells, readout 1, halted" in r.stdout


def test_trace_compare_names_the_first_divergence():
    r = run_cli("trace", "bb5", "--compare", "f32", "--from", "50", "--to", "70")
    assert r.returncode == 0, r.stderr
    assert "first divergence at tick 60: tape cell" in r.stdout
    h = rs.compile(rs.TuringMachine.builtin("bb5")).precision_horizon("", dtype="f32")
    assert h == 60


def test_trace_json_lines_end_with_a_summary():
    r = run_cli("trace", "1RB1LB_1LA1RZ", "--format", "json")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["tick"] for x in lines[:-1]] == list(range(7))
    assert lines[-2]["config"]["state"] == "Z" and lines[-2]["output"] == ["1"]
    assert lines[-1]["halted"] is True and lines[-1]["summary"]["steps"] == 6


def test_trace_csv_and_windows():
    r = run_cli("trace", "bb3", "--format", "csv", "--from", "5", "--to", "20", "--every", "5")
    rows = r.stdout.strip().splitlines()
    assert rows[0].startswith("dtype,tick,step,state,head,tape,output,")
    assert [row.split(",")[1] for row in rows[1:]] == ["5", "10", "15", "20"]


def test_trace_files_dfa_json_network_json_and_tm_text(tmp_path):
    tm_file = tmp_path / "bb2.txt"
    tm_file.write_text("1RB1LB_1LA1RZ\n")
    r = run_cli("trace", str(tm_file), "--format", "json")
    assert json.loads(r.stdout.splitlines()[-1])["summary"]["steps"] == 6
    dfa_file = tmp_path / "t3.json"
    rs.tomita(3).save(dfa_file)
    r = run_cli("trace", str(dfa_file), "--input", "0110")
    assert r.returncode == 0 and "state" in r.stdout and "readout 1" in r.stdout
    net_file = tmp_path / "net.json"
    r = run_cli("compile", "tomita3", "-o", str(net_file))
    assert r.returncode == 0 and rs.load(net_file).hidden_size == 11
    r = run_cli("trace", str(net_file), "--input", "[[1,0],[0,1]]", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout.splitlines()[-1])["summary"]["ticks"] == 2


def test_rich_console_capture_shows_the_decoded_configuration():
    console = Console(record=True, width=120, force_terminal=False)
    s = trace(resolve("bb2"), console=console)
    text = console.export_text()
    assert "state Z" in text and "[1]" in text and s.steps == 6 and s.halted


def test_run_verify_info():
    r = subprocess.run([sys.executable, "-m", "rnnsim", "run", "sipser_pow2", "--format", "json"],
                       input="0\n00\n000\n0000\n", capture_output=True, text=True, timeout=120)
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["output"] for x in rows] == [1, 1, -1, 1]
    r = subprocess.run([sys.executable, "-m", "rnnsim", "run", "tomita3", "--format", "json"],
                       input="0110\n0101\n", capture_output=True, text=True, timeout=120)
    assert [json.loads(x)["accepted"] for x in r.stdout.splitlines()] == [True, False]
    r = run_cli("verify", "anbncn", "--max-len", "3")
    assert r.returncode == 0 and "ok" in r.stdout and "40 words" in r.stdout
    r = run_cli("verify", "tomita5", "--max-len", "10")
    assert r.returncode == 0 and "ok" in r.stdout
    info = json.loads(run_cli("info", "bb5", "--format", "json").stdout)
    assert info["neurons"] == 40 and info["nonzero_weights"] == {"V": 380, "W": 20, "b": 26}


def test_cli_errors_are_one_line_with_exit_code_2(tmp_path):
    for args in (["trace", "nonsense"], ["trace", str(tmp_path / "missing.json")], ["info", "1RB"],
                 ["trace", "bb2", "--dtype", "f8"], ["trace", "bb2", "--input", "2"]):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") <= 2, r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "rnnsim.network", "version": 1, "kind": "simple_rnn"')
    r = run_cli("trace", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    for sub in ("trace", "run", "verify", "compile", "info"):
        h = run_cli(sub, "--help")
        assert h.returncode == 0 and "usage" in h.stdout


def test_long_traces_stream_in_windows():
    # 300,000 ticks of BB(5); only every 100,000th is materialised, the rest run natively
    r = run_cli("trace", "bb5", "--every", "100000", "--max-steps", "300000", "--format", "json")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["tick"] for x in lines[:-1]] == [0, 100000, 200000, 300000]
    want = rs.TuringMachine.builtin("bb5").run("", 300000)
    assert lines[-2]["config"]["head"] == want.head and lines[-1]["halted"] is False
    big = max(len(v) for v in lines[-2]["state"])
    assert big > 100  # exact numerators hundreds of digits long, printed in full in json


def test_trace_counter_shows_the_counts_per_tick():
    r = run_cli("trace", "anbn-lstm", "--input", "aaabbb", "--format", "json")
    assert r.returncode == 0, r.stderr
    frames = [json.loads(line) for line in r.stdout.splitlines() if '"tick"' in line]
    assert [f["config"]["counters"]["a-b"] for f in frames] == ["0", "1", "2", "3", "2", "1", "0"]
    assert [f["config"]["accepting"] for f in frames] == [True, False, False, False, False, False, True]
    assert frames[4]["config"]["read"] == "b" and frames[4]["config"]["counters"]["seen_b"] == "1"
    r = run_cli("trace", "dyck1-relu", "--input", "())(", "--no-color")
    assert r.returncode == 0, r.stderr
    assert "read ) " in r.stdout and "depth=-1" in r.stdout and "error=1" in r.stdout


def test_trace_counter_compare_names_the_first_counter_divergence():
    word = "a" * 130 + "b" * 130
    r = run_cli("trace", "anbn-lstm", "--input", word, "--compare", "bf16", "--format", "json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.splitlines()[-1])["summary"]
    # bf16 holds c = K - 1/2 exactly up to K = 128: a^129 rounds 128.5 to 128
    assert summary["divergence"] == "counter a-b = 129 (exact) vs 257/2" and summary["divergence_tick"] == 129


def test_counter_subject_errors_are_one_line():
    r = run_cli("trace", "anbn-gru", "--input", "ab")
    assert r.returncode != 0 and "finite" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "rnnsim", "run", "anbncn-relu", "--format", "json"], input="abc\naabbc\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["accepted"] for x in r.stdout.splitlines()] == [True, False]
