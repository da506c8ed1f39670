//! The lock-step batch kernel of the gated cells (LSTM, Doubling-LSTM, GRU, and stacks of
//! them) in the builtin float formats: a block of sequences advances together, one tick at
//! a time, layer by layer.
//!
//! Per layer and tick, the two affine maps of `gated` (gi = b_ih + W_ih x_t and
//! gh = b_hh + W_hh h_{t−1}, each row in `DenseAffine`'s order: bias, then + w_rk·z_k for k
//! ascending, every operation rounded) are computed for the whole block by the register-
//! tiled `tile_kernel` (layer 0's gi, which needs no state, for up to 256 ticks at a time
//! in small blocks: `hoisted_ticks`) (the stacked gate matrices packed once per plan, transposed so that
//! the gate rows are the SIMD dimension; layer 0 reads the rows x_t of the batch's inputs
//! in place, `block_io`), then the elementwise part of `gated` runs for the whole block
//! (`gated_pointwise`: each activation one call over the block, straight update loops)
//! with the same operations in the same order per unit, on lanes (`LaneFormat`): so every
//! value is bit for bit the per-sequence engine's, whatever the block, tile or thread.
//! Activations are vectorised tanh/sigmoid, exact by `fast_tanh` and `fast_sigmoid` (f64:
//! `activation_f64`). The bias rows start the tile kernel's accumulators
//! (`tile_kernel::affine`), and the tiles of gh add gi to the gates whose pre-activation
//! is gi + gh as their last step, writing them gate-major for the activations
//! (`tile_kernel::affine_gates`; the same rounded addition, one pass fewer; a half format
//! with f32 sums: R(R(gi) + R(gh)) from the sums). f16 on its native
//! tile (AVX512-FP16) keeps gi and gh as the tile's binary16 rows, which the cells' loops
//! convert as they read them (`binary16_rows`). Kept states and cells of the top layer are copied to a small
//! per-block buffer each tick and written to the batch's result buffers a chunk of ticks at
//! a time, one contiguous run per sequence (`block_results`); final states are
//! written straight into theirs.

use crate::error::SimResult;
use crate::num::scalar::Scalar;
use crate::sim::cancel::Control;
use crate::sim::block_io::{block_firsts, lane_inputs, prefetch_inputs, recycle_lanes, run_blocks, split_blocks, store};
use crate::sim::block_results::{result_buffer, ticks_per_flush, Kept, Unfilled};
use crate::sim::cells::gated::{GatedKind, GatedPlan};
use crate::sim::cells::gated_single::{self, AnyLayer, Elem, LayerState, RegLayer};
use crate::sim::same_type;
use crate::sim::cells::gated_pointwise::{gate_regions, gru_block, lstm_block, regions, GateRows, Sums};
use crate::sim::cells::run::{CellBatch, Starts};
use crate::sim::cells::{LayerPlan, StackPlan};
use crate::sim::float_batch::block_size;
use crate::sim::lanes::{Lane, LaneFormat};
use crate::sim::run::BatchSpec;
use crate::sim::tile_kernel::{affine, affine_binary16, affine_gates, binary16_width, GateSplit, Packed, Term};
use crate::sim::unit_split::{affine_split, part, row_parts, team_size, Map};
use rayon::prelude::*;
use std::any::Any;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// A gated layer's affine maps in lane form: transposed and packed, biases padded.
pub struct GatedLanes<C> {
    ih: Packed<C>,
    b_ih: Vec<C>,
    hh: Packed<C>,
    b_hh: Vec<C>,
    /// the f32 or f64 layer in the single-sequence kernel's layout (`gated_single`), when
    /// it runs there
    single: Option<AnyLayer>,
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
            let single = gated_single::pack_any(g as &dyn Any);
            Arc::new(GatedLanes { ih, b_ih, hh, b_hh, single }) as Arc<dyn Any + Send + Sync>
        })
        .clone();
    any.downcast::<GatedLanes<F::C>>().expect("the cached weights have the plan's lane type")
}

/// Ticks of layer-0 input rows per pass (`run_block`): a small block computes
/// gi = b_ih + W_ih x_t of up to this many ticks in one affine pass per sequence (its input
/// rows are consecutive, so they are the rows of one map: tiles of MR ticks instead of a
/// pass of `ns` rows per tick; same operations per row, same bits). 1 (per tick) unless at
/// least 4 ticks of the block's rows fit in 64 KiB.
fn hoisted_ticks(ns: usize, up: usize, lane_bytes: usize, steps: usize) -> usize {
    const BYTES: usize = 64 * 1024;
    let ticks = (BYTES / (ns * up * lane_bytes).max(1)).min(256).min(steps);
    if ticks >= 4 { ticks } else { 1 }
}

/// One layer's block state and scratch.
struct LayerBlock<C> {
    /// h rows (ns × H) and c rows (ns × H, LSTMs)
    h: Vec<C>,
    c: Vec<C>,
    gi: Vec<C>,
    gh: Vec<C>,
    /// gate-major pre-activations (`gated_pointwise`)
    pre: Vec<C>,
    /// with the unit split (`unit_split`): one `pre` per range of the sequences
    pre_parts: Vec<Vec<C>>,
    /// f16 on its native tile (`binary16_rows`): gi (when not hoisted) and gh as binary16
    /// rows (`tile_kernel::affine_binary16`), and `gi`, `gh` empty; else empty
    gi16: Vec<u16>,
    gh16: Vec<u16>,
}

/// One tick of layer `lb` with its units and sequences split between `team` tasks
/// (`unit_split`): gi (unless given: layer 0's hoisted rows, with their stride) and gh by
/// panels of units in one fork-join, then the elementwise part by ranges of the sequences,
/// each with its own gate-major `pre` (the pre-activations gi + gh added there: the same
/// rounded additions as the tiles' gate split).
#[allow(clippy::too_many_arguments)]
fn layer_tick_split<F: LaneFormat + Scalar>(g: &GatedPlan<F>, w: &GatedLanes<F::C>, lb: &mut LayerBlock<F::C>, input: (&[F::C], usize), hoisted: Option<(&[F::C], usize)>, ns: usize, active: Option<&[bool]>, (team, fma): (usize, bool)) {
    let hsz = g.hidden;
    let (xt, ht) = ([Term { w: &w.ih, z: input.0, ldz: input.1 }], [Term { w: &w.hh, z: &lb.h, ldz: hsz }]);
    let gh = Map { bias: &w.b_hh, terms: &ht, ns, out: &mut lb.gh };
    let (gi, stride_i) = match hoisted {
        Some(rows) => {
            affine_split::<F>(&mut [gh], fma, team);
            rows
        }
        None => {
            affine_split::<F>(&mut [Map { bias: &w.b_ih, terms: &xt, ns, out: &mut lb.gi }, gh], fma, team);
            (&lb.gi[..], w.ih.up)
        }
    };
    let gh = &lb.gh[..];
    let one = |s0: usize, h: &mut [F::C], c: &mut [F::C], pre: &mut [F::C]| {
        let n = h.len() / hsz;
        let rows = GateRows { ns: n, gi: Sums::Lanes(&gi[s0 * stride_i..]), stride_i, gh: Sums::Lanes(&gh[s0 * w.hh.up..]), stride_h: w.hh.up };
        let act = active.map(|a| &a[s0..s0 + n]);
        match g.kind {
            GatedKind::Gru => gru_block::<F>(g, &rows, pre, h, act, false),
            _ => lstm_block::<F>(g, &rows, pre, h, c, act, false),
        }
    };
    let parts = lb.pre_parts.len();
    if parts == 1 {
        return one(0, &mut lb.h, &mut lb.c, &mut lb.pre_parts[0]);
    }
    let hs = row_parts(&mut lb.h, hsz, parts);
    let cs = if lb.c.is_empty() { (0..parts).map(|_| (0, &mut [][..])).collect() } else { row_parts(&mut lb.c, hsz, parts) };
    hs.into_par_iter().zip(cs).zip(lb.pre_parts.par_iter_mut()).for_each(|(((s0, h), (_, c)), pre)| one(s0, h, c, pre));
}

/// One block's share of the batch's results (states and cells empty unless kept, and
/// filled in by the block: `block_results`).
struct BlockOut<'a, F> {
    states: &'a mut [MaybeUninit<F>],
    cells: &'a mut [MaybeUninit<F>],
    final_h: Vec<&'a mut [F]>,
    final_c: Vec<Option<&'a mut [F]>>,
}

/// Whether a block of F on one thread (`team` 1) keeps gi and gh as the native f16 tile's
/// binary16 rows, which the cells' AVX-512 loops convert as they read them
/// (`gated_half_loops::Binary16`): f16 with its own sums, AVX-512 and AVX512-FP16. Its
/// `affine` converts every row back to f32 lanes, a pass that took 35–45% of the tile's
/// time in an f16 LSTM at hidden 16. (The unit split keeps f32 lanes.)
fn binary16_rows<F: LaneFormat>(team: usize) -> bool {
    team == 1 && F::ROUNDING == crate::sim::lanes::Rounding::F16 && !crate::sim::tile_kernel::f32_sums::<F>() && crate::sim::cpu::avx512() && crate::sim::tile_kernel::native_f16()
}

/// out = b + Σ W z for ns rows (`tile_kernel::affine`), or with `sums` (a half format with
/// f32 sums) the f32 sums themselves: `F::Sum`'s tiles without the rounding pass of
/// `tile_kernel::affine_panels`, for the cells' loops, which round them as they read them
/// (`Sums::F32`; 13% of an f16 GRU with f32 sums at hidden 16 was that pass on AVX-512).
fn maps<F: LaneFormat>(sums: bool, bias: &[F::C], terms: &[Term<'_, F::C>], ns: usize, out: &mut [F::C], fma: bool) {
    if sums {
        affine::<F::Sum>(bias, terms, ns, out, fma)
    } else {
        affine::<F>(bias, terms, ns, out, fma)
    }
}

/// Runs sequences `first..first + ns` of the batch (`xl`: the batch's inputs as lanes),
/// each tick split between `team` tasks when it is above 1 (`layer_tick_split`).
#[allow(clippy::too_many_arguments)]
fn run_block<F: LaneFormat + Scalar>(plan: &StackPlan<F>, gated: &[&GatedPlan<F>], lanes: &[Arc<GatedLanes<F::C>>], xl: &[F::C], starts: &Starts<F>, spec: &BatchSpec, (first, ns, team): (usize, usize, usize), out: BlockOut<'_, F>, ctl: &Control) -> SimResult<()> {
    let (n, t_max) = (plan.input, spec.steps);
    let lens: Vec<usize> = (0..ns).map(|s| spec.length(first + s)).collect();
    let bits = binary16_rows::<F>(team);
    let mut layers: Vec<LayerBlock<F::C>> = gated
        .iter()
        .zip(lanes)
        .map(|(g, w)| {
            let hsz = g.hidden;
            let c = if g.has_cell_state() { vec![F::C::ZERO; ns * hsz] } else { Vec::new() };
            let pre_len = |n: usize| regions(g.kind) * n * hsz;
            // with the unit split, one `pre` per range of the sequences (one range per task, at most one per sequence)
            let parts = team.min(ns);
            let (pre, pre_parts) = if team > 1 { (Vec::new(), (0..parts).map(|j| vec![F::C::ZERO; pre_len(part(ns, parts, j).len())]).collect()) } else { (vec![F::C::ZERO; pre_len(ns)], Vec::new()) };
            // the rows of gi and gh: f32 lanes, or (`binary16_rows`) binary16 only
            let lanes = |p: &Packed<F::C>| if bits { Vec::new() } else { vec![F::C::ZERO; ns * p.up] };
            let b16 = |p: &Packed<F::C>| if bits { vec![0u16; ns * binary16_width(p)] } else { Vec::new() };
            LayerBlock { h: vec![F::C::ZERO; ns * hsz], c, gi: lanes(&w.ih), gh: lanes(&w.hh), pre, pre_parts, gi16: b16(&w.ih), gh16: b16(&w.hh) }
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
    // the top layer's cell states are kept only with keep="all"
    let (htop, top_cell) = (gated[top].hidden, gated[top].has_cell_state() && spec.keep.extras());
    let kept = Kept::new::<F>(spec.batch, t_max, htop);
    if let Some(single) = single_layers(lanes, ns, team) {
        // one sequence, small layers: the register kernel (`gated_single`)
        let x = &xl[first * t_max * n..];
        let (states, cells) = (spec.keep.states().then_some(&mut *out.states), top_cell.then_some(&mut *out.cells));
        match single[0] {
            AnyLayer::F32(_) => run_single::<f32, _, _>(&single, &mut layers, x, n, lens[0], states, cells, spec.fma, ctl)?,
            AnyLayer::F64(_) => run_single::<f64, _, _>(&single, &mut layers, x, n, lens[0], states, cells, spec.fma, ctl)?,
            AnyLayer::F16(_) => run_single_f16(&single, &mut layers, x, n, lens[0], states, cells, spec.fma, ctl)?,
        }
        finish(out, &layers, &kept, lens[0], 1, ctl);
        return Ok(());
    }
    let longest = lens.iter().copied().max().unwrap_or(0);
    let shortest = lens.iter().copied().min().unwrap_or(0);
    let mut active = vec![true; ns];
    // kept rows of the top layer, flushed every `chunk` ticks (`block_results`)
    let chunk = ticks_per_flush(spec.keep.states(), htop * std::mem::size_of::<F>(), t_max);
    let kept_len = if spec.keep.states() { chunk * ns * htop } else { 0 };
    let (mut kept_h, mut kept_c) = (vec![F::C::ZERO; kept_len], vec![F::C::ZERO; if top_cell { kept_len } else { 0 }]);
    let hoist = hoisted_ticks(ns, lanes[0].ih.up, std::mem::size_of::<F::C>(), longest);
    let mut gi0 = vec![F::C::ZERO; if hoist > 1 { ns * hoist * lanes[0].ih.up } else { 0 }];
    // a half format with f32 sums, AVX-512 or AVX2: gi and gh stay f32 sums, rounded by the cells' loops
    let sums = crate::sim::cells::gated_pointwise::half_loops() && crate::sim::tile_kernel::f32_sums::<F>();
    let mut t0 = 0;
    for t in 0..longest {
        ctl.check()?;
        // every sequence runs until the shortest ends; after that only those still running are stored
        let act = if t < shortest {
            None
        } else {
            active.iter_mut().zip(&lens).for_each(|(a, &l)| *a = t < l);
            Some(active.as_slice())
        };
        // layer 0 reads its input rows in place, one tick at a time, unless hoisted
        if hoist <= 1 {
            prefetch_inputs(xl, (first, ns), t_max, n, t);
        }
        for l in 0..gated.len() {
            let (g, w) = (gated[l], &lanes[l]);
            let (below, rest) = layers.split_at_mut(l);
            let lb = &mut rest[0];
            // layer 0, a small block: gi of `hoist` ticks per pass, each sequence's
            // consecutive inputs (n apart) as the rows of one affine map
            let hoisted = l == 0 && hoist > 1;
            let up_i = w.ih.up;
            if hoisted && t % hoist == 0 {
                let rows = hoist.min(longest - t);
                let xs: Vec<[Term<'_, F::C>; 1]> = (0..ns).map(|s| [Term { w: &w.ih, z: &xl[((first + s) * t_max + t) * n..], ldz: n }]).collect();
                let mut maps: Vec<Map<'_, F::C>> = gi0.chunks_mut(hoist * up_i).zip(&xs).map(|(out, terms)| Map { bias: &w.b_ih, terms, ns: rows, out }).collect();
                if sums && team == 1 {
                    // f32 sums, rounded where they are read (`Sums::F32`); the unit split
                    // (`layer_tick_split`) reads its rows as values of the format
                    affine_split::<F::Sum>(&mut maps, spec.fma, team);
                } else {
                    affine_split::<F>(&mut maps, spec.fma, team);
                }
            }
            let hoisted_rows = hoisted.then(|| (&gi0[(t % hoist) * up_i..], hoist * up_i));
            let (input, ldz) = if l == 0 { (&xl[(first * t_max + t) * n..], t_max * n) } else { (&below[l - 1].h[..], gated[l - 1].hidden) };
            if team > 1 {
                layer_tick_split(g, w, lb, (input, ldz), hoisted_rows, ns, act, (team, spec.fma));
                continue;
            }
            // gi = b_ih + W_ih x: sequence s's row at gi[s·gi_ld]
            let form = |r| if sums { Sums::F32(r) } else { Sums::Lanes(r) };
            let (gi, gi_ld) = match hoisted_rows {
                Some((rows, ld)) => (form(rows), ld),
                None if bits => {
                    affine_binary16(&w.b_ih, &[Term { w: &w.ih, z: input, ldz }], ns, &mut lb.gi16, spec.fma);
                    (Sums::Binary16(&lb.gi16[..]), binary16_width(&w.ih))
                }
                None => {
                    maps::<F>(sums, &w.b_ih, &[Term { w: &w.ih, z: input, ldz }], ns, &mut lb.gi, spec.fma);
                    (form(&lb.gi[..]), up_i)
                }
            };
            // gh = b_hh + W_hh h, its gates added to gi straight into `pre` where the tiles can
            let hh = [Term { w: &w.hh, z: &lb.h, ldz: g.hidden }];
            let (gh, added) = if bits {
                affine_binary16(&w.b_hh, &hh, ns, &mut lb.gh16, spec.fma);
                (Sums::Binary16(&lb.gh16[..]), false)
            } else {
                let (Sums::Lanes(gi_rows) | Sums::F32(gi_rows)) = gi else { unreachable!("binary16 gi only with binary16 gh") };
                let split = GateSplit { addend: gi_rows, addend_ld: gi_ld, pre: &mut lb.pre, hsz: g.hidden, region: gate_regions(g.kind) };
                let added = affine_gates::<F>(&w.b_hh, &hh, ns, &mut lb.gh, split, spec.fma);
                if !added {
                    maps::<F>(sums, &w.b_hh, &hh, ns, &mut lb.gh, spec.fma);
                }
                (form(&lb.gh[..]), added)
            };
            let stride_h = if bits { binary16_width(&w.hh) } else { w.hh.up };
            let rows = GateRows { ns, gi, stride_i: gi_ld, gh, stride_h };
            match g.kind {
                GatedKind::Gru => gru_block::<F>(g, &rows, &mut lb.pre, &mut lb.h, act, added),
                _ => lstm_block::<F>(g, &rows, &mut lb.pre, &mut lb.h, &mut lb.c, act, added),
            }
        }
        if spec.keep.states() {
            // the top layer's h (and c) of this tick, kept until the chunk is flushed
            let (lt, i) = (&layers[top], t - t0);
            kept_h[i * ns * htop..(i + 1) * ns * htop].copy_from_slice(&lt.h);
            if top_cell {
                kept_c[i * ns * htop..(i + 1) * ns * htop].copy_from_slice(&lt.c);
            }
            if t + 1 - t0 == chunk || t + 1 == longest {
                let ticks: Vec<&[F::C]> = kept_h.chunks_exact(ns * htop).take(t + 1 - t0).collect();
                kept.flush::<F>(out.states, &lens, (t0, t + 1), htop, &ticks);
                if top_cell {
                    let ticks: Vec<&[F::C]> = kept_c.chunks_exact(ns * htop).take(t + 1 - t0).collect();
                    kept.flush::<F>(out.cells, &lens, (t0, t + 1), htop, &ticks);
                }
                t0 = t + 1;
            }
        }
    }
    finish(out, &layers, &kept, longest, ns, ctl);
    Ok(())
}

/// The block's last steps: kept rows from tick `longest` on zeroed, every layer's final h
/// and c stored, `ns` sequences counted done.
fn finish<F: LaneFormat + Scalar>(mut out: BlockOut<'_, F>, layers: &[LayerBlock<F::C>], kept: &Kept, longest: usize, ns: usize, ctl: &Control) {
    kept.zero_from::<F>(out.states, longest);
    kept.zero_from::<F>(out.cells, longest);
    for (l, lb) in layers.iter().enumerate() {
        store::<F>(out.final_h[l], &lb.h);
        if let Some(c) = out.final_c[l].as_deref_mut() {
            store::<F>(c, &lb.c);
        }
    }
    ctl.advance(ns as u64);
}

/// `gated_single::run` in lane type E (the block's lanes C and format F are E).
#[allow(clippy::too_many_arguments)]
fn run_single<E: Elem, C: 'static, F: 'static>(single: &[&AnyLayer], layers: &mut [LayerBlock<C>], x: &[C], n: usize, len: usize, states: Option<&mut [MaybeUninit<F>]>, cells: Option<&mut [MaybeUninit<F>]>, fma: bool, ctl: &Control) -> SimResult<()> {
    let typed: Vec<&RegLayer<E>> = single.iter().map(|l| l.get::<E>()).collect::<Option<_>>().expect("every layer of a stack has the same lane type");
    let mut state: Vec<LayerState<'_, E>> = layers.iter_mut().map(|lb| LayerState { h: same_type::slice_mut(&mut lb.h), c: same_type::slice_mut(&mut lb.c) }).collect();
    // (F is E, or a half format with f32 sums and E f32: both stored as one f32)
    gated_single::run(&typed, same_type::slice(x), n, len, &mut state, states.map(same_type::uninit_lanes_mut), cells.map(same_type::uninit_lanes_mut), fma, ctl)
}

/// `gated_single::run` in f16's own arithmetic (binary16 lanes, AVX512-FP16): the block's
/// f32 lanes (C; f16 values, so every conversion is exact) converted to binary16 for the
/// run: the inputs, every layer's h and c, and back; the kept rows are written as binary16
/// straight into the result (F is `half::f16`).
#[allow(clippy::too_many_arguments)]
fn run_single_f16<C: 'static, F: 'static>(single: &[&AnyLayer], layers: &mut [LayerBlock<C>], x: &[C], n: usize, len: usize, states: Option<&mut [MaybeUninit<F>]>, cells: Option<&mut [MaybeUninit<F>]>, fma: bool, ctl: &Control) -> SimResult<()> {
    let typed: Vec<&RegLayer<u16>> = single.iter().map(|l| l.get::<u16>()).collect::<Option<_>>().expect("every layer of a stack has the same lane type");
    let bits = |v: &[f32]| v.iter().map(|&x| half::f16::from_f32(x).to_bits()).collect::<Vec<u16>>();
    let x16 = bits(&same_type::slice::<C, f32>(x)[..len * n]);
    let mut hc: Vec<(Vec<u16>, Vec<u16>)> = layers.iter().map(|lb| (bits(same_type::slice(&lb.h)), bits(same_type::slice(&lb.c)))).collect();
    let mut state: Vec<LayerState<'_, u16>> = hc.iter_mut().map(|(h, c)| LayerState { h, c }).collect();
    gated_single::run(&typed, &x16, n, len, &mut state, states.map(same_type::f16_bits_mut), cells.map(same_type::f16_bits_mut), fma, ctl)?;
    for (lb, (h, c)) in layers.iter_mut().zip(&hc) {
        for (d, &b) in same_type::slice_mut::<C, f32>(&mut lb.h).iter_mut().zip(h) {
            *d = half::f16::from_bits(b).to_f32();
        }
        for (d, &b) in same_type::slice_mut::<C, f32>(&mut lb.c).iter_mut().zip(c) {
            *d = half::f16::from_bits(b).to_f32();
        }
    }
    Ok(())
}

/// Every layer's `gated_single` weights when a block of `ns` sequences on a team of `team`
/// runs there: one sequence on one thread, and every layer packed for it
/// (`gated_single::pack_any`: f32 or f64, a hidden size that fits, the CPU able).
fn single_layers<C>(lanes: &[Arc<GatedLanes<C>>], ns: usize, team: usize) -> Option<Vec<&AnyLayer>> {
    if ns != 1 || team != 1 {
        return None;
    }
    lanes.iter().map(|w| w.single.as_ref()).collect()
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
        let xl = lane_inputs(xs, spec.threads);
        let threads = spec.threads.unwrap_or_else(crate::sim::pool::default_threads).max(1);
        let (htop, top_cell) = (plan.top_hidden(), gated[gated.len() - 1].has_cell_state() && spec.keep.extras());
        let kept = ticks_per_flush(spec.keep.states(), htop * std::mem::size_of::<F>(), spec.steps) * htop * if top_cell { 2 } else { 1 };
        let per_seq = lanes.iter().zip(&gated).map(|(w, g)| (2 + regions(g.kind)) * g.hidden + w.ih.up + w.hh.up).sum::<usize>() + if spec.keep.states() { kept } else { 0 };
        let (b, t) = (spec.batch, spec.steps);
        let weight_bytes = lanes.iter().map(|w| w.ih.bytes() + w.hh.bytes()).sum();
        // large weights, small batches: the threads share every block's units (`unit_split`)
        let team = team_size(threads, weight_bytes, b);
        let block = block_size(b, threads / team, per_seq * std::mem::size_of::<F::C>(), weight_bytes);
        let firsts = block_firsts(b, block);
        let keep = spec.keep.states();
        let zero = F::from_lane(F::C::ZERO);
        let mut res = CellBatch {
            states: Vec::new(),
            cells: Vec::new(),
            final_h: gated.iter().map(|g| result_buffer(b * g.hidden, zero)).collect(),
            final_c: gated.iter().map(|g| g.has_cell_state().then(|| result_buffer(b * g.hidden, zero))).collect(),
        };
        let (mut states, mut cells) = (Unfilled::new(if keep { b * t * htop } else { 0 }), Unfilled::new(if keep && top_cell { b * t * htop } else { 0 }));
        let mut per_block: Vec<BlockOut<'_, F>> = states
            .shares(t * htop, block, &firsts, b)
            .into_iter()
            .zip(cells.shares(t * htop, block, &firsts, b))
            .map(|(states, cells)| BlockOut { states, cells, final_h: Vec::new(), final_c: Vec::new() })
            .collect();
        for (g, (h, c)) in gated.iter().zip(res.final_h.iter_mut().zip(res.final_c.iter_mut())) {
            let hs = split_blocks(h, g.hidden, block, &firsts, b);
            let cs: Vec<Option<&mut [F]>> = match c {
                Some(c) => split_blocks(c, g.hidden, block, &firsts, b).into_iter().map(Some).collect(),
                None => firsts.iter().map(|_| None).collect(),
            };
            for ((o, h), c) in per_block.iter_mut().zip(hs).zip(cs) {
                o.final_h.push(h);
                o.final_c.push(c);
            }
        }
        let work: Vec<(usize, BlockOut<'_, F>)> = firsts.iter().copied().zip(per_block).collect();
        run_blocks(spec, team, work, |f, out| run_block(plan, &gated, &lanes, &xl, starts, spec, (f, block.min(b - f), team), out, ctl))?;
        recycle_lanes(xl);
        // SAFETY: every block ran to completion (run_blocks returned Ok), and a block fills
        // its shares of the states and cells: flushes over ticks 0..its longest length,
        // then Kept::zero_from.
        (res.states, res.cells) = unsafe { (states.filled(), cells.filled()) };
        Ok(res)
    })())
}

/// The lock-step run when `S` is a builtin float format and every layer is gated, else
/// None (the caller runs sequence by sequence).
pub fn try_lockstep<S: Scalar>(plan: &StackPlan<S>, xs: &[S], starts: &Starts<S>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<CellBatch<S>>> {
    fn go<S: Scalar, G: LaneFormat + Scalar>(plan: &StackPlan<S>, xs: &[S], starts: &Starts<S>, spec: &BatchSpec, ctl: &Control) -> Option<SimResult<CellBatch<S>>> {
        let p = (plan as &dyn Any).downcast_ref::<StackPlan<G>>()?;
        let xs: &[G] = same_type::slice(xs);
        let st = (starts as &dyn Any).downcast_ref::<Starts<G>>()?;
        let r = run_lockstep::<G>(p, xs, st, spec, ctl)?;
        Some(r.map(|b| *(Box::new(b) as Box<dyn Any>).downcast::<CellBatch<S>>().expect("S is G")))
    }
    go::<S, f32>(plan, xs, starts, spec, ctl)
        .or_else(|| go::<S, f64>(plan, xs, starts, spec, ctl))
        .or_else(|| go::<S, half::f16>(plan, xs, starts, spec, ctl))
        .or_else(|| go::<S, half::bf16>(plan, xs, starts, spec, ctl))
        .or_else(|| go::<S, crate::num::f32_sums::Bf16SumF32>(plan, xs, starts, spec, ctl))
        .or_else(|| go::<S, crate::num::f32_sums::F16SumF32>(plan, xs, starts, spec, ctl))
}

#[cfg(test)]
#[path = "gated_batch_tests.rs"]
mod tests;
