//! Custom binary float formats `FloatFormat(mantissa_bits, exponent_bits)`, IEEE style.
//!
//! `mantissa_bits` is the number of *stored* fraction bits and `exponent_bits` the width of
//! the biased exponent field, as in IEEE 754-2019 §3.6: precision p = mantissa_bits + 1,
//! emax = 2^(exponent_bits−1) − 1, emin = 1 − emax, subnormals below 2^emin, ±∞ past
//! (2 − 2^(1−p))·2^emax. So (10, 5) is binary16, (7, 8) bfloat16, (23, 8) binary32,
//! (52, 11) binary64 and (112, 15) binary128. Accepted: 1 ≤ mantissa_bits ≤ 127 (p = 2..128)
//! and 2 ≤ exponent_bits ≤ 20. The string form is `"fp(M,E)"` (also `"fp(mantissa_bits=M,
//! exponent_bits=E)"` and `"FloatFormat(M, E)"`, case and spaces ignored).
//!
//! A format is *interned*: [`CustomFormat::info`] returns a `&'static FormatInfo` shared by
//! every value of the format (at most 127 × 19 distinct formats can ever exist, each a few
//! bytes), which is how a `Copy` float value can carry its runtime format (see
//! `num::custom_float`). It also decides once how the format computes ([`Path`]).

use crate::error::{SimError, SimResult};
use crate::num::round::BinaryFormat;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A custom float format: stored fraction bits and exponent field width (IEEE style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CustomFormat {
    pub mantissa_bits: u32,
    pub exponent_bits: u32,
}

/// How one operation (a multiply or an add) of a format is computed; each is correctly
/// rounded (round to nearest, ties to even; subnormals; overflow to ±∞).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// The format is binary64 itself: hardware f64 operations.
    Hardware64,
    /// p ≤ 25 and exponent_bits ≤ 9: the operation in f64, then one rounding to the format
    /// (`round_f64_in`). A product of two p-bit values is exact in f64 (2p ≤ 53 bits, and
    /// with exponents at most ±2^8 + 26 it neither overflows nor underflows); a sum is
    /// rounded to 53 bits first, which is innocuous because 53 ≥ 2p + 2 (Figueroa 1995).
    /// Subnormal sums are exact (both operands are multiples of the subnormal quantum).
    F64ThenRound,
    /// Anything else: malachite's arbitrary-precision `Float`: the sum rounded to p bits,
    /// the product computed exactly (2p bits), then rounded to the format with its
    /// exponent range (`custom_float::round_to`).
    Big,
}

/// Everything the arithmetic needs about an interned format.
#[derive(Debug)]
pub struct FormatInfo {
    pub spec: CustomFormat,
    pub format: BinaryFormat,
    /// `"fp(M,E)"`
    pub name: &'static str,
    pub path: Path,
    /// Every value is an f64 (p ≤ 53, exponent range inside f64's): values are stored as
    /// f64, and tanh/sigmoid are the f64 ones rounded once, as for the builtin formats.
    pub fits_in_f64: bool,
}

pub const MANTISSA_BITS: std::ops::RangeInclusive<u32> = 1..=127;
pub const EXPONENT_BITS: std::ops::RangeInclusive<u32> = 2..=20;

static INTERNED: OnceLock<Mutex<HashMap<CustomFormat, &'static FormatInfo>>> = OnceLock::new();

impl CustomFormat {
    /// Checks the ranges (every problem listed in one `InvalidInput`).
    pub fn new(mantissa_bits: i64, exponent_bits: i64) -> SimResult<CustomFormat> {
        let mut p = Vec::new();
        let (m_lo, m_hi) = (*MANTISSA_BITS.start(), *MANTISSA_BITS.end());
        let (e_lo, e_hi) = (*EXPONENT_BITS.start(), *EXPONENT_BITS.end());
        if !(i64::from(m_lo)..=i64::from(m_hi)).contains(&mantissa_bits) {
            p.push(format!("FloatFormat: mantissa_bits must be between {m_lo} and {m_hi} (stored fraction bits; 10 for f16), got {mantissa_bits}"));
        }
        if !(i64::from(e_lo)..=i64::from(e_hi)).contains(&exponent_bits) {
            p.push(format!("FloatFormat: exponent_bits must be between {e_lo} and {e_hi} (5 for f16, 8 for f32), got {exponent_bits}"));
        }
        if p.is_empty() {
            Ok(CustomFormat { mantissa_bits: mantissa_bits as u32, exponent_bits: exponent_bits as u32 })
        } else {
            Err(SimError::InvalidInput(p))
        }
    }

    /// Parses `"fp(M,E)"`, `"fp(mantissa_bits=M, exponent_bits=E)"` or `"FloatFormat(M, E)"`;
    /// `None` when the text has neither prefix (so it may be another dtype name).
    pub fn parse(text: &str) -> Option<SimResult<CustomFormat>> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        let rest = t.strip_prefix("floatformat").or_else(|| t.strip_prefix("fp"))?;
        let bad = || SimError::invalid_input(format!("cannot read the float format {text:?}: expected \"fp(M,E)\" with M stored mantissa bits and E exponent bits, e.g. \"fp(10,5)\" for f16"));
        let Some(inner) = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) else { return Some(Err(bad())) };
        let parts: Vec<&str> = inner.split(',').collect();
        if parts.len() != 2 {
            return Some(Err(bad()));
        }
        let num = |s: &str, key: &str| s.strip_prefix(key).and_then(|s| s.strip_prefix('=')).unwrap_or(s).parse::<i64>().ok();
        match (num(parts[0], "mantissa_bits"), num(parts[1], "exponent_bits")) {
            (Some(m), Some(e)) => Some(CustomFormat::new(m, e)),
            _ => Some(Err(bad())),
        }
    }

    pub fn binary_format(self) -> BinaryFormat {
        BinaryFormat::ieee(self.mantissa_bits, self.exponent_bits)
    }

    /// The interned description of the format (created on first use).
    pub fn info(self) -> &'static FormatInfo {
        let map = INTERNED.get_or_init(|| Mutex::new(HashMap::new()));
        let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(self).or_insert_with(|| {
            let format = self.binary_format();
            let path = if format == BinaryFormat::F64 {
                Path::Hardware64
            } else if format.precision <= 25 && self.exponent_bits <= 9 {
                Path::F64ThenRound
            } else {
                Path::Big
            };
            let name = Box::leak(format!("fp({},{})", self.mantissa_bits, self.exponent_bits).into_boxed_str());
            Box::leak(Box::new(FormatInfo { spec: self, format, name, path, fits_in_f64: format.fits_in_f64() }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_string_forms_and_checks_ranges() {
        let f16 = CustomFormat { mantissa_bits: 10, exponent_bits: 5 };
        for s in ["fp(10,5)", "FP( 10 , 5 )", "FloatFormat(10, 5)", "fp(mantissa_bits=10, exponent_bits=5)"] {
            assert_eq!(CustomFormat::parse(s).unwrap().unwrap(), f16, "{s}");
        }
        assert!(CustomFormat::parse("f16").is_none());
        assert!(matches!(CustomFormat::parse("fp(10)"), Some(Err(SimError::InvalidInput(_)))));
        assert!(matches!(CustomFormat::parse("fp10,5"), Some(Err(SimError::InvalidInput(_)))));
        match CustomFormat::new(0, 40) {
            Err(SimError::InvalidInput(p)) => assert_eq!(p.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn paths_and_interning() {
        let path = |m, e| CustomFormat::new(m, e).unwrap().info().path;
        assert_eq!(path(52, 11), Path::Hardware64);
        assert_eq!(path(23, 8), Path::F64ThenRound);
        assert_eq!(path(24, 9), Path::F64ThenRound);
        assert_eq!(path(25, 8), Path::Big);
        assert_eq!(path(10, 10), Path::Big);
        assert_eq!(path(112, 15), Path::Big);
        let a = CustomFormat::new(3, 4).unwrap().info();
        assert!(std::ptr::eq(a, CustomFormat::new(3, 4).unwrap().info()));
        assert_eq!(a.name, "fp(3,4)");
        assert!(a.fits_in_f64 && !CustomFormat::new(60, 15).unwrap().info().fits_in_f64);
    }
}
