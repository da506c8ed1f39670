//! One step of the 2RNN (equations in `net::second_order`) in any [`Scalar`], in this order
//! (every operation rounded to the format):
//!
//!   acc_i = b_i + Σ_k U_ik x_k + Σ_j V_ij h_j             (`DenseAffine::apply` on [x ; h])
//!   full tensor:  m_ij = Σ_k A_ijk x_k (from 0, k ascending);   acc_i += m_ij·h_j (j ascending)
//!   CP factors:   s_r = Σ_k S_rk x_k,  q_r = Σ_j Q_rj h_j (from 0);  acc_i += P_ir·(q_r·s_r) (r ascending)
//!   h'_i = act(acc_i)
//!
//! With f32 sums (`num::f32_sums`) each of those sums runs in f32 and is rounded to the half
//! format where it ends (`Scalar::end_sum`): acc_i after the affine map, m_ij before its
//! product with h_j, acc_i again before the activation (s_r, q_r by `DenseAffine`).

use crate::net::activation::Activation;
use crate::net::second_order::{Bilinear, SecondOrder};
use crate::num::scalar::{activate, Scalar};
use crate::sim::cells::affine::DenseAffine;
use malachite::Rational;

#[derive(Debug, Clone)]
pub enum BilinearPlan<S> {
    Full(Vec<S>),
    Cp { p: DenseAffine<S>, q: DenseAffine<S>, s: DenseAffine<S> },
}

#[derive(Debug, Clone)]
pub struct SecondOrderPlan<S> {
    pub hidden: usize,
    pub input: usize,
    pub linear: DenseAffine<S>,
    pub a: BilinearPlan<S>,
    pub activation: Activation,
}

impl<S: Scalar> SecondOrderPlan<S> {
    pub fn new(c: &SecondOrder) -> Self {
        let a = match &c.a {
            Bilinear::Full(t) => BilinearPlan::Full(t.iter().map(S::from_rational).collect()),
            Bilinear::Cp { p, q, s } => {
                let zeros = |n: usize| vec![Rational::from(0); n];
                BilinearPlan::Cp { p: DenseAffine::new(p, &zeros(p.rows)), q: DenseAffine::new(q, &zeros(q.rows)), s: DenseAffine::new(s, &zeros(s.rows)) }
            }
        };
        SecondOrderPlan { hidden: c.hidden, input: c.input, linear: DenseAffine::concat(&c.u, &c.v, &c.b), a, activation: c.activation }
    }

    pub fn scratch_len(&self) -> usize {
        match &self.a {
            BilinearPlan::Full(_) => self.hidden,
            BilinearPlan::Cp { q, .. } => self.hidden + 3 * q.rows,
        }
    }

    pub fn step(&self, state: &[S], x: &[S], next: &mut [S], scratch: &mut [S], fma: bool) {
        let (hsz, n) = (self.hidden, self.input);
        let h = &state[..hsz];
        let (acc, rest) = scratch.split_at_mut(hsz);
        self.linear.apply(&[x, h], acc, fma);
        match &self.a {
            BilinearPlan::Full(a) => {
                for (i, acc_i) in acc.iter_mut().enumerate() {
                    for (j, hj) in h.iter().enumerate() {
                        let base = (i * hsz + j) * n;
                        let mut m = S::zero();
                        for (k, xk) in x.iter().enumerate() {
                            m = m.plus_product(&a[base + k], xk, fma);
                        }
                        *acc_i = acc_i.plus_product(&m.end_sum(), hj, fma);
                    }
                }
            }
            BilinearPlan::Cp { p, q, s } => {
                let rank = q.rows;
                let (sx, rest) = rest.split_at_mut(rank);
                let (qh, prod) = rest.split_at_mut(rank);
                s.apply(&[x], sx, fma);
                q.apply(&[h], qh, fma);
                for ((pr, a), b) in prod.iter_mut().zip(qh.iter()).zip(sx.iter()) {
                    *pr = a.mul(b);
                }
                for (i, acc_i) in acc.iter_mut().enumerate() {
                    for (w, pr) in p.w[i * rank..(i + 1) * rank].iter().zip(prod.iter()) {
                        *acc_i = acc_i.plus_product(w, pr, fma);
                    }
                }
            }
        }
        for (o, a) in next[..hsz].iter_mut().zip(acc.iter()) {
            *o = activate(self.activation, &a.end_sum());
        }
    }
}
