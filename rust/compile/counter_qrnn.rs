//! aⁿbⁿ and aⁿbⁿcⁿ on a QRNN (seed 003, "An uncommon RNN architecture": "could count — like
//! an LSTM! But counter updates won't be state-dependent. For languages like aⁿbⁿ [it] can do
//! all the needed counting without 'self awareness': the RNN classifier function g can finish
//! the job").
//!
//! Layer 0: a saturated QRNN, window 2, ifo pooling (z = sign, gates = sat_sigmoid), f = o = 1:
//!   counter units   z = sign(x_up − x_down), i = 1:        c = #up − #down, h = c
//!   bigram units    z = 1, i = sat_sigmoid(2(x_σ,t + x_τ,t−1) − 3): c = number of "τσ" bigrams
//! anbn: K = #a − #b, E = #"ba"; anbncn: K1 = #a − #b, K2 = #b − #c, E1 = #"ba" + #"ca", E2 = #"cb"
//! (a word is in a*b*c* iff it has none of the bigrams ba, ca, cb).
//! Layer 1: the classifier g, a memoryless ReLU layer (V = 0): relu(K), relu(−K) per counter
//! and relu(E) per error count. Readout y = 1 − Σ layer-1 units; accept iff y > ½ (every
//! count 0 and no bad bigram).
//!
//! dyck1 and anbn_sigma need count-dependent updates (latch when the depth goes below 0;
//! stop counting after aⁿbⁿ): `UnsupportedError`.

use crate::error::{SimError, SimResult};
use crate::machine::counter_lang::Language;
use crate::net::activation::Activation;
use crate::net::cell::Cell;
use crate::net::matrix::RatMatrix;
use crate::net::qrnn::{Pooling, Qrnn};
use crate::net::simple_rnn::{Linear, SimpleRnn};
use crate::net::stacked::Stack;

use super::counter_net::{q, CounterParts, View};

enum U {
    /// counts +1 on symbol .0, −1 on symbol .1
    Count(&'static str, usize, usize),
    /// counts the bigrams (previous, current) listed
    Bigrams(&'static str, &'static [(usize, usize)]),
}

pub fn build(lang: Language) -> SimResult<CounterParts> {
    let units: Vec<U> = match lang {
        Language::Anbn => vec![U::Count("a-b", 0, 1), U::Bigrams("bad_bigrams", &[(1, 0)])],
        Language::Anbncn => vec![
            U::Count("a-b", 0, 1),
            U::Count("b-c", 1, 2),
            U::Bigrams("bad_bigrams_a", &[(1, 0), (2, 0)]),
            U::Bigrams("bad_bigrams_b", &[(2, 1)]),
        ],
        Language::Dyck1 | Language::AnbnSigma => {
            return Err(SimError::Unsupported(format!(
                "a QRNN cannot recognise {}: its gates depend on the last k inputs only, never on the state, so it cannot make \
                 a count-dependent update ({}); seed 003, 'Some counter languages require state/counter-dependent updates!'. \
                 Use cell=\"lstm\" or \"relu\"",
                lang.name(),
                if lang == Language::Dyck1 { "latch an error when the depth goes below 0" } else { "stop counting once aⁿbⁿ has been read" }
            )))
        }
    };
    let (n, h) = (lang.alphabet().len(), units.len());
    // blocks z, f, o, i; columns [x_t (n) | x_{t−1} (n)]
    let mut w = RatMatrix::zeros(4 * h, 2 * n);
    let mut b = vec![q(0, 1); 4 * h];
    for (u, unit) in units.iter().enumerate() {
        b[h + u] = q(1, 1); // f = 1
        b[2 * h + u] = q(1, 1); // o = 1
        match unit {
            U::Count(_, up, down) => {
                w.set(u, *up, q(1, 1));
                w.set(u, *down, q(-1, 1));
                b[3 * h + u] = q(1, 1);
            }
            U::Bigrams(_, pairs) => {
                b[u] = q(1, 1);
                b[3 * h + u] = q(-3, 1);
                for &(prev, cur) in pairs.iter() {
                    w.set(3 * h + u, cur, q(2, 1));
                    w.set(3 * h + u, n + prev, q(2, 1));
                }
            }
        }
    }
    let qrnn = Qrnn {
        window: 2,
        pooling: Pooling::Ifo,
        hidden: h,
        input: n,
        weight: w,
        bias: b,
        gate: Activation::SatSigmoid,
        candidate: Activation::Sign,
    };
    // classifier layer: relu(±K) per counter, relu(E) per bigram count
    let mut rows = Vec::new();
    for (u, unit) in units.iter().enumerate() {
        let mut row = vec![q(0, 1); h];
        row[u] = q(1, 1);
        rows.push(row.clone());
        if let U::Count(..) = unit {
            row[u] = q(-1, 1);
            rows.push(row);
        }
    }
    let d = rows.len();
    let g = SimpleRnn {
        v: RatMatrix::zeros(d, d),
        w: RatMatrix::from_rows(rows),
        b: vec![q(0, 1); d],
        h0: vec![q(0, 1); d],
        activation: Activation::Relu,
        readout: None,
    };
    let readout = Linear { w: RatMatrix::from_rows(vec![vec![q(-1, 1); d]]), b: vec![q(1, 1)] };
    let views = units
        .iter()
        .enumerate()
        .map(|(u, unit)| {
            let name = match unit {
                U::Count(name, ..) | U::Bigrams(name, _) => *name,
            };
            View::new(name, vec![(h + u, q(1, 1))], q(0, 1))
        })
        .collect();
    let stack = Stack::new("stacked", vec![Cell::Qrnn(qrnn), Cell::Simple(g)])?;
    Ok(CounterParts { stack, readout, h0: vec![vec![q(0, 1); h], vec![q(0, 1); d]], c0: vec![Some(vec![q(0, 1); h]), None], views })
}
