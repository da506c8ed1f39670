//! Lemma 4.4 (lecture notes, seed 001, §4.2.1): a recurrence whose step is a two-layer ReLU
//! network, h_t = U·ReLU(V h_{t−1} + W x_t + b), is one simple ReLU RNN.
//!
//! The trick of the lemma: cut the step between its two layers and carry the second layer U
//! over to the next tick, where it merges with the first layer (V·U is linear). The state
//! g_t = ReLU(V h_{t−1} + W x_t + b) of the new RNN is the hidden layer of the old step, and
//! the old state is recovered as h_t = U g_t. One extra unit carries the start state s
//! through the first tick (eqs. 4.19–4.21).

use crate::error::{SimError, SimResult};
use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::{Linear, SimpleRnn};
use malachite::Rational;


/// A length-preserving recurrence whose step is a two-layer ReLU network (eqs. 4.14–4.18 of
/// the lecture notes, seed 001, Lemma 4.4):
///
///   h_0 = s,   h_t = U·ReLU(V h_{t−1} + W x_t + b),   y_t = out_w h_t + out_b.
///
/// Shapes: s (d), U (d, k), V (k, d), W (k, d_in), b (k), out_w (d_out, d), out_b (d_out).
#[derive(Debug, Clone, PartialEq)]
pub struct TwoLayerStep {
    /// f.s, the start state (length d)
    pub s: Vec<Rational>,
    /// second layer, (d, k), no bias
    pub u: RatMatrix,
    /// first layer on the state, (k, d)
    pub v: RatMatrix,
    /// first layer on the input, (k, d_in)
    pub w: RatMatrix,
    /// first-layer bias (k)
    pub b: Vec<Rational>,
    /// affine output layer f.out, (d_out, d)
    pub out_w: RatMatrix,
    /// output bias (d_out)
    pub out_b: Vec<Rational>,
}

impl TwoLayerStep {
    /// Every shape problem at once (empty when the shapes fit). d = |s|, k = |b|.
    pub fn shape_problems(&self) -> Vec<String> {
        let (d, k) = (self.s.len(), self.b.len());
        let mut p = Vec::new();
        let mut want = |name: &str, m: &RatMatrix, rows: usize, cols: Option<usize>| {
            if m.rows != rows || cols.is_some_and(|c| m.cols != c) {
                let c = cols.map_or("d_in".to_string(), |c| c.to_string());
                p.push(format!("{name} must have shape ({rows}, {c}), got ({}, {})", m.rows, m.cols));
            }
        };
        want("U", &self.u, d, Some(k));
        want("V", &self.v, k, Some(d));
        want("W", &self.w, k, None);
        want("out_w", &self.out_w, self.out_w.rows, Some(d));
        if self.out_b.len() != self.out_w.rows {
            p.push(format!("out_b must have length {} (rows of out_w), got {}", self.out_w.rows, self.out_b.len()));
        }
        p
    }

    /// The step f itself, exactly: U·ReLU(V h + W x + b).
    pub fn step(&self, h: &[Rational], x: &[Rational]) -> Vec<Rational> {
        let vh = self.v.matvec(h);
        let wx = self.w.matvec(x);
        let g: Vec<Rational> = (0..self.b.len())
            .map(|i| {
                let p = &vh[i] + &wx[i] + &self.b[i];
                if p > 0u32 { p } else { Rational::from(0) }
            })
            .collect();
        self.u.matvec(&g)
    }

    /// The output f.out(h) = out_w h + out_b.
    pub fn output(&self, h: &[Rational]) -> Vec<Rational> {
        self.out_w.matvec(h).into_iter().zip(&self.out_b).map(|(a, c)| a + c).collect()
    }
}

/// Lemma 4.4 (lecture notes, seed 001; eqs. 4.19–4.21): the simple RNN g with hidden size
/// k + 1 that equals the two-layer recurrence f of `step` at every tick t ≥ 0:
///
/// ```text
///   h_0 = [1; 0_k]
///   h_t = σ( [[0, 0], [V s, V U]] h_{t−1} + [0; W] x_t + [0; b] )          t ≥ 1
///   y_t = out_w · [s U] · h_t + out_b
/// ```
///
/// Why it is exact: unit 0 has a zero row, zero input weights and zero bias, so
/// h_t[0] = σ(0) = 0 for t ≥ 1 and h_0[0] = 1. Write ĥ = s·h[0] + U·h[1..] (see
/// [`decode_state`]). Then ĥ_0 = s, and for t ≥ 1, h_t[1..] = σ(V ĥ_{t−1} + W x_t + b), so
/// ĥ_t = U·ReLU(V ĥ_{t−1} + W x_t + b) when σ agrees with ReLU on those pre-activations:
/// ĥ_t is f's state at every t. The readout out_w·[s U] = out_w·ĥ + out_b is therefore f's
/// output at every t, including t = 0. (The notes' readout out_w·[0 U] is right for t ≥ 1
/// only; at t = 0 it would read out_w·0 instead of out_w·s. Carrying s through the readout's
/// column 0 fixes that and changes nothing later, since h_t[0] = 0 for t ≥ 1.)
///
/// `activation` is [`Activation::Relu`] for the lemma as stated. [`Activation::Slu`] or
/// [`Activation::Step`] are accepted when the caller guarantees that every pre-activation of
/// the first layer stays where they equal ReLU: at most 1 for slu; in (−∞, 0] ∪ {1} for step
/// (e.g. Minsky's DFA construction, whose pre-activations are −1, 0 or 1). Other activations
/// fail with `Unsupported`; bad shapes fail with `InvalidNetwork` listing every problem.
/// All products are sparse: the cost is linear in the nonzeros of V·U.
pub fn two_layer_to_rnn(step: &TwoLayerStep, activation: Activation) -> SimResult<SimpleRnn> {
    if !matches!(activation, Activation::Relu | Activation::Slu | Activation::Step) {
        return Err(SimError::Unsupported(format!(
            "Lemma 4.4 builds a relu network (slu or step when the pre-activations allow it), not {}",
            activation.name()
        )));
    }
    let problems = step.shape_problems();
    if !problems.is_empty() {
        return Err(SimError::InvalidNetwork(problems));
    }
    let (k, d_in) = (step.b.len(), step.w.cols);
    let n = k + 1;
    let mut v = RatMatrix::zeros(n, n);
    for (i, x) in step.v.matvec(&step.s).into_iter().enumerate() {
        v.set(i + 1, 0, x);
    }
    for (i, j, x) in step.v.matmul(&step.u).triples() {
        v.set(i + 1, j + 1, x.clone());
    }
    let w = RatMatrix::from_triples(n, d_in, step.w.triples().map(|(i, j, x)| (i + 1, j, x.clone())));
    let mut b = vec![Rational::from(0); n];
    b[1..].clone_from_slice(&step.b);
    let mut h0 = vec![Rational::from(0); n];
    h0[0] = Rational::from(1);
    let ro = Linear { w: readout_matrix(step), b: step.out_b.clone() };
    SimpleRnn::new(v, w, b, Some(h0), activation, Some(ro))
}

/// out_w · [s U], shape (d_out, k + 1).
fn readout_matrix(step: &TwoLayerStep) -> RatMatrix {
    let k = step.b.len();
    let mut m = RatMatrix::zeros(step.out_w.rows, k + 1);
    let os = step.out_w.matvec(&step.s);
    for (o, x) in os.into_iter().enumerate() {
        m.set(o, 0, x);
    }
    for (o, j, x) in step.out_w.matmul(&step.u).triples() {
        m.set(o, j + 1, x.clone());
    }
    m
}

/// The original recurrence's state encoded by a hidden state h of the Lemma 4.4 network:
/// ĥ = s·h[0] + U·h[1..] (see [`two_layer_to_rnn`]). `h` must have length k + 1 (entries
/// past it are ignored, missing ones count as 0).
pub fn decode_state(step: &TwoLayerStep, h: &[Rational]) -> Vec<Rational> {
    let zero = Rational::from(0);
    let h0 = h.first().unwrap_or(&zero);
    let g = h.get(1..).unwrap_or(&[]);
    let ug = step.u.matvec(g);
    step.s.iter().zip(ug).map(|(s, x)| if *h0 == 0u32 { x } else { s * h0 + x }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::cancel::Control;
    use crate::sim::exact_engine::{ExactPlan, DEFAULT_MAX_BITS};
    use crate::sim::run::run_exact;

    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
        /// A small random rational p/q, p in −4..=4, q in 1..=4, zero a third of the time.
        fn rational(&mut self) -> Rational {
            if self.below(3) == 0 {
                return Rational::from(0);
            }
            Rational::from(self.below(9) as i64 - 4) / Rational::from(self.below(4) as i64 + 1)
        }
        fn matrix(&mut self, rows: usize, cols: usize) -> RatMatrix {
            RatMatrix::from_dense(rows, cols, (0..rows * cols).map(|_| self.rational()).collect())
        }
        fn vector(&mut self, n: usize) -> Vec<Rational> {
            (0..n).map(|_| self.rational()).collect()
        }
    }

    fn random_step(rng: &mut Lcg) -> TwoLayerStep {
        let (d, k, d_in, d_out) = (1 + rng.below(4) as usize, rng.below(6) as usize, 1 + rng.below(3) as usize, 1 + rng.below(2) as usize);
        TwoLayerStep {
            s: rng.vector(d),
            u: rng.matrix(d, k),
            v: rng.matrix(k, d),
            w: rng.matrix(k, d_in),
            b: rng.vector(k),
            out_w: rng.matrix(d_out, d),
            out_b: rng.vector(d_out),
        }
    }

    #[test]
    fn lemma_4_4_equals_the_two_layer_recurrence_at_every_tick() {
        let mut rng = Lcg(2024);
        for case in 0..300 {
            let step = random_step(&mut rng);
            let net = two_layer_to_rnn(&step, Activation::Relu).unwrap();
            assert_eq!(net.hidden_size(), step.b.len() + 1);
            let t_max = 12;
            let xs: Vec<Rational> = (0..t_max * step.w.cols).map(|_| rng.rational()).collect();
            let plan = ExactPlan::new(&net, DEFAULT_MAX_BITS).unwrap();
            let run = run_exact(&plan, plan.h0.clone(), &xs, t_max, &Control::new()).unwrap();
            let mut h = step.s.clone();
            for t in 0..=t_max {
                if t > 0 {
                    h = step.step(&h, &xs[(t - 1) * step.w.cols..t * step.w.cols]);
                }
                let state = run.states[t].to_rationals();
                assert_eq!(run.outputs[t], step.output(&h), "case {case}, t = {t}");
                assert_eq!(decode_state(&step, &state), h, "case {case}, t = {t}");
                assert_eq!(state[0], Rational::from(u32::from(t == 0)), "unit 0 is 1 only at t = 0");
            }
        }
    }

    #[test]
    fn shape_problems_are_all_reported_and_bad_activations_refused() {
        let mut rng = Lcg(7);
        let mut step = random_step(&mut rng);
        while step.b.is_empty() {
            step = random_step(&mut rng);
        }
        let mut bad = step.clone();
        bad.u = RatMatrix::zeros(bad.u.rows + 1, bad.u.cols);
        bad.v = RatMatrix::zeros(bad.v.rows, bad.v.cols + 2);
        bad.w = RatMatrix::zeros(bad.w.rows + 1, 1);
        bad.out_b.push(Rational::from(1));
        match two_layer_to_rnn(&bad, Activation::Relu) {
            Err(SimError::InvalidNetwork(p)) => assert_eq!(p.len(), 4, "{p:?}"),
            other => panic!("{other:?}"),
        }
        for act in [Activation::Tanh, Activation::Sigmoid, Activation::Identity] {
            assert!(matches!(two_layer_to_rnn(&step, act), Err(SimError::Unsupported(_))));
        }
        assert!(two_layer_to_rnn(&step, Activation::Slu).is_ok());
    }

    #[test]
    fn the_notes_readout_would_be_wrong_at_t0() {
        // s = 1, f.out = identity: y_0 must be 1; out_w·[0 U]·h_0 would be 0.
        let one = || Rational::from(1);
        let step = TwoLayerStep {
            s: vec![one()],
            u: RatMatrix::from_rows(vec![vec![one()]]),
            v: RatMatrix::from_rows(vec![vec![one()]]),
            w: RatMatrix::from_rows(vec![vec![one()]]),
            b: vec![Rational::from(0)],
            out_w: RatMatrix::from_rows(vec![vec![one()]]),
            out_b: vec![Rational::from(0)],
        };
        let net = two_layer_to_rnn(&step, Activation::Relu).unwrap();
        let ro = net.readout.as_ref().unwrap();
        assert_eq!(ro.w.matvec(&net.h0), vec![one()]);
        assert_eq!(decode_state(&step, &net.h0), vec![one()]);
    }
}
