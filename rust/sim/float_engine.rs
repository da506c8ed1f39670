//! The float engine: h_t = σ(V h_{t−1} + W x_t + b) computed in a binary float format F.
//!
//! Weights are exact rationals rounded once to F (round to nearest even). Each unit is
//! accumulated in this fixed order, every product and every sum rounded to F, no FMA:
//!
//!   acc = b_i;  acc = acc + W_ik·x_k for k = 0..n_in;  acc = acc + V_ij·h_j for j = 0..d;
//!   h_i = σ(acc)
//!
//! and the readout likewise: y_o = c_o, then + w_oj·h_j for j = 0..d. The order never
//! depends on the batch, the thread count or the data, so results are bitwise reproducible,
//! and a numpy loop doing the same operations in float16/float32/float64 gets the same bits.

use crate::net::activation::Activation;
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
}

/// Row-major (rows, cols) → row-major (cols, rows).
fn transpose<F: Copy>(m: &[F], rows: usize, cols: usize) -> Vec<F> {
    (0..cols).flat_map(|j| (0..rows).map(move |i| m[i * cols + j])).collect()
}

#[inline(always)]
fn activate<F: Float>(a: Activation, x: F) -> F {
    match a {
        Activation::Identity => x,
        Activation::Relu => if x > F::zero() { x } else { F::zero() },
        Activation::Slu => {
            if x > F::one() { F::one() } else if x > F::zero() { x } else { F::zero() }
        }
        Activation::Step => if x > F::zero() { F::one() } else { F::zero() },
        Activation::Tanh => x.tanh(),
        Activation::Sigmoid => x.sigmoid(),
    }
}

impl<F: Float> FloatPlan<F> {
    pub fn new(net: &SimpleRnn) -> Self {
        let conv = |xs: &[malachite::Rational]| xs.iter().map(F::from_rational).collect::<Vec<F>>();
        let (ro_w, ro_b) = match &net.readout {
            Some(r) => (conv(&r.w.data), conv(&r.b)),
            None => (Vec::new(), Vec::new()),
        };
        FloatPlan {
            d: net.hidden_size(),
            n_in: net.input_size(),
            n_out: net.output_size(),
            activation: net.activation,
            vt: transpose(&conv(&net.v.data), net.v.rows, net.v.cols),
            wt: transpose(&conv(&net.w.data), net.w.rows, net.w.cols),
            b: conv(&net.b),
            h0: conv(&net.h0),
            ro_w,
            ro_b,
        }
    }

    /// One tick: `out = σ(V h + W x + b)` in the documented order. The loops run with the
    /// unit index innermost (all units' accumulators advance together, which vectorises);
    /// each unit still sees exactly b_i, then + W_ik x_k for k ascending, then + V_ij h_j
    /// for j ascending, every operation rounded.
    #[inline]
    pub fn tick(&self, h: &[F], x: &[F], out: &mut [F]) {
        let d = self.d;
        let acc = &mut out[..d];
        acc.copy_from_slice(&self.b);
        for (k, &xk) in x.iter().enumerate() {
            let col = &self.wt[k * d..(k + 1) * d];
            for (a, &w) in acc.iter_mut().zip(col) {
                *a = a.add(w.mul(xk));
            }
        }
        for (j, &hj) in h.iter().enumerate() {
            let col = &self.vt[j * d..(j + 1) * d];
            for (a, &v) in acc.iter_mut().zip(col) {
                *a = a.add(v.mul(hj));
            }
        }
        for a in acc.iter_mut() {
            *a = activate(self.activation, *a);
        }
    }

    /// Readout y = w h + c in the documented order.
    #[inline]
    pub fn output(&self, h: &[F], out: &mut [F]) {
        let d = self.d;
        for o in 0..self.n_out {
            let mut acc = self.ro_b[o];
            for j in 0..d {
                acc = acc.add(self.ro_w[o * d + j].mul(h[j]));
            }
            out[o] = acc;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::matrix::RatMatrix;
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
        plan.tick(&plan.h0.clone(), &x, &mut out);
        assert_eq!(out[0].to_f64(), 2048.0);
        let p64 = FloatPlan::<f64>::new(&net);
        let mut o64 = [0.0; 3];
        p64.tick(&p64.h0.clone(), &[1.0; 3], &mut o64);
        assert_eq!(o64[0], 2050.0);
    }
}
