//! A cell's parameters as named parts: exact tensors by name plus string options (activation
//! names, window sizes). Every cell is built from parts and gives its parts back, so the
//! Python constructors, PyTorch state_dicts and the JSON format share one path, and every
//! problem with the parts is collected before anything is built.

use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use malachite::Rational;
use std::collections::BTreeMap;

/// A tensor as (shape, row-major values).
pub type Tensor = (Vec<usize>, Vec<Rational>);
pub type Tensors = BTreeMap<String, Tensor>;
pub type Options = BTreeMap<String, String>;

/// Reads named parts for one cell, recording every problem (prefixed with the cell's label).
pub struct PartsReader<'a> {
    label: String,
    tensors: Tensors,
    options: Options,
    pub problems: &'a mut Vec<String>,
}

fn shape_text(s: &[usize]) -> String {
    let parts: Vec<String> = s.iter().map(|x| x.to_string()).collect();
    if s.len() == 1 { format!("({},)", parts[0]) } else { format!("({})", parts.join(", ")) }
}

fn dim_text(d: Option<usize>) -> String {
    d.map_or("*".into(), |x| x.to_string())
}

impl<'a> PartsReader<'a> {
    pub fn new(label: impl Into<String>, tensors: Tensors, options: Options, problems: &'a mut Vec<String>) -> Self {
        PartsReader { label: label.into(), tensors, options, problems }
    }

    pub fn problem(&mut self, msg: impl AsRef<str>) {
        let m = format!("{}: {}", self.label, msg.as_ref());
        self.problems.push(m);
    }

    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// Shape of a tensor without taking it.
    pub fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.tensors.get(name).map(|t| t.0.clone())
    }

    /// A tensor of the given rank whose dimensions match `want` where given (None = any).
    pub fn tensor(&mut self, name: &str, want: &[Option<usize>]) -> Option<Tensor> {
        let Some((shape, data)) = self.tensors.remove(name) else {
            self.problem(format!("missing parameter {name:?}"));
            return None;
        };
        let fits = shape.len() == want.len() && shape.iter().zip(want).all(|(s, w)| w.is_none_or(|w| *s == w));
        if !fits {
            let w: Vec<String> = want.iter().map(|d| dim_text(*d)).collect();
            let w = if w.len() == 1 { format!("({},)", w[0]) } else { format!("({})", w.join(", ")) };
            self.problem(format!("{name} must have shape {w}, got {}", shape_text(&shape)));
            return None;
        }
        Some((shape, data))
    }

    pub fn matrix(&mut self, name: &str, rows: Option<usize>, cols: Option<usize>) -> Option<RatMatrix> {
        self.tensor(name, &[rows, cols]).map(|(s, d)| RatMatrix::from_dense(s[0], s[1], d))
    }

    pub fn vector(&mut self, name: &str, len: Option<usize>) -> Option<Vec<Rational>> {
        self.tensor(name, &[len]).map(|(_, d)| d)
    }

    /// An optional vector (zeros of `len` when absent).
    pub fn vector_or_zeros(&mut self, name: &str, len: Option<usize>) -> Option<Vec<Rational>> {
        if self.has(name) {
            self.vector(name, len)
        } else {
            Some(vec![Rational::from(0); len.unwrap_or(0)])
        }
    }

    pub fn option(&mut self, name: &str) -> Option<String> {
        self.options.remove(name)
    }

    /// An activation option with its default.
    pub fn activation(&mut self, name: &str, default: Activation) -> Option<Activation> {
        match self.options.remove(name) {
            None => Some(default),
            Some(text) => match Activation::parse(&text) {
                Ok(a) => Some(a),
                Err(e) => {
                    self.problem(format!("{name}: {e}"));
                    None
                }
            },
        }
    }

    /// A positive integer option with its default.
    /// The parts of a recurrent layer h' = act(V h + W x + b): `activation` (default
    /// `default`), V (hidden × hidden, hidden ≥ 1), W (hidden × any), b (zeros if absent).
    /// Returns the hidden size when V's shape gives one, and the parts when all are valid.
    #[allow(clippy::type_complexity)]
    pub fn recurrent(&mut self, default: Activation) -> (Option<usize>, Option<(RatMatrix, RatMatrix, Vec<Rational>, Activation)>) {
        let activation = self.activation("activation", default);
        let hidden = self.shape("V").and_then(|s| (s.len() == 2).then_some(s[0]));
        if hidden == Some(0) {
            self.problem("hidden size must be at least 1 (V has no rows)");
        }
        let v = self.matrix("V", hidden, hidden);
        let w = self.matrix("W", hidden, None);
        let b = self.vector_or_zeros("b", hidden);
        let parts = (|| Some((v?, w?, b?, activation?)))().filter(|(v, ..)| v.rows > 0);
        (hidden, parts)
    }

    pub fn positive(&mut self, name: &str, default: usize) -> Option<usize> {
        match self.options.remove(name) {
            None => Some(default),
            Some(text) => match text.trim().parse::<usize>() {
                Ok(v) if v >= 1 => Some(v),
                _ => {
                    self.problem(format!("{name} must be a positive integer, got {text:?}"));
                    None
                }
            },
        }
    }

    /// Reports every part nobody asked for (misspelt names would otherwise be ignored).
    pub fn finish(mut self) {
        let extra: Vec<String> = self.tensors.keys().map(|k| format!("{k:?}")).collect();
        if !extra.is_empty() {
            self.problem(format!("unexpected parameter(s) {}", extra.join(", ")));
        }
        let extra: Vec<String> = self.options.keys().map(|k| format!("{k:?}")).collect();
        if !extra.is_empty() {
            self.problem(format!("unexpected option(s) {}", extra.join(", ")));
        }
    }
}

/// Builder for a cell's parts (the inverse of reading).
#[derive(Default)]
pub struct PartsWriter {
    pub tensors: Tensors,
    pub options: Options,
}

impl PartsWriter {
    pub fn matrix(&mut self, name: &str, m: &RatMatrix) -> &mut Self {
        self.tensors.insert(name.into(), (vec![m.rows, m.cols], m.to_dense()));
        self
    }
    pub fn vector(&mut self, name: &str, v: &[Rational]) -> &mut Self {
        self.tensors.insert(name.into(), (vec![v.len()], v.to_vec()));
        self
    }
    pub fn tensor(&mut self, name: &str, shape: Vec<usize>, v: &[Rational]) -> &mut Self {
        self.tensors.insert(name.into(), (shape, v.to_vec()));
        self
    }
    pub fn option(&mut self, name: &str, value: impl ToString) -> &mut Self {
        self.options.insert(name.into(), value.to_string());
        self
    }
    pub fn finish(self) -> (Tensors, Options) {
        (self.tensors, self.options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_reports_missing_wrong_and_unexpected_parts() {
        let mut t = Tensors::new();
        t.insert("a".into(), (vec![2, 3], vec![Rational::from(0); 6]));
        t.insert("typo".into(), (vec![1], vec![Rational::from(0)]));
        let mut o = Options::new();
        o.insert("gate".into(), "gelu".into());
        let mut p = Vec::new();
        let mut r = PartsReader::new("layer 0 (lstm)", t, o, &mut p);
        assert!(r.matrix("a", Some(3), None).is_none());
        assert!(r.vector("b", Some(3)).is_none());
        assert!(r.activation("gate", Activation::Sigmoid).is_none());
        r.finish();
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(p[0].contains("must have shape (3, *), got (2, 3)"), "{p:?}");
        assert!(p.iter().all(|m| m.starts_with("layer 0 (lstm): ")));
    }
}
