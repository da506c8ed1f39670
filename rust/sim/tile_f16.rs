//! The f16 tile of `tile_kernel` in native binary16 arithmetic (AVX512-FP16: `vmulph`,
//! `vaddph`, 32 lanes per 512-bit register), used when the CPU has it.
//!
//! Same operations in the same order as the f32-lane tile, so the same bits: on binary16
//! inputs, `vmulph` and `vaddph` return the correctly rounded (to nearest even, the default
//! MXCSR rounding) binary16 product and sum, subnormals included (the FP16 instructions
//! neither flush nor treat inputs as zero) and overflow to ±inf; that is round_f16 of the
//! exact f32 product or sum, i.e. `half::f16::from_f32(a ∘ b)` as in `lanes::LaneFormat for
//! f16` (innocuous double rounding: 24 ≥ 2·11 + 2, see num/float.rs). inf·0 and inf − inf
//! give the default NaN in both (0xfe00 here, 0xffc00000 in f32: the same value after the
//! exact conversion).
//!
//! Data: the callers keep f16 values in f32 lanes. Per call (one affine map: the bias row
//! and every term), the block's z rows (and acc rows, when the map starts from them) and
//! the bias row are converted to binary16 bits in
//! per-thread scratch (`vcvtps2ph`, exact: the values are on the f16 grid; short tails by
//! masked instructions), the generic tiles of `tile_kernel` run on them with `F16` as the
//! register type (MR sequences × NR vectors of 32 units, k in chunks of KC), the terms one
//! after the other as the f32-lane tiles take them, and acc is converted back once
//! (`vcvtph2ps`, exact). The first pass's tiles load the bias row into their accumulators
//! (it was copied into every acc row: alternating builds, 1 thread, M token-steps/s, f16
//! LSTM at (1024, 1000, 16, 4) 10.8–10.9 → 11.2–11.3, GRU 12.6–12.7 → 14.1–14.2, SimpleRNN
//! 27.8–28.4 → 29.9–31.7, LSTM at (4096, 256, 64, 8) 2.54–2.59 → 2.77–2.78).
//! `affine_binary16` leaves the rows in binary16 instead, for callers that convert them as
//! they read them (the gated cells' AVX-512 loops: `tile_kernel::affine_binary16`). The weights are repacked once per plan in panels of
//! 32·NR binary16 units (kept in the f32 `Packed`, built on first use).
//!
//! The f16 intrinsics and the `__m512h` type are unstable in Rust 1.95, so the two
//! arithmetic instructions are one-line `asm!` blocks on `__m512i` registers; loads, stores
//! and conversions are stable intrinsics.
#![cfg_attr(not(rnnsim_avx512_tiles), allow(dead_code, unused_imports))]

use super::x86::{drive_terms, Ops};
use super::MAX_TERMS;
use super::{Packed, Term};
use std::arch::asm;
use std::arch::x86_64::*;
use std::cell::RefCell;

/// Lanes per register.
const L: usize = 32;

/// 32 binary16 lanes (as bits) and the native rounded operations.
pub(super) struct F16;
impl Ops for F16 {
    type C = u16;
    type V = __m512i;
    const L: usize = L;
    /// `vpbroadcastw` from memory costs a shuffle-port µop; the embedded broadcast does not
    /// (measured: ~20% faster at hidden 1024).
    const SPLAT_IN_MUL: bool = true;
    #[inline(always)]
    unsafe fn load(p: *const u16) -> __m512i { _mm512_loadu_si512(p.cast()) }
    #[inline(always)]
    unsafe fn store(p: *mut u16, v: __m512i) { _mm512_storeu_si512(p.cast(), v) }
    #[inline(always)]
    unsafe fn splat(p: *const u16) -> __m512i { _mm512_set1_epi16(*p as i16) }
    #[inline(always)]
    unsafe fn mul(a: __m512i, b: __m512i) -> __m512i { vmulph(a, b) }
    #[inline(always)]
    unsafe fn mul_splat(a: __m512i, p: *const u16) -> __m512i { vmulph_splat(a, p) }
    #[inline(always)]
    unsafe fn add(a: __m512i, b: __m512i) -> __m512i { vaddph(a, b) }
    const FMA: bool = true;
    #[inline(always)]
    unsafe fn fma_splat(acc: __m512i, w: __m512i, p: *const u16) -> __m512i { vfmadd231ph_splat(acc, w, p) }
}

// The instructions (inlined into `run`, which has the same target features).

#[inline]
#[target_feature(enable = "avx512f,avx512fp16")]
unsafe fn vmulph(a: __m512i, b: __m512i) -> __m512i {
    let r: __m512i;
    // SAFETY: register-only arithmetic on a CPU with avx512fp16 (the target feature).
    asm!("vmulph {r}, {a}, {b}", r = lateout(zmm_reg) r, a = in(zmm_reg) a, b = in(zmm_reg) b, options(pure, nomem, nostack, preserves_flags));
    r
}

#[inline]
#[target_feature(enable = "avx512f,avx512fp16")]
unsafe fn vmulph_splat(a: __m512i, p: *const u16) -> __m512i {
    let r: __m512i;
    // SAFETY: reads the one binary16 value at p (the caller's), broadcast to 32 lanes.
    asm!("vmulph {r}, {a}, word ptr [{p}]{{1to32}}", r = lateout(zmm_reg) r, a = in(zmm_reg) a, p = in(reg) p, options(pure, readonly, nostack, preserves_flags));
    r
}

#[inline]
#[target_feature(enable = "avx512f,avx512fp16")]
unsafe fn vaddph(a: __m512i, b: __m512i) -> __m512i {
    let r: __m512i;
    // SAFETY: as for vmulph.
    asm!("vaddph {r}, {a}, {b}", r = lateout(zmm_reg) r, a = in(zmm_reg) a, b = in(zmm_reg) b, options(pure, nomem, nostack, preserves_flags));
    r
}

#[inline]
#[target_feature(enable = "avx512f,avx512fp16")]
unsafe fn vfmadd231ph_splat(acc: __m512i, w: __m512i, p: *const u16) -> __m512i {
    let mut r = acc;
    // SAFETY: as for vmulph_splat; r = w · [p] + r rounded once to binary16.
    asm!("vfmadd231ph {r}, {w}, word ptr [{p}]{{1to32}}", r = inout(zmm_reg) r, w = in(zmm_reg) w, p = in(reg) p, options(pure, readonly, nostack, preserves_flags));
    r
}

/// The CPU can run this tile.
pub(super) fn available() -> bool {
    super::AVX512_TILES_COMPILED && crate::sim::cpu::avx512_fp16()
}

/// The binary16 bits of f32 lanes holding f16 values (exact).
fn bits(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// `p` (f16 values in f32 lanes) repacked in binary16 panels of 32·NR units.
pub(super) fn repack(p: &Packed<f32>) -> Packed<u16> {
    let (k, units) = (p.k, p.units);
    let mut wt = vec![0u16; k * units];
    for kk in 0..k {
        for i in 0..units {
            wt[kk * units + i] = bits(p.data[((i / p.pw) * k + kk) * p.pw + i % p.pw]);
        }
    }
    Packed::for_units(&wt, k, units)
}

thread_local! {
    /// Per-thread binary16 copies of the block's z rows (every term's), acc rows and bias row.
    static SCRATCH: RefCell<(Vec<u16>, Vec<u16>, Vec<u16>)> = const { RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

/// `tile_kernel::accumulate` for f16 in native arithmetic: `affine` with one term and no
/// bias (the tests' entry; the kernel calls `affine`).
#[cfg(test)]
pub(super) fn accumulate(p: &Packed<f32>, z: &[f32], ldz: usize, ns: usize, acc: &mut [f32], fma: bool) {
    affine(None, &[Term { w: p, z, ldz }], ns, acc, fma)
}

/// `tile_kernel::affine` (from the `bias` row) or `accumulate` (bias None: from acc) for f16
/// in native arithmetic (see the module doc), every term in one pass: acc is converted to
/// binary16 once, runs through the terms in order in the tiles (from the bias to the last
/// term, as the f32-lane tiles do) and is converted back once. The terms' `Packed` are the
/// f32-lane packings, whose binary16 repackings are built on first use. No allocation per
/// call (at batch 1 this runs every tick).
pub(super) fn affine(bias: Option<&[f32]>, terms: &[Term<'_, f32>], ns: usize, acc: &mut [f32], fma: bool) {
    debug_assert!(available());
    let Some(p0) = terms.first().map(|t| t.w) else { return };
    let (up, h0) = (p0.up, binary16(p0));
    assert!(terms.iter().all(|t| t.w.up == up && binary16(t.w).up == h0.up && binary16(t.w).pw == h0.pw));
    assert!(acc.len() >= ns * up && bias.is_none_or(|b| b.len() == up));
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (z16, a16, b16) = &mut *guard;
        z16.resize(ns * terms.iter().map(|t| t.w.k).sum::<usize>(), 0);
        a16.resize(ns * h0.up, 0);
        b16.resize(h0.up, 0);
        // SAFETY: `available()` (the caller checks it); slice bounds are checked by indexing.
        unsafe { run(bias, terms, ns, Some(acc), z16, a16, b16, fma) }
    })
}

/// `affine` from the `bias` row (f32 lanes, f16 values; z too) with the result left in
/// binary16: `out` gets the ns rows of `binary16_width` bits each, and no
/// conversion pass back to f32 lanes is made (`tile_kernel::affine_binary16`).
pub(super) fn affine_binary16(bias: &[f32], terms: &[Term<'_, f32>], ns: usize, out: &mut [u16], fma: bool) {
    debug_assert!(available());
    let Some(p0) = terms.first().map(|t| t.w) else { panic!("an affine map without terms") };
    let (up, h0) = (p0.up, binary16(p0));
    assert!(terms.iter().all(|t| t.w.up == up && binary16(t.w).up == h0.up && binary16(t.w).pw == h0.pw));
    assert!(out.len() >= ns * h0.up && bias.len() == up);
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let (z16, _, b16) = &mut *guard;
        z16.resize(ns * terms.iter().map(|t| t.w.k).sum::<usize>(), 0);
        b16.resize(h0.up, 0);
        // SAFETY: as in `affine`.
        unsafe { run(Some(bias), terms, ns, None, z16, out, b16, fma) }
    })
}

/// `affine_binary16` with z rows given in binary16 already (`(packing, rows, stride)` per
/// term): no conversion of any row, in or out.
pub(super) fn affine_bits(bias: &[f32], terms: &[(&Packed<f32>, &[u16], usize)], ns: usize, out: &mut [u16], fma: bool) {
    debug_assert!(available());
    let Some(&(p0, _, _)) = terms.first() else { panic!("an affine map without terms") };
    let h0 = binary16(p0);
    assert!(terms.iter().all(|t| t.0.up == p0.up && binary16(t.0).up == h0.up && binary16(t.0).pw == h0.pw));
    assert!(terms.iter().all(|&(p, z, ldz)| p.k == 0 || z.len() >= (ns - 1) * ldz + p.k));
    assert!(out.len() >= ns * h0.up && bias.len() == p0.up);
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let b16 = &mut guard.2;
        b16.resize(h0.up, 0);
        // SAFETY: as in `affine`; the z rows cover the terms (checked above).
        unsafe {
            bias_bits(bias, b16);
            let t16 = terms.iter().filter(|t| t.0.k > 0).map(|&(p, z, ldz)| (binary16(p), z, ldz));
            tiles(Some(&b16[..]), t16, ns, out, fma)
        }
    })
}

/// The row stride of `affine_binary16`'s result for maps of `p`: its binary16 panels' padded
/// width.
pub(super) fn binary16_width(p: &Packed<f32>) -> usize {
    binary16(p).up
}

/// The binary16 repacking of `p`, built on first use.
fn binary16(p: &Packed<f32>) -> &Packed<u16> {
    p.f16.get_or_init(|| Box::new(repack(p)))
}

#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512fp16,avx2,avx")]
unsafe fn run(bias: Option<&[f32]>, terms: &[Term<'_, f32>], ns: usize, acc: Option<&mut [f32]>, z16: &mut [u16], a16: &mut [u16], b16: &mut [u16], fma: bool) {
    let h0 = binary16(terms[0].w);
    let (up, uh) = (terms[0].w.up, h0.up);
    debug_assert!(up <= uh);
    // the bias row in binary16 (the tiles load it into their accumulators: no copy per
    // row), or acc's rows, zero-padded to the binary16 stride
    if let Some(b) = bias {
        to_bits(b, &mut b16[..up]);
        b16[up..uh].fill(0);
    } else {
        let acc = acc.as_deref().expect("a map from acc has acc");
        for s in 0..ns {
            to_bits(&acc[s * up..(s + 1) * up], &mut a16[s * uh..s * uh + up]);
            a16[s * uh + up..(s + 1) * uh].fill(0);
        }
    }
    // each term's z rows, packed at stride k, one term after the other
    let mut at = 0;
    for t in terms {
        let k = t.w.k;
        for s in 0..ns {
            to_bits(&t.z[s * t.ldz..s * t.ldz + k], &mut z16[at + s * k..at + (s + 1) * k]);
        }
        at += ns * k;
    }
    // the terms through the tiles (those with k > 0), each z at its offset in z16
    let z16: &[u16] = z16;
    let offsets = terms.iter().scan(0, |at, t| {
        let a = *at;
        *at += ns * t.w.k;
        Some(a)
    });
    let t16 = terms.iter().zip(offsets).filter(|(t, _)| t.w.k > 0).map(|(t, at)| (binary16(t.w), &z16[at..at + ns * t.w.k], t.w.k));
    tiles(bias.map(|_| &b16[..uh]), t16, ns, a16, fma);
    // (without acc, a16 is the caller's binary16 result)
    if let Some(acc) = acc {
        for s in 0..ns {
            from_bits(&a16[s * uh..s * uh + up], &mut acc[s * up..(s + 1) * up]);
        }
    }
}

/// b16 = the binary16 bits of the bias row (f16 values in f32 lanes), zero-padded. (Apart
/// from `affine_bits`, which has no target features: its intrinsics would be calls.)
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512fp16,avx2,avx")]
unsafe fn bias_bits(bias: &[f32], b16: &mut [u16]) {
    to_bits(bias, &mut b16[..bias.len()]);
    b16[bias.len()..].fill(0);
}

/// a16 (ns rows of the binary16 width) = the terms' products from `init` (the bias row), or
/// added to a16 as it stands (None): at most MAX_TERMS terms per pass, more continuing from
/// a16; the bias alone when there is no term.
#[cfg(rnnsim_avx512_tiles)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512fp16,avx2,avx")]
unsafe fn tiles<'a>(mut init: Option<&[u16]>, mut t16: impl Iterator<Item = (&'a Packed<u16>, &'a [u16], usize)>, ns: usize, a16: &mut [u16], fma: bool) {
    // (groups in a fixed array: no allocation per call, which batch 1 makes every tick)
    while let Some(first) = t16.next() {
        let mut group = [first; MAX_TERMS];
        let mut n = 1;
        while n < MAX_TERMS {
            let Some(t) = t16.next() else { break };
            group[n] = t;
            n += 1;
        }
        let group = &group[..n];
        let (uh, pw) = (group[0].0.up, group[0].0.pw);
        assert!(a16.len() >= ns * uh);
        let (all, ap) = (0..uh / pw, a16.as_mut_ptr());
        match (pw == L, fma) {
            (true, false) => drive_terms::<F16, 1, false>(init, group, ns, ap, None, all),
            (false, false) => drive_terms::<F16, 2, false>(init, group, ns, ap, None, all),
            (true, true) => drive_terms::<F16, 1, true>(init, group, ns, ap, None, all),
            (false, true) => drive_terms::<F16, 2, true>(init, group, ns, ap, None, all),
        }
        init = None;
    }
    if let Some(b) = init {
        // no term with k > 0: the result is the bias row
        let uh = b.len();
        for s in 0..ns {
            a16[s * uh..(s + 1) * uh].copy_from_slice(b);
        }
    }
}

/// Without the AVX-512 tiles (`build.rs`) this tile is not compiled, and never
/// `available`.
#[cfg(not(rnnsim_avx512_tiles))]
unsafe fn tiles<'a>(_: Option<&[u16]>, _: impl Iterator<Item = (&'a Packed<u16>, &'a [u16], usize)>, _: usize, _: &mut [u16], _: bool) {
    unreachable!("the native f16 tile is not in this build (RNNSIM_AVX512_TILES, build.rs)")
}

/// Lane mask of the first `m` of 16 lanes.
#[inline(always)]
fn first(m: usize) -> u16 {
    ((1u32 << m) - 1) as u16
}

/// dst = the binary16 bits of src (f32 values on the f16 grid: exact); the tail of fewer
/// than 16 values by masked loads and stores.
#[inline(always)]
unsafe fn to_bits(src: &[f32], dst: &mut [u16]) {
    assert_eq!(src.len(), dst.len());
    let (n, full) = (src.len(), src.len() / 16 * 16);
    for i in (0..full).step_by(16) {
        let v = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_loadu_ps(src.as_ptr().add(i)));
        _mm256_storeu_si256(dst.as_mut_ptr().add(i).cast(), v);
    }
    if full < n {
        let m = first(n - full);
        let v = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_maskz_loadu_ps(m, src.as_ptr().add(full)));
        _mm256_mask_storeu_epi16(dst.as_mut_ptr().add(full).cast(), m, v);
    }
}

/// dst = the f32 values of the binary16 bits src (exact); the tail masked as in `to_bits`.
#[inline(always)]
unsafe fn from_bits(src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len());
    let (n, full) = (src.len(), src.len() / 16 * 16);
    for i in (0..full).step_by(16) {
        let v = _mm512_cvtph_ps(_mm256_loadu_si256(src.as_ptr().add(i).cast()));
        _mm512_storeu_ps(dst.as_mut_ptr().add(i), v);
    }
    if full < n {
        let m = first(n - full);
        let v = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src.as_ptr().add(full).cast()));
        _mm512_mask_storeu_ps(dst.as_mut_ptr().add(full), m, v);
    }
}

#[cfg(all(test, rnnsim_avx512_tiles))]
mod tests {
    use super::super::{portable, Packed};
    use super::*;

    /// Random binary16 values (as f32 lanes): subnormals, normals of every size (products
    /// and sums that overflow to ±inf), zeros of both signs, and ±inf when `inf`; no NaN.
    struct Gen(u64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn value(&mut self, inf: bool) -> f32 {
            let r = self.next();
            let sign = ((r & 1) as u16) << 15;
            let b = match (r >> 1) % 8 {
                0 => (r >> 4) as u16 & 0x03ff,                     // subnormal or zero
                1 => 0x0400 + ((r >> 4) as u16 % 0x0800),          // smallest normals
                2 => 0x7400 + ((r >> 4) as u16 % 0x07ff),          // huge: sums overflow
                3 if inf && (r >> 4).is_multiple_of(4) => 0x7c00, // ±inf
                _ => 0x3000 + ((r >> 4) as u16 % 0x1800),          // around 1
            };
            half::f16::from_bits(b | sign).to_f32()
        }
    }

    fn same(a: &[f32], b: &[f32]) -> bool {
        a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// Checks one case; returns how many results were subnormal, infinite and NaN.
    fn check(k: usize, units: usize, ns: usize, nr: usize, inf: bool, seed: u64, fma: bool) -> [usize; 3] {
        let mut g = Gen(seed ^ (k * 1_000_003 + units * 1009 + ns * 17 + nr) as u64);
        let wt: Vec<f32> = (0..k * units).map(|_| g.value(false)).collect();
        let p = Packed::new(&wt, k, units, nr);
        let ldz = k + 5;
        let z: Vec<f32> = (0..ns * ldz).map(|_| g.value(inf)).collect();
        let init: Vec<f32> = (0..ns * p.up).map(|_| g.value(false)).collect();
        let mut native = init.clone();
        accumulate(&p, &z, ldz, ns, &mut native, fma);
        let mut emulated = init.clone();
        super::super::tile_avx512::accumulate_emulated_f16(&p, &z, ldz, ns, &mut emulated, fma);
        let mut loops = init.clone();
        // SAFETY: `loops` holds the ns rows; every panel, this call's alone.
        unsafe {
            if fma {
                portable::<half::f16, true, false>(&p, &z, ldz, ns, loops.as_mut_ptr(), 0..p.up / p.pw);
            } else {
                portable::<half::f16, false, false>(&p, &z, ldz, ns, loops.as_mut_ptr(), 0..p.up / p.pw);
            }
        }
        let what = format!("k {k} units {units} ns {ns} nr {nr} inf {inf} fma {fma}");
        assert!(same(&emulated, &loops), "emulated tile vs portable loops, {what}");
        for s in 0..ns {
            for i in 0..units {
                let (got, want) = (native[s * p.up + i], loops[s * p.up + i]);
                assert_eq!(got.to_bits(), want.to_bits(), "seq {s} unit {i}: {got:e} vs {want:e}, {what}");
            }
        }
        // the sequential definition: the half crate's f16 arithmetic, or (fma) the exact
        // product-sum rounded once by the rational rounding while everything is finite
        for s in 0..ns.min(3) {
            for i in 0..units {
                let mut a = half::f16::from_f32(init[s * p.up + i]);
                for kk in 0..k {
                    let (w, zk) = (half::f16::from_f32(wt[kk * units + i]), half::f16::from_f32(z[s * ldz + kk]));
                    a = match (fma, w.to_f64() * zk.to_f64() + a.to_f64()) {
                        (false, _) => a + w * zk,
                        (true, v) if v.is_finite() && a.is_finite() => {
                            use malachite::Rational;
                            let q = |x: half::f16| Rational::try_from(x.to_f64()).unwrap();
                            let exact = crate::num::round::round_to_f64_in(&(q(w) * q(zk) + q(a)), crate::num::round::BinaryFormat::F16);
                            // the rational rounding has no −0; the fused result's zero sign is IEEE's
                            if exact == 0.0 { half::f16::from_f64(0.0) } else { half::f16::from_f64(exact) }
                        }
                        (true, _) => half::f16::from_f64(w.to_f64() * zk.to_f64() + a.to_f64()),
                    };
                }
                let got = half::f16::from_f32(native[s * p.up + i]);
                let zeros = fma && got == a; // ±0 (the definition above does not track the sign)
                assert!(got.to_bits() == a.to_bits() || zeros || (got.is_nan() && a.is_nan()), "definition: {got} vs {a}, {what}");
            }
        }
        let valid = (0..ns).flat_map(|s| native[s * p.up..s * p.up + units].iter().copied());
        valid.fold([0; 3], |[sub, inf, nan], x| [sub + (x != 0.0 && x.abs() < 6.1035156e-5) as usize, inf + x.is_infinite() as usize, nan + x.is_nan() as usize])
    }

    #[test]
    fn fp16_instructions_keep_subnormals_and_overflow_to_inf() {
        if !available() {
            eprintln!("no avx512fp16: native f16 tile not tested");
            return;
        }
        // 2^-24 · 1 (smallest subnormal), 2^-15 · 0.5, 65504 · 2, 2^-14 · 0.5, 2^-24 · 0.5 (tie → 0)
        let w = [0x0001u16, 0x0200, 0x7bff, 0x0400, 0x0001];
        let z = [0x3c00u16, 0x3800, 0x4000, 0x3800, 0x3800];
        for (&a, &b) in w.iter().zip(&z) {
            let wt = [half::f16::from_bits(a).to_f32()];
            let p = Packed::new(&wt, 1, 1, 1);
            let zz = [half::f16::from_bits(b).to_f32()];
            let mut acc = vec![0.0f32; p.up];
            accumulate(&p, &zz, 1, 1, &mut acc, false);
            let want = (half::f16::from_bits(a) * half::f16::from_bits(b)).to_f32();
            assert_eq!(acc[0].to_bits(), want.to_bits(), "{a:04x} · {b:04x}");
        }
    }

    #[test]
    fn native_f16_tile_equals_the_emulated_tile_bit_for_bit() {
        if !available() {
            eprintln!("no avx512fp16: native f16 tile not tested");
            return;
        }
        let mut seen = [0; 3];
        let shapes = [(1, 1, 1), (3, 16, 8), (17, 17, 9), (300, 33, 13), (7, 31, 3), (260, 64, 17), (5, 65, 1), (2, 100, 7), (513, 40, 2), (1, 129, 8)];
        for (n, &(k, units, ns)) in shapes.iter().enumerate() {
            for nr in [1, 2] {
                for inf in [false, true] {
                    for fma in [false, true] {
                        let c = check(k, units, ns, nr, inf, 7 + n as u64, fma);
                        (0..3).for_each(|j| seen[j] += c[j]);
                    }
                }
            }
        }
        assert!(seen.iter().all(|&c| c > 0), "subnormal, infinite and NaN results all occur: {seen:?}");
    }

    #[test]
    fn native_f16_tile_on_random_shapes() {
        if !available() {
            return;
        }
        let mut g = Gen(2024);
        for round in 0..60 {
            let (k, units, ns) = (1 + g.next() as usize % 90, 1 + g.next() as usize % 140, 1 + g.next() as usize % 20);
            check(k, units, ns, 1 + round % 2, round % 3 == 0, round as u64, round % 2 == 1);
        }
    }
}
