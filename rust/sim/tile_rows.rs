//! The z rows a tile broadcasts from, kept in different L1 sets.
//!
//! A tile of `Ops::ROWS` sequences (12 in f32/f64 with AVX-512) reads, at each k, the value
//! z[s][k] of each of its rows s: one current cache line per row. An L1d has 64 sets of
//! 64-byte lines (32 KiB 8-way on Zen 4, 48 KiB 12-way on Golden Cove): the line at address
//! a is in set (a / 64) mod 64, so rows whose stride is a multiple of 4 KiB (hidden 1024 in
//! f32, 512 in f64; a layer-0 input of T·n values such as 8 × 128) put all their current
//! lines in one set, which cannot hold 12 of them beside the streamed weights: each
//! broadcast then misses L1. Measured on Zen 4 (`tile_rates`, f32, 64 sequences): 47 G
//! flop/s at k = 1024 with 1024 units and 65 with 4096, against 95–105 with the copy below
//! (and at k = 1040 or 1152 without it).
//!
//! The driver (`tile_x86::drive_terms`) therefore copies the rows of such a term, once per
//! call, to a scratch buffer whose stride is an odd number of lines (the rows' current lines
//! then fall in as many sets as there are rows) and runs the tiles on the copy
//! ([`unaliased`]). Calls over many units copy every pass's rows instead ([`pass_copy`], at a
//! stride fixed at compile time, which also takes the rows' address arithmetic out of the
//! tiles' k loop). The values and their order are unchanged, so the bits are.

use std::cell::RefCell;

/// Bytes of a cache line, and of one way of L1d (64 sets of 64 bytes).
const LINE: usize = 64;
const WAY: usize = 64 * LINE;
/// The most current lines of a tile's rows allowed in one L1 set.
const MAX_PER_SET: usize = 2;

/// Whether `rows` rows `stride` bytes apart put more than `MAX_PER_SET` of their current
/// lines (the same k in every row, the first row's line-aligned) into one L1 set.
pub fn conflicting(stride: usize, rows: usize) -> bool {
    if rows <= MAX_PER_SET {
        return false;
    }
    // (rows closer than a line share theirs: count lines, not rows)
    let (mut per_set, mut last) = ([0u8; WAY / LINE], usize::MAX);
    (0..rows).any(|r| {
        let line = r * stride / LINE;
        if line == last {
            return false;
        }
        last = line;
        per_set[line % (WAY / LINE)] += 1;
        usize::from(per_set[line % (WAY / LINE)]) > MAX_PER_SET
    })
}

/// The stride (in values of `size` bytes, a divisor of 64) of the copy of rows of `k`
/// values: the fewest whole lines that hold k values, made odd.
pub const fn padded_stride(k: usize, size: usize) -> usize {
    debug_assert!(size > 0 && LINE.is_multiple_of(size));
    let lines = (k * size).div_ceil(LINE);
    ((if lines == 0 { 1 } else { lines }) | 1) * LINE / size
}

thread_local! {
    /// Each thread's copy buffer, kept between calls (a tick's copy at hidden 1024 is
    /// 256 KiB: allocated anew, every tick would fault its pages in again), up to
    /// `KEPT_BYTES` (a larger one, from a call with a big block, is freed after the call).
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// The largest copy buffer a thread keeps between calls.
const KEPT_BYTES: usize = 4 << 20;

/// A thread's copy buffer, taken from the thread's on the first copy of a call and given
/// back when dropped (a nested call on the same thread takes a fresh one); empty, and
/// free, for the calls that copy nothing.
#[derive(Default)]
pub struct Scratch(Vec<u64>);

impl Drop for Scratch {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        if buf.capacity() == 0 || buf.capacity() * 8 > KEPT_BYTES {
            return;
        }
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            if s.capacity() < buf.capacity() {
                *s = buf;
            }
        });
    }
}

impl Scratch {
    /// `len` values of C from the buffer (the thread's, taken on first use), grown as
    /// needed and never cleared: the callers write each value they read.
    pub(crate) fn values<C: bytemuck::Pod>(&mut self, len: usize) -> &mut [C] {
        let size = std::mem::size_of::<C>();
        assert!(size > 0 && LINE.is_multiple_of(size));
        if self.0.capacity() == 0 {
            self.0 = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        }
        let words = (len * size).div_ceil(8);
        if self.0.len() < words {
            self.0.resize(words, 0);
        }
        // the words as values of C (`Pod`: any bits are a value; size and alignment checked)
        &mut bytemuck::cast_slice_mut::<u64, C>(&mut self.0[..words])[..len]
    }
}

/// One pass's z rows of a block, copied for the tiles (`tile_x86::drive_terms`): row s of
/// the copy, `ld` values from the previous, is the concatenation over `parts` (z rows, their
/// stride, a range of k) of z[s·ldz + k] for k in the range, in order. Values past the
/// concatenation are left as they were (nothing reads them). The tiles then address every
/// row from one pointer with a displacement fixed at compile time (`Ops::PASS_LD`), which
/// takes the rows' address arithmetic out of their k loop, and a stride of an odd number of
/// lines keeps the rows' current lines in different L1 sets (as `unaliased`).
pub fn pass_copy<'a, C: bytemuck::Pod>(parts: &[(&[C], usize, std::ops::Range<usize>)], ns: usize, ld: usize, scratch: &'a mut Scratch) -> &'a [C] {
    assert!(parts.iter().map(|p| p.2.len()).sum::<usize>() <= ld, "a pass's k fits a row of the copy");
    let buf = scratch.values::<C>(ns * ld);
    for (s, row) in buf.chunks_exact_mut(ld).enumerate() {
        let mut at = 0;
        for (z, ldz, ks) in parts {
            let src = &z[s * ldz + ks.start..];
            // the line after the part a few lines on (a layer-0 input's rows: see `unaliased`)
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch only hints, for any address (SSE, part of x86-64)
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(src.as_ptr().wrapping_add(ks.len()).cast::<i8>().wrapping_add(2 * LINE))
            };
            copy_row(&mut row[at..], src, ks.len());
            at += ks.len();
        }
    }
    buf
}

/// dst[..k] = src[..k] (dst has room for a line of values, k ≤ src.len()). Rows of at most
/// 16 values are copied inline, as one or two chunks of 8 values (the second ending at k,
/// overlapping the first: the same values again; below 8 values, 8 are copied when src has
/// them, the padding after k taking the rest, which nothing reads): one `memcpy` call per
/// row cost more than the copy. A layer-0 input of 8 values a row at a stride of 8 KiB (T =
/// 256) is copied every tick, 4096 rows at batch 4096: the calls took ~5% of a SimpleRNN
/// run at (4096, 256, 64, 8) (perf, session 32).
#[inline(always)]
fn copy_row<C: Copy>(dst: &mut [C], src: &[C], k: usize) {
    #[inline(always)]
    fn chunk<C: Copy>(dst: &mut [C], src: &[C], at: usize) {
        let d: &mut [C; 8] = (&mut dst[at..at + 8]).try_into().expect("8 values");
        *d = *<&[C; 8]>::try_from(&src[at..at + 8]).expect("8 values");
    }
    match k {
        8..=16 => {
            chunk(dst, src, 0);
            chunk(dst, src, k - 8);
        }
        0..8 if src.len() >= 8 && dst.len() >= 8 => chunk(dst, src, 0),
        _ => dst[..k].copy_from_slice(&src[..k]),
    }
}

/// `terms` (each (weights, z rows, row stride)) with the z rows of every term whose stride
/// is `conflicting` for `rows` rows per tile copied into `scratch` at a `padded_stride`;
/// None when no term needs it. `ns` rows of each term's `w.k` values are copied.
pub fn unaliased<'a, W, C: bytemuck::Pod>(terms: &[(&'a W, &'a [C], usize)], k_of: impl Fn(&W) -> usize, ns: usize, rows: usize, scratch: &'a mut Scratch) -> Option<Vec<(&'a W, &'a [C], usize)>> {
    let size = std::mem::size_of::<C>();
    assert!(size > 0 && LINE.is_multiple_of(size));
    let copied = |&(w, _, ldz): &(&W, &[C], usize)| ns > 1 && k_of(w) > 0 && conflicting(ldz * size, rows.min(ns));
    if !terms.iter().any(copied) {
        return None;
    }
    let len: usize = terms.iter().filter(|t| copied(t)).map(|t| ns * padded_stride(k_of(t.0), size)).sum();
    let mut rest: &'a mut [C] = scratch.values(len);
    let mut out = Vec::with_capacity(terms.len());
    for t in terms {
        if !copied(t) {
            out.push(*t);
            continue;
        }
        let (w, z, ldz) = *t;
        let (k, stride) = (k_of(w), padded_stride(k_of(w), size));
        let (rows_copy, tail) = std::mem::take(&mut rest).split_at_mut(ns * stride);
        for (s, dst) in rows_copy.chunks_exact_mut(stride).enumerate() {
            let src = &z[s * ldz..];
            // the row's line a few ticks on, when these are a layer-0 input's rows x_t (its
            // next ticks' values follow it): thousands of rows a page apart, each read a
            // few values per tick, are more streams than the hardware prefetchers follow,
            // and each new line was a miss (the copy took 6.8% of a SimpleRNN run at
            // (4096, 256, 64, 8), 4.3% with a prefetch one line on, two lines on 6.72–6.87
            // → 6.89 M token-steps/s, session 32)
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch only hints, for any address (SSE, part of x86-64)
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(src.as_ptr().wrapping_add(k).cast::<i8>().wrapping_add(2 * LINE))
            };
            copy_row(dst, src, k);
        }
        rest = tail;
        out.push((w, &*rows_copy, stride));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_of_whole_ways_conflict_and_odd_lines_do_not() {
        // hidden 1024 in f32 (4 KiB), 512 in f64, half a way (2 KiB: two sets of 6 rows)
        assert!(conflicting(4096, 12) && conflicting(4096, 3) && conflicting(8192, 12) && conflicting(2048, 12));
        // a stride just past a way: the 12 rows' lines a few bytes apart, in one set
        assert!(conflicting(4100, 12));
        // 1 KiB: four sets of three
        assert!(conflicting(1024, 12) && !conflicting(1024, 8));
        // an odd number of lines, and the small strides of hidden 16–128 in f32 (and below
        // a line: rows that share a line)
        for s in [65 * 64, 64, 256, 512, 1040 * 4, 1152 * 4, 28, 4, 80] {
            assert!(!conflicting(s, 12), "{s}");
        }
        assert!(!conflicting(4096, 2), "two rows share any set");
    }

    #[test]
    fn padded_strides_hold_the_row_in_an_odd_number_of_lines() {
        for (k, size) in [(1024, 4), (1024, 8), (512, 8), (1, 4), (16, 4), (17, 4), (100, 2), (2048, 2)] {
            let s = padded_stride(k, size);
            assert!(s >= k && (s * size).is_multiple_of(LINE) && (s * size / LINE) % 2 == 1 && (s - k) * size < 2 * LINE, "{k} {size} {s}");
            assert!(!conflicting(s * size, 12));
        }
    }

    #[test]
    fn the_copy_keeps_every_row_and_only_the_conflicting_terms() {
        let (ns, k0, k1) = (13, 1024, 5);
        let z0: Vec<f32> = (0..ns * 1024).map(|i| i as f32).collect();
        let z1: Vec<f32> = (0..ns * 7).map(|i| -(i as f32)).collect();
        let (w0, w1) = (k0, k1);
        let terms = [(&w0, &z0[..], 1024), (&w1, &z1[..], 7)];
        let mut scratch = Scratch::default();
        let out = unaliased(&terms, |&k| k, ns, 12, &mut scratch).expect("the 4 KiB stride is copied");
        assert_eq!(out.len(), 2);
        let (_, z, ldz) = out[0];
        assert!(ldz == padded_stride(k0, 4) && ldz != 1024);
        for s in 0..ns {
            assert_eq!(&z[s * ldz..s * ldz + k0], &z0[s * 1024..s * 1024 + k0]);
        }
        assert!(std::ptr::eq(out[1].1, &z1[..]) && out[1].2 == 7, "the other term is left in place");
        let (w2, z2) = (16usize, vec![0f32; ns * 16]);
        assert!(unaliased(&[(&w2, &z2[..], 16)], |&k| k, ns, 12, &mut scratch).is_none());
        // one sequence never needs the copy
        assert!(unaliased(&terms, |&k| k, 1, 12, &mut scratch).is_none());
    }

    #[test]
    fn short_rows_are_copied_whole_at_every_length_up_to_the_end_of_z() {
        // rows 8 KiB apart (a layer-0 input, T·n = 2048 f32), z ending right after the
        // last row's k values (so its short copy cannot read 8), and f64 rows
        let ns = 13;
        for k in 1..=40 {
            let ldz = 2048;
            let z: Vec<f32> = (0..(ns - 1) * ldz + k).map(|i| i as f32 * 0.5 - 3.0).collect();
            let mut scratch = Scratch::default();
            let out = unaliased(&[(&k, &z[..], ldz)], |&k| k, ns, 12, &mut scratch).expect("copied");
            let (_, c, stride) = out[0];
            for s in 0..ns {
                assert_eq!(&c[s * stride..s * stride + k], &z[s * ldz..s * ldz + k], "k {k} row {s}");
            }
            let z64: Vec<f64> = z.iter().map(|&v| f64::from(v)).collect();
            let mut scratch = Scratch::default();
            let out = unaliased(&[(&k, &z64[..], 1024)], |&k| k, ns, 12, &mut scratch).expect("copied");
            let (_, c, stride) = out[0];
            for s in 0..ns {
                assert_eq!(&c[s * stride..s * stride + k], &z64[s * 1024..s * 1024 + k], "f64 k {k} row {s}");
            }
        }
    }

    #[test]
    fn a_pass_copy_concatenates_the_parts_of_each_row() {
        // two parts (k 3..250 of rows 1024 apart, k 0..5 of rows 7 apart: the short copy's
        // 8 values would run past the second z's end in its last row), 13 rows, f32 and f64
        let ns = 13;
        let z0: Vec<f32> = (0..ns * 1024).map(|i| i as f32).collect();
        let z1: Vec<f32> = (0..(ns - 1) * 7 + 5).map(|i| -(i as f32) - 0.5).collect();
        let ld = padded_stride(256, 4);
        let mut scratch = Scratch::default();
        let copy = pass_copy(&[(&z0[..], 1024, 3..250), (&z1[..], 7, 0..5)], ns, ld, &mut scratch).to_vec();
        assert_eq!(copy.len(), ns * ld);
        for s in 0..ns {
            assert_eq!(&copy[s * ld..s * ld + 247], &z0[s * 1024 + 3..s * 1024 + 250], "row {s}");
            assert_eq!(&copy[s * ld + 247..s * ld + 252], &z1[s * 7..s * 7 + 5], "row {s}");
        }
        // a short part first (its 8-value copy runs into the next part's place, which the
        // next part then writes)
        let copy = pass_copy(&[(&z1[..], 7, 1..4), (&z0[..], 1024, 0..200)], ns, ld, &mut scratch).to_vec();
        for s in 0..ns {
            assert_eq!(&copy[s * ld..s * ld + 3], &z1[s * 7 + 1..s * 7 + 4], "row {s}");
            assert_eq!(&copy[s * ld + 3..s * ld + 203], &z0[s * 1024..s * 1024 + 200], "row {s}");
        }
        let z64: Vec<f64> = z0.iter().map(|&v| f64::from(v)).collect();
        let ld = padded_stride(256, 8);
        let copy = pass_copy(&[(&z64[..], 1024, 0..256)], ns, ld, &mut scratch).to_vec();
        for s in 0..ns {
            assert_eq!(&copy[s * ld..s * ld + 256], &z64[s * 1024..s * 1024 + 256], "f64 row {s}");
        }
    }

    #[test]
    #[should_panic(expected = "fits a row")]
    fn a_pass_longer_than_the_copys_rows_is_refused() {
        let z = vec![0f32; 64];
        pass_copy(&[(&z[..], 32, 0..20), (&z[..], 32, 0..20)], 2, 32, &mut Scratch::default());
    }

    #[test]
    fn a_thread_keeps_a_small_buffer_and_frees_a_large_one() {
        let kept = || SCRATCH.with(|s| s.borrow().capacity() * 8);
        let copy = |ns: usize| {
            let (k, z) = (1024usize, vec![1f32; ns * 1024]);
            let mut scratch = Scratch::default();
            assert!(unaliased(&[(&k, &z[..], 1024)], |&k| k, ns, 12, &mut scratch).is_some());
        };
        copy(16);
        assert!(kept() >= 16 * 1024 * 4, "the small buffer is kept");
        // 2,000 rows of 4 KiB: 8 MiB, above KEPT_BYTES
        copy(2000);
        assert!(kept() <= KEPT_BYTES, "{} bytes kept", kept());
    }
}
