//! Tests of `approx_activation`: the widths agree bit for bit, and the error bound.
use super::*;

/// `count` f32 bit patterns (half anywhere, half with |x| < 256), then the special values.
fn samples(seed: u64, count: usize) -> Vec<f32> {
    let mut s = seed;
    let mut xs: Vec<f32> = (0..count)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let bits = (s >> 32) as u32;
            f32::from_bits(if i % 2 == 0 { bits } else { bits & 0x83ff_ffff })
        })
        .collect();
    xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, -1e-40, 0.625, -0.625, 9.5, -104.0, -87.5]);
    xs
}

/// The correctly rounded value (the default activations' definition).
fn exact(f: Func, x: f32) -> f32 {
    match f {
        Func::Tanh => (f64::from(x)).tanh() as f32,
        Func::Sigmoid => (1.0 / (1.0 + (-f64::from(x)).exp())) as f32,
    }
}

/// The same bits, or both NaN (a NaN's payload is the platform's).
fn same(a: f32, b: u32) -> bool {
    a.to_bits() == b || (a.is_nan() && f32::from_bits(b).is_nan())
}

/// How many f32 steps apart a and b are (0 for two NaNs; both finite or equal infinities).
fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() { 0 } else { u64::MAX };
    }
    // the f32 values in order as integers (−0 and +0 next to each other)
    let key = |v: f32| {
        let i = v.to_bits() as i32;
        i64::from(if i < 0 { i32::MIN - i } else { i })
    };
    (key(a) - key(b)).unsigned_abs()
}

#[test]
fn every_width_gives_the_portable_bits() {
    let xs = samples(99, 300_000);
    for f in [Func::Tanh, Func::Sigmoid] {
        let want: Vec<u32> = xs.iter().map(|&x| one(f, x).to_bits()).collect();
        let mut ys = xs.clone();
        slice(f, &mut ys); // the widest this CPU runs
        for (i, (&x, &w)) in xs.iter().zip(&want).enumerate() {
            assert!(same(ys[i], w), "{f:?} {x:e}: dispatched {:e} vs portable {:e}", ys[i], f32::from_bits(w));
        }
        #[cfg(target_arch = "x86_64")]
        if crate::sim::cpu::avx2_fma() {
            let mut y256 = xs.clone();
            // SAFETY: checked.
            unsafe { x86::slice256(f, &mut y256) };
            for (i, (&x, &w)) in xs.iter().zip(&want).enumerate() {
                assert!(same(y256[i], w), "{f:?} {x:e}: avx2 {:e} vs portable {:e}", y256[i], f32::from_bits(w));
            }
            // the ragged tails: lengths 1..=41 (groups of four vectors side by side, then
            // single vectors, then a partial one)
            for len in 1..=41 {
                let mut t = xs[..len].to_vec();
                unsafe { x86::slice256(f, &mut t) };
                assert!(t.iter().zip(&want).all(|(&a, &b)| same(a, b)));
            }
        }
        #[cfg(target_arch = "x86_64")]
        if crate::sim::cpu::avx512() {
            for len in 1..=33 {
                let mut t = xs[..len].to_vec();
                unsafe { x86::slice512(f, &mut t) };
                assert!(t.iter().zip(&want).all(|(&a, &b)| same(a, b)));
            }
        }
    }
}

#[test]
fn within_two_ulps_and_exact_at_the_landmarks() {
    let xs = samples(7, 300_000);
    for f in [Func::Tanh, Func::Sigmoid] {
        let worst = xs.iter().map(|&x| ulps(one(f, x), exact(f, x))).max().unwrap();
        assert!(worst <= 2, "{f:?}: {worst} ulps");
    }
    assert_eq!(one(Func::Sigmoid, 0.0), 0.5);
    assert_eq!(one(Func::Sigmoid, -0.0), 0.5);
    assert_eq!(one(Func::Sigmoid, f32::INFINITY), 1.0);
    assert_eq!(one(Func::Sigmoid, f32::NEG_INFINITY), 0.0);
    assert_eq!(one(Func::Sigmoid, -104.0), 0.0);
    assert_eq!(one(Func::Tanh, -0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(one(Func::Tanh, 1e-40), 1e-40);
    assert_eq!(one(Func::Tanh, f32::NEG_INFINITY), -1.0);
    assert_eq!(one(Func::Tanh, 9.0), 1.0);
    assert!(one(Func::Tanh, f32::NAN).is_nan() && one(Func::Sigmoid, -f32::NAN).is_nan());
}

/// All 2^32 inputs: the widths agree, and the error in ulps (printed: the README's figures).
/// `cargo test --release --lib approx_every_f32 -- --ignored --nocapture`
#[test]
#[ignore]
fn approx_every_f32() {
    use rayon::prelude::*;
    for f in [Func::Tanh, Func::Sigmoid] {
        // per block of 2^16: [exact, 1 ulp, 2 ulps, more, width mismatches]
        let counts = (0..1u32 << 16)
            .into_par_iter()
            .map(|hi| {
                let xs: Vec<f32> = (0..1u32 << 16).map(|lo| f32::from_bits(hi << 16 | lo)).collect();
                let mut ys = xs.clone();
                slice(f, &mut ys);
                let mut c = [0u64; 5];
                for (&x, &y) in xs.iter().zip(&ys) {
                    let p = one(f, x);
                    c[4] += u64::from(!same(y, p.to_bits()));
                    c[ulps(p, exact(f, x)).min(3) as usize] += 1;
                }
                c
            })
            .reduce(|| [0; 5], |a, b| std::array::from_fn(|i| a[i] + b[i]));
        eprintln!("{f:?}: correctly rounded {}, 1 ulp {}, 2 ulps {}, more {}, width mismatches {}", counts[0], counts[1], counts[2], counts[3], counts[4]);
        assert_eq!(counts[3] + counts[4], 0, "{f:?}");
    }
}

/// Speed of [`slice`] over 4,096 values on (−4, 4), ns per value, with the correctly rounded
/// functions beside it (`cargo test --release --lib approx_ns_per_value -- --ignored
/// --nocapture`; prints, asserts nothing on time).
#[test]
#[ignore]
fn approx_ns_per_value() {
    let xs: Vec<f32> = (0..4096).map(|i| ((i * 7919) % 4096) as f32 / 512.0 - 4.0).collect();
    use crate::net::activation::Activation;
    for (f, act) in [(Func::Tanh, Activation::Tanh), (Func::Sigmoid, Activation::Sigmoid)] {
        let approx = crate::sim::timing::best_ns_per_value(&xs, &|v| slice(f, v));
        let exact = crate::sim::timing::best_ns_per_value(&xs, &|v| crate::sim::float_batch::activate::<f32>(act, v));
        eprintln!("{f:?}: approximate {approx:.3} ns/value, correctly rounded {exact:.3}");
    }
}
