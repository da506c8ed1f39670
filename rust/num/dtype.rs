//! The number format a run computes in: `"exact"`, one of the builtin float formats, or a
//! custom one `"fp(M,E)"` (see `custom_format`).

use crate::error::{SimError, SimResult};
use crate::num::custom_format::CustomFormat;

/// Which arithmetic a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// Arbitrary-precision rationals (integer numerators over a shared denominator).
    Exact,
    F64,
    F32,
    Bf16,
    F16,
    /// `FloatFormat(mantissa_bits, exponent_bits)`, computed by `custom_float::Custom`.
    Custom(CustomFormat),
}

impl Dtype {
    pub const NAMES: [&'static str; 5] = ["exact", "f64", "f32", "bf16", "f16"];

    /// Parses `"exact" | "f64" | "f32" | "bf16" | "f16"` (also `float64`, `float32`, `float16`,
    /// `bfloat16`, `double`, `single`, `half`), or a custom format `"fp(M,E)"`
    /// (`CustomFormat::parse`).
    pub fn parse(name: &str) -> SimResult<Dtype> {
        if let Some(custom) = CustomFormat::parse(name) {
            return custom.map(Dtype::Custom);
        }
        let lower = name.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "exact" | "rational" | "fraction" => Dtype::Exact,
            "f64" | "float64" | "double" => Dtype::F64,
            "f32" | "float32" | "single" => Dtype::F32,
            "bf16" | "bfloat16" => Dtype::Bf16,
            "f16" | "float16" | "half" => Dtype::F16,
            _ => {
                return Err(SimError::invalid_input(format!(
                    "unknown dtype {name:?}: expected one of {} or a custom format \"fp(M,E)\"",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    /// Significand bits (with the implicit bit) of a float format; None for exact.
    pub fn precision(self) -> Option<u32> {
        match self {
            Dtype::Exact => None,
            Dtype::F64 => Some(53),
            Dtype::F32 => Some(24),
            Dtype::Bf16 => Some(8),
            Dtype::F16 => Some(11),
            Dtype::Custom(c) => Some(c.mantissa_bits + 1),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Exact => "exact",
            Dtype::F64 => "f64",
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
            Dtype::Custom(c) => c.info().name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_rejects_unknown() {
        assert_eq!(Dtype::parse("exact").unwrap(), Dtype::Exact);
        assert_eq!(Dtype::parse("float16").unwrap(), Dtype::F16);
        assert_eq!(Dtype::parse("BF16").unwrap(), Dtype::Bf16);
        let e = Dtype::parse("f8").unwrap_err();
        assert!(matches!(e, SimError::InvalidInput(_)));
        assert!(e.to_string().contains("f8"));
        let c = Dtype::parse("fp(3, 4)").unwrap();
        assert_eq!(c, Dtype::Custom(CustomFormat { mantissa_bits: 3, exponent_bits: 4 }));
        assert_eq!(c.name(), "fp(3,4)");
        assert!(matches!(Dtype::parse("fp(0,4)"), Err(SimError::InvalidInput(_))));
    }
}
