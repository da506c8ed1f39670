//! Machines with their own reference interpreters: DFAs and Turing machines.
pub mod dfa;
pub mod random;
pub mod tm;
pub mod tm_builtins;
pub mod tm_text;
pub mod tomita;
pub mod counter_lang;
