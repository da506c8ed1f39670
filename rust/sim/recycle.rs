//! Large result buffers kept for the next run instead of being returned to the kernel.
//!
//! A batch run's kept states are one buffer of B·T·H values (268 MB for a SimpleRNN at
//! batch 4096, 256 ticks, hidden 64, f32). Freed, glibc returns a buffer that size to the
//! kernel (it was mmap'd), and the next run's buffer comes back as fresh pages, which the
//! kernel zeroes on first touch: `clear_page_erms` took 18% of such a run on one thread
//! (perf, session 32) where the engine's own writing of the values took 11%. Users of
//! batches run them in a loop (`res = net.run_batch(x)` again and again), so the bindings
//! give a result's buffer back here when its numpy array dies (`py::convert`), and the next
//! run takes it (`take`): same values, no zeroing, no page faults.
//!
//! Policy (`Pool`): only buffers of at least [`MIN_BYTES`] are kept (smaller ones cost the
//! allocator little); a taken buffer is one of the wanted type whose capacity is at least
//! the length asked for and at most twice it (a run never holds much more memory than it
//! needs); at most [`MAX_KEPT`] buffers and the byte limit (`RNNSIM_RECYCLE_MIB`, default
//! [`DEFAULT_MIB`] MiB; 0 keeps none) are held, the oldest dropped first. Contents are
//! never read: the engines write every value of a buffer before it is returned.

use crate::num::f32_sums::{cast_vec, f32_layout};
use std::any::{Any, TypeId};
use std::sync::{Mutex, OnceLock};

/// Smallest buffer kept, in bytes.
pub const MIN_BYTES: usize = 4 << 20;
/// Most buffers kept at once.
pub const MAX_KEPT: usize = 4;
/// The default byte limit of the kept buffers, in MiB.
pub const DEFAULT_MIB: usize = 1024;

/// One kept buffer: a `Vec<T>` of length 0 (its capacity is the memory kept).
struct Kept {
    bytes: usize,
    buf: Box<dyn Any + Send>,
}

/// Buffers kept between runs, oldest first, within `limit` bytes.
pub struct Pool {
    kept: Vec<Kept>,
    limit: usize,
}

impl Pool {
    pub const fn new(limit: usize) -> Self {
        Pool { kept: Vec::new(), limit }
    }

    /// A buffer of capacity at least n, length 0: a kept one (capacity at most 2n) when
    /// there is one, else None.
    pub fn take<T: Send + 'static>(&mut self, n: usize) -> Option<Vec<T>> {
        let fits = |k: &Kept| k.buf.downcast_ref::<Vec<T>>().is_some_and(|v| v.capacity() >= n && v.capacity() / 2 <= n);
        let i = self.kept.iter().rposition(fits)?;
        let k = self.kept.remove(i);
        Some(*k.buf.downcast::<Vec<T>>().expect("the kept buffer has the type just checked"))
    }

    /// Keeps `v` (emptied) if it is large enough and the limits allow, dropping the oldest
    /// kept buffers to make room; else frees it.
    pub fn give<T: Send + 'static>(&mut self, mut v: Vec<T>) {
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < MIN_BYTES || bytes > self.limit {
            return;
        }
        v.clear();
        self.kept.push(Kept { bytes, buf: Box::new(v) });
        while self.kept.len() > MAX_KEPT || self.held() > self.limit {
            self.kept.remove(0);
        }
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.kept.iter().map(|k| k.bytes).sum()
    }
}

/// The byte limit: `RNNSIM_RECYCLE_MIB` MiB (read once), else [`DEFAULT_MIB`].
fn limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| std::env::var("RNNSIM_RECYCLE_MIB").ok().and_then(|s| s.trim().parse::<usize>().ok()).unwrap_or(DEFAULT_MIB).saturating_mul(1 << 20))
}

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    static POOL: Mutex<Pool> = Mutex::new(Pool::new(0));
    let mut p = POOL.lock().unwrap_or_else(|e| e.into_inner());
    p.limit = limit();
    p
}

/// A buffer of capacity at least n and length 0, from the process's kept buffers when one
/// fits, else newly allocated.
///
/// Types stored as one f32 (the half formats with f32 sums, `num::f32_sums`) take and give
/// f32's buffers: their results come back to the pool as float32 arrays.
pub fn take<T: Send + 'static>(n: usize) -> Vec<T> {
    if f32_layout::<T>() && TypeId::of::<T>() != TypeId::of::<f32>() {
        return cast_vec(take::<f32>(n));
    }
    if n * std::mem::size_of::<T>() >= MIN_BYTES {
        if let Some(v) = pool().take(n) {
            return v;
        }
    }
    Vec::with_capacity(n)
}

/// Gives a result's buffer back (kept for a later `take` if the policy allows, else freed).
pub fn give<T: Send + 'static>(v: Vec<T>) {
    if f32_layout::<T>() && TypeId::of::<T>() != TypeId::of::<f32>() {
        return give::<f32>(cast_vec(v));
    }
    if v.capacity() * std::mem::size_of::<T>() >= MIN_BYTES {
        pool().give(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIG: usize = MIN_BYTES / 4; // f32 values in MIN_BYTES

    #[test]
    fn a_given_buffer_is_taken_again_for_a_fitting_length() {
        let mut p = Pool::new(1 << 30);
        let v: Vec<f32> = Vec::with_capacity(BIG + 10);
        let addr = v.as_ptr() as usize;
        p.give(v);
        assert_eq!(p.held(), (BIG + 10) * 4);
        // another type, a length above the capacity, a capacity over twice the length: none
        assert!(p.take::<f64>(BIG / 2).is_none());
        assert!(p.take::<f32>(BIG + 11).is_none());
        assert!(p.take::<f32>(BIG / 2 - 1).is_none());
        let w = p.take::<f32>(BIG).expect("kept");
        assert_eq!((w.as_ptr() as usize, w.len()), (addr, 0));
        assert!(p.take::<f32>(BIG).is_none(), "taken once");
        assert_eq!(p.held(), 0);
    }

    #[test]
    fn small_buffers_and_a_zero_limit_keep_nothing() {
        let mut p = Pool::new(1 << 30);
        p.give(vec![1.0f64; 1000]);
        assert_eq!(p.held(), 0);
        let mut off = Pool::new(0);
        off.give(Vec::<f32>::with_capacity(BIG));
        assert_eq!(off.held(), 0);
    }

    #[test]
    fn the_oldest_go_first_past_the_limits() {
        // limit: three buffers' bytes; five given, the two oldest dropped
        let mut p = Pool::new(3 * MIN_BYTES);
        let addrs: Vec<usize> = (0..5)
            .map(|_| {
                let v: Vec<f32> = Vec::with_capacity(BIG);
                let a = v.as_ptr() as usize;
                p.give(v);
                a
            })
            .collect();
        assert_eq!(p.held(), 3 * MIN_BYTES);
        let taken: Vec<Vec<f32>> = (0..3).map(|_| p.take::<f32>(BIG).expect("three kept")).collect();
        let mut left: Vec<usize> = taken.iter().map(|v| v.as_ptr() as usize).collect();
        left.sort();
        let mut newest = addrs[2..].to_vec();
        newest.sort();
        assert_eq!(left, newest);
        // and never more than MAX_KEPT, whatever the bytes
        let mut q = Pool::new(usize::MAX);
        (0..MAX_KEPT + 2).for_each(|_| q.give(Vec::<f32>::with_capacity(BIG)));
        assert_eq!(q.held(), MAX_KEPT * MIN_BYTES);
    }
}
