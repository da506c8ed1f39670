//! Inputs, outputs and scheduling shared by the lock-step batch kernels (`float_batch`,
//! `cells::gated_batch`).
//!
//! - Inputs: the batch's inputs (B, T, n) as lane values, borrowed without a copy when the
//!   format is its own lane type (f32, f64), converted once otherwise (f16, bf16). A kernel
//!   reads the rows x_t of a block in place: sequence s's row is at ((first + s)·T + t)·n,
//!   so the rows of consecutive sequences are `T·n` apart (the `ldz` of `tile_kernel`).
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
