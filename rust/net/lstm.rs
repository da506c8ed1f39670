//! The LSTM cell with PyTorch's equations, gate order and parameter layout (torch.nn.LSTM;
//! Hochreiter & Schmidhuber 1997; seeds 003 and 004):
//!
//!   gi = b_ih + W_ih x_t,   gh = b_hh + W_hh h_{t−1},   pre = gi + gh   (4H rows, blocks i, f, g, o)
//!   i = σ(pre_i),  f = σ(pre_f),  g = tanh(pre_g),  o = σ(pre_o)
//!   c_t = f ⊙ c_{t−1} + i ⊙ g,    h_t = o ⊙ tanh(c_t)
//!
//! The three nonlinearities are options: `gate` (σ for i, f, o), `candidate` (tanh for g)
//! and `output` (tanh applied to c_t). Saturating (Merrill 2019) gives σ → sat_sigmoid
//! (gates in {0, 1/2, 1}), tanh → sign for g and for the output, so c_t counts in ℤ and
//! h_t ∈ {−1, 0, 1}: the saturated LSTM is a counter machine and runs exactly.

use crate::net::activation::Activation;
use crate::net::gated::GatedWeights;
use crate::net::parts::{PartsReader, PartsWriter};

pub const LSTM_GATES: &str = "i, f, g, o";

#[derive(Debug, Clone, PartialEq)]
pub struct Lstm {
    pub w: GatedWeights,
    pub gate: Activation,
    pub candidate: Activation,
    pub output: Activation,
}

impl Lstm {
    pub fn read(r: &mut PartsReader<'_>) -> Option<Lstm> {
        let gate = r.activation("gate", Activation::Sigmoid);
        let candidate = r.activation("candidate", Activation::Tanh);
        let output = r.activation("output", Activation::Tanh);
        let w = GatedWeights::read(r, 4, LSTM_GATES);
        Some(Lstm { w: w?, gate: gate?, candidate: candidate?, output: output? })
    }

    pub fn write(&self, p: &mut PartsWriter) {
        self.w.write(p);
        p.option("gate", self.gate.name()).option("candidate", self.candidate.name()).option("output", self.output.name());
    }

    pub fn activations(&self) -> Vec<Activation> {
        vec![self.gate, self.candidate, self.output]
    }

    /// σ → sat_sigmoid (gates), tanh → sign (candidate and output); weights unchanged.
    pub fn saturated(&self) -> Lstm {
        Lstm { w: self.w.clone(), gate: self.gate.saturated(), candidate: self.candidate.saturated(), output: self.output.saturated() }
    }
}
