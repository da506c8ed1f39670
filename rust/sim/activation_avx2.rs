//! tanh and σ over f32 lanes with AVX2 + FMA (a CPU without AVX-512): 8 values per step,
//! the same results as `activation_avx512` and the portable loops, bit for bit the
//! documented `round_f32(correctly rounded f64 value)`.
//!
//! The approximation follows `activation_avx512` (its module doc has the error budget) on 4
//! f64 lanes, with the choices that are cheapest on AVX2 (measured on an AMD EPYC 7003,
//! Zen 3: 2.41 → 1.69 ns per tanh value in a standalone loop, all four changes together):
//! * a 4-entry table T_j = 2^{j/4} instead of 16 entries: two in-lane `vpermilpd` and a
//!   blend instead of a `vgatherqpd` (k = round(4y/ln2), |r| ≤ ln2/8 + 2^−40), and so a
//!   quintic P for q = expm1(r) = r + r²·P(r) ([`EXPM1_P5`]: relative error 2^−45.95,
//!   `python docs/expm1_minimax.py 4 6`) instead of the cubic; fl(ln2/4) is off by at most
//!   2^−56, so r by |k|·2^−56 ≤ u·2^−53.4 + 2^−57, as before;
//! * 2^floor(k/4) added to T_j's exponent field, exactly (for `vscalefpd`): k ≤ 0 fits in
//!   the low 32 bits of the rounding trick's integer, so `vpsrad` floors k/4, and a shift
//!   by 52 and a 64-bit add put it in place (the exponent stays in [864, 1023]);
//! * the quotient by `vdivpd` (correctly rounded; the rcp series it replaced cost more FMA
//!   issue slots than the divider's throughput here).
//!   Relative errors: tanh below 2^−45.9 + 2^−52, σ below 2^−46 + 2^−52 (measured on a
//!   grid by the test: 2^−45.89 and 2^−48.22), well inside the Ziv test's 2^−40.
//! * The Ziv test on the f64 result's bits instead of two roundings: for a result y in the
//!   f32 normal range, round_f32(y) is the rounding of every value within 2^−40·|y| of y
//!   unless the 29 bits the rounding drops lie within 2^17 (f64 ulps of y, ≥ 2^−36·|y|) of
//!   their midpoint 2^28 (the f32 midpoints of y's binade, and those of its neighbours lie
//!   2^27 ulps or more from it): one shuffle and four integer operations per 8 values. The
//!   inputs whose result may be f32-subnormal (tanh: |x| < 2^−125; σ: x < −87) or NaN,
//!   and the undecided lanes (about one value in 2^11), take the previous test: when
//!   y(1 ± 2^−36) round to the same f32, that is the rounding of the documented value;
//!   else the scalar fallback (`activation_avx512`'s).

use crate::sim::activation_avx512::{fallback, EXP2_SIXTEENTHS};
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

/// The f64 approximations of 8 values (lanes 0–3, 4–7), their f32 roundings, and whether
/// the fast Ziv test (module doc) decided all 8.
struct Approx8 {
    y: (__m256d, __m256d),
    rounded: __m256,
    decided: bool,
}

#[inline(always)]
unsafe fn approx8<A: Approximated>(x: __m256) -> Approx8 {
    let (lo, hi) = (_mm256_cvtps_pd(_mm256_castps256_ps128(x)), _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x)));
    let (ylo, yhi) = match A::FUNC {
        Func::Tanh => (tanh4(lo), tanh4(hi)),
        Func::Sigmoid => (sigmoid4(lo), sigmoid4(hi)),
    };
    let rounded = _mm256_set_m128(_mm256_cvtpd_ps(yhi), _mm256_cvtpd_ps(ylo));
    let near = near_midpoint(ylo, yhi);
    // inputs whose result may be f32-subnormal, and NaN (the unordered compare)
    let odd = match A::FUNC {
        Func::Tanh => _mm256_cmp_ps::<_CMP_NGE_UQ>(_mm256_andnot_ps(_mm256_set1_ps(-0.0), x), _mm256_set1_ps(f32::MIN_POSITIVE * 2.0)),
        Func::Sigmoid => _mm256_cmp_ps::<_CMP_NGE_UQ>(x, _mm256_set1_ps(-87.0)),
    };
    let decided = _mm256_movemask_ps(_mm256_or_ps(near, odd)) == 0;
    Approx8 { y: (ylo, yhi), rounded, decided }
}

/// The fast Ziv test (module doc) of 8 f64 values in the f32 normal range: all-ones in the
/// lanes whose f32 rounding may differ from that of a value within 2^−40 of them (in the
/// lane order of `vshufps`: y_lo 0, 1, y_hi 0, 1, y_lo 2, 3, y_hi 2, 3).
#[inline(always)]
unsafe fn near_midpoint(ylo: __m256d, yhi: __m256d) -> __m256 {
    let low = _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(_mm256_castpd_ps(ylo), _mm256_castpd_ps(yhi)));
    // dropped bits + 2^17 in [2^28, 2^28 + 2^18): within 2^17 of the midpoint
    let v = _mm256_add_epi32(_mm256_and_si256(low, _mm256_set1_epi32((1 << 29) - 1)), _mm256_set1_epi32(1 << 17));
    _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_srli_epi32::<18>(v), _mm256_set1_epi32(1 << 10)))
}

/// The Ziv bounds (round_f32(y(1 − δ)), round_f32(y(1 + δ))) of 8 values, for the blocks the
/// fast test leaves.
#[inline(always)]
unsafe fn ziv_bounds(x: __m256, (ylo, yhi): (__m256d, __m256d)) -> (__m256, __m256) {
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
    let r = approx8::<A>(x);
    if r.decided {
        return r.rounded;
    }
    let mut buf = [0f32; 8];
    finish::<A>(buf.as_mut_ptr(), x, r, 8);
    _mm256_loadu_ps(buf.as_ptr())
}

/// Stores the first m results at p: the fast test's when it decided all 8, else those the
/// Ziv bounds decide and the scalar fallback for the rest.
#[inline(always)]
unsafe fn finish<A: Approximated>(p: *mut f32, x: __m256, r: Approx8, m: usize) {
    let mut d = [0f32; 8];
    if r.decided {
        if m == 8 {
            _mm256_storeu_ps(p, r.rounded);
            return;
        }
        _mm256_storeu_ps(d.as_mut_ptr(), r.rounded);
    } else {
        let (down, up) = ziv_bounds(x, r.y);
        _mm256_storeu_ps(d.as_mut_ptr(), down);
        let same = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(down), _mm256_castps_si256(up)))) as u32;
        let mut xs = [0f32; 8];
        _mm256_storeu_ps(xs.as_mut_ptr(), x);
        for j in (0..8).filter(|j| same & (1 << j) == 0) {
            d[j] = fallback::<A>(xs[j]);
        }
    }
    std::ptr::copy_nonoverlapping(d.as_ptr(), p, m);
}

/// (S, q) with e^y = S·(1 + q), y = −u, u = F·a, S = 2^{k/4} (k = round(4y/ln2)) and q =
/// expm1(r) (module doc); 0 ≤ u ≤ 110, or NaN.
#[inline(always)]
unsafe fn exp_parts<const F: u8>(a: __m256d) -> (__m256d, __m256d) {
    const MAGIC: f64 = 6755399441055744.0; // 1.5·2^52
    const LN2_4: f64 = std::f64::consts::LN_2 / 4.0;
    let shifted = _mm256_fmadd_pd(a, _mm256_set1_pd(-f64::from(F) * 4.0 * std::f64::consts::LOG2_E), _mm256_set1_pd(MAGIC));
    let k = _mm256_sub_pd(shifted, _mm256_set1_pd(MAGIC));
    let u = if F == 2 { _mm256_add_pd(a, a) } else { a };
    let r = _mm256_fnmsub_pd(k, _mm256_set1_pd(LN2_4), u); // −u − k·ln2/4
    // the integer k − 2^51·3 sits in the bits of `shifted`; its low 32 bits are k (k ≥ −700)
    let bits = _mm256_castpd_si256(shifted);
    // T_{k mod 4}: `vpermilpd` picks within each pair by bit 1 of its control (bit 0 of k),
    // the blend picks the pair by the sign bit (bit 1 of k)
    let [t0, t1, t2, t3] = EXP2_QUARTERS;
    let pick = _mm256_slli_epi64::<1>(bits);
    let low_pair = _mm256_permutevar_pd(_mm256_setr_pd(t0, t1, t0, t1), pick);
    let high_pair = _mm256_permutevar_pd(_mm256_setr_pd(t2, t3, t2, t3), pick);
    let t = _mm256_blendv_pd(low_pair, high_pair, _mm256_castsi256_pd(_mm256_slli_epi64::<62>(bits)));
    // S = T·2^floor(k/4), exactly, by adding floor(k/4) to T's exponent field: the floor by
    // an arithmetic shift of the low 32 bits, whose low 12 bits the shift by 52 moves there
    // (two's complement: a negative value's carry out of bit 63 is dropped, so the sum is
    // T's bits with the exponent lowered; T ∈ [1, 2) and floor(k/4) ≥ −159, from u ≤ 110,
    // keep it normal)
    let m = _mm256_slli_epi64::<52>(_mm256_srai_epi32::<2>(bits));
    let s = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(t), m));
    // q = r + r²·P(r), P by Estrin's scheme
    let c = EXPM1_P5.map(|c| _mm256_set1_pd(c));
    let r2 = _mm256_mul_pd(r, r);
    let r4 = _mm256_mul_pd(r2, r2);
    let p01 = _mm256_fmadd_pd(r, c[1], c[0]);
    let p23 = _mm256_fmadd_pd(r, c[3], c[2]);
    let p45 = _mm256_fmadd_pd(r, c[5], c[4]);
    let p = _mm256_fmadd_pd(r4, p45, _mm256_fmadd_pd(r2, p23, p01));
    let q = _mm256_fmadd_pd(r2, p, r);
    (s, q)
}

/// 2^{j/4}, j = 0..3 (entries 0, 4, 8 and 12 of `activation_avx512`'s table).
const EXP2_QUARTERS: [f64; 4] = [EXP2_SIXTEENTHS[0][0], EXP2_SIXTEENTHS[0][4], EXP2_SIXTEENTHS[1][0], EXP2_SIXTEENTHS[1][4]];

/// P(r) = c0 + c1·r + … + c5·r⁵ with r + r²·P(r) = expm1(r) to a relative error below
/// 2^−45.95 for |r| ≤ ln2/8 + 2^−40: the minimax polynomial for that relative error,
/// rounded to double (`python docs/expm1_minimax.py 4 6`).
const EXPM1_P5: [f64; 6] = [0.5000000000011816, 0.16666666666719185, 0.0416666654195755, 0.0083333329176096, 0.001389217916356802, 0.00019848582315179478];

/// tanh on 4 lanes, relative error < 2^−45 (the formulas of `activation_avx512::tanh8`).
#[inline(always)]
unsafe fn tanh4(x: __m256d) -> __m256d {
    let sign = _mm256_set1_pd(-0.0);
    // |x| clamped at 40; NaN passes (vminpd returns its second operand)
    let a = _mm256_min_pd(_mm256_set1_pd(40.0), _mm256_andnot_pd(sign, x));
    let (s, q) = exp_parts::<2>(a);
    let num = _mm256_xor_pd(_mm256_fnmadd_pd(s, q, _mm256_sub_pd(_mm256_set1_pd(1.0), s)), _mm256_and_pd(x, sign));
    let d = _mm256_fmadd_pd(s, q, _mm256_add_pd(s, _mm256_set1_pd(1.0)));
    _mm256_div_pd(num, d)
}

/// σ on 4 lanes, relative error < 2^−45 (the formulas of `activation_avx512::sigmoid8`).
#[inline(always)]
unsafe fn sigmoid4(x: __m256d) -> __m256d {
    let a = _mm256_min_pd(_mm256_set1_pd(110.0), _mm256_andnot_pd(_mm256_set1_pd(-0.0), x));
    let (s, q) = exp_parts::<1>(a);
    let e = _mm256_fmadd_pd(s, q, s);
    let d = _mm256_fmadd_pd(s, q, _mm256_add_pd(s, _mm256_set1_pd(1.0)));
    let positive = _mm256_cmp_pd::<_CMP_GE_OQ>(x, _mm256_setzero_pd());
    _mm256_div_pd(_mm256_blendv_pd(e, _mm256_set1_pd(1.0), positive), d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::activation_avx512::tests::{check, check_hard_to_round, every_f32_wrong, samples};
    use crate::machine::random::SplitMix64;
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
    fn hard_to_round_inputs_equal_the_documented_rounding() {
        if available() {
            check_hard_to_round(apply::<Tanh>, apply::<Sigmoid>);
        }
    }

    /// The fast test against its definition: on values near f32 midpoints of every binade
    /// (and anywhere), each lane it decides rounds like every value within 2^−40 of it; and
    /// it decides all but about 2^−11 of values with uniform low bits.
    #[test]
    fn the_fast_test_decides_only_what_the_error_bound_allows() {
        if !available() {
            return;
        }
        let mut rng = SplitMix64(0x21f);
        let (mut decided, mut uniform, mut uniform_decided) = (0, 0, 0);
        for round in 0..40_000 {
            let ys: [f64; 8] = std::array::from_fn(|_| {
                let r = rng.next_u64();
                let e = -126 + (r % 127) as i32;
                let f = f64::from(f32::from_bits(((e + 127) as u32) << 23 | (r >> 8) as u32 & 0x7f_ffff));
                let y = if round % 4 == 3 {
                    f64::from_bits(f.to_bits() ^ (r >> 40) & 0x1fff_ffff) // uniform low bits
                } else {
                    // the midpoint above f, then an offset of up to 2^19 f64 ulps
                    let mid = f64::from_bits(f.to_bits() + (1 << 28));
                    let off = (r >> 44) as i64 % (1 << 19) * if r & 1 == 0 { 1 } else { -1 };
                    f64::from_bits((mid.to_bits() as i64 + off) as u64)
                };
                if r & 2 == 0 { y } else { -y }
            });
            // SAFETY: available() checked the CPU features.
            let mask = unsafe { _mm256_movemask_ps(near_midpoint(_mm256_loadu_pd(ys.as_ptr()), _mm256_loadu_pd(ys[4..].as_ptr()))) };
            for (lane, y) in [0, 1, 4, 5, 2, 3, 6, 7].iter().map(|&i| ys[i]).enumerate() {
                let fast = mask & (1 << lane) == 0;
                let bound = 2f64.powi(-40) * y.abs();
                let safe = (y - bound) as f32 == y as f32 && (y + bound) as f32 == y as f32;
                assert!(!fast || safe, "{y:e} ({:#x}) decided, but a value within 2^−40 rounds elsewhere", y.to_bits());
                decided += usize::from(fast);
                if round % 4 == 3 {
                    uniform += 1;
                    uniform_decided += usize::from(fast);
                }
            }
        }
        assert!(decided < 40_000 * 8 * 9 / 10, "near midpoints most lanes must stay undecided ({decided})");
        assert!(uniform - uniform_decided < uniform / 500, "{} of {uniform} uniform values undecided", uniform - uniform_decided);
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
        assert!(worst[0] < 2f64.powi(-45) && worst[1] < 2f64.powi(-45), "relative errors {worst:?}");
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
