//! The lock-step kernel against the per-sequence engine, bit for bit: every builtin format,
//! every activation, shapes around the tile sizes, ragged lengths, h0, keep, thread counts.

use super::*;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::{Linear, SimpleRnn};
use crate::sim::run::{run_batch_float_per_sequence, Keep};
use crate::num::f32_sums::{Bf16SumF32, F16SumF32};
use half::{bf16, f16};
use malachite::Rational;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// a weight: k/64 for k in -96..96, sometimes larger or with an odd denominator
    fn weight(&mut self) -> Rational {
        let k = (self.next() % 193) as i64 - 96;
        match self.next() % 8 {
            0 => Rational::from(k) / Rational::from(3),
            1 => Rational::from(k * 37),
            _ => Rational::from(k) / Rational::from(64),
        }
    }
}

fn net(d: usize, n: usize, out: usize, act: Activation, seed: u64) -> SimpleRnn {
    let mut r = Lcg(seed);
    let v = RatMatrix::from_dense(d, d, (0..d * d).map(|_| r.weight() / Rational::from(d as i64)).collect());
    let w = RatMatrix::from_dense(d, n, (0..d * n).map(|_| r.weight()).collect());
    let b = (0..d).map(|_| r.weight()).collect();
    let h0 = Some((0..d).map(|_| r.weight()).collect());
    let ro = (out > 0).then(|| Linear { w: RatMatrix::from_dense(out, d, (0..out * d).map(|_| r.weight()).collect()), b: (0..out).map(|_| r.weight()).collect() });
    SimpleRnn::new(v, w, b, h0, act, ro).unwrap()
}

fn check<F: Float>(net: &SimpleRnn, batch: usize, steps: usize, seed: u64) {
    for fma in [false, true] {
        check_with::<F>(net, batch, steps, seed, fma);
    }
}

fn check_with<F: Float>(net: &SimpleRnn, batch: usize, steps: usize, seed: u64, fma: bool) {
    let plan = FloatPlan::<F>::new(net);
    let mut r = Lcg(seed);
    let xs: Vec<F> = (0..batch * steps * plan.n_in).map(|_| F::from_rational(&r.weight())).collect();
    let h0: Vec<F> = (0..batch * plan.d).map(|_| F::from_rational(&r.weight())).collect();
    let lengths: Vec<usize> = (0..batch).map(|_| (r.next() as usize) % (steps + 1)).collect();
    for (keep, lens, start, threads) in [
        (Keep::All, Some(lengths.clone()), Some(h0.as_slice()), 1),
        (Keep::States, Some(lengths.clone()), Some(h0.as_slice()), 2),
        (Keep::Final, Some(lengths.clone()), None, 3),
        (Keep::States, None, None, 1),
        (Keep::Final, None, Some(h0.as_slice()), 2),
    ] {
        let spec = BatchSpec { batch, steps, lengths: lens, keep, threads: Some(threads), fma };
        let want = run_batch_float_per_sequence(&plan, &xs, start, &spec, &Control::new()).unwrap();
        let got = try_lockstep(&plan, &xs, start, &spec, &Control::new()).expect("builtin").unwrap();
        let bits = |v: &[F]| v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>();
        let what = format!("{} {:?} batch {batch} steps {steps} keep {keep:?} fma {fma}", F::NAME, net.activation);
        if threads > 1 {
            // the units split between the threads (`unit_split`), whatever the weights' size
            let split = crate::sim::unit_split::forced(threads, || try_lockstep(&plan, &xs, start, &spec, &Control::new())).expect("builtin").unwrap();
            assert_eq!((bits(&split.states), bits(&split.final_states)), (bits(&want.states), bits(&want.final_states)), "{what} split");
            assert_eq!((bits(&split.outputs), bits(&split.final_outputs)), (bits(&want.outputs), bits(&want.final_outputs)), "{what} split");
        }
        let (states, outputs) = (batch * steps * plan.d, batch * steps * plan.n_out);
        let sizes = match keep {
            Keep::All => (states, outputs),
            Keep::States => (states, 0),
            Keep::Final => (0, 0),
        };
        assert_eq!((got.states.len(), got.outputs.len()), sizes, "{what}");
        if keep == Keep::States {
            // the states of "all" on the same run
            let all = try_lockstep(&plan, &xs, start, &BatchSpec { keep: Keep::All, ..spec.clone() }, &Control::new()).expect("builtin").unwrap();
            assert_eq!(bits(&got.states), bits(&all.states), "{what}");
        }
        assert_eq!(bits(&got.final_states), bits(&want.final_states), "{what}");
        assert_eq!(bits(&got.states), bits(&want.states), "{what}");
        assert_eq!(bits(&got.outputs), bits(&want.outputs), "{what}");
        assert_eq!(bits(&got.final_outputs), bits(&want.final_outputs), "{what}");
    }
}

#[test]
fn lockstep_equals_the_per_sequence_engine_bitwise() {
    let shapes = [(1, 0, 0, 1, 5), (3, 2, 1, 5, 7), (8, 4, 2, 9, 6), (16, 3, 0, 4, 4), (17, 5, 1, 13, 5), (40, 9, 2, 7, 3)];
    for (seed, &(d, n, out, batch, steps)) in shapes.iter().enumerate() {
        for act in [Activation::Identity, Activation::Relu, Activation::Slu, Activation::Step, Activation::Tanh, Activation::Sigmoid, Activation::Sign, Activation::SatSigmoid] {
            let nw = net(d, n, out, act, seed as u64 + 1);
            check::<f64>(&nw, batch, steps, 7 + seed as u64);
            check::<f32>(&nw, batch, steps, 8 + seed as u64);
            check::<f16>(&nw, batch, steps, 9 + seed as u64);
            check::<bf16>(&nw, batch, steps, 10 + seed as u64);
        }
    }
}

#[test]
fn lockstep_stops_on_cancel_and_custom_formats_are_not_lockstep() {
    let nw = net(4, 2, 1, Activation::Tanh, 3);
    let plan = FloatPlan::<f32>::new(&nw);
    let spec = BatchSpec { batch: 8, steps: 10, lengths: None, keep: Keep::All, threads: Some(2), fma: false };
    let ctl = Control::new();
    ctl.cancel();
    let xs = vec![0.5f32; 8 * 10 * 2];
    assert!(matches!(try_lockstep(&plan, &xs, None, &spec, &ctl), Some(Err(crate::error::SimError::Interrupted))));
    use crate::num::custom_float::{with_format, Custom};
    use crate::num::custom_format::CustomFormat;
    with_format(CustomFormat::new(10, 5).unwrap(), || {
        let p = FloatPlan::<Custom>::new(&nw);
        let xs = vec![Custom::one(); 8 * 10 * 2];
        assert!(try_lockstep(&p, &xs, None, &spec, &Control::new()).is_none());
    });
}


#[test]
fn many_blocks_per_thread_equal_the_per_sequence_engine() {
    // 2100 sequences of hidden 64 in f64 exceed the block budget: several blocks on one thread
    let nw = net(64, 3, 2, Activation::Tanh, 12);
    let batch = 2100;
    assert!(block_size(batch, 1, 2 * 64 * 8, 0) < batch, "the test needs several blocks");
    let plan = FloatPlan::<f64>::new(&nw);
    let mut r = Lcg(5);
    let steps = 3;
    let xs: Vec<f64> = (0..batch * steps * 3).map(|_| f64::from_rational(&r.weight())).collect();
    let lengths: Vec<usize> = (0..batch).map(|_| 1 + (r.next() as usize) % steps).collect();
    let spec = BatchSpec { batch, steps, lengths: Some(lengths), keep: Keep::All, threads: Some(1), fma: false };
    let want = run_batch_float_per_sequence(&plan, &xs, None, &spec, &Control::new()).unwrap();
    let got = try_lockstep(&plan, &xs, None, &spec, &Control::new()).expect("builtin").unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got.states), bits(&want.states));
    assert_eq!(bits(&got.final_states), bits(&want.final_states));
    assert_eq!(bits(&got.outputs), bits(&want.outputs));
    assert_eq!(bits(&got.final_outputs), bits(&want.final_outputs));
}

#[test]
fn kept_states_flushed_in_several_chunks_equal_the_per_sequence_engine() {
    // rows of 8 units: 32 bytes in f32 (64 ticks per flush), 16 in f16/bf16 (128), 64 in
    // f64 (32); 150 ticks with ragged lengths end sequences inside and between chunks
    assert_eq!(ticks_per_flush(true, 8 * 4, 150), 64);
    assert_eq!(ticks_per_flush(false, 8 * 4, 150), 1);
    let nw = net(8, 3, 2, Activation::Tanh, 21);
    check::<f32>(&nw, 13, 150, 1);
    check::<f64>(&nw, 13, 150, 2);
    check::<f16>(&nw, 9, 150, 3);
    check::<bf16>(&nw, 9, 150, 4);
    // a state row of a page or more: one tick per flush
    let wide = net(520, 2, 0, Activation::Sigmoid, 22);
    assert_eq!(ticks_per_flush(true, 520 * 8, 3), 1);
    check::<f64>(&wide, 3, 3, 5);
}

#[test]
fn large_kept_results_streamed_equal_the_per_sequence_engine() {
    // 1100 × 100 × 10 f32 states (4.4 MB) and the f64 half as many sequences: written with
    // non-temporal stores (rows of 10 values: on and off the 16-byte boundary)
    let nw = net(10, 2, 1, Activation::Tanh, 23);
    let steps = 100;
    use crate::sim::block_results::Kept;
    assert!(Kept::new::<f32>(1100, steps, 10).stream && Kept::new::<f64>(560, steps, 10).stream, "the test needs streamed results");
    check_with::<f32>(&nw, 1100, steps, 30, false);
    check_with::<f64>(&nw, 560, steps, 31, true);
    // f16 rows of 16 (32 bytes): with AVX512-FP16 copied from the binary16 ring
    // (`Kept::flush_f16_bits`), else converted from the lanes; streamed (with F16C, for
    // the conversion)
    assert!(Kept::new::<f16>(1320, steps, 16).stream, "the test needs a streamed f16 result");
    check_with::<f16>(&net(16, 2, 1, Activation::Tanh, 24), 1320, steps, 32, true);
}

#[test]
fn one_sequence_of_a_small_layer_in_registers_equals_the_per_sequence_engine() {
    // batch 1 on one thread runs `rnn_single` in f32 (hidden ≤ 64) and f64 (≤ 32) with
    // AVX-512 or AVX2 + FMA (the half formats' f32 sums with F16C too): sizes around its
    // vectors (16 / 8 lanes, 8 / 4), every activation, both fma settings, readouts
    use crate::sim::cpu;
    let able = cpu::avx512() || cpu::avx2_fma();
    let halves = cpu::avx512() || cpu::avx2_f16c();
    let acts = [Activation::Identity, Activation::Relu, Activation::Slu, Activation::Step, Activation::Tanh, Activation::Sigmoid, Activation::Sign, Activation::SatSigmoid];
    for (i, d) in [1, 7, 8, 9, 16, 17, 31, 32, 33, 48, 64, 65].into_iter().enumerate() {
        for (j, &act) in acts.iter().enumerate() {
            let rnn = net(d, 1 + (i + j) % 5, j % 3, act, 500 + (i * 8 + j) as u64);
            assert_eq!(weights_of(&FloatPlan::<f32>::new(&rnn)).single.is_some(), able && d <= 64, "f32 hidden {d}");
            assert_eq!(weights_of(&FloatPlan::<f64>::new(&rnn)).single.is_some(), able && d <= 32, "f64 hidden {d}");
            check::<f32>(&rnn, 1, 30, 900 + i as u64);
            check::<f64>(&rnn, 1, 30, 950 + i as u64);
            // the half formats with f32 sums, in f32 lanes (`V512h`, `V256h`)
            assert_eq!(weights_of(&FloatPlan::<Bf16SumF32>::new(&rnn)).single.is_some(), halves && d <= 64, "bf16+f32 hidden {d}");
            assert_eq!(weights_of(&FloatPlan::<F16SumF32>::new(&rnn)).single.is_some(), halves && d <= 64, "f16+f32 hidden {d}");
            check::<Bf16SumF32>(&rnn, 1, 30, 1000 + i as u64);
            check::<F16SumF32>(&rnn, 1, 30, 1050 + i as u64);
        }
    }
    // f16's own sums run in registers with AVX512-FP16 (`V256ph`), bf16's stay on the tiles
    let native = crate::sim::cells::gated_single::f16_available();
    for (i, d) in [1, 7, 16, 17, 33, 64, 65].into_iter().enumerate() {
        for (j, &act) in acts.iter().enumerate() {
            let rnn = net(d, 1 + (i + j) % 5, j % 3, act, 700 + (i * 8 + j) as u64);
            assert_eq!(weights_of(&FloatPlan::<f16>::new(&rnn)).single.is_some(), native && d <= 64, "f16 hidden {d}");
            check::<f16>(&rnn, 1, 30, 1100 + i as u64);
        }
    }
    assert!(weights_of(&FloatPlan::<bf16>::new(&net(16, 4, 0, Activation::Tanh, 1))).single.is_none());
}

#[test]
fn one_sequence_in_registers_over_many_calls_equals_the_per_sequence_engine() {
    // a call of `rnn_single` runs the ticks up to the next flush of the kept states (every
    // `ticks_per_flush` ticks: 8 at hidden 64 in f32, 512 at hidden 1) or SINGLE_TICKS of
    // them, h_t in registers from one tick to the next within a call and from its ring
    // slot at the start of the next: runs past SINGLE_TICKS, one or several vectors, kept
    // or not, full length or shorter (`check_with`'s cases)
    let steps = SINGLE_TICKS + 300;
    assert!(ticks_per_flush(true, 4, steps) < steps && ticks_per_flush(true, 64 * 4, steps) == 8);
    for (i, d) in [1, 16, 17, 64].into_iter().enumerate() {
        let rnn = net(d, 3, 1, if i % 2 == 0 { Activation::Tanh } else { Activation::Sigmoid }, 1200 + i as u64);
        check::<f32>(&rnn, 1, steps, 1300 + i as u64);
        if d <= 32 {
            check::<f64>(&rnn, 1, steps, 1400 + i as u64);
        }
        check::<Bf16SumF32>(&rnn, 1, steps, 1500 + i as u64);
    }
}
