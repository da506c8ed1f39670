//! Criterion benchmarks of the Rust engines, called directly (no Python).
//!
//!   CARGO_TARGET_DIR=/tmp/target_bench cargo bench --bench engines
//!
//! Groups (throughput is reported per tick / per token-step, so criterion prints ticks/s):
//!
//! * `exact_stack/*` — the exact engine on a 4-unit slu "stack machine" that pushes one
//!   base-4 digit per tick (s' = s/4 + 1/4·x0 + 3/4·x1, Siegelmann–Sontag encoding: digit
//!   1 or 3) and has three units reading the top of the stack (top digit is 3, stack is
//!   nonempty, top digit is 1). The network is pre-run to a stack depth of ~1k and ~10k
//!   digits (denominator 4^depth, i.e. ~2k and ~20k bits), then
//!     - `tick/<depth>`: one `ExactPlan::tick` at exactly that depth (state not advanced);
//!     - `stepper100/<depth>`: 100 further ticks with `ExactStepper` (random digits, so
//!       the cached W x + b is recomputed when the digit changes);
//!     - `run_exact100/<depth>`: the same 100 ticks through `run_exact`, which also keeps
//!       every state and evaluates the readout each tick.
//! * `float_batch/*` — `run_batch_float` of a tanh SimpleRNN, batch 256, T 100, hidden 64,
//!   input 8, all states kept, f32 and f64, on 1 and 2 threads.
//!
//! Everything uses `sample_size(10)`, flat sampling and short warm-up/measurement times so
//! the whole run stays well under two minutes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use malachite::Rational;
use rnnsim::net::activation::Activation;
use rnnsim::net::matrix::RatMatrix;
use rnnsim::net::simple_rnn::{Linear, SimpleRnn};
use rnnsim::num::exact_vector::ExactVector;
use rnnsim::num::rational::rational_from_f64;
use rnnsim::sim::cancel::Control;
use rnnsim::sim::exact_engine::{ExactPlan, DEFAULT_MAX_BITS};
use rnnsim::sim::float_engine::FloatPlan;
use rnnsim::sim::run::{run_batch_float, run_exact, BatchSpec, ExactStepper, Keep};
use std::hint::black_box;
use std::time::Duration;

/// Small deterministic generator (the benchmarks must not depend on a rand crate).
struct Lcg(u64);

impl Lcg {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn bit(&mut self) -> bool {
        self.next_u32() & 1 == 1
    }
    /// uniform in [-1, 1), a multiple of 2^-20 (exact in f32 and f64)
    fn unit(&mut self) -> f64 {
        (self.next_u32() >> 11) as f64 / (1u64 << 20) as f64 * 2.0 - 1.0
    }
}

fn q(p: i64, d: i64) -> Rational {
    Rational::from(p) / Rational::from(d)
}

/// The stack machine (same network as `benches/bench_engines.py`):
///   unit 0  s   = slu(s/4 + x0/4 + 3·x1/4)      push digit 1 (x0) or 3 (x1)
///   unit 1  top = slu(4 s − 2)                   top digit is 3
///   unit 2  ne  = slu(4 s)                       stack nonempty
///   unit 3  one = slu(ne − top)                  top digit is 1 (reads units 1, 2)
/// readout y = (top, one).
fn stack_net() -> SimpleRnn {
    let z = || q(0, 1);
    let v = RatMatrix::from_rows(vec![
        vec![q(1, 4), z(), z(), z()],
        vec![q(4, 1), z(), z(), z()],
        vec![q(4, 1), z(), z(), z()],
        vec![z(), q(-1, 1), q(1, 1), z()],
    ]);
    let w = RatMatrix::from_rows(vec![vec![q(1, 4), q(3, 4)], vec![z(), z()], vec![z(), z()], vec![z(), z()]]);
    let b = vec![z(), q(-2, 1), z(), z()];
    let ro = Linear {
        w: RatMatrix::from_rows(vec![vec![z(), q(1, 1), z(), z()], vec![z(), z(), z(), q(1, 1)]]),
        b: vec![z(), z()],
    };
    SimpleRnn::new(v, w, b, None, Activation::Slu, Some(ro)).expect("valid stack network")
}

/// Input rows (push 1 → [1, 0], push 3 → [0, 1]) for `n` random digits, flat (n, 2).
fn digits(n: usize, seed: u64) -> Vec<Rational> {
    let mut g = Lcg(seed);
    (0..n)
        .flat_map(|_| if g.bit() { [q(0, 1), q(1, 1)] } else { [q(1, 1), q(0, 1)] })
        .collect()
}

/// The state after `depth` pushes.
fn pre_run(plan: &ExactPlan, depth: usize) -> ExactVector {
    let xs = digits(depth, 1);
    let mut st = ExactStepper::new(plan, plan.h0.clone());
    for t in 0..depth {
        st.step(&xs[2 * t..2 * t + 2]).expect("within max_bits");
    }
    st.state
}

fn exact_stack(c: &mut Criterion) {
    let net = stack_net();
    let plan = ExactPlan::new(&net, DEFAULT_MAX_BITS).expect("slu runs exactly");
    let mut g = c.benchmark_group("exact_stack");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    const TICKS: usize = 100;
    for depth in [1_000usize, 10_000] {
        let start = pre_run(&plan, depth);
        let push3 = plan.affine(&[q(0, 1), q(1, 1)]);
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(BenchmarkId::new("tick", depth), &start, |b, h| {
            b.iter(|| plan.tick(black_box(h), black_box(&push3)).expect("tick"))
        });
        let xs = digits(TICKS, 2);
        g.throughput(Throughput::Elements(TICKS as u64));
        g.bench_with_input(BenchmarkId::new("stepper100", depth), &start, |b, h| {
            b.iter(|| {
                let mut st = ExactStepper::new(&plan, h.clone());
                for t in 0..TICKS {
                    st.step(black_box(&xs[2 * t..2 * t + 2])).expect("tick");
                }
                st.state
            })
        });
        let ctl = Control::new();
        g.bench_with_input(BenchmarkId::new("run_exact100", depth), &start, |b, h| {
            b.iter(|| run_exact(&plan, h.clone(), black_box(&xs), TICKS, &ctl).expect("run"))
        });
    }
    g.finish();
}

/// A tanh SimpleRNN with weights uniform in ±1/sqrt(hidden) (exact binary values).
fn tanh_net(hidden: usize, input: usize, seed: u64) -> SimpleRnn {
    let mut g = Lcg(seed);
    let scale = 1.0 / (hidden as f64).sqrt();
    let mut vals = |n: usize| -> Vec<Rational> { (0..n).map(|_| rational_from_f64((g.unit() * scale) as f32 as f64).expect("finite")).collect() };
    let v = RatMatrix::from_dense(hidden, hidden, vals(hidden * hidden));
    let w = RatMatrix::from_dense(hidden, input, vals(hidden * input));
    let b = vals(hidden);
    SimpleRnn::new(v, w, b, None, Activation::Tanh, None).expect("valid tanh network")
}

fn float_batch(c: &mut Criterion) {
    let (batch, steps, hidden, input) = (256usize, 100usize, 64usize, 8usize);
    let net = tanh_net(hidden, input, 7);
    let mut g = Lcg(11);
    let xs64: Vec<f64> = (0..batch * steps * input).map(|_| g.unit() as f32 as f64).collect();
    let xs32: Vec<f32> = xs64.iter().map(|&v| v as f32).collect();
    let p64 = FloatPlan::<f64>::new(&net);
    let p32 = FloatPlan::<f32>::new(&net);
    let ctl = Control::new();

    let mut grp = c.benchmark_group("float_batch");
    grp.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements((batch * steps) as u64));
    for threads in [1usize, 2] {
        let spec = BatchSpec { batch, steps, lengths: None, keep: Keep::All, threads: Some(threads), fma: false };
        let label = format!("b{batch}_t{steps}_h{hidden}_i{input}/threads{threads}");
        grp.bench_function(BenchmarkId::new("f32", &label), |b| {
            b.iter(|| run_batch_float(&p32, black_box(&xs32), None, &spec, &ctl).expect("run"))
        });
        grp.bench_function(BenchmarkId::new("f64", &label), |b| {
            b.iter(|| run_batch_float(&p64, black_box(&xs64), None, &spec, &ctl).expect("run"))
        });
    }
    grp.finish();
}

criterion_group!(benches, exact_stack, float_batch);
criterion_main!(benches);
