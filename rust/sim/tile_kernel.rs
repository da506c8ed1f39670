//! The register-tiled microkernel of the lock-step batch engines: for a block of sequences
//! s and every output unit i,
//!
//!   acc[s][i] = acc[s][i] + Wᵀ[k][i]·z[s][k]    for k = k0, k0+1, … (ascending)
//!
//! each product and each sum rounded to the format (a multiply instruction, then an add
//! instruction: two roundings), or with `fma` the fused step acc = fma(Wᵀ[k][i], z[s][k], acc)
//! rounded once (`num::fused`; `vfmadd` for f64/f32, `vfmadd231ph` for native f16, the
//! round-to-odd emulation for f16 in f32 lanes; bf16 runs the portable loop, whose product
//! is not always exact in f32 lanes). `acc` arrives holding whatever the caller's
//! documented order put there first (a bias, or bias + input product), so this is the
//! "then + W_ik·z_k for k ascending" part of float_engine.rs and cells/affine.rs, computed
//! for many sequences at once. Only *independent* elements are reordered; each element's
//! own chain of operations is the sequential one, so the bits are those of the
//! per-sequence engines whatever the tile, block or thread.
//!
//! Tiling: a tile of MR sequences × NR vectors of units keeps its MR·NR accumulators in
//! SIMD registers while k runs (a chunk of KC values of k at a time; the accumulators are
//! stored to `acc` and reloaded between chunks, which is exact). Per k the tile loads NR
//! weight vectors (contiguous in the packed panel) and broadcasts MR values z[s][k]. The
//! weights are packed once per plan ([`Packed`]): panels of `NR·L` units (L lanes per
//! vector), k-major inside a panel, units padded with zeros to the panel width (the padded
//! units are computed and ignored). On x86-64 with AVX-512 the tile uses `std::arch`
//! intrinsics (f32 and f64: 16 or 8 lanes; bf16/f16 in f32 lanes with a vector rounding
//! after each operation); f16 runs in native binary16 arithmetic instead when the CPU has
//! AVX512-FP16 (`tile_f16`, 32 lanes, same bits); elsewhere a portable loop performs the
//! same operations.

use crate::sim::lanes::LaneFormat;

/// Sequences per register tile.
pub const MR: usize = 8;
/// Values of k per pass over a tile (the panel slice of a pass stays in L1).
const KC: usize = 256;

/// Wᵀ (K × units, row-major: `wt[k·units + i] = W_ik`) packed in panels of `pw` units.
#[derive(Debug, Clone)]
pub struct Packed<C> {
    pub k: usize,
    pub units: usize,
    /// panel width in units: NR·L
    pub pw: usize,
    /// units padded to a multiple of `pw` (the row stride `acc` must have)
    pub up: usize,
    /// data[p·k·pw + kk·pw + u] = Wᵀ[kk][p·pw + u] (0 past `units`)
    data: Vec<C>,
    /// f16 only: the binary16 repacking for the native tile, built on first use
    #[cfg(target_arch = "x86_64")]
    f16: std::sync::OnceLock<Box<Packed<u16>>>,
}

/// Lanes per 64-byte vector of `C`.
pub const fn lanes_of<C>() -> usize {
    64 / std::mem::size_of::<C>()
}

impl<C: Copy + Default> Packed<C> {
    /// Packs `wt` for tiles of `nr` vectors (1 or 2).
    pub fn new(wt: &[C], k: usize, units: usize, nr: usize) -> Self {
        debug_assert_eq!(wt.len(), k * units);
        let pw = nr * lanes_of::<C>();
        let up = units.div_ceil(pw).max(1) * pw;
        let mut data = vec![C::default(); up * k];
        for p in 0..up / pw {
            for kk in 0..k {
                for u in 0..pw {
                    let i = p * pw + u;
                    if i < units {
                        data[(p * k + kk) * pw + u] = wt[kk * units + i];
                    }
                }
            }
        }
        Packed {
            k,
            units,
            pw,
            up,
            data,
            #[cfg(target_arch = "x86_64")]
            f16: std::sync::OnceLock::new(),
        }
    }

    /// Two vectors per tile when there are enough units to fill them.
    pub fn for_units(wt: &[C], k: usize, units: usize) -> Self {
        let nr = if units > lanes_of::<C>() { 2 } else { 1 };
        Self::new(wt, k, units, nr)
    }
}

/// acc (ns rows of stride `packed.up`) += z (ns rows of stride `ldz`, first `packed.k`
/// values used) · Wᵀ, k ascending, every operation rounded, or every product-sum fused when
/// `fma` (see the module doc).
pub fn accumulate<F: LaneFormat>(packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, acc: &mut [F::C], fma: bool) {
    if ns == 0 || packed.k == 0 {
        return;
    }
    assert!(z.len() >= (ns - 1) * ldz + packed.k && acc.len() >= ns * packed.up);
    #[cfg(target_arch = "x86_64")]
    if let Some(done) = x86::accumulate::<F>(packed, z, ldz, ns, acc, fma) {
        return done;
    }
    if fma {
        portable::<F, true>(packed, z, ldz, ns, acc)
    } else {
        portable::<F, false>(packed, z, ldz, ns, acc)
    }
}

/// The same operations in plain loops (the unit index innermost, so it vectorises).
fn portable<F: LaneFormat, const FUSED: bool>(packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, acc: &mut [F::C]) {
    let (k, pw, up) = (packed.k, packed.pw, packed.up);
    for p in 0..up / pw {
        let panel = &packed.data[p * k * pw..(p + 1) * k * pw];
        for s in 0..ns {
            let a = &mut acc[s * up + p * pw..s * up + (p + 1) * pw];
            for kk in 0..k {
                let zk = z[s * ldz + kk];
                for (x, &w) in a.iter_mut().zip(&panel[kk * pw..(kk + 1) * pw]) {
                    *x = if FUSED { F::fma_l(w, zk, *x) } else { F::add_l(*x, F::mul_l(w, zk)) };
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[path = "tile_f16.rs"]
mod tile_f16;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Packed, KC, MR};
    use crate::sim::lanes::{LaneFormat, Rounding};
    use crate::sim::simd_round::{round_bf16, round_f16};
    use std::arch::x86_64::*;

    /// One SIMD register of lanes and the two rounded operations.
    pub(super) trait Ops {
        type C: Copy;
        type V: Copy;
        const L: usize;
        unsafe fn load(p: *const Self::C) -> Self::V;
        unsafe fn store(p: *mut Self::C, v: Self::V);
        unsafe fn splat(p: *const Self::C) -> Self::V;
        unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
        unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
        /// Multiply by a value in memory (an embedded broadcast) rather than by a register
        /// splat once per sequence: `mul_splat` instead of `splat` + `mul` in the tile.
        const SPLAT_IN_MUL: bool = false;
        /// a · (the value at p in every lane)
        #[inline(always)]
        unsafe fn mul_splat(a: Self::V, p: *const Self::C) -> Self::V {
            Self::mul(a, Self::splat(p))
        }
        /// `fma_splat` is the format's fused multiply-add (else the fused tile is not used).
        const FMA: bool = false;
        /// acc + w · (the value at p), rounded once.
        #[inline(always)]
        unsafe fn fma_splat(_acc: Self::V, _w: Self::V, _p: *const Self::C) -> Self::V {
            unreachable!("the fused tile is only driven for formats with FMA = true")
        }
    }

    struct F64;
    impl Ops for F64 {
        type C = f64;
        type V = __m512d;
        const L: usize = 8;
        #[inline(always)]
        unsafe fn load(p: *const f64) -> __m512d { _mm512_loadu_pd(p) }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: __m512d) { _mm512_storeu_pd(p, v) }
        #[inline(always)]
        unsafe fn splat(p: *const f64) -> __m512d { _mm512_set1_pd(*p) }
        #[inline(always)]
        unsafe fn mul(a: __m512d, b: __m512d) -> __m512d { _mm512_mul_pd(a, b) }
        #[inline(always)]
        unsafe fn add(a: __m512d, b: __m512d) -> __m512d { _mm512_add_pd(a, b) }
        const FMA: bool = true;
        #[inline(always)]
        unsafe fn fma_splat(acc: __m512d, w: __m512d, p: *const f64) -> __m512d { _mm512_fmadd_pd(w, _mm512_set1_pd(*p), acc) }
    }

    /// f32 lanes, each result rounded to the grid `R` (none, bf16 or f16).
    struct F32<const R: u8>;
    impl<const R: u8> F32<R> {
        #[inline(always)]
        unsafe fn round(x: __m512) -> __m512 {
            match R {
                0 => x,
                1 => round_bf16(x),
                _ => round_f16(x),
            }
        }
    }
    impl<const R: u8> Ops for F32<R> {
        type C = f32;
        type V = __m512;
        const L: usize = 16;
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m512 { _mm512_loadu_ps(p) }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m512) { _mm512_storeu_ps(p, v) }
        #[inline(always)]
        unsafe fn splat(p: *const f32) -> __m512 { _mm512_set1_ps(*p) }
        #[inline(always)]
        unsafe fn mul(a: __m512, b: __m512) -> __m512 { Self::round(_mm512_mul_ps(a, b)) }
        #[inline(always)]
        unsafe fn add(a: __m512, b: __m512) -> __m512 { Self::round(_mm512_add_ps(a, b)) }
        /// f32: the hardware FMA. f16 (products exact in f32): the round-to-odd emulation of
        /// `num::fused` in f32 (24 ≥ 11 + 2 bits). bf16: none (a product of two bf16 values
        /// can lose bits below f32's subnormal quantum).
        const FMA: bool = R != 1;
        #[inline(always)]
        unsafe fn fma_splat(acc: __m512, w: __m512, p: *const f32) -> __m512 {
            let z = _mm512_set1_ps(*p);
            if R == 0 {
                return _mm512_fmadd_ps(w, z, acc);
            }
            let pr = _mm512_mul_ps(w, z); // exact
            let s = _mm512_add_ps(pr, acc);
            // TwoSum: err = (pr + acc) − s exactly
            let bb = _mm512_sub_ps(s, pr);
            let err = _mm512_add_ps(_mm512_sub_ps(pr, _mm512_sub_ps(s, bb)), _mm512_sub_ps(acc, bb));
            let sb = _mm512_castps_si512(s);
            // inexact (err ≠ 0; NaN when s is ±∞ or NaN compares false) and even: one ulp
            // of |s| towards the exact value (away from zero when err has s's sign)
            let inexact = _mm512_cmp_ps_mask::<_CMP_NEQ_OQ>(err, _mm512_setzero_ps());
            let even = _mm512_testn_epi32_mask(sb, _mm512_set1_epi32(1));
            let same_sign = _mm512_testn_epi32_mask(_mm512_xor_si512(sb, _mm512_castps_si512(err)), _mm512_set1_epi32(i32::MIN));
            let step = _mm512_mask_blend_epi32(same_sign, _mm512_set1_epi32(-1), _mm512_set1_epi32(1));
            let odd = _mm512_mask_add_epi32(sb, inexact & even, sb, step);
            Self::round(_mm512_castsi512_ps(odd))
        }
    }

    /// One tile: `M` sequences × `N` vectors, k in k0..k1; product-sums fused when `FUSED`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn tile<O: Ops, const M: usize, const N: usize, const FUSED: bool>(panel: *const O::C, pw: usize, z: *const O::C, ldz: usize, acc: *mut O::C, lda: usize, k0: usize, k1: usize) {
        let mut a: [[O::V; N]; M] = [[O::splat(acc); N]; M];
        for (s, row) in a.iter_mut().enumerate() {
            for (r, v) in row.iter_mut().enumerate() {
                *v = O::load(acc.add(s * lda + r * O::L));
            }
        }
        for k in k0..k1 {
            let wp = panel.add(k * pw);
            let mut w: [O::V; N] = [O::splat(wp); N];
            for (r, v) in w.iter_mut().enumerate() {
                *v = O::load(wp.add(r * O::L));
            }
            for (s, row) in a.iter_mut().enumerate() {
                let zp = z.add(s * ldz + k);
                if FUSED {
                    for (x, &wv) in row.iter_mut().zip(w.iter()) {
                        *x = O::fma_splat(*x, wv, zp);
                    }
                } else if O::SPLAT_IN_MUL {
                    for (x, &wv) in row.iter_mut().zip(w.iter()) {
                        *x = O::add(*x, O::mul_splat(wv, zp));
                    }
                } else {
                    let zb = O::splat(zp);
                    for (x, &wv) in row.iter_mut().zip(w.iter()) {
                        *x = O::add(*x, O::mul(wv, zb));
                    }
                }
            }
        }
        for (s, row) in a.iter().enumerate() {
            for (r, &v) in row.iter().enumerate() {
                O::store(acc.add(s * lda + r * O::L), v);
            }
        }
    }

    /// All tiles of the block: k in chunks of KC, then panels, then groups of MR sequences
    /// (a panel's chunk is reused by every group while it is in L1).
    #[inline(always)]
    pub(super) unsafe fn drive<O: Ops, const N: usize, const FUSED: bool>(p: &Packed<O::C>, z: &[O::C], ldz: usize, ns: usize, acc: &mut [O::C]) {
        let (k, pw, up) = (p.k, p.pw, p.up);
        debug_assert_eq!(pw, N * O::L);
        let (zp, ap, dp) = (z.as_ptr(), acc.as_mut_ptr(), p.data.as_ptr());
        for k0 in (0..k).step_by(KC) {
            let k1 = (k0 + KC).min(k);
            for q in 0..up / pw {
                let panel = dp.add(q * k * pw);
                let mut s0 = 0;
                while s0 < ns {
                    let (zs, as_) = (zp.add(s0 * ldz), ap.add(s0 * up + q * pw));
                    let m = (ns - s0).min(MR);
                    match m {
                        8 => tile::<O, 8, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                        7 => tile::<O, 7, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                        6 => tile::<O, 6, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                        5 => tile::<O, 5, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                        4 => tile::<O, 4, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                        3 => tile::<O, 3, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                        2 => tile::<O, 2, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                        _ => tile::<O, 1, N, FUSED>(panel, pw, zs, ldz, as_, up, k0, k1),
                    }
                    s0 += m;
                }
            }
        }
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma")]
    unsafe fn drive_avx512<O: Ops>(p: &Packed<O::C>, z: &[O::C], ldz: usize, ns: usize, acc: &mut [O::C], fma: bool) {
        debug_assert!(!fma || O::FMA, "no fused tile for this format");
        match (p.pw == O::L, fma) {
            (true, false) => drive::<O, 1, false>(p, z, ldz, ns, acc),
            (false, false) => drive::<O, 2, false>(p, z, ldz, ns, acc),
            (true, true) => drive::<O, 1, true>(p, z, ldz, ns, acc),
            (false, true) => drive::<O, 2, true>(p, z, ldz, ns, acc),
        }
    }

    fn has_avx512() -> bool {
        std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl") && std::arch::is_x86_feature_detected!("avx512dq") && std::arch::is_x86_feature_detected!("fma")
    }

    fn cast<A: 'static, B: 'static>(p: &Packed<A>) -> &Packed<B> {
        assert_eq!(std::any::TypeId::of::<A>(), std::any::TypeId::of::<B>());
        // SAFETY: A and B are the same type (checked above).
        unsafe { &*(p as *const Packed<A>).cast::<Packed<B>>() }
    }

    fn cast_slice<A: 'static, B: 'static>(s: &[A]) -> &[B] {
        assert_eq!(std::any::TypeId::of::<A>(), std::any::TypeId::of::<B>());
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<B>(), s.len()) }
    }

    fn cast_mut<A: 'static, B: 'static>(s: &mut [A]) -> &mut [B] {
        assert_eq!(std::any::TypeId::of::<A>(), std::any::TypeId::of::<B>());
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<B>(), s.len()) }
    }

    /// The AVX-512 tile when the CPU has it (Some), else None (portable loops).
    pub(super) fn accumulate<F: LaneFormat>(p: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, acc: &mut [F::C], fma: bool) -> Option<()> {
        if F::ROUNDING == Rounding::F16 && super::tile_f16::available() {
            super::tile_f16::accumulate(cast(p), cast_slice(z), ldz, ns, cast_mut(acc), fma);
            return Some(());
        }
        if !has_avx512() || p.pw % super::lanes_of::<F::C>() != 0 || p.pw > 2 * super::lanes_of::<F::C>() {
            return None;
        }
        if fma && F::ROUNDING == Rounding::Bf16 {
            return None;
        }
        // SAFETY: the CPU has the features drive_avx512 is compiled for; the slices were
        // checked to cover every row and column the tiles touch (`super::accumulate`).
        unsafe {
            match F::ROUNDING {
                Rounding::F64 => drive_avx512::<F64>(cast(p), cast_slice(z), ldz, ns, cast_mut(acc), fma),
                Rounding::F32 => drive_avx512::<F32<0>>(cast(p), cast_slice(z), ldz, ns, cast_mut(acc), fma),
                Rounding::Bf16 => drive_avx512::<F32<1>>(cast(p), cast_slice(z), ldz, ns, cast_mut(acc), fma),
                Rounding::F16 => drive_avx512::<F32<2>>(cast(p), cast_slice(z), ldz, ns, cast_mut(acc), fma),
            }
        }
        Some(())
    }

    /// The f32-lane (emulated rounding) f16 tile, for comparing with the native one.
    #[cfg(test)]
    pub(super) fn accumulate_emulated_f16(p: &Packed<f32>, z: &[f32], ldz: usize, ns: usize, acc: &mut [f32], fma: bool) {
        assert!(has_avx512());
        // SAFETY: as in `accumulate`.
        unsafe { drive_avx512::<F32<2>>(p, z, ldz, ns, acc, fma) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    fn check<F: LaneFormat>(k: usize, units: usize, ns: usize, nr: usize, fma: bool) {
        let mut s = 99u64 + (k * 31 + units * 7 + ns) as u64;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            F::from_f64_rounded(((s >> 33) % 2001) as f64 / 256.0 - 3.9).to_lane()
        };
        let wt: Vec<F::C> = (0..k * units).map(|_| next()).collect();
        let packed = Packed::new(&wt, k, units, nr);
        let ldz = k + 3;
        let z: Vec<F::C> = (0..ns * ldz).map(|_| next()).collect();
        let init: Vec<F::C> = (0..ns * packed.up).map(|_| next()).collect();
        let mut got = init.clone();
        accumulate::<F>(&packed, &z, ldz, ns, &mut got, fma);
        for si in 0..ns {
            for i in 0..units {
                let mut a = F::from_lane(init[si * packed.up + i]);
                for kk in 0..k {
                    let (w, zk) = (F::from_lane(wt[kk * units + i]), F::from_lane(z[si * ldz + kk]));
                    a = if fma { w.mul_add(zk, a) } else { a.add(w.mul(zk)) };
                }
                assert_eq!(format!("{:?}", F::from_lane(got[si * packed.up + i])), format!("{a:?}"), "{} k {k} units {units} ns {ns}", F::NAME);
            }
        }
    }

    #[test]
    fn tiles_equal_the_sequential_definition_bit_for_bit() {
        for &(k, units, ns) in &[(1, 1, 1), (5, 16, 8), (20, 16, 9), (300, 40, 13), (7, 33, 3), (260, 64, 17), (3, 8, 1)] {
            for nr in [1, 2] {
                for fma in [false, true] {
                    check::<f32>(k, units, ns, nr, fma);
                    check::<f64>(k, units, ns, nr, fma);
                    check::<bf16>(k, units, ns, nr, fma);
                    check::<f16>(k, units, ns, nr, fma);
                }
            }
        }
    }
}
