//! The saved-network format: versioned JSON, exact rationals as strings ("p/q"), lossless.
//!
//! ```json
//! {"format": "rnnsim.network", "version": 1, "kind": "simple_rnn", "activation": "relu",
//!  "V": {"shape": [d, d], "data": ["1", "-1/2", ...]}, "W": {...}, "b": {...}, "h0": {...},
//!  "readout": null | {"w": {...}, "b": {...}}, "meta": {...}}
//! ```
//! `meta` is free-form JSON carried along unchanged (compiled machines record their source).
//! Anything else (wrong format tag, newer version, bad numbers, bad shapes) is an
//! `InvalidNetwork` error listing every problem found.

use crate::error::{SimError, SimResult};
use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::{Linear, SimpleRnn};
use crate::num::rational::{parse_rational, rational_to_string};
use malachite::Rational;
use serde_json::{json, Value};

pub const FORMAT_TAG: &str = "rnnsim.network";
pub const FORMAT_VERSION: u64 = 1;

pub(crate) fn tensor(shape: &[usize], data: &[Rational]) -> Value {
    json!({"shape": shape, "data": data.iter().map(rational_to_string).collect::<Vec<_>>()})
}

/// A matrix: dense `"data"` when at least a quarter of it is nonzero, else
/// `"sparse": [[row, col, "p/q"], ...]` (big compiled networks are very sparse).
pub(crate) fn matrix_tensor(m: &RatMatrix) -> Value {
    if m.nonzeros() * 4 >= m.rows * m.cols {
        return tensor(&[m.rows, m.cols], &m.to_dense());
    }
    let entries: Vec<Value> = m.triples().map(|(i, j, v)| json!([i, j, rational_to_string(v)])).collect();
    json!({"shape": [m.rows, m.cols], "sparse": entries})
}

/// Serialises a network (with optional metadata) to the JSON text format.
pub fn to_json(net: &SimpleRnn, meta: Option<&Value>) -> String {
    let readout = match &net.readout {
        None => Value::Null,
        Some(r) => json!({"w": matrix_tensor(&r.w), "b": tensor(&[r.b.len()], &r.b)}),
    };
    let v = json!({
        "format": FORMAT_TAG,
        "version": FORMAT_VERSION,
        "kind": "simple_rnn",
        "activation": net.activation.name(),
        "V": matrix_tensor(&net.v),
        "W": matrix_tensor(&net.w),
        "b": tensor(&[net.b.len()], &net.b),
        "h0": tensor(&[net.h0.len()], &net.h0),
        "readout": readout,
        "meta": meta.cloned().unwrap_or(Value::Null),
    });
    serde_json::to_string(&v).expect("serialising a JSON value cannot fail")
}

/// Reads one tensor field, recording problems; returns (shape, values).
pub(crate) fn read_tensor(obj: &Value, key: &str, problems: &mut Vec<String>) -> Option<(Vec<usize>, Vec<Rational>)> {
    let Some(t) = obj.get(key) else {
        problems.push(format!("missing field {key:?}"));
        return None;
    };
    let shape: Option<Vec<usize>> = t
        .get("shape")
        .and_then(|s| s.as_array())
        .and_then(|a| a.iter().map(|x| x.as_u64().map(|u| u as usize)).collect());
    if let (Some(shape), Some(sparse)) = (&shape, t.get("sparse").and_then(|d| d.as_array())) {
        return read_sparse(key, shape, sparse, problems);
    }
    let data = t.get("data").and_then(|d| d.as_array());
    let (Some(shape), Some(data)) = (shape, data) else {
        problems.push(format!("field {key:?} must be {{\"shape\": [..], \"data\": [..]}}"));
        return None;
    };
    let want: usize = shape.iter().product();
    if data.len() != want {
        problems.push(format!("field {key:?} has {} values but shape {shape:?} needs {want}", data.len()));
        return None;
    }
    let mut values = Vec::with_capacity(data.len());
    let before = problems.len();
    for (i, x) in data.iter().enumerate() {
        let parsed = match x {
            Value::String(s) => parse_rational(s),
            Value::Number(n) if n.is_i64() => Ok(Rational::from(n.as_i64().unwrap_or(0))),
            other => Err(format!("{other} is not a rational string")),
        };
        match parsed {
            Ok(r) => values.push(r),
            Err(e) if problems.len() - before < 5 => problems.push(format!("{key}[{i}]: {e}")),
            Err(_) => {}
        }
    }
    (problems.len() == before).then_some((shape, values))
}

/// Reads `"sparse": [[row, col, "p/q"], ...]` into dense values (checked against the shape).
fn read_sparse(key: &str, shape: &[usize], entries: &[Value], problems: &mut Vec<String>) -> Option<(Vec<usize>, Vec<Rational>)> {
    let [rows, cols] = shape else {
        problems.push(format!("field {key:?}: a sparse tensor must be 2-D"));
        return None;
    };
    if rows.saturating_mul(*cols) > 1 << 31 {
        problems.push(format!("field {key:?}: shape {shape:?} is too large"));
        return None;
    }
    let mut values = vec![Rational::from(0); rows * cols];
    let before = problems.len();
    for (n, e) in entries.iter().enumerate() {
        let parsed = e.as_array().and_then(|a| match a.as_slice() {
            [i, j, Value::String(v)] => Some((i.as_u64()? as usize, j.as_u64()? as usize, parse_rational(v).ok()?)),
            _ => None,
        });
        match parsed {
            Some((i, j, v)) if i < *rows && j < *cols => values[i * cols + j] = v,
            _ if problems.len() - before < 5 => problems.push(format!("{key} sparse entry {n}: expected [row, col, \"p/q\"] inside shape {shape:?}")),
            _ => {}
        }
    }
    (problems.len() == before).then(|| (shape.to_vec(), values))
}

fn matrix(shape: &[usize], data: Vec<Rational>) -> RatMatrix {
    match shape {
        [r, c] => RatMatrix::from_dense(*r, *c, data),
        _ => RatMatrix::from_dense(data.len(), 1, data),
    }
}

/// Parses the JSON text format; returns the network and its metadata.
pub fn from_json(text: &str) -> SimResult<(SimpleRnn, Value)> {
    let v = parse_header(text)?;
    let mut problems = Vec::new();
    if v.get("kind").and_then(|k| k.as_str()) != Some("simple_rnn") {
        problems.push(format!("unknown network kind {:?}", v.get("kind")));
    }
    simple_from_value(&v, problems)
}

/// Parses the text and checks the format tag and version (shared by every network kind).
pub(crate) fn parse_header(text: &str) -> SimResult<Value> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| SimError::invalid_network(format!("not a saved rnnsim network (invalid JSON: {e})")))?;
    if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT_TAG) {
        return Err(SimError::invalid_network(format!(
            "not a saved rnnsim network (expected \"format\": \"{FORMAT_TAG}\")"
        )));
    }
    match v.get("version").and_then(|x| x.as_u64()) {
        Some(FORMAT_VERSION) => {}
        other => {
            return Err(SimError::invalid_network(format!(
                "unsupported network file version {other:?} (this rnnsim reads version {FORMAT_VERSION})"
            )))
        }
    }
    Ok(v)
}

fn simple_from_value(v: &Value, mut problems: Vec<String>) -> SimResult<(SimpleRnn, Value)> {
    let activation = match Activation::parse(v.get("activation").and_then(|a| a.as_str()).unwrap_or("")) {
        Ok(a) => Some(a),
        Err(e) => {
            problems.push(e.to_string());
            None
        }
    };
    let vv = read_tensor(v, "V", &mut problems);
    let ww = read_tensor(v, "W", &mut problems);
    let bb = read_tensor(v, "b", &mut problems);
    let h0 = read_tensor(v, "h0", &mut problems);
    let readout = match v.get("readout") {
        None | Some(Value::Null) => None,
        Some(r) => Some((read_tensor(r, "w", &mut problems), read_tensor(r, "b", &mut problems))),
    };
    if !problems.is_empty() {
        return Err(SimError::InvalidNetwork(problems));
    }
    let (Some(activation), Some(vv), Some(ww), Some(bb), Some(h0)) = (activation, vv, ww, bb, h0) else {
        return Err(SimError::invalid_network("incomplete network file"));
    };
    let readout = match readout {
        Some((Some(w), Some(b))) => Some(Linear { w: matrix(&w.0, w.1), b: b.1 }),
        _ => None,
    };
    let net = SimpleRnn::new(matrix(&vv.0, vv.1), matrix(&ww.0, ww.1), bb.1, Some(h0.1), activation, readout)?;
    Ok((net, v.get("meta").cloned().unwrap_or(Value::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Rational {
        parse_rational(s).unwrap()
    }

    fn sample() -> SimpleRnn {
        SimpleRnn::new(
            RatMatrix::from_rows(vec![vec![q("1/3"), q("-2")], vec![q("0"), q("123456789012345678901234567890/7")]]),
            RatMatrix::from_rows(vec![vec![q("1")], vec![q("-1/2")]]),
            vec![q("1/4"), q("0")],
            Some(vec![q("1"), q("0")]),
            Activation::Slu,
            Some(Linear { w: RatMatrix::from_rows(vec![vec![q("1"), q("-1")]]), b: vec![q("1/2")] }),
        )
        .unwrap()
    }

    #[test]
    fn round_trip_is_lossless() {
        let net = sample();
        let meta = json!({"source": "test"});
        let (back, m) = from_json(&to_json(&net, Some(&meta))).unwrap();
        assert_eq!(back, net);
        assert_eq!(m, meta);
    }

    #[test]
    fn corrupted_files_are_invalid_network() {
        let good = to_json(&sample(), None);
        let cases = [
            "not json".to_string(),
            good.replace("rnnsim.network", "something.else"),
            good.replace("\"version\":1", "\"version\":99"),
            good.replace("\"1/3\"", "\"abc\""),
            good.replace("\"slu\"", "\"gelu\""),
            good[..good.len() / 2].to_string(),
        ];
        for c in cases {
            assert!(matches!(from_json(&c), Err(SimError::InvalidNetwork(_))), "{c}");
        }
    }
}
