//! A fast sigmoid for the narrow formats that gives **exactly** the documented result
//! `round_F(1 / (1 + libm_exp_f64(−x)))` (num/float.rs `Float::sigmoid`).
//!
//! Same Ziv argument as `fast_tanh`: `approx` evaluates σ(x) in f64 with a branch-free,
//! vectorisable formula of relative error below 2^−41: E = e^{−|x|} = 2^n·P(r) (Cody–Waite
//! r = −|x| − n·ln 2, |r| ≤ ln2/2, P the degree-10 Taylor polynomial, error < 2^−42), then
//! σ = 1/(1 + E) for x ≥ 0 and E/(1 + E) for x < 0 (relative error at most twice E's).
//! The documented f64 value D (libm exp within one ulp, then a rounded add and divide) is
//! within 2^−50 relative of σ. So both y and D lie in [y(1 − δ), y(1 + δ)], δ = 2^−36;
//! when both ends round to the same value of the format, that value is round_F(D).
//! Otherwise (rare) the documented formula is evaluated with libm. |x| is clamped to 110
//! (σ(−110) < 2^−158 rounds to 0 in every narrow format, σ(110) to 1, as D does).

use crate::num::round::{round_f64_in, BinaryFormat};

const DELTA: f64 = 1.0 / (1u64 << 36) as f64;

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

/// The documented sigmoid in f64 (before rounding to the format).
#[inline]
fn documented(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `Float::sigmoid` for f32, bit for bit.
#[inline]
pub fn sigmoid_f32(x: f32) -> f32 {
    let y = approx(f64::from(x));
    let (lo, hi) = ((y * (1.0 - DELTA)) as f32, (y * (1.0 + DELTA)) as f32);
    if lo.to_bits() == hi.to_bits() { lo } else { documented(f64::from(x)) as f32 }
}

/// `Float::sigmoid` for a half format (f16, bf16), as an f32 holding the value.
#[inline]
pub fn sigmoid_half(x: f32, fmt: BinaryFormat) -> f32 {
    let y = approx(f64::from(x));
    let (lo, hi) = (round_f64_in(y * (1.0 - DELTA), fmt), round_f64_in(y * (1.0 + DELTA), fmt));
    let r = if lo.to_bits() == hi.to_bits() { lo } else { round_f64_in(documented(f64::from(x)), fmt) };
    r as f32
}

/// In place over a slice: AVX-512 + FMA when the CPU has them (`activation_avx512`), else
/// a vectorised pass (AVX2 or portable), then the documented formula for the rare
/// undecided elements. The instruction set changes the speed, not the bits.
pub fn sigmoid_f32_slice(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::sim::activation_avx512::{apply, Func, Target};
        if apply(Func::Sigmoid, Target::F32, xs) {
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { slice_avx2(xs) };
        }
    }
    slice_generic(xs)
}

/// `sigmoid_half` over a slice, in place (AVX-512 when available, same bits).
pub fn sigmoid_half_slice(xs: &mut [f32], fmt: BinaryFormat) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::sim::activation_avx512::{apply, Func, Target};
        if apply(Func::Sigmoid, if fmt == BinaryFormat::F16 { Target::F16 } else { Target::Bf16 }, xs) {
            return;
        }
    }
    xs.iter_mut().for_each(|x| *x = sigmoid_half(*x, fmt));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx")]
unsafe fn slice_avx2(xs: &mut [f32]) {
    slice_generic(xs)
}

#[inline(always)]
fn slice_generic(xs: &mut [f32]) {
    const CHUNK: usize = 64;
    let (mut lo, mut hi) = ([0f32; CHUNK], [0f32; CHUNK]);
    for chunk in xs.chunks_mut(CHUNK) {
        let m = chunk.len();
        for ((l, h), &x) in lo[..m].iter_mut().zip(hi[..m].iter_mut()).zip(chunk.iter()) {
            let y = approx(f64::from(x));
            *l = (y * (1.0 - DELTA)) as f32;
            *h = (y * (1.0 + DELTA)) as f32;
        }
        let mut undecided = 0u32;
        for (l, h) in lo[..m].iter().zip(hi[..m].iter()) {
            undecided += u32::from(l.to_bits() != h.to_bits());
        }
        // (a separate branch: merged into one loop, the compiler evaluates the libm
        // fallback for every element)
        if undecided == 0 {
            chunk.copy_from_slice(&lo[..m]);
        } else {
            for ((x, l), h) in chunk.iter_mut().zip(lo.iter()).zip(hi.iter()) {
                *x = if l.to_bits() == h.to_bits() { *l } else { documented(f64::from(*x)) as f32 };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for (&x, &y) in xs.iter().zip(&ys) {
            let want = documented(x as f64) as f32;
            assert!(y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()), "{x:e}");
            assert_eq!(sigmoid_f32(x).to_bits(), y.to_bits());
            for fmt in [BinaryFormat::F16, BinaryFormat::BF16] {
                let want = round_f64_in(documented(x as f64), fmt) as f32;
                let got = sigmoid_half(x, fmt);
                assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{x:e}");
            }
        }
    }
}
