//! Rayon thread pools by size, built once and reused.

use crate::error::{SimError, SimResult};
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();

/// Number of threads used when the caller gives none: all available cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The pool of `threads` threads (None: all cores), built on first use and kept.
pub fn pool(threads: Option<usize>) -> SimResult<Arc<ThreadPool>> {
    let n = threads.unwrap_or_else(default_threads);
    if n == 0 || n > 4096 {
        return Err(SimError::invalid_input(format!("threads must be between 1 and 4096, got {n}")));
    }
    let mut pools = POOLS.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = pools.get(&n) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("rnnsim-{i}"))
            .build()
            .map_err(|e| SimError::Unsupported(format!("cannot start {n} threads: {e}")))?,
    );
    pools.insert(n, p.clone());
    Ok(p)
}

/// Runs `f` inside a pool of `threads` threads (None: all cores): in place when the caller
/// is already one of its threads (the bindings start each job on one: `py::interrupt`).
pub fn with_pool<T: Send>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> SimResult<T> {
    Ok(pool(threads)?.install(f))
}
