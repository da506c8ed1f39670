//! Fused multiply-add, the product-sum step of an `fma=True` run:
//!
//!   fma(w, z, acc) = round_F(w·z + acc)        (one rounding; IEEE 754-2008 fusedMultiplyAdd)
//!
//! f64 uses the hardware (or libm's correctly rounded) `f64::mul_add`. The formats whose
//! products are exact in f64 (f32: 2·24 = 48 bits, f16: 22, bf16: 16, custom formats with
//! p ≤ 26 and exponent_bits ≤ 9) compute it as in Boldo & Melquiond, "Emulation of FMA and
//! correctly rounded sums: proved algorithms using rounding to odd" (IEEE TC 57(4), 2008):
//! the exact product w·z (an f64), its sum with acc **rounded to odd** in f64 ([`odd_sum`]),
//! then one round-to-nearest-even to the format. Rounding to odd in 53 bits followed by
//! rounding to nearest in p ≤ 51 bits is the correct rounding of the exact value (their
//! Theorem 1): a value rounded to odd never lands on a midpoint of the coarser grid unless
//! the exact value was that midpoint. Subnormals, overflow and signed zeros follow IEEE.
//! Wider custom formats round the exact rational (`custom_float`).

/// `p + acc` rounded to odd in f64 (the nearest-even sum, moved one ulp towards the exact
/// value when it is inexact and even). ±∞ and NaN pass through. `p` must be the exact
/// product (no rounding happened before this sum).
#[inline(always)]
fn odd_sum(p: f64, acc: f64) -> f64 {
    let s = p + acc;
    // TwoSum (Knuth): err = (p + acc) − s exactly, for any finite p, acc with s finite
    let bb = s - p;
    let err = (p - (s - bb)) + (acc - bb);
    let bits = s.to_bits();
    if err == 0.0 || bits & 1 == 1 || !s.is_finite() {
        return s;
    }
    // s ≠ 0 here (an inexact sum is never zero); step its magnitude towards the exact value
    let away = (err > 0.0) == (s > 0.0);
    f64::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// w·z + acc rounded to odd in f64, for values of a format whose products are exact in f64
/// (2p ≤ 53 and no underflow): rounding it once to nearest in the format (p ≤ 51) gives the
/// format's fma.
#[inline(always)]
pub fn fma_via_odd(w: f64, z: f64, acc: f64) -> f64 {
    odd_sum(w * z, acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::num::round::{round_f64_in, round_to_f64_in, BinaryFormat};
    use malachite::Rational;

    /// The exact w·z + acc rounded by the rational rounding (the definition).
    fn definition(w: f64, z: f64, acc: f64, fmt: BinaryFormat) -> f64 {
        let exact = Rational::try_from(w).unwrap() * Rational::try_from(z).unwrap() + Rational::try_from(acc).unwrap();
        round_to_f64_in(&exact, fmt)
    }

    fn sample(seed: &mut u64, fmt: BinaryFormat) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = *seed >> 11;
        // mantissa from the top bits, exponent over the format's range (subnormals included)
        let span = (fmt.emax - fmt.emin + fmt.precision as i64 + 4) as u64;
        let e = fmt.emin - fmt.precision as i64 - 1 + (r % span) as i64;
        let m = 1.0 + ((r >> 20) as f64) / (1u64 << 33) as f64;
        let v = m * 2f64.powi(e.clamp(-1070, 1020) as i32);
        let v = round_f64_in(v, fmt);
        if r & (1 << 19) != 0 { -v } else { v }
    }

    #[test]
    fn odd_emulation_is_the_correctly_rounded_fma() {
        for fmt in [BinaryFormat::F16, BinaryFormat::BF16, BinaryFormat::F32] {
            let mut s = 12345u64 + fmt.precision as u64;
            for i in 0..200_000 {
                let (w, z) = (sample(&mut s, fmt), sample(&mut s, fmt));
                // half of the cases: acc close to −w·z (cancellation) or to a midpoint
                let acc = if i % 2 == 0 { round_f64_in(-(w * z) * (1.0 + (i % 7) as f64 * 2f64.powi(-(fmt.precision as i32))), fmt) } else { sample(&mut s, fmt) };
                if !(w * z + acc).is_finite() || definition(w, z, acc, fmt).is_infinite() {
                    continue;
                }
                let got = round_f64_in(fma_via_odd(w, z, acc), fmt);
                let want = definition(w, z, acc, fmt);
                assert_eq!(got, want, "{fmt:?}: fma({w:e}, {z:e}, {acc:e})");
            }
        }
    }

    #[test]
    fn double_rounding_without_odd_would_be_wrong() {
        // f16 values whose exact fma is 1 + 2^-11 + 2^-24: just above the midpoint 1 + 2^-11
        // (rounds up), but an f32 sum rounds it back to the midpoint (tie to even), and
        // then the midpoint rounds down to 1.
        let (w, z, acc) = (1.0 + 2f64.powi(-10), 1.0 - 2f64.powi(-11), 2f64.powi(-21) + 2f64.powi(-24));
        let f16 = BinaryFormat::F16;
        assert_eq!(round_f64_in(fma_via_odd(w, z, acc), f16), 1.0 + 2f64.powi(-10));
        let via_f32 = ((w * z) as f32 + acc as f32) as f64;
        assert_eq!(round_f64_in(via_f32, f16), 1.0, "the naive double rounding");
        // exact cancellation gives +0; −0 · x + −0 gives −0
        assert!(fma_via_odd(2.0, 3.0, -6.0).is_sign_positive());
        assert!(fma_via_odd(-0.0, 3.0, -0.0).is_sign_negative());
        assert!(fma_via_odd(f64::INFINITY, 0.0, 1.0).is_nan());
    }
}
