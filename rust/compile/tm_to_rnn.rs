//! Theorem 4.6 (Siegelmann & Sontag 1995; lecture notes, seed 001, §4.2.2): a Turing machine
//! as a simple RNN with rational weights and slu(z) = min(1, max(0, z)) activations, one tick
//! per TM step once the input is loaded.
//!
//!   h_t = slu(V h_{t−1} + W x_t + b),   y_t = Σ_κ verdict(κ)·Gh_κ(h_t)
//!
//! The input is the word one-hot (machine input-alphabet order) and then EOS (the last
//! column). Ticks 1..|w| load the word; tick |w|+j performs TM step j. The readout is 0 while
//! the machine runs, +1 once it accepts or halts, −1 once it rejects (or finds no transition).
//!
//! The TM step is a two-layer map config' = U·slu(A·config + B·x + c) cut as in Lemma 4.4: the
//! hidden vector is the first layer, and U is a set of *config forms* (gate one-hot Gh_κ,
//! stack values L and R, head counters P and N) folded into every pre-activation. Stacks:
//! base4 (Siegelmann–Sontag; seed 003: push (X + d)/b, top read by thresholds on b·X, pop
//! b·X − d) with digit 2i for the i-th symbol (blank first, digit 0) in base b = 2|Γ|;
//! cantor3 (eqs. 4.22–4.26): a component z_j per symbol, push z/3 + (2/3)e_j, top_j =
//! [z_j ≥ 2/3], pop 3z − 2·top. Thresholds sit in the middle of each gap with margin
//! (hi − lo)/4 (the textbook σ(4q − 2) has zero margin, which breaks in floats). The full
//! derivation, invariants and the tick accounting are in docs/tm_construction/CONSTRUCTION.md.

use crate::compile::linear_form::{LinearForm, Term};
use crate::compile::tm_layout::{Comp, Copies, Edge, Encoding, Key, Penalty, TmLayout, TmOptions};
use crate::error::{SimError, SimResult};
use crate::machine::tm::{Move, TapeKind, TuringMachine};
use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::{Linear, SimpleRnn};
use malachite::base::num::arithmetic::traits::Ceiling;
use malachite::{Integer, Rational};

/// The folded second layer: linear maps from h to the configuration.
#[derive(Debug, Clone)]
pub struct TmForms {
    /// Gh_κ per key (layout.keys order): exactly one is 1 once the machine has started
    pub gate_hot: Vec<LinearForm>,
    /// components of the left stack (layout.comps_l) and right stack (layout.comps_r)
    pub left: Vec<LinearForm>,
    pub right: Vec<LinearForm>,
    /// two-way head counter P = 2^−max(pos,0), N = 2^−max(−pos,0)
    pub p: Option<LinearForm>,
    pub n: Option<LinearForm>,
}

/// A Turing machine compiled into a simple slu RNN, with what is needed to decode it.
#[derive(Debug, Clone)]
pub struct CompiledTm {
    pub tm: TuringMachine,
    pub layout: TmLayout,
    pub forms: TmForms,
    pub network: SimpleRnn,
    /// bases of the left and right stacks (3 for cantor3)
    pub base_l: u32,
    pub base_r: u32,
}

fn q(n: i64, d: i64) -> Rational {
    Rational::from_signeds(n, d)
}

fn r(n: impl Into<Rational>) -> Rational {
    n.into()
}

/// Compiles `tm` (Theorem 4.6, one tick per step). Errors: `Unsupported` for an invalid
/// base or a machine whose input alphabet is empty of tape symbols (never for a validated
/// machine otherwise).
pub fn tm_to_rnn(tm: &TuringMachine, options: TmOptions) -> SimResult<CompiledTm> {
    tm.validate()?;
    let k = tm.tape_alphabet.len() as u32;
    let oneway = tm.tape == TapeKind::OneWay;
    let (base_l, base_r) = match options.encoding {
        Encoding::Cantor3 => (3, 3),
        Encoding::Base4 => match options.base {
            None => (if oneway { 2 * k + 2 } else { 2 * k }, 2 * k),
            Some(b) => {
                let need = if oneway { 2 * k + 2 } else { 2 * k };
                if b < need {
                    return Err(SimError::Unsupported(format!(
                        "base {b} is too small for {k} tape symbols on a {} tape: it must be at least {need}",
                        if oneway { "one-way" } else { "two-way" }
                    )));
                }
                (b, b)
            }
        },
    };
    let layout = TmLayout::new(tm, options);
    let c = Construction { tm, l: &layout, syntactic: options.penalty == Penalty::Syntactic, base_l, base_r };
    let (forms, pre) = c.build();
    let readout: LinearForm = layout
        .keys
        .iter()
        .enumerate()
        .filter(|(i, _)| layout.verdict[*i] != 0)
        .fold(LinearForm::zero(), |acc, (i, _)| acc.plus(layout.verdict[i], &forms.gate_hot[i]));
    let network = assemble(&layout, &pre, &readout)?;
    Ok(CompiledTm { tm: tm.clone(), layout, forms, network, base_l, base_r })
}

/// V, W, b from the pre-activation forms; h0 = 1 on `fresh` and `LOAD`.
fn assemble(l: &TmLayout, pre: &[LinearForm], readout: &LinearForm) -> SimResult<SimpleRnn> {
    let d = l.n_units();
    let (mut vt, mut wt, mut b) = (Vec::new(), Vec::new(), vec![r(0); d]);
    for (i, f) in pre.iter().enumerate() {
        for (t, c) in f.iter() {
            match t {
                Term::One => b[i] = c.clone(),
                Term::Unit(j) => vt.push((i, *j, c.clone())),
                Term::Input(k) => wt.push((i, *k, c.clone())),
            }
        }
    }
    let mut h0 = vec![r(0); d];
    for &u in &l.h0_ones {
        h0[u] = r(1);
    }
    let ro: Vec<(usize, usize, Rational)> =
        readout.iter().map(|(t, c)| match t {
            Term::Unit(j) => (0, *j, c.clone()),
            _ => unreachable!("the readout reads units only"),
        }).collect();
    SimpleRnn::new(
        RatMatrix::from_triples(d, d, vt),
        RatMatrix::from_triples(d, l.eos() + 1, wt),
        b,
        Some(h0),
        Activation::Slu,
        Some(Linear { w: RatMatrix::from_triples(1, d, ro), b: vec![r(0)] }),
    )
}

struct Construction<'a> {
    tm: &'a TuringMachine,
    l: &'a TmLayout,
    syntactic: bool,
    base_l: u32,
    base_r: u32,
}

impl Construction<'_> {
    fn unit(j: usize) -> LinearForm {
        LinearForm::unit(j)
    }

    /// payload − K + K·gate (K raised to the payload's syntactic bound under `Syntactic`)
    fn gated(&self, payload: &LinearForm, gate: &LinearForm, k: Rational) -> LinearForm {
        let mut k = k;
        if self.syntactic {
            let bound = payload.syntactic_bound();
            let ks = if bound > 0u32 { Rational::from((&bound).ceiling()) } else { r(0) };
            if ks > k {
                k = ks;
            }
        }
        payload.clone().plus(-k.clone(), &LinearForm::constant(1)).plus(k, gate)
    }

    /// 0/1 threshold unit on x: 0 if x ≤ lo or gate ≤ 0; 1 if x ≥ hi and gate = 1; the
    /// payload s(x − o), s = 2/(hi − lo), o = lo + (hi − lo)/4, is ≤ −1/2 resp. ≥ 3/2 there.
    fn step(&self, x: &LinearForm, lo: Rational, hi: Rational, xmax: Rational, gate: &LinearForm) -> LinearForm {
        let gap = &hi - &lo;
        let s = r(2) / &gap;
        let o = &lo + &gap / r(4);
        let payload = x.scaled(s.clone()).plus(-(&s * &o), &LinearForm::constant(1));
        let kk: Integer = (&s * (&xmax - &o)).ceiling();
        let k = if kk < 1 { r(1) } else { Rational::from(kk) };
        self.gated(&payload, gate, k)
    }

    fn build(&self) -> (TmForms, Vec<LinearForm>) {
        let l = self.l;
        let k = l.k();
        let cantor = l.options.encoding == Encoding::Cantor3;
        let eos = LinearForm::input(l.eos());
        // ---- gate one-hot Gh
        let mut gh = vec![LinearForm::zero(); l.keys.len()];
        let mut add_g = |key: Key, f: &LinearForm| {
            let i = l.key_index[&key];
            gh[i] = std::mem::take(&mut gh[i]).plus(1, f);
        };
        for g in &l.groups {
            let gsum = LinearForm::sum_units(g.actions.iter().map(|&a| l.actions[a].unit));
            let step_unit = |j: usize| g.steps.iter().find(|(s, _)| *s == j).map(|(_, u)| *u);
            // base4: S_0 := the group's gate, S_k := 0
            let sj = |j: usize| -> LinearForm {
                if j == 0 {
                    gsum.clone()
                } else {
                    step_unit(j).map(Self::unit).unwrap_or_default()
                }
            };
            let top_is: Vec<LinearForm> = (0..k)
                .map(|c| {
                    if !cantor {
                        sj(c).plus(-1, &sj(c + 1))
                    } else if c >= 1 {
                        Self::unit(step_unit(c).unwrap())
                    } else {
                        (1..k).fold(gsum.clone(), |acc, c2| acc.plus(-1, &Self::unit(step_unit(c2).unwrap())))
                    }
                })
                .collect();
            if l.oneway && g.mv == Move::L {
                for (c, (&dstep, top_c)) in g.dsteps.iter().zip(&top_is).enumerate().take(k) {
                    let dc = Self::unit(dstep);
                    let (at_end, inside) = if cantor {
                        (dc.clone(), top_c.clone().plus(-1, &dc))
                    } else {
                        (dc.clone().plus(-1, &sj(c + 1)), sj(c).plus(-1, &dc))
                    };
                    add_g(Key { state: g.next, sym: c, edge: Edge::AtEnd }, &at_end);
                    add_g(Key { state: g.next, sym: c, edge: Edge::Inside }, &inside);
                }
            } else {
                let e = if l.oneway { Edge::Inside } else { Edge::Any };
                for (c, f) in top_is.iter().enumerate() {
                    add_g(Key { state: g.next, sym: c, edge: e }, f);
                }
            }
        }
        for &a in &l.act_n {
            let act = &l.actions[a];
            add_g(act.target.expect("N-actions have a target"), &Self::unit(act.unit));
        }
        // ---- stacks
        let bl = r(self.base_l);
        let br = r(self.base_r);
        let lgroups: Vec<usize> = (0..l.groups.len()).filter(|&g| l.groups[g].mv == Move::L).collect();
        let rgroups: Vec<usize> = (0..l.groups.len()).filter(|&g| l.groups[g].mv == Move::R).collect();
        let mut load_l = vec![LinearForm::zero(); l.comps_l.len()];
        if l.oneway {
            if cantor {
                load_l[l.comps_l.len() - 1] = LinearForm::term(Term::Unit(l.load), q(2, 3));
            } else {
                load_l[0] = LinearForm::term(Term::Unit(l.load), r(2 * k as i64) / &bl);
            }
        }
        let mut load_r = vec![LinearForm::zero(); l.comps_r.len()];
        for (i, &sym) in l.inputs.iter().enumerate() {
            let ci = if cantor { sym } else { 0 };
            let extra = Self::unit(l.a[i]).plus(1, &if cantor { Self::unit(l.acc[i]) } else { LinearForm::zero() });
            load_r[ci] = std::mem::take(&mut load_r[ci]).plus(1, &extra);
        }
        if !cantor {
            load_r[0] = std::mem::take(&mut load_r[0]).plus(1, &Self::unit(l.acc[0]));
        }
        let left = self.stack_forms(&l.comps_l, &l.copies_l, &lgroups, &l.act_r, &bl, &load_l);
        let right = self.stack_forms(&l.comps_r, &l.copies_r, &rgroups, &l.act_l, &br, &load_r);
        // ---- head counter
        let (mut pf, mut nf) = (None, None);
        if let Some(c) = &l.counter {
            let half = q(1, 2);
            let mut p = Self::unit(l.load);
            let mut n = Self::unit(l.load);
            if let (Some(cpr), Some(enr)) = (c.cpr, c.enr) {
                let f = LinearForm::sum_units(l.act_r.iter().map(|&a| l.actions[a].unit)).plus(1, &Self::unit(cpr)).plus(-1, &Self::unit(enr));
                p = p.plus(half.clone(), &f);
                n = n.plus(1, &Self::unit(c.cnr.unwrap()));
            }
            if let (Some(cnl), Some(epl)) = (c.cnl, c.epl) {
                let f = LinearForm::sum_units(l.act_l.iter().map(|&a| l.actions[a].unit)).plus(1, &Self::unit(cnl)).plus(-1, &Self::unit(epl));
                n = n.plus(half.clone(), &f);
                p = p.plus(1, &Self::unit(c.cpl.unwrap()));
            }
            if let (Some(cpn), Some(cnn)) = (c.cpn, c.cnn) {
                p = p.plus(1, &Self::unit(cpn));
                n = n.plus(1, &Self::unit(cnn));
            }
            pf = Some(p);
            nf = Some(n);
        }
        // ---- start terms and gates
        let mut start = vec![LinearForm::zero(); l.keys.len()];
        let minus_one = LinearForm::constant(-1);
        for (i, &sym) in l.inputs.iter().enumerate() {
            let key = l.key_index[&Key { state: self.tm.start, sym, edge: l.e0 }];
            start[key] = Self::unit(l.f[i]).plus(1, &eos).plus(1, &minus_one);
        }
        let sum_f = LinearForm::sum_units(l.f.iter().copied());
        let blank_key = l.key_index[&Key { state: self.tm.start, sym: 0, edge: l.e0 }];
        start[blank_key] = Self::unit(l.load).plus(1, &eos).plus(1, &minus_one).plus(-1, &sum_f);
        let gate = |key: &Key| {
            let i = l.key_index[key];
            gh[i].clone().plus(1, &start[i])
        };
        let gate_of = |acts: &[usize]| {
            let mut f = LinearForm::zero();
            for &a in acts {
                for key in &l.actions[a].keys {
                    f = f.plus(1, &gate(key));
                }
            }
            f
        };
        let (mr, ml, mn) = (gate_of(&l.act_r), gate_of(&l.act_l), gate_of(&l.act_n));
        // ---- pre-activations
        let mut pre = vec![LinearForm::zero(); l.n_units()];
        for (a, act) in l.actions.iter().enumerate() {
            pre[act.unit] = gate_of(&[a]);
        }
        let kk = r(k as i64);
        for g in &l.groups {
            let gg = gate_of(&g.actions);
            let (x, b) = if g.mv == Move::L { (&left, &bl) } else { (&right, &br) };
            if cantor {
                for &(j, u) in &g.steps {
                    pre[u] = self.step(&x[j], q(1, 3), q(2, 3), r(1), &gg);
                }
                if l.oneway && g.mv == Move::L {
                    for (c, &u) in g.dsteps.iter().enumerate() {
                        let fc = x[k].scaled(9).plus(3, &x[c]);
                        pre[u] = self.step(&fc, q(11, 3), r(4), r(12), &gg);
                    }
                }
            } else if l.oneway && g.mv == Move::L {
                let b2 = b * b;
                let qf = x[0].scaled(b2.clone());
                for &(j, u) in &g.steps {
                    let j = r(j as i64);
                    pre[u] = self.step(&qf, (r(2) * &j - r(2)) * b + r(2) * &kk, r(2) * &j * b, b2.clone(), &gg);
                }
                for (c, &u) in g.dsteps.iter().enumerate() {
                    let c2b = r(2 * c as i64) * b;
                    let lo = &c2b + r(2) * &kk - r(2) + &kk / (&kk + r(1));
                    pre[u] = self.step(&qf, lo, &c2b + r(2) * &kk, b2.clone(), &gg);
                }
            } else {
                let qf = x[0].scaled(b.clone());
                let tau = (r(2) * &kk - r(2)) / (b - r(1));
                for &(j, u) in &g.steps {
                    let j = r(j as i64);
                    pre[u] = self.step(&qf, r(2) * &j - r(2) + &tau, r(2) * &j, r(2) * &kk - r(2) + &tau, &gg);
                }
            }
        }
        let copy_gates_l = [&mr, &ml, &mn];
        let copy_gates_r = [&ml, &mr, &mn];
        for (copies, forms, gates) in [(&l.copies_l, &left, copy_gates_l), (&l.copies_r, &right, copy_gates_r)] {
            for (cls, units) in copies.iter().enumerate() {
                for (ci, &u) in units.iter().flatten().enumerate() {
                    pre[u] = self.gated(&forms[ci], gates[cls], r(1));
                }
            }
        }
        if let (Some(c), Some(p), Some(n)) = (&l.counter, &pf, &nf) {
            if let (Some(cpr), Some(cnr), Some(enr)) = (c.cpr, c.cnr, c.enr) {
                pre[cpr] = self.gated(p, &mr, r(1));
                pre[cnr] = self.gated(&n.scaled(2), &mr, r(2));
                pre[enr] = self.step(n, q(1, 2), r(1), r(1), &mr);
            }
            if let (Some(cnl), Some(cpl), Some(epl)) = (c.cnl, c.cpl, c.epl) {
                pre[cnl] = self.gated(n, &ml, r(1));
                pre[cpl] = self.gated(&p.scaled(2), &ml, r(2));
                pre[epl] = self.step(p, q(1, 2), r(1), r(1), &ml);
            }
            if let (Some(cpn), Some(cnn)) = (c.cpn, c.cnn) {
                pre[cpn] = self.gated(p, &mn, r(1));
                pre[cnn] = self.gated(n, &mn, r(1));
            }
        }
        // ---- loading units
        pre[l.load] = Self::unit(l.load).plus(-1, &eos);
        for (i, &fu) in l.f.iter().enumerate() {
            pre[fu] = Self::unit(fu)
                .scaled(2)
                .plus(1, &LinearForm::input(i))
                .plus(-1, &sum_f)
                .plus(-2, &eos)
                .plus(-2, &LinearForm::constant(1))
                .plus(2, &Self::unit(l.load));
        }
        pre[l.pscale] = Self::unit(l.pscale).plus(1, &Self::unit(l.fresh)).scaled(r(1) / &br).plus(-1, &eos);
        for (i, &au) in l.a.iter().enumerate() {
            let dig = if cantor { 2 } else { 2 * l.inputs[i] as i64 };
            pre[au] = Self::unit(l.pscale).scaled(dig).plus(1, &LinearForm::input(i)).plus(-1, &LinearForm::constant(1));
        }
        if cantor {
            for (i, &acc) in l.acc.iter().enumerate() {
                pre[acc] = Self::unit(acc).plus(1, &Self::unit(l.a[i])).plus(-1, &eos);
            }
        } else {
            let acc = l.acc[0];
            pre[acc] = LinearForm::sum_units(l.a.iter().copied()).plus(1, &Self::unit(acc)).plus(-1, &eos);
        }
        (TmForms { gate_hot: gh, left, right, p: pf, n: nf }, pre)
    }

    /// The forms of one stack's components (CONSTRUCTION.md §5): push (X + d)/b from the
    /// push copy and the written digit, pop b·X − digit from the pop copy and the group's
    /// threshold units, keep, plus the loading terms.
    fn stack_forms(&self, comps: &[Comp], copies: &Copies, pop_groups: &[usize], push_acts: &[usize], b: &Rational, load: &[LinearForm]) -> Vec<LinearForm> {
        let l = self.l;
        comps
            .iter()
            .enumerate()
            .map(|(ci, comp)| {
                let mut f = load[ci].clone();
                if let Some(push) = &copies[0] {
                    f = f.plus(r(1) / b, &Self::unit(push[ci]));
                    for &a in push_acts {
                        let act = &l.actions[a];
                        match comp {
                            Comp::Whole if act.write > 0 => f = f.plus(r(2 * act.write as i64) / b, &Self::unit(act.unit)),
                            Comp::Sym(j) if *j == act.write => f = f.plus(q(2, 3), &Self::unit(act.unit)),
                            _ => {}
                        }
                    }
                }
                if let Some(pop) = &copies[1] {
                    f = f.plus(b.clone(), &Self::unit(pop[ci]));
                    for &g in pop_groups {
                        for &(j, u) in &l.groups[g].steps {
                            match comp {
                                Comp::Whole => f = f.plus(-2, &Self::unit(u)),
                                Comp::Sym(c) if *c == j => f = f.plus(-2, &Self::unit(u)),
                                _ => {}
                            }
                        }
                    }
                }
                if let Some(keep) = &copies[2] {
                    f = f.plus(1, &Self::unit(keep[ci]));
                }
                f
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "tm_to_rnn_tests.rs"]
mod tests;
