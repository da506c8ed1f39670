//! Running networks: the exact and float engines, single and batch runs, cancellation.
pub mod cancel;
pub mod dispatch;
pub mod exact_engine;
pub mod float_engine;
pub mod pool;
pub mod run;
pub mod ticker;
