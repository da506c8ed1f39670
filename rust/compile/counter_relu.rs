//! Counting languages → one simple ReLU RNN (h_t = relu(V h_{t−1} + W x_t + b), y = w h + c;
//! an Elman SRN with ReLU, Weiss et al. 2018, seed 003: "the SRN can count with ReLU"). All
//! weights are small integers, every state value an integer, so the network runs exactly,
//! and in a float format exactly while its counts fit the significand.
//!
//! Building blocks (x_σ one-hot inputs):
//! - **control** (Minsky's one-hot DFA units, Theorem 4.3 of seed 001, with a start unit S
//!   = 1 only in h_0): unit U' = relu(x_σ + Σ units that lead to U on σ − 1); the dead state
//!   has no unit (all control units 0).
//! - **signed counter** K = K⁺ − K⁻: K⁺' = relu(K⁺ − K⁻ + up − down), K⁻' = relu(K⁻ − K⁺ + down − up);
//!   K = 0 iff K⁺ + K⁻ = 0, a linear test.
//! - **latch** L = L¹ − L² = min(1, L + p) for p ≥ 0: L¹' = relu(L¹ − L² + p), L²' = relu(L¹ − L² + p − 1).
//!
//! Per language (accept iff y > ½):
//! - anbn: control S, A (a*), B (a*b⁺); K = #a − #b; y = S + A + B − K⁺ − K⁻.
//! - anbncn: control S, A, B, C (a*b*c⁺); K1 = #a − #b, K2 = #b − #c; y = S + A + B + C − K1⁺ − K1⁻ − K2⁺ − K2⁻.
//! - dyck1: K = #( − #); latch D with p = K⁻ (went below 0); y = 1 − K⁺ − K⁻ − D.
//! - anbn_sigma: control S, A (a⁺), B (a⁺b⁺); K' = relu(K + x_a − x_b) (≥ 1 while live);
//!   pulse P' = relu(x_b + 2A + 2B − K − 1) (= 1 exactly when the b just read makes K = 0, i.e.
//!   the prefix is aᵏbᵏ, k ≥ 1; may exceed 1 only after that); latch C with p = P; y = C + P.

use crate::error::SimResult;
use crate::machine::counter_lang::Language;
use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::{Linear, SimpleRnn};
use crate::net::stacked::Stack;
use crate::net::cell::Cell;

use super::counter_net::{q, CounterParts, View};

/// A unit: name, recurrent terms (unit, coefficient), input terms (symbol, coefficient), bias.
type Row = (&'static str, Vec<(&'static str, i64)>, Vec<(usize, i64)>, i64);

/// Units, readout terms (unit, coefficient), readout bias, units that are 1 in h_0.
type Design = (Vec<Row>, Vec<(&'static str, i64)>, i64, Vec<&'static str>);

fn rows(lang: Language) -> Design {
    let counter = |p: &'static str, m: &'static str, up: usize, down: usize| -> [Row; 2] {
        [(p, vec![(p, 1), (m, -1)], vec![(up, 1), (down, -1)], 0), (m, vec![(m, 1), (p, -1)], vec![(down, 1), (up, -1)], 0)]
    };
    let latch = |l1: &'static str, l2: &'static str, p: &'static str| -> [Row; 2] {
        [(l1, vec![(l1, 1), (l2, -1), (p, 1)], vec![], 0), (l2, vec![(l1, 1), (l2, -1), (p, 1)], vec![], -1)]
    };
    let start: Row = ("S", vec![], vec![], -1);
    match lang {
        Language::Anbn => {
            let mut r = vec![start, ("A", vec![("S", 1), ("A", 1)], vec![(0, 1)], -1), ("B", vec![("S", 1), ("A", 1), ("B", 1)], vec![(1, 1)], -1)];
            r.extend(counter("K+", "K-", 0, 1));
            (r, vec![("S", 1), ("A", 1), ("B", 1), ("K+", -1), ("K-", -1)], 0, vec!["S"])
        }
        Language::Anbncn => {
            let mut r = vec![
                start,
                ("A", vec![("S", 1), ("A", 1)], vec![(0, 1)], -1),
                ("B", vec![("S", 1), ("A", 1), ("B", 1)], vec![(1, 1)], -1),
                ("C", vec![("S", 1), ("A", 1), ("B", 1), ("C", 1)], vec![(2, 1)], -1),
            ];
            r.extend(counter("K1+", "K1-", 0, 1));
            r.extend(counter("K2+", "K2-", 1, 2));
            let y = vec![("S", 1), ("A", 1), ("B", 1), ("C", 1), ("K1+", -1), ("K1-", -1), ("K2+", -1), ("K2-", -1)];
            (r, y, 0, vec!["S"])
        }
        Language::Dyck1 => {
            let mut r: Vec<Row> = counter("K+", "K-", 0, 1).into();
            r.extend(latch("D1", "D2", "K-"));
            (r, vec![("K+", -1), ("K-", -1), ("D1", -1), ("D2", 1)], 1, vec![])
        }
        Language::AnbnSigma => {
            let mut r = vec![
                start,
                ("A", vec![("S", 1), ("A", 1)], vec![(0, 1)], -1),
                ("B", vec![("A", 1), ("B", 1)], vec![(1, 1)], -1),
                ("K", vec![("K", 1)], vec![(0, 1), (1, -1)], 0),
                ("P", vec![("A", 2), ("B", 2), ("K", -1)], vec![(1, 1)], -1),
            ];
            r.extend(latch("C1", "C2", "P"));
            (r, vec![("C1", 1), ("C2", -1), ("P", 1)], 0, vec!["S"])
        }
    }
}

/// The ReLU counter network for `lang` (see the module doc).
pub fn build(lang: Language) -> SimResult<CounterParts> {
    let (rows, y, y_bias, start) = rows(lang);
    let (n, d) = (lang.alphabet().len(), rows.len());
    let idx = |name: &str| rows.iter().position(|r| r.0 == name).expect("unit exists");
    let mut v = RatMatrix::zeros(d, d);
    let mut w = RatMatrix::zeros(d, n);
    let mut b = Vec::with_capacity(d);
    for (i, (_, rec, inp, bias)) in rows.iter().enumerate() {
        for &(u, c) in rec {
            let j = idx(u);
            let old = v.get(i, j).clone();
            v.set(i, j, old + q(c, 1));
        }
        for &(k, c) in inp {
            w.set(i, k, q(c, 1));
        }
        b.push(q(*bias, 1));
    }
    let mut h0 = vec![q(0, 1); d];
    for s in start {
        h0[idx(s)] = q(1, 1);
    }
    let mut yw = vec![q(0, 1); d];
    for (u, c) in y {
        yw[idx(u)] = q(c, 1);
    }
    let readout = Linear { w: RatMatrix::from_rows(vec![yw]), b: vec![q(y_bias, 1)] };
    let net = SimpleRnn { v, w, b, h0: h0.clone(), activation: Activation::Relu, readout: None };
    let pair = |name: &'static str, p: &str, m: &str| View::new(name, vec![(idx(p), q(1, 1)), (idx(m), q(-1, 1))], q(0, 1));
    let views = match lang {
        Language::Anbn => vec![pair("a-b", "K+", "K-"), View::new("live", vec![(idx("S"), q(1, 1)), (idx("A"), q(1, 1)), (idx("B"), q(1, 1))], q(0, 1))],
        Language::Anbncn => vec![
            pair("a-b", "K1+", "K1-"),
            pair("b-c", "K2+", "K2-"),
            View::new("live", ["S", "A", "B", "C"].iter().map(|u| (idx(u), q(1, 1))).collect(), q(0, 1)),
        ],
        Language::Dyck1 => vec![pair("depth", "K+", "K-"), pair("error", "D1", "D2")],
        Language::AnbnSigma => vec![
            View::new("a-b", vec![(idx("K"), q(1, 1))], q(0, 1)),
            View::new("live", vec![(idx("S"), q(1, 1)), (idx("A"), q(1, 1)), (idx("B"), q(1, 1))], q(0, 1)),
            pair("accepted", "C1", "C2"),
        ],
    };
    let stack = Stack::new("simple_rnn", vec![Cell::Simple(net)])?;
    Ok(CounterParts { stack, readout, h0: vec![h0], c0: vec![None], views })
}
