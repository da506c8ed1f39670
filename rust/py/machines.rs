//! Machines and their constructions: `DFA`, `CompiledDFA`, `extract`.

use crate::compile::dfa_to_rnn::{dfa_to_rnn, CompiledDfa};
use crate::error::SimError;
use crate::extract::rnn_to_dfa;
use crate::machine::dfa::Dfa;
use crate::machine::tomita;
use crate::num::dtype::Dtype;
use crate::num::rational::parse_rational;
use crate::py::convert::{fraction_type, py_rationals, read_tensor, to_pyerr};
use crate::py::interrupt::run_interruptible;
use crate::py::network::PySimpleRnn;
use malachite::Rational;
use pyo3::prelude::*;
use std::sync::Arc;

#[pyclass(name = "DFA", module = "rnnsim._core", frozen)]
pub struct PyDfa {
    pub dfa: Arc<Dfa>,
}

fn wrap(dfa: Dfa) -> PyDfa {
    PyDfa { dfa: Arc::new(dfa) }
}

fn err(py: Python<'_>) -> impl Fn(SimError) -> PyErr + '_ {
    move |e| to_pyerr(py, e)
}

impl PyDfa {
    fn word(&self, py: Python<'_>, word: Vec<String>) -> PyResult<Vec<usize>> {
        let refs: Vec<&str> = word.iter().map(|s| s.as_str()).collect();
        self.dfa.encode_word(&refs).map_err(err(py))
    }
    fn names(&self, word: &[usize]) -> Vec<String> {
        word.iter().map(|&a| self.dfa.alphabet[a].clone()).collect()
    }
}

#[pymethods]
impl PyDfa {
    /// Validates (every problem at once, InvalidMachineError) and builds the DFA.
    #[new]
    fn new(py: Python<'_>, states: Vec<String>, alphabet: Vec<String>, transitions: Vec<(String, String, String)>, start: String, accept: Vec<String>) -> PyResult<Self> {
        Dfa::new(states, alphabet, transitions, start, accept).map(wrap).map_err(err(py))
    }
    #[getter]
    fn states(&self) -> Vec<String> {
        self.dfa.states.clone()
    }
    #[getter]
    fn alphabet(&self) -> Vec<String> {
        self.dfa.alphabet.clone()
    }
    #[getter]
    fn start(&self) -> String {
        self.dfa.states[self.dfa.start].clone()
    }
    #[getter]
    fn accept(&self) -> Vec<String> {
        (0..self.dfa.states.len()).filter(|&q| self.dfa.accept[q]).map(|q| self.dfa.states[q].clone()).collect()
    }
    /// (state, symbol, next) for every defined transition, in state then symbol order.
    #[getter]
    fn transitions(&self) -> Vec<(String, String, String)> {
        let d = &self.dfa;
        let mut out = Vec::new();
        for (q, row) in d.delta.iter().enumerate() {
            for (a, next) in row.iter().enumerate() {
                if let Some(n) = next {
                    out.push((d.states[q].clone(), d.alphabet[a].clone(), d.states[*n].clone()));
                }
            }
        }
        out
    }
    fn accepts(&self, py: Python<'_>, word: Vec<String>) -> PyResult<bool> {
        let w = self.word(py, word)?;
        Ok(self.dfa.accepts(&w))
    }
    /// The state path q_0..q_n (None after a missing transition).
    fn run(&self, py: Python<'_>, word: Vec<String>) -> PyResult<Vec<Option<String>>> {
        let w = self.word(py, word)?;
        Ok(self.dfa.run(&w).into_iter().map(|q| q.map(|q| self.dfa.states[q].clone())).collect())
    }
    fn is_complete(&self) -> bool {
        self.dfa.is_complete()
    }
    fn complete(&self) -> PyDfa {
        wrap(self.dfa.complete())
    }
    fn minimize(&self) -> PyDfa {
        wrap(self.dfa.minimize())
    }
    /// None if both accept the same language, else a shortest word where they differ.
    fn equivalent(&self, py: Python<'_>, other: &PyDfa) -> PyResult<Option<Vec<String>>> {
        let r = self.dfa.equivalent(&other.dfa).map_err(err(py))?;
        Ok(r.map(|w| self.names(&w)))
    }
    fn to_json(&self) -> String {
        self.dfa.to_json()
    }
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<PyDfa> {
        Dfa::from_json(text).map(wrap).map_err(err(py))
    }
    #[staticmethod]
    fn tomita(py: Python<'_>, n: u32) -> PyResult<PyDfa> {
        tomita::tomita(n).map(wrap).map_err(err(py))
    }
    #[staticmethod]
    fn parity() -> PyDfa {
        wrap(tomita::parity())
    }
    #[staticmethod]
    fn random(n_states: usize, n_symbols: usize, seed: u64) -> PyDfa {
        wrap(Dfa::random(n_states, n_symbols, seed))
    }
    fn __eq__(&self, other: &PyDfa) -> bool {
        self.dfa == other.dfa
    }
}

#[pyclass(name = "CompiledDFA", module = "rnnsim._core", frozen)]
pub struct PyCompiledDfa {
    c: Arc<CompiledDfa>,
}

/// Compiles a DFA into a simple ReLU RNN (Theorem 4.3 via Lemma 4.4).
#[pyfunction]
pub fn compile_dfa(py: Python<'_>, dfa: &PyDfa) -> PyResult<PyCompiledDfa> {
    let d = dfa.dfa.clone();
    let c = py.detach(move || dfa_to_rnn(&d)).map_err(err(py))?;
    Ok(PyCompiledDfa { c: Arc::new(c) })
}

fn dtype(py: Python<'_>, name: &str) -> PyResult<Dtype> {
    Dtype::parse(name).map_err(err(py))
}

#[pymethods]
impl PyCompiledDfa {
    #[getter]
    fn network(&self) -> PySimpleRnn {
        PySimpleRnn::wrap(self.c.network.clone())
    }
    #[getter]
    fn dfa(&self) -> PyDfa {
        wrap(self.c.dfa.clone())
    }
    /// Symbol names as words to symbol indices (InvalidInputError for unknown symbols).
    fn word(&self, py: Python<'_>, word: Vec<String>) -> PyResult<Vec<usize>> {
        let refs: Vec<&str> = word.iter().map(|s| s.as_str()).collect();
        self.c.dfa.encode_word(&refs).map_err(err(py))
    }
    /// The input matrix (T, |Σ|) fed for `word`, as (shape, ["p/q", ...]).
    fn encode(&self, py: Python<'_>, word: Vec<String>) -> PyResult<(Vec<usize>, Vec<String>)> {
        let w = self.word(py, word)?;
        let flat = self.c.encode_flat(&w).map_err(err(py))?;
        Ok((vec![w.len(), self.c.n_symbols()], flat.iter().map(|r| r.to_string()).collect()))
    }
    /// The DFA state a hidden state encodes (InvalidInputError if it encodes none).
    fn decode(&self, py: Python<'_>, h: &Bound<'_, PyAny>) -> PyResult<String> {
        let mut problems = Vec::new();
        let t = read_tensor("h", h, true, &mut problems);
        if !problems.is_empty() {
            return Err(to_pyerr(py, SimError::InvalidInput(problems)));
        }
        let h = t.map(|t| t.into_rationals()).unwrap_or_default();
        let q = self.c.decode(&h).map_err(err(py))?;
        Ok(self.c.dfa.states[q].clone())
    }
    #[pyo3(signature = (word, dtype="exact"))]
    fn accepts(&self, py: Python<'_>, word: Vec<String>, dtype: &str) -> PyResult<bool> {
        let (w, dt) = (self.word(py, word)?, self::dtype(py, dtype)?);
        let c = self.c.clone();
        run_interruptible(py, None, 1, None, move |ctl| c.accepts(&w, dt, ctl))
    }
    #[pyo3(signature = (words, dtype="exact", threads=None, progress=None))]
    fn accepts_batch(&self, py: Python<'_>, words: Vec<Vec<String>>, dtype: &str, threads: Option<usize>, progress: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<bool>> {
        let dt = self::dtype(py, dtype)?;
        let ws = words.into_iter().map(|w| self.word(py, w)).collect::<PyResult<Vec<_>>>()?;
        let c = self.c.clone();
        let n = ws.len() as u64;
        run_interruptible(py, progress, n, threads, move |ctl| c.accepts_batch(&ws, dt, threads, ctl))
    }
    /// Every word up to max_len through the network vs the DFA: None or a counterexample.
    #[pyo3(signature = (max_len, dtype="f32", threads=None))]
    fn verify(&self, py: Python<'_>, max_len: usize, dtype: &str, threads: Option<usize>) -> PyResult<Option<Vec<String>>> {
        let dt = self::dtype(py, dtype)?;
        let c = self.c.clone();
        let r = run_interruptible(py, None, 0, threads, move |ctl| c.verify(max_len, dt, threads, ctl))?;
        Ok(r.map(|w| w.iter().map(|&a| self.c.dfa.alphabet[a].clone()).collect()))
    }
    /// Each symbol with its one-hot input vector (Fractions).
    fn alphabet_vectors(&self, py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let fr = fraction_type(py)?;
        self.c
            .alphabet_vectors()
            .iter()
            .map(|(s, v)| Ok((s.clone(), py_rationals(py, &fr, v)?.into_any().unbind())))
            .collect()
    }
}

/// Theorem 4.5: the minimal DFA of the language a network recognises.
#[pyfunction]
#[pyo3(signature = (net, alphabet, threshold="1/2", max_states=100_000))]
pub fn extract_dfa(py: Python<'_>, net: &PySimpleRnn, alphabet: Vec<(String, Bound<'_, PyAny>)>, threshold: &str, max_states: usize) -> PyResult<PyDfa> {
    let mut problems = Vec::new();
    let mut symbols: Vec<(String, Vec<Rational>)> = Vec::new();
    for (name, vec) in &alphabet {
        if let Some(t) = read_tensor(&format!("alphabet[{name:?}]"), vec, true, &mut problems) {
            symbols.push((name.clone(), t.into_rationals()));
        }
    }
    let thr = parse_rational(threshold).map_err(|e| problems.push(format!("threshold: {e}"))).ok();
    if !problems.is_empty() {
        return Err(to_pyerr(py, SimError::InvalidInput(problems)));
    }
    let thr = thr.unwrap_or_else(|| Rational::from(0));
    let n = net.net.clone();
    run_interruptible(py, None, 0, None, move |ctl| rnn_to_dfa::extract(&n, &symbols, &thr, max_states, ctl)).map(wrap)
}

/// Lemma 4.4: h_t = U·ReLU(V h_{t−1} + W x_t + b), y_t = out_w h_t + out_b, h_0 = s
/// → one simple RNN (hidden k + 1) whose readout gives the same y_t at every t ≥ 0.
#[pyfunction]
#[pyo3(signature = (s, u, v, w, b, out_w, out_b, activation="relu"))]
#[allow(clippy::too_many_arguments)]
pub fn two_layer_to_rnn(
    py: Python<'_>,
    s: &Bound<'_, PyAny>,
    u: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    w: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    out_w: &Bound<'_, PyAny>,
    out_b: &Bound<'_, PyAny>,
    activation: &str,
) -> PyResult<PySimpleRnn> {
    use crate::compile::two_layer_to_rnn::{two_layer_to_rnn as lemma, TwoLayerStep};
    use crate::net::activation::Activation;
    use crate::net::matrix::RatMatrix;
    let mut problems = Vec::new();
    let mut read = |name: &str, obj: &Bound<'_, PyAny>, ndim: usize| -> (Vec<usize>, Vec<Rational>) {
        match read_tensor(name, obj, true, &mut problems) {
            Some(t) if t.shape.len() == ndim => (t.shape.clone(), t.into_rationals()),
            Some(t) => {
                problems.push(format!("{name} must have {ndim} dimension(s), got shape {:?}", t.shape));
                (vec![0; ndim], Vec::new())
            }
            None => (vec![0; ndim], Vec::new()),
        }
    };
    let m = |(shape, data): (Vec<usize>, Vec<Rational>)| {
        if data.len() == shape.iter().product::<usize>() && shape.len() == 2 {
            RatMatrix::from_dense(shape[0], shape[1], data)
        } else {
            RatMatrix::zeros(0, 0)
        }
    };
    let step = TwoLayerStep {
        s: read("s", s, 1).1,
        u: m(read("U", u, 2)),
        v: m(read("V", v, 2)),
        w: m(read("W", w, 2)),
        b: read("b", b, 1).1,
        out_w: m(read("out_w", out_w, 2)),
        out_b: read("out_b", out_b, 1).1,
    };
    if !problems.is_empty() {
        return Err(to_pyerr(py, SimError::InvalidNetwork(problems)));
    }
    let act = Activation::parse(activation).map_err(err(py))?;
    let net = lemma(&step, act).map_err(err(py))?;
    Ok(PySimpleRnn::wrap(net))
}
