//! The f64 vector types the staged first tier of `activation_f64` runs on
//! (`activation_f64_staged`): AVX2's 4 lanes (`__m256d`, lane masks as vectors) and
//! AVX-512's 8 (`__m512d`, lane masks in mask registers). Each operation is one
//! instruction (IEEE, round to nearest) on every lane, so the staged evaluation gives the
//! same bits at either width.

use std::arch::x86_64::*;

/// A vector of f64 lanes with the operations of the staged tier.
///
/// # Safety
/// Every method needs the CPU features of its type (AVX2 + FMA, resp. AVX-512 F/DQ/VL);
/// callers run them inside functions compiled with those features.
pub(crate) trait Pd: Copy {
    /// Lanes per vector.
    const LANES: usize;
    /// The lanes' selection.
    type M: Copy;
    unsafe fn splat(v: f64) -> Self;
    /// LANES values from p (unaligned).
    unsafe fn loadu(p: *const f64) -> Self;
    /// The lanes to p (unaligned).
    unsafe fn storeu(p: *mut f64, v: Self);
    unsafe fn add(a: Self, b: Self) -> Self;
    unsafe fn sub(a: Self, b: Self) -> Self;
    unsafe fn mul(a: Self, b: Self) -> Self;
    unsafe fn div(a: Self, b: Self) -> Self;
    /// a·b + c, rounded once
    unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self;
    /// c − a·b, rounded once
    unsafe fn fnmadd(a: Self, b: Self, c: Self) -> Self;
    /// a·b − c, rounded once
    unsafe fn fmsub(a: Self, b: Self, c: Self) -> Self;
    unsafe fn min(a: Self, b: Self) -> Self;
    unsafe fn max(a: Self, b: Self) -> Self;
    unsafe fn and(a: Self, b: Self) -> Self;
    unsafe fn or(a: Self, b: Self) -> Self;
    /// (not a) and b
    unsafe fn andnot(a: Self, b: Self) -> Self;
    /// a < b (ordered)
    unsafe fn lt(a: Self, b: Self) -> Self::M;
    unsafe fn gt(a: Self, b: Self) -> Self::M;
    unsafe fn le(a: Self, b: Self) -> Self::M;
    unsafe fn ge(a: Self, b: Self) -> Self::M;
    /// a ≠ b or unordered
    unsafe fn neq(a: Self, b: Self) -> Self::M;
    unsafe fn mask_and(a: Self::M, b: Self::M) -> Self::M;
    unsafe fn mask_or(a: Self::M, b: Self::M) -> Self::M;
    /// b where m, else a
    unsafe fn blend(a: Self, b: Self, m: Self::M) -> Self;
    /// x where m, else +0
    unsafe fn keep(x: Self, m: Self::M) -> Self;
    /// Lane i's selection as bit i.
    unsafe fn bits(m: Self::M) -> u32;
    /// The reduction's integer part: with `shifted` = y·512/ln 2 + MAGIC and
    /// n = its bits − `magic` = 512k + j, stores j (below 512) of each lane to `j` and
    /// returns 2^k.
    unsafe fn scale_and_index(shifted: Self, magic: i64, j: *mut i64) -> Self;
    /// The integer in `shifted` (= v + MAGIC, v ≥ 0): its bits − `magic`, each lane's stored
    /// to `j`.
    unsafe fn index(shifted: Self, magic: i64, j: *mut i64);
    /// (T_j's high parts, low parts) of the lanes' j from `pairs` ((high, low) side by side).
    unsafe fn pairs(pairs: *const [f64; 2], j: *const i64) -> (Self, Self);
}

/// All-lanes selection bits of `V`.
#[inline(always)]
pub(crate) const fn all<V: Pd>() -> u32 {
    (1 << V::LANES) - 1
}

impl Pd for __m256d {
    const LANES: usize = 4;
    type M = __m256d;
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self { _mm256_set1_pd(v) }
    #[inline(always)]
    unsafe fn loadu(p: *const f64) -> Self { _mm256_loadu_pd(p) }
    #[inline(always)]
    unsafe fn storeu(p: *mut f64, v: Self) { _mm256_storeu_pd(p, v) }
    #[inline(always)]
    unsafe fn add(a: Self, b: Self) -> Self { _mm256_add_pd(a, b) }
    #[inline(always)]
    unsafe fn sub(a: Self, b: Self) -> Self { _mm256_sub_pd(a, b) }
    #[inline(always)]
    unsafe fn mul(a: Self, b: Self) -> Self { _mm256_mul_pd(a, b) }
    #[inline(always)]
    unsafe fn div(a: Self, b: Self) -> Self { _mm256_div_pd(a, b) }
    #[inline(always)]
    unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self { _mm256_fmadd_pd(a, b, c) }
    #[inline(always)]
    unsafe fn fnmadd(a: Self, b: Self, c: Self) -> Self { _mm256_fnmadd_pd(a, b, c) }
    #[inline(always)]
    unsafe fn fmsub(a: Self, b: Self, c: Self) -> Self { _mm256_fmsub_pd(a, b, c) }
    #[inline(always)]
    unsafe fn min(a: Self, b: Self) -> Self { _mm256_min_pd(a, b) }
    #[inline(always)]
    unsafe fn max(a: Self, b: Self) -> Self { _mm256_max_pd(a, b) }
    #[inline(always)]
    unsafe fn and(a: Self, b: Self) -> Self { _mm256_and_pd(a, b) }
    #[inline(always)]
    unsafe fn or(a: Self, b: Self) -> Self { _mm256_or_pd(a, b) }
    #[inline(always)]
    unsafe fn andnot(a: Self, b: Self) -> Self { _mm256_andnot_pd(a, b) }
    #[inline(always)]
    unsafe fn lt(a: Self, b: Self) -> Self { _mm256_cmp_pd::<_CMP_LT_OQ>(a, b) }
    #[inline(always)]
    unsafe fn gt(a: Self, b: Self) -> Self { _mm256_cmp_pd::<_CMP_GT_OQ>(a, b) }
    #[inline(always)]
    unsafe fn le(a: Self, b: Self) -> Self { _mm256_cmp_pd::<_CMP_LE_OQ>(a, b) }
    #[inline(always)]
    unsafe fn ge(a: Self, b: Self) -> Self { _mm256_cmp_pd::<_CMP_GE_OQ>(a, b) }
    #[inline(always)]
    unsafe fn neq(a: Self, b: Self) -> Self { _mm256_cmp_pd::<_CMP_NEQ_UQ>(a, b) }
    #[inline(always)]
    unsafe fn mask_and(a: Self, b: Self) -> Self { _mm256_and_pd(a, b) }
    #[inline(always)]
    unsafe fn mask_or(a: Self, b: Self) -> Self { _mm256_or_pd(a, b) }
    #[inline(always)]
    unsafe fn blend(a: Self, b: Self, m: Self) -> Self { _mm256_blendv_pd(a, b, m) }
    #[inline(always)]
    unsafe fn keep(x: Self, m: Self) -> Self { _mm256_and_pd(x, m) }
    #[inline(always)]
    unsafe fn bits(m: Self) -> u32 { _mm256_movemask_pd(m) as u32 }
    #[inline(always)]
    unsafe fn scale_and_index(shifted: Self, magic: i64, j: *mut i64) -> Self {
        let bits = _mm256_sub_epi64(_mm256_castpd_si256(shifted), _mm256_set1_epi64x(magic));
        let jv = _mm256_and_si256(bits, _mm256_set1_epi64x(511));
        let k = _mm256_slli_epi64::<{ 52 - 9 }>(_mm256_sub_epi64(bits, jv));
        _mm256_storeu_si256(j as *mut __m256i, jv);
        _mm256_castsi256_pd(_mm256_add_epi64(k, _mm256_set1_epi64x(1023 << 52)))
    }
    #[inline(always)]
    unsafe fn index(shifted: Self, magic: i64, j: *mut i64) {
        _mm256_storeu_si256(j as *mut __m256i, _mm256_sub_epi64(_mm256_castpd_si256(shifted), _mm256_set1_epi64x(magic)));
    }
    #[inline(always)]
    unsafe fn pairs(t: *const [f64; 2], j: *const i64) -> (Self, Self) {
        let at = |i: usize| _mm_loadu_pd(t.add(*j.add(i) as usize) as *const f64);
        // [h0 l0 h2 l2], [h1 l1 h3 l3] → [h0 h1 h2 h3], [l0 l1 l2 l3]
        let (a, b) = (_mm256_set_m128d(at(2), at(0)), _mm256_set_m128d(at(3), at(1)));
        (_mm256_unpacklo_pd(a, b), _mm256_unpackhi_pd(a, b))
    }
}

impl Pd for __m512d {
    const LANES: usize = 8;
    type M = __mmask8;
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self { _mm512_set1_pd(v) }
    #[inline(always)]
    unsafe fn loadu(p: *const f64) -> Self { _mm512_loadu_pd(p) }
    #[inline(always)]
    unsafe fn storeu(p: *mut f64, v: Self) { _mm512_storeu_pd(p, v) }
    #[inline(always)]
    unsafe fn add(a: Self, b: Self) -> Self { _mm512_add_pd(a, b) }
    #[inline(always)]
    unsafe fn sub(a: Self, b: Self) -> Self { _mm512_sub_pd(a, b) }
    #[inline(always)]
    unsafe fn mul(a: Self, b: Self) -> Self { _mm512_mul_pd(a, b) }
    #[inline(always)]
    unsafe fn div(a: Self, b: Self) -> Self { _mm512_div_pd(a, b) }
    #[inline(always)]
    unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self { _mm512_fmadd_pd(a, b, c) }
    #[inline(always)]
    unsafe fn fnmadd(a: Self, b: Self, c: Self) -> Self { _mm512_fnmadd_pd(a, b, c) }
    #[inline(always)]
    unsafe fn fmsub(a: Self, b: Self, c: Self) -> Self { _mm512_fmsub_pd(a, b, c) }
    #[inline(always)]
    unsafe fn min(a: Self, b: Self) -> Self { _mm512_min_pd(a, b) }
    #[inline(always)]
    unsafe fn max(a: Self, b: Self) -> Self { _mm512_max_pd(a, b) }
    #[inline(always)]
    unsafe fn and(a: Self, b: Self) -> Self { _mm512_and_pd(a, b) }
    #[inline(always)]
    unsafe fn or(a: Self, b: Self) -> Self { _mm512_or_pd(a, b) }
    #[inline(always)]
    unsafe fn andnot(a: Self, b: Self) -> Self { _mm512_andnot_pd(a, b) }
    #[inline(always)]
    unsafe fn lt(a: Self, b: Self) -> __mmask8 { _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, b) }
    #[inline(always)]
    unsafe fn gt(a: Self, b: Self) -> __mmask8 { _mm512_cmp_pd_mask::<_CMP_GT_OQ>(a, b) }
    #[inline(always)]
    unsafe fn le(a: Self, b: Self) -> __mmask8 { _mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, b) }
    #[inline(always)]
    unsafe fn ge(a: Self, b: Self) -> __mmask8 { _mm512_cmp_pd_mask::<_CMP_GE_OQ>(a, b) }
    #[inline(always)]
    unsafe fn neq(a: Self, b: Self) -> __mmask8 { _mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(a, b) }
    #[inline(always)]
    unsafe fn mask_and(a: __mmask8, b: __mmask8) -> __mmask8 { a & b }
    #[inline(always)]
    unsafe fn mask_or(a: __mmask8, b: __mmask8) -> __mmask8 { a | b }
    #[inline(always)]
    unsafe fn blend(a: Self, b: Self, m: __mmask8) -> Self { _mm512_mask_blend_pd(m, a, b) }
    #[inline(always)]
    unsafe fn keep(x: Self, m: __mmask8) -> Self { _mm512_maskz_mov_pd(m, x) }
    #[inline(always)]
    unsafe fn bits(m: __mmask8) -> u32 { m as u32 }
    #[inline(always)]
    unsafe fn scale_and_index(shifted: Self, magic: i64, j: *mut i64) -> Self {
        let bits = _mm512_sub_epi64(_mm512_castpd_si512(shifted), _mm512_set1_epi64(magic));
        let jv = _mm512_and_si512(bits, _mm512_set1_epi64(511));
        let k = _mm512_slli_epi64::<{ 52 - 9 }>(_mm512_sub_epi64(bits, jv));
        _mm512_storeu_si512(j as *mut __m512i, jv);
        _mm512_castsi512_pd(_mm512_add_epi64(k, _mm512_set1_epi64(1023 << 52)))
    }
    #[inline(always)]
    unsafe fn index(shifted: Self, magic: i64, j: *mut i64) {
        _mm512_storeu_si512(j as *mut __m512i, _mm512_sub_epi64(_mm512_castpd_si512(shifted), _mm512_set1_epi64(magic)));
    }
    #[inline(always)]
    unsafe fn pairs(t: *const [f64; 2], j: *const i64) -> (Self, Self) {
        let (lo, hi) = (<__m256d as Pd>::pairs(t, j), <__m256d as Pd>::pairs(t, j.add(4)));
        (_mm512_insertf64x4::<1>(_mm512_castpd256_pd512(lo.0), hi.0), _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(lo.1), hi.1))
    }
}
