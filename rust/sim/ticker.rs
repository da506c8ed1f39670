//! One sequence, one tick at a time, in any number format: what traces, machine runs and
//! precision comparisons drive. The arithmetic is the engines' own (`ExactPlan::tick`,
//! `FloatPlan::tick`), so a ticker's states are bit for bit those of `run` and `run_batch`.

use crate::error::{SimError, SimResult};
use crate::net::simple_rnn::SimpleRnn;
use crate::num::dtype::Dtype;
use crate::num::float::Float;
use crate::sim::dispatch::{dispatch_float, in_format_scope, FloatTask};
use crate::sim::exact_engine::ExactPlan;
use crate::sim::run::ExactStepper;
use crate::sim::float_engine::FloatPlan;
use malachite::Rational;

/// A network's state advanced tick by tick.
pub trait NetTicker: Send {
    /// h ← σ(V h + W x + b).
    fn tick(&mut self, x: &[Rational]) -> SimResult<()>;
    /// The state's exact values (a float state's values are exactly its binary values).
    fn state(&self) -> Vec<Rational>;
    /// The state as f64 approximations (cheap; for display and thresholds).
    fn state_f64(&self) -> Vec<f64>;
    /// The readout y = w h + c, approximately (exact runs: the exact value's nearest f64,
    /// from the numerators' top bits, without a gcd).
    fn output_f64(&self) -> Vec<f64>;
    /// The readout's exact value.
    fn output(&self) -> Vec<Rational>;
    /// Largest bit size of the exact representation (0 for floats).
    fn bits(&self) -> u64;
    fn dtype(&self) -> Dtype;
}

/// A ticker for `net` in `dtype` starting from the network's h0.
pub fn ticker(net: &SimpleRnn, dtype: Dtype, max_bits: u64) -> SimResult<Box<dyn NetTicker>> {
    match dispatch_float(dtype, MakeFloat { net, dtype }) {
        Some(t) => t,
        None => {
            let plan = ExactPlan::new(net, max_bits)?;
            let h0 = plan.h0.clone();
            Ok(Box::new(ExactTicker(ExactStepper::new(plan, h0))))
        }
    }
}

struct MakeFloat<'a> {
    net: &'a SimpleRnn,
    dtype: Dtype,
}

impl FloatTask for MakeFloat<'_> {
    type Output = SimResult<Box<dyn NetTicker>>;
    fn run<F: Float>(self) -> Self::Output {
        let plan = FloatPlan::<F>::try_new(self.net)?;
        let h = plan.h0.clone();
        let next = vec![F::zero(); plan.d];
        Ok(Box::new(FloatTicker { plan, h, next, x: Vec::new(), dtype: self.dtype }))
    }
}

pub struct ExactTicker(ExactStepper<ExactPlan>);

impl NetTicker for ExactTicker {
    fn tick(&mut self, x: &[Rational]) -> SimResult<()> {
        let n_in = self.0.plan.n_in;
        if x.len() != n_in {
            return Err(SimError::invalid_input(format!("an input row of {} values, expected {n_in}", x.len())));
        }
        self.0.step(x)
    }
    fn state(&self) -> Vec<Rational> {
        self.0.state.to_rationals()
    }
    fn state_f64(&self) -> Vec<f64> {
        (0..self.0.state.len()).map(|i| self.0.state.approx(i)).collect()
    }
    fn output_f64(&self) -> Vec<f64> {
        self.0.plan.output_approx(&self.0.state)
    }
    fn output(&self) -> Vec<Rational> {
        self.0.plan.output(&self.0.state)
    }
    fn bits(&self) -> u64 {
        self.0.state.max_bits()
    }
    fn dtype(&self) -> Dtype {
        Dtype::Exact
    }
}

pub struct FloatTicker<F: Float> {
    plan: FloatPlan<F>,
    h: Vec<F>,
    next: Vec<F>,
    x: Vec<F>,
    dtype: Dtype,
}

fn exact_of<F: Float>(v: F) -> Rational {
    // NaN and infinities have no exact value: shown as 0 by `state`, flagged by `state_f64`
    v.to_rational().unwrap_or_else(|| Rational::from(0))
}

impl<F: Float> NetTicker for FloatTicker<F> {
    fn tick(&mut self, x: &[Rational]) -> SimResult<()> {
        if x.len() != self.plan.n_in {
            return Err(SimError::invalid_input(format!("an input row of {} values, expected {}", x.len(), self.plan.n_in)));
        }
        self.x.clear();
        // a custom format's inputs are rounded to it: its scope is re-entered here
        in_format_scope(self.dtype, || self.x.extend(x.iter().map(F::from_rational)));
        self.plan.tick(&self.h, &self.x, &mut self.next, false);
        std::mem::swap(&mut self.h, &mut self.next);
        Ok(())
    }
    fn state(&self) -> Vec<Rational> {
        self.h.iter().map(|&v| exact_of(v)).collect()
    }
    fn state_f64(&self) -> Vec<f64> {
        self.h.iter().map(|v| v.to_f64()).collect()
    }
    fn output_f64(&self) -> Vec<f64> {
        let mut y = vec![F::zero(); self.plan.n_out];
        self.plan.output(&self.h, &mut y, false);
        y.iter().map(|v| v.to_f64()).collect()
    }
    fn output(&self) -> Vec<Rational> {
        let mut y = vec![F::zero(); self.plan.n_out];
        self.plan.output(&self.h, &mut y, false);
        y.into_iter().map(exact_of).collect()
    }
    fn bits(&self) -> u64 {
        0
    }
    fn dtype(&self) -> Dtype {
        self.dtype
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::activation::Activation;
    use crate::net::matrix::RatMatrix;
    use crate::num::custom_float::{with_format, Custom};
    use crate::num::custom_format::CustomFormat;
    use crate::sim::cancel::Control;
    use crate::sim::run::run_float;

    #[test]
    fn a_custom_format_ticker_rounds_its_inputs_like_run() {
        let third = Rational::from(1) / Rational::from(3);
        let net = SimpleRnn::new(
            RatMatrix::from_dense(1, 1, vec![third.clone()]),
            RatMatrix::from_dense(1, 1, vec![Rational::from(1)]),
            vec![Rational::from(0)],
            None,
            Activation::Identity,
            None,
        )
        .unwrap();
        let fmt = CustomFormat::new(60, 15).unwrap();
        let mut t = ticker(&net, Dtype::Custom(fmt), 1 << 20).unwrap();
        let xs = [third.clone(), Rational::from(5) / Rational::from(7), third];
        for x in &xs {
            t.tick(std::slice::from_ref(x)).unwrap();
        }
        let want = with_format(fmt, || {
            let plan = FloatPlan::<Custom>::new(&net);
            let x: Vec<Custom> = xs.iter().map(Custom::from_rational).collect();
            let (states, _) = run_float(&plan, &plan.h0, &x, 3, false, &Control::new()).unwrap();
            states[3].to_rational().unwrap()
        });
        assert_eq!(t.state(), vec![want.clone()]);
        assert!(want.to_denominator() > 1u64 << 59, "the state has 61 significant bits, more than f64's");
    }
}
