//! Network → machine: automata extraction.
//!
//! - `rnn_to_dfa`: Theorem 4.5 (lecture notes, seed 001): the reachable hidden states of a
//!   piecewise-linear network, explored exactly, as a minimal DFA.
pub mod rnn_to_dfa;
