//! `rnnsim._core.SimpleRNN`: construction, exact parameter views, runs, batches, JSON.

use crate::error::SimError;
use crate::net::activation::Activation;
use crate::net::json;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::{shape_problems, Linear, Shapes, SimpleRnn};
use crate::num::custom_float::{with_format, Custom};
use crate::num::dtype::Dtype;
use crate::num::f32_sums::{Bf16SumF32, F16SumF32};
use crate::num::exact_vector::ExactVector;
use crate::num::rational::rational_to_string;
use crate::py::convert::{fraction_type, py_exact_vector, py_rationals, read_input, read_tensor, to_pyerr, Tensor, ToNumpy};
use crate::py::interrupt::run_interruptible;
use crate::sim::exact_engine::ExactPlan;
use crate::num::float::Float;
use crate::sim::float_engine::FloatPlan;
use crate::sim::plan_cache::PlanCache;
use crate::sim::run::{run_batch_exact, run_batch_float, run_exact, run_float, BatchSpec, Keep};
use half::{bf16, f16};
use malachite::Rational;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Arc;

#[pyclass(name = "SimpleRNN", module = "rnnsim._core", frozen)]
pub struct PySimpleRnn {
    pub net: Arc<SimpleRnn>,
    /// float plans of the builtin formats, built on first use (`sim::plan_cache`)
    plans: PlanCache,
}

impl PySimpleRnn {
    pub fn wrap(net: SimpleRnn) -> Self {
        PySimpleRnn { net: Arc::new(net), plans: PlanCache::default() }
    }

    /// The float plan of F: cached for the builtin formats, fresh for a custom format;
    /// `approx`: with the approximate tanh/σ (a cache entry of its own).
    fn float_plan<F: Float>(&self, py: Python<'_>, approx: bool) -> PyResult<Arc<FloatPlan<F>>> {
        self.plans.for_number_approx::<F, _>(approx, || FloatPlan::<F>::try_new(&self.net)).map_err(|e| to_pyerr(py, e))
    }
}

fn matrix(shape: &[usize], data: Vec<Rational>) -> RatMatrix {
    match shape {
        [r, c] => RatMatrix::from_dense(*r, *c, data),
        _ => RatMatrix::from_dense(data.len(), 1, data),
    }
}

fn tensor_pair(py: Python<'_>, shape: Vec<usize>, data: &[Rational]) -> PyResult<Py<PyAny>> {
    let strings: Vec<String> = data.iter().map(rational_to_string).collect();
    Ok((shape, strings).into_pyobject(py)?.into_any().unbind())
}

fn input_problem(msg: String) -> SimError {
    SimError::InvalidInput(vec![msg])
}

impl PySimpleRnn {
    fn read_h0(&self, py: Python<'_>, h0: &Bound<'_, PyAny>, exact: bool, batch: Option<usize>) -> PyResult<Tensor> {
        let mut problems = Vec::new();
        let t = read_tensor("h0", h0, exact, &mut problems);
        let d = self.net.hidden_size();
        if let Some(t) = &t {
            let ok = match batch {
                None => t.shape == [d],
                Some(b) => t.shape == [1, b, d] || t.shape == [b, d],
            };
            if !ok {
                let want = match batch {
                    None => format!("({d},)"),
                    Some(b) => format!("(1, {b}, {d}) or ({b}, {d})"),
                };
                problems.push(format!("h0 must have shape {want}, got {:?}", t.shape));
            }
        }
        match (t, problems.is_empty()) {
            (Some(t), true) => Ok(t),
            _ => Err(to_pyerr(py, SimError::InvalidInput(problems))),
        }
    }
}

pub(crate) fn parse_dtype(py: Python<'_>, dtype: &str) -> PyResult<Dtype> {
    Dtype::parse(dtype).map_err(|e| to_pyerr(py, e))
}

/// What `accumulate=` asks for: None (the format's own sums) or f32 sums for a half format
/// (`num::f32_sums`). "f32" with dtype="f32" is f32's own sums; other dtypes refuse it
/// (UnsupportedError), other values are InvalidInputError.
pub(crate) fn f32_sums(py: Python<'_>, dt: Dtype, accumulate: Option<&str>) -> PyResult<bool> {
    match accumulate {
        None => Ok(false),
        Some("f32") => match dt {
            Dtype::Bf16 | Dtype::F16 => Ok(true),
            Dtype::F32 => Ok(false),
            _ => Err(to_pyerr(
                py,
                SimError::Unsupported(format!(
                    "accumulate=\"f32\" is defined for dtype=\"bf16\" and \"f16\" (and \"f32\", whose own sums it names), not {:?}",
                    dt.name()
                )),
            )),
        },
        Some(other) => Err(to_pyerr(py, input_problem(format!("accumulate must be None or \"f32\", got {other:?}")))),
    }
}

/// `approx_activations=True` is for f32 only: UnsupportedError otherwise.
pub(crate) fn require_approx_format(py: Python<'_>, dt: Dtype, approx: bool) -> PyResult<()> {
    if approx && dt != Dtype::F32 {
        let msg = format!(
            "approx_activations=True is defined for dtype=\"f32\" only, not {:?}: f16 and bf16 look their \
             correctly rounded tanh and sigmoid up in tables (as fast), and f64, custom formats and exact \
             runs have no approximation",
            dt.name()
        );
        return Err(to_pyerr(py, SimError::Unsupported(msg)));
    }
    Ok(())
}

/// The canonical name of a dtype ("f32", "fp(10,5)", ...); InvalidInputError if unknown
/// or if a custom format is out of range.
#[pyfunction]
pub fn dtype_name(py: Python<'_>, dtype: &str) -> PyResult<&'static str> {
    Ok(parse_dtype(py, dtype)?.name())
}

fn float_run<F: ToNumpy>(py: Python<'_>, this: &PySimpleRnn, x: Tensor, h0: Option<&Tensor>, fma: bool, approx: bool) -> PyResult<Py<PyAny>> {
    let plan = this.float_plan::<F>(py, approx)?;
    let steps = x.shape[0];
    let xs: Vec<F> = x.into_format(Some(1));
    let start: Vec<F> = h0.map_or_else(|| plan.h0.clone(), |h| h.to_format());
    let (states, outputs) = run_interruptible(py, None, steps as u64, None, |ctl| run_float(&plan, &start, &xs, steps, fma, ctl))?;
    let out = PyDict::new(py);
    out.set_item("states", F::to_numpy(py, states, vec![steps + 1, plan.d])?)?;
    out.set_item("outputs", F::to_numpy(py, outputs, vec![steps + 1, plan.n_out])?)?;
    Ok(out.into_any().unbind())
}

#[allow(clippy::too_many_arguments)]
fn float_batch<F: ToNumpy>(
    py: Python<'_>,
    this: &PySimpleRnn,
    x: Tensor,
    h0: Option<&Tensor>,
    spec: &BatchSpec,
    progress: Option<&Bound<'_, PyAny>>,
    approx: bool,
) -> PyResult<Py<PyAny>> {
    let plan = this.float_plan::<F>(py, approx)?;
    let xs: Vec<F> = x.into_format(spec.threads);
    let start: Option<Vec<F>> = h0.map(|h| h.to_format());
    let res = run_interruptible(py, progress, spec.batch as u64, spec.threads, |ctl| {
        run_batch_float(&plan, &xs, start.as_deref(), spec, ctl)
    })?;
    crate::sim::recycle::give(xs);
    let (b, t, d, o) = (spec.batch, spec.steps, plan.d, plan.n_out);
    let out = PyDict::new(py);
    if spec.keep.states() {
        out.set_item("states", F::to_numpy(py, res.states, vec![b, t, d])?)?;
    }
    if spec.keep.extras() {
        out.set_item("outputs", F::to_numpy(py, res.outputs, vec![b, t, o])?)?;
    }
    out.set_item("final", F::to_numpy(py, res.final_states, vec![1, b, d])?)?;
    out.set_item("final_outputs", F::to_numpy(py, res.final_outputs, vec![b, o])?)?;
    Ok(out.into_any().unbind())
}

#[pymethods]
impl PySimpleRnn {
    /// Builds a network from tensors handed over by rnnsim's Python layer; every problem
    /// with any parameter is reported in one InvalidNetworkError.
    #[new]
    #[pyo3(signature = (v, w, b, h0=None, activation="relu", readout=None, problems=Vec::new()))]
    #[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
    fn new(
        py: Python<'_>,
        v: &Bound<'_, PyAny>,
        w: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
        h0: Option<&Bound<'_, PyAny>>,
        activation: &str,
        readout: Option<(Bound<'_, PyAny>, Bound<'_, PyAny>)>,
        problems: Vec<String>,
    ) -> PyResult<Self> {
        // `problems` carries what the Python layer already found, so one error lists everything
        let mut problems = problems;
        let act = Activation::parse(activation).map_err(|e| problems.push(e.to_string())).ok();
        let v = read_tensor("V", v, true, &mut problems);
        let w = read_tensor("W", w, true, &mut problems);
        let b = read_tensor("b", b, true, &mut problems);
        let h0 = h0.and_then(|h| read_tensor("h0", h, true, &mut problems));
        let ro = readout.map(|(rw, rb)| (read_tensor("readout w", &rw, true, &mut problems), read_tensor("readout b", &rb, true, &mut problems)));
        let shape = |t: &Option<Tensor>| t.as_ref().map_or_else(Vec::new, |t| t.shape.clone());
        let shapes = Shapes {
            v: shape(&v),
            w: shape(&w),
            b: shape(&b),
            h0: h0.as_ref().map(|t| t.shape.clone()),
            readout: ro.as_ref().map(|(a, c)| (shape(a), shape(c))),
        };
        if v.is_some() && w.is_some() && b.is_some() {
            problems.extend(shape_problems(&shapes));
        }
        if !problems.is_empty() {
            return Err(to_pyerr(py, SimError::InvalidNetwork(problems)));
        }
        let (Some(v), Some(w), Some(b), Some(act)) = (v, w, b, act) else {
            return Err(to_pyerr(py, SimError::invalid_network("incomplete parameters")));
        };
        let readout = match ro {
            Some((Some(rw), Some(rb))) => Some(Linear { w: matrix(&rw.shape.clone(), rw.into_rationals()), b: rb.into_rationals() }),
            _ => None,
        };
        let net = SimpleRnn::new(
            matrix(&v.shape.clone(), v.into_rationals()),
            matrix(&w.shape.clone(), w.into_rationals()),
            b.into_rationals(),
            h0.map(|t| t.into_rationals()),
            act,
            readout,
        )
        .map_err(|e| to_pyerr(py, e))?;
        Ok(PySimpleRnn::wrap(net))
    }

    #[getter]
    fn hidden_size(&self) -> usize {
        self.net.hidden_size()
    }
    #[getter]
    fn input_size(&self) -> usize {
        self.net.input_size()
    }
    #[getter]
    fn output_size(&self) -> usize {
        self.net.output_size()
    }
    #[getter]
    fn activation(&self) -> &'static str {
        self.net.activation.name()
    }
    #[getter]
    fn nonzero_weights(&self) -> usize {
        self.net.nonzero_weights()
    }

    /// Exact parameters: {name: (shape, ["p/q", ...])}; readout entries only with a readout.
    fn params(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let n = &self.net;
        let d = PyDict::new(py);
        d.set_item("V", tensor_pair(py, vec![n.v.rows, n.v.cols], &n.v.to_dense())?)?;
        d.set_item("W", tensor_pair(py, vec![n.w.rows, n.w.cols], &n.w.to_dense())?)?;
        d.set_item("b", tensor_pair(py, vec![n.b.len()], &n.b)?)?;
        d.set_item("h0", tensor_pair(py, vec![n.h0.len()], &n.h0)?)?;
        if let Some(r) = &n.readout {
            d.set_item("readout_w", tensor_pair(py, vec![r.w.rows, r.w.cols], &r.w.to_dense())?)?;
            d.set_item("readout_b", tensor_pair(py, vec![r.b.len()], &r.b)?)?;
        }
        Ok(d.into_any().unbind())
    }

    /// Runs one sequence x (T, input_size): {"states": h_0..h_T, "outputs": y_0..y_T}.
    #[pyo3(signature = (x, dtype="exact", h0=None, max_bits=crate::sim::exact_engine::DEFAULT_MAX_BITS, fma=false, approx_activations=false, accumulate=None))]
    #[allow(clippy::too_many_arguments)]
    fn run(&self, py: Python<'_>, x: &Bound<'_, PyAny>, dtype: &str, h0: Option<&Bound<'_, PyAny>>, max_bits: u64, fma: bool, approx_activations: bool, accumulate: Option<&str>) -> PyResult<Py<PyAny>> {
        let dt = parse_dtype(py, dtype)?;
        require_approx_format(py, dt, approx_activations)?;
        let sums = f32_sums(py, dt, accumulate)?;
        let approx = approx_activations;
        let exact = dt == Dtype::Exact;
        let x = read_input(py, x, dt, 2, self.net.input_size(), Some(1))?;
        let h0 = h0.map(|h| self.read_h0(py, h, exact, None)).transpose()?;
        let net = &*self.net;
        match dt {
            Dtype::Exact => {
                let plan = ExactPlan::new(net, max_bits).map_err(|e| to_pyerr(py, e))?;
                let start = h0.map_or_else(|| plan.h0.clone(), |h| ExactVector::from_rationals(&h.into_rationals()));
                let steps = x.shape[0];
                let xs = x.into_rationals();
                let run = run_interruptible(py, None, steps as u64, None, |ctl| run_exact(&plan, start, &xs, steps, ctl))?;
                let fr = fraction_type(py)?;
                let states = run.states.iter().map(|s| py_exact_vector(py, &fr, s)).collect::<PyResult<Vec<_>>>()?;
                let outputs = run.outputs.iter().map(|o| py_rationals(py, &fr, o)).collect::<PyResult<Vec<_>>>()?;
                let out = PyDict::new(py);
                out.set_item("states", PyList::new(py, states)?)?;
                out.set_item("outputs", PyList::new(py, outputs)?)?;
                Ok(out.into_any().unbind())
            }
            Dtype::F64 => float_run::<f64>(py, self, x, h0.as_ref(), fma, approx),
            Dtype::F32 => float_run::<f32>(py, self, x, h0.as_ref(), fma, approx),
            Dtype::Bf16 if sums => float_run::<Bf16SumF32>(py, self, x, h0.as_ref(), fma, approx),
            Dtype::F16 if sums => float_run::<F16SumF32>(py, self, x, h0.as_ref(), fma, approx),
            Dtype::Bf16 => float_run::<bf16>(py, self, x, h0.as_ref(), fma, approx),
            Dtype::F16 => float_run::<f16>(py, self, x, h0.as_ref(), fma, approx),
            Dtype::Custom(c) => with_format(c, || float_run::<Custom>(py, self, x, h0.as_ref(), fma, approx)),
        }
    }

    /// Runs a batch x (B, T, input_size) in parallel over sequences (GIL released).
    #[pyo3(signature = (x, dtype="f32", h0=None, lengths=None, threads=None, keep="all", max_bits=crate::sim::exact_engine::DEFAULT_MAX_BITS, progress=None, fma=false, approx_activations=false, accumulate=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_batch(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        dtype: &str,
        h0: Option<&Bound<'_, PyAny>>,
        lengths: Option<Vec<i64>>,
        threads: Option<i64>,
        keep: &str,
        max_bits: u64,
        progress: Option<&Bound<'_, PyAny>>,
        fma: bool,
        approx_activations: bool,
        accumulate: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        let dt = parse_dtype(py, dtype)?;
        require_approx_format(py, dt, approx_activations)?;
        let sums = f32_sums(py, dt, accumulate)?;
        let approx = approx_activations;
        let exact = dt == Dtype::Exact;
        let keep = Keep::parse(keep).map_err(|e| to_pyerr(py, e))?;
        let threads = match threads {
            Some(t) if t < 1 => return Err(to_pyerr(py, input_problem(format!("threads must be at least 1, got {t}")))),
            t => t.map(|t| t as usize),
        };
        let x = read_input(py, x, dt, 3, self.net.input_size(), threads)?;
        let (batch, steps) = (x.shape[0], x.shape[1]);
        let h0 = h0.map(|h| self.read_h0(py, h, exact, Some(batch))).transpose()?;
        let lengths = match lengths {
            None => None,
            Some(l) if l.iter().any(|&v| v < 0) => {
                return Err(to_pyerr(py, input_problem("lengths must be non-negative".into())))
            }
            Some(l) => Some(l.into_iter().map(|v| v as usize).collect()),
        };
        let spec = BatchSpec { batch, steps, lengths, keep, threads, fma };
        spec.validate().map_err(|e| to_pyerr(py, e))?;
        let net = &*self.net;
        match dt {
            Dtype::Exact => exact_batch(py, net, x, h0, &spec, max_bits, progress),
            Dtype::F64 => float_batch::<f64>(py, self, x, h0.as_ref(), &spec, progress, approx),
            Dtype::F32 => float_batch::<f32>(py, self, x, h0.as_ref(), &spec, progress, approx),
            Dtype::Bf16 if sums => float_batch::<Bf16SumF32>(py, self, x, h0.as_ref(), &spec, progress, approx),
            Dtype::F16 if sums => float_batch::<F16SumF32>(py, self, x, h0.as_ref(), &spec, progress, approx),
            Dtype::Bf16 => float_batch::<bf16>(py, self, x, h0.as_ref(), &spec, progress, approx),
            Dtype::F16 => float_batch::<f16>(py, self, x, h0.as_ref(), &spec, progress, approx),
            Dtype::Custom(c) => with_format(c, || float_batch::<Custom>(py, self, x, h0.as_ref(), &spec, progress, approx)),
        }
    }

    /// The saved-network JSON text (with optional metadata JSON).
    #[pyo3(signature = (meta=None))]
    fn to_json(&self, py: Python<'_>, meta: Option<&str>) -> PyResult<String> {
        let meta = meta
            .map(serde_json::from_str::<serde_json::Value>)
            .transpose()
            .map_err(|e| to_pyerr(py, input_problem(format!("meta is not valid JSON: {e}"))))?;
        Ok(json::to_json(&self.net, meta.as_ref()))
    }

    /// Parses saved-network JSON: (network, metadata JSON text).
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<(PySimpleRnn, String)> {
        let (net, meta) = json::from_json(text).map_err(|e| to_pyerr(py, e))?;
        Ok((PySimpleRnn::wrap(net), meta.to_string()))
    }
}

fn exact_batch(
    py: Python<'_>,
    net: &SimpleRnn,
    x: Tensor,
    h0: Option<Tensor>,
    spec: &BatchSpec,
    max_bits: u64,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let plan = ExactPlan::new(net, max_bits).map_err(|e| to_pyerr(py, e))?;
    let d = plan.d;
    let starts = h0.map(|h| {
        let r = h.into_rationals();
        r.chunks(d.max(1)).map(ExactVector::from_rationals).collect::<Vec<_>>()
    });
    let xs = x.into_rationals();
    let res = run_interruptible(py, progress, spec.batch as u64, spec.threads, |ctl| run_batch_exact(&plan, &xs, starts, spec, ctl))?;
    let fr = fraction_type(py)?;
    let out = PyDict::new(py);
    if spec.keep.states() {
        let states = res
            .states
            .iter()
            .map(|seq| PyList::new(py, seq.iter().map(|s| py_exact_vector(py, &fr, s)).collect::<PyResult<Vec<_>>>()?))
            .collect::<PyResult<Vec<_>>>()?;
        out.set_item("states", PyList::new(py, states)?)?;
    }
    if spec.keep.extras() {
        let outputs = res
            .outputs
            .iter()
            .map(|seq| PyList::new(py, seq.iter().map(|o| py_rationals(py, &fr, o)).collect::<PyResult<Vec<_>>>()?))
            .collect::<PyResult<Vec<_>>>()?;
        out.set_item("outputs", PyList::new(py, outputs)?)?;
    }
    let finals = res.final_states.iter().map(|s| py_exact_vector(py, &fr, s)).collect::<PyResult<Vec<_>>>()?;
    let final_out = res.final_outputs.iter().map(|o| py_rationals(py, &fr, o)).collect::<PyResult<Vec<_>>>()?;
    out.set_item("final", PyList::new(py, vec![PyList::new(py, finals)?])?)?;
    out.set_item("final_outputs", PyList::new(py, final_out)?)?;
    Ok(out.into_any().unbind())
}
