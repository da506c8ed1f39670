//! Copying and converting a run's input on the run's threads.
//!
//! A batch run copies its input array out of numpy, checks that every value is finite, and
//! rounds it to the run's format. On the calling thread those passes ran while the pool
//! waited: for a SimpleRNN at batch 1024, 1000 ticks, hidden 16, input 4 on 2 threads,
//! 16% of the run's thread time in f32 and 29% in f16 (perf, session 39), each pass bound
//! by one core's memory bandwidth. Here they run in chunks of [`CHUNK`] values on the pool
//! the run uses, the finiteness check on each chunk right after its copy (in L1), and the
//! buffers come from `sim::recycle` (a fresh one would be zeroed by the kernel page by page).
//!
//! Only slices of at least [`PARALLEL_MIN`] values go to the pool, and only when it has more
//! than one thread; the rest run the same chunk loop on the calling thread.

use super::pool::pool;
use super::recycle;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Values per chunk: 32 KiB of f32, a chunk copied and then checked while it is in L1.
pub const CHUNK: usize = 1 << 13;
/// Shortest slice copied or converted by the pool.
pub const PARALLEL_MIN: usize = 1 << 16;

/// `body` on each (source chunk, destination chunk) pair, by the pool of `threads` threads
/// (None: all cores) when the slice is long enough and the pool has more than one thread,
/// else in order on the calling thread; the results and-ed (every chunk is visited).
fn chunk_pairs<A: Sync, B: Send>(src: &[A], dst: &mut [MaybeUninit<B>], threads: Option<usize>, body: impl Fn(&[A], &mut [MaybeUninit<B>]) -> bool + Sync) -> bool {
    debug_assert_eq!(src.len(), dst.len());
    let team = if src.len() >= PARALLEL_MIN { pool(threads).ok().filter(|p| p.current_num_threads() > 1) } else { None };
    match team {
        Some(p) => p.install(|| src.par_chunks(CHUNK).zip(dst.par_chunks_mut(CHUNK)).map(|(s, d)| body(s, d)).reduce(|| true, |a, b| a & b)),
        None => src.chunks(CHUNK).zip(dst.chunks_mut(CHUNK)).fold(true, |ok, (s, d)| body(s, d) & ok),
    }
}

/// A buffer of length `n` (recycled when one fits) whose values `fill` writes, every one:
/// `fill` gets the uninitialised buffer and must initialise all `n` values.
fn filled<B: Send + 'static>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<B>])) -> Vec<B> {
    let mut v: Vec<B> = recycle::take(n);
    fill(&mut v.spare_capacity_mut()[..n]);
    // SAFETY: `fill` initialised the first n values (its contract; both callers write every
    // chunk: `chunk_pairs` visits all of them), and the capacity is at least n (`take`).
    unsafe { v.set_len(n) };
    v
}

/// A copy of `src` and whether all its values are finite (NaN and ±∞ are not).
pub fn copy_checking_finite<T: Copy + Into<f64> + Send + Sync + 'static>(src: &[T], threads: Option<usize>) -> (Vec<T>, bool) {
    let mut finite = true;
    let v = filled(src.len(), |dst| {
        finite = chunk_pairs(src, dst, threads, |s, d| {
            // SAFETY: d and s have the same length (`chunk_pairs` pairs equal chunks) and do
            // not overlap (d is the new buffer); T: Copy (`write_copy_of_slice`, Rust 1.93)
            unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_mut_ptr().cast::<T>(), s.len()) };
            s.iter().fold(true, |ok, &x| ok & x.into().is_finite())
        });
    });
    (v, finite)
}

/// `convert_chunks` of `src` and whether all of `src`'s values are finite, each chunk checked
/// right after its conversion (an f16 run's input rounded as it is copied out of numpy).
pub fn convert_checking_finite<A: Copy + Into<f64> + Send + Sync + 'static, B: Copy + Send + Sync + 'static>(src: &[A], threads: Option<usize>, zero: B, convert: impl Fn(&[A], &mut [B]) + Sync) -> (Vec<B>, bool) {
    let mut finite = true;
    let v = filled(src.len(), |dst| {
        finite = chunk_pairs(src, dst, threads, |s, d| {
            converted_into(s, d, zero, &convert);
            s.iter().fold(true, |ok, &x| ok & x.into().is_finite())
        });
    });
    (v, finite)
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

/// `convert` of `src`, chunk by chunk: each destination chunk, zeroed first (`zero`), gets
/// `convert(source chunk, destination chunk)`. `convert` must be a pure function of its
/// chunk: chunks run on several threads and in no fixed order (thread-local state such as
/// `custom_float::with_format` is not seen there: callers keep such conversions serial).
pub fn convert_chunks<A: Sync, B: Copy + Send + Sync + 'static>(src: &[A], threads: Option<usize>, zero: B, convert: impl Fn(&[A], &mut [B]) + Sync) -> Vec<B> {
    filled(src.len(), |dst| {
        chunk_pairs(src, dst, threads, |s, d| {
            converted_into(s, d, zero, &convert);
            true
        });
    })
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
