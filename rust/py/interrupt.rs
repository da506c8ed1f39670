//! Long work off the GIL, stoppable with Ctrl-C, with optional progress callbacks.
//!
//! The job runs on a worker thread without the GIL. The calling thread waits on a condition variable
//! in 50 ms slices (GIL released); between slices it checks Python's signal handlers and
//! calls the progress callback. On Ctrl-C it sets the job's cancel flag, waits for the
//! worker (engines poll the flag once per tick) and raises KeyboardInterrupt.

use crate::error::SimResult;
use crate::py::convert::to_pyerr;
use crate::sim::cancel::Control;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

pub fn run_interruptible<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    total: u64,
    job: impl FnOnce(&Control) -> SimResult<T> + Send,
) -> PyResult<T> {
    let ctl = Control::new();
    let finished = (Mutex::new(false), Condvar::new());
    let outcome: Result<SimResult<T>, PyErr> = std::thread::scope(|s| {
        let ctl_ref = &ctl;
        let fin = &finished;
        let worker = s.spawn(move || {
            let r = job(ctl_ref);
            *fin.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            fin.1.notify_all();
            r
        });
        let mut interrupted: Option<PyErr> = None;
        loop {
            let done = py.detach(|| {
                let guard = fin.0.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = fin.1.wait_timeout_while(guard, Duration::from_millis(50), |f| !*f).unwrap_or_else(|e| e.into_inner());
                *guard
            });
            if done || worker.is_finished() {
                break;
            }
            let check = py.check_signals().and_then(|_| match progress {
                Some(cb) => cb.call1((ctl.done(), total)).map(|_| ()),
                None => Ok(()),
            });
            if let Err(e) = check {
                ctl.cancel();
                interrupted = Some(e);
            }
        }
        let joined = py.detach(|| worker.join());
        if let Some(cb) = progress {
            let _ = cb.call1((ctl.done(), total));
        }
        match (interrupted, joined) {
            (Some(e), _) => Err(e),
            (None, Ok(r)) => Ok(r),
            (None, Err(_)) => Err(PyRuntimeError::new_err("rnnsim internal error: a worker thread panicked (please report)")),
        }
    });
    outcome?.map_err(|e| to_pyerr(py, e))
}
