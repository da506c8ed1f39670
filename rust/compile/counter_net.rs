//! Counter networks for the counting languages of Weiss, Goldberg & Yahav (2018; seed 003):
//! `build(language, cell)` → a network (one layer, or a stack) with its start state, an
//! affine readout y = w·h_T + c on the top layer's final h (**accept iff y > ½**) and named
//! linear views that decode the counters and flags from layer 0's state [h | c].
//!
//! Which cells can do what (the README's table):
//! - `lstm` (`counter_lstm`): every language; saturated gates count exactly.
//! - `relu` (`counter_relu`): every language; a ReLU SRN with integer weights.
//! - `qrnn` (`counter_qrnn`): anbn and anbncn (counts need no state-dependent update; a
//!   memoryless ReLU layer plays the seed's "classifier g"); not dyck1 or anbn_sigma, whose
//!   updates must depend on the count (stop after aⁿbⁿ; latch when the count goes below 0).
//! - `gru`, `tanh`: none. Their saturated forms have finitely many states (GRU:
//!   h' = (1 − z)·n + z·h with z ∈ {0, ½, 1}, n ∈ {−1, 0, 1} keeps h in a finite set from a
//!   finite start; tanh → sign gives h ∈ {−1, 0, 1}ᵈ), so they are finite automata and cannot
//!   recognise a non-regular language; unsaturated ones in a float format are finite-state too.

use crate::error::{SimError, SimResult};
use crate::machine::counter_lang::Language;
use crate::net::simple_rnn::Linear;
use crate::net::stacked::Stack;
use malachite::Rational;

pub const CELL_NAMES: [&str; 5] = ["lstm", "relu", "qrnn", "gru", "tanh"];

/// p/q as a rational.
pub fn q(p: i64, d: i64) -> Rational {
    Rational::from_signeds(p, d)
}

/// A named value read from layer 0's state [h | c | …]: Σ coef·state[i] + offset.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub name: String,
    pub terms: Vec<(usize, Rational)>,
    pub offset: Rational,
}

impl View {
    pub fn new(name: &str, terms: Vec<(usize, Rational)>, offset: Rational) -> View {
        View { name: name.to_string(), terms, offset }
    }
    pub fn eval(&self, state: &[Rational]) -> Rational {
        self.terms.iter().fold(self.offset.clone(), |acc, (i, c)| acc + c * &state[*i])
    }
}

/// What a construction returns.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterParts {
    pub stack: Stack,
    pub readout: Linear,
    /// start h per layer
    pub h0: Vec<Vec<Rational>>,
    /// start c per layer (None for layers without a cell state)
    pub c0: Vec<Option<Vec<Rational>>>,
    pub views: Vec<View>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CounterNet {
    pub language: Language,
    pub cell: &'static str,
    /// the weight scale ρ of a non-saturated LSTM (None: saturated / exact)
    pub rho: Option<Rational>,
    pub parts: CounterParts,
}

fn unsupported(lang: Language, cell: &str, why: &str) -> SimError {
    SimError::Unsupported(format!("a {cell} network cannot recognise {}: {why}", lang.name()))
}

/// The counter network of `language` on `cell` (names in `CELL_NAMES`). `rho` (LSTM only):
/// None = saturated gates (exact), Some(ρ > 0) = weights ×ρ with real σ/tanh gates.
pub fn build(language: &str, cell: &str, rho: Option<Rational>) -> SimResult<CounterNet> {
    let mut problems = Vec::new();
    let lang = Language::parse(language).map_err(|e| problems.push(e.to_string())).ok();
    let cell_name = CELL_NAMES.iter().find(|c| **c == cell.trim().to_ascii_lowercase()).copied();
    if cell_name.is_none() {
        problems.push(format!("unknown cell {cell:?}: expected one of {}", CELL_NAMES.join(", ")));
    }
    if let Some(r) = &rho {
        if *r <= 0u32 {
            problems.push("saturation must be a positive weight scale ρ (or None for saturated gates)".into());
        } else if cell_name.is_some_and(|c| c != "lstm") {
            problems.push(format!("saturation applies to the lstm counter only (the {} counter has no sigmoid gates)", cell_name.unwrap_or("")));
        }
    }
    let (Some(lang), Some(cell), true) = (lang, cell_name, problems.is_empty()) else {
        return Err(SimError::InvalidInput(problems));
    };
    let parts = match cell {
        "lstm" => super::counter_lstm::build(lang, rho.as_ref())?,
        "relu" => super::counter_relu::build(lang)?,
        "qrnn" => super::counter_qrnn::build(lang)?,
        "gru" => {
            return Err(unsupported(
                lang,
                "GRU",
                "a saturated GRU (z ∈ {0, 1/2, 1}, candidate ∈ {−1, 0, 1}, h' = (1 − z)·n + z·h) reaches only finitely many \
                 states, so it is a finite automaton and cannot count (Weiss et al. 2018: GRUs fail on aⁿbⁿ beyond the trained lengths); \
                 use cell=\"lstm\" or \"relu\"",
            ))
        }
        _ => {
            return Err(unsupported(
                lang,
                "tanh SRN",
                "a saturated tanh SRN has h ∈ {−1, 0, 1}ᵈ, finitely many states, so it is a finite automaton and cannot count \
                 (Weiss et al. 2018); use cell=\"relu\" (the ReLU SRN counts) or \"lstm\"",
            ))
        }
    };
    Ok(CounterNet { language: lang, cell, rho, parts })
}
