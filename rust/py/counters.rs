//! `rnnsim._core.Counter`: counter networks for the counting languages (compile::counter_net),
//! their runs in any number format, batches, traces and the parallel precision sweep.

use crate::compile::counter_net::{build, CounterNet};
use crate::error::SimError;
use crate::num::dtype::Dtype;
use crate::num::rational::{parse_rational, rational_to_string};
use crate::num::scalar::Scalar;
use crate::py::cells::PyCellNetwork;
use crate::py::convert::to_pyerr;
use crate::py::interrupt::run_interruptible;
use crate::sim::cancel::Control;
use crate::sim::counter_run::{CounterPlan, SweepFailure};
use crate::sim::dispatch::{dispatch_scalar, ScalarTask};
use crate::sim::pool::with_pool;
use pyo3::prelude::*;
use rayon::prelude::*;
use std::sync::Arc;

#[pyclass(name = "Counter", module = "rnnsim._core", frozen)]
pub struct PyCounter {
    net: Arc<CounterNet>,
}

fn err(py: Python<'_>, e: SimError) -> PyErr {
    to_pyerr(py, e)
}

struct Accepts<'a> {
    net: &'a CounterNet,
    words: &'a [Vec<usize>],
    threads: Option<usize>,
    ctl: &'a Control,
}
impl ScalarTask for Accepts<'_> {
    type Output = crate::error::SimResult<Vec<bool>>;
    fn run<S: Scalar>(self) -> Self::Output {
        CounterPlan::<S>::new(self.net)?.accepts_batch(self.words, self.threads, self.ctl)
    }
}

/// Per tick: the views (as "p/q" strings, or None for NaN/∞), the readout y (string or
/// None), and acceptance.
type TraceRow = (Vec<Option<String>>, Option<String>, bool);

struct Trace<'a> {
    net: &'a CounterNet,
    word: &'a [usize],
}
impl ScalarTask for Trace<'_> {
    type Output = crate::error::SimResult<Vec<TraceRow>>;
    fn run<S: Scalar>(self) -> Self::Output {
        let plan = CounterPlan::<S>::new(self.net)?;
        let show = |v: &S| v.is_finite().then(|| rational_to_string(&v.to_exact()));
        Ok(plan
            .trace(self.word)
            .iter()
            .map(|st| {
                let l0: Vec<_> = st[0].iter().map(|v| v.to_exact()).collect();
                let finite = st[0].iter().all(|v| v.is_finite());
                let views = self.net.parts.views.iter().map(|v| finite.then(|| rational_to_string(&v.eval(&l0)))).collect();
                let y = plan.output(&st[st.len() - 1]);
                (views, show(&y), plan.accepts_state(st))
            })
            .collect())
    }
}

struct Sweep<'a> {
    net: &'a CounterNet,
    max_n: usize,
    ctl: &'a Control,
}
impl ScalarTask for Sweep<'_> {
    type Output = crate::error::SimResult<Option<SweepFailure>>;
    fn run<S: Scalar>(self) -> Self::Output {
        CounterPlan::<S>::new(self.net)?.sweep(self.net, self.max_n, self.ctl)
    }
}

impl PyCounter {
    fn words(&self, py: Python<'_>, words: Vec<Vec<usize>>) -> PyResult<Vec<Vec<usize>>> {
        let n = self.net.language.alphabet().len();
        if let Some(bad) = words.iter().flatten().find(|&&s| s >= n) {
            return Err(err(py, SimError::invalid_input(format!("symbol index {bad} outside the alphabet of {n} symbols"))));
        }
        Ok(words)
    }
}

#[pymethods]
impl PyCounter {
    /// build(language, cell, saturation=None): `saturation` is ρ as a "p/q" string (LSTM only).
    #[staticmethod]
    #[pyo3(signature = (language, cell, saturation=None))]
    fn build(py: Python<'_>, language: &str, cell: &str, saturation: Option<&str>) -> PyResult<Self> {
        let rho = saturation.map(parse_rational).transpose().map_err(|e| err(py, SimError::invalid_input(format!("saturation: {e}"))))?;
        Ok(PyCounter { net: Arc::new(build(language, cell, rho).map_err(|e| err(py, e))?) })
    }

    #[getter]
    fn language(&self) -> &'static str {
        self.net.language.name()
    }
    #[getter]
    fn cell(&self) -> &'static str {
        self.net.cell
    }
    #[getter]
    fn saturation(&self) -> Option<String> {
        self.net.rho.as_ref().map(rational_to_string)
    }
    #[getter]
    fn alphabet(&self) -> Vec<&'static str> {
        self.net.language.alphabet().to_vec()
    }
    #[getter]
    fn view_names(&self) -> Vec<String> {
        self.net.parts.views.iter().map(|v| v.name.clone()).collect()
    }
    /// The network (without the start state and readout) as a CellNetwork core.
    fn network(&self) -> PyCellNetwork {
        PyCellNetwork::wrap(self.net.parts.stack.clone())
    }
    /// Start states per layer as "p/q" strings: (h0 per layer, c0 per layer or None).
    fn starts(&self) -> (Vec<Vec<String>>, Vec<Option<Vec<String>>>) {
        let s = |v: &Vec<_>| v.iter().map(rational_to_string).collect::<Vec<String>>();
        (self.net.parts.h0.iter().map(s).collect(), self.net.parts.c0.iter().map(|c| c.as_ref().map(s)).collect())
    }
    /// The readout (w row, c) as "p/q" strings.
    fn readout(&self) -> (Vec<String>, String) {
        let r = &self.net.parts.readout;
        ((0..r.w.cols).map(|j| rational_to_string(r.w.get(0, j))).collect(), rational_to_string(&r.b[0]))
    }

    /// The views evaluated on layer 0's state [h | c | …] given as "p/q" strings.
    fn decode(&self, py: Python<'_>, state: Vec<String>) -> PyResult<Vec<String>> {
        let vals = state.iter().map(|t| parse_rational(t)).collect::<Result<Vec<_>, _>>().map_err(|e| err(py, SimError::invalid_input(e)))?;
        let need = self.net.parts.views.iter().flat_map(|v| v.terms.iter().map(|t| t.0 + 1)).max().unwrap_or(0);
        if vals.len() < need {
            return Err(err(py, SimError::invalid_input(format!("a layer-0 state of at least {need} values is needed, got {}", vals.len()))));
        }
        Ok(self.net.parts.views.iter().map(|v| rational_to_string(&v.eval(&vals))).collect())
    }

    /// Accept/reject for each word (symbol indices), in parallel through the batch engine.
    #[pyo3(signature = (words, dtype="exact", threads=None))]
    fn accepts_batch(&self, py: Python<'_>, words: Vec<Vec<usize>>, dtype: &str, threads: Option<usize>) -> PyResult<Vec<bool>> {
        let dt = Dtype::parse(dtype).map_err(|e| err(py, e))?;
        if threads == Some(0) {
            return Err(err(py, SimError::invalid_input("threads must be at least 1")));
        }
        let words = self.words(py, words)?;
        let net = &*self.net;
        run_interruptible(py, None, 0, threads, |ctl| dispatch_scalar(dt, Accepts { net, words: &words, threads, ctl }))
    }

    /// Per tick t = 0..T: (views, y, accepting).
    #[pyo3(signature = (word, dtype="exact"))]
    fn trace(&self, py: Python<'_>, word: Vec<usize>, dtype: &str) -> PyResult<Vec<TraceRow>> {
        let dt = Dtype::parse(dtype).map_err(|e| err(py, e))?;
        let word = self.words(py, vec![word])?.remove(0);
        dispatch_scalar(dt, Trace { net: &self.net, word: &word }).map_err(|e| err(py, e))
    }

    /// For each dtype (parallel over formats): None, or (n, prefix, [(symbol, count)], accepted).
    #[pyo3(signature = (dtypes, max_n, threads=None))]
    #[allow(clippy::type_complexity)]
    fn precision_sweep(&self, py: Python<'_>, dtypes: Vec<String>, max_n: usize, threads: Option<usize>) -> PyResult<Vec<Option<(usize, usize, Vec<(usize, usize)>, bool)>>> {
        let dts = dtypes.iter().map(|d| Dtype::parse(d)).collect::<Result<Vec<_>, _>>().map_err(|e| err(py, e))?;
        if threads == Some(0) {
            return Err(err(py, SimError::invalid_input("threads must be at least 1")));
        }
        let net = &*self.net;
        let res = run_interruptible(py, None, 0, threads, |ctl| {
            with_pool(threads, || dts.par_iter().map(|&dt| dispatch_scalar(dt, Sweep { net, max_n, ctl })).collect::<Result<Vec<_>, _>>())?
        })?;
        Ok(res.into_iter().map(|r| r.map(|f| (f.n, f.word.prefix, f.word.runs, f.accepted))).collect())
    }
}
