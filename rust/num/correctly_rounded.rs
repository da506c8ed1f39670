//! tanh and σ of an f64, **correctly rounded** to f64 (the exact value of the function at
//! the exact value of x, rounded to nearest, ties to even): the definition every float
//! format's activations are built on (`num::float`: the format's tanh is this f64 value
//! rounded once to the format), so results do not depend on the platform's libm.
//!
//! This module is the slow, simple, exact computation (a few µs per value): the fallback of
//! the fast evaluation (`sim::activation_f64`, which since session 40 decides every value
//! without it but about one in 2^38 and σ's band (−746, −680]) and the reference its tests
//! compare with. It is Ziv's strategy on the
//! correctly rounded big-float functions of malachite-float (MPFR's algorithms): at working
//! precision p, an interval [lo, hi] that contains f(x) is computed with directed roundings;
//! when round_f64(lo) = round_f64(hi) that is round_f64(f(x)) (rounding is monotone),
//! otherwise p doubles. It ends: for a nonzero rational x, e^x is transcendental (Lindemann),
//! so f(x) is never exactly an f64 or a midpoint between two.
//!
//! * tanh(x) = x for |x| < 2^−30 (|tanh x − x| < |x|³/3, below half an ulp of x, also for
//!   subnormal x); ±1 for |x| ≥ 20 (1 − tanh 20 = 2/(e^40 + 1) < 2^−57, under half an ulp
//!   below 1); tanh(NaN) = NaN.
//! * σ(x) = 1/(1 + e^−x): 1 for x ≥ 40 (1 − σ(40) < e^−40 < 2^−57); +0 for x ≤ −746
//!   (σ(x) < e^x ≤ e^−746 < 2^−1076, under half the least subnormal); σ(NaN) = NaN.

use malachite::base::num::conversion::traits::RoundingFrom;
use malachite::base::rounding_modes::RoundingMode::{self, Ceiling, Floor, Nearest};
use malachite::Float;

/// |x| below this: tanh rounds to x.
pub const TANH_TINY: f64 = 1.0 / (1u64 << 30) as f64;
/// |x| at or above this: tanh rounds to ±1.
pub const TANH_ONE: f64 = 20.0;
/// x at or above this: σ rounds to 1.
pub const SIGMOID_ONE: f64 = 40.0;
/// x at or below this: σ rounds to +0.
pub const SIGMOID_ZERO: f64 = -746.0;

/// tanh(x) correctly rounded to f64.
pub fn tanh(x: f64) -> f64 {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    if a < TANH_TINY {
        return x;
    }
    if a >= TANH_ONE {
        return 1f64.copysign(x);
    }
    let xf = Float::from(x);
    ziv(|p, rm| xf.tanh_prec_round_ref(p, rm).0)
}

/// σ(x) = 1/(1 + e^−x) correctly rounded to f64.
pub fn sigmoid(x: f64) -> f64 {
    if x.is_nan() {
        return x + x;
    }
    if x >= SIGMOID_ONE {
        return 1.0;
    }
    if x <= SIGMOID_ZERO {
        return 0.0;
    }
    let minus_x = Float::from(-x);
    ziv(|p, rm| {
        // σ decreases with e = e^−x: a lower bound of σ from an upper bound of 1 + e, and
        // the other way round
        let against = if rm == Floor { Ceiling } else { Floor };
        let e = minus_x.exp_prec_round_ref(p, against).0;
        let one_plus_e = e.add_prec_round(Float::from(1u32), p, against).0;
        one_plus_e.reciprocal_prec_round(p, rm).0
    })
}

/// Ziv's loop: `bound(p, Floor)` ≤ f(x) ≤ `bound(p, Ceiling)` at working precision p, until
/// both round to the same f64.
fn ziv(bound: impl Fn(u64, RoundingMode) -> Float) -> f64 {
    let mut p = 128;
    loop {
        let lo = f64::rounding_from(bound(p, Floor), Nearest).0;
        let hi = f64::rounding_from(bound(p, Ceiling), Nearest).0;
        if lo.to_bits() == hi.to_bits() {
            return lo;
        }
        p *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use malachite::base::num::arithmetic::traits::Abs;
    use malachite::base::num::conversion::traits::ExactFrom;
    use crate::machine::random::SplitMix64;
    use malachite::Rational;

    /// f(x) at 300 bits (for distances).
    fn tanh_300(x: f64) -> Rational {
        Rational::exact_from(&Float::from(x).tanh_prec_round(300, Nearest).0)
    }
    fn sigmoid_300(x: f64) -> Rational {
        let e = Float::from(-x).exp_prec_round(300, Nearest).0;
        Rational::exact_from(&e.add_prec_round(Float::from(1u32), 300, Nearest).0.reciprocal_prec_round(300, Nearest).0)
    }

    /// f(x) is the f64 nearest to the 300-bit value `high(x)`: neither neighbour is closer.
    fn check_nearest(f: fn(f64) -> f64, high: fn(f64) -> Rational, x: f64) {
        let y = f(x);
        let v = high(x);
        let d = |z: f64| (Rational::exact_from(z) - &v).abs();
        assert!(d(y) <= d(y.next_up()) && d(y) <= d(y.next_down()), "x = {x:e}: {y:e} is not the nearest f64");
    }

    #[test]
    fn results_are_the_nearest_f64() {
        let mut rng = SplitMix64(0x2545_f491_4f6c_dd1d);
        for _ in 0..300 {
            let s = rng.next_u64();
            // magnitudes 2^−31 … 2^6, both signs
            let x = f64::from_bits((s >> 12) | 0x3ff0_0000_0000_0000) - 1.0;
            let x = (x * 2.0 - 1.0) * 2f64.powi((s % 38) as i32 - 31);
            check_nearest(tanh, tanh_300, x);
            check_nearest(sigmoid, sigmoid_300, x * 8.0);
        }
        for x in [0.5, -0.5, 1.0, 19.999, -19.999, 0.25, 1e-9, 39.9, -39.9, -700.0, -745.0, -745.13] {
            check_nearest(tanh, tanh_300, x);
            check_nearest(sigmoid, sigmoid_300, x);
        }
    }

    #[test]
    fn special_values_and_thresholds() {
        assert!(tanh(f64::NAN).is_nan() && sigmoid(f64::NAN).is_nan());
        assert_eq!(tanh(f64::INFINITY), 1.0);
        assert_eq!(tanh(f64::NEG_INFINITY), -1.0);
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(tanh(5e-324), 5e-324);
        assert_eq!(sigmoid(f64::INFINITY), 1.0);
        assert_eq!(sigmoid(f64::NEG_INFINITY).to_bits(), 0);
        assert_eq!(sigmoid(0.0), 0.5);
        assert_eq!(sigmoid(-0.0), 0.5);
        // just inside each shortcut, the Ziv loop gives the value the shortcut returns
        let xf = |x: f64| Float::from(x);
        let cr = |v: Float| f64::rounding_from(v, Nearest).0;
        assert_eq!(cr(xf(TANH_ONE.next_down()).tanh_prec_round(300, Nearest).0), 1.0);
        let t = TANH_TINY.next_down();
        assert_eq!(cr(xf(t).tanh_prec_round(300, Nearest).0), t);
        assert_eq!(f64::rounding_from(&sigmoid_300(SIGMOID_ONE.next_down()), Nearest).0, 1.0);
        assert_eq!(f64::rounding_from(&sigmoid_300(SIGMOID_ZERO.next_up()), Nearest).0, 0.0);
        // subnormal σ (e^x below 2^−1022): correctly rounded on the subnormal grid
        check_nearest(sigmoid, sigmoid_300, -720.5);
        assert!(sigmoid(-720.5) > 0.0 && sigmoid(-720.5) < f64::MIN_POSITIVE);
    }
}
