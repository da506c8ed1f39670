//! Tick-by-tick runs of any network (`NetTrace`), for the tracer: the network fed a fixed
//! input matrix one row per tick, its state readable between ticks.

use crate::error::SimError;
use crate::num::dtype::Dtype;
use crate::py::convert::{fraction_type, py_rationals, read_tensor, to_pyerr};
use crate::py::interrupt::run_interruptible;
use crate::py::network::PySimpleRnn;
use crate::sim::exact_engine::DEFAULT_MAX_BITS;
use crate::sim::ticker::{ticker, NetTicker};
use malachite::Rational;
use pyo3::prelude::*;
use std::sync::Mutex;

struct State {
    net: Box<dyn NetTicker>,
    rows: Vec<Vec<Rational>>,
    tick: usize,
}

#[pyclass(name = "NetTrace", module = "rnnsim._core", frozen)]
pub struct PyNetTrace {
    s: Mutex<State>,
}

impl PyNetTrace {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.s.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PyNetTrace {
    /// `x`: the (T, input_size) input matrix, one row per tick.
    #[new]
    #[pyo3(signature = (net, x, dtype="exact", max_bits=DEFAULT_MAX_BITS))]
    fn new(py: Python<'_>, net: &PySimpleRnn, x: &Bound<'_, PyAny>, dtype: &str, max_bits: u64) -> PyResult<Self> {
        let mut problems = Vec::new();
        let t = read_tensor("x", x, true, &mut problems);
        let n_in = net.net.input_size();
        let rows = match t {
            Some(t) if t.shape.len() == 2 && t.shape[1] == n_in => {
                let r = t.shape[0];
                let flat = t.into_rationals();
                (0..r).map(|i| flat[i * n_in..(i + 1) * n_in].to_vec()).collect()
            }
            Some(t) => {
                problems.push(format!("x must have shape (T, {n_in}), got {:?}", t.shape));
                Vec::new()
            }
            None => Vec::new(),
        };
        if !problems.is_empty() {
            return Err(to_pyerr(py, SimError::InvalidInput(problems)));
        }
        let dt = Dtype::parse(dtype).map_err(|e| to_pyerr(py, e))?;
        let n = ticker(&net.net, dt, max_bits).map_err(|e| to_pyerr(py, e))?;
        Ok(PyNetTrace { s: Mutex::new(State { net: n, rows, tick: 0 }) })
    }
    /// Feeds up to `n` more rows (GIL released); returns how many were fed.
    fn advance(&self, py: Python<'_>, n: usize) -> PyResult<usize> {
        let me = &self.s;
        run_interruptible(py, None, n as u64, None, move |ctl| {
            let mut s = me.lock().unwrap_or_else(|e| e.into_inner());
            let mut done = 0;
            while done < n && s.tick < s.rows.len() {
                ctl.check()?;
                let row = s.rows[s.tick].clone();
                s.net.tick(&row)?;
                s.tick += 1;
                done += 1;
            }
            Ok(done)
        })
    }
    #[getter]
    fn tick(&self) -> usize {
        self.lock().tick
    }
    #[getter]
    fn length(&self) -> usize {
        self.lock().rows.len()
    }
    #[getter]
    fn bits(&self) -> u64 {
        self.lock().net.bits()
    }
    fn state(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fr = fraction_type(py)?;
        let h = self.lock().net.state();
        Ok(py_rationals(py, &fr, &h)?.into_any().unbind())
    }
    fn state_f64(&self) -> Vec<f64> {
        self.lock().net.state_f64()
    }
    fn output(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fr = fraction_type(py)?;
        let y = self.lock().net.output();
        Ok(py_rationals(py, &fr, &y)?.into_any().unbind())
    }
}
