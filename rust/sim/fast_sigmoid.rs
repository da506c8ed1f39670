//! A fast sigmoid for f32 lanes that gives **exactly** the documented result
//! `round_f32(D(x))`, D(x) = σ(x) correctly rounded to f64 (num/float.rs `Float::sigmoid`;
//! f16/bf16 look it up: `half_tables`).
//!
//! Same Ziv test (`ziv.rs`) as `fast_tanh`: `approx` evaluates σ(x) in f64 with a branch-free,
//! vectorisable formula of relative error below 2^−41: E = e^{−|x|} = 2^n·P(r) (Cody–Waite
//! r = −|x| − n·ln 2, |r| ≤ ln2/2, P the degree-10 Taylor polynomial, error < 2^−42), then
//! σ = 1/(1 + E) for x ≥ 0 and E/(1 + E) for x < 0 (relative error at most twice E's).
//! The documented f64 value D (correctly rounded) is within 2^−53 relative of σ. So both y and D lie in [y(1 − δ), y(1 + δ)], δ = 2^−36;
//! when both ends round to the same value of the format, that value is round_F(D).
//! Otherwise (rare) D is evaluated (`activation_f64`). |x| is clamped to 110
//! (σ(−110) < 2^−158 rounds to 0 in every narrow format, σ(110) to 1, as D does). With
//! AVX-512 + FMA the slices use the faster `activation_avx512` approximation instead.

use crate::sim::ziv::{self, Approximated, Func};

/// σ with its fast path (see `ziv`).
pub struct Sigmoid;

impl Approximated for Sigmoid {
    const FUNC: Func = Func::Sigmoid;
    #[inline(always)]
    fn approx(x: f64) -> f64 {
        approx(x)
    }
    /// `Float::sigmoid` before rounding: σ(x) correctly rounded to f64.
    fn documented(x: f64) -> f64 {
        crate::sim::activation_f64::sigmoid(x)
    }
}

/// σ(x) to a relative error below 2^−41 (see the module doc); NaN for NaN.
#[inline(always)]
pub fn approx(x: f64) -> f64 {
    let y = -(x.abs().min(110.0));
    const MAGIC: f64 = 6755399441055744.0; // 1.5·2^52: adding it rounds to an integer
    let shifted = y * std::f64::consts::LOG2_E + MAGIC;
    let n = shifted - MAGIC;
    const LN2_HI: f64 = 0.693_147_180_369_123_8; // 32 significant bits: n·LN2_HI is exact
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let r = (y - n * LN2_HI) - n * LN2_LO;
    let mut p = 1.0 / 3628800.0;
    for c in [1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p * r + c;
    }
    // 2^n from the low bits of `shifted` (−159 <= n <= 0)
    let e = p * f64::from_bits(shifted.to_bits().wrapping_sub(0x4338_0000_0000_0000).wrapping_add(1023) << 52);
    let num = if x >= 0.0 { 1.0 } else { e };
    let s = num / (1.0 + e);
    if x.is_nan() { x } else { s }
}

/// `Float::sigmoid` for f32, bit for bit.
#[inline]
pub fn sigmoid_f32(x: f32) -> f32 {
    ziv::to_f32::<Sigmoid>(x)
}

/// `sigmoid_f32` over a slice, in place.
pub fn sigmoid_f32_slice(xs: &mut [f32]) {
    ziv::slice_f32::<Sigmoid>(xs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documented(x: f64) -> f64 {
        Sigmoid::documented(x)
    }

    #[test]
    fn approx_is_within_its_error_bound() {
        let mut worst = 0f64;
        for i in 0..400_000 {
            let x = (i as f64 - 200_000.0) / 2_000.0; // -100..100
            let (y, want) = (approx(x), documented(x));
            if want > 1e-300 {
                worst = worst.max(((y - want) / want).abs());
            }
        }
        assert!(worst < 2f64.powi(-41), "relative error {worst:e}");
        assert!(approx(f64::NAN).is_nan());
        assert_eq!(approx(f64::INFINITY), 1.0);
        assert_eq!(approx(f64::NEG_INFINITY), approx(-110.0));
    }

    #[test]
    fn fast_sigmoid_equals_the_definition_bit_for_bit() {
        let mut s = 777u64;
        let mut xs = Vec::new();
        for i in 0..1_000_000u32 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let bits = (s >> 32) as u32;
            // half anywhere in f32, half in |x| < 256
            xs.push(if i % 2 == 0 { f32::from_bits(bits) } else { f32::from_bits(bits & 0x83ff_ffff) });
        }
        xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, -103.0, -104.0, -110.0, -120.0, 88.0, 17.0]);
        let mut ys = xs.clone();
        sigmoid_f32_slice(&mut ys);
        let mut portable = xs.clone();
        crate::sim::ziv::slice_f32_portable_for_tests::<Sigmoid>(&mut portable);
        for ((&x, &y), &p) in xs.iter().zip(&ys).zip(&portable) {
            assert!(p.to_bits() == y.to_bits() || (p.is_nan() && y.is_nan()), "{x:e}");
            let want = documented(x as f64) as f32;
            assert!(y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()), "{x:e}");
            assert_eq!(sigmoid_f32(x).to_bits(), y.to_bits());
        }
    }
}
