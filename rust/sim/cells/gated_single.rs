//! One sequence through a stack of small gated layers (LSTM, Doubling-LSTM, GRU; hidden ≤
//! 64) in f32 with AVX-512 + FMA, each layer's gates, cell and state held in registers
//! from one tick to the next: the lock-step kernel's path for a block of one sequence
//! (`gated_batch::run_block`), with the same operations in the same order per unit as
//! `GatedPlan::step`, so the same bits.
//!
//! Batch 1 is a chain of dependent ticks; each tick waits for
//!   gh = b_hh + W_hh h (H dependent FMAs per unit) → the gate activations → c' → act(c') → h'.
//! The general kernel puts the tile driver, gate-major scratch rows and a call per
//! activation between those steps; here a tick is straight-line code on
//! [[__m512; Q]; G] (G gate blocks of Q vectors of 16 units each, every block padded to a
//! vector boundary with zero weights, so each vector belongs to one gate):
//!
//!   gi = b_ih + Σ_k W_ih[:, k]·x_k,  gh = b_hh + Σ_k W_hh[:, k]·h_k   (k ascending; fused
//!   or mul-then-add as the run's `fma`; h_k broadcast from the copy of h stored last tick)
//!   LSTM: i, f, g, o = act(gi + gh) per block;  c' = (f·c) + (i·g);  h' = o·act(c')
//!   GRU:  r, z = σ(gi + gh);  n = act(gi_n + (r·gh_n));  h' = n + (z·(h + (−n)))
//!
//! with tanh/σ exact as `activation_avx512` (`apply16`). The padded units have zero
//! pre-activations and are never read as inputs or stored. A stack runs layer by layer over
//! chunks of `CHUNK` ticks (layer l's rows of a chunk are layer l+1's inputs); only the top
//! layer's rows are kept (`states`, `cells`).

use crate::error::SimResult;
use crate::net::activation::Activation;
use crate::sim::cancel::Control;
use crate::sim::cells::gated::{GatedKind, GatedPlan};
use std::mem::MaybeUninit;

/// Largest hidden size run here (4 vectors of 16 units per gate block).
pub const MAX_HIDDEN: usize = 64;
/// Ticks per chunk of a stack (the inputs of the next layer, chunk × hidden values).
const CHUNK: usize = 512;
/// Bytes of gi rows computed ahead of the recurrent ticks (so that the ticks hold only gh
/// in registers: 16 vectors at hidden 64, where gi and gh together would spill).
const GI_BYTES: usize = 32 * 1024;

/// One gated layer's weights for this kernel: W_ih and W_hh transposed (k-major), each
/// column's gate blocks padded to Q·16 units; biases the same.
pub struct RegLayer {
    kind: GatedKind,
    hidden: usize,
    inputs: usize,
    /// vectors per gate block
    q: usize,
    gate: Activation,
    candidate: Activation,
    output: Activation,
    w_ih: Vec<f32>,
    b_ih: Vec<f32>,
    w_hh: Vec<f32>,
    b_hh: Vec<f32>,
}

/// Whether this CPU runs the kernel (AVX-512 F/VL/DQ and FMA).
pub fn available() -> bool {
    crate::sim::cpu::avx512()
}

/// The layer in this kernel's layout, or None when its hidden size is above `MAX_HIDDEN`.
pub fn pack(g: &GatedPlan<f32>) -> Option<RegLayer> {
    let hsz = g.hidden;
    if hsz == 0 || hsz > MAX_HIDDEN {
        return None;
    }
    let q = hsz.div_ceil(16);
    let blocks = g.ih.rows / hsz;
    let padded = |w: &[f32], b: &[f32], cols: usize| {
        let width = blocks * q * 16;
        let mut wt = vec![0f32; cols * width];
        let mut bp = vec![0f32; width];
        for blk in 0..blocks {
            for u in 0..hsz {
                let (row, at) = (blk * hsz + u, blk * q * 16 + u);
                bp[at] = b[row];
                for k in 0..cols {
                    wt[k * width + at] = w[row * cols + k];
                }
            }
        }
        (wt, bp)
    };
    let (w_ih, b_ih) = padded(&g.ih.w, &g.ih.b, g.ih.cols);
    let (w_hh, b_hh) = padded(&g.hh.w, &g.hh.b, g.hh.cols);
    Some(RegLayer { kind: g.kind, hidden: hsz, inputs: g.ih.cols, q, gate: g.gate, candidate: g.candidate, output: g.output, w_ih, b_ih, w_hh, b_hh })
}

/// One layer's state, [h | c] as the run's start and end (c empty for the GRU).
pub struct LayerState<'a> {
    pub h: &'a mut [f32],
    pub c: &'a mut [f32],
}

/// Runs `len` ticks of one sequence: inputs x_t at x[t·ldx..] (`inputs` values), every
/// layer's state updated in place to the last tick's; the top layer's h (and c) rows of
/// every tick written to `states` (and `cells`) when given (`len` rows of its hidden size;
/// the caller fills the rest).
#[allow(clippy::too_many_arguments)]
pub fn run(layers: &[&RegLayer], x: &[f32], ldx: usize, len: usize, state: &mut [LayerState<'_>], states: Option<&mut [MaybeUninit<f32>]>, cells: Option<&mut [MaybeUninit<f32>]>, fma: bool, ctl: &Control) -> SimResult<()> {
    assert!(available(), "the caller checks gated_single::available()");
    let top = layers.len() - 1;
    let htop = layers[top].hidden;
    assert!(states.as_ref().is_none_or(|s| s.len() >= len * htop) && cells.as_ref().is_none_or(|s| s.len() >= len * htop));
    if len > 0 {
        assert!(x.len() >= (len - 1) * ldx + layers[0].inputs);
    }
    let (states, cells) = (states.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr().cast::<f32>()), cells.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr().cast::<f32>()));
    // padded copies of each layer's h and c, and the rows of every layer but the top for one chunk
    let mut regs: Vec<(Vec<f32>, Vec<f32>)> = layers.iter().zip(state.iter()).map(|(l, s)| (padded_copy(s.h, l.q), padded_copy(s.c, l.q))).collect();
    let mut rows: Vec<Vec<f32>> = layers[..top].iter().map(|l| vec![0f32; CHUNK * l.hidden]).collect();
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
            // `hidden`; h and c hold q·16 values (c none for the GRU).
            unsafe { run_layer(l, xin, ld, ticks, h, c, hs, cs, fma) };
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
unsafe fn row_at(p: *mut f32, offset: usize) -> *mut f32 {
    if p.is_null() { p } else { p.add(offset) }
}

/// v padded with zeros to q vectors of 16 (empty stays empty).
fn padded_copy(v: &[f32], q: usize) -> Vec<f32> {
    if v.is_empty() {
        return Vec::new();
    }
    let mut p = vec![0f32; q * 16];
    p[..v.len()].copy_from_slice(v);
    p
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer(l: &RegLayer, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32, fma: bool) {
    use x86::*;
    macro_rules! go {
        ($q:literal) => {
            match (l.kind, fma) {
                (GatedKind::Lstm, true) => layer::<$q, 4, true>(l, x, ldx, ticks, h, c, hs, cs),
                (GatedKind::Lstm, false) => layer::<$q, 4, false>(l, x, ldx, ticks, h, c, hs, cs),
                (GatedKind::DoublingLstm, true) => layer::<$q, 5, true>(l, x, ldx, ticks, h, c, hs, cs),
                (GatedKind::DoublingLstm, false) => layer::<$q, 5, false>(l, x, ldx, ticks, h, c, hs, cs),
                (GatedKind::Gru, true) => layer::<$q, 3, true>(l, x, ldx, ticks, h, c, hs, cs),
                (GatedKind::Gru, false) => layer::<$q, 3, false>(l, x, ldx, ticks, h, c, hs, cs),
            }
        };
    }
    match l.q {
        1 => go!(1),
        2 => go!(2),
        3 => go!(3),
        _ => go!(4),
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn run_layer(_: &RegLayer, _: *const f32, _: usize, _: usize, _: &mut [f32], _: &mut [f32], _: *mut f32, _: *mut f32, _: bool) {
    unreachable!("available() is false off x86-64")
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{row_at, RegLayer, GI_BYTES};
    use crate::net::activation::Activation;
    use crate::sim::activation_avx512::apply16;
    use crate::sim::fast_sigmoid::Sigmoid;
    use crate::sim::fast_tanh::Tanh;
    use std::arch::x86_64::*;

    /// The lanes where v > c (false for NaN).
    #[inline(always)]
    unsafe fn gt(v: __m512, c: __m512) -> __mmask16 {
        _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, c)
    }

    /// `act` on 16 lanes, as `float_batch::activate` on each.
    #[inline(always)]
    unsafe fn act(a: Activation, x: __m512) -> __m512 {
        let (zero, one) = (_mm512_setzero_ps(), _mm512_set1_ps(1.0));
        match a {
            Activation::Identity => x,
            Activation::Tanh => apply16::<Tanh>(x),
            Activation::Sigmoid => apply16::<Sigmoid>(x),
            // x > 0 ? x : 0 (NaN: 0)
            Activation::Relu => _mm512_maskz_mov_ps(gt(x, zero), x),
            // x > 1 ? 1 : x > 0 ? x : 0
            Activation::Slu => _mm512_mask_blend_ps(gt(x, one), _mm512_maskz_mov_ps(gt(x, zero), x), one),
            Activation::Step => _mm512_maskz_mov_ps(gt(x, zero), one),
            // x > 0 ? 1 : x < 0 ? −1 : 0
            Activation::Sign => _mm512_mask_blend_ps(gt(zero, x), _mm512_maskz_mov_ps(gt(x, zero), one), _mm512_set1_ps(-1.0)),
            // x > 0 ? 1 : x < 0 ? 0 : ½
            Activation::SatSigmoid => _mm512_mask_blend_ps(gt(x, zero), _mm512_maskz_mov_ps(!gt(zero, x), _mm512_set1_ps(0.5)), one),
        }
    }

    /// `act` over 16 values (the tests' entry).
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    pub(super) unsafe fn act_slice16(a: Activation, x: &[f32], out: &mut [f32]) {
        _mm512_storeu_ps(out.as_mut_ptr(), act(a, _mm512_loadu_ps(x.as_ptr())));
    }

    /// acc + w·z (z: the f32 at p in every lane), fused or rounded twice.
    #[inline(always)]
    unsafe fn madd<const FUSED: bool>(acc: __m512, w: __m512, p: *const f32) -> __m512 {
        let z = _mm512_set1_ps(*p);
        if FUSED { _mm512_fmadd_ps(w, z, acc) } else { _mm512_add_ps(acc, _mm512_mul_ps(w, z)) }
    }

    /// b + Σ_k W[:, k]·z_k over k < n, for every unit of the G·Q vectors.
    #[inline(always)]
    unsafe fn affine<const Q: usize, const G: usize, const FUSED: bool>(w: *const f32, b: *const f32, z: *const f32, n: usize) -> [[__m512; Q]; G] {
        let mut a = [[_mm512_setzero_ps(); Q]; G];
        for (g, row) in a.iter_mut().enumerate() {
            for (q, v) in row.iter_mut().enumerate() {
                *v = _mm512_loadu_ps(b.add((g * Q + q) * 16));
            }
        }
        for k in 0..n {
            let wk = w.add(k * G * Q * 16);
            for (g, row) in a.iter_mut().enumerate() {
                for (q, v) in row.iter_mut().enumerate() {
                    *v = madd::<FUSED>(*v, _mm512_loadu_ps(wk.add((g * Q + q) * 16)), z.add(k));
                }
            }
        }
        a
    }

    /// Lanes of vector q that are units (< hidden).
    #[inline(always)]
    fn live(q: usize, hidden: usize) -> __mmask16 {
        let n = hidden.saturating_sub(q * 16).min(16);
        if n == 16 { 0xffff } else { (1u16 << n) - 1 }
    }

    /// `ticks` ticks of a GRU (G = 3), LSTM (G = 4) or Doubling-LSTM (G = 5) layer (see the
    /// module doc): gi of up to `GI_BYTES` of ticks, then those ticks.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn layer<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer, x: *const f32, ldx: usize, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        let mut rows = [0f32; GI_BYTES / 4];
        let per = G * Q * 16;
        let mut t0 = 0;
        while t0 < ticks {
            let n = (rows.len() / per).min(ticks - t0);
            input_rows::<Q, G, FUSED>(l, x.add(t0 * ldx), ldx, n, rows.as_mut_ptr());
            let (hs, cs) = (row_at(hs, t0 * l.hidden), row_at(cs, t0 * l.hidden));
            if G == 3 {
                gru_ticks::<Q, FUSED>(l, rows.as_ptr(), n, h, hs);
            } else {
                lstm_ticks::<Q, G, FUSED>(l, rows.as_ptr(), n, h, c, hs, cs);
            }
            t0 += n;
        }
    }

    /// gi = b_ih + W_ih x_t of `ticks` ticks (rows of G·Q vectors at `rows`).
    #[inline(always)]
    unsafe fn input_rows<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer, x: *const f32, ldx: usize, ticks: usize, rows: *mut f32) {
        for t in 0..ticks {
            let gi = affine::<Q, G, FUSED>(l.w_ih.as_ptr(), l.b_ih.as_ptr(), x.add(t * ldx), l.inputs);
            for (g, row) in gi.iter().enumerate() {
                for (q, v) in row.iter().enumerate() {
                    _mm512_storeu_ps(rows.add(((t * G + g) * Q + q) * 16), *v);
                }
            }
        }
    }

    /// The rows of gi at `gi` (`input_rows`) and the vector q of gate g of tick t.
    #[inline(always)]
    unsafe fn gi_at<const Q: usize, const G: usize>(gi: *const f32, t: usize, g: usize, q: usize) -> __m512 {
        _mm512_loadu_ps(gi.add(((t * G + g) * Q + q) * 16))
    }

    /// LSTM / Doubling-LSTM ticks on the gi rows at `gi`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn lstm_ticks<const Q: usize, const G: usize, const FUSED: bool>(l: &RegLayer, gi: *const f32, ticks: usize, h: &mut [f32], c: &mut [f32], hs: *mut f32, cs: *mut f32) {
        let hp = h.as_mut_ptr();
        // (plain loops here, no closures: a closure would not inherit the target features,
        // and the intrinsics in it would become calls)
        let mut cv = [_mm512_setzero_ps(); Q];
        for (q, v) in cv.iter_mut().enumerate() {
            *v = _mm512_loadu_ps(c.as_ptr().add(q * 16));
        }
        for t in 0..ticks {
            let gh = affine::<Q, G, FUSED>(l.w_hh.as_ptr(), l.b_hh.as_ptr(), hp, l.hidden);
            // each stage for every vector before the next stage (independent chains side by
            // side, so that the core overlaps their latencies)
            let mut a = [[_mm512_setzero_ps(); Q]; G];
            for (g, row) in a.iter_mut().enumerate() {
                let f = if g == G - 2 { l.candidate } else { l.gate };
                for (q, v) in row.iter_mut().enumerate() {
                    *v = act(f, _mm512_add_ps(gi_at::<Q, G>(gi, t, g, q), gh[g][q]));
                }
            }
            for q in 0..Q {
                let f = if G == 5 { _mm512_add_ps(a[1][q], a[2][q]) } else { a[1][q] };
                cv[q] = _mm512_add_ps(_mm512_mul_ps(f, cv[q]), _mm512_mul_ps(a[0][q], a[G - 2][q]));
            }
            let mut out = [_mm512_setzero_ps(); Q];
            for (v, &c) in out.iter_mut().zip(&cv) {
                *v = act(l.output, c);
            }
            for q in 0..Q {
                let hv = _mm512_mul_ps(a[G - 1][q], out[q]);
                _mm512_storeu_ps(hp.add(q * 16), hv);
                let m = live(q, l.hidden);
                if !hs.is_null() {
                    _mm512_mask_storeu_ps(hs.add(t * l.hidden + q * 16), m, hv);
                }
                if !cs.is_null() {
                    _mm512_mask_storeu_ps(cs.add(t * l.hidden + q * 16), m, cv[q]);
                }
            }
        }
        for (q, v) in cv.iter().enumerate() {
            _mm512_storeu_ps(c.as_mut_ptr().add(q * 16), *v);
        }
    }

    /// GRU ticks on the gi rows at `gi`.
    #[inline(always)]
    unsafe fn gru_ticks<const Q: usize, const FUSED: bool>(l: &RegLayer, gi: *const f32, ticks: usize, h: &mut [f32], hs: *mut f32) {
        let hp = h.as_mut_ptr();
        let sign = _mm512_set1_ps(-0.0);
        for t in 0..ticks {
            let gh = affine::<Q, 3, FUSED>(l.w_hh.as_ptr(), l.b_hh.as_ptr(), hp, l.hidden);
            let (mut rz, mut n, mut next) = ([[_mm512_setzero_ps(); Q]; 2], [_mm512_setzero_ps(); Q], [_mm512_setzero_ps(); Q]);
            for (g, row) in rz.iter_mut().enumerate() {
                for (q, v) in row.iter_mut().enumerate() {
                    *v = act(l.gate, _mm512_add_ps(gi_at::<Q, 3>(gi, t, g, q), gh[g][q]));
                }
            }
            for (q, v) in n.iter_mut().enumerate() {
                *v = act(l.candidate, _mm512_add_ps(gi_at::<Q, 3>(gi, t, 2, q), _mm512_mul_ps(rz[0][q], gh[2][q])));
            }
            for (q, v) in next.iter_mut().enumerate() {
                let hq = _mm512_loadu_ps(hp.add(q * 16));
                *v = _mm512_add_ps(n[q], _mm512_mul_ps(rz[1][q], _mm512_add_ps(hq, _mm512_xor_ps(n[q], sign))));
            }
            // every vector's h is read before any is replaced
            for (q, hv) in next.iter().enumerate() {
                _mm512_storeu_ps(hp.add(q * 16), *hv);
                if !hs.is_null() {
                    _mm512_mask_storeu_ps(hs.add(t * l.hidden + q * 16), live(q, l.hidden), *hv);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "gated_single_tests.rs"]
mod tests;
