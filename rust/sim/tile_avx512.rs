//! The AVX-512 tiles of `tile_kernel` (x86-64 CPUs with AVX-512 F, VL and DQ): the lane
//! types of `tile_x86`'s tile and driver on 512-bit vectors (`Ops`: f64, f32, and bf16/f16
//! in f32 lanes with a vector rounding after each operation; tiles of 12 sequences in f32
//! and f64, MR = 8 in the half formats, × 1 or 2 vectors of units) and their drivers. The
//! f32 and f64 tiles multiply by z[s][k] as an embedded broadcast (`vfmadd231ps zmm, zmm,
//! [z]{1to16}`, `vmulpd … {1to8}`, in asm), so no broadcast takes a vector pipe slot
//! (`vmulpd_splat`), or, where a 512-bit FMA takes one pipe slot, broadcast into a register
//! ([`register_broadcast`]).
//!
//! Compiled only where `build.rs` sets `rnnsim_avx512_tiles` (the building machine has
//! AVX-512, or `RNNSIM_AVX512_TILES=1`): these tiles were about nine tenths of the crate's
//! generated code. Without them an AVX-512 CPU runs the AVX2 tiles (`tile_avx2`), with the
//! same bits.

use super::x86::{drive_terms, GateStore, Ops, Terms};
#[cfg(test)]
use super::{
    x86::{cast, TermRef},
    Packed,
};
use super::MR;
#[cfg(test)]
use crate::sim::same_type;
use crate::sim::simd_round::{round_bf16_grid, round_f16_grid};
use std::arch::x86_64::*;
use std::ops::Range;

/// Whether the f32/f64 tiles broadcast z into a register (`Ops::REG_BROADCAST`), fused
/// and unfused: on cores whose pipes run a 512-bit FMA in one slot (`cpu::full_width_fma`:
/// Intel, AMD Zen 5). An embedded broadcast is a load µop per FMA or multiply; a tile of 12
/// sequences × 2 vectors then issues 26 loads per k for its 24 FMAs, which bounds a core
/// with two 512-bit FMA pipes and two 512-bit load ports (session 34's Xeon: the fused
/// SimpleRNN at hidden 1024 at 48% of the FMA peak); one broadcast per sequence makes it 14
/// (`tile_rates`: Xeon, fused, +6–24%; session 42's Zen 5, f32 fused 181–199 → 213–241 G
/// flop/s, f64 fused 93–105 → 104–118, f32 unfused 182–194 → 211–225, f64 unfused 91–104 →
/// 105–110: Zen 5's multiplies and adds have two pipes each, so its unfused tile has the
/// fused one's bound). On Zen 4, whose 512-bit FMAs take its two pipes each and whose
/// `vbroadcastss` from memory takes a vector pipe slot, the embedded broadcast is faster
/// (`vmulpd_splat`). Same operations, same bits.
pub(super) fn register_broadcast() -> bool {
    crate::sim::cpu::full_width_fma()
}

/// Sequences per tile of the f32 and f64 AVX-512 tiles: 12 × 2 vectors, 24 accumulators
/// of the 32 registers (the half formats keep `MR`: their roundings need registers).
const ROWS_F32_F64: usize = 12;

/// f64 lanes; `B`: the tiles broadcast z into a register (`Ops::REG_BROADCAST`).
pub(super) struct F64<const B: bool = false>;
impl<const B: bool> Ops for F64<B> {
    type C = f64;
    type V = __m512d;
    const L: usize = 8;
    const ROWS: usize = ROWS_F32_F64;
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
    const SPLAT_IN_MUL: bool = true;
    #[inline(always)]
    unsafe fn mul_splat(a: __m512d, p: *const f64) -> __m512d { vmulpd_splat(a, p) }
    const FMA: bool = true;
    #[inline(always)]
    unsafe fn fma_splat(acc: __m512d, w: __m512d, p: *const f64) -> __m512d { vfmadd231pd_splat(acc, w, p) }
    const REG_BROADCAST: bool = B;
    #[inline(always)]
    unsafe fn fma_reg(acc: __m512d, w: __m512d, z: __m512d) -> __m512d { _mm512_fmadd_pd(w, z, acc) }
}

/// a · (the f64 at p in every lane), the broadcast embedded in the multiply (`{1to8}`).
/// The f32 and f64 tiles multiply (and fused-multiply-add, `vfmadd231pd_splat`) this way:
/// on Zen 4 a `vbroadcastsd` beside multiplies and adds takes a vector pipe slot, the
/// embedded broadcast does not (a loop of 24 multiplies and 24 adds ran 32 cycles with 6
/// broadcasts into registers, 25 with the 24 embedded ones). In asm: LLVM would load the
/// value once for the tile's vectors and broadcast it into a register.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn vmulpd_splat(a: __m512d, p: *const f64) -> __m512d {
    let r: __m512d;
    // SAFETY: reads the one f64 at p (the caller's); AVX-512F (the caller's target features).
    std::arch::asm!("vmulpd {r}, {a}, qword ptr [{p}]{{1to8}}", r = lateout(zmm_reg) r, a = in(zmm_reg) a, p = in(reg) p, options(pure, readonly, nostack, preserves_flags));
    r
}

/// a · (the f32 at p in every lane), the broadcast embedded (`{1to16}`): as [`vmulpd_splat`].
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn vmulps_splat(a: __m512, p: *const f32) -> __m512 {
    let r: __m512;
    // SAFETY: as in `vmulpd_splat`.
    std::arch::asm!("vmulps {r}, {a}, dword ptr [{p}]{{1to16}}", r = lateout(zmm_reg) r, a = in(zmm_reg) a, p = in(reg) p, options(pure, readonly, nostack, preserves_flags));
    r
}

/// acc + w · (the f64 at p in every lane), rounded once, the broadcast embedded.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn vfmadd231pd_splat(acc: __m512d, w: __m512d, p: *const f64) -> __m512d {
    let mut r = acc;
    // SAFETY: as in `vmulpd_splat`.
    std::arch::asm!("vfmadd231pd {r}, {w}, qword ptr [{p}]{{1to8}}", r = inout(zmm_reg) r, w = in(zmm_reg) w, p = in(reg) p, options(pure, readonly, nostack, preserves_flags));
    r
}

/// acc + w · (the f32 at p in every lane), rounded once, the broadcast embedded.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn vfmadd231ps_splat(acc: __m512, w: __m512, p: *const f32) -> __m512 {
    let mut r = acc;
    // SAFETY: as in `vmulpd_splat`.
    std::arch::asm!("vfmadd231ps {r}, {w}, dword ptr [{p}]{{1to16}}", r = inout(zmm_reg) r, w = in(zmm_reg) w, p = in(reg) p, options(pure, readonly, nostack, preserves_flags));
    r
}

/// f32 lanes, each result rounded to the grid `R` (none, bf16 or f16); `B` (f32 only): the
/// tiles broadcast z into a register (`Ops::REG_BROADCAST`); `G` (R = 0 only): the f32
/// sums of a half format, bf16 (1) or f16 (2), whose gate additions round
/// (`Ops::add_gate`: R(R(addend) + R(sum)), `simd_round::round_bf16_grid` /
/// `round_f16_grid`, as the cells' loops round f32 sums when they read them,
/// `gated_half_loops::F32Sums`).
pub(super) struct F32<const R: u8, const B: bool = false, const G: u8 = 0>;
impl<const R: u8, const B: bool, const G: u8> F32<R, B, G> {
    /// x rounded to the grid `H` (0: none, 1: bf16, 2: f16) on the bits alone
    /// (`simd_round::round_bf16_grid` / `round_f16_grid`): every value rounded here is an
    /// operation's result on values of the format (a product, a sum, an f32 sum of
    /// products), so a NaN among them has the low bits the rounding keeps
    /// (`gated_half_loops::round`).
    #[inline(always)]
    unsafe fn to_grid<const H: u8>(x: __m512) -> __m512 {
        match H {
            0 => x,
            1 => round_bf16_grid(x),
            _ => round_f16_grid(x),
        }
    }
    /// A result rounded to the tiles' format `R`.
    #[inline(always)]
    unsafe fn round(x: __m512) -> __m512 {
        Self::to_grid::<R>(x)
    }
    /// An f32 sum of the half format `G` rounded to it (none when G = 0).
    #[inline(always)]
    unsafe fn round_sum(x: __m512) -> __m512 {
        Self::to_grid::<G>(x)
    }
}
impl<const R: u8, const B: bool, const G: u8> Ops for F32<R, B, G> {
    type C = f32;
    type V = __m512;
    const L: usize = 16;
    const ROWS: usize = if R == 0 { ROWS_F32_F64 } else { MR };
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
    #[inline(always)]
    unsafe fn add_gate(addend: __m512, sum: __m512) -> __m512 {
        Self::round_sum(Self::add(Self::round_sum(addend), Self::round_sum(sum)))
    }
    const GATE_FROM_MEMORY: bool = G != 0;
    const SPLAT_IN_MUL: bool = true;
    #[inline(always)]
    unsafe fn mul_splat(a: __m512, p: *const f32) -> __m512 { Self::round(vmulps_splat(a, p)) }
    /// f32: the hardware FMA. f16 and bf16: w·z + acc rounded **to odd** in f32, then to
    /// nearest on the half grid, which is the fused result rounded once (24 ≥ p + 2 bits:
    /// Boldo–Melquiond; f32's quantum is 2^13 resp. 2^16 times finer than the half
    /// format's in the subnormal range too). Round-to-odd from two hardware FMAs with
    /// directed roundings: rd = RD(w·z + acc) and ru = RU(w·z + acc) are equal when the sum
    /// is exact, else adjacent floats, and the odd one of them is the round-to-odd result
    /// (the FMA computes w·z exactly, so no product can underflow or overflow on its own).
    /// Zero sums: RD gives −0 where round-to-nearest gives +0; rd = −0 is even, so ru
    /// (RU's zero sign, the same as nearest's) is taken. Overflow: RD stops at ±MAX (odd),
    /// whose nearest half value is ±∞, as the exact sum's.
    const FMA: bool = true;
    const REG_BROADCAST: bool = R == 0 && B;
    #[inline(always)]
    unsafe fn fma_reg(acc: __m512, w: __m512, z: __m512) -> __m512 {
        _mm512_fmadd_ps(w, z, acc)
    }
    #[inline(always)]
    unsafe fn fma_splat(acc: __m512, w: __m512, p: *const f32) -> __m512 {
        if R == 0 {
            return vfmadd231ps_splat(acc, w, p);
        }
        let z = _mm512_set1_ps(*p);
        let rd = _mm512_fmadd_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(w, z, acc);
        let ru = _mm512_fmadd_round_ps::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(w, z, acc);
        let rd_odd = _mm512_test_epi32_mask(_mm512_castps_si512(rd), _mm512_set1_epi32(1));
        Self::round(_mm512_mask_blend_ps(rd_odd, ru, rd))
    }
}

pub(super) unsafe fn drive_avx512<O: Ops>(bias: Option<&[O::C]>, terms: &Terms<'_, O::C>, ns: usize, acc: *mut O::C, gates: Option<GateStore<O::C>>, fma: bool, panels: Range<usize>) {
    debug_assert!(!fma || O::FMA, "no fused tile for this format");
    match (terms[0].0.pw == O::L, fma) {
        (true, false) => drive_avx512_as::<O, 1, false>(bias, terms, ns, acc, gates, panels),
        (false, false) => drive_avx512_as::<O, 2, false>(bias, terms, ns, acc, gates, panels),
        (true, true) => drive_avx512_as::<O, 1, true>(bias, terms, ns, acc, gates, panels),
        (false, true) => drive_avx512_as::<O, 2, true>(bias, terms, ns, acc, gates, panels),
    }
}

/// `drive_terms` with AVX-512, one function per tile shape and step (not inlined into one:
/// in one function, LLVM's register allocation of the fused tiles changed with the unfused
/// ones' code, 5–11% at small k).
#[inline(never)]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma")]
unsafe fn drive_avx512_as<O: Ops, const N: usize, const FUSED: bool>(bias: Option<&[O::C]>, terms: &Terms<'_, O::C>, ns: usize, acc: *mut O::C, gates: Option<GateStore<O::C>>, panels: Range<usize>) {
    drive_terms::<O, N, FUSED>(bias, terms, ns, acc, gates, panels)
}

/// The f32 or f64 tile (`C`), fused or not (`fma`), with z broadcast into a register
/// (`reg`) or embedded in each FMA or multiply, for comparing the two.
#[cfg(test)]
pub(super) fn accumulate_broadcast<C: 'static>(p: &Packed<C>, z: &[C], ldz: usize, ns: usize, acc: &mut [C], reg: bool, fma: bool) {
    assert!(crate::sim::cpu::avx512());
    let t = [(p, z, ldz)];
    let a = acc.as_mut_ptr();
    let panels = 0..p.up / p.pw;
    // SAFETY: as in `affine`; C is f32 or f64 (same_type checks).
    unsafe {
        if std::any::TypeId::of::<C>() == std::any::TypeId::of::<f32>() {
            let t: [TermRef<'_, f32>; 1] = [(cast(t[0].0), same_type::slice(t[0].1), ldz)];
            if reg { drive_avx512::<F32<0, true>>(None, &t, ns, a.cast(), None, fma, panels) } else { drive_avx512::<F32<0>>(None, &t, ns, a.cast(), None, fma, panels) }
        } else {
            let t: [TermRef<'_, f64>; 1] = [(cast(t[0].0), same_type::slice(t[0].1), ldz)];
            if reg { drive_avx512::<F64<true>>(None, &t, ns, a.cast(), None, fma, panels) } else { drive_avx512::<F64>(None, &t, ns, a.cast(), None, fma, panels) }
        }
    }
}

/// The f32-lane (emulated rounding) f16 tile, for comparing with the native one.
#[cfg(test)]
pub(super) fn accumulate_emulated_f16(p: &Packed<f32>, z: &[f32], ldz: usize, ns: usize, acc: &mut [f32], fma: bool) {
    assert!(crate::sim::cpu::avx512());
    // SAFETY: as in `affine`.
    unsafe { drive_avx512::<F32<2>>(None, &[(p, z, ldz)], ns, acc.as_mut_ptr(), None, fma, 0..p.up / p.pw) }
}

