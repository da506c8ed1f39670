//! Counting languages → one LSTM layer (Weiss, Goldberg & Yahav 2018, seed 003: "LSTMs can
//! dedicate any single dimension to counting"). Every unit u keeps f = o = 1 and writes
//! through i and g:
//!
//!   c_t = f·c_{t−1} + i·g,   h_t = o·sign(c_t)        (PyTorch layout, blocks i, f, g, o)
//!
//! Saturated (`rho = None`): gate = sat_sigmoid ∈ {0, ½, 1}, candidate = output = sign, weights θ
//! below; every pre-activation is a nonzero integer on every input, so gates are exactly 0 or
//! 1 and the network runs exactly. Large finite weights (`rho = Some(ρ)`): the same θ times ρ
//! with the real gate = σ, candidate = tanh (output stays sign: its argument c is not a
//! weighted sum, so scaling weights does not sharpen it; the readout plays that role), so
//! f = σ(ρ) = 1 − ε and the counter leaks; `rs.saturate` of that network is the saturated one.
//!
//! Units (c_0 in brackets; h_0 = sign(c_0)):
//! - counter copies `P` [+½] and `M` [−½] (and `Q` [−3/2]): i-pre 2, g-pre = +1 on the
//!   counted-up symbol, −1 on the counted-down one, so c = K ± ½ with K the count and
//!   sign(K + ½) − sign(K − ½) = 2 iff K = 0, else 0; sign(K − ½) − sign(K − 3/2) = 2 iff K = 1;
//! - flags [−½]: i-pre = 4·(condition − 2·F̂ − ½-offsets), g-pre 1, so c jumps once to +½;
//!   F̂ = (h_F + 1)/2 ∈ {0, 1} is the flag's value read from h.
//!
//! Flag conditions (each i-pre below is then ×2 more, see `flag`) and readouts (accept iff y > ½):
//! - anbn (x = a, b): P, M count a − b; B̂ seen-b: i = 2(x_b − 2B̂ − ½); Ê a-after-b:
//!   i = 2(x_a + B̂ − 2Ê − 3/2); y = h_P − h_M − 2Ê.
//! - anbncn: P1, M1 count a − b, P2, M2 count b − c; B̂, Ĉ seen-b/c; Ê1 a after b or c:
//!   i = 2(2x_a + B̂ + Ĉ − 3Ê1 − 5/2); Ê2 b after c: i = 2(x_b + Ĉ − 2Ê2 − 3/2);
//!   y = (h_P1 − h_M1 + h_P2 − h_M2)/2 − 1 − 2(Ê1 + Ê2).
//! - dyck1: P, M count ( − ); Ê ")" read at K ≤ 0 (h_M = −1): i = 2(x_) − h_M − 2Ê − 3/2);
//!   y = h_P − h_M − 2Ê.
//! - anbn_sigma: M, Q count a − b; B̂, Ê as anbn; D̂ accepted (b read at K = 1, no error):
//!   i = 2(x_b + (h_M − h_Q)/2 − 2Ê − 2D̂ − 3/2); y = D̂.

use crate::error::SimResult;
use crate::machine::counter_lang::Language;
use crate::net::activation::Activation;
use crate::net::cell::Cell;
use crate::net::gated::GatedWeights;
use crate::net::lstm::Lstm;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::Linear;
use crate::net::stacked::Stack;
use malachite::Rational;

use super::counter_net::{q, CounterParts, View};

/// What a pre-activation term reads.
#[derive(Clone, Copy)]
enum T {
    X(usize),
    /// h_u
    H(usize),
    /// the flag value (h_u + 1)/2
    F(usize),
}

struct Lin(Vec<(T, Rational)>, Rational);

struct Unit {
    name: &'static str,
    c0: Rational,
    is_flag: bool,
    i: Lin,
    g: Lin,
}

fn lin(terms: &[(T, (i64, i64))], bias: (i64, i64)) -> Lin {
    Lin(terms.iter().map(|&(t, (a, b))| (t, q(a, b))).collect(), q(bias.0, bias.1))
}

fn counter(name: &'static str, c0: (i64, i64), up: usize, down: usize) -> Unit {
    Unit { name, c0: q(c0.0, c0.1), is_flag: false, i: lin(&[], (2, 1)), g: lin(&[(T::X(up), (1, 1)), (T::X(down), (-1, 1))], (0, 1)) }
}

/// A flag set once when `cond` (in flag values, offsets included) becomes positive; the
/// −2·own term stops it after it is set; the whole pre-activation is ×4 (margin ≥ 2, as the
/// forget gate's pre-activation 2, so with weights ×ρ no gate is further from 0/1 than f is from 1).
fn flag(name: &'static str, me: usize, cond: &[(T, (i64, i64))], bias: (i64, i64)) -> Unit {
    let mut terms: Vec<(T, Rational)> = cond.iter().map(|&(t, (a, b))| (t, q(4 * a, b))).collect();
    terms.push((T::F(me), q(-8, 1)));
    Unit { name, c0: q(-1, 2), is_flag: true, i: Lin(terms, q(4 * bias.0, bias.1)), g: lin(&[], (1, 1)) }
}

/// The units and the readout terms of each language (see the module doc).
fn design(lang: Language) -> (Vec<Unit>, Lin) {
    use T::*;
    match lang {
        Language::Anbn | Language::Dyck1 => {
            let (p, m, e) = (0, 1, 2);
            let mut units = vec![counter("P", (1, 2), 0, 1), counter("M", (-1, 2), 0, 1)];
            if lang == Language::Anbn {
                let b = 3;
                units.push(flag("error", e, &[(X(0), (1, 1)), (F(b), (1, 1))], (-3, 2)));
                units.push(flag("seen_b", b, &[(X(1), (1, 1))], (-1, 2)));
            } else {
                units.push(flag("error", e, &[(X(1), (1, 1)), (H(m), (-1, 1))], (-3, 2)));
            }
            (units, lin(&[(H(p), (1, 1)), (H(m), (-1, 1)), (F(e), (-2, 1))], (0, 1)))
        }
        Language::Anbncn => {
            let (b, c, e1, e2) = (4, 5, 6, 7);
            let units = vec![
                counter("P1", (1, 2), 0, 1),
                counter("M1", (-1, 2), 0, 1),
                counter("P2", (1, 2), 1, 2),
                counter("M2", (-1, 2), 1, 2),
                flag("seen_b", b, &[(X(1), (1, 1))], (-1, 2)),
                flag("seen_c", c, &[(X(2), (1, 1))], (-1, 2)),
                flag("error_a", e1, &[(X(0), (2, 1)), (F(b), (1, 1)), (F(c), (1, 1)), (F(e1), (-1, 1))], (-5, 2)),
                flag("error_b", e2, &[(X(1), (1, 1)), (F(c), (1, 1))], (-3, 2)),
            ];
            let y = lin(
                &[(H(0), (1, 2)), (H(1), (-1, 2)), (H(2), (1, 2)), (H(3), (-1, 2)), (F(e1), (-2, 1)), (F(e2), (-2, 1))],
                (-1, 1),
            );
            (units, y)
        }
        Language::AnbnSigma => {
            let (m, qq, b, e, d) = (0, 1, 2, 3, 4);
            let units = vec![
                counter("M", (-1, 2), 0, 1),
                counter("Q", (-3, 2), 0, 1),
                flag("seen_b", b, &[(X(1), (1, 1))], (-1, 2)),
                flag("error", e, &[(X(0), (1, 1)), (F(b), (1, 1))], (-3, 2)),
                flag("accepted", d, &[(X(1), (1, 1)), (H(m), (1, 2)), (H(qq), (-1, 2)), (F(e), (-2, 1))], (-3, 2)),
            ];
            (units, lin(&[(F(d), (1, 1))], (0, 1)))
        }
    }
}

/// (x coefficients, h coefficients, bias) of a pre-activation.
fn expand(l: &Lin, n: usize, h: usize) -> (Vec<Rational>, Vec<Rational>, Rational) {
    let (mut x, mut hh, mut b) = (vec![q(0, 1); n], vec![q(0, 1); h], l.1.clone());
    for (t, a) in &l.0 {
        match *t {
            T::X(k) => x[k] += a,
            T::H(u) => hh[u] += a,
            T::F(u) => {
                hh[u] += a / q(2, 1);
                b += a / q(2, 1);
            }
        }
    }
    (x, hh, b)
}

/// The LSTM counter for `lang`; `rho`: None = saturated, Some(ρ) = weights ×ρ with σ/tanh.
pub fn build(lang: Language, rho: Option<&Rational>) -> SimResult<CounterParts> {
    let (units, y) = design(lang);
    let (n, h) = (lang.alphabet().len(), units.len());
    let scale = rho.cloned().unwrap_or_else(|| q(1, 1));
    let (mut wih, mut whh, mut bias) = (vec![vec![q(0, 1); n]; 4 * h], vec![vec![q(0, 1); h]; 4 * h], vec![q(0, 1); 4 * h]);
    let one = lin(&[], (2, 1));
    for (u, unit) in units.iter().enumerate() {
        for (block, l) in [(0, &unit.i), (1, &one), (2, &unit.g), (3, &one)] {
            let (x, hh, b) = expand(l, n, h);
            let r = block * h + u;
            wih[r] = x.into_iter().map(|v| v * &scale).collect();
            whh[r] = hh.into_iter().map(|v| v * &scale).collect();
            bias[r] = b * &scale;
        }
    }
    let w = GatedWeights {
        gates: 4,
        hidden: h,
        input: n,
        w_ih: RatMatrix::from_rows(wih),
        w_hh: RatMatrix::from_rows(whh),
        b_ih: bias,
        b_hh: vec![q(0, 1); 4 * h],
    };
    let (gate, candidate) = if rho.is_some() { (Activation::Sigmoid, Activation::Tanh) } else { (Activation::SatSigmoid, Activation::Sign) };
    let lstm = Lstm { w, gate, candidate, output: Activation::Sign };
    let stack = Stack::new("lstm", vec![Cell::Lstm(lstm)])?;
    let (_, yw, yb) = expand(&y, n, h);
    let readout = Linear { w: RatMatrix::from_rows(vec![yw]), b: vec![yb] };
    let c0: Vec<Rational> = units.iter().map(|u| u.c0.clone()).collect();
    let h0: Vec<Rational> = c0.iter().map(|c| q(if *c > 0u32 { 1 } else { -1 }, 1)).collect();
    // views read the cell state c (offset h); counters K = c_M + ½ (or c_M1 + ½ ...), flags c + ½
    let mut views = Vec::new();
    let cidx = |name: &str| h + units.iter().position(|u| u.name == name).expect("unit exists");
    match lang {
        Language::Anbncn => {
            views.push(View::new("a-b", vec![(cidx("M1"), q(1, 1))], q(1, 2)));
            views.push(View::new("b-c", vec![(cidx("M2"), q(1, 1))], q(1, 2)));
        }
        _ => views.push(View::new(if lang == Language::Dyck1 { "depth" } else { "a-b" }, vec![(cidx("M"), q(1, 1))], q(1, 2))),
    }
    for unit in &units {
        if unit.is_flag {
            views.push(View::new(unit.name, vec![(cidx(unit.name), q(1, 1))], q(1, 2)));
        }
    }
    Ok(CounterParts { stack, readout, h0: vec![h0], c0: vec![Some(c0)], views })
}
