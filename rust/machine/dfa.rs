//! Deterministic finite automata with a reference interpreter.
//!
//! A [`Dfa`] is the plain, immutable description of a (possibly partial) DFA over a finite
//! alphabet of named symbols. Besides running words, it offers the classical operations
//! needed to check compiled networks against their source machine: completion, trimming of
//! unreachable states, minimisation (Hopcroft 1971), language equivalence with a shortest
//! counterexample, a JSON exchange format and a seeded random generator.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::error::{SimError, SimResult};
use crate::machine::random::SplitMix64;

/// The `format` tag of the JSON exchange format written by [`Dfa::to_json`].
pub const JSON_FORMAT: &str = "rnnsim.dfa";
/// The `version` of the JSON exchange format written by [`Dfa::to_json`].
pub const JSON_VERSION: u64 = 1;

/// A deterministic finite automaton, possibly partial.
///
/// States and symbols are named; internally everything is indexed. `delta[q][a]` is the state
/// reached from state `q` on symbol `a`, or `None` when the transition is missing (the run
/// then falls into an implicit rejecting dead state). Values are immutable after construction:
/// every operation returns a new `Dfa`. Construct through [`Dfa::new`], [`Dfa::from_table`],
/// [`Dfa::from_json`] or [`Dfa::random`] so that the invariants (unique names, in-range
/// indices, table shape) hold; the fields are public for reading only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dfa {
    /// State names, unique; state `i` is `states[i]`.
    pub states: Vec<String>,
    /// Symbol names, unique and non-empty; symbol `a` is `alphabet[a]`.
    pub alphabet: Vec<String>,
    /// Transition table: `delta[state][symbol]` is the next state, `None` if missing.
    pub delta: Vec<Vec<Option<usize>>>,
    /// Index of the start state.
    pub start: usize,
    /// `accept[q]` is true iff state `q` is accepting.
    pub accept: Vec<bool>,
}

/// The serialised form of a [`Dfa`] (see [`Dfa::to_json`]).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DfaJson {
    format: String,
    version: u64,
    states: Vec<String>,
    alphabet: Vec<String>,
    transitions: Vec<(String, String, String)>,
    start: String,
    accept: Vec<String>,
}

/// Maps each name to the index of its first occurrence, reporting duplicates and (when
/// `forbid_empty`) empty names into `problems`.
fn index_names<'a>(
    names: &'a [String],
    what: &str,
    forbid_empty: bool,
    problems: &mut Vec<String>,
) -> HashMap<&'a str, usize> {
    let mut map: HashMap<&str, usize> = HashMap::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if forbid_empty && name.is_empty() {
            problems.push(format!("{what} at position {i} is the empty string"));
            continue;
        }
        if let Some(&j) = map.get(name.as_str()) {
            problems.push(format!(
                "duplicate {what} name {name:?} (positions {j} and {i})"
            ));
        } else {
            map.insert(name.as_str(), i);
        }
    }
    map
}

/// Checks the state and symbol name lists shared by [`Dfa::new`] and [`Dfa::from_table`].
fn check_names<'a>(
    states: &'a [String],
    alphabet: &'a [String],
    problems: &mut Vec<String>,
) -> (HashMap<&'a str, usize>, HashMap<&'a str, usize>) {
    if states.is_empty() {
        problems.push("the DFA has no states".to_string());
    }
    let state_ix = index_names(states, "state", false, problems);
    let sym_ix = index_names(alphabet, "symbol", true, problems);
    (state_ix, sym_ix)
}

/// Fills a transition table from named triples, reporting unknown names and conflicts.
fn build_delta(
    transitions: &[(String, String, String)],
    state_ix: &HashMap<&str, usize>,
    sym_ix: &HashMap<&str, usize>,
    dims: (usize, usize),
    problems: &mut Vec<String>,
) -> Vec<Vec<Option<usize>>> {
    let mut delta = vec![vec![None; dims.1]; dims.0];
    let mut origin: HashMap<(usize, usize), usize> = HashMap::new();
    for (t, (from, sym, to)) in transitions.iter().enumerate() {
        let what = format!("transition #{t} ({from:?}, {sym:?}, {to:?})");
        let p = state_ix.get(from.as_str()).copied();
        let a = sym_ix.get(sym.as_str()).copied();
        let q = state_ix.get(to.as_str()).copied();
        if p.is_none() {
            problems.push(format!("{what}: unknown source state {from:?}"));
        }
        if a.is_none() {
            problems.push(format!("{what}: unknown symbol {sym:?}"));
        }
        if q.is_none() {
            problems.push(format!("{what}: unknown target state {to:?}"));
        }
        let (Some(p), Some(a), Some(q)) = (p, a, q) else {
            continue;
        };
        match delta[p][a] {
            None => {
                delta[p][a] = Some(q);
                origin.insert((p, a), t);
            }
            Some(old) if old != q => problems.push(format!(
                "conflicting transitions from state {from:?} on symbol {sym:?}: to {:?} \
                 (transition #{}) and to {to:?} (transition #{t})",
                transitions[origin[&(p, a)]].2,
                origin[&(p, a)]
            )),
            Some(_) => {} // exact repetition of an earlier transition: harmless
        }
    }
    delta
}

impl Dfa {
    /// Builds a DFA from named states, symbols and `(from, symbol, to)` transitions.
    ///
    /// Transitions that are not listed are missing (a partial DFA; see [`Dfa::complete`]).
    /// Listing the same transition twice is allowed. Validation collects every problem
    /// before failing with [`SimError::InvalidMachine`]: no states, duplicate state names,
    /// empty or duplicate symbols, transitions naming unknown states or symbols, two
    /// different targets for one (state, symbol), an unknown start state and unknown
    /// accepting states.
    pub fn new(
        states: Vec<String>,
        alphabet: Vec<String>,
        transitions: Vec<(String, String, String)>,
        start: String,
        accept: Vec<String>,
    ) -> SimResult<Dfa> {
        let mut problems = Vec::new();
        let (state_ix, sym_ix) = check_names(&states, &alphabet, &mut problems);
        let dims = (states.len(), alphabet.len());
        let delta = build_delta(&transitions, &state_ix, &sym_ix, dims, &mut problems);
        let start_ix = state_ix.get(start.as_str()).copied();
        if start_ix.is_none() && !states.is_empty() {
            problems.push(format!("unknown start state {start:?}"));
        }
        let mut accepting = vec![false; states.len()];
        for name in &accept {
            match state_ix.get(name.as_str()) {
                Some(&q) => accepting[q] = true,
                None => problems.push(format!("unknown accepting state {name:?}")),
            }
        }
        if !problems.is_empty() {
            return Err(SimError::InvalidMachine(problems));
        }
        let start = start_ix.expect("start validated above");
        Ok(Dfa {
            states,
            alphabet,
            delta,
            start,
            accept: accepting,
        })
    }

    /// Builds a DFA from an index-form transition table (`delta[state][symbol]`), with the
    /// same validation as [`Dfa::new`] plus shape checks (one row per state, one entry per
    /// symbol, targets and start in range, one `accept` flag per state). Every problem is
    /// reported at once in [`SimError::InvalidMachine`].
    pub fn from_table(
        states: Vec<String>,
        alphabet: Vec<String>,
        delta: Vec<Vec<Option<usize>>>,
        start: usize,
        accept: Vec<bool>,
    ) -> SimResult<Dfa> {
        let mut problems = Vec::new();
        check_names(&states, &alphabet, &mut problems);
        let (n, k) = (states.len(), alphabet.len());
        if delta.len() != n {
            problems.push(format!(
                "transition table has {} rows for {n} states",
                delta.len()
            ));
        }
        for (q, row) in delta.iter().enumerate() {
            if row.len() != k {
                problems.push(format!("row {q} has {} entries for {k} symbols", row.len()));
            }
            for (a, t) in row.iter().enumerate() {
                if let Some(t) = t.filter(|&t| t >= n) {
                    problems.push(format!("delta[{q}][{a}] = {t} is not a state (0..{n})"));
                }
            }
        }
        if start >= n && n > 0 {
            problems.push(format!("start state {start} is not a state (0..{n})"));
        }
        if accept.len() != n {
            problems.push(format!("{} accept flags for {n} states", accept.len()));
        }
        if !problems.is_empty() {
            return Err(SimError::InvalidMachine(problems));
        }
        Ok(Dfa {
            states,
            alphabet,
            delta,
            start,
            accept,
        })
    }

    /// The index of the symbol named `s`, if it is in the alphabet.
    pub fn symbol_index(&self, s: &str) -> Option<usize> {
        self.alphabet.iter().position(|a| a == s)
    }

    /// The index of the state named `s`, if there is one.
    pub fn state_index(&self, s: &str) -> Option<usize> {
        self.states.iter().position(|q| q == s)
    }

    /// Translates a word given as symbol names into symbol indices.
    ///
    /// Fails with [`SimError::InvalidInput`] listing every unknown symbol with its position.
    pub fn encode_word(&self, symbols: &[&str]) -> SimResult<Vec<usize>> {
        let index: HashMap<&str, usize> = self
            .alphabet
            .iter()
            .enumerate()
            .map(|(i, a)| (a.as_str(), i))
            .collect();
        let mut word = Vec::with_capacity(symbols.len());
        let mut problems = Vec::new();
        for (pos, s) in symbols.iter().enumerate() {
            match index.get(s) {
                Some(&a) => word.push(a),
                None => problems.push(format!(
                    "unknown symbol {s:?} at position {pos} (alphabet: {:?})",
                    self.alphabet
                )),
            }
        }
        if problems.is_empty() {
            Ok(word)
        } else {
            Err(SimError::InvalidInput(problems))
        }
    }

    /// The next state from `q` on symbol `a`; `None` for a missing transition or a symbol
    /// index outside the alphabet.
    #[inline]
    pub fn step(&self, q: usize, a: usize) -> Option<usize> {
        self.delta[q].get(a).copied().flatten()
    }

    /// Runs the DFA on `word` (symbol indices) and returns the state path `q0, q1, .., qn`
    /// (length `n + 1`, `q0` the start state). After a missing transition (or an
    /// out-of-range symbol index) the run is dead and the path is `None` to the end.
    pub fn run(&self, word: &[usize]) -> Vec<Option<usize>> {
        let mut path = Vec::with_capacity(word.len() + 1);
        let mut q = Some(self.start);
        path.push(q);
        for &a in word {
            q = q.and_then(|s| self.step(s, a));
            path.push(q);
        }
        path
    }

    /// True iff the run on `word` ends, alive, in an accepting state.
    pub fn accepts(&self, word: &[usize]) -> bool {
        let mut q = self.start;
        for &a in word {
            match self.step(q, a) {
                Some(next) => q = next,
                None => return false,
            }
        }
        self.accept[q]
    }

    /// True iff every state has a transition on every symbol.
    pub fn is_complete(&self) -> bool {
        self.delta.iter().all(|row| row.iter().all(Option::is_some))
    }

    /// The complete DFA for the same language: if any transition is missing, one rejecting,
    /// self-looping dead state is appended (named `dead`, or `dead'`, `dead''`, .. if that
    /// name is taken) and every missing transition goes to it. A complete DFA is returned
    /// unchanged.
    pub fn complete(&self) -> Dfa {
        if self.is_complete() {
            return self.clone();
        }
        let mut name = String::from("dead");
        while self.states.contains(&name) {
            name.push('\'');
        }
        let dead = self.states.len();
        let k = self.alphabet.len();
        let mut out = self.clone();
        for row in &mut out.delta {
            for t in row.iter_mut() {
                t.get_or_insert(dead);
            }
        }
        out.states.push(name);
        out.delta.push(vec![Some(dead); k]);
        out.accept.push(false);
        out
    }

    /// States in breadth-first order from the start state, following symbols in alphabet
    /// order; unreachable states are absent.
    pub fn bfs_order(&self) -> Vec<usize> {
        let mut seen = vec![false; self.states.len()];
        let mut order = vec![self.start];
        seen[self.start] = true;
        let mut head = 0;
        while head < order.len() {
            let q = order[head];
            head += 1;
            for t in self.delta[q].iter().flatten() {
                if !seen[*t] {
                    seen[*t] = true;
                    order.push(*t);
                }
            }
        }
        order
    }

    /// The same DFA without the states unreachable from the start state. Surviving states
    /// keep their names and their relative order; missing transitions stay missing.
    pub fn reachable(&self) -> Dfa {
        let mut keep = vec![false; self.states.len()];
        for q in self.bfs_order() {
            keep[q] = true;
        }
        let mut new_ix = vec![usize::MAX; self.states.len()];
        let mut out = Dfa {
            states: Vec::new(),
            alphabet: self.alphabet.clone(),
            delta: Vec::new(),
            start: 0,
            accept: Vec::new(),
        };
        for q in (0..self.states.len()).filter(|&q| keep[q]) {
            new_ix[q] = out.states.len();
            out.states.push(self.states[q].clone());
            out.accept.push(self.accept[q]);
        }
        for q in (0..self.states.len()).filter(|&q| keep[q]) {
            out.delta
                .push(self.delta[q].iter().map(|t| t.map(|t| new_ix[t])).collect());
        }
        out.start = new_ix[self.start];
        out
    }

    /// The minimal complete DFA for the same language.
    ///
    /// Runs Hopcroft's partition-refinement algorithm (J. E. Hopcroft, "An n log n algorithm
    /// for minimizing states in a finite automaton", Theory of Machines and Computations,
    /// 1971, pp. 189-196) in O(n k log n) time on the completed reachable DFA. The output is
    /// deterministic: its states are numbered in breadth-first order from the start state
    /// (symbols in alphabet order), and each state is named after the member of its
    /// equivalence class that comes first in the breadth-first order of the completed
    /// reachable input. Minimising a minimal DFA in that numbering returns it unchanged.
    pub fn minimize(&self) -> Dfa {
        let dfa = self.reachable().complete();
        let n = dfa.states.len();
        let k = dfa.alphabet.len();
        let table: Vec<usize> = dfa
            .delta
            .iter()
            .flat_map(|r| r.iter().map(|t| t.unwrap()))
            .collect();
        let block_of = hopcroft(&table, n, k, &dfa.accept);
        dfa.quotient(&block_of)
    }

    /// The quotient of a complete DFA by a congruence given as `block_of[state]`, numbered
    /// and named as documented on [`Dfa::minimize`].
    fn quotient(&self, block_of: &[usize]) -> Dfa {
        let n_blocks = block_of.iter().max().map_or(0, |&b| b + 1);
        let mut rep = vec![usize::MAX; n_blocks];
        for q in self.bfs_order() {
            if rep[block_of[q]] == usize::MAX {
                rep[block_of[q]] = q;
            }
        }
        let mut new_ix = vec![usize::MAX; n_blocks];
        let mut order = vec![block_of[self.start]];
        new_ix[block_of[self.start]] = 0;
        let mut head = 0;
        while head < order.len() {
            let b = order[head];
            head += 1;
            for t in self.delta[rep[b]].iter() {
                let c = block_of[t.expect("quotient needs a complete DFA")];
                if new_ix[c] == usize::MAX {
                    new_ix[c] = order.len();
                    order.push(c);
                }
            }
        }
        Dfa {
            states: order.iter().map(|&b| self.states[rep[b]].clone()).collect(),
            alphabet: self.alphabet.clone(),
            delta: order
                .iter()
                .map(|&b| {
                    self.delta[rep[b]]
                        .iter()
                        .map(|t| Some(new_ix[block_of[t.unwrap()]]))
                        .collect()
                })
                .collect(),
            start: 0,
            accept: order.iter().map(|&b| self.accept[rep[b]]).collect(),
        }
    }

    /// Decides whether `self` and `other` accept the same language.
    ///
    /// Returns `Ok(None)` if they do, otherwise `Ok(Some(word))` with a shortest word (as
    /// symbol indices of `self`'s alphabet) accepted by exactly one of them, found by
    /// breadth-first search over the product automaton (missing transitions lead to a shared
    /// implicit dead state). Symbols are matched by name, so the alphabets may be listed in
    /// different orders but must be equal as sets; otherwise [`SimError::InvalidInput`].
    pub fn equivalent(&self, other: &Dfa) -> SimResult<Option<Vec<usize>>> {
        let sym_map = self.alphabet_map(other)?;
        let (dead1, dead2) = (self.states.len(), other.states.len());
        let accepts =
            |p: usize, q: usize| (p != dead1 && self.accept[p]) != (q != dead2 && other.accept[q]);
        // BFS nodes: (pair, parent node, symbol from parent).
        let mut nodes: Vec<((usize, usize), usize, usize)> =
            vec![((self.start, other.start), 0, 0)];
        let mut seen: HashSet<(usize, usize)> = HashSet::from([(self.start, other.start)]);
        let mut found = accepts(self.start, other.start).then_some(0);
        let mut head = 0;
        while found.is_none() && head < nodes.len() {
            let (p, q) = nodes[head].0;
            for (a, &b) in sym_map.iter().enumerate() {
                let p2 = if p == dead1 {
                    dead1
                } else {
                    self.step(p, a).unwrap_or(dead1)
                };
                let q2 = if q == dead2 {
                    dead2
                } else {
                    other.step(q, b).unwrap_or(dead2)
                };
                if seen.insert((p2, q2)) {
                    nodes.push(((p2, q2), head, a));
                    if accepts(p2, q2) {
                        found = Some(nodes.len() - 1);
                        break;
                    }
                }
            }
            head += 1;
        }
        Ok(found.map(|mut node| {
            let mut word = Vec::new();
            while node != 0 {
                word.push(nodes[node].2);
                node = nodes[node].1;
            }
            word.reverse();
            word
        }))
    }

    /// For each symbol of `self`, the index of the same-named symbol in `other`; an error
    /// unless the two alphabets are equal as sets.
    fn alphabet_map(&self, other: &Dfa) -> SimResult<Vec<usize>> {
        let map: Vec<Option<usize>> = self
            .alphabet
            .iter()
            .map(|s| other.symbol_index(s))
            .collect();
        if self.alphabet.len() != other.alphabet.len() || map.iter().any(Option::is_none) {
            return Err(SimError::invalid_input(format!(
                "cannot compare DFAs over different alphabets {:?} and {:?}",
                self.alphabet, other.alphabet
            )));
        }
        Ok(map.into_iter().map(Option::unwrap).collect())
    }

    /// Serialises to the `rnnsim.dfa` JSON format, version 1:
    /// `{"format":"rnnsim.dfa","version":1,"states":[..],"alphabet":[..],
    /// "transitions":[[from,symbol,to],..],"start":..,"accept":[..]}`, all by name.
    /// Transitions are listed state by state in symbol order; missing ones are omitted.
    pub fn to_json(&self) -> String {
        let mut transitions = Vec::new();
        for (q, row) in self.delta.iter().enumerate() {
            for (a, t) in row.iter().enumerate() {
                if let Some(t) = t {
                    transitions.push((
                        self.states[q].clone(),
                        self.alphabet[a].clone(),
                        self.states[*t].clone(),
                    ));
                }
            }
        }
        let doc = DfaJson {
            format: JSON_FORMAT.to_string(),
            version: JSON_VERSION,
            states: self.states.clone(),
            alphabet: self.alphabet.clone(),
            transitions,
            start: self.states[self.start].clone(),
            accept: (0..self.states.len())
                .filter(|&q| self.accept[q])
                .map(|q| self.states[q].clone())
                .collect(),
        };
        serde_json::to_string(&doc).expect("a DFA always serialises")
    }

    /// Parses the format written by [`Dfa::to_json`].
    ///
    /// Text that is not JSON, a document with another `format` or `version`, or a document
    /// with missing, mistyped or unknown fields fails with [`SimError::InvalidInput`]; a
    /// well-formed document describing an invalid DFA fails like [`Dfa::new`], with
    /// [`SimError::InvalidMachine`] listing every problem.
    pub fn from_json(text: &str) -> SimResult<Dfa> {
        let bad = |m: String| SimError::invalid_input(m);
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| bad(format!("DFA text is not valid JSON: {e}")))?;
        let obj = value
            .as_object()
            .ok_or_else(|| bad("DFA JSON must be an object".to_string()))?;
        match obj.get("format") {
            Some(serde_json::Value::String(f)) if f == JSON_FORMAT => {}
            Some(f) => return Err(bad(format!("expected format {JSON_FORMAT:?}, found {f}"))),
            None => {
                return Err(bad(format!(
                    "missing \"format\" field (expected {JSON_FORMAT:?})"
                )))
            }
        }
        match obj.get("version") {
            Some(v) if v.as_u64() == Some(JSON_VERSION) => {}
            Some(v) => {
                return Err(bad(format!(
                "unsupported {JSON_FORMAT} version {v} (this build reads version {JSON_VERSION})"
            )))
            }
            None => return Err(bad("missing \"version\" field".to_string())),
        }
        let doc: DfaJson = serde_json::from_value(value)
            .map_err(|e| bad(format!("malformed {JSON_FORMAT} document: {e}")))?;
        Dfa::new(
            doc.states,
            doc.alphabet,
            doc.transitions,
            doc.start,
            doc.accept,
        )
    }

    /// A complete random DFA with `n_states` states named `q0, q1, ..` (start `q0`) over
    /// `n_symbols` symbols named `"0", "1", ..`: every transition target is uniform and each
    /// state accepts with probability 1/2, drawn from a splitmix64 generator seeded with
    /// `seed` (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
    /// OOPSLA 2014). Deterministic for a given seed. `n_states == 0` is treated as 1.
    pub fn random(n_states: usize, n_symbols: usize, seed: u64) -> Dfa {
        let n = n_states.max(1);
        let mut rng = SplitMix64(seed);
        let delta = (0..n)
            .map(|_| (0..n_symbols).map(|_| Some(rng.below(n))).collect())
            .collect();
        let accept = (0..n).map(|_| rng.next_u64() >> 63 == 1).collect();
        Dfa {
            states: (0..n).map(|i| format!("q{i}")).collect(),
            alphabet: (0..n_symbols).map(|i| i.to_string()).collect(),
            delta,
            start: 0,
            accept,
        }
    }
}



/// A refinable partition of `0..n` (Hopcroft 1971; layout after Valmari & Lehtinen 2008):
/// block `b` is `elems[first[b]..end[b]]`, and its first `marked[b]` elements are marked.
struct Partition {
    elems: Vec<usize>,
    loc: Vec<usize>,
    block_of: Vec<usize>,
    first: Vec<usize>,
    end: Vec<usize>,
    marked: Vec<usize>,
    touched: Vec<usize>,
}

impl Partition {
    /// Two blocks: rejecting states then accepting states (one block if either is empty).
    fn by_acceptance(accept: &[bool]) -> Partition {
        let n = accept.len();
        let mut elems: Vec<usize> = (0..n).filter(|&q| !accept[q]).collect();
        let n_reject = elems.len();
        elems.extend((0..n).filter(|&q| accept[q]));
        let mut p = Partition {
            loc: vec![0; n],
            block_of: vec![0; n],
            elems,
            first: vec![0],
            end: vec![n],
            marked: vec![0],
            touched: Vec::new(),
        };
        if n_reject > 0 && n_reject < n {
            p.end[0] = n_reject;
            p.first.push(n_reject);
            p.end.push(n);
            p.marked.push(0);
        }
        for (i, &q) in p.elems.iter().enumerate() {
            p.loc[q] = i;
            p.block_of[q] = usize::from(i >= p.end[0]);
        }
        p
    }

    fn size(&self, b: usize) -> usize {
        self.end[b] - self.first[b]
    }

    /// Marks element `q` by swapping it into the marked prefix of its block.
    fn mark(&mut self, q: usize) {
        let b = self.block_of[q];
        let (i, j) = (self.loc[q], self.first[b] + self.marked[b]);
        if i < j {
            return; // already marked
        }
        let other = self.elems[j];
        self.elems.swap(i, j);
        self.loc[q] = j;
        self.loc[other] = i;
        if self.marked[b] == 0 {
            self.touched.push(b);
        }
        self.marked[b] += 1;
    }

    /// Splits every touched block into marked and unmarked parts. The smaller part becomes
    /// a new block; the ids of the new blocks are returned. All marks are cleared.
    fn split_touched(&mut self) -> Vec<usize> {
        let mut new_blocks = Vec::new();
        while let Some(b) = self.touched.pop() {
            let m = std::mem::take(&mut self.marked[b]);
            if m == self.size(b) {
                continue;
            }
            let mid = self.first[b] + m;
            let z = self.first.len();
            if m <= self.size(b) - m {
                self.first.push(self.first[b]);
                self.end.push(mid);
                self.first[b] = mid;
            } else {
                self.first.push(mid);
                self.end.push(self.end[b]);
                self.end[b] = mid;
            }
            self.marked.push(0);
            for i in self.first[z]..self.end[z] {
                self.block_of[self.elems[i]] = z;
            }
            new_blocks.push(z);
        }
        new_blocks
    }
}

/// Hopcroft's algorithm on a complete DFA given as a flat table `table[q * k + a]`.
/// Returns the block (Nerode class) of every state.
fn hopcroft(table: &[usize], n: usize, k: usize, accept: &[bool]) -> Vec<usize> {
    // Inverse transitions in CSR form: predecessors of q on a are
    // inv[off[a * n + q]..off[a * n + q + 1]].
    let mut off = vec![0usize; n * k + 1];
    for q in 0..n {
        for a in 0..k {
            off[a * n + table[q * k + a] + 1] += 1;
        }
    }
    for i in 0..n * k {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut inv = vec![0usize; n * k];
    for q in 0..n {
        for a in 0..k {
            let slot = &mut fill[a * n + table[q * k + a]];
            inv[*slot] = q;
            *slot += 1;
        }
    }
    let mut part = Partition::by_acceptance(accept);
    let mut work: Vec<(usize, usize)> = Vec::new();
    if part.first.len() == 2 {
        let smaller = if part.size(0) <= part.size(1) { 0 } else { 1 };
        work.extend((0..k).map(|a| (smaller, a)));
    }
    let mut preds = Vec::new();
    while let Some((b, a)) = work.pop() {
        preds.clear();
        for i in part.first[b]..part.end[b] {
            let q = part.elems[i];
            preds.extend_from_slice(&inv[off[a * n + q]..off[a * n + q + 1]]);
        }
        for &p in &preds {
            part.mark(p);
        }
        // The new block z is the smaller half: whether or not (old block, c) is still
        // pending, adding (z, c) for every symbol c is exactly Hopcroft's rule.
        for z in part.split_touched() {
            work.extend((0..k).map(|c| (z, c)));
        }
    }
    part.block_of
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn t(v: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
        v.iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect()
    }

    /// All words over `k` symbols of length exactly `len`, in length-lexicographic order.
    fn words(k: usize, len: usize) -> Vec<Vec<usize>> {
        let mut out = vec![vec![]];
        for _ in 0..len {
            out = out
                .into_iter()
                .flat_map(|w| (0..k).map(move |a| [w.clone(), vec![a]].concat()))
                .collect();
        }
        out
    }

    /// Naive Moore-style refinement: number of Nerode classes of the reachable part.
    fn moore_class_count(d: &Dfa) -> usize {
        let d = d.reachable().complete();
        let mut class: Vec<usize> = d.accept.iter().map(|&a| usize::from(a)).collect();
        loop {
            let mut sig: HashMap<Vec<usize>, usize> = HashMap::new();
            let next: Vec<usize> = (0..d.states.len())
                .map(|q| {
                    let key: Vec<usize> = std::iter::once(class[q])
                        .chain(d.delta[q].iter().map(|t| class[t.unwrap()]))
                        .collect();
                    let len = sig.len();
                    *sig.entry(key).or_insert(len)
                })
                .collect();
            let before = class.iter().collect::<HashSet<_>>().len();
            class = next;
            if sig.len() == before {
                return sig.len();
            }
        }
    }

    /// A random partial DFA: random(n, k, seed) with roughly a quarter of the edges removed.
    fn random_partial(n: usize, k: usize, seed: u64) -> Dfa {
        let mut d = Dfa::random(n, k, seed);
        let mut rng = SplitMix64(seed ^ 0xABCD);
        for row in &mut d.delta {
            for tr in row.iter_mut() {
                if rng.below(4) == 0 {
                    *tr = None;
                }
            }
        }
        d
    }

    fn small_example() -> Dfa {
        // Binary strings ending in 1, with a redundant copy of each state and one unreachable.
        Dfa::new(
            s(&["a", "b", "a2", "b2", "lost"]),
            s(&["0", "1"]),
            t(&[
                ("a", "0", "a2"),
                ("a", "1", "b"),
                ("b", "0", "a"),
                ("b", "1", "b2"),
                ("a2", "0", "a"),
                ("a2", "1", "b2"),
                ("b2", "0", "a2"),
                ("b2", "1", "b"),
                ("lost", "0", "a"),
            ]),
            "a".into(),
            s(&["b", "b2"]),
        )
        .unwrap()
    }

    #[test]
    fn new_builds_and_runs() {
        let d = small_example();
        assert_eq!(d.states.len(), 5);
        let w = d.encode_word(&["0", "1", "1"]).unwrap();
        assert_eq!(w, vec![0, 1, 1]);
        assert_eq!(d.run(&w), vec![Some(0), Some(2), Some(3), Some(1)]);
        assert!(d.accepts(&w));
        assert!(!d.accepts(&[1, 0]));
        assert!(!d.accepts(&[]));
        assert!(!d.is_complete()); // "lost" has no transition on 1
    }

    #[test]
    fn encode_word_reports_unknown_symbols_with_positions() {
        let d = small_example();
        match d.encode_word(&["0", "x", "1", "yy"]) {
            Err(SimError::InvalidInput(p)) => {
                assert_eq!(p.len(), 2, "{p:?}");
                assert!(
                    p[0].contains("\"x\"") && p[0].contains("position 1"),
                    "{p:?}"
                );
                assert!(
                    p[1].contains("\"yy\"") && p[1].contains("position 3"),
                    "{p:?}"
                );
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
        assert_eq!(d.symbol_index("1"), Some(1));
        assert_eq!(d.symbol_index("2"), None);
    }

    #[test]
    fn validation_reports_every_problem() {
        // Three distinct mistakes: duplicate state, unknown symbol in a transition, unknown start.
        let err = Dfa::new(
            s(&["p", "q", "p"]),
            s(&["a"]),
            t(&[("p", "a", "q"), ("q", "z", "p")]),
            "r".into(),
            s(&["q"]),
        )
        .unwrap_err();
        match err {
            SimError::InvalidMachine(p) => {
                assert_eq!(p.len(), 3, "{p:?}");
                assert!(p[0].contains("duplicate state"), "{p:?}");
                assert!(p[1].contains("unknown symbol \"z\""), "{p:?}");
                assert!(p[2].contains("unknown start state \"r\""), "{p:?}");
            }
            other => panic!("expected InvalidMachine, got {other:?}"),
        }
    }

    /// Builds a DFA over states `st` and symbols `al`, start `start`, from compact inputs.
    fn try_new(
        st: &[&str],
        al: &[&str],
        tr: &[(&str, &str, &str)],
        start: &str,
        acc: &[&str],
    ) -> SimResult<Dfa> {
        Dfa::new(s(st), s(al), t(tr), start.into(), s(acc))
    }

    #[test]
    fn validation_covers_each_kind() {
        let cases = [
            (try_new(&[], &["a"], &[], "x", &[]), "no states"),
            (try_new(&["p"], &["a", ""], &[], "p", &[]), "empty string"),
            (
                try_new(&["p"], &["a", "a"], &[], "p", &[]),
                "duplicate symbol",
            ),
            (
                try_new(&["p"], &["a"], &[("x", "a", "p")], "p", &[]),
                "unknown source",
            ),
            (
                try_new(&["p"], &["a"], &[("p", "a", "x")], "p", &[]),
                "unknown target",
            ),
            (
                try_new(
                    &["p", "q"],
                    &["a"],
                    &[("p", "a", "p"), ("p", "a", "q")],
                    "p",
                    &[],
                ),
                "conflicting",
            ),
            (
                try_new(&["p"], &["a"], &[], "p", &["p", "w"]),
                "unknown accepting state \"w\"",
            ),
        ];
        for (result, needle) in cases {
            match result {
                Err(SimError::InvalidMachine(p)) => {
                    assert_eq!(p.len(), 1, "{p:?}");
                    assert!(p[0].contains(needle), "{p:?} should mention {needle}");
                }
                other => panic!("expected InvalidMachine for {needle}, got {other:?}"),
            }
        }
        // A repeated identical transition is not a conflict.
        assert!(try_new(
            &["p"],
            &["a"],
            &[("p", "a", "p"), ("p", "a", "p")],
            "p",
            &[]
        )
        .is_ok());
    }

    #[test]
    fn from_table_validates_shape() {
        let ok = Dfa::from_table(
            s(&["p", "q"]),
            s(&["a"]),
            vec![vec![Some(1)], vec![None]],
            0,
            vec![false, true],
        );
        assert!(ok.unwrap().accepts(&[0]));
        let err = Dfa::from_table(
            s(&["p", "p"]),
            s(&["a"]),
            vec![vec![Some(7)], vec![None, None]],
            5,
            vec![true],
        );
        match err {
            Err(SimError::InvalidMachine(p)) => assert_eq!(p.len(), 5, "{p:?}"),
            other => panic!("expected InvalidMachine, got {other:?}"),
        }
    }

    #[test]
    fn partial_dfa_runs_dead_and_completes() {
        // 1* as a one-state partial DFA; the state is named "dead" to exercise renaming.
        let d = Dfa::new(
            s(&["dead"]),
            s(&["0", "1"]),
            t(&[("dead", "1", "dead")]),
            "dead".into(),
            s(&["dead"]),
        )
        .unwrap();
        assert!(!d.is_complete());
        assert_eq!(d.run(&[1, 0, 1]), vec![Some(0), Some(0), None, None]);
        assert_eq!(d.run(&[1, 5]), vec![Some(0), Some(0), None]); // out-of-range symbol: dead
        let c = d.complete();
        assert!(c.is_complete());
        assert_eq!(c.states, s(&["dead", "dead'"]));
        assert_eq!(
            c.delta,
            vec![vec![Some(1), Some(0)], vec![Some(1), Some(1)]]
        );
        assert_eq!(c.accept, vec![true, false]);
        assert_eq!(d.equivalent(&c).unwrap(), None);
        assert_eq!(c.complete(), c); // complete is a no-op on a complete DFA
        for len in 0..=8 {
            for w in words(2, len) {
                assert_eq!(d.accepts(&w), c.accepts(&w));
            }
        }
    }

    #[test]
    fn random_partial_dfas_complete_correctly() {
        for seed in 0..100 {
            let d = random_partial(1 + (seed as usize % 6), 2, seed);
            let c = d.complete();
            assert!(c.is_complete());
            assert!(c.states.len() == d.states.len() + usize::from(!d.is_complete()));
            for len in 0..=6 {
                for w in words(2, len) {
                    assert_eq!(d.accepts(&w), c.accepts(&w), "seed {seed} word {w:?}");
                }
            }
        }
    }

    #[test]
    fn reachable_drops_only_unreachable_states() {
        let d = small_example();
        let r = d.reachable();
        assert_eq!(r.states, s(&["a", "b", "a2", "b2"]));
        assert!(r.is_complete());
        assert_eq!(d.equivalent(&r).unwrap(), None);
    }

    #[test]
    fn minimize_small_example() {
        let m = small_example().minimize();
        assert_eq!(m.states, s(&["a", "b"]));
        assert_eq!(
            m.delta,
            vec![vec![Some(0), Some(1)], vec![Some(0), Some(1)]]
        );
        assert_eq!(m.accept, vec![false, true]);
        assert_eq!(m.minimize(), m);
    }

    #[test]
    fn minimize_random_dfas_idempotent_language_preserving_and_minimal() {
        for seed in 0..400u64 {
            let n = 1 + (seed as usize * 7) % 40;
            let k = 1 + (seed as usize) % 3;
            let d = if seed % 2 == 0 {
                Dfa::random(n, k, seed)
            } else {
                random_partial(n, k, seed)
            };
            let m = d.minimize();
            assert!(m.is_complete());
            assert_eq!(m.minimize(), m, "seed {seed}: minimize not idempotent");
            assert_eq!(
                d.equivalent(&m).unwrap(),
                None,
                "seed {seed}: language changed"
            );
            assert_eq!(
                m.equivalent(&d).unwrap(),
                None,
                "seed {seed}: language changed"
            );
            assert_eq!(
                m.states.len(),
                moore_class_count(&d),
                "seed {seed}: not minimal"
            );
            assert_eq!(
                m.bfs_order(),
                (0..m.states.len()).collect::<Vec<_>>(),
                "seed {seed}: not BFS-numbered"
            );
        }
    }

    #[test]
    fn minimize_single_class_and_empty_alphabet() {
        let all_reject = Dfa::from_table(
            s(&["x", "y"]),
            s(&["a"]),
            vec![vec![Some(1)], vec![Some(0)]],
            0,
            vec![false; 2],
        )
        .unwrap();
        let m = all_reject.minimize();
        assert_eq!((m.states, m.accept), (s(&["x"]), vec![false]));
        let eps = Dfa::from_table(
            s(&["x", "y"]),
            s(&[]),
            vec![vec![], vec![]],
            1,
            vec![false, true],
        )
        .unwrap();
        let m = eps.minimize();
        assert_eq!(
            (m.states.clone(), m.accept.clone()),
            (s(&["y"]), vec![true])
        );
        assert!(m.accepts(&[]));
    }

    #[test]
    fn equivalence_gives_shortest_counterexample_bruteforce() {
        let mut differing = 0;
        for seed in 0..300u64 {
            let a = random_partial(1 + seed as usize % 4, 2, seed);
            let b = random_partial(1 + (seed as usize / 4) % 4, 2, seed + 1000);
            // Any two inequivalent DFAs differ on a word shorter than the product size.
            let bound = (a.states.len() + 1) * (b.states.len() + 1);
            match a.equivalent(&b).unwrap() {
                None => {
                    for len in 0..bound {
                        for w in words(2, len) {
                            assert_eq!(a.accepts(&w), b.accepts(&w), "seed {seed}");
                        }
                    }
                }
                Some(cx) => {
                    differing += 1;
                    assert_ne!(
                        a.accepts(&cx),
                        b.accepts(&cx),
                        "seed {seed}: not a counterexample"
                    );
                    for len in 0..cx.len() {
                        for w in words(2, len) {
                            assert_eq!(a.accepts(&w), b.accepts(&w), "seed {seed}: shorter {w:?}");
                        }
                    }
                }
            }
        }
        assert!(differing > 100);
    }

    #[test]
    fn equivalence_matches_symbols_by_name() {
        let d = small_example();
        // Same machine with the alphabet listed the other way round.
        let swapped = Dfa::from_table(
            d.states.clone(),
            s(&["1", "0"]),
            d.delta.iter().map(|r| vec![r[1], r[0]]).collect(),
            d.start,
            d.accept.clone(),
        )
        .unwrap();
        assert_eq!(d.equivalent(&swapped).unwrap(), None);
        // Flip acceptance of the start: shortest counterexample is the empty word.
        let mut other = swapped.clone();
        other.accept[0] = true;
        assert_eq!(d.equivalent(&other).unwrap(), Some(vec![]));
        let abc = Dfa::random(2, 2, 1);
        let mut xyz = abc.clone();
        xyz.alphabet = s(&["0", "2"]);
        assert!(matches!(
            abc.equivalent(&xyz),
            Err(SimError::InvalidInput(_))
        ));
        let mut short = abc.clone();
        short.alphabet.pop();
        short.delta.iter_mut().for_each(|r| {
            r.pop();
        });
        assert!(matches!(
            abc.equivalent(&short),
            Err(SimError::InvalidInput(_))
        ));
    }

    #[test]
    fn json_round_trip() {
        let mut cases = vec![
            small_example(),
            random_partial(30, 3, 9),
            Dfa::random(50, 4, 2),
        ];
        cases.push(
            Dfa::new(
                s(&["q \"quoted\"", "ü"]),
                s(&["α", "[,]"]),
                t(&[("ü", "α", "q \"quoted\"")]),
                "ü".into(),
                s(&["ü"]),
            )
            .unwrap(),
        );
        for d in cases {
            let text = d.to_json();
            assert!(
                text.starts_with("{\"format\":\"rnnsim.dfa\",\"version\":1,"),
                "{text}"
            );
            assert_eq!(Dfa::from_json(&text).unwrap(), d);
        }
        let text = Dfa::from_table(
            s(&["p", "q"]),
            s(&["a"]),
            vec![vec![Some(1)], vec![None]],
            0,
            vec![false, true],
        )
        .unwrap()
        .to_json();
        assert_eq!(
            text,
            r#"{"format":"rnnsim.dfa","version":1,"states":["p","q"],"alphabet":["a"],"transitions":[["p","a","q"]],"start":"p","accept":["q"]}"#
        );
    }

    #[test]
    fn json_corruption_is_reported() {
        let good = small_example().to_json();
        let input_errors = [
            good[..good.len() / 2].to_string(),
            "[1,2]".to_string(),
            good.replace("rnnsim.dfa", "rnnsim.tm"),
            good.replace("\"version\":1", "\"version\":2"),
            good.replace("\"version\":1,", ""),
            good.replace("\"format\":\"rnnsim.dfa\",", ""),
            good.replace("\"start\":\"a\"", "\"start\":3"),
            good.replace("[\"a\",\"0\",\"a2\"]", "[\"a\",\"0\"]"),
            good.replace("\"accept\"", "\"accepting\""),
        ];
        for text in input_errors {
            match Dfa::from_json(&text) {
                Err(SimError::InvalidInput(p)) => assert_eq!(p.len(), 1, "{p:?}"),
                other => panic!("expected InvalidInput for {text}, got {other:?}"),
            }
        }
        let bad_machine = good
            .replace("\"start\":\"a\"", "\"start\":\"nowhere\"")
            .replace("[\"b\",\"b2\"]", "[\"b\",\"zz\"]");
        match Dfa::from_json(&bad_machine) {
            Err(SimError::InvalidMachine(p)) => assert_eq!(p.len(), 2, "{p:?}"),
            other => panic!("expected InvalidMachine, got {other:?}"),
        }
    }

    #[test]
    fn random_is_deterministic_and_complete() {
        let a = Dfa::random(1000, 3, 42);
        assert_eq!(a, Dfa::random(1000, 3, 42));
        assert_ne!(a, Dfa::random(1000, 3, 43));
        assert!(a.is_complete());
        assert_eq!(a.states[999], "q999");
        assert_eq!(a.alphabet, s(&["0", "1", "2"]));
        let acc = a.accept.iter().filter(|&&x| x).count();
        assert!((400..600).contains(&acc), "{acc}");
        assert_eq!(Dfa::random(0, 2, 1).states.len(), 1);
    }

    #[test]
    fn hopcroft_large_random() {
        let t0 = std::time::Instant::now();
        let d = Dfa::random(100_000, 2, 7);
        let t1 = std::time::Instant::now();
        let m = d.minimize();
        let t2 = std::time::Instant::now();
        eprintln!(
            "random(100000, 2): generated in {:?}, minimised to {} states in {:?}",
            t1 - t0,
            m.states.len(),
            t2 - t1
        );
        assert!(m.states.len() <= d.states.len());
        assert_eq!(m.minimize().states.len(), m.states.len());
        for seed in 0..20u64 {
            let w: Vec<usize> = (0..200)
                .map(|i| ((seed * 31 + i * 17) % 3 % 2) as usize)
                .collect();
            assert_eq!(d.accepts(&w), m.accepts(&w));
        }
    }
}
