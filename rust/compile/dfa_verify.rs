//! Checking a compiled DFA (Theorem 4.3, lecture notes seed 001) against the DFA itself,
//! in any number format, by running the network on every word up to a length. Acceptance
//! is y > 1/2, as in `dfa_run`.

use crate::compile::dfa_run::{exact_accepts, float_accepts, EXACT_VALUES, FLOAT_VALUES, MAX_BATCH};
use crate::compile::dfa_to_rnn::CompiledDfa;
use crate::error::SimResult;
use crate::num::dtype::Dtype;
use crate::num::exact_vector::ExactVector;
use crate::num::float::Float;
use crate::sim::cancel::Control;
use crate::sim::dispatch::{dispatch_float, FloatTask};
use crate::sim::exact_engine::{Affine, ExactPlan, DEFAULT_MAX_BITS};
use crate::sim::pool::with_pool;
use rayon::prelude::*;
use crate::sim::float_engine::FloatPlan;
use crate::sim::run::{run_batch_float, BatchSpec, Keep};
use malachite::Rational;
use std::cmp::Ordering;

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
        self.plan.output(&self.plan.h0, &mut y, false);
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
        let spec = BatchSpec { batch: b * m, steps: 1, lengths: None, keep: Keep::Final, threads: self.threads, fma: false };
        let r = run_batch_float(&self.plan, &xs, Some(&h0), &spec, ctl)?;
        let accept = r.final_outputs.chunks(self.plan.n_out.max(1)).map(float_accepts).collect();
        Ok((r.final_states, accept))
    }
}

struct ExactExpander {
    plan: ExactPlan,
    /// W x + b of each symbol's one-hot row, computed once
    affines: Vec<Affine>,
    m: usize,
    threads: Option<usize>,
}

impl ExactExpander {
    fn new(plan: ExactPlan, m: usize, threads: Option<usize>) -> Self {
        let affines = (0..m)
            .map(|a| plan.affine(&(0..m).map(|i| Rational::from(u32::from(i == a))).collect::<Vec<_>>()))
            .collect();
        ExactExpander { plan, affines, m, threads }
    }
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
    /// One exact tick per (parent, symbol), parallel over parents; the same ticks a batch
    /// run would do, without rebuilding W x + b for every word.
    fn expand(&self, parents: &[ExactVector], ctl: &Control) -> SimResult<(Vec<ExactVector>, Vec<bool>)> {
        let rows: Vec<SimResult<Vec<(ExactVector, bool)>>> = with_pool(self.threads, || {
            parents
                .par_iter()
                .map(|p| {
                    ctl.check()?;
                    self.affines
                        .iter()
                        .map(|c| {
                            let h = self.plan.tick(p, c)?;
                            let acc = exact_accepts(&self.plan.output(&h));
                            Ok((h, acc))
                        })
                        .collect()
                })
                .collect()
        })?;
        let mut states = Vec::with_capacity(parents.len() * self.m);
        let mut accept = Vec::with_capacity(parents.len() * self.m);
        for row in rows {
            for (h, a) in row? {
                states.push(h);
                accept.push(a);
            }
        }
        Ok((states, accept))
    }
}

/// One level of the depth-first walk: a block of words of the same length (the level's
/// depth), parent-major and symbol-minor, so word i is (word `parent_start + i / m` of the
/// level above) followed by symbol `i % m`; their DFA states and network states, and the
/// first word not yet expanded.
struct Level<T> {
    parent_start: usize,
    qs: Vec<usize>,
    states: Vec<T>,
    next: usize,
}

/// The word of node `i` of the deepest level, rebuilt through the levels' parent links.
fn word_at<T>(levels: &[Level<T>], mut i: usize, m: usize) -> Vec<usize> {
    let mut word = Vec::with_capacity(levels.len());
    for level in levels[1..].iter().rev() {
        word.push(i % m);
        i = level.parent_start + i / m;
    }
    word.reverse();
    word
}

/// Depth-first walk of the word tree with an explicit stack, expanding up to `chunk`
/// words of a level per batch; returns the least counterexample in (length,
/// lexicographic) order among the words of length ≤ `max_len`. Levels deeper than a
/// counterexample already found are not expanded.
fn search<E: Expander>(ex: &E, c: &CompiledDfa, max_len: usize, ctl: &Control) -> SimResult<Option<Vec<usize>>> {
    let (h0, accepts) = ex.root();
    if accepts != c.dfa.accept[c.dfa.start] {
        return Ok(Some(Vec::new()));
    }
    let (m, w, chunk) = (c.n_symbols(), ex.width(), ex.chunk());
    let mut best: Option<Vec<usize>> = None;
    let mut levels = vec![Level { parent_start: 0, qs: vec![c.dfa.start], states: h0, next: 0 }];
    while !levels.is_empty() {
        let depth = levels.len() - 1;
        let top = &mut levels[depth];
        let limit = best.as_ref().map_or(max_len, |b| b.len().min(max_len));
        if top.next >= top.qs.len() || depth >= limit || m == 0 {
            levels.pop();
            continue;
        }
        ctl.check()?;
        let (start, end) = (top.next, (top.next + chunk).min(top.qs.len()));
        top.next = end;
        let (states, accepts) = ex.expand(&top.states[start * w..end * w], ctl)?;
        let qs: Vec<usize> = top.qs[start..end]
            .iter()
            .flat_map(|&q| c.dfa.delta[q].iter().map(|t| t.expect("a compiled DFA is complete")))
            .collect();
        let wrong = (0..qs.len()).find(|&i| accepts[i] != c.dfa.accept[qs[i]]);
        levels.push(Level { parent_start: start, qs, states, next: 0 });
        if let Some(i) = wrong {
            let word = word_at(&levels, i, m);
            if best.as_ref().is_none_or(|b| (word.len(), &word).cmp(&(b.len(), b)) == Ordering::Less) {
                best = Some(word);
            }
        }
    }
    Ok(best)
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
        let ex = FloatExpander::<F> { plan: FloatPlan::try_new(&self.c.network)?, m: self.c.n_symbols(), threads: self.threads };
        search(&ex, self.c, self.max_len, self.ctl)
    }
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
    /// bounded by max_len batches. Cancellation via `ctl` stops it between batches and within
    /// one. `InvalidNetwork` if the (public, editable) fields no longer fit together.
    pub fn verify(&self, max_len: usize, dtype: Dtype, threads: Option<usize>, ctl: &Control) -> SimResult<Option<Vec<usize>>> {
        self.check_runnable()?;
        let task = FloatVerify { c: self, max_len, threads, ctl };
        match dispatch_float(dtype, task) {
            Some(r) => r,
            None => {
                let plan = ExactPlan::new(&self.network, DEFAULT_MAX_BITS)?;
                let ex = ExactExpander::new(plan, self.n_symbols(), threads);
                search(&ex, self, max_len, ctl)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SimError;
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
        let mut time = [std::time::Duration::ZERO; 5];
        for (name, dfa) in test_dfas(200) {
            let c = dfa_to_rnn(&dfa).unwrap();
            let max_len = if c.n_symbols() <= 2 { 10 } else { 6 };
            for (i, dtype) in ALL_DTYPES.into_iter().enumerate() {
                let t = Instant::now();
                assert_eq!(c.verify(max_len, dtype, Some(2), &ctl).unwrap(), None, "{name} {dtype:?}");
                time[i] += t.elapsed();
            }
        }
        println!("verify time per dtype {ALL_DTYPES:?}: {time:.2?}");
    }

    #[test]
    fn broken_networks_give_the_least_counterexample() {
        // every single-weight change of the parity and Tomita-3 networks: verify (word tree,
        // one tick per word) must return exactly the first disagreement of full runs
        let mut broken = 0;
        for dfa in [parity(), tomita(3).unwrap()] {
            let c = dfa_to_rnn(&dfa).unwrap();
            let n = c.network.hidden_size();
            let m = c.network.w.cols;
            let nw = n * m;
            let flip = |x: &Rational| if *x == 0u32 { Rational::from(1) } else { Rational::from(0) };
            for idx in 0..n * n + nw + n {
                let mut bad = c.clone();
                match idx {
                    i if i < n * n => {
                        let v = flip(bad.network.v.get(i / n, i % n));
                        bad.network.v.set(i / n, i % n, v);
                    }
                    i if i < n * n + nw => {
                        let (r, col) = ((i - n * n) / m, (i - n * n) % m);
                        let v = flip(bad.network.w.get(r, col));
                        bad.network.w.set(r, col, v);
                    }
                    i => bad.network.b[i - n * n - nw] = flip(&bad.network.b[i - n * n - nw]),
                }
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
    fn long_words_over_one_symbol() {
        // a^n with n ≡ 0 (mod 7): a 7-cycle; 3000 levels deep, one word per level
        let n = 7;
        let delta = (0..n).map(|q| vec![Some((q + 1) % n)]).collect();
        let accept = (0..n).map(|q| q == 0).collect();
        let names = (0..n).map(|q| format!("q{q}")).collect();
        let dfa = crate::machine::dfa::Dfa::from_table(names, vec!["a".into()], delta, 0, accept).unwrap();
        let c = dfa_to_rnn(&dfa).unwrap();
        for dtype in [Dtype::Exact, Dtype::F16] {
            assert_eq!(c.verify(3000, dtype, Some(2), &Control::new()).unwrap(), None);
        }
        // accept q3 too: the first wrong word is a^3
        let mut bad = c.clone();
        bad.network.readout.as_mut().unwrap().w.set(0, 1 + 2, Rational::from(1));
        assert_eq!(bad.verify(3000, Dtype::F32, None, &Control::new()).unwrap(), Some(vec![0; 3]));
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
