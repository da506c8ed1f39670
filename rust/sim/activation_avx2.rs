//! tanh and σ over f32 lanes with AVX2 + FMA (a CPU without AVX-512): 8 values per step,
//! the same results as `activation_avx512` and the portable loops, bit for bit the
//! documented `round_f32(correctly rounded f64 value)`.
//!
//! The approximation is `activation_avx512`'s on 4 f64 lanes (its module doc has the error
//! budget), with AVX2's instructions in place of three AVX-512 ones:
//! * T_j = 2^{j/16} by `vgatherqpd` from the same 16-entry table (for `vpermt2pd`);
//! * 2^floor(k/16) built in the exponent field (k ≤ 0 fits in the low 32 bits of the
//!   rounding trick's integer, so `vpsrad` floors k/16; the biased exponent stays in
//!   [863, 1023]) and multiplied in, exactly (for `vscalefpd`);
//! * the quotient from `rcpps` (relative error below 1.5·2^−12, on d rounded to f32) and
//!   the series 1 + e + e² + e³, error below e⁴ + a few 2^−53 < 2^−45 (for rcp14 and
//!   1 + e + e²: 2^−42). So the error bounds of `activation_avx512` hold: tanh below
//!   2^−40.4, σ below 2^−41.9 (measured by the test on a grid).
//!
//! The Ziv test and the scalar fallback are `activation_avx512`'s: when y(1 ± 2^−36) round
//! to the same f32, that is the rounding of the documented value.

use crate::sim::activation_avx512::{fallback, EXP2_SIXTEENTHS, EXPM1_P};
use crate::sim::ziv::{Approximated, Func, DELTA};
use std::arch::x86_64::*;

/// Whether this CPU runs [`apply`] (and `RNNSIM_ISA` allows it: `cpu`).
pub fn available() -> bool {
    crate::sim::cpu::avx2_fma()
}

/// `A` over `xs` in place; false (nothing done) when the CPU lacks AVX2/FMA.
pub fn apply<A: Approximated>(xs: &mut [f32]) -> bool {
    if !available() {
        return false;
    }
    // SAFETY: the CPU has every feature `run` is compiled for (checked above).
    unsafe { run::<A>(xs) };
    true
}

#[target_feature(enable = "avx2,avx,fma")]
unsafe fn run<A: Approximated>(xs: &mut [f32]) {
    let n = xs.len();
    let p = xs.as_mut_ptr();
    let mut i = 0;
    // two vectors per step: four independent f64 chains in flight
    while i + 16 <= n {
        let (x0, x1) = (_mm256_loadu_ps(p.add(i)), _mm256_loadu_ps(p.add(i + 8)));
        let (r0, r1) = (approx8::<A>(x0), approx8::<A>(x1));
        finish::<A>(p.add(i), x0, r0, 8);
        finish::<A>(p.add(i + 8), x1, r1, 8);
        i += 16;
    }
    while i < n {
        let m = (n - i).min(8);
        let mut buf = [0f32; 8];
        buf[..m].copy_from_slice(&xs[i..i + m]);
        let x = _mm256_loadu_ps(buf.as_ptr());
        finish::<A>(buf.as_mut_ptr(), x, approx8::<A>(x), m);
        xs[i..i + m].copy_from_slice(&buf[..m]);
        i += m;
    }
}

/// The Ziv bounds (round_f32(y(1 − δ)), round_f32(y(1 + δ))) of 8 values.
#[inline(always)]
unsafe fn approx8<A: Approximated>(x: __m256) -> (__m256, __m256) {
    let (lo, hi) = (_mm256_cvtps_pd(_mm256_castps256_ps128(x)), _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x)));
    let (ylo, yhi) = match A::FUNC {
        Func::Tanh => (tanh4(lo), tanh4(hi)),
        Func::Sigmoid => (sigmoid4(lo), sigmoid4(hi)),
    };
    let (below, above) = (_mm256_set1_pd(1.0 - DELTA), _mm256_set1_pd(1.0 + DELTA));
    let down = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_mul_pd(yhi, below)), _mm256_cvtpd_ps(_mm256_mul_pd(ylo, below)));
    let up = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_mul_pd(yhi, above)), _mm256_cvtpd_ps(_mm256_mul_pd(ylo, above)));
    // a NaN lane returns x quietened (x + 0), as the scalar paths do
    let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x);
    let quiet = _mm256_add_ps(x, _mm256_setzero_ps());
    (_mm256_blendv_ps(down, quiet, nan), _mm256_blendv_ps(up, quiet, nan))
}

/// `A` on 8 values in registers (the single-sequence kernel, `gated_single`): the decided
/// results, the undecided lanes (rare) from the scalar fallback through memory.
#[inline(always)]
pub(crate) unsafe fn apply8<A: Approximated>(x: __m256) -> __m256 {
    let (down, up) = approx8::<A>(x);
    let same = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(down), _mm256_castps_si256(up))));
    if same == 0xff {
        return down;
    }
    let mut buf = [0f32; 8];
    finish::<A>(buf.as_mut_ptr(), x, (down, up), 8);
    _mm256_loadu_ps(buf.as_ptr())
}

/// Stores the first m decided results at p, the undecided ones from the scalar fallback.
#[inline(always)]
unsafe fn finish<A: Approximated>(p: *mut f32, x: __m256, (down, up): (__m256, __m256), m: usize) {
    let (mut d, mut u, mut xs) = ([0f32; 8], [0f32; 8], [0f32; 8]);
    _mm256_storeu_ps(d.as_mut_ptr(), down);
    let same = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(down), _mm256_castps_si256(up)))) as u32;
    if same & 0xff != 0xff {
        _mm256_storeu_ps(u.as_mut_ptr(), up);
        _mm256_storeu_ps(xs.as_mut_ptr(), x);
        for j in (0..8).filter(|j| same & (1 << j) == 0) {
            d[j] = fallback::<A>(xs[j]);
        }
    }
    std::ptr::copy_nonoverlapping(d.as_ptr(), p, m);
}

/// (S, q) with e^y = S·(1 + q), y = −u, u = F·a (see `activation_avx512::exp_parts`);
/// 0 ≤ u ≤ 110, or NaN.
#[inline(always)]
unsafe fn exp_parts<const F: u8>(a: __m256d) -> (__m256d, __m256d) {
    const MAGIC: f64 = 6755399441055744.0; // 1.5·2^52
    const LN2_16: f64 = std::f64::consts::LN_2 / 16.0;
    let shifted = _mm256_fmadd_pd(a, _mm256_set1_pd(-f64::from(F) * 16.0 * std::f64::consts::LOG2_E), _mm256_set1_pd(MAGIC));
    let k = _mm256_sub_pd(shifted, _mm256_set1_pd(MAGIC));
    let u = if F == 2 { _mm256_add_pd(a, a) } else { a };
    let r = _mm256_fnmsub_pd(k, _mm256_set1_pd(LN2_16), u); // −u − k·ln2/16
    // the integer k − 2^51·3 sits in the bits of `shifted`; its low 32 bits are k (k ≥ −2600)
    let bits = _mm256_castpd_si256(shifted);
    let t = _mm256_i64gather_pd::<8>(EXP2_SIXTEENTHS.as_ptr().cast(), _mm256_and_si256(bits, _mm256_set1_epi64x(15)));
    // 2^floor(k/16): floor by an arithmetic shift of the low 32 bits, biased, moved to the
    // exponent field (the high 32 bits cleared first)
    let m = _mm256_add_epi32(_mm256_srai_epi32::<4>(bits), _mm256_set1_epi32(1023));
    let two_m = _mm256_slli_epi64::<52>(_mm256_and_si256(m, _mm256_set1_epi64x(0xffff_ffff)));
    let s = _mm256_mul_pd(t, _mm256_castsi256_pd(two_m));
    let [c0, c1, c2, c3] = EXPM1_P;
    let r2 = _mm256_mul_pd(r, r);
    let p01 = _mm256_fmadd_pd(r, _mm256_set1_pd(c1), _mm256_set1_pd(c0));
    let p23 = _mm256_fmadd_pd(r, _mm256_set1_pd(c3), _mm256_set1_pd(c2));
    let p = _mm256_fmadd_pd(r2, p23, p01);
    let q = _mm256_fmadd_pd(r2, p, r);
    (s, q)
}

/// num / d for d ∈ [1, 2] to below 2^−45 (rcpps and the series 1 + e + e² + e³).
#[inline(always)]
unsafe fn divide(num: __m256d, d: __m256d) -> __m256d {
    let x0 = _mm256_cvtps_pd(_mm_rcp_ps(_mm256_cvtpd_ps(d)));
    let e = _mm256_fnmadd_pd(d, x0, _mm256_set1_pd(1.0));
    let t = _mm256_fmadd_pd(e, _mm256_fmadd_pd(e, e, e), e);
    let q0 = _mm256_mul_pd(num, x0);
    _mm256_fmadd_pd(q0, t, q0)
}

/// tanh on 4 lanes, relative error < 2^−40 (as `activation_avx512::tanh8`).
#[inline(always)]
unsafe fn tanh4(x: __m256d) -> __m256d {
    let sign = _mm256_set1_pd(-0.0);
    // |x| clamped at 40; NaN passes (vminpd returns its second operand)
    let a = _mm256_min_pd(_mm256_set1_pd(40.0), _mm256_andnot_pd(sign, x));
    let (s, q) = exp_parts::<2>(a);
    let num = _mm256_xor_pd(_mm256_fnmadd_pd(s, q, _mm256_sub_pd(_mm256_set1_pd(1.0), s)), _mm256_and_pd(x, sign));
    let d = _mm256_fmadd_pd(s, q, _mm256_add_pd(s, _mm256_set1_pd(1.0)));
    divide(num, d)
}

/// σ on 4 lanes, relative error < 2^−40 (as `activation_avx512::sigmoid8`).
#[inline(always)]
unsafe fn sigmoid4(x: __m256d) -> __m256d {
    let a = _mm256_min_pd(_mm256_set1_pd(110.0), _mm256_andnot_pd(_mm256_set1_pd(-0.0), x));
    let (s, q) = exp_parts::<1>(a);
    let e = _mm256_fmadd_pd(s, q, s);
    let d = _mm256_fmadd_pd(s, q, _mm256_add_pd(s, _mm256_set1_pd(1.0)));
    let positive = _mm256_cmp_pd::<_CMP_GE_OQ>(x, _mm256_setzero_pd());
    divide(_mm256_blendv_pd(e, _mm256_set1_pd(1.0), positive), d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::activation_avx512::tests::{check, every_f32_wrong, samples};
    use crate::sim::fast_sigmoid::Sigmoid;
    use crate::sim::fast_tanh::Tanh;

    #[test]
    fn equals_the_documented_rounding_bit_for_bit() {
        if !available() {
            return;
        }
        let xs = samples(777, 600_000);
        check::<Tanh>(&xs, apply::<Tanh>);
        check::<Sigmoid>(&xs, apply::<Sigmoid>);
    }

    #[test]
    fn approximations_are_within_their_error_bound() {
        if !available() {
            return;
        }
        let mut worst = [0f64; 2];
        let tiny = (0..1075).flat_map(|e| [2f64.powi(-e), -(2f64.powi(-e) * 1.37)]);
        for x in (0..400_000).map(|i| (i as f64 - 200_000.0) / 4_000.0).chain(tiny) {
            // SAFETY: available() checked the CPU features.
            let (t, s) = unsafe { both(x) };
            for (k, (got, want)) in [(t, Tanh::documented(x)), (s, Sigmoid::documented(x))].into_iter().enumerate() {
                if want.abs() > 1e-300 {
                    worst[k] = worst[k].max(((got - want) / want).abs());
                }
            }
        }
        eprintln!("relative errors: tanh 2^{:.2}, σ 2^{:.2}", worst[0].log2(), worst[1].log2());
        assert!(worst[0] < 2f64.powi(-40) && worst[1] < 2f64.powi(-40), "relative errors {worst:?}");
    }

    #[target_feature(enable = "avx2,avx,fma")]
    unsafe fn both(x: f64) -> (f64, f64) {
        let v = _mm256_set1_pd(x);
        let mut out = [[0f64; 4]; 2];
        _mm256_storeu_pd(out[0].as_mut_ptr(), tanh4(v));
        _mm256_storeu_pd(out[1].as_mut_ptr(), sigmoid4(v));
        (out[0][0], out[1][0])
    }

    /// Every f32 input, both functions (`cargo test --release --lib every_f32 -- --ignored`).
    #[test]
    #[ignore]
    fn every_f32_equals_the_documented_rounding_avx2() {
        if !available() {
            return;
        }
        assert_eq!(every_f32_wrong(apply::<Tanh>, apply::<Sigmoid>), 0, "inputs whose result differs from the documented rounding");
    }
}
