//! Theorem 4.3 (Minsky 1967; lecture notes, seed 001, §4.2.1, eqs. 4.7–4.12): every DFA is
//! a simple RNN with integer weights and ReLU activations followed by a linear readout.
//!
//! The DFA M = (Q, Σ, δ, q_start, F) is first completed (a missing transition goes to a
//! rejecting dead state). Its one-step update is the two-layer network of eqs. 4.10–4.11
//! on one-hot states h ∈ {0,1}^|Q| and one-hot inputs x ∈ {0,1}^|Σ|:
//!
//!   g[i, j] = ReLU(h[i] + x[j] − 1)              (= h[i] ∧ x[j], eq. 4.10)
//!   h'[q]   = Σ_{δ(q_i, a_j) = q} g[i, j]        (eq. 4.11)
//!   y       = Σ_{q ∈ F} h[q]                     (eq. 4.12)
//!
//! with start state s = e_{q_start}; Lemma 4.4 ([`two_layer_to_rnn`]) turns it into one
//! simple RNN. Running it on words (`accepts_batch`) is in `dfa_run`, checking it against
//! the DFA (`verify`) in `dfa_verify`.

use crate::compile::two_layer_to_rnn::{decode_state, two_layer_to_rnn, TwoLayerStep};
use crate::error::{SimError, SimResult};
use crate::machine::dfa::Dfa;
use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::SimpleRnn;
use malachite::Rational;

/// A DFA compiled into a simple ReLU RNN (Theorem 4.3), with its codec.
///
/// `network` has hidden size |Q|·|Σ| + 1 (|Q| counts the dead state added by completion),
/// integer weights in {−1, 0, 1}, ReLU, input size |Σ| and one readout, and exactly
/// |Σ| + |Q|·|Σ|² + 2·|Q|·|Σ| nonzero weights in V, W and b. Unit 0 is 1 at t = 0 only;
/// unit 1 + i·|Σ| + j is g[i, j] = "the previous state was q_i and the symbol read was a_j".
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledDfa {
    /// The completed DFA the network simulates (state indices are this DFA's).
    pub dfa: Dfa,
    /// The simple RNN of eqs. 4.19–4.21 built from `step`.
    pub network: SimpleRnn,
    /// The two-layer recurrence of eqs. 4.10–4.12 (state = one-hot DFA state).
    pub step: TwoLayerStep,
}

/// Compiles a DFA into a simple ReLU RNN by Minsky's construction (Theorem 4.3, lecture
/// notes seed 001; M. Minsky, Computation: Finite and Infinite Machines, 1967) and
/// Lemma 4.4: complete the DFA, build the two-layer step
///
/// ```text
///   s = e_{q_start},  V[(i,j), i] = 1,  W[(i,j), j] = 1,  b[(i,j)] = −1,
///   U[δ(q_i, a_j), (i,j)] = 1,  out_w[q] = [q ∈ F],  out_b = 0
/// ```
///
/// (row (i, j) is index i·|Σ| + j), and apply [`two_layer_to_rnn`] with ReLU. The network's
/// hidden size is |Q|·|Σ| + 1 (|Q| after completion). Inputs are one-hot over the DFA's
/// alphabet in alphabet order ([`CompiledDfa::encode`]); the readout is exactly 1 after an
/// accepted prefix and 0 after a rejected one, at every t including t = 0 (the empty word).
///
/// Weights are sparse [`RatMatrix`]es: memory and time are linear in the number of
/// nonzeros, |Σ| + |Q|·|Σ|² + 2·|Q|·|Σ| (a 10,000-state binary DFA: 80,002).
pub fn dfa_to_rnn(dfa: &Dfa) -> SimResult<CompiledDfa> {
    let dfa = dfa.complete();
    let (n, m) = (dfa.states.len(), dfa.alphabet.len());
    let k = n * m;
    let one = || Rational::from(1);
    let mut s = vec![Rational::from(0); n];
    s[dfa.start] = one();
    let (mut u, mut v, mut w) = (RatMatrix::zeros(n, k), RatMatrix::zeros(k, n), RatMatrix::zeros(k, m));
    for i in 0..n {
        for j in 0..m {
            let r = i * m + j;
            v.set(r, i, one());
            w.set(r, j, one());
            let q = dfa.delta[i][j].expect("a completed DFA has every transition");
            u.set(q, r, one());
        }
    }
    let out_w = RatMatrix::from_rows(vec![dfa.accept.iter().map(|&a| Rational::from(u32::from(a))).collect()]);
    let step = TwoLayerStep { s, u, v, w, b: vec![Rational::from(-1); k], out_w, out_b: vec![Rational::from(0)] };
    let network = two_layer_to_rnn(&step, Activation::Relu)?;
    Ok(CompiledDfa { dfa, network, step })
}

impl CompiledDfa {
    /// Number of input symbols |Σ| (the input width of the network).
    pub fn n_symbols(&self) -> usize {
        self.dfa.alphabet.len()
    }

    /// The DFA state (index into `self.dfa`) that hidden state `h` encodes: the one-hot
    /// position of ĥ = s·h[0] + U·h[1..] ([`decode_state`]). `InvalidInput` if `h` has the
    /// wrong length or ĥ is not a one-hot vector (then h encodes no DFA state).
    pub fn decode(&self, h: &[Rational]) -> SimResult<usize> {
        let d = self.network.hidden_size();
        if h.len() != d {
            return Err(SimError::invalid_input(format!("hidden state must have length {d}, got {}", h.len())));
        }
        let q = decode_state(&self.step, h);
        let ones: Vec<usize> = (0..q.len()).filter(|&i| q[i] == 1u32).collect();
        let zeros = q.iter().filter(|x| **x == 0u32).count();
        match ones.as_slice() {
            [i] if zeros + 1 == q.len() => Ok(*i),
            _ => Err(SimError::invalid_input(format!(
                "hidden state decodes to [{}], which is not one-hot: it encodes no DFA state",
                q.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The input rows fed for `word` (symbol indices): row t is the one-hot vector of
    /// word[t] over the alphabet, in alphabet order. `InvalidInput` for an index outside
    /// the alphabet (every bad position listed).
    pub fn encode(&self, word: &[usize]) -> SimResult<Vec<Vec<Rational>>> {
        let m = self.n_symbols();
        let bad: Vec<String> = word
            .iter()
            .enumerate()
            .filter(|(_, &a)| a >= m)
            .map(|(t, a)| format!("symbol index {a} at position {t} is outside the alphabet (size {m})"))
            .collect();
        if !bad.is_empty() {
            return Err(SimError::InvalidInput(bad));
        }
        Ok(word.iter().map(|&a| one_hot(a, m)).collect())
    }

    /// The same as [`CompiledDfa::encode`], flattened row-major to (T·|Σ|) as the engines take it.
    pub fn encode_flat(&self, word: &[usize]) -> SimResult<Vec<Rational>> {
        Ok(self.encode(word)?.into_iter().flatten().collect())
    }

    /// Each symbol's name with its input vector (one-hot), e.g. for extraction (Theorem 4.5).
    pub fn alphabet_vectors(&self) -> Vec<(String, Vec<Rational>)> {
        let m = self.n_symbols();
        self.dfa.alphabet.iter().enumerate().map(|(a, name)| (name.clone(), one_hot(a, m))).collect()
    }
}

/// e_a in ℚ^m.
pub(crate) fn one_hot(a: usize, m: usize) -> Vec<Rational> {
    (0..m).map(|j| Rational::from(u32::from(j == a))).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::machine::tomita::{parity, tomita};
    use crate::sim::exact_engine::{ExactPlan, DEFAULT_MAX_BITS};
    use crate::num::exact_vector::ExactVector;

    /// Tomita 1–7, parity, then `n_random` random DFAs (1–30 states, 1–3 symbols), every
    /// third one made partial by dropping about a quarter of its transitions.
    pub(crate) fn test_dfas(n_random: u64) -> Vec<(String, Dfa)> {
        let mut out: Vec<(String, Dfa)> = (1..=7).map(|i| (format!("tomita{i}"), tomita(i).unwrap())).collect();
        out.push(("parity".into(), parity()));
        for seed in 0..n_random {
            let n = 1 + (seed * 7 % 30) as usize;
            let m = 1 + (seed % 3) as usize;
            let mut dfa = Dfa::random(n, m, seed);
            if seed % 3 == 2 {
                let mut delta = dfa.delta.clone();
                for (c, t) in delta.iter_mut().flatten().enumerate() {
                    if (c as u64 * 2654435761 + seed * 40503).is_multiple_of(4) {
                        *t = None;
                    }
                }
                dfa = Dfa::from_table(dfa.states, dfa.alphabet, delta, dfa.start, dfa.accept).unwrap();
            }
            out.push((format!("random{seed}(n={n},m={m})"), dfa));
        }
        out
    }

    /// Exhaustive depth-first check of every word up to `max_len`, one exact tick per edge
    /// of the word tree: decode(h_t) is the DFA state and the readout is the acceptance.
    fn check_tree(c: &CompiledDfa, orig: &Dfa, plan: &ExactPlan, h: &ExactVector, word: &mut Vec<usize>, max_len: usize) {
        let state = h.to_rationals();
        let q = c.decode(&state).unwrap();
        assert_eq!(Some(q), *c.dfa.run(word).last().unwrap(), "word {word:?}");
        let y = plan.output(h);
        assert_eq!(y, vec![Rational::from(u32::from(orig.accepts(word)))], "word {word:?}");
        if word.len() == max_len {
            return;
        }
        for a in 0..c.n_symbols() {
            let x = one_hot(a, c.n_symbols());
            let next = plan.tick(h, &plan.affine(&x)).unwrap();
            word.push(a);
            check_tree(c, orig, plan, &next, word, max_len);
            word.pop();
        }
    }

    #[test]
    fn compiled_network_follows_the_dfa_step_by_step() {
        for (name, dfa) in test_dfas(200) {
            let c = dfa_to_rnn(&dfa).unwrap();
            let (n, m) = (c.dfa.states.len(), c.n_symbols());
            assert_eq!(c.network.hidden_size(), n * m + 1, "{name}");
            assert_eq!(c.network.nonzero_weights(), m + n * m * m + 2 * n * m, "{name}");
            assert!(c.network.v.to_dense().iter().chain(&c.network.w.to_dense()).chain(&c.network.b).all(|x| *x == 0u32 || *x == 1u32 || *x == -1i32));
            let plan = ExactPlan::new(&c.network, DEFAULT_MAX_BITS).unwrap();
            let max_len = [0, 12, 8, 6][m];
            check_tree(&c, &dfa, &plan, &plan.h0, &mut Vec::new(), max_len);
        }
    }

    #[test]
    fn tomita_network_sizes() {
        for (name, dfa) in test_dfas(0) {
            let c = dfa_to_rnn(&dfa).unwrap();
            println!(
                "{name}: |Q| = {}, hidden = {}, nonzero weights (V, W, b) = {}, readout nonzeros = {}",
                c.dfa.states.len(),
                c.network.hidden_size(),
                c.network.nonzero_weights(),
                c.network.readout.as_ref().unwrap().w.nonzeros()
            );
        }
    }

    #[test]
    fn decode_and_encode_reject_bad_values() {
        let c = dfa_to_rnn(&tomita(3).unwrap()).unwrap();
        assert_eq!(c.decode(&c.network.h0).unwrap(), c.dfa.start);
        let d = c.network.hidden_size();
        assert!(matches!(c.decode(&vec![Rational::from(0); d - 1]), Err(SimError::InvalidInput(_))));
        let mut two = vec![Rational::from(0); d];
        (two[1], two[2]) = (Rational::from(1), Rational::from(1));
        assert!(matches!(c.decode(&two), Err(SimError::InvalidInput(_))), "two transitions at once");
        assert!(matches!(c.decode(&vec![Rational::from(0); d]), Err(SimError::InvalidInput(_))));
        assert_eq!(c.encode(&[1, 0]).unwrap(), vec![one_hot(1, 2), one_hot(0, 2)]);
        match c.encode(&[0, 2, 5]) {
            Err(SimError::InvalidInput(p)) => assert_eq!(p.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_alphabet_compiles_runs_and_extracts() {
        use crate::num::dtype::Dtype;
        use crate::sim::cancel::Control;
        for accept in [false, true] {
            let dfa = Dfa::from_table(vec!["q".into()], vec![], vec![vec![]], 0, vec![accept]).unwrap();
            let c = dfa_to_rnn(&dfa).unwrap();
            assert_eq!(c.network.hidden_size(), 1);
            for dtype in [Dtype::Exact, Dtype::F32] {
                assert_eq!(c.verify(5, dtype, None, &Control::new()).unwrap(), None);
                assert_eq!(c.accepts_batch(&[vec![]], dtype, None, &Control::new()).unwrap(), vec![accept]);
            }
            let half = Rational::from_signeds(1i32, 2i32);
            let back = crate::extract::rnn_to_dfa::extract(&c.network, &[], &half, 10, &Control::new()).unwrap();
            assert_eq!(dfa.equivalent(&back).unwrap(), None);
        }
    }

    #[test]
    fn compile_time_of_large_random_dfas() {
        for n in [250, 1000, 10_000] {
            let dfa = Dfa::random(n, 2, 1);
            let t = std::time::Instant::now();
            match dfa_to_rnn(&dfa) {
                Ok(c) => println!(
                    "dfa_to_rnn(Dfa::random({n}, 2, 1)): hidden {} in {:.2?}",
                    c.network.hidden_size(),
                    t.elapsed()
                ),
                Err(e) => {
                    assert!(matches!(e, SimError::LimitExceeded(_)), "{e:?}");
                    println!("dfa_to_rnn(Dfa::random({n}, 2, 1)): {e} ({:.2?})", t.elapsed());
                }
            }
        }
    }
}
