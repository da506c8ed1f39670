//! The weights every gated cell shares, in PyTorch's layout: G gate blocks of H rows stacked
//! in one matrix, `weight_ih` (G·H, input), `weight_hh` (G·H, H), `bias_ih` (G·H),
//! `bias_hh` (G·H). Block g holds rows g·H .. (g+1)·H. Keeping the stacked layout makes the
//! per-step gate pre-activations two matrix–vector products (two GEMMs for a batch):
//!
//!   gi = b_ih + W_ih x_t,     gh = b_hh + W_hh h_{t−1}.

use crate::net::matrix::RatMatrix;
use crate::net::parts::{PartsReader, PartsWriter};
use malachite::Rational;

#[derive(Debug, Clone, PartialEq)]
pub struct GatedWeights {
    /// number of gate blocks G (LSTM 4, GRU 3, Doubling-LSTM 5)
    pub gates: usize,
    pub hidden: usize,
    pub input: usize,
    pub w_ih: RatMatrix,
    pub w_hh: RatMatrix,
    pub b_ih: Vec<Rational>,
    pub b_hh: Vec<Rational>,
}

impl GatedWeights {
    /// Reads `weight_ih`, `weight_hh` and the optional `bias_ih`/`bias_hh` (zeros when both
    /// are absent; one without the other is a problem). H comes from `weight_hh`'s columns.
    /// `order` names the gate blocks for the messages (e.g. "i, f, g, o").
    pub fn read(r: &mut PartsReader<'_>, gates: usize, order: &str) -> Option<GatedWeights> {
        let hidden = r.shape("weight_hh").and_then(|s| (s.len() == 2).then_some(s[1]));
        if let Some(0) = hidden {
            r.problem("hidden size must be at least 1 (weight_hh has no columns)");
        }
        let rows = hidden.map(|h| gates * h);
        let mut hh_rows = rows;
        if let (Some(s), Some(rows)) = (r.shape("weight_hh"), rows) {
            if s.len() == 2 && s[0] != rows {
                r.problem(format!(
                    "weight_hh has shape ({}, {}) but {gates} gate blocks ({order}) of hidden size {} need {rows} rows",
                    s[0],
                    s[1],
                    s[1]
                ));
                hh_rows = None; // reported; no second message for the same tensor
            }
        }
        let w_hh = r.matrix("weight_hh", hh_rows, hidden);
        let w_hh = if hh_rows.is_none() && rows.is_some() { None } else { w_hh };
        let w_ih = r.matrix("weight_ih", rows, None);
        let (has_i, has_h) = (r.has("bias_ih"), r.has("bias_hh"));
        if has_i != has_h {
            r.problem(format!("{} is given without {}: give both biases or neither", if has_i { "bias_ih" } else { "bias_hh" }, if has_i { "bias_hh" } else { "bias_ih" }));
        }
        let b_ih = r.vector_or_zeros("bias_ih", rows);
        let b_hh = r.vector_or_zeros("bias_hh", rows);
        let (w_ih, w_hh, b_ih, b_hh, hidden) = (w_ih?, w_hh?, b_ih?, b_hh?, hidden?);
        if hidden == 0 {
            return None;
        }
        Some(GatedWeights { gates, hidden, input: w_ih.cols, w_ih, w_hh, b_ih, b_hh })
    }

    pub fn write(&self, w: &mut PartsWriter) {
        w.matrix("weight_ih", &self.w_ih).matrix("weight_hh", &self.w_hh).vector("bias_ih", &self.b_ih).vector("bias_hh", &self.b_hh);
    }
}
