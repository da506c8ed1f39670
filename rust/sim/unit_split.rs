//! The unit split of the lock-step engines: when the packed weights are larger than a
//! core's L2 and the batch is small, the threads share each block instead of taking blocks
//! of their own.
//!
//! With blocks of sequences per thread (`block_io::run_blocks`), every thread streams *all*
//! the weights from L3 once per tick for its share of the sequences (at hidden 1024,
//! 4–19 MB per thread per tick), and a batch smaller than the thread count leaves threads
//! idle. With the unit split, one block holds the batch and each tick runs in two parallel
//! steps on the pool of `spec.threads`:
//!
//! 1. the affine maps: part j of `team` computes panels j·P/team..(j+1)·P/team of the packed
//!    units (`tile_kernel::affine_panels`) for every sequence of the block, so each thread
//!    streams 1/team of the weights, and with fewer bytes than L2 none at all;
//! 2. the elementwise part (activations, gate updates) on `team` ranges of the sequences.
//!
//! (Layer 0's input rows of several ticks, hoisted in small blocks, are split the same way
//! as step 1, once per pass.)
//!
//! The two steps are fork-joins (rayon), so a tick's maps read the previous tick's states
//! only after every part has written them. No element's operations change, only which
//! thread performs them: the bits are those of the per-sequence engines (tested with the
//! split forced on small networks, `float_batch_tests`, `gated_batch_tests`).

use crate::sim::lanes::LaneFormat;
use crate::sim::tile_kernel::{affine_panels, Term, L2_BUDGET, MR};
use rayon::prelude::*;
use std::ops::Range;

/// Threads sharing each block's units: all of them when there is more than one, the
/// weights (bytes) exceed `L2_BUDGET`, and the batch gives each thread fewer than
/// `2·MR` sequences; else 1 (blocks of sequences per thread).
///
/// Measured on 2 threads (f32, fma, hidden 1024 and 256, best of alternating calls): the
/// split runs 1.2–2.1× as fast at batches 1–16 (one thread's block of one to eight
/// sequences reads all the weights for a tile or two), and 0.85–1.08× at batches 32–256,
/// where blocks of sequences already amortise the weights.
pub fn team_size(threads: usize, weight_bytes: usize, batch: usize) -> usize {
    #[cfg(test)]
    if let Some(team) = FORCED.get() {
        return team.min(threads);
    }
    if threads > 1 && weight_bytes > L2_BUDGET && batch.div_ceil(threads) < 2 * MR { threads } else { 1 }
}

#[cfg(test)]
thread_local! {
    static FORCED: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `team_size` answering `team` (capped at the thread count) on this thread:
/// the engines' tests run small networks with the split.
#[cfg(test)]
pub fn forced<T>(team: usize, f: impl FnOnce() -> T) -> T {
    FORCED.set(Some(team));
    let r = f();
    FORCED.set(None);
    r
}

/// Part j of `n` items split into `parts` near-equal ranges (the first ones the shorter).
pub fn part(n: usize, parts: usize, j: usize) -> Range<usize> {
    j * n / parts..(j + 1) * n / parts
}

/// A row pointer the parts of `affine_split` share (each writes its own units).
#[derive(Clone, Copy)]
struct Rows<C>(*mut C);
// SAFETY: the parts that receive a copy write disjoint units of the rows (`affine_split`).
unsafe impl<C: Send> Send for Rows<C> {}
unsafe impl<C: Send> Sync for Rows<C> {}

/// One affine map of `affine_split`: out (ns rows) = bias, then + each term's products.
pub struct Map<'a, C> {
    pub bias: &'a [C],
    pub terms: &'a [Term<'a, C>],
    pub ns: usize,
    pub out: &'a mut [C],
}

/// `tile_kernel::affine` for every map of `maps`, with each map's panels of units split
/// between `parts` tasks on the current rayon pool (one fork-join for all the maps).
pub fn affine_split<F: LaneFormat>(maps: &mut [Map<'_, F::C>], fma: bool, parts: usize) {
    let panels = |m: &Map<'_, F::C>| m.terms.first().map_or(0, |t| t.w.up / t.w.pw);
    let parts = parts.min(maps.iter().map(panels).max().unwrap_or(0));
    if parts <= 1 {
        for m in maps.iter_mut() {
            crate::sim::tile_kernel::affine::<F>(m.bias, m.terms, m.ns, m.out, fma);
        }
        return;
    }
    // (bias, terms, ns, panels, rows) of each map, the rows as a pointer the parts share
    type Shared<'b, C> = (&'b [C], &'b [Term<'b, C>], usize, usize, Rows<C>);
    let shared: Vec<Shared<'_, F::C>> = maps
        .iter_mut()
        .map(|m| {
            assert!(m.out.len() >= m.ns * m.bias.len() && !m.terms.is_empty());
            (m.bias, m.terms, m.ns, panels(m), Rows(m.out.as_mut_ptr()))
        })
        .collect();
    (0..parts).into_par_iter().for_each(|j| {
        for &(bias, terms, ns, panels, rows) in &shared {
            // SAFETY: each map's `out` holds its ns rows (checked) and stays borrowed until
            // every part has returned; part j alone accesses the units of its panels.
            unsafe { affine_panels::<F>(bias, terms, ns, rows.0, fma, part(panels, parts, j)) }
        }
    });
}

/// `rows` (rows of `len` values) split into `parts` runs of whole rows: (first row, run).
pub fn row_parts<C>(rows: &mut [C], len: usize, parts: usize) -> Vec<(usize, &mut [C])> {
    let n = rows.len().checked_div(len).unwrap_or(0);
    let mut rest = rows;
    (0..parts)
        .map(|j| {
            let r = part(n, parts, j);
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(r.len() * len);
            rest = tail;
            (r.start, head)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::tile_kernel::{affine, Packed};

    #[test]
    fn parts_cover_the_items_in_order() {
        for n in 0..40 {
            for parts in 1..6 {
                let all: Vec<usize> = (0..parts).flat_map(|j| part(n, parts, j)).collect();
                assert_eq!(all, (0..n).collect::<Vec<_>>());
            }
        }
        let mut rows: Vec<u8> = (0..10).collect();
        let runs = row_parts(&mut rows, 2, 3);
        assert_eq!(runs.iter().map(|(f, r)| (*f, r.to_vec())).collect::<Vec<_>>(), vec![(0, vec![0, 1]), (1, vec![2, 3, 4, 5]), (3, vec![6, 7, 8, 9])]);
    }

    /// Panels split between tasks give `affine`'s rows bit for bit, for part counts that
    /// divide the panels and that do not, and more parts than panels.
    #[test]
    fn split_panels_give_the_whole_maps_bits() {
        let (k1, k2, units, ns) = (37, 300, 200, 11);
        let val = |i: usize| ((i * 7919 % 257) as f32 - 128.0) / 97.0;
        let w1: Vec<f32> = (0..k1 * units).map(val).collect();
        let w2: Vec<f32> = (0..k2 * units).map(|i| val(i + 5)).collect();
        let (p1, p2) = (Packed::for_units(&w1, k1, units), Packed::for_units(&w2, k2, units));
        let z1: Vec<f32> = (0..ns * k1).map(|i| val(i + 11)).collect();
        let z2: Vec<f32> = (0..ns * k2).map(|i| val(i + 13)).collect();
        let bias: Vec<f32> = (0..p1.up).map(|i| val(i + 17)).collect();
        let terms = [Term { w: &p1, z: &z1, ldz: k1 }, Term { w: &p2, z: &z2, ldz: k2 }];
        for fma in [false, true] {
            let mut want = vec![0f32; ns * p1.up];
            affine::<f32>(&bias, &terms, ns, &mut want, fma);
            for parts in [2, 3, 7, 50] {
                let mut got = vec![f32::NAN; ns * p1.up];
                let mut maps = [Map { bias: &bias, terms: &terms, ns, out: &mut got }];
                crate::sim::pool::with_pool(Some(2), || affine_split::<f32>(&mut maps, fma, parts)).unwrap();
                assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), "parts {parts} fma {fma}");
            }
        }
    }
}
