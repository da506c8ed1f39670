//! Inputs, outputs and scheduling shared by the lock-step batch kernels (`float_batch`,
//! `cells::gated_batch`).
//!
//! - Inputs: the batch's inputs (B, T, n) as lane values, borrowed without a copy when the
//!   format is its own lane type (f32, f64), converted once otherwise (f16, bf16). A kernel
//!   reads the rows x_t of a block in place: sequence s's row is at ((first + s)·T + t)·n,
//!   so the rows of consecutive sequences are `T·n` apart (the `ldz` of `tile_kernel`).
//! - Outputs: each result buffer of the whole batch (B rows of `row` values) is allocated
//!   once and split into every block's disjoint slice, so each block writes its results in
//!   place (no per-block buffers joined and converted afterwards).
//! - Scheduling: blocks run on the rayon pool of `spec.threads` (one block runs on the
//!   calling thread). None of this changes a value: only where it is stored.

use crate::error::SimResult;
use crate::sim::lanes::LaneFormat;
use crate::sim::pool::with_pool;
use crate::sim::run::BatchSpec;
use rayon::prelude::*;
use std::any::TypeId;
use std::borrow::Cow;

/// `xs` as lane values: borrowed when `F` is its own lane type, else converted (exactly).
pub fn lane_inputs<F: LaneFormat>(xs: &[F]) -> Cow<'_, [F::C]> {
    if TypeId::of::<F>() == TypeId::of::<F::C>() {
        // SAFETY: F and F::C are the same type (checked above).
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<F::C>(), xs.len()) })
    } else {
        Cow::Owned(xs.iter().map(|v| v.to_lane()).collect())
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

/// Writes ticks `ticks.0..ticks.1` of a block's kept rows into the block's share of a
/// (B, T, row) result (`t_max` = T), one contiguous run per sequence, so that a flush
/// touches each sequence's memory once (rows written tick by tick would be T·row values
/// apart: a page or more, every row). `tick_rows[i]` holds tick t0 + i's rows, sequence s
/// at s·stride. Ticks at or past a sequence's length are skipped (their padding stays).
pub fn flush_rows<F: LaneFormat>(dst: &mut [F], t_max: usize, row: usize, lens: &[usize], ticks: (usize, usize), stride: usize, tick_rows: &[&[F::C]]) {
    let (t0, t1) = ticks;
    debug_assert_eq!(tick_rows.len(), t1 - t0);
    for (s, &len) in lens.iter().enumerate() {
        for (t, rows) in (t0..t1.min(len)).zip(tick_rows) {
            let base = (s * t_max + t) * row;
            store::<F>(&mut dst[base..base + row], &rows[s * stride..s * stride + row]);
        }
    }
}

/// Ticks per flush of a block's kept rows (`flush_rows`): enough for `FLUSH_BYTES` of a
/// sequence's rows of `row_bytes` each, at most `steps`, at least 1; 1 unless `keep_all`.
pub fn ticks_per_flush(keep_all: bool, row_bytes: usize, steps: usize) -> usize {
    /// Bytes of a sequence's kept rows per flush: measured, runs of 1–2 KiB per sequence
    /// write (B, T, row) results about twice as fast as rows a page apart; longer runs
    /// gain little and cost cache for the kept rows.
    const FLUSH_BYTES: usize = 2048;
    if keep_all { FLUSH_BYTES.div_ceil(row_bytes.max(1)).min(steps).max(1) } else { 1 }
}

/// A result buffer of `n` copies of `zero` (the batch's kept states, cells, outputs).
///
/// On Linux, a large one is advised as huge-page memory (MADV_HUGEPAGE on its 2 MiB-aligned
/// part) before it is first written: the allocator often hands back memory it has just
/// returned to the kernel (glibc trims a thread arena's heap when a run's results of 32 MiB
/// or more are freed), and refilling that page by page cost a quarter of an LSTM run at
/// batch 4096 × hidden 64 (measured); in 2 MiB pages it is 512 times fewer faults. Only the
/// memory's placement changes, never a value.
pub fn result_buffer<T: Copy>(n: usize, zero: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    advise_huge_pages(v.spare_capacity_mut());
    v.resize(n, zero);
    v
}

/// MADV_HUGEPAGE on the whole 2 MiB pages inside `buf` when it spans at least 4 MiB (a hint:
/// the result is ignored, the kernel may decline).
#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(buf: &mut [std::mem::MaybeUninit<T>]) {
    const HUGE: usize = 2 << 20;
    let (start, len) = (buf.as_mut_ptr() as usize, std::mem::size_of_val(buf));
    if len < 2 * HUGE {
        return;
    }
    let (lo, hi) = (start.next_multiple_of(HUGE), (start + len) / HUGE * HUGE);
    if lo < hi {
        // SAFETY: [lo, hi) lies inside `buf`, memory this process owns and nothing reads
        // yet; MADV_HUGEPAGE only changes how the kernel backs it, never its contents.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
        }
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
/// on the pool of `spec.threads`: the first error, or Ok.
pub fn run_blocks<W: Send>(spec: &BatchSpec, work: Vec<(usize, W)>, one: impl Fn(usize, W) -> SimResult<()> + Sync) -> SimResult<()> {
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
    fn flushed_rows_go_to_each_sequence_in_order_and_skip_ticks_past_its_length() {
        // 2 sequences, rows of 2 values, stride 3 in the tick buffers; ticks 1..3 of T = 4
        let (t1, t2) = ([1.0f32, 2.0, 9.0, 3.0, 4.0, 9.0], [5.0f32, 6.0, 9.0, 7.0, 8.0, 9.0]);
        let mut dst = vec![0.0f32; 2 * 4 * 2];
        flush_rows::<f32>(&mut dst, 4, 2, &[4, 2], (1, 3), 3, &[&t1, &t2]);
        assert_eq!(dst, [0.0, 0.0, 1.0, 2.0, 5.0, 6.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(ticks_per_flush(true, 1000, 100), 3);
        assert_eq!(ticks_per_flush(true, 4, 100), 100);
        assert_eq!(ticks_per_flush(true, 4096, 100), 1);
        assert_eq!(ticks_per_flush(false, 4, 100), 1);
    }

    #[test]
    fn result_buffers_hold_n_zeros_small_or_advised_as_huge_pages() {
        for n in [0, 3, (5 << 20) / 4 + 7] {
            let v = result_buffer(n, 0.0f32);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|x| x.to_bits() == 0));
        }
        assert_eq!(result_buffer(4, half::f16::ONE), [half::f16::ONE; 4]);
    }

    #[test]
    fn lane_inputs_borrow_f32_and_convert_halves_exactly() {
        let xs = [1.5f32, -2.0];
        assert!(matches!(lane_inputs(&xs), Cow::Borrowed(_)));
        let hs = [half::f16::from_f32(0.333), half::f16::MAX];
        let l = lane_inputs(&hs);
        assert!(matches!(l, Cow::Owned(_)));
        assert_eq!(&*l, &[hs[0].to_f32(), 65504.0]);
        let mut rows = vec![0u8; 6];
        fill_rows(&mut rows, &[1, 2]);
        assert_eq!(rows, [1, 2, 1, 2, 1, 2]);
    }
}
