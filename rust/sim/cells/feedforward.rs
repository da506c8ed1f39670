//! One step of the cells whose transition is a feed-forward map of z_0 = [x_t ; h_{t−1}]:
//! the simple RNN (Definition 4.1, seed 001), the residual cell (seed 004) and the MLP cell
//! (seed 000). Each layer l computes, per unit i, in order (every operation rounded):
//!
//!   acc = b_i;  acc += W_ik z_k for k ascending over [x ; h] (inputs first, as the simple-RNN
//!   float engine: b, then W x, then V h);   z_l,i = act_l(acc)
//!
//! and the residual cell adds the old state last: h'_i = h_i + z_1,i.

use crate::net::activation::Activation;
use crate::net::mlp_cell::MlpCell;
use crate::net::residual::Residual;
use crate::net::simple_rnn::SimpleRnn;
use crate::num::scalar::{activate, Scalar};
use crate::sim::cells::affine::DenseAffine;

#[derive(Debug, Clone)]
pub struct FeedforwardPlan<S> {
    pub hidden: usize,
    /// the first map takes [x ; h], later ones the previous layer's output
    pub layers: Vec<(DenseAffine<S>, Activation)>,
    pub residual: bool,
    /// the simple RNN's own start state (None: zeros)
    pub h0: Option<Vec<S>>,
}

impl<S: Scalar> FeedforwardPlan<S> {
    pub fn simple(n: &SimpleRnn) -> Self {
        FeedforwardPlan {
            hidden: n.hidden_size(),
            layers: vec![(DenseAffine::concat(&n.w, &n.v, &n.b), n.activation)],
            residual: false,
            h0: Some(n.h0.iter().map(S::from_rational).collect()),
        }
    }

    pub fn residual(c: &Residual) -> Self {
        FeedforwardPlan { hidden: c.v.rows, layers: vec![(DenseAffine::concat(&c.w, &c.v, &c.b), c.activation)], residual: true, h0: None }
    }

    pub fn mlp(c: &MlpCell) -> Self {
        let layers = c.layers.iter().map(|l| (DenseAffine::new(&l.w, &l.b), l.activation)).collect();
        FeedforwardPlan { hidden: c.hidden, layers, residual: false, h0: None }
    }

    /// Two buffers as wide as the widest layer.
    pub fn scratch_len(&self) -> usize {
        2 * self.layers.iter().map(|(a, _)| a.rows).max().unwrap_or(0)
    }

    pub fn step(&self, state: &[S], x: &[S], next: &mut [S], scratch: &mut [S], fma: bool) {
        let hsz = self.hidden;
        let h = &state[..hsz];
        let half = scratch.len() / 2;
        let (a, b) = scratch.split_at_mut(half);
        let (mut cur, mut other) = (a, b);
        let mut width = 0;
        for (l, (map, act)) in self.layers.iter().enumerate() {
            if l == 0 {
                map.apply(&[x, h], other, fma);
            } else {
                map.apply(&[&cur[..width]], other, fma);
            }
            for v in other[..map.rows].iter_mut() {
                *v = activate(*act, v);
            }
            width = map.rows;
            std::mem::swap(&mut cur, &mut other);
        }
        for u in 0..hsz {
            next[u] = if self.residual { h[u].add(&cur[u]) } else { cur[u].clone() };
        }
    }
}
