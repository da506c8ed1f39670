//! The lock-step batched float kernel: a block of sequences advances together, one tick at
//! a time, H_t = act(B + X_t Wᵀ + H_{t−1} Vᵀ), as register-tiled GEMMs per tick
//! (`tile_kernel`).
//!
//! Bit-identical to the per-sequence engine (float_engine.rs): every element still sees
//! acc = b_i, then + W_ik·x_k for k ascending, then + V_ij·h_j for j ascending, each
//! product and sum rounded to the format (or each product-sum fused with `fma`). Per tick
//! one pass of the tile kernel (`tile_kernel::affine`) starts each accumulator from the
//! bias, adds the input products (reading the rows x_t of the batch's inputs in place,
//! `block_io`), then the recurrent products (reading h_{t−1}, the previous tick's slot of
//! the state ring, below); the kernel's chunks of k end and resume exactly, so that is the
//! order above. The kernel reorders only *independent* elements (tiles of sequences ×
//! units); the weights are packed once per plan (cached in `FloatPlan::lockstep`). The
//! activation runs over the whole block in one call.
//!
//! States: the block's h_t rows live in a ring of slots, each tick reading one slot and
//! writing the next, so the kept states (keep="all") of a chunk of ticks stay in the block
//! and are written to the (B, T, d) result a chunk at a time, one contiguous run per
//! sequence (`block_results`; measured about twice as fast as a row per sequence
//! per tick, a page apart). With keep="final" the ring is two slots that swap roles.
//!
//! Parallelism: rayon over blocks of sequences, balanced across threads and small enough
//! for their states to stay in L2; a sequence's bits do not depend on its block, tile or
//! thread. Each block writes its states and outputs straight into the batch's result
//! buffers. Sequences shorter than the block's longest stop being stored at their length
//! (their later ticks are computed and discarded). Cancellation is checked between ticks.
//! The instruction set (AVX-512 or portable loops) changes the speed, not the bits.

use crate::error::SimResult;
use crate::net::activation::Activation;
use crate::num::round::BinaryFormat;
use crate::sim::ziv::Func;
use crate::num::float::Float;
use crate::sim::block_io::{block_firsts, lane_inputs, prefetch_inputs, recycle_lanes, run_blocks, split_blocks, store};
use crate::sim::block_results::{result_buffer, ticks_per_flush, Kept, Unfilled};
use crate::sim::cancel::Control;
use crate::sim::float_engine::FloatPlan;
use crate::sim::rnn_single::{AnyRnn, Ring};
use crate::sim::same_type;
use crate::sim::lanes::{Lane, LaneFormat};
use crate::sim::run::{BatchSpec, FloatBatch};
use crate::sim::tile_kernel::{affine_binary16, affine_bits, binary16_width, Packed, Term};
use crate::sim::unit_split::{affine_split, row_parts, team_size, Map};
use rayon::prelude::*;
use std::any::Any;
use std::borrow::Cow;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// The plan's weights in lane form: Wᵀ (n rows) and Vᵀ (d rows) packed, the bias padded to
/// the packed unit stride (the same for both: d units).
pub struct Weights<C> {
    wx: Packed<C>,
    v: Packed<C>,
    b: Vec<C>,
    /// the weights of the single-sequence kernel (`rnn_single`), when it runs this plan
    single: Option<AnyRnn>,
}

impl<C: Lane + Default> Weights<C> {
    fn new<F: LaneFormat<C = C> + 'static>(plan: &FloatPlan<F>) -> Self {
        let (d, n) = (plan.d, plan.n_in);
        let lanes = |m: &[F]| m.iter().map(|v| v.to_lane()).collect::<Vec<C>>();
        let (wx, v) = (Packed::for_units(&lanes(&plan.wt), n, d), Packed::for_units(&lanes(&plan.vt), d, d));
        debug_assert_eq!(wx.up, v.up);
        let mut b = vec![C::ZERO; v.up];
        for (dst, x) in b.iter_mut().zip(&plan.b) {
            *dst = x.to_lane();
        }
        let single = crate::sim::rnn_single::pack_any(plan as &dyn Any);
        Weights { wx, v, b, single }
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
        Activation::ApproxTanh => F::approx_slice(Func::Tanh, v),
        Activation::ApproxSigmoid => F::approx_slice(Func::Sigmoid, v),
        Activation::Sign => {
            v.iter_mut().for_each(|x| *x = if *x > zero { one } else if *x < zero { F::C::MINUS_ONE } else { zero })
        }
        Activation::SatSigmoid => {
            v.iter_mut().for_each(|x| *x = if *x > zero { one } else if *x < zero { zero } else { F::C::HALF })
        }
    }
}

/// One block's share of the batch's results (states and outputs empty with keep="final";
/// the states filled in by the block, `block_results`).
struct BlockOut<'a, F> {
    states: &'a mut [MaybeUninit<F>],
    finals: &'a mut [F],
    outputs: &'a mut [F],
    final_outputs: &'a mut [F],
}

/// Most ticks of one call of the single-sequence kernel (`rnn_single`) when the kept states
/// do not end its run first: `ctl.check()` (interrupts, cancellation) runs between calls.
const SINGLE_TICKS: usize = 1024;

/// Slots of the state ring for flushes of `chunk` ticks: h_t lives in slot (t + 1) mod
/// slots, h₀ (the start) in slot 0. `chunk` slots hold a chunk's states while the last
/// tick of the chunk overwrites h_{t0−1} (flushed, no longer read); 2 at least, for the
/// previous and the current tick.
fn ring_slots(chunk: usize) -> usize {
    chunk.max(2)
}

/// Slots `i` (read) and `j` (written) of the ring of slots of `len` values, i ≠ j.
fn two_slots<C>(ring: &mut [C], len: usize, i: usize, j: usize) -> (&[C], &mut [C]) {
    debug_assert_ne!(i, j);
    if i < j {
        let (a, b) = ring.split_at_mut(j * len);
        (&a[i * len..(i + 1) * len], &mut b[..len])
    } else {
        let (a, b) = ring.split_at_mut(i * len);
        (&b[..len], &mut a[j * len..(j + 1) * len])
    }
}

/// Runs sequences `first..first + ns` of the batch (`xl`: the batch's inputs as lanes, or
/// empty when no block reads them: `block_reads_lanes`; `x16`: their own bits, for f16),
/// with each tick's units and rows split between `team` tasks when it is above 1
/// (`unit_split`).
///
/// The block's states live in a ring of slots (ns rows of stride `up` each): tick t reads
/// h_{t−1} from one slot and writes h_t to the next (`ticks_per_flush`, `ring_slots`), and
/// every `chunk` ticks the kept states of the chunk are written out sequence by sequence
/// (a contiguous run of `chunk` rows each). Only where values are stored changes.
#[allow(clippy::too_many_arguments)]
fn run_block<F: LaneFormat>(plan: &FloatPlan<F>, w: &Weights<F::C>, (xl, x16): (&[F::C], Option<&[u16]>), h0: Option<&[F]>, spec: &BatchSpec, (first, ns, team): (usize, usize, usize), out: BlockOut<'_, F>, ctl: &Control) -> SimResult<()> {
    let (d, n, o, t_max) = (plan.d, plan.n_in, plan.n_out, spec.steps);
    let up = w.v.up;
    let lens: Vec<usize> = (0..ns).map(|s| spec.length(first + s)).collect();
    let chunk = ticks_per_flush(spec.keep.states(), d * std::mem::size_of::<F>(), t_max);
    let slots = ring_slots(chunk);
    let kept = Kept::new::<F>(spec.batch, t_max, d);
    let len = ns * up;
    // f16 on its native tile, tanh or σ, one thread: the tile's binary16 rows go straight
    // to the table lookup (`binary16_activation`)
    let bits = binary16_activation::<F>(plan.activation, team);
    // and, with f16 inputs (their own bits), the states live in binary16 only, in a ring of
    // `slots` slots of ns rows of d, as the tile reads them (`affine_bits`) and the lookup
    // writes them (`apply_f16_bits_only`): no row converted, the kept states flushed as they
    // are (`Kept::flush_f16_bits`), and the lanes' ring only holds h0
    // (d ≥ 1, `SimpleRnn::new`: the binary16 ring is never empty)
    let x16 = x16.filter(|_| !block_reads_lanes::<F>(plan, w, ns, team, true));
    let mut ring: Vec<F::C> = vec![F::C::ZERO; if x16.is_some() { 1 } else { slots } * len];
    let slot = |t_plus_1: usize| t_plus_1 % slots;
    for s in 0..ns {
        let start = h0.map_or(plan.h0.as_slice(), |h| &h[(first + s) * d..(first + s + 1) * d]);
        for (dst, v) in ring[s * up..s * up + d].iter_mut().zip(start) {
            *dst = v.to_lane();
        }
    }
    // one activation call over the rows unless the padding would add a quarter or more
    let whole_block = 4 * (up - d) < d;
    // a half format with f32 sums into tanh or σ (`unrounded_sums`): the f32 sums go to the
    // table lookup unrounded, as its index is their rounding (`half_tables::apply_rounding`),
    // so the pass that rounds them after the tiles (`tile_kernel::affine_panels`) is not made
    let unrounded = unrounded_sums::<F>(plan.activation);
    let act = |v: &mut [F::C]| match unrounded {
        Some((func, fmt)) => crate::sim::half_tables::apply_rounding(func, fmt, same_type::slice_mut(v)),
        None => activate::<F>(plan.activation, v),
    };
    let activate_rows = |rows: &mut [F::C]| {
        if whole_block {
            act(rows);
        } else {
            for row in rows.chunks_exact_mut(up) {
                act(&mut row[..d]);
            }
        }
    };
    // sequences by length: they finish in that order
    let mut by_len: Vec<usize> = (0..ns).collect();
    by_len.sort_by_key(|&s| lens[s]);
    let mut done = 0;
    // sequence s's state in slot k as values of F: from the binary16 ring when the block
    // keeps its states there (`h16`, non-empty), else from the lanes' ring
    let state_of = |ring: &[F::C], h16: &[u16], k: usize, s: usize, dst: &mut [F]| {
        if h16.is_empty() {
            store::<F>(dst, &ring[k * len + s * up..][..d]);
        } else {
            use half::slice::HalfBitsSliceExt;
            dst.copy_from_slice(same_type::slice::<half::f16, F>(h16[k * ns * d + s * d..][..d].reinterpret_cast::<half::f16>()));
        }
    };
    let finish = |s: usize, k: usize, ring: &[F::C], h16: &[u16], out: &mut BlockOut<'_, F>| {
        let fin = &mut out.finals[s * d..(s + 1) * d];
        state_of(ring, h16, k, s, fin);
        plan.output(fin, &mut out.final_outputs[s * o..(s + 1) * o], spec.fma);
        ctl.advance(1);
    };
    // the kept states (and outputs) of ticks t0..t1, sequence by sequence
    let mut row = vec![F::zero(); d];
    let mut flush = |ring: &[F::C], h16: &[u16], t0: usize, t1: usize, out: &mut BlockOut<'_, F>| {
        if h16.is_empty() {
            let ticks: Vec<&[F::C]> = (t0..t1).map(|t| &ring[slot(t + 1) * len..][..len]).collect();
            kept.flush::<F>(out.states, &lens, (t0, t1), up, &ticks);
        } else {
            let ticks16: Vec<&[u16]> = (t0..t1).map(|t| &h16[slot(t + 1) * ns * d..][..ns * d]).collect();
            kept.flush_f16_bits(same_type::f16_bits_mut(out.states), &lens, (t0, t1), d, &ticks16);
        }
        if o > 0 && spec.keep.extras() {
            for (s, &l) in lens.iter().enumerate() {
                for t in t0..t1.min(l) {
                    state_of(ring, h16, slot(t + 1), s, &mut row);
                    let oo = (s * t_max + t) * o;
                    plan.output(&row, &mut out.outputs[oo..oo + o], spec.fma);
                }
            }
        }
    };
    let mut out = out;
    let single = if ns == 1 && team == 1 { w.single.as_ref() } else { None };
    let uh = if bits.is_some() { binary16_width(&w.v) } else { 0 };
    let mut rows16 = vec![0u16; ns * uh];
    let mut h16 = vec![0u16; if x16.is_some() { slots * ns * d } else { 0 }];
    if x16.is_some() {
        let starts = same_type::slice::<F::C, f32>(&ring[..len]);
        for (h, row) in h16.chunks_exact_mut(d).zip(starts.chunks_exact(up)) {
            h.iter_mut().zip(&row[..d]).for_each(|(b, &v)| *b = half::f16::from_f32(v).to_bits());
        }
    }
    let longest = lens.iter().copied().max().unwrap_or(0);
    let mut t0 = 0;
    let mut t = 0;
    while t < longest {
        ctl.check()?;
        while done < ns && lens[by_len[done]] == t {
            finish(by_len[done], slot(t), &ring, &h16, &mut out);
            done += 1;
        }
        // the ticks of this pass: one, or with one sequence in registers (`rnn_single`) up
        // to the next flush of the kept states, the next sequence's end or SINGLE_TICKS
        let end = match single {
            Some(_) => {
                let flush = if spec.keep.states() { t0 + chunk } else { longest };
                let next_end = if done < ns { lens[by_len[done]] } else { longest };
                flush.min(next_end).min(t + SINGLE_TICKS)
            }
            None => t + 1,
        };
        if let Some(single) = single {
            // one sequence on one thread, a small layer: its ticks in registers
            let ring = Ring { values: &mut ring, len, slots };
            single.ticks(&xl[(first * t_max + t) * n..], ring, t..end, spec.fma);
        } else if let (Some(func), Some(x16)) = (bits, x16) {
            let (hp, hc) = two_slots(&mut h16, ns * d, slot(t), slot(t + 1));
            affine_bits(&w.b, &[(&w.wx, &x16[(first * t_max + t) * n..], t_max * n), (&w.v, hp, d)], ns, &mut rows16, spec.fma);
            crate::sim::half_tables::apply_f16_bits_only(func, &rows16, uh, ns, d, hc);
        } else {
            let (prev, cur) = two_slots(&mut ring, len, slot(t), slot(t + 1));
            prefetch_inputs(xl, (first, ns), t_max, n, t);
            // (not built for a block that reads the inputs' own bits: `xl` is then empty)
            let x = || Term { w: &w.wx, z: &xl[(first * t_max + t) * n..], ldz: t_max * n };
            let h = Term { w: &w.v, z: prev, ldz: up };
            if let Some(func) = bits {
                affine_binary16(&w.b, &[x(), h], ns, &mut rows16, spec.fma);
                crate::sim::half_tables::apply_f16_bits(func, &rows16, uh, same_type::slice_mut(cur), up, ns, d);
            } else {
                // the team's threads split the units (a team of one: `affine` itself)
                let map = &mut [Map { bias: &w.b, terms: &[x(), h], ns, out: &mut *cur }];
                if unrounded.is_some() {
                    affine_split::<F::Sum>(map, spec.fma, team);
                } else {
                    affine_split::<F>(map, spec.fma, team);
                }
                match team.min(ns) {
                    1 => activate_rows(cur),
                    parts => row_parts(cur, up, parts).into_par_iter().for_each(|(_, rows)| activate_rows(rows)),
                }
            }
        }
        t = end;
        if spec.keep.states() && (t - t0 == chunk || t == longest) {
            flush(&ring, &h16, t0, t, &mut out);
            t0 = t;
        }
    }
    for &s in &by_len[done..] {
        finish(s, slot(longest), &ring, &h16, &mut out);
    }
    kept.zero_from::<F>(out.states, longest);
    Ok(())
}

/// Whether a SimpleRNN layer of F with `act` takes its sums to the activation unrounded,
/// and then the table's (function, format): a half format with f32 sums
/// (`tile_kernel::f32_sums`) into tanh or σ, whose lookup `half_tables::apply_rounding`
/// rounds each value to its index (f16's conversion to binary16, bf16's rounding in
/// registers) as the pass after the tiles would. f16 since session 36 (perf had put that
/// pass at 10% of the run), alternating builds, 1 thread, M token-steps/s: (1024, 1000,
/// 16, 4) 38.2–39.0 → 42.0–43.8, (4096, 256, 64, 8) 7.3–7.4 → 7.9; bf16 since session 45.
fn unrounded_sums<F: LaneFormat>(act: Activation) -> Option<(Func, BinaryFormat)> {
    let func = match act {
        Activation::Tanh => Func::Tanh,
        Activation::Sigmoid => Func::Sigmoid,
        _ => return None,
    };
    crate::sim::tile_kernel::f32_sums::<F>().then_some((func, F::binary_format()))
}

/// The table function when a block of F on one thread (`team` 1) takes the native f16
/// tile's rows in binary16 (`tile_kernel::affine_binary16`) to the activation's table,
/// whose index the bits are (`half_tables::apply_f16_bits`): f16 with its own sums, tanh or
/// σ, AVX512-FP16. `affine` would convert every row back to f32 lanes, and the lookup
/// convert them to binary16 again. The block then also keeps its states in binary16 for the
/// tile (written by the lookup) and gives it the f16 inputs' own bits (`affine_bits`).
fn binary16_activation<F: LaneFormat>(act: Activation, team: usize) -> Option<Func> {
    let func = match act {
        Activation::Tanh => Func::Tanh,
        Activation::Sigmoid => Func::Sigmoid,
        _ => return None,
    };
    let able = team == 1 && F::ROUNDING == crate::sim::lanes::Rounding::F16 && !crate::sim::tile_kernel::f32_sums::<F>() && crate::sim::tile_kernel::native_f16();
    able.then_some(func)
}

/// Whether a block of `ns` sequences on a team of `team` reads the batch's inputs as lanes
/// (`lane_inputs`): all but the f16 blocks that give the tile the inputs' own bits (`x16`:
/// the inputs are f16s; `binary16_activation`; not the one-sequence register kernel). When
/// no block reads them, f16's inputs are not converted to f32 lanes at all.
fn block_reads_lanes<F: LaneFormat>(plan: &FloatPlan<F>, w: &Weights<F::C>, ns: usize, team: usize, x16: bool) -> bool {
    let single = ns == 1 && team == 1 && w.single.is_some();
    single || !x16 || binary16_activation::<F>(plan.activation, team).is_none()
}

/// Sequences per block: the batch split evenly over the threads, then into more blocks
/// (a multiple of the thread count) while a block's working buffers exceed the L2 budget
/// (`cache_size`: so that they stay in L2) or the packed weights, whichever is larger: every
/// block streams all the weights once per tick, so when they are the larger part (hidden
/// 1024: 4–19 MB) a block as large as the weights costs less than more passes over them.
pub fn block_size(batch: usize, threads: usize, bytes_per_seq: usize, weight_bytes: usize) -> usize {
    let threads = threads.max(1);
    let per_thread = batch.div_ceil(threads).max(1);
    let budget = crate::sim::cache_size::l2_budget().max(weight_bytes);
    let splits = (per_thread * bytes_per_seq).div_ceil(budget).max(1);
    per_thread.div_ceil(splits).max(1)
}

/// The lock-step batch run: same results as `run::run_batch_float_per_sequence`.
pub fn run_batch_lockstep<F: LaneFormat>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> SimResult<FloatBatch<F>> {
    spec.validate()?;
    let w = weights_of(plan);
    let threads = spec.threads.unwrap_or_else(crate::sim::pool::default_threads).max(1);
    let chunk = ticks_per_flush(spec.keep.states(), plan.d * std::mem::size_of::<F>(), spec.steps);
    let (b, t, d, o) = (spec.batch, spec.steps, plan.d, plan.n_out);
    let weight_bytes = w.wx.bytes() + w.v.bytes();
    // large weights, small batches: the threads share every block's units (`unit_split`)
    let team = team_size(threads, weight_bytes, b);
    // a sequence's share of the block's buffers: its slots of the lanes' ring, or, when the
    // block keeps its states in binary16 (f16 inputs on the native tile: `run_block`), its
    // slots of that ring, one slot of lanes (h0) and its row of the tile's binary16 sums
    let x16 = same_type::f16_bits(xs);
    let lanes_row = w.v.up * std::mem::size_of::<F::C>();
    let per_seq = if x16.is_some() && binary16_activation::<F>(plan.activation, team).is_some() {
        ring_slots(chunk) * d * std::mem::size_of::<u16>() + lanes_row + binary16_width(&w.v) * std::mem::size_of::<u16>()
    } else {
        ring_slots(chunk) * lanes_row
    };
    let block = block_size(b, threads / team, per_seq, weight_bytes);
    let firsts = block_firsts(b, block);
    let reads_lanes = firsts.iter().any(|&f| block_reads_lanes::<F>(plan, &w, block.min(b - f), team, x16.is_some()));
    let xl = if reads_lanes { lane_inputs(xs, spec.threads) } else { Cow::Borrowed(&[][..]) };
    let keep = spec.keep.states();
    let mut states = Unfilled::new(if keep { b * t * d } else { 0 });
    let mut res = FloatBatch {
        states: Vec::new(),
        final_states: result_buffer(b * d, F::zero()),
        outputs: if spec.keep.extras() { result_buffer(b * t * o, F::zero()) } else { Vec::new() },
        final_outputs: result_buffer(b * o, F::zero()),
    };
    let parts = states
        .shares(t * d, block, &firsts, b)
        .into_iter()
        .zip(split_blocks(&mut res.final_states, d, block, &firsts, b))
        .zip(split_blocks(&mut res.outputs, t * o, block, &firsts, b))
        .zip(split_blocks(&mut res.final_outputs, o, block, &firsts, b))
        .map(|(((states, finals), outputs), final_outputs)| BlockOut { states, finals, outputs, final_outputs });
    let work: Vec<(usize, BlockOut<'_, F>)> = firsts.iter().copied().zip(parts).collect();
    run_blocks(spec, team, work, |first, out| run_block(plan, &w, (&xl, x16), h0, spec, (first, block.min(b - first), team), out, ctl))?;
    recycle_lanes(xl);
    // SAFETY: every block ran to completion (run_blocks returned Ok), and a block fills its
    // share of the states: flushes over ticks 0..its longest length, then Kept::zero_from.
    res.states = unsafe { states.filled() };
    Ok(res)
}

/// The lock-step run when `F` is a builtin format (f64, f32, f16, bf16), else None (custom
/// formats run sequence by sequence).
pub fn try_lockstep<F: Float>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<FloatBatch<F>>> {
    fn go<F: Float, G: LaneFormat>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<FloatBatch<F>>> {
        let p = (plan as &dyn Any).downcast_ref::<FloatPlan<G>>()?;
        let r = run_batch_lockstep::<G>(p, same_type::slice(xs), h0.map(same_type::slice), spec, ctl);
        Some(r.map(|b| *(Box::new(b) as Box<dyn Any>).downcast::<FloatBatch<F>>().expect("F is G")))
    }
    go::<F, f32>(plan, xs, h0, spec, ctl)
        .or_else(|| go::<F, f64>(plan, xs, h0, spec, ctl))
        .or_else(|| go::<F, half::f16>(plan, xs, h0, spec, ctl))
        .or_else(|| go::<F, half::bf16>(plan, xs, h0, spec, ctl))
        .or_else(|| go::<F, crate::num::f32_sums::Bf16SumF32>(plan, xs, h0, spec, ctl))
        .or_else(|| go::<F, crate::num::f32_sums::F16SumF32>(plan, xs, h0, spec, ctl))
}

#[cfg(test)]
#[path = "float_batch_tests.rs"]
mod tests;
