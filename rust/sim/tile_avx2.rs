//! The AVX2 + FMA tiles of `tile_kernel` (x86-64 CPUs without AVX-512: most AMD Zen 2–3,
//! many laptops): `tile_x86`'s tile and driver (passes of KC values of k, panels, stripes,
//! groups of sequences; the prefetching of streamed weights; the gate split) on 8 f32 or
//! 4 f64 lanes, for f32 and f64, and with F16C for bf16 and f16 in f32 lanes.
//!
//! AVX2 has 16 vector registers, so a tile is 6 sequences × 2 vectors (12 accumulators, the
//! 2 weight vectors of a k and the broadcast z[s][k]: the shape of BLIS's Haswell sgemm
//! kernel, 6 × 16 f32). `Packed::for_units` packs panels of 2 AVX2 vectors here (16 f32
//! or 8 f64 units: one stripe, whose KC values of k are 16 KiB of contiguous lines,
//! `tile_x86::one_stripe_panels`); a panel of 4 (32 f32 or 16 f64 units, packed for
//! AVX-512) is run in two stripes of 2, each over every other line of the panel. A block
//! of one sequence runs tiles of 4 panels (8 independent chains), a block of two tiles of
//! 2 panels. Each accumulator
//! takes its products in the documented order (k ascending), so the bits are those of the
//! AVX-512 tiles and of the portable loops.
//!
//! The half formats (bf16, f16) run the same tiles in f32 lanes (`F32x8<1>`, `F32x8<2>`):
//! every product and sum rounded to the half grid after the f32 operation
//! (`simd_round::round_bf16_8_grid`, `round_f16_8_grid`), and the fused step w·z + acc
//! rounded **to odd** in f32, then to nearest on the half grid, which is the fused result
//! rounded once (Boldo & Melquiond 2008; 24 ≥ p + 2 bits). AVX-512 takes round-to-odd from
//! two FMAs with directed rounding (`tile_x86`); AVX2 has no per-instruction rounding, so
//! here it comes from the exact error of the sum: the product w·z is exact in f32 (f16: 22
//! bits within f32's range, always; bf16: 16 bits, when no product underflows or overflows
//! f32, which the caller checks: [`bf16_products_exact`]), s = RN(w·z + acc), and TwoSum
//! gives the error e = (w·z + acc) − s exactly (Knuth); when e ≠ 0, RZ(x) is s (e and s of
//! one sign) or the float below s in magnitude (signs differ: `bits − 1`), and round-to-odd
//! is RZ(x) with its last bit set. Non-finite sums pass unchanged (e is NaN there), as the
//! exact sum's rounding does. A half-format tile holds `HALF_ROWS` = 4 sequences × 2 vectors
//! (8 accumulators: the rounding's temporaries and constants take the other registers).

use super::x86::{drive_terms, GateStore, Ops, Terms};
use crate::sim::simd_round::{round_bf16_8_grid, round_f16_8_grid};
use std::arch::x86_64::*;
use std::ops::Range;

/// Sequences per AVX2 tile (f32, f64).
const ROWS: usize = 6;
/// Sequences per AVX2 tile of the half formats.
const HALF_ROWS: usize = 4;
/// Vectors of units per AVX2 tile (the stripe).
const STRIPE: usize = 2;

/// 8 f32 lanes, each result rounded to the grid `R`: none (f32, the hardware's rounding),
/// bf16 (1) or f16 (2), as `tile_x86`'s `F32<R>` (see the module doc for the half formats'
/// fused step). f32 tiles hold 6 sequences, the half formats' 4.
pub(super) struct F32x8<const R: u8>;
impl<const R: u8> F32x8<R> {
    #[inline(always)]
    unsafe fn round(x: __m256) -> __m256 {
        match R {
            0 => x,
            1 => round_bf16_8_grid(x),
            _ => round_f16_8_grid(x),
        }
    }
}
impl<const R: u8> Ops for F32x8<R> {
    type C = f32;
    type V = __m256;
    const L: usize = 8;
    const ROWS: usize = if R == 0 { ROWS } else { HALF_ROWS };
    const WIDE2: usize = 2;
    const WRITE_OUT_CHUNKS: bool = R == 0;
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 { _mm256_loadu_ps(p) }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) { _mm256_storeu_ps(p, v) }
    #[inline(always)]
    unsafe fn splat(p: *const f32) -> __m256 { _mm256_set1_ps(*p) }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 { Self::round(_mm256_mul_ps(a, b)) }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 { Self::round(_mm256_add_ps(a, b)) }
    const FMA: bool = true;
    #[inline(always)]
    unsafe fn fma_splat(acc: __m256, w: __m256, p: *const f32) -> __m256 {
        let z = _mm256_set1_ps(*p);
        if R == 0 {
            return _mm256_fmadd_ps(w, z, acc);
        }
        let prod = _mm256_mul_ps(w, z); // exact (module doc)
        Self::round(odd_sum(prod, acc))
    }
}

/// prod + acc rounded to odd in f32, for an exact prod (TwoSum; the module doc).
#[inline(always)]
unsafe fn odd_sum(prod: __m256, acc: __m256) -> __m256 {
    let s = _mm256_add_ps(prod, acc);
    let bb = _mm256_sub_ps(s, prod);
    let err = _mm256_add_ps(_mm256_sub_ps(prod, _mm256_sub_ps(s, bb)), _mm256_sub_ps(acc, bb));
    // all ones where inexact (e ≠ 0; false for NaN: non-finite sums pass)
    let inexact = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NEQ_OQ>(err, _mm256_setzero_ps()));
    // −1 where the exact sum is below s in magnitude (the signs of e and s differ)
    let down = _mm256_and_si256(inexact, _mm256_srai_epi32::<31>(_mm256_castps_si256(_mm256_xor_ps(err, s))));
    let rz = _mm256_add_epi32(_mm256_castps_si256(s), down);
    _mm256_castsi256_ps(_mm256_or_si256(rz, _mm256_srli_epi32::<31>(inexact)))
}

/// Whether every product of a weight and a z value is exact in f32 when the formats are
/// bf16 (the precondition of `F32x8<1>`'s fused step): 16 significant bits fit, so a
/// nonzero product is exact unless it falls below 2^−134 (bits below f32's subnormal quantum
/// 2^−149) or reaches 2^127 (near f32's overflow). `w` and `z` are (smallest nonzero,
/// largest) finite magnitudes of the weights and of the z values; zeros, infinities and
/// NaNs give exact (or NaN) products and are left out of both.
pub(super) fn bf16_products_exact(w: [f32; 2], z: [f32; 2]) -> bool {
    let (lo, hi) = (f64::from(w[0]) * f64::from(z[0]), f64::from(w[1]) * f64::from(z[1]));
    // no nonzero magnitudes on a side: every product is a zero, exact
    w[1] == 0.0 || z[1] == 0.0 || (lo >= 2f64.powi(-134) && hi < 2f64.powi(127))
}

/// (smallest nonzero, largest) finite magnitude over `rows` rows of `k` values, `ld` apart
/// ((∞, 0) when there is none: then `bf16_products_exact` has nothing to check).
pub(super) fn magnitudes(v: &[f32], rows: usize, k: usize, ld: usize) -> [f32; 2] {
    let (mut lo, mut hi) = (f32::INFINITY, 0f32);
    for r in 0..rows {
        for &x in &v[r * ld..r * ld + k] {
            let a = x.abs();
            if a.is_finite() && a > 0.0 {
                lo = lo.min(a);
                hi = hi.max(a);
            }
        }
    }
    [lo, hi]
}

/// 4 f64 lanes.
pub(super) struct F64x4;
impl Ops for F64x4 {
    type C = f64;
    type V = __m256d;
    const L: usize = 4;
    const ROWS: usize = ROWS;
    const WIDE2: usize = 2;
    const WRITE_OUT_CHUNKS: bool = true;
    #[inline(always)]
    unsafe fn load(p: *const f64) -> __m256d { _mm256_loadu_pd(p) }
    #[inline(always)]
    unsafe fn store(p: *mut f64, v: __m256d) { _mm256_storeu_pd(p, v) }
    #[inline(always)]
    unsafe fn splat(p: *const f64) -> __m256d { _mm256_set1_pd(*p) }
    #[inline(always)]
    unsafe fn mul(a: __m256d, b: __m256d) -> __m256d { _mm256_mul_pd(a, b) }
    #[inline(always)]
    unsafe fn add(a: __m256d, b: __m256d) -> __m256d { _mm256_add_pd(a, b) }
    const FMA: bool = true;
    #[inline(always)]
    unsafe fn fma_splat(acc: __m256d, w: __m256d, p: *const f64) -> __m256d { _mm256_fmadd_pd(w, _mm256_set1_pd(*p), acc) }
}

/// [`drive`] for the half formats, compiled with F16C as well (`round_f16_8_grid` inlined).
///
/// # Safety
/// As [`drive`], and the CPU has F16C.
#[target_feature(enable = "avx2,avx,fma,f16c")]
pub(super) unsafe fn drive_half<O: Ops>(bias: Option<&[O::C]>, terms: &Terms<'_, O::C>, ns: usize, acc: *mut O::C, gates: Option<GateStore<O::C>>, fma: bool, panels: Range<usize>) {
    if fma {
        drive_terms::<O, STRIPE, true>(bias, terms, ns, acc, gates, panels)
    } else {
        drive_terms::<O, STRIPE, false>(bias, terms, ns, acc, gates, panels)
    }
}

/// `tile_x86::drive_terms` on AVX2 tiles of `STRIPE` vectors (`tile_x86::Driver`).
///
/// # Safety
/// The CPU has AVX2 and FMA; the rest as `tile_x86::affine`.
#[target_feature(enable = "avx2,avx,fma")]
pub(super) unsafe fn drive<O: Ops>(bias: Option<&[O::C]>, terms: &Terms<'_, O::C>, ns: usize, acc: *mut O::C, gates: Option<GateStore<O::C>>, fma: bool, panels: Range<usize>) {
    debug_assert!(O::FMA);
    if fma {
        drive_terms::<O, STRIPE, true>(bias, terms, ns, acc, gates, panels)
    } else {
        drive_terms::<O, STRIPE, false>(bias, terms, ns, acc, gates, panels)
    }
}
