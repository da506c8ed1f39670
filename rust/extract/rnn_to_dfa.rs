//! Theorem 4.5 (lecture notes, seed 001, §4.2.1): a simple RNN with integer weights and SLU
//! activations, read by a linear layer, recognises a regular language — its reachable
//! hidden states form a DFA. Extraction makes that DFA explicit (the "RNNs as state
//! machines" view of seed 003): explore the reachable states exactly, breadth first, and
//! minimise.

use crate::error::{SimError, SimResult};
use crate::machine::dfa::Dfa;
use crate::net::activation::Activation;
use crate::net::simple_rnn::SimpleRnn;
use crate::sim::cancel::Control;
use crate::sim::exact_engine::{Affine, ExactPlan, DEFAULT_MAX_BITS};
use crate::num::exact_vector::ExactVector;
use malachite::Rational;
use std::collections::{HashMap, HashSet};

/// The minimal DFA of the language a network recognises (Theorem 4.5, lecture notes seed 001;
/// state exploration as in the DFA-extraction line of work, seed 003).
///
/// Each symbol of `alphabet` is fed as its input vector x_a (width = the network's input
/// size). Starting from h_0, every reachable hidden state is found breadth first, computing
/// h' = σ(V h + W x_a + b) exactly (the exact engine) for each symbol in the given order;
/// states are identified by their exact (reduced) rational values. A state accepts iff its
/// readout's first output is > `threshold` (1/2 is the usual choice, for 0/1 readouts). The
/// explored automaton (states named "s0", "s1", … in discovery order, s0 = h_0) is then
/// minimised ([`Dfa::minimize`]); its states are renamed "s0", "s1", … in the minimal DFA's
/// breadth-first order.
///
/// Termination: with step activations every state after t = 0 is in {0,1}^d; with slu,
/// integer V and b, and integer W x_a, every state after t = 0 is in {0,1}^d too (the
/// theorem's proof). Such networks have at most 2^d + 1 reachable states, so exploration
/// ends. Any other piecewise-linear network (relu, identity, rational weights) may have
/// infinitely many reachable states; it is explored the same way. In every case, exploring
/// more than `max_states` states stops with `LimitExceeded`.
///
/// Errors: tanh/sigmoid networks → `Unsupported` (their states are not exact; saturate the
/// network first, e.g. replace tanh by step); no readout → `InvalidNetwork`; symbol vectors
/// of the wrong width or duplicate symbol names → `InvalidInput` (every problem listed);
/// `ctl` cancelled → `Interrupted`.
pub fn extract(net: &SimpleRnn, alphabet: &[(String, Vec<Rational>)], threshold: &Rational, max_states: usize, ctl: &Control) -> SimResult<Dfa> {
    if !net.activation.is_piecewise_linear() {
        return Err(SimError::Unsupported(format!(
            "cannot extract a DFA from a {} network: its states have no exact value; saturate it first \
             (replace {} by step or slu) and extract from the saturated network",
            net.activation.name(),
            net.activation.name()
        )));
    }
    if net.output_size() == 0 {
        return Err(SimError::invalid_network(
            "extraction needs a readout (acceptance is readout[0] > threshold), but the network has none",
        ));
    }
    check_alphabet(net, alphabet)?;
    let plan = ExactPlan::new(net, DEFAULT_MAX_BITS)?;
    let inputs: Vec<Affine> = alphabet.iter().map(|(_, x)| plan.affine(x)).collect();
    let (states, delta) = explore(&plan, &inputs, max_states, finite_bound(net, alphabet), ctl)?;
    let accept = states.iter().map(|h| plan.output(h)[0] > *threshold).collect();
    let names = (0..states.len()).map(|i| format!("s{i}")).collect();
    let symbols = alphabet.iter().map(|(s, _)| s.clone()).collect();
    let delta = delta.into_iter().map(|row| row.into_iter().map(Some).collect()).collect();
    let mut dfa = Dfa::from_table(names, symbols, delta, 0, accept)?.minimize();
    dfa.states = (0..dfa.states.len()).map(|i| format!("s{i}")).collect();
    Ok(dfa)
}

/// Every problem with the symbols at once: wrong vector width, duplicate or empty names.
fn check_alphabet(net: &SimpleRnn, alphabet: &[(String, Vec<Rational>)]) -> SimResult<()> {
    let n = net.input_size();
    let mut seen = HashSet::new();
    let mut p = Vec::new();
    for (i, (name, x)) in alphabet.iter().enumerate() {
        if x.len() != n {
            p.push(format!("symbol {name:?} has an input vector of length {}, the network takes {n}", x.len()));
        }
        if name.is_empty() {
            p.push(format!("symbol {i} has an empty name"));
        } else if !seen.insert(name.as_str()) {
            p.push(format!("symbol {name:?} appears twice in the alphabet"));
        }
    }
    if p.is_empty() { Ok(()) } else { Err(SimError::InvalidInput(p)) }
}

/// 2^d + 1 when Theorem 4.5 guarantees a finite state set (step; or slu with integer V, b
/// and W x_a), None otherwise. Only used to word the error message.
fn finite_bound(net: &SimpleRnn, alphabet: &[(String, Vec<Rational>)]) -> Option<u128> {
    let int = |x: &Rational| x.to_denominator() == 1u32;
    let finite = match net.activation {
        Activation::Step => true,
        Activation::Slu => {
            net.v.triples().all(|(_, _, x)| int(x))
                && net.b.iter().all(int)
                && alphabet.iter().all(|(_, x)| net.w.matvec(x).iter().all(int))
        }
        _ => false,
    };
    finite.then(|| if net.hidden_size() < 127 { (1u128 << net.hidden_size()) + 1 } else { u128::MAX })
}

/// Breadth-first exploration: the reachable states (discovery order) and their successor
/// table `delta[state][symbol]`.
fn explore(plan: &ExactPlan, inputs: &[Affine], max_states: usize, bound: Option<u128>, ctl: &Control) -> SimResult<(Vec<ExactVector>, Vec<Vec<usize>>)> {
    if max_states == 0 {
        return Err(too_many(1, max_states, bound));
    }
    let mut states = vec![plan.h0.clone()];
    let mut index: HashMap<Vec<Rational>, usize> = HashMap::from([(plan.h0.to_rationals(), 0)]);
    let mut delta: Vec<Vec<usize>> = Vec::new();
    while delta.len() < states.len() {
        ctl.check()?;
        let h = states[delta.len()].clone();
        let mut row = Vec::with_capacity(inputs.len());
        for c in inputs {
            let next = plan.tick(&h, c)?;
            let key = next.to_rationals();
            let id = match index.get(&key) {
                Some(&id) => id,
                None => {
                    if states.len() >= max_states {
                        return Err(too_many(states.len() + 1, max_states, bound));
                    }
                    index.insert(key, states.len());
                    states.push(next);
                    states.len() - 1
                }
            };
            row.push(id);
        }
        delta.push(row);
    }
    Ok((states, delta))
}

fn too_many(found: usize, max_states: usize, bound: Option<u128>) -> SimError {
    let why = match bound {
        Some(b) => format!(
            "the network is finite-state (Theorem 4.5: at most {b} states) but has more than max_states; \
             raise max_states"
        ),
        None => "the network may have infinitely many reachable states (it is not a step network or an \
                 slu network with integer weights and inputs); raise max_states if it is finite"
            .to_string(),
    };
    SimError::LimitExceeded(format!(
        "DFA extraction explored {found} states, above max_states = {max_states}: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::dfa_to_rnn::dfa_to_rnn;
    use crate::compile::dfa_to_rnn::tests::test_dfas;
    use crate::machine::tomita::parity;
    use crate::net::matrix::RatMatrix;
    use crate::net::simple_rnn::Linear;

    fn half() -> Rational {
        Rational::from_signeds(1i32, 2i32)
    }

    fn ints(rows: &[&[i64]]) -> RatMatrix {
        RatMatrix::from_rows(rows.iter().map(|r| r.iter().map(|&x| Rational::from(x)).collect()).collect())
    }

    fn vec_of(xs: &[i64]) -> Vec<Rational> {
        xs.iter().map(|&x| Rational::from(x)).collect()
    }

    #[test]
    fn extracting_a_compiled_dfa_gives_back_its_minimal_dfa() {
        for (name, dfa) in test_dfas(200) {
            let c = dfa_to_rnn(&dfa).unwrap();
            let got = extract(&c.network, &c.alphabet_vectors(), &half(), 10_000, &Control::new()).unwrap();
            assert_eq!(dfa.equivalent(&got).unwrap(), None, "{name}");
            assert_eq!(got.states.len(), dfa.minimize().states.len(), "{name}");
            assert_eq!(got.states[0], "s0");
        }
    }

    /// Parity by hand with slu units and integer weights (the Theorem 4.5 setting):
    /// a = [h_odd ∧ ¬x], b = [¬h_odd ∧ x] after the tick; odd' = a ∨ b is read linearly.
    fn slu_parity() -> SimpleRnn {
        // units: 0 = odd∧¬x, 1 = even∧x, 2 = odd (one tick late, unused by the readout)
        // odd(h) = h0 + h1; pre0 = odd − x, pre1 = x − odd; pre2 = odd
        let v = ints(&[&[1, 1, 0], &[-1, -1, 0], &[1, 1, 0]]);
        let w = ints(&[&[-1], &[1], &[0]]);
        let ro = Linear { w: ints(&[&[1, 1, 0]]), b: vec_of(&[0]) };
        SimpleRnn::new(v, w, vec_of(&[0, 0, 0]), None, Activation::Slu, Some(ro)).unwrap()
    }

    #[test]
    fn hand_written_slu_network_is_parity() {
        let net = slu_parity();
        let alphabet = vec![("0".to_string(), vec_of(&[0])), ("1".to_string(), vec_of(&[1]))];
        let got = extract(&net, &alphabet, &half(), 100, &Control::new()).unwrap();
        assert_eq!(parity().equivalent(&got).unwrap(), None, "{got:?}");
        assert_eq!(got.states.len(), 2);
        // the same network over a re-ordered alphabet is the same language
        let rev: Vec<_> = alphabet.iter().rev().cloned().collect();
        assert_eq!(parity().equivalent(&extract(&net, &rev, &half(), 100, &Control::new()).unwrap()).unwrap(), None);
    }

    #[test]
    fn a_counter_exceeds_max_states() {
        // h' = relu(h + 1): h_t = t, infinitely many states
        let ro = Linear { w: ints(&[&[1]]), b: vec_of(&[0]) };
        let net = SimpleRnn::new(ints(&[&[1]]), ints(&[&[0]]), vec_of(&[1]), None, Activation::Relu, Some(ro)).unwrap();
        let alphabet = vec![("a".to_string(), vec_of(&[1]))];
        match extract(&net, &alphabet, &half(), 100, &Control::new()) {
            Err(SimError::LimitExceeded(m)) => assert!(m.contains("explored 101 states"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_requests_are_refused() {
        let mut net = slu_parity();
        let ctl = Control::new();
        let bad_alphabet = vec![("a".to_string(), vec_of(&[1, 0])), ("a".to_string(), vec_of(&[]))];
        match extract(&net, &bad_alphabet, &half(), 100, &ctl) {
            Err(SimError::InvalidInput(p)) => assert_eq!(p.len(), 3, "{p:?}"),
            other => panic!("{other:?}"),
        }
        let alphabet = vec![("a".to_string(), vec_of(&[1]))];
        net.activation = Activation::Tanh;
        match extract(&net, &alphabet, &half(), 100, &ctl) {
            Err(SimError::Unsupported(m)) => assert!(m.contains("saturate"), "{m}"),
            other => panic!("{other:?}"),
        }
        net.activation = Activation::Slu;
        net.readout = None;
        assert!(matches!(extract(&net, &alphabet, &half(), 100, &ctl), Err(SimError::InvalidNetwork(_))));
        let c = dfa_to_rnn(&parity()).unwrap();
        ctl.cancel();
        assert_eq!(extract(&c.network, &c.alphabet_vectors(), &half(), 100, &ctl), Err(SimError::Interrupted));
        assert!(matches!(extract(&c.network, &c.alphabet_vectors(), &half(), 1, &Control::new()), Err(SimError::LimitExceeded(_))));
    }
}
