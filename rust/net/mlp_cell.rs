//! A deep feed-forward network as the transition (seed 000: "in each RNN cell, a universal
//! function approximator (e.g. a deep neural network) to learn any f"):
//!
//!   z_0 = [x_t ; h_{t−1}]  (concatenation: the n inputs first, then the H state units)
//!   z_l = act_l(W_l z_{l−1} + b_l)   for l = 1..L,      h_t = z_L
//!
//! `weight_l` has shape (m_l, m_{l−1}) with m_0 = n + H and m_L = H. A one-layer MLP cell
//! is the simple RNN h_t = act(W x + V h + b) with [W V] = weight_0.

use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::parts::{PartsReader, PartsWriter};
use malachite::Rational;

#[derive(Debug, Clone, PartialEq)]
pub struct MlpLayer {
    pub w: RatMatrix,
    pub b: Vec<Rational>,
    pub activation: Activation,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MlpCell {
    pub hidden: usize,
    pub input: usize,
    pub layers: Vec<MlpLayer>,
}

impl MlpCell {
    pub fn read(r: &mut PartsReader<'_>) -> Option<MlpCell> {
        let mut count = 0;
        while r.has(&format!("weight_{count}")) {
            count += 1;
        }
        if count == 0 {
            r.problem("missing parameter \"weight_0\": an MLP cell needs at least one layer");
            return None;
        }
        let hidden = r.shape(&format!("weight_{}", count - 1)).and_then(|s| (s.len() == 2).then_some(s[0]));
        let first_cols = r.shape("weight_0").and_then(|s| (s.len() == 2).then_some(s[1]));
        let input = match (hidden, first_cols) {
            (Some(0), _) => {
                r.problem("hidden size must be at least 1 (the last layer has no rows)");
                None
            }
            (Some(h), Some(c)) if c < h => {
                r.problem(format!("weight_0 has {c} columns, fewer than the hidden size {h}: its columns are [x ; h]"));
                None
            }
            (Some(h), Some(c)) => Some(c - h),
            _ => None,
        };
        let mut layers = Vec::with_capacity(count);
        let mut prev = first_cols;
        let mut ok = true;
        for l in 0..count {
            let w = r.matrix(&format!("weight_{l}"), None, prev);
            let rows = w.as_ref().map(|m| m.rows);
            let b = r.vector_or_zeros(&format!("bias_{l}"), rows);
            let act = r.activation(&format!("activation_{l}"), Activation::Tanh);
            prev = rows;
            match (w, b, act) {
                (Some(w), Some(b), Some(activation)) => layers.push(MlpLayer { w, b, activation }),
                _ => ok = false,
            }
        }
        let (hidden, input) = (hidden?, input?);
        ok.then_some(MlpCell { hidden, input, layers })
    }

    pub fn write(&self, p: &mut PartsWriter) {
        for (l, layer) in self.layers.iter().enumerate() {
            p.matrix(&format!("weight_{l}"), &layer.w).vector(&format!("bias_{l}"), &layer.b).option(&format!("activation_{l}"), layer.activation.name());
        }
    }

    pub fn activations(&self) -> Vec<Activation> {
        self.layers.iter().map(|l| l.activation).collect()
    }

    pub fn saturated(&self) -> MlpCell {
        let layers = self.layers.iter().map(|l| MlpLayer { activation: l.activation.saturated(), ..l.clone() }).collect();
        MlpCell { layers, ..self.clone() }
    }
}
