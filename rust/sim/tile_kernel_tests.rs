//! The tile kernel against the sequential definition, bit for bit: every builtin format,
//! fused or not, tile widths 1 and 2, shapes around the tile and pass sizes.

use super::*;
use crate::num::float::Float;
use half::{bf16, f16};

/// Random Wᵀ (k × units) packed with tile width nr, ns rows of z (stride ldz = k + 3) and
/// initial accumulators, values of the format in about ±3.9.
struct Case<F: LaneFormat> {
    wt: Vec<F::C>,
    packed: Packed<F::C>,
    z: Vec<F::C>,
    ldz: usize,
    init: Vec<F::C>,
}

fn case<F: LaneFormat>(k: usize, units: usize, ns: usize, nr: usize) -> Case<F> {
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
    Case { wt, packed, z, ldz, init }
}

fn check<F: LaneFormat>(k: usize, units: usize, ns: usize, nr: usize, fma: bool) {
    let c = case::<F>(k, units, ns, nr);
    accumulate_is_sequential::<F>(&c.wt, &c.packed, &c.z, c.ldz, ns, &c.init, fma);
}

/// `accumulate` from `init` against the sequential definition a = a + w·z (or fma(w, z, a))
/// for k ascending, element by element, bit for bit (the Debug form tells −0 from +0).
fn accumulate_is_sequential<F: LaneFormat>(wt: &[F::C], packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, init: &[F::C], fma: bool) {
    let mut got = init.to_vec();
    accumulate::<F>(packed, z, ldz, ns, &mut got, fma);
    assert_sequential::<F>(wt, packed, z, ldz, ns, init, fma, &got);
}

/// `got` against the sequential definition from `init` (as `accumulate_is_sequential`).
#[allow(clippy::too_many_arguments)]
fn assert_sequential<F: LaneFormat>(wt: &[F::C], packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, init: &[F::C], fma: bool, got: &[F::C]) {
    let (k, units) = (packed.k, packed.units);
    for si in 0..ns {
        for i in 0..units {
            let mut a = F::from_lane(init[si * packed.up + i]);
            for kk in 0..k {
                let (w, zk) = (F::from_lane(wt[kk * units + i]), F::from_lane(z[si * ldz + kk]));
                a = if fma { w.mul_add(zk, a) } else { a.add(w.mul(zk)) };
            }
            assert_eq!(format!("{:?}", F::from_lane(got[si * packed.up + i])), format!("{a:?}"), "{} k {k} units {units} ns {ns} seq {si} unit {i} fma {fma}", F::NAME);
        }
    }
}

fn check_affine<F: LaneFormat>(ks: &[usize], units: usize, ns: usize, nr: usize, fma: bool) {
    check_affine_strides::<F>(ks, units, ns, nr, fma, |k| k + 2)
}

/// `check_affine` with the z rows of a term of k values `ldz_of(k)` apart.
fn check_affine_strides<F: LaneFormat>(ks: &[usize], units: usize, ns: usize, nr: usize, fma: bool, ldz_of: impl Fn(usize) -> usize) {
    let mut s = 7u64 + (ks.iter().sum::<usize>() * 131 + units * 7 + ns) as u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::from_f64_rounded(((s >> 33) % 2001) as f64 / 256.0 - 3.9).to_lane()
    };
    let wts: Vec<Vec<F::C>> = ks.iter().map(|&k| (0..k * units).map(|_| next()).collect()).collect();
    let packs: Vec<Packed<F::C>> = ks.iter().zip(&wts).map(|(&k, wt)| Packed::new(wt, k, units, nr)).collect();
    let up = packs[0].up;
    let ldz: Vec<usize> = ks.iter().map(|&k| ldz_of(k)).collect();
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

/// `f::<F>(args)` for every builtin format F (f32, f64, bf16, f16).
macro_rules! every_format {
    ($f:ident($($arg:expr),*)) => {
        $f::<f32>($($arg),*);
        $f::<f64>($($arg),*);
        $f::<bf16>($($arg),*);
        $f::<f16>($($arg),*);
    };
}

#[test]
fn affine_equals_the_bias_then_each_term_in_order_bit_for_bit() {
    // terms empty (all of them: the bias alone), short, spanning the KC passes (7 + KC + 44:
    // the pass boundary inside the second term; KC + 44 + KC + 4: inside both), and more
    // than one pass's worth in the first
    let cases: &[(&[usize], usize, usize)] = &[(&[0, 0], 16, 3), (&[0], 40, 2), (&[0, 5], 16, 9), (&[3, 0], 40, 8), (&[7, KC + 44], 33, 11), (&[KC + 44, KC + 4], 64, 3), (&[64, 192], 20, 17), (&[4, 16], 16, 1), (&[1], 7, 5), (&[2, 3, 4], 24, 10)];
    for &(ks, units, ns) in cases {
        for nr in [1, 2] {
            for fma in [false, true] {
                every_format!(check_affine(ks, units, ns, nr, fma));
            }
        }
    }
}

/// `affine_binary16` (and `affine_bits`, from binary16 z rows) gives `affine::<f16>`'s rows
/// as binary16 bits, for the cases above, other z strides and an empty block.
#[test]
fn affine_binary16_equals_affine_of_f16_bit_for_bit() {
    if !native_f16() {
        return;
    }
    let cases: &[(&[usize], usize, usize)] = &[(&[0, 0], 16, 3), (&[0, 5], 16, 9), (&[3, 0], 40, 8), (&[7, 300], 33, 11), (&[300, 260], 64, 3), (&[64, 192], 20, 17), (&[4, 16], 64, 13), (&[16], 48, 25), (&[1], 7, 5), (&[2, 3, 4], 24, 10), (&[4], 16, 0)];
    for (n, &(ks, units, ns)) in cases.iter().enumerate() {
        for fma in [false, true] {
            let mut s = 11u64 + n as u64;
            let mut next = || {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                f16::from_f64(((s >> 33) % 4001) as f64 / 512.0 - 3.9).to_f32()
            };
            let packs: Vec<Packed<f32>> = ks.iter().map(|&k| Packed::for_units(&(0..k * units).map(|_| next()).collect::<Vec<_>>(), k, units)).collect();
            let ldz: Vec<usize> = ks.iter().map(|&k| k + n % 3).collect();
            let zs: Vec<Vec<f32>> = ldz.iter().map(|&l| (0..ns * l + 1).map(|_| next()).collect()).collect();
            let up = packs[0].up;
            let bias: Vec<f32> = (0..up).map(|i| if i < units { next() } else { 0.0 }).collect();
            let terms: Vec<Term<'_, f32>> = (0..ks.len()).map(|i| Term { w: &packs[i], z: &zs[i], ldz: ldz[i] }).collect();
            let mut want = vec![0.0f32; ns * up];
            affine::<f16>(&bias, &terms, ns, &mut want, fma);
            let uh = binary16_width(&packs[0]);
            let mut got = vec![0xffffu16; ns * uh];
            affine_binary16(&bias, &terms, ns, &mut got, fma);
            // and `affine_bits`, from the z rows' binary16 bits
            let z16: Vec<Vec<u16>> = zs.iter().map(|z| z.iter().map(|&v| f16::from_f32(v).to_bits()).collect()).collect();
            let bit_terms: Vec<(&Packed<f32>, &[u16], usize)> = (0..ks.len()).map(|i| (&packs[i], &z16[i][..], ldz[i])).collect();
            let mut from_bits = vec![0xffffu16; ns * uh];
            affine_bits(&bias, &bit_terms, ns, &mut from_bits, fma);
            for si in 0..ns {
                for i in 0..units {
                    let w = f16::from_f32(want[si * up + i]).to_bits();
                    assert_eq!(got[si * uh + i], w, "ks {ks:?} units {units} ns {ns} fma {fma}: seq {si} unit {i}");
                    assert_eq!(from_bits[si * uh + i], w, "affine_bits, ks {ks:?} units {units} ns {ns} fma {fma}: seq {si} unit {i}");
                }
            }
        }
    }
}

/// The portable loops (what a CPU without AVX-512 runs), compiled for the target and for
/// AVX2 + FMA (when this CPU has them), called directly: every panel width (`blocked`'s
/// register blocks of 4, 2 and 1 rows, with leftover rows; other widths unit by unit), bit
/// for bit.
fn check_portable<F: LaneFormat>(k: usize, units: usize, ns: usize, nr: usize, fma: bool) {
    let Case { wt, packed, z, ldz, init } = case::<F>(k, units, ns, nr);
    let panels = 0..packed.up / packed.pw;
    let mut got = init.clone();
    // SAFETY: `got` holds the ns rows of stride `up`.
    unsafe {
        if fma {
            portable::<F, true, false>(&packed, &z, ldz, ns, got.as_mut_ptr(), panels.clone())
        } else {
            portable::<F, false, false>(&packed, &z, ldz, ns, got.as_mut_ptr(), panels.clone())
        }
    }
    assert_sequential::<F>(&wt, &packed, &z, ldz, ns, &init, fma, &got);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        let mut got = init.clone();
        let term = Term { w: &packed, z: &z, ldz };
        // SAFETY: as above, and the CPU has AVX2 and FMA (checked).
        unsafe { avx2_term::<F>(&term, ns, got.as_mut_ptr(), fma, panels) };
        assert_sequential::<F>(&wt, &packed, &z, ldz, ns, &init, fma, &got);
    }
}

#[test]
fn portable_loops_equal_the_sequential_definition_bit_for_bit() {
    for &(k, units, ns) in &[(1, 1, 1), (9, 16, 7), (33, 40, 13), (4, 70, 3), (0, 8, 2)] {
        for nr in [1, 2, 4, 3] {
            for fma in [false, true] {
                every_format!(check_portable(k, units, ns, nr, fma));
            }
        }
    }
}

/// Every group height of the tiles: 1–12 rows (AVX-512 f32/f64 tiles hold 12, the half
/// formats 8, AVX2 6), alone and after full groups.
#[test]
fn tiles_equal_the_sequential_definition_bit_for_bit() {
    for &(k, units, ns) in &[(1, 1, 1), (5, 16, 8), (20, 16, 9), (300, 40, 13), (7, 33, 3), (260, 64, 17), (3, 8, 1), (20, 40, 35), (9, 33, 22), (64, 96, 12), (11, 64, 24), (6, 20, 10)] {
        for nr in [1, 2] {
            for fma in [false, true] {
                every_format!(check(k, units, ns, nr, fma));
            }
        }
    }
}

/// Blocks of one or two sequences run tiles of 4 panels side by side (`tile_x86`: the
/// panels in groups of 4, then one at a time): the same bits, for panel counts 4–9 (with
/// the bias, two terms spanning a KC pass boundary, and accumulating).
#[test]
fn wide_tiles_of_one_or_two_sequences_give_the_same_bits() {
    for ns in [1, 2] {
        for units in [64, 100, 140, 290] {
            for nr in [1, 2] {
                for fma in [false, true] {
                    every_format!(check(37, units, ns, nr, fma));
                    every_format!(check_affine(&[9, KC + 44], units, ns, nr, fma));
                }
            }
        }
    }
}

/// Weights above 1 MiB take the prefetching path (`tile_x86::Prefetch`: the tiles fetch
/// the next panels' slices, or the next pass's first ones, as they run): the same bits.
#[test]
fn streamed_weights_give_the_same_bits() {
    // (2·KC + 98)·512 f32 = 4.2 MiB in three passes; two terms KC + 44 + KC + 164
    // (4.5 MiB), passes that span both; f64 at about half the k
    for fma in [false, true] {
        check::<f32>(2 * KC + 98, 512, 11, 2, fma);
        check::<f32>(2 * KC + 98, 512, 31, 2, fma);
        check_affine::<f32>(&[KC + 44, KC + 164], 512, 9, 2, fma);
        check::<f64>(KC + 49, 512, 10, 2, fma);
        check_affine::<f64>(&[KC / 2 + 22, KC / 2 + 82], 512, 3, 1, fma);
        // odd panel counts (15 and 31): the unfused tiles' pairs of panels end with one
        check::<f32>(2 * KC + 98, 480, 13, 2, fma);
        check_affine::<f64>(&[100, KC + 49], 496, 7, 2, fma);
    }
}

/// z rows whose stride puts a tile's current lines in a few L1 sets (4 KiB and 8 KiB
/// apart, 1 KiB, and 4 KiB + 4 bytes) run from a copy at another stride (`tile_rows`):
/// the same bits, with a second term left in place.
#[test]
fn rows_at_conflicting_strides_give_the_same_bits() {
    for (ks, ldz) in [(&[1000usize, 24][..], 1024), (&[7, 250], 256), (&[500], 1025)] {
        let stride = |k: usize| if k >= 250 { ldz } else { k + 2 };
        assert!(crate::sim::tile_rows::conflicting(ldz * std::mem::size_of::<f32>(), 12));
        for fma in [false, true] {
            every_format!(check_affine_strides(ks, 40, 14, 2, fma, stride));
        }
        check_affine_strides::<f32>(ks, 96, 5, 1, false, stride);
    }
}

/// Calls over at least `COPY_MIN_UNITS` (256) units, padded to whole panels, run the group
/// tiles from a pass's copy of z (`tile_rows::pass_copy`, rows a compile-time stride apart):
/// the same bits, at 256 and 272 units (copied) and 192 (not, in every format's panels), for
/// 3–25 sequences (partial groups of the 12-, 8-, 6- and 4-row tiles), two terms with the
/// pass boundary (k = KC) in the first (KC + 4 + 20, KC + 44 + 20) or the second
/// (KC − 56 + 100, 30 + KC + 44), z rows at conflicting (4 and 8 KiB apart in f32) and
/// ordinary strides, every format, fused or not, on the AVX-512 tiles and on the AVX2 ones;
/// and the gate split of an LSTM of hidden 64 (256 units) on the copy.
#[test]
fn tiles_from_a_pass_copy_give_the_same_bits() {
    fn cases() {
        for (ks, ldz) in [(&[KC - 56, 100][..], 1024), (&[30, KC + 44][..], 0), (&[KC + 4, 20][..], 2048), (&[KC + 44, 20][..], 0), (&[5][..], 0), (&[KC + 1][..], 2048)] {
            let stride = |k: usize| if ldz > 0 && k >= 100 { ldz } else { k + 3 };
            for (units, ns) in [(256, 3), (256, 13), (192, 25), (272, 12), (256, 8)] {
                for fma in [false, true] {
                    every_format!(check_affine_strides(ks, units, ns, 2, fma, stride));
                }
            }
        }
    }
    cases();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        x86::with_avx2_tiles(cases);
    }
    let lstm = [Some(0), Some(1), Some(3), Some(2), None];
    for fma in [false, true] {
        every_format!(check_gates(64, lstm, KC + 44, 13, fma));
    }
}

/// Passes of KC values of k over more than two sequences, with the bias on the first pass
/// and the gate split on the last: the same bits with the weights streamed (an LSTM of
/// hidden 256 over k = 2·KC + 98: 1024 units, 8.4 MiB of f32, three passes, the prefetch
/// reaching into the next pass) and not (k = KC + 300 over 96 units: 0.97 MiB of f64, two
/// passes), whole and partial groups.
#[test]
fn passes_of_streamed_and_cached_weights_give_the_same_bits() {
    let lstm = [Some(0), Some(1), Some(3), Some(2), None];
    for fma in [false, true] {
        check_gates::<f32>(256, lstm, 2 * KC + 98, 14, fma);
        check_gates::<f64>(256, lstm, KC + 44, 5, fma);
        every_format!(check_affine(&[20, KC + 280], 96, 13, 2, fma));
        every_format!(check(KC + 300, 96, 3, 1, fma));
    }
}

/// `affine_gates` against `affine` then pre[region][s][u] = addend + sum for the gates with
/// a region (the rest left as rows of `out`), bit for bit.
fn check_gates<F: LaneFormat>(hsz: usize, region: [Option<usize>; 5], k: usize, ns: usize, fma: bool) {
    let gates = region.iter().rposition(|r| r.is_some()).map_or(0, |g| g + 1).max(3);
    let units = gates * hsz;
    let mut s = 3u64 + (hsz * 17 + k * 5 + ns) as u64;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::from_f64_rounded(((s >> 33) % 2001) as f64 / 256.0 - 3.9).to_lane()
    };
    let wt: Vec<F::C> = (0..k * units).map(|_| next()).collect();
    let z: Vec<F::C> = (0..ns * (k + 1)).map(|_| next()).collect();
    let bias: Vec<F::C> = (0..units).map(|_| next()).collect();
    // the addend rows further apart than `up` (hoisted input rows: several ticks per sequence)
    let ald = 3 * units + 37;
    let addend: Vec<F::C> = (0..ns * ald).map(|_| next()).collect();
    let regions = region.iter().flatten().map(|&r| r + 1).max().unwrap_or(0);
    // panels of this machine's width (`Packed::for_units`: one vector for the AVX2 tiles)
    // and of two vectors (AVX-512's width, which the AVX2 tiles run in two stripes)
    for p in [Packed::for_units(&wt, k, units), Packed::new(&wt, k, units, 2)] {
        let up = p.up;
        let mut bias = bias.clone();
        bias.resize(up, F::C::default());
        let terms = [Term { w: &p, z: &z, ldz: k + 1 }];
        let mut want_out = vec![F::C::default(); ns * up];
        affine::<F>(&bias, &terms, ns, &mut want_out, fma);
        let (mut out, mut pre) = (vec![F::C::default(); ns * up], vec![F::C::default(); regions * ns * hsz]);
        let split = GateSplit { addend: &addend, addend_ld: ald, pre: &mut pre, hsz, region };
        if !affine_gates::<F>(&bias, &terms, ns, &mut out, split, fma) {
            // declined: a vector would hold two gates, the native f16 tile, fused bf16
            // (portable loops), or no AVX-512
            use crate::sim::lanes::Rounding;
            let declined = !hsz.is_multiple_of(lanes_of::<F::C>()) || F::ROUNDING == Rounding::F16;
            #[cfg(target_arch = "x86_64")]
            let declined = declined || (x86::avx2_forced() && !x86::avx2_tiles::<F>());
            assert!(declined || !cfg!(target_arch = "x86_64") || !crate::sim::cpu::avx512(), "{} hsz {hsz}: the split should run", F::NAME);
            continue;
        }
        let bits = |x: F::C| format!("{:?}", F::from_lane(x));
        for si in 0..ns {
            for i in 0..units {
                let (g, u) = (i / hsz, i % hsz);
                match region[g] {
                    Some(r) => {
                        let want = F::add_l(addend[si * ald + i], want_out[si * up + i]);
                        assert_eq!(bits(pre[r * ns * hsz + si * hsz + u]), bits(want), "{} hsz {hsz} k {k} ns {ns} pw {} seq {si} unit {i}", F::NAME, p.pw);
                    }
                    None => assert_eq!(bits(out[si * up + i]), bits(want_out[si * up + i]), "{} row unit {i} pw {}", F::NAME, p.pw),
                }
            }
        }
    }
}

#[test]
fn gate_split_equals_affine_then_the_gate_additions_bit_for_bit() {
    let lstm = [Some(0), Some(1), Some(3), Some(2), None];
    let gru = [Some(0), Some(1), None, None, None];
    let doubling = [Some(0), Some(1), Some(2), Some(4), Some(3)];
    // hsz 16 (one f32 vector per gate row; 48 GRU units leave a padded vector), 8 (f64 only),
    // 32, 5 (no split); k across a KC pass boundary (KC + 44): the split on the last pass only
    for &(hsz, k, ns) in &[(16, 20, 9), (8, 7, 3), (32, KC + 44, 10), (16, KC + 44, 17), (5, 4, 4)] {
        for region in [lstm, gru, doubling] {
            for fma in [false, true] {
                every_format!(check_gates(hsz, region, k, ns, fma));
            }
        }
    }
}

/// The half formats with f32 sums (`affine_gates` on f32's tiles, `tile_avx512::F32<0, B, G>`):
/// pre = R(R(addend) + R(sum)), the rounded addition the cells' loops make of unrounded f32
/// sums (`gated_half_loops::F32Sums`), the rows without a region left as f32's sums, bit
/// for bit; the addends f32 values off the half grid (gi rows not hoisted) and NaN in
/// places (kept), the sums overflowing the format's range in places (f16). Declined only
/// without AVX-512 or where a vector would hold two gates.
fn check_gates_f32_sums<F: LaneFormat<C = f32>>(hsz: usize, region: [Option<usize>; 5], k: usize, ns: usize, fma: bool) {
    let units = region.iter().rposition(|r| r.is_some()).map_or(0, |g| g + 1).max(3) * hsz;
    let mut s = 11u64 + (hsz * 7 + k * 3 + ns) as u64;
    let mut next = |scale: f64| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::from_lane(((s >> 33) % 200_001) as f32 / 25_600.0 - 3.9).to_lane() * scale as f32
    };
    let round = |x: f32| {
        let mut v = [x];
        F::round_lanes(&mut v);
        v[0]
    };
    let wt: Vec<f32> = (0..k * units).map(|_| round(next(1.0))).collect();
    let p = Packed::for_units(&wt, k, units);
    let up = p.up;
    let z: Vec<f32> = (0..ns * (k + 1)).map(|_| round(next(if k % 2 == 1 { 4096.0 } else { 1.0 }))).collect();
    let mut bias: Vec<f32> = (0..units).map(|_| round(next(1.0))).collect();
    bias.resize(up, 0.0);
    let ald = 2 * up + 3;
    let addend: Vec<f32> = (0..ns * ald).map(|i| if i % 37 == 5 { f32::NAN } else { next(1.0) }).collect();
    let terms = [Term { w: &p, z: &z, ldz: k + 1 }];
    let regions = region.iter().flatten().map(|&r| r + 1).max().unwrap_or(0);
    // f32's sums, unrounded (what the rows without a region keep)
    let mut sums = vec![0f32; ns * up];
    affine::<f32>(&bias, &terms, ns, &mut sums, fma);
    let (mut out, mut pre) = (vec![0f32; ns * up], vec![0f32; regions * ns * hsz]);
    let split = GateSplit { addend: &addend, addend_ld: ald, pre: &mut pre, hsz, region };
    if !affine_gates::<F>(&bias, &terms, ns, &mut out, split, fma) {
        assert!(!hsz.is_multiple_of(16) || !cfg!(target_arch = "x86_64") || !crate::sim::cpu::avx512(), "{} hsz {hsz}: the split should run", F::NAME);
        return;
    }
    for si in 0..ns {
        for i in 0..units {
            let (g, u) = (i / hsz, i % hsz);
            match region[g] {
                Some(r) => {
                    let want = F::add_l(round(addend[si * ald + i]), round(sums[si * up + i]));
                    let got = pre[r * ns * hsz + si * hsz + u];
                    assert_eq!(got.to_bits(), want.to_bits(), "{} hsz {hsz} k {k} ns {ns} fma {fma} seq {si} unit {i}: {got} vs {want}", F::NAME);
                }
                None => assert_eq!(out[si * up + i].to_bits(), sums[si * up + i].to_bits(), "{} row unit {i}", F::NAME),
            }
        }
    }
}

#[test]
fn gate_split_of_f32_sums_rounds_each_sum_then_the_addition() {
    use crate::num::f32_sums::{Bf16SumF32, F16SumF32};
    let lstm = [Some(0), Some(1), Some(3), Some(2), None];
    let gru = [Some(0), Some(1), None, None, None];
    for &(hsz, k, ns) in &[(16, 20, 9), (16, 7, 13), (32, KC + 44, 10), (16, KC + 44, 17), (48, 5, 2), (5, 4, 4)] {
        for region in [lstm, gru] {
            for fma in [false, true] {
                check_gates_f32_sums::<Bf16SumF32>(hsz, region, k, ns, fma);
                check_gates_f32_sums::<F16SumF32>(hsz, region, k, ns, fma);
            }
        }
    }
}

/// `Packed::for_units` packs one vector per panel for the AVX2 tiles (one stripe:
/// `x86::one_stripe_panels`), two where it would fill them for the AVX-512 ones.
#[cfg(target_arch = "x86_64")]
#[test]
fn panels_are_one_vector_wide_for_the_avx2_tiles() {
    let widths = || (Packed::for_units(&[0f32; 3 * 64], 3, 64).pw, Packed::for_units(&[0f64; 3 * 64], 3, 64).pw);
    if crate::sim::cpu::avx512() {
        assert_eq!(widths(), (32, 16));
    }
    if crate::sim::cpu::avx2_fma() {
        assert_eq!(x86::with_avx2_tiles(widths), (16, 8));
    }
}

/// The AVX2 tiles (`tile_avx2`: 6 sequences × stripes of 2 vectors, 8 f32 or 4 f64
/// lanes; bf16 and f16 in f32 lanes, tiles of 4 × 2), forced on this CPU: the cases of the
/// tests above, bit for bit against the sequential definition. Row counts around 6 and its
/// multiples, one- and two-stripe panels.
#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_tiles_equal_the_sequential_definition_bit_for_bit() {
    if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
        return;
    }
    x86::with_avx2_tiles(|| {
        for &(k, units, ns) in &[(1, 1, 1), (5, 16, 6), (20, 16, 7), (300, 40, 13), (7, 33, 12), (260, 64, 17), (3, 8, 5), (9, 20, 18)] {
            for nr in [1, 2] {
                for fma in [false, true] {
                    every_format!(check(k, units, ns, nr, fma));
                }
            }
        }
        let cases: &[(&[usize], usize, usize)] = &[(&[0, 5], 16, 9), (&[7, KC + 44], 33, 11), (&[KC + 44, KC + 4], 64, 3), (&[2, 3, 4], 24, 10)];
        for &(ks, units, ns) in cases {
            for nr in [1, 2] {
                for fma in [false, true] {
                    every_format!(check_affine(ks, units, ns, nr, fma));
                }
            }
        }
        for ns in [1, 2] {
            for units in [64, 100, 140] {
                for fma in [false, true] {
                    check::<f32>(37, units, ns, 2, fma);
                    check_affine::<f64>(&[9, KC + 44], units, ns, 2, fma);
                }
            }
        }
        for fma in [false, true] {
            check::<f32>(2 * KC + 98, 512, 11, 2, fma);
            check::<f32>(2 * KC + 98, 512, 31, 2, fma);
            check_affine::<f64>(&[KC / 2 + 22, KC / 2 + 82], 512, 7, 2, fma);
        }
        let lstm = [Some(0), Some(1), Some(3), Some(2), None];
        let gru = [Some(0), Some(1), None, None, None];
        for &(hsz, k, ns) in &[(16, 20, 9), (8, 7, 3), (32, KC + 44, 13), (5, 4, 4)] {
            for region in [lstm, gru] {
                for fma in [false, true] {
                    every_format!(check_gates(hsz, region, k, ns, fma));
                }
            }
        }
    });
}

/// Values of a half format for the fused tests below: mantissas of few bits (so that sums
/// are often exact and often land on midpoints of the format's grid) or of all bits, with
/// exponents over `e` (subnormals and near-overflow included), either sign, some zeros.
fn spread<F: LaneFormat>(rng: &mut crate::machine::random::SplitMix64, e: std::ops::Range<i32>) -> F::C {
    let r = rng.next_u64();
    let m = if r & 1 == 0 { 1.0 + ((r >> 1) % 8) as f64 / 8.0 } else { 1.0 + ((r >> 1) % 1024) as f64 / 1024.0 };
    let exp = e.start + ((r >> 20) % (e.end - e.start) as u64) as i32;
    let v = if (r >> 40).is_multiple_of(16) { 0.0 } else { m * 2f64.powi(exp) };
    F::from_f64_rounded(if r >> 63 == 1 { -v } else { v }).to_lane()
}

/// The fused step of the half formats' tiles (AVX2: round-to-odd from TwoSum in f32;
/// AVX-512: from two directed-rounding FMAs) on values spread over each format's range, one
/// step (acc from the format's grid: cancellations, midpoints, subnormal and overflowing
/// sums) and chains of 7: bit for bit against the definition (`Float::mul_add`, the
/// round-to-odd emulation in f64). Each case on the tiles this CPU runs and, where it has
/// AVX2, on the AVX2 tiles forced.
#[test]
fn fused_half_tiles_equal_the_definition_across_the_range() {
    fn run<F: LaneFormat>(e: std::ops::Range<i32>) {
        let mut rng = crate::machine::random::SplitMix64(0xf0_5ed ^ u64::from(e.start.unsigned_abs()));
        for &(k, units, ns) in &[(1usize, 64usize, 40usize), (7, 24, 13), (1, 8, 1)] {
            for _ in 0..40 {
                let wt: Vec<F::C> = (0..k * units).map(|_| spread::<F>(&mut rng, e.clone())).collect();
                let packed = Packed::new(&wt, k, units, 2);
                let z: Vec<F::C> = (0..ns * k).map(|_| spread::<F>(&mut rng, e.clone())).collect();
                // half of the accumulators near −w·z of their first step (cancellation)
                let init: Vec<F::C> = (0..ns * packed.up)
                    .map(|i| {
                        let (s, u) = (i / packed.up, i % packed.up);
                        let near = F::from_lane(wt[u.min(units - 1)]).to_f64() * F::from_lane(z[s * k]).to_f64();
                        if i % 2 == 0 { F::from_f64_rounded(-near * (1.0 + ((i / 2) % 5) as f64 / 512.0)).to_lane() } else { spread::<F>(&mut rng, e.clone()) }
                    })
                    .collect();
                accumulate_is_sequential::<F>(&wt, &packed, &z, k, ns, &init, true);
                #[cfg(target_arch = "x86_64")]
                if crate::sim::cpu::avx2_f16c() {
                    x86::with_avx2_tiles(|| accumulate_is_sequential::<F>(&wt, &packed, &z, k, ns, &init, true));
                }
            }
        }
    }
    // f16: every product is exact in f32, so all of its range; bf16: the exponents whose
    // products stay exact in f32 (the tiles' precondition), and the whole range (the
    // calls whose products are not exact take the portable loop)
    run::<f16>(-26..17);
    run::<bf16>(-60..60);
    run::<bf16>(-135..128);
}

/// The fused bf16 tile (f32 lanes, round-to-odd from two directed-rounding FMAs) at the edges
/// of the product range: products below f32's quantum, around 2^−126, near overflow, tiny
/// times huge, an infinite z. Every case against the sequential definition (`bf16::mul_add`),
/// bit for bit.
#[test]
fn fused_bf16_is_exact_at_the_edges_of_the_product_range() {
    let cases: [(f64, f64); 8] = [
        (1.0, 1.0),           // ordinary values
        (2e-20, 3e-20),       // |w·z| ≈ 6e−40 < 2^−126: f32 products would lose bits
        (1e-23, 1e-23),       // |w·z| ≈ 1e−46: below f32's smallest subnormal
        (2e-19, 3e-19),       // around 2^−126 (1.18e−38)
        (1e19, 3e19),         // ≈ 3e38 ≥ 2^127: f32 products would overflow
        (1e19, 1e19),         // 1e38 < 2^127
        (1e-30, 1e30),        // tiny times huge: products near 1
        (1.0, f64::INFINITY), // an infinite state
    ];
    let (k, units, ns) = (9, 32, 11);
    for (wscale, zscale) in cases {
        let mut s = 5u64;
        let mut next = |scale: f64| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = ((s >> 33) % 2001) as f64 / 1000.0 - 1.0;
            // a few exact zeros, the rest in scale·[0.5, 1)
            if v.abs() < 0.1 { 0.0 } else { scale * (0.5 + v.abs() / 2.0).copysign(v) }
        };
        let wt: Vec<f32> = (0..k * units).map(|_| bf16::from_f64_rounded(next(wscale)).to_lane()).collect();
        let packed = Packed::new(&wt, k, units, 2);
        let z: Vec<f32> = (0..ns * k).map(|_| bf16::from_f64_rounded(next(zscale)).to_lane()).collect();
        // accumulators around the products' size, so that the sums matter
        let init: Vec<f32> = (0..ns * packed.up).map(|_| bf16::from_f64_rounded(next((wscale * zscale).min(1e30))).to_lane()).collect();
        accumulate_is_sequential::<bf16>(&wt, &packed, &z, k, ns, &init, true);
    }
}

/// The two ways a product of bf16 values rounded in f32 would change a fused result (a
/// product that underflows f32 is below half bf16's smallest quantum, so only a zero's sign
/// can differ; a product that overflows f32 can be brought back into range by the
/// accumulator): the fused tile keeps the exact product inside the FMA, so both come out as
/// the definition's.
#[test]
fn fused_bf16_keeps_the_zero_sign_of_tiny_products_and_cancels_huge_ones() {
    let b = |v: f64| bf16::from_f64_rounded(v);
    // (w, z, acc, want): +0 + (−1e−23·1e−23) = −1e−46 exactly, which rounds to −0 (f32: the
    // product rounds to −0 and +0 + −0 = +0); 2^64·(1 + 2^−7)·2^64 − (2 − 2^−7)·2^127 =
    // 2^127·(2^−6 + 2^−7) (f32: the product overflows to +∞)
    let cases = [(b(-1e-23), b(1e-23), b(0.0), b(-0.0)), (b(2f64.powi(64) * (1.0 + 2f64.powi(-7))), b(2f64.powi(64)), b(-(2.0 - 2f64.powi(-7)) * 2f64.powi(127)), b(2f64.powi(127) * (2f64.powi(-6) + 2f64.powi(-7))))];
    for (w, z, acc, want) in cases {
        assert_eq!(w.mul_add(z, acc).to_bits(), want.to_bits(), "the definition");
        let (units, ns) = (32, 3);
        let packed = Packed::new(&vec![w.to_lane(); units], 1, units, 2);
        let zs = vec![z.to_lane(); ns];
        let mut got = vec![acc.to_lane(); ns * packed.up];
        accumulate::<bf16>(&packed, &zs, 1, ns, &mut got, true);
        for (i, &g) in got.iter().enumerate().filter(|(i, _)| i % packed.up < units) {
            assert_eq!(bf16::from_lane(g).to_bits(), want.to_bits(), "w {w} z {z} acc {acc}: element {i}");
        }
    }
}

/// Tile rates (f32 and f64, fused and unfused; the AVX2 tiles and loops fused) at the
/// shapes of `benches/bench_torch.py`'s layers, or at those of
/// `TILE_RATES="k,units,sequences;..."`, best of 20:
/// `cargo test --release --lib tile_rates -- --ignored --nocapture`. Nothing asserted
/// (the machine is shared); weights above `L2_BUDGET` (from the third shape on: 1.3–19 MB in
/// f32, twice that in f64) are streamed from L3 with prefetching (`tile_x86::Prefetch`).
#[test]
#[ignore]
fn tile_rates() {
    // (k, units, sequences) from TILE_RATES="k,units,ns;...", else issue 7's layers
    fn shapes() -> Vec<(usize, usize, usize)> {
        let Ok(given) = std::env::var("TILE_RATES") else {
            // GRU/LSTM hidden 64, RNN/LSTM hidden 256, RNN/GRU/LSTM hidden 1024 (32 sequences:
            // one thread's share of issue 7's batch of 64 on two threads)
            return vec![(64, 256, 280), (320, 256, 256), (320, 1024, 256), (1152, 1024, 64), (1152, 1024, 32), (1152, 3072, 64), (1152, 4096, 64)];
        };
        let shape = |part: &str| match part.split(',').map(|v| v.trim().parse().ok()).collect::<Option<Vec<usize>>>()?[..] {
            [k, units, ns] if k > 0 && units > 0 && ns > 0 => Some((k, units, ns)),
            _ => None,
        };
        given.split(';').map(|part| shape(part).unwrap_or_else(|| panic!("TILE_RATES: {part:?} is not k,units,sequences (positive)"))).collect()
    }
    fn rates<F: LaneFormat<C = F> + Copy + Default + 'static>(name: &str, of: fn(f64) -> F) {
        for (k, units, ns) in shapes() {
            let wt: Vec<F> = (0..k * units).map(|i| of(((i % 17) as f64 - 8.0) / 64.0)).collect();
            let packed = Packed::for_units(&wt, k, units);
            let z: Vec<F> = (0..ns * k).map(|i| of(((i % 13) as f64 - 6.0) / 32.0)).collect();
            let bias: Vec<F> = vec![of(0.25); packed.up];
            let rate = |run: &mut dyn FnMut(&mut [F])| {
                let mut out = vec![of(0.0); ns * packed.up];
                let mut best = f64::INFINITY;
                for _ in 0..20 {
                    let t0 = std::time::Instant::now();
                    run(&mut out);
                    best = best.min(t0.elapsed().as_secs_f64());
                }
                2.0 * (k * units * ns) as f64 / best / 1e9
            };
            let terms = [Term { w: &packed, z: &z, ldz: k }];
            let tiles = rate(&mut |out| affine::<F>(&bias, &terms, ns, out, true));
            let unfused = rate(&mut |out| affine::<F>(&bias, &terms, ns, out, false));
            #[cfg(target_arch = "x86_64")]
            let (avx2, loops) = (
                rate(&mut |out| x86::with_avx2_tiles(|| affine::<F>(&bias, &terms, ns, out, true))),
                // SAFETY: `out` holds the ns rows; the CPU has AVX2 + FMA (this machine's tiers)
                rate(&mut |out| unsafe { avx2_term::<F>(&terms[0], ns, out.as_mut_ptr(), true, 0..packed.up / packed.pw) }),
            );
            #[cfg(not(target_arch = "x86_64"))]
            let (avx2, loops) = (0.0, 0.0);
            eprintln!("{name} k {k} units {units} sequences {ns}: {tiles:.1} G flop/s, unfused {unfused:.1} (fused: AVX2 tiles {avx2:.1}, AVX2 loops {loops:.1})");
        }
    }
    rates::<f32>("f32", |v| v as f32);
    rates::<f64>("f64", |v| v);
}

/// The f32 and f64 tiles, fused and unfused, with z broadcast into a register
/// (`Ops::REG_BROADCAST`, Intel and Zen 5) and with the broadcast embedded in each FMA or
/// multiply (Zen 4) give the same bits, whichever this CPU runs: tile rows 1–13 (partial
/// tiles), widths 1 and 2, k around a pass (KC).
#[cfg(all(target_arch = "x86_64", rnnsim_avx512_tiles))]
#[test]
fn tiles_broadcast_either_way_with_the_same_bits() {
    if !crate::sim::cpu::avx512() {
        return;
    }
    fn both<F: LaneFormat>() {
        for fma in [true, false] {
            for (k, units, ns, nr) in [(1, 16, 1, 1), (7, 40, 5, 2), (64, 64, 12, 2), (KC + 44, 33, 13, 1), (KC + 1, 96, 25, 2)] {
                let c = case::<F>(k, units, ns, nr);
                let mut reg = c.init.clone();
                let mut embedded = c.init.clone();
                super::tile_avx512::accumulate_broadcast(&c.packed, &c.z, c.ldz, ns, &mut reg, true, fma);
                super::tile_avx512::accumulate_broadcast(&c.packed, &c.z, c.ldz, ns, &mut embedded, false, fma);
                // bit for bit (the Debug form tells −0 from +0)
                let bits = |v: &[F::C]| v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>();
                assert_eq!(bits(&reg), bits(&embedded), "{} fma {fma} k {k} units {units} ns {ns} nr {nr}", F::NAME);
                // and both are the sequential definition
                assert_sequential::<F>(&c.wt, &c.packed, &c.z, c.ldz, ns, &c.init, fma, &reg);
            }
        }
    }
    both::<f32>();
    both::<f64>();
}
