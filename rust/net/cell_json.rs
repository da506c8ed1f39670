//! Saving deep and gated networks in the "rnnsim.network" version 1 JSON format
//! (`net::json`), with `"kind"` the network's public kind ("lstm", "gru", "stacked", ...)
//! and one entry per layer, each a cell kind with its named parts:
//!
//! ```json
//! {"format": "rnnsim.network", "version": 1, "kind": "lstm",
//!  "layers": [{"kind": "lstm", "options": {"gate": "sigmoid", ...},
//!              "tensors": {"weight_ih": {"shape": [4H, n], "data": ["1/2", ...]}, ...}}],
//!  "meta": {...}}
//! ```
//! Rationals are strings, so saving is lossless. Corrupted files raise `InvalidNetwork`
//! listing every problem (the same checks as building the network from Python).

use crate::error::{SimError, SimResult};
use crate::net::cell::Cell;
use crate::net::json::{parse_header, read_tensor, tensor, FORMAT_TAG, FORMAT_VERSION};
use crate::net::parts::{Options, Tensors};
use crate::net::stacked::Stack;
use serde_json::{json, Map, Value};

/// The JSON text of a network (with optional metadata).
pub fn stack_to_json(stack: &Stack, meta: Option<&Value>) -> String {
    let layers: Vec<Value> = stack
        .layers
        .iter()
        .map(|cell| {
            let (tensors, options) = cell.parts();
            let t: Map<String, Value> = tensors.iter().map(|(k, (s, d))| (k.clone(), tensor(s, d))).collect();
            json!({"kind": cell.kind(), "options": options, "tensors": t})
        })
        .collect();
    let v = json!({
        "format": FORMAT_TAG,
        "version": FORMAT_VERSION,
        "kind": stack.label,
        "layers": layers,
        "meta": meta.cloned().unwrap_or(Value::Null),
    });
    serde_json::to_string(&v).expect("serialising a JSON value cannot fail")
}

/// The `"kind"` of a saved network without building it (None if the text is not one).
pub fn saved_kind(text: &str) -> Option<String> {
    let v = parse_header(text).ok()?;
    v.get("kind").and_then(|k| k.as_str()).map(str::to_string)
}

/// Parses a saved layered network: (network, metadata).
pub fn stack_from_json(text: &str) -> SimResult<(Stack, Value)> {
    let v = parse_header(text)?;
    let mut p = Vec::new();
    let label = match v.get("kind").and_then(|k| k.as_str()) {
        Some(k) => k.to_string(),
        None => {
            p.push("missing field \"kind\"".to_string());
            String::new()
        }
    };
    let Some(layers) = v.get("layers").and_then(|l| l.as_array()) else {
        p.push("missing field \"layers\" (a list of layers)".into());
        return Err(SimError::InvalidNetwork(p));
    };
    let mut cells = Vec::with_capacity(layers.len());
    for (k, layer) in layers.iter().enumerate() {
        let kind = layer.get("kind").and_then(|x| x.as_str()).unwrap_or("").to_string();
        let label_k = format!("layer {k} ({kind})");
        let mut options = Options::new();
        match layer.get("options") {
            Some(Value::Object(o)) => {
                for (key, val) in o {
                    match val {
                        Value::String(s) => {
                            options.insert(key.clone(), s.clone());
                        }
                        Value::Number(n) => {
                            options.insert(key.clone(), n.to_string());
                        }
                        _ => p.push(format!("{label_k}: option {key:?} must be a string")),
                    }
                }
            }
            None | Some(Value::Null) => {}
            _ => p.push(format!("{label_k}: \"options\" must be an object")),
        }
        let mut tensors = Tensors::new();
        match layer.get("tensors") {
            Some(Value::Object(o)) => {
                for key in o.keys() {
                    let mut tp = Vec::new();
                    if let Some(t) = read_tensor(layer.get("tensors").expect("checked"), key, &mut tp) {
                        tensors.insert(key.clone(), t);
                    }
                    p.extend(tp.into_iter().map(|m| format!("{label_k}: {m}")));
                }
            }
            _ => p.push(format!("{label_k}: missing \"tensors\" object")),
        }
        if let Some(c) = Cell::from_parts(&kind, &label_k, tensors, options, &mut p) {
            cells.push(c);
        }
    }
    if !p.is_empty() {
        return Err(SimError::InvalidNetwork(p));
    }
    let stack = Stack::new(label, cells)?;
    Ok((stack, v.get("meta").cloned().unwrap_or(Value::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use malachite::Rational;

    fn stack() -> Stack {
        let mut t = Tensors::new();
        let vals = |n: usize| (0..n).map(|i| Rational::from_signeds(i as i64 - 3, 7)).collect::<Vec<_>>();
        t.insert("weight_ih".into(), (vec![8, 3], vals(24)));
        t.insert("weight_hh".into(), (vec![8, 2], vals(16)));
        let mut o = Options::new();
        o.insert("gate".into(), "step".into());
        let mut p = Vec::new();
        let lstm = Cell::from_parts("lstm", "l", t, Options::new(), &mut p).unwrap();
        let mut t2 = Tensors::new();
        t2.insert("weight".into(), (vec![4, 4], vals(16)));
        o.insert("window".into(), "2".into());
        o.insert("pooling".into(), "f".into());
        let qrnn = Cell::from_parts("qrnn", "q", t2, o, &mut p).unwrap();
        Stack::new("stacked", vec![lstm, qrnn]).unwrap()
    }

    #[test]
    fn round_trip_is_lossless_and_keeps_the_label() {
        let s = stack();
        let meta = json!({"note": 1});
        let text = stack_to_json(&s, Some(&meta));
        assert_eq!(saved_kind(&text).as_deref(), Some("stacked"));
        let (back, m) = stack_from_json(&text).unwrap();
        assert_eq!(back, s);
        assert_eq!(m, meta);
    }

    #[test]
    fn corrupted_files_list_their_problems() {
        let text = stack_to_json(&stack(), None);
        for bad in [text.replace("\"step\"", "\"gelu\""), text.replace("\"weight_hh\"", "\"weight_hx\""), text.replace("\"layers\"", "\"x\""), text.replace("\"pooling\":\"f\"", "\"pooling\":[1]")] {
            assert!(matches!(stack_from_json(&bad), Err(SimError::InvalidNetwork(_))), "{bad}");
        }
        match stack_from_json(&text.replace("\"step\"", "\"gelu\"").replace("\"weight_hh\"", "\"weight_hx\"")) {
            Err(SimError::InvalidNetwork(p)) => assert!(p.len() >= 3, "{p:?}"),
            other => panic!("{other:?}"),
        }
    }
}
