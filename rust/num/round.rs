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

/// 2^k as an f64, for k in [−1074, 1023] (subnormal powers included).
fn pow2(k: i64) -> f64 {
    debug_assert!((-1074..=1023).contains(&k));
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// floor(log2 |x|) of a finite nonzero f64 (subnormals included).
fn floor_log2_f64(x: f64) -> i64 {
    let bits = x.to_bits() & 0x7fff_ffff_ffff_ffff;
    let biased = (bits >> 52) as i64;
    if biased > 0 {
        biased - 1023
    } else {
        -1074 + 63 - i64::from(bits.leading_zeros())
    }
}

impl BinaryFormat {
    /// True when every value of the format is an f64 (p ≤ 53 and its exponent range,
    /// subnormals included, inside f64's).
    pub fn fits_in_f64(&self) -> bool {
        self.precision <= 53 && self.emax <= 1023 && self.emin - i64::from(self.precision) + 1 >= -1074
    }
}

/// Rounds an f64 to the nearest value of `fmt` (ties to even, gradual underflow, ±∞ past the
/// largest finite value as in `round_to_format`), for a format that [`fits_in_f64`]
/// (`BinaryFormat::fits_in_f64`). The quantum 2^q of x's binade (fixed at emin − p + 1 below
/// 2^emin) is found from x's exponent; x·2^−q is rounded to an integer with ties to even
/// and scaled back; every scaling is by a power of two and exact. NaN and ±∞ pass through.
pub fn round_f64_in(x: f64, fmt: BinaryFormat) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    debug_assert!(fmt.fits_in_f64());
    let p = i64::from(fmt.precision);
    let q = floor_log2_f64(x).max(fmt.emin) - p + 1;
    // scale by 2^-q in two exact halves (2^-q alone may overflow for q < -1023)
    let (s1, s2) = (-q / 2, -q - (-q / 2));
    let y = x * pow2(s1) * pow2(s2); // |y| < 2^p, exact
    // nearest-even integer: adding and subtracting 1.5·2^52 is exact rounding for |y| ≤ 2^51
    // (and avoids a libm `rint` call: this is the f64 → f16/bf16 conversion of every input)
    const MAGIC: f64 = 6755399441055744.0;
    let m = if p <= 51 { ((y + MAGIC.copysign(y)) - MAGIC.copysign(y)).copysign(y) } else { y.round_ties_even() };
    let v = m * pow2(q.max(-1074));
    let max = (2.0 - pow2(1 - p)) * pow2(fmt.emax);
    if v.abs() > max {
        return f64::INFINITY.copysign(x);
    }
    v
}

/// x rounded to f32 **to odd**: toward zero, with the last significand bit set when that
/// lost anything. Rounding the result to nearest in a format of p ≤ 22 significand bits
/// whose exponents f32 covers (f16, bf16) gives x's own rounding to it, ties and gradual
/// underflow included (Boldo & Melquiond 2008, Theorem 1, as `fused`): a value rounded to
/// odd lies on a midpoint of the coarser grid only when x did. Beyond f32's range it is
/// ±`f32::MAX` (odd), which such a format rounds to ±∞ as it does x. NaN stays NaN.
#[inline(always)]
pub fn round_f64_to_f32_odd(x: f64) -> f32 {
    let nearest = x as f32;
    let back = f64::from(nearest);
    if back == x {
        return nearest;
    }
    // toward zero: one step back in magnitude when the nearest is the farther one (never 0
    // there; ±∞ steps back to ±f32::MAX)
    let toward_zero = if back.abs() > x.abs() { nearest.to_bits() - 1 } else { nearest.to_bits() };
    f32::from_bits(toward_zero | 1)
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
    fn f64_rounding_agrees_with_the_rational_rounding() {
        let formats = [
            BinaryFormat::F16,
            BinaryFormat::BF16,
            BinaryFormat::F32,
            BinaryFormat::F64,
            BinaryFormat::ieee(1, 2),
            BinaryFormat::ieee(2, 3),
            BinaryFormat::ieee(12, 6),
            BinaryFormat::ieee(40, 10),
        ];
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut vals = vec![0.5, 1.0 + 1.0 / 2048.0, 1.0 + 3.0 / 2048.0, 65519.99, 65520.0, 2.98e-8, 5e-324, -7.0, 3.0, 3.5, 0.375];
        for _ in 0..4000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = f64::from_bits(s);
            if v.is_finite() {
                vals.push(v);
                vals.push(v * pow2(-(floor_log2_f64(v) / 2)) ); // bring some near 1
            }
        }
        for fmt in formats {
            for &v in &vals {
                if v == 0.0 || !v.is_finite() {
                    continue;
                }
                // the rational oracle has no -0: a negative underflow is -0.0 here
                let want = round_to_f64_in(&Rational::try_from(v).unwrap(), fmt).copysign(v);
                assert_eq!(round_f64_in(v, fmt).to_bits(), want.to_bits(), "{v:e} in {fmt:?}");
            }
        }
        // precision 2, emax 1: values 0.5·k below 1 (subnormals 0.5), 1, 1.5, 2, 3; max 3
        let p2 = BinaryFormat::ieee(1, 2);
        assert_eq!(round_f64_in(2.5, p2), 2.0, "tie between 2 and 3 goes to even 2");
        assert_eq!(round_f64_in(3.4, p2), 3.0);
        assert_eq!(round_f64_in(3.5, p2), f64::INFINITY, "3.5 rounds to 4 (unbounded) > max 3");
        assert_eq!(round_f64_in(0.25, p2), 0.0, "half the smallest subnormal: tie to 0");
        assert_eq!(round_f64_in(0.26, p2), 0.5);
        assert_eq!(round_f64_in(-0.1, p2).to_bits(), (-0.0f64).to_bits(), "underflow keeps the sign");
    }

    /// f16 and bf16 from f64 through f32 rounded to odd (`round_f64_to_f32_odd`, then half's
    /// f32 roundings) equal `round_f64_in`: random values across both formats' ranges, each
    /// format's midpoints exactly and an f64 ulp either side (where a plain f64 → f32 → half
    /// double rounding goes wrong), the overflow thresholds, subnormals, tiny values, beyond
    /// f32's range, and signed zeros.
    #[test]
    fn rounding_to_odd_through_f32_is_the_half_formats_rounding() {
        use half::{bf16, f16};
        let mut seed = 5u64;
        let mut xs = Vec::new();
        for i in 0..200_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let bits = seed >> 11;
            // exponents 2^-160 .. 2^140 (f16's and bf16's ranges and past them)
            let e = (bits % 300) as i32 - 160;
            let m = 1.0 + ((bits >> 12) as f64) / (1u64 << 40) as f64;
            xs.push(if i % 2 == 0 { m * 2f64.powi(e) } else { -m * 2f64.powi(e) });
        }
        for (p, emin) in [(11, -14), (8, -126)] {
            for e in [emin - p, emin - 3, emin, -1, 0, 3, 10, 15, 100, 127] {
                for k in [0.5, 1.5, 2.5, 1023.5, 127.5, 0.25] {
                    let mid = k * 2f64.powi(e - p + 1);
                    xs.extend([mid, mid.next_up(), mid.next_down(), -mid, (-mid).next_down()]);
                }
            }
        }
        let bf16_edge = (2.0 - 2f64.powi(-8)) * 2f64.powi(127);
        xs.extend([65504.0, 65519.99, 65520.0, 65520.0f64.next_down(), 2.9802322387695312e-8, 5.960464477539063e-8, bf16_edge, bf16_edge.next_down(), bf16_edge.next_up()]);
        xs.extend([1e-300, -1e-300, 1e300, -1e300, f64::MAX, f64::MIN_POSITIVE, 5e-324, 0.0, -0.0, f64::from(f32::MAX), f64::from(f32::MAX).next_up()]);
        for &x in &xs {
            let odd = round_f64_to_f32_odd(x);
            let (h, b) = (f16::from_f32(odd).to_f64(), bf16::from_f32(odd).to_f64());
            let (hw, bw) = (round_f64_in(x, BinaryFormat::F16), round_f64_in(x, BinaryFormat::BF16));
            assert_eq!(h.to_bits(), hw.to_bits(), "f16 of {x:e}: {h:e}, want {hw:e}");
            assert_eq!(b.to_bits(), bw.to_bits(), "bf16 of {x:e}: {b:e}, want {bw:e}");
        }
        // exact in f32: unchanged; NaN stays NaN
        assert_eq!(round_f64_to_f32_odd(1.5), 1.5);
        assert!(round_f64_to_f32_odd(f64::NAN).is_nan());
        // the f16 midpoint 1 + 2^-11 plus an f64 ulp: f32's nearest would be the midpoint itself
        let x = (1.0 + 2f64.powi(-11)).next_up();
        assert_eq!(f16::from_f32(x as f32).to_f64(), 1.0, "plain double rounding");
        assert_eq!(f16::from_f32(round_f64_to_f32_odd(x)).to_f64(), 1.0 + 2f64.powi(-10));
    }

    #[test]
    fn ieee_constructor_matches_named_formats() {
        assert_eq!(BinaryFormat::ieee(10, 5), BinaryFormat::F16);
        assert_eq!(BinaryFormat::ieee(7, 8), BinaryFormat::BF16);
        assert_eq!(BinaryFormat::ieee(23, 8), BinaryFormat::F32);
        assert_eq!(BinaryFormat::ieee(52, 11), BinaryFormat::F64);
    }
}
