//! The Doubling-LSTM of seed 003 ("A completely made up RNN architecture"): an LSTM whose
//! forget gate is the sum of two sigmoids, so it can reset (f = 0), keep (f = 1) and double
//! (f = 2) the cell, and with f = 1/2 halve it, which makes the cell a binary stack:
//!
//!   pre = (b_ih + W_ih x_t) + (b_hh + W_hh h_{t−1})   (5H rows, blocks i, f¹, f², g, o)
//!   f = σ(pre_f¹) + σ(pre_f²) ∈ (0, 2),   i = σ(pre_i),  g = tanh(pre_g),  o = σ(pre_o)
//!   c_t = f ⊙ c_{t−1} + i ⊙ g,            h_t = o ⊙ tanh(c_t)
//!
//! The slides write f¹ and f² with the same symbols W^f, U^f, b^f; two identical gates could
//! only give f ∈ {2σ}, so here each has its own block of weights (PyTorch-style layout with
//! the f block doubled). Saturated (σ → sat_sigmoid, tanh → sign), f ∈ {0, 1/2, 1, 3/2, 2}.

use crate::net::activation::Activation;
use crate::net::gated::GatedWeights;
use crate::net::parts::{PartsReader, PartsWriter};

pub const DOUBLING_LSTM_GATES: &str = "i, f1, f2, g, o";

#[derive(Debug, Clone, PartialEq)]
pub struct DoublingLstm {
    pub w: GatedWeights,
    pub gate: Activation,
    pub candidate: Activation,
    pub output: Activation,
}

impl DoublingLstm {
    pub fn read(r: &mut PartsReader<'_>) -> Option<DoublingLstm> {
        let gate = r.activation("gate", Activation::Sigmoid);
        let candidate = r.activation("candidate", Activation::Tanh);
        let output = r.activation("output", Activation::Tanh);
        let w = GatedWeights::read(r, 5, DOUBLING_LSTM_GATES);
        Some(DoublingLstm { w: w?, gate: gate?, candidate: candidate?, output: output? })
    }

    pub fn write(&self, p: &mut PartsWriter) {
        self.w.write(p);
        p.option("gate", self.gate.name()).option("candidate", self.candidate.name()).option("output", self.output.name());
    }

    pub fn activations(&self) -> Vec<Activation> {
        vec![self.gate, self.candidate, self.output]
    }

    /// σ → sat_sigmoid (i, f¹, f², o), tanh → sign (g and the output); weights unchanged.
    pub fn saturated(&self) -> DoublingLstm {
        DoublingLstm { w: self.w.clone(), gate: self.gate.saturated(), candidate: self.candidate.saturated(), output: self.output.saturated() }
    }
}
