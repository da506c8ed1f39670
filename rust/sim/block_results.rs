//! The kept results of the lock-step batch kernels (`float_batch`, `cells::gated_batch`):
//! the (B, T, row) buffers of keep="all" (states, cells), allocated once per batch and
//! written by the blocks, in parallel, a chunk of ticks at a time.
//!
//! - Chunks: a block keeps its last `ticks_per_flush` ticks of rows and then writes them
//!   sequence by sequence (`Kept::flush`): one contiguous run per sequence, where rows
//!   written tick by tick would be T·row values apart (a page or more, every row; measured
//!   about twice as slow).
//! - Filling: the buffers are not zeroed beforehand (`Unfilled`): each block writes every
//!   value of its share exactly once, its rows where a sequence runs and zeros past its
//!   length (`Kept::flush`, `Kept::zero_from`). A serial zero-fill before the run cost 7% of a
//!   SimpleRNN run at batch 4096 × hidden 64 on one thread, and a quarter of the wall time
//!   on two (measured), and wrote the memory twice.
//! - Pages: a large buffer is advised as huge-page memory before it is first written
//!   (Linux, MADV_HUGEPAGE on its 2 MiB-aligned part): the allocator often hands back
//!   memory it has just returned to the kernel (glibc trims a thread arena's heap when a
//!   run's results of 32 MiB or more are freed), and refaulting it 4 KiB at a time cost ~10%
//!   of an LSTM run at batch 4096 × hidden 64 (measured). Both kinds of buffer are taken
//!   from the buffers of earlier results that Python has freed, when one fits (`recycle`):
//!   those pages are neither faulted in nor zeroed again.
//! - Streaming: large results are written with non-temporal stores (`Kept`).
//!
//! None of this changes a value, only where and when it is stored.

use crate::sim::block_io::split_blocks;
use crate::sim::lanes::LaneFormat;
use std::mem::MaybeUninit;

/// Ticks per flush of a block's kept rows (`Kept::flush`): enough for `FLUSH_BYTES` of a
/// sequence's rows of `row_bytes` each, at most `steps`, at least 1; 1 unless `keep_all`.
pub fn ticks_per_flush(keep_all: bool, row_bytes: usize, steps: usize) -> usize {
    /// Bytes of a sequence's kept rows per flush: measured, runs of 1–2 KiB per sequence
    /// write (B, T, row) results about twice as fast as rows a page apart; longer runs
    /// gain little and cost cache for the kept rows.
    const FLUSH_BYTES: usize = 2048;
    if keep_all { FLUSH_BYTES.div_ceil(row_bytes.max(1)).min(steps).max(1) } else { 1 }
}

/// A result buffer of `n` values that the blocks fill in completely (see the module doc);
/// empty when `n` is 0 (a result not kept).
pub struct Unfilled<T> {
    v: Vec<T>,
    n: usize,
}

impl<T: Send + 'static> Unfilled<T> {
    pub fn new(n: usize) -> Self {
        let mut v = crate::sim::recycle::take(n);
        #[cfg(target_os = "linux")]
        advise_huge_pages(v.spare_capacity_mut());
        Unfilled { v, n }
    }

    /// Every block's share (rows of `row` values per sequence, `block_io::split_blocks`).
    pub fn shares(&mut self, row: usize, block: usize, firsts: &[usize], batch: usize) -> Vec<&mut [MaybeUninit<T>]> {
        let n = self.n;
        split_blocks(&mut self.v.spare_capacity_mut()[..n], row, block, firsts, batch)
    }

    /// The buffer, once every block has filled its share.
    ///
    /// # Safety
    /// Every value of every share was written (each block ran to completion: `Kept::flush`
    /// over ticks 0..its longest length, then `Kept::zero_from` for the rest).
    pub unsafe fn filled(self) -> Vec<T> {
        let mut v = self.v;
        // SAFETY: capacity n (allocated so), and the caller guarantees all n values are
        // initialised.
        unsafe { v.set_len(self.n) };
        v
    }
}

/// A result buffer of `n` copies of `zero` (final states, outputs), advised as huge pages
/// when large (module doc).
pub fn result_buffer<T: Copy + Send + 'static>(n: usize, zero: T) -> Vec<T> {
    let mut v = crate::sim::recycle::take(n);
    #[cfg(target_os = "linux")]
    advise_huge_pages(v.spare_capacity_mut());
    v.resize(n, zero);
    v
}

/// MADV_HUGEPAGE on the whole 2 MiB pages inside `buf` when it spans at least 4 MiB (a hint:
/// the result is ignored, the kernel may decline). Also for the packed weights
/// (`tile_kernel::Packed`).
#[cfg(target_os = "linux")]
pub(crate) fn advise_huge_pages<T>(buf: &mut [MaybeUninit<T>]) {
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

/// The layout of a (B, T, row) kept result (`t_max` = T) and how a block writes its share:
/// `stream` (large results) with non-temporal stores (f32, f64 and binary16 rows copied
/// on a 16-byte boundary, SSE2 `movntdq`: `stream_same`; f16 rows of 8k values converted
/// from f32 lanes by F16C, then `movntdq`: `lanes::f16_from_lanes_f16c`): the result is far larger than the core's caches
/// and written once, so a regular store's read of each line before writing it is wasted
/// memory traffic (measured: 4–10% of SimpleRNN and gated runs at batch 4096 × hidden
/// 64). Values are the same either way.
#[derive(Clone, Copy, Debug)]
pub struct Kept {
    pub t_max: usize,
    pub row: usize,
    pub stream: bool,
}

impl Kept {
    /// Rows of `row` values of format `F` over `t_max` ticks, for `batch` sequences in all:
    /// streamed when the result is at least `STREAM_MIN` bytes (twice the 2 MiB L2 of the
    /// machine measured: smaller results may still be in cache when read).
    pub fn new<F>(batch: usize, t_max: usize, row: usize) -> Self {
        const STREAM_MIN: usize = 4 << 20;
        Kept { t_max, row, stream: batch * t_max * row * std::mem::size_of::<F>() >= STREAM_MIN }
    }

    /// Writes ticks `ticks.0..ticks.1` of a block's kept rows into its share `dst`, one
    /// contiguous run per sequence: its rows while it runs (tick < its length), zeros after.
    /// `tick_rows[i]` holds tick t0 + i's rows, sequence s at s·stride.
    pub fn flush<F: LaneFormat>(&self, dst: &mut [MaybeUninit<F>], lens: &[usize], ticks: (usize, usize), stride: usize, tick_rows: &[&[F::C]]) {
        self.flush_rows(dst, lens, ticks, stride, tick_rows, F::zero(), |out, src| {
            if !(self.stream && stream_copy::<F>(out, src)) {
                F::from_lanes_uninit(out, src);
            }
        });
    }

    /// [`Kept::flush`] for f16 rows kept as their binary16 bits (the f16 SimpleRNN on the
    /// native tile, `float_batch::run_block`): copied as they are, with no conversion from
    /// f32 lanes (which had taken 13% of that run).
    pub fn flush_f16_bits(&self, dst: &mut [MaybeUninit<u16>], lens: &[usize], ticks: (usize, usize), stride: usize, tick_rows: &[&[u16]]) {
        self.flush_rows(dst, lens, ticks, stride, tick_rows, 0, |out, src| {
            if !(self.stream && stream_same(out, src)) {
                out.iter_mut().zip(src).for_each(|(o, &v)| _ = o.write(v));
            }
        });
    }

    /// The loop of the flushes: `store` writes one row of a running sequence.
    #[allow(clippy::too_many_arguments)]
    fn flush_rows<T: Copy, R>(&self, dst: &mut [MaybeUninit<T>], lens: &[usize], ticks: (usize, usize), stride: usize, tick_rows: &[&[R]], zero: T, store: impl Fn(&mut [MaybeUninit<T>], &[R])) {
        let ((t0, t1), (t_max, row)) = (ticks, (self.t_max, self.row));
        debug_assert_eq!(tick_rows.len(), t1 - t0);
        for (s, &len) in lens.iter().enumerate() {
            for (t, rows) in (t0..t1).zip(tick_rows) {
                let out = &mut dst[(s * t_max + t) * row..][..row];
                if t >= len {
                    out.iter_mut().for_each(|v| _ = v.write(zero));
                } else {
                    store(out, &rows[s * stride..s * stride + row]);
                }
            }
        }
        if self.stream {
            // the streamed stores are weakly ordered: complete them before the block ends
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2, part of x86-64.
            unsafe {
                std::arch::x86_64::_mm_sfence()
            };
        }
    }

    /// Zeros in ticks `from..T` of every sequence of a block's share `dst` (the padding past
    /// the block's longest length, which no flush covers).
    pub fn zero_from<F: LaneFormat>(&self, dst: &mut [MaybeUninit<F>], from: usize) {
        let (t_max, row) = (self.t_max, self.row);
        if from >= t_max || row == 0 {
            return;
        }
        for seq in dst.chunks_exact_mut(t_max * row) {
            seq[from * row..].iter_mut().for_each(|v| _ = v.write(F::zero()));
        }
    }
}

/// dst = src with non-temporal stores when `dst` starts on a 16-byte boundary and holds a
/// whole number of 16-byte units: f32 and f64 (stored as their lane values) copied, f16
/// converted with F16C (`lanes::f16_from_lanes_f16c`); false (nothing written) otherwise.
#[inline]
fn stream_copy<F: LaneFormat>(dst: &mut [MaybeUninit<F>], src: &[F::C]) -> bool {
    use std::any::TypeId;
    if F::STORED_AS_LANE && (TypeId::of::<F::C>() == TypeId::of::<f32>() || TypeId::of::<F::C>() == TypeId::of::<f64>()) {
        // F is F::C (stored as its lane value)
        return stream_same(crate::sim::same_type::uninit_lanes_mut::<F, F::C>(dst), src);
    }
    #[cfg(target_arch = "x86_64")]
    if TypeId::of::<F>() == TypeId::of::<half::f16>() && crate::sim::cpu::avx2_f16c() && aligned_units(dst) && dst.len() == src.len() {
        // SAFETY: F is f16, whose lane type F::C is f32; dst (binary16 values) is 16-byte
        // aligned and holds 8k values, as src (checked); the CPU has AVX2 and F16C.
        unsafe { crate::sim::lanes::f16_from_lanes_f16c::<true>(dst.as_mut_ptr().cast(), std::slice::from_raw_parts(src.as_ptr().cast::<f32>(), src.len())) };
        return true;
    }
    false
}

/// Whether `dst` starts on a 16-byte boundary and holds a whole number of 16-byte units.
#[cfg(target_arch = "x86_64")]
fn aligned_units<T>(dst: &[MaybeUninit<T>]) -> bool {
    (dst.as_ptr() as usize).is_multiple_of(16) && std::mem::size_of_val(dst).is_multiple_of(16)
}

/// dst = src (the same type) with non-temporal 16-byte stores (SSE2 `movntdq`), when
/// `dst` is [`aligned_units`]; false (nothing written) otherwise, or off x86-64.
#[inline]
fn stream_same<T: Copy>(dst: &mut [MaybeUninit<T>], src: &[T]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        if !aligned_units(dst) || dst.len() != src.len() {
            return false;
        }
        let (d, sp) = (dst.as_mut_ptr().cast::<u8>(), src.as_ptr().cast::<u8>());
        for i in (0..std::mem::size_of_val(dst)).step_by(16) {
            // SAFETY: SSE2 (x86-64); i + 16 ≤ the length of both slices in bytes (same type,
            // same length), and d + i is 16-byte aligned (checked).
            unsafe { _mm_stream_si128(d.add(i).cast(), _mm_loadu_si128(sp.add(i).cast())) };
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (dst, src);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushes_fill_each_sequence_in_order_with_zeros_past_its_length() {
        // 2 sequences, rows of 2 values, stride 3 in the tick buffers, T = 4: ticks 0..1,
        // then 1..3 flushed, then tick 3 zeroed
        let (t0, t1, t2) = ([0.5f32, 0.5, 9.0, 0.25, 0.25, 9.0], [1.0f32, 2.0, 9.0, 3.0, 4.0, 9.0], [5.0f32, 6.0, 9.0, 7.0, 8.0, 9.0]);
        for stream in [false, true] {
            let kept = Kept { t_max: 4, row: 2, stream };
            let mut buf = Unfilled::<f32>::new(2 * 4 * 2);
            let mut shares = buf.shares(4 * 2, 2, &[0], 2);
            kept.flush::<f32>(&mut *shares[0], &[4, 2], (0, 1), 3, &[&t0]);
            kept.flush::<f32>(&mut *shares[0], &[4, 2], (1, 3), 3, &[&t1, &t2]);
            kept.zero_from::<f32>(&mut *shares[0], 3);
            drop(shares);
            // SAFETY: ticks 0..3 flushed for both sequences, tick 3 zeroed: all 16 values.
            let v = unsafe { buf.filled() };
            assert_eq!(v, [0.5, 0.5, 1.0, 2.0, 5.0, 6.0, 0.0, 0.0, 0.25, 0.25, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]);
        }
        // f16 rows of 8 values (16 bytes: streamed when the CPU has F16C), the same either way
        let ticks: Vec<Vec<f32>> = (0..3).map(|t| (0..18).map(|i| half::f16::from_f32((t * 18 + i) as f32 * 0.75 - 20.0).to_f32()).collect()).collect();
        let mut got = Vec::new();
        for stream in [false, true] {
            let kept = Kept { t_max: 3, row: 8, stream };
            let mut buf = Unfilled::<half::f16>::new(2 * 3 * 8);
            let mut shares = buf.shares(3 * 8, 2, &[0], 2);
            kept.flush::<half::f16>(&mut *shares[0], &[3, 2], (0, 3), 9, &[&ticks[0], &ticks[1], &ticks[2]]);
            kept.zero_from::<half::f16>(&mut *shares[0], 3);
            drop(shares);
            // SAFETY: ticks 0..3 flushed for both sequences (the second's tick 2 as zeros).
            got.push(unsafe { buf.filled() }.iter().map(|v| v.to_f32()).collect::<Vec<_>>());
        }
        let want: Vec<f32> = (0..2).flat_map(|s| (0..3).flat_map(move |t| (0..8).map(move |i| (s, t, i)))).map(|(s, t, i)| if s == 1 && t == 2 { 0.0 } else { ticks[t][s * 9 + i] }).collect();
        assert_eq!(got, [want.clone(), want.clone()]);
        // the same rows as binary16 bits (`flush_f16_bits`), from a ring of stride 9
        for stream in [false, true] {
            let bits: Vec<Vec<u16>> = ticks.iter().map(|t| t.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect()).collect();
            let kept = Kept { t_max: 3, row: 8, stream };
            let mut buf = Unfilled::<u16>::new(2 * 3 * 8);
            let mut shares = buf.shares(3 * 8, 2, &[0], 2);
            kept.flush_f16_bits(shares[0], &[3, 2], (0, 3), 9, &[&bits[0], &bits[1], &bits[2]]);
            drop(shares);
            // SAFETY: ticks 0..3 flushed for both sequences (the second's tick 2 as zeros).
            let v: Vec<f32> = unsafe { buf.filled() }.iter().map(|&b| half::f16::from_bits(b).to_f32()).collect();
            assert_eq!(v, want, "binary16 rows, stream {stream}");
        }
        assert!(Kept::new::<f32>(1024, 100, 16).stream && !Kept::new::<f32>(10, 100, 16).stream);
        assert_eq!(ticks_per_flush(true, 1000, 100), 3);
        assert_eq!(ticks_per_flush(true, 4, 100), 100);
        assert_eq!(ticks_per_flush(true, 4096, 100), 1);
        assert_eq!(ticks_per_flush(false, 4, 100), 1);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn streamed_rows_equal_stored_rows_for_f32_f64_and_f16_and_others_fall_back() {
        let src32: Vec<f32> = (0..40).map(|i| i as f32 * -1.25 + 0.1).collect();
        let src64: Vec<f64> = (0..40).map(|i| i as f64 * 3.5e-3 - 7.0).collect();
        let mut d32 = [MaybeUninit::<f32>::uninit(); 44];
        let mut d64 = [MaybeUninit::<f64>::uninit(); 44];
        // an aligned row (streamed) and, one value on, a row off the 16-byte boundary (not)
        let a32 = (0..4).find(|&i| (d32[i..].as_ptr() as usize).is_multiple_of(16)).expect("aligned start");
        let a64 = (0..2).find(|&i| (d64[i..].as_ptr() as usize).is_multiple_of(16)).expect("aligned start");
        assert!(stream_copy::<f32>(&mut d32[a32..a32 + 40], &src32));
        assert!(stream_copy::<f64>(&mut d64[a64..a64 + 40], &src64));
        assert!(!stream_copy::<f32>(&mut d32[a32 + 1..a32 + 41], &src32));
        assert!(!stream_copy::<f32>(&mut d32[a32..a32 + 3], &src32[..3]));
        // bf16 falls back; f16 streams its aligned rows of 8k values (F16C), not the others
        let h: Vec<f32> = (0..40).map(|i| half::f16::from_f32(i as f32 * 0.37 - 5.0).to_f32()).collect();
        assert!(!stream_copy::<half::bf16>(&mut [MaybeUninit::uninit(); 8], &h[..8]));
        let mut d16 = [MaybeUninit::<half::f16>::uninit(); 48];
        let a16 = (0..8).find(|&i| (d16[i..].as_ptr() as usize).is_multiple_of(16)).expect("aligned start");
        if crate::sim::cpu::avx2_f16c() {
            assert!(stream_copy::<half::f16>(&mut d16[a16..a16 + 40], &h));
            // SAFETY: written in full just above.
            assert!(d16[a16..a16 + 40].iter().zip(&h).all(|(d, s)| unsafe { d.assume_init() }.to_f32() == *s));
        }
        assert!(!stream_copy::<half::f16>(&mut d16[a16 + 1..a16 + 41], &h));
        assert!(!stream_copy::<half::f16>(&mut d16[a16..a16 + 4], &h[..4]));
        // SAFETY: the streamed ranges were written in full above.
        unsafe {
            assert!(d32[a32..a32 + 40].iter().zip(&src32).all(|(d, s)| d.assume_init().to_bits() == s.to_bits()));
            assert!(d64[a64..a64 + 40].iter().zip(&src64).all(|(d, s)| d.assume_init().to_bits() == s.to_bits()));
        }
    }

    #[test]
    fn half_formats_are_stored_by_their_bulk_conversion() {
        let src: Vec<f32> = (0..150).map(|i| half::f16::from_f32(i as f32 * 0.37 - 20.0).to_f32()).collect();
        let mut dst = vec![MaybeUninit::<half::f16>::uninit(); 150];
        <half::f16 as LaneFormat>::from_lanes_uninit(&mut dst, &src);
        // SAFETY: all 150 written above.
        let got: Vec<f32> = dst.iter().map(|v| unsafe { v.assume_init() }.to_f32()).collect();
        assert_eq!(got, src);
    }

    #[test]
    fn result_buffers_hold_n_zeros_small_or_advised_as_huge_pages() {
        for n in [0, 3, (5 << 20) / 4 + 7] {
            let v = result_buffer(n, 0.0f32);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|x| x.to_bits() == 0));
        }
        assert_eq!(result_buffer(4, half::f16::ONE), [half::f16::ONE; 4]);
        let mut big = Unfilled::<f64>::new(1 << 20);
        let firsts = [0, 300, 600, 900];
        for share in big.shares(1024, 300, &firsts, 1024) {
            share.iter_mut().for_each(|v| _ = v.write(1.5));
        }
        // SAFETY: every share written in full above.
        assert!(unsafe { big.filled() }.iter().all(|&v| v == 1.5));
    }
}
