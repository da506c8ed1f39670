//! The lock-step batch kernel of the gated cells (LSTM, Doubling-LSTM, GRU, and stacks of
//! them) in the builtin float formats: a block of sequences advances together, one tick at
//! a time, layer by layer.
//!
//! Per layer and tick, the two affine maps of `gated` (gi = b_ih + W_ih x_t and
//! gh = b_hh + W_hh h_{t−1}, each row in `DenseAffine`'s order: bias, then + w_rk·z_k for k
//! ascending, every operation rounded) are computed for the whole block by the register-
//! tiled `tile_kernel` (the stacked gate matrices packed once per plan, transposed so that
//! the gate rows are the SIMD dimension), then the elementwise part of `gated` runs per
//! sequence with the same operations in the same order, on lanes (`LaneFormat`): so every
//! value is bit for bit the per-sequence engine's, whatever the block, tile or thread.
//! Activations run over whole gate blocks (vectorised tanh/sigmoid, exact by `fast_tanh`
//! and `fast_sigmoid`; f64 calls libm as `Float` does).

use crate::error::SimResult;
use crate::num::scalar::Scalar;
use crate::sim::cancel::Control;
use crate::sim::cells::gated::{GatedKind, GatedPlan};
use crate::sim::cells::run::{CellBatch, Starts};
use crate::sim::cells::{LayerPlan, StackPlan};
use crate::sim::float_batch::{activate, block_size};
use crate::sim::lanes::{Lane, LaneFormat};
use crate::sim::pool::with_pool;
use crate::sim::run::BatchSpec;
use crate::sim::tile_kernel::{accumulate, Packed};
use rayon::prelude::*;
use std::any::Any;
use std::sync::Arc;

/// A gated layer's affine maps in lane form: transposed and packed, biases padded.
pub struct GatedLanes<C> {
    ih: Packed<C>,
    b_ih: Vec<C>,
    hh: Packed<C>,
    b_hh: Vec<C>,
}

fn pack<F: LaneFormat + Scalar>(a: &crate::sim::cells::affine::DenseAffine<F>) -> (Packed<F::C>, Vec<F::C>) {
    let (rows, cols) = (a.rows, a.cols);
    let mut wt = vec![F::C::ZERO; rows * cols];
    for r in 0..rows {
        for k in 0..cols {
            wt[k * rows + r] = a.w[r * cols + k].to_lane();
        }
    }
    let p = Packed::for_units(&wt, cols, rows);
    let mut b = vec![F::C::ZERO; p.up];
    for (d, v) in b.iter_mut().zip(&a.b) {
        *d = v.to_lane();
    }
    (p, b)
}

fn lanes_of<F: LaneFormat + Scalar>(g: &GatedPlan<F>) -> Arc<GatedLanes<F::C>> {
    let any = g
        .lockstep
        .get_or_init(|| {
            let ((ih, b_ih), (hh, b_hh)) = (pack(&g.ih), pack(&g.hh));
            Arc::new(GatedLanes { ih, b_ih, hh, b_hh }) as Arc<dyn Any + Send + Sync>
        })
        .clone();
    any.downcast::<GatedLanes<F::C>>().expect("the cached weights have the plan's lane type")
}

/// One layer's block state and scratch.
struct LayerBlock<C> {
    /// h rows (ns × H) and c rows (ns × H, LSTMs)
    h: Vec<C>,
    c: Vec<C>,
    gi: Vec<C>,
    gh: Vec<C>,
}

/// The elementwise part of `GatedPlan::step` for one sequence, on lanes (same operations,
/// same order; see gated.rs). `gi`/`gh` are overwritten as scratch.
fn pointwise<F: LaneFormat + Scalar>(g: &GatedPlan<F>, gi: &mut [F::C], gh: &[F::C], h: &mut [F::C], c: &mut [F::C]) {
    let hsz = g.hidden;
    let (add, mul) = (F::add_l, F::mul_l);
    match g.kind {
        GatedKind::Lstm | GatedKind::DoublingLstm => {
            let blocks = if g.kind == GatedKind::Lstm { 4 } else { 5 };
            for (a, &b) in gi[..blocks * hsz].iter_mut().zip(gh) {
                *a = add(*a, b);
            }
            // gate blocks i, f (, f2) and o; candidate block g
            let (bg, bo) = ((blocks - 2) * hsz, (blocks - 1) * hsz);
            activate::<F>(g.gate, &mut gi[..bg]);
            activate::<F>(g.candidate, &mut gi[bg..bo]);
            activate::<F>(g.gate, &mut gi[bo..bo + hsz]);
            let double = blocks == 5;
            for u in 0..hsz {
                let i = gi[u];
                let f = if double { add(gi[hsz + u], gi[2 * hsz + u]) } else { gi[hsz + u] };
                c[u] = add(mul(f, c[u]), mul(i, gi[bg + u]));
            }
            // tanh(c') in place of the candidate block, then h' = o · act(c')
            gi[bg..bo].copy_from_slice(c);
            activate::<F>(g.output, &mut gi[bg..bo]);
            for u in 0..hsz {
                h[u] = mul(gi[bo + u], gi[bg + u]);
            }
        }
        GatedKind::Gru => {
            for (a, &b) in gi[..2 * hsz].iter_mut().zip(gh) {
                *a = add(*a, b);
            }
            activate::<F>(g.gate, &mut gi[..2 * hsz]);
            for u in 0..hsz {
                gi[2 * hsz + u] = add(gi[2 * hsz + u], mul(gi[u], gh[2 * hsz + u]));
            }
            activate::<F>(g.candidate, &mut gi[2 * hsz..3 * hsz]);
            for u in 0..hsz {
                let n = gi[2 * hsz + u];
                let neg = -n; // exact
                h[u] = add(n, mul(gi[hsz + u], add(h[u], neg)));
            }
        }
    }
}

struct BlockOut<C> {
    states: Vec<C>,
    cells: Vec<C>,
    layers: Vec<LayerBlock<C>>,
}

#[allow(clippy::too_many_arguments)]
fn run_block<F: LaneFormat + Scalar>(plan: &StackPlan<F>, gated: &[&GatedPlan<F>], lanes: &[Arc<GatedLanes<F::C>>], xs: &[F], starts: &Starts<F>, spec: &BatchSpec, first: usize, ns: usize, ctl: &Control) -> SimResult<BlockOut<F::C>> {
    let (n, t_max) = (plan.input, spec.steps);
    let len = |s: usize| spec.lengths.as_ref().map_or(t_max, |l| l[first + s]);
    let mut layers: Vec<LayerBlock<F::C>> = gated
        .iter()
        .zip(lanes)
        .map(|(g, w)| {
            let hsz = g.hidden;
            LayerBlock { h: vec![F::C::ZERO; ns * hsz], c: vec![F::C::ZERO; ns * hsz], gi: vec![F::C::ZERO; ns * w.ih.up], gh: vec![F::C::ZERO; ns * w.hh.up] }
        })
        .collect();
    for s in 0..ns {
        for (l, st) in plan.starts_of(starts, first + s).iter().enumerate() {
            let hsz = gated[l].hidden;
            for (d, v) in layers[l].h[s * hsz..(s + 1) * hsz].iter_mut().zip(&st[..hsz]) {
                *d = v.to_lane();
            }
            if gated[l].has_cell_state() {
                for (d, v) in layers[l].c[s * hsz..(s + 1) * hsz].iter_mut().zip(&st[hsz..2 * hsz]) {
                    *d = v.to_lane();
                }
            }
        }
    }
    let top = gated.len() - 1;
    let (htop, top_cell) = (gated[top].hidden, gated[top].has_cell_state());
    let keep = spec.keep_all;
    let mut states = if keep { vec![F::C::ZERO; ns * t_max * htop] } else { Vec::new() };
    let mut cells = if keep && top_cell { vec![F::C::ZERO; ns * t_max * htop] } else { Vec::new() };
    let mut x = vec![F::C::ZERO; ns * n];
    let longest = (0..ns).map(len).max().unwrap_or(0);
    for t in 0..longest {
        ctl.check()?;
        for s in 0..ns {
            let src = &xs[((first + s) * t_max + t) * n..((first + s) * t_max + t + 1) * n];
            for (d, v) in x[s * n..(s + 1) * n].iter_mut().zip(src) {
                *d = v.to_lane();
            }
        }
        for l in 0..gated.len() {
            let (g, w) = (gated[l], &lanes[l]);
            let (below, rest) = layers.split_at_mut(l);
            let lb = &mut rest[0];
            let (input, ldz) = if l == 0 { (&x[..], n) } else { (&below[l - 1].h[..], gated[l - 1].hidden) };
            for s in 0..ns {
                lb.gi[s * w.ih.up..(s + 1) * w.ih.up].copy_from_slice(&w.b_ih);
                lb.gh[s * w.hh.up..(s + 1) * w.hh.up].copy_from_slice(&w.b_hh);
            }
            accumulate::<F>(&w.ih, input, ldz, ns, &mut lb.gi);
            accumulate::<F>(&w.hh, &lb.h, g.hidden, ns, &mut lb.gh);
            let hsz = g.hidden;
            for s in 0..ns {
                if t >= len(s) {
                    continue; // finished: its state stays the one at its length
                }
                let gi = &mut lb.gi[s * w.ih.up..(s + 1) * w.ih.up];
                let gh = &lb.gh[s * w.hh.up..(s + 1) * w.hh.up];
                pointwise::<F>(g, gi, gh, &mut lb.h[s * hsz..(s + 1) * hsz], &mut lb.c[s * hsz..(s + 1) * hsz]);
            }
        }
        if keep {
            let lt = &layers[top];
            for s in (0..ns).filter(|&s| t < len(s)) {
                let base = (s * t_max + t) * htop;
                states[base..base + htop].copy_from_slice(&lt.h[s * htop..(s + 1) * htop]);
                if top_cell {
                    cells[base..base + htop].copy_from_slice(&lt.c[s * htop..(s + 1) * htop]);
                }
            }
        }
    }
    ctl.advance(ns as u64);
    Ok(BlockOut { states, cells, layers })
}

/// The lock-step batch when every layer is gated (same results as
/// `StackPlan::run_batch_per_sequence`).
fn run_lockstep<F: LaneFormat + Scalar>(plan: &StackPlan<F>, xs: &[F], starts: &Starts<F>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<CellBatch<F>>> {
    let gated: Vec<&GatedPlan<F>> = plan.layers.iter().map(|l| if let LayerPlan::Gated(g) = l { Some(g) } else { None }).collect::<Option<_>>()?;
    if gated.is_empty() {
        return None;
    }
    Some((|| {
        spec.validate()?;
        plan.check_starts(starts, spec.batch)?;
        let lanes: Vec<Arc<GatedLanes<F::C>>> = gated.iter().map(|g| lanes_of(g)).collect();
        let threads = spec.threads.unwrap_or_else(crate::sim::pool::default_threads).max(1);
        let per_seq = plan.input + lanes.iter().zip(&gated).map(|(w, g)| 2 * g.hidden + w.ih.up + w.hh.up).sum::<usize>();
        let block = block_size(spec.batch, threads, per_seq * std::mem::size_of::<F::C>());
        let firsts: Vec<usize> = (0..spec.batch).step_by(block).collect();
        let one = |f: usize| run_block(plan, &gated, &lanes, xs, starts, spec, f, block.min(spec.batch - f), ctl);
        let valid_threads = spec.threads.is_none_or(|t| (1..=4096).contains(&t));
        let blocks: Vec<BlockOut<F::C>> = if firsts.len() <= 1 && valid_threads {
            firsts.iter().map(|&f| one(f)).collect::<SimResult<_>>()?
        } else {
            with_pool(spec.threads, || firsts.par_iter().map(|&f| one(f)).collect::<SimResult<Vec<_>>>())??
        };
        let conv = |v: &[F::C]| v.iter().map(|&c| F::from_lane(c)).collect::<Vec<F>>();
        let mut out = CellBatch {
            states: Vec::new(),
            cells: Vec::new(),
            final_h: vec![Vec::new(); gated.len()],
            final_c: gated.iter().map(|g| g.has_cell_state().then(Vec::new)).collect(),
        };
        for b in blocks {
            out.states.extend(conv(&b.states));
            out.cells.extend(conv(&b.cells));
            for (l, lb) in b.layers.iter().enumerate() {
                out.final_h[l].extend(conv(&lb.h));
                if let Some(c) = &mut out.final_c[l] {
                    c.extend(conv(&lb.c));
                }
            }
        }
        Ok(out)
    })())
}

/// The lock-step run when `S` is a builtin float format and every layer is gated, else
/// None (the caller runs sequence by sequence).
pub fn try_lockstep<S: Scalar>(plan: &StackPlan<S>, xs: &[S], starts: &Starts<S>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<CellBatch<S>>> {
    fn go<S: Scalar, G: LaneFormat + Scalar>(plan: &StackPlan<S>, xs: &[S], starts: &Starts<S>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<CellBatch<S>>> {
        let p = (plan as &dyn Any).downcast_ref::<StackPlan<G>>()?;
        let xs: &[G] = cast_slice(xs);
        let st = (starts as &dyn Any).downcast_ref::<Starts<G>>()?;
        let r = run_lockstep::<G>(p, xs, st, spec, ctl)?;
        Some(r.map(|b| *(Box::new(b) as Box<dyn Any>).downcast::<CellBatch<S>>().expect("S is G")))
    }
    go::<S, f32>(plan, xs, starts, spec, ctl)
        .or_else(|| go::<S, f64>(plan, xs, starts, spec, ctl))
        .or_else(|| go::<S, half::f16>(plan, xs, starts, spec, ctl))
        .or_else(|| go::<S, half::bf16>(plan, xs, starts, spec, ctl))
}

fn cast_slice<A: 'static, B: 'static>(s: &[A]) -> &[B] {
    assert_eq!(std::any::TypeId::of::<A>(), std::any::TypeId::of::<B>());
    // SAFETY: A and B are the same type (checked above).
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<B>(), s.len()) }
}

#[cfg(test)]
#[path = "gated_batch_tests.rs"]
mod tests;
