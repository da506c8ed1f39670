//! The one error family of rnnsim. Every fallible function returns `Result<T, SimError>`;
//! the bindings map each variant to the Python exception of the same name
//! (`InvalidNetworkError`, `InvalidInputError`, `InvalidMachineError`, `UnsupportedError`,
//! `LimitExceededError`, and `KeyboardInterrupt` for `Interrupted`).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// Bad weights: shape mismatch, NaN/inf, unknown activation, corrupted file. Every problem found.
    InvalidNetwork(Vec<String>),
    /// Bad inputs: wrong width, NaN, bad lengths, unknown dtype, unknown symbol, malformed text.
    InvalidInput(Vec<String>),
    /// A machine (DFA, Turing machine) that fails validation. Every problem found.
    InvalidMachine(Vec<String>),
    /// A request the engine cannot honour (e.g. tanh in exact arithmetic).
    Unsupported(String),
    /// A size, bit or step limit was reached.
    LimitExceeded(String),
    /// The run was cancelled (Ctrl-C).
    Interrupted,
}

impl SimError {
    pub fn invalid_network(msg: impl Into<String>) -> Self {
        SimError::InvalidNetwork(vec![msg.into()])
    }
    pub fn invalid_input(msg: impl Into<String>) -> Self {
        SimError::InvalidInput(vec![msg.into()])
    }
    pub fn invalid_machine(msg: impl Into<String>) -> Self {
        SimError::InvalidMachine(vec![msg.into()])
    }
}

fn join(problems: &[String]) -> String {
    if problems.len() == 1 {
        problems[0].clone()
    } else {
        let mut s = format!("{} problems:", problems.len());
        for p in problems {
            s.push_str("\n  - ");
            s.push_str(p);
        }
        s
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::InvalidNetwork(p) | SimError::InvalidInput(p) | SimError::InvalidMachine(p) => {
                write!(f, "{}", join(p))
            }
            SimError::Unsupported(m) | SimError::LimitExceeded(m) => write!(f, "{m}"),
            SimError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for SimError {}

pub type SimResult<T> = Result<T, SimError>;
