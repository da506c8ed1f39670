//! Running one sequence or a batch of sequences through a prepared network.
//!
//! Batches are parallel over sequences (rayon); each sequence is computed by the same
//! sequential code whatever the thread count, so results are bitwise identical for any
//! `threads`. Sequences shorter than the batch's T (`lengths`) stop at their length: their
//! later states and outputs are zero padding (as PyTorch's pad_packed_sequence) and their
//! final state is the state at their own length.

use crate::error::{SimError, SimResult};
use crate::num::exact_vector::ExactVector;
use crate::num::float::Float;
use crate::sim::cancel::Control;
use crate::sim::exact_engine::{Affine, ExactPlan};
use crate::sim::float_engine::FloatPlan;
use crate::sim::pool::with_pool;
use malachite::Rational;
use rayon::prelude::*;
use std::borrow::Borrow;

/// What a batch run keeps of the steps before the last (`keep=` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// `"all"`: every state, and every output (SimpleRNN) or cell state (LSTM-like top layer)
    All,
    /// `"states"`: every state, not the per-step outputs or cell states (PyTorch's
    /// `output`; half the memory of an LSTM's `"all"`)
    States,
    /// `"final"`: only the final states (and outputs, cell states)
    Final,
}

impl Keep {
    /// The Python name's value: "all", "states" or "final".
    pub fn parse(name: &str) -> SimResult<Keep> {
        match name {
            "all" => Ok(Keep::All),
            "states" => Ok(Keep::States),
            "final" => Ok(Keep::Final),
            other => Err(SimError::InvalidInput(vec![format!("keep must be \"all\", \"states\" or \"final\", got {other:?}")])),
        }
    }

    /// Every step's state is kept.
    pub fn states(self) -> bool {
        self != Keep::Final
    }

    /// Every step's output (SimpleRNN) or cell state (LSTM-like top layer) is kept.
    pub fn extras(self) -> bool {
        self == Keep::All
    }
}

/// Shape and options of a batch run.
#[derive(Debug, Clone)]
pub struct BatchSpec {
    pub batch: usize,
    pub steps: usize,
    pub lengths: Option<Vec<usize>>,
    /// what is kept besides the final states (`keep=`, [`Keep`])
    pub keep: Keep,
    pub threads: Option<usize>,
    /// fused product-sums (`fma=True`): every acc + w·z of the affine maps rounded once
    pub fma: bool,
}

impl BatchSpec {
    /// Every problem with `lengths` at once.
    pub fn validate(&self) -> SimResult<()> {
        let Some(l) = &self.lengths else { return Ok(()) };
        let mut p = Vec::new();
        if l.len() != self.batch {
            p.push(format!("lengths has {} entries but the batch has {} sequences", l.len(), self.batch));
        }
        for (i, &n) in l.iter().enumerate().filter(|(_, &n)| n > self.steps).take(5) {
            p.push(format!("lengths[{i}] = {n} is longer than the input's {} steps", self.steps));
        }
        if p.is_empty() { Ok(()) } else { Err(SimError::InvalidInput(p)) }
    }

    pub fn length(&self, b: usize) -> usize {
        self.lengths.as_ref().map_or(self.steps, |l| l[b])
    }
}

/// Exact run of one sequence: h_0..h_T and y_0..y_T.
#[derive(Debug, Clone)]
pub struct ExactRun {
    pub states: Vec<ExactVector>,
    pub outputs: Vec<Vec<Rational>>,
}

/// Feeds input rows one by one, reusing W x + b while the input row repeats. The plan is
/// borrowed (`&ExactPlan`, batch runs) or owned (`ExactPlan`, tickers).
pub struct ExactStepper<P: Borrow<ExactPlan>> {
    pub plan: P,
    pub state: ExactVector,
    last: Option<(Vec<Rational>, Affine)>,
}

impl<P: Borrow<ExactPlan>> ExactStepper<P> {
    pub fn new(plan: P, h0: ExactVector) -> Self {
        ExactStepper { plan, state: h0, last: None }
    }

    pub fn step(&mut self, x: &[Rational]) -> SimResult<()> {
        let plan = self.plan.borrow();
        let reuse = matches!(&self.last, Some((row, _)) if row.as_slice() == x);
        if !reuse {
            self.last = Some((x.to_vec(), plan.affine(x)));
        }
        let c = &self.last.as_ref().expect("set above").1;
        self.state = plan.tick(&self.state, c)?;
        Ok(())
    }
}

pub fn run_exact(plan: &ExactPlan, h0: ExactVector, xs: &[Rational], steps: usize, ctl: &Control) -> SimResult<ExactRun> {
    let n = plan.n_in;
    let mut st = ExactStepper::new(plan, h0);
    let mut states = vec![st.state.clone()];
    let mut outputs = vec![plan.output(&st.state)];
    for t in 0..steps {
        ctl.check()?;
        st.step(&xs[t * n..(t + 1) * n])?;
        outputs.push(plan.output(&st.state));
        states.push(st.state.clone());
    }
    Ok(ExactRun { states, outputs })
}

/// Float run of one sequence: flat (T+1)·d states and (T+1)·out outputs (`fma`: fused
/// product-sums, see `float_engine`). The builtin formats run it as a batch of one on the
/// lock-step kernel (`float_batch`, 3–4× faster than [`run_float_per_sequence`] on this
/// machine), custom formats by [`run_float_per_sequence`]; both give the same bits.
pub fn run_float<F: Float>(plan: &FloatPlan<F>, h0: &[F], xs: &[F], steps: usize, fma: bool, ctl: &Control) -> SimResult<(Vec<F>, Vec<F>)> {
    let spec = BatchSpec { batch: 1, steps, lengths: None, keep: Keep::All, threads: None, fma };
    let Some(batch) = crate::sim::float_batch::try_lockstep(plan, xs, Some(h0), &spec, ctl) else {
        return run_float_per_sequence(plan, h0, xs, steps, fma, ctl);
    };
    let batch = batch?;
    let mut states = h0.to_vec();
    states.extend(batch.states);
    let mut outputs = vec![F::zero(); plan.n_out];
    plan.output(h0, &mut outputs, fma);
    outputs.extend(batch.outputs);
    Ok((states, outputs))
}

/// [`run_float`] tick by tick with `FloatPlan::tick` (the reference the lock-step kernel
/// is tested against; custom formats run this way).
pub fn run_float_per_sequence<F: Float>(plan: &FloatPlan<F>, h0: &[F], xs: &[F], steps: usize, fma: bool, ctl: &Control) -> SimResult<(Vec<F>, Vec<F>)> {
    let (d, n, o) = (plan.d, plan.n_in, plan.n_out);
    let mut states = vec![F::zero(); (steps + 1) * d];
    let mut outputs = vec![F::zero(); (steps + 1) * o];
    states[..d].copy_from_slice(h0);
    plan.output(h0, &mut outputs[..o], fma);
    for t in 0..steps {
        ctl.check()?;
        let (prev, next) = states.split_at_mut((t + 1) * d);
        plan.tick(&prev[t * d..], &xs[t * n..(t + 1) * n], &mut next[..d], fma);
        plan.output(&next[..d], &mut outputs[(t + 1) * o..(t + 2) * o], fma);
    }
    Ok((states, outputs))
}

/// Results of a float batch, flat row-major: states (B, T, d), final (B, d), outputs (B, T, out),
/// final_outputs (B, out). `states`/`outputs` are empty when only the final state is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct FloatBatch<F> {
    pub states: Vec<F>,
    pub final_states: Vec<F>,
    pub outputs: Vec<F>,
    pub final_outputs: Vec<F>,
}

struct SeqOut<F> {
    states: Vec<F>,
    last: Vec<F>,
    outputs: Vec<F>,
    last_out: Vec<F>,
}

fn float_sequence<F: Float>(plan: &FloatPlan<F>, x: &[F], h0: &[F], len: usize, spec: &BatchSpec, ctl: &Control) -> SimResult<SeqOut<F>> {
    let (d, n, o, t_max) = (plan.d, plan.n_in, plan.n_out, spec.steps);
    let (keep, outs) = (spec.keep.states(), spec.keep.extras());
    let mut states = if keep { vec![F::zero(); t_max * d] } else { Vec::new() };
    let mut outputs = if outs { vec![F::zero(); t_max * o] } else { Vec::new() };
    let mut h = h0.to_vec();
    let mut next = vec![F::zero(); d];
    let mut y = vec![F::zero(); o];
    for t in 0..len {
        if t % 64 == 0 {
            ctl.check()?;
        }
        plan.tick(&h, &x[t * n..(t + 1) * n], &mut next, spec.fma);
        std::mem::swap(&mut h, &mut next);
        if keep {
            states[t * d..(t + 1) * d].copy_from_slice(&h);
        }
        if outs {
            plan.output(&h, &mut outputs[t * o..(t + 1) * o], spec.fma);
        }
    }
    plan.output(&h, &mut y, spec.fma);
    ctl.advance(1);
    Ok(SeqOut { states, last: h, outputs, last_out: y })
}

/// Runs B sequences. `xs` is (B, T, n_in) flat; `h0` is (B, d) flat or None. The builtin
/// formats use the lock-step kernel (float_batch.rs), custom formats
/// [`run_batch_float_per_sequence`]; both give the same bits.
pub fn run_batch_float<F: Float>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> SimResult<FloatBatch<F>> {
    match crate::sim::float_batch::try_lockstep(plan, xs, h0, spec, ctl) {
        Some(r) => r,
        None => run_batch_float_per_sequence(plan, xs, h0, spec, ctl),
    }
}

/// Runs B sequences in parallel over sequences, each by `FloatPlan::tick` (the reference
/// the lock-step kernel is tested against).
pub fn run_batch_float_per_sequence<F: Float>(plan: &FloatPlan<F>, xs: &[F], h0: Option<&[F]>, spec: &BatchSpec, ctl: &Control) -> SimResult<FloatBatch<F>> {
    spec.validate()?;
    let (d, n) = (plan.d, plan.n_in);
    let per = spec.steps * n;
    let seqs: Vec<SeqOut<F>> = with_pool(spec.threads, || {
        (0..spec.batch)
            .into_par_iter()
            .map(|b| {
                let start = h0.map_or(plan.h0.as_slice(), |h| &h[b * d..(b + 1) * d]);
                float_sequence(plan, &xs[b * per..(b + 1) * per], start, spec.length(b), spec, ctl)
            })
            .collect::<SimResult<Vec<_>>>()
    })??;
    let mut out = FloatBatch { states: Vec::new(), final_states: Vec::new(), outputs: Vec::new(), final_outputs: Vec::new() };
    for s in seqs {
        out.states.extend(s.states);
        out.final_states.extend(s.last);
        out.outputs.extend(s.outputs);
        out.final_outputs.extend(s.last_out);
    }
    Ok(out)
}

/// Results of an exact batch: per sequence, states h_1..h_T (padded with zeros after its
/// length; empty when only the final state is kept), outputs y_1..y_T, final state and output.
#[derive(Debug, Clone)]
pub struct ExactBatch {
    pub states: Vec<Vec<ExactVector>>,
    pub final_states: Vec<ExactVector>,
    pub outputs: Vec<Vec<Vec<Rational>>>,
    pub final_outputs: Vec<Vec<Rational>>,
}

type ExactSeq = (Vec<ExactVector>, ExactVector, Vec<Vec<Rational>>, Vec<Rational>);

fn exact_sequence(plan: &ExactPlan, x: &[Rational], h0: ExactVector, len: usize, spec: &BatchSpec, ctl: &Control) -> SimResult<ExactSeq> {
    let n = plan.n_in;
    let mut st = ExactStepper::new(plan, h0);
    let (mut states, mut outputs) = (Vec::new(), Vec::new());
    for t in 0..len {
        ctl.check()?;
        st.step(&x[t * n..(t + 1) * n])?;
        if spec.keep.states() {
            states.push(st.state.clone());
        }
        if spec.keep.extras() {
            outputs.push(plan.output(&st.state));
        }
    }
    if spec.keep.states() {
        states.resize(spec.steps, ExactVector::zeros(plan.d));
    }
    if spec.keep.extras() {
        let zero_out = vec![Rational::from(0); plan.readout.as_ref().map_or(0, |r| r.1.len())];
        outputs.resize(spec.steps, zero_out);
    }
    let y = plan.output(&st.state);
    ctl.advance(1);
    Ok((states, st.state, outputs, y))
}

/// Exact batch, parallel over sequences.
pub fn run_batch_exact(plan: &ExactPlan, xs: &[Rational], h0: Option<Vec<ExactVector>>, spec: &BatchSpec, ctl: &Control) -> SimResult<ExactBatch> {
    spec.validate()?;
    let per = spec.steps * plan.n_in;
    let seqs: Vec<ExactSeq> = with_pool(spec.threads, || {
        (0..spec.batch)
            .into_par_iter()
            .map(|b| {
                let start = h0.as_ref().map_or_else(|| plan.h0.clone(), |h| h[b].clone());
                exact_sequence(plan, &xs[b * per..(b + 1) * per], start, spec.length(b), spec, ctl)
            })
            .collect::<SimResult<Vec<_>>>()
    })??;
    let mut out = ExactBatch { states: Vec::new(), final_states: Vec::new(), outputs: Vec::new(), final_outputs: Vec::new() };
    for (s, f, o, y) in seqs {
        out.states.push(s);
        out.final_states.push(f);
        out.outputs.push(o);
        out.final_outputs.push(y);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::activation::Activation;
    use crate::net::matrix::RatMatrix;
    use crate::net::simple_rnn::{Linear, SimpleRnn};

    fn random_net(d: usize, n: usize, seed: u64, act: Activation) -> SimpleRnn {
        let mut s = seed;
        let mut next = move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            Rational::from(((s >> 33) % 9) as i64 - 4) / Rational::from(4)
        };
        let v = RatMatrix::from_dense(d, d, (0..d * d).map(|_| next()).collect());
        let w = RatMatrix::from_dense(d, n, (0..d * n).map(|_| next()).collect());
        let b = (0..d).map(|_| next()).collect();
        let ro = Linear { w: RatMatrix::from_dense(1, d, (0..d).map(|_| next()).collect()), b: vec![next()] };
        SimpleRnn::new(v, w, b, None, act, Some(ro)).unwrap()
    }

    #[test]
    fn batch_is_bitwise_identical_for_any_thread_count() {
        let net = random_net(8, 3, 7, Activation::Tanh);
        let plan = FloatPlan::<f32>::new(&net);
        let (bsz, t) = (37, 50);
        let xs: Vec<f32> = (0..bsz * t * 3).map(|i| ((i * 7919) % 13) as f32 / 13.0 - 0.5).collect();
        let lengths: Vec<usize> = (0..bsz).map(|b| (b * 3) % (t + 1)).collect();
        let run = |threads| {
            let spec = BatchSpec { batch: bsz, steps: t, lengths: Some(lengths.clone()), keep: Keep::All, threads: Some(threads), fma: false };
            run_batch_float(&plan, &xs, None, &spec, &Control::new()).unwrap()
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(3));
        // a sequence's final state equals its own single run at its length
        let b = 5;
        let (states, _) = run_float_per_sequence(&plan, &plan.h0, &xs[b * t * 3..], lengths[b], false, &Control::new()).unwrap();
        assert_eq!(&one.final_states[b * 8..(b + 1) * 8], &states[lengths[b] * 8..]);
    }

    /// `run_float` (a batch of one on the lock-step kernel) against the tick-by-tick
    /// reference, bit for bit: builtin formats, with and without FMA, a given h0, T = 0.
    #[test]
    fn single_run_on_the_kernel_equals_the_per_sequence_run() {
        fn check<F: Float>(act: Activation) {
            for (d, n, t, seed) in [(8, 3, 40, 1), (37, 5, 9, 2), (3, 1, 0, 3)] {
                let plan = FloatPlan::<F>::new(&random_net(d, n, seed, act));
                let xs: Vec<F> = (0..t * n).map(|i| F::from_f64_rounded(((i * 7919) % 13) as f64 / 6.5 - 1.0)).collect();
                let h0: Vec<F> = (0..d).map(|i| F::from_f64_rounded(i as f64 / 8.0 - 0.3)).collect();
                for fma in [false, true] {
                    let fast = run_float(&plan, &h0, &xs, t, fma, &Control::new()).unwrap();
                    let slow = run_float_per_sequence(&plan, &h0, &xs, t, fma, &Control::new()).unwrap();
                    let bits = |v: &[F]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
                    assert_eq!((bits(&fast.0), bits(&fast.1)), (bits(&slow.0), bits(&slow.1)), "d={d} t={t} fma={fma}");
                    assert_eq!(fast.0.len(), (t + 1) * d);
                }
            }
        }
        for act in [Activation::Tanh, Activation::Sigmoid, Activation::Relu] {
            check::<f64>(act);
            check::<f32>(act);
            check::<half::f16>(act);
            check::<half::bf16>(act);
        }
    }

    #[test]
    fn exact_batch_matches_single_runs_and_bad_lengths_are_reported() {
        let net = random_net(5, 2, 3, Activation::Relu);
        let plan = ExactPlan::new(&net, 1 << 20).unwrap();
        let (bsz, t) = (6, 12);
        let xs: Vec<Rational> = (0..bsz * t * 2).map(|i| Rational::from((i % 5) as i64 - 2) / Rational::from(3)).collect();
        let spec = BatchSpec { batch: bsz, steps: t, lengths: None, keep: Keep::All, threads: Some(2), fma: false };
        let batch = run_batch_exact(&plan, &xs, None, &spec, &Control::new()).unwrap();
        for b in 0..bsz {
            let single = run_exact(&plan, plan.h0.clone(), &xs[b * t * 2..(b + 1) * t * 2], t, &Control::new()).unwrap();
            assert_eq!(batch.states[b].iter().map(|s| s.to_rationals()).collect::<Vec<_>>(),
                       single.states[1..].iter().map(|s| s.to_rationals()).collect::<Vec<_>>());
            assert_eq!(batch.final_outputs[b], single.outputs[t]);
        }
        let bad = BatchSpec { batch: 2, steps: 3, lengths: Some(vec![4, 1, 9]), keep: Keep::All, threads: None, fma: false };
        match bad.validate() {
            Err(SimError::InvalidInput(p)) => assert_eq!(p.len(), 3),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cancellation_stops_a_run() {
        let net = random_net(4, 1, 1, Activation::Relu);
        let plan = ExactPlan::new(&net, 1 << 20).unwrap();
        let ctl = Control::new();
        ctl.cancel();
        let xs = vec![Rational::from(1); 10];
        assert!(matches!(run_exact(&plan, plan.h0.clone(), &xs, 10, &ctl), Err(SimError::Interrupted)));
    }
}
