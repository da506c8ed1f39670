//! Checking a compiled DFA (Theorem 4.3, lecture notes seed 001) against the DFA itself,
//! in any number format, by running the network on every word up to a length.
//!
//! Acceptance is read from the network's readout with the threshold 1/2: a word is accepted
//! iff y_T > 1/2 (the exact readout is 1 or 0, so any float run within 1/2 of it agrees).

use crate::compile::dfa_to_rnn::CompiledDfa;
use crate::error::{SimError, SimResult};
use crate::num::dtype::Dtype;
use crate::num::exact_vector::ExactVector;
use crate::num::float::Float;
use crate::sim::cancel::Control;
use crate::sim::dispatch::{dispatch_float, FloatTask};
use crate::sim::exact_engine::{ExactPlan, DEFAULT_MAX_BITS};
use crate::sim::float_engine::FloatPlan;
use crate::sim::run::{run_batch_exact, run_batch_float, BatchSpec};
use malachite::Rational;
use std::cmp::Ordering;

/// Most sequences in one batch call (the brief's 65,536-word chunks).
const MAX_BATCH: usize = 1 << 16;
/// Budget, in values, for the inputs and states of one float batch (floats) ...
const FLOAT_VALUES: usize = 1 << 23;
/// ... and of one exact batch (rationals and big-integer numerators are far larger).
const EXACT_VALUES: usize = 1 << 17;

/// One batch engine seen as a word-tree expander: states of words in, states of the words
/// one symbol longer out (parent-major, symbol-minor), with their accept decisions.
trait Expander: Sync {
    type Elem: Clone + Send + Sync;
    /// Elems per hidden state.
    fn width(&self) -> usize;
    /// h_0 and whether y_0 accepts (the empty word).
    fn root(&self) -> (Vec<Self::Elem>, bool);
    /// Most parents per `expand` call.
    fn chunk(&self) -> usize;
    fn expand(&self, parents: &[Self::Elem], ctl: &Control) -> SimResult<(Vec<Self::Elem>, Vec<bool>)>;
}

struct FloatExpander<F: Float> {
    plan: FloatPlan<F>,
    m: usize,
    threads: Option<usize>,
}

impl<F: Float> Expander for FloatExpander<F> {
    type Elem = F;
    fn width(&self) -> usize {
        self.plan.d
    }
    fn root(&self) -> (Vec<F>, bool) {
        let mut y = vec![F::zero(); self.plan.n_out];
        self.plan.output(&self.plan.h0, &mut y);
        (self.plan.h0.clone(), float_accepts(&y))
    }
    fn chunk(&self) -> usize {
        let per_parent = self.m * (self.m + 2 * self.plan.d + self.plan.n_out);
        (FLOAT_VALUES / per_parent.max(1)).clamp(1, (MAX_BATCH / self.m.max(1)).max(1))
    }
    fn expand(&self, parents: &[F], ctl: &Control) -> SimResult<(Vec<F>, Vec<bool>)> {
        let (d, m) = (self.plan.d, self.m);
        let b = parents.len() / d.max(1);
        let mut xs = vec![F::zero(); b * m * m];
        let mut h0 = Vec::with_capacity(b * m * d);
        for p in 0..b {
            for a in 0..m {
                xs[(p * m + a) * m + a] = F::one();
                h0.extend_from_slice(&parents[p * d..(p + 1) * d]);
            }
        }
        let spec = BatchSpec { batch: b * m, steps: 1, lengths: None, keep_all: false, threads: self.threads };
        let r = run_batch_float(&self.plan, &xs, Some(&h0), &spec, ctl)?;
        let accept = r.final_outputs.chunks(self.plan.n_out.max(1)).map(float_accepts).collect();
        Ok((r.final_states, accept))
    }
}

/// y[0] > 1/2 (NaN rejects).
fn float_accepts<F: Float>(y: &[F]) -> bool {
    y.first().is_some_and(|v| v.to_f64() > 0.5)
}

fn exact_accepts(y: &[Rational]) -> bool {
    y.first().is_some_and(|v| *v > Rational::from_signeds(1i32, 2i32))
}

struct ExactExpander {
    plan: ExactPlan,
    m: usize,
    threads: Option<usize>,
}

impl Expander for ExactExpander {
    type Elem = ExactVector;
    fn width(&self) -> usize {
        1
    }
    fn root(&self) -> (Vec<ExactVector>, bool) {
        (vec![self.plan.h0.clone()], exact_accepts(&self.plan.output(&self.plan.h0)))
    }
    fn chunk(&self) -> usize {
        let per_parent = self.m * (self.m + 2 * self.plan.d);
        (EXACT_VALUES / per_parent.max(1)).clamp(1, (MAX_BATCH / self.m.max(1)).max(1))
    }
    fn expand(&self, parents: &[ExactVector], ctl: &Control) -> SimResult<(Vec<ExactVector>, Vec<bool>)> {
        let m = self.m;
        let b = parents.len();
        let mut xs = vec![Rational::from(0); b * m * m];
        let mut h0 = Vec::with_capacity(b * m);
        for (p, parent) in parents.iter().enumerate() {
            for a in 0..m {
                xs[(p * m + a) * m + a] = Rational::from(1);
                h0.push(parent.clone());
            }
        }
        let spec = BatchSpec { batch: b * m, steps: 1, lengths: None, keep_all: false, threads: self.threads };
        let r = run_batch_exact(&self.plan, &xs, Some(h0), &spec, ctl)?;
        let accept = r.final_outputs.iter().map(|y| exact_accepts(y)).collect();
        Ok((r.final_states, accept))
    }
}

/// Depth-first walk of the word tree, a block of up to `chunk` sibling-ordered words at a
/// time, remembering the least counterexample in (length, lexicographic) order.
struct Search<'a, E: Expander> {
    ex: &'a E,
    c: &'a CompiledDfa,
    max_len: usize,
    best: Option<Vec<usize>>,
    ctl: &'a Control,
}

impl<E: Expander> Search<'_, E> {
    fn offer(&mut self, word: Vec<usize>) {
        let better = match &self.best {
            None => true,
            Some(b) => (word.len(), &word).cmp(&(b.len(), b)) == Ordering::Less,
        };
        if better {
            self.best = Some(word);
        }
    }

    /// `words` (flat, `len` symbols each), their DFA states `qs` and network states are
    /// already checked; checks and descends into all their extensions.
    fn visit(&mut self, len: usize, words: &[u32], qs: &[usize], states: &[E::Elem]) -> SimResult<()> {
        let (m, w) = (self.c.n_symbols(), self.ex.width());
        if len >= self.max_len || m == 0 || self.best.as_ref().is_some_and(|b| b.len() <= len) {
            return Ok(());
        }
        let chunk = self.ex.chunk();
        for start in (0..qs.len()).step_by(chunk) {
            let end = (start + chunk).min(qs.len());
            self.ctl.check()?;
            let (children, accepts) = self.ex.expand(&states[start * w..end * w], self.ctl)?;
            let mut cw = Vec::with_capacity((end - start) * m * (len + 1));
            let mut cq = Vec::with_capacity((end - start) * m);
            for p in start..end {
                for a in 0..m {
                    cw.extend_from_slice(&words[p * len..(p + 1) * len]);
                    cw.push(a as u32);
                    cq.push(self.c.dfa.delta[qs[p]][a].expect("a compiled DFA is complete"));
                }
            }
            let wrong = (0..cq.len()).find(|&i| accepts[i] != self.c.dfa.accept[cq[i]]);
            if let Some(i) = wrong {
                let word = cw[i * (len + 1)..(i + 1) * (len + 1)].iter().map(|&a| a as usize).collect();
                self.offer(word);
            }
            self.visit(len + 1, &cw, &cq, &children)?;
        }
        Ok(())
    }
}

fn search<E: Expander>(ex: &E, c: &CompiledDfa, max_len: usize, ctl: &Control) -> SimResult<Option<Vec<usize>>> {
    let (h0, accepts) = ex.root();
    if accepts != c.dfa.accept[c.dfa.start] {
        return Ok(Some(Vec::new()));
    }
    let mut s = Search { ex, c, max_len, best: None, ctl };
    s.visit(0, &[], &[c.dfa.start], &h0)?;
    Ok(s.best)
}

struct FloatVerify<'a> {
    c: &'a CompiledDfa,
    max_len: usize,
    threads: Option<usize>,
    ctl: &'a Control,
}

impl FloatTask for FloatVerify<'_> {
    type Output = SimResult<Option<Vec<usize>>>;
    fn run<F: Float>(self) -> Self::Output {
        let ex = FloatExpander::<F> { plan: FloatPlan::new(&self.c.network), m: self.c.n_symbols(), threads: self.threads };
        search(&ex, self.c, self.max_len, self.ctl)
    }
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
        let plan = FloatPlan::<F>::new(&self.c.network);
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
    (BatchSpec { batch: group.len(), steps, lengths: None, keep_all: false, threads }, lengths)
}

impl CompiledDfa {
    /// Exhaustive check of the network against the DFA (Theorem 4.3, lecture notes seed 001):
    /// every word over the alphabet of length 0..=`max_len` is run through the network in
    /// the number format `dtype`, and the readout's decision (accept iff y > 1/2) is compared
    /// with the DFA's. Returns the first counterexample in (length, lexicographic) order,
    /// or `None` when all Σ_{L ≤ max_len} |Σ|^L words agree.
    ///
    /// The words are enumerated as a tree: each word's hidden state is computed by one tick
    /// of the batch engine (`run_batch_float` / `run_batch_exact`, keep-final, one step, the
    /// parent word's state as h0) from the state of the word one symbol shorter. A tick is a
    /// deterministic function of (h, x), so every state is bit for bit the state of running
    /// the whole word from h_0, at one tick per word instead of L. Batches hold at most
    /// 65,536 words, and at most one batch per word length is alive, so memory stays
    /// bounded by max_len batches. Cancellation via `ctl` stops it between and within ticks.
    pub fn verify(&self, max_len: usize, dtype: Dtype, threads: Option<usize>, ctl: &Control) -> SimResult<Option<Vec<usize>>> {
        let task = FloatVerify { c: self, max_len, threads, ctl };
        match dispatch_float(dtype, task) {
            Some(r) => r,
            None => {
                let plan = ExactPlan::new(&self.network, DEFAULT_MAX_BITS)?;
                let ex = ExactExpander { plan, m: self.n_symbols(), threads };
                search(&ex, self, max_len, ctl)
            }
        }
    }

    /// Runs each word (symbol indices) through the network in `dtype` and reads the accept
    /// decision y_T > 1/2 at its own length. Words are batched (padded with zero rows to the
    /// batch's longest word and stopped at their `lengths`). `InvalidInput` lists symbol
    /// indices outside the alphabet.
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
    use crate::machine::tomita::{parity, tomita};
    use std::time::Instant;

    const ALL_DTYPES: [Dtype; 5] = [Dtype::Exact, Dtype::F64, Dtype::F32, Dtype::Bf16, Dtype::F16];

    /// Every word over m symbols of length ≤ max_len, in (length, lexicographic) order.
    fn all_words(m: usize, max_len: usize) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new()];
        let mut level = vec![Vec::new()];
        for _ in 0..max_len {
            level = level.iter().flat_map(|w: &Vec<usize>| (0..m).map(move |a| [w.clone(), vec![a]].concat())).collect();
            out.extend(level.iter().cloned());
        }
        out
    }

    /// The first word (length, then lexicographic) on which full runs of the network
    /// disagree with the DFA: the oracle for `verify`.
    fn first_disagreement(c: &CompiledDfa, max_len: usize, dtype: Dtype) -> Option<Vec<usize>> {
        let words = all_words(c.n_symbols(), max_len);
        let got = c.accepts_batch(&words, dtype, Some(2), &Control::new()).unwrap();
        words.into_iter().zip(got).find(|(w, g)| *g != c.dfa.accepts(w)).map(|(w, _)| w)
    }

    #[test]
    fn verify_finds_no_counterexample_in_any_format() {
        let ctl = Control::new();
        for (name, dfa) in test_dfas(200) {
            let c = dfa_to_rnn(&dfa).unwrap();
            let max_len = if c.n_symbols() <= 2 { 10 } else { 7 };
            for dtype in ALL_DTYPES {
                assert_eq!(c.verify(max_len, dtype, Some(2), &ctl).unwrap(), None, "{name} {dtype:?}");
            }
        }
    }

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
    }

    #[test]
    fn broken_networks_give_the_least_counterexample() {
        // every single-weight change of the parity and Tomita-3 networks: verify (word tree,
        // one tick per word) must return exactly the first disagreement of full runs
        let mut broken = 0;
        for dfa in [parity(), tomita(3).unwrap()] {
            let c = dfa_to_rnn(&dfa).unwrap();
            let n = c.network.hidden_size();
            for idx in 0..n * n + 2 * n {
                let mut bad = c.clone();
                let slot = match idx {
                    i if i < n * n => &mut bad.network.v.data[i],
                    i if i < n * n + n => &mut bad.network.w.data[i - n * n],
                    i => &mut bad.network.b[i - n * n - n],
                };
                *slot = if *slot == 0u32 { Rational::from(1) } else { Rational::from(0) };
                let want = first_disagreement(&bad, 6, Dtype::Exact);
                broken += usize::from(want.is_some());
                for dtype in [Dtype::Exact, Dtype::F32] {
                    assert_eq!(bad.verify(6, dtype, Some(2), &Control::new()).unwrap(), want, "weight {idx} {dtype:?}");
                }
            }
        }
        assert!(broken > 20, "only {broken} single-weight changes were caught");
    }

    #[test]
    fn cancelled_verify_stops() {
        let c = dfa_to_rnn(&tomita(4).unwrap()).unwrap();
        let ctl = Control::new();
        ctl.cancel();
        for dtype in [Dtype::Exact, Dtype::F32] {
            assert_eq!(c.verify(12, dtype, None, &ctl), Err(SimError::Interrupted));
        }
    }

    #[test]
    fn verify_20_on_tomita_3_timing() {
        let c = dfa_to_rnn(&tomita(3).unwrap()).unwrap();
        for dtype in [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::Exact] {
            let t = Instant::now();
            let r = c.verify(20, dtype, Some(2), &Control::new()).unwrap();
            println!("tomita 3: verify(20, {dtype:?}, 2 threads) = {r:?} in {:.2?} (2,097,151 words)", t.elapsed());
            assert_eq!(r, None);
        }
    }
}
