//! Single and batch runs of a [`StackPlan`], in any [`Scalar`].
//!
//! Batches run in parallel over sequences (rayon); each sequence is computed by the same
//! sequential code whatever the thread count, so results are bitwise identical for any
//! `threads`. Sequences shorter than T (`lengths`) stop at their length: later states are
//! zero padding and the final states are those at their own length (PyTorch's packed
//! sequences). Cancellation is polled once per time step.

use crate::error::{SimError, SimResult};
use crate::num::scalar::Scalar;
use crate::sim::cancel::Control;
use crate::sim::cells::StackPlan;
use crate::sim::pool::with_pool;
use crate::sim::run::{BatchSpec, Keep};
use rayon::prelude::*;

/// Start states given by the caller, per layer, flat (B, H_l); None: the layer's default.
#[derive(Debug, Clone, Default)]
pub struct Starts<S> {
    pub h0: Option<Vec<Vec<S>>>,
    pub c0: Option<Vec<Vec<S>>>,
}

/// Results of a batch: the top layer's states h_1..h_T (B, T, H) and, when it has one, its
/// cell states c_1..c_T (B, T, H) (both empty with keep="final", the cells with keep="states"); every layer's final h and c
/// (flat (B, H_l); `final_c[l]` is None for layers without a cell state).
#[derive(Debug, Clone, PartialEq)]
pub struct CellBatch<S> {
    pub states: Vec<S>,
    pub cells: Vec<S>,
    pub final_h: Vec<Vec<S>>,
    pub final_c: Vec<Option<Vec<S>>>,
}

/// One sequence's run: the top layer's h_0..h_T, its c_0..c_T (empty without a cell state),
/// and every layer's final state.
pub type SingleRun<S> = (Vec<S>, Vec<S>, Vec<Vec<S>>);

struct SeqOut<S> {
    states: Vec<S>,
    cells: Vec<S>,
    last: Vec<Vec<S>>,
}

impl<S: Scalar> StackPlan<S> {
    /// Checks the per-layer start tensors' lengths against the batch size.
    pub fn check_starts(&self, starts: &Starts<S>, batch: usize) -> SimResult<()> {
        let mut p = Vec::new();
        for (name, given) in [("h0", &starts.h0), ("c0", &starts.c0)] {
            let Some(v) = given else { continue };
            if v.len() != self.layers.len() {
                p.push(format!("{name} has {} layers, the network has {}", v.len(), self.layers.len()));
                continue;
            }
            for (l, (layer, t)) in self.layers.iter().zip(v).enumerate() {
                if name == "c0" && !layer.has_cell_state() {
                    continue;
                }
                if t.len() != batch * layer.hidden() {
                    p.push(format!("{name} for layer {l} must hold {batch} × {} values, got {}", layer.hidden(), t.len()));
                }
            }
        }
        if p.is_empty() { Ok(()) } else { Err(SimError::InvalidInput(p)) }
    }

    /// Layer states of sequence b before the first step.
    pub(crate) fn starts_of(&self, starts: &Starts<S>, b: usize) -> Vec<Vec<S>> {
        self.layers
            .iter()
            .enumerate()
            .map(|(l, layer)| {
                let hsz = layer.hidden();
                let h = starts.h0.as_ref().map(|v| &v[l][b * hsz..(b + 1) * hsz]);
                let c = starts.c0.as_ref().filter(|_| layer.has_cell_state()).map(|v| &v[l][b * hsz..(b + 1) * hsz]);
                layer.start(h, c)
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn sequence(&self, x: &[S], mut states: Vec<Vec<S>>, len: usize, steps: usize, keep: Keep, fma: bool, ctl: &Control) -> SimResult<SeqOut<S>> {
        let n = self.input;
        let top = self.layers.len() - 1;
        let hsz = self.top_hidden();
        let top_cell = self.layers[top].has_cell_state();
        let mut out = Vec::new();
        let mut cells = Vec::new();
        if keep.states() {
            out = vec![S::zero(); steps * hsz];
            if top_cell && keep.extras() {
                cells = vec![S::zero(); steps * hsz];
            }
        }
        let mut next: Vec<Vec<S>> = self.layers.iter().map(|l| vec![S::zero(); l.state_len()]).collect();
        let mut scratch: Vec<Vec<S>> = self.layers.iter().map(|l| vec![S::zero(); l.scratch_len()]).collect();
        for t in 0..len {
            ctl.check()?;
            let xt = &x[t * n..(t + 1) * n];
            for (l, layer) in self.layers.iter().enumerate() {
                let (done, rest) = states.split_at_mut(l);
                let input = if l == 0 { xt } else { &done[l - 1][..self.layers[l - 1].hidden()] };
                layer.step(&rest[0], input, &mut next[l], &mut scratch[l], fma);
                std::mem::swap(&mut rest[0], &mut next[l]);
            }
            if keep.states() {
                out[t * hsz..(t + 1) * hsz].clone_from_slice(&states[top][..hsz]);
                if top_cell && keep.extras() {
                    cells[t * hsz..(t + 1) * hsz].clone_from_slice(&states[top][hsz..2 * hsz]);
                }
            }
        }
        Ok(SeqOut { states: out, cells, last: states })
    }

    /// One sequence x (T, n) flat: the top layer's h_0..h_T ((T+1)·H), its c_0..c_T when it
    /// has a cell state (else empty), and every layer's final state [h | c | …].
    /// `fma`: fused product-sums in the affine maps. Stacks of gated layers in a builtin
    /// float format run as a batch of one on the lock-step kernel (`gated_batch`, 5–13×
    /// faster on this machine), others by [`Self::run_one_per_sequence`]; same bits.
    pub fn run_one(&self, x: &[S], steps: usize, starts: &Starts<S>, fma: bool, ctl: &Control) -> SimResult<SingleRun<S>> {
        let spec = BatchSpec { batch: 1, steps, lengths: None, keep: Keep::All, threads: None, fma };
        let Some(batch) = crate::sim::cells::gated_batch::try_lockstep(self, x, starts, &spec, ctl) else {
            return self.run_one_per_sequence(x, steps, starts, fma, ctl);
        };
        let batch = batch?;
        let init = self.starts_of(starts, 0);
        let hsz = self.top_hidden();
        let top = &init[init.len() - 1];
        let mut states = top[..hsz].to_vec();
        states.extend(batch.states);
        let mut cells = Vec::new();
        if self.layers[self.layers.len() - 1].has_cell_state() {
            cells = top[hsz..2 * hsz].to_vec();
            cells.extend(batch.cells);
        }
        // the lock-step stacks' layers keep [h | c] (no QRNN window)
        let last = batch.final_h.into_iter().zip(batch.final_c).map(|(mut h, c)| {
            h.extend(c.unwrap_or_default());
            h
        });
        Ok((states, cells, last.collect()))
    }

    /// [`Self::run_one`] step by step with each layer's sequential step (the reference the
    /// lock-step kernel is tested against; exact runs, custom formats and stacks with
    /// non-gated layers run this way).
    pub fn run_one_per_sequence(&self, x: &[S], steps: usize, starts: &Starts<S>, fma: bool, ctl: &Control) -> SimResult<SingleRun<S>> {
        self.check_starts(starts, 1)?;
        let init = self.starts_of(starts, 0);
        let top = &init[init.len() - 1];
        let hsz = self.top_hidden();
        let mut states = top[..hsz].to_vec();
        let top_cell = self.layers[self.layers.len() - 1].has_cell_state();
        let mut cells = if top_cell { top[hsz..2 * hsz].to_vec() } else { Vec::new() };
        let seq = self.sequence(x, init, steps, steps, Keep::All, fma, ctl)?;
        states.extend(seq.states);
        cells.extend(seq.cells);
        Ok((states, cells, seq.last))
    }

    /// A batch x (B, T, n) flat: the lock-step kernel (`gated_batch`) for stacks of gated
    /// layers in a builtin float format, else [`Self::run_batch_per_sequence`]; same bits.
    pub fn run_batch(&self, xs: &[S], starts: &Starts<S>, spec: &BatchSpec, ctl: &Control) -> SimResult<CellBatch<S>> {
        match crate::sim::cells::gated_batch::try_lockstep(self, xs, starts, spec, ctl) {
            Some(r) => r,
            None => self.run_batch_per_sequence(xs, starts, spec, ctl),
        }
    }

    /// A batch x (B, T, n) flat, in parallel over sequences, each by the sequential step.
    pub fn run_batch_per_sequence(&self, xs: &[S], starts: &Starts<S>, spec: &BatchSpec, ctl: &Control) -> SimResult<CellBatch<S>> {
        spec.validate()?;
        self.check_starts(starts, spec.batch)?;
        let per = spec.steps * self.input;
        let seqs: Vec<SeqOut<S>> = with_pool(spec.threads, || {
            (0..spec.batch)
                .into_par_iter()
                .map(|b| {
                    let r = self.sequence(&xs[b * per..(b + 1) * per], self.starts_of(starts, b), spec.length(b), spec.steps, spec.keep, spec.fma, ctl);
                    ctl.advance(1);
                    r
                })
                .collect::<SimResult<Vec<_>>>()
        })??;
        let layers = self.layers.len();
        let mut out = CellBatch {
            states: Vec::new(),
            cells: Vec::new(),
            final_h: vec![Vec::new(); layers],
            final_c: self.layers.iter().map(|l| l.has_cell_state().then(Vec::new)).collect(),
        };
        for s in seqs {
            out.states.extend(s.states);
            out.cells.extend(s.cells);
            for (l, st) in s.last.into_iter().enumerate() {
                let hsz = self.layers[l].hidden();
                out.final_h[l].extend_from_slice(&st[..hsz]);
                if let Some(c) = &mut out.final_c[l] {
                    c.extend_from_slice(&st[hsz..2 * hsz]);
                }
            }
        }
        Ok(out)
    }
}
