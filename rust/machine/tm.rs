//! Deterministic single-tape Turing machines and their reference interpreter.
//!
//! The model follows Sipser, *Introduction to the Theory of Computation*, 3rd ed.
//! (Cengage, 2013), Definition 3.3: a machine has states, an input alphabet, a tape alphabet
//! containing the blank and the input alphabet, a transition function
//! `delta(state, read) = (next, write, move)`, a start state and stopping states.
//! Departures from Sipser, for the busy-beaver machines of bbchallenge.org and automata-lib:
//!
//! * besides accept and reject states there are plain **halt** states (bbchallenge's `Z`/`H`),
//!   whose stopping is neither an acceptance nor a rejection;
//! * the tape may be **two-way** infinite (busy beavers) or **one-way** with a left end at
//!   cell 0 (Sipser: a left move on the leftmost cell leaves the head where it is);
//! * a move may also be `N` (stay), used by the `---` transitions of the text format.
//!
//! A missing transition (`None`) stops the machine and rejects without counting a step, as in
//! automata-lib (`python-automata`). Sipser's figures draw such transitions as moves into
//! `q_reject` that do count a step; machines that need that count list the transition.
//!
//! Head positions are absolute cell indices (`i64`): cell 0 is where the input starts. A
//! configuration stores the cells `[offset, offset + tape.len())`; that range is the input
//! (at least one cell) together with every cell the head has visited, so it is identical
//! for [`TuringMachine::step`], [`TuringMachine::configs`] and [`TuringMachine::run`].

use crate::error::{SimError, SimResult};
use crate::machine::random::SplitMix64;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Head movement of one transition: left, right, or stay (`N`, "no move").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Move {
    /// One cell left (towards negative cells; on a one-way tape cell 0 stays put).
    L,
    /// One cell right.
    R,
    /// Stay on the same cell.
    N,
}

/// Shape of the tape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TapeKind {
    /// Infinite in both directions (busy beavers, bbchallenge.org).
    TwoWay,
    /// A left end at cell 0; a left move on cell 0 keeps the head on cell 0 (Sipser 2013, Def. 3.3).
    OneWay,
}

/// One entry of the transition table: go to state `next`, write tape symbol `write`
/// (index into `tape_alphabet`) over the cell read, then move the head by `mv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Transition {
    /// Next state (index into `states`).
    pub next: usize,
    /// Symbol written over the cell read (index into `tape_alphabet`).
    pub write: usize,
    /// Head movement after writing.
    pub mv: Move,
}

/// A validated deterministic Turing machine. Immutable after construction; every index
/// field refers to `states` or `tape_alphabet`.
///
/// Build one with [`TuringMachine::new`] (names, validated), [`TuringMachine::parse`]
/// (bbchallenge text), [`crate::machine::tm_builtins::builtin`] or [`TuringMachine::random`].
/// A hand-assembled or deserialized value can be checked with [`TuringMachine::validate`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TuringMachine {
    /// State names, in order; indices are positions in this list.
    pub states: Vec<String>,
    /// Symbols allowed in the input: a subset of the tape alphabet without the blank.
    pub input_alphabet: Vec<String>,
    /// All tape symbols, the blank included.
    pub tape_alphabet: Vec<String>,
    /// Index of the blank in `tape_alphabet`.
    pub blank: usize,
    /// `delta[state][symbol]`; `None` = missing: the machine stops and rejects, no step counted.
    pub delta: Vec<Vec<Option<Transition>>>,
    /// Start state.
    pub start: usize,
    /// Accepting states (entering one stops the machine with `Status::Accepted`).
    pub accept: Vec<usize>,
    /// Rejecting states (entering one stops the machine with `Status::Rejected`).
    pub reject: Vec<usize>,
    /// Plain halting states (busy-beaver `Z`/`H`): stop with `Status::Halted`.
    pub halt: Vec<usize>,
    /// One-way or two-way tape.
    pub tape: TapeKind,
}

/// Where a configuration stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    /// Not stopped yet.
    Running,
    /// Entered an accept state.
    Accepted,
    /// Entered a reject state, or found no transition for (state, symbol read).
    Rejected,
    /// Entered a plain halt state.
    Halted,
}

/// A configuration (Sipser 2013, §3.1): state, head position, tape contents, plus the
/// number of steps taken to reach it and whether the machine has stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmConfig {
    /// Current state (index into `states`).
    pub state: usize,
    /// Absolute cell under the head (cell 0 = first input cell).
    pub head: i64,
    /// Cells `[offset, offset + tape.len())`; every other cell is blank.
    pub tape: Vec<usize>,
    /// Absolute cell of `tape[0]` (0 unless the head went left of the input on a two-way tape).
    pub offset: i64,
    /// Steps taken from `c_0`.
    pub steps: u64,
    /// Running, or how the machine stopped.
    pub status: Status,
}

/// Result of [`TuringMachine::run`]: the last configuration reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmRun {
    /// Steps taken (a missing transition does not count as a step).
    pub steps: u64,
    /// True if the machine stopped (accept, reject, halt, or missing transition);
    /// false if it was still running after `max_steps` steps.
    pub halted: bool,
    /// `Some(true)` accepted, `Some(false)` rejected, `None` plain halt or not halted.
    pub accepted: Option<bool>,
    /// Final state.
    pub state: usize,
    /// Final head cell (absolute).
    pub head: i64,
    /// Cells `[offset, offset + tape.len())`, same extent as [`TmConfig::tape`].
    pub tape: Vec<usize>,
    /// Absolute cell of `tape[0]`.
    pub offset: i64,
    /// Final status (`Running` if the step limit was reached).
    pub status: Status,
}

impl TmRun {
    /// Builds the result from a configuration.
    pub fn from_config(c: TmConfig) -> TmRun {
        TmRun {
            steps: c.steps,
            halted: c.status != Status::Running,
            accepted: match c.status {
                Status::Accepted => Some(true),
                Status::Rejected => Some(false),
                _ => None,
            },
            state: c.state,
            head: c.head,
            tape: c.tape,
            offset: c.offset,
            status: c.status,
        }
    }

    /// The final configuration of this run (for [`TuringMachine::tape_string`] and friends).
    pub fn to_config(&self) -> TmConfig {
        TmConfig {
            state: self.state,
            head: self.head,
            tape: self.tape.clone(),
            offset: self.offset,
            steps: self.steps,
            status: self.status,
        }
    }
}

/// Name -> index of a list of names; duplicates and empty names are reported.
fn index_names<'a>(
    what: &str,
    names: &'a [String],
    p: &mut Vec<String>,
) -> HashMap<&'a str, usize> {
    let mut ix = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            p.push(format!("{what} {i} has an empty name"));
        } else if ix.contains_key(n.as_str()) {
            p.push(format!("duplicate {what} {n:?}"));
        } else {
            ix.insert(n.as_str(), i);
        }
    }
    ix
}

/// Resolves a list of state names (duplicates in the list are harmless and removed).
fn resolve_states(
    what: &str,
    names: &[String],
    ix: &HashMap<&str, usize>,
    p: &mut Vec<String>,
) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for n in names {
        match ix.get(n.as_str()) {
            Some(&i) if !out.contains(&i) => out.push(i),
            Some(_) => {}
            None => p.push(format!("{what} state {n:?} is not a state")),
        }
    }
    out
}

/// Checks the input alphabet against the tape alphabet and the blank.
fn check_input_alphabet(
    input: &[String],
    tape: &HashMap<&str, usize>,
    blank: &str,
    p: &mut Vec<String>,
) {
    let mut seen = std::collections::HashSet::new();
    for s in input {
        if !seen.insert(s.as_str()) {
            p.push(format!("duplicate input symbol {s:?}"));
        } else if s == blank {
            p.push(format!("the blank {s:?} is in the input alphabet"));
        } else if !tape.contains_key(s.as_str()) {
            p.push(format!("input symbol {s:?} is not in the tape alphabet"));
        }
    }
}

/// Resolves the accept, reject and halt lists and reports states in more than one of them.
fn resolve_stopping(
    states: &[String],
    ix: &HashMap<&str, usize>,
    lists: [&[String]; 3],
    p: &mut Vec<String>,
) -> [Vec<usize>; 3] {
    let acc = resolve_states("accept", lists[0], ix, p);
    let rej = resolve_states("reject", lists[1], ix, p);
    let hal = resolve_states("halt", lists[2], ix, p);
    check_disjoint(
        states,
        [("accept", &acc), ("reject", &rej), ("halt", &hal)],
        p,
    );
    [acc, rej, hal]
}

/// Reports states listed in more than one of accept / reject / halt.
fn check_disjoint(states: &[String], sets: [(&str, &[usize]); 3], p: &mut Vec<String>) {
    for a in 0..3 {
        for b in a + 1..3 {
            for &s in sets[a].1.iter().filter(|s| sets[b].1.contains(s)) {
                p.push(format!(
                    "state {:?} is both {} and {}",
                    states[s], sets[a].0, sets[b].0
                ));
            }
        }
    }
}

/// The indices the transition list is resolved against.
struct Names<'a> {
    states: HashMap<&'a str, usize>,
    symbols: HashMap<&'a str, usize>,
    n_states: usize,
    n_symbols: usize,
}

/// Builds `delta` from named transitions, reporting every unknown name, bad move,
/// duplicate `(state, read)` and transition out of a stopping state.
fn build_delta(
    rules: &[(String, String, String, String, char)],
    names: &Names,
    stopping: &[usize],
    state_names: &[String],
    p: &mut Vec<String>,
) -> Vec<Vec<Option<Transition>>> {
    let mut delta = vec![vec![None; names.n_symbols]; names.n_states];
    let mut defined_by: HashMap<(usize, usize), usize> = HashMap::new();
    for (k, (q, r, nq, w, m)) in rules.iter().enumerate() {
        let at = format!("transition {k} ({q}, {r} -> {nq}, {w}, {m})");
        let mut look = |ix: &HashMap<&str, usize>, name: &str, what: &str| {
            let i = ix.get(name).copied();
            if i.is_none() {
                p.push(format!("{at}: unknown {what} {name:?}"));
            }
            i
        };
        let (qi, ri) = (
            look(&names.states, q, "state"),
            look(&names.symbols, r, "read symbol"),
        );
        let (ni, wi) = (
            look(&names.states, nq, "next state"),
            look(&names.symbols, w, "write symbol"),
        );
        let mv = match m {
            'L' => Some(Move::L),
            'R' => Some(Move::R),
            'N' => Some(Move::N),
            _ => {
                p.push(format!("{at}: move must be 'L', 'R' or 'N', got {m:?}"));
                None
            }
        };
        if let Some(qi) = qi.filter(|qi| stopping.contains(qi)) {
            p.push(format!(
                "{at}: leaves the stopping state {:?}",
                state_names[qi]
            ));
        }
        let (Some(qi), Some(ri)) = (qi, ri) else {
            continue;
        };
        if let Some(prev) = defined_by.insert((qi, ri), k) {
            p.push(format!("transitions {prev} and {k} both define ({q}, {r})"));
        }
        if let (Some(next), Some(write), Some(mv)) = (ni, wi, mv) {
            delta[qi][ri] = Some(Transition { next, write, mv });
        }
    }
    delta
}

/// Fast tape for [`TuringMachine::run`]: a buffer with slack on both sides, growing by doubling.
struct FastTape {
    buf: Vec<usize>,
    pos: usize,
    /// Absolute cell of `buf[0]`.
    base: i64,
    /// Leftmost / rightmost absolute cell visited by the head.
    lo: i64,
    hi: i64,
    blank: usize,
    one_way: bool,
}

impl FastTape {
    fn new(cells: Vec<usize>, blank: usize, one_way: bool) -> FastTape {
        let mut buf = cells;
        let len = buf.len();
        buf.resize(len + 64.max(len), blank);
        FastTape {
            buf,
            pos: 0,
            base: 0,
            lo: 0,
            hi: 0,
            blank,
            one_way,
        }
    }

    #[inline(always)]
    fn shift(&mut self, mv: Move) {
        match mv {
            Move::L => {
                if self.pos == 0 {
                    if self.one_way {
                        return;
                    }
                    let extra = self.buf.len();
                    let mut grown = vec![self.blank; extra];
                    grown.extend_from_slice(&self.buf);
                    self.buf = grown;
                    self.pos = extra;
                    self.base -= extra as i64;
                }
                self.pos -= 1;
                self.lo = self.lo.min(self.base + self.pos as i64);
            }
            Move::R => {
                self.pos += 1;
                if self.pos == self.buf.len() {
                    let len = self.buf.len();
                    self.buf.resize(2 * len, self.blank);
                }
                self.hi = self.hi.max(self.base + self.pos as i64);
            }
            Move::N => {}
        }
    }

    /// The canonical extent: input cells `[0, init_len)` plus every visited cell.
    fn extract(&self, init_len: i64) -> (Vec<usize>, i64) {
        let (from, to) = (self.lo.min(0), self.hi.max(init_len - 1));
        let (a, b) = ((from - self.base) as usize, (to - self.base) as usize);
        (self.buf[a..=b].to_vec(), from)
    }
}



/// Name of working state `i` of a busy-beaver-style machine: `A`, `B`, ... (`S<i>` past `Y`).
pub(crate) fn bb_state_name(i: usize, n_states: usize) -> String {
    if n_states <= 25 {
        ((b'A' + i as u8) as char).to_string()
    } else {
        format!("S{i}")
    }
}

impl TuringMachine {
    /// Builds and validates a machine from names.
    ///
    /// `transitions` are `(state, read, next, write, move)` with move `'L'`, `'R'` or `'N'`.
    /// Every problem is reported at once in `SimError::InvalidMachine`: no states, duplicate or
    /// empty names, unknown names anywhere, the blank missing from the tape alphabet or present
    /// in the input alphabet, input symbols outside the tape alphabet, a state in more than one
    /// of accept/reject/halt, a bad move character, two transitions for one `(state, read)`,
    /// and transitions out of a stopping state. Duplicates inside the accept/reject/halt lists
    /// are harmless and removed. The start state may itself be a stopping state.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        states: Vec<String>,
        input_alphabet: Vec<String>,
        tape_alphabet: Vec<String>,
        blank: String,
        transitions: Vec<(String, String, String, String, char)>,
        start: String,
        accept: Vec<String>,
        reject: Vec<String>,
        halt: Vec<String>,
        tape: TapeKind,
    ) -> SimResult<Self> {
        let mut p = Vec::new();
        if states.is_empty() {
            p.push("the machine has no states".to_string());
        }
        let state_ix = index_names("state", &states, &mut p);
        let sym_ix = index_names("tape symbol", &tape_alphabet, &mut p);
        let blank_i = sym_ix.get(blank.as_str()).copied();
        if blank_i.is_none() {
            p.push(format!("the blank {blank:?} is not in the tape alphabet"));
        }
        check_input_alphabet(&input_alphabet, &sym_ix, &blank, &mut p);
        let start_i = state_ix.get(start.as_str()).copied();
        if start_i.is_none() && !states.is_empty() {
            p.push(format!("start state {start:?} is not a state"));
        }
        let [acc, rej, hal] =
            resolve_stopping(&states, &state_ix, [&accept, &reject, &halt], &mut p);
        let stopping: Vec<usize> = acc.iter().chain(&rej).chain(&hal).copied().collect();
        let names = Names {
            states: state_ix,
            symbols: sym_ix,
            n_states: states.len(),
            n_symbols: tape_alphabet.len(),
        };
        let delta = build_delta(&transitions, &names, &stopping, &states, &mut p);
        match (start_i, blank_i) {
            (Some(start), Some(blank)) if p.is_empty() => {
                let m = TuringMachine {
                    states,
                    input_alphabet,
                    tape_alphabet,
                    blank,
                    delta,
                    start,
                    accept: acc,
                    reject: rej,
                    halt: hal,
                    tape,
                };
                debug_assert_eq!(m.validate(), Ok(()));
                Ok(m)
            }
            _ => Err(SimError::InvalidMachine(p)),
        }
    }

    /// Checks the index-level invariants of an already built value (useful after
    /// deserializing or assembling the struct by hand); reports every problem in
    /// `SimError::InvalidMachine`. Machines from [`TuringMachine::new`] always pass.
    pub fn validate(&self) -> SimResult<()> {
        let mut p = Vec::new();
        let (ns, nk) = (self.states.len(), self.tape_alphabet.len());
        if ns == 0 {
            p.push("the machine has no states".to_string());
        }
        if self.start >= ns {
            p.push(format!("start state {} out of range", self.start));
        }
        if self.blank >= nk {
            p.push(format!("blank {} out of range", self.blank));
        }
        let sym_ix = index_names("tape symbol", &self.tape_alphabet, &mut p);
        index_names("state", &self.states, &mut p);
        if let Some(b) = self.tape_alphabet.get(self.blank) {
            check_input_alphabet(&self.input_alphabet, &sym_ix, b, &mut p);
        }
        for (what, set) in [
            ("accept", &self.accept),
            ("reject", &self.reject),
            ("halt", &self.halt),
        ] {
            set.iter()
                .filter(|&&s| s >= ns)
                .for_each(|s| p.push(format!("{what} state {s} out of range")));
        }
        if self
            .accept
            .iter()
            .chain(&self.reject)
            .chain(&self.halt)
            .all(|&s| s < ns)
        {
            check_disjoint(
                &self.states,
                [
                    ("accept", &self.accept),
                    ("reject", &self.reject),
                    ("halt", &self.halt),
                ],
                &mut p,
            );
        }
        if self.delta.len() != ns {
            p.push(format!(
                "delta has {} rows for {ns} states",
                self.delta.len()
            ));
        }
        for (q, row) in self.delta.iter().enumerate() {
            self.validate_row(q, row, &mut p);
        }
        if p.is_empty() {
            Ok(())
        } else {
            Err(SimError::InvalidMachine(p))
        }
    }

    fn validate_row(&self, q: usize, row: &[Option<Transition>], p: &mut Vec<String>) {
        let (ns, nk) = (self.states.len(), self.tape_alphabet.len());
        if row.len() != nk {
            p.push(format!(
                "delta row {q} has {} entries for {nk} tape symbols",
                row.len()
            ));
        }
        for (r, t) in row.iter().enumerate() {
            let Some(t) = t else { continue };
            if t.next >= ns || t.write >= nk {
                p.push(format!("delta[{q}][{r}] = {t:?} out of range"));
            }
            if self.is_stopping(q) {
                p.push(format!("delta[{q}][{r}] leaves a stopping state"));
            }
        }
    }

    /// True if `state` is an accept, reject or halt state.
    pub fn is_stopping(&self, state: usize) -> bool {
        self.status_of(state) != Status::Running
    }

    /// The status a configuration in `state` has: `Running` unless it is a stopping state.
    pub fn status_of(&self, state: usize) -> Status {
        if self.accept.contains(&state) {
            Status::Accepted
        } else if self.reject.contains(&state) {
            Status::Rejected
        } else if self.halt.contains(&state) {
            Status::Halted
        } else {
            Status::Running
        }
    }

    /// Maps input symbols (names from `input_alphabet`) to tape-symbol indices.
    /// Symbols outside the input alphabet (the blank and marks like Sipser's `x` included)
    /// give `SimError::InvalidInput` naming each offending symbol and its position.
    pub fn encode_input(&self, symbols: &[&str]) -> SimResult<Vec<usize>> {
        let mut p = Vec::new();
        let mut out = Vec::with_capacity(symbols.len());
        for (i, s) in symbols.iter().enumerate() {
            match self.input_alphabet.iter().any(|a| a == s) {
                true => out.push(self.tape_alphabet.iter().position(|a| a == s).unwrap()),
                false => p.push(format!(
                    "input symbol {s:?} at position {i} is not in the input alphabet {:?}",
                    self.input_alphabet
                )),
            }
        }
        if p.is_empty() {
            Ok(out)
        } else {
            Err(SimError::InvalidInput(p))
        }
    }

    /// The start configuration `c_0` (Sipser 2013, §3.1): `input` (tape-symbol indices) written
    /// from cell 0, the rest blank, head on cell 0, zero steps. The stored tape is the input,
    /// or one blank cell if the input is empty. If the start state is a stopping state the
    /// configuration is already stopped. Panics if a symbol index is out of range.
    pub fn start_config(&self, input: &[usize]) -> TmConfig {
        let n = self.tape_alphabet.len();
        assert!(
            input.iter().all(|&s| s < n),
            "input symbol index out of range (tape alphabet has {n} symbols)"
        );
        let tape = if input.is_empty() {
            vec![self.blank]
        } else {
            input.to_vec()
        };
        TmConfig {
            state: self.start,
            head: 0,
            tape,
            offset: 0,
            steps: 0,
            status: self.status_of(self.start),
        }
    }

    /// Extends the stored tape of `c` (with blanks) so that it holds cell `cell`.
    fn ensure_cell(&self, c: &mut TmConfig, cell: i64) {
        if cell < c.offset {
            let mut grown = vec![self.blank; (c.offset - cell) as usize];
            grown.extend_from_slice(&c.tape);
            c.tape = grown;
            c.offset = cell;
        } else if cell >= c.offset + c.tape.len() as i64 {
            c.tape.resize((cell - c.offset + 1) as usize, self.blank);
        }
    }

    /// Head position after moving from `head` by `mv` (one-way tapes stay on cell 0).
    #[inline]
    fn moved(&self, head: i64, mv: Move) -> i64 {
        match mv {
            Move::L if self.tape == TapeKind::OneWay && head <= 0 => 0,
            Move::L => head - 1,
            Move::R => head + 1,
            Move::N => head,
        }
    }

    /// The symbol under the head of `c` (blank outside the stored cells).
    pub fn read(&self, c: &TmConfig) -> usize {
        let i = c.head - c.offset;
        if i < 0 || i >= c.tape.len() as i64 {
            self.blank
        } else {
            c.tape[i as usize]
        }
    }

    /// True if `c` is running and has no transition for (state, symbol read).
    pub fn is_stuck(&self, c: &TmConfig) -> bool {
        c.status == Status::Running && self.delta[c.state][self.read(c)].is_none()
    }

    /// Performs one step on `c`. Returns false (and changes nothing) if `c` has stopped.
    /// With a transition: write, move, enter the next state, `steps += 1`, and the status
    /// becomes that of the new state (entering accept/reject/halt counts as the step).
    /// Without one: the status becomes `Rejected` and the step count is unchanged (returns true).
    pub fn step(&self, c: &mut TmConfig) -> bool {
        if c.status != Status::Running {
            return false;
        }
        self.ensure_cell(c, c.head);
        let i = (c.head - c.offset) as usize;
        let Some(t) = self.delta[c.state][c.tape[i]] else {
            c.status = Status::Rejected;
            return true;
        };
        c.tape[i] = t.write;
        c.head = self.moved(c.head, t.mv);
        self.ensure_cell(c, c.head);
        c.steps += 1;
        c.state = t.next;
        c.status = self.status_of(t.next);
        true
    }

    /// Streams the configurations `c_0, c_1, ...` of the computation on `input`, each a fresh
    /// copy. Stops after the first stopped configuration, or after `c_max_steps` if still
    /// running. When the machine gets stuck (missing transition) the last item repeats the
    /// previous configuration with status `Rejected` and the same step count; that check is
    /// made even at `max_steps`, exactly as in [`TuringMachine::run`], whose result equals
    /// the last item.
    pub fn configs<'a>(
        &'a self,
        input: &[usize],
        max_steps: u64,
    ) -> impl Iterator<Item = TmConfig> + 'a {
        let mut cur = Some(self.start_config(input));
        std::iter::from_fn(move || {
            let c = cur.take()?;
            if c.status == Status::Running && (c.steps < max_steps || self.is_stuck(&c)) {
                let mut next = c.clone();
                self.step(&mut next);
                cur = Some(next);
            }
            Some(c)
        })
    }

    /// Runs the machine on `input` for at most `max_steps` steps and returns the last
    /// configuration. Reaching `max_steps` is not an error: the result has `halted == false`.
    /// A missing transition is detected even after the last allowed step (it costs no step).
    /// Uses a flat transition table and a slack-buffered tape: BB(5)'s 47,176,870 steps
    /// take well under a second in release mode.
    pub fn run(&self, input: &[usize], max_steps: u64) -> TmRun {
        let c0 = self.start_config(input);
        if c0.status != Status::Running {
            return TmRun::from_config(c0);
        }
        let init_len = c0.tape.len() as i64;
        let nk = self.tape_alphabet.len();
        let table: Vec<Option<Transition>> = self.delta.iter().flatten().copied().collect();
        let kinds: Vec<Status> = (0..self.states.len()).map(|q| self.status_of(q)).collect();
        let mut tape = FastTape::new(c0.tape, self.blank, self.tape == TapeKind::OneWay);
        let (mut state, mut steps, mut status) = (self.start, 0u64, Status::Running);
        loop {
            let Some(t) = table[state * nk + tape.buf[tape.pos]] else {
                status = Status::Rejected;
                break;
            };
            if steps >= max_steps {
                break;
            }
            tape.buf[tape.pos] = t.write;
            tape.shift(t.mv);
            steps += 1;
            state = t.next;
            status = kinds[state];
            if status != Status::Running {
                break;
            }
        }
        let head = tape.base + tape.pos as i64;
        let (cells, offset) = tape.extract(init_len);
        TmRun::from_config(TmConfig {
            state,
            head,
            tape: cells,
            offset,
            steps,
            status,
        })
    }

    /// Number of non-blank cells on `tape` (the busy-beaver "ones", sigma).
    pub fn ones(&self, tape: &[usize]) -> u64 {
        tape.iter().filter(|&&s| s != self.blank).count() as u64
    }

    /// The stored cells of `tape` with leading and trailing blanks removed.
    pub fn tape_contents(&self, tape: &[usize]) -> Vec<usize> {
        let first = tape.iter().position(|&s| s != self.blank);
        let last = tape.iter().rposition(|&s| s != self.blank);
        match (first, last) {
            (Some(a), Some(b)) => tape[a..=b].to_vec(),
            _ => Vec::new(),
        }
    }

    /// Canonical text view of a configuration: the cells from the first to the last non-blank
    /// cell, widened to include the head, with the head cell in brackets, e.g. `11[0]1`.
    /// Symbols are concatenated if every tape symbol is one character, else space-separated.
    /// Independent of how much blank tape is stored, so it compares configurations fairly.
    pub fn tape_string(&self, c: &TmConfig) -> String {
        let nonblank = |i: &usize| c.tape[*i] != self.blank;
        let first = (0..c.tape.len())
            .find(nonblank)
            .map(|i| c.offset + i as i64);
        let last = (0..c.tape.len())
            .rev()
            .find(nonblank)
            .map(|i| c.offset + i as i64);
        let from = first.map_or(c.head, |f| f.min(c.head));
        let to = last.map_or(c.head, |l| l.max(c.head));
        let sep = if self.tape_alphabet.iter().all(|s| s.chars().count() == 1) {
            ""
        } else {
            " "
        };
        let cells: Vec<String> = (from..=to)
            .map(|cell| {
                let i = cell - c.offset;
                let s = if i < 0 || i >= c.tape.len() as i64 {
                    self.blank
                } else {
                    c.tape[i as usize]
                };
                let name = &self.tape_alphabet[s];
                if cell == c.head {
                    format!("[{name}]")
                } else {
                    name.clone()
                }
            })
            .collect();
        cells.join(sep)
    }

    /// A random busy-beaver-style machine, deterministic in `seed` (splitmix64): working states
    /// `A, B, ...` (`S0, S1, ...` beyond 25) plus the halt state `Z` last, symbols `"0".."n-1"`
    /// with blank `"0"`, all symbols in the input alphabet except the blank, two-way tape, every
    /// working transition defined with move L or R; a transition into `Z` is, half of the time,
    /// the text format's `---` (write what was read, no move). At least one transition into `Z`
    /// leaves a state reachable from `A` in the transition graph. Sizes below 1 are taken as 1.
    pub fn random(n_states: usize, n_symbols: usize, seed: u64) -> TuringMachine {
        let (n, k) = (n_states.max(1), n_symbols.max(1));
        let mut rng = SplitMix64(seed);
        let mut delta = vec![vec![None; k]; n + 1];
        for row in delta.iter_mut().take(n) {
            for (r, cell) in row.iter_mut().enumerate() {
                *cell = Some(Self::random_transition(&mut rng, r, n, k, false));
            }
        }
        let reach = Self::reachable(&delta, 0);
        let halts = reach
            .iter()
            .any(|&q| delta[q].iter().flatten().any(|t| t.next == n));
        if !halts {
            let q = reach[rng.below(reach.len())];
            let r = rng.below(k);
            delta[q][r] = Some(Self::random_transition(&mut rng, r, n, k, true));
        }
        let mut states: Vec<String> = (0..n).map(|i| bb_state_name(i, n)).collect();
        states.push("Z".to_string());
        let tape_alphabet: Vec<String> = (0..k).map(|s| s.to_string()).collect();
        TuringMachine {
            states,
            input_alphabet: tape_alphabet[1..].to_vec(),
            tape_alphabet,
            blank: 0,
            delta,
            start: 0,
            accept: vec![],
            reject: vec![],
            halt: vec![n],
            tape: TapeKind::TwoWay,
        }
    }

    /// One random transition reading symbol `r` (of `k`); `n` = index of the halt state,
    /// forced as the next state if `halt`.
    fn random_transition(
        rng: &mut SplitMix64,
        r: usize,
        n: usize,
        k: usize,
        halt: bool,
    ) -> Transition {
        let next = if halt { n } else { rng.below(n + 1) };
        if next == n && rng.below(2) == 0 {
            return Transition {
                next,
                write: r,
                mv: Move::N,
            };
        }
        let write = rng.below(k);
        let mv = if rng.below(2) == 0 { Move::L } else { Move::R };
        Transition { next, write, mv }
    }

    /// States reachable from `from` along defined transitions (`from` included), in BFS order.
    fn reachable(delta: &[Vec<Option<Transition>>], from: usize) -> Vec<usize> {
        let mut seen = vec![false; delta.len()];
        let mut order = vec![from];
        seen[from] = true;
        let mut i = 0;
        while i < order.len() {
            for t in delta[order[i]].iter().flatten() {
                if !seen[t.next] {
                    seen[t.next] = true;
                    order.push(t.next);
                }
            }
            i += 1;
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn rule(q: &str, r: &str, n: &str, w: &str, m: char) -> (String, String, String, String, char) {
        (q.into(), r.into(), n.into(), w.into(), m)
    }

    /// q0 reads `a`: write b, move L, go to q1; q1 has no transition on `b` or `_`.
    fn left_mover(kind: TapeKind) -> TuringMachine {
        let rules = vec![
            rule("q0", "a", "q1", "b", 'L'),
            rule("q1", "a", "acc", "a", 'R'),
        ];
        TuringMachine::new(
            s(&["q0", "q1", "acc"]),
            s(&["a", "b"]),
            s(&["a", "b", "_"]),
            "_".into(),
            rules,
            "q0".into(),
            s(&["acc"]),
            vec![],
            vec![],
            kind,
        )
        .unwrap()
    }

    #[test]
    fn one_way_left_move_at_cell_0_stays() {
        let m = left_mover(TapeKind::OneWay);
        let r = m.run(&[0, 0], 100);
        // a at cell 0 -> b, head stays on 0 and reads b: q1 has no transition on b -> reject.
        assert_eq!(
            (r.head, r.offset, r.tape.clone(), r.steps),
            (0, 0, vec![1, 0], 1)
        );
        assert_eq!(
            (r.status, r.accepted, r.halted),
            (Status::Rejected, Some(false), true)
        );
        let mut c = m.start_config(&[0, 0]);
        assert!(m.step(&mut c));
        assert_eq!((c.head, c.offset, &c.tape), (0, 0, &vec![1, 0]));
    }

    #[test]
    fn two_way_left_move_grows_the_tape() {
        let m = left_mover(TapeKind::TwoWay);
        let r = m.run(&[0, 0], 100);
        assert_eq!(
            (r.head, r.offset, r.tape.clone(), r.steps),
            (-1, -1, vec![2, 1, 0], 1)
        );
        assert_eq!(r.status, Status::Rejected);
        assert_eq!(m.tape_string(&r.to_config()), "[_]ba");
    }

    #[test]
    fn missing_transition_rejects_without_counting_a_step() {
        // write a,R three times on input aaa would need (q0,_) at cell 3: missing.
        let rules = vec![rule("q0", "a", "q0", "b", 'R')];
        let m = TuringMachine::new(
            s(&["q0"]),
            s(&["a"]),
            s(&["a", "b", "_"]),
            "_".into(),
            rules,
            "q0".into(),
            vec![],
            vec![],
            vec![],
            TapeKind::OneWay,
        )
        .unwrap();
        let r = m.run(&[0, 0, 0], 1000);
        assert_eq!(
            (r.steps, r.status, r.accepted, r.halted, r.head),
            (3, Status::Rejected, Some(false), true, 3)
        );
        assert_eq!(r.tape, vec![1, 1, 1, 2]);
        // The stuck check costs no step, so it is made even at the step limit...
        assert_eq!(m.run(&[0, 0, 0], 3).status, Status::Rejected);
        // ...but a machine still able to move at the limit is just not halted.
        let r2 = m.run(&[0, 0, 0], 2);
        assert_eq!(
            (r2.steps, r2.halted, r2.accepted, r2.status),
            (2, false, None, Status::Running)
        );
        let cs: Vec<TmConfig> = m.configs(&[0, 0, 0], 1000).collect();
        assert_eq!(cs.len(), 5);
        assert_eq!((cs[3].steps, cs[3].status), (3, Status::Running));
        assert_eq!((cs[4].steps, cs[4].status), (3, Status::Rejected));
        // stuck at once: zero steps.
        let r0 = m.run(&[], 10);
        assert_eq!(
            (r0.steps, r0.status, r0.tape.clone()),
            (0, Status::Rejected, vec![2])
        );
        let mut c = m.start_config(&[]);
        assert!(m.step(&mut c));
        assert_eq!((c.steps, c.status), (0, Status::Rejected));
        assert!(!m.step(&mut c), "a stopped configuration does not step");
    }

    #[test]
    fn validation_reports_every_problem_at_once() {
        // 1: blank in the input alphabet; 2: unknown next state "q9"; 3: transition out of accept.
        let rules = vec![
            rule("q0", "a", "q9", "a", 'R'),
            rule("acc", "a", "q0", "a", 'R'),
        ];
        let e = TuringMachine::new(
            s(&["q0", "acc"]),
            s(&["a", "_"]),
            s(&["a", "_"]),
            "_".into(),
            rules,
            "q0".into(),
            s(&["acc"]),
            vec![],
            vec![],
            TapeKind::TwoWay,
        )
        .unwrap_err();
        let SimError::InvalidMachine(p) = e else {
            panic!("wrong error {e:?}")
        };
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(
            p.iter()
                .any(|m| m.contains("blank") && m.contains("input alphabet")),
            "{p:#?}"
        );
        assert!(p.iter().any(|m| m.contains("q9")), "{p:#?}");
        assert!(
            p.iter()
                .any(|m| m.contains("leaves the stopping state \"acc\"")),
            "{p:#?}"
        );
    }

    #[test]
    fn validation_catches_each_kind() {
        let none = TuringMachine::new(
            vec![],
            vec![],
            s(&["_"]),
            "_".into(),
            vec![],
            "q".into(),
            vec![],
            vec![],
            vec![],
            TapeKind::TwoWay,
        );
        assert_eq!(
            none,
            Err(SimError::invalid_machine("the machine has no states"))
        );
        let rules = vec![
            rule("q", "a", "q", "a", 'X'),
            rule("q", "a", "q", "b", 'R'),
            rule("q", "a", "q", "a", 'L'),
        ];
        let e = TuringMachine::new(
            s(&["q", "q", "h"]),
            s(&["a", "c"]),
            s(&["a", "b"]),
            "_".into(),
            rules,
            "p".into(),
            s(&["h"]),
            s(&["h", "zz"]),
            vec![],
            TapeKind::TwoWay,
        )
        .unwrap_err();
        let SimError::InvalidMachine(p) = e else {
            panic!()
        };
        for needle in [
            "duplicate state \"q\"",
            "blank \"_\" is not in the tape alphabet",
            "input symbol \"c\"",
            "start state \"p\"",
            "reject state \"zz\"",
            "both accept and reject",
            "move must be",
            "both define (q, a)",
        ] {
            assert!(
                p.iter().any(|m| m.contains(needle)),
                "missing {needle:?} in {p:#?}"
            );
        }
    }

    #[test]
    fn encode_input_names_unknown_symbols() {
        let m = left_mover(TapeKind::OneWay);
        assert_eq!(m.encode_input(&["a", "b", "a"]).unwrap(), vec![0, 1, 0]);
        let SimError::InvalidInput(p) = m.encode_input(&["a", "_", "q"]).unwrap_err() else {
            panic!()
        };
        assert_eq!(p.len(), 2);
        assert!(
            p[0].contains("\"_\" at position 1") && p[1].contains("\"q\" at position 2"),
            "{p:?}"
        );
    }

    #[test]
    fn start_in_stopping_state_is_already_stopped() {
        let m = TuringMachine::new(
            s(&["acc"]),
            s(&["1"]),
            s(&["1", "_"]),
            "_".into(),
            vec![],
            "acc".into(),
            s(&["acc"]),
            vec![],
            vec![],
            TapeKind::OneWay,
        )
        .unwrap();
        let r = m.run(&[0], 10);
        assert_eq!(
            (r.steps, r.accepted, r.status),
            (0, Some(true), Status::Accepted)
        );
        assert_eq!(m.configs(&[0], 10).count(), 1);
    }

    #[test]
    fn configs_agree_with_run_and_step_by_one() {
        for seed in 0..300u64 {
            let m = TuringMachine::random(1 + (seed % 4) as usize, 2 + (seed % 3) as usize, seed);
            assert_eq!(m.validate(), Ok(()));
            let input: Vec<usize> = (0..(seed % 5) as usize)
                .map(|i| (i + seed as usize) % m.tape_alphabet.len())
                .collect();
            let max = seed % 7 * 40;
            let cs: Vec<TmConfig> = m.configs(&input, max).collect();
            for (i, c) in cs.iter().enumerate() {
                assert_eq!(c.steps, i as u64);
            }
            let r = m.run(&input, max);
            assert_eq!(
                TmRun::from_config(cs.last().unwrap().clone()),
                r,
                "seed {seed}"
            );
            assert_eq!(r.halted, r.status != Status::Running);
            assert!(r.steps <= max);
        }
    }

    #[test]
    fn random_machines_are_deterministic_and_can_halt() {
        assert_eq!(
            TuringMachine::random(4, 3, 7),
            TuringMachine::random(4, 3, 7)
        );
        assert_ne!(
            TuringMachine::random(4, 3, 7),
            TuringMachine::random(4, 3, 8)
        );
        for seed in 0..200 {
            let m = TuringMachine::random(5, 2, seed);
            let reach = TuringMachine::reachable(&m.delta, 0);
            assert!(reach.contains(&5), "halt state unreachable for seed {seed}");
            assert_eq!(m.states.last().unwrap(), "Z");
        }
    }

    #[test]
    fn tape_string_and_ones() {
        let m = left_mover(TapeKind::TwoWay);
        let c = TmConfig {
            state: 0,
            head: 5,
            tape: vec![2, 0, 2, 1, 2],
            offset: -2,
            steps: 0,
            status: Status::Running,
        };
        assert_eq!(m.tape_string(&c), "a_b___[_]");
        assert_eq!(m.ones(&c.tape), 2);
        assert_eq!(m.tape_contents(&c.tape), vec![0, 2, 1]);
        let blank = TmConfig {
            tape: vec![2, 2],
            head: 0,
            offset: 0,
            ..c
        };
        assert_eq!(m.tape_string(&blank), "[_]");
    }

    #[test]
    fn reaching_max_steps_is_not_an_error() {
        // A machine that runs right forever.
        let rules = vec![rule("q", "_", "q", "_", 'R')];
        let m = TuringMachine::new(
            s(&["q"]),
            vec![],
            s(&["_"]),
            "_".into(),
            rules,
            "q".into(),
            vec![],
            vec![],
            vec![],
            TapeKind::OneWay,
        )
        .unwrap();
        let r = m.run(&[], 1000);
        assert_eq!(
            (r.steps, r.halted, r.accepted, r.head, r.tape.len()),
            (1000, false, None, 1000, 1001)
        );
        assert_eq!(m.configs(&[], 1000).count(), 1001);
    }

    #[test]
    fn serde_round_trip_and_validate() {
        let m = TuringMachine::random(3, 3, 1);
        let json = serde_json::to_string(&m).unwrap();
        let back: TuringMachine = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        let mut bad = m.clone();
        bad.delta[3][0] = Some(Transition {
            next: 9,
            write: 0,
            mv: Move::L,
        });
        bad.start = 7;
        let SimError::InvalidMachine(p) = bad.validate().unwrap_err() else {
            panic!()
        };
        assert_eq!(p.len(), 3, "{p:#?}"); // start, out-of-range entry, transition out of Z
    }
}
