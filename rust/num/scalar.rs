//! One arithmetic interface for the cell engines: the float formats (every operation rounded
//! to the format, see `num::float`) and exact rationals. The gated, deep and second-order
//! cells are written once against [`Scalar`], so an exact run performs literally the same
//! sequence of operations as a float run, only without rounding.
//!
//! tanh and sigmoid have no rational value: cell plans refuse them in exact mode before a
//! run starts (`Activation::require_exact`), so the rational `tanh`/`sigmoid` are never called.

use crate::net::activation::Activation;
use crate::num::float::Float;
use half::{bf16, f16};
use malachite::Rational;

/// A number the cell engines compute with.
pub trait Scalar: Clone + Send + Sync + PartialOrd + std::fmt::Debug + 'static {
    const EXACT: bool;
    fn zero() -> Self;
    fn one() -> Self;
    /// The exact value rounded to the format (nearest, ties to even); exact for rationals.
    fn from_rational(r: &Rational) -> Self;
    /// a + b, rounded to the format.
    fn add(&self, o: &Self) -> Self;
    /// a · b, rounded to the format.
    fn mul(&self, o: &Self) -> Self;
    /// self · z + acc rounded once (the product-sum step of `fma=True` runs; exact for
    /// rationals).
    fn mul_add(&self, z: &Self, acc: &Self) -> Self;
    /// The product-sum step self + w·z of an affine map: two roundings, or one (`fma`).
    #[inline(always)]
    fn plus_product(&self, w: &Self, z: &Self, fma: bool) -> Self {
        if fma { w.mul_add(z, self) } else { self.add(&w.mul(z)) }
    }
    /// The end of an affine map's sum (`Float::end_sum`; the identity for rationals).
    #[inline(always)]
    fn end_sum(&self) -> Self {
        self.clone()
    }
    /// −a (exact in every format).
    fn neg(&self) -> Self;
    fn tanh(&self) -> Self;
    fn sigmoid(&self) -> Self;
    /// `Float::approx_tanh` / `approx_sigmoid` (`approx_activations=True`).
    fn approx_tanh(&self) -> Self;
    fn approx_sigmoid(&self) -> Self;
    /// The value as an exact rational (a float's binary value; NaN and ±∞ give 0: callers
    /// that show values check `is_finite` first).
    fn to_exact(&self) -> Rational;
    fn is_finite(&self) -> bool;
}

macro_rules! float_scalar {
    ($t:ty, $neg:expr) => {
        impl Scalar for $t {
            const EXACT: bool = false;
            #[inline(always)]
            fn zero() -> Self {
                <$t as Float>::zero()
            }
            #[inline(always)]
            fn one() -> Self {
                <$t as Float>::one()
            }
            fn from_rational(r: &Rational) -> Self {
                <$t as Float>::from_rational(r)
            }
            #[inline(always)]
            fn add(&self, o: &Self) -> Self {
                Float::add(*self, *o)
            }
            #[inline(always)]
            fn mul(&self, o: &Self) -> Self {
                Float::mul(*self, *o)
            }
            #[inline(always)]
            fn mul_add(&self, z: &Self, acc: &Self) -> Self {
                Float::mul_add(*self, *z, *acc)
            }
            #[inline(always)]
            fn plus_product(&self, w: &Self, z: &Self, fma: bool) -> Self {
                Float::plus_product(*self, *w, *z, fma)
            }
            #[inline(always)]
            fn end_sum(&self) -> Self {
                Float::end_sum(*self)
            }
            #[inline(always)]
            fn neg(&self) -> Self {
                let neg: fn(&$t) -> $t = $neg;
                neg(self)
            }
            fn tanh(&self) -> Self {
                Float::tanh(*self)
            }
            fn sigmoid(&self) -> Self {
                Float::sigmoid(*self)
            }
            fn approx_tanh(&self) -> Self {
                Float::approx_tanh(*self)
            }
            fn approx_sigmoid(&self) -> Self {
                Float::approx_sigmoid(*self)
            }
            fn to_exact(&self) -> Rational {
                Float::to_rational(*self).unwrap_or_else(|| Rational::from(0))
            }
            fn is_finite(&self) -> bool {
                Float::to_rational(*self).is_some()
            }
        }
    };
}
// Negation is exact in every format: through f64 for the formats that fit it, and
// `Custom::negated` (a sign flip) for custom formats, some of which are wider than f64.
float_scalar!(f64, |x| <f64 as Float>::from_f64_exact(-Float::to_f64(*x)));
float_scalar!(f32, |x| <f32 as Float>::from_f64_exact(-Float::to_f64(*x)));
float_scalar!(f16, |x| <f16 as Float>::from_f64_exact(-Float::to_f64(*x)));
float_scalar!(bf16, |x| <bf16 as Float>::from_f64_exact(-Float::to_f64(*x)));
float_scalar!(crate::num::custom_float::Custom, |x| x.negated());
float_scalar!(crate::num::f32_sums::Bf16SumF32, |x| crate::num::f32_sums::Bf16SumF32(-x.0));
float_scalar!(crate::num::f32_sums::F16SumF32, |x| crate::num::f32_sums::F16SumF32(-x.0));

impl Scalar for Rational {
    const EXACT: bool = true;
    fn zero() -> Self {
        Rational::from(0)
    }
    fn one() -> Self {
        Rational::from(1)
    }
    fn from_rational(r: &Rational) -> Self {
        r.clone()
    }
    fn add(&self, o: &Self) -> Self {
        self + o
    }
    fn mul(&self, o: &Self) -> Self {
        self * o
    }
    fn mul_add(&self, z: &Self, acc: &Self) -> Self {
        self * z + acc
    }
    fn neg(&self) -> Self {
        -self
    }
    fn tanh(&self) -> Self {
        unreachable!("exact cell plans reject tanh before running")
    }
    fn sigmoid(&self) -> Self {
        unreachable!("exact cell plans reject sigmoid before running")
    }
    fn approx_tanh(&self) -> Self {
        unreachable!("exact cell plans reject tanh before running")
    }
    fn approx_sigmoid(&self) -> Self {
        unreachable!("exact cell plans reject sigmoid before running")
    }
    fn to_exact(&self) -> Rational {
        self.clone()
    }
    fn is_finite(&self) -> bool {
        true
    }
}

/// act(x) in the scalar's arithmetic. Comparisons are exact; NaN compares false and so maps
/// like 0 for the piecewise functions (relu, slu, step: 0; sign: 0; sat_sigmoid: 1/2).
#[inline(always)]
pub fn activate<S: Scalar>(a: Activation, x: &S) -> S {
    match a {
        Activation::Identity => x.clone(),
        Activation::Relu => if *x > S::zero() { x.clone() } else { S::zero() },
        Activation::Slu => {
            if *x > S::one() { S::one() } else if *x > S::zero() { x.clone() } else { S::zero() }
        }
        Activation::Step => if *x > S::zero() { S::one() } else { S::zero() },
        Activation::Tanh => x.tanh(),
        Activation::Sigmoid => x.sigmoid(),
        Activation::ApproxTanh => x.approx_tanh(),
        Activation::ApproxSigmoid => x.approx_sigmoid(),
        Activation::Sign => {
            if *x > S::zero() { S::one() } else if *x < S::zero() { S::one().neg() } else { S::zero() }
        }
        Activation::SatSigmoid => {
            if *x > S::zero() {
                S::one()
            } else if *x < S::zero() {
                S::zero()
            } else {
                S::from_rational(&Rational::from_signeds(1i64, 2i64))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rational_and_float_agree_on_piecewise_functions() {
        let vals = [-3i64, -1, 0, 1, 2];
        for a in [Activation::Identity, Activation::Relu, Activation::Slu, Activation::Step, Activation::Sign, Activation::SatSigmoid] {
            for v in vals {
                let r = Rational::from(v) / Rational::from(2);
                let exact = activate(a, &r);
                let f = activate(a, &(v as f64 / 2.0));
                assert_eq!(<f64 as Float>::from_rational(&exact), f, "{a:?} at {v}/2");
            }
        }
        assert_eq!(activate(Activation::SatSigmoid, &Rational::from(0)), Rational::from_signeds(1i64, 2i64));
        assert_eq!(activate(Activation::Sign, &-0.5f32), -1.0);
        let h = f16::from_f64(0.25);
        assert_eq!(Scalar::neg(&h).to_f64(), -0.25);
    }
}
