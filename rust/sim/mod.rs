//! Running networks: the exact and float engines, single and batch runs, cancellation, and
//! the cell engine for gated, deep and second-order networks (`cells`).
#[cfg(target_arch = "x86_64")]
pub mod activation_avx512;
pub mod block_io;
pub mod block_results;
pub mod cancel;
pub mod cells;
pub mod dispatch;
pub mod exact_engine;
pub mod fast_sigmoid;
pub mod fast_tanh;
pub mod float_batch;
pub mod float_engine;
pub mod half_tables;
pub mod lanes;
pub mod plan_cache;
pub mod pool;
pub mod run;
#[cfg(target_arch = "x86_64")]
pub mod simd_round;
pub mod ticker;
pub mod counter_run;
pub mod cpu;
pub mod tile_kernel;
pub mod unit_split;
pub mod ziv;
