//! Running gated, deep and second-order networks (`net::stacked::Stack`) in any
//! [`Scalar`]: the float formats (f64, f32, bf16, f16) and exact rationals share one
//! implementation, so an exact run performs the same operations as a float run, unrounded.
//!
//! A [`StackPlan`] holds each layer's weights converted once to the scalar type (rounded to
//! nearest-even for floats). One time step feeds x_t to layer 0 and each layer's new h to
//! the next; each layer step is "affine maps, then elementwise" (see `affine`, `gated`,
//! `qrnn`, `second_order`, `feedforward` for each cell's documented operation order).

pub mod affine;
pub mod feedforward;
pub mod gated;
pub mod gated_batch;
#[cfg(target_arch = "x86_64")]
pub mod gated_half_loops;
pub mod gated_pointwise;
pub mod gated_single;
pub mod qrnn;
pub mod run;
pub mod second_order;

use crate::error::{SimError, SimResult};
use crate::net::cell::Cell;
use crate::net::stacked::Stack;
use crate::num::scalar::Scalar;
use feedforward::FeedforwardPlan;
use gated::GatedPlan;
use qrnn::QrnnPlan;
use second_order::SecondOrderPlan;

/// Largest number of dense weights a plan allocates (the same cap as the simple-RNN float engine).
pub const MAX_CELL_WEIGHTS: usize = 1 << 28;

#[derive(Debug, Clone)]
pub enum LayerPlan<S> {
    Gated(GatedPlan<S>),
    Qrnn(QrnnPlan<S>),
    SecondOrder(SecondOrderPlan<S>),
    Feedforward(FeedforwardPlan<S>),
}

impl<S: Scalar> LayerPlan<S> {
    pub fn new(cell: &Cell) -> Self {
        match cell {
            Cell::Simple(n) => LayerPlan::Feedforward(FeedforwardPlan::simple(n)),
            Cell::Residual(c) => LayerPlan::Feedforward(FeedforwardPlan::residual(c)),
            Cell::Mlp(c) => LayerPlan::Feedforward(FeedforwardPlan::mlp(c)),
            Cell::Lstm(c) => LayerPlan::Gated(GatedPlan::lstm(c)),
            Cell::DoublingLstm(c) => LayerPlan::Gated(GatedPlan::doubling(c)),
            Cell::Gru(c) => LayerPlan::Gated(GatedPlan::gru(c)),
            Cell::Qrnn(c) => LayerPlan::Qrnn(QrnnPlan::new(c)),
            Cell::SecondOrder(c) => LayerPlan::SecondOrder(SecondOrderPlan::new(c)),
        }
    }

    pub fn hidden(&self) -> usize {
        match self {
            LayerPlan::Gated(p) => p.hidden,
            LayerPlan::Qrnn(p) => p.hidden,
            LayerPlan::SecondOrder(p) => p.hidden,
            LayerPlan::Feedforward(p) => p.hidden,
        }
    }

    pub fn has_cell_state(&self) -> bool {
        match self {
            LayerPlan::Gated(p) => p.has_cell_state(),
            LayerPlan::Qrnn(_) => true,
            _ => false,
        }
    }

    /// State layout: [h (H) | c (H, cells with a cell state) | QRNN input window].
    pub fn state_len(&self) -> usize {
        let h = self.hidden();
        match self {
            LayerPlan::Qrnn(p) => 2 * h + p.memory_len(),
            _ if self.has_cell_state() => 2 * h,
            _ => h,
        }
    }

    pub fn scratch_len(&self) -> usize {
        match self {
            LayerPlan::Gated(p) => p.scratch_len(),
            LayerPlan::Qrnn(p) => p.scratch_len(),
            LayerPlan::SecondOrder(p) => p.scratch_len(),
            LayerPlan::Feedforward(p) => p.scratch_len(),
        }
    }

    /// The state before the first step: h0 (given, or the simple RNN's own h0, or 0),
    /// c0 (given or 0), an all-zero input window.
    pub fn start(&self, h0: Option<&[S]>, c0: Option<&[S]>) -> Vec<S> {
        let hsz = self.hidden();
        let mut s = vec![S::zero(); self.state_len()];
        match (h0, self) {
            (Some(h), _) => s[..hsz].clone_from_slice(h),
            (None, LayerPlan::Feedforward(FeedforwardPlan { h0: Some(h), .. })) => s[..hsz].clone_from_slice(h),
            _ => {}
        }
        if let (Some(c), true) = (c0, self.has_cell_state()) {
            s[hsz..2 * hsz].clone_from_slice(c);
        }
        s
    }

    /// One time step: `next` = the layer's state after reading `x` in state `state`.
    #[inline]
    /// `fma`: fused product-sums in the affine maps (`cells::affine`).
    pub fn step(&self, state: &[S], x: &[S], next: &mut [S], scratch: &mut [S], fma: bool) {
        match self {
            LayerPlan::Gated(p) => p.step(state, x, next, scratch, fma),
            LayerPlan::Qrnn(p) => p.step(state, x, next, scratch, fma),
            LayerPlan::SecondOrder(p) => p.step(state, x, next, scratch, fma),
            LayerPlan::Feedforward(p) => p.step(state, x, next, scratch, fma),
        }
    }
}

/// A network prepared for runs in `S`.
#[derive(Debug, Clone)]
pub struct StackPlan<S> {
    pub input: usize,
    pub layers: Vec<LayerPlan<S>>,
}

/// Number of weights a dense plan of the cell stores.
fn dense_weights(cell: &Cell) -> usize {
    let (h, n) = (cell.hidden_size(), cell.input_size());
    let per = match cell {
        Cell::Lstm(_) => 4,
        Cell::Gru(_) => 3,
        Cell::DoublingLstm(_) => 5,
        Cell::Qrnn(q) => q.pooling.gates() * q.window,
        _ => 1,
    };
    let extra = match cell {
        Cell::SecondOrder(c) => match &c.a {
            crate::net::second_order::Bilinear::Full(a) => a.len(),
            crate::net::second_order::Bilinear::Cp { p, q, s } => p.rows * p.cols + q.rows * q.cols + s.rows * s.cols,
        },
        Cell::Mlp(c) => c.layers.iter().map(|l| l.w.rows * l.w.cols).sum(),
        _ => 0,
    };
    per.saturating_mul(h).saturating_mul(h.saturating_add(n)).saturating_add(extra)
}

impl<S: Scalar> crate::sim::plan_cache::Approximable for StackPlan<S> {
    /// This plan with tanh and σ replaced by their approximations (`approx_activations=True`,
    /// `sim::approx_activation`) in every layer; the other activations unchanged.
    fn approximate(mut self) -> Self {
        for layer in &mut self.layers {
            match layer {
                LayerPlan::Gated(p) => {
                    p.gate = p.gate.approximate();
                    p.candidate = p.candidate.approximate();
                    p.output = p.output.approximate();
                }
                LayerPlan::Qrnn(p) => {
                    p.gate = p.gate.approximate();
                    p.candidate = p.candidate.approximate();
                }
                LayerPlan::SecondOrder(p) => p.activation = p.activation.approximate(),
                LayerPlan::Feedforward(p) => p.layers.iter_mut().for_each(|(_, a)| *a = a.approximate()),
            }
        }
        self
    }
}

impl<S: Scalar> StackPlan<S> {
    /// Converts the weights to `S`. Exact plans refuse tanh/sigmoid (Unsupported, naming the
    /// layer); plans above [`MAX_CELL_WEIGHTS`] dense weights raise LimitExceeded.
    pub fn new(stack: &Stack) -> SimResult<Self> {
        if S::EXACT {
            stack.require_exact()?;
        }
        let total: usize = stack.layers.iter().map(dense_weights).fold(0, |a, b| a.saturating_add(b));
        if total > MAX_CELL_WEIGHTS {
            return Err(SimError::LimitExceeded(format!(
                "the cell engine stores weights densely: this network needs {total} of them, above {MAX_CELL_WEIGHTS}"
            )));
        }
        Ok(StackPlan { input: stack.input_size(), layers: stack.layers.iter().map(LayerPlan::new).collect() })
    }

    pub fn top_hidden(&self) -> usize {
        self.layers.last().map_or(0, |l| l.hidden())
    }
}

#[cfg(test)]
mod tests;
