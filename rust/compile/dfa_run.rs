//! Running a compiled DFA (Theorem 4.3, lecture notes seed 001) on words in any number
//! format, through the batch engine.
//!
//! Acceptance is read from the network's readout with the threshold 1/2: a word is accepted
//! iff y_T > 1/2 (the exact readout is 1 or 0, so any float run within 1/2 of it agrees).

use crate::compile::dfa_to_rnn::CompiledDfa;
use crate::error::{SimError, SimResult};
use crate::num::dtype::Dtype;
use crate::num::float::Float;
use crate::sim::cancel::Control;
use crate::sim::dispatch::{dispatch_float, FloatTask};
use crate::sim::exact_engine::{ExactPlan, DEFAULT_MAX_BITS};
use crate::sim::float_engine::FloatPlan;
use crate::sim::run::{run_batch_exact, run_batch_float, BatchSpec, Keep};
use malachite::Rational;

/// Most sequences in one batch call (the brief's 65,536-word chunks).
pub(crate) const MAX_BATCH: usize = 1 << 16;
/// Budget, in values, for the inputs and states of one float batch (floats) ...
pub(crate) const FLOAT_VALUES: usize = 1 << 23;
/// ... and of one exact batch (rationals and big-integer numerators are far larger).
pub(crate) const EXACT_VALUES: usize = 1 << 17;

/// y[0] > 1/2 (NaN rejects).
pub(crate) fn float_accepts<F: Float>(y: &[F]) -> bool {
    y.first().is_some_and(|v| v.to_f64() > 0.5)
}

pub(crate) fn exact_accepts(y: &[Rational]) -> bool {
    y.first().is_some_and(|v| *v > Rational::from_signeds(1i32, 2i32))
}

struct FloatAccepts<'a> {
    c: &'a CompiledDfa,
    words: &'a [Vec<usize>],
    threads: Option<usize>,
    ctl: &'a Control,
}

impl FloatTask for FloatAccepts<'_> {
    type Output = SimResult<Vec<bool>>;
    fn run<F: Float>(self) -> Self::Output {
        let plan = FloatPlan::<F>::try_new(&self.c.network)?;
        let m = self.c.n_symbols();
        let mut out = Vec::with_capacity(self.words.len());
        for group in groups(self.words, m, FLOAT_VALUES) {
            let (spec, lengths) = batch_spec(group, self.threads);
            let mut xs = vec![F::zero(); group.len() * spec.steps * m];
            for (b, word) in group.iter().enumerate() {
                for (t, &a) in word.iter().enumerate() {
                    xs[(b * spec.steps + t) * m + a] = F::one();
                }
            }
            let spec = BatchSpec { lengths: Some(lengths), ..spec };
            let r = run_batch_float(&plan, &xs, None, &spec, self.ctl)?;
            out.extend(r.final_outputs.chunks(plan.n_out.max(1)).map(float_accepts));
        }
        Ok(out)
    }
}

/// Consecutive groups of words whose padded inputs (B·T_max·m values) fit `budget`, at
/// most [`MAX_BATCH`] words each.
fn groups(words: &[Vec<usize>], m: usize, budget: usize) -> Vec<&[Vec<usize>]> {
    let mut out = Vec::new();
    let (mut start, mut t_max) = (0, 0);
    for (i, w) in words.iter().enumerate() {
        let t = t_max.max(w.len());
        if i > start && ((i - start + 1) * t * m.max(1) > budget || i - start == MAX_BATCH) {
            out.push(&words[start..i]);
            (start, t_max) = (i, w.len());
        } else {
            t_max = t;
        }
    }
    if start < words.len() {
        out.push(&words[start..]);
    }
    out
}

/// A keep-final batch spec padded to the group's longest word, with the word lengths.
fn batch_spec(group: &[Vec<usize>], threads: Option<usize>) -> (BatchSpec, Vec<usize>) {
    let lengths: Vec<usize> = group.iter().map(Vec::len).collect();
    let steps = lengths.iter().copied().max().unwrap_or(0);
    (BatchSpec { batch: group.len(), steps, lengths: None, keep: Keep::Final, threads, fma: false }, lengths)
}

impl CompiledDfa {
    /// The fields are public, so a hand-edited value may not fit together: the DFA must be
    /// complete, the network must take |Σ| inputs and have a readout (every problem listed).
    pub(crate) fn check_runnable(&self) -> SimResult<()> {
        let mut p = Vec::new();
        if !self.dfa.is_complete() {
            p.push("the compiled DFA must be complete (see Dfa::complete)".to_string());
        }
        if self.network.input_size() != self.n_symbols() {
            p.push(format!(
                "the network takes {} inputs but the alphabet has {} symbols",
                self.network.input_size(),
                self.n_symbols()
            ));
        }
        if self.network.output_size() == 0 {
            p.push("the network has no readout to accept with".to_string());
        }
        if p.is_empty() { Ok(()) } else { Err(SimError::InvalidNetwork(p)) }
    }

    /// Runs each word (symbol indices) through the network in `dtype` and reads the accept
    /// decision y_T > 1/2 at its own length. Words are batched (padded with zero rows to the
    /// batch's longest word and stopped at their `lengths`; at most 65,536 words per batch).
    /// `InvalidInput` lists symbol indices outside the alphabet; `InvalidNetwork` if the
    /// (public, editable) fields no longer fit together.
    pub fn accepts_batch(&self, words: &[Vec<usize>], dtype: Dtype, threads: Option<usize>, ctl: &Control) -> SimResult<Vec<bool>> {
        let m = self.n_symbols();
        let bad: Vec<String> = words
            .iter()
            .enumerate()
            .flat_map(|(i, w)| w.iter().enumerate().filter(|(_, &a)| a >= m).map(move |(t, a)| (i, t, *a)))
            .take(10)
            .map(|(i, t, a)| format!("word {i}: symbol index {a} at position {t} is outside the alphabet (size {m})"))
            .collect();
        if !bad.is_empty() {
            return Err(SimError::InvalidInput(bad));
        }
        self.check_runnable()?;
        if let Some(r) = dispatch_float(dtype, FloatAccepts { c: self, words, threads, ctl }) {
            return r;
        }
        let plan = ExactPlan::new(&self.network, DEFAULT_MAX_BITS)?;
        let mut out = Vec::with_capacity(words.len());
        for group in groups(words, m, EXACT_VALUES) {
            let (spec, lengths) = batch_spec(group, threads);
            let mut xs = vec![Rational::from(0); group.len() * spec.steps * m];
            for (b, word) in group.iter().enumerate() {
                for (t, &a) in word.iter().enumerate() {
                    xs[(b * spec.steps + t) * m + a] = Rational::from(1);
                }
            }
            let spec = BatchSpec { lengths: Some(lengths), ..spec };
            let r = run_batch_exact(&plan, &xs, None, &spec, ctl)?;
            out.extend(r.final_outputs.iter().map(|y| exact_accepts(y)));
        }
        Ok(out)
    }

    /// One word: `accepts_batch(&[word], ..)[0]` on one thread.
    pub fn accepts(&self, word: &[usize], dtype: Dtype, ctl: &Control) -> SimResult<bool> {
        Ok(self.accepts_batch(&[word.to_vec()], dtype, Some(1), ctl)?[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::dfa_to_rnn::dfa_to_rnn;
    use crate::compile::dfa_to_rnn::tests::test_dfas;
    use crate::machine::tomita::parity;

    const ALL_DTYPES: [Dtype; 5] = [Dtype::Exact, Dtype::F64, Dtype::F32, Dtype::Bf16, Dtype::F16];

    #[test]
    fn accepts_batch_matches_the_dfa_and_checks_symbols() {
        let ctl = Control::new();
        for (name, dfa) in test_dfas(30) {
            let c = dfa_to_rnn(&dfa).unwrap();
            let m = c.n_symbols();
            let words: Vec<Vec<usize>> =
                (0..300u64).map(|i| (0..(i * 7 % 23) as usize).map(|t| ((i * 31 + t as u64 * 17) % m as u64) as usize).collect()).collect();
            let want: Vec<bool> = words.iter().map(|w| dfa.accepts(w)).collect();
            for dtype in ALL_DTYPES {
                assert_eq!(c.accepts_batch(&words, dtype, Some(2), &ctl).unwrap(), want, "{name} {dtype:?}");
            }
            assert_eq!(c.accepts(&words[5], Dtype::Exact, &ctl).unwrap(), want[5]);
            match c.accepts_batch(&[vec![0, m], vec![m + 1]], Dtype::F32, None, &ctl) {
                Err(SimError::InvalidInput(p)) => assert_eq!(p.len(), 2),
                other => panic!("{other:?}"),
            }
        }
        let c = dfa_to_rnn(&parity()).unwrap();
        assert!(matches!(c.verify(3, Dtype::F32, Some(0), &ctl), Err(SimError::InvalidInput(_))));
        assert_eq!(c.accepts_batch(&[], Dtype::F16, None, &ctl).unwrap(), Vec::<bool>::new());
    }

    #[test]
    fn edited_fields_that_no_longer_fit_are_refused() {
        let ctl = Control::new();
        let mut c = dfa_to_rnn(&parity()).unwrap();
        c.network.readout = None;
        c.dfa.delta[0][0] = None;
        c.dfa.alphabet.push("2".into());
        for row in c.dfa.delta.iter_mut() {
            row.push(Some(0));
        }
        for dtype in [Dtype::Exact, Dtype::F32] {
            match c.accepts_batch(&[vec![0]], dtype, None, &ctl) {
                Err(SimError::InvalidNetwork(p)) => assert_eq!(p.len(), 3, "{p:?}"),
                other => panic!("{other:?}"),
            }
            assert!(matches!(c.verify(2, dtype, None, &ctl), Err(SimError::InvalidNetwork(_))));
        }
    }
}
