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
//! zeroed by the kernel page by page).
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

/// `convert_chunks` of `src` and whether all of `src`'s values are finite, each chunk checked
/// right after its conversion (an f16 run's input rounded as it is copied out of numpy).
pub fn convert_checking_finite<A: Copy + Into<f64> + Send + Sync + 'static, B: Copy + Send + Sync + 'static>(src: &[A], threads: Option<usize>, zero: B, convert: impl Fn(&[A], &mut [B]) + Sync) -> (Vec<B>, bool) {
    filled_by(src, threads, |s, d| {
        converted_into(s, d, zero, &convert);
        finite(s)
    })
}

/// `convert` of `src`, chunk by chunk: each destination chunk, zeroed first (`zero`), gets
/// `convert(source chunk, destination chunk)`. `convert` must be a pure function of its
/// chunk: chunks run on several threads and in no fixed order (thread-local state such as
/// `custom_float::with_format` is not seen there: callers keep such conversions serial).
pub fn convert_chunks<A: Sync, B: Copy + Send + Sync + 'static>(src: &[A], threads: Option<usize>, zero: B, convert: impl Fn(&[A], &mut [B]) + Sync) -> Vec<B> {
    filled_by(src, threads, |s, d| {
        converted_into(s, d, zero, &convert);
        true
    })
    .0
}

/// Whether every value is finite (one pass without early exit: it vectorises).
#[inline]
pub fn finite<T: Copy + Into<f64>>(s: &[T]) -> bool {
    s.iter().fold(true, |ok, &x| ok & x.into().is_finite())
}

/// d (uninitialised) = `convert(s)`: zeroed first, then converted in place.
#[inline]
fn converted_into<A, B: Copy>(s: &[A], d: &mut [MaybeUninit<B>], zero: B, convert: &impl Fn(&[A], &mut [B])) {
    for m in d.iter_mut() {
        m.write(zero);
    }
    // SAFETY: every value of d was just written (`assume_init_mut`, Rust 1.93)
    convert(s, unsafe { std::slice::from_raw_parts_mut(d.as_mut_ptr().cast::<B>(), d.len()) });
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
    fn converts_each_chunk_in_place_order_kept() {
        let n = PARALLEL_MIN + CHUNK / 2;
        let src: Vec<f64> = (0..n).map(|i| i as f64 / 3.0).collect();
        for threads in [Some(1), Some(2), None] {
            let out = convert_chunks(&src, threads, 0f32, |s, d| d.iter_mut().zip(s).for_each(|(o, &x)| *o = x as f32));
            let want: Vec<f32> = src.iter().map(|&x| x as f32).collect();
            assert_eq!(out, want);
            let mut bad = src.clone();
            bad[PARALLEL_MIN - 1] = f64::NAN;
            let (out, finite) = convert_checking_finite(&bad, threads, 0f32, |s, d| d.iter_mut().zip(s).for_each(|(o, &x)| *o = x as f32));
            assert!(!finite && out.len() == n && out[..PARALLEL_MIN - 1] == want[..PARALLEL_MIN - 1] && out[PARALLEL_MIN..] == want[PARALLEL_MIN..]);
            let (_, finite) = convert_checking_finite(&src, threads, 0f32, |s, d| d.iter_mut().zip(s).for_each(|(o, &x)| *o = x as f32));
            assert!(finite);
        }
    }
}
