//! rnnsim: exact and finite-precision simulation of recurrent neural networks.
//!
//! Layout: `num` (number formats), `net` (networks), `sim` (engines and runs),
//! `machine` (DFAs and Turing machines with their own interpreters), `compile`
//! (machine → network constructions), `extract` (network → machine), and `py` (the PyO3
//! bindings, the only file that knows about Python).

pub mod compile;
pub mod error;
pub mod extract;
pub mod machine;
pub mod net;
pub mod num;
pub mod sim;

#[cfg(feature = "python")]
mod py;
