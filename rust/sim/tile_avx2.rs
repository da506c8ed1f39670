//! The AVX2 + FMA tiles of `tile_kernel` (x86-64 CPUs without AVX-512: most AMD Zen 2–3,
//! many laptops): `tile_x86`'s tile and driver (passes of KC values of k, panels, stripes,
//! groups of sequences; the prefetching of streamed weights; the gate split) on 8 f32 or
//! 4 f64 lanes, for f32 and f64.
//!
//! AVX2 has 16 vector registers, so a tile is 6 sequences × 2 vectors (12 accumulators, the
//! 2 weight vectors of a k and the broadcast z[s][k]: the shape of BLIS's Haswell sgemm
//! kernel, 6 × 16 f32). A panel of 4 vectors (32 f32 or 16 f64 units) is run in two
//! stripes of 2, one after the other over the same slice of the panel (KC·pw values,
//! 32 KiB: still in L1 for the second stripe). A block of one sequence runs tiles of 4
//! panels (8 independent chains), a block of two tiles of 2 panels. Each accumulator
//! takes its products in the documented order (k ascending), so the bits are those of the
//! AVX-512 tiles and of the portable loops.
//!
//! The half formats are not run here: their fused step needs FMAs with directed rounding
//! (AVX-512's embedded rounding; AVX2 would have to switch MXCSR), so on AVX2 they keep the
//! portable loops (`tile_kernel::blocked`).

use super::x86::{drive_terms, GateStore, Ops, Terms};
use std::arch::x86_64::*;
use std::ops::Range;

/// Sequences per AVX2 tile.
const ROWS: usize = 6;
/// Vectors of units per AVX2 tile (the stripe).
const STRIPE: usize = 2;

/// 8 f32 lanes, every operation rounded to f32 by the hardware.
pub(super) struct F32x8;
impl Ops for F32x8 {
    type C = f32;
    type V = __m256;
    const L: usize = 8;
    const ROWS: usize = ROWS;
    const WIDE2: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 { _mm256_loadu_ps(p) }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) { _mm256_storeu_ps(p, v) }
    #[inline(always)]
    unsafe fn splat(p: *const f32) -> __m256 { _mm256_set1_ps(*p) }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 { _mm256_mul_ps(a, b) }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 { _mm256_add_ps(a, b) }
    const FMA: bool = true;
    #[inline(always)]
    unsafe fn fma_splat(acc: __m256, w: __m256, p: *const f32) -> __m256 { _mm256_fmadd_ps(w, _mm256_set1_ps(*p), acc) }
}

/// 4 f64 lanes.
pub(super) struct F64x4;
impl Ops for F64x4 {
    type C = f64;
    type V = __m256d;
    const L: usize = 4;
    const ROWS: usize = ROWS;
    const WIDE2: usize = 2;
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
