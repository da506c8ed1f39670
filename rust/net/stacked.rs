//! A deep RNN: layers of any cell kinds, the output sequence of layer k being the input
//! sequence of layer k + 1 (seed 002, "On the role of depth in the expressivity of RNNs",
//! Figure 2; torch.nn.LSTM/GRU/RNN with num_layers > 1 are this with equal cells):
//!
//!   h^(0)_t = x_t,    h^(k)_t = cell_k(h^(k−1)_t, state^(k)_{t−1})   for k = 1..L.
//!
//! `label` is the network's public kind ("lstm" for an L-layer LSTM, "stacked" for a mix);
//! it only decides which Python class wraps it and what the saved file says.

use crate::error::{SimError, SimResult};
use crate::net::cell::Cell;

#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    pub label: String,
    pub layers: Vec<Cell>,
}

impl Stack {
    /// Checks that there is a layer and that each layer's input size is the previous
    /// layer's hidden size; every mismatch is reported.
    pub fn new(label: impl Into<String>, layers: Vec<Cell>) -> SimResult<Stack> {
        let mut p = Vec::new();
        if layers.is_empty() {
            p.push("a network needs at least one layer".to_string());
        }
        for k in 1..layers.len() {
            let (prev, cur) = (&layers[k - 1], &layers[k]);
            if cur.input_size() != prev.hidden_size() {
                p.push(format!(
                    "layer {k} ({}) takes inputs of size {}, but layer {} ({}) has hidden size {}: the output \
                     sequence of a layer is the input of the next",
                    cur.kind(),
                    cur.input_size(),
                    k - 1,
                    prev.kind(),
                    prev.hidden_size()
                ));
            }
        }
        if !p.is_empty() {
            return Err(SimError::InvalidNetwork(p));
        }
        Ok(Stack { label: label.into(), layers })
    }

    pub fn input_size(&self) -> usize {
        self.layers[0].input_size()
    }

    pub fn hidden_size(&self) -> usize {
        self.layers[self.layers.len() - 1].hidden_size()
    }

    pub fn hidden_sizes(&self) -> Vec<usize> {
        self.layers.iter().map(|l| l.hidden_size()).collect()
    }

    /// Ok when every layer runs exactly (see `Cell::require_exact`).
    pub fn require_exact(&self) -> SimResult<()> {
        for (k, l) in self.layers.iter().enumerate() {
            l.require_exact(&format!("layer {k} ({})", l.kind()))?;
        }
        Ok(())
    }

    /// Every layer saturated (Merrill 2019; see `net::cell`).
    pub fn saturated(&self) -> Stack {
        Stack { label: self.label.clone(), layers: self.layers.iter().map(Cell::saturated).collect() }
    }
}
