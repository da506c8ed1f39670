//! Conversions between Python values and the core's exact and float values.
//!
//! The Python layer hands every numeric tensor over in one of two forms: a float64 ndarray
//! (taken at its exact binary value) or a pair (shape, ["p/q", ...]) of exact strings.

use crate::error::SimError;
use crate::num::exact_vector::ExactVector;
use crate::num::custom_float::{current_format, Custom};
use crate::num::float::Float;
use crate::num::rational::{parse_rational, rational_from_f64};
use half::{bf16, f16};
use malachite::base::num::arithmetic::traits::Sign;
use malachite::{Integer, Natural, Rational};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::cmp::Ordering;

/// Maps a core error onto the Python exception family defined in `rnnsim/errors.py`.
pub fn to_pyerr(py: Python<'_>, e: SimError) -> PyErr {
    let (cls, problems) = match &e {
        SimError::InvalidNetwork(p) => ("InvalidNetworkError", p.clone()),
        SimError::InvalidInput(p) => ("InvalidInputError", p.clone()),
        SimError::InvalidMachine(p) => ("InvalidMachineError", p.clone()),
        SimError::Unsupported(m) => ("UnsupportedError", vec![m.clone()]),
        SimError::LimitExceeded(m) => ("LimitExceededError", vec![m.clone()]),
        SimError::Interrupted => return PyKeyboardInterrupt::new_err("rnnsim run interrupted"),
    };
    match py.import("rnnsim.errors").and_then(|m| m.getattr(cls)) {
        Ok(ty) => match ty.call1((e.to_string(), problems)) {
            Ok(inst) => PyErr::from_value(inst),
            Err(err) => err,
        },
        Err(err) => PyRuntimeError::new_err(format!("{cls}: {e} (and rnnsim.errors failed to import: {err})")),
    }
}

/// A numeric tensor as given from Python.
pub enum Values {
    F64(Vec<f64>),
    Exact(Vec<Rational>),
}

pub struct Tensor {
    pub shape: Vec<usize>,
    pub values: Values,
}

fn index_name(name: &str, shape: &[usize], flat: usize) -> String {
    let mut idx = Vec::with_capacity(shape.len());
    let mut rest = flat;
    for &n in shape.iter().rev() {
        let n = n.max(1);
        idx.push(rest % n);
        rest /= n;
    }
    idx.reverse();
    let parts: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    format!("{name}[{}]", parts.join(", "))
}

/// Reads a tensor handed over by the Python layer. Problems with its values are pushed
/// onto `problems` (at most 5 per tensor, then a count).
pub fn read_tensor(name: &str, obj: &Bound<'_, PyAny>, exact: bool, problems: &mut Vec<String>) -> Option<Tensor> {
    if let Ok(arr) = obj.extract::<PyReadonlyArrayDyn<'_, f64>>() {
        let shape = arr.shape().to_vec();
        let view = arr.as_array();
        let mut bad = 0usize;
        let mut check = |i: usize, v: f64| {
            if !v.is_finite() {
                if bad < 5 {
                    let what = if v.is_nan() { "NaN".to_string() } else { format!("{v}") };
                    problems.push(format!("{} is {what}: values must be finite", index_name(name, &shape, i)));
                }
                bad += 1;
            }
        };
        let values = if exact {
            let mut out = Vec::with_capacity(view.len());
            for (i, &v) in view.iter().enumerate() {
                check(i, v);
                out.push(rational_from_f64(v).unwrap_or_else(|_| Rational::from(0)));
            }
            Values::Exact(out)
        } else {
            let out: Vec<f64> = view.iter().copied().collect();
            for (i, &v) in out.iter().enumerate() {
                check(i, v);
            }
            Values::F64(out)
        };
        if bad > 5 {
            problems.push(format!("{name}: {} more non-finite values", bad - 5));
        }
        // bad values became 0 placeholders: the caller raises, but still sees the shape
        return Some(Tensor { shape, values });
    }
    match obj.extract::<(Vec<usize>, Vec<String>)>() {
        Ok((shape, strings)) => {
            let before = problems.len();
            let mut out = Vec::with_capacity(strings.len());
            let mut bad = 0usize;
            for (i, s) in strings.iter().enumerate() {
                out.push(parse_rational(s).unwrap_or_else(|e| {
                    if bad < 5 {
                        problems.push(format!("{}: {e}", index_name(name, &shape, i)));
                    }
                    bad += 1;
                    Rational::from(0)
                }));
            }
            if bad > 5 {
                problems.push(format!("{name}: {} more values that are not numbers", bad - 5));
            }
            if out.len() != shape.iter().product::<usize>() {
                if problems.len() == before {
                    problems.push(format!("{name}: {} values do not fill shape {shape:?}", strings.len()));
                }
                return None;
            }
            Some(Tensor { shape, values: Values::Exact(out) })
        }
        Err(_) => {
            problems.push(format!("{name}: expected a float64 array or (shape, [\"p/q\", ...])"));
            None
        }
    }
}

impl Tensor {
    pub fn into_rationals(self) -> Vec<Rational> {
        match self.values {
            Values::Exact(v) => v,
            Values::F64(v) => v.into_iter().map(|x| rational_from_f64(x).unwrap_or_else(|_| Rational::from(0))).collect(),
        }
    }

    pub fn to_format<F: Float>(&self) -> Vec<F> {
        match &self.values {
            Values::F64(v) => v.iter().map(|&x| F::from_f64_rounded(x)).collect(),
            Values::Exact(v) => v.iter().map(F::from_rational).collect(),
        }
    }
}

/// A Python int from a malachite Integer (small values directly, big ones via bytes).
pub fn py_int<'py>(py: Python<'py>, n: &Integer) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(small) = i64::try_from(n) {
        return Ok(small.into_pyobject(py)?.into_any());
    }
    py_natural(py, n.unsigned_abs_ref()).and_then(|v| if n.sign() == Ordering::Less { v.neg() } else { Ok(v) })
}

pub fn py_natural<'py>(py: Python<'py>, n: &Natural) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(small) = u64::try_from(n) {
        return Ok(small.into_pyobject(py)?.into_any());
    }
    let bytes: Vec<u8> = n.to_limbs_asc().iter().flat_map(|l| l.to_le_bytes()).collect();
    let int_type = py.import("builtins")?.getattr("int")?;
    int_type.call_method1("from_bytes", (PyBytes::new(py, &bytes), "little"))
}

/// A `fractions.Fraction` from an exact rational.
pub fn py_fraction<'py>(py: Python<'py>, fraction: &Bound<'py, PyAny>, r: &Rational) -> PyResult<Bound<'py, PyAny>> {
    let (n, d) = r.to_numerator_and_denominator();
    let num = Integer::from(n);
    let num = if *r < 0u32 { -num } else { num };
    fraction.call1((py_int(py, &num)?, py_natural(py, &d)?))
}

pub fn fraction_type(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("fractions")?.getattr("Fraction")
}

/// A list of Fractions for one exact vector.
pub fn py_exact_vector<'py>(py: Python<'py>, fr: &Bound<'py, PyAny>, v: &ExactVector) -> PyResult<Bound<'py, PyList>> {
    let items = (0..v.len()).map(|i| py_fraction(py, fr, &v.get(i))).collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

pub fn py_rationals<'py>(py: Python<'py>, fr: &Bound<'py, PyAny>, v: &[Rational]) -> PyResult<Bound<'py, PyList>> {
    let items = v.iter().map(|r| py_fraction(py, fr, r)).collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// A float format's values as a numpy array of the matching dtype (bf16 → float32, exactly).
pub trait ToNumpy: Float {
    fn to_numpy<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>>;
}

macro_rules! to_numpy_native {
    ($t:ty) => {
        impl ToNumpy for $t {
            fn to_numpy<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
                Ok(PyArray1::from_vec(py, v).reshape(shape)?.into_any())
            }
        }
    };
}
to_numpy_native!(f64);
to_numpy_native!(f32);
to_numpy_native!(f16);

/// A custom format's values: float64 when every value of the format is an f64 (exactly), else
/// an object array of exact `Fraction`s (±inf and nan as Python floats). The format is the
/// one of the enclosing `with_format`.
impl ToNumpy for Custom {
    fn to_numpy<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
        if current_format().is_none_or(|f| f.fits_in_f64) {
            let wide: Vec<f64> = v.into_iter().map(|x| x.to_f64()).collect();
            return Ok(PyArray1::from_vec(py, wide).reshape(shape)?.into_any());
        }
        let fr = fraction_type(py)?;
        let items = v
            .into_iter()
            .map(|x| match x.to_rational() {
                Some(r) => py_fraction(py, &fr, &r),
                None => Ok(x.to_f64().into_pyobject(py)?.into_any()),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let np = py.import("numpy")?;
        let arr = np.call_method1("empty", (items.len(), "object"))?;
        for (i, item) in items.into_iter().enumerate() {
            arr.set_item(i, item)?;
        }
        arr.call_method1("reshape", (shape,))
    }
}

impl ToNumpy for bf16 {
    fn to_numpy<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
        let wide: Vec<f32> = v.into_iter().map(|x| x.to_f32()).collect();
        Ok(PyArray1::from_vec(py, wide).reshape(shape)?.into_any())
    }
}
