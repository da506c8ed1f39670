//! The float engine: h_t = σ(V h_{t−1} + W x_t + b) computed in a binary float format F.
//!
//! Weights are exact rationals rounded once to F (round to nearest even). Each unit is
//! accumulated in this fixed order, every product and every sum rounded to F, no FMA:
//!
//!   acc = b_i;  acc = acc + W_ik·x_k for k = 0..n_in;  acc = acc + V_ij·h_j for j = 0..d;
//!   h_i = σ(acc)
//!
//! and the readout likewise: y_o = c_o, then + w_oj·h_j for j = 0..d. With `fma` (an
//! `fma=True` run) each step acc = acc + w·z is instead acc = fma(w, z, acc), rounded once
//! (`num::fused`), in the same order. The order never
//! depends on the batch, the thread count or the data, so results are bitwise reproducible,
//! and a numpy loop doing the same operations in float16/float32/float64 gets the same bits.

use crate::net::activation::Activation;
use crate::error::{SimError, SimResult};
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::SimpleRnn;
use crate::num::float::Float;

#[derive(Debug, Clone)]
pub struct FloatPlan<F: Float> {
    pub d: usize,
    pub n_in: usize,
    pub n_out: usize,
    pub activation: Activation,
    /// V transposed: vt[j·d + i] = V_ij (so the unit index is contiguous)
    pub vt: Vec<F>,
    /// W transposed: wt[k·d + i] = W_ik
    pub wt: Vec<F>,
    pub b: Vec<F>,
    pub h0: Vec<F>,
    /// row-major (n_out, d) and (n_out)
    pub ro_w: Vec<F>,
    pub ro_b: Vec<F>,
    /// The lock-step kernel's packed weights (`float_batch::Weights`), built on first use.
    pub lockstep: std::sync::OnceLock<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

/// The matrix transposed, dense, rounded to F: out[j·rows + i] = m_ij.
fn transposed_dense<F: Float>(m: &RatMatrix) -> Vec<F> {
    let mut out = vec![F::zero(); m.rows * m.cols];
    for (i, j, v) in m.triples() {
        out[j * m.rows + i] = F::from_rational(v);
    }
    out
}

#[inline(always)]
pub fn activate<F: Float>(a: Activation, x: F) -> F {
    match a {
        Activation::Identity => x,
        Activation::Relu => if x > F::zero() { x } else { F::zero() },
        Activation::Slu => {
            if x > F::one() { F::one() } else if x > F::zero() { x } else { F::zero() }
        }
        Activation::Step => if x > F::zero() { F::one() } else { F::zero() },
        Activation::Tanh => x.tanh(),
        Activation::Sigmoid => x.sigmoid(),
        Activation::ApproxTanh => x.approx_tanh(),
        Activation::ApproxSigmoid => x.approx_sigmoid(),
        Activation::Sign => {
            if x > F::zero() { F::one() } else if x < F::zero() { F::from_f64_exact(-1.0) } else { F::zero() }
        }
        Activation::SatSigmoid => {
            if x > F::zero() { F::one() } else if x < F::zero() { F::zero() } else { F::from_f64_exact(0.5) }
        }
    }
}

/// Largest number of dense float weights a plan allocates (2^28: 1 GiB of f32). The float
/// engine stores V and W densely; a bigger (necessarily sparse) network runs exactly instead.
pub const MAX_FLOAT_WEIGHTS: usize = 1 << 28;

impl<F: Float> crate::sim::plan_cache::Approximable for FloatPlan<F> {
    /// This plan with tanh or σ replaced by its approximation (`approx_activations=True`,
    /// `sim::approx_activation`); other activations unchanged.
    fn approximate(mut self) -> Self {
        self.activation = self.activation.approximate();
        self
    }
}

impl<F: Float> FloatPlan<F> {
    /// Rounds the network's weights to F; `LimitExceeded` past [`MAX_FLOAT_WEIGHTS`].
    pub fn try_new(net: &SimpleRnn) -> SimResult<Self> {
        let d = net.hidden_size();
        let dense = d.saturating_mul(d.saturating_add(net.input_size()).saturating_add(net.output_size()));
        if dense > MAX_FLOAT_WEIGHTS {
            return Err(SimError::LimitExceeded(format!(
                "the float engine stores weights densely: hidden size {d} needs {dense} of them, above \
                 {MAX_FLOAT_WEIGHTS}; run this network with dtype=\"exact\" (sparse)"
            )));
        }
        Ok(Self::new(net))
    }

    /// Rounds the network's weights to F (see `try_new` for the size check).
    pub fn new(net: &SimpleRnn) -> Self {
        let conv = |xs: &[malachite::Rational]| xs.iter().map(F::from_rational).collect::<Vec<F>>();
        let (ro_w, ro_b) = match &net.readout {
            Some(r) => (conv(&r.w.to_dense()), conv(&r.b)),
            None => (Vec::new(), Vec::new()),
        };
        FloatPlan {
            d: net.hidden_size(),
            n_in: net.input_size(),
            n_out: net.output_size(),
            activation: net.activation,
            vt: transposed_dense(&net.v),
            wt: transposed_dense(&net.w),
            b: conv(&net.b),
            h0: conv(&net.h0),
            ro_w,
            ro_b,
            lockstep: std::sync::OnceLock::new(),
        }
    }

    /// One tick: `out = σ(V h + W x + b)` in the documented order. The loops run with the
    /// unit index innermost (all units' accumulators advance together, which vectorises);
    /// each unit still sees exactly b_i, then + W_ik x_k for k ascending, then + V_ij h_j
    /// for j ascending, every operation rounded.
    #[inline]
    pub fn tick(&self, h: &[F], x: &[F], out: &mut [F], fma: bool) {
        let d = self.d;
        let acc = &mut out[..d];
        acc.copy_from_slice(&self.b);
        for (k, &xk) in x.iter().enumerate() {
            column_step(acc, &self.wt[k * d..(k + 1) * d], xk, fma);
        }
        for (j, &hj) in h.iter().enumerate() {
            column_step(acc, &self.vt[j * d..(j + 1) * d], hj, fma);
        }
        for a in acc.iter_mut() {
            *a = activate(self.activation, a.end_sum());
        }
    }

    /// Readout y = w h + c in the documented order.
    #[inline]
    pub fn output(&self, h: &[F], out: &mut [F], fma: bool) {
        let d = self.d;
        for (o, y) in out.iter_mut().enumerate().take(self.n_out) {
            let mut acc = self.ro_b[o];
            for (&w, &hj) in self.ro_w[o * d..(o + 1) * d].iter().zip(h) {
                acc = acc.plus_product(w, hj, fma);
            }
            *y = acc.end_sum();
        }
    }
}

/// acc_i = acc_i + col_i·z for every unit i (`Float::plus_product`: one rounding per
/// operation, or one per step when `fma`); the branch is outside the loop so that each
/// loop vectorises.
#[inline(always)]
fn column_step<F: Float>(acc: &mut [F], col: &[F], z: F, fma: bool) {
    if fma {
        for (a, &w) in acc.iter_mut().zip(col) {
            *a = a.plus_product(w, z, true);
        }
    } else {
        for (a, &w) in acc.iter_mut().zip(col) {
            *a = a.plus_product(w, z, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::num::rational::parse_rational;
    use half::f16;

    #[test]
    fn f16_accumulation_rounds_each_operation() {
        // acc = 0 + 2048*1 = 2048; + 1*1 -> 2048 (tie to even); + 1*1 -> 2048 again.
        // A wider accumulator would give 2050.
        let q = |s: &str| parse_rational(s).unwrap();
        let net = SimpleRnn::new(
            RatMatrix::from_rows(vec![vec![q("0"), q("0"), q("0")], vec![q("0"); 3], vec![q("0"); 3]]),
            RatMatrix::from_rows(vec![vec![q("2048"), q("1"), q("1")], vec![q("0"); 3], vec![q("0"); 3]]),
            vec![q("0"); 3],
            None,
            Activation::Identity,
            None,
        )
        .unwrap();
        let plan = FloatPlan::<f16>::new(&net);
        let x = [f16::ONE; 3];
        let mut out = [f16::ZERO; 3];
        plan.tick(&plan.h0.clone(), &x, &mut out, false);
        assert_eq!(out[0].to_f64(), 2048.0);
        let p64 = FloatPlan::<f64>::new(&net);
        let mut o64 = [0.0; 3];
        p64.tick(&p64.h0.clone(), &[1.0; 3], &mut o64, false);
        assert_eq!(o64[0], 2050.0);
    }
}
