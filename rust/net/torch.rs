//! Reading PyTorch `state_dict`s of torch.nn.LSTM, torch.nn.GRU and torch.nn.RNN.
//!
//! Layer k has `weight_ih_l{k}` (G·H, in_k), `weight_hh_l{k}` (G·H, H) and, unless the module
//! was built with bias=False, `bias_ih_l{k}` and `bias_hh_l{k}` (G·H); G = 4 (LSTM: i, f, g,
//! o), 3 (GRU: r, z, n), 1 (RNN). in_0 is the input size, in_k = H for k ≥ 1. Values are
//! taken exactly (a float32 weight is its exact binary value). A plain RNN layer becomes the
//! simple RNN h_t = act(W_hh h_{t−1} + W_ih x_t + (b_ih + b_hh)) with the two biases added
//! exactly. Bidirectional (`_reverse`) and projected (`weight_hr`) modules are not supported.
//! Every problem (missing keys, unexpected keys, shapes, layers that do not fit together)
//! is reported at once.

use crate::error::{SimError, SimResult};
use crate::net::activation::Activation;
use crate::net::cell::Cell;
use crate::net::parts::{Options, Tensors};
use crate::net::stacked::Stack;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TorchModule {
    Lstm,
    Gru,
    Rnn(Activation),
}

impl TorchModule {
    fn cell_kind(self) -> &'static str {
        match self {
            TorchModule::Lstm => "lstm",
            TorchModule::Gru => "gru",
            TorchModule::Rnn(_) => "simple_rnn",
        }
    }
}

const NAMES: [&str; 4] = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"];

/// Builds the network of a state_dict (one layer per `l{k}` suffix).
pub fn from_state_dict(module: TorchModule, mut sd: Tensors) -> SimResult<Stack> {
    let mut p = Vec::new();
    for key in sd.keys() {
        let known = NAMES.iter().any(|n| key.strip_prefix(n).and_then(|r| r.strip_prefix("_l")).is_some_and(|k| k.parse::<usize>().is_ok()));
        if key.contains("_reverse") {
            p.push(format!("{key:?}: bidirectional modules are not supported (run each direction as its own network)"));
        } else if key.starts_with("weight_hr") {
            p.push(format!("{key:?}: LSTMs with proj_size are not supported"));
        } else if !known {
            p.push(format!("unexpected key {key:?} (expected weight_ih_l<k>, weight_hh_l<k>, bias_ih_l<k>, bias_hh_l<k>)"));
        }
    }
    let layers: BTreeSet<usize> = sd
        .keys()
        .filter(|k| !k.contains("_reverse"))
        .filter_map(|k| NAMES.iter().find_map(|n| k.strip_prefix(n)?.strip_prefix("_l")?.parse::<usize>().ok()))
        .collect();
    let count = layers.iter().next_back().map_or(0, |m| m + 1);
    if count == 0 && p.is_empty() {
        p.push("the state_dict has no weight_ih_l0 / weight_hh_l0: not a torch.nn.LSTM/GRU/RNN state_dict".into());
    }
    let mut cells = Vec::with_capacity(count);
    let mut hidden0 = None;
    for k in 0..count {
        let mut parts = Tensors::new();
        for n in NAMES {
            if let Some(t) = sd.remove(&format!("{n}_l{k}")) {
                parts.insert(n.to_string(), t);
            } else if n.starts_with("weight") {
                p.push(format!("missing key \"{n}_l{k}\" (layer {k} of {count})"));
            }
        }
        if let Some(s) = parts.get("weight_hh") {
            if s.0.len() == 2 {
                match hidden0 {
                    None => hidden0 = Some(s.0[1]),
                    Some(h) if h != s.0[1] => p.push(format!("weight_hh_l{k} has hidden size {} but layer 0 has {h}: all layers of a torch module share one hidden size", s.0[1])),
                    _ => {}
                }
            }
        }
        if parts.keys().filter(|n| n.starts_with("weight")).count() < 2 {
            continue;
        }
        let label = format!("layer {k} (weight_*_l{k})");
        let built = match module {
            TorchModule::Rnn(act) => simple_layer(&label, parts, act, &mut p),
            _ => Cell::from_parts(module.cell_kind(), &label, parts, Options::new(), &mut p),
        };
        cells.extend(built);
    }
    if cells.len() == count {
        if let Err(SimError::InvalidNetwork(chain)) = Stack::new(module.cell_kind(), cells.clone()) {
            p.extend(chain);
        }
    }
    if !p.is_empty() {
        return Err(SimError::InvalidNetwork(p));
    }
    Stack::new(module.cell_kind(), cells)
}

/// A torch.nn.RNN layer as a simple RNN: V = W_hh, W = W_ih, b = b_ih + b_hh (exact).
fn simple_layer(label: &str, mut parts: Tensors, act: Activation, p: &mut Vec<String>) -> Option<Cell> {
    let mut t = Tensors::new();
    let (bi, bh) = (parts.remove("bias_ih"), parts.remove("bias_hh"));
    match (bi, bh) {
        (Some((si, vi)), Some((sh, vh))) if si == sh => {
            t.insert("b".into(), (si, vi.iter().zip(&vh).map(|(a, b)| a + b).collect()));
        }
        (Some((si, _)), Some((sh, _))) => p.push(format!("{label}: bias_ih has shape {si:?} but bias_hh has {sh:?}")),
        (None, None) => {}
        _ => p.push(format!("{label}: give both biases or neither")),
    }
    if let Some(w) = parts.remove("weight_hh") {
        t.insert("V".into(), w);
    }
    if let Some(w) = parts.remove("weight_ih") {
        t.insert("W".into(), w);
    }
    let mut o = Options::new();
    o.insert("activation".into(), act.name().into());
    Cell::from_parts("simple_rnn", label, t, o, p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use malachite::Rational;

    fn t(shape: &[usize]) -> (Vec<usize>, Vec<Rational>) {
        (shape.to_vec(), (0..shape.iter().product::<usize>()).map(|i| Rational::from(i as i64 % 5 - 2) / Rational::from(4)).collect())
    }

    fn lstm_sd(layers: usize, h: usize, n: usize) -> Tensors {
        let mut sd = Tensors::new();
        for k in 0..layers {
            let inp = if k == 0 { n } else { h };
            sd.insert(format!("weight_ih_l{k}"), t(&[4 * h, inp]));
            sd.insert(format!("weight_hh_l{k}"), t(&[4 * h, h]));
            sd.insert(format!("bias_ih_l{k}"), t(&[4 * h]));
            sd.insert(format!("bias_hh_l{k}"), t(&[4 * h]));
        }
        sd
    }

    #[test]
    fn two_layer_lstm_reads_and_chains() {
        let s = from_state_dict(TorchModule::Lstm, lstm_sd(2, 3, 2)).unwrap();
        assert_eq!(s.layers.len(), 2);
        assert_eq!((s.input_size(), s.hidden_size()), (2, 3));
        assert_eq!(s.label, "lstm");
    }

    #[test]
    fn every_problem_is_listed() {
        let mut sd = lstm_sd(3, 3, 2);
        sd.remove("weight_hh_l1");
        sd.remove("bias_hh_l2");
        sd.insert("weight_ih_l0_reverse".into(), t(&[12, 2]));
        sd.insert("junk".into(), t(&[1]));
        sd.insert("weight_ih_l2".into(), t(&[12, 5]));
        match from_state_dict(TorchModule::Lstm, sd) {
            Err(SimError::InvalidNetwork(p)) => {
                let text = p.join("\n");
                assert!(text.contains("missing key \"weight_hh_l1\""), "{text}");
                assert!(text.contains("bias_ih is given without bias_hh"), "{text}");
                assert!(text.contains("bidirectional"), "{text}");
                assert!(text.contains("unexpected key \"junk\""), "{text}");
                assert!(p.len() >= 4, "{p:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rnn_biases_are_added_exactly() {
        let mut sd = Tensors::new();
        sd.insert("weight_ih_l0".into(), t(&[2, 1]));
        sd.insert("weight_hh_l0".into(), t(&[2, 2]));
        sd.insert("bias_ih_l0".into(), (vec![2], vec![Rational::from(1) / Rational::from(3), Rational::from(0)]));
        sd.insert("bias_hh_l0".into(), (vec![2], vec![Rational::from(1) / Rational::from(6), Rational::from(1)]));
        let s = from_state_dict(TorchModule::Rnn(Activation::Relu), sd).unwrap();
        match &s.layers[0] {
            Cell::Simple(n) => {
                assert_eq!(n.b, vec![Rational::from(1) / Rational::from(2), Rational::from(1)]);
                assert_eq!(n.activation, Activation::Relu);
            }
            other => panic!("{other:?}"),
        }
    }
}
