//! Copying and converting a run's input on the run's threads.
//!
//! A batch run copies its input array out of numpy, checks that every value is finite, and
//! rounds it to the run's format. On the calling thread those passes ran while the pool
//! waited: for a SimpleRNN at batch 1024, 1000 ticks, hidden 16, input 4 on 2 threads,
//! 16% of the run's thread time in f32 and 29% in f16 (perf, session 39), each pass bound
//! by one core's memory bandwidth. Here a slice is cut into as many parts as the run has
//! threads (at most one per core), whole chunks of [`CHUNK`] values each, which the calling
//! thread and scoped helper threads take one at a time. Each chunk is checked right
//! after its copy (in L1), and the buffers come from `sim::recycle` (a fresh one would be
//! zeroed by the kernel page by page) with 2 MiB pages asked for (`advise_huge_pages`):
//! each tick a block reads hundreds of rows a page or more apart, and a Zen 3 core's 2,048
//! second-level TLB entries map 8 MiB of 4 KiB pages, less than the 16–32 MiB inputs of
//! issue 7's hidden-16 rows. With this and `block_io::prefetch_inputs` (session 63, perf of
//! an f64 SimpleRNN at (1024, 1000, 16, 4)), the tile's samples on the instruction after
//! its first broadcast of x went from 21% to 11%, and the kernel's page zeroing from 3.0%
//! to 0.5% of the run.
//!
//! Scoped threads, not the run's rayon pool: the bindings read the input holding the GIL,
//! and a job sent to a pool that another Python thread's run keeps busy would wait for that
//! run to end, the GIL held all along (the other run's progress and Ctrl-C with it).
//! Starting a thread costs tens of µs, so only slices of at least [`PARALLEL_MIN`] values
//! are split; shorter ones run on the calling thread, as do the parts of a helper that
//! cannot be started.

use super::pool::default_threads;
use super::recycle;
use std::mem::MaybeUninit;
use std::sync::Mutex;

/// Values per chunk: 32 KiB of f32, a chunk copied and then checked while it is in L1.
pub const CHUNK: usize = 1 << 13;
/// Shortest slice split between threads (1 MiB of f32: about 100 µs to copy and check).
pub const PARALLEL_MIN: usize = 1 << 18;

/// `body` on each (source chunk, destination chunk) pair of a part, in order; the results
/// and-ed (every chunk is visited).
fn part<A, B>(src: &[A], dst: &mut [MaybeUninit<B>], body: &impl Fn(&[A], &mut [MaybeUninit<B>]) -> bool) -> bool {
    src.chunks(CHUNK).zip(dst.chunks_mut(CHUNK)).fold(true, |ok, (s, d)| body(s, d) & ok)
}

/// A buffer of src's length (recycled when one fits) and the and of `body` over every
/// (source chunk, destination chunk) pair, the parts on `threads` threads (None: all cores;
/// at most one per core and per chunk). `body` must write every value of its destination
/// chunk (the buffer's length is set to src's after it ran on all of them).
fn filled_by<A: Sync, B: Send + 'static>(src: &[A], threads: Option<usize>, body: impl Fn(&[A], &mut [MaybeUninit<B>]) -> bool + Sync) -> (Vec<B>, bool) {
    let n = src.len();
    let mut v: Vec<B> = recycle::take(n);
    let dst = &mut v.spare_capacity_mut()[..n];
    // 2 MiB pages for a large input (before its first write): a block reads hundreds of its
    // sequences' rows each tick, a page or more apart (`block_io::prefetch_inputs`)
    #[cfg(target_os = "linux")]
    super::block_results::advise_huge_pages(dst);
    let chunks = n.div_ceil(CHUNK);
    let parts = if n >= PARALLEL_MIN { threads.unwrap_or_else(default_threads).min(default_threads()).min(chunks).max(1) } else { 1 };
    let per = chunks.div_ceil(parts) * CHUNK;
    // the parts, taken one at a time by the calling thread and its helpers (a helper that
    // cannot be started leaves its parts to the others)
    let queue = Mutex::new(src.chunks(per.max(1)).zip(dst.chunks_mut(per.max(1))).collect::<Vec<_>>());
    let work = || {
        let mut ok = true;
        loop {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match next {
                Some((s, d)) => ok &= part(s, d, &body),
                None => return ok,
            }
        }
    };
    let ok = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..parts).filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok()).collect();
        let mut ok = work();
        for h in helpers {
            ok &= h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
        ok
    });
    // SAFETY: `body` wrote every value of every chunk of dst (its contract), and every chunk
    // was visited: the parts cover dst (chunks of `per` values, the same cut as src's, whose
    // length dst has), each part visits all of its chunks (`part` folds without stopping),
    // and every part was taken from the queue and run (the calling thread empties it, and
    // every helper was joined); the capacity is at least n (`recycle::take`).
    unsafe { v.set_len(n) };
    (v, ok)
}

/// A copy of `src` and whether all its values are finite (NaN and ±∞ are not).
pub fn copy_checking_finite<T: Copy + Into<f64> + Send + Sync + 'static>(src: &[T], threads: Option<usize>) -> (Vec<T>, bool) {
    filled_by(src, threads, |s, d| {
        assert_eq!(s.len(), d.len());
        // SAFETY: d and s have the same length (checked) and do not overlap (d is in the new
        // buffer); T: Copy (`write_copy_of_slice`, Rust 1.93)
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_mut_ptr().cast::<T>(), s.len()) };
        finite(s)
    })
}

/// `written` of `src` and whether all of `src`'s values are finite, each chunk checked right
/// after it is written (an f16 run's input rounded as it is copied out of numpy).
///
/// # Safety
/// As [`written`]: `write` must write every value of its destination chunk.
pub unsafe fn written_checking_finite<A: Copy + Into<f64> + Send + Sync + 'static, B: Send + 'static>(src: &[A], threads: Option<usize>, write: impl Fn(&[A], &mut [MaybeUninit<B>]) + Sync) -> (Vec<B>, bool) {
    filled_by(src, threads, |s, d| {
        write(s, d);
        finite(s)
    })
}

/// A new vector written chunk by chunk by `write(source chunk, destination chunk)`, a pure
/// function of its chunk: chunks run on several threads and in no fixed order (thread-local
/// state such as `custom_float::with_format` is not seen there: callers keep such
/// conversions serial).
///
/// # Safety
/// `write` must write every value of the (uninitialised) destination chunk it is given: the
/// vector's length is set to src's afterwards, and an unwritten value would be read as one.
pub unsafe fn written<A: Sync, B: Send + 'static>(src: &[A], threads: Option<usize>, write: impl Fn(&[A], &mut [MaybeUninit<B>]) + Sync) -> Vec<B> {
    filled_by(src, threads, |s, d| {
        write(s, d);
        true
    })
    .0
}

/// Whether every value is finite (one pass without early exit: it vectorises, with AVX2
/// where the CPU has it: the crate's baseline is SSE2's 4 f32 or 2 f64 per comparison).
/// f16 by its bits ([`finite_f16_bits`]).
#[inline]
pub fn finite<T: Copy + Into<f64> + 'static>(s: &[T]) -> bool {
    if let Some(bits) = crate::sim::same_type::f16_bits(s) {
        return finite_f16_bits(bits);
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 (checked).
        return unsafe { finite_avx2(s) };
    }
    finite_body(s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx")]
unsafe fn finite_avx2<T: Copy + Into<f64>>(s: &[T]) -> bool {
    finite_body(s)
}

#[inline(always)]
fn finite_body<T: Copy + Into<f64>>(s: &[T]) -> bool {
    s.iter().fold(true, |ok, &x| ok & x.into().is_finite())
}

/// Whether every binary16 value (its bits) is finite: an exponent field of all ones is ±∞
/// or NaN. A comparison per value, which vectorises; through f64 (`finite_body`) each value
/// was a call into the `half` crate's conversion, 23% of an f16 SimpleRNN's run at
/// (1024, 200, 16, 4) given a float16 array (session 68, perf; float16 → f32 runs there
/// 45.4 → 60.8 M token-steps/s).
fn finite_f16_bits(bits: &[u16]) -> bool {
    bits.iter().fold(true, |ok, &b| ok & (b & 0x7C00 != 0x7C00))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_value_and_finds_non_finite_ones_anywhere() {
        for n in [0, 1, CHUNK - 1, CHUNK + 3, PARALLEL_MIN + 17] {
            let src: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
            for threads in [Some(1), Some(2)] {
                let (v, finite) = copy_checking_finite(&src, threads);
                assert_eq!(v, src);
                assert!(finite);
            }
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                if n == 0 {
                    continue;
                }
                let mut s = src.clone();
                s[n - 1] = bad;
                let (v, finite) = copy_checking_finite(&s, Some(2));
                assert!(!finite, "n {n}: {bad} not found");
                assert_eq!(v.len(), n);
                assert_eq!(v[..n - 1], s[..n - 1]);
            }
        }
    }

    #[test]
    fn finite_finds_a_non_finite_value_at_any_position_on_every_path() {
        for n in [1usize, 7, 37] {
            // (within f32's range: the f32 copies are finite too)
            let ok: Vec<f64> = (0..n).map(|i| i as f64 * 1e30 - 3e30).collect();
            let ok32: Vec<f32> = ok.iter().map(|&x| x as f32).collect();
            assert!(finite(&ok) && finite_body(&ok) && finite(&ok32) && finite_body(&ok32));
            for i in 0..n {
                for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                    let mut v = ok.clone();
                    v[i] = bad;
                    let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                    assert!(!finite(&v) && !finite_body(&v) && !finite(&v32) && !finite_body(&v32), "n {n}, {bad} at {i}");
                }
            }
        }
    }

    #[test]
    fn finite_takes_f16_by_its_bits() {
        use half::f16;
        // every binary16 bit pattern: finite exactly when f64 says so
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for (i, &x) in all.iter().enumerate() {
            assert_eq!(finite(&all[i..=i]), f64::from(x).is_finite(), "bits {i:#06x}");
        }
        let ok: Vec<f16> = [0.0, -0.0, 6.0e-8, -65504.0, 65504.0, 1.5].iter().map(|&x| f16::from_f64(x)).collect();
        assert!(finite(&ok));
        for bad in [f16::NAN, f16::INFINITY, f16::NEG_INFINITY, f16::from_bits(0x7C01), f16::from_bits(0xFE00)] {
            for i in 0..ok.len() {
                let mut v = ok.clone();
                v[i] = bad;
                assert!(!finite(&v), "{bad} at {i}");
            }
        }
    }

    #[test]
    fn converts_each_chunk_in_place_order_kept() {
        let n = PARALLEL_MIN + CHUNK / 2;
        let src: Vec<f64> = (0..n).map(|i| i as f64 / 3.0).collect();
        for threads in [Some(1), Some(2), None] {
            let want: Vec<f32> = src.iter().map(|&x| x as f32).collect();
            let mut bad = src.clone();
            bad[PARALLEL_MIN - 1] = f64::NAN;
            let write = |s: &[f64], d: &mut [MaybeUninit<f32>]| d.iter_mut().zip(s).for_each(|(o, &x)| _ = o.write(x as f32));
            // SAFETY (the three calls): `write` writes every value of its chunk (a zip over
            // chunks of equal length).
            let (out, finite) = unsafe { written_checking_finite(&bad, threads, write) };
            assert!(!finite && out.len() == n && out[..PARALLEL_MIN - 1] == want[..PARALLEL_MIN - 1] && out[PARALLEL_MIN..] == want[PARALLEL_MIN..]);
            let (out, finite) = unsafe { written_checking_finite(&src, threads, write) };
            assert!(finite && out == want);
            assert_eq!(unsafe { written(&src, threads, write) }, want);
        }
    }
}
