//! The float engine's number type for custom formats: [`Custom`], a `Float` whose format is
//! chosen at run time (`FloatFormat(mantissa_bits, exponent_bits)`, see `custom_format`).
//!
//! Design. The engines are generic over `F: Float` (a `Copy` value type with static
//! constructors), and a format known only at run time has to reach both:
//!
//! - **values carry their format**: a `Custom` holds a `&'static FormatInfo` (interned, see
//!   `CustomFormat::info`), so `a.add(b)` and `a.mul(b)` know how to round wherever they run,
//!   on any rayon worker, with no global state and no change to the `Float` trait (so every
//!   engine written against it, and every future one, runs custom formats unchanged);
//! - **constructors read a scope**: `from_rational`, `from_f64_rounded`, ... have no value to
//!   take the format from, so they read a thread-local set by [`with_format`] around the
//!   dispatch (`sim::dispatch::dispatch_float` and the Python bindings do this on the
//!   calling thread, where plans, weights and inputs are built);
//! - `zero()` and `one()` built outside a scope (e.g. padding inside a worker) are
//!   *format-free* exact constants: 0 and 1 are values of every format, and an operation
//!   takes its format from whichever operand has one (a weight always has). An operation
//!   between two format-free values is done in f64 (it only ever sees 0 and 1).
//!
//! Arithmetic (each multiply and each add rounded once to the format, round to nearest,
//! ties to even, gradual underflow, overflow to ±∞ as IEEE 754 §4.3.1/§7.4; the engine's
//! order of operations is unchanged), by the format's `Path`:
//! - `Hardware64` (binary64): f64 operations;
//! - `F64ThenRound` (p ≤ 25, exponent_bits ≤ 9): the f64 operation, then `round_f64_in`;
//! - `Big`: malachite-float (`Float`, pure Rust, MPFR-style correct rounding): a sum is
//!   rounded to p bits by `add_prec_round` (a sum below 2^emin is exact: both operands are
//!   multiples of the subnormal quantum), a product is computed exactly (2p bits) and then
//!   rounded by [`round_to`], which fixes the quantum at 2^(emin−p+1) below 2^emin.
//!
//! tanh and sigmoid: for formats whose values are all f64s (`fits_in_f64`), the f64 value
//! (`f64::tanh`, 1/(1+exp(−x))) rounded once to the format — exactly what the builtin
//! formats do, so fp(10,5) = f16 etc. bit for bit. For wider formats: tanh is malachite's
//! correctly rounded tanh at p + 64 bits, nudged towards the exact value by its rounding
//! direction and rounded once to the format — correctly rounded; sigmoid is 1/(1+exp(−x))
//! with each of the three steps at p + 64 bits, then rounded once (correct unless the exact
//! value is within about 2^−(p+62) relative of a rounding midpoint).
//!
//! Storage: formats that fit in f64 store an f64; wider ones an exact ±m·2^e with m < 2^128.

use crate::num::custom_format::{CustomFormat, FormatInfo, Path};
use crate::num::float::Float;
use crate::num::round::{round_f64_in, round_to_f64_in, round_to_format, BinaryFormat, Rounded};
use malachite::base::num::arithmetic::traits::PowerOf2;
use malachite::base::num::basic::traits::{Infinity, NaN, NegativeInfinity, NegativeZero, One, Zero};
use malachite::base::num::conversion::traits::{IntegerMantissaAndExponent, RoundingFrom};
use malachite::base::rounding_modes::RoundingMode::Nearest;
use malachite::{Natural, Rational};
use std::cell::Cell;
use std::cmp::Ordering;

type Big = malachite::Float;

/// A finite or special value of a format wider than f64.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wide {
    Zero { neg: bool },
    /// ±mant·2^exp
    Finite { neg: bool, mant: u128, exp: i64 },
    Inf { neg: bool },
    NaN,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Val {
    F(f64),
    W(Wide),
}

/// A value of a custom float format (see the module doc).
#[derive(Clone, Copy)]
pub struct Custom {
    fmt: Option<&'static FormatInfo>,
    v: Val,
}

thread_local! {
    static SCOPE: Cell<Option<&'static FormatInfo>> = const { Cell::new(None) };
}

/// Runs `body` with `format` as the format of every `Custom` built on this thread.
pub fn with_format<T>(format: CustomFormat, body: impl FnOnce() -> T) -> T {
    struct Restore(Option<&'static FormatInfo>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPE.with(|s| s.replace(Some(format.info()))));
    body()
}

/// The format of the enclosing [`with_format`], if any.
pub fn current_format() -> Option<&'static FormatInfo> {
    SCOPE.with(|s| s.get())
}

fn to_big(v: Val) -> Big {
    match v {
        Val::F(x) => Big::from(x),
        Val::W(Wide::Zero { neg: false }) => Big::ZERO,
        Val::W(Wide::Zero { neg: true }) => Big::NEGATIVE_ZERO,
        Val::W(Wide::Inf { neg: false }) => Big::INFINITY,
        Val::W(Wide::Inf { neg: true }) => Big::NEGATIVE_INFINITY,
        Val::W(Wide::NaN) => Big::NAN,
        Val::W(Wide::Finite { neg, mant, exp }) => {
            let m = Big::try_from(Natural::from(mant)).expect("a u128 is a valid Float") << exp;
            if neg { -m } else { m }
        }
    }
}

/// A value of the format (already rounded to it) in the format's storage.
fn from_big(x: &Big, info: &FormatInfo) -> Val {
    if info.fits_in_f64 {
        return Val::F(f64::rounding_from(x, Nearest).0);
    }
    let neg = x.is_sign_negative();
    Val::W(if x.is_nan() {
        Wide::NaN
    } else if x.is_infinite() {
        Wide::Inf { neg }
    } else if *x == 0u32 {
        Wide::Zero { neg }
    } else {
        let (m, exp) = x.integer_mantissa_and_exponent();
        let mant = u128::try_from(&m).expect("a value of a format with p ≤ 128 has a u128 significand");
        Wide::Finite { neg, mant, exp }
    })
}

/// floor(log2 |x|) of a finite nonzero Float.
fn floor_log2(x: &Big) -> i64 {
    i64::from(x.get_exponent().expect("finite nonzero")) - 1
}

/// Rounds `x` (any precision) to the nearest value of the format: p bits from 2^emin up,
/// quantum 2^(emin−p+1) below (gradual underflow), ties to even, ±∞ when the rounded value
/// (unbounded exponent) is above the largest finite one. Same rule as `round::round_to_format`.
pub fn round_to(x: Big, fmt: BinaryFormat) -> Big {
    if x.is_nan() || x.is_infinite() || x == 0u32 {
        return x;
    }
    let p = i64::from(fmt.precision);
    let e = floor_log2(&x);
    let neg = x.is_sign_negative();
    let bits = if e >= fmt.emin { p } else { p - (fmt.emin - e) };
    let r = if bits >= 1 {
        Big::from_float_prec_round(x, bits as u64, Nearest).0
    } else {
        // |x| < 2^(emin−p+1), the smallest subnormal: 0 or that subnormal (a tie, at exactly
        // half of it, goes to the even 0)
        let half = Big::power_of_2(fmt.emin - p);
        let above_half = bits == 0 && (if neg { -x } else { x }) > half;
        let r = if above_half { Big::power_of_2(fmt.emin - p + 1) } else { Big::ZERO };
        return if neg { if above_half { -r } else { Big::NEGATIVE_ZERO } } else { r };
    };
    if r != 0u32 && floor_log2(&r) > fmt.emax {
        return if neg { Big::NEGATIVE_INFINITY } else { Big::INFINITY };
    }
    r
}

/// Moves a value rounded at some precision towards the exact value it was rounded from
/// (`o` = how the rounded value compares with the exact one) by 2^−100 of its ulp-free
/// magnitude: it stays strictly inside the same interval between neighbours at that
/// precision, where no rounding boundary of a coarser format lies, so rounding it to the
/// format rounds the exact value (no double-rounding error).
fn nudge(t: Big, o: Ordering, p: u64) -> Big {
    if o == Ordering::Equal || t == 0u32 || t.is_nan() || t.is_infinite() {
        return t;
    }
    let delta = Big::power_of_2(floor_log2(&t) - p as i64 - 100);
    let prec = p + 200;
    if o == Ordering::Less {
        t.add_prec_round(delta, prec, Nearest).0
    } else {
        t.sub_prec_round(delta, prec, Nearest).0
    }
}

impl Custom {
    fn with(fmt: Option<&'static FormatInfo>, v: Val) -> Custom {
        Custom { fmt, v }
    }

    /// The format this value belongs to (None for the format-free constants 0 and 1).
    pub fn format(&self) -> Option<&'static FormatInfo> {
        self.fmt
    }

    /// −x, exactly (same format).
    pub fn negated(self) -> Custom {
        let v = match self.v {
            Val::F(x) => Val::F(-x),
            Val::W(Wide::Zero { neg }) => Val::W(Wide::Zero { neg: !neg }),
            Val::W(Wide::Inf { neg }) => Val::W(Wide::Inf { neg: !neg }),
            Val::W(Wide::Finite { neg, mant, exp }) => Val::W(Wide::Finite { neg: !neg, mant, exp }),
            Val::W(Wide::NaN) => Val::W(Wide::NaN),
        };
        Custom::with(self.fmt, v)
    }

    pub fn is_infinite(self) -> bool {
        match self.v {
            Val::F(x) => x.is_infinite(),
            Val::W(w) => matches!(w, Wide::Inf { .. }),
        }
    }

    pub fn is_sign_negative(self) -> bool {
        match self.v {
            Val::F(x) => x.is_sign_negative(),
            Val::W(Wide::Zero { neg } | Wide::Finite { neg, .. } | Wide::Inf { neg }) => neg,
            Val::W(Wide::NaN) => false,
        }
    }

    fn big_op(self, o: Self, info: &'static FormatInfo, mul: bool) -> Self {
        let (a, b) = (to_big(self.v), to_big(o.v));
        let p = u64::from(info.format.precision);
        let r = if mul {
            round_to(a.mul_prec_round_ref_ref(&b, 2 * p, Nearest).0, info.format)
        } else {
            round_to(a.add_prec_round_ref_ref(&b, p, Nearest).0, info.format)
        };
        Custom::with(Some(info), from_big(&r, info))
    }

    /// w·z + acc rounded once to a format that is not computed in f64 (`Path::Big`): the
    /// exact rational rounded by `round_to_format`; a zero keeps IEEE's sign (−0 only for
    /// (±0·x) + −0 with a negative product, or for a negative value that underflows).
    /// With a ±∞ or NaN operand, the separate operations give the IEEE fma result, except
    /// that a finite product must not overflow on its own next to an infinite addend.
    fn wide_mul_add(self, z: Self, acc: Self, info: &'static FormatInfo) -> Self {
        let (Some(a), Some(b), Some(c)) = (self.to_rational(), z.to_rational(), acc.to_rational()) else {
            if self.to_rational().is_some() && z.to_rational().is_some() && acc.is_infinite() {
                return Custom::with(Some(info), acc.v);
            }
            return self.mul(z).add(acc);
        };
        let product_zero = a == 0 || b == 0;
        let exact = a * b + &c;
        let neg = if exact == 0 {
            product_zero && c == 0 && (self.is_sign_negative() != z.is_sign_negative()) && acc.is_sign_negative()
        } else {
            exact < 0
        };
        let v = match round_to_format(&exact, info.format) {
            Rounded::Infinite { negative } if info.fits_in_f64 => Val::F(if negative { f64::NEG_INFINITY } else { f64::INFINITY }),
            Rounded::Infinite { negative } => Val::W(Wide::Inf { neg: negative }),
            Rounded::Finite(q) if q == 0 => {
                if info.fits_in_f64 { Val::F(if neg { -0.0 } else { 0.0 }) } else { Val::W(Wide::Zero { neg }) }
            }
            Rounded::Finite(q) if info.fits_in_f64 => Val::F(f64::rounding_from(&q, Nearest).0),
            Rounded::Finite(q) => from_big(&Big::from_rational_prec(q, u64::from(info.format.precision)).0, info),
        };
        Custom::with(Some(info), v)
    }

    fn from_rounded_big(x: Big, info: &'static FormatInfo) -> Self {
        Custom::with(Some(info), from_big(&round_to(x, info.format), info))
    }
}

impl Float for Custom {
    const NAME: &'static str = "custom";

    fn binary_format() -> BinaryFormat {
        current_format().map_or(BinaryFormat::F64, |f| f.format)
    }
    fn zero() -> Self {
        Custom::with(current_format(), Val::F(0.0))
    }
    fn one() -> Self {
        Custom::with(current_format(), Val::F(1.0))
    }
    fn from_f64_exact(v: f64) -> Self {
        match current_format() {
            Some(info) if !info.fits_in_f64 => Custom::with(Some(info), from_big(&Big::from(v), info)),
            fmt => Custom::with(fmt, Val::F(v)),
        }
    }
    fn from_f64_rounded(v: f64) -> Self {
        match current_format() {
            None => Custom::with(None, Val::F(v)),
            Some(info) if info.fits_in_f64 => Custom::with(Some(info), Val::F(round_f64_in(v, info.format))),
            Some(info) => Custom::from_rounded_big(Big::from(v), info),
        }
    }
    fn from_rational(r: &Rational) -> Self {
        let Some(info) = current_format() else {
            return Custom::with(None, Val::F(round_to_f64_in(r, BinaryFormat::F64)));
        };
        if info.fits_in_f64 {
            return Custom::with(Some(info), Val::F(round_to_f64_in(r, info.format)));
        }
        let v = match round_to_format(r, info.format) {
            Rounded::Infinite { negative } => Wide::Inf { neg: negative },
            Rounded::Finite(q) => {
                let p = u64::from(info.format.precision);
                return Custom::with(Some(info), from_big(&Big::from_rational_prec(q, p).0, info));
            }
        };
        Custom::with(Some(info), Val::W(v))
    }
    fn to_rational(self) -> Option<Rational> {
        match self.v {
            Val::F(x) => Rational::try_from(x).ok(),
            Val::W(_) => Rational::try_from(&to_big(self.v)).ok(),
        }
    }
    fn to_f64(self) -> f64 {
        match self.v {
            Val::F(x) => x,
            Val::W(_) => f64::rounding_from(&to_big(self.v), Nearest).0,
        }
    }
    #[inline]
    fn add(self, o: Self) -> Self {
        let fmt = self.fmt.or(o.fmt);
        match (fmt.map(|f| f.path), self.v, o.v) {
            (None | Some(Path::Hardware64), Val::F(a), Val::F(b)) => Custom::with(fmt, Val::F(a + b)),
            (Some(Path::F64ThenRound), Val::F(a), Val::F(b)) => {
                Custom::with(fmt, Val::F(round_f64_in(a + b, fmt.expect("set").format)))
            }
            _ => self.big_op(o, fmt.expect("a wide value has a format"), false),
        }
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        let fmt = self.fmt.or(o.fmt);
        match (fmt.map(|f| f.path), self.v, o.v) {
            (None | Some(Path::Hardware64), Val::F(a), Val::F(b)) => Custom::with(fmt, Val::F(a * b)),
            (Some(Path::F64ThenRound), Val::F(a), Val::F(b)) => {
                Custom::with(fmt, Val::F(round_f64_in(a * b, fmt.expect("set").format)))
            }
            _ => self.big_op(o, fmt.expect("a wide value has a format"), true),
        }
    }
    fn mul_add(self, z: Self, acc: Self) -> Self {
        let fmt = self.fmt.or(z.fmt).or(acc.fmt);
        match (fmt.map(|f| f.path), self.v, z.v, acc.v) {
            (None | Some(Path::Hardware64), Val::F(a), Val::F(b), Val::F(c)) => Custom::with(fmt, Val::F(a.mul_add(b, c))),
            (Some(Path::F64ThenRound), Val::F(a), Val::F(b), Val::F(c)) => {
                let f = fmt.expect("set").format;
                Custom::with(fmt, Val::F(round_f64_in(crate::num::fused::fma_via_odd(a, b, c), f)))
            }
            _ => self.wide_mul_add(z, acc, fmt.expect("a wide value has a format")),
        }
    }
    fn is_nan(self) -> bool {
        match self.v {
            Val::F(x) => x.is_nan(),
            Val::W(w) => w == Wide::NaN,
        }
    }
    fn tanh(self) -> Self {
        match self.fmt {
            Some(info) if !info.fits_in_f64 => {
                let p = u64::from(info.format.precision) + 64;
                let (t, o) = to_big(self.v).tanh_prec_round(p, Nearest);
                Custom::from_rounded_big(nudge(t, o, p), info)
            }
            fmt => Custom::with(fmt, Val::F(rounded_f64(fmt, crate::sim::activation_f64::tanh(self.to_f64())))),
        }
    }
    fn sigmoid(self) -> Self {
        match self.fmt {
            Some(info) if !info.fits_in_f64 => {
                let p = u64::from(info.format.precision) + 64;
                let e = (-to_big(self.v)).exp_prec_round(p, Nearest).0;
                let s = e.add_prec_round(Big::ONE, p, Nearest).0;
                Custom::from_rounded_big(s.reciprocal_prec_round(p, Nearest).0, info)
            }
            fmt => Custom::with(fmt, Val::F(rounded_f64(fmt, crate::sim::activation_f64::sigmoid(self.to_f64())))),
        }
    }
}

fn rounded_f64(fmt: Option<&'static FormatInfo>, v: f64) -> f64 {
    fmt.map_or(v, |f| round_f64_in(v, f.format))
}

impl PartialEq for Custom {
    fn eq(&self, o: &Self) -> bool {
        match (self.v, o.v) {
            (Val::F(a), Val::F(b)) => a == b,
            _ => to_big(self.v) == to_big(o.v),
        }
    }
}

impl PartialOrd for Custom {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        match (self.v, o.v) {
            (Val::F(a), Val::F(b)) => a.partial_cmp(&b),
            _ => to_big(self.v).partial_cmp(&to_big(o.v)),
        }
    }
}

impl std::fmt::Debug for Custom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.fmt.map_or("fp(free)", |i| i.name);
        match self.v {
            Val::F(x) => write!(f, "{name}:{x:e}"),
            Val::W(_) => write!(f, "{name}:{}", to_big(self.v)),
        }
    }
}

#[cfg(test)]
#[path = "custom_float_tests.rs"]
mod tests;
