//! `rnnsim._core.CellNetwork`: gated, deep and second-order networks (a `net::stacked::Stack`
//! of any cells), built from named parts or PyTorch state_dicts, run exactly or in any
//! float format (single sequence or batch, GIL released, Ctrl-C), saturated, saved as JSON.

use crate::error::SimError;
use crate::net::activation::Activation;
use crate::net::cell::Cell;
use crate::net::cell_json::{saved_kind, stack_from_json, stack_to_json};
use crate::net::parts::{Options, Tensors};
use crate::net::stacked::Stack;
use crate::net::torch::{from_state_dict, TorchModule};
use crate::num::custom_float::{with_format, Custom};
use crate::num::dtype::Dtype;
use crate::num::f32_sums::{Bf16SumF32, F16SumF32};
use crate::num::rational::{rational_from_f64, rational_to_string};
use crate::num::scalar::Scalar;
use crate::py::convert::{fraction_type, py_fraction, read_input, read_tensor, to_pyerr, Tensor, ToNumpy, Values};
use crate::py::interrupt::run_interruptible;
use crate::py::network::{f32_sums, parse_dtype, require_approx_format};
use crate::sim::cells::run::Starts;
use crate::sim::cells::StackPlan;
use crate::sim::plan_cache::PlanCache;
use crate::sim::run::{BatchSpec, Keep};
use half::{bf16, f16};
use malachite::Rational;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::collections::BTreeMap;
use std::sync::Arc;

#[pyclass(name = "CellNetwork", module = "rnnsim._core", frozen)]
pub struct PyCellNetwork {
    pub stack: Arc<Stack>,
    /// plans of the builtin formats and exact, built on first use (`sim::plan_cache`)
    plans: PlanCache,
}

impl PyCellNetwork {
    pub fn wrap(stack: Stack) -> Self {
        PyCellNetwork { stack: Arc::new(stack), plans: PlanCache::default() }
    }

    /// The plan in S: cached, except for a custom format (its values depend on the format);
    /// `approx`: with the approximate tanh/σ (a cache entry of its own).
    fn plan<S: Scalar>(&self, py: Python<'_>, approx: bool) -> PyResult<Arc<StackPlan<S>>> {
        self.plans.for_number_approx::<S, _>(approx, || StackPlan::<S>::new(&self.stack)).map_err(|e| to_pyerr(py, e))
    }
}

/// A scalar type a run can hand back to Python (numpy arrays of the format, or object
/// arrays of Fractions for exact runs).
trait PyScalar: Scalar {
    fn from_tensor(t: &Tensor) -> Vec<Self>;
    /// As `from_tensor`, reusing the tensor's buffer when it can, converting on `threads`
    /// threads when large (`Tensor::into_format`).
    fn into_vec(t: Tensor, threads: Option<usize>) -> Vec<Self>;
    fn to_py<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>>;
}

macro_rules! float_py_scalar {
    ($t:ty) => {
        impl PyScalar for $t {
            fn from_tensor(t: &Tensor) -> Vec<Self> {
                t.to_format::<$t>()
            }
            fn into_vec(t: Tensor, threads: Option<usize>) -> Vec<Self> {
                t.into_format::<$t>(threads)
            }
            fn to_py<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
                <$t as ToNumpy>::to_numpy(py, v, shape)
            }
        }
    };
}
float_py_scalar!(f64);
float_py_scalar!(f32);
float_py_scalar!(f16);
float_py_scalar!(bf16);
float_py_scalar!(Bf16SumF32);
float_py_scalar!(F16SumF32);
float_py_scalar!(Custom);

impl PyScalar for Rational {
    fn from_tensor(t: &Tensor) -> Vec<Self> {
        let exact = |x: f64| rational_from_f64(x).unwrap_or_else(|_| Rational::from(0));
        match &t.values {
            Values::Exact(v) => v.clone(),
            Values::F64(v) => v.iter().map(|&x| exact(x)).collect(),
            Values::F32(v) => v.iter().map(|&x| exact(f64::from(x))).collect(),
            Values::F16(v) => v.iter().map(|&x| exact(f64::from(x))).collect(),
        }
    }
    fn into_vec(t: Tensor, _threads: Option<usize>) -> Vec<Self> {
        t.into_rationals()
    }
    fn to_py<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
        let fr = fraction_type(py)?;
        let objs = v.iter().map(|r| py_fraction(py, &fr, r).map(|o| o.unbind())).collect::<PyResult<Vec<Py<PyAny>>>>()?;
        Ok(PyArray1::from_vec(py, objs).reshape(shape)?.into_any())
    }
}

type LayerSpec<'py> = (String, BTreeMap<String, Bound<'py, PyAny>>, BTreeMap<String, String>);

fn read_parts(tensors: &BTreeMap<String, Bound<'_, PyAny>>, label: &str, problems: &mut Vec<String>) -> Tensors {
    let mut out = Tensors::new();
    for (name, obj) in tensors {
        // bad values (NaN, inf, non-numbers) are reported and kept as 0 placeholders, so
        // shape problems are still found in the same pass
        if let Some(t) = read_tensor(&format!("{label}{name}"), obj, true, problems) {
            let shape = t.shape.clone();
            out.insert(name.clone(), (shape, t.into_rationals()));
        }
    }
    out
}

fn tensor_pair(py: Python<'_>, shape: &[usize], data: &[Rational]) -> PyResult<Py<PyAny>> {
    let strings: Vec<String> = data.iter().map(rational_to_string).collect();
    Ok((shape.to_vec(), strings).into_pyobject(py)?.into_any().unbind())
}

fn invalid_input(py: Python<'_>, p: Vec<String>) -> PyErr {
    to_pyerr(py, SimError::InvalidInput(p))
}

impl PyCellNetwork {
    /// Reads per-layer start states: a list with one tensor per layer, each (B, H_l)
    /// (batch) or (H_l,) (single run). For c0, entries of layers without a cell state may be None.
    fn read_starts(&self, py: Python<'_>, name: &str, given: Option<Vec<Option<Bound<'_, PyAny>>>>, exact: bool, batch: Option<usize>) -> PyResult<Option<Vec<Tensor>>> {
        let Some(list) = given else { return Ok(None) };
        let layers = &self.stack.layers;
        let mut p = Vec::new();
        if list.len() != layers.len() {
            p.push(format!("{name} must give one start state per layer: {} layer(s), got {}", layers.len(), list.len()));
            return Err(invalid_input(py, p));
        }
        let mut out = Vec::with_capacity(list.len());
        for (l, (cell, obj)) in layers.iter().zip(list).enumerate() {
            let h = cell.hidden_size();
            let needed = name == "h0" || cell.has_cell_state();
            let Some(obj) = obj.filter(|_| needed) else {
                out.push(Tensor { shape: vec![], values: Values::F64(vec![]) });
                continue;
            };
            if let Some(t) = read_tensor(&format!("{name}[{l}]"), &obj, exact, &mut p) {
                let want = match batch {
                    Some(b) => vec![b, h],
                    None => vec![h],
                };
                if t.shape != want {
                    p.push(format!("{name} for layer {l} ({}) must have shape {want:?}, got {:?}", cell.kind(), t.shape));
                }
                out.push(t);
            }
        }
        if p.is_empty() { Ok(Some(out)) } else { Err(invalid_input(py, p)) }
    }
}

fn starts<S: PyScalar>(h0: Option<&Vec<Tensor>>, c0: Option<&Vec<Tensor>>) -> Starts<S> {
    Starts { h0: h0.map(|v| v.iter().map(S::from_tensor).collect()), c0: c0.map(|v| v.iter().map(S::from_tensor).collect()) }
}

fn run_one<S: PyScalar>(py: Python<'_>, net: &PyCellNetwork, x: Tensor, h0: Option<&Vec<Tensor>>, c0: Option<&Vec<Tensor>>, fma: bool, approx: bool) -> PyResult<Py<PyAny>> {
    let plan = net.plan::<S>(py, approx)?;
    let steps = x.shape[0];
    let xs = S::into_vec(x, Some(1));
    let st = starts::<S>(h0, c0);
    let (states, cells, last) = run_interruptible(py, None, steps as u64, None, |ctl| plan.run_one(&xs, steps, &st, fma, ctl))?;
    let hsz = plan.top_hidden();
    let out = PyDict::new(py);
    out.set_item("states", S::to_py(py, states, vec![steps + 1, hsz])?)?;
    if !cells.is_empty() {
        out.set_item("cells", S::to_py(py, cells, vec![steps + 1, hsz])?)?;
    }
    let finals = PyList::empty(py);
    let finals_c = PyList::empty(py);
    for (layer, st) in plan.layers.iter().zip(last) {
        let h = layer.hidden();
        finals.append(S::to_py(py, st[..h].to_vec(), vec![h])?)?;
        if layer.has_cell_state() {
            finals_c.append(S::to_py(py, st[h..2 * h].to_vec(), vec![h])?)?;
        } else {
            finals_c.append(py.None())?;
        }
    }
    out.set_item("final", finals)?;
    out.set_item("final_c", finals_c)?;
    Ok(out.into_any().unbind())
}

#[allow(clippy::too_many_arguments)]
fn run_batch<S: PyScalar>(
    py: Python<'_>,
    net: &PyCellNetwork,
    x: Tensor,
    h0: Option<&Vec<Tensor>>,
    c0: Option<&Vec<Tensor>>,
    spec: &BatchSpec,
    progress: Option<&Bound<'_, PyAny>>,
    approx: bool,
) -> PyResult<Py<PyAny>> {
    let plan = net.plan::<S>(py, approx)?;
    let xs = S::into_vec(x, spec.threads);
    let st = starts::<S>(h0, c0);
    let res = run_interruptible(py, progress, spec.batch as u64, spec.threads, |ctl| plan.run_batch(&xs, &st, spec, ctl))?;
    crate::sim::recycle::give(xs);
    let (b, t, hsz) = (spec.batch, spec.steps, plan.top_hidden());
    let out = PyDict::new(py);
    if spec.keep.states() {
        out.set_item("states", S::to_py(py, res.states, vec![b, t, hsz])?)?;
        if spec.keep.extras() && plan.layers[plan.layers.len() - 1].has_cell_state() {
            out.set_item("cells", S::to_py(py, res.cells, vec![b, t, hsz])?)?;
        }
    }
    let finals = PyList::empty(py);
    let finals_c = PyList::empty(py);
    for ((layer, h), c) in plan.layers.iter().zip(res.final_h).zip(res.final_c) {
        finals.append(S::to_py(py, h, vec![b, layer.hidden()])?)?;
        match c {
            Some(c) => finals_c.append(S::to_py(py, c, vec![b, layer.hidden()])?)?,
            None => finals_c.append(py.None())?,
        }
    }
    out.set_item("final", finals)?;
    out.set_item("final_c", finals_c)?;
    Ok(out.into_any().unbind())
}

#[pymethods]
impl PyCellNetwork {
    /// Builds a network from layer specs [(cell kind, {name: tensor}, {option: text}), ...];
    /// `label` is the public kind ("lstm", "stacked", ...). Every problem of every layer (and
    /// the `problems` the caller already found) is raised in one InvalidNetworkError.
    #[staticmethod]
    #[pyo3(signature = (label, layers, problems=Vec::new()))]
    fn from_layers(py: Python<'_>, label: &str, layers: Vec<LayerSpec<'_>>, problems: Vec<String>) -> PyResult<Self> {
        let mut p = problems;
        let multi = layers.len() > 1;
        let mut cells = Vec::with_capacity(layers.len());
        for (k, (kind, tensors, options)) in layers.iter().enumerate() {
            let label_k = if multi { format!("layer {k} ({kind})") } else { kind.clone() };
            let prefix = if multi { format!("layer {k}: ") } else { String::new() };
            let parts = read_parts(tensors, &prefix, &mut p);
            let options: Options = options.clone();
            if let Some(c) = Cell::from_parts(kind, &label_k, parts, options, &mut p) {
                cells.push(c);
            }
        }
        if !p.is_empty() {
            return Err(to_pyerr(py, SimError::InvalidNetwork(p)));
        }
        let stack = Stack::new(label, cells).map_err(|e| to_pyerr(py, e))?;
        Ok(PyCellNetwork::wrap(stack))
    }

    /// A torch.nn.LSTM / GRU / RNN state_dict ({name: tensor}); `module` is "lstm", "gru" or
    /// "rnn" (with `nonlinearity` "tanh" or "relu").
    #[staticmethod]
    #[pyo3(signature = (module, tensors, nonlinearity="tanh", problems=Vec::new()))]
    fn from_torch(py: Python<'_>, module: &str, tensors: BTreeMap<String, Bound<'_, PyAny>>, nonlinearity: &str, problems: Vec<String>) -> PyResult<Self> {
        let mut p = problems;
        let m = match module {
            "lstm" => Some(TorchModule::Lstm),
            "gru" => Some(TorchModule::Gru),
            "rnn" => match nonlinearity.to_ascii_lowercase().as_str() {
                "tanh" => Some(TorchModule::Rnn(Activation::Tanh)),
                "relu" => Some(TorchModule::Rnn(Activation::Relu)),
                other => {
                    p.push(format!("nonlinearity must be \"tanh\" or \"relu\" (as in torch.nn.RNN), got {other:?}"));
                    None
                }
            },
            other => {
                p.push(format!("unknown torch module {other:?}"));
                None
            }
        };
        let parts = read_parts(&tensors, "", &mut p);
        let built = m.map(|m| from_state_dict(m, parts));
        match built {
            Some(Ok(stack)) if p.is_empty() => Ok(PyCellNetwork::wrap(stack)),
            Some(Err(SimError::InvalidNetwork(more))) => {
                p.extend(more);
                Err(to_pyerr(py, SimError::InvalidNetwork(p)))
            }
            Some(Err(e)) => Err(to_pyerr(py, e)),
            _ => Err(to_pyerr(py, SimError::InvalidNetwork(p))),
        }
    }

    #[getter]
    fn label(&self) -> String {
        self.stack.label.clone()
    }
    #[getter]
    fn input_size(&self) -> usize {
        self.stack.input_size()
    }
    #[getter]
    fn hidden_sizes(&self) -> Vec<usize> {
        self.stack.hidden_sizes()
    }
    #[getter]
    fn layer_kinds(&self) -> Vec<&'static str> {
        self.stack.layers.iter().map(|l| l.kind()).collect()
    }
    #[getter]
    fn cell_states(&self) -> Vec<bool> {
        self.stack.layers.iter().map(|l| l.has_cell_state()).collect()
    }

    /// Layer k's parts: (cell kind, {name: (shape, ["p/q", ...])}, {option: text}).
    fn layer_parts(&self, py: Python<'_>, k: usize) -> PyResult<(String, Py<PyAny>, BTreeMap<String, String>)> {
        let Some(cell) = self.stack.layers.get(k) else {
            return Err(invalid_input(py, vec![format!("layer {k} does not exist ({} layers)", self.stack.layers.len())]));
        };
        let (tensors, options) = cell.parts();
        let d = PyDict::new(py);
        for (name, (shape, data)) in &tensors {
            d.set_item(name, tensor_pair(py, shape, data)?)?;
        }
        Ok((cell.kind().to_string(), d.into_any().unbind(), options))
    }

    /// The saturated network (Merrill 2019): sigmoid → sat_sigmoid, tanh → sign, slu → step.
    fn saturate(&self) -> Self {
        PyCellNetwork::wrap(self.stack.saturated())
    }

    /// Same layers under another public kind.
    fn relabel(&self, label: &str) -> Self {
        PyCellNetwork::wrap(Stack { label: label.to_string(), layers: self.stack.layers.clone() })
    }

    /// One sequence x (T, n): {"states": top h_0..h_T, "cells": top c_0..c_T (LSTM-like top),
    /// "final": [h per layer], "final_c": [c per layer or None]}.
    #[pyo3(signature = (x, dtype="exact", h0=None, c0=None, fma=false, approx_activations=false, accumulate=None))]
    #[allow(clippy::too_many_arguments)]
    fn run(&self, py: Python<'_>, x: &Bound<'_, PyAny>, dtype: &str, h0: Option<Vec<Option<Bound<'_, PyAny>>>>, c0: Option<Vec<Option<Bound<'_, PyAny>>>>, fma: bool, approx_activations: bool, accumulate: Option<&str>) -> PyResult<Py<PyAny>> {
        let dt = parse_dtype(py, dtype)?;
        require_approx_format(py, dt, approx_activations)?;
        let sums = f32_sums(py, dt, accumulate)?;
        let approx = approx_activations;
        let exact = dt == Dtype::Exact;
        let x = read_input(py, x, dt, 2, self.stack.input_size(), Some(1))?;
        let h0 = self.read_starts(py, "h0", h0, exact, None)?;
        let c0 = self.read_starts(py, "c0", c0, exact, None)?;
        match dt {
            Dtype::Exact => run_one::<Rational>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx),
            Dtype::F64 => run_one::<f64>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx),
            Dtype::F32 => run_one::<f32>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx),
            Dtype::Bf16 if sums => run_one::<Bf16SumF32>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx),
            Dtype::F16 if sums => run_one::<F16SumF32>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx),
            Dtype::Bf16 => run_one::<bf16>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx),
            Dtype::F16 => run_one::<f16>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx),
            Dtype::Custom(f) => with_format(f, || run_one::<Custom>(py, self, x, h0.as_ref(), c0.as_ref(), fma, approx)),
        }
    }

    /// A batch x (B, T, n), parallel over sequences with the GIL released: {"states" (B, T, H),
    /// "cells" (B, T, H) (keep="all", not "states"; cells only for an LSTM-like top layer), "final": [(B, H_l)
    /// per layer], "final_c": [(B, H_l) or None per layer]}. Bitwise identical for any threads.
    #[pyo3(signature = (x, dtype="f32", h0=None, c0=None, lengths=None, threads=None, keep="all", progress=None, fma=false, approx_activations=false, accumulate=None))]
    #[allow(clippy::too_many_arguments)]
    fn run_batch(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        dtype: &str,
        h0: Option<Vec<Option<Bound<'_, PyAny>>>>,
        c0: Option<Vec<Option<Bound<'_, PyAny>>>>,
        lengths: Option<Vec<i64>>,
        threads: Option<i64>,
        keep: &str,
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
            Some(t) if t < 1 => return Err(invalid_input(py, vec![format!("threads must be at least 1, got {t}")])),
            t => t.map(|t| t as usize),
        };
        let x = read_input(py, x, dt, 3, self.stack.input_size(), threads)?;
        let (batch, steps) = (x.shape[0], x.shape[1]);
        let h0 = self.read_starts(py, "h0", h0, exact, Some(batch))?;
        let c0 = self.read_starts(py, "c0", c0, exact, Some(batch))?;
        let lengths = match lengths {
            Some(l) if l.iter().any(|&v| v < 0) => return Err(invalid_input(py, vec!["lengths must be non-negative".into()])),
            l => l.map(|l| l.into_iter().map(|v| v as usize).collect()),
        };
        let spec = BatchSpec { batch, steps, lengths, keep, threads, fma };
        spec.validate().map_err(|e| to_pyerr(py, e))?;
        let (h, c) = (h0.as_ref(), c0.as_ref());
        match dt {
            Dtype::Exact => run_batch::<Rational>(py, self, x, h, c, &spec, progress, approx),
            Dtype::F64 => run_batch::<f64>(py, self, x, h, c, &spec, progress, approx),
            Dtype::F32 => run_batch::<f32>(py, self, x, h, c, &spec, progress, approx),
            Dtype::Bf16 if sums => run_batch::<Bf16SumF32>(py, self, x, h, c, &spec, progress, approx),
            Dtype::F16 if sums => run_batch::<F16SumF32>(py, self, x, h, c, &spec, progress, approx),
            Dtype::Bf16 => run_batch::<bf16>(py, self, x, h, c, &spec, progress, approx),
            Dtype::F16 => run_batch::<f16>(py, self, x, h, c, &spec, progress, approx),
            Dtype::Custom(f) => with_format(f, || run_batch::<Custom>(py, self, x, h, c, &spec, progress, approx)),
        }
    }

    /// The saved-network JSON text (with optional metadata JSON).
    #[pyo3(signature = (meta=None))]
    fn to_json(&self, py: Python<'_>, meta: Option<&str>) -> PyResult<String> {
        let meta = meta
            .map(serde_json::from_str::<serde_json::Value>)
            .transpose()
            .map_err(|e| invalid_input(py, vec![format!("meta is not valid JSON: {e}")]))?;
        Ok(stack_to_json(&self.stack, meta.as_ref()))
    }

    /// Parses saved JSON: (network, metadata JSON text).
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<(PyCellNetwork, String)> {
        let (stack, meta) = stack_from_json(text).map_err(|e| to_pyerr(py, e))?;
        Ok((PyCellNetwork::wrap(stack), meta.to_string()))
    }
}

/// The "kind" field of a saved network, or None when the text is not a saved network.
#[pyfunction]
pub fn saved_network_kind(text: &str) -> Option<String> {
    saved_kind(text)
}
