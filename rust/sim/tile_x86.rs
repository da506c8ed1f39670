//! The tile and driver of `tile_kernel`'s x86-64 tiles, generic over the lane type
//! (`Ops`: the register type and rounded operations of a lane format; `tile_avx512` on
//! 512-bit vectors, `tile_avx2` on 256-bit ones, `tile_f16` in native binary16): the tile
//! (`Ops::ROWS` sequences × N vectors of units, accumulators in registers, k ascending
//! over the segments of the terms) and its driver (passes of KC values of k, then panels,
//! then stripes of N vectors when a panel is wider, then groups of `Ops::ROWS` sequences;
//! over many units each pass's z rows are first copied at a compile-time stride,
//! `COPY_MIN_UNITS`), and [`affine`], which picks the lane type for the CPU.

use super::{GateSplit, Packed, Term, KC, L2_BUDGET, MAX_TERMS, MR};
use crate::sim::lanes::{LaneFormat, Rounding};
use crate::sim::same_type;
use crate::sim::tile_rows::{padded_stride, pass_copy, unaliased, Scratch};
use std::arch::x86_64::*;
use std::ops::Range;

/// One SIMD register of lanes and the two rounded operations.
pub(super) trait Ops {
    type C: bytemuck::Pod;
    type V: Copy;
    const L: usize;
    /// Sequences per tile: as many as keep a tile's accumulators, its weight vectors and
    /// the broadcast in the vector registers.
    const ROWS: usize = MR;
    /// Panels side by side in the tiles of a two-sequence block (`WIDE_ROWS`; a block of
    /// one sequence runs `WIDE_PANELS`).
    const WIDE2: usize = WIDE_PANELS;
    unsafe fn load(p: *const Self::C) -> Self::V;
    unsafe fn store(p: *mut Self::C, v: Self::V);
    unsafe fn splat(p: *const Self::C) -> Self::V;
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// A gate's pre-activation addend + sum, the tiles' last step into a gate split
    /// (`tile_kernel::affine_gates`): the format's rounded addition, or (`F32Sums`) a half
    /// format's R(R(addend) + R(sum)) on f32 sums.
    #[inline(always)]
    unsafe fn add_gate(addend: Self::V, sum: Self::V) -> Self::V {
        Self::add(addend, sum)
    }
    /// Whether the tiles store a gate's sums first, then make each `add_gate` from memory
    /// (the sums just stored, in L1): for an `add_gate` too long for LLVM to unroll over the
    /// tile's accumulators, which then left them in a stack array stored on every k
    /// (measured: a bf16 LSTM with f32 sums at hidden 16, 1 thread, 16.0 → 11.8 M
    /// token-steps/s).
    const GATE_FROM_MEMORY: bool = false;
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
    /// Whether the f32/f64 tiles broadcast z[s][k] into a register once per sequence and k
    /// (`vbroadcastss`/`sd`) for their N vectors (`fma_reg`; unfused, `mul`) instead of
    /// embedding the broadcast in each FMA or multiply (`fma_splat`, `mul_splat`): see
    /// `tile_avx512::register_broadcast`.
    const REG_BROADCAST: bool = false;
    /// Whether a full tile (`ROWS` sequences) writes out each chunk's `PF_CHUNK` k steps
    /// (`tile`, `Shape::WRITTEN_OUT`) rather than leave LLVM a loop to unroll: AVX2's f32
    /// and f64, whose steps are one or two instructions per accumulator. LLVM unrolled
    /// their fused chunks and left the unfused ones a rolled counter loop (session 57,
    /// `benches/HISTORY.md`); the half formats' longer steps keep the loop, and so do the
    /// AVX-512 tiles (written out on Zen 5, session 66: −7% on the LSTM at hidden 1024,
    /// +1.7% on the SimpleRNN, and twice the crate's build time).
    const WRITE_OUT_CHUNKS: bool = false;
    /// The row stride of a pass's copy of z (`tile_rows::pass_copy`): KC values padded to
    /// an odd number of cache lines.
    const PASS_LD: usize = padded_stride(KC, std::mem::size_of::<Self::C>());
    /// acc + w·z (z a register), rounded once.
    #[inline(always)]
    unsafe fn fma_reg(_acc: Self::V, _w: Self::V, _z: Self::V) -> Self::V {
        unreachable!("only the Ops with REG_BROADCAST = true take a register z")
    }
}

/// A term of the tiles: (packed Wᵀ, z rows, z row stride).
pub(super) type TermRef<'a, C> = (&'a Packed<C>, &'a [C], usize);
/// The terms of one affine map.
pub(super) type Terms<'a, C> = [TermRef<'a, C>];

/// One term's share of a pass over the tiles: its panel for the current units, its z
/// rows (row 0 of the block, z[0][0] at `z`, rows `ldz` apart) and the k range of the pass.
/// From a pass's copy (`Pass::copy_rows`) `z` is instead the copy's value for k0 in row 0,
/// and the rows are `Ops::PASS_LD` apart (`ldz` is not read).
#[derive(Clone, Copy)]
pub(super) struct Seg<C> {
    panel: *const C,
    /// values from one panel of the term to the next (k·pw)
    pstride: usize,
    z: *const C,
    ldz: usize,
    k0: usize,
    k1: usize,
}

impl<C> Seg<C> {
    /// The k ranges of the tile's prefetch steps (`Prefetch::tick` once per range).
    #[inline(always)]
    fn chunks(&self) -> impl ExactSizeIterator<Item = std::ops::Range<usize>> {
        let k1 = self.k1;
        (self.k0..k1).step_by(PF_CHUNK).map(move |c0| c0..(c0 + PF_CHUNK).min(k1))
    }
}

/// Where a tile stores its vector of units r: sequence s's values at `ptr` + s·ld, after
/// adding them to the row at `add` + s·ld_add in front (add + acc, rounded) unless `add`
/// is null. Rows of `acc` by default; the gate split of `tile_kernel::affine_gates` on the
/// last pass.
#[derive(Clone, Copy)]
pub(super) struct Dest<C> {
    ptr: *mut C,
    ld: usize,
    add: *const C,
    ld_add: usize,
}

/// The destinations of the N vectors of a tile at unit `off` of panel q (`l` lanes per
/// vector): the rows of `ap` (stride `up`), or with `gates` (the last pass of a gate split)
/// the region of each unit's gate block, after its addend.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn dests<C: Copy, const N: usize>(ap: *mut C, pw: usize, up: usize, l: usize, ns: usize, gates: Option<GateStore<C>>, q: usize, off: usize) -> [Dest<C>; N] {
    // a plain loop, not `std::array::from_fn`: a build of session 53 compiled that closure
    // out of line (`core::array::try_from_fn`, 12% of an f64 LSTM at batch 1, hidden 32)
    let mut d = [Dest { ptr: ap, ld: up, add: std::ptr::null(), ld_add: 0 }; N];
    for (r, dest) in d.iter_mut().enumerate() {
        let i0 = q * pw + off + r * l;
        let row = Dest { ptr: ap.add(i0), ld: up, add: std::ptr::null(), ld_add: 0 };
        *dest = match gates {
            Some(g) if i0 < g.units => match g.region[i0 / g.hsz] {
                Some(reg) => Dest { ptr: g.pre.add(reg * ns * g.hsz + i0 % g.hsz), ld: g.hsz, add: g.addend.add(i0), ld_add: g.addend_ld },
                None => row,
            },
            _ => row,
        };
    }
    d
}

/// One tile: `M` sequences (from `s0`) × `P` panels side by side (from each segment's
/// `panel`, `pstride` apart) × `N` vectors each (from unit `off` of each panel: the stripe),
/// the accumulators starting from the row
/// `init` (every sequence), or from `acc` when `init` is null, then the products of every
/// segment in order (k ascending), fused when `FUSED`; stored to `dest`. With `PF`
/// (streamed weights) the tile fetches its share `pf` of the next slice once per chunk of k;
/// without, that bookkeeping is compiled out (measured in L2, `tile_rates`: 0–4% at k 16–256
/// with 64–1024 units). With `COPIED` the segments' z is a pass's copy (`Pass::copy_rows`),
/// rows `Ops::PASS_LD` apart: each broadcast then reads one pointer at a displacement fixed
/// at compile time, where 12 rows at a run-time stride took ~14 integer operations per k
/// beside the 24 FMAs (`tile_rates`, f32: k 1152 × 4096 units 147 → 158 G flop/s, 320 ×
/// 1024 165 → 174; f64 70 → 75, 76 → 79). P > 1 gives a
/// tile of one or two sequences P·N independent chains of operations (one panel's N would
/// leave the FMA units waiting on each other's latency).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn tile<O: Ops, const M: usize, const N: usize, const P: usize, const FUSED: bool, const PF: bool, const COPIED: bool>(segs: &[Seg<O::C>], pw: usize, off: usize, s0: usize, init: *const O::C, acc: *mut O::C, lda: usize, dest: &[[Dest<O::C>; N]; P], mut pf: Prefetch) {
    let mut a: [[[O::V; N]; P]; M] = [[[O::splat(acc); N]; P]; M];
    let unit = |p: usize, r: usize| p * pw + off + r * O::L;
    if init.is_null() {
        for (s, row) in a.iter_mut().enumerate() {
            for (p, vs) in row.iter_mut().enumerate() {
                for (r, v) in vs.iter_mut().enumerate() {
                    *v = O::load(acc.add(s * lda + unit(p, r)));
                }
            }
        }
    } else {
        // the bias row, loaded once for the M sequences
        let mut b: [[O::V; N]; P] = [[O::splat(init); N]; P];
        for (p, vs) in b.iter_mut().enumerate() {
            for (r, v) in vs.iter_mut().enumerate() {
                *v = O::load(init.add(unit(p, r)));
            }
        }
        a = [b; M];
    }
    for seg in segs {
        // from a pass's copy (`COPIED`) the rows are O::PASS_LD apart, a constant: each
        // broadcast reads z + k at a displacement, and the copy starts at the segment's k0
        let (panel, ldz) = (seg.panel, if COPIED { O::PASS_LD } else { seg.ldz });
        let z = seg.z.add(s0 * ldz);
        let at = if COPIED { seg.k0 } else { 0 };
        // one k step is `k_step`, a function: session 23 made it a closure, which the
        // prefetching loop called through `&mut` and rustc compiled out of line without the
        // caller's target features (its intrinsics function calls: the AVX2 tiles of streamed
        // weights ran 70× slower, found in session 24)
        if PF || COPIED {
            // k in chunks (`Seg::chunks`), the prefetch bookkeeping once per chunk (out of
            // the register-bound inner loop: a plain loop over k with the bookkeeping cost
            // 10–15% of a tile in L1 on a 2026 Xeon, AVX-512, 12 × 2 tiles). A whole
            // chunk's PF_CHUNK steps are one unrolled body (a constant trip count), not a
            // loop that exits every PF_CHUNK values of k; the tiles from a pass's copy run
            // the same unrolled chunks without prefetching. In a C model of the AVX2 driver
            // at (64, ·, 1024, 128), median of a run's G flop/s as % of the FMA peak, gcc
            // -O2 / -O3: rolled chunks with session 55's tick 56 / 74–80%, unrolled chunks
            // with a stepped prefetch 74 / 82–88% (`benches/HISTORY.md`, session 56). The
            // tiles that read z in place (blocks of few units, `drive_terms`) keep the
            // plain loop.
            // (the weights of k at a pointer stepped by pw: k_step's k·pw for each step of
            // the unrolled body was a multiplication per step)
            let mut k = seg.k0;
            while k + PF_CHUNK <= seg.k1 {
                if PF {
                    pf.tick();
                }
                let mut wk = panel.add(k * pw);
                macro_rules! steps {
                    ($($j:expr),*) => {$(
                        k_step::<O, M, N, P, FUSED>(&mut a, wk, seg.pstride, pw, off, z.add(k + $j - at), ldz, 0);
                        wk = wk.add(pw);
                        step_fence();
                    )*};
                }
                if Shape::<O, M>::WRITTEN_OUT {
                    const _: () = assert!(PF_CHUNK == 8);
                    steps!(0, 1, 2, 3, 4, 5, 6, 7);
                } else {
                    for j in 0..PF_CHUNK {
                        steps!(j);
                    }
                }
                k += PF_CHUNK;
            }
            if k < seg.k1 {
                if PF {
                    pf.tick();
                }
                for k in k..seg.k1 {
                    k_step::<O, M, N, P, FUSED>(&mut a, panel, seg.pstride, pw, off, z.add(k - at), ldz, k);
                }
            }
        } else {
            for k in seg.k0..seg.k1 {
                k_step::<O, M, N, P, FUSED>(&mut a, panel, seg.pstride, pw, off, z.add(k - at), ldz, k);
            }
        }
    }
    // the terms' whole k (pstride = k·pw), whatever this pass covers of it
    store_tile::<O, M, N, P>(&a, s0, dest, segs.iter().map(|g| g.pstride).sum::<usize>() / pw);
}

/// A tile's accumulators stored to `dest`: vector by vector when the terms' whole k is at
/// most `STORE_BY_VECTOR_K`, else row by row.
#[inline(always)]
pub(super) unsafe fn store_tile<O: Ops, const M: usize, const N: usize, const P: usize>(a: &[[[O::V; N]; P]; M], s0: usize, dest: &[[Dest<O::C>; N]; P], k: usize) {
    if k <= STORE_BY_VECTOR_K {
        store_by_vector::<O, M, N, P>(a, s0, dest);
    } else {
        store_by_row::<O, M, N, P>(a, s0, dest);
    }
}

/// Tiles of terms with at most this many values of k in all store vector by vector
/// (`store_by_vector`), longer ones row by row (`store_by_row`). Measured (`tile_rates`,
/// Zen 4, alternating binaries, best of 4–6, f32 fused): by vector, k 4 / 8 / 16 / 64 at
/// 64–256 units 61 → 81, 79 → 91, 96 → 109, 110 → 114 G flop/s against the per-store
/// pointer arithmetic before (by row: 70, 84, 100, 111); at k 320 and 1152 by row 107 /
/// 109 as before, by vector 104 / 107 (whatever the row stride: not a cache-set effect).
const STORE_BY_VECTOR_K: usize = 128;

/// A tile's accumulators stored vector by vector, each down the M sequences: one
/// destination pointer stepped by `ld`, the addend test once per vector.
#[inline(always)]
unsafe fn store_by_vector<O: Ops, const M: usize, const N: usize, const P: usize>(a: &[[[O::V; N]; P]; M], s0: usize, dest: &[[Dest<O::C>; N]; P]) {
    for (p, ds) in dest.iter().enumerate() {
        for (r, d) in ds.iter().enumerate() {
            let mut out = d.ptr.add(s0 * d.ld);
            if d.add.is_null() || O::GATE_FROM_MEMORY {
                for row in a.iter() {
                    O::store(out, row[p][r]);
                    out = out.add(d.ld);
                }
            } else {
                let mut add = d.add.add(s0 * d.ld_add);
                for row in a.iter() {
                    O::store(out, O::add_gate(O::load(add), row[p][r]));
                    (out, add) = (out.add(d.ld), add.add(d.ld_add));
                }
            }
        }
    }
    gates_from_memory::<O, M, N, P>(s0, dest);
}

/// A tile's accumulators stored sequence by sequence, through pointers stepped from row
/// to row.
#[inline(always)]
unsafe fn store_by_row<O: Ops, const M: usize, const N: usize, const P: usize>(a: &[[[O::V; N]; P]; M], s0: usize, dest: &[[Dest<O::C>; N]; P]) {
    let mut outs: [[*mut O::C; N]; P] = [[std::ptr::null_mut(); N]; P];
    let mut adds: [[*const O::C; N]; P] = [[std::ptr::null(); N]; P];
    for ((os, as_), ds) in outs.iter_mut().zip(adds.iter_mut()).zip(dest) {
        for ((o, a), d) in os.iter_mut().zip(as_.iter_mut()).zip(ds) {
            *o = d.ptr.add(s0 * d.ld);
            *a = if d.add.is_null() { d.add } else { d.add.add(s0 * d.ld_add) };
        }
    }
    for row in a.iter() {
        for (((vs, ds), os), as_) in row.iter().zip(dest).zip(outs.iter_mut()).zip(adds.iter_mut()) {
            for (((&v, d), o), add) in vs.iter().zip(ds).zip(os.iter_mut()).zip(as_.iter_mut()) {
                if add.is_null() || O::GATE_FROM_MEMORY {
                    O::store(*o, v);
                } else {
                    O::store(*o, O::add_gate(O::load(*add), v));
                    *add = add.add(d.ld_add);
                }
                *o = o.add(d.ld);
            }
        }
    }
    gates_from_memory::<O, M, N, P>(s0, dest);
}

/// With `Ops::GATE_FROM_MEMORY`, a tile's gate additions (`Ops::add_gate`) from the sums
/// it has just stored, once all its accumulators are stored (none is live here).
#[inline(always)]
unsafe fn gates_from_memory<O: Ops, const M: usize, const N: usize, const P: usize>(s0: usize, dest: &[[Dest<O::C>; N]; P]) {
    if !O::GATE_FROM_MEMORY {
        return;
    }
    for ds in dest {
        for d in ds.iter().filter(|d| !d.add.is_null()) {
            let (mut out, mut add) = (d.ptr.add(s0 * d.ld), d.add.add(s0 * d.ld_add));
            for _ in 0..M {
                O::store(out, O::add_gate(O::load(add), O::load(out)));
                (out, add) = (out.add(d.ld), add.add(d.ld_add));
            }
        }
    }
}

/// Keeps the loads of one k step of an unrolled chunk (`tile`) after the previous step's:
/// LLVM otherwise hoisted the next step's weight loads and broadcasts into the previous
/// one, which needs more vector registers than AVX2's 16 beside a 6 × 2 tile's 12
/// accumulators, and spilled an accumulator to the stack at every step (a store and load
/// in its FMA chain: the LSTM at (256, 256, 256, 64) ran at half its rate, session 56).
/// An empty `asm!` without `nomem` may touch memory, so no load moves across it; it emits
/// nothing, and the accumulators (never in memory) stay in registers.
#[inline(always)]
fn step_fence() {
    // SAFETY: an empty instruction string: nothing runs.
    unsafe { std::arch::asm!("", options(nostack, preserves_flags)) }
}

/// One k step of `tile`: the weight vectors of k (P panels × N vectors at `off`), then every
/// sequence's products into its accumulators (sequence s's z at zk + s·ldz).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn k_step<O: Ops, const M: usize, const N: usize, const P: usize, const FUSED: bool>(a: &mut [[[O::V; N]; P]; M], panel: *const O::C, pstride: usize, pw: usize, off: usize, zk: *const O::C, ldz: usize, k: usize) {
    let mut w: [[O::V; N]; P] = [[O::splat(panel); N]; P];
    for (p, wv) in w.iter_mut().enumerate() {
        let wp = panel.add(p * pstride + k * pw + off);
        for (r, v) in wv.iter_mut().enumerate() {
            *v = O::load(wp.add(r * O::L));
        }
    }
    for (s, row) in a.iter_mut().enumerate() {
        let zp = zk.add(s * ldz);
        for (xs, wv) in row.iter_mut().zip(w.iter()) {
            if FUSED && O::REG_BROADCAST {
                let zb = O::splat(zp);
                for (x, &wv) in xs.iter_mut().zip(wv.iter()) {
                    *x = O::fma_reg(*x, wv, zb);
                }
            } else if FUSED {
                for (x, &wv) in xs.iter_mut().zip(wv.iter()) {
                    *x = O::fma_splat(*x, wv, zp);
                }
            } else if O::SPLAT_IN_MUL && !O::REG_BROADCAST {
                for (x, &wv) in xs.iter_mut().zip(wv.iter()) {
                    *x = O::add(*x, O::mul_splat(wv, zp));
                }
            } else {
                let zb = O::splat(zp);
                for (x, &wv) in xs.iter_mut().zip(wv.iter()) {
                    *x = O::add(*x, O::mul(wv, zb));
                }
            }
        }
    }
}

/// The tile of `m` sequences (1 ≤ m ≤ `O::ROWS` ≤ 12), prefetching its share `pf` when
/// `PF`. Only the tiles of at most `O::ROWS` sequences are instantiated (`Shape::FITS`): the AVX2
/// formats hold 6 or 4, and their tiles of 7–12 sequences were dead code that was
/// instantiated and optimized all the same (a run-time `match` on m).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn group<O: Ops, const N: usize, const FUSED: bool, const PF: bool, const COPIED: bool>(m: usize, segs: &[Seg<O::C>], pw: usize, off: usize, s0: usize, init: *const O::C, a: *mut O::C, up: usize, dest: &[[Dest<O::C>; N]; 1], pf: Prefetch) {
    debug_assert!((1..=O::ROWS).contains(&m));
    macro_rules! tiles {
        ($($m:literal)*) => {$(
            if Shape::<O, $m>::FITS && m == $m {
                return tile::<O, $m, N, 1, FUSED, PF, COPIED>(segs, pw, off, s0, init, a, up, dest, pf);
            }
        )*};
    }
    tiles!(12 11 10 9 8 7 6 5 4 3 2);
    tile::<O, 1, N, 1, FUSED, PF, COPIED>(segs, pw, off, s0, init, a, up, dest, pf)
}

/// Compile-time facts of a tile of M sequences in format O, as associated consts: a branch
/// on one is a `switchInt` on a constant in the instantiated MIR, whose dead side rustc's
/// codegen skips (rust-lang/rust#121421; not checked in this crate's IR), where
/// `M <= O::ROWS` written at the branch would be a comparison left to LLVM.
struct Shape<O, const M: usize>(std::marker::PhantomData<O>);
impl<O: Ops, const M: usize> Shape<O, M> {
    /// The format's tiles hold M sequences (M ≤ `Ops::ROWS`).
    const FITS: bool = M <= O::ROWS;
    /// The tile's chunks are written out (`Ops::WRITE_OUT_CHUNKS`, full tiles only).
    const WRITTEN_OUT: bool = O::WRITE_OUT_CHUNKS && M == O::ROWS;
}

/// The gate split of the last pass (`tile_kernel::affine_gates`): for units in a gate
/// block with a region, pre[region·ns·hsz + s·hsz + u] = addend[s·addend_ld + unit] + sum.
#[derive(Clone, Copy)]
pub(super) struct GateStore<C> {
    pub addend: *const C,
    pub addend_ld: usize,
    pub pre: *mut C,
    pub hsz: usize,
    pub units: usize,
    pub region: [Option<usize>; 5],
}

/// The fewest units (of the panels of a call) for which the tiles of `Ops::ROWS` sequences
/// run from a pass's copy of z (`tile_rows::pass_copy`), as a block whose weights are
/// streamed always does. The copy costs about a tenth of a cycle per value of z, which the
/// tiles repay when each value meets many units. Session 41, runs alternating with and
/// without the copy, 1 thread, f32+fma, best of 3, token-steps/s: LSTM (64, 100, 1024, 128)
/// 14.6 → 16.0 k, GRU 19.2 → 20.9 k, LSTM (256, 256, 256, 64) 187 → 195 k, LSTM (4096, 256,
/// 64, 8) (256 units) 1.85–2.01 → 1.92–1.96 M; and where the copy does not pay, SimpleRNN
/// (4096, 256, 64, 8) (64 units) 8.1–8.5 → 7.3–7.7 M, LSTM (1024, 1000, 16, 4) (64 units)
/// 11.4–11.6 → 10.6–10.7 M.
const COPY_MIN_UNITS: usize = 256;

/// Values of k per prefetch step of a tile.
const PF_CHUNK: usize = 8;
/// Fewest sequences in a block for the tiles to prefetch streamed weights.
const PF_MIN_ROWS: usize = 4;
/// Blocks of at most this many sequences run tiles of `WIDE_PANELS` panels (never
/// prefetching: fewer than PF_MIN_ROWS).
const WIDE_ROWS: usize = 2;
const WIDE_PANELS: usize = 4;
// (also: a streamed block is never a wide one, and is always copied, `drive_terms`)
const _: () = assert!(WIDE_ROWS < PF_MIN_ROWS);

/// The segments of one pass over global k in start..end (term i covers base..base + k),
/// and the packed data (panel 0) of each segment's term. Filled in place (a
/// returned copy costs a store-forwarding stall per call, which batch 1 pays every tick).
struct Pass<C> {
    segs: [Seg<C>; MAX_TERMS],
    data: [*const C; MAX_TERMS],
    /// the term of each segment
    term: [usize; MAX_TERMS],
    n: usize,
    /// prefetch steps of a tile over the pass (`Seg::chunks` of every segment)
    ticks: usize,
}

impl<C: Copy> Pass<C> {
    fn new(dummy: *const C) -> Self {
        Pass { segs: [Seg { panel: dummy, pstride: 0, z: dummy, ldz: 0, k0: 0, k1: 0 }; MAX_TERMS], data: [dummy; MAX_TERMS], term: [0; MAX_TERMS], n: 0, ticks: 0 }
    }

    #[inline(always)]
    fn fill(&mut self, terms: &Terms<'_, C>, start: usize, end: usize) {
        self.n = 0;
        let mut base = 0;
        for (i, &(p, z, ldz)) in terms.iter().enumerate() {
            let (k0, k1) = (start.max(base), end.min(base + p.k));
            if k0 < k1 {
                self.segs[self.n] = Seg { panel: p.data.as_ptr(), pstride: p.k * p.pw, z: z.as_ptr(), ldz, k0: k0 - base, k1: k1 - base };
                self.data[self.n] = p.data.as_ptr();
                self.term[self.n] = i;
                self.n += 1;
            }
            base += p.k;
        }
        self.ticks = self.segs[..self.n].iter().map(|s| s.chunks().len()).sum();
    }

    /// The segments' z rows (of `ns` sequences) copied into `scratch` (`tile_rows::pass_copy`,
    /// rows `ld` apart), and each segment pointed at its part of row 0.
    fn copy_rows(&mut self, terms: &Terms<'_, C>, ns: usize, ld: usize, scratch: &mut Scratch) where C: bytemuck::Pod {
        let parts: [(&[C], usize, Range<usize>); MAX_TERMS] = std::array::from_fn(|i| match self.segs[..self.n].get(i) {
            Some(seg) => (terms[self.term[i]].1, seg.ldz, seg.k0..seg.k1),
            None => (&[][..], 0, 0..0),
        });
        let copy = pass_copy(&parts[..self.n], ns, ld, scratch).as_ptr();
        let mut at = 0;
        for seg in &mut self.segs[..self.n] {
            // SAFETY: at ≤ the pass's k ≤ ld, inside the copy's first row
            seg.z = unsafe { copy.add(at) };
            at += seg.k1 - seg.k0;
        }
    }
}

/// The cache lines of the weights a tile's next panels read in a pass (one contiguous range
/// per panel and segment: the one or two panels the next tiles span).
#[derive(Clone, Copy, Default)]
struct NextSlice {
    /// (first line's address, lines) per panel and segment
    ranges: [(usize, usize); 2 * MAX_TERMS],
    lines: usize,
}

impl NextSlice {
    /// The slices of panels q..q + count (count ≤ 2) of the segments `segs` (whose terms'
    /// packed data are `data`).
    fn of<C>(segs: &[Seg<C>], data: &[*const C], q: usize, count: usize, pw: usize) -> Self {
        debug_assert!(count <= 2 && segs.len() <= MAX_TERMS);
        let mut next = Self::default();
        let size = std::mem::size_of::<C>();
        let mut n = 0;
        for p in q..q + count {
            for (seg, &data) in segs.iter().zip(data) {
                let lo = data as usize + (p * seg.pstride + seg.k0 * pw) * size;
                let hi = lo + (seg.k1 - seg.k0) * pw * size;
                let first = lo & !63;
                let lines = (hi - first).div_ceil(64);
                next.ranges[n] = (first, lines);
                next.lines += lines;
                n += 1;
            }
        }
        next
    }

    /// Tile `g` of `groups`' share of the lines, spread over its `iters` prefetch steps.
    #[inline(always)]
    fn share(&self, g: usize, groups: usize, iters: usize) -> Prefetch {
        if self.lines == 0 {
            // nothing to fetch (the last panel of a streamed map): no divisions
            return Prefetch::default();
        }
        let (i, e) = (g * self.lines / groups, (g + 1) * self.lines / groups);
        let n = e - i;
        let per = n.div_ceil(iters.max(1)).max(1);
        let events = n.div_ceil(per).max(1);
        // one event (of `per` lines) every `every` values of k, a power of two
        let every = (iters.max(1) / events).max(1);
        let every = 1usize << (usize::BITS - 1 - every.leading_zeros());
        let (range, addr, left) = self.cursor(i);
        Prefetch { slice: *self, next: i, end: e, per, mask: every - 1, count: 0, range, addr, left }
    }

    /// Line i's place: (its range, its address, the lines of that range from it on); past
    /// the last line, the end of the last range (no lines left).
    fn cursor(&self, mut i: usize) -> (usize, usize, usize) {
        for (r, &(first, n)) in self.ranges.iter().enumerate() {
            if i < n {
                return (r, first + 64 * i, n - i);
            }
            i -= n;
        }
        let (first, n) = self.ranges[self.ranges.len() - 1];
        (self.ranges.len() - 1, first + 64 * n, 0)
    }

    /// The address of line i (counted over the ranges in order; i < `lines`): what a tile's
    /// cursor steps through (`Prefetch::tick_with`).
    #[cfg(test)]
    fn line(&self, mut i: usize) -> usize {
        for &(first, n) in &self.ranges[..self.ranges.len() - 1] {
            if i < n {
                return first + 64 * i;
            }
            i -= n;
        }
        self.ranges[self.ranges.len() - 1].0 + 64 * i
    }
}

/// A tile's share of a `NextSlice`: lines next..end, `per` of them every mask + 1 ticks
/// (the default: none, for the tiles that do not prefetch).
#[derive(Clone, Copy, Default)]
pub(super) struct Prefetch {
    slice: NextSlice,
    next: usize,
    end: usize,
    per: usize,
    mask: usize,
    count: usize,
    /// line `next`'s range, address, and the lines of that range from it on (`NextSlice::cursor`)
    range: usize,
    addr: usize,
    left: usize,
}

impl Prefetch {
    /// Called once per chunk of k: prefetches the lines due into L2.
    #[inline(always)]
    unsafe fn tick(&mut self) {
        self.tick_with(|line| _mm_prefetch::<_MM_HINT_T1>(line as *const i8));
    }

    /// The addresses of the lines due at this tick, in order, given to `fetch`: a cursor
    /// stepped one line at a time, moving to the next range where one ends
    /// (`NextSlice::line(i)` for each line, a walk over the ranges, cost the tiles of
    /// streamed weights their rate: session 56). No call: a call inside the tiles' loop
    /// would clobber the accumulators' registers (every vector register is caller-saved).
    #[inline(always)]
    fn tick_with(&mut self, mut fetch: impl FnMut(usize)) {
        for _ in self.due() {
            while self.left == 0 && self.range + 1 < self.slice.ranges.len() {
                self.range += 1;
                (self.addr, self.left) = self.slice.ranges[self.range];
            }
            if self.left == 0 {
                return;
            }
            fetch(self.addr);
            (self.addr, self.left) = (self.addr + 64, self.left - 1);
        }
    }

    /// The lines due at this tick (`per` of them every mask + 1 ticks, until `end`).
    #[inline(always)]
    fn due(&mut self) -> std::ops::Range<usize> {
        let from = self.next;
        if self.count & self.mask == 0 {
            self.next = (self.next + self.per).min(self.end);
        }
        self.count += 1;
        from..self.next
    }
}

/// Every tile of the block for `terms` (k concatenated in term order) over the panels
/// `panels` (units panels.start·pw..panels.end·pw of every row; the others untouched),
/// starting from `bias` (a row) or from `acc` (rows of stride `up`): k in passes of at
/// most KC values (a pass may span the end of one term and the start of the next), then
/// panels, then groups of `Ops::ROWS` sequences (a panel's pass is reused by every group while it
/// is in L1).
#[inline(always)]
pub(super) unsafe fn drive_terms<O: Ops, const N: usize, const FUSED: bool>(bias: Option<&[O::C]>, terms: &Terms<'_, O::C>, ns: usize, ap: *mut O::C, gates: Option<GateStore<O::C>>, panels: Range<usize>) {
    let (pw, up) = (terms[0].0.pw, terms[0].0.up);
    debug_assert_eq!(pw % (N * O::L), 0);
    debug_assert!(panels.end <= up / pw);
    // the packed weights of these panels are streamed from L3 when they exceed L2: the tiles
    // of each panel then fetch the next panel's slice into L2 as they run (`Prefetch`),
    // unless the block has fewer than PF_MIN_ROWS sequences (a tile of one to three rows is
    // bound by its weight loads, which the hardware prefetcher follows as a single stream:
    // measured 3–17% faster at batch 1–2 without, 3–5% slower at 4–8)
    let streamed = ns >= PF_MIN_ROWS && terms.iter().map(|t| t.0.bytes() / (up / pw) * panels.len()).sum::<usize>() > L2_BUDGET;
    let fetch_ahead = streamed && rows_fetched_ahead(ns * panels.len() * pw * std::mem::size_of::<O::C>(), crate::sim::cache_size::l2_budget());
    // the group tiles run from a pass's copy of z when the call covers many units, or the
    // weights are streamed (`COPY_MIN_UNITS`); else from z itself, or from a copy of the
    // terms whose row stride would put the tiles' current lines in a few L1 sets
    // (`tile_rows::unaliased`; same values, same bits either way)
    let copied = ns > WIDE_ROWS && (streamed || panels.len() * pw >= COPY_MIN_UNITS);
    // the streamed tiles read z from the copy (`group::<_, _, _, true, true>` below)
    debug_assert!(!streamed || copied);
    let (mut scratch, mut pass_scratch) = (Scratch::default(), Scratch::default());
    let copy = if copied { None } else { unaliased(terms, |p: &Packed<O::C>| p.k, ns, O::ROWS, &mut scratch) };
    let terms: &Terms<'_, O::C> = copy.as_deref().unwrap_or(terms);
    let total: usize = terms.iter().map(|t| t.0.k).sum();
    // tiles per panel: stripes of N vectors (the panel's width when N·L = pw), each run
    // by groups of O::ROWS sequences
    let (stripes, groups) = (pw / (N * O::L), ns.div_ceil(O::ROWS));
    let (mut pass, mut ahead) = (Pass::new(ap.cast_const()), Pass::new(ap.cast_const()));
    let mut start = 0;
    let mut first = true;
    while first || start < total {
        let end = (start + KC).min(total);
        // where the next pass ends (the one the streamed tiles fetch ahead for)
        let next_end = (end + KC).min(total);
        // the segments of this pass (term i covers the global k in base..base + k),
        // their panels set per panel q below
        pass.fill(terms, start, end);
        if copied && pass.n > 0 {
            pass.copy_rows(terms, ns, O::PASS_LD, &mut pass_scratch);
        }
        if streamed && end < total {
            ahead.fill(terms, end, next_end);
        }
        let (segs, data, nseg, ticks) = (&mut pass.segs, &pass.data, pass.n, pass.ticks);
        // the gate split's stores belong to the pass that ends at `total`
        let gates_ending = |end: usize| gates.filter(|_| end == total);
        let last_gates = gates_ending(end);
        let dest_of = |q: usize, off: usize| -> [Dest<O::C>; N] { dests::<O::C, N>(ap, pw, up, O::L, ns, last_gates, q, off) };
        // the destinations of P panels side by side (a plain loop, as `dests`)
        let wide_dests = |q: usize, off: usize| -> [[Dest<O::C>; N]; WIDE_PANELS] {
            let mut d = [dest_of(q, off); WIDE_PANELS];
            for (p, dp) in d.iter_mut().enumerate().skip(1) {
                *dp = dest_of(q + p, off);
            }
            d
        };
        let mut q = panels.start;
        while q < panels.end {
            for (seg, &data) in segs.iter_mut().zip(data).take(nseg) {
                seg.panel = data.add(q * seg.pstride);
            }
            let init = match bias {
                Some(b) if first => b.as_ptr().add(q * pw),
                _ => std::ptr::null(),
            };
            let (segs, aq) = (&segs[..nseg], ap.add(q * pw));
            let wide = if ns == 2 { O::WIDE2 } else { WIDE_PANELS };
            if ns <= WIDE_ROWS && q + wide <= panels.end {
                // one or two sequences: `wide` panels per tile (nothing is prefetched for
                // blocks this small: PF_MIN_ROWS)
                for st in 0..stripes {
                    let off = st * N * O::L;
                    let pf = Prefetch::default();
                    match (ns, wide) {
                        (2, 2) => tile::<O, 2, N, 2, FUSED, false, false>(segs, pw, off, 0, init, aq, up, &[dest_of(q, off), dest_of(q + 1, off)], pf),
                        (2, _) => tile::<O, 2, N, WIDE_PANELS, FUSED, false, false>(segs, pw, off, 0, init, aq, up, &wide_dests(q, off), pf),
                        _ => tile::<O, 1, N, WIDE_PANELS, FUSED, false, false>(segs, pw, off, 0, init, aq, up, &wide_dests(q, off), pf),
                    }
                }
                q += wide;
                continue;
            }
            // the slice the next panel (or the next pass's first) reads, fetched into L2
            // while this panel's tiles run
            let next = if !streamed {
                NextSlice::default()
            } else if q + 1 < panels.end {
                NextSlice::of(segs, &data[..nseg], q + 1, 1, pw)
            } else if end < total {
                NextSlice::of(&ahead.segs[..ahead.n], &ahead.data[..ahead.n], panels.start, 1, pw)
            } else {
                NextSlice::default()
            };
            for st in 0..stripes {
                let off = st * N * O::L;
                let dest = [dest_of(q, off)];
                let mut s0 = 0;
                while s0 < ns {
                    let a = aq.add(s0 * up);
                    let m = (ns - s0).min(O::ROWS);
                    if streamed {
                        let pf = next.share(st * groups + s0 / O::ROWS, stripes * groups, ticks);
                        // the rows the next tile loads and stores, fetched while this one runs
                        // (the next group of the same stripe has this tile's destinations)
                        if fetch_ahead {
                            if let Some((nq, noff, ns0)) = next_tile((q, off, s0 + m), ns, N * O::L, pw, panels.end) {
                                let next_dest = if (nq, noff) == (q, off) { dest[0] } else { dest_of(nq, noff) };
                                fetch_rows::<O, N>(ap, up, init.is_null(), &next_dest, nq * pw + noff, ns0, (ns - ns0).min(O::ROWS));
                            } else if end < total {
                                let gates = gates_ending(next_end);
                                fetch_rows::<O, N>(ap, up, true, &dests::<O::C, N>(ap, pw, up, O::L, ns, gates, panels.start, 0), panels.start * pw, 0, ns.min(O::ROWS));
                            }
                        }
                        group::<O, N, FUSED, true, true>(m, segs, pw, off, s0, init, a, up, &dest, pf)
                    } else if copied {
                        group::<O, N, FUSED, false, true>(m, segs, pw, off, s0, init, a, up, &dest, Prefetch::default())
                    } else {
                        group::<O, N, FUSED, false, false>(m, segs, pw, off, s0, init, a, up, &dest, Prefetch::default())
                    }
                    s0 += m;
                }
            }
            q += 1;
        }
        first = false;
        start = end;
    }
}


/// Whether a streamed block's tiles fetch the next tile's rows ahead ([`fetch_rows`]): when
/// its accumulators (`acc_bytes`) fill half the L2 budget or more, which the streamed
/// weights then push out between passes. Measured alternating builds, 1 thread (session 65
/// on Zen 3, 512 KiB of L2; session 66 on Zen 5, 1 MiB), at (64, ·, 1024, 128): with
/// 1–1.5 MiB of accumulators (LSTM f32, GRU f64) Zen 3 +13–28%, Zen 5 −2% to +5%; with
/// 256 KiB (SimpleRNN f32) Zen 3 +5%, Zen 5 −2% (not fetched there since: +3.5–5%
/// against the build that fetched); with 512 KiB on Zen 5 (SimpleRNN f64, fetched) −2%.
/// All with passes of 256 values of k: since session 67's 1,024 (`KC`) a hidden-1024
/// LSTM's recurrent map is one pass from the bias row, so only its gate split's rows and
/// addends are fetched there; the rule was not measured again.
fn rows_fetched_ahead(acc_bytes: usize, l2_budget: usize) -> bool {
    acc_bytes >= l2_budget / 2
}

/// The tile after the one that ends before sequence `s_end` at unit `off` of panel q, in
/// `drive_terms`' order (groups of sequences, then stripes of `width` units, then panels):
/// (panel, unit in the panel, first sequence), or None past the last panel.
#[inline(always)]
fn next_tile((q, off, s_end): (usize, usize, usize), ns: usize, width: usize, pw: usize, panels_end: usize) -> Option<(usize, usize, usize)> {
    let next = if s_end < ns {
        (q, off, s_end)
    } else if off + width < pw {
        (q, off + width, 0)
    } else {
        (q + 1, 0, 0)
    };
    (next.0 < panels_end).then_some(next)
}

/// Fetches into L1 the lines of the tile of `m` sequences from `s0` at unit `unit` of
/// `ap` (rows of stride `up`): its accumulators' rows when it starts from them (`loads`),
/// and where its destinations are not those rows (the gate split's last pass), their rows
/// and addends. A streamed block's rows are a pass's worth of tiles apart in time (the
/// LSTM's at hidden 1024, 64 sequences: 1 MiB of `acc`, more than Zen 3's L2), and
/// a tile waited on each of their first loads. Only where the accumulators fill half the
/// L2 or more: [`rows_fetched_ahead`].
#[inline(always)]
unsafe fn fetch_rows<O: Ops, const N: usize>(ap: *mut O::C, up: usize, loads: bool, dest: &[Dest<O::C>; N], unit: usize, s0: usize, m: usize) {
    rows_lines::<O::C, N>((ap, up, O::L), loads, dest, unit, s0..s0 + m, |line| _mm_prefetch::<_MM_HINT_T0>(line as *const i8));
}

/// The addresses of the cache lines [`fetch_rows`] fetches (vectors of `l` lanes), given
/// to `fetch` in order.
#[inline(always)]
unsafe fn rows_lines<C, const N: usize>((ap, up, l): (*mut C, usize, usize), loads: bool, dest: &[Dest<C>; N], unit: usize, rows: Range<usize>, mut fetch: impl FnMut(usize)) {
    let size = std::mem::size_of::<C>();
    let mut lines = |p: *const C, bytes: usize| {
        let mut line = p as usize & !63;
        while line < p as usize + bytes {
            fetch(line);
            line += 64;
        }
    };
    for s in rows {
        if loads {
            lines(ap.add(s * up + unit), N * l * size);
        }
        for (r, d) in dest.iter().enumerate() {
            if !(loads && std::ptr::eq(d.ptr, ap.add(unit + r * l))) {
                lines(d.ptr.add(s * d.ld), l * size);
            }
            if !d.add.is_null() {
                lines(d.add.add(s * d.ld_add), l * size);
            }
        }
    }
}

pub(super) fn cast<A: 'static, B: 'static>(p: &Packed<A>) -> &Packed<B> {
    assert_eq!(std::any::TypeId::of::<A>(), std::any::TypeId::of::<B>());
    // SAFETY: A and B are the same type (checked above).
    unsafe { &*(p as *const Packed<A>).cast::<Packed<B>>() }
}

pub(super) fn cast_terms<'a, 'b, A: 'static, B: 'static>(t: &'b [Term<'a, A>]) -> &'b [Term<'a, B>] {
    assert_eq!(std::any::TypeId::of::<A>(), std::any::TypeId::of::<B>());
    // SAFETY: A and B are the same type (checked above), so Term<A> is Term<B>.
    unsafe { std::slice::from_raw_parts(t.as_ptr().cast::<Term<'a, B>>(), t.len()) }
}

/// `tile_kernel::affine` (from `bias`) or `accumulate` (bias None: from acc) on the
/// AVX-512 tiles when the CPU has them, else on the AVX2 tiles (f32, f64; bf16 and f16 with
/// F16C, bf16's fused step only when its products are exact) (Some), else None (portable
/// loops); with `gates`,
/// `tile_kernel::affine_gates`, None (nothing done) when the tiles cannot split the gates.
/// Only the units of `panels` are computed (`tile_kernel::affine_panels`); the native f16
/// tile runs whole maps only, so a part of one runs on the f32-lane tile (same bits).
///
/// # Safety
/// `acc` holds `ns` rows of stride `up` (the terms' padded width), and nothing else
/// accesses the units of `panels` in those rows during the call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn affine<F: LaneFormat>(bias: Option<&[F::C]>, terms: &[Term<'_, F::C>], ns: usize, acc: *mut F::C, gates: Option<GateSplit<'_, F::C>>, fma: bool, panels: Range<usize>) -> Option<()> {
    // a half format with f32 sums comes here for its gate split only (its other maps run as
    // `F::Sum`, f32): f32's AVX-512 tiles whose gate additions round to F (`F32<0, B, G>`)
    let sums = super::f32_sums::<F>();
    debug_assert!(!sums || gates.is_some(), "f32 sums reach the tiles as f32 but for the gate split");
    let all = terms.first().is_some_and(|t| panels == (0..t.w.up / t.w.pw));
    let native_f16 = F::ROUNDING == Rounding::F16 && !sums && all && super::tile_f16::available();
    if gates.as_ref().is_some_and(|g| native_f16 || g.hsz % super::lanes_of::<F::C>() != 0) {
        return None;
    }
    if native_f16 {
        // SAFETY: the whole of `acc` (all panels) is the caller's for the call.
        let acc = std::slice::from_raw_parts_mut(acc.cast::<f32>(), ns * terms[0].w.up);
        super::tile_f16::affine(bias.map(same_type::slice), cast_terms(terms), ns, acc, fma);
        return Some(());
    }
    let pw = terms.first()?.w.pw;
    let avx512 = avx512_tiles();
    let avx2 = !avx512 && !sums && avx2_tiles::<F>();
    if !(avx512 || avx2) || pw % super::lanes_of::<F::C>() != 0 || pw > 2 * super::lanes_of::<F::C>() || terms.len() > MAX_TERMS {
        return None;
    }
    let store = gates.map(|g| GateStore { addend: g.addend.as_ptr(), addend_ld: g.addend_ld, pre: g.pre.as_mut_ptr(), hsz: g.hsz, units: terms[0].w.units, region: g.region });
    // (the CPU has the features the drivers are compiled for; the callers checked the
    // slices to cover every row and column the tiles touch: `super::affine_panels`,
    // `super::accumulate`, `super::affine_gates`)
    //
    // f32 sums whose values are all bf16's: two steps per instruction where the CPU has
    // AVX512-BF16 (`tile_bf16_pairs`; it declines, having written nothing, when a value is
    // out of its range)
    #[cfg(rnnsim_avx512_tiles)]
    if avx512 && (sums || F::ROUNDING == Rounding::F32) && super::tile_bf16_pairs::available() {
        use super::tile_avx512::F32;
        let done = match F::ROUNDING {
            Rounding::Bf16 => run_pairs::<F, F32<0, false, 1>>(bias, terms, ns, acc, store, panels.clone()),
            Rounding::F16 => run_pairs::<F, F32<0, false, 2>>(bias, terms, ns, acc, store, panels.clone()),
            _ => run_pairs::<F, F32<0>>(bias, terms, ns, acc, store, panels.clone()),
        };
        if done {
            return Some(());
        }
    }
    #[cfg(rnnsim_avx512_tiles)]
    if avx512 {
        use super::tile_avx512::{drive_avx512, register_broadcast, F32, F64};
        let rb = register_broadcast();
        match F::ROUNDING {
            Rounding::Bf16 if sums && rb => run::<F, F32<0, true, 1>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<0, true, 1>>),
            Rounding::Bf16 if sums => run::<F, F32<0, false, 1>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<0, false, 1>>),
            Rounding::F16 if sums && rb => run::<F, F32<0, true, 2>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<0, true, 2>>),
            Rounding::F16 if sums => run::<F, F32<0, false, 2>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<0, false, 2>>),
            Rounding::F64 if rb => run::<F, F64<true>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F64<true>>),
            Rounding::F64 => run::<F, F64>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F64>),
            Rounding::F32 if rb => run::<F, F32<0, true>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<0, true>>),
            Rounding::F32 => run::<F, F32<0>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<0>>),
            Rounding::Bf16 => run::<F, F32<1>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<1>>),
            Rounding::F16 => run::<F, F32<2>>(bias, terms, ns, acc, store, fma, panels, drive_avx512::<F32<2>>),
        }
        return Some(());
    }
    use super::tile_avx2 as y;
    match F::ROUNDING {
        Rounding::F64 => run::<F, y::F64x4>(bias, terms, ns, acc, store, fma, panels, y::drive::<y::F64x4>),
        Rounding::F32 => run::<F, y::F32x8<0>>(bias, terms, ns, acc, store, fma, panels, y::drive::<y::F32x8<0>>),
        // bf16's fused step needs exact f32 products; else the portable loop
        Rounding::Bf16 if fma && !bf16_products_exact(terms, ns) => return None,
        Rounding::Bf16 => run::<F, y::F32x8<1>>(bias, terms, ns, acc, store, fma, panels, y::drive_half::<y::F32x8<1>>),
        Rounding::F16 => run::<F, y::F32x8<2>>(bias, terms, ns, acc, store, fma, panels, y::drive_half::<y::F32x8<2>>),
    }
    Some(())
}

/// Whether the AVX-512 tiles run: the CPU has them (`cpu`), and a test has not asked for
/// the AVX2 ones (`with_avx2_tiles`).
fn avx512_tiles() -> bool {
    #[cfg(test)]
    if AVX2_TILES.get() {
        return false;
    }
    super::AVX512_TILES_COMPILED && crate::sim::cpu::avx512()
}


/// Whether `Packed::for_units` packs panels of one 64-byte vector (16 f32 or 8 f64
/// units) for the AVX2 tiles: no AVX-512 tiles here, and AVX2 + FMA. A panel of two
/// vectors is run by the AVX2 tiles in two stripes (`tile_avx2`), each reading every other
/// 64-byte line of the panel's k-major rows (128 bytes per k): a pass's 256 values of k put
/// a stripe's 256 lines of weights in half of L1's 64 sets, 8 to a set, as many as it has
/// ways, so the z rows and the accumulators evict weights that the next group of sequences
/// reads again. One vector per panel is one stripe over contiguous lines, 16 KiB across
/// all sets. Measured in a C model of the driver (64 sequences, k 1152 × 1024 units, 6 × 16
/// f32 FMA tiles, KC 256, Zen 3, 12 alternating runs): 65.8 → 77.2 G flop/s median, 82.5 →
/// 91.0 best; end to end in `benches/HISTORY.md` (session 55). The tiles compute the same
/// operations in the same order whatever the panel width (same bits).
pub(super) fn one_stripe_panels() -> bool {
    !avx512_tiles() && crate::sim::cpu::avx2_fma()
}

/// Whether the AVX2 tiles can run format `F`: f32 and f64 on a CPU with AVX2 + FMA, bf16
/// and f16 when it also has F16C (the caller chose them over the AVX-512 ones).
pub(super) fn avx2_tiles<F: LaneFormat>() -> bool {
    match F::ROUNDING {
        Rounding::F64 | Rounding::F32 => crate::sim::cpu::avx2_fma(),
        Rounding::Bf16 | Rounding::F16 => crate::sim::cpu::avx2_f16c(),
    }
}

/// The precondition of the AVX2 tiles' fused bf16 step (`tile_avx2::bf16_products_exact`)
/// for every term of a call: the weights' magnitudes (cached per packing) against the z
/// rows' (scanned: ns·k values, against the tile's ns·k·units products).
fn bf16_products_exact<C: 'static>(terms: &[Term<'_, C>], ns: usize) -> bool {
    use super::tile_avx2 as y;
    terms.iter().filter(|t| t.w.k > 0).all(|t| {
        let (w, z): (&Packed<f32>, &[f32]) = (cast(t.w), same_type::slice(t.z));
        let wm = *w.magnitudes.get_or_init(|| y::magnitudes(&w.data, 1, w.data.len(), 0));
        y::bf16_products_exact(wm, y::magnitudes(z, ns, w.k, t.ldz))
    })
}

#[cfg(test)]
thread_local! {
    static AVX2_TILES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the AVX2 tiles instead of the AVX-512 ones on this thread (tests on an
/// AVX-512 CPU).
#[cfg(test)]
pub(super) fn with_avx2_tiles<R>(f: impl FnOnce() -> R) -> R {
    AVX2_TILES.set(true);
    let r = f();
    AVX2_TILES.set(false);
    r
}

/// Whether `with_avx2_tiles` is in force on this thread.
#[cfg(test)]
pub(super) fn avx2_forced() -> bool {
    AVX2_TILES.get()
}

/// The signature of the drivers (`drive_avx512`, `tile_avx2::drive`).
pub(super) type Driver<C> = unsafe fn(Option<&[C]>, &Terms<'_, C>, usize, *mut C, Option<GateStore<C>>, bool, Range<usize>);

/// `drive` on the lane type of `O` (the same type as `F::C`).
#[allow(clippy::too_many_arguments)]
unsafe fn run<F: LaneFormat, O: Ops>(bias: Option<&[F::C]>, terms: &[Term<'_, F::C>], ns: usize, acc: *mut F::C, gates: Option<GateStore<F::C>>, fma: bool, panels: Range<usize>, drive: Driver<O::C>)
where
    O::C: 'static,
{
    let t = term_refs::<F, O::C>(terms);
    drive(bias.map(same_type::slice), &t[..terms.len()], ns, acc.cast::<O::C>(), gate_store(gates), fma, panels)
}

#[cfg(rnnsim_avx512_tiles)]
/// `tile_bf16_pairs::drive` (F's lanes are f32), true when it ran.
unsafe fn run_pairs<F: LaneFormat, O: Ops<C = f32, V = __m512>>(bias: Option<&[F::C]>, terms: &[Term<'_, F::C>], ns: usize, acc: *mut F::C, gates: Option<GateStore<F::C>>, panels: Range<usize>) -> bool {
    let t = term_refs::<F, f32>(terms);
    super::tile_bf16_pairs::drive::<O>(bias.map(same_type::slice), &t[..terms.len()], ns, acc.cast::<f32>(), gate_store(gates), panels)
}

/// The terms (at most MAX_TERMS) on the lane type `C` (the same type as `F::C`).
fn term_refs<'a, F: LaneFormat, C: 'static>(terms: &[Term<'a, F::C>]) -> [TermRef<'a, C>; MAX_TERMS] {
    let mut t: [TermRef<'a, C>; MAX_TERMS] = [(cast(terms[0].w), same_type::slice(terms[0].z), 0); MAX_TERMS];
    for (dst, src) in t.iter_mut().zip(terms) {
        *dst = (cast(src.w), same_type::slice(src.z), src.ldz);
    }
    t
}

/// A gate split's pointers on the lane type `C` (the same type as `A`).
fn gate_store<A, C>(gates: Option<GateStore<A>>) -> Option<GateStore<C>> {
    gates.map(|g| GateStore { addend: g.addend.cast::<C>(), addend_ld: g.addend_ld, pre: g.pre.cast::<C>(), hsz: g.hsz, units: g.units, region: g.region })
}

#[cfg(test)]
#[path = "tile_x86_prefetch_tests.rs"]
mod prefetch_tests;
