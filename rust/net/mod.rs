//! Networks: the simple RNN of Definition 4.1 with its readout, and its saved form.
pub mod activation;
pub mod json;
pub mod matrix;
pub mod simple_rnn;
