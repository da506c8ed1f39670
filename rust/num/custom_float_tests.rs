//! Tests of `custom_float`: bit identity with the builtin formats, the exact oracle
//! (`round::round_to_format` of the exact rational result) for every path, hand-checked
//! rounding cases.

use super::*;
use crate::num::round::round_to_format;
use half::{bf16, f16};

fn fmt(m: i64, e: i64) -> CustomFormat {
    CustomFormat::new(m, e).unwrap()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The same operations in a builtin type and in the custom format, compared bit for bit.
fn same_as_builtin<F: Float>(format: CustomFormat, values: &[f64]) {
    with_format(format, || {
        for (i, &a) in values.iter().enumerate() {
            let b = values[(i * 7 + 3) % values.len()];
            let (fa, fb) = (F::from_f64_rounded(a), F::from_f64_rounded(b));
            let (ca, cb) = (Custom::from_f64_rounded(a), Custom::from_f64_rounded(b));
            let pairs = [
                (fa.to_f64(), ca.to_f64()),
                (fa.add(fb).to_f64(), ca.add(cb).to_f64()),
                (fa.mul(fb).to_f64(), ca.mul(cb).to_f64()),
                (fa.tanh().to_f64(), ca.tanh().to_f64()),
                (fa.sigmoid().to_f64(), ca.sigmoid().to_f64()),
            ];
            for (k, (want, got)) in pairs.into_iter().enumerate() {
                assert!(want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()), "{} op {k} on {a:e}, {b:e}: {want:e} vs {got:e}", F::NAME);
            }
        }
    })
}

fn random_values(n: usize, seed: u64, scale: i32) -> Vec<f64> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let m = (r.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let e = (r.next() % (2 * scale as u64 + 1)) as i32 - scale;
            m * 2f64.powi(e)
        })
        .collect()
}

#[test]
fn builtin_formats_are_bit_identical() {
    for (scale, seed) in [(3, 1), (20, 2), (140, 3)] {
        let v = random_values(3000, seed, scale);
        same_as_builtin::<f16>(fmt(10, 5), &v);
        same_as_builtin::<bf16>(fmt(7, 8), &v);
        same_as_builtin::<f32>(fmt(23, 8), &v);
        same_as_builtin::<f64>(fmt(52, 11), &v);
    }
}

/// a + b and a·b against the exact rational result rounded by `round_to_format`.
fn matches_oracle(format: CustomFormat, n: usize, seed: u64, scale: i32) {
    let bf = format.binary_format();
    let vals = random_values(n, seed, scale);
    with_format(format, || {
        let xs: Vec<Custom> = vals.iter().map(|&v| Custom::from_rational(&Rational::try_from(v).unwrap())).collect();
        let exact = |c: Custom| c.to_rational();
        for i in 0..n {
            let (a, b, c) = (xs[i], xs[(i * 5 + 1) % n], xs[(i * 7 + 3) % n]);
            let (Some(ra), Some(rb), Some(rc)) = (exact(a), exact(b), exact(c)) else { continue };
            // the fused multiply-add against a·b + c rounded once; half the time c ≈ −a·b
            // (cancellation: the rounding then depends on the product's low bits)
            let near = Custom::from_rational(&-(&ra * &rb)).add(c.mul(Custom::from_f64_exact(1.0 / 1024.0)));
            let (c, rc) = match exact(near) {
                Some(rn) if i % 2 == 0 => (near, rn),
                _ => (c, rc),
            };
            for (got, want) in [(a.add(b), &ra + &rb), (a.mul(b), &ra * &rb), (a.mul_add(b, c), &ra * &rb + &rc)] {
                match round_to_format(&want, bf) {
                    Rounded::Finite(q) => {
                        assert_eq!(got.to_rational(), Some(q.clone()), "{} {a:?} {b:?}", format.info().name);
                        if q == 0u32 {
                            assert_eq!(got.is_sign_negative(), want < 0u32 || (want == 0u32 && got.is_sign_negative()));
                        }
                    }
                    Rounded::Infinite { negative } => {
                        assert!(got.is_infinite() && got.is_sign_negative() == negative, "{got:?}")
                    }
                }
            }
        }
    })
}

#[test]
fn every_path_matches_the_exact_oracle() {
    // F64ThenRound, Big with small p (wide exponent), Big with large p
    for (m, e) in [(1, 2), (2, 3), (3, 4), (12, 6), (24, 9), (1, 10), (5, 12), (30, 8), (60, 15), (112, 15), (127, 20)] {
        for (scale, seed) in [(2, 11), (12, 12), (40, 13)] {
            matches_oracle(fmt(m, e), 600, seed + m as u64, scale);
        }
    }
}

#[test]
fn hand_checked_rounding() {
    with_format(fmt(1, 2), || {
        // p = 2, emax = 1, emin = 0: values 0, 0.5 (subnormal), 1, 1.5, 2, 3
        let c = |v: f64| Custom::from_f64_exact(v);
        assert_eq!(c(1.0).add(c(1.5)).to_f64(), 2.0, "2.5 ties to the even 2");
        assert_eq!(c(1.5).mul(c(1.5)).to_f64(), 2.0, "2.25 rounds to 2");
        assert!(c(1.5).add(c(2.0)).is_infinite(), "3.5 rounds to 4 > 3: overflow");
        assert_eq!(c(0.5).mul(c(0.5)).to_f64(), 0.0, "0.25 is half the smallest subnormal: tie to 0");
        assert_eq!(c(0.5).mul(c(1.5)).to_f64(), 1.0, "0.75 ties between 0.5 and 1: to even 1");
        assert!(c(-0.5).mul(c(0.5)).is_sign_negative(), "underflow keeps the sign");
    });
    with_format(fmt(1, 10), || {
        // same p = 2 on the Big path: 1 + 1.5 = 2.5 -> 2, 1.5·1.5 = 2.25 -> 2
        let c = |v: f64| Custom::from_f64_exact(v);
        assert_eq!(c(1.0).add(c(1.5)).to_f64(), 2.0);
        assert_eq!(c(1.5).mul(c(1.5)).to_f64(), 2.0);
        // emin = -510, smallest subnormal 2^(emin - p + 1) = 2^-511
        let tiny = Custom::from_rational(&Rational::power_of_2(-511i64));
        assert_eq!(tiny.to_rational().unwrap(), Rational::power_of_2(-511i64));
        assert_eq!(Custom::from_rational(&Rational::power_of_2(-512i64)).to_f64(), 0.0);
        assert_eq!(tiny.mul(c(0.5)).to_f64(), 0.0, "half the smallest subnormal ties to 0");
        assert_eq!(tiny.mul(c(1.5)).to_rational().unwrap(), Rational::power_of_2(-510i64), "1.5 ulp ties to even 2 ulp");
    });
    with_format(fmt(112, 15), || {
        // binary128: 1 + 2^-113 is a tie -> 1; 1 + 3·2^-113 -> 1 + 2^-111
        let one = Custom::one();
        let r = |q: Rational| Custom::from_rational(&q);
        let ulp = Rational::power_of_2(-112i64);
        assert_eq!(one.add(r(&ulp / Rational::from(2))).to_rational().unwrap(), Rational::from(1));
        assert_eq!(one.add(r(&ulp * Rational::from(3) / Rational::from(2))).to_rational().unwrap(), Rational::from(1) + &ulp * Rational::from(2));
        let max = r(BinaryFormat::ieee(112, 15).max_finite());
        assert!(max.add(max).is_infinite() && !max.is_infinite());
        // tanh at binary128 is correctly rounded: compare with malachite at p = 113 directly
        let x = r(Rational::from(1) / Rational::from(3));
        let want = Big::from_rational_prec(Rational::from(1) / Rational::from(3), 113).0.tanh_prec_round(113, Nearest).0;
        assert_eq!(x.tanh().to_rational().unwrap(), Rational::try_from(&want).unwrap());
        let s = x.sigmoid().to_f64();
        assert!((s - 1.0 / (1.0 + (-1.0f64 / 3.0).exp())).abs() < 1e-15);
    });
}

#[test]
fn format_free_constants_adopt_the_operands_format() {
    let (w, z, o) = with_format(fmt(3, 4), || (Custom::from_f64_rounded(1.3), Custom::zero(), Custom::one()));
    assert_eq!(w.to_f64(), 1.25);
    // constants built outside a scope (as on a rayon worker) carry no format ...
    let (z2, o2) = (Custom::zero(), Custom::one());
    assert!(z2.format().is_none() && o.format().is_some());
    // ... and take the weight's: 1.25 · 1 + 1.25 = 2.5, a value of fp(3,4)
    assert_eq!(w.mul(o2).add(w).to_f64(), 2.5);
    assert_eq!(w.mul(o2).add(w).format().unwrap().name, "fp(3,4)");
    assert!(z2 < w && z == z2 && o2 == o);
}
