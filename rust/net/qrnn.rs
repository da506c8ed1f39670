//! The quasi-recurrent cell (QRNN; Bradbury et al. 2016; seed 003, "An uncommon RNN
//! architecture"): the gates are a function of the last k inputs only, never of the state,
//! so all of them can be computed for the whole sequence in parallel; only the cheap
//! elementwise pooling is recurrent.
//!
//!   x^{t,k} = (x_t, x_{t−1}, …, x_{t+1−k})  (inputs before the sequence start are 0)
//!   pre = b + W x^{t,k}          W: (G·H, k·n), column block j multiplies x_{t−j}
//!   z = tanh(pre_z),  f = σ(pre_f),  o = σ(pre_o),  i = σ(pre_i)     (blocks in that order)
//!
//! and one of Bradbury's three poolings (option `pooling`):
//!
//!   "f":   c_t = f ⊙ c_{t−1} + (1 − f) ⊙ z,   h_t = c_t               (G = 2: z, f)
//!   "fo":  c_t = f ⊙ c_{t−1} + (1 − f) ⊙ z,   h_t = o ⊙ c_t           (G = 3: z, f, o)
//!   "ifo": c_t = f ⊙ c_{t−1} + i ⊙ z,         h_t = o ⊙ c_t           (G = 4: z, f, o, i)
//!
//! "ifo" (the default) is the form on the slides of seed 003. The recurrent state is c;
//! h_{t−1} is not used by the update. Saturated: z ∈ {−1, 0, 1}, gates ∈ {0, 1/2, 1}.

use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::parts::{PartsReader, PartsWriter};
use malachite::Rational;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    F,
    Fo,
    Ifo,
}

impl Pooling {
    pub fn parse(s: &str) -> Option<Pooling> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f" => Some(Pooling::F),
            "fo" => Some(Pooling::Fo),
            "ifo" => Some(Pooling::Ifo),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Pooling::F => "f",
            Pooling::Fo => "fo",
            Pooling::Ifo => "ifo",
        }
    }
    /// Number of gate blocks G.
    pub fn gates(self) -> usize {
        match self {
            Pooling::F => 2,
            Pooling::Fo => 3,
            Pooling::Ifo => 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Qrnn {
    pub window: usize,
    pub pooling: Pooling,
    pub hidden: usize,
    pub input: usize,
    /// (G·H, k·n)
    pub weight: RatMatrix,
    pub bias: Vec<Rational>,
    pub gate: Activation,
    pub candidate: Activation,
}

impl Qrnn {
    pub fn read(r: &mut PartsReader<'_>) -> Option<Qrnn> {
        let window = r.positive("window", 1);
        let pooling = match r.option("pooling") {
            None => Some(Pooling::Ifo),
            Some(s) => Pooling::parse(&s).or_else(|| {
                r.problem(format!("pooling must be \"f\", \"fo\" or \"ifo\", got {s:?}"));
                None
            }),
        };
        let gate = r.activation("gate", Activation::Sigmoid);
        let candidate = r.activation("candidate", Activation::Tanh);
        let (window, pooling) = (window?, pooling?);
        let g = pooling.gates();
        let shape = r.shape("weight");
        let (mut rows_ok, mut hidden, mut input) = (true, None, None);
        if let Some(s) = &shape {
            if s.len() == 2 {
                if s[0] == 0 || s[0] % g != 0 {
                    r.problem(format!("weight has {} rows: {g} gate blocks (pooling {:?}) need a positive multiple of {g}", s[0], pooling.name()));
                    rows_ok = false;
                } else {
                    hidden = Some(s[0] / g);
                }
                if s[1] % window != 0 {
                    r.problem(format!("weight has {} columns: a window of {window} inputs needs a multiple of {window}", s[1]));
                    rows_ok = false;
                } else {
                    input = Some(s[1] / window);
                }
            }
        }
        let weight = r.matrix("weight", None, None);
        let bias = r.vector_or_zeros("bias", hidden.map(|h| h * g));
        let (weight, bias, gate, candidate) = (weight?, bias?, gate?, candidate?);
        if !rows_ok {
            return None;
        }
        Some(Qrnn { window, pooling, hidden: hidden?, input: input?, weight, bias, gate, candidate })
    }

    pub fn write(&self, p: &mut PartsWriter) {
        p.matrix("weight", &self.weight).vector("bias", &self.bias);
        p.option("window", self.window).option("pooling", self.pooling.name()).option("gate", self.gate.name()).option("candidate", self.candidate.name());
    }

    pub fn activations(&self) -> Vec<Activation> {
        vec![self.gate, self.candidate]
    }

    /// σ → sat_sigmoid (f, o, i), tanh → sign (z).
    pub fn saturated(&self) -> Qrnn {
        Qrnn { gate: self.gate.saturated(), candidate: self.candidate.saturated(), ..self.clone() }
    }
}
