//! Running counter networks (`compile::counter_net`) in any [`Scalar`]: one word tick by
//! tick, batches through the cell batch engine, and the precision sweep.
//!
//! Acceptance: y = c + Σ_j w_j·h_j (j ascending over the nonzero readout weights, each
//! product and sum rounded to the format) on the top layer's final h; accept iff y > ½.
//!
//! **Precision sweep.** For n = 0, 1, …, max_n it runs the words `Language::sweep_words(n)`
//! (e.g. aⁿbⁿ, aⁿbⁿ⁺¹, aⁿ⁺¹bⁿ) and reports the first n at which the network's answer differs
//! from membership. Work sharing, all of it exact consequences of determinism:
//! - the prefixes aⁿ are one incremental run (one tick per n);
//! - the suffix of a word is a list of runs (symbol, count); within run i, before each tick
//!   the state is compared with the state the previous n's word of the same family had in
//!   its run i (same symbol) with the *same number r of symbols left in the run*. Equal
//!   states have equal futures, so on a match the state at the end of the run is the one
//!   recorded then, and the run is skipped. A saturated counter's states coincide after two
//!   ticks of a run (aⁿbʲ and aⁿ⁻¹bʲ⁻¹ have the same count and flags), so sweeping every
//!   n ≤ N costs O(N) ticks instead of O(N²), for aⁿbⁿcⁿ too; a leaking counter (states
//!   never repeat) falls back to O(N²).
//!   Float ±0 compare equal; no comparison in these networks can tell them apart.

use crate::compile::counter_net::CounterNet;
use crate::error::SimResult;
use crate::machine::counter_lang::SweepWord;
use crate::num::scalar::Scalar;
use crate::sim::cancel::Control;
use crate::sim::cells::run::Starts;
use crate::sim::cells::StackPlan;
use crate::sim::run::{BatchSpec, Keep};
use malachite::Rational;
use std::collections::HashMap;

/// The first failure of a sweep: n, the word, and the network's (wrong) answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepFailure {
    pub n: usize,
    pub word: SweepWord,
    pub accepted: bool,
}

type State<S> = Vec<Vec<S>>;
/// A run's symbol and, per remaining count r, the state with r symbols to go and the state at the run's end.
type RunMemo<S> = (usize, HashMap<usize, (State<S>, State<S>)>);

pub struct CounterPlan<S> {
    plan: StackPlan<S>,
    yw: Vec<(usize, S)>,
    yb: S,
    half: S,
    start: State<S>,
    symbols: Vec<Vec<S>>,
    h0: Vec<Vec<S>>,
    c0: Vec<Vec<S>>,
}

struct Buffers<S> {
    next: State<S>,
    scratch: State<S>,
}

impl<S: Scalar> CounterPlan<S> {
    pub fn new(net: &CounterNet) -> SimResult<Self> {
        let p = &net.parts;
        let plan = StackPlan::<S>::new(&p.stack)?;
        let conv = |v: &[Rational]| v.iter().map(S::from_rational).collect::<Vec<S>>();
        let h0: Vec<Vec<S>> = p.h0.iter().map(|v| conv(v)).collect();
        let c0: Vec<Vec<S>> = p.c0.iter().zip(&p.h0).map(|(c, h)| c.as_ref().map_or_else(|| vec![S::zero(); h.len()], |c| conv(c))).collect();
        let start = plan.layers.iter().enumerate().map(|(l, layer)| layer.start(Some(&h0[l]), Some(&c0[l]))).collect();
        let yw = (0..p.readout.w.cols).filter(|&j| *p.readout.w.get(0, j) != 0u32).map(|j| (j, S::from_rational(p.readout.w.get(0, j)))).collect();
        let n = plan.input;
        let symbols = (0..n).map(|k| (0..n).map(|j| if j == k { S::one() } else { S::zero() }).collect()).collect();
        Ok(CounterPlan { yw, yb: S::from_rational(&p.readout.b[0]), half: S::from_rational(&Rational::from_signeds(1i64, 2i64)), start, symbols, h0, c0, plan })
    }

    fn buffers(&self) -> Buffers<S> {
        Buffers {
            next: self.plan.layers.iter().map(|l| vec![S::zero(); l.state_len()]).collect(),
            scratch: self.plan.layers.iter().map(|l| vec![S::zero(); l.scratch_len()]).collect(),
        }
    }

    /// The start state of every layer.
    pub fn start(&self) -> State<S> {
        self.start.clone()
    }

    fn step(&self, st: &mut State<S>, sym: usize, buf: &mut Buffers<S>) {
        for (l, layer) in self.plan.layers.iter().enumerate() {
            let (done, rest) = st.split_at_mut(l);
            let input = if l == 0 { &self.symbols[sym][..] } else { &done[l - 1][..self.plan.layers[l - 1].hidden()] };
            layer.step(&rest[0], input, &mut buf.next[l], &mut buf.scratch[l], false);
            std::mem::swap(&mut rest[0], &mut buf.next[l]);
        }
    }

    /// The readout y on the top layer's h.
    pub fn output(&self, top_h: &[S]) -> S {
        self.yw.iter().fold(self.yb.clone(), |acc, (j, w)| acc.add(&w.mul(&top_h[*j])))
    }

    pub fn accepts_state(&self, st: &State<S>) -> bool {
        self.output(&st[st.len() - 1]).gt_half(&self.half)
    }

    /// Every layer's state after each symbol of `word` (t = 0..T).
    pub fn trace(&self, word: &[usize]) -> Vec<State<S>> {
        let mut buf = self.buffers();
        let mut st = self.start();
        let mut out = vec![st.clone()];
        for &s in word {
            self.step(&mut st, s, &mut buf);
            out.push(st.clone());
        }
        out
    }

    /// Accept/reject for each word, through the cell batch engine (parallel over words).
    pub fn accepts_batch(&self, words: &[Vec<usize>], threads: Option<usize>, ctl: &Control) -> SimResult<Vec<bool>> {
        let steps = words.iter().map(Vec::len).max().unwrap_or(0);
        let n = self.plan.input;
        let mut xs = vec![S::zero(); words.len() * steps * n];
        for (b, w) in words.iter().enumerate() {
            for (t, &s) in w.iter().enumerate() {
                xs[(b * steps + t) * n + s] = S::one();
            }
        }
        let batch = words.len();
        let rep = |v: &Vec<S>| -> Vec<S> { (0..batch).flat_map(|_| v.iter().cloned()).collect() };
        let starts = Starts { h0: Some(self.h0.iter().map(rep).collect()), c0: Some(self.c0.iter().map(rep).collect()) };
        let spec = BatchSpec { batch, steps, lengths: Some(words.iter().map(Vec::len).collect()), keep: Keep::Final, threads, fma: false };
        let res = self.plan.run_batch(&xs, &starts, &spec, ctl)?;
        let top = &res.final_h[res.final_h.len() - 1];
        let hsz = self.plan.top_hidden();
        Ok((0..batch).map(|b| self.output(&top[b * hsz..(b + 1) * hsz]).gt_half(&self.half)).collect())
    }

    /// The first n ≤ max_n at which a sweep word is answered wrongly (see the module doc).
    pub fn sweep(&self, net: &CounterNet, max_n: usize, ctl: &Control) -> SimResult<Option<SweepFailure>> {
        let lang = net.language;
        let mut buf = self.buffers();
        let mut pre = self.start(); // after aⁿ
        let mut pre_next = self.start(); // after aⁿ⁺¹
        self.step(&mut pre_next, 0, &mut buf);
        let families = lang.sweep_words(1).len();
        // per family and run index: the previous n's (symbol, remaining r → (state, state at the run's end))
        let mut memo: Vec<Vec<RunMemo<S>>> = vec![Vec::new(); families];
        for n in 0..=max_n {
            ctl.check()?;
            for (k, word) in lang.sweep_words(n).into_iter().enumerate() {
                let mut st = if word.prefix == n { pre.clone() } else { pre_next.clone() };
                let fam = &mut memo[k.min(families - 1)];
                for (i, &(sym, count)) in word.runs.iter().enumerate() {
                    let prev = fam.get(i).filter(|m| m.0 == sym);
                    let mut pending: Vec<(usize, State<S>)> = Vec::new();
                    for r in (1..=count).rev() {
                        if let Some((s, end)) = prev.and_then(|m| m.1.get(&r)) {
                            if *s == st {
                                st = end.clone();
                                break;
                            }
                        }
                        pending.push((r, st.clone()));
                        self.step(&mut st, sym, &mut buf);
                    }
                    let table: HashMap<usize, (State<S>, State<S>)> = pending.into_iter().map(|(r, s)| (r, (s, st.clone()))).collect();
                    if i < fam.len() {
                        fam[i] = (sym, table);
                    } else {
                        fam.push((sym, table));
                    }
                }
                let accepted = self.accepts_state(&st);
                if accepted != lang.member_runs(&word.runs()) {
                    return Ok(Some(SweepFailure { n, word, accepted }));
                }
            }
            std::mem::swap(&mut pre, &mut pre_next);
            pre_next = pre.clone();
            self.step(&mut pre_next, 0, &mut buf);
        }
        Ok(None)
    }
}

/// y > ½ in the scalar's own comparison.
trait GtHalf {
    fn gt_half(&self, half: &Self) -> bool;
}
impl<S: Scalar> GtHalf for S {
    fn gt_half(&self, half: &S) -> bool {
        *self > *half
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::counter_net::build;
    use crate::machine::counter_lang::LANGUAGE_NAMES;
    use half::{bf16, f16};

    fn words(alphabet: usize, max_len: usize) -> Vec<Vec<usize>> {
        let mut out = vec![vec![]];
        let mut last = vec![vec![]];
        for _ in 0..max_len {
            last = last.iter().flat_map(|w: &Vec<usize>| (0..alphabet).map(move |s| [w.clone(), vec![s]].concat())).collect();
            out.extend(last.iter().cloned());
        }
        out
    }

    #[test]
    fn every_construction_is_exact_on_short_words() {
        let ctl = Control::new();
        for cell in ["lstm", "relu", "qrnn"] {
            for lang in LANGUAGE_NAMES {
                let Ok(net) = build(lang, cell, None) else { continue };
                let plan = CounterPlan::<Rational>::new(&net).unwrap();
                let ws = words(net.language.alphabet().len(), 7);
                let got = plan.accepts_batch(&ws, Some(1), &ctl).unwrap();
                for (w, g) in ws.iter().zip(got) {
                    assert_eq!(g, net.language.member(w), "{cell} {lang} {w:?}");
                    assert_eq!(g, plan.accepts_state(plan.trace(w).last().unwrap()));
                }
            }
        }
    }

    #[test]
    fn sweep_finds_the_significand_limit_and_agrees_with_single_words() {
        let ctl = Control::new();
        let net = build("anbn", "lstm", None).unwrap();
        let fail = CounterPlan::<bf16>::new(&net).unwrap().sweep(&net, 200, &ctl).unwrap().unwrap();
        assert_eq!(fail.n, 128);
        let plan = CounterPlan::<bf16>::new(&net).unwrap();
        let w = fail.word.symbols();
        assert_eq!(plan.accepts_state(plan.trace(&w).last().unwrap()), fail.accepted);
        assert_ne!(fail.accepted, net.language.member(&w));
        assert!(CounterPlan::<Rational>::new(&net).unwrap().sweep(&net, 300, &ctl).unwrap().is_none());
        let relu = build("dyck1", "relu", None).unwrap();
        assert_eq!(CounterPlan::<f16>::new(&relu).unwrap().sweep(&relu, 2100, &ctl).unwrap().unwrap().n, 2048);
    }

    #[test]
    fn unsupported_and_invalid_requests() {
        assert!(matches!(build("anbn", "gru", None), Err(crate::error::SimError::Unsupported(_))));
        assert!(matches!(build("dyck1", "qrnn", None), Err(crate::error::SimError::Unsupported(_))));
        assert!(matches!(build("anbm", "lstm", None), Err(crate::error::SimError::InvalidInput(_))));
        assert!(matches!(build("anbn", "relu", Some(Rational::from(3))), Err(crate::error::SimError::InvalidInput(_))));
    }
}
