//! The hidden units of a compiled Turing machine and what each one means (the first half of
//! `tm_to_rnn`; the construction is described in docs/tm_construction/CONSTRUCTION.md §2–4).
//!
//! * **Keys** κ = (q, s, e): state, scanned symbol, and on a one-way tape whether the head is
//!   on cell 0. The next tick's gate one-hot is indexed by keys.
//! * **Actions**: one 0/1 gate unit per way of taking a step: an R-action per (q, s) moving
//!   right, an L-action per left move away from the end, N-actions for stays, bounces at the
//!   left end, and terminal keys (which freeze the network).
//! * **Groups** (q', direction) of R/L actions with the same next state: each has its own
//!   threshold units reading the top of the stack it pops, so that
//!   [next state = q' ∧ next symbol = c] is linear in the hidden state.
//! * Stack copy units (one per stack, component and class push/pop/keep), the two-way head
//!   counter P = 2^−max(pos,0), N = 2^−max(−pos,0), and the units that load the input word.

use crate::machine::tm::{Move, Status, TapeKind, TuringMachine};
use std::collections::HashMap;

/// How a stack of tape symbols becomes numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Siegelmann–Sontag: one rational per stack, digit 2i for symbol i in base b = 2|Γ|
    /// (b = 4 for binary machines; the left stack of a one-way tape uses 2|Γ|+2 for `$`).
    Base4,
    /// Lecture notes eq. 4.22–4.26: one base-3 Cantor component per tape symbol and stack.
    Cantor3,
}

/// Size of the penalty constant K in gated units pre = payload − K + K·gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Penalty {
    /// The smallest provable K (float friendly; the default).
    Tight,
    /// K ≥ the payload's syntactic bound, so an "off" unit is provably ≤ 0 from its 0/1 inputs.
    Syntactic,
}

/// Compilation options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmOptions {
    pub encoding: Encoding,
    /// base4 only: the base of both stacks instead of 2|Γ| (≥ 2|Γ|, ≥ 2|Γ|+2 one-way).
    pub base: Option<u32>,
    /// Two-way tapes: keep the head counter (P, N units) so the head position decodes.
    pub counter: bool,
    pub penalty: Penalty,
}

impl Default for TmOptions {
    fn default() -> Self {
        TmOptions { encoding: Encoding::Base4, base: None, counter: true, penalty: Penalty::Tight }
    }
}

/// One-way tapes: is the head on cell 0? Two-way tapes do not ask (`Any`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Edge {
    Any,
    Inside,
    AtEnd,
}

/// (state, scanned symbol as a position in the blank-first alphabet, edge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub state: usize,
    pub sym: usize,
    pub edge: Edge,
}

#[derive(Clone, Debug)]
pub struct Action {
    pub mv: Move,
    pub keys: Vec<Key>,
    pub next: usize,
    /// symbol written (position in the blank-first alphabet)
    pub write: usize,
    /// N-actions: the key of the configuration after the step
    pub target: Option<Key>,
    pub unit: usize,
}

/// R/L actions with the same next state and direction, and their threshold units.
#[derive(Clone, Debug)]
pub struct Group {
    pub next: usize,
    pub mv: Move,
    pub actions: Vec<usize>,
    /// base4: S_j = [top ≥ j] for j = 1..k−1; cantor3: T_j = [top = j] for j = 0..k−1
    pub steps: Vec<(usize, usize)>,
    /// one-way L groups: D_c = [top > c, or top = c with `$` below], c = 0..k−1
    pub dsteps: Vec<usize>,
}

/// A component of a stack's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comp {
    /// base4: the single rational
    Whole,
    /// cantor3: the component of the symbol at this position
    Sym(usize),
    /// cantor3 one-way L: the bottom marker's component
    Dollar,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    Gate,
    Step,
    Copy,
    Double,
    Load,
    LoadBig,
}

/// Copy units of one stack: `[push, pop, keep]`, each one unit per component (or absent).
pub type Copies = [Option<Vec<usize>>; 3];

#[derive(Clone, Debug, Default)]
pub struct CounterUnits {
    pub cpr: Option<usize>,
    pub cnr: Option<usize>,
    pub enr: Option<usize>,
    pub cnl: Option<usize>,
    pub cpl: Option<usize>,
    pub epl: Option<usize>,
    pub cpn: Option<usize>,
    pub cnn: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct TmLayout {
    pub options: TmOptions,
    /// position → tape-symbol index; position 0 is the blank
    pub syms: Vec<usize>,
    /// tape-symbol index → position
    pub pos_of: Vec<usize>,
    pub oneway: bool,
    pub edges: Vec<Edge>,
    pub e0: Edge,
    pub keys: Vec<Key>,
    pub key_index: HashMap<Key, usize>,
    /// +1 accept/halt, −1 reject or stuck, 0 running (per key)
    pub verdict: Vec<i32>,
    pub actions: Vec<Action>,
    pub act_r: Vec<usize>,
    pub act_l: Vec<usize>,
    pub act_n: Vec<usize>,
    pub groups: Vec<Group>,
    pub comps_l: Vec<Comp>,
    pub comps_r: Vec<Comp>,
    pub copies_l: Copies,
    pub copies_r: Copies,
    pub counter: Option<CounterUnits>,
    pub fresh: usize,
    pub load: usize,
    /// per input column (machine input-alphabet order): f_σ, a_σ
    pub f: Vec<usize>,
    pub pscale: usize,
    pub a: Vec<usize>,
    /// base4: one accumulator; cantor3: one per input symbol
    pub acc: Vec<usize>,
    /// tape-symbol position of each input column (EOS is the column after the last)
    pub inputs: Vec<usize>,
    pub unit_names: Vec<String>,
    pub unit_kinds: Vec<UnitKind>,
    /// units that start at 1
    pub h0_ones: Vec<usize>,
}

impl TmLayout {
    pub fn k(&self) -> usize {
        self.syms.len()
    }

    pub fn eos(&self) -> usize {
        self.inputs.len()
    }

    pub fn n_units(&self) -> usize {
        self.unit_names.len()
    }

    /// Display name of a tape-symbol position.
    pub fn sym_name<'a>(&self, tm: &'a TuringMachine, pos: usize) -> &'a str {
        &tm.tape_alphabet[self.syms[pos]]
    }

    pub fn key_name(&self, tm: &TuringMachine, key: &Key) -> String {
        let e = match key.edge {
            Edge::Any => "",
            Edge::Inside => ",e0",
            Edge::AtEnd => ",e1",
        };
        format!("{},{}{e}", tm.states[key.state], self.sym_name(tm, key.sym))
    }

    pub fn new(tm: &TuringMachine, options: TmOptions) -> TmLayout {
        let mut syms = vec![tm.blank];
        syms.extend((0..tm.tape_alphabet.len()).filter(|&s| s != tm.blank));
        let mut pos_of = vec![0; syms.len()];
        for (p, &s) in syms.iter().enumerate() {
            pos_of[s] = p;
        }
        let oneway = tm.tape == TapeKind::OneWay;
        let edges = if oneway { vec![Edge::Inside, Edge::AtEnd] } else { vec![Edge::Any] };
        let e0 = if oneway { Edge::AtEnd } else { Edge::Any };
        let mut b = Builder { names: Vec::new(), kinds: Vec::new() };

        let mut keys = Vec::new();
        let mut verdict = Vec::new();
        let mut actions: Vec<Action> = Vec::new();
        let key_name = |q: usize, s: usize, e: Edge| {
            let e = match e {
                Edge::Any => "",
                Edge::Inside => ",e0",
                Edge::AtEnd => ",e1",
            };
            format!("{},{}{e}", tm.states[q], tm.tape_alphabet[syms[s]])
        };
        for q in 0..tm.states.len() {
            let status = tm.status_of(q);
            for (s, &sym) in syms.iter().enumerate() {
                let t = tm.delta[q][sym];
                let v = match (status, t) {
                    (Status::Accepted | Status::Halted, _) => 1,
                    (Status::Rejected, _) | (Status::Running, None) => -1,
                    (Status::Running, Some(_)) => 0,
                };
                for &e in &edges {
                    keys.push(Key { state: q, sym: s, edge: e });
                    verdict.push(v);
                }
                let mut act = |mv: Move, ks: Vec<Key>, next: usize, write: usize, target: Option<Key>| {
                    let label: Vec<String> = ks.iter().map(|k| key_name(k.state, k.sym, k.edge)).collect();
                    let tag = match mv {
                        Move::R => "R",
                        Move::L => "L",
                        Move::N => "N",
                    };
                    let unit = b.unit(format!("g[{tag}:{}]", label.join("|")), UnitKind::Gate);
                    actions.push(Action { mv, keys: ks, next, write, target, unit });
                };
                match t.filter(|_| status == Status::Running) {
                    None => {
                        for &e in &edges {
                            let key = Key { state: q, sym: s, edge: e };
                            act(Move::N, vec![key], q, s, Some(key));
                        }
                    }
                    Some(tr) => {
                        let (next, write) = (tr.next, pos_of[tr.write]);
                        match tr.mv {
                            Move::R => act(Move::R, edges.iter().map(|&e| Key { state: q, sym: s, edge: e }).collect(), next, write, None),
                            Move::N => {
                                for &e in &edges {
                                    act(Move::N, vec![Key { state: q, sym: s, edge: e }], next, write, Some(Key { state: next, sym: write, edge: e }));
                                }
                            }
                            Move::L => {
                                for &e in &edges {
                                    let key = Key { state: q, sym: s, edge: e };
                                    if e == Edge::AtEnd {
                                        act(Move::N, vec![key], next, write, Some(Key { state: next, sym: write, edge: Edge::AtEnd }));
                                    } else {
                                        act(Move::L, vec![key], next, write, None);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        let by = |m: Move| (0..actions.len()).filter(|&a| actions[a].mv == m).collect::<Vec<_>>();
        let (act_r, act_l, act_n) = (by(Move::R), by(Move::L), by(Move::N));
        let mut groups: Vec<Group> = Vec::new();
        for &a in act_r.iter().chain(&act_l) {
            let (next, mv) = (actions[a].next, actions[a].mv);
            match groups.iter_mut().find(|g| g.next == next && g.mv == mv) {
                Some(g) => g.actions.push(a),
                None => groups.push(Group { next, mv, actions: vec![a], steps: Vec::new(), dsteps: Vec::new() }),
            }
        }
        let k = syms.len();
        let cantor = options.encoding == Encoding::Cantor3;
        for g in &mut groups {
            let gname = format!("{},{}", tm.states[g.next], if g.mv == Move::R { "R" } else { "L" });
            let range = if cantor { 0..k } else { 1..k };
            for j in range {
                let sname = &tm.tape_alphabet[syms[j]];
                let name = if cantor { format!("T[{gname}][{sname}]") } else { format!("S[{gname}][>={sname}]") };
                g.steps.push((j, b.unit(name, UnitKind::Step)));
            }
            if oneway && g.mv == Move::L {
                for &sym in &syms[..k] {
                    g.dsteps.push(b.unit(format!("D[{gname}][{}$]", tm.tape_alphabet[sym]), UnitKind::Step));
                }
            }
        }
        let comps = |left: bool| -> Vec<Comp> {
            if !cantor {
                vec![Comp::Whole]
            } else {
                let mut c: Vec<Comp> = (0..k).map(Comp::Sym).collect();
                if left && oneway {
                    c.push(Comp::Dollar);
                }
                c
            }
        };
        let (comps_l, comps_r) = (comps(true), comps(false));
        let comp_name = |stack: &str, c: &Comp| match c {
            Comp::Whole => stack.to_string(),
            Comp::Sym(j) => format!("{stack}{j}"),
            Comp::Dollar => format!("{stack}$"),
        };
        let mut copies = |stack: &str, comps: &[Comp], classes: [bool; 3]| -> Copies {
            let mut out: Copies = [None, None, None];
            for (ci, cls) in ["push", "pop", "keep"].iter().enumerate() {
                if classes[ci] {
                    out[ci] = Some(comps.iter().map(|c| b.unit(format!("c{}.{cls}", comp_name(stack, c)), UnitKind::Copy)).collect());
                }
            }
            out
        };
        let (hr, hl, hn) = (!act_r.is_empty(), !act_l.is_empty(), !act_n.is_empty());
        let copies_l = copies("L", &comps_l, [hr, hl, hn]);
        let copies_r = copies("R", &comps_r, [hl, hr, hn]);
        let counter = (!oneway && options.counter).then(|| {
            let mut c = CounterUnits::default();
            if hr {
                c.cpr = Some(b.unit("cP.R".into(), UnitKind::Copy));
                c.cnr = Some(b.unit("cN.R".into(), UnitKind::Double));
                c.enr = Some(b.unit("eN.R".into(), UnitKind::Step));
            }
            if hl {
                c.cnl = Some(b.unit("cN.L".into(), UnitKind::Copy));
                c.cpl = Some(b.unit("cP.L".into(), UnitKind::Double));
                c.epl = Some(b.unit("eP.L".into(), UnitKind::Step));
            }
            if hn {
                c.cpn = Some(b.unit("cP.N".into(), UnitKind::Copy));
                c.cnn = Some(b.unit("cN.N".into(), UnitKind::Copy));
            }
            c
        });
        let inputs: Vec<usize> = tm
            .input_alphabet
            .iter()
            .map(|s| pos_of[tm.tape_alphabet.iter().position(|t| t == s).expect("validated machine")])
            .collect();
        let fresh = b.unit("fresh".into(), UnitKind::Load);
        let load = b.unit("LOAD".into(), UnitKind::Load);
        let f = tm.input_alphabet.iter().map(|s| b.unit(format!("f[{s}]"), UnitKind::Load)).collect();
        let pscale = b.unit("Pscale".into(), UnitKind::LoadBig);
        let a = tm.input_alphabet.iter().map(|s| b.unit(format!("a[{s}]"), UnitKind::LoadBig)).collect();
        let acc = if cantor {
            tm.input_alphabet.iter().map(|s| b.unit(format!("acc[{s}]"), UnitKind::LoadBig)).collect()
        } else {
            vec![b.unit("acc".into(), UnitKind::LoadBig)]
        };
        let key_index = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        TmLayout {
            options,
            syms,
            pos_of,
            oneway,
            edges,
            e0,
            keys,
            key_index,
            verdict,
            actions,
            act_r,
            act_l,
            act_n,
            groups,
            comps_l,
            comps_r,
            copies_l,
            copies_r,
            counter,
            fresh,
            load,
            f,
            pscale,
            a,
            acc,
            inputs,
            unit_names: b.names,
            unit_kinds: b.kinds,
            h0_ones: vec![fresh, load],
        }
    }
}

struct Builder {
    names: Vec<String>,
    kinds: Vec<UnitKind>,
}

impl Builder {
    fn unit(&mut self, name: String, kind: UnitKind) -> usize {
        self.names.push(name);
        self.kinds.push(kind);
        self.names.len() - 1
    }
}
