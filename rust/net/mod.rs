//! Networks: the simple RNN of Definition 4.1 with its readout and its saved form, and the
//! gated, deep and second-order cells (one file per cell; `cell` dispatches, `stacked`
//! composes layers, `torch` reads PyTorch state_dicts, `cell_json` saves them).
pub mod activation;
pub mod cell;
pub mod cell_json;
pub mod doubling_lstm;
pub mod gated;
pub mod gru;
pub mod json;
pub mod lstm;
pub mod matrix;
pub mod mlp_cell;
pub mod parts;
pub mod qrnn;
pub mod residual;
pub mod second_order;
pub mod simple_rnn;
pub mod stacked;
pub mod torch;
