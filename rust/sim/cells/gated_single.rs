//! One sequence through a stack of small gated layers (LSTM, Doubling-LSTM, GRU; hidden ≤
//! 64 in f32, ≤ 32 in f64) in f32 or f64 (or bf16 / f16 with f32 sums in f32 lanes: 16 with
//! AVX-512, 8 with AVX2 + F16C up to hidden 32; each affine map's sums ended by one
//! rounding, `Vector::end_sum`), each layer's gates, cell and state held in registers
//! from one tick to the next: the lock-step kernel's path for a block of one sequence
//! (`gated_batch::run_block`), with the same operations in the same order per unit as
//! `GatedPlan::step`, so the same bits.
//!
//! Batch 1 is a chain of dependent ticks; each tick waits for
//!   gh = b_hh + W_hh h (H dependent FMAs per unit) → the gate activations → c' → act(c') → h'.
//! The general kernel puts the tile driver, gate-major scratch rows and a call per
//! activation between those steps; here a tick is straight-line code on [[V; Q]; G]
//! (G gate blocks of Q vectors of L units each, every block padded to a vector boundary
//! with zero weights, so each vector belongs to one gate). V is the widest vector the CPU
//! has (`gated_single_vectors`): f32 in L = 16 lanes with AVX-512 + FMA, 8 with AVX2 + FMA;
//! f64 in 8 lanes with AVX-512, 4 with AVX2 + FMA up to hidden 16; the body is the same
//! generic code, so the same operations and the same bits:
//!
//!   gi = b_ih + Σ_k W_ih[:, k]·x_k,  gh = b_hh + Σ_k W_hh[:, k]·h_k   (k ascending; fused
//!   or mul-then-add as the run's `fma`; h_k broadcast from h's register by a permute when h
//!   is one vector, else from the copy of h stored last tick)
//!   LSTM: i, f, g, o = act(gi + gh) per block;  c' = (f·c) + (i·g);  h' = o·act(c')
//!   GRU:  r, z = σ(gi + gh);  n = act(gi_n + (r·gh_n));  h' = n + (z·(h + (−n)))
//!
//! with tanh/σ exact as `activation_avx512` / `activation_avx2` (`apply16`, `apply8`); in
//! f64 the pre-activations of a kind are gathered and go through one call of the lock-step
//! kernel's `float_batch::activate` (a call's fixed cost is most of a 16-value one). The padded units have zero
//! pre-activations and are never read as inputs or stored. A stack runs layer by layer over
//! chunks of `CHUNK` ticks (layer l's rows of a chunk are layer l+1's inputs); only the top
//! layer's rows are kept (`states`, `cells`).

use crate::error::SimResult;
use crate::net::activation::Activation;
use crate::sim::cancel::Control;
use crate::num::f32_sums::{Bf16SumF32, F16SumF32};
use crate::sim::cells::gated::{GatedKind, GatedPlan};
use crate::sim::lanes::Rounding;
use std::mem::MaybeUninit;

/// Largest hidden size run here in f32: 4 vectors per gate block with AVX-512, 8 with AVX2
/// (whose 16 registers then spill some accumulators to L1, still 1.2–1.3× the lock-step
/// kernel at batch 1 and hidden 64).
pub const MAX_HIDDEN: usize = 64;
/// In f64: 4 vectors of 8 per gate block.
pub const F64_MAX_HIDDEN: usize = 32;
/// In f64 on AVX2 (`V256d`): 4 vectors of 4 per gate block (an LSTM's 16 accumulators fill
/// the 16 registers; hidden 17–32 runs the lock-step kernel).
pub const F64_AVX2_MAX_HIDDEN: usize = 16;
/// In bf16 / f16 with f32 sums on AVX2 (`V256h`): 4 vectors of 8 per gate block, so 24
/// instantiations of the layer per format rather than f32's 48 (hidden 33–64 was not
/// measured there; those layers run the lock-step kernel).
pub const HALF_AVX2_MAX_HIDDEN: usize = 32;
/// Ticks per chunk of a stack (the inputs of the next layer, chunk × hidden values).
const CHUNK: usize = 512;
/// Bytes of gi rows computed ahead of the recurrent ticks (so that the ticks hold only gh
/// in registers: 16 vectors at hidden 64 with AVX-512, where gi and gh together would spill).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const GI_BYTES: usize = 32 * 1024;

/// One gated layer's weights for this kernel: W_ih and W_hh transposed (k-major), each
/// column's gate blocks padded to Q·L units (L lanes per vector); biases the same.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub struct RegLayer<E> {
    kind: GatedKind,
    hidden: usize,
    inputs: usize,
    /// lanes per vector: 16 (AVX-512) or 8 (AVX2)
    lanes: usize,
    /// vectors per gate block
    q: usize,
    gate: Activation,
    candidate: Activation,
    output: Activation,
    /// the arithmetic of the lanes: f32 or f64 (their own), or bf16 / f16 with f32 sums
    /// (f32 lanes: `vectors::V512h` with AVX-512, `vectors::V256h` with AVX2 + F16C)
    format: Rounding,
    w_ih: Vec<E>,
    b_ih: Vec<E>,
    w_hh: Vec<E>,
    b_hh: Vec<E>,
}

/// The lane types the kernel runs: f32 and f64.
pub trait Elem: Copy + Default + Send + Sync + 'static {
    /// Whether this CPU runs the kernel in this type.
    fn available() -> bool;
    /// Lanes per vector on this CPU.
    fn lanes() -> usize;
    /// Whether this CPU runs vectors of `lanes` of this type.
    fn width_available(lanes: usize) -> bool;
    /// The largest hidden size run here in vectors of `lanes`.
    fn max_hidden(lanes: usize) -> usize;
    /// `run_layer` on this type's vectors.
    ///
    /// # Safety
    /// As `run_layer`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn run_layer(l: &RegLayer<Self>, x: *const Self, ldx: usize, ticks: usize, h: &mut [Self], c: &mut [Self], hs: *mut Self, cs: *mut Self, fma: bool);
}

impl Elem for f32 {
    fn available() -> bool {
        crate::sim::cpu::avx512() || crate::sim::cpu::avx2_fma()
    }
    fn lanes() -> usize {
        if crate::sim::cpu::avx512() { 16 } else { 8 }
    }
    fn width_available(lanes: usize) -> bool {
        if lanes == 16 { crate::sim::cpu::avx512() } else { crate::sim::cpu::avx2_fma() }
    }
    fn max_hidden(_: usize) -> usize {
        MAX_HIDDEN
    }
    unsafe fn run_layer(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32, fma: bool) {
        run_layer(l, x, ldx, ticks, h, c, hs, cs, fma)
    }
}

impl Elem for f64 {
    fn available() -> bool {
        crate::sim::cpu::avx512() || crate::sim::cpu::avx2_fma()
    }
    fn lanes() -> usize {
        if crate::sim::cpu::avx512() { 8 } else { 4 }
    }
    fn width_available(lanes: usize) -> bool {
        if lanes == 8 { crate::sim::cpu::avx512() } else { crate::sim::cpu::avx2_fma() }
    }
    fn max_hidden(lanes: usize) -> usize {
        if lanes == 8 { F64_MAX_HIDDEN } else { F64_AVX2_MAX_HIDDEN }
    }
    unsafe fn run_layer(l: &RegLayer<f64>, x: *const f64, ldx: usize, ticks: usize, h: &mut [f64], c: &mut [f64], hs: *mut f64, cs: *mut f64, fma: bool) {
        run_layer_f64(l, x, ldx, ticks, h, c, hs, cs, fma)
    }
}

/// f16 in its own arithmetic, as binary16 bits (`gated_single_f16::V256ph`: AVX512-FP16).
impl Elem for u16 {
    fn available() -> bool {
        f16_available()
    }
    fn lanes() -> usize {
        16
    }
    fn width_available(lanes: usize) -> bool {
        lanes == 16 && f16_available()
    }
    fn max_hidden(_: usize) -> usize {
        MAX_HIDDEN
    }
    unsafe fn run_layer(l: &RegLayer<u16>, x: *const u16, ldx: usize, ticks: usize, h: &mut [u16], c: &mut [u16], hs: *mut u16, cs: *mut u16, fma: bool) {
        run_layer_f16(l, x, ldx, ticks, h, c, hs, cs, fma)
    }
}

/// Whether this CPU runs the native f16 vectors (x86-64 with AVX512-FP16).
pub fn f16_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        f16::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A layer packed for this kernel, in its lane type.
pub enum AnyLayer {
    F32(RegLayer<f32>),
    F64(RegLayer<f64>),
    /// f16 in its own arithmetic: binary16 bits
    F16(RegLayer<u16>),
}

impl AnyLayer {
    /// The layer when its lane type is E.
    pub fn get<E: Elem>(&self) -> Option<&RegLayer<E>> {
        use std::any::Any;
        match self {
            AnyLayer::F32(l) => (l as &dyn Any).downcast_ref(),
            AnyLayer::F64(l) => (l as &dyn Any).downcast_ref(),
            AnyLayer::F16(l) => (l as &dyn Any).downcast_ref(),
        }
    }
}

/// `g` (the `GatedPlan` of a format) packed for this kernel when its format is f32 or f64,
/// or a half format with f32 sums (`accumulate="f32"`: f32 lanes, with AVX-512, not with the
/// approximate activations, which are f32's), the CPU runs the kernel in it, and its hidden
/// size fits.
pub fn pack_any(g: &dyn std::any::Any) -> Option<AnyLayer> {
    if let Some(p) = g.downcast_ref::<GatedPlan<f32>>() {
        return if f32::available() { pack(p).map(AnyLayer::F32) } else { None };
    }
    if let Some(p) = g.downcast_ref::<GatedPlan<f64>>() {
        return if f64::available() { pack(p).map(AnyLayer::F64) } else { None };
    }
    if let Some(p) = g.downcast_ref::<GatedPlan<half::f16>>() {
        return if f16_available() && !approximate(p) { pack_for(p, 16, |v: half::f16| v.to_bits(), Rounding::F16).map(AnyLayer::F16) } else { None };
    }
    if let Some(p) = g.downcast_ref::<GatedPlan<Bf16SumF32>>() {
        return if half_runs(p) { pack_for(p, f32::lanes(), |v| v.0, Rounding::Bf16).map(AnyLayer::F32) } else { None };
    }
    if let Some(p) = g.downcast_ref::<GatedPlan<F16SumF32>>() {
        return if half_runs(p) { pack_for(p, f32::lanes(), |v| v.0, Rounding::F16).map(AnyLayer::F32) } else { None };
    }
    None
}

/// Whether a layer of a half format with f32 sums runs here: AVX-512 (`V512h`), or AVX2 and
/// F16C (`V256h`) up to hidden `HALF_AVX2_MAX_HIDDEN`; and none of f32's approximate
/// activations.
fn half_runs<T>(p: &GatedPlan<T>) -> bool {
    use crate::sim::cpu;
    (cpu::avx512() || (cpu::avx2_f16c() && p.hidden <= HALF_AVX2_MAX_HIDDEN)) && !approximate(p)
}

/// Whether the layer uses f32's approximate activations (`approx_activations=True`).
fn approximate<T>(p: &GatedPlan<T>) -> bool {
    [p.gate, p.candidate, p.output].iter().any(|a| matches!(a, Activation::ApproxTanh | Activation::ApproxSigmoid))
}

/// Whether this CPU runs the f32 kernel (AVX-512 F/VL/DQ and FMA, or AVX2 and FMA).
pub fn available() -> bool {
    f32::available()
}

/// The layer in this kernel's layout for this CPU, or None when its hidden size is above
/// the type's `Elem::max_hidden`.
pub fn pack<E: Elem>(g: &GatedPlan<E>) -> Option<RegLayer<E>> {
    let own = if std::any::TypeId::of::<E>() == std::any::TypeId::of::<f64>() { Rounding::F64 } else { Rounding::F32 };
    pack_for(g, E::lanes(), |v| v, own)
}

/// The layer (its values `lane(v)`) in the layout of vectors of `lanes` (16 or 8), in the
/// lanes' arithmetic `format`, or None when its hidden size is above the type's
/// `Elem::max_hidden` in those lanes.
fn pack_for<T: Copy, E: Elem>(g: &GatedPlan<T>, lanes: usize, lane: impl Fn(T) -> E, format: Rounding) -> Option<RegLayer<E>> {
    let hsz = g.hidden;
    if hsz == 0 || hsz > E::max_hidden(lanes) {
        return None;
    }
    let q = hsz.div_ceil(lanes);
    let blocks = g.ih.rows / hsz;
    let padded = |w: &[T], b: &[T], cols: usize| {
        let width = blocks * q * lanes;
        let mut wt = vec![E::default(); cols * width];
        let mut bp = vec![E::default(); width];
        for blk in 0..blocks {
            for u in 0..hsz {
                let (row, at) = (blk * hsz + u, blk * q * lanes + u);
                bp[at] = lane(b[row]);
                for k in 0..cols {
                    wt[k * width + at] = lane(w[row * cols + k]);
                }
            }
        }
        (wt, bp)
    };
    let (w_ih, b_ih) = padded(&g.ih.w, &g.ih.b, g.ih.cols);
    let (w_hh, b_hh) = padded(&g.hh.w, &g.hh.b, g.hh.cols);
    Some(RegLayer { kind: g.kind, hidden: hsz, inputs: g.ih.cols, lanes, q, gate: g.gate, candidate: g.candidate, output: g.output, format, w_ih, b_ih, w_hh, b_hh })
}

/// One layer's state, [h | c] as the run's start and end (c empty for the GRU).
pub struct LayerState<'a, E> {
    pub h: &'a mut [E],
    pub c: &'a mut [E],
}

/// Runs `len` ticks of one sequence: inputs x_t at x[t·ldx..] (`inputs` values), every
/// layer's state updated in place to the last tick's; the top layer's h (and c) rows of
/// every tick written to `states` (and `cells`) when given (`len` rows of its hidden size;
/// the caller fills the rest).
#[allow(clippy::too_many_arguments)]
pub fn run<E: Elem>(layers: &[&RegLayer<E>], x: &[E], ldx: usize, len: usize, state: &mut [LayerState<'_, E>], states: Option<&mut [MaybeUninit<E>]>, cells: Option<&mut [MaybeUninit<E>]>, fma: bool, ctl: &Control) -> SimResult<()> {
    assert!(layers.iter().all(|l| E::width_available(l.lanes)), "the caller checks Elem::available()");
    let top = layers.len() - 1;
    let htop = layers[top].hidden;
    assert!(states.as_ref().is_none_or(|s| s.len() >= len * htop) && cells.as_ref().is_none_or(|s| s.len() >= len * htop));
    if len > 0 {
        assert!(x.len() >= (len - 1) * ldx + layers[0].inputs);
    }
    let (states, cells) = (states.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr().cast::<E>()), cells.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr().cast::<E>()));
    // padded copies of each layer's h and c, and the rows of every layer but the top for one chunk
    let mut regs: Vec<(Vec<E>, Vec<E>)> = layers.iter().zip(state.iter()).map(|(l, s)| (padded_copy(s.h, l.q * l.lanes), padded_copy(s.c, l.q * l.lanes))).collect();
    let mut rows: Vec<Vec<E>> = layers[..top].iter().map(|l| vec![E::default(); CHUNK * l.hidden]).collect();
    let mut t0 = 0;
    while t0 < len {
        ctl.check()?;
        let ticks = CHUNK.min(len - t0);
        for (li, l) in layers.iter().enumerate() {
            let (below, here) = rows.split_at_mut(li);
            let (xin, ld) = if li == 0 { (x[t0 * ldx..].as_ptr(), ldx) } else { (below[li - 1].as_ptr(), layers[li - 1].hidden) };
            let (hs, cs) = if li == top {
                // SAFETY (offsets): states/cells hold len·htop values (asserted above)
                unsafe { (row_at(states, t0 * htop), row_at(cells, t0 * htop)) }
            } else {
                (here[0].as_mut_ptr(), std::ptr::null_mut())
            };
            let (h, c) = &mut regs[li];
            // SAFETY: the CPU has the kernel's features (asserted); x has `ticks` rows of
            // `inputs` values at stride `ld` from xin (asserted for layer 0; the previous
            // layer's chunk rows otherwise); hs and cs (when not null) hold `ticks` rows of
            // `hidden`; h and c hold q·lanes values (c none for the GRU).
            unsafe { E::run_layer(l, xin, ld, ticks, h, c, hs, cs, fma) };
        }
        t0 += ticks;
    }
    for ((s, (h, c)), l) in state.iter_mut().zip(&regs).zip(layers) {
        s.h.copy_from_slice(&h[..l.hidden]);
        let nc = s.c.len();
        s.c.copy_from_slice(&c[..nc]);
    }
    Ok(())
}

/// p + offset, or null for null (rows not kept).
#[inline(always)]
unsafe fn row_at<E>(p: *mut E, offset: usize) -> *mut E {
    if p.is_null() { p } else { p.add(offset) }
}

/// v padded with zeros to n values (empty stays empty).
fn padded_copy<E: Elem>(v: &[E], n: usize) -> Vec<E> {
    if v.is_empty() {
        return Vec::new();
    }
    let mut p = vec![E::default(); n];
    p[..v.len()].copy_from_slice(v);
    p
}

/// `$entry::<Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)` for the layer's cell (G = 4 gate
/// blocks for the LSTM, 5 for the Doubling-LSTM, 3 for the GRU) and `fma`, with Q = `$q`
/// vectors per gate block (a literal): the dispatch of every `run_layer_*`.
#[cfg(target_arch = "x86_64")]
macro_rules! go {
    ($entry:ident, $q:literal, $l:ident, $fma:ident, $x:ident, $ldx:ident, $ticks:ident, $h:ident, $c:ident, $hs:ident, $cs:ident) => {
        match ($l.kind, $fma) {
            (GatedKind::Lstm, true) => $entry::<$q, 4, true>($l, $x, $ldx, $ticks, $h, $c, $hs, $cs),
            (GatedKind::Lstm, false) => $entry::<$q, 4, false>($l, $x, $ldx, $ticks, $h, $c, $hs, $cs),
            (GatedKind::DoublingLstm, true) => $entry::<$q, 5, true>($l, $x, $ldx, $ticks, $h, $c, $hs, $cs),
            (GatedKind::DoublingLstm, false) => $entry::<$q, 5, false>($l, $x, $ldx, $ticks, $h, $c, $hs, $cs),
            (GatedKind::Gru, true) => $entry::<$q, 3, true>($l, $x, $ldx, $ticks, $h, $c, $hs, $cs),
            (GatedKind::Gru, false) => $entry::<$q, 3, false>($l, $x, $ldx, $ticks, $h, $c, $hs, $cs),
        }
    };
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32, fma: bool) {
    use x86::*;
    match (l.format, l.lanes, l.q) {
        (Rounding::Bf16, 8, 1) => go!(layer_avx2_bf16, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::Bf16, 8, 2) => go!(layer_avx2_bf16, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::Bf16, 8, 3) => go!(layer_avx2_bf16, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::Bf16, 8, _) => go!(layer_avx2_bf16, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, 8, 1) => go!(layer_avx2_f16, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, 8, 2) => go!(layer_avx2_f16, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, 8, 3) => go!(layer_avx2_f16, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, 8, _) => go!(layer_avx2_f16, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::Bf16, _, 1) => go!(layer_avx512_bf16, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::Bf16, _, 2) => go!(layer_avx512_bf16, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::Bf16, _, 3) => go!(layer_avx512_bf16, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::Bf16, _, _) => go!(layer_avx512_bf16, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, _, 1) => go!(layer_avx512_f16, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, _, 2) => go!(layer_avx512_f16, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, _, 3) => go!(layer_avx512_f16, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (Rounding::F16, _, _) => go!(layer_avx512_f16, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, 16, 1) => go!(layer_avx512, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, 16, 2) => go!(layer_avx512, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, 16, 3) => go!(layer_avx512, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, 16, _) => go!(layer_avx512, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, 1) => go!(layer_avx2, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, 2) => go!(layer_avx2, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, 3) => go!(layer_avx2, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, 4) => go!(layer_avx2, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, 5) => go!(layer_avx2, 5, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, 6) => go!(layer_avx2, 6, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, 7) => go!(layer_avx2, 7, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _, _) => go!(layer_avx2, 8, l, fma, x, ldx, ticks, h, c, hs, cs),
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer(_: &RegLayer<f32>, _: *const f32, _: usize, _: usize, _: &mut [f32], _: &mut [f32], _: *mut f32, _: *mut f32, _: bool) {
    unreachable!("available() is false off x86-64")
}

/// `run_layer` in f16's own arithmetic (16 binary16 lanes, AVX512-FP16).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer_f16(l: &RegLayer<u16>, x: *const u16, ldx: usize, ticks: usize, h: &mut [u16], c: &mut [u16], hs: *mut u16, cs: *mut u16, fma: bool) {
    use x86::*;
    match l.q {
        1 => go!(layer_f16, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        2 => go!(layer_f16, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        3 => go!(layer_f16, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        _ => go!(layer_f16, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
    }
}
#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer_f16(_: &RegLayer<u16>, _: *const u16, _: usize, _: usize, _: &mut [u16], _: &mut [u16], _: *mut u16, _: *mut u16, _: bool) {
    unreachable!("available() is false off x86-64")
}

/// `run_layer` in f64 (8 lanes with AVX-512, 4 with AVX2 + FMA).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer_f64(l: &RegLayer<f64>, x: *const f64, ldx: usize, ticks: usize, h: &mut [f64], c: &mut [f64], hs: *mut f64, cs: *mut f64, fma: bool) {
    use x86::*;
    match (l.lanes, l.q) {
        (8, 1) => go!(layer_avx512_f64, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (8, 2) => go!(layer_avx512_f64, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (8, 3) => go!(layer_avx512_f64, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (8, _) => go!(layer_avx512_f64, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, 1) => go!(layer_avx2_f64, 1, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, 2) => go!(layer_avx2_f64, 2, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, 3) => go!(layer_avx2_f64, 3, l, fma, x, ldx, ticks, h, c, hs, cs),
        (_, _) => go!(layer_avx2_f64, 4, l, fma, x, ldx, ticks, h, c, hs, cs),
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer_f64(_: &RegLayer<f64>, _: *const f64, _: usize, _: usize, _: &mut [f64], _: &mut [f64], _: *mut f64, _: *mut f64, _: bool) {
    unreachable!("available() is false off x86-64")
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::vectors::{Vector, V256, V256d, V256h, V512, V512d, V512h};
    use super::{row_at, RegLayer, GI_BYTES};
    #[cfg(test)]
    use crate::net::activation::Activation;

    /// `act` over 16 values (the tests' entry), AVX-512.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    pub(super) unsafe fn act_slice_avx512(a: Activation, x: &[f32], out: &mut [f32]) {
        V512::load(x.as_ptr()).act(a).store(out.as_mut_ptr());
    }

    /// The half vectors' operations on 16 lane pairs (the tests' entry): [add, mul,
    /// end_sum(a), add_act(a, b).0, add_act(a, b).1, end_sum_act(a), act(a)] with f32 sum
    /// steps a + b·b (fused and not) as the last two rows.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    pub(super) unsafe fn half_ops<const BF: bool>(f: Activation, a: &[f32; 16], b: &[f32; 16]) -> [[f32; 16]; 9] {
        let (x, y) = (V512h::<BF>::load(a.as_ptr()), V512h::<BF>::load(b.as_ptr()));
        let (s, t) = x.add_act(y, f);
        let rows = [x.add(y), x.mul(y), x.end_sum(), s, t, x.end_sum_act(f), x.act(f), x.sum_step::<true>(y, y), x.sum_step::<false>(y, y)];
        let mut out = [[0f32; 16]; 9];
        for (o, v) in out.iter_mut().zip(rows) {
            v.store(o.as_mut_ptr());
        }
        out
    }

    /// `half_ops` on `V256h` (AVX2 + F16C), lanes 0–7 and 8–15 as two vectors.
    #[cfg(test)]
    #[target_feature(enable = "avx2,avx,fma,f16c")]
    pub(super) unsafe fn half_ops_avx2<const BF: bool>(f: Activation, a: &[f32; 16], b: &[f32; 16]) -> [[f32; 16]; 9] {
        let mut out = [[0f32; 16]; 9];
        for half in [0, 8] {
            let (x, y) = (V256h::<BF>::load(a.as_ptr().add(half)), V256h::<BF>::load(b.as_ptr().add(half)));
            let (s, t) = x.add_act(y, f);
            let rows = [x.add(y), x.mul(y), x.end_sum(), s, t, x.end_sum_act(f), x.act(f), x.sum_step::<true>(y, y), x.sum_step::<false>(y, y)];
            for (o, v) in out.iter_mut().zip(rows) {
                v.store(o.as_mut_ptr().add(half));
            }
        }
        out
    }

    /// The native f16 vector's operations on 16 lane pairs of binary16 bits (the tests'
    /// entry): [add, mul, act(a), a + b·b fused, a + b·b not fused, −a, lane 5 of a].
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512fp16,fma,avx2,avx,f16c")]
    pub(super) unsafe fn f16_ops(f: Activation, a: &[u16; 16], b: &[u16; 16]) -> [[u16; 16]; 7] {
        use super::f16::V256ph;
        let (x, y) = (V256ph::load(a.as_ptr()), V256ph::load(b.as_ptr()));
        let rows = [x.add(y), x.mul(y), x.act(f), x.sum_step::<true>(y, y), x.sum_step::<false>(y, y), x.neg(), x.lane(5)];
        let mut out = [[0u16; 16]; 7];
        for (o, v) in out.iter_mut().zip(rows) {
            v.store(o.as_mut_ptr());
        }
        out
    }

    /// `act` over 8 values (the tests' entry), AVX2.
    #[cfg(test)]
    #[target_feature(enable = "avx2,avx,fma")]
    pub(super) unsafe fn act_slice_avx2(a: Activation, x: &[f32], out: &mut [f32]) {
        V256::load(x.as_ptr()).act(a).store(out.as_mut_ptr());
    }

    /// Where `affine` reads its z_k: values in memory, or the lanes of vectors in registers.
    pub(crate) trait Source<V: Vector> {
        /// z_k in every lane.
        unsafe fn at(&self, k: usize) -> V;
    }

    /// z_k at p + k.
    pub(crate) struct Memory<E>(pub(crate) *const E);

    impl<V: Vector> Source<V> for Memory<V::E> {
        #[inline(always)]
        unsafe fn at(&self, k: usize) -> V {
            V::splat_from(self.0.add(k))
        }
    }

    /// z_k in lane k mod L of vector k / L, broadcast by a permute (no store and reload).
    pub(crate) struct Registers<'a, V, const Q: usize>(pub(crate) &'a [V; Q]);

    impl<V: Vector, const Q: usize> Source<V> for Registers<'_, V, Q> {
        #[inline(always)]
        unsafe fn at(&self, k: usize) -> V {
            self.0[k / V::LANES].lane(k % V::LANES)
        }
    }

    /// b + Σ_k W[:, k]·z_k over k < n (k ascending; fused or rounded twice), for every unit
    /// of the G·Q vectors.
    #[inline(always)]
    pub(crate) unsafe fn affine<V: Vector, const Q: usize, const G: usize, const FUSED: bool>(w: *const V::E, b: *const V::E, z: impl Source<V>, n: usize) -> [[V; Q]; G] {
        let mut a = [[V::zero(); Q]; G];
        for (g, row) in a.iter_mut().enumerate() {
            for (q, v) in row.iter_mut().enumerate() {
                *v = V::load(b.add((g * Q + q) * V::LANES));
            }
        }
        accumulate::<V, Q, G, FUSED>(a, w, z, n)
    }

    /// a + Σ_k W[:, k]·z_k over k < n, in the order of `affine`.
    #[inline(always)]
    pub(crate) unsafe fn accumulate<V: Vector, const Q: usize, const G: usize, const FUSED: bool>(mut a: [[V; Q]; G], w: *const V::E, z: impl Source<V>, n: usize) -> [[V; Q]; G] {
        for k in 0..n {
            let (wk, zk) = (w.add(k * G * Q * V::LANES), z.at(k));
            for (g, row) in a.iter_mut().enumerate() {
                for (q, v) in row.iter_mut().enumerate() {
                    let wv = V::load(wk.add((g * Q + q) * V::LANES));
                    *v = v.sum_step::<FUSED>(wv, zk);
                }
            }
        }
        a
    }

    /// gh = b_hh + W_hh h: from h's registers when h is one vector (hidden ≤ 16 with
    /// AVX-512, ≤ 8 with AVX2), else from its copy at hp, stored each tick (with Q vectors the
    /// Q·L permutes cost more than the loads they save: at hidden 64 from registers 0.93 →
    /// 0.92 M token-steps/s). Batch 1, alternating builds, 2 runs, M token-steps/s: LSTM
    /// (1, 4000, 16, 4) 6.38–6.40 → 6.65, GRU 8.37–8.45 → 8.66–8.70.
    #[inline(always)]
    unsafe fn recurrent<V: Vector, const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<V::E>, hv: &[V; Q], hp: *const V::E) -> [[V; Q]; G] {
        let gh = if Q == 1 {
            affine::<V, Q, G, FUSED>(l.w_hh.as_ptr(), l.b_hh.as_ptr(), Registers(hv), l.hidden)
        } else {
            affine::<V, Q, G, FUSED>(l.w_hh.as_ptr(), l.b_hh.as_ptr(), Memory(hp), l.hidden)
        };
        ended(gh)
    }
    /// Every sum of an affine map ended (`Vector::end_sum`: rounded to the half format for
    /// the half formats with f32 sums, else nothing).
    #[inline(always)]
    unsafe fn ended<V: Vector, const Q: usize, const G: usize>(mut a: [[V; Q]; G]) -> [[V; Q]; G] {
        for row in a.iter_mut() {
            for v in row.iter_mut() {
                *v = v.end_sum();
            }
        }
        a
    }

    /// The Q vectors of h at p.
    #[inline(always)]
    unsafe fn load_state<V: Vector, const Q: usize>(p: *const V::E) -> [V; Q] {
        let mut hv = [V::zero(); Q];
        for (q, v) in hv.iter_mut().enumerate() {
            *v = V::load(p.add(q * V::LANES));
        }
        hv
    }

    /// Lanes of vector q that are units (< hidden).
    #[inline(always)]
    pub(crate) fn live<V: Vector>(q: usize, hidden: usize) -> usize {
        hidden.saturating_sub(q * V::LANES).min(V::LANES)
    }

    /// `layer` on 16-lane vectors.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx512<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        layer::<V512, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }

    /// `layer` on 16 lanes of bf16 with f32 sums.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx512_bf16<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        layer::<V512h<true>, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }
    /// `layer` on 16 lanes of f16 with f32 sums.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx512_f16<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        layer::<V512h<false>, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }
    /// `layer` on 16 binary16 lanes (f16's own arithmetic).
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512fp16,fma,avx2,avx,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_f16<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<u16>, x: *const u16, ldx: usize, ticks: usize, h: &mut [u16], c: &mut [u16], hs: *mut u16, cs: *mut u16) {
        layer::<super::f16::V256ph, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }
    /// `layer` on 8 f64 lanes.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx512_f64<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f64>, x: *const f64, ldx: usize, ticks: usize, h: &mut [f64], c: &mut [f64], hs: *mut f64, cs: *mut f64) {
        layer::<V512d, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }

    /// `layer` on 4 f64 lanes.
    #[target_feature(enable = "avx2,avx,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx2_f64<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f64>, x: *const f64, ldx: usize, ticks: usize, h: &mut [f64], c: &mut [f64], hs: *mut f64, cs: *mut f64) {
        layer::<V256d, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }

    /// `layer` on 8-lane vectors.
    #[target_feature(enable = "avx2,avx,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx2<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        layer::<V256, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }

    /// `layer` on 8 lanes of bf16 with f32 sums.
    #[target_feature(enable = "avx2,avx,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx2_bf16<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        layer::<V256h<true>, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }
    /// `layer` on 8 lanes of f16 with f32 sums.
    #[target_feature(enable = "avx2,avx,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer_avx2_f16<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<f32>, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        layer::<V256h<false>, Q, G, FUSED>(l, x, ldx, ticks, h, c, hs, cs)
    }

    /// `ticks` ticks of a GRU (G = 3), LSTM (G = 4) or Doubling-LSTM (G = 5) layer (see the
    /// module doc): gi of up to `GI_BYTES` of ticks, then those ticks.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn layer<V: Vector, const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<V::E>, x: *const V::E, ldx: usize, ticks: usize, h: &mut [V::E], c: &mut [V::E], hs: *mut V::E, cs: *mut V::E) {
        // (gi rows of f32 or f64 on whole cache lines: each row is G·Q vectors)
        #[repr(align(64))]
        struct Rows([u8; GI_BYTES]);
        let mut buf = Rows([0; GI_BYTES]);
        let rows = buf.0.as_mut_ptr().cast::<V::E>();
        let (cap, per) = (GI_BYTES / std::mem::size_of::<V::E>(), G * Q * V::LANES);
        let mut t0 = 0;
        while t0 < ticks {
            let n = (cap / per).min(ticks - t0);
            input_rows::<V, Q, G, FUSED>(l, x.add(t0 * ldx), ldx, n, rows);
            let (hs, cs) = (row_at(hs, t0 * l.hidden), row_at(cs, t0 * l.hidden));
            if G == 3 {
                gru_ticks::<V, Q, FUSED>(l, rows, n, h, hs);
            } else {
                lstm_ticks::<V, Q, G, FUSED>(l, rows, n, h, c, hs, cs);
            }
            t0 += n;
        }
    }

    /// gi = b_ih + W_ih x_t of `ticks` ticks (rows of G·Q vectors at `rows`).
    #[inline(always)]
    unsafe fn input_rows<V: Vector, const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<V::E>, x: *const V::E, ldx: usize, ticks: usize, rows: *mut V::E) {
        for t in 0..ticks {
            let gi = ended(affine::<V, Q, G, FUSED>(l.w_ih.as_ptr(), l.b_ih.as_ptr(), Memory(x.add(t * ldx)), l.inputs));
            for (g, row) in gi.iter().enumerate() {
                for (q, v) in row.iter().enumerate() {
                    v.store(rows.add(((t * G + g) * Q + q) * V::LANES));
                }
            }
        }
    }

    /// The rows of gi at `gi` (`input_rows`) and the vector q of gate g of tick t.
    #[inline(always)]
    unsafe fn gi_at<V: Vector, const Q: usize, const G: usize>(gi: *const V::E, t: usize, g: usize, q: usize) -> V {
        V::load(gi.add(((t * G + g) * Q + q) * V::LANES))
    }

    /// LSTM / Doubling-LSTM ticks on the gi rows at `gi`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn lstm_ticks<V: Vector, const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer<V::E>, gi: *const V::E, ticks: usize, h: &mut [V::E], c: &mut [V::E], hs: *mut V::E, cs: *mut V::E) {
        let hp = h.as_mut_ptr();
        // (plain loops here, no closures: a closure would not inherit the target features,
        // and the intrinsics in it would become calls)
        let mut cv = [V::zero(); Q];
        for (q, v) in cv.iter_mut().enumerate() {
            *v = V::load(c.as_ptr().add(q * V::LANES));
        }
        let mut hv = load_state::<V, Q>(hp);
        for t in 0..ticks {
            let gh = recurrent::<V, Q, G, FUSED>(l, &hv, hp);
            // each stage for every vector before the next stage (independent chains side by
            // side, so that the core overlaps their latencies)
            let mut a = [[V::zero(); Q]; G];
            for (g, row) in a.iter_mut().enumerate() {
                let f = if g == G - 2 { l.candidate } else { l.gate };
                for (q, v) in row.iter_mut().enumerate() {
                    let x = gi_at::<V, Q, G>(gi, t, g, q);
                    *v = if V::GROUPED { x.add(gh[g][q]) } else { x.add_act(gh[g][q], f).1 };
                }
            }
            if V::GROUPED {
                V::act_gates(&mut a, l.gate, l.candidate, G - 2);
            }
            // c' = (f·c) + (i·g), and act(c') with it (`Vector::add_act`)
            let mut out = [V::zero(); Q];
            for q in 0..Q {
                let f = if G == 5 { a[1][q].add(a[2][q]) } else { a[1][q] };
                let (fc, ig) = (f.mul(cv[q]), a[0][q].mul(a[G - 2][q]));
                if V::GROUPED {
                    cv[q] = fc.add(ig);
                } else {
                    (cv[q], out[q]) = fc.add_act(ig, l.output);
                }
            }
            if V::GROUPED {
                let mut grouped = [cv];
                V::act_gates(&mut grouped, l.output, l.output, 1);
                out = grouped[0];
            }
            for q in 0..Q {
                hv[q] = a[G - 1][q].mul(out[q]);
                if Q > 1 {
                    hv[q].store(hp.add(q * V::LANES));
                }
                let m = live::<V>(q, l.hidden);
                if !hs.is_null() {
                    hv[q].store_first(hs.add(t * l.hidden + q * V::LANES), m);
                }
                if !cs.is_null() {
                    cv[q].store_first(cs.add(t * l.hidden + q * V::LANES), m);
                }
            }
        }
        for q in 0..Q {
            cv[q].store(c.as_mut_ptr().add(q * V::LANES));
            hv[q].store(hp.add(q * V::LANES));
        }
    }

    /// GRU ticks on the gi rows at `gi`.
    #[inline(always)]
    unsafe fn gru_ticks<V: Vector, const Q: usize, const FUSED: bool>(l: &RegLayer<V::E>, gi: *const V::E, ticks: usize, h: &mut [V::E], hs: *mut V::E) {
        let hp = h.as_mut_ptr();
        let mut hv = load_state::<V, Q>(hp);
        for t in 0..ticks {
            let gh = recurrent::<V, Q, 3, FUSED>(l, &hv, hp);
            let (mut rz, mut n, mut next) = ([[V::zero(); Q]; 2], [V::zero(); Q], [V::zero(); Q]);
            for (g, row) in rz.iter_mut().enumerate() {
                for (q, v) in row.iter_mut().enumerate() {
                    let x = gi_at::<V, Q, 3>(gi, t, g, q);
                    *v = if V::GROUPED { x.add(gh[g][q]) } else { x.add_act(gh[g][q], l.gate).1 };
                }
            }
            if V::GROUPED {
                V::act_gates(&mut rz, l.gate, l.gate, 2);
            }
            for (q, v) in n.iter_mut().enumerate() {
                let (x, rg) = (gi_at::<V, Q, 3>(gi, t, 2, q), rz[0][q].mul(gh[2][q]));
                *v = if V::GROUPED { x.add(rg) } else { x.add_act(rg, l.candidate).1 };
            }
            if V::GROUPED {
                let mut one = [n];
                V::act_gates(&mut one, l.candidate, l.candidate, 1);
                n = one[0];
            }
            for (q, v) in next.iter_mut().enumerate() {
                *v = n[q].add(rz[1][q].mul(hv[q].add(n[q].neg())));
            }
            hv = next;
            for (q, v) in hv.iter().enumerate() {
                if Q > 1 {
                    v.store(hp.add(q * V::LANES));
                }
                if !hs.is_null() {
                    v.store_first(hs.add(t * l.hidden + q * V::LANES), live::<V>(q, l.hidden));
                }
            }
        }
        for (q, v) in hv.iter().enumerate() {
            v.store(hp.add(q * V::LANES));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[path = "gated_single_vectors.rs"]
pub(crate) mod vectors;

#[cfg(target_arch = "x86_64")]
#[path = "gated_single_f16.rs"]
pub(crate) mod f16;

#[cfg(test)]
#[path = "gated_single_tests.rs"]
mod tests;
