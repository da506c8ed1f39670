//! One step of the gated cells (LSTM, Doubling-LSTM, GRU; equations in `net::lstm`,
//! `net::doubling_lstm`, `net::gru`) in any [`Scalar`]: first the two affine maps
//!
//!   gi = b_ih + W_ih x_t,   gh = b_hh + W_hh h_{t−1}        (`DenseAffine::apply`, rows in order)
//!
//! then the elementwise part, per unit u, every operation rounded to the format:
//!
//!   LSTM:    p_r = gi_r + gh_r;  i = σ(p_i), f = σ(p_f), g = tanh(p_g), o = σ(p_o)
//!            c' = (f·c) + (i·g);   h' = o·tanh(c')
//!   Doubling-LSTM: as the LSTM with f = σ(p_f¹) + σ(p_f²)
//!   GRU:     r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), n = tanh(gi_n + (r·gh_n))
//!            h' = n + (z·(h + (−n)))
//!
//! (σ, tanh: the cell's `gate`, `candidate` and `output` functions.) The elementwise part
//! only reads gi and gh, so a batched kernel can compute those for all sequences at once.

use crate::net::activation::Activation;
use crate::net::doubling_lstm::DoublingLstm;
use crate::net::gated::GatedWeights;
use crate::net::gru::Gru;
use crate::net::lstm::Lstm;
use crate::num::scalar::{activate, Scalar};
use crate::sim::cells::affine::DenseAffine;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatedKind {
    Lstm,
    DoublingLstm,
    Gru,
}

#[derive(Debug, Clone)]
pub struct GatedPlan<S> {
    pub kind: GatedKind,
    pub hidden: usize,
    pub ih: DenseAffine<S>,
    pub hh: DenseAffine<S>,
    pub gate: Activation,
    pub candidate: Activation,
    pub output: Activation,
    /// The lock-step kernel's packed weights (`gated_batch::GatedLanes`), built on first use.
    pub lockstep: std::sync::OnceLock<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

impl<S: Scalar> GatedPlan<S> {
    fn from_weights(kind: GatedKind, w: &GatedWeights, gate: Activation, candidate: Activation, output: Activation) -> Self {
        GatedPlan { kind, hidden: w.hidden, ih: DenseAffine::new(&w.w_ih, &w.b_ih), hh: DenseAffine::new(&w.w_hh, &w.b_hh), gate, candidate, output, lockstep: std::sync::OnceLock::new() }
    }
    pub fn lstm(c: &Lstm) -> Self {
        Self::from_weights(GatedKind::Lstm, &c.w, c.gate, c.candidate, c.output)
    }
    pub fn doubling(c: &DoublingLstm) -> Self {
        Self::from_weights(GatedKind::DoublingLstm, &c.w, c.gate, c.candidate, c.output)
    }
    pub fn gru(c: &Gru) -> Self {
        Self::from_weights(GatedKind::Gru, &c.w, c.gate, c.candidate, Activation::Identity)
    }

    pub fn has_cell_state(&self) -> bool {
        self.kind != GatedKind::Gru
    }

    /// Scratch length: gi and gh.
    pub fn scratch_len(&self) -> usize {
        2 * self.ih.rows
    }

    /// The two affine maps of the step (see the module doc).
    #[inline]
    pub fn gate_affine(&self, x: &[S], h: &[S], gi: &mut [S], gh: &mut [S], fma: bool) {
        self.ih.apply(&[x], gi, fma);
        self.hh.apply(&[h], gh, fma);
    }

    /// state = [h | c] (c only for the LSTMs) → next, in the documented order.
    pub fn step(&self, state: &[S], x: &[S], next: &mut [S], scratch: &mut [S], fma: bool) {
        let hsz = self.hidden;
        let (gi, gh) = scratch.split_at_mut(self.ih.rows);
        self.gate_affine(x, &state[..hsz], gi, gh, fma);
        match self.kind {
            GatedKind::Lstm | GatedKind::DoublingLstm => self.lstm_pointwise(state, gi, gh, next),
            GatedKind::Gru => self.gru_pointwise(&state[..hsz], gi, gh, next),
        }
    }

    fn lstm_pointwise(&self, state: &[S], gi: &[S], gh: &[S], next: &mut [S]) {
        let hsz = self.hidden;
        let pre = |r: usize| gi[r].add(&gh[r]);
        let double = self.kind == GatedKind::DoublingLstm;
        // block offsets: i, f (, f2), g, o
        let (bf2, bg, bo) = if double { (2 * hsz, 3 * hsz, 4 * hsz) } else { (0, 2 * hsz, 3 * hsz) };
        for u in 0..hsz {
            let i = activate(self.gate, &pre(u));
            let mut f = activate(self.gate, &pre(hsz + u));
            if double {
                f = f.add(&activate(self.gate, &pre(bf2 + u)));
            }
            let g = activate(self.candidate, &pre(bg + u));
            let o = activate(self.gate, &pre(bo + u));
            let c = f.mul(&state[hsz + u]).add(&i.mul(&g));
            next[u] = o.mul(&activate(self.output, &c));
            next[hsz + u] = c;
        }
    }

    fn gru_pointwise(&self, h: &[S], gi: &[S], gh: &[S], next: &mut [S]) {
        let hsz = self.hidden;
        for u in 0..hsz {
            let r = activate(self.gate, &gi[u].add(&gh[u]));
            let z = activate(self.gate, &gi[hsz + u].add(&gh[hsz + u]));
            let n = activate(self.candidate, &gi[2 * hsz + u].add(&r.mul(&gh[2 * hsz + u])));
            next[u] = n.add(&z.mul(&h[u].add(&n.neg())));
        }
    }
}
