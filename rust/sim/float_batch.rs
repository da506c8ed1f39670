//! The lock-step batched float kernel: a block of sequences advances together, one tick at
//! a time, H_t = act(B + X_t Wᵀ + H_{t−1} Vᵀ), as a register-blocked GEMM-like loop.
//!
//! Bit-identical to the per-sequence engine (float_engine.rs): every element still sees
//! acc = b_i, then + W_ik·x_k for k ascending, then + V_ij·h_j for j ascending, each
//! product and sum rounded to the format, no FMA (Rust never contracts a·b + c). The
//! kernel only reorders *independent* elements: a tile of S sequences × L units keeps its
//! S·L accumulators in registers while k and then j run sequentially, so a column slice
//! of Vᵀ is loaded once for S sequences and the L-wide unit dimension vectorises (SIMD over
//! units i, never over the reduction index j). Vᵀ/Wᵀ are padded to a multiple of L units
//! with zeros (the padded lanes are computed and dropped).
//!
//! Parallelism: rayon over blocks of sequences; a sequence's bits do not depend on its
//! block, tile or thread. Sequences shorter than the block's longest stop being stored at
//! their length (their later ticks are computed and discarded). Cancellation is checked
//! between ticks. The kernel is compiled three times (AVX-512, AVX2, baseline) and picked
//! at run time; the instruction set changes the speed, not the bits (the same IEEE
//! operations in the same order).

use crate::error::SimResult;
use crate::net::activation::Activation;
use crate::num::float::Float;
use crate::sim::cancel::Control;
use crate::sim::float_engine::FloatPlan;
use crate::sim::lanes::{Lane, LaneFormat};
use crate::sim::pool::with_pool;
use crate::sim::run::{BatchSpec, FloatBatch};
use rayon::prelude::*;
use std::any::Any;

/// Sequences sharing each column slice of the weights.
const S: usize = 4;
/// Units are padded to a multiple of 64 bytes of lanes (16 f32 or 8 f64).
const fn lanes<C>() -> usize {
    64 / std::mem::size_of::<C>()
}

/// The plan's weights in lane form, padded to `dp` units.
struct Weights<C> {
    d: usize,
    dp: usize,
    n: usize,
    vt: Vec<C>,
    wt: Vec<C>,
    b: Vec<C>,
}

fn padded<F: LaneFormat>(src: &[F], rows: usize, d: usize, dp: usize) -> Vec<F::C> {
    let mut out = vec![F::C::ZERO; rows * dp];
    for r in 0..rows {
        for i in 0..d {
            out[r * dp + i] = src[r * d + i].to_lane();
        }
    }
    out
}

/// Units per chunk: a chunk of S sequences' accumulators (S · CHUNK lanes) stays in L1.
const CHUNK: usize = 128;

/// acc[l] = acc[l] + col[l]·v for every l: one rounded product and one rounded sum per
/// element (the loop the compiler vectorises over units).
#[inline(always)]
fn axpy<F: LaneFormat>(acc: &mut [F::C], col: &[F::C], v: F::C) {
    for (a, &c) in acc.iter_mut().zip(col) {
        *a = F::add_l(*a, F::mul_l(c, v));
    }
}

/// Pre-activations of `ns` sequences (rows of `h`, `x`) into `acc` (rows of stride dp).
/// Per chunk of units: bias, then k ascending, then j ascending, each column slice of
/// Wᵀ/Vᵀ used by S sequences in a row while it is in L1.
#[inline(always)]
fn preact<F: LaneFormat>(w: &Weights<F::C>, x: &[F::C], h: &[F::C], ns: usize, acc: &mut [F::C]) {
    let (d, n, dp) = (w.d, w.n, w.dp);
    for i0 in (0..dp).step_by(CHUNK) {
        let ch = CHUNK.min(dp - i0);
        for s in 0..ns {
            acc[s * dp + i0..s * dp + i0 + ch].copy_from_slice(&w.b[i0..i0 + ch]);
        }
        for s0 in (0..ns).step_by(S) {
            let s1 = (s0 + S).min(ns);
            for k in 0..n {
                let col = &w.wt[k * dp + i0..k * dp + i0 + ch];
                for s in s0..s1 {
                    axpy::<F>(&mut acc[s * dp + i0..s * dp + i0 + ch], col, x[s * n + k]);
                }
            }
            for j in 0..d {
                let col = &w.vt[j * dp + i0..j * dp + i0 + ch];
                for s in s0..s1 {
                    axpy::<F>(&mut acc[s * dp + i0..s * dp + i0 + ch], col, h[s * d + j]);
                }
            }
        }
    }
}

#[target_feature(enable = "avx512f,avx512vl,avx2,avx")]
#[cfg(target_arch = "x86_64")]
unsafe fn preact_avx512<F: LaneFormat>(w: &Weights<F::C>, x: &[F::C], h: &[F::C], ns: usize, acc: &mut [F::C]) {
    preact::<F>(w, x, h, ns, acc)
}

#[target_feature(enable = "avx2,avx")]
#[cfg(target_arch = "x86_64")]
unsafe fn preact_avx2<F: LaneFormat>(w: &Weights<F::C>, x: &[F::C], h: &[F::C], ns: usize, acc: &mut [F::C]) {
    preact::<F>(w, x, h, ns, acc)
}

fn preact_dispatch<F: LaneFormat>(w: &Weights<F::C>, x: &[F::C], h: &[F::C], ns: usize, acc: &mut [F::C]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vl") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { preact_avx512::<F>(w, x, h, ns, acc) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { preact_avx2::<F>(w, x, h, ns, acc) };
        }
    }
    preact::<F>(w, x, h, ns, acc)
}

/// The activation of `Float` (float_engine::activate) on lane values, in place.
fn activate<F: LaneFormat>(act: Activation, v: &mut [F::C]) {
    let (zero, one) = (F::C::ZERO, F::C::ONE);
    match act {
        Activation::Identity => {}
        Activation::Relu => v.iter_mut().for_each(|x| *x = if *x > zero { *x } else { zero }),
        Activation::Slu => v.iter_mut().for_each(|x| *x = if *x > one { one } else if *x > zero { *x } else { zero }),
        Activation::Step => v.iter_mut().for_each(|x| *x = if *x > zero { one } else { zero }),
        Activation::Tanh => F::tanh_slice(v),
        Activation::Sigmoid => v.iter_mut().for_each(|x| *x = F::sigmoid_l(*x)),
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
fn run_block<F: LaneFormat>(plan: &FloatPlan<F>, w: &Weights<F::C>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, first: usize, ns: usize, ctl: &Control) -> SimResult<BlockOut<F>> {
    let (d, n, dp, o, t_max) = (plan.d, plan.n_in, w.dp, plan.n_out, spec.steps);
    let len = |s: usize| spec.lengths.as_ref().map_or(t_max, |l| l[first + s]);
    let mut h: Vec<F::C> = Vec::with_capacity(ns * d);
    for s in 0..ns {
        let start = h0.map_or(plan.h0.as_slice(), |h| &h[(first + s) * d..(first + s + 1) * d]);
        h.extend(start.iter().map(|v| v.to_lane()));
    }
    let mut acc = vec![F::C::ZERO; ns * dp];
    let mut x = vec![F::C::ZERO; ns * n];
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
    let finish = |s: usize, h: &[F::C], out: &mut BlockOut<F>, row: &mut Vec<F>| {
        for (r, v) in row.iter_mut().zip(&h[s * d..(s + 1) * d]) {
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
                finish(s, &h, &mut out, &mut row);
                finished[s] = true;
            }
            let src = &xs[((first + s) * t_max + t) * n..((first + s) * t_max + t + 1) * n];
            for (dst, v) in x[s * n..(s + 1) * n].iter_mut().zip(src) {
                *dst = v.to_lane();
            }
        }
        preact_dispatch::<F>(w, &x, &h, ns, &mut acc);
        for s in 0..ns {
            let a = &mut acc[s * dp..s * dp + d];
            if !finished[s] {
                activate::<F>(plan.activation, a);
                h[s * d..(s + 1) * d].copy_from_slice(a);
            }
            if keep && !finished[s] {
                let base = (s * t_max + t) * d;
                for (r, v) in out.states[base..base + d].iter_mut().zip(a.iter()) {
                    *r = F::from_lane(*v);
                }
                let (st, oo) = (&out.states[base..base + d], (s * t_max + t) * o);
                plan.output(st, &mut out.outputs[oo..oo + o]);
            }
        }
    }
    for s in 0..ns {
        if !finished[s] {
            finish(s, &h, &mut out, &mut row);
        }
    }
    Ok(out)
}

/// The lock-step batch run: same results as `run::run_batch_float_per_sequence`.
pub fn run_batch_lockstep<F: LaneFormat>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> SimResult<FloatBatch<F>> {
    spec.validate()?;
    let (d, n) = (plan.d, plan.n_in);
    let dp = d.div_ceil(lanes::<F::C>()).max(1) * lanes::<F::C>();
    let w = Weights { d, dp, n, vt: padded(&plan.vt, d, d, dp), wt: padded(&plan.wt, n, d, dp), b: padded(&plan.b, 1, d, dp) };
    let threads = spec.threads.unwrap_or_else(crate::sim::pool::default_threads).max(1);
    // blocks: a multiple of S sequences, at least 4 blocks per thread when the batch allows,
    // at most 64 sequences (their states stay in cache)
    let per = spec.batch.div_ceil(4 * threads).clamp(1, 64);
    let block = if per >= S { per / S * S } else { per };
    let starts: Vec<usize> = (0..spec.batch).step_by(block.max(1)).collect();
    let blocks: Vec<BlockOut<F>> = with_pool(spec.threads, || {
        starts
            .par_iter()
            .map(|&first| run_block(plan, &w, xs, h0, spec, first, block.min(spec.batch - first), ctl))
            .collect::<SimResult<Vec<_>>>()
    })??;
    let mut out = FloatBatch { states: Vec::new(), final_states: Vec::new(), outputs: Vec::new(), final_outputs: Vec::new() };
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
