//! One step of the QRNN (equations in `net::qrnn`) in any [`Scalar`]. The state is
//! [h | c | x_{t−1}, …, x_{t−k+1}]: the last k − 1 inputs are kept so the window
//! x^{t,k} = (x_t, x_{t−1}, …, x_{t−k+1}) is available (zeros before the sequence start).
//!
//!   pre = b + W x^{t,k}                           (`DenseAffine::apply`, rows in order)
//!   z = tanh(pre_z), f = σ(pre_f), o = σ(pre_o), i = σ(pre_i)
//!   f-/fo-pooling:  c' = (f·c) + ((1 + (−f))·z)      ifo-pooling:  c' = (f·c) + (i·z)
//!   h' = c' (f) or o·c' (fo, ifo)
//!
//! pre does not depend on the state: a batched kernel computes it for every step at once.

use crate::net::activation::Activation;
use crate::net::qrnn::{Pooling, Qrnn};
use crate::num::scalar::{activate, Scalar};
use crate::sim::cells::affine::DenseAffine;

#[derive(Debug, Clone)]
pub struct QrnnPlan<S> {
    pub hidden: usize,
    pub input: usize,
    pub window: usize,
    pub pooling: Pooling,
    pub map: DenseAffine<S>,
    pub gate: Activation,
    pub candidate: Activation,
}

impl<S: Scalar> QrnnPlan<S> {
    pub fn new(c: &Qrnn) -> Self {
        QrnnPlan { hidden: c.hidden, input: c.input, window: c.window, pooling: c.pooling, map: DenseAffine::new(&c.weight, &c.bias), gate: c.gate, candidate: c.candidate }
    }

    /// Length of the past-input window kept in the state.
    pub fn memory_len(&self) -> usize {
        (self.window - 1) * self.input
    }

    pub fn scratch_len(&self) -> usize {
        self.map.rows
    }

    /// The gate pre-activations of one step: pre = b + W [x_t ; x_{t−1} ; … ; x_{t−k+1}].
    #[inline]
    pub fn gate_affine(&self, x: &[S], past: &[S], pre: &mut [S], fma: bool) {
        self.map.apply(&[x, past], pre, fma);
    }

    pub fn step(&self, state: &[S], x: &[S], next: &mut [S], scratch: &mut [S], fma: bool) {
        let hsz = self.hidden;
        let past = &state[2 * hsz..];
        self.gate_affine(x, past, scratch, fma);
        let pre = &*scratch;
        for u in 0..hsz {
            let z = activate(self.candidate, &pre[u]);
            let f = activate(self.gate, &pre[hsz + u]);
            let keep = f.mul(&state[hsz + u]);
            let c = match self.pooling {
                Pooling::F | Pooling::Fo => keep.add(&S::one().add(&f.neg()).mul(&z)),
                Pooling::Ifo => keep.add(&activate(self.gate, &pre[3 * hsz + u]).mul(&z)),
            };
            next[u] = match self.pooling {
                Pooling::F => c.clone(),
                Pooling::Fo | Pooling::Ifo => activate(self.gate, &pre[2 * hsz + u]).mul(&c),
            };
            next[hsz + u] = c;
        }
        // shift the window: [x_t, x_{t−1}, …, x_{t−k+2}]
        let mem = self.memory_len();
        if mem > 0 {
            let n = self.input;
            let out = &mut next[2 * hsz..2 * hsz + mem];
            out[n..].clone_from_slice(&past[..mem - n]);
            out[..n].clone_from_slice(x);
        }
    }
}
