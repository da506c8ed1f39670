//! Turing machines and their compiled networks: `TuringMachine`, `CompiledTM`, `TmTrace`.

use crate::compile::tm_codec::TmView;
use crate::compile::tm_layout::{Encoding, Penalty, TmOptions, UnitKind};
use crate::compile::tm_run::{precision_horizon, run_tm, verify_tm, TmTicker};
use crate::compile::tm_to_rnn::{tm_to_rnn, CompiledTm};
use crate::error::SimError;
use crate::machine::tm::{Move, Status, TapeKind, TmConfig, TuringMachine};
use crate::machine::tm_builtins::{builtin, builtin_names};
use crate::num::dtype::Dtype;
use crate::py::convert::{fraction_type, py_rationals, read_tensor, to_pyerr};
use crate::py::interrupt::run_interruptible;
use crate::py::network::PySimpleRnn;
use crate::sim::exact_engine::DEFAULT_MAX_BITS;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

fn err(py: Python<'_>) -> impl Fn(SimError) -> PyErr + '_ {
    move |e| to_pyerr(py, e)
}

#[pyclass(name = "TuringMachine", module = "rnnsim._core", frozen)]
pub struct PyTuringMachine {
    pub tm: Arc<TuringMachine>,
}

fn wrap(tm: TuringMachine) -> PyTuringMachine {
    PyTuringMachine { tm: Arc::new(tm) }
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Running => "running",
        Status::Accepted => "accepted",
        Status::Rejected => "rejected",
        Status::Halted => "halted",
    }
}

fn tape_kind(py: Python<'_>, name: &str) -> PyResult<TapeKind> {
    match name {
        "two-way" | "two_way" => Ok(TapeKind::TwoWay),
        "one-way" | "one_way" => Ok(TapeKind::OneWay),
        _ => Err(to_pyerr(py, SimError::invalid_input(format!("unknown tape {name:?}: expected \"two-way\" or \"one-way\"")))),
    }
}

/// A configuration as a dict: state, head, offset, tape (symbol names), steps, status.
fn config_dict<'py>(py: Python<'py>, tm: &TuringMachine, c: &TmConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("state", &tm.states[c.state])?;
    d.set_item("head", c.head)?;
    d.set_item("offset", c.offset)?;
    d.set_item("tape", c.tape.iter().map(|&s| tm.tape_alphabet[s].clone()).collect::<Vec<_>>())?;
    d.set_item("steps", c.steps)?;
    d.set_item("status", status_name(c.status))?;
    Ok(d)
}

impl PyTuringMachine {
    fn word(&self, py: Python<'_>, word: &[String]) -> PyResult<Vec<usize>> {
        let refs: Vec<&str> = word.iter().map(|s| s.as_str()).collect();
        self.tm.encode_input(&refs).map_err(err(py))
    }
}

#[pymethods]
impl PyTuringMachine {
    /// Validates (every problem at once, InvalidMachineError) and builds the machine.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        states: Vec<String>,
        input_alphabet: Vec<String>,
        tape_alphabet: Vec<String>,
        blank: String,
        transitions: Vec<(String, String, String, String, String)>,
        start: String,
        accept: Vec<String>,
        reject: Vec<String>,
        halt: Vec<String>,
        tape: &str,
    ) -> PyResult<Self> {
        let tape = tape_kind(py, tape)?;
        let mut bad = Vec::new();
        let ts = transitions
            .into_iter()
            .map(|(q, r, n, w, m)| {
                let mv = match m.as_str() {
                    "L" | "l" => 'L',
                    "R" | "r" => 'R',
                    "N" | "n" | "S" | "s" => 'N',
                    _ => {
                        bad.push(format!("transition ({q}, {r}): move {m:?} is not L, R or N"));
                        'N'
                    }
                };
                (q, r, n, w, mv)
            })
            .collect();
        let built = TuringMachine::new(states, input_alphabet, tape_alphabet, blank, ts, start, accept, reject, halt, tape);
        match built {
            Ok(tm) if bad.is_empty() => Ok(wrap(tm)),
            Ok(_) => Err(to_pyerr(py, SimError::InvalidMachine(bad))),
            Err(SimError::InvalidMachine(mut p)) => {
                p.extend(bad);
                Err(to_pyerr(py, SimError::InvalidMachine(p)))
            }
            Err(e) => Err(to_pyerr(py, e)),
        }
    }
    #[staticmethod]
    fn parse(py: Python<'_>, text: &str) -> PyResult<Self> {
        TuringMachine::parse(text).map(wrap).map_err(err(py))
    }
    fn format(&self, py: Python<'_>) -> PyResult<String> {
        self.tm.format().map_err(err(py))
    }
    #[staticmethod]
    fn builtin(py: Python<'_>, name: &str) -> PyResult<Self> {
        builtin(name).map(wrap).map_err(err(py))
    }
    #[staticmethod]
    fn builtin_names() -> Vec<&'static str> {
        builtin_names().to_vec()
    }
    #[staticmethod]
    fn random(n_states: usize, n_symbols: usize, seed: u64) -> Self {
        wrap(TuringMachine::random(n_states, n_symbols, seed))
    }
    #[getter]
    fn states(&self) -> Vec<String> {
        self.tm.states.clone()
    }
    #[getter]
    fn input_alphabet(&self) -> Vec<String> {
        self.tm.input_alphabet.clone()
    }
    #[getter]
    fn tape_alphabet(&self) -> Vec<String> {
        self.tm.tape_alphabet.clone()
    }
    #[getter]
    fn blank(&self) -> String {
        self.tm.tape_alphabet[self.tm.blank].clone()
    }
    #[getter]
    fn start(&self) -> String {
        self.tm.states[self.tm.start].clone()
    }
    #[getter]
    fn accept(&self) -> Vec<String> {
        self.tm.accept.iter().map(|&q| self.tm.states[q].clone()).collect()
    }
    #[getter]
    fn reject(&self) -> Vec<String> {
        self.tm.reject.iter().map(|&q| self.tm.states[q].clone()).collect()
    }
    #[getter]
    fn halt(&self) -> Vec<String> {
        self.tm.halt.iter().map(|&q| self.tm.states[q].clone()).collect()
    }
    #[getter]
    fn tape(&self) -> &'static str {
        match self.tm.tape {
            TapeKind::TwoWay => "two-way",
            TapeKind::OneWay => "one-way",
        }
    }
    /// (state, read, next, write, move) for every defined transition.
    #[getter]
    fn transitions(&self) -> Vec<(String, String, String, String, String)> {
        let t = &self.tm;
        let mut out = Vec::new();
        for (q, row) in t.delta.iter().enumerate() {
            for (r, tr) in row.iter().enumerate() {
                if let Some(tr) = tr {
                    let m = match tr.mv {
                        Move::L => "L",
                        Move::R => "R",
                        Move::N => "N",
                    };
                    out.push((t.states[q].clone(), t.tape_alphabet[r].clone(), t.states[tr.next].clone(), t.tape_alphabet[tr.write].clone(), m.to_string()));
                }
            }
        }
        out
    }
    /// The reference interpreter: the last configuration (dict) after at most max_steps.
    fn run<'py>(&self, py: Python<'py>, input: Vec<String>, max_steps: u64) -> PyResult<Bound<'py, PyDict>> {
        let w = self.word(py, &input)?;
        let tm = self.tm.clone();
        let r = py.detach(move || tm.run(&w, max_steps));
        config_dict(py, &self.tm, &r.to_config())
    }
    /// The configurations c_0, c_1, ... (at most `limit` of them).
    fn configs<'py>(&self, py: Python<'py>, input: Vec<String>, max_steps: u64, limit: usize) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let w = self.word(py, &input)?;
        self.tm.configs(&w, max_steps).take(limit).map(|c| config_dict(py, &self.tm, &c)).collect()
    }
    fn __eq__(&self, other: &PyTuringMachine) -> bool {
        self.tm == other.tm
    }
}

#[pyclass(name = "CompiledTM", module = "rnnsim._core", frozen)]
pub struct PyCompiledTm {
    c: Arc<CompiledTm>,
}

/// Theorem 4.6: a Turing machine as a simple slu RNN, one tick per step.
#[pyfunction]
#[pyo3(signature = (tm, encoding="base4", base=None, counter=true, penalty="tight"))]
pub fn compile_tm(py: Python<'_>, tm: &PyTuringMachine, encoding: &str, base: Option<u32>, counter: bool, penalty: &str) -> PyResult<PyCompiledTm> {
    let mut p = Vec::new();
    let encoding = match encoding {
        "base4" => Encoding::Base4,
        "cantor3" => Encoding::Cantor3,
        other => {
            p.push(format!("unknown encoding {other:?}: expected \"base4\" or \"cantor3\""));
            Encoding::Base4
        }
    };
    let penalty = match penalty {
        "tight" => Penalty::Tight,
        "syntactic" => Penalty::Syntactic,
        other => {
            p.push(format!("unknown penalty {other:?}: expected \"tight\" or \"syntactic\""));
            Penalty::Tight
        }
    };
    if base.is_some() && encoding == Encoding::Cantor3 {
        p.push("base applies to the base4 encoding only".into());
    }
    if !p.is_empty() {
        return Err(to_pyerr(py, SimError::InvalidInput(p)));
    }
    let t = tm.tm.clone();
    let c = py.detach(move || tm_to_rnn(&t, TmOptions { encoding, base, counter, penalty })).map_err(err(py))?;
    Ok(PyCompiledTm { c: Arc::new(c) })
}

fn dtype(py: Python<'_>, name: &str) -> PyResult<Dtype> {
    Dtype::parse(name).map_err(err(py))
}

/// A decoded configuration as a dict: state, head, offset, tape (names), loading, verdict.
fn view_dict<'py>(py: Python<'py>, tm: &TuringMachine, v: &TmView) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (offset, cells) = v.tape_window(tm.blank);
    d.set_item("state", &tm.states[v.state])?;
    d.set_item("head", v.head)?;
    d.set_item("offset", offset)?;
    d.set_item("tape", cells.iter().map(|&s| tm.tape_alphabet[s].clone()).collect::<Vec<_>>())?;
    d.set_item("loading", v.loading)?;
    d.set_item("verdict", v.verdict)?;
    Ok(d)
}

impl PyCompiledTm {
    fn word(&self, py: Python<'_>, word: &[String]) -> PyResult<Vec<usize>> {
        let refs: Vec<&str> = word.iter().map(|s| s.as_str()).collect();
        self.c.tm.encode_input(&refs).map_err(err(py))
    }
}

#[pymethods]
impl PyCompiledTm {
    #[getter]
    fn network(&self) -> PySimpleRnn {
        PySimpleRnn::wrap(self.c.network.clone())
    }
    #[getter]
    fn machine(&self) -> PyTuringMachine {
        wrap(self.c.tm.clone())
    }
    #[getter]
    fn encoding(&self) -> &'static str {
        match self.c.layout.options.encoding {
            Encoding::Base4 => "base4",
            Encoding::Cantor3 => "cantor3",
        }
    }
    /// (base of the left stack, base of the right stack)
    #[getter]
    fn bases(&self) -> (u32, u32) {
        (self.c.base_l, self.c.base_r)
    }
    #[getter]
    fn unit_names(&self) -> Vec<String> {
        self.c.layout.unit_names.clone()
    }
    /// gate | step | copy | double | load | loadbig per unit
    #[getter]
    fn unit_kinds(&self) -> Vec<&'static str> {
        self.c
            .layout
            .unit_kinds
            .iter()
            .map(|k| match k {
                UnitKind::Gate => "gate",
                UnitKind::Step => "step",
                UnitKind::Copy => "copy",
                UnitKind::Double => "double",
                UnitKind::Load => "load",
                UnitKind::LoadBig => "loadbig",
            })
            .collect()
    }
    /// Input column names: the input alphabet, then "EOS".
    #[getter]
    fn input_columns(&self) -> Vec<String> {
        let mut v = self.c.tm.input_alphabet.clone();
        v.push("EOS".into());
        v
    }
    /// The input matrix for `word` then EOS up to `ticks` rows, as (shape, ["0"/"1"]).
    fn encode(&self, py: Python<'_>, word: Vec<String>, ticks: usize) -> PyResult<(Vec<usize>, Vec<String>)> {
        let w = self.word(py, &word)?;
        let rows = self.c.encode(&w, ticks);
        let cols = self.c.layout.eos() + 1;
        Ok((vec![rows.len(), cols], rows.iter().flatten().map(|r| r.to_string()).collect()))
    }
    /// The configuration a hidden state encodes, exactly (InvalidInputError if none).
    fn decode<'py>(&self, py: Python<'py>, h: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let mut problems = Vec::new();
        let t = read_tensor("h", h, true, &mut problems);
        if !problems.is_empty() {
            return Err(to_pyerr(py, SimError::InvalidInput(problems)));
        }
        let h = t.map(|t| t.into_rationals()).unwrap_or_default();
        let v = self.c.decode(&h).map_err(err(py))?;
        view_dict(py, &self.c.tm, &v)
    }
    /// Runs the network on `word` then EOS until the readout says stop or max_steps.
    #[pyo3(signature = (word, dtype="exact", max_steps=10_000_000, max_bits=DEFAULT_MAX_BITS, progress=None))]
    fn run<'py>(&self, py: Python<'py>, word: Vec<String>, dtype: &str, max_steps: u64, max_bits: u64, progress: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyDict>> {
        let (w, dt) = (self.word(py, &word)?, self::dtype(py, dtype)?);
        let c = self.c.clone();
        let total = max_steps.saturating_add(w.len() as u64);
        let r = run_interruptible(py, progress, total, None, move |ctl| run_tm(&c, &w, dt, max_steps, max_bits, ctl))?;
        let d = PyDict::new(py);
        d.set_item("ticks", r.ticks)?;
        d.set_item("steps", r.steps)?;
        d.set_item("halted", r.halted)?;
        d.set_item("output", r.output)?;
        d.set_item("bits", r.bits)?;
        match &r.view {
            Ok(v) => d.set_item("config", view_dict(py, &self.c.tm, v)?)?,
            Err(e) => d.set_item("decode_error", e)?,
        }
        Ok(d)
    }
    /// The exact network against the interpreter, configuration by configuration: None, or
    /// the first mismatch as a dict.
    #[pyo3(signature = (word, max_steps=100_000))]
    fn verify<'py>(&self, py: Python<'py>, word: Vec<String>, max_steps: u64) -> PyResult<Option<Bound<'py, PyDict>>> {
        let w = self.word(py, &word)?;
        let c = self.c.clone();
        let m = run_interruptible(py, None, 0, None, move |ctl| verify_tm(&c, &w, max_steps, DEFAULT_MAX_BITS, ctl))?;
        let Some(m) = m else { return Ok(None) };
        let d = PyDict::new(py);
        d.set_item("tick", m.tick)?;
        d.set_item("step", m.step)?;
        d.set_item("expected", view_dict(py, &self.c.tm, &m.expected)?)?;
        match &m.got {
            Ok(v) => d.set_item("got", view_dict(py, &self.c.tm, v)?)?,
            Err(e) => d.set_item("got", e)?,
        }
        d.set_item("expected_output", m.expected_output)?;
        d.set_item("got_output", m.got_output)?;
        Ok(Some(d))
    }
    /// First TM step where the `dtype` run decodes differently from the exact run, or None.
    #[pyo3(signature = (word, dtype="f64", max_steps=100_000))]
    fn precision_horizon(&self, py: Python<'_>, word: Vec<String>, dtype: &str, max_steps: u64) -> PyResult<Option<u64>> {
        let (w, dt) = (self.word(py, &word)?, self::dtype(py, dtype)?);
        let c = self.c.clone();
        run_interruptible(py, None, 0, None, move |ctl| precision_horizon(&c, &w, dt, max_steps, DEFAULT_MAX_BITS, ctl))
    }
    /// A stepper for traces: the network fed `word` then EOS, one tick at a time.
    #[pyo3(signature = (word, dtype="exact", max_bits=DEFAULT_MAX_BITS))]
    fn tracer(&self, py: Python<'_>, word: Vec<String>, dtype: &str, max_bits: u64) -> PyResult<PyTmTrace> {
        let (w, dt) = (self.word(py, &word)?, self::dtype(py, dtype)?);
        let t = TmTicker::new(self.c.clone(), &w, dt, max_bits).map_err(err(py))?;
        Ok(PyTmTrace { t: Mutex::new(t) })
    }
}

/// One network tick at a time, for traces (`CompiledTM.trace` in Python).
#[pyclass(name = "TmTrace", module = "rnnsim._core", frozen)]
pub struct PyTmTrace {
    t: Mutex<TmTicker>,
}

impl PyTmTrace {
    fn lock(&self) -> std::sync::MutexGuard<'_, TmTicker> {
        self.t.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PyTmTrace {
    /// Advances `n` ticks (GIL released, Ctrl-C stops it); stops early when the readout
    /// turns nonzero if `stop_on_halt`. Returns the ticks done.
    #[pyo3(signature = (n=1, stop_on_halt=true))]
    fn advance(&self, py: Python<'_>, n: u64, stop_on_halt: bool) -> PyResult<u64> {
        let me = &self.t;
        run_interruptible(py, None, n, None, move |ctl| {
            let mut t = me.lock().unwrap_or_else(|e| e.into_inner());
            for i in 0..n {
                ctl.check()?;
                t.advance()?;
                if i % 1024 == 0 {
                    ctl.advance(1024);
                }
                if stop_on_halt && t.tick > t.word_len() && t.signal() != 0 {
                    return Ok(i + 1);
                }
            }
            Ok(n)
        })
    }
    #[getter]
    fn tick(&self) -> u64 {
        self.lock().tick
    }
    /// TM steps performed so far.
    #[getter]
    fn steps(&self) -> u64 {
        self.lock().steps()
    }
    #[getter]
    fn loading(&self) -> bool {
        let t = self.lock();
        t.tick < t.word_len()
    }
    /// The readout rounded to −1/0/+1.
    #[getter]
    fn signal(&self) -> i32 {
        self.lock().signal()
    }
    /// The readout's exact value (Fraction).
    fn output(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fr = fraction_type(py)?;
        let y = self.lock().net.output();
        Ok(py_rationals(py, &fr, &y)?.into_any().unbind())
    }
    /// The hidden state's exact values (Fractions; a float state's binary values exactly).
    fn state(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fr = fraction_type(py)?;
        let h = self.lock().net.state();
        Ok(py_rationals(py, &fr, &h)?.into_any().unbind())
    }
    /// The hidden state as floats (exact runs: nearest f64).
    fn state_f64(&self) -> Vec<f64> {
        self.lock().net.state_f64()
    }
    /// Largest bit size of the exact state (0 for floats).
    #[getter]
    fn bits(&self) -> u64 {
        self.lock().net.bits()
    }
    /// The decoded configuration (dict), or a string saying why it does not decode. Float
    /// states are read as the network reads them, at most `depth` symbols per stack
    /// (default: as many as the format resolves).
    #[pyo3(signature = (depth=None))]
    fn config<'py>(&self, py: Python<'py>, depth: Option<usize>) -> PyResult<Py<PyAny>> {
        let t = self.lock();
        let v = match depth {
            Some(d) => t.view_with_depth(d),
            None => t.view(),
        };
        match v {
            Ok(v) => Ok(view_dict(py, &t.ctm.tm, &v)?.into_any().unbind()),
            Err(e) => Ok(e.to_string().into_pyobject(py)?.into_any().unbind()),
        }
    }
}
