//! A fast tanh for f32 lanes that gives **exactly** the documented result
//! `round_f32(D(x))`, D(x) = tanh(x) correctly rounded to f64 (num/float.rs `Float::tanh`;
//! f16/bf16 look it up: `half_tables`).
//!
//! Method (the Ziv test of `ziv.rs`): `approx` evaluates tanh(x) in f64 with a
//! branch-free, vectorisable formula whose relative error is below 2^−44 (odd Taylor polynomial to x^19 for |x| < 0.3,
//! else 1 − 2/(e^{2|x|} + 1) with e^y = 2^n·P(r), r = y − n·ln 2 by Cody–Waite, P the
//! degree-11 Taylor polynomial, |r| ≤ ln2/2). With AVX-512 + FMA the slices use the faster
//! `activation_avx512` approximation instead. f64 lanes use `activation_f64`.

use crate::sim::ziv::{self, Approximated, Func};

/// tanh with its fast path (see `ziv`).
pub struct Tanh;

impl Approximated for Tanh {
    const FUNC: Func = Func::Tanh;
    #[inline(always)]
    fn approx(x: f64) -> f64 {
        approx(x)
    }
    fn documented(x: f64) -> f64 {
        crate::sim::activation_f64::tanh(x)
    }
}

/// tanh(x) to a relative error below 2^−44 (see the module doc); NaN for NaN.
#[inline(always)]
pub fn approx(x: f64) -> f64 {
    let a = x.abs();
    // small |x|: tanh x = x − x³/3 + 2x⁵/15 − ... (coefficients 2^{2n}(2^{2n}−1)B_{2n}/(2n)!);
    // at |x| < 0.3 the x^21 term is below 2^−50 relative
    let z = a * a;
    let p = 1.0
        + z * (-1.0 / 3.0
            + z * (2.0 / 15.0
                + z * (-17.0 / 315.0
                    + z * (62.0 / 2835.0
                        + z * (-1382.0 / 155925.0
                            + z * (21844.0 / 6081075.0
                                + z * (-929569.0 / 638512875.0
                                    + z * (6404582.0 / 10854718875.0 + z * (-443861162.0 / 1856156927625.0)))))))));
    let small = a * p;
    // larger |x|: 1 − 2/(e^{2a} + 1), e^{2a} with 2a clamped to 80 (tanh = 1 − 4e^−80 there)
    let y = (2.0 * a).min(80.0);
    // n = round(y·log2 e) by the 1.5·2^52 trick (ties to even, vectorisable; no libm rint)
    const MAGIC: f64 = 6755399441055744.0;
    let shifted = y * std::f64::consts::LOG2_E + MAGIC;
    let n = shifted - MAGIC;
    const LN2_HI: f64 = 0.693_147_180_369_123_8; // ln 2 with 32 significant bits: n·LN2_HI is exact
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let r = (y - n * LN2_HI) - n * LN2_LO;
    let mut e = 1.0 / 39916800.0;
    #[allow(clippy::excessive_precision)]
    for c in [1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        e = e * r + c;
    }
    // 2^n from the low bits of `shifted` (= 0x4338_0000_0000_0000 + n, 0 <= n <= 116)
    let scaled = e * f64::from_bits((shifted.to_bits().wrapping_sub(0x4338_0000_0000_0000) + 1023) << 52);
    let large = 1.0 - 2.0 / (scaled + 1.0);
    let t = if a < 0.3 { small } else { large };
    let t = if a.is_nan() { a } else { t };
    t.copysign(x)
}

/// `(x as f64).tanh() as f32`, bit for bit.
#[inline]
pub fn tanh_f32(x: f32) -> f32 {
    ziv::to_f32::<Tanh>(x)
}

/// `tanh_f32` over a slice, in place.
pub fn tanh_f32_slice(xs: &mut [f32]) {
    ziv::slice_f32::<Tanh>(xs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approx_is_within_its_error_bound() {
        let mut worst = 0f64;
        for i in 0..200_000 {
            let x = (i as f64 - 100_000.0) / 9_000.0; // -11..11
            let (y, want) = (approx(x), x.tanh());
            if want != 0.0 {
                worst = worst.max(((y - want) / want).abs());
            }
        }
        assert!(worst < 2f64.powi(-44), "relative error {worst:e}");
        assert!(approx(f64::NAN).is_nan());
        assert_eq!(approx(f64::INFINITY), 1.0);
        assert_eq!(approx(-0.0).to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn fast_tanh_equals_the_definition_bit_for_bit() {
        let mut s = 12345u64;
        let mut xs = Vec::new();
        for i in 0..1_000_000u32 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let bits = (s >> 32) as u32;
            // half anywhere in f32, half in the interesting range |x| < 16
            xs.push(if i % 2 == 0 { f32::from_bits(bits) } else { f32::from_bits(bits & 0x837f_ffff) });
        }
        xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, 0.3, 0.29999998, 20.0]);
        let mut ys = xs.clone();
        tanh_f32_slice(&mut ys);
        let mut portable = xs.clone();
        crate::sim::ziv::slice_f32_portable_for_tests::<Tanh>(&mut portable);
        for ((&x, &y), &p) in xs.iter().zip(&ys).zip(&portable) {
            assert!(p.to_bits() == y.to_bits() || (p.is_nan() && y.is_nan()), "{x:e}");
            let want = (x as f64).tanh() as f32;
            assert!(y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()), "{x:e}");
            assert_eq!(tanh_f32(x).to_bits(), y.to_bits());
        }
    }
}
