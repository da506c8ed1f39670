//! Correct rounding of an exact rational to a binary floating-point format.
//!
//! A format with `precision` significand bits p (hidden bit included) and exponent range
//! [emin, emax] (IEEE 754 style) represents ±m·2^(e−p+1) with 0 ≤ m < 2^p, e ≥ emin
//! (subnormals below 2^emin) and values up to (2 − 2^(1−p))·2^emax. `round_to_format`
//! returns the nearest such value, ties to the even significand, and ±∞ when the rounded
//! value (with an unbounded exponent) exceeds the largest finite one: IEEE 754-2019 §4.3.1
//! roundTiesToEven and §7.4 overflow.

use malachite::base::num::arithmetic::traits::{FloorLogBase2, PowerOf2};
use malachite::base::num::conversion::traits::RoundingFrom;
use malachite::base::rounding_modes::RoundingMode;
use malachite::{Integer, Rational};

/// The result of rounding: a finite value of the format (as an exact rational) or ±∞.
#[derive(Debug, Clone, PartialEq)]
pub enum Rounded {
    Finite(Rational),
    Infinite { negative: bool },
}

/// A binary floating-point format: `precision` significand bits including the hidden bit,
/// normal exponents from `emin` to `emax`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinaryFormat {
    pub precision: u32,
    pub emin: i64,
    pub emax: i64,
}

impl BinaryFormat {
    /// IEEE-style format with `mantissa_bits` stored fraction bits and `exponent_bits`
    /// exponent bits: p = mantissa_bits + 1, emax = 2^(exponent_bits−1) − 1, emin = 1 − emax.
    pub fn ieee(mantissa_bits: u32, exponent_bits: u32) -> Self {
        let emax = (1i64 << (exponent_bits - 1)) - 1;
        BinaryFormat { precision: mantissa_bits + 1, emin: 1 - emax, emax }
    }
    pub const F64: BinaryFormat = BinaryFormat { precision: 53, emin: -1022, emax: 1023 };
    pub const F32: BinaryFormat = BinaryFormat { precision: 24, emin: -126, emax: 127 };
    pub const BF16: BinaryFormat = BinaryFormat { precision: 8, emin: -126, emax: 127 };
    pub const F16: BinaryFormat = BinaryFormat { precision: 11, emin: -14, emax: 15 };

    /// The largest finite value (2 − 2^(1−p))·2^emax.
    pub fn max_finite(&self) -> Rational {
        let m = Integer::power_of_2(u64::from(self.precision)) - Integer::from(1);
        Rational::from(m) * Rational::power_of_2(self.emax - i64::from(self.precision) + 1)
    }
}

/// Round `x` to the nearest value of `fmt` (ties to even; overflow to ±∞; gradual underflow).
pub fn round_to_format(x: &Rational, fmt: BinaryFormat) -> Rounded {
    if *x == 0u32 {
        return Rounded::Finite(Rational::from(0));
    }
    let negative = *x < 0u32;
    let a = if negative { -x.clone() } else { x.clone() };
    let e: i64 = (&a).floor_log_base_2();
    // quantum exponent: the weight of the last significand bit (fixed below emin: subnormals)
    let q = e.max(fmt.emin) - i64::from(fmt.precision) + 1;
    let scaled = &a * Rational::power_of_2(-q);
    let (m, _) = Integer::rounding_from(&scaled, RoundingMode::Nearest);
    let value = Rational::from(m) * Rational::power_of_2(q);
    if value > fmt.max_finite() {
        return Rounded::Infinite { negative };
    }
    Rounded::Finite(if negative { -value } else { value })
}

/// Round to the format and express the result as an f64 (exact whenever the format is no
/// wider than f64, which holds for f64, f32, bf16 and f16).
pub fn round_to_f64_in(x: &Rational, fmt: BinaryFormat) -> f64 {
    match round_to_format(x, fmt) {
        Rounded::Infinite { negative: true } => f64::NEG_INFINITY,
        Rounded::Infinite { negative: false } => f64::INFINITY,
        Rounded::Finite(r) => f64::rounding_from(r, RoundingMode::Nearest).0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn r(s: &str) -> Rational {
        Rational::from_str(s).unwrap()
    }

    #[test]
    fn f64_rounding_matches_hardware_division() {
        for (p, q) in [(1i64, 3i64), (2, 3), (-7, 10), (1, 1 << 40), (123456789, 1000), (1, 7)] {
            let x = Rational::from(p) / Rational::from(q);
            assert_eq!(round_to_f64_in(&x, BinaryFormat::F64), p as f64 / q as f64);
        }
    }

    #[test]
    fn f32_rounding_matches_cast_of_exact_f64_values() {
        for v in [0.1f64, 1.0 / 3.0, 1e-40, 3.4e38, 3.5e38, -2.5e-45, 1.0 + f64::EPSILON] {
            let x = Rational::try_from(v).unwrap();
            let ours = round_to_f64_in(&x, BinaryFormat::F32);
            assert_eq!(ours, (v as f32) as f64, "value {v}");
        }
    }

    #[test]
    fn f16_rounding_matches_half_crate() {
        for v in [0.1f64, 65504.0, 65519.99, 65520.0, 6e-8, 2.98e-8, 1.0 / 3.0, -1234.5678] {
            let x = Rational::try_from(v).unwrap();
            assert_eq!(round_to_f64_in(&x, BinaryFormat::F16), half::f16::from_f64(v).to_f64(), "value {v}");
        }
    }

    #[test]
    fn ties_go_to_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10 in f16: rounds to 1 (even)
        assert_eq!(round_to_f64_in(&(r("1") + r("1/2048")), BinaryFormat::F16), 1.0);
        // 1 + 3·2^-11 is halfway between 1+2^-10 and 1+2^-9: rounds up to the even one
        assert_eq!(round_to_f64_in(&(r("1") + r("3/2048")), BinaryFormat::F16), 1.0 + 1.0 / 512.0);
    }

    #[test]
    fn ieee_constructor_matches_named_formats() {
        assert_eq!(BinaryFormat::ieee(10, 5), BinaryFormat::F16);
        assert_eq!(BinaryFormat::ieee(7, 8), BinaryFormat::BF16);
        assert_eq!(BinaryFormat::ieee(23, 8), BinaryFormat::F32);
        assert_eq!(BinaryFormat::ieee(52, 11), BinaryFormat::F64);
    }
}
