//! Reading a compiled Turing machine's hidden state back as a configuration, and writing a
//! word as the input matrix (CONSTRUCTION.md §9).
//!
//! Exact decoding uses the exact values of h: the gate one-hot must be exactly one key with
//! value 1 (or all 0 while the word is loading), every stack value must be a finite
//! encoding (base4: digits 2i in base b, read as y = b·x, d = ⌊y⌋, x ← y − d until x = 0;
//! cantor3: the one component ≥ 2/3 is the top, all others < 1/3, z ← 3z − 2e_top), and the
//! head counters P = 2^−a, N = 2^−b give pos = a − b. Anything else is an error that says
//! what is wrong: a state that encodes no configuration is a result, never a panic.

use crate::compile::tm_layout::{Comp, Edge, Encoding, Key};
use crate::compile::tm_to_rnn::CompiledTm;
use crate::error::{SimError, SimResult};
use crate::machine::tm::{Status, TmConfig};
use malachite::base::num::arithmetic::traits::{DivMod, IsPowerOf2, Lcm};
use malachite::base::num::logic::traits::SignificantBits;
use malachite::{Integer, Natural, Rational};
use std::collections::BTreeMap;

/// A configuration as the network holds it: state, head cell, the non-blank cells
/// (tape-symbol indices), and whether the word is still being loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmView {
    pub state: usize,
    /// absolute cell (relative to the head, i.e. 0, when compiled without a head counter)
    pub head: i64,
    pub cells: BTreeMap<i64, usize>,
    /// true while the input is still being read (no step taken yet, the gate all 0)
    pub loading: bool,
    /// +1 accepting/halted, −1 rejecting/stuck, 0 running: the verdict of the gate key
    pub verdict: i32,
}

impl TmView {
    /// The same view of an interpreter configuration (blanks dropped).
    pub fn of_config(ctm: &CompiledTm, c: &TmConfig) -> TmView {
        let tm = &ctm.tm;
        let cells = c
            .tape
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != tm.blank)
            .map(|(i, &s)| (c.offset + i as i64, s))
            .collect();
        let verdict = match c.status {
            Status::Accepted | Status::Halted => 1,
            Status::Rejected => -1,
            Status::Running if tm.is_stuck(c) => -1,
            Status::Running => 0,
        };
        TmView { state: c.state, head: c.head, cells, loading: false, verdict }
    }

    /// Same machine configuration (ignores `loading`).
    pub fn same_config(&self, o: &TmView) -> bool {
        self.state == o.state && self.head == o.head && self.cells == o.cells
    }

    /// Cells from min(head, first non-blank) to max(head, last non-blank): (offset, symbols).
    pub fn tape_window(&self, blank: usize) -> (i64, Vec<usize>) {
        let lo = self.cells.keys().next().copied().unwrap_or(self.head).min(self.head);
        let hi = self.cells.keys().next_back().copied().unwrap_or(self.head).max(self.head);
        (lo, (lo..=hi).map(|c| self.cells.get(&c).copied().unwrap_or(blank)).collect())
    }
}

fn bad(msg: String) -> SimError {
    SimError::InvalidInput(vec![msg])
}

/// Numerators over a common denominator of several exact values.
fn common(values: &[Rational]) -> (Vec<Integer>, Natural) {
    let mut den = Natural::from(1u32);
    for v in values {
        den = den.lcm(v.to_denominator());
    }
    let nums = values
        .iter()
        .map(|v| {
            let (n, d) = v.to_numerator_and_denominator();
            let m = Integer::from(n * (&den / d));
            if *v < 0u32 { -m } else { m }
        })
        .collect();
    (nums, den)
}

/// How to read a hidden state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Exact values must be an exact encoding (exact runs; every deviation is an error).
    Exact,
    /// As the network itself reads (float runs): the gate key is the one form above 1/2;
    /// a stack symbol is the nearest digit (base4) or the largest component if ≥ 1/2
    /// (cantor3), popped exactly as the network pops; at most `depth` symbols per stack;
    /// the head counters are rounded to the nearest power of 1/2.
    Rounded { depth: usize },
}

impl CompiledTm {
    /// Decodes a hidden state exactly. `InvalidInput` if it encodes no configuration.
    pub fn decode(&self, h: &[Rational]) -> SimResult<TmView> {
        self.decode_as(h, Reading::Exact)
    }

    /// Decodes a hidden state with the given reading (see [`Reading`]).
    pub fn decode_as(&self, h: &[Rational], reading: Reading) -> SimResult<TmView> {
        let l = &self.layout;
        if h.len() != l.n_units() {
            return Err(bad(format!("a state of {} values, but the network has {} units", h.len(), l.n_units())));
        }
        let half = Rational::from_signeds(1i32, 2i32);
        let hot: Vec<(usize, Rational)> = self
            .forms
            .gate_hot
            .iter()
            .enumerate()
            .map(|(i, f)| (i, f.eval(h)))
            .filter(|(_, v)| if reading == Reading::Exact { *v != 0u32 } else { *v > half })
            .collect();
        let (key, loading) = match hot.as_slice() {
            [] => {
                let on: Vec<usize> = (0..l.f.len())
                    .filter(|&i| if reading == Reading::Exact { h[l.f[i]] == 1u32 } else { h[l.f[i]] > half })
                    .collect();
                let sym = on.first().map_or(0, |&i| l.inputs[i]);
                (Key { state: self.tm.start, sym, edge: l.e0 }, true)
            }
            [(i, v)] if *v == 1u32 || reading != Reading::Exact => (l.keys[*i], false),
            _ => {
                let shown: Vec<String> =
                    hot.iter().take(4).map(|(i, v)| format!("{} = {v}", l.key_name(&self.tm, &l.keys[*i]))).collect();
                return Err(bad(format!("the gate is not one-hot: {}", shown.join(", "))));
            }
        };
        let left: Vec<Rational> = self.forms.left.iter().map(|f| f.eval(h)).collect();
        let right: Vec<Rational> = self.forms.right.iter().map(|f| f.eval(h)).collect();
        let ((ls, dollar), (rs, _)) = match reading {
            Reading::Exact => (self.read_stack(&left, true)?, self.read_stack(&right, false)?),
            Reading::Rounded { depth } => (self.read_stack_rounded(left, true, depth), self.read_stack_rounded(right, false, depth)),
        };
        let head = if l.oneway {
            if !dollar && reading == Reading::Exact {
                return Err(bad("the left stack has no bottom marker $".into()));
            }
            let pos = ls.len() as i64;
            if (pos == 0) != (key.edge == Edge::AtEnd) && reading == Reading::Exact {
                return Err(bad(format!("the left-end flag says {:?} but the head is on cell {pos}", key.edge)));
            }
            pos
        } else if let (Some(p), Some(n)) = (&self.forms.p, &self.forms.n) {
            let (pv, nv) = (p.eval(h), n.eval(h));
            match reading {
                Reading::Exact => log2_inverse(&pv, "P")? - log2_inverse(&nv, "N")?,
                Reading::Rounded { .. } => nearest_log2_inverse(&pv, "P")? - nearest_log2_inverse(&nv, "N")?,
            }
        } else {
            0
        };
        let mut cells = BTreeMap::new();
        let blank = self.tm.blank;
        let mut put = |c: i64, pos: usize| {
            let s = l.syms[pos];
            if s != blank {
                cells.insert(c, s);
            }
        };
        for (i, &s) in ls.iter().enumerate() {
            put(head - 1 - i as i64, s);
        }
        put(head, key.sym);
        for (i, &s) in rs.iter().enumerate() {
            put(head + 1 + i as i64, s);
        }
        let verdict = l.verdict[l.key_index[&key]];
        Ok(TmView { state: key.state, head, cells, loading, verdict })
    }

    /// The symbols of a stack, top first (positions in the blank-first alphabet), and whether
    /// it ended with the bottom marker `$`.
    fn read_stack(&self, comps: &[Rational], left: bool) -> SimResult<(Vec<usize>, bool)> {
        let name = if left { "left" } else { "right" };
        let dollar_ok = left && self.layout.oneway;
        let k = self.layout.k() as u64;
        let (mut nums, den) = common(comps);
        if nums.iter().any(|n| *n < 0u32) || nums.iter().any(|n| n.unsigned_abs_ref() >= &den) {
            return Err(bad(format!("the {name} stack has a component outside [0, 1)")));
        }
        // a finite encoding has at most bits(den) + 1 digits
        let cap = den.significant_bits() + 1;
        let den_i = Integer::from(&den);
        let mut out = Vec::new();
        match self.layout.options.encoding {
            Encoding::Base4 => {
                let b = if left { self.base_l } else { self.base_r } as u64;
                let mut x = nums.pop().expect("one component");
                while x != 0u32 {
                    if out.len() as u64 >= cap {
                        return Err(bad(format!("the {name} stack is not a finite base-{b} encoding")));
                    }
                    let (d, rest) = (x * Integer::from(b)).div_mod(&den_i);
                    let d = u64::try_from(&d).unwrap_or(u64::MAX);
                    if dollar_ok && d == 2 * k {
                        if rest != 0u32 {
                            return Err(bad(format!("the {name} stack holds digits below the bottom marker $")));
                        }
                        return Ok((out, true));
                    }
                    if d % 2 == 1 || d > 2 * k - 2 {
                        return Err(bad(format!("the {name} stack has digit {d}, not a symbol's (even, at most {})", 2 * k - 2)));
                    }
                    out.push((d / 2) as usize);
                    x = rest;
                }
                Ok((out, false))
            }
            Encoding::Cantor3 => {
                let three = Integer::from(3);
                let two_den = Integer::from(2) * &den_i;
                while nums.iter().any(|n| *n != 0u32) {
                    if out.len() as u64 >= cap {
                        return Err(bad(format!("the {name} stack is not a finite Cantor encoding")));
                    }
                    // z ≥ 2/3 ⇔ 3n ≥ 2D;  z < 1/3 ⇔ 3n < D
                    let tops: Vec<usize> = (0..nums.len()).filter(|&j| &nums[j] * &three >= two_den).collect();
                    let clean = tops.len() == 1 && (0..nums.len()).all(|j| j == tops[0] || &nums[j] * &three < den_i);
                    if !clean {
                        return Err(bad(format!("the {name} stack is not a Cantor encoding (no single top component)")));
                    }
                    let t = tops[0];
                    if let Comp::Dollar = comps_kind(&self.layout.comps_l, t, left) {
                        let only = (0..nums.len()).all(|j| if j == t { &nums[j] * &three == two_den } else { nums[j] == 0u32 });
                        if !only {
                            return Err(bad(format!("the {name} stack holds symbols below the bottom marker $")));
                        }
                        return Ok((out, true));
                    }
                    out.push(t);
                    for (j, n) in nums.iter_mut().enumerate() {
                        *n *= &three;
                        if j == t {
                            *n -= &two_den;
                        }
                    }
                }
                Ok((out, false))
            }
        }
    }

    /// Reads up to `depth` symbols the way the network's threshold units do (float states).
    fn read_stack_rounded(&self, mut z: Vec<Rational>, left: bool, depth: usize) -> (Vec<usize>, bool) {
        let k = self.layout.k();
        let dollar_ok = left && self.layout.oneway;
        let half = Rational::from_signeds(1i32, 2i32);
        let mut out = Vec::new();
        while out.len() < depth && z.iter().any(|v| *v != 0u32) {
            match self.layout.options.encoding {
                Encoding::Base4 => {
                    let b = Rational::from(if left { self.base_l } else { self.base_r });
                    let y = &z[0] * b;
                    // nearest symbol: t = ⌊y/2 + 1/2⌋, clamped to the digits that exist
                    let t = Integer::rounding_from_floor(&(&y / Rational::from(2) + &half));
                    let top = if dollar_ok { k } else { k - 1 };
                    let t = t.clamp(0, top as i64) as usize;
                    if dollar_ok && t == k {
                        return (out, true);
                    }
                    out.push(t);
                    z[0] = y - Rational::from(2 * t as u64);
                }
                Encoding::Cantor3 => {
                    let (j, best) = z.iter().enumerate().max_by(|a, b| a.1.cmp(b.1)).expect("components");
                    if *best < half {
                        break;
                    }
                    if let Comp::Dollar = comps_kind(&self.layout.comps_l, j, left) {
                        return (out, true);
                    }
                    out.push(j);
                    for (i, v) in z.iter_mut().enumerate() {
                        *v *= Rational::from(3);
                        if i == j {
                            *v -= Rational::from(2);
                        }
                    }
                }
            }
        }
        (out, false)
    }

    /// The input matrix `run` feeds: the word one-hot (columns in input-alphabet order), then
    /// EOS (the last column) until `ticks` rows (at least the word's length).
    pub fn encode(&self, word: &[usize], ticks: usize) -> Vec<Vec<Rational>> {
        let cols = self.layout.eos() + 1;
        let mut rows = Vec::with_capacity(ticks.max(word.len()));
        for &s in word {
            let col = self.input_column(s).expect("input symbols are validated by the caller");
            rows.push(one_hot(cols, col));
        }
        while rows.len() < ticks {
            rows.push(one_hot(cols, cols - 1));
        }
        rows
    }

    /// The input column of a tape symbol (None if it is not an input symbol).
    pub fn input_column(&self, sym: usize) -> Option<usize> {
        self.layout.inputs.iter().position(|&p| self.layout.syms[p] == sym)
    }
}

trait FloorInt {
    fn rounding_from_floor(r: &Rational) -> i64;
}

impl FloorInt for Integer {
    /// ⌊r⌋ saturated to i64.
    fn rounding_from_floor(r: &Rational) -> i64 {
        use malachite::base::num::arithmetic::traits::Floor;
        let f: Integer = r.floor();
        i64::try_from(&f).unwrap_or(if f < 0 { i64::MIN } else { i64::MAX })
    }
}

/// a for v ≈ 2^−a, rounded to the nearest a (float states).
fn nearest_log2_inverse(v: &Rational, name: &str) -> SimResult<i64> {
    if *v <= 0u32 {
        return Err(bad(format!("the head counter {name} = {v} is not positive")));
    }
    use malachite::base::num::conversion::traits::RoundingFrom;
    use malachite::base::rounding_modes::RoundingMode;
    let f = f64::rounding_from(v, RoundingMode::Nearest).0;
    if f > 0.0 {
        return Ok((-f.log2()).round() as i64);
    }
    // below f64's range: use the bit sizes
    let (n, d) = v.to_numerator_and_denominator();
    Ok(d.significant_bits() as i64 - n.significant_bits() as i64)
}

fn comps_kind(comps_l: &[Comp], j: usize, left: bool) -> Comp {
    if left { comps_l[j] } else { Comp::Sym(j) }
}

fn one_hot(n: usize, i: usize) -> Vec<Rational> {
    let mut v = vec![Rational::from(0); n];
    v[i] = Rational::from(1);
    v
}

/// a for v = 2^−a exactly (a ≥ 0).
fn log2_inverse(v: &Rational, name: &str) -> SimResult<i64> {
    let (n, d) = v.to_numerator_and_denominator();
    if *v <= 0u32 || n != 1u32 || !d.is_power_of_2() {
        return Err(bad(format!("the head counter {name} = {v} is not a power of 1/2")));
    }
    Ok(d.significant_bits() as i64 - 1)
}
