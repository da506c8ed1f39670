//! The compiled network against the machine's own interpreter, configuration by
//! configuration (tm_run::verify_tm), on busy beavers, classic machines, random machines
//! with missing transitions, accept/reject states and one-way tapes, in both encodings.

use super::*;
use std::sync::Arc;
use crate::compile::tm_run::{precision_horizon, run_tm, verify_tm};
use crate::machine::random::SplitMix64;
use crate::machine::tm::{Status, TuringMachine};
use crate::machine::tm_builtins::builtin;
use crate::num::dtype::Dtype;
use crate::sim::cancel::Control;
use crate::sim::exact_engine::DEFAULT_MAX_BITS;

const ENCODINGS: [Encoding; 2] = [Encoding::Base4, Encoding::Cantor3];

fn compile(tm: &TuringMachine, enc: Encoding) -> Arc<CompiledTm> {
    Arc::new(tm_to_rnn(tm, TmOptions { encoding: enc, ..TmOptions::default() }).unwrap())
}

fn check(tm: &TuringMachine, enc: Encoding, word: &[usize], max_steps: u64) {
    let c = compile(tm, enc);
    let m = verify_tm(&c, word, max_steps, DEFAULT_MAX_BITS, &Control::new()).unwrap();
    assert!(m.is_none(), "{enc:?} {:?} on {word:?}: {m:?}", tm.tape);
}

fn nnz(c: &Arc<CompiledTm>) -> (usize, usize, usize) {
    let n = &c.network;
    (n.v.nonzeros(), n.w.nonzeros(), n.b.iter().filter(|x| **x != 0u32).count())
}

#[test]
fn sizes_match_the_reference_prototype() {
    // docs/tm_construction/table.md (the verified Python prototype)
    let bb2 = builtin("bb2").unwrap();
    let c = compile(&bb2, Encoding::Base4);
    assert_eq!((c.network.hidden_size(), nnz(&c)), (30, (221, 20, 22)));
    assert_eq!(compile(&bb2, Encoding::Cantor3).network.hidden_size(), 40);
    let mut one = bb2.clone();
    one.tape = TapeKind::OneWay;
    assert_eq!((compile(&one, Encoding::Base4).network.hidden_size(), nnz(&compile(&one, Encoding::Base4))), (30, (202, 13, 18)));
    assert_eq!(nnz(&compile(&one, Encoding::Cantor3)), (353, 20, 31));
    let bb5 = builtin("bb5").unwrap();
    let c5 = compile(&bb5, Encoding::Base4);
    assert_eq!((c5.network.hidden_size(), nnz(&c5)), (40, (380, 20, 26)));
    assert_eq!(nnz(&compile(&bb5, Encoding::Cantor3)), (560, 26, 40));
}

#[test]
fn bb2_to_bb4_in_full_both_encodings() {
    for (name, steps, ones) in [("bb2", 6, 4), ("bb3", 21, 5), ("bb4", 107, 13)] {
        let tm = builtin(name).unwrap();
        for enc in ENCODINGS {
            check(&tm, enc, &[], 1000);
            let c = compile(&tm, enc);
            let r = run_tm(&c, &[], Dtype::Exact, 1000, DEFAULT_MAX_BITS, &Control::new()).unwrap();
            assert_eq!((r.steps, r.ticks, r.halted, r.output), (steps, steps, true, 1), "{name} {enc:?}");
            assert_eq!(r.view.unwrap().cells.len() as u64, ones);
        }
    }
}

#[test]
fn bb5_first_steps() {
    let tm = builtin("bb5").unwrap();
    check(&tm, Encoding::Base4, &[], 3000);
    check(&tm, Encoding::Cantor3, &[], 1000);
}

#[test]
fn classic_machines_on_words() {
    let words = |tm: &TuringMachine, n: usize| -> Vec<Vec<usize>> {
        let ins: Vec<usize> = tm.input_alphabet.iter().map(|s| tm.tape_alphabet.iter().position(|t| t == s).unwrap()).collect();
        let mut out = vec![vec![]];
        let mut layer = vec![vec![]];
        for _ in 0..n {
            layer = layer.iter().flat_map(|w: &Vec<usize>| ins.iter().map(move |&s| { let mut v = w.clone(); v.push(s); v })).collect();
            out.extend(layer.clone());
        }
        out
    };
    for name in ["binary_increment", "sipser_pow2", "anbncn"] {
        let tm = builtin(name).unwrap();
        for enc in ENCODINGS {
            for w in words(&tm, if tm.input_alphabet.len() > 2 { 4 } else { 6 }) {
                check(&tm, enc, &w, 2000);
            }
        }
    }
}

/// Random machines made harder: some transitions missing, some states accepting or
/// rejecting, some moves N, one-way tapes.
fn variant(seed: u64) -> TuringMachine {
    let mut rng = SplitMix64(seed);
    let (n, k) = (1 + rng.below(4), 2 + rng.below(2));
    let mut tm = TuringMachine::random(n, k, seed);
    if rng.below(2) == 0 {
        tm.tape = TapeKind::OneWay;
    }
    for row in tm.delta.iter_mut() {
        for cell in row.iter_mut() {
            match (cell.as_mut(), rng.below(8)) {
                (Some(_), 0) => *cell = None,
                (Some(t), 1) => t.mv = Move::N,
                _ => {}
            }
        }
    }
    let z = tm.states.len() - 1;
    if rng.below(2) == 0 {
        tm.halt.clear();
        if rng.below(2) == 0 { tm.accept.push(z) } else { tm.reject.push(z) }
    }
    tm.validate().unwrap();
    tm
}

#[test]
fn random_machines_configuration_by_configuration() {
    let mut rng = SplitMix64(7);
    for seed in 0..60 {
        let tm = variant(seed);
        for enc in ENCODINGS {
            for _ in 0..3 {
                let len = rng.below(4);
                let word: Vec<usize> = (0..len).map(|_| 1 + rng.below(tm.tape_alphabet.len() - 1)).collect();
                check(&tm, enc, &word, 300);
            }
        }
    }
}

#[test]
fn run_agrees_with_interpreter_on_stop_and_verdict() {
    for seed in 100..140 {
        let tm = variant(seed);
        let c = compile(&tm, Encoding::Base4);
        let word = [1usize, 1];
        let want = tm.run(&word, 200);
        let got = run_tm(&c, &word, Dtype::Exact, 200, DEFAULT_MAX_BITS, &Control::new()).unwrap();
        assert_eq!(got.halted, want.halted, "seed {seed}");
        assert_eq!(got.steps, want.steps, "seed {seed}");
        let out = match want.status {
            Status::Accepted | Status::Halted => 1,
            Status::Rejected => -1,
            Status::Running => 0,
        };
        assert_eq!(got.output, out, "seed {seed}");
    }
}

#[test]
fn syntactic_penalty_and_no_counter_still_simulate() {
    let tm = builtin("bb4").unwrap();
    for enc in ENCODINGS {
        let c = Arc::new(tm_to_rnn(&tm, TmOptions { encoding: enc, penalty: Penalty::Syntactic, ..TmOptions::default() }).unwrap());
        assert!(verify_tm(&c, &[], 200, DEFAULT_MAX_BITS, &Control::new()).unwrap().is_none());
    }
    let c = Arc::new(tm_to_rnn(&tm, TmOptions { counter: false, ..TmOptions::default() }).unwrap());
    let r = run_tm(&c, &[], Dtype::Exact, 200, DEFAULT_MAX_BITS, &Control::new()).unwrap();
    assert_eq!((r.steps, r.view.unwrap().cells.len()), (107, 13));
}

#[test]
fn bad_base_is_unsupported() {
    let tm = builtin("bb2").unwrap();
    let e = tm_to_rnn(&tm, TmOptions { base: Some(3), ..TmOptions::default() }).unwrap_err();
    assert!(matches!(e, SimError::Unsupported(_)));
}

#[test]
fn float_horizon_follows_stack_depth() {
    // BB(4) fits in f64 and f32 (stacks <= 13 symbols); BB(5) does not (CONSTRUCTION.md §11)
    let bb4 = compile(&builtin("bb4").unwrap(), Encoding::Base4);
    assert_eq!(precision_horizon(&bb4, &[], Dtype::F64, 1000, DEFAULT_MAX_BITS, &Control::new()).unwrap(), None);
    let bb5 = compile(&builtin("bb5").unwrap(), Encoding::Base4);
    let h64 = precision_horizon(&bb5, &[], Dtype::F64, 5000, DEFAULT_MAX_BITS, &Control::new()).unwrap();
    let h32 = precision_horizon(&bb5, &[], Dtype::F32, 5000, DEFAULT_MAX_BITS, &Control::new()).unwrap();
    let h16 = precision_horizon(&bb5, &[], Dtype::F16, 5000, DEFAULT_MAX_BITS, &Control::new()).unwrap();
    let (h64, h32, h16) = (h64.unwrap(), h32.unwrap(), h16.unwrap());
    assert!(h16 < h32 && h32 < h64, "{h16} {h32} {h64}");
}

#[test]
fn verify_catches_every_perturbation_that_changes_the_run() {
    // a weight change that alters any hidden value on BB(3)'s run must be reported
    use crate::sim::ticker::ticker;
    let tm = builtin("bb3").unwrap();
    let c = compile(&tm, Encoding::Base4);
    let eos = vec![Rational::from(0), Rational::from(1)];
    let trajectory = |net: &crate::net::simple_rnn::SimpleRnn| {
        let mut t = ticker(net, Dtype::Exact, DEFAULT_MAX_BITS).unwrap();
        (0..22).map(|_| { t.tick(&eos).unwrap(); t.state() }).collect::<Vec<_>>()
    };
    let base = trajectory(&c.network);
    let (mut changed, mut caught) = (0, 0);
    let triples: Vec<(usize, usize, Rational)> = c.network.v.triples().map(|(i, j, v)| (i, j, v.clone())).collect();
    for (i, j, v) in triples.iter().step_by(3) {
        let mut bad = (*c).clone();
        bad.network.v.set(*i, *j, v + Rational::from_signeds(1i32, 2i32));
        if trajectory(&bad.network) != base {
            changed += 1;
            caught += usize::from(verify_tm(&Arc::new(bad), &[], 100, DEFAULT_MAX_BITS, &Control::new()).unwrap().is_some());
        }
    }
    assert!(changed > 10, "only {changed} perturbations changed the run");
    assert_eq!(caught, changed);
}
