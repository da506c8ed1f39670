//! The simple (Elman) RNN of Definition 4.1 (lecture notes, seed 001) with an affine readout:
//!
//!   h_0 = s,   h_t = σ(V h_{t−1} + W x_t + b),   y_t = w h_t + c   (read at every t ≥ 0).
//!
//! All parameters are exact rationals; float runs round them to their format.

use crate::error::{SimError, SimResult};
use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use malachite::Rational;

/// Affine readout y = w h + c (eq. 4.5), w of shape (out, d).
#[derive(Debug, Clone, PartialEq)]
pub struct Linear {
    pub w: RatMatrix,
    pub b: Vec<Rational>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimpleRnn {
    pub v: RatMatrix,
    pub w: RatMatrix,
    pub b: Vec<Rational>,
    pub h0: Vec<Rational>,
    pub activation: Activation,
    pub readout: Option<Linear>,
}

/// Shapes of the parameters as given, for validation before any value is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shapes {
    pub v: Vec<usize>,
    pub w: Vec<usize>,
    pub b: Vec<usize>,
    pub h0: Option<Vec<usize>>,
    pub readout: Option<(Vec<usize>, Vec<usize>)>,
}

/// Every shape problem at once (empty when the shapes fit together).
pub fn shape_problems(s: &Shapes) -> Vec<String> {
    let mut p = Vec::new();
    let d = match s.v.as_slice() {
        [r, c] if r == c && *r > 0 => Some(*r),
        [r, c] => {
            p.push(format!("V must be square with at least one row, got shape ({r}, {c})"));
            (*r > 0).then_some(*r)
        }
        other => {
            p.push(format!("V must be a 2-D matrix, got {} dimension(s)", other.len()));
            None
        }
    };
    match (s.w.as_slice(), d) {
        ([r, _], Some(d)) if *r != d => p.push(format!("W must have {d} rows (hidden size), got {r}")),
        ([_, _], _) => {}
        (other, _) => p.push(format!("W must be a 2-D matrix (hidden, input), got {} dimension(s)", other.len())),
    }
    let mut vec_check = |name: &str, shape: &[usize], want: Option<usize>| match (shape, want) {
        ([n], Some(d)) if *n != d => p.push(format!("{name} must have length {d} (hidden size), got {n}")),
        ([_], _) => {}
        (other, _) => p.push(format!("{name} must be a vector, got {} dimension(s)", other.len())),
    };
    vec_check("b", &s.b, d);
    if let Some(h0) = &s.h0 {
        vec_check("h0", h0, d);
    }
    if let Some((rw, rb)) = &s.readout {
        let out = match rw.as_slice() {
            [o, c] => {
                if let Some(d) = d {
                    if *c != d {
                        p.push(format!("readout w must have {d} columns (hidden size), got {c}"));
                    }
                }
                Some(*o)
            }
            other => {
                p.push(format!("readout w must be a 2-D matrix (out, hidden), got {} dimension(s)", other.len()));
                None
            }
        };
        match (rb.as_slice(), out) {
            ([n], Some(o)) if *n != o => p.push(format!("readout b must have length {o}, got {n}")),
            ([_], _) => {}
            (other, _) => p.push(format!("readout b must be a vector, got {} dimension(s)", other.len())),
        }
    }
    p
}

impl SimpleRnn {
    /// Validates shapes (every problem at once) and builds the network; h0 defaults to 0.
    pub fn new(
        v: RatMatrix,
        w: RatMatrix,
        b: Vec<Rational>,
        h0: Option<Vec<Rational>>,
        activation: Activation,
        readout: Option<Linear>,
    ) -> SimResult<Self> {
        let shapes = Shapes {
            v: vec![v.rows, v.cols],
            w: vec![w.rows, w.cols],
            b: vec![b.len()],
            h0: h0.as_ref().map(|h| vec![h.len()]),
            readout: readout.as_ref().map(|r| (vec![r.w.rows, r.w.cols], vec![r.b.len()])),
        };
        let problems = shape_problems(&shapes);
        if !problems.is_empty() {
            return Err(SimError::InvalidNetwork(problems));
        }
        let d = v.rows;
        let h0 = h0.unwrap_or_else(|| vec![Rational::from(0); d]);
        Ok(SimpleRnn { v, w, b, h0, activation, readout })
    }

    pub fn hidden_size(&self) -> usize {
        self.v.rows
    }

    pub fn input_size(&self) -> usize {
        self.w.cols
    }

    pub fn output_size(&self) -> usize {
        self.readout.as_ref().map_or(0, |r| r.w.rows)
    }

    /// Nonzero entries of V, W and b (the readout not included).
    pub fn nonzero_weights(&self) -> usize {
        self.v.nonzeros() + self.w.nonzeros() + self.b.iter().filter(|x| **x != 0u32).count()
    }

    /// Same network with another start state (validated length).
    pub fn with_h0(&self, h0: Vec<Rational>) -> SimResult<Self> {
        if h0.len() != self.hidden_size() {
            return Err(SimError::invalid_input(format!(
                "h0 must have length {} (hidden size), got {}",
                self.hidden_size(),
                h0.len()
            )));
        }
        Ok(SimpleRnn { h0, ..self.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_every_shape_problem_at_once() {
        let s = Shapes {
            v: vec![2, 3],
            w: vec![4],
            b: vec![2, 2],
            h0: Some(vec![5]),
            readout: Some((vec![1, 7], vec![3])),
        };
        let p = shape_problems(&s);
        assert_eq!(p.len(), 6, "{p:?}");
    }

    #[test]
    fn good_shapes_build_and_default_h0_is_zero() {
        let n = SimpleRnn::new(
            RatMatrix::zeros(3, 3),
            RatMatrix::zeros(3, 2),
            vec![Rational::from(0); 3],
            None,
            Activation::Relu,
            None,
        )
        .unwrap();
        assert_eq!(n.h0, vec![Rational::from(0); 3]);
        assert_eq!((n.hidden_size(), n.input_size(), n.output_size()), (3, 2, 0));
        let bad = SimpleRnn::new(RatMatrix::zeros(3, 3), RatMatrix::zeros(2, 2), vec![], None, Activation::Relu, None);
        match bad {
            Err(SimError::InvalidNetwork(p)) => assert_eq!(p.len(), 2),
            other => panic!("{other:?}"),
        }
    }
}
