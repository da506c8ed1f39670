//! Running a compiled Turing machine's network: tick by tick in any number format, with the
//! step accounting of CONSTRUCTION.md §8, a check against the machine's own interpreter, and
//! the precision horizon of a float format.
//!
//! Ticks 1..|w| read the word; tick |w|+j reads EOS and performs TM step j. The machine has
//! stopped once the readout is ±1 (floats: |y| ≥ 1/2); it stopped after
//! s = tick − |w| steps, except that a start configuration that is already final (a stopping
//! start state, or no transition for it) shows at tick |w|+1 with s = 0.

use crate::compile::tm_codec::{Reading, TmView};
use crate::compile::tm_to_rnn::CompiledTm;
use crate::error::{SimError, SimResult};
use crate::num::dtype::Dtype;
use crate::sim::cancel::Control;
use crate::sim::ticker::{ticker, NetTicker};
use malachite::Rational;
use std::sync::Arc;

/// A compiled machine's network fed with a word then EOS, one tick per call.
pub struct TmTicker {
    pub ctm: Arc<CompiledTm>,
    pub net: Box<dyn NetTicker>,
    word: Vec<usize>,
    rows: Vec<Vec<Rational>>,
    /// ticks done
    pub tick: u64,
    /// verdict of the start configuration (read from h_|w| when loading ends)
    start_verdict: Option<i32>,
}

impl TmTicker {
    /// `word`: tape-symbol indices, each an input symbol (else `InvalidInput`).
    pub fn new(ctm: Arc<CompiledTm>, word: &[usize], dtype: Dtype, max_bits: u64) -> SimResult<Self> {
        let mut p = Vec::new();
        for (i, &s) in word.iter().enumerate() {
            if ctm.input_column(s).is_none() {
                let name = ctm.tm.tape_alphabet.get(s).cloned().unwrap_or_else(|| format!("#{s}"));
                p.push(format!("symbol {name:?} at position {i} is not in the input alphabet {:?}", ctm.tm.input_alphabet));
            }
        }
        if !p.is_empty() {
            return Err(SimError::InvalidInput(p));
        }
        let cols = ctm.layout.eos() + 1;
        let rows = (0..cols)
            .map(|c| (0..cols).map(|i| Rational::from(u32::from(i == c))).collect())
            .collect();
        let net = ticker(&ctm.network, dtype, max_bits)?;
        let mut t = TmTicker { ctm, net, word: word.to_vec(), rows, tick: 0, start_verdict: None };
        if word.is_empty() {
            t.start_verdict = Some(t.view()?.verdict);
        }
        Ok(t)
    }

    pub fn word_len(&self) -> u64 {
        self.word.len() as u64
    }

    /// Feeds the next input (the word's next symbol, else EOS).
    pub fn advance(&mut self) -> SimResult<()> {
        let col = match self.word.get(self.tick as usize) {
            Some(&s) => self.ctm.input_column(s).expect("validated in new"),
            None => self.ctm.layout.eos(),
        };
        self.net.tick(&self.rows[col])?;
        self.tick += 1;
        if self.tick == self.word_len() && self.start_verdict.is_none() {
            self.start_verdict = Some(self.view()?.verdict);
        }
        Ok(())
    }

    /// The readout rounded to −1, 0 or +1 (|y| ≥ 1/2 counts).
    pub fn signal(&self) -> i32 {
        match self.net.output_f64().first() {
            Some(&y) if y >= 0.5 => 1,
            Some(&y) if y <= -0.5 => -1,
            _ => 0,
        }
    }

    /// TM steps performed so far, assuming the machine has not stopped earlier.
    pub fn steps(&self) -> u64 {
        let after = self.tick.saturating_sub(self.word_len());
        if after >= 1 && self.start_verdict.is_some_and(|v| v != 0) { 0 } else { after }
    }

    /// The configuration the state holds: exact reading for exact runs, the network's own
    /// rounded reading for float runs (as many symbols per stack as the format resolves).
    pub fn view(&self) -> SimResult<TmView> {
        self.view_with_depth(self.default_depth())
    }

    pub fn view_with_depth(&self, depth: usize) -> SimResult<TmView> {
        let h = self.net.state();
        match self.net.dtype() {
            Dtype::Exact => self.ctm.decode(&h),
            _ => self.ctm.decode_as(&h, Reading::Rounded { depth }),
        }
    }

    /// Symbols a float format can resolve in one stack: precision / log2(base) + 2.
    fn default_depth(&self) -> usize {
        let p = self.net.dtype().precision().unwrap_or(53) as f64;
        let b = self.ctm.base_l.max(self.ctm.base_r) as f64;
        (p / b.log2()) as usize + 2
    }
}

/// The result of a run of a compiled machine's network.
#[derive(Debug, Clone)]
pub struct TmNetRun {
    pub ticks: u64,
    pub steps: u64,
    pub halted: bool,
    /// +1 accepted or halted, −1 rejected, 0 still running (the readout's sign)
    pub output: i32,
    /// the decoded final configuration (or why it does not decode)
    pub view: Result<TmView, String>,
    /// largest bit size of the exact state reached (0 for floats)
    pub bits: u64,
}

/// Runs the network on `word` until the readout says the machine stopped, or `max_steps`
/// TM steps. Polls `ctl` every tick and reports progress in ticks every 4096.
pub fn run_tm(ctm: &Arc<CompiledTm>, word: &[usize], dtype: Dtype, max_steps: u64, max_bits: u64, ctl: &Control) -> SimResult<TmNetRun> {
    let mut t = TmTicker::new(ctm.clone(), word, dtype, max_bits)?;
    let mut max_seen = 0;
    while t.tick < t.word_len() {
        ctl.check()?;
        t.advance()?;
    }
    let mut signal = 0;
    loop {
        let start_final = t.start_verdict.is_some_and(|v| v != 0);
        let performed = t.tick - t.word_len();
        // one more tick performs step `performed + 1` (or reports a final start configuration)
        if !(performed < max_steps || (performed == 0 && start_final)) {
            break;
        }
        ctl.check()?;
        t.advance()?;
        if t.tick % 4096 == 0 {
            ctl.advance(4096);
            max_seen = max_seen.max(t.net.bits());
        }
        signal = t.signal();
        if signal != 0 {
            break;
        }
    }
    let bits = max_seen.max(t.net.bits());
    Ok(TmNetRun {
        ticks: t.tick,
        steps: t.steps(),
        halted: signal != 0,
        output: signal,
        view: t.view().map_err(|e| e.to_string()),
        bits,
    })
}

/// The first disagreement between the exact network and the interpreter.
#[derive(Debug, Clone)]
pub struct TmMismatch {
    pub tick: u64,
    pub step: u64,
    pub expected: TmView,
    pub got: Result<TmView, String>,
    pub expected_output: i32,
    pub got_output: i32,
}

/// Runs the exact network and the interpreter side by side: after loading, every tick's
/// decoded configuration and readout must equal the interpreter's configuration and verdict
/// (CONSTRUCTION.md §8). Checks `max_steps` steps (or until the machine stops, plus one
/// frozen tick). None if all agree.
pub fn verify_tm(ctm: &Arc<CompiledTm>, word: &[usize], max_steps: u64, max_bits: u64, ctl: &Control) -> SimResult<Option<TmMismatch>> {
    let mut t = TmTicker::new(ctm.clone(), word, Dtype::Exact, max_bits)?;
    let tm = &ctm.tm;
    while t.tick < t.word_len() {
        t.advance()?;
    }
    let mut configs = tm.configs(word, max_steps);
    let mut expected = TmView::of_config(ctm, &configs.next().expect("c0"));
    let check = |t: &TmTicker, expected: &TmView, step: u64, want_out: i32| -> Option<TmMismatch> {
        let got = t.view().map_err(|e| e.to_string());
        let out = t.signal();
        let ok = matches!(&got, Ok(v) if v.same_config(expected)) && out == want_out;
        (!ok).then(|| TmMismatch { tick: t.tick, step, expected: expected.clone(), got, expected_output: want_out, got_output: out })
    };
    // h_|w| holds c0 (the readout is still 0: loading)
    if let Some(m) = check(&t, &expected, 0, 0) {
        return Ok(Some(m));
    }
    let mut step = 0;
    loop {
        ctl.check()?;
        let next = configs.next();
        let stopped_before = expected.verdict != 0;
        match next {
            Some(c) => {
                step = c.steps;
                expected = TmView::of_config(ctm, &c);
            }
            None if stopped_before => {}
            None => return Ok(None),
        }
        t.advance()?;
        if let Some(m) = check(&t, &expected, step, expected.verdict) {
            return Ok(Some(m));
        }
        if stopped_before {
            return Ok(None);
        }
    }
}

/// The first TM step at which the `dtype` run's configuration (read as the network reads,
/// [`Reading::Rounded`], as deep as the exact stacks plus one symbol) differs from the exact
/// run's, or whose readout differs; None if they agree for `max_steps` steps or until the
/// machine stops. Step 0 means the word was already loaded wrongly.
pub fn precision_horizon(ctm: &Arc<CompiledTm>, word: &[usize], dtype: Dtype, max_steps: u64, max_bits: u64, ctl: &Control) -> SimResult<Option<u64>> {
    if dtype == Dtype::Exact {
        return Ok(None);
    }
    let mut exact = TmTicker::new(ctm.clone(), word, Dtype::Exact, max_bits)?;
    let mut float = TmTicker::new(ctm.clone(), word, dtype, max_bits)?;
    while exact.tick < exact.word_len() {
        exact.advance()?;
        float.advance()?;
    }
    loop {
        ctl.check()?;
        let want = exact.view()?;
        let lo = want.cells.keys().next().map_or(want.head, |&c| c.min(want.head));
        let hi = want.cells.keys().next_back().map_or(want.head, |&c| c.max(want.head));
        let depth = (want.head - lo).max(hi - want.head) as usize + 1;
        let got = float.view_with_depth(depth);
        let same = matches!(&got, Ok(v) if v.same_config(&want)) && exact.signal() == float.signal();
        if !same {
            return Ok(Some(exact.steps()));
        }
        if exact.signal() != 0 || exact.steps() >= max_steps {
            return Ok(None);
        }
        exact.advance()?;
        float.advance()?;
    }
}
