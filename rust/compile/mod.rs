//! Machine → network constructions, one file per construction.
//!
//! - `two_layer_to_rnn`: Lemma 4.4 (lecture notes, seed 001): a two-layer ReLU recurrence as
//!   one simple ReLU RNN.
//! - `dfa_to_rnn`: Theorem 4.3 (Minsky 1967): a DFA as a simple ReLU RNN with integer
//!   weights; `dfa_run` runs it on words in any number format (`accepts_batch`), and
//!   `dfa_verify` checks it exhaustively against the DFA (`verify`).
//! - `tm_to_rnn`: Theorem 4.6 (Siegelmann–Sontag): a Turing machine as a simple slu RNN with
//!   rational weights, one tick per step; `tm_layout` names its units, `tm_codec` decodes
//!   states into configurations, `tm_run` runs, verifies and measures precision horizons.
//! - `counter_net`: counting languages (aⁿbⁿ, aⁿbⁿcⁿ, Dyck-1, aⁿbⁿΣ*; Weiss et al. 2018, seed
//!   003) as LSTM (`counter_lstm`), ReLU SRN (`counter_relu`) and QRNN (`counter_qrnn`)
//!   networks; `sim::counter_run` runs them and sweeps float formats.
pub mod dfa_run;
pub mod dfa_to_rnn;
pub mod dfa_verify;
pub mod two_layer_to_rnn;
pub mod linear_form;
pub mod tm_codec;
pub mod tm_layout;
pub mod tm_run;
pub mod tm_to_rnn;
pub mod counter_lstm;
pub mod counter_net;
pub mod counter_qrnn;
pub mod counter_relu;
