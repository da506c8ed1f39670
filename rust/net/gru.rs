//! The GRU cell with PyTorch's equations, gate order and parameter layout (torch.nn.GRU;
//! Cho et al. 2014; seeds 003 and 004):
//!
//!   gi = b_ih + W_ih x_t,   gh = b_hh + W_hh h_{t−1}    (3H rows, blocks r, z, n)
//!   r = σ(gi_r + gh_r),  z = σ(gi_z + gh_z)
//!   n = tanh(gi_n + r ⊙ gh_n)          (r multiplies W_hn h + b_hn, as in PyTorch)
//!   h_t = (1 − z) ⊙ n + z ⊙ h_{t−1}    (computed as n + z ⊙ (h_{t−1} − n), as PyTorch does)
//!
//! `gate` (σ for r, z) and `candidate` (tanh for n) are options. Saturated (Merrill 2019):
//! r, z ∈ {0, 1/2, 1} and n ∈ {−1, 0, 1}; runs exactly.

use crate::net::activation::Activation;
use crate::net::gated::GatedWeights;
use crate::net::parts::{PartsReader, PartsWriter};

pub const GRU_GATES: &str = "r, z, n";

#[derive(Debug, Clone, PartialEq)]
pub struct Gru {
    pub w: GatedWeights,
    pub gate: Activation,
    pub candidate: Activation,
}

impl Gru {
    pub fn read(r: &mut PartsReader<'_>) -> Option<Gru> {
        let gate = r.activation("gate", Activation::Sigmoid);
        let candidate = r.activation("candidate", Activation::Tanh);
        let w = GatedWeights::read(r, 3, GRU_GATES);
        Some(Gru { w: w?, gate: gate?, candidate: candidate? })
    }

    pub fn write(&self, p: &mut PartsWriter) {
        self.w.write(p);
        p.option("gate", self.gate.name()).option("candidate", self.candidate.name());
    }

    pub fn activations(&self) -> Vec<Activation> {
        vec![self.gate, self.candidate]
    }

    /// σ → sat_sigmoid (r, z), tanh → sign (n); weights unchanged.
    pub fn saturated(&self) -> Gru {
        Gru { w: self.w.clone(), gate: self.gate.saturated(), candidate: self.candidate.saturated() }
    }
}
