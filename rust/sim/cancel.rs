//! Cooperative cancellation and progress for long runs.
//!
//! Engines poll `Control::check` once per tick (one relaxed atomic load); the bindings set
//! the flag when Python sees Ctrl-C, so a run stops within a tick of the request.

use crate::error::{SimError, SimResult};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Control {
    cancelled: AtomicBool,
    done: AtomicU64,
}

impl Control {
    pub fn new() -> Self {
        Control::default()
    }
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
    /// Err(Interrupted) once cancel() was called.
    #[inline]
    pub fn check(&self) -> SimResult<()> {
        if self.is_cancelled() {
            Err(SimError::Interrupted)
        } else {
            Ok(())
        }
    }
    /// Records `n` more units of work done (sequences in a batch, ticks in a long run).
    pub fn advance(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
}
