//! The second-order RNN (2RNN; Lizaire, Rizvi-Martel, Dupuis & Rabusseau, "On the role of
//! depth in the expressivity of RNNs", seed 002, Definition 2; Rabusseau et al. 2019 relate
//! linear 2RNNs to weighted automata): multiplicative interactions between state and input,
//!
//!   h_t = act(A ×₂ h_{t−1} ×₃ x_t + V h_{t−1} + U x_t + b),   (A ×₂ h ×₃ x)_i = Σ_jk A_ijk h_j x_k
//!
//! with A a full tensor (H, H, n), or CP-factored with rank R (the parameter-efficient form):
//!
//!   A_ijk = Σ_r P_ir Q_rj S_rk,   so (A ×₂ h ×₃ x)_i = Σ_r P_ir (Q h)_r (S x)_r
//!
//! (parts `A` or `A_out` = P (H, R), `A_h` = Q (R, H), `A_x` = S (R, n)). With identity
//! activation the state is a polynomial in the inputs whose degree grows with depth.

use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::parts::{PartsReader, PartsWriter};
use malachite::Rational;

#[derive(Debug, Clone, PartialEq)]
pub enum Bilinear {
    /// A_ijk row-major over (i, j, k)
    Full(Vec<Rational>),
    /// P (H, R), Q (R, H), S (R, n)
    Cp { p: RatMatrix, q: RatMatrix, s: RatMatrix },
}

#[derive(Debug, Clone, PartialEq)]
pub struct SecondOrder {
    pub hidden: usize,
    pub input: usize,
    pub a: Bilinear,
    pub v: RatMatrix,
    pub u: RatMatrix,
    pub b: Vec<Rational>,
    pub activation: Activation,
}

impl SecondOrder {
    pub fn read(r: &mut PartsReader<'_>) -> Option<SecondOrder> {
        let activation = r.activation("activation", Activation::Tanh);
        let hidden = r.shape("V").and_then(|s| (s.len() == 2).then_some(s[0]));
        let input = r.shape("U").and_then(|s| (s.len() == 2).then_some(s[1]));
        if hidden == Some(0) {
            r.problem("hidden size must be at least 1 (V has no rows)");
        }
        let v = r.matrix("V", hidden, hidden);
        let u = r.matrix("U", hidden, None);
        let b = r.vector_or_zeros("b", hidden);
        let a = if r.has("A") {
            if r.has("A_out") || r.has("A_h") || r.has("A_x") {
                r.problem("give either the full tensor A or its CP factors A_out, A_h, A_x, not both");
            }
            r.tensor("A", &[hidden, hidden, input]).map(|(_, d)| Bilinear::Full(d))
        } else if r.has("A_out") || r.has("A_h") || r.has("A_x") {
            let rank = r.shape("A_out").and_then(|s| (s.len() == 2).then_some(s[1]));
            let p = r.matrix("A_out", hidden, rank);
            let q = r.matrix("A_h", rank, hidden);
            let s = r.matrix("A_x", rank, input);
            match (p, q, s) {
                (Some(p), Some(q), Some(s)) => Some(Bilinear::Cp { p, q, s }),
                _ => None,
            }
        } else {
            r.problem("missing parameter \"A\" (the (H, H, n) tensor) or its CP factors \"A_out\", \"A_h\", \"A_x\"");
            None
        };
        let (v, u, b, a, activation) = (v?, u?, b?, a?, activation?);
        if v.rows == 0 {
            return None;
        }
        Some(SecondOrder { hidden: v.rows, input: u.cols, a, v, u, b, activation })
    }

    pub fn write(&self, p: &mut PartsWriter) {
        p.matrix("V", &self.v).matrix("U", &self.u).vector("b", &self.b).option("activation", self.activation.name());
        match &self.a {
            Bilinear::Full(a) => {
                p.tensor("A", vec![self.hidden, self.hidden, self.input], a);
            }
            Bilinear::Cp { p: pp, q, s } => {
                p.matrix("A_out", pp).matrix("A_h", q).matrix("A_x", s);
            }
        }
    }

    pub fn activations(&self) -> Vec<Activation> {
        vec![self.activation]
    }

    pub fn saturated(&self) -> SecondOrder {
        SecondOrder { activation: self.activation.saturated(), ..self.clone() }
    }
}
