//! Runs a built-in Turing machine's compiled network exactly and prints the speed:
//! `cargo run --release --example tm_run -- bb5 47176870 [base4|cantor3]`.
use rnnsim::compile::tm_layout::{Encoding, TmOptions};
use rnnsim::compile::tm_run::run_tm;
use rnnsim::compile::tm_to_rnn::tm_to_rnn;
use rnnsim::machine::tm_builtins::builtin;
use rnnsim::num::dtype::Dtype;
use rnnsim::sim::cancel::Control;
use rnnsim::sim::exact_engine::DEFAULT_MAX_BITS;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("bb5", String::as_str);
    let steps: u64 = args.get(2).map_or(1_000_000, |s| s.parse().expect("steps"));
    let encoding = match args.get(3).map(String::as_str) {
        Some("cantor3") => Encoding::Cantor3,
        _ => Encoding::Base4,
    };
    let tm = builtin(name).expect("a built-in machine");
    let c = std::sync::Arc::new(tm_to_rnn(&tm, TmOptions { encoding, ..TmOptions::default() }).expect("compiles"));
    let t0 = Instant::now();
    let r = run_tm(&c, &[], Dtype::Exact, steps, DEFAULT_MAX_BITS, &Control::new()).expect("runs");
    let dt = t0.elapsed().as_secs_f64();
    let ones = r.view.as_ref().map(|v| v.cells.len()).unwrap_or(0);
    println!(
        "{name} {encoding:?}: {} steps, {} ticks, halted {}, output {}, ones {ones}, max bits {}, {dt:.2} s, {:.0} steps/s",
        r.steps, r.ticks, r.halted, r.output, r.bits, r.steps as f64 / dt
    );
}
