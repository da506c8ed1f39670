//! Vectors of exact rationals stored as integer numerators over ONE shared denominator.
//!
//! h = (n_1, …, n_d) / D with n_i ∈ ℤ and D ∈ ℕ⁺. A tick of an RNN then needs no gcd: sums
//! of products of small integer weights with the numerators stay over a common denominator,
//! exact zeros are skipped, and the value 1 is the numerator D. The representation is kept
//! small lazily: a cheap strip of the common power of two after every tick (the constructions'
//! denominators are powers of 2 and 4), and a full gcd only when D has grown by a quarter
//! since the last one (so its cost is amortised over many ticks). See `normalize`.

use malachite::base::num::arithmetic::traits::{DivExactAssign, Gcd, Lcm};
use malachite::base::num::logic::traits::SignificantBits;
use malachite::{Integer, Natural, Rational};

#[derive(Debug, Clone, PartialEq)]
pub struct ExactVector {
    pub num: Vec<Integer>,
    pub den: Natural,
    /// bit size of `den` after the last full gcd reduction (drives `normalize`)
    reduced_bits: u64,
}

impl ExactVector {
    pub fn zeros(d: usize) -> Self {
        ExactVector { num: vec![Integer::from(0); d], den: Natural::from(1u32), reduced_bits: 1 }
    }

    /// Builds the vector over the lcm of the entries' denominators.
    pub fn from_rationals(values: &[Rational]) -> Self {
        let mut den = Natural::from(1u32);
        for v in values {
            den = den.lcm(v.to_denominator());
        }
        let num = values
            .iter()
            .map(|v| {
                let (n, d) = v.to_numerator_and_denominator();
                let scale = &den / d;
                let mag = Integer::from(n * scale);
                if *v < 0u32 { -mag } else { mag }
            })
            .collect();
        let reduced_bits = den.significant_bits();
        ExactVector { num, den, reduced_bits }
    }

    pub fn from_parts(num: Vec<Integer>, den: Natural) -> Self {
        let reduced_bits = den.significant_bits();
        ExactVector { num, den, reduced_bits }
    }

    /// The next state of a run: numerators over `den`, keeping `prev`'s record of when the
    /// last full gcd ran (so `normalize` can tell how much the denominator has grown since).
    pub fn successor(num: Vec<Integer>, den: Natural, prev: &ExactVector) -> Self {
        ExactVector { num, den, reduced_bits: prev.reduced_bits }
    }

    pub fn len(&self) -> usize {
        self.num.len()
    }

    pub fn is_empty(&self) -> bool {
        self.num.is_empty()
    }

    /// The i-th entry as a reduced rational.
    pub fn get(&self, i: usize) -> Rational {
        Rational::from_integers_ref(&self.num[i], &Integer::from(&self.den))
    }

    pub fn to_rationals(&self) -> Vec<Rational> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }

    /// Largest bit size among the denominator and the numerators.
    pub fn max_bits(&self) -> u64 {
        self.num.iter().map(|n| n.significant_bits()).max().unwrap_or(0).max(self.den.significant_bits())
    }

    /// Removes the common factor of two from all numerators and the denominator.
    pub fn strip_twos(&mut self) {
        let mut tz = self.den.trailing_zeros().unwrap_or(0);
        for n in &self.num {
            if tz == 0 {
                return;
            }
            if let Some(z) = n.trailing_zeros() {
                tz = tz.min(z);
            }
        }
        if tz > 0 {
            self.den >>= tz;
            for n in self.num.iter_mut() {
                *n >>= tz;
            }
        }
    }

    /// Divides numerators and denominator by their gcd.
    pub fn reduce(&mut self) {
        let mut g = self.den.clone();
        for n in &self.num {
            if g == 1u32 {
                break;
            }
            let a = n.unsigned_abs_ref();
            if *a == 0u32 {
                continue;
            }
            let r = a % &g;
            g = if r == 0u32 { g } else { (&g).gcd(&r) };
        }
        if g != 1u32 {
            self.den.div_exact_assign(&g);
            let gi = Integer::from(&g);
            for n in self.num.iter_mut() {
                n.div_exact_assign(&gi);
            }
        }
        self.reduced_bits = self.den.significant_bits();
    }

    /// Keeps the representation small: strip twos always; full gcd when the denominator has
    /// grown past 5/4 of its size at the last reduction plus 64 bits.
    pub fn normalize(&mut self) {
        self.strip_twos();
        let bits = self.den.significant_bits();
        if bits > self.reduced_bits + self.reduced_bits / 4 + 64 {
            self.reduce();
        }
    }

    /// f64 approximation of entry i with relative error below 2^-50, or NaN when the value
    /// is outside the normal f64 range (callers then fall back to exact arithmetic).
    pub fn approx(&self, i: usize) -> f64 {
        approx_ratio(&self.num[i], &self.den)
    }
}

/// The top 64 bits of x (x ≠ 0) and the shift s with x ≈ top·2^s (truncated, rel. error < 2^-63).
fn top_bits(x: &Natural) -> (u64, i64) {
    let bits = x.significant_bits();
    let mut limbs = x.limbs();
    let hi = limbs.next_back().unwrap_or(0);
    let lo = limbs.next_back().unwrap_or(0);
    let hi_bits = 64 - hi.leading_zeros() as u64;
    if bits <= 64 {
        return (hi, 0);
    }
    // combine hi (hi_bits bits) with the top bits of lo into a full 64-bit window
    let take = 64 - hi_bits;
    let window = if take == 0 { hi } else { (hi << take) | (lo >> (64 - take)) };
    (window, (bits - 64) as i64)
}

/// n/d as an f64 with relative error < 2^-50, NaN when out of the normal range.
pub fn approx_ratio(n: &Integer, d: &Natural) -> f64 {
    if *n == 0u32 {
        return 0.0;
    }
    let (tn, sn) = top_bits(n.unsigned_abs_ref());
    let (td, sd) = top_bits(d);
    let q = tn as f64 / td as f64; // in (2^-64, 2^64)
    let e = sn - sd;
    if !(-900..=900).contains(&e) {
        return f64::NAN;
    }
    let v = q * f64::from_bits(((e + 1023) as u64) << 52);
    if *n < 0u32 { -v } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;
    use malachite::base::num::arithmetic::traits::{Pow, PowerOf2};

    fn q(p: i64, d: i64) -> Rational {
        Rational::from(p) / Rational::from(d)
    }

    #[test]
    fn round_trips_through_shared_denominator() {
        let vals = vec![q(1, 4), q(-2, 3), q(5, 1), q(0, 1), q(7, 12)];
        let v = ExactVector::from_rationals(&vals);
        assert_eq!(v.den, Natural::from(12u32));
        assert_eq!(v.to_rationals(), vals);
    }

    #[test]
    fn strip_and_reduce_keep_values() {
        let mut v = ExactVector::from_parts(
            vec![Integer::from(48), Integer::from(-96), Integer::from(0)],
            Natural::from(144u32),
        );
        let before = v.to_rationals();
        v.strip_twos();
        assert_eq!(v.den, Natural::from(9u32));
        v.reduce();
        assert_eq!(v.den, Natural::from(3u32));
        assert_eq!(v.to_rationals(), before);
    }

    #[test]
    fn normalize_reduces_once_the_denominator_has_grown() {
        let start = ExactVector::from_rationals(&[q(1, 1)]);
        // value 1 written over 3^k: the gcd must eventually bring it back to 1/1
        let mut v = start.clone();
        for k in 1..200u64 {
            let den = Natural::from(3u32).pow(k);
            v = ExactVector::successor(vec![Integer::from(&den)], den, &v);
            v.normalize();
            assert!(v.den.significant_bits() < 200, "denominator kept growing: {} bits", v.den.significant_bits());
        }
        assert_eq!(v.get(0), q(1, 1));
    }

    #[test]
    fn approximation_is_accurate_for_huge_values() {
        let big = Integer::power_of_2(5000) / Integer::from(3) + Integer::from(17);
        let den = Natural::power_of_2(5001);
        let a = approx_ratio(&big, &den);
        assert!((a - 1.0 / 6.0).abs() < 1e-15, "{a}");
        assert!(approx_ratio(&Integer::power_of_2(4000), &Natural::from(1u32)).is_nan());
        assert_eq!(approx_ratio(&Integer::from(-3), &Natural::from(4u32)), -0.75);
    }
}
