//! The residual recurrent cell of seed 004 (§2.2, the step towards gated RNNs):
//!
//!   h_t = h_{t−1} + g(x_t, h_{t−1}),   g(x, h) = act(V h + W x + b)
//!
//! g is one simple-RNN transition (Definition 4.1, seed 001). With a piecewise-linear act
//! it runs exactly; saturating replaces act by its limit (tanh → sign, σ → sat_sigmoid).

use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::parts::{PartsReader, PartsWriter};
use malachite::Rational;

#[derive(Debug, Clone, PartialEq)]
pub struct Residual {
    pub v: RatMatrix,
    pub w: RatMatrix,
    pub b: Vec<Rational>,
    pub activation: Activation,
}

impl Residual {
    pub fn read(r: &mut PartsReader<'_>) -> Option<Residual> {
        let (v, w, b, activation) = r.recurrent(Activation::Tanh).1?;
        Some(Residual { v, w, b, activation })
    }

    pub fn write(&self, p: &mut PartsWriter) {
        p.matrix("V", &self.v).matrix("W", &self.w).vector("b", &self.b).option("activation", self.activation.name());
    }

    pub fn saturated(&self) -> Residual {
        Residual { activation: self.activation.saturated(), ..self.clone() }
    }
}
