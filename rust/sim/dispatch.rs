//! Choosing the float type at run time: the float engine is generic over `F: Float`, the
//! user names a [`Dtype`]. A [`FloatTask`] is a generic computation; [`dispatch_float`] runs
//! it with the Rust type of the dtype (f64, f32, half::bf16, half::f16, or
//! `custom_float::Custom` inside `with_format` for a custom format).

use crate::num::custom_float::{with_format, Custom};
use crate::num::dtype::Dtype;
use crate::num::float::Float;
use crate::num::scalar::Scalar;
use half::{bf16, f16};
use malachite::Rational;

/// A computation generic over the float format (a closure cannot be generic, a trait can).
pub trait FloatTask {
    type Output;
    fn run<F: Float>(self) -> Self::Output;
}

/// Runs `task` with the float type of `dtype`: f64, f32, bf16, f16 or `Custom` (with the
/// format set for the task's constructors on this thread). `None` for
/// [`Dtype::Exact`], which the caller handles with the exact engine.
pub fn dispatch_float<T: FloatTask>(dtype: Dtype, task: T) -> Option<T::Output> {
    match dtype {
        Dtype::Exact => None,
        Dtype::F64 => Some(task.run::<f64>()),
        Dtype::F32 => Some(task.run::<f32>()),
        Dtype::Bf16 => Some(task.run::<bf16>()),
        Dtype::F16 => Some(task.run::<f16>()),
        Dtype::Custom(c) => Some(with_format(c, || task.run::<Custom>())),
    }
}

/// Runs `body` with `dtype`'s custom format as the constructors' format (see
/// `custom_float::with_format`); other dtypes run it as is. For work that builds float
/// values after `dispatch_float` returned (a ticker converting each new input row).
pub fn in_format_scope<T>(dtype: Dtype, body: impl FnOnce() -> T) -> T {
    match dtype {
        Dtype::Custom(c) => with_format(c, body),
        _ => body(),
    }
}

/// A computation generic over the cell engines' number type ([`Scalar`]: the float formats
/// and exact rationals).
pub trait ScalarTask {
    type Output;
    fn run<S: Scalar>(self) -> Self::Output;
}

/// Runs `task` with the [`Scalar`] type of `dtype` (`Rational` for exact).
pub fn dispatch_scalar<T: ScalarTask>(dtype: Dtype, task: T) -> T::Output {
    match dtype {
        Dtype::Exact => task.run::<Rational>(),
        Dtype::F64 => task.run::<f64>(),
        Dtype::F32 => task.run::<f32>(),
        Dtype::Bf16 => task.run::<bf16>(),
        Dtype::F16 => task.run::<f16>(),
        Dtype::Custom(c) => with_format(c, || task.run::<Custom>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Name;
    impl FloatTask for Name {
        type Output = &'static str;
        fn run<F: Float>(self) -> &'static str {
            F::NAME
        }
    }

    #[test]
    fn each_dtype_gets_its_type() {
        assert_eq!(dispatch_float(Dtype::Exact, Name), None);
        for (dt, name) in [(Dtype::F64, "f64"), (Dtype::F32, "f32"), (Dtype::Bf16, "bf16"), (Dtype::F16, "f16")] {
            assert_eq!(dispatch_float(dt, Name), Some(name));
        }
    }
}
