//! The bf16 pair tile (`tile_bf16_pairs`, `vdpbf16ps`) against the sequential f32 sum,
//! bit for bit, through every entry that reaches it (`accumulate`, `affine`, the gate
//! split of f32 sums); that it runs where its precondition holds and declines, with the
//! same bits from f32's tiles, where it does not. These are also the check that this CPU's
//! `vdpbf16ps` computes what the module doc says: cancelling sums (exact zeros of either
//! sign, ties), both halves of each pair, odd k.

use super::tile_bf16_pairs::{bf16_in_range, start_in_range, without_pairs, RUNS};
use super::*;
use crate::machine::random::SplitMix64;
use crate::num::f32_sums::Bf16SumF32;

/// A bf16 value: either a short dyadic (m/8 · 2^e, e in −3..3, so that sums cancel to
/// exact zeros and land on ties) or one with 8 random bits over `e`, either sign, zeros.
fn value(rng: &mut SplitMix64, e: std::ops::Range<i32>) -> f32 {
    let r = rng.next_u64();
    let v = if (r >> 40).is_multiple_of(9) {
        0.0
    } else if r & 1 == 0 {
        (1.0 + ((r >> 1) % 8) as f64 / 8.0) * 2f64.powi(((r >> 8) % 7) as i32 - 3)
    } else {
        (1.0 + ((r >> 1) % 128) as f64 / 128.0) * 2f64.powi(e.start + ((r >> 20) % (e.end - e.start) as u64) as i32)
    };
    let v = if r >> 63 == 1 { -v } else { v } as f32;
    assert!(bf16_in_range(v) || e.start < -50 || e.end > 50, "{v:e}");
    v
}

struct Map {
    ks: Vec<usize>,
    units: usize,
    wts: Vec<Vec<f32>>,
    packs: Vec<Packed<f32>>,
    zs: Vec<Vec<f32>>,
    ldz: Vec<usize>,
    bias: Vec<f32>,
}

fn map(ks: &[usize], units: usize, ns: usize, nr: usize, seed: u64, e: std::ops::Range<i32>) -> Map {
    let mut rng = SplitMix64(seed);
    let wts: Vec<Vec<f32>> = ks.iter().map(|&k| (0..k * units).map(|_| value(&mut rng, e.clone())).collect()).collect();
    let packs: Vec<Packed<f32>> = ks.iter().zip(&wts).map(|(&k, w)| Packed::new(w, k, units, nr)).collect();
    let ldz: Vec<usize> = ks.iter().map(|&k| k + 3).collect();
    let zs = ldz.iter().map(|&l| (0..ns * l).map(|_| value(&mut rng, e.clone())).collect()).collect();
    let mut bias: Vec<f32> = (0..units).map(|_| value(&mut rng, e.clone())).collect();
    bias.resize(packs[0].up, 0.0);
    Map { ks: ks.to_vec(), units, wts, packs, zs, ldz, bias }
}

impl Map {
    fn terms(&self) -> Vec<Term<'_, f32>> {
        (0..self.ks.len()).map(|t| Term { w: &self.packs[t], z: &self.zs[t], ldz: self.ldz[t] }).collect()
    }

    /// `affine`, and whether the pair tile ran it.
    fn affine(&self, ns: usize, fma: bool) -> (Vec<f32>, bool) {
        let mut out = vec![f32::NAN; ns * self.packs[0].up];
        let before = RUNS.get();
        affine::<f32>(&self.bias, &self.terms(), ns, &mut out, fma);
        (out, RUNS.get() > before)
    }

    /// The sequential f32 sum of row s, unit i: a = init, then a + w·z for each term, k
    /// ascending (each product exact here: fused and unfused agree).
    fn sequential(&self, init: f32, s: usize, i: usize) -> f32 {
        let mut a = init;
        for (t, &k) in self.ks.iter().enumerate() {
            for kk in 0..k {
                a = self.wts[t][kk * self.units + i].mul_add(self.zs[t][s * self.ldz[t] + kk], a);
            }
        }
        a
    }

    fn assert_sequential(&self, ns: usize, got: &[f32], init: impl Fn(usize, usize) -> f32, what: &str) {
        let up = self.packs[0].up;
        for s in 0..ns {
            for i in 0..self.units {
                let want = self.sequential(init(s, i), s, i);
                let g = got[s * up + i];
                assert_eq!(g.to_bits(), want.to_bits(), "{what}: ks {:?} units {} ns {ns} seq {s} unit {i}: {g:e} vs {want:e}", self.ks, self.units);
            }
        }
    }
}

#[test]
fn pair_tile_equals_the_sequential_f32_sum_bit_for_bit() {
    if !crate::sim::cpu::avx512_bf16() {
        return;
    }
    // one and two terms, odd and even k (a pad in either), panels of one and two vectors,
    // partial tiles (3–13 rows) and several groups; one pass of KC pairs exactly (300 + 211
    // values), two with the boundary inside a term (600 + 129), three with it at the end of
    // the first term (511 + 700: 256 pairs, then 350)
    let cases: &[(&[usize], usize, usize, usize)] = &[(&[16], 64, 12, 1), (&[1], 48, 3, 1), (&[7, 4], 64, 13, 2), (&[5, 33], 80, 25, 1), (&[64], 256, 7, 2), (&[300, 211], 64, 4, 2), (&[2, 3], 80, 40, 2), (&[600, 129], 64, 5, 2), (&[511, 700], 48, 13, 1)];
    for (n, &(ks, units, ns, nr)) in cases.iter().enumerate() {
        for (e, seed) in [(-4..4, 1u64), (-50..50, 2)] {
            let m = map(ks, units, ns, nr, seed + 10 * n as u64, e);
            for fma in [false, true] {
                let (got, ran) = m.affine(ns, fma);
                assert!(ran, "ks {ks:?} units {units} ns {ns}: the pair tile should run");
                m.assert_sequential(ns, &got, |_, i| m.bias[i], "affine");
            }
            // accumulate: each row from its own start (in range, some zeros of either sign)
            let mut rng = SplitMix64(seed);
            let up = m.packs[0].up;
            let init: Vec<f32> = (0..ns * up).map(|j| if j % 11 == 3 { -0.0 } else { value(&mut rng, -80..90) }).collect();
            if ks.len() == 1 {
                let mut got = init.clone();
                let before = RUNS.get();
                accumulate::<f32>(&m.packs[0], &m.zs[0], m.ldz[0], ns, &mut got, true);
                assert!(RUNS.get() > before);
                m.assert_sequential(ns, &got, |s, i| init[s * up + i], "accumulate");
            }
        }
    }
}

#[test]
fn pair_tile_declines_out_of_range_values_with_the_same_bits() {
    if !crate::sim::cpu::avx512_bf16() {
        return;
    }
    let (ks, units, ns) = (&[9usize, 4][..], 64, 14);
    let check = |m: &Map, ns: usize, runs: bool, what: &str| {
        let (got, ran) = m.affine(ns, true);
        assert_eq!(ran, runs, "{what}: the pair tile {}", if runs { "should run" } else { "should decline" });
        let (f32s, _) = without_pairs(|| m.affine(ns, true));
        assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), f32s.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), "{what}");
        m.assert_sequential(ns, &got, |_, i| m.bias[i], what);
    };
    let base = || map(ks, units, ns, 2, 5, -6..6);
    check(&base(), ns, true, "in range");
    check(&base(), 2, false, "two rows");
    check(&map(ks, 32, ns, 2, 5, -6..6), ns, false, "32 units");
    // z values: the edges of the range run; below it, off the grid, NaN and ∞ decline
    for (v, runs) in [(2f32.powi(-50), true), (-1.9921875 * 2f32.powi(49), true), (2f32.powi(-51), false), (2f32.powi(50), false), (1.0 + 2f32.powi(-10), false), (f32::NAN, false), (f32::NEG_INFINITY, false), (1e-40, false)] {
        assert_eq!(bf16_in_range(v), runs, "{v:e}");
        let mut m = base();
        m.zs[1][5 * m.ldz[1] + 3] = v;
        check(&m, ns, runs, &format!("z {v:e}"));
    }
    // more than MAX_PASSES passes (k > 2·KC·8): f32's tiles
    check(&map(&[4098], 48, 3, 1, 6, -3..3), 3, false, "k 4098");
    // a z value out of range in the last of three passes, from acc: declined before any
    // pass is written
    for runs in [false, true] {
        let mut m = map(&[1400], 64, 5, 2, 8, -3..3);
        if !runs {
            m.zs[0][3 * m.ldz[0] + 1399] = 2f32.powi(-60);
        }
        let init: Vec<f32> = (0..5 * m.packs[0].up).map(|j| j as f32 / 8.0).collect();
        let mut got = init.clone();
        let before = RUNS.get();
        accumulate::<f32>(&m.packs[0], &m.zs[0], m.ldz[0], 5, &mut got, false);
        assert_eq!(RUNS.get() > before, runs);
        m.assert_sequential(5, &got, |s, i| init[s * m.packs[0].up + i], "accumulate, three passes");
    }
    // a weight off the grid (an f32 map) or tiny: declined for good (found once per packing)
    for v in [0.1f32, 2f32.powi(-70)] {
        let mut m = base();
        m.wts[0][3 * units + 7] = v;
        m.packs[0] = Packed::new(&m.wts[0], ks[0], units, 2);
        check(&m, ns, false, &format!("weight {v:e}"));
    }
    // the bias starts every row: below 2^−90 (but not zero) it declines, off the grid it runs
    for (v, runs) in [(2f32.powi(-91), false), (2f32.powi(-90), true), (0.1, true), (-0.0, true), (2f32.powi(100), false), (f32::INFINITY, false)] {
        assert_eq!(start_in_range(v), runs, "{v:e}");
        let mut m = base();
        m.bias[17] = v;
        check(&m, ns, runs, &format!("bias {v:e}"));
    }
    // products that cancel a start exactly: +0 and −0 sums (the FTZ/DAZ-free range keeps them)
    let mut m = map(&[2], 64, 5, 1, 9, -2..2);
    for s in 0..5 {
        m.zs[0][s * m.ldz[0]] = 1.0;
        m.zs[0][s * m.ldz[0] + 1] = if s % 2 == 0 { 0.0 } else { -0.0 };
    }
    for i in 0..64 {
        m.bias[i] = -m.wts[0][i];
    }
    let (got, ran) = m.affine(5, false);
    assert!(ran && got[..64].iter().all(|x| *x == 0.0));
    m.assert_sequential(5, &got, |_, i| m.bias[i], "cancelling");
}

/// The gate split of a bf16 map with f32 sums (`F32<0, B, 1>` stores): the same bits with
/// and without the pair tile, and the pair tile ran.
#[test]
fn pair_tile_gate_split_of_bf16_sums_gives_the_same_bits() {
    if !crate::sim::cpu::avx512_bf16() {
        return;
    }
    let lstm = [Some(0), Some(1), Some(3), Some(2), None];
    let gru = [Some(0), Some(1), None, None, None];
    // k of two passes (600): the split on the last
    for (hsz, k, ns, region) in [(16, 16, 24, lstm), (16, 7, 13, gru), (64, 64, 9, lstm), (32, 3, 3, gru), (16, 600, 5, lstm)] {
        let units = 4 * hsz;
        let mut rng = SplitMix64(hsz as u64 + k as u64);
        let wt: Vec<f32> = (0..k * units).map(|_| value(&mut rng, -8..8)).collect();
        let p = Packed::for_units(&wt, k, units);
        let up = p.up;
        let z: Vec<f32> = (0..ns * (k + 1)).map(|_| value(&mut rng, -8..8)).collect();
        let mut bias: Vec<f32> = (0..units).map(|_| value(&mut rng, -8..8)).collect();
        bias.resize(up, 0.0);
        let ald = 2 * up + 3;
        let addend: Vec<f32> = (0..ns * ald).map(|i| if i % 37 == 5 { f32::NAN } else { value(&mut rng, -8..8) * 1.001 }).collect();
        let terms = [Term { w: &p, z: &z, ldz: k + 1 }];
        let run = || {
            let (mut out, mut pre) = (vec![0f32; ns * up], vec![0f32; 4 * ns * hsz]);
            let split = GateSplit { addend: &addend, addend_ld: ald, pre: &mut pre, hsz, region };
            let before = RUNS.get();
            assert!(affine_gates::<Bf16SumF32>(&bias, &terms, ns, &mut out, split, true));
            (out, pre, RUNS.get() > before)
        };
        let (out, pre, ran) = run();
        let (out32, pre32, ran32) = without_pairs(run);
        assert!(ran && !ran32, "hsz {hsz} k {k}");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&pre), bits(&pre32), "hsz {hsz} k {k} ns {ns}: gates");
        for s in 0..ns {
            for (g, r) in region.iter().enumerate() {
                if r.is_none() && g < 4 {
                    let row = s * up + g * hsz..s * up + (g + 1) * hsz;
                    assert_eq!(bits(&out[row.clone()]), bits(&out32[row]), "hsz {hsz}: rows");
                }
            }
        }
    }
}
