//! The finite-precision number formats the float engine computes in.
//!
//! Rounding rule (the same in every engine and every format): each multiplication and each
//! addition is rounded to the format, round-to-nearest-even, no fused multiply-add. f64 and
//! f32 use the hardware operations. f16 and bf16 compute each single operation in f32 and
//! round the result once to the format: since f32 has p' = 24 ≥ 2p + 2 significand bits
//! (p = 11 for f16, 8 for bf16), that double rounding is innocuous and every operation is
//! correctly rounded (Figueroa 1995, "When is double rounding innocuous?"). This is also
//! exactly how numpy evaluates float16 scalar and elementwise arithmetic.
//!
//! tanh and sigmoid are the exact function values at the operand's exact value, correctly
//! rounded to f64 (`num::correctly_rounded`; for f64 that is the result), then rounded once
//! to the format. Rounding an f64
//! to f16/bf16 uses `round::round_f64_in` (correct round to nearest even from all 53 bits;
//! the `half` crate's own f64 conversions look at the top 32 bits only); slices of inputs
//! go through f32 rounded to odd instead, which gives the same values faster
//! ([`round_f64_via_odd_f32`]).
//!
//! Custom formats `FloatFormat(mantissa_bits, exponent_bits)` are the type
//! `custom_float::Custom`, whose values carry their runtime format.

use crate::num::round::{round_f64_in, round_f64_to_f32_odd, round_to_f64_in, BinaryFormat};
use std::mem::MaybeUninit;
use half::{bf16, f16};
use malachite::Rational;

/// `Float::round_f16_slice_uninit`'s default: the f16 values as f32 lanes (exact), then
/// F's `round_f32_slice_uninit` (one rounding).
pub fn round_f16_via_lanes<F: Float>(v: &[f16], out: &mut [MaybeUninit<F>]) {
    F::round_f32_slice_uninit(&<f16 as crate::sim::lanes::LaneFormat>::to_lanes(v), out)
}

/// `Float::round_f64_slice_uninit` of the half formats: each value rounded to f32 to odd
/// (`round::round_f64_to_f32_odd`), then F's own f32 rounding over the chunk
/// (`round_f32_slice_uninit`: F16C for f16), which together round each value once from its
/// f64. Before, `round_f64_in` and `half`'s f64 conversion (a call per value): SimpleRNN at
/// (1024, 200, 16, 4), 1 thread, from a float64 array, M token-steps/s: bf16 15.2 → 24.8,
/// f16 17.7 → 27.1, f16 with f32 sums 26.5 → 55.6 (session 68; bf16 from float32: 30).
pub fn round_f64_via_odd_f32<F: Float>(v: &[f64], out: &mut [MaybeUninit<F>]) {
    const CHUNK: usize = 64;
    let mut odd = [0f32; CHUNK];
    for (vs, os) in v.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
        let odd = &mut odd[..vs.len()];
        for (d, &x) in odd.iter_mut().zip(vs) {
            *d = round_f64_to_f32_odd(x);
        }
        F::round_f32_slice_uninit(odd, os);
    }
}

/// A binary floating-point format usable by the float engine.
pub trait Float: Copy + Send + Sync + PartialOrd + std::fmt::Debug + 'static {
    const NAME: &'static str;
    /// The format the constructors round to (for `Custom`: the one of the enclosing
    /// `custom_float::with_format`).
    fn binary_format() -> BinaryFormat;
    fn zero() -> Self;
    fn one() -> Self;
    /// Exact conversion of a value already representable in the format.
    fn from_f64_exact(v: f64) -> Self;
    /// Rounds an f64 to the format (round to nearest even).
    fn from_f64_rounded(v: f64) -> Self;
    /// Rounds an f32 to the format (the same value as `from_f64_rounded` of it; the half
    /// formats override it with `half`'s single-rounding f32 conversions, F16C for f16).
    #[inline(always)]
    fn from_f32_rounded(v: f32) -> Self {
        Self::from_f64_rounded(f64::from(v))
    }
    /// `from_f32_rounded` over a slice, written into `out` (uninitialised, of v's length; f16
    /// overrides it with F16C's conversion, 8 values at a time: the same values). Contract:
    /// every value of `out` is written when the lengths are equal (`parallel_copy::written`
    /// relies on it).
    fn round_f32_slice_uninit(v: &[f32], out: &mut [MaybeUninit<Self>]) {
        for (o, &x) in out.iter_mut().zip(v) {
            o.write(Self::from_f32_rounded(x));
        }
    }
    /// `from_f64_rounded` over a slice, written into `out` (uninitialised, of v's length; the
    /// same contract). The half formats go through f32 ([`round_f64_via_odd_f32`]).
    fn round_f64_slice_uninit(v: &[f64], out: &mut [MaybeUninit<Self>]) {
        for (o, &x) in out.iter_mut().zip(v) {
            o.write(Self::from_f64_rounded(x));
        }
    }
    /// `from_f32_rounded` of f16 values (exact in f32) over a slice, written into `out`
    /// (uninitialised, of v's length; the same contract): f16 inputs run in this format. The
    /// default goes through f32 lanes; f16 with f32 sums, which holds them exactly, converts
    /// them straight into `out`.
    fn round_f16_slice_uninit(v: &[f16], out: &mut [MaybeUninit<Self>]) {
        round_f16_via_lanes(v, out)
    }
    /// `from_f32_rounded` over a slice (`round_f32_slice_uninit` into a new vector).
    fn from_f32_slice_rounded(v: &[f32]) -> Vec<Self> {
        let mut out = vec![Self::zero(); v.len()];
        // SAFETY: MaybeUninit<Self> has Self's layout; the slice is initialised and only
        // initialised values of Self are written into it (Self: Copy, nothing is dropped)
        let uninit = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<MaybeUninit<Self>>(), out.len()) };
        Self::round_f32_slice_uninit(v, uninit);
        out
    }
    fn to_f64(self) -> f64;
    /// The exact value (None for ±∞ and NaN).
    fn to_rational(self) -> Option<Rational> {
        Rational::try_from(self.to_f64()).ok()
    }
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// self · z + acc rounded once (fused multiply-add, `num::fused`). The default is the
    /// round-to-odd emulation, correct for formats whose products are exact in f64.
    #[inline(always)]
    fn mul_add(self, z: Self, acc: Self) -> Self {
        Self::from_f64_rounded(crate::num::fused::fma_via_odd(self.to_f64(), z.to_f64(), acc.to_f64()))
    }
    /// The product-sum step self + w·z: two roundings, or one (`fma`).
    #[inline(always)]
    fn plus_product(self, w: Self, z: Self, fma: bool) -> Self {
        if fma { w.mul_add(z, self) } else { self.add(w.mul(z)) }
    }
    fn is_nan(self) -> bool;
    /// The end of an affine map's sum (b + Σ w·z, after its last product-sum step): the sum
    /// as the format stores it. The identity, except for the half formats with f32 sums
    /// (`num::f32_sums`), whose product-sum steps run in f32 and whose sums are rounded to
    /// the format here, once.
    #[inline(always)]
    fn end_sum(self) -> Self {
        self
    }

    /// Correctly rounded conversion of an exact rational (weights are exact; this is where
    /// they are rounded to the format).
    fn from_rational(r: &Rational) -> Self {
        // a weight that is exactly an f64 (the usual case) is rounded from that f64, which
        // is the same value and much faster than rounding the rational
        // (an underflow to zero gives +0, as the rational rounding does)
        if let Ok(v) = f64::try_from(r) {
            let f = Self::from_f64_rounded(v);
            return if f == Self::zero() { Self::zero() } else { f };
        }
        Self::from_f64_exact(round_to_f64_in(r, Self::binary_format()))
    }
    /// tanh(x) correctly rounded to f64 (`num::correctly_rounded`, computed fast by
    /// `sim::activation_f64`), then rounded to the format.
    fn tanh(self) -> Self {
        Self::from_f64_rounded(crate::sim::activation_f64::tanh(self.to_f64()))
    }
    /// σ(x) = 1/(1 + e^−x) correctly rounded to f64, then rounded to the format.
    fn sigmoid(self) -> Self {
        Self::from_f64_rounded(crate::sim::activation_f64::sigmoid(self.to_f64()))
    }
    /// The approximate tanh of `approx_activations=True` (`sim::approx_activation`). Only
    /// f32 has one; the runs refuse the option for other formats, and here they fall back to
    /// the exact value.
    fn approx_tanh(self) -> Self {
        self.tanh()
    }
    /// The approximate σ (see `approx_tanh`).
    fn approx_sigmoid(self) -> Self {
        self.sigmoid()
    }
}

impl Float for f64 {
    const NAME: &'static str = "f64";
    fn binary_format() -> BinaryFormat { BinaryFormat::F64 }
    fn zero() -> Self { 0.0 }
    fn one() -> Self { 1.0 }
    fn from_f64_exact(v: f64) -> Self { v }
    fn from_f64_rounded(v: f64) -> Self { v }
    fn to_f64(self) -> f64 { self }
    #[inline(always)]
    fn add(self, o: Self) -> Self { self + o }
    #[inline(always)]
    fn mul(self, o: Self) -> Self { self * o }
    #[inline(always)]
    fn mul_add(self, z: Self, acc: Self) -> Self { f64::mul_add(self, z, acc) }
    fn is_nan(self) -> bool { f64::is_nan(self) }
}

impl Float for f32 {
    const NAME: &'static str = "f32";
    fn binary_format() -> BinaryFormat { BinaryFormat::F32 }
    fn zero() -> Self { 0.0 }
    fn one() -> Self { 1.0 }
    fn from_f64_exact(v: f64) -> Self { v as f32 }
    fn from_f64_rounded(v: f64) -> Self { v as f32 }
    fn to_f64(self) -> f64 { self as f64 }
    #[inline(always)]
    fn add(self, o: Self) -> Self { self + o }
    #[inline(always)]
    fn mul(self, o: Self) -> Self { self * o }
    /// Through f64 with round to odd (inlined; `f32::mul_add` is a libm call unless the
    /// crate is compiled for FMA hardware).
    #[inline(always)]
    fn mul_add(self, z: Self, acc: Self) -> Self { crate::num::fused::fma_via_odd(self as f64, z as f64, acc as f64) as f32 }
    fn is_nan(self) -> bool { f32::is_nan(self) }
    /// round_f32 of the correctly rounded f64 value, decided from a cheaper approximation
    /// when it can be (`sim::ziv`).
    fn tanh(self) -> Self { crate::sim::fast_tanh::tanh_f32(self) }
    fn sigmoid(self) -> Self { crate::sim::fast_sigmoid::sigmoid_f32(self) }
    fn approx_tanh(self) -> Self { crate::sim::approx_activation::one(crate::sim::ziv::Func::Tanh, self) }
    fn approx_sigmoid(self) -> Self { crate::sim::approx_activation::one(crate::sim::ziv::Func::Sigmoid, self) }
}

impl Float for f16 {
    const NAME: &'static str = "f16";
    fn binary_format() -> BinaryFormat { BinaryFormat::F16 }
    fn zero() -> Self { f16::ZERO }
    fn one() -> Self { f16::ONE }
    fn from_f64_exact(v: f64) -> Self { f16::from_f64(v) }
    fn from_f64_rounded(v: f64) -> Self { f16::from_f64(round_f64_in(v, BinaryFormat::F16)) }
    #[inline(always)]
    fn from_f32_rounded(v: f32) -> Self { f16::from_f32(v) }
    /// `LaneFormat::from_lanes_uninit`: F16C's `vcvtps2ph` inline, 8 values at a time (where
    /// `half`'s slice conversion called a function per 8, 0.65 ns per value in all with the
    /// zeroing before it: 9% of an f16 SimpleRNN's run at hidden 16, session 40).
    fn round_f32_slice_uninit(v: &[f32], out: &mut [MaybeUninit<Self>]) {
        <f16 as crate::sim::lanes::LaneFormat>::from_lanes_uninit(out, v)
    }
    fn round_f64_slice_uninit(v: &[f64], out: &mut [MaybeUninit<Self>]) {
        round_f64_via_odd_f32(v, out)
    }
    fn to_f64(self) -> f64 { f16::to_f64(self) }
    #[inline(always)]
    fn add(self, o: Self) -> Self { f16::from_f32(self.to_f32() + o.to_f32()) }
    #[inline(always)]
    fn mul(self, o: Self) -> Self { f16::from_f32(self.to_f32() * o.to_f32()) }
    fn is_nan(self) -> bool { f16::is_nan(self) }
}

impl Float for bf16 {
    const NAME: &'static str = "bf16";
    fn binary_format() -> BinaryFormat { BinaryFormat::BF16 }
    fn zero() -> Self { bf16::ZERO }
    fn one() -> Self { bf16::ONE }
    fn from_f64_exact(v: f64) -> Self { bf16::from_f64(v) }
    fn from_f64_rounded(v: f64) -> Self { bf16::from_f64(round_f64_in(v, BinaryFormat::BF16)) }
    #[inline(always)]
    fn from_f32_rounded(v: f32) -> Self { bf16::from_f32(v) }
    fn round_f64_slice_uninit(v: &[f64], out: &mut [MaybeUninit<Self>]) {
        round_f64_via_odd_f32(v, out)
    }
    fn to_f64(self) -> f64 { bf16::to_f64(self) }
    #[inline(always)]
    fn add(self, o: Self) -> Self { bf16::from_f32(self.to_f32() + o.to_f32()) }
    #[inline(always)]
    fn mul(self, o: Self) -> Self { bf16::from_f32(self.to_f32() * o.to_f32()) }
    fn is_nan(self) -> bool { bf16::is_nan(self) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `from_f32_rounded` (half's f32 conversions) is `from_f64_rounded` of the same value:
    /// random f32 bit patterns, the half formats' ties, subnormals and overflow edges.
    #[test]
    fn f32_conversions_round_like_the_f64_ones() {
        let mut s = 31u64;
        let mut xs: Vec<f32> = (0..400_000)
            .map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let bits = (s >> 32) as u32;
                // half anywhere, half within the half formats' ranges
                f32::from_bits(if i % 2 == 0 { bits } else { (bits & 0x87ff_ffff) | 0x3000_0000 })
            })
            .collect();
        xs.extend([65504.0, 65519.99, 65520.0, 2049.0, 2051.0, 5.96e-8, 2.98e-8, 2.99e-8, 1e-45, 3.4e38, f32::MAX, f32::MIN_POSITIVE, 0.0, -0.0]);
        for &x in &xs {
            let x = if x.is_nan() { 0.5 } else { x };
            assert_eq!(f16::from_f32_rounded(x).to_bits(), <f16 as Float>::from_f64_rounded(f64::from(x)).to_bits(), "f16 {x:e}");
            assert_eq!(bf16::from_f32_rounded(x).to_bits(), <bf16 as Float>::from_f64_rounded(f64::from(x)).to_bits(), "bf16 {x:e}");
        }
        // the bulk conversions give the same bits, NaNs included (odd lengths: their tails)
        xs.extend([f32::NAN, -f32::NAN, f32::from_bits(0x7fa0_0001), f32::INFINITY, f32::NEG_INFINITY]);
        for len in [xs.len(), 7, 1] {
            let (h, b) = (f16::from_f32_slice_rounded(&xs[..len]), bf16::from_f32_slice_rounded(&xs[..len]));
            for (i, &x) in xs[..len].iter().enumerate() {
                assert_eq!(h[i].to_bits(), f16::from_f32_rounded(x).to_bits(), "bulk f16 {x:e}");
                assert_eq!(b[i].to_bits(), bf16::from_f32_rounded(x).to_bits(), "bulk bf16 {x:e}");
            }
        }
    }

    #[test]
    fn f16_ops_are_correctly_rounded() {
        // 2048 + 1 is a tie in f16 (spacing 2 at 2048): ties to even -> 2048
        let a = f16::from_f64(2048.0);
        assert_eq!(a.add(f16::ONE).to_f64(), 2048.0);
        // 2048 + 3 -> 2052 (tie between 2050 and 2052: even significand is 2052)
        assert_eq!(a.add(f16::from_f64(3.0)).to_f64(), 2052.0);
        let third = f16::from_rational(&(Rational::from(1) / Rational::from(3)));
        assert_eq!(third.to_f64(), f16::from_f64(1.0 / 3.0).to_f64());
    }

    #[test]
    fn f64_to_half_formats_is_correctly_rounded() {
        // 1 + 2^-8 + 2^-40 is just above a bf16 tie: nearest is 1 + 2^-7 (half's own
        // conversion sees a tie in the top 32 bits and goes to 1)
        let v = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(bf16::from_f64_rounded(v).to_f64(), 1.0 + 2f64.powi(-7));
        let w = 1.0 + 2f64.powi(-11) + 2f64.powi(-45);
        assert_eq!(f16::from_f64_rounded(w).to_f64(), 1.0 + 2f64.powi(-10));
    }

    #[test]
    fn bf16_has_eight_significand_bits() {
        let x = bf16::from_f64(1.0).add(bf16::from_f64(1.0 / 256.0));
        assert_eq!(x.to_f64(), 1.0, "1 + 2^-8 is a tie, rounds to even");
        let y = bf16::from_f64(1.0).add(bf16::from_f64(1.0 / 128.0));
        assert_eq!(y.to_f64(), 1.0 + 1.0 / 128.0);
    }
}
