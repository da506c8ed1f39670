//! The elementwise part of the gated cells (gated.rs) for a whole block of sequences at
//! once, on lanes: the same operations in the same order per unit as `GatedPlan::step`,
//! laid out so that each activation is one call over the block and the state updates are
//! straight loops.
//!
//! Layout: `gi`/`gh` hold the tile kernel's rows (sequence s at s·stride, gate blocks of H
//! units in the cell's order: LSTM i f g o, Doubling-LSTM i f f² g o, GRU r z n), as values
//! of the format, or for the loops of the half formats as f32 sums or f16's binary16 bits
//! (`Sums`). The
//! pre-activations p = gi + gh (written by the tiles as their last step when they can split
//! the gates, `tile_kernel::affine_gates`, else added here) go to the scratch `pre`
//! gate-major: region r holds one gate
//! for every sequence (unit u of sequence s at r·ns·H + s·H + u), the gates taking the
//! `gate` function first, then the candidate:
//!
//!   LSTM [i f o | g],  Doubling-LSTM [i f f² o | g],  GRU [r z | n]
//!
//! so σ is one call over ns·3H (or 4H) values and the candidate function one over ns·H.
//! The states h and c are ns × H rows, so c' = f·c + i·g and h' = o·act(c') (GRU:
//! h' = n + z·(h + (−n))) are flat passes over the block. Sequences that have finished
//! (`active` false) are computed and not stored: their h and c stay.
//!
//! Each operation is one pass over its rows: the hardware operation on the lane values, then
//! the format's rounding of the whole row (`LaneFormat::round_lanes`), which is `add_l` /
//! `mul_l` element by element (nothing for f32 and f64; for f16 with AVX-512 the conversion
//! to binary16 and back, two instructions per 16 values where the bit rounding of one value
//! at a time takes about fourteen). The passes are plain loops, not closures, so that they
//! are compiled with the AVX-512 or AVX2 features of the function that calls the body.
//! With AVX-512 (the bodies' `V512`), bf16 and f16 run each step as one loop instead, the
//! roundings in registers (`gated_half_loops`: the same operations and roundings, so the
//! same values; the Doubling-LSTM's cell update keeps its passes): c' = (c·f) + (g·i) was
//! six passes over the rows and a copy. Measured
//! (alternating builds, 1 thread, (1024, 1000, 16, 4), M token-steps/s, session 36):
//! f16 LSTM 8.2–9.4 → 10.4–11.1, f16 GRU 11.5 → 13.3–13.6, bf16 with f32 sums GRU
//! 12.3–12.6 → 14.0–14.4, LSTM 10.2–10.3 → 11.3–11.7. For f16 on a CPU with AVX512-FP16 the
//! bodies are compiled with it too (`*_fp16`), and the loops compute in binary16
//! (`Half::F16Native`; session 38: f16 with f32 sums, GRU 14.5–15.2 → 17.2–17.9). With
//! AVX2 and F16C (the bodies' `V256`) the same loops run 8 lanes wide (session 52).

use crate::num::scalar::Scalar;
use crate::sim::cells::gated::{GatedKind, GatedPlan};
use crate::sim::float_batch::activate;
use crate::sim::lanes::{Lane, LaneFormat, Rounding};
use crate::sim::same_type;
#[cfg(target_arch = "x86_64")]
use crate::sim::cells::gated_half_loops::Lanes;

/// `rows` rows of `cols` values for the loops of the half formats (`gated_half_loops`): an
/// operand's row j at its pointer + j·(its stride), both in elements.
#[derive(Clone, Copy)]
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
}

/// The arithmetic of a half format's loops (`gated_half_loops`): bf16 or f16 in 16 f32
/// lanes (AVX-512) or 8 (AVX2: `x8`), each result rounded there, or f16 in binary16
/// registers (the bodies compiled with AVX512-FP16: `FP16`).
#[derive(Clone, Copy)]
enum Half {
    Bf16,
    F16,
    F16Native,
    Bf16x8,
    F16x8,
}

/// The loops' arithmetic for F in a body with AVX-512 (`V512`; with AVX512-FP16 too:
/// `FP16`) or AVX2 and F16C (`V256`); None for f32 and f64 (with their own sums or f32
/// sums, the half formats' lanes are f32 either way) and in the portable bodies.
fn half_mode<F: LaneFormat, const V512: bool, const FP16: bool, const V256: bool>() -> Option<Half> {
    match (F::ROUNDING, V512, V256) {
        (Rounding::F32 | Rounding::F64, _, _) | (_, false, false) => None,
        (Rounding::Bf16, true, _) => Some(Half::Bf16),
        (Rounding::F16, true, _) if FP16 => Some(Half::F16Native),
        (Rounding::F16, true, _) => Some(Half::F16),
        (Rounding::Bf16, false, true) => Some(Half::Bf16x8),
        (Rounding::F16, false, true) => Some(Half::F16x8),
    }
}

/// Whether a half format's lock-step blocks run its loops (`gated_half_loops`), so that
/// its f32 sums can be left unrounded for them to round as they read (`Sums::F32`): the
/// CPU has AVX-512, or AVX2 and F16C (the `_avx512` or `_avx2` bodies, chosen by the same
/// tests in `lstm_block` and `gru_block`).
pub fn half_loops() -> bool {
    #[cfg(target_arch = "x86_64")]
    return crate::sim::cpu::avx512() || crate::sim::cpu::avx2_f16c();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `$f::<A, G>(args)` with the loops' arithmetic A of the mode (`Half`; G optional): a
/// `gated_half_loops` loop.
#[cfg(target_arch = "x86_64")]
macro_rules! half_loop {
    ($mode:expr, $f:ident $([$($g:tt),*])? ($($arg:expr),*)) => {{
        use crate::sim::cells::gated_half_loops as hv;
        // SAFETY: called only from the AVX-512 bodies (V512), on a CPU with AVX-512
        // (`cpu::avx512`, checked by the dispatch), F16Native only from those compiled
        // with AVX512-FP16 (`cpu::avx512_fp16`, checked too), the 8-lane modes only from
        // the AVX2 bodies (V256: AVX2 and F16C, `cpu::avx2_f16c`, checked); the slices
        // are the passes' own.
        unsafe {
            match $mode {
                Half::Bf16 => hv::$f::<hv::Bf16 $(, $($g),*)?>($($arg),*),
                Half::F16 => hv::$f::<hv::F16 $(, $($g),*)?>($($arg),*),
                Half::F16Native => hv::$f::<hv::F16Native $(, $($g),*)?>($($arg),*),
                Half::Bf16x8 => hv::$f::<hv::Bf16x8 $(, $($g),*)?>($($arg),*),
                Half::F16x8 => hv::$f::<hv::F16x8 $(, $($g),*)?>($($arg),*),
            }
        }
    }};
}
#[cfg(not(target_arch = "x86_64"))]
macro_rules! half_loop {
    ($mode:expr, $f:ident $([$($g:tt),*])? ($($arg:expr),*)) => {{
        // (never reached: only the x86-64 `_avx512` and `_avx2` bodies have a mode)
        let _ = ($mode, $($arg),*);
        debug_assert!(false, "the loops' bodies are x86-64's");
    }};
}

/// How a block's rows of gate sums (gi or gh) hold their values.
pub enum Sums<'a, C> {
    /// values of the format, in its lanes
    Lanes(&'a [C]),
    /// a half format's f32 sums, not yet rounded to it (`accumulate="f32"`): the loops
    /// round them as they read them (`gated_half_loops::F32Sums`; only where [`half_loops`])
    F32(&'a [C]),
    /// f16 values as binary16 bits, the native f16 tile's rows
    /// (`tile_kernel::affine_binary16`): the loops convert them as they read them
    /// (`gated_half_loops::Binary16`, exact)
    Binary16(&'a [u16]),
}

impl<C> Clone for Sums<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for Sums<'_, C> {}

impl<'a, C> Sums<'a, C> {
    /// The rows as lanes of the format: what every body but the loops of a half format
    /// reads (only those loops are given the other forms).
    fn lanes(&self) -> &'a [C] {
        match *self {
            Sums::Lanes(r) => r,
            _ => panic!("gate sums unrounded or in binary16 outside the half formats' loops"),
        }
    }
}

/// The rows of one layer's gate affine maps for a block of `ns` sequences: sequence s's
/// row of gi at gi[s·stride_i], of gh at gh[s·stride_h] (strides in the rows' elements).
pub struct GateRows<'a, C> {
    pub ns: usize,
    pub gi: Sums<'a, C>,
    pub stride_i: usize,
    pub gh: Sums<'a, C>,
    pub stride_h: usize,
}

/// (region of `pre`, gate block of gi/gh) of the gates whose pre-activation is gi + gh:
/// every gate of the LSTMs (the `gate` function's first, the candidate last), r and z of
/// the GRU (its n gate combines gi and gh otherwise).
fn added_gates(kind: GatedKind) -> &'static [(usize, usize)] {
    match kind {
        GatedKind::Lstm => &[(0, 0), (1, 1), (2, 3), (3, 2)],
        GatedKind::DoublingLstm => &[(0, 0), (1, 1), (2, 2), (3, 4), (4, 3)],
        GatedKind::Gru => &[(0, 0), (1, 1)],
    }
}

/// The region of each gate block whose pre-activation is gi + gh (None for the others):
/// the map for `tile_kernel::GateSplit`, so that the tiles write these sums to `pre`.
pub fn gate_regions(kind: GatedKind) -> [Option<usize>; 5] {
    let mut r = [None; 5];
    for &(region, gate) in added_gates(kind) {
        r[gate] = Some(region);
    }
    r
}

/// Regions of `pre` the cell needs (ns·H values each).
pub fn regions(kind: GatedKind) -> usize {
    match kind {
        GatedKind::Lstm => 4,
        GatedKind::DoublingLstm => 5,
        GatedKind::Gru => 3,
    }
}

/// pre[region r][s·H + u] = gi[s][block q·H + u] + gh[s][block q·H + u] for (r, q) in `map`.
/// (With `V512` or `V256`, a half format's sums are rounded as they are made:
/// `gated_half_loops`.)
#[inline(always)]
fn add_gates<F: LaneFormat, const V512: bool, const FP16: bool, const V256: bool>(rows: &GateRows<'_, F::C>, hsz: usize, map: &[(usize, usize)], pre: &mut [F::C]) {
    let hs = rows.ns * hsz;
    if let Some(mode) = half_mode::<F, V512, FP16, V256>() {
        return loops::add_gates(mode, rows, hsz, map, same_type::slice_mut::<F::C, f32>(pre));
    }
    let (gi, gh) = (rows.gi.lanes(), rows.gh.lanes());
    for s in 0..rows.ns {
        let (gi, gh) = (&gi[s * rows.stride_i..], &gh[s * rows.stride_h..]);
        for &(r, q) in map {
            let dst = &mut pre[r * hs + s * hsz..r * hs + (s + 1) * hsz];
            raw2::<F::C, ADD>(dst, &gi[q * hsz..(q + 1) * hsz], &gh[q * hsz..(q + 1) * hsz]);
        }
    }
    // (the regions 0..map.len() are those written, in one rounding pass)
    F::round_lanes(&mut pre[..map.len() * hs]);
}

/// The steps of a half format's cells that read the gate rows, on `gated_half_loops`'s
/// loops: one monomorphic loop per pair of row forms (`Sums`) the lock-step batch makes.
#[cfg(target_arch = "x86_64")]
mod loops {
    use super::{at, at_mut, GateRows, Grid, Half, Sums};
    use crate::sim::cells::gated_half_loops::{Binary16, F32Sums, Lanes, Read};
    use crate::sim::same_type;

    /// The f32 lanes of rows of a half format (C is f32).
    #[inline(always)]
    fn f32s<C: 'static>(r: &[C]) -> &[f32] {
        same_type::slice::<C, f32>(r)
    }

    /// `f::<A, B>(gi, gh)` for the forms of the rows: each as it is; rows of values beside
    /// f32 sums (gi hoisted over ticks, rounded already) read as sums (R is idempotent).
    macro_rules! by_forms {
        ($rows:expr, $f:ident($($arg:expr),*)) => {
            match ($rows.gi, $rows.gh) {
                (Sums::Lanes(a), Sums::Lanes(b)) => $f::<Lanes, Lanes>($($arg,)* f32s(a), f32s(b)),
                (Sums::Lanes(a) | Sums::F32(a), Sums::F32(b)) => $f::<F32Sums, F32Sums>($($arg,)* f32s(a), f32s(b)),
                (Sums::Lanes(a), Sums::Binary16(b)) => $f::<Lanes, Binary16>($($arg,)* f32s(a), b),
                (Sums::Binary16(a), Sums::Binary16(b)) => $f::<Binary16, Binary16>($($arg,)* a, b),
                _ => unreachable!("the lock-step batch makes no such pair of gate rows"),
            }
        };
    }

    /// `gated_pointwise::add_gates` for a half format (`mode`: its loops' arithmetic), one
    /// grid of rows per gate. (Inlined into the AVX-512 and AVX2 bodies, as everything here:
    /// compiled apart, without their target features, each intrinsic was a call.)
    #[inline(always)]
    pub(super) fn add_gates<C: 'static>(mode: Half, rows: &GateRows<'_, C>, hsz: usize, map: &[(usize, usize)], pre: &mut [f32]) {
        by_forms!(rows, add_with(mode, rows, hsz, map, pre))
    }

    #[inline(always)]
    fn add_with<A: Read, B: Read>(mode: Half, rows: &GateRows<'_, impl Sized>, hsz: usize, map: &[(usize, usize)], pre: &mut [f32], gi: &[A::E], gh: &[B::E]) {
        let g = Grid { rows: rows.ns, cols: hsz };
        for &(r, q) in map {
            // (binary16 rows only where the native f16 tile ran: AVX512-FP16)
            let (d, a, b) = (at_mut(pre, r * g.rows * hsz, hsz, g), at(gi, q * hsz, rows.stride_i, g), at(gh, q * hsz, rows.stride_h, g));
            half_loop!(mode, op_rows[false, A, B](g, d, a, b));
        }
    }

    /// The GRU's n = R(R(r·gh_n) + gi_n) for every sequence of the block (`rz`: the
    /// activated r gates first, ns·H).
    #[inline(always)]
    pub(super) fn gru_n<C: 'static>(mode: Half, rows: &GateRows<'_, C>, hsz: usize, rz: &[f32], n: &mut [f32]) {
        by_forms!(rows, gru_n_with(mode, rows, hsz, rz, n))
    }

    #[inline(always)]
    fn gru_n_with<GI: Read, GH: Read>(mode: Half, rows: &GateRows<'_, impl Sized>, hsz: usize, rz: &[f32], n: &mut [f32], gi: &[GI::E], gh: &[GH::E]) {
        let g = Grid { rows: rows.ns, cols: hsz };
        let (d, r) = (at_mut(n, 0, hsz, g), at(rz, 0, hsz, g));
        let (gh, gi) = (at(gh, 2 * hsz, rows.stride_h, g), at(gi, 2 * hsz, rows.stride_i, g));
        half_loop!(mode, mul_add_rows[GH, GI](g, d, r, gh, gi));
    }
}

/// (Never reached: only the x86-64 `_avx512` and `_avx2` bodies have a mode.)
#[cfg(not(target_arch = "x86_64"))]
mod loops {
    use super::{GateRows, Half};
    pub(super) fn add_gates<C>(_: Half, _: &GateRows<'_, C>, _: usize, _: &[(usize, usize)], _: &mut [f32]) {
        unreachable!("the loops' bodies are x86-64's")
    }
    pub(super) fn gru_n<C>(_: Half, _: &GateRows<'_, C>, _: usize, _: &[f32], _: &mut [f32]) {
        unreachable!("the loops' bodies are x86-64's")
    }
}

/// F is f16 and the CPU has AVX512-FP16 (and -BW): the bodies whose loops run in binary16.
#[cfg(target_arch = "x86_64")]
fn fp16_bodies<F: LaneFormat>() -> bool {
    matches!(F::ROUNDING, Rounding::F16) && crate::sim::cpu::avx512_fp16()
}

/// Panics unless the grid's rows, row j at off + j·ld, lie in `len` elements.
fn check_grid(len: usize, off: usize, ld: usize, g: Grid) {
    assert!(g.rows == 0 || g.cols == 0 || off + (g.rows - 1) * ld + g.cols <= len, "a grid of rows outside its slice");
}

/// The (pointer, stride) of the grid's rows in s, row j at s[off + j·ld..]: checked to lie
/// in s, for the loops of the half formats.
fn at<T>(s: &[T], off: usize, ld: usize, g: Grid) -> (*const T, usize) {
    check_grid(s.len(), off, ld, g);
    (s.as_ptr().wrapping_add(off), ld)
}

/// [`at`] for a grid that is written.
fn at_mut<T>(s: &mut [T], off: usize, ld: usize, g: Grid) -> (*mut T, usize) {
    check_grid(s.len(), off, ld, g);
    (s.as_mut_ptr().wrapping_add(off), ld)
}

/// The element ranges of the active sequences (one range when all are; no allocation).
#[inline(always)]
fn active_ranges(ns: usize, hsz: usize, active: Option<&[bool]>) -> impl Iterator<Item = std::ops::Range<usize>> + Clone + '_ {
    let all = active.is_none();
    (0..if all { 1 } else { ns }).filter(move |&s| active.is_none_or(|a| a[s])).map(move |s| if all { 0..ns * hsz } else { s * hsz..(s + 1) * hsz })
}

/// The lane operations of the passes: a + b, a · b, a + (−b) (IEEE's a − b).
const ADD: u8 = 0;
const MUL: u8 = 1;
const ADD_NEG: u8 = 2;

/// The hardware operation `OP` of two lane values (rounded to the lane type only).
#[inline(always)]
fn lane_op<C: Lane, const OP: u8>(a: C, b: C) -> C {
    match OP {
        ADD => a + b,
        MUL => a * b,
        _ => a + (-b),
    }
}

/// dst[j] = a[j] OP b[j] in the lane type, not yet rounded to the format.
#[inline(always)]
fn raw2<C: Lane, const OP: u8>(dst: &mut [C], a: &[C], b: &[C]) {
    for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        *d = lane_op::<C, OP>(x, y);
    }
}

/// n[j] = (r[j] · gh[j]) + gi[j] in the lane type (two roundings: Rust does not contract),
/// 16 values at a time in fixed-size arrays (a loop over runtime-length zipped slices was
/// vectorised 4 lanes wide, behind aliasing checks; one fused zipped loop, as `cell_rows`,
/// measured 2% slower here at hidden 16, session 28), the rest one by one. Over one
/// sequence's row only: see `state_rows`.
#[inline(always)]
fn mul_add_rows<C: Lane>(n: &mut [C], r: &[C], gh: &[C], gi: &[C]) {
    const W: usize = 16;
    let whole = n.len() / W * W;
    for (((n, r), gh), gi) in n[..whole].chunks_exact_mut(W).zip(r.chunks_exact(W)).zip(gh.chunks_exact(W)).zip(gi.chunks_exact(W)) {
        let (n, r, gh, gi): (&mut [C; W], &[C; W], &[C; W], &[C; W]) = (n.try_into().unwrap(), r.try_into().unwrap(), gh.try_into().unwrap(), gi.try_into().unwrap());
        let mut t = [C::ZERO; W];
        for j in 0..W {
            t[j] = lane_op::<C, ADD>(lane_op::<C, MUL>(r[j], gh[j]), gi[j]);
        }
        *n = t;
    }
    for (((n, &r), &gh), &gi) in n[whole..].iter_mut().zip(&r[whole..]).zip(&gh[whole..]).zip(&gi[whole..]) {
        *n = lane_op::<C, ADD>(lane_op::<C, MUL>(r, gh), gi);
    }
}

/// The LSTM's new cell, c[j] = (c[j]·f[j]) + (g[j]·i[j]), also written over the candidate
/// g[j] (for act(c')), in the lane type: the three passes and the copy of `lstm_block` in
/// one loop.
#[inline(always)]
fn cell_rows<C: Lane>(c: &mut [C], g: &mut [C], f: &[C], i: &[C]) {
    for (((c, g), &f), &i) in c.iter_mut().zip(g.iter_mut()).zip(f).zip(i) {
        *c = lane_op::<C, ADD>(lane_op::<C, MUL>(*c, f), lane_op::<C, MUL>(*g, i));
        *g = *c;
    }
}

/// The GRU's new state, h[j] = ((h[j] + (−n[j]))·z[j]) + n[j], in the lane type: the three
/// passes of `gru_block` in one loop. (Not in 16-value arrays as [`mul_add_rows`]: over a
/// whole block, hundreds of arrays, LLVM vectorised the loop over the arrays, 8 at a time
/// with gathers; GRU at hidden 16 lost 20%. `mul_add_rows` runs over one sequence's row.
/// That was also why session 27's arrays in `raw2`/`raw_in_place` lost 40%.)
#[inline(always)]
fn state_rows<C: Lane>(h: &mut [C], n: &[C], z: &[C]) {
    for ((h, &n), &z) in h.iter_mut().zip(n).zip(z) {
        *h = lane_op::<C, ADD>(lane_op::<C, MUL>(lane_op::<C, ADD_NEG>(*h, n), z), n);
    }
}

/// dst[j] = a[j] OP b[j] rounded to F: `F::add_l` / `F::mul_l` element by element.
#[inline(always)]
fn op2<F: LaneFormat, const OP: u8>(dst: &mut [F::C], a: &[F::C], b: &[F::C]) {
    raw2::<F::C, OP>(dst, a, b);
    F::round_lanes(dst);
}

/// d[j] = d[j] OP b[j] in the lane type, not yet rounded to the format.
#[inline(always)]
fn raw_in_place<C: Lane, const OP: u8>(d: &mut [C], b: &[C]) {
    for (d, &y) in d.iter_mut().zip(b) {
        *d = lane_op::<C, OP>(*d, y);
    }
}

/// d[j] = d[j] OP b[j] rounded to F, in place.
#[inline(always)]
fn op_in_place<F: LaneFormat, const OP: u8>(d: &mut [F::C], b: &[F::C]) {
    raw_in_place::<F::C, OP>(d, b);
    F::round_lanes(d);
}

/// One tick of an LSTM or Doubling-LSTM layer for the block: h, c (ns × H) updated in place.
/// `added`: the tiles already wrote gi + gh to `pre` (`gate_regions`).
/// (The same code is compiled with AVX-512 enabled, and with AVX2 + FMA + F16C, and run on
/// the widest the CPU has (`cpu`), so that the straight loops vectorise 16 or 8 lanes wide
/// and a half format's steps run its loops 16 or 8 lanes wide (`gated_half_loops`); no
/// operation changes, so neither do the bits.)
#[allow(clippy::too_many_arguments)]
pub fn lstm_block<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    #[cfg(target_arch = "x86_64")]
    if fp16_bodies::<F>() {
        // SAFETY: the CPU has the features the function is compiled for (checked).
        return unsafe { lstm_block_fp16(g, rows, pre, h, c, active, added) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512() {
        // SAFETY: as above.
        return unsafe { lstm_block_avx512(g, rows, pre, h, c, active, added) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_f16c() {
        // SAFETY: as above.
        return unsafe { lstm_block_avx2(g, rows, pre, h, c, active, added) };
    }
    lstm_block_body::<F, false, false, false>(g, rows, pre, h, c, active, added)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn lstm_block_avx512<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    lstm_block_body::<F, true, false, false>(g, rows, pre, h, c, active, added)
}

/// f16 with AVX512-FP16: its loops in binary16 (`gated_half_loops::F16Native`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512fp16,avx2,avx,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn lstm_block_fp16<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    lstm_block_body::<F, true, true, false>(g, rows, pre, h, c, active, added)
}

/// AVX2, FMA and F16C: a half format's loops 8 lanes wide (`gated_half_loops::Bf16x8`,
/// `F16x8`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn lstm_block_avx2<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    lstm_block_body::<F, false, false, true>(g, rows, pre, h, c, active, added)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lstm_block_body<F: LaneFormat + Scalar, const V512: bool, const FP16: bool, const V256: bool>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    let (hsz, ns) = (g.hidden, rows.ns);
    let hs = ns * hsz;
    let double = g.kind == GatedKind::DoublingLstm;
    let map = added_gates(g.kind);
    let nsig = map.len() - 1;
    if !added {
        add_gates::<F, V512, FP16, V256>(rows, hsz, map, pre);
    }
    activate::<F>(g.gate, &mut pre[..nsig * hs]);
    activate::<F>(g.candidate, &mut pre[nsig * hs..(nsig + 1) * hs]);
    let (sig, cand) = pre.split_at_mut(nsig * hs);
    let cand = &mut cand[..hs];
    let (i, rest) = sig.split_at_mut(hs);
    let (f, rest) = rest.split_at_mut(hs);
    let (f2, o) = if double { rest.split_at_mut(hs) } else { rest.split_at_mut(0) };
    let ranges = active_ranges(ns, hsz, active);
    // c' = (f·c) + (i·g) (Doubling: ((f + f²)·c) + (i·g)), kept also in the candidate
    // region for act(c'); each product and sum rounded (IEEE + and · commute)
    let flat = matches!(F::ROUNDING, Rounding::F32 | Rounding::F64) && !double;
    for r in ranges.clone() {
        let (c, ig) = (&mut c[r.clone()], &mut cand[r.clone()]);
        if flat {
            // lanes of the format itself (no rounding pass): one loop
            cell_rows(c, ig, &f[r.clone()], &i[r]);
            continue;
        }
        if let (false, Some(mode)) = (double, half_mode::<F, V512, FP16, V256>()) {
            // a half format with AVX-512 or AVX2: one loop, each rounding in registers
            half_loop!(mode, cell_rows(same_type::slice_mut::<F::C, f32>(c), same_type::slice_mut::<F::C, f32>(ig), same_type::slice::<F::C, f32>(&f[r.clone()]), same_type::slice::<F::C, f32>(&i[r])));
            continue;
        }
        if double {
            let f2 = &mut f2[r.clone()];
            op_in_place::<F, ADD>(f2, &f[r.clone()]);
            op_in_place::<F, MUL>(c, f2);
        } else {
            op_in_place::<F, MUL>(c, &f[r.clone()]);
        }
        op_in_place::<F, MUL>(ig, &i[r]);
        op_in_place::<F, ADD>(c, ig);
        ig.copy_from_slice(c);
    }
    activate::<F>(g.output, cand);
    // h' = o · act(c')
    for r in ranges {
        if let Some(mode) = half_mode::<F, V512, FP16, V256>() {
            let g = Grid { rows: 1, cols: r.len() };
            let (d, a, b) = (at_mut(same_type::slice_mut::<F::C, f32>(h), r.start, 0, g), at(same_type::slice::<F::C, f32>(o), r.start, 0, g), at(same_type::slice::<F::C, f32>(cand), r.start, 0, g));
            half_loop!(mode, op_rows[true, Lanes, Lanes](g, d, a, b));
            continue;
        }
        op2::<F, MUL>(&mut h[r.clone()], &o[r.clone()], &cand[r]);
    }
}

/// One tick of a GRU layer for the block: h (ns × H) updated in place. `added`: the tiles
/// already wrote gi + gh of r and z to `pre` (`gate_regions`).
/// (Compiled for AVX-512 and for AVX2 + FMA, as `lstm_block`.)
pub fn gru_block<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    #[cfg(target_arch = "x86_64")]
    if fp16_bodies::<F>() {
        // SAFETY: the CPU has the features the function is compiled for (checked).
        return unsafe { gru_block_fp16(g, rows, pre, h, active, added) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512() {
        // SAFETY: as above.
        return unsafe { gru_block_avx512(g, rows, pre, h, active, added) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_f16c() {
        // SAFETY: as above.
        return unsafe { gru_block_avx2(g, rows, pre, h, active, added) };
    }
    gru_block_body::<F, false, false, false>(g, rows, pre, h, active, added)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma")]
unsafe fn gru_block_avx512<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    gru_block_body::<F, true, false, false>(g, rows, pre, h, active, added)
}

/// f16 with AVX512-FP16, as [`lstm_block_fp16`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512fp16,avx2,avx,fma")]
unsafe fn gru_block_fp16<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    gru_block_body::<F, true, true, false>(g, rows, pre, h, active, added)
}

/// AVX2, FMA and F16C, as [`lstm_block_avx2`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma,f16c")]
unsafe fn gru_block_avx2<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    gru_block_body::<F, false, false, true>(g, rows, pre, h, active, added)
}

#[inline(always)]
fn gru_block_body<F: LaneFormat + Scalar, const V512: bool, const FP16: bool, const V256: bool>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    let (hsz, ns) = (g.hidden, rows.ns);
    let hs = ns * hsz;
    if !added {
        add_gates::<F, V512, FP16, V256>(rows, hsz, added_gates(g.kind), pre);
    }
    activate::<F>(g.gate, &mut pre[..2 * hs]);
    let (rz, n) = pre.split_at_mut(2 * hs);
    let n = &mut n[..hs];
    // n = act(gi_n + (r·gh_n))
    if let Some(mode) = half_mode::<F, V512, FP16, V256>() {
        // a half format with AVX-512 or AVX2: n = R(R(r·gh) + gi) in one loop per sequence
        loops::gru_n(mode, rows, hsz, same_type::slice::<F::C, f32>(rz), same_type::slice_mut::<F::C, f32>(n));
    } else if matches!(F::ROUNDING, Rounding::F32 | Rounding::F64) {
        // lanes of the format itself (no rounding pass): both operations in one loop per
        // sequence (two passes over the block cost twice the loop overhead of hsz-long
        // rows: GRU f32 at hidden 16, 11% of a tick in `gru_block`)
        let (gh, gi) = (rows.gh.lanes(), rows.gi.lanes());
        for (s, n) in n.chunks_exact_mut(hsz).enumerate() {
            let (r, gh, gi) = (&rz[s * hsz..(s + 1) * hsz], &gh[s * rows.stride_h + 2 * hsz..][..hsz], &gi[s * rows.stride_i + 2 * hsz..][..hsz]);
            mul_add_rows(n, r, gh, gi);
        }
    } else {
        let (gh, gi) = (rows.gh.lanes(), rows.gi.lanes());
        for s in 0..ns {
            let gh = &gh[s * rows.stride_h + 2 * hsz..][..hsz];
            raw2::<F::C, MUL>(&mut n[s * hsz..(s + 1) * hsz], &rz[s * hsz..(s + 1) * hsz], gh);
        }
        F::round_lanes(n);
        for s in 0..ns {
            raw_in_place::<F::C, ADD>(&mut n[s * hsz..(s + 1) * hsz], &gi[s * rows.stride_i + 2 * hsz..][..hsz]);
        }
        F::round_lanes(n);
    }
    activate::<F>(g.candidate, n);
    let z = &rz[hs..];
    // h' = n + (z·(h + (−n)))
    for r in active_ranges(ns, hsz, active) {
        let h = &mut h[r.clone()];
        if matches!(F::ROUNDING, Rounding::F32 | Rounding::F64) {
            state_rows(h, &n[r.clone()], &z[r]);
            continue;
        }
        if let Some(mode) = half_mode::<F, V512, FP16, V256>() {
            half_loop!(mode, state_rows(same_type::slice_mut::<F::C, f32>(h), same_type::slice::<F::C, f32>(&n[r.clone()]), same_type::slice::<F::C, f32>(&z[r])));
            continue;
        }
        op_in_place::<F, ADD_NEG>(h, &n[r.clone()]);
        op_in_place::<F, MUL>(h, &z[r.clone()]);
        op_in_place::<F, ADD>(h, &n[r]);
    }
}
