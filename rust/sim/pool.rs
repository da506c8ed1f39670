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

/// Runs `f` inside a pool of `threads` threads (None: all cores).
pub fn with_pool<T: Send>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> SimResult<T> {
    let n = threads.unwrap_or_else(default_threads);
    if n == 0 || n > 4096 {
        return Err(SimError::invalid_input(format!("threads must be between 1 and 4096, got {n}")));
    }
    let pool = {
        let mut pools = POOLS.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
        match pools.get(&n) {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(
                    ThreadPoolBuilder::new()
                        .num_threads(n)
                        .thread_name(|i| format!("rnnsim-{i}"))
                        .build()
                        .map_err(|e| SimError::Unsupported(format!("cannot start {n} threads: {e}")))?,
                );
                pools.insert(n, p.clone());
                p
            }
        }
    };
    Ok(pool.install(f))
}
