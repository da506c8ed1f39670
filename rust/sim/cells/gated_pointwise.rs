//! The elementwise part of the gated cells (gated.rs) for a whole block of sequences at
//! once, on lanes: the same operations in the same order per unit as `GatedPlan::step`,
//! laid out so that each activation is one call over the block and the state updates are
//! straight loops.
//!
//! Layout: `gi`/`gh` hold the tile kernel's rows (sequence s at s·stride, gate blocks of H
//! units in the cell's order: LSTM i f g o, Doubling-LSTM i f f² g o, GRU r z n). The
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
//! h' = n + z·(h + (−n))) are one flat loop over the block. Sequences that have finished
//! (`active` false) are computed and not stored: their h and c stay.

use crate::num::scalar::Scalar;
use crate::sim::cells::gated::{GatedKind, GatedPlan};
use crate::sim::float_batch::activate;
use crate::sim::lanes::LaneFormat;

/// The rows of one layer's gate affine maps for a block of `ns` sequences.
pub struct GateRows<'a, C> {
    pub ns: usize,
    pub gi: &'a [C],
    pub stride_i: usize,
    pub gh: &'a [C],
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
#[inline(always)]
fn add_gates<F: LaneFormat>(rows: &GateRows<'_, F::C>, hsz: usize, map: &[(usize, usize)], pre: &mut [F::C]) {
    let hs = rows.ns * hsz;
    for s in 0..rows.ns {
        let (gi, gh) = (&rows.gi[s * rows.stride_i..], &rows.gh[s * rows.stride_h..]);
        for &(r, q) in map {
            let dst = &mut pre[r * hs + s * hsz..r * hs + (s + 1) * hsz];
            for ((d, &a), &b) in dst.iter_mut().zip(&gi[q * hsz..(q + 1) * hsz]).zip(&gh[q * hsz..(q + 1) * hsz]) {
                *d = F::add_l(a, b);
            }
        }
    }
}

/// Calls `f` on the element ranges of the active sequences (one range when all are).
#[inline(always)]
fn for_active(ns: usize, hsz: usize, active: Option<&[bool]>, mut f: impl FnMut(std::ops::Range<usize>)) {
    match active {
        None => f(0..ns * hsz),
        Some(a) => (0..ns).filter(|&s| a[s]).for_each(|s| f(s * hsz..(s + 1) * hsz)),
    }
}

/// One tick of an LSTM or Doubling-LSTM layer for the block: h, c (ns × H) updated in place.
/// `added`: the tiles already wrote gi + gh to `pre` (`gate_regions`).
/// (The same code is compiled with AVX-512 enabled, and with AVX2 + FMA, and run on the
/// widest the CPU has (`cpu`), so that the straight loops vectorise 16 or 8 lanes wide; no
/// operation changes, so neither do the bits.)
#[allow(clippy::too_many_arguments)]
pub fn lstm_block<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512() {
        // SAFETY: the CPU has the features the function is compiled for (checked).
        return unsafe { lstm_block_avx512(g, rows, pre, h, c, active, added) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        // SAFETY: as above.
        return unsafe { lstm_block_avx2(g, rows, pre, h, c, active, added) };
    }
    lstm_block_body(g, rows, pre, h, c, active, added)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn lstm_block_avx512<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    lstm_block_body(g, rows, pre, h, c, active, added)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn lstm_block_avx2<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    lstm_block_body(g, rows, pre, h, c, active, added)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lstm_block_body<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], c: &mut [F::C], active: Option<&[bool]>, added: bool) {
    let (hsz, ns) = (g.hidden, rows.ns);
    let hs = ns * hsz;
    let double = g.kind == GatedKind::DoublingLstm;
    let map = added_gates(g.kind);
    let nsig = map.len() - 1;
    if !added {
        add_gates::<F>(rows, hsz, map, pre);
    }
    activate::<F>(g.gate, &mut pre[..nsig * hs]);
    activate::<F>(g.candidate, &mut pre[nsig * hs..(nsig + 1) * hs]);
    let (sig, cand) = pre.split_at_mut(nsig * hs);
    let cand = &mut cand[..hs];
    let (i, rest) = sig.split_at(hs);
    let (f, rest) = rest.split_at(hs);
    let (f2, o) = if double { rest.split_at(hs) } else { (&rest[..0], rest) };
    let (add, mul) = (F::add_l, F::mul_l);
    // c' = (f·c) + (i·g), kept also in the candidate region for act(c')
    for_active(ns, hsz, active, |r| {
        let (c, g, i, f) = (&mut c[r.clone()], &mut cand[r.clone()], &i[r.clone()], &f[r.clone()]);
        if double {
            let f2 = &f2[r];
            for ((((c, g), &i), &f), &f2) in c.iter_mut().zip(g.iter_mut()).zip(i).zip(f).zip(f2) {
                let cn = add(mul(add(f, f2), *c), mul(i, *g));
                *c = cn;
                *g = cn;
            }
        } else {
            for (((c, g), &i), &f) in c.iter_mut().zip(g.iter_mut()).zip(i).zip(f) {
                let cn = add(mul(f, *c), mul(i, *g));
                *c = cn;
                *g = cn;
            }
        }
    });
    activate::<F>(g.output, cand);
    // h' = o · act(c')
    for_active(ns, hsz, active, |r| {
        for ((h, &o), &a) in h[r.clone()].iter_mut().zip(&o[r.clone()]).zip(&cand[r]) {
            *h = mul(o, a);
        }
    });
}

/// One tick of a GRU layer for the block: h (ns × H) updated in place. `added`: the tiles
/// already wrote gi + gh of r and z to `pre` (`gate_regions`).
/// (Compiled for AVX-512 and for AVX2 + FMA, as `lstm_block`.)
pub fn gru_block<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512() {
        // SAFETY: the CPU has the features the function is compiled for (checked).
        return unsafe { gru_block_avx512(g, rows, pre, h, active, added) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        // SAFETY: as above.
        return unsafe { gru_block_avx2(g, rows, pre, h, active, added) };
    }
    gru_block_body(g, rows, pre, h, active, added)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma")]
unsafe fn gru_block_avx512<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    gru_block_body(g, rows, pre, h, active, added)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma")]
unsafe fn gru_block_avx2<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    gru_block_body(g, rows, pre, h, active, added)
}

#[inline(always)]
fn gru_block_body<F: LaneFormat + Scalar>(g: &GatedPlan<F>, rows: &GateRows<'_, F::C>, pre: &mut [F::C], h: &mut [F::C], active: Option<&[bool]>, added: bool) {
    let (hsz, ns) = (g.hidden, rows.ns);
    let hs = ns * hsz;
    let (add, mul) = (F::add_l, F::mul_l);
    if !added {
        add_gates::<F>(rows, hsz, added_gates(g.kind), pre);
    }
    activate::<F>(g.gate, &mut pre[..2 * hs]);
    let (rz, n) = pre.split_at_mut(2 * hs);
    let n = &mut n[..hs];
    // n = act(gi_n + (r·gh_n))
    for s in 0..ns {
        let (gi, gh) = (&rows.gi[s * rows.stride_i + 2 * hsz..][..hsz], &rows.gh[s * rows.stride_h + 2 * hsz..][..hsz]);
        let r = &rz[s * hsz..(s + 1) * hsz];
        for (((d, &a), &b), &r) in n[s * hsz..(s + 1) * hsz].iter_mut().zip(gi).zip(gh).zip(r) {
            *d = add(a, mul(r, b));
        }
    }
    activate::<F>(g.candidate, n);
    let z = &rz[hs..];
    // h' = n + (z·(h + (−n)))
    for_active(ns, hsz, active, |r| {
        for ((h, &z), &n) in h[r.clone()].iter_mut().zip(&z[r.clone()]).zip(&n[r]) {
            *h = add(n, mul(z, add(*h, -n)));
        }
    });
}
