//! Inputs, outputs and scheduling shared by the lock-step batch kernels (`float_batch`,
//! `cells::gated_batch`).
//!
//! - Inputs: the batch's inputs (B, T, n) as lane values, borrowed without a copy when the
//!   format is its own lane type (f32, f64), converted once otherwise (f16, bf16). A kernel
//!   reads the rows x_t of a block in place: sequence s's row is at ((first + s)·T + t)·n,
//!   so the rows of consecutive sequences are `T·n` apart (the `ldz` of `tile_kernel`),
//!   each asked for a line ahead of its tick ([`prefetch_inputs`]).
//! - Outputs: each result buffer of the whole batch (B rows of `row` values) is allocated
//!   once and split into every block's disjoint slice, so each block writes its results in
//!   place (no per-block buffers joined and converted afterwards; the kept states are
//!   written a chunk of ticks at a time, `block_results`).
//! - Scheduling: blocks run on the rayon pool of `spec.threads` (one block runs on the
//!   calling thread). None of this changes a value: only where it is stored.

use crate::error::SimResult;
use crate::sim::lanes::LaneFormat;
use crate::sim::{parallel_copy, recycle};
use crate::sim::pool::with_pool;
use crate::sim::run::BatchSpec;
use rayon::prelude::*;
use std::borrow::Cow;

/// `xs` as lane values: borrowed when `F` is stored as its lane values, else converted
/// (exactly) on `threads` threads when large (`parallel_copy`: on one thread this pass held
/// up the others, 16 MB of f32 for a batch of 1024 × 1000 × 4 inputs).
/// Give the result to [`recycle_lanes`] after the run.
pub fn lane_inputs<F: LaneFormat>(xs: &[F], threads: Option<usize>) -> Cow<'_, [F::C]> {
    if F::STORED_AS_LANE {
        // SAFETY: F is stored as its lane value (`LaneFormat::STORED_AS_LANE`): same size,
        // alignment and bits.
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<F::C>(), xs.len()) })
    } else {
        // SAFETY: `to_lanes_uninit` writes every value of an output of its input's length
        // (`LaneFormat`'s contract)
        Cow::Owned(unsafe { parallel_copy::written(xs, threads, F::to_lanes_uninit) })
    }
}

/// A converted `lane_inputs` buffer kept for the next run (`recycle`).
pub fn recycle_lanes<C: Clone + Send + 'static>(xl: Cow<'_, [C]>) {
    if let Cow::Owned(v) = xl {
        recycle::give(v);
    }
}

/// Asks L1 for the lines of the block's input rows (sequences `first..first + ns` of `xl`,
/// each `t_max` ticks of `n` values) before the tiles read them. A block reads each
/// sequence's row x_t in place, a few values per tick, the rows `t_max·n` values apart: a new
/// line every few ticks in each of hundreds of streams a page or more apart, which the
/// hardware prefetchers do not follow, so each new line was a miss in the tile's first k
/// step (perf: 18% of the tile's samples on the instruction after that broadcast, f64
/// SimpleRNN (1024, 300, 16, 4); strides that alias in L1 are copied with a prefetch of
/// their own, `tile_rows::unaliased`). The rows asked for at tick t are
/// [`rows_to_fetch`]'s; each row's first and last value name its lines. Only a hint: no
/// value is read or changed, and nothing past `xl` is touched.
#[inline]
pub fn prefetch_inputs<C>(xl: &[C], (first, ns): (usize, usize), t_max: usize, n: usize, t: usize) {
    #[cfg(target_arch = "x86_64")]
    for (s, tick) in rows_to_fetch(ns, t, t_max, n * std::mem::size_of::<C>()) {
        let row = ((first + s) * t_max + tick) * n;
        let Some(last) = xl.get(row + n - 1) else { return };
        for line in row_lines(xl[row..].as_ptr() as usize, last as *const C as usize) {
            // SAFETY: a prefetch only hints, for any address (SSE, part of x86-64)
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line as *const i8) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (xl, first, ns, t_max, n, t);
}

/// The (sequence, tick) rows [`prefetch_inputs`] asks for at tick t, rows of `row_bytes`:
/// a line holds the rows of p = 64 / row_bytes ticks (at least 1), and at tick t the row of
/// tick t + p (the last row, t_max − 1, past it) of each sequence s with (s + t) mod p = 0.
/// So each sequence is asked for every p ticks, for a row p ticks on: its asked rows are a
/// line apart and (with each row's first and last value) name every line it reads from tick
/// 2p on, at least a tick early; and a tick asks for ns / p rows, not for all ns every p
/// ticks (in a burst of ns misses the prefetches themselves stalled, perf).
pub fn rows_to_fetch(ns: usize, t: usize, t_max: usize, row_bytes: usize) -> impl Iterator<Item = (usize, usize)> {
    let p = if row_bytes == 0 { 0 } else { (LINE / row_bytes).max(1) };
    let ahead = (t + p).min(t_max.saturating_sub(1));
    let start = if p > 0 && ahead > t { (p - t % p) % p } else { ns };
    (start..ns).step_by(p.max(1)).map(move |s| (s, ahead))
}

/// The lines holding the bytes a..=b (a ≤ b, at most a line apart): one or two line addresses.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn row_lines(a: usize, b: usize) -> impl Iterator<Item = usize> {
    [a, b].into_iter().take(if a / LINE == b / LINE { 1 } else { 2 })
}

/// Bytes of a cache line.
const LINE: usize = 64;

/// dst[i] = the format's value of the lane value src[i] (exact: lanes hold values of F),
/// over the shorter of the two (`LaneFormat::from_lanes`).
#[inline]
pub fn store<F: LaneFormat>(dst: &mut [F], src: &[F::C]) {
    let n = dst.len().min(src.len());
    F::from_lanes(&mut dst[..n], &src[..n]);
}

/// Every row of `dst` (rows of `row.len()` values) set to `row`, in fixed chunks of 8
/// (rows are short: one call per row would cost more than the copy).
#[inline]
pub fn fill_rows<C: Copy>(dst: &mut [C], row: &[C]) {
    if row.is_empty() {
        return;
    }
    let (r8, tail) = row.split_at(row.len() / 8 * 8);
    for r in dst.chunks_exact_mut(row.len()) {
        let (d8, dt) = r.split_at_mut(r8.len());
        for (d, s) in d8.chunks_exact_mut(8).zip(r8.chunks_exact(8)) {
            let (d, s): (&mut [C; 8], &[C; 8]) = (d.try_into().expect("8"), s.try_into().expect("8"));
            *d = *s;
        }
        dt.copy_from_slice(tail);
    }
}

/// The first sequence of every block of `block` sequences (the last block may be shorter).
pub fn block_firsts(batch: usize, block: usize) -> Vec<usize> {
    (0..batch).step_by(block.max(1)).collect()
}

/// `buf`, holding `row` values per sequence of the batch (or nothing: a result not kept),
/// split into one slice per block (`firsts`, each `block` sequences, the last shorter).
pub fn split_blocks<'a, T>(buf: &'a mut [T], row: usize, block: usize, firsts: &[usize], batch: usize) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(firsts.len());
    if buf.is_empty() {
        out.extend(firsts.iter().map(|_| <&mut [T]>::default()));
        return out;
    }
    debug_assert_eq!(buf.len(), batch * row);
    let mut rest = buf;
    for &f in firsts {
        let ns = block.min(batch - f);
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(ns * row);
        out.push(head);
        rest = tail;
    }
    out
}

/// Runs `one(first, work)` for every block (its first sequence and its share of the outputs)
/// on the pool of `spec.threads`: the first error, or Ok. With `team` > 1 the blocks run one
/// after the other, each on the whole pool (`unit_split`).
pub fn run_blocks<W: Send>(spec: &BatchSpec, team: usize, work: Vec<(usize, W)>, one: impl Fn(usize, W) -> SimResult<()> + Sync + Send) -> SimResult<()> {
    if team > 1 {
        return with_pool(spec.threads, || work.into_iter().try_for_each(|(f, w)| one(f, w)))?;
    }
    let valid_threads = spec.threads.is_none_or(|t| (1..=4096).contains(&t));
    if work.len() <= 1 && valid_threads {
        // one block: no pool hand-off (small batches)
        return work.into_iter().try_for_each(|(f, w)| one(f, w));
    }
    with_pool(spec.threads, || work.into_par_iter().try_for_each(|(f, w)| one(f, w)))?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of every row a block reads from tick 2p on (p ticks per line) is asked for
    /// at an earlier tick, whatever the row size and the rows' alignment; the asked rows are
    /// the block's and within the run; and no tick asks for many more than ns / p rows.
    #[test]
    fn the_prefetched_rows_name_every_line_read_ahead_of_its_tick() {
        for row_bytes in [2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 512] {
            let cases = [(1, 9, 0, 0), (5, 40, 0, 0), (7, 33, 4, 20), (13, 70, 60, 63), (216, 50, 8, 8), (3, 200, 2, 1)];
            for (ns, t_max, stride_extra, base) in cases.into_iter().chain((0..64).step_by(7).map(|b| (4, 130, b / 2, b))) {
                let p = (64 / row_bytes).max(1);
                // byte address of (s, tick)'s row: rows of a sequence row_bytes apart,
                // sequences t_max rows plus `stride_extra` bytes apart, from `base`
                let addr = |s: usize, tick: usize| base + s * (t_max * row_bytes + stride_extra) + tick * row_bytes;
                let lines = |s: usize, tick: usize| row_lines(addr(s, tick), addr(s, tick) + row_bytes - 1).map(|a| a / LINE).collect::<Vec<_>>();
                let mut asked: std::collections::HashMap<(usize, usize), usize> = Default::default();
                for t in 0..t_max {
                    let rows: Vec<(usize, usize)> = rows_to_fetch(ns, t, t_max, row_bytes).collect();
                    assert!(rows.len() <= ns.div_ceil(p), "row_bytes {row_bytes} ns {ns} t {t}: {} rows", rows.len());
                    for (s, tick) in rows {
                        assert!(s < ns && tick > t && tick < t_max, "row ({s}, {tick}) at tick {t}");
                        // a row of at most a line has at most two lines
                        if row_bytes <= 64 {
                            for l in lines(s, tick) {
                                asked.entry((s, l)).or_insert(t);
                            }
                        }
                    }
                }
                if row_bytes > 64 {
                    continue; // (longer rows: their first and last lines only, by design)
                }
                for s in 0..ns {
                    for tick in 2 * p..t_max {
                        for l in lines(s, tick) {
                            let at = asked.get(&(s, l)).copied();
                            assert!(at.is_some_and(|at| at < tick), "row_bytes {row_bytes} ns {ns}: line {l} of ({s}, {tick}) asked at {at:?}");
                        }
                    }
                }
            }
        }
        // nothing to ask for: no values per row, or past the end
        assert_eq!(rows_to_fetch(4, 0, 10, 0).count(), 0);
        assert_eq!(rows_to_fetch(4, 9, 10, 8).count(), 0);
        // prefetch_inputs stays within xl (the last sequence's last row, and a short xl)
        let xl = vec![0.5f64; 3 * 10 * 4];
        for t in 0..12 {
            prefetch_inputs(&xl, (0, 3), 10, 4, t);
            prefetch_inputs(&xl[..50], (1, 2), 10, 4, t);
        }
    }

    #[test]
    fn blocks_split_the_batch_rows_in_order_and_empty_buffers_give_empty_slices() {
        let mut buf: Vec<u32> = (0..7 * 3).collect();
        let firsts = block_firsts(7, 3);
        assert_eq!(firsts, vec![0, 3, 6]);
        let parts = split_blocks(&mut buf, 3, 3, &firsts, 7);
        let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lens, vec![9, 9, 3]);
        assert_eq!(parts[2], &[18, 19, 20]);
        let mut none: Vec<u32> = Vec::new();
        assert!(split_blocks(&mut none, 3, 3, &firsts, 7).iter().all(|p| p.is_empty()));
    }

    #[test]
    fn lane_inputs_borrow_f32_and_convert_halves_exactly() {
        let xs = [1.5f32, -2.0];
        assert!(matches!(lane_inputs(&xs, None), Cow::Borrowed(_)));
        let hs = [half::f16::from_f32(0.333), half::f16::MAX];
        let l = lane_inputs(&hs, Some(2));
        assert!(matches!(l, Cow::Owned(_)));
        assert_eq!(&*l, &[hs[0].to_f32(), 65504.0]);
        // a large batch: converted in chunks on 2 threads (above the split's threshold),
        // every value in place
        let big: Vec<half::bf16> = (0..parallel_copy::PARALLEL_MIN + 1).map(|i| half::bf16::from_f32(i as f32 * 0.37 - 9e3)).collect();
        let lb = lane_inputs(&big, Some(2));
        assert!(lb.iter().zip(&big).all(|(&l, v)| l == v.to_f32()) && lb.len() == big.len());
        recycle_lanes(lb);
        let mut rows = vec![0u8; 6];
        fill_rows(&mut rows, &[1, 2]);
        assert_eq!(rows, [1, 2, 1, 2, 1, 2]);
    }
}
