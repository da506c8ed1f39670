//! Vectors of exact rationals as small integer parts plus numerators over ONE shared
//! denominator.
//!
//! h_i = int_i + n_i / D with int_i ∈ i64, n_i ∈ ℤ and D ∈ ℕ⁺. Units whose value is an integer
//! (the 0/1 gates and thresholds of every compiled machine) live in `int` and never touch a
//! big number; only genuinely fractional values (stack encodings, counters) are numerators over
//! D, so a tick's big-number work is proportional to the number of fractional units, not to
//! the network's size. Sums of products of small integer weights with the numerators stay over
//! the common denominator, so a tick needs no gcd. The representation is kept small lazily: a
//! cheap strip of the common power of two after every tick (the constructions' denominators are
//! powers of 2 and 4), a full gcd only when D has grown by a quarter since the last one (its
//! cost amortised over many ticks), and D = 1 whenever no value is fractional. See `normalize`.

use malachite::base::num::arithmetic::traits::{DivExactAssign, Gcd, Lcm};
use malachite::base::num::logic::traits::SignificantBits;
use malachite::{Integer, Natural, Rational};

#[derive(Debug, Clone)]
pub struct ExactVector {
    /// integer parts
    pub int: Vec<i64>,
    /// fractional parts' numerators over `den`
    pub num: Vec<Integer>,
    pub den: Natural,
    /// bit size of `den` after the last full gcd reduction (drives `normalize`)
    reduced_bits: u64,
}

impl PartialEq for ExactVector {
    /// Equal values (the split into integer and fractional parts may differ).
    fn eq(&self, o: &Self) -> bool {
        self.len() == o.len() && (0..self.len()).all(|i| self.get(i) == o.get(i))
    }
}

impl ExactVector {
    pub fn zeros(d: usize) -> Self {
        ExactVector { int: vec![0; d], num: vec![Integer::from(0); d], den: Natural::from(1u32), reduced_bits: 1 }
    }

    /// Integers that fit an i64 go to the integer parts, the rest over the lcm of their
    /// denominators.
    pub fn from_rationals(values: &[Rational]) -> Self {
        let small = |v: &Rational| -> Option<i64> {
            if *v.denominator_ref() != 1u32 {
                return None;
            }
            i64::try_from(v.numerator_ref()).ok().map(|m| if *v < 0u32 { -m } else { m })
        };
        let mut den = Natural::from(1u32);
        for v in values.iter().filter(|v| small(v).is_none()) {
            den = den.lcm(v.to_denominator());
        }
        let mut int = vec![0; values.len()];
        let mut num = vec![Integer::from(0); values.len()];
        for (i, v) in values.iter().enumerate() {
            match small(v) {
                Some(m) => int[i] = m,
                None => {
                    let (n, d) = v.to_numerator_and_denominator();
                    let mag = Integer::from(n * (&den / d));
                    num[i] = if *v < 0u32 { -mag } else { mag };
                }
            }
        }
        let reduced_bits = den.significant_bits();
        ExactVector { int, num, den, reduced_bits }
    }

    /// Values num_i / den (no integer parts).
    pub fn from_parts(num: Vec<Integer>, den: Natural) -> Self {
        let reduced_bits = den.significant_bits();
        ExactVector { int: vec![0; num.len()], num, den, reduced_bits }
    }

    /// The next state of a run, keeping `prev`'s record of when the last full gcd ran (so
    /// `normalize` can tell how much the denominator has grown since).
    pub fn successor(int: Vec<i64>, num: Vec<Integer>, den: Natural, prev: &ExactVector) -> Self {
        ExactVector { int, num, den, reduced_bits: prev.reduced_bits }
    }

    pub fn len(&self) -> usize {
        self.num.len()
    }

    pub fn is_empty(&self) -> bool {
        self.num.is_empty()
    }

    /// Entry i is exactly zero.
    pub fn is_zero(&self, i: usize) -> bool {
        self.int[i] == 0 && self.num[i] == 0u32
    }

    /// The i-th entry as a reduced rational.
    pub fn get(&self, i: usize) -> Rational {
        let f = if self.num[i] == 0u32 {
            Rational::from(0)
        } else {
            Rational::from_integers_ref(&self.num[i], &Integer::from(&self.den))
        };
        f + Rational::from(self.int[i])
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
        if self.num.iter().all(|n| *n == 0u32) {
            self.den = Natural::from(1u32);
            self.reduced_bits = 1;
            return;
        }
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
                if *n != 0u32 {
                    *n >>= tz;
                }
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

    /// Keeps the representation small: strip the common power of two once it reaches 64 bits
    /// (stripping every tick would shift every numerator every tick); a full gcd when the
    /// denominator has grown past 5/4 of its size at the last reduction plus 64 bits.
    pub fn normalize(&mut self) {
        let all_zero = self.num.iter().all(|n| *n == 0u32);
        if all_zero || self.den.trailing_zeros().unwrap_or(0) >= 64 || self.den.significant_bits() <= 64 {
            self.strip_twos();
        }
        let bits = self.den.significant_bits();
        if bits > self.reduced_bits + self.reduced_bits / 4 + 64 {
            self.reduce();
        }
    }

    /// f64 approximation of entry i with relative error below 2^-50 (of the fractional part,
    /// plus the rounding of the sum), or NaN when outside the normal f64 range (callers then
    /// fall back to exact arithmetic).
    pub fn approx(&self, i: usize) -> f64 {
        let f = if self.num[i] == 0u32 { 0.0 } else { approx_ratio(&self.num[i], &self.den) };
        f + self.int[i] as f64
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
            v = ExactVector::successor(vec![0], vec![Integer::from(&den)], den, &v);
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
