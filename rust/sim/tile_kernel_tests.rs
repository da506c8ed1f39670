//! The tile kernel against the sequential definition, bit for bit: every builtin format,
//! fused or not, tile widths 1 and 2, shapes around the tile and pass sizes.

use super::*;
use half::{bf16, f16};

fn check<F: LaneFormat>(k: usize, units: usize, ns: usize, nr: usize, fma: bool) {
    let mut s = 99u64 + (k * 31 + units * 7 + ns) as u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::from_f64_rounded(((s >> 33) % 2001) as f64 / 256.0 - 3.9).to_lane()
    };
    let wt: Vec<F::C> = (0..k * units).map(|_| next()).collect();
    let packed = Packed::new(&wt, k, units, nr);
    let ldz = k + 3;
    let z: Vec<F::C> = (0..ns * ldz).map(|_| next()).collect();
    let init: Vec<F::C> = (0..ns * packed.up).map(|_| next()).collect();
    let mut got = init.clone();
    accumulate::<F>(&packed, &z, ldz, ns, &mut got, fma);
    for si in 0..ns {
        for i in 0..units {
            let mut a = F::from_lane(init[si * packed.up + i]);
            for kk in 0..k {
                let (w, zk) = (F::from_lane(wt[kk * units + i]), F::from_lane(z[si * ldz + kk]));
                a = if fma { w.mul_add(zk, a) } else { a.add(w.mul(zk)) };
            }
            assert_eq!(format!("{:?}", F::from_lane(got[si * packed.up + i])), format!("{a:?}"), "{} k {k} units {units} ns {ns}", F::NAME);
        }
    }
}

/// `affine` with terms of `ks` values of k each against acc = b_i, then + w·z term by
/// term, k ascending (every operation rounded, or fused).
fn check_affine<F: LaneFormat>(ks: &[usize], units: usize, ns: usize, nr: usize, fma: bool) {
    let mut s = 7u64 + (ks.iter().sum::<usize>() * 131 + units * 7 + ns) as u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::from_f64_rounded(((s >> 33) % 2001) as f64 / 256.0 - 3.9).to_lane()
    };
    let wts: Vec<Vec<F::C>> = ks.iter().map(|&k| (0..k * units).map(|_| next()).collect()).collect();
    let packs: Vec<Packed<F::C>> = ks.iter().zip(&wts).map(|(&k, wt)| Packed::new(wt, k, units, nr)).collect();
    let up = packs[0].up;
    let ldz: Vec<usize> = ks.iter().map(|&k| k + 2).collect();
    let zs: Vec<Vec<F::C>> = ldz.iter().map(|&l| (0..ns * l).map(|_| next()).collect()).collect();
    let mut bias: Vec<F::C> = (0..units).map(|_| next()).collect();
    bias.resize(up, F::C::default());
    let terms: Vec<Term<'_, F::C>> = (0..ks.len()).map(|i| Term { w: &packs[i], z: &zs[i], ldz: ldz[i] }).collect();
    let mut got: Vec<F::C> = (0..ns * up).map(|_| next()).collect();
    affine::<F>(&bias, &terms, ns, &mut got, fma);
    for si in 0..ns {
        for i in 0..units {
            let mut a = F::from_lane(bias[i]);
            for (t, &k) in ks.iter().enumerate() {
                for kk in 0..k {
                    let (w, zk) = (F::from_lane(wts[t][kk * units + i]), F::from_lane(zs[t][si * ldz[t] + kk]));
                    a = if fma { w.mul_add(zk, a) } else { a.add(w.mul(zk)) };
                }
            }
            assert_eq!(format!("{:?}", F::from_lane(got[si * up + i])), format!("{a:?}"), "{} ks {ks:?} units {units} ns {ns} nr {nr} fma {fma}", F::NAME);
        }
    }
}

#[test]
fn affine_equals_the_bias_then_each_term_in_order_bit_for_bit() {
    // terms empty, short, spanning the KC passes (7 + 300: the pass boundary inside the
    // second term; 300 + 260: inside both), and more than one pass's worth in the first
    let cases: &[(&[usize], usize, usize)] = &[(&[0, 5], 16, 9), (&[3, 0], 40, 8), (&[7, 300], 33, 11), (&[300, 260], 64, 3), (&[64, 192], 20, 17), (&[4, 16], 16, 1), (&[1], 7, 5), (&[2, 3, 4], 24, 10)];
    for &(ks, units, ns) in cases {
        for nr in [1, 2] {
            for fma in [false, true] {
                check_affine::<f32>(ks, units, ns, nr, fma);
                check_affine::<f64>(ks, units, ns, nr, fma);
                check_affine::<bf16>(ks, units, ns, nr, fma);
                check_affine::<f16>(ks, units, ns, nr, fma);
            }
        }
    }
}

#[test]
fn tiles_equal_the_sequential_definition_bit_for_bit() {
    for &(k, units, ns) in &[(1, 1, 1), (5, 16, 8), (20, 16, 9), (300, 40, 13), (7, 33, 3), (260, 64, 17), (3, 8, 1)] {
        for nr in [1, 2] {
            for fma in [false, true] {
                check::<f32>(k, units, ns, nr, fma);
                check::<f64>(k, units, ns, nr, fma);
                check::<bf16>(k, units, ns, nr, fma);
                check::<f16>(k, units, ns, nr, fma);
            }
        }
    }
}
