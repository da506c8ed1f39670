//! The lock-step batched float kernel: a block of sequences advances together, one tick at
//! a time, H_t = act(B + X_t Wᵀ + H_{t−1} Vᵀ), as a register-tiled GEMM per tick
//! (`tile_kernel`).
//!
//! Bit-identical to the per-sequence engine (float_engine.rs): every element still sees
//! acc = b_i, then + W_ik·x_k for k ascending, then + V_ij·h_j for j ascending, each
//! product and sum rounded to the format, no FMA. Each sequence's row z = [x_t | h_{t−1}]
//! is one vector of length n + d and the weights one packed matrix [Wᵀ; Vᵀ], so that order
//! is the tile kernel's "acc = b; + ... for k ascending" over z. The kernel reorders only
//! *independent* elements (tiles of sequences × units); the weights are packed once per
//! plan (cached in `FloatPlan::lockstep`).
//!
//! Parallelism: rayon over blocks of sequences, balanced across threads and small enough
//! for their states to stay in L2; a sequence's bits do not depend on its block, tile or
//! thread. Sequences shorter than the block's longest stop being stored at their length
//! (their later ticks are computed and discarded). Cancellation is checked between ticks.
//! The instruction set (AVX-512 or portable loops) changes the speed, not the bits.

use crate::error::SimResult;
use crate::net::activation::Activation;
use crate::num::float::Float;
use crate::sim::cancel::Control;
use crate::sim::float_engine::FloatPlan;
use crate::sim::lanes::{Lane, LaneFormat};
use crate::sim::pool::with_pool;
use crate::sim::run::{BatchSpec, FloatBatch};
use crate::sim::tile_kernel::{accumulate, Packed};
use rayon::prelude::*;
use std::any::Any;
use std::sync::Arc;

/// The plan's weights in lane form: [Wᵀ; Vᵀ] packed (K = n + d rows), the bias padded to
/// the packed unit stride.
pub struct Weights<C> {
    packed: Packed<C>,
    b: Vec<C>,
}

impl<C: Lane + Default> Weights<C> {
    fn new<F: LaneFormat<C = C>>(plan: &FloatPlan<F>) -> Self {
        let (d, n) = (plan.d, plan.n_in);
        let wt: Vec<C> = plan.wt.iter().chain(plan.vt.iter()).map(|v| v.to_lane()).collect();
        let packed = Packed::for_units(&wt, n + d, d);
        let mut b = vec![C::ZERO; packed.up];
        for (dst, v) in b.iter_mut().zip(&plan.b) {
            *dst = v.to_lane();
        }
        Weights { packed, b }
    }
}

/// The packed weights of `plan`, built on first use and kept in the plan.
fn weights_of<F: LaneFormat>(plan: &FloatPlan<F>) -> Arc<Weights<F::C>> {
    let any = plan.lockstep.get_or_init(|| Arc::new(Weights::<F::C>::new(plan)) as Arc<dyn Any + Send + Sync>).clone();
    any.downcast::<Weights<F::C>>().expect("the cached weights have the plan's lane type")
}

/// The activation of `Float` (float_engine::activate) on lane values, in place.
pub(crate) fn activate<F: LaneFormat>(act: Activation, v: &mut [F::C]) {
    let (zero, one) = (F::C::ZERO, F::C::ONE);
    match act {
        Activation::Identity => {}
        Activation::Relu => v.iter_mut().for_each(|x| *x = if *x > zero { *x } else { zero }),
        Activation::Slu => v.iter_mut().for_each(|x| *x = if *x > one { one } else if *x > zero { *x } else { zero }),
        Activation::Step => v.iter_mut().for_each(|x| *x = if *x > zero { one } else { zero }),
        Activation::Tanh => F::tanh_slice(v),
        Activation::Sigmoid => F::sigmoid_slice(v),
        Activation::Sign => {
            v.iter_mut().for_each(|x| *x = if *x > zero { one } else if *x < zero { F::C::MINUS_ONE } else { zero })
        }
        Activation::SatSigmoid => {
            v.iter_mut().for_each(|x| *x = if *x > zero { one } else if *x < zero { zero } else { F::C::HALF })
        }
    }
}

struct BlockOut<F> {
    states: Vec<F>,
    finals: Vec<F>,
    outputs: Vec<F>,
    final_outputs: Vec<F>,
}

/// Runs sequences `first..first + ns` of the batch.
#[allow(clippy::too_many_arguments)]
fn run_block<F: LaneFormat>(plan: &FloatPlan<F>, w: &Weights<F::C>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, first: usize, ns: usize, ctl: &Control) -> SimResult<BlockOut<F>> {
    let (d, n, o, t_max) = (plan.d, plan.n_in, plan.n_out, spec.steps);
    let (up, ldz) = (w.packed.up, n + d);
    let len = |s: usize| spec.lengths.as_ref().map_or(t_max, |l| l[first + s]);
    // z rows: [x_t | h]
    let mut z: Vec<F::C> = vec![F::C::ZERO; ns * ldz];
    for s in 0..ns {
        let start = h0.map_or(plan.h0.as_slice(), |h| &h[(first + s) * d..(first + s + 1) * d]);
        for (dst, v) in z[s * ldz + n..(s + 1) * ldz].iter_mut().zip(start) {
            *dst = v.to_lane();
        }
    }
    let mut acc = vec![F::C::ZERO; ns * up];
    let keep = spec.keep_all;
    let mut out = BlockOut {
        states: if keep { vec![F::zero(); ns * t_max * d] } else { Vec::new() },
        finals: vec![F::zero(); ns * d],
        outputs: if keep { vec![F::zero(); ns * t_max * o] } else { Vec::new() },
        final_outputs: vec![F::zero(); ns * o],
    };
    let longest = (0..ns).map(len).max().unwrap_or(0);
    let mut row = vec![F::zero(); d];
    let mut finished = vec![false; ns];
    let finish = |s: usize, z: &[F::C], out: &mut BlockOut<F>, row: &mut Vec<F>| {
        for (r, v) in row.iter_mut().zip(&z[s * ldz + n..(s + 1) * ldz]) {
            *r = F::from_lane(*v);
        }
        out.finals[s * d..(s + 1) * d].copy_from_slice(row);
        plan.output(row, &mut out.final_outputs[s * o..(s + 1) * o]);
        ctl.advance(1);
    };
    for t in 0..longest {
        ctl.check()?;
        for s in 0..ns {
            if !finished[s] && len(s) == t {
                finish(s, &z, &mut out, &mut row);
                finished[s] = true;
            }
            let src = &xs[((first + s) * t_max + t) * n..((first + s) * t_max + t + 1) * n];
            for (dst, v) in z[s * ldz..s * ldz + n].iter_mut().zip(src) {
                *dst = v.to_lane();
            }
            acc[s * up..(s + 1) * up].copy_from_slice(&w.b);
        }
        accumulate::<F>(&w.packed, &z, ldz, ns, &mut acc);
        if up == d {
            activate::<F>(plan.activation, &mut acc);
        }
        for s in 0..ns {
            if finished[s] {
                continue;
            }
            let a = &mut acc[s * up..s * up + d];
            if up != d {
                activate::<F>(plan.activation, a);
            }
            z[s * ldz + n..(s + 1) * ldz].copy_from_slice(a);
            if keep {
                let base = (s * t_max + t) * d;
                for (r, v) in out.states[base..base + d].iter_mut().zip(a.iter()) {
                    *r = F::from_lane(*v);
                }
                if o > 0 {
                    let (st, oo) = (&out.states[base..base + d], (s * t_max + t) * o);
                    plan.output(st, &mut out.outputs[oo..oo + o]);
                }
            }
        }
    }
    for s in 0..ns {
        if !finished[s] {
            finish(s, &z, &mut out, &mut row);
        }
    }
    Ok(out)
}

/// Sequences per block: the batch split evenly over the threads, then into more blocks
/// (a multiple of the thread count) while a block's rows z and acc exceed `budget` bytes.
pub fn block_size(batch: usize, threads: usize, bytes_per_seq: usize) -> usize {
    const BUDGET: usize = 1 << 20;
    let threads = threads.max(1);
    let per_thread = batch.div_ceil(threads).max(1);
    let splits = (per_thread * bytes_per_seq).div_ceil(BUDGET).max(1);
    per_thread.div_ceil(splits).max(1)
}

/// The lock-step batch run: same results as `run::run_batch_float_per_sequence`.
pub fn run_batch_lockstep<F: LaneFormat>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> SimResult<FloatBatch<F>> {
    spec.validate()?;
    let w = weights_of(plan);
    let threads = spec.threads.unwrap_or_else(crate::sim::pool::default_threads).max(1);
    let per_seq = (plan.n_in + plan.d + w.packed.up) * std::mem::size_of::<F::C>();
    let block = block_size(spec.batch, threads, per_seq);
    let starts: Vec<usize> = (0..spec.batch).step_by(block).collect();
    let one = |first: usize| run_block(plan, &w, xs, h0, spec, first, block.min(spec.batch - first), ctl);
    let valid_threads = spec.threads.is_none_or(|t| (1..=4096).contains(&t));
    let blocks: Vec<BlockOut<F>> = if starts.len() <= 1 && valid_threads {
        // one block: no pool hand-off (small batches)
        starts.iter().map(|&f| one(f)).collect::<SimResult<Vec<_>>>()?
    } else {
        with_pool(spec.threads, || starts.par_iter().map(|&f| one(f)).collect::<SimResult<Vec<_>>>())??
    };
    let mut out = FloatBatch { states: Vec::new(), final_states: Vec::new(), outputs: Vec::new(), final_outputs: Vec::new() };
    if blocks.len() == 1 {
        let b = blocks.into_iter().next().expect("one block");
        return Ok(FloatBatch { states: b.states, final_states: b.finals, outputs: b.outputs, final_outputs: b.final_outputs });
    }
    for b in blocks {
        out.states.extend(b.states);
        out.final_states.extend(b.finals);
        out.outputs.extend(b.outputs);
        out.final_outputs.extend(b.final_outputs);
    }
    Ok(out)
}

fn same_type_slice<F: 'static, G: 'static>(s: &[F]) -> &[G] {
    assert_eq!(std::any::TypeId::of::<F>(), std::any::TypeId::of::<G>());
    // SAFETY: F and G are the same type (checked above), so the slice is reinterpreted as itself.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<G>(), s.len()) }
}

/// The lock-step run when `F` is a builtin format (f64, f32, f16, bf16), else None (custom
/// formats run sequence by sequence).
pub fn try_lockstep<F: Float>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<FloatBatch<F>>> {
    fn go<F: Float, G: LaneFormat>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<FloatBatch<F>>> {
        let p = (plan as &dyn Any).downcast_ref::<FloatPlan<G>>()?;
        let r = run_batch_lockstep::<G>(p, same_type_slice(xs), h0.map(same_type_slice), spec, ctl);
        Some(r.map(|b| *(Box::new(b) as Box<dyn Any>).downcast::<FloatBatch<F>>().expect("F is G")))
    }
    go::<F, f32>(plan, xs, h0, spec, ctl)
        .or_else(|| go::<F, f64>(plan, xs, h0, spec, ctl))
        .or_else(|| go::<F, half::f16>(plan, xs, h0, spec, ctl))
        .or_else(|| go::<F, half::bf16>(plan, xs, h0, spec, ctl))
}

#[cfg(test)]
#[path = "float_batch_tests.rs"]
mod tests;
