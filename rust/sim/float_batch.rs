//! The lock-step batched float kernel: a block of sequences advances together, one tick at
//! a time, H_t = act(B + X_t Wᵀ + H_{t−1} Vᵀ), as register-tiled GEMMs per tick
//! (`tile_kernel`).
//!
//! Bit-identical to the per-sequence engine (float_engine.rs): every element still sees
//! acc = b_i, then + W_ik·x_k for k ascending, then + V_ij·h_j for j ascending, each
//! product and sum rounded to the format, no FMA. Per tick the block's accumulators are
//! set to the bias rows, then the tile kernel adds the input products (reading the rows
//! x_t of the batch's inputs in place, `block_io`), then the recurrent products (reading
//! h_{t−1}, the previous tick's accumulators: two buffers swap roles every tick); the
//! kernel's chunks of k end and resume exactly, so that is the order above. The kernel
//! reorders only *independent* elements (tiles of sequences × units); the weights are
//! packed once per plan (cached in `FloatPlan::lockstep`). The activation runs over the
//! whole block in one call.
//!
//! Parallelism: rayon over blocks of sequences, balanced across threads and small enough
//! for their states to stay in L2; a sequence's bits do not depend on its block, tile or
//! thread. Each block writes its states and outputs straight into the batch's result
//! buffers. Sequences shorter than the block's longest stop being stored at their length
//! (their later ticks are computed and discarded). Cancellation is checked between ticks.
//! The instruction set (AVX-512 or portable loops) changes the speed, not the bits.

use crate::error::SimResult;
use crate::net::activation::Activation;
use crate::num::float::Float;
use crate::sim::block_io::{block_firsts, fill_rows, lane_inputs, run_blocks, split_blocks, store};
use crate::sim::cancel::Control;
use crate::sim::float_engine::FloatPlan;
use crate::sim::lanes::{Lane, LaneFormat};
use crate::sim::run::{BatchSpec, FloatBatch};
use crate::sim::tile_kernel::{accumulate, Packed};
use std::any::Any;
use std::sync::Arc;

/// The plan's weights in lane form: Wᵀ (n rows) and Vᵀ (d rows) packed, the bias padded to
/// the packed unit stride (the same for both: d units).
pub struct Weights<C> {
    wx: Packed<C>,
    v: Packed<C>,
    b: Vec<C>,
}

impl<C: Lane + Default> Weights<C> {
    fn new<F: LaneFormat<C = C>>(plan: &FloatPlan<F>) -> Self {
        let (d, n) = (plan.d, plan.n_in);
        let lanes = |m: &[F]| m.iter().map(|v| v.to_lane()).collect::<Vec<C>>();
        let (wx, v) = (Packed::for_units(&lanes(&plan.wt), n, d), Packed::for_units(&lanes(&plan.vt), d, d));
        debug_assert_eq!(wx.up, v.up);
        let mut b = vec![C::ZERO; v.up];
        for (dst, x) in b.iter_mut().zip(&plan.b) {
            *dst = x.to_lane();
        }
        Weights { wx, v, b }
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

/// One block's share of the batch's results (states and outputs empty with keep="final").
struct BlockOut<'a, F> {
    states: &'a mut [F],
    finals: &'a mut [F],
    outputs: &'a mut [F],
    final_outputs: &'a mut [F],
}

/// Runs sequences `first..first + ns` of the batch (`xl`: the batch's inputs as lanes).
#[allow(clippy::too_many_arguments)]
fn run_block<F: LaneFormat>(plan: &FloatPlan<F>, w: &Weights<F::C>, xl: &[F::C], h0: Option<&[F]>, spec: &BatchSpec, first: usize, ns: usize, out: BlockOut<'_, F>, ctl: &Control) -> SimResult<()> {
    let (d, n, o, t_max) = (plan.d, plan.n_in, plan.n_out, spec.steps);
    let up = w.v.up;
    let lens: Vec<usize> = (0..ns).map(|s| spec.length(first + s)).collect();
    // h_{t-1} rows (stride up) and the rows being computed; they swap every tick
    let mut prev: Vec<F::C> = vec![F::C::ZERO; ns * up];
    for s in 0..ns {
        let start = h0.map_or(plan.h0.as_slice(), |h| &h[(first + s) * d..(first + s + 1) * d]);
        for (dst, v) in prev[s * up..s * up + d].iter_mut().zip(start) {
            *dst = v.to_lane();
        }
    }
    let mut cur = vec![F::C::ZERO; ns * up];
    // one activation call over the block unless the padding would add a quarter or more
    let whole_block = 4 * (up - d) < d;
    // sequences by length: they finish in that order
    let mut by_len: Vec<usize> = (0..ns).collect();
    by_len.sort_by_key(|&s| lens[s]);
    let mut done = 0;
    let finish = |s: usize, h: &[F::C], out: &mut BlockOut<'_, F>| {
        let fin = &mut out.finals[s * d..(s + 1) * d];
        store::<F>(fin, &h[s * up..s * up + d]);
        plan.output(fin, &mut out.final_outputs[s * o..(s + 1) * o], spec.fma);
        ctl.advance(1);
    };
    let mut out = out;
    let longest = lens.iter().copied().max().unwrap_or(0);
    for t in 0..longest {
        ctl.check()?;
        while done < ns && lens[by_len[done]] == t {
            finish(by_len[done], &prev, &mut out);
            done += 1;
        }
        fill_rows(&mut cur, &w.b);
        accumulate::<F>(&w.wx, &xl[(first * t_max + t) * n..], t_max * n, ns, &mut cur, spec.fma);
        accumulate::<F>(&w.v, &prev, up, ns, &mut cur, spec.fma);
        if whole_block {
            activate::<F>(plan.activation, &mut cur);
        } else {
            for row in cur.chunks_exact_mut(up) {
                activate::<F>(plan.activation, &mut row[..d]);
            }
        }
        if spec.keep_all {
            for s in (0..ns).filter(|&s| t < lens[s]) {
                let base = (s * t_max + t) * d;
                let st = &mut out.states[base..base + d];
                store::<F>(st, &cur[s * up..s * up + d]);
                if o > 0 {
                    let oo = (s * t_max + t) * o;
                    plan.output(st, &mut out.outputs[oo..oo + o], spec.fma);
                }
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    for &s in &by_len[done..] {
        finish(s, &prev, &mut out);
    }
    Ok(())
}

/// Sequences per block: the batch split evenly over the threads, then into more blocks
/// (a multiple of the thread count) while a block's working buffers exceed `budget` bytes.
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
    let xl = lane_inputs(xs);
    let threads = spec.threads.unwrap_or_else(crate::sim::pool::default_threads).max(1);
    let per_seq = 2 * w.v.up * std::mem::size_of::<F::C>();
    let (b, t, d, o) = (spec.batch, spec.steps, plan.d, plan.n_out);
    let block = block_size(b, threads, per_seq);
    let firsts = block_firsts(b, block);
    let keep = spec.keep_all;
    let mut res = FloatBatch {
        states: if keep { vec![F::zero(); b * t * d] } else { Vec::new() },
        final_states: vec![F::zero(); b * d],
        outputs: if keep { vec![F::zero(); b * t * o] } else { Vec::new() },
        final_outputs: vec![F::zero(); b * o],
    };
    let parts = split_blocks(&mut res.states, t * d, block, &firsts, b)
        .into_iter()
        .zip(split_blocks(&mut res.final_states, d, block, &firsts, b))
        .zip(split_blocks(&mut res.outputs, t * o, block, &firsts, b))
        .zip(split_blocks(&mut res.final_outputs, o, block, &firsts, b))
        .map(|(((states, finals), outputs), final_outputs)| BlockOut { states, finals, outputs, final_outputs });
    let work: Vec<(usize, BlockOut<'_, F>)> = firsts.iter().copied().zip(parts).collect();
    run_blocks(spec, work, |first, out| run_block(plan, &w, &xl, h0, spec, first, block.min(b - first), out, ctl))?;
    Ok(res)
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
