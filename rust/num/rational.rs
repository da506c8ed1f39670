//! Exact rational values at the boundary: parsing `"p/q"` strings, taking floats at their
//! exact binary value, and printing.

use malachite::base::num::conversion::traits::FromStringBase;
use malachite::{Natural, Rational};
use std::str::FromStr;

/// An integer in decimal or in hexadecimal with a `0x` prefix (`-0x1f`), as Python's `hex()`.
fn parse_integer_text(t: &str) -> Option<Rational> {
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t),
    };
    if body.starts_with(['-', '+']) {
        return None;
    }
    let v = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
            Rational::from(Natural::from_string_base(16, hex)?)
        }
        Some(_) => return None,
        None => Rational::from_str(body).ok()?,
    };
    Some(if neg { -v } else { v })
}

/// Parses an integer, `"p/q"` (decimal or `0x` hexadecimal parts), or a finite decimal/float literal (`"0.1"`, `"1e-3"`) into an
/// exact rational. A decimal literal means its exact decimal value (0.1 = 1/10), not the
/// nearest double. Errors are messages naming the offending text.
pub fn parse_rational(text: &str) -> Result<Rational, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty string is not a number".into());
    }
    if let Some((p, q)) = s.split_once('/') {
        let (p, q) = (p.trim(), q.trim());
        let num = parse_integer_text(p).ok_or_else(|| format!("{text:?} is not a rational p/q"))?;
        let den = parse_integer_text(q).ok_or_else(|| format!("{text:?} is not a rational p/q"))?;
        if p.contains('/') || q.contains('/') || q.starts_with('-') {
            return Err(format!("{text:?} is not a rational p/q"));
        }
        if den == 0u32 {
            return Err(format!("{text:?} has a zero denominator"));
        }
        return Ok(num / den);
    }
    if let Some(r) = parse_integer_text(s).or_else(|| Rational::from_str(s).ok()) {
        return Ok(r);
    }
    parse_decimal(s).ok_or_else(|| format!("{text:?} is not a number"))
}

/// Exact value of a decimal literal with optional exponent: `[-]digits[.digits][e[-]digits]`.
fn parse_decimal(s: &str) -> Option<Rational> {
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i64>().ok()?),
        None => (s, 0),
    };
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part.chars().chain(frac_part.chars()).all(|c| c.is_ascii_digit()) || exp.abs() > 100_000 {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    let mut value = Rational::from_str(if digits.is_empty() { "0" } else { &digits }).ok()?;
    let scale = exp - frac_part.len() as i64;
    let ten = Rational::from(10u32);
    let pow = (0..scale.unsigned_abs()).fold(Rational::from(1u32), |acc, _| acc * &ten);
    value = if scale >= 0 { value * pow } else { value / pow };
    Some(if neg { -value } else { value })
}

/// The exact binary value of a finite float; NaN and infinities are errors.
pub fn rational_from_f64(v: f64) -> Result<Rational, String> {
    Rational::try_from(v).map_err(|_| {
        if v.is_nan() { "NaN".to_string() } else { format!("{v} (not finite)") }
    })
}

/// `"p/q"` in lowest terms, or `"p"` for integers (the form used in saved networks).
pub fn rational_to_string(r: &Rational) -> String {
    r.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fractions_integers_and_decimals_exactly() {
        assert_eq!(parse_rational("3/6").unwrap(), Rational::from(1) / Rational::from(2));
        assert_eq!(parse_rational("-7").unwrap(), Rational::from(-7));
        assert_eq!(parse_rational("0.1").unwrap(), Rational::from(1) / Rational::from(10));
        assert_eq!(parse_rational("-2.5e-1").unwrap(), Rational::from(-1) / Rational::from(4));
        assert_eq!(parse_rational(" 12 / 4 ").unwrap(), Rational::from(3));
        assert_eq!(parse_rational("-0x1f/0x2").unwrap(), Rational::from(-31) / Rational::from(2));
        assert_eq!(parse_rational("0xff").unwrap(), Rational::from(255));
    }

    #[test]
    fn rejects_garbage_with_a_message() {
        for bad in ["", "abc", "1/0", "1/2/3", "1/-2", "nan", "--1", "1e", "0x/1", "0xg"] {
            let e = parse_rational(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
    }

    #[test]
    fn floats_are_their_binary_value() {
        let r = rational_from_f64(0.1).unwrap();
        assert_ne!(r, Rational::from(1) / Rational::from(10));
        assert_eq!(r, Rational::from(3602879701896397u64) / Rational::from(36028797018963968u64));
        assert!(rational_from_f64(f64::NAN).is_err());
        assert!(rational_from_f64(f64::INFINITY).is_err());
    }

    #[test]
    fn printing_round_trips() {
        for s in ["-22/7", "5", "0", "1/3"] {
            assert_eq!(rational_to_string(&parse_rational(s).unwrap()), s);
        }
    }
}
