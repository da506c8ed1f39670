//! Long work off the GIL, stoppable with Ctrl-C, with optional progress callbacks.
//!
//! The job runs without the GIL on a thread of the pool its parallel work uses
//! (`sim::pool`, `threads`; jobs with no parallel work, on the default pool's), so that
//! work starts in place. The calling thread waits on a condition variable in 50 ms slices
//! (GIL released); between slices it checks Python's signal handlers and calls the
//! progress callback. On Ctrl-C it sets the job's cancel flag, waits for the worker
//! (engines poll the flag once per tick) and raises KeyboardInterrupt. A panic in the job
//! becomes a RuntimeError.
//!
//! The pools' threads live as long as the process: a call hands its job to a sleeping
//! thread instead of starting one. A thread per call cost ~50 µs here, most of a short
//! call (a 1-tick LSTM `run_batch` took 70 µs, now 18 µs); and a job started on a thread
//! outside its pool waits for the pool's work, which a pool thread does by spinning and
//! yielding (batch-1 SimpleRNN calls: median 525 → 729 µs when tried).

use crate::error::SimResult;
use crate::py::convert::to_pyerr;
use crate::sim::cancel::Control;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// `job` on a thread of the pool of `threads` threads (None: all cores; the pool the job's
/// own parallel work uses, if any), its progress (`Control::done` of `total`) reported to
/// `progress` every 50 ms and at the end.
pub fn run_interruptible<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    total: u64,
    threads: Option<usize>,
    job: impl FnOnce(&Control) -> SimResult<T> + Send,
) -> PyResult<T> {
    let ctl = Control::new();
    // the job's outcome (Err: it panicked), set once, then the flag the caller waits on
    let finished: (Mutex<Option<std::thread::Result<SimResult<T>>>>, Condvar) = (Mutex::new(None), Condvar::new());
    let mut interrupted: Option<PyErr> = None;
    let pool = crate::sim::pool::pool(threads).map_err(|e| to_pyerr(py, e))?;
    pool.in_place_scope(|s| {
        let (ctl_ref, fin) = (&ctl, &finished);
        s.spawn(move |_| {
            let r = catch_unwind(AssertUnwindSafe(|| job(ctl_ref)));
            *fin.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            fin.1.notify_all();
        });
        loop {
            let done = py.detach(|| {
                let guard = finished.0.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = finished.1.wait_timeout_while(guard, Duration::from_millis(50), |f| f.is_none()).unwrap_or_else(|e| e.into_inner());
                guard.is_some()
            });
            if done {
                break;
            }
            let check = py.check_signals().and_then(|_| match progress {
                Some(cb) => cb.call1((ctl.done(), total)).map(|_| ()),
                None => Ok(()),
            });
            if let (Err(e), None) = (check, &interrupted) {
                ctl.cancel();
                interrupted = Some(e);
            }
        }
    });
    if let Some(cb) = progress {
        let _ = cb.call1((ctl.done(), total));
    }
    let outcome = finished.0.into_inner().unwrap_or_else(|e| e.into_inner());
    match (interrupted, outcome) {
        (Some(e), _) => Err(e),
        (None, Some(Ok(r))) => r.map_err(|e| to_pyerr(py, e)),
        (None, _) => Err(PyRuntimeError::new_err("rnnsim internal error: a worker thread panicked (please report)")),
    }
}
