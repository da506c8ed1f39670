//! Unit tests of the cell engine: hand-computed steps, exact vs float agreement where the
//! float run is exact, thread-count independence, the QRNN window, 2RNN full vs CP.

use super::run::Starts;
use super::StackPlan;
use crate::error::SimError;
use crate::net::cell::Cell;
use crate::net::parts::{Options, Tensors};
use crate::net::stacked::Stack;
use crate::sim::cancel::Control;
use crate::sim::exact_engine::{ExactPlan, DEFAULT_MAX_BITS};
use crate::sim::run::{run_exact, BatchSpec, Keep};
use malachite::Rational;

fn q(n: i64, d: i64) -> Rational {
    Rational::from_signeds(n, d)
}

/// Deterministic small dyadic values in [-1, 1] (exact in every format).
fn vals(n: usize, seed: u64) -> Vec<Rational> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            q(((s >> 33) % 9) as i64 - 4, 4)
        })
        .collect()
}

fn cell(kind: &str, tensors: &[(&str, Vec<usize>, Vec<Rational>)], options: &[(&str, &str)]) -> Cell {
    let t: Tensors = tensors.iter().map(|(n, s, v)| (n.to_string(), (s.clone(), v.clone()))).collect();
    let o: Options = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut p = Vec::new();
    Cell::from_parts(kind, "test", t, o, &mut p).unwrap_or_else(|| panic!("{p:?}"))
}

fn lstm(h: usize, n: usize, seed: u64, opts: &[(&str, &str)]) -> Cell {
    cell(
        "lstm",
        &[
            ("weight_ih", vec![4 * h, n], vals(4 * h * n, seed)),
            ("weight_hh", vec![4 * h, h], vals(4 * h * h, seed + 1)),
            ("bias_ih", vec![4 * h], vals(4 * h, seed + 2)),
            ("bias_hh", vec![4 * h], vals(4 * h, seed + 3)),
        ],
        opts,
    )
}

fn stack(layers: Vec<Cell>) -> Stack {
    Stack::new("stacked", layers).unwrap()
}

#[test]
fn one_lstm_step_by_hand() {
    // H = 1, n = 1, identity gates: pre = (w_ih x + b_ih) + (w_hh h + b_hh)
    let c = cell(
        "lstm",
        &[("weight_ih", vec![4, 1], vec![q(1, 1), q(2, 1), q(3, 1), q(1, 2)]), ("weight_hh", vec![4, 1], vec![q(0, 1); 4])],
        &[("gate", "identity"), ("candidate", "identity"), ("output", "identity")],
    );
    let plan = StackPlan::<Rational>::new(&stack(vec![c])).unwrap();
    let starts = Starts { h0: None, c0: Some(vec![vec![q(5, 1)]]) };
    let (h, c, _) = plan.run_one(&[q(2, 1)], 1, &starts, false, &Control::new()).unwrap();
    // i = 2, f = 4, g = 6, o = 1: c = 4·5 + 2·6 = 32, h = 1·32
    assert_eq!(c, vec![q(5, 1), q(32, 1)]);
    assert_eq!(h, vec![q(0, 1), q(32, 1)]);
}

#[test]
fn gru_step_by_hand_applies_r_to_the_hidden_bias() {
    // identity gates, H = 1, n = 1: r = gi_r + gh_r, n = gi_n + r·gh_n, h' = n + z(h − n)
    let c = cell(
        "gru",
        &[
            ("weight_ih", vec![3, 1], vec![q(1, 1), q(1, 2), q(1, 1)]),
            ("weight_hh", vec![3, 1], vec![q(0, 1), q(0, 1), q(1, 1)]),
            ("bias_ih", vec![3], vec![q(0, 1); 3]),
            ("bias_hh", vec![3], vec![q(0, 1), q(0, 1), q(3, 1)]),
        ],
        &[("gate", "identity"), ("candidate", "identity")],
    );
    let plan = StackPlan::<Rational>::new(&stack(vec![c])).unwrap();
    let starts = Starts { h0: Some(vec![vec![q(2, 1)]]), c0: None };
    let (h, _, _) = plan.run_one(&[q(2, 1)], 1, &starts, false, &Control::new()).unwrap();
    // r = 2, z = 1, gh_n = 2 + 3 = 5, n = 2 + 2·5 = 12, h' = 12 + 1·(2 − 12) = 2
    assert_eq!(h, vec![q(2, 1), q(2, 1)]);
}

#[test]
fn saturated_lstm_runs_exactly_and_f64_agrees() {
    let net = stack(vec![lstm(3, 2, 11, &[]), lstm(3, 3, 21, &[])]);
    assert!(matches!(StackPlan::<Rational>::new(&net), Err(SimError::Unsupported(_))));
    let sat = net.saturated();
    let exact = StackPlan::<Rational>::new(&sat).unwrap();
    let float = StackPlan::<f64>::new(&sat).unwrap();
    let x = vals(40 * 2, 5);
    let xf: Vec<f64> = x.iter().map(|v| f64::try_from(v).unwrap()).collect();
    let (he, ce, _) = exact.run_one(&x, 40, &Starts::default(), false, &Control::new()).unwrap();
    let (hf, cf, _) = float.run_one(&xf, 40, &Starts::default(), false, &Control::new()).unwrap();
    let conv = |v: &[Rational]| v.iter().map(|r| f64::try_from(r).unwrap()).collect::<Vec<f64>>();
    assert_eq!(conv(&he), hf);
    assert_eq!(conv(&ce), cf);
    assert!(he.iter().all(|v| *v == 0u32 || *v == 1u32 || *v == -1i32 || *v == q(1, 2) || *v == q(-1, 2)));
}

#[test]
fn batch_is_bitwise_identical_for_any_thread_count() {
    let net = stack(vec![lstm(4, 3, 1, &[]), cell("gru", &[("weight_ih", vec![12, 4], vals(48, 7)), ("weight_hh", vec![12, 4], vals(48, 8))], &[])]);
    let plan = StackPlan::<f32>::new(&net).unwrap();
    let (b, t) = (23, 17);
    let xs: Vec<f32> = (0..b * t * 3).map(|i| ((i * 7919) % 13) as f32 / 13.0 - 0.5).collect();
    let lengths: Vec<usize> = (0..b).map(|i| (i * 5) % (t + 1)).collect();
    let run = |threads| {
        let spec = BatchSpec { batch: b, steps: t, lengths: Some(lengths.clone()), keep: Keep::All, threads: Some(threads), fma: false };
        plan.run_batch(&xs, &Starts::default(), &spec, &Control::new()).unwrap()
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
    // the final state of a short sequence equals its single run at its length
    let s = 4;
    let (h, _, last) = plan.run_one_per_sequence(&xs[s * t * 3..s * t * 3 + lengths[s] * 3], lengths[s], &Starts::default(), false, &Control::new()).unwrap();
    assert_eq!(&one.final_h[1][s * 4..(s + 1) * 4], &h[lengths[s] * 4..]);
    assert_eq!(&one.final_c[0].as_ref().unwrap()[s * 4..(s + 1) * 4], &last[0][4..8]);
    assert!(one.final_c[1].is_none());
}

/// `run_one` (a batch of one on the lock-step kernel) against the step-by-step reference,
/// bit for bit: a two-layer LSTM → GRU stack and a single GRU, f64/f32/f16/bf16, with and
/// without FMA, given h0 and c0, and T = 0.
#[test]
fn single_run_on_the_kernel_equals_the_per_sequence_run() {
    use crate::num::scalar::Scalar;
    fn check<S: Scalar + 'static>(net: &Stack, starts: &Starts<Rational>) {
        let plan = StackPlan::<S>::new(net).unwrap();
        let conv = |v: &Vec<Vec<Rational>>| v.iter().map(|l| l.iter().map(S::from_rational).collect()).collect();
        let st = Starts { h0: starts.h0.as_ref().map(conv), c0: starts.c0.as_ref().map(conv) };
        for t in [0, 1, 25] {
            let xs: Vec<S> = vals(t * 3, 11).iter().map(S::from_rational).collect();
            for fma in [false, true] {
                let fast = plan.run_one(&xs, t, &st, fma, &Control::new()).unwrap();
                let slow = plan.run_one_per_sequence(&xs, t, &st, fma, &Control::new()).unwrap();
                let ex = |v: &[S]| v.iter().map(|x| x.to_exact()).collect::<Vec<_>>();
                assert_eq!((ex(&fast.0), ex(&fast.1)), (ex(&slow.0), ex(&slow.1)), "t={t} fma={fma}");
                assert_eq!(fast.2.iter().map(|l| ex(l)).collect::<Vec<_>>(), slow.2.iter().map(|l| ex(l)).collect::<Vec<_>>());
            }
        }
    }
    let gru = |n: usize, seed: u64| cell("gru", &[("weight_ih", vec![12, n], vals(12 * n, seed)), ("weight_hh", vec![12, 4], vals(48, seed + 1))], &[]);
    let two = stack(vec![lstm(4, 3, 1, &[("gate", "sigmoid"), ("candidate", "tanh"), ("output", "tanh")]), gru(4, 7)]);
    let starts = Starts { h0: Some(vec![vals(4, 20), vals(4, 21)]), c0: Some(vec![vals(4, 22), vals(4, 23)]) };
    let one = stack(vec![gru(3, 9)]);
    for (net, st) in [(&two, &starts), (&one, &Starts::default())] {
        check::<f64>(net, st);
        check::<f32>(net, st);
        check::<half::f16>(net, st);
        check::<half::bf16>(net, st);
    }
}

#[test]
fn qrnn_window_sees_the_last_k_inputs() {
    // H = 1, n = 1, k = 3, f-pooling with identity functions: z = x_t + 10 x_{t−1} + 100 x_{t−2}, f = 0
    let c = cell(
        "qrnn",
        &[("weight", vec![2, 3], vec![q(1, 1), q(10, 1), q(100, 1), q(0, 1), q(0, 1), q(0, 1)])],
        &[("window", "3"), ("pooling", "f"), ("gate", "identity"), ("candidate", "identity")],
    );
    let plan = StackPlan::<Rational>::new(&stack(vec![c])).unwrap();
    let x = vec![q(1, 1), q(2, 1), q(3, 1), q(4, 1)];
    let (h, _, _) = plan.run_one(&x, 4, &Starts::default(), false, &Control::new()).unwrap();
    assert_eq!(h, vec![q(0, 1), q(1, 1), q(12, 1), q(123, 1), q(234, 1)]);
}

#[test]
fn second_order_full_tensor_equals_its_cp_factors() {
    let (h, n, r) = (3, 2, 2);
    let (p, qq, s) = (vals(h * r, 1), vals(r * h, 2), vals(r * n, 3));
    let mut a = vec![q(0, 1); h * h * n];
    for i in 0..h {
        for j in 0..h {
            for k in 0..n {
                for rr in 0..r {
                    a[(i * h + j) * n + k] += &p[i * r + rr] * &qq[rr * h + j] * &s[rr * n + k];
                }
            }
        }
    }
    let common = |extra: Vec<(&'static str, Vec<usize>, Vec<Rational>)>| {
        let mut t = vec![("V", vec![h, h], vals(h * h, 4)), ("U", vec![h, n], vals(h * n, 5)), ("b", vec![h], vals(h, 6))];
        t.extend(extra);
        cell("second_order", &t, &[("activation", "identity")])
    };
    let full = common(vec![("A", vec![h, h, n], a)]);
    let cp = common(vec![("A_out", vec![h, r], p), ("A_h", vec![r, h], qq), ("A_x", vec![r, n], s)]);
    let x = vals(6 * n, 9);
    let run = |c: Cell| StackPlan::<Rational>::new(&stack(vec![c])).unwrap().run_one(&x, 6, &Starts::default(), false, &Control::new()).unwrap().0;
    assert_eq!(run(full), run(cp));
}

#[test]
fn simple_layer_and_one_layer_mlp_match_the_simple_rnn_engine() {
    let (h, n) = (3, 2);
    let (v, w, b) = (vals(h * h, 1), vals(h * n, 2), vals(h, 3));
    let simple = cell("simple_rnn", &[("V", vec![h, h], v.clone()), ("W", vec![h, n], w.clone()), ("b", vec![h], b.clone())], &[("activation", "slu")]);
    let mut wv = Vec::new();
    for i in 0..h {
        wv.extend_from_slice(&w[i * n..(i + 1) * n]);
        wv.extend_from_slice(&v[i * h..(i + 1) * h]);
    }
    let mlp = cell("mlp", &[("weight_0", vec![h, n + h], wv), ("bias_0", vec![h], b.clone())], &[("activation_0", "slu")]);
    let x = vals(10 * n, 4);
    let run = |c: Cell| StackPlan::<Rational>::new(&stack(vec![c])).unwrap().run_one(&x, 10, &Starts::default(), false, &Control::new()).unwrap().0;
    let Cell::Simple(net) = simple.clone() else { unreachable!() };
    let reference = run_exact(&ExactPlan::new(&net, DEFAULT_MAX_BITS).unwrap(), ExactPlan::new(&net, DEFAULT_MAX_BITS).unwrap().h0, &x, 10, &Control::new()).unwrap();
    let flat: Vec<Rational> = reference.states.iter().flat_map(|s| s.to_rationals()).collect();
    assert_eq!(run(simple), flat);
    assert_eq!(run(mlp), flat);
}

#[test]
fn residual_cell_adds_the_old_state() {
    let c = cell("residual", &[("V", vec![1, 1], vec![q(0, 1)]), ("W", vec![1, 1], vec![q(1, 1)])], &[("activation", "sign")]);
    let plan = StackPlan::<Rational>::new(&stack(vec![c])).unwrap();
    let (h, _, _) = plan.run_one(&[q(3, 1), q(-1, 2), q(0, 1), q(1, 4)], 4, &Starts::default(), false, &Control::new()).unwrap();
    assert_eq!(h, vec![q(0, 1), q(1, 1), q(0, 1), q(0, 1), q(1, 1)]);
}

#[test]
fn doubling_lstm_can_double_the_cell() {
    // saturated gates: i = 0 and f1 = f2 = 1 (positive biases) → c doubles every step
    let mut b = vec![q(0, 1); 5];
    b[0] = q(-1, 1);
    b[1] = q(1, 1);
    b[2] = q(1, 1);
    b[4] = q(1, 1);
    let c = cell(
        "doubling_lstm",
        &[("weight_ih", vec![5, 1], vec![q(0, 1); 5]), ("weight_hh", vec![5, 1], vec![q(0, 1); 5]), ("bias_ih", vec![5], b), ("bias_hh", vec![5], vec![q(0, 1); 5])],
        &[("gate", "sat_sigmoid"), ("candidate", "sign"), ("output", "identity")],
    );
    let plan = StackPlan::<Rational>::new(&stack(vec![c])).unwrap();
    let starts = Starts { h0: None, c0: Some(vec![vec![q(3, 1)]]) };
    let (_, c, _) = plan.run_one(&vec![q(0, 1); 4], 4, &starts, false, &Control::new()).unwrap();
    assert_eq!(c, vec![q(3, 1), q(6, 1), q(12, 1), q(24, 1), q(48, 1)]);
}

#[test]
fn bad_start_shapes_and_chaining_are_reported() {
    let net = stack(vec![lstm(2, 1, 1, &[])]);
    let plan = StackPlan::<f64>::new(&net).unwrap();
    let starts = Starts { h0: Some(vec![vec![0.0; 3]]), c0: Some(vec![vec![0.0; 2], vec![0.0; 2]]) };
    match plan.check_starts(&starts, 2) {
        Err(SimError::InvalidInput(p)) => assert_eq!(p.len(), 2, "{p:?}"),
        other => panic!("{other:?}"),
    }
    match Stack::new("stacked", vec![lstm(2, 1, 1, &[]), lstm(3, 1, 1, &[])]) {
        Err(SimError::InvalidNetwork(p)) => assert!(p[0].contains("layer 1 (lstm) takes inputs of size 1"), "{p:?}"),
        other => panic!("{other:?}"),
    }
}
