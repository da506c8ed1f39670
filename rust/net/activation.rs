//! Activation functions of Definition 4.1 (lecture notes, seed 001) and their exact forms.
//!
//! identity(x) = x; relu(x) = max(0, x); slu(x) = min(1, max(0, x)) (the saturated linear
//! unit of Siegelmann–Sontag); step(x) = 1 if x > 0 else 0; tanh; sigmoid(x) = 1/(1+e^−x).
//! The first four are piecewise linear and run exactly; tanh and sigmoid need a float format.

use crate::error::{SimError, SimResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activation {
    Identity,
    Relu,
    Slu,
    Step,
    Tanh,
    Sigmoid,
    Sign,
    SatSigmoid,
    /// tanh and σ by the approximation of `sim::approx_activation` (f32): never a network's
    /// own activation, only in the float plans of a run with `approx_activations=True`
    /// ([`Activation::approximate`]).
    ApproxTanh,
    ApproxSigmoid,
}

impl Activation {
    pub const NAMES: [&'static str; 8] = ["identity", "relu", "slu", "step", "tanh", "sigmoid", "sign", "sat_sigmoid"];

    pub fn parse(name: &str) -> SimResult<Activation> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "identity" | "linear" => Activation::Identity,
            "relu" => Activation::Relu,
            "slu" | "saturated" | "clipped_relu" => Activation::Slu,
            "step" | "heaviside" => Activation::Step,
            "tanh" => Activation::Tanh,
            "sigmoid" | "logistic" => Activation::Sigmoid,
            "sign" | "sgn" => Activation::Sign,
            "sat_sigmoid" | "saturated_sigmoid" => Activation::SatSigmoid,
            _ => {
                return Err(SimError::invalid_network(format!(
                    "unknown activation {name:?}: expected one of {}",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Activation::ApproxTanh => "approx_tanh",
            Activation::ApproxSigmoid => "approx_sigmoid",
            other => Self::NAMES[other as usize],
        }
    }

    /// The activation a run with `approx_activations=True` computes in place of this one:
    /// tanh → approximate tanh, σ → approximate σ, the others unchanged.
    pub fn approximate(self) -> Activation {
        match self {
            Activation::Tanh => Activation::ApproxTanh,
            Activation::Sigmoid => Activation::ApproxSigmoid,
            other => other,
        }
    }

    /// True for the activations the exact engine supports (piecewise linear).
    pub fn is_piecewise_linear(self) -> bool {
        !matches!(self, Activation::Tanh | Activation::Sigmoid | Activation::ApproxTanh | Activation::ApproxSigmoid)
    }

    /// The saturated limit lim_{ρ→∞} act(ρx) (Merrill 2019): sigmoid → sat_sigmoid,
    /// tanh → sign, slu → step; step, sign and sat_sigmoid are their own limit; relu and
    /// identity are positively homogeneous (no finite limit) and stay as they are.
    pub fn saturated(self) -> Activation {
        match self {
            Activation::Sigmoid | Activation::ApproxSigmoid => Activation::SatSigmoid,
            Activation::Tanh | Activation::ApproxTanh => Activation::Sign,
            Activation::Slu => Activation::Step,
            other => other,
        }
    }

    /// Exact-mode check with the message the user sees.
    pub fn require_exact(self) -> SimResult<()> {
        if self.is_piecewise_linear() {
            Ok(())
        } else {
            Err(SimError::Unsupported(format!(
                "activation {} is not piecewise linear, so it has no exact rational run; pick a float \
                 format (dtype=\"f64\", \"f32\", \"bf16\" or \"f16\"), or saturate the network first",
                self.name()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_invalid_network() {
        for n in Activation::NAMES {
            assert_eq!(Activation::parse(n).unwrap().name(), n);
        }
        assert!(matches!(Activation::parse("gelu"), Err(SimError::InvalidNetwork(_))));
        assert!(matches!(Activation::Tanh.require_exact(), Err(SimError::Unsupported(_))));
        assert!(Activation::Slu.require_exact().is_ok());
        assert!(Activation::Sign.require_exact().is_ok() && Activation::SatSigmoid.require_exact().is_ok());
        assert_eq!(Activation::Tanh.saturated(), Activation::Sign);
        assert_eq!(Activation::Sigmoid.saturated(), Activation::SatSigmoid);
        assert_eq!(Activation::Relu.saturated(), Activation::Relu);
        assert_eq!(Activation::Tanh.approximate(), Activation::ApproxTanh);
        assert_eq!(Activation::Sigmoid.approximate().name(), "approx_sigmoid");
        assert_eq!(Activation::Slu.approximate(), Activation::Slu);
        assert!(!Activation::ApproxTanh.is_piecewise_linear());
    }
}
