//! Conversions between Python values and the core's exact and float values.
//!
//! The Python layer hands every numeric tensor over in one of two forms: a float64 or
//! float32 ndarray (taken at its exact binary values; a C-contiguous one is read with one
//! copy of its buffer, and a run in its own format reuses that copy) or a pair
//! (shape, ["p/q", ...]) of exact strings. Results go back as numpy arrays that take over
//! the engine's buffers (`ToNumpy`, no copy for f64, f32 and f16; large ones go back to
//! `sim::recycle` when their arrays die).

use crate::error::SimError;
use crate::num::exact_vector::ExactVector;
use crate::num::custom_float::{current_format, Custom};
use crate::num::dtype::Dtype;
use crate::num::float::Float;
use crate::num::rational::{parse_rational, rational_from_f64};
use crate::sim::lanes::LaneFormat;
use crate::sim::{parallel_copy, recycle};
use half::{bf16, f16};
use malachite::base::num::arithmetic::traits::Sign;
use malachite::{Integer, Natural, Rational};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::any::Any;
use std::cmp::Ordering;
use std::mem::MaybeUninit;

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

/// A numeric tensor as given from Python: binary floats (float64, float32 or float16
/// arrays, each value taken exactly) or exact rationals.
pub enum Values {
    F64(Vec<f64>),
    F32(Vec<f32>),
    /// float16 arrays as they are: a dtype="f16" run reads them with no conversion
    /// (through f64 each value took a rounding call: an f16 SimpleRNN at (1024, 1000, 16,
    /// 4) ran 13.5 M token-steps/s from float16 inputs against 38.8 from float32)
    F16(Vec<f16>),
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

/// An array's values in logical (C) order and whether all are finite: a C-contiguous
/// buffer is copied (on `threads` threads when large: `sim::parallel_copy`),
/// a strided or Fortran-ordered one read element by element.
fn array_values<T>(arr: &PyReadonlyArrayDyn<'_, T>, threads: Option<usize>) -> (Vec<T>, bool)
where
    T: numpy::Element + Copy + Into<f64> + Send + Sync + 'static,
{
    let view = arr.as_array();
    if let Some(s) = view.as_slice() {
        return parallel_copy::copy_checking_finite(s, threads);
    }
    // a large input's copy goes in a kept buffer when one fits, and the batch bindings give
    // it back after the run (`sim::recycle`)
    let mut v = recycle::take(view.len());
    v.extend(view.iter().copied());
    let finite = parallel_copy::finite(&v);
    (v, finite)
}

/// A rounding of a slice to f16, written into an uninitialised slice of its length.
type ToF16<T> = fn(&[T], &mut [MaybeUninit<f16>]);

/// A float array's shape and values: its own (`wrap`), or rounded to f16 by `to_f16` as
/// they are copied; a problem pushed for each non-finite value of the array.
fn float_values<T>(name: &str, arr: &PyReadonlyArrayDyn<'_, T>, threads: Option<usize>, to_f16: Option<ToF16<T>>, wrap: fn(Vec<T>) -> Values, problems: &mut Vec<String>) -> (Vec<usize>, Values)
where
    T: numpy::Element + Copy + Into<f64> + Send + Sync + 'static,
{
    let shape = arr.shape().to_vec();
    let view = arr.as_array();
    let (values, finite) = match (to_f16, view.as_slice()) {
        (Some(round), Some(s)) => {
            // SAFETY: both roundings (f16's `Float::round_f64_slice_uninit` and
            // `round_f32_slice_uninit`) write every value of a destination chunk of their
            // source's length
            let (v, finite) = unsafe { parallel_copy::written_checking_finite(s, threads, round) };
            (Values::F16(v), finite)
        }
        (Some(round), None) => {
            let (v, finite) = array_values(arr, threads);
            // SAFETY: as above
            (Values::F16(unsafe { converted(v, threads, round) }), finite)
        }
        (None, _) => {
            let (v, finite) = array_values(arr, threads);
            (wrap(v), finite)
        }
    };
    if !finite {
        // the array's own values (a finite one may round to ±∞ in f16)
        let own: Vec<T> = view.iter().copied().collect();
        report_non_finite(name, &shape, &own, problems);
    }
    (shape, values)
}

/// Pushes a problem for each non-finite value (at most 5, then a count).
fn report_non_finite<T: Copy + Into<f64>>(name: &str, shape: &[usize], values: &[T], problems: &mut Vec<String>) {
    let bad: Vec<(usize, f64)> = values.iter().map(|&v| v.into()).enumerate().filter(|(_, v)| !v.is_finite()).collect();
    for &(i, v) in bad.iter().take(5) {
        let what = if v.is_nan() { "NaN".to_string() } else { format!("{v}") };
        problems.push(format!("{} is {what}: values must be finite", index_name(name, shape, i)));
    }
    if bad.len() > 5 {
        problems.push(format!("{name}: {} more non-finite values", bad.len() - 5));
    }
}

/// Reads a tensor handed over by the Python layer: a float64, float32 or float16 array (any
/// memory layout), or (shape, ["p/q", ...]). Problems with its values are pushed onto `problems`
/// (at most 5 per tensor, then a count); the tensor is still returned (with `exact`, its
/// non-finite values as 0 placeholders), so the caller raises but still sees the shape.
/// With `exact`, the values become rationals.
pub fn read_tensor(name: &str, obj: &Bound<'_, PyAny>, exact: bool, problems: &mut Vec<String>) -> Option<Tensor> {
    read_tensor_on(name, obj, exact, Some(1), false, problems)
}

/// `read_tensor`, a large float array copied on `threads` threads (None: all cores; the
/// run's count: `sim::parallel_copy`), and with `to_f16` a float64 or float32
/// array rounded to f16 as it is copied (`Values::F16`: the values an f16 run rounds it to).
fn read_tensor_on(name: &str, obj: &Bound<'_, PyAny>, exact: bool, threads: Option<usize>, to_f16: bool, problems: &mut Vec<String>) -> Option<Tensor> {
    let floats = if let Ok(arr) = obj.extract::<PyReadonlyArrayDyn<'_, f64>>() {
        // one rounding from the f64 (through f32 rounded to odd, which keeps it one:
        // `Float::round_f64_slice_uninit`)
        Some(float_values(name, &arr, threads, to_f16.then_some(<f16 as Float>::round_f64_slice_uninit), Values::F64, problems))
    } else if let Ok(arr) = obj.extract::<PyReadonlyArrayDyn<'_, f32>>() {
        Some(float_values(name, &arr, threads, to_f16.then_some(<f16 as Float>::round_f32_slice_uninit), Values::F32, problems))
    } else if let Ok(arr) = obj.extract::<PyReadonlyArrayDyn<'_, f16>>() {
        Some(float_values(name, &arr, threads, None, Values::F16, problems))
    } else {
        None
    };
    if let Some((shape, values)) = floats {
        let t = Tensor { shape, values };
        return Some(if exact { Tensor { shape: t.shape.clone(), values: Values::Exact(t.into_rationals()) } } else { t });
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
            problems.push(format!("{name}: expected a float64, float32 or float16 array or (shape, [\"p/q\", ...])"));
            None
        }
    }
}

/// Reads a network input x of shape (T, n) (`ndim` 2) or (batch, T, n) (`ndim` 3), n the
/// network's input width, for a run of `dtype`; every problem is reported at once. A large
/// array is copied on `threads` threads, the run's count. For an f16 run (either
/// sums) a float64 or float32 array is rounded to f16 as it is copied, which is what the
/// run's `into_format` would do (one pass over the array instead of a copy and a rounding:
/// f16 SimpleRNN (1024, 1000, 16, 4), session 39).
pub fn read_input(py: Python<'_>, x: &Bound<'_, PyAny>, dtype: Dtype, ndim: usize, n: usize, threads: Option<usize>) -> PyResult<Tensor> {
    let mut problems = Vec::new();
    let t = read_tensor_on("x", x, dtype == Dtype::Exact, threads, dtype == Dtype::F16, &mut problems);
    if let Some(t) = &t {
        if t.shape.len() != ndim {
            let want = if ndim == 2 { "(T, input_size)" } else { "(batch, T, input_size)" };
            problems.push(format!("x must have shape {want}, got {} dimension(s) {:?}", t.shape.len(), t.shape));
        } else if t.shape[ndim - 1] != n {
            problems.push(format!("x has width {} but the network's input size is {n}", t.shape[ndim - 1]));
        }
    }
    match (t, problems.is_empty()) {
        (Some(t), true) => Ok(t),
        _ => Err(to_pyerr(py, SimError::InvalidInput(problems))),
    }
}

/// `round` of `v` chunk by chunk (`parallel_copy::written`), `v`'s buffer recycled.
///
/// # Safety
/// `round` must write every value of a destination chunk of its source's length.
unsafe fn converted<A: Send + Sync + 'static, F: Float>(v: Vec<A>, threads: Option<usize>, round: impl Fn(&[A], &mut [MaybeUninit<F>]) + Sync) -> Vec<F> {
    // SAFETY: the caller's promise
    let out = unsafe { parallel_copy::written(&v, threads, round) };
    recycle::give(v);
    out
}

/// `v` itself when A is F, else `convert(v)`.
fn reuse_or_convert<A: 'static, F: 'static>(v: Vec<A>, convert: impl FnOnce(Vec<A>) -> Vec<F>) -> Vec<F> {
    match (Box::new(v) as Box<dyn Any>).downcast::<Vec<F>>() {
        Ok(same) => *same,
        Err(v) => convert(*v.downcast::<Vec<A>>().expect("the vector given")),
    }
}

impl Tensor {
    /// The exact values (non-finite placeholders are 0).
    pub fn into_rationals(self) -> Vec<Rational> {
        let exact = |x: f64| rational_from_f64(x).unwrap_or_else(|_| Rational::from(0));
        match self.values {
            Values::Exact(v) => v,
            Values::F64(v) => v.into_iter().map(exact).collect(),
            Values::F32(v) => v.into_iter().map(|x| exact(f64::from(x))).collect(),
            Values::F16(v) => v.into_iter().map(|x| exact(f64::from(x))).collect(),
        }
    }

    /// The values rounded to F (each once, from its exact value).
    pub fn to_format<F: Float>(&self) -> Vec<F> {
        match &self.values {
            Values::F64(v) => v.iter().map(|&x| F::from_f64_rounded(x)).collect(),
            Values::F32(v) => F::from_f32_slice_rounded(v),
            Values::F16(v) => F::from_f32_slice_rounded(&f16::to_lanes(v)),
            Values::Exact(v) => v.iter().map(F::from_rational).collect(),
        }
    }

    /// As `to_format`, reusing the buffer when the values already are F's (f64 input run in
    /// f64, f32 input in f32: no copy), else converting on `threads` threads
    /// when large (`sim::parallel_copy`; on the calling thread inside a custom format's
    /// `with_format`, which other threads do not see) and recycling the input's buffer.
    pub fn into_format<F: Float>(self, threads: Option<usize>) -> Vec<F> {
        let threads = if current_format().is_some() { Some(1) } else { threads };
        // SAFETY (the three `converted`): every format's `round_f64_slice_uninit`,
        // `round_f32_slice_uninit` and `round_f16_slice_uninit` write every value of an
        // output of their input's length (`Float`'s contract)
        match self.values {
            Values::F64(v) => reuse_or_convert(v, |v| unsafe { converted(v, threads, F::round_f64_slice_uninit) }),
            // an f32 is an f64 exactly; one rounding to F, as from the float64 form
            Values::F32(v) => reuse_or_convert(v, |v| unsafe { converted(v, threads, F::round_f32_slice_uninit) }),
            // (an f16 is an f32 exactly, `LaneFormat::to_lanes`: the same one rounding)
            Values::F16(v) => reuse_or_convert(v, |v| unsafe { converted(v, threads, F::round_f16_slice_uninit) }),
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

/// The owner of a large result's buffer, the numpy array's base object: when the array (and
/// every view of it) is gone, its buffer goes back to `sim::recycle` for the next run
/// instead of to the kernel.
#[pyclass(frozen, module = "rnnsim._core")]
struct RecycledBuffer {
    buf: std::sync::Mutex<Option<Buffer>>,
}

enum Buffer {
    F64(Vec<f64>),
    F32(Vec<f32>),
    F16(Vec<f16>),
}

impl Drop for RecycledBuffer {
    fn drop(&mut self) {
        match self.buf.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            Some(Buffer::F64(v)) => recycle::give(v),
            Some(Buffer::F32(v)) => recycle::give(v),
            Some(Buffer::F16(v)) => recycle::give(v),
            None => {}
        }
    }
}

/// `v` as a numpy array of `shape`: a large one over its own buffer with a `RecycledBuffer`
/// as base (the buffer is moved, not copied: its heap data stays where it is), a small one
/// by `from_vec`.
fn recycled_array<'py, T: numpy::Element + Send + 'static>(py: Python<'py>, v: Vec<T>, shape: Vec<usize>, wrap: fn(Vec<T>) -> Buffer) -> PyResult<Bound<'py, PyAny>> {
    if v.len() * std::mem::size_of::<T>() < recycle::MIN_BYTES || shape.iter().product::<usize>() != v.len() {
        return Ok(PyArray1::from_vec(py, v).reshape(shape)?.into_any());
    }
    let ptr = v.as_ptr();
    let owner = Bound::new(py, RecycledBuffer { buf: std::sync::Mutex::new(Some(wrap(v))) })?;
    // SAFETY: ptr is the data of the Vec now held by `owner` (moving a Vec does not move its
    // heap data), shape.product() = its length (checked above); the Vec is neither resized
    // nor dropped while `owner` lives, and `owner` is the array's base, so it lives as long
    // as the array and its views.
    unsafe {
        let view = numpy::ndarray::ArrayViewD::from_shape_ptr(numpy::ndarray::IxDyn(&shape), ptr);
        Ok(numpy::PyArrayDyn::borrow_from_array(&view, owner.into_any()).into_any())
    }
}

macro_rules! to_numpy_native {
    ($t:ty, $wrap:path) => {
        impl ToNumpy for $t {
            fn to_numpy<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
                recycled_array(py, v, shape, $wrap)
            }
        }
    };
}
to_numpy_native!(f64, Buffer::F64);
to_numpy_native!(f32, Buffer::F32);
to_numpy_native!(f16, Buffer::F16);

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

/// The half formats with f32 sums: their values as float32 (f32's result arrays; exact).
macro_rules! f32_sums_to_numpy {
    ($t:ty) => {
        impl ToNumpy for $t {
            fn to_numpy<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
                <f32 as ToNumpy>::to_numpy(py, crate::num::f32_sums::cast_vec(v), shape)
            }
        }
    };
}
f32_sums_to_numpy!(crate::num::f32_sums::Bf16SumF32);
f32_sums_to_numpy!(crate::num::f32_sums::F16SumF32);

impl ToNumpy for bf16 {
    fn to_numpy<'py>(py: Python<'py>, v: Vec<Self>, shape: Vec<usize>) -> PyResult<Bound<'py, PyAny>> {
        let wide: Vec<f32> = v.into_iter().map(|x| x.to_f32()).collect();
        Ok(PyArray1::from_vec(py, wide).reshape(shape)?.into_any())
    }
}
