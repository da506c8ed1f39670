//! bf16 products in f32 sums on AVX512-BF16 (`vdpbf16ps`): two steps of the sequential
//! sum per instruction, for the f32 sums whose weights and rows are all bf16 values (a bf16
//! network's maps with `accumulate="f32"`, and any f32 map whose values happen to be bf16
//! values, such as a compiled construction's small dyadic weights and 0/1 states).
//!
//! What the instruction computes (Intel SDM, VDPBF16PS; the same on AMD Zen 5, measured on
//! 32 M lanes of random and of cancelling sums, session 46): for each f32 lane i,
//!
//!   acc ← RN(RN(acc + w[2i+1]·z[2i+1]) + w[2i]·z[2i])
//!
//! each product exact (a bf16 value has 8 significant bits, a product at most 16, and f32
//! keeps 24), rounded to nearest even whatever MXCSR says, with bf16 inputs and the
//! accumulator read as zero when subnormal (DAZ) and subnormal results written as zero
//! (FTZ). The pairs here hold w_k and z_k in the high half of each 32-bit pair and w_{k+1},
//! z_{k+1} in the low half, so one instruction is the two steps acc + w_k·z_k, then that
//! plus w_{k+1}·z_{k+1}, of the documented order (k ascending; `tile_kernel`), and since each
//! product is exact, each step is RN(acc + w·z): the f32 step, fused or not (`fma` changes
//! nothing here). A term of odd k ends with weight −0 and z +0: the product is −0, and
//! x + (−0) = x for every x, ±0 included.
//!
//! Nothing is flushed and nothing overflows when every weight and z value is zero or
//! 2^−50 ≤ |v| < 2^50, and every accumulator starts at zero or 2^−90 ≤ |a| < 2^100 (checked
//! per call, [`bf16_in_range`], [`start_in_range`]; otherwise the caller runs f32's tiles,
//! same bits): the inputs are then normal; each product is a multiple of 2^−114 (each
//! factor one of 2^−57) below 2^100; a start of at least 2^−90 is a multiple of 2^−113 (its
//! ulp); so every rounded partial sum is a multiple of 2^−114 (below 2^−90 in magnitude it
//! is exact, 24 bits; above, f32's grid is coarser than 2^−114): zero or at least 2^−114,
//! never subnormal, and below 2^100 + k·2^100 < 2^127 for k < 2^26 terms.
//!
//! The tile is `tile_x86`'s shape (12 sequences × N vectors of 16 units, accumulators in
//! registers) stepping k two at a time: per pair it loads N vectors of 16 units × 2 weights
//! and broadcasts one 32-bit pair of z per sequence, so it does twice the multiply-adds of
//! f32's tile per instruction (on Zen 5 `vdpbf16ps` issues two per cycle, as `vfmadd` does)
//! and reads half the weight bytes. As f32's driver, k runs in passes (of `KC` pairs), then
//! panels, then groups of sequences; weights beyond L2 are left to the hardware's
//! prefetcher. The z rows are copied as pairs for every pass before any tile runs, which is
//! where their values are checked. Blocks of at least `MIN_ROWS` sequences over at least
//! `MIN_UNITS` units run here; the gate split's last step and the stores are `tile_x86`'s.
#![cfg_attr(not(rnnsim_avx512_tiles), allow(dead_code))]

use super::x86::{dests, store_tile, Dest, GateStore, Ops, Terms};
use super::{Packed, MAX_TERMS};
use crate::sim::tile_rows::{padded_stride, Scratch};
use std::arch::x86_64::*;
use std::ops::Range;

/// Wᵀ of a `Packed<f32>` as bf16 pairs in the same panels: `data[q·kp·pw + j·pw + u]` =
/// bf16(W[2j][unit]) << 16 | bf16(W[2j + 1][unit]), with 0x8000 (−0) past k.
#[derive(Debug, Clone)]
pub struct Pairs {
    data: Vec<u32>,
    /// pairs per unit: k/2 rounded up
    kp: usize,
}

impl Pairs {
    /// The pairs of `p`, or None when a weight is not a bf16 value in range.
    pub fn of(p: &Packed<f32>) -> Option<Pairs> {
        if !p.data.iter().all(|&w| bf16_in_range(w)) {
            return None;
        }
        let (k, pw, kp) = (p.k, p.pw, p.k.div_ceil(2));
        let mut data = Vec::with_capacity(p.up / pw * kp * pw);
        for panel in p.data.chunks_exact((k * pw).max(1)).take(p.up / pw) {
            for j in 0..kp {
                let bits = |kk: usize, u: usize| if kk < k { panel[kk * pw + u].to_bits() >> 16 } else { 0x8000 };
                data.extend((0..pw).map(|u| bits(2 * j, u) << 16 | bits(2 * j + 1, u)));
            }
        }
        Some(Pairs { data, kp })
    }
}

/// The biased f32 exponents of the weights and z values allowed: 2^−50 ≤ |v| < 2^50.
const VALUES: (u32, u32) = (127 - 50, 127 + 49);
/// The biased f32 exponents of the accumulators' starts allowed: 2^−90 ≤ |a| < 2^100.
const STARTS: (u32, u32) = (127 - 90, 127 + 99);

/// Whether the exponent of bits `u` is in `range` (or the value is ±0).
#[inline(always)]
fn in_exponents(u: u32, (lo, hi): (u32, u32)) -> bool {
    let t = u & 0x7fff_ffff;
    t == 0 || (lo..=hi).contains(&(t >> 23))
}

/// A bf16 value (the low 16 bits of its f32 zero) that is ±0 or 2^−50 ≤ |v| < 2^50.
pub fn bf16_in_range(v: f32) -> bool {
    v.to_bits() & 0xffff == 0 && in_exponents(v.to_bits(), VALUES)
}

/// An accumulator's start that is ±0 or 2^−90 ≤ |a| < 2^100 (`starts_in_range` checks
/// rows of them in vectors).
#[cfg(test)]
pub fn start_in_range(a: f32) -> bool {
    in_exponents(a.to_bits(), STARTS)
}

/// The lanes of `u` (f32 bits) outside `range` (`in_exponents`), or with `grid` off the
/// bf16 grid.
#[inline(always)]
unsafe fn out_of_range(u: __m512i, grid: bool, (lo, hi): (u32, u32)) -> __mmask16 {
    let t = _mm512_and_si512(u, _mm512_set1_epi32(0x7fff_ffff));
    let e = _mm512_sub_epi32(_mm512_srli_epi32::<23>(t), _mm512_set1_epi32(lo as i32));
    let bad = _mm512_test_epi32_mask(t, t) & _mm512_cmpgt_epu32_mask(e, _mm512_set1_epi32((hi - lo) as i32));
    if grid {
        bad | _mm512_test_epi32_mask(u, _mm512_set1_epi32(0xffff))
    } else {
        bad
    }
}

/// The first `n` lanes (n ≤ 16).
#[inline(always)]
fn first(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

/// Sequences per tile (as f32's: 12 × 2 accumulators of the 32 registers).
const ROWS: usize = 12;
/// The fewest sequences of a call run here (a tile of one or two is latency-bound; f32's
/// tiles run such blocks several panels wide).
const MIN_ROWS: usize = 3;
/// The fewest units of a call run here: each row's copy (about 8 instructions per 16 values
/// of k) is repaid by the instructions the pairs save on each unit.
const MIN_UNITS: usize = 48;
/// Pairs of k per pass (512 values of k): the pair tiles kept their passes when f32's grew
/// from 256 to 1,024 values (`tile_kernel::KC`, session 67); longer ones were not measured.
const KC: usize = 256;
/// The row stride of the pair copy: up to KC pairs (2·KC values of k), an odd number of
/// cache lines (`tile_rows`), fixed at compile time.
const LD: usize = padded_stride(KC, 4);
// (a pass's KC pairs fit a row of the copy)
const _: () = assert!(LD >= KC);

/// One term's part of a pass, for a tile: its pairs from the tile's first unit (`w`; the
/// pair stride is the panel width, 16·N for a tile of N vectors), the pairs of the part,
/// where they start in a row of the pass's copy, and the values from one panel of the term
/// to the next (all its pairs × the panel width).
#[derive(Clone, Copy)]
struct Seg {
    w: *const u32,
    kp: usize,
    at: usize,
    pstride: usize,
}

/// One tile of `M` sequences × `N` vectors: accumulators from `init` (a row) or from
/// `acc` (row s0 of the tile, stride `lda`), then every segment's pairs (z from row s0 of
/// the copy); stored to `dest` (`k`: the terms' k, for the store's order).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn tile<O: Ops<C = f32, V = __m512>, const M: usize, const N: usize>(segs: &[Seg], z: *const u32, s0: usize, init: *const f32, acc: *const f32, lda: usize, dest: &[[Dest<f32>; N]; 1], k: usize) {
    let mut a = [[[_mm512_setzero_ps(); N]; 1]; M];
    if init.is_null() {
        for (s, row) in a.iter_mut().enumerate() {
            for (r, v) in row[0].iter_mut().enumerate() {
                *v = _mm512_loadu_ps(acc.add(s * lda + r * 16));
            }
        }
    } else {
        // (loops, not closures: a closure would not take the caller's target features)
        let mut b = [_mm512_setzero_ps(); N];
        for (r, v) in b.iter_mut().enumerate() {
            *v = _mm512_loadu_ps(init.add(r * 16));
        }
        a = [[b]; M];
    }
    for seg in segs {
        let z = z.add(seg.at);
        for j in 0..seg.kp {
            let mut w = [std::mem::transmute::<__m512, __m512bh>(_mm512_setzero_ps()); N];
            for (r, v) in w.iter_mut().enumerate() {
                *v = std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(seg.w.add(j * 16 * N + r * 16).cast()));
            }
            for (s, row) in a.iter_mut().enumerate() {
                let zb = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(*z.add(s * LD + j) as i32));
                for (v, &w) in row[0].iter_mut().zip(&w) {
                    *v = _mm512_dpbf16_ps(*v, w, zb);
                }
            }
        }
    }
    store_tile::<O, M, N, 1>(&a, s0, dest, k);
}

/// Rows 0..ns of z (stride `ldz`), values k0..k1 of each (k0 even), as pairs at `out`
/// (rows `LD` apart). False, the copy unfinished, when a value is not a bf16 value in range.
#[inline(always)]
unsafe fn copy_pairs(z: *const f32, ldz: usize, k0: usize, k1: usize, ns: usize, out: *mut u32) -> bool {
    let mut bad = 0;
    for c in (k0..k1).step_by(32) {
        let n = (k1 - c).min(32);
        // masked loads: the lanes past k1 read nothing and hold +0 (a pad's z)
        let (lo_lanes, hi_lanes, pairs) = (first(n.min(16)), first(n.saturating_sub(16)), first(n.div_ceil(2)));
        let (mut src, mut dst) = (z.add(c), out.add((c - k0) / 2));
        for _ in 0..ns {
            // the row's next lines, for the ticks to come (a layer-0 input's rows: `pass_copy`)
            _mm_prefetch::<_MM_HINT_T0>(src.wrapping_add(n + 32).cast());
            let lo = _mm512_maskz_loadu_epi32(lo_lanes, src.cast());
            bad |= out_of_range(lo, true, VALUES);
            if n <= 16 {
                // bf16 of on-grid values is exact; [z0 … z15] as 8 pairs, halves swapped
                let h = _mm512_cvtneps_pbh(_mm512_castsi512_ps(lo));
                let swapped = _mm256_rol_epi32::<16>(std::mem::transmute::<__m256bh, __m256i>(h));
                _mm256_mask_storeu_epi32(dst.cast(), pairs as __mmask8, swapped);
            } else {
                let hi = _mm512_maskz_loadu_epi32(hi_lanes, src.add(16).cast());
                bad |= out_of_range(hi, true, VALUES);
                let h = _mm512_cvtne2ps_pbh(_mm512_castsi512_ps(hi), _mm512_castsi512_ps(lo));
                let swapped = _mm512_rol_epi32::<16>(std::mem::transmute::<__m512bh, __m512i>(h));
                _mm512_mask_storeu_epi32(dst.cast(), pairs, swapped);
            }
            if bad != 0 {
                // (an f32 map whose weights are bf16 values but whose inputs are not finds
                // out on its first row)
                return false;
            }
            (src, dst) = (src.add(ldz), dst.add(LD));
        }
    }
    true
}

/// Whether every value of `rows` (ns rows of stride `ld`, the units `units` of each;
/// multiples of 16) is an accumulator start in range.
#[inline(always)]
unsafe fn starts_in_range(rows: *const f32, ns: usize, ld: usize, units: Range<usize>) -> bool {
    let mut bad = 0;
    for s in 0..ns {
        for i in units.clone().step_by(16) {
            bad |= out_of_range(_mm512_loadu_si512(rows.add(s * ld + i).cast()), false, STARTS);
        }
    }
    bad == 0
}

/// The most passes of a call (k up to 2·KC·MAX_PASSES values; longer maps run f32's tiles).
const MAX_PASSES: usize = 8;

/// One term's share of a pass: its pairs j0..j1, at pair `at` of the pass's rows.
#[derive(Clone, Copy, Default)]
struct Part {
    term: usize,
    j0: usize,
    j1: usize,
    at: usize,
}

/// The passes of a call: KC pairs each over the terms' pairs concatenated (a pass may end
/// one term and start the next), at most MAX_TERMS parts in each.
struct Passes {
    parts: [[Part; MAX_TERMS]; MAX_PASSES],
    n: [usize; MAX_PASSES],
    count: usize,
}

impl Passes {
    /// The passes over terms of `kps` pairs, or None when there are none or too many.
    fn of(kps: impl Iterator<Item = usize>) -> Option<Passes> {
        let mut p = Passes { parts: [[Part::default(); MAX_TERMS]; MAX_PASSES], n: [0; MAX_PASSES], count: 0 };
        let mut g = 0;
        for (term, kp) in kps.enumerate() {
            let mut j = 0;
            while j < kp {
                let (pass, at) = (g / KC, g % KC);
                if pass == MAX_PASSES {
                    return None;
                }
                let take = (kp - j).min(KC - at);
                p.parts[pass][p.n[pass]] = Part { term, j0: j, j1: j + take, at };
                p.n[pass] += 1;
                (j, g) = (j + take, g + take);
            }
        }
        p.count = g.div_ceil(KC);
        (p.count > 0).then_some(p)
    }

    fn parts(&self, pass: usize) -> &[Part] {
        &self.parts[pass][..self.n[pass]]
    }
}

/// `tile_x86::drive_terms` for f32 sums of bf16 values (the module doc), over `panels`:
/// false, and nothing written, when the call is not one this tile runs or a value is out
/// of range (the caller then runs f32's tiles; same bits).
///
/// # Safety
/// As `tile_x86::affine`: `acc` holds `ns` rows of stride `up`; the CPU has AVX512-BF16.
#[inline(never)]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,avx2,avx,fma")]
pub(super) unsafe fn drive<O: Ops<C = f32, V = __m512>>(bias: Option<&[f32]>, terms: &Terms<'_, f32>, ns: usize, ap: *mut f32, gates: Option<GateStore<f32>>, panels: Range<usize>) -> bool {
    let (pw, up) = (terms[0].0.pw, terms[0].0.up);
    if ns < MIN_ROWS || panels.len() * pw < MIN_UNITS || terms.len() > MAX_TERMS || !(pw == 16 || pw == 32) {
        return false;
    }
    let mut pairs: [Option<&Pairs>; MAX_TERMS] = [None; MAX_TERMS];
    for (slot, &(p, _, _)) in pairs.iter_mut().zip(terms) {
        *slot = p.bf16_pairs.get_or_init(|| Pairs::of(p).map(Box::new)).as_deref();
        if slot.is_none() {
            return false;
        }
    }
    let pairs: [&Pairs; MAX_TERMS] = std::array::from_fn(|i| pairs[i.min(terms.len() - 1)].expect("checked above"));
    let Some(passes) = Passes::of(pairs[..terms.len()].iter().map(|p| p.kp)) else {
        return false;
    };
    let units = panels.start * pw..panels.end * pw;
    let starts = match bias {
        Some(b) => starts_in_range(b.as_ptr(), 1, 0, units.clone()),
        None => starts_in_range(ap, ns, up, units),
    };
    if !starts {
        return false;
    }
    // every pass's rows, ns × LD pairs each, checked before any tile runs
    let mut scratch = Scratch::default();
    let copy = scratch.values::<u32>(passes.count * ns * LD).as_mut_ptr();
    for pass in 0..passes.count {
        for part in passes.parts(pass) {
            let (p, z, ldz) = terms[part.term];
            let out = copy.add(pass * ns * LD + part.at);
            if !copy_pairs(z.as_ptr(), ldz, 2 * part.j0, (2 * part.j1).min(p.k), ns, out) {
                return false;
            }
        }
    }
    #[cfg(test)]
    RUNS.set(RUNS.get() + 1);
    let k: usize = terms.iter().map(|t| t.0.k).sum();
    for pass in 0..passes.count {
        let mut segs = [Seg { w: std::ptr::null(), kp: 0, at: 0, pstride: 0 }; MAX_TERMS];
        for (seg, part) in segs.iter_mut().zip(passes.parts(pass)) {
            let p = pairs[part.term];
            *seg = Seg { w: p.data.as_ptr().add(part.j0 * pw), kp: part.j1 - part.j0, at: part.at, pstride: p.kp * pw };
        }
        let segs = &segs[..passes.n[pass]];
        // the first pass starts from the bias (or acc), the others from acc; the gate split
        // is the last pass's
        let bias = bias.filter(|_| pass == 0);
        let gates = gates.filter(|_| pass + 1 == passes.count);
        let z = copy.add(pass * ns * LD);
        if pw == 16 {
            panels_as::<O, 1>(bias, segs, k, z, ns, ap, up, gates, panels.clone());
        } else {
            panels_as::<O, 2>(bias, segs, k, z, ns, ap, up, gates, panels.clone());
        }
    }
    true
}

/// One pass's tiles over `panels` with N vectors per tile (pw = 16·N): `segs` at panel 0
/// of their terms, z at the pass's rows.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn panels_as<O: Ops<C = f32, V = __m512>, const N: usize>(bias: Option<&[f32]>, segs: &[Seg], k: usize, z: *const u32, ns: usize, ap: *mut f32, up: usize, gates: Option<GateStore<f32>>, panels: Range<usize>) {
    let pw = 16 * N;
    let mut at_q = [Seg { w: std::ptr::null(), kp: 0, at: 0, pstride: 0 }; MAX_TERMS];
    for q in panels {
        for (dst, seg) in at_q.iter_mut().zip(segs) {
            *dst = Seg { w: seg.w.add(q * seg.pstride), ..*seg };
        }
        let segs = &at_q[..segs.len()];
        let init = bias.map_or(std::ptr::null(), |b| b.as_ptr().add(q * pw));
        let dest = [dests::<f32, N>(ap, pw, up, 16, ns, gates, q, 0)];
        let mut s0 = 0;
        while s0 < ns {
            let (m, zs, a) = ((ns - s0).min(ROWS), z.add(s0 * LD), ap.add(s0 * up + q * pw).cast_const());
            match m {
                12 => tile::<O, 12, N>(segs, zs, s0, init, a, up, &dest, k),
                11 => tile::<O, 11, N>(segs, zs, s0, init, a, up, &dest, k),
                10 => tile::<O, 10, N>(segs, zs, s0, init, a, up, &dest, k),
                9 => tile::<O, 9, N>(segs, zs, s0, init, a, up, &dest, k),
                8 => tile::<O, 8, N>(segs, zs, s0, init, a, up, &dest, k),
                7 => tile::<O, 7, N>(segs, zs, s0, init, a, up, &dest, k),
                6 => tile::<O, 6, N>(segs, zs, s0, init, a, up, &dest, k),
                5 => tile::<O, 5, N>(segs, zs, s0, init, a, up, &dest, k),
                4 => tile::<O, 4, N>(segs, zs, s0, init, a, up, &dest, k),
                3 => tile::<O, 3, N>(segs, zs, s0, init, a, up, &dest, k),
                2 => tile::<O, 2, N>(segs, zs, s0, init, a, up, &dest, k),
                _ => tile::<O, 1, N>(segs, zs, s0, init, a, up, &dest, k),
            }
            s0 += m;
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Calls this tile ran on this thread (tests check that it ran, or did not).
    pub(super) static RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Set by `without_pairs`.
    static OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this tile may run: the CPU has AVX512-BF16 (under `RNNSIM_ISA`), and a test has
/// not turned it off on this thread (`without_pairs`).
pub(super) fn available() -> bool {
    #[cfg(test)]
    if OFF.get() {
        return false;
    }
    super::AVX512_TILES_COMPILED && crate::sim::cpu::avx512_bf16()
}

/// Runs `f` with f32's tiles in place of this one on this thread (tests compare the two).
#[cfg(test)]
pub(super) fn without_pairs<R>(f: impl FnOnce() -> R) -> R {
    OFF.set(true);
    let r = f();
    OFF.set(false);
    r
}
