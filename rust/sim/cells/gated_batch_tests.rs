//! The gated lock-step kernel against the per-sequence cell engine, bit for bit: every
//! builtin format, LSTM / Doubling-LSTM / GRU and a stack, shapes around the tile sizes,
//! ragged lengths, h0/c0, keep all/final, thread counts.

use super::*;
use crate::net::cell::Cell;
use crate::net::parts::{Options, Tensors};
use crate::net::stacked::Stack;
use crate::sim::run::Keep;
use half::{bf16, f16};
use malachite::Rational;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// k/32 for k in -96..96, sometimes with an odd denominator (rounded in every format)
    fn val(&mut self) -> Rational {
        let k = (self.next() % 193) as i64 - 96;
        if self.next().is_multiple_of(5) { Rational::from_signeds(k, 3) } else { Rational::from_signeds(k, 32) }
    }
    fn vals(&mut self, n: usize) -> Vec<Rational> {
        (0..n).map(|_| self.val()).collect()
    }
}

fn gated(kind: &str, h: usize, n: usize, seed: u64, opts: &[(&str, &str)]) -> Cell {
    let g = match kind {
        "lstm" => 4,
        "gru" => 3,
        _ => 5,
    };
    let mut r = Lcg(seed);
    let t: Tensors = [("weight_ih", vec![g * h, n]), ("weight_hh", vec![g * h, h]), ("bias_ih", vec![g * h]), ("bias_hh", vec![g * h])]
        .into_iter()
        .map(|(name, shape)| {
            let v = r.vals(shape.iter().product());
            (name.to_string(), (shape, v))
        })
        .collect();
    let o: Options = opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut p = Vec::new();
    Cell::from_parts(kind, "test", t, o, &mut p).unwrap_or_else(|| panic!("{p:?}"))
}

fn check<F: LaneFormat + Scalar>(net: &Stack, batch: usize, steps: usize, seed: u64) {
    for fma in [false, true] {
        check_with::<F>(net, batch, steps, seed, fma);
    }
}

fn check_with<F: LaneFormat + Scalar>(net: &Stack, batch: usize, steps: usize, seed: u64, fma: bool) {
    let plan = StackPlan::<F>::new(net).unwrap();
    let mut r = Lcg(seed);
    let xs: Vec<F> = r.vals(batch * steps * plan.input).iter().map(<F as Scalar>::from_rational).collect();
    let h0: Vec<Vec<F>> = plan.layers.iter().map(|l| r.vals(batch * l.hidden()).iter().map(<F as Scalar>::from_rational).collect()).collect();
    let starts = Starts { h0: Some(h0.clone()), c0: Some(h0) };
    let lengths: Vec<usize> = (0..batch).map(|_| (r.next() as usize) % (steps + 1)).collect();
    let top_cell = plan.layers[plan.layers.len() - 1].has_cell_state();
    for (keep, lens, st, threads) in [
        (Keep::All, Some(lengths.clone()), starts.clone(), 1),
        (Keep::States, Some(lengths.clone()), starts.clone(), 2),
        (Keep::All, None, Starts { h0: None, c0: None }, 1),
        (Keep::Final, Some(lengths.clone()), Starts { h0: None, c0: None }, 3),
        (Keep::Final, None, starts.clone(), 2),
    ] {
        let spec = BatchSpec { batch, steps, lengths: lens, keep, threads: Some(threads), fma };
        let want = plan.run_batch_per_sequence(&xs, &st, &spec, &Control::new()).unwrap();
        let got = try_lockstep(&plan, &xs, &st, &spec, &Control::new()).expect("gated, builtin").unwrap();
        let bits = |v: &[F]| v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>();
        let what = format!("{} {} batch {batch} steps {steps} keep {keep:?} fma {fma}", F::NAME, net.label);
        if threads > 1 {
            // the units split between the threads (`unit_split`), whatever the weights' size
            let split = crate::sim::unit_split::forced(threads, || try_lockstep(&plan, &xs, &st, &spec, &Control::new())).expect("gated, builtin").unwrap();
            assert_eq!((bits(&split.states), bits(&split.cells)), (bits(&want.states), bits(&want.cells)), "{what} split");
            for l in 0..plan.layers.len() {
                assert_eq!(bits(&split.final_h[l]), bits(&want.final_h[l]), "{what} split layer {l}");
                assert_eq!(split.final_c[l].as_ref().map(|c| bits(c)), want.final_c[l].as_ref().map(|c| bits(c)), "{what} split layer {l}");
            }
        }
        let kept = batch * steps * plan.top_hidden();
        let sizes = match keep {
            Keep::All => (kept, if top_cell { kept } else { 0 }),
            Keep::States => (kept, 0),
            Keep::Final => (0, 0),
        };
        assert_eq!((got.states.len(), got.cells.len()), sizes, "{what}");
        if keep == Keep::States {
            // the states of "all" on the same run
            let all = try_lockstep(&plan, &xs, &st, &BatchSpec { keep: Keep::All, ..spec.clone() }, &Control::new()).expect("gated, builtin").unwrap();
            assert_eq!(bits(&got.states), bits(&all.states), "{what}");
        }
        assert_eq!(bits(&got.states), bits(&want.states), "{what}");
        assert_eq!(bits(&got.cells), bits(&want.cells), "{what}");
        for l in 0..plan.layers.len() {
            assert_eq!(bits(&got.final_h[l]), bits(&want.final_h[l]), "{what} layer {l}");
            assert_eq!(got.final_c[l].as_ref().map(|c| bits(c)), want.final_c[l].as_ref().map(|c| bits(c)), "{what} layer {l}");
        }
    }
}

fn all_formats(net: &Stack, batch: usize, steps: usize, seed: u64) {
    check::<f32>(net, batch, steps, seed);
    check::<f64>(net, batch, steps, seed + 1);
    check::<f16>(net, batch, steps, seed + 2);
    check::<bf16>(net, batch, steps, seed + 3);
    // the half formats with f32 sums (with AVX-512 the gate sums reach the cells' loops
    // unrounded: `gated_pointwise::Sums::F32`)
    check::<crate::num::f32_sums::Bf16SumF32>(net, batch, steps, seed + 4);
    check::<crate::num::f32_sums::F16SumF32>(net, batch, steps, seed + 5);
}

#[test]
fn gated_lockstep_equals_the_per_sequence_engine_bitwise() {
    let shapes = [(1, 1, 3, 4), (3, 2, 9, 5), (16, 4, 11, 4), (17, 5, 4, 3)];
    for (i, &(h, n, batch, steps)) in shapes.iter().enumerate() {
        let seed = 10 * i as u64;
        for kind in ["lstm", "gru", "doubling_lstm"] {
            all_formats(&Stack::new(kind, vec![gated(kind, h, n, seed, &[])]).unwrap(), batch, steps, seed + 5);
        }
    }
    // other activations, and a stack (LSTM into GRU)
    let odd = gated("lstm", 5, 3, 77, &[("gate", "sat_sigmoid"), ("candidate", "relu"), ("output", "identity")]);
    all_formats(&Stack::new("lstm", vec![odd]).unwrap(), 6, 5, 3);
    let deep = Stack::new("stacked", vec![gated("lstm", 6, 3, 1, &[]), gated("gru", 9, 6, 2, &[])]).unwrap();
    all_formats(&deep, 10, 6, 9);
}

#[test]
fn non_gated_stacks_and_custom_formats_are_not_lockstep() {
    use crate::num::custom_float::{with_format, Custom};
    use crate::num::custom_format::CustomFormat;
    let net = Stack::new("lstm", vec![gated("lstm", 2, 1, 1, &[])]).unwrap();
    let spec = BatchSpec { batch: 2, steps: 3, lengths: None, keep: Keep::All, threads: Some(1), fma: false };
    with_format(CustomFormat::new(10, 5).unwrap(), || {
        let p = StackPlan::<Custom>::new(&net).unwrap();
        let xs = vec![Custom::one(); 6];
        assert!(try_lockstep(&p, &xs, &Starts { h0: None, c0: None }, &spec, &Control::new()).is_none());
    });
    let ctl = Control::new();
    ctl.cancel();
    let p = StackPlan::<f32>::new(&net).unwrap();
    assert!(matches!(try_lockstep(&p, &[0.5; 6], &Starts { h0: None, c0: None }, &spec, &ctl), Some(Err(crate::error::SimError::Interrupted))));
}

#[test]
fn many_blocks_per_thread_and_lengths_that_all_pass_the_first_ticks() {
    // 400 LSTM sequences of hidden 64 in f64 exceed the block budget: several blocks on one
    // thread; lengths 3..=6 keep every sequence running for 3 ticks (one flat update over
    // the block), then only the running ones are stored
    let deep = Stack::new("stacked", vec![gated("lstm", 64, 3, 4, &[]), gated("doubling_lstm", 5, 64, 5, &[]), gated("gru", 7, 5, 6, &[])]).unwrap();
    let plan = StackPlan::<f64>::new(&deep).unwrap();
    let batch = 400;
    assert!(block_size(batch, 1, (6 * 64 + 2 * 256) * 8, 0) < batch, "the test needs several blocks");
    let mut r = Lcg(31);
    let steps = 6;
    let xs: Vec<f64> = r.vals(batch * steps * 3).iter().map(<f64 as Scalar>::from_rational).collect();
    let lengths: Vec<usize> = (0..batch).map(|_| 3 + (r.next() as usize) % 4).collect();
    let none = Starts { h0: None, c0: None };
    for keep in [Keep::All, Keep::States, Keep::Final] {
        let spec = BatchSpec { batch, steps, lengths: Some(lengths.clone()), keep, threads: Some(1), fma: false };
        let want = plan.run_batch_per_sequence(&xs, &none, &spec, &Control::new()).unwrap();
        let got = try_lockstep(&plan, &xs, &none, &spec, &Control::new()).expect("gated").unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got.states), bits(&want.states));
        assert_eq!(bits(&got.cells), bits(&want.cells));
        for l in 0..3 {
            assert_eq!(bits(&got.final_h[l]), bits(&want.final_h[l]), "layer {l}");
            assert_eq!(got.final_c[l].as_ref().map(|c| bits(c)), want.final_c[l].as_ref().map(|c| bits(c)), "layer {l}");
        }
    }
}

#[test]
fn kept_states_and_cells_flushed_in_several_chunks_equal_the_per_sequence_engine() {
    // hidden 5: rows of 20 bytes in f32 (103 ticks per flush), 10 in f16/bf16 (205), 40 in
    // f64 (52); 230 ticks with ragged lengths end sequences inside and between chunks
    assert_eq!(crate::sim::block_results::ticks_per_flush(true, 5 * 4, 230), 103);
    for kind in ["lstm", "gru"] {
        let net = Stack::new(kind, vec![gated(kind, 5, 2, 3, &[])]).unwrap();
        all_formats(&net, 7, 230, 40);
    }
}

#[test]
fn large_kept_states_and_cells_streamed_equal_the_per_sequence_engine() {
    // 1100 × 100 × 10 f32 states and cells (4.4 MB each): non-temporal stores
    assert!(crate::sim::block_results::Kept::new::<f32>(1100, 100, 10).stream);
    let net = Stack::new("lstm", vec![gated("lstm", 10, 2, 8, &[])]).unwrap();
    check_with::<f32>(&net, 1100, 100, 50, true);
}

#[test]
fn gates_split_by_the_tiles_over_several_passes_equal_the_per_sequence_engine() {
    // hidden KC + 16 (65 vectors of f32, 130 of f64): the recurrent map's k runs over two
    // KC passes, the gate split on the last; LSTM and GRU
    let hidden = crate::sim::tile_kernel::KC + 16;
    for kind in ["lstm", "gru"] {
        let net = Stack::new(kind, vec![gated(kind, hidden, 3, 12, &[])]).unwrap();
        for fma in [false, true] {
            check_with::<f32>(&net, 3, 3, 60, fma);
            check_with::<f64>(&net, 2, 2, 61, fma);
        }
    }
}

#[test]
fn input_rows_hoisted_over_several_passes_equal_the_per_sequence_engine() {
    // small blocks compute layer 0's gi for up to 256 ticks per pass (`hoisted_ticks`):
    // 600 ticks are three passes, the last a partial one, with ragged lengths; hidden 16
    // (the gates split by the tiles) and 5 (added afterwards); a stack, so layer 1 reads h
    assert_eq!(hoisted_ticks(1, 64, 4, 600), 256);
    assert_eq!(hoisted_ticks(3, 64, 8, 600), 42);
    assert_eq!(hoisted_ticks(1024, 64, 4, 600), 1);
    for kind in ["lstm", "gru"] {
        let one = Stack::new(kind, vec![gated(kind, 16, 3, 21, &[])]).unwrap();
        let two = Stack::new("stacked", vec![gated(kind, 5, 3, 22, &[]), gated("lstm", 16, 5, 23, &[])]).unwrap();
        for net in [one, two] {
            all_formats(&net, 1, 600, 70);
            all_formats(&net, 3, 600, 71);
        }
    }
}

#[test]
fn one_sequence_of_small_layers_in_registers_equals_the_per_sequence_engine() {
    // batch 1 (and one sequence per thread) runs `gated_single` when every layer's hidden
    // size is at most 64 in f32 (16 or 8 lanes) or, in f64, 32 in 8 lanes (AVX-512) or 16
    // in 4 (AVX2; its tanh/σ gathered per kind and tick, `V512d::act_gates`,
    // `V256d::act_gates`): sizes around the vectors, every cell, all activations, both fma
    // settings (check_with), and a 3-layer stack over several chunks
    in_registers::<f32>(&[1, 7, 16, 17, 33, 48, 64], 65, gated_single::available(), 0);
    if crate::sim::cpu::avx512() {
        in_registers::<f64>(&[1, 7, 8, 9, 16, 23, 32], 33, true, 100);
    } else {
        in_registers::<f64>(&[1, 3, 4, 5, 8, 9, 13, 16], 17, crate::sim::cpu::avx2_fma(), 100);
    }
    // the half formats with f32 sums: f32 lanes of 16 (`V512h`, AVX-512) or of 8 up to
    // hidden 32 (`V256h`, AVX2 + F16C)
    let (sizes, over, able): (&[usize], usize, bool) = if crate::sim::cpu::avx512() { (&[1, 7, 16, 17, 33, 48, 64], 65, true) } else { (&[1, 7, 8, 9, 16, 17, 32], 33, crate::sim::cpu::avx2_f16c()) };
    in_registers::<crate::num::f32_sums::Bf16SumF32>(sizes, over, able, 200);
    in_registers::<crate::num::f32_sums::F16SumF32>(sizes, over, able, 300);
    // f16's own arithmetic: binary16 lanes with AVX512-FP16 (`V256ph`)
    in_registers::<half::f16>(&[1, 7, 16, 17, 33, 48, 64], 65, gated_single::f16_available(), 400);
}

/// The register kernel's cases in format F: hidden sizes `sizes` run there when `able`,
/// `over` does not; seeds from `seed`.
fn in_registers<F: LaneFormat + Scalar>(sizes: &[usize], over: usize, able: bool, seed: u64) {
    let plan_of = |net: &Stack| StackPlan::<F>::new(net).unwrap();
    let registers = |plan: &StackPlan<F>, ns: usize| {
        let lanes: Vec<Arc<GatedLanes<F::C>>> = plan.layers.iter().map(|l| if let LayerPlan::Gated(g) = l { lanes_of(g) } else { unreachable!() }).collect();
        single_layers(&lanes, ns, 1).is_some()
    };
    for (i, &h) in sizes.iter().enumerate() {
        let i = i as u64 + seed;
        for kind in ["lstm", "gru", "doubling_lstm"] {
            let net = Stack::new(kind, vec![gated(kind, h, 3, 100 + i, &[])]).unwrap();
            assert_eq!(registers(&plan_of(&net), 1), able, "{} {kind} {h}", F::NAME);
            assert!(!registers(&plan_of(&net), 2));
            check::<F>(&net, 1, 40, 7 + i);
            // one sequence per thread
            check::<F>(&net, 2, 9, 8 + i);
        }
    }
    let wide = Stack::new("lstm", vec![gated("lstm", over, 3, 1, &[])]).unwrap();
    assert!(!registers(&plan_of(&wide), 1), "{} hidden {over} runs on the tiles", F::NAME);
    let acts = ["identity", "relu", "slu", "step", "tanh", "sigmoid", "sign", "sat_sigmoid"];
    for (i, a) in acts.iter().enumerate() {
        let (b, i) = (acts[(i + 3) % acts.len()], i as u64 + seed);
        let lstm = gated("lstm", 9, 2, 30 + i, &[("gate", a), ("candidate", b), ("output", acts[(i as usize + 5) % acts.len()])]);
        check::<F>(&Stack::new("lstm", vec![lstm]).unwrap(), 1, 25, 40 + i);
        let gru = gated("gru", 9, 2, 50 + i, &[("gate", a), ("candidate", b)]);
        check::<F>(&Stack::new("gru", vec![gru]).unwrap(), 1, 25, 60 + i);
    }
    // (a first layer of hidden 20, or the kernel's largest size below that: 16 for f64 on AVX2)
    let first = 20.min(over - 1);
    let deep = Stack::new("stacked", vec![gated("gru", first, 4, 1, &[]), gated("doubling_lstm", 5, first, 2, &[]), gated("lstm", 16, 5, 3, &[])]).unwrap();
    assert!(registers(&plan_of(&deep), 1) == able);
    check::<F>(&deep, 1, 1300, 90 + seed);
}
