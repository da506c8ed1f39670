//! The fast f64 activations against the exact computation (`num::correctly_rounded`), and
//! the error of the double-double evaluation against the bound Ziv's test assumes.

use super::*;
use crate::machine::random::SplitMix64;
use crate::sim::activation_f64_quick::TANH_STEP;
use malachite::base::num::arithmetic::traits::Abs;
use malachite::base::num::conversion::traits::ExactFrom;

/// Random values for the tests: splitmix64 (`machine::random`) bits, spread over binades.
struct Bits(SplitMix64);
impl Bits {
    fn new(seed: u64) -> Bits {
        Bits(SplitMix64(seed))
    }
    /// ±m·2^e with m uniform in [1, 2) and e uniform in [lo, hi].
    fn value(&mut self, lo: i32, hi: i32) -> f64 {
        let b = self.0.next_u64();
        let m = f64::from_bits((b >> 12) | 0x3ff0_0000_0000_0000);
        let e = lo + (b % (hi - lo + 1) as u64) as i32;
        let v = m * 2f64.powi(e);
        if b & 2048 != 0 { -v } else { v }
    }
}

/// Inputs over every range the evaluation distinguishes, with the thresholds and specials.
fn inputs(n: usize) -> Vec<f64> {
    let mut g = Bits::new(0x9e37_79b9_7f4a_7c15);
    let mut xs: Vec<f64> = (0..n).map(|i| if i % 4 == 0 { g.value(-12, 4) * 3.0 } else { g.value(-35, 10) }).collect();
    for t in [TANH_TINY, TANH_STEP / 2.0, TANH_STEP, TANH_ONE, SIGMOID_ONE, SIGMOID_ZERO, SIGMOID_LOW, 0.0, 1.0, 680.0, 746.0] {
        for v in [t, t.next_up(), t.next_down()] {
            xs.extend([v, -v]);
        }
    }
    xs.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 5e-324, f64::MAX, -700.0, -720.5]);
    xs
}

fn exact_all(f: Func, xs: &[f64]) -> Vec<f64> {
    xs.iter().map(|&x| exact(f, x)).collect()
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

#[test]
fn every_path_gives_the_correctly_rounded_value() {
    let xs = inputs(20_000);
    for f in [Func::Tanh, Func::Sigmoid] {
        let want = exact_all(f, &xs);
        let mut dispatched = xs.clone();
        slice(f, &mut dispatched);
        assert!(same(&dispatched, &want), "{f:?}: the dispatched slice");
        let (mut fma, mut dekker) = (xs.clone(), xs.clone());
        slice_body::<true>(f, &mut fma, &mut Lanes::<true>, &mut SliceBuffers::new());
        slice_body::<false>(f, &mut dekker, &mut Lanes::<false>, &mut SliceBuffers::new());
        assert!(same(&fma, &want), "{f:?}: the FMA body");
        assert!(same(&dekker, &want), "{f:?}: the Dekker body");
        #[cfg(target_arch = "x86_64")]
        if crate::sim::cpu::avx2_fma() {
            let mut avx2 = xs.clone();
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            unsafe { slice_avx2(f, &mut avx2) };
            assert!(same(&avx2, &want), "{f:?}: the AVX2 body");
        }
        let scalar: Vec<f64> = xs.iter().map(|&x| if f == Func::Tanh { tanh(x) } else { sigmoid(x) }).collect();
        assert!(same(&scalar, &want), "{f:?}: one value at a time");
    }
}

/// The relative error of the double-double value against a 300-bit one, in units of 2^−80.
fn error_of(dd: (f64, f64), exact: &Float) -> f64 {
    let v = Rational::exact_from(exact);
    let got = Rational::exact_from(dd.0) + Rational::exact_from(dd.1);
    let rel = (got - &v).abs() / v.abs();
    f64::rounding_from(&rel, Nearest).0 * 2f64.powi(80)
}

/// The error of the double-double value against a 300-bit one, in units of the module
/// doc's bound, 2^−95·|f(x)| + [`ERR_FLOOR`]/16 (a sixteenth of Ziv's floor, at least 8
/// times below its relative part 2^−92).
fn error_in_bounds(dd: (f64, f64), exact: &Float) -> f64 {
    let v = Rational::exact_from(exact);
    let got = Rational::exact_from(dd.0) + Rational::exact_from(dd.1);
    let bound = v.clone().abs() / Rational::from(1u128 << 95) + Rational::exact_from(ERR_FLOOR / 16.0);
    f64::rounding_from(&((got - &v).abs() / bound), Nearest).0
}

#[test]
fn the_double_double_error_is_below_the_bound_of_the_ziv_test() {
    let c = consts();
    let mut g = Bits::new(0x1234_5678_9abc_def1);
    let (mut worst_t, mut worst_s) = (0f64, 0f64);
    for i in 0..4000 {
        // tanh: a ∈ [2^−30, 20), and y = −2a with k = −1 and j = 511, 510, 509 (n = −1, −2,
        // −3), r ≈ 0 and, for n = −1, r near +ln 2/1024 (a just above ln 2/2048, where
        // T_511·P cancels part of T_511 − 2: the smallest |m| with k = −1); σ: x ∈
        // [−680, 40), and near −680 (low parts among subnormals)
        let eps = g.value(-20, -12).abs();
        let a = match i % 5 {
            0 | 1 => g.value(-30, 4).abs().min(19.99),
            2 => g.value(-12, -1).abs(),
            3 => (f64::from(1 + (i as u32 / 5) % 3) * std::f64::consts::LN_2 / 1024.0) * (1.0 + eps),
            _ => std::f64::consts::LN_2 / 2048.0 * (1.0 + eps),
        };
        let x = if i % 8 == 7 { -680.0 + g.value(-20, 3).abs() } else { g.value(-20, 9).clamp(-679.0, 39.9) };
        let ta = Float::from(a).tanh_prec_round(300, Nearest).0;
        worst_t = worst_t.max(error_in_bounds(tanh_dd::<true>(a, c), &ta));
        worst_t = worst_t.max(error_in_bounds(tanh_dd::<false>(a, c), &ta));
        let e = Float::from(-x).exp_prec_round(300, Nearest).0;
        let sx = e.add_prec_round(Float::from(1u32), 300, Nearest).0.reciprocal_prec_round(300, Nearest).0;
        worst_s = worst_s.max(error_in_bounds(sigmoid_dd::<true>(x, c), &sx));
        worst_s = worst_s.max(error_in_bounds(sigmoid_dd::<false>(x, c), &sx));
    }
    println!("worst error in units of 2^-95·|f| + 2^-1074: tanh {worst_t:.4}, σ {worst_s:.4} (Ziv's bound: 2^-92·|f| + 2^-1070)");
    assert!(worst_t < 1.0 && worst_s < 1.0, "tanh {worst_t}, σ {worst_s} (units of the bound)");
}

/// P = e^r − 1 of the reduced argument against a 300-bit value: below 2^−101 relative (the
/// module doc's bound), for |r| up to just past ln 2/1024, both signs, r as a pair.
#[test]
fn the_reduced_exponential_is_within_its_bound() {
    let c = consts();
    let mut g = Bits::new(0x00e4_91ed_0c7a_1e55);
    let mut worst = 0f64;
    for i in 0..6000 {
        let rh = if i % 3 == 0 { 0.000_677 * if i % 2 == 0 { 1.0 } else { -1.0 } } else { g.value(-40, -11) };
        let rl = g.value(-54, -53) * rh.abs() * if i % 5 == 0 { 0.0 } else { 1.0 };
        let (ph, pl) = expm1_reduced::<true>(rh, rl, c);
        let (qh, ql) = expm1_reduced::<false>(rh, rl, c);
        let r = Float::from_rational_prec_round(Rational::exact_from(rh) + Rational::exact_from(rl), 300, Nearest).0;
        let want = Rational::exact_from(&r.exp_prec_round(300, Nearest).0) - Rational::from(1);
        for (h, l) in [(ph, pl), (qh, ql)] {
            let got = Rational::exact_from(h) + Rational::exact_from(l);
            let rel = f64::rounding_from(&((got - &want).abs() / want.clone().abs()), Nearest).0;
            worst = worst.max(rel * 2f64.powi(101));
        }
    }
    println!("e^r - 1: worst relative error {worst:.5}·2^-101");
    assert!(worst < 1.0, "{worst}·2^-101");
}

/// The first tier's error against 300-bit values, within half its Ziv bounds (which are
/// twice the analysis's, or more): σ 2^−70 relative; tanh by e^{−2a}: 2^−70·s/(|m|·(2 + m))
/// + 2^−101, s = 2^k, m = e^{−2a} − 1; tanh by the odd series (a < 2^−7): a²·2^−52 + 2^−91.
#[test]
fn the_first_tier_error_is_below_the_bound_of_its_ziv_test() {
    use crate::sim::activation_f64_quick::{sigmoid_quick, tanh_quick, ERR_SIGMOID, ERR_TANH};
    let c = consts();
    let mut g = Bits::new(0x007e_570f_f157);
    let (mut worst_t, mut worst_series, mut worst_s) = (0f64, 0f64, 0f64);
    for i in 0..6000 {
        let a = match i % 3 {
            0 => g.value(-30, 4).abs().min(19.99),
            1 => g.value(-6, 1).abs(),
            _ => g.value(-12, -4).abs(), // the series' range and just above it
        };
        let x = (g.value(-20, 9)).clamp(-679.0, 39.9);
        let ta = Float::from(a).tanh_prec_round(300, Nearest).0;
        let e = Float::from(-x).exp_prec_round(300, Nearest).0;
        let sx = e.add_prec_round(Float::from(1u32), 300, Nearest).0.reciprocal_prec_round(300, Nearest).0;
        for fma in [true, false] {
            let (q, bound) = if fma { tanh_quick::<true>(a, c) } else { tanh_quick::<false>(a, c) };
            // in units of the analysis's bound (half of Ziv's)
            let rel = error_of(q, &ta) / (bound / q.0.abs() / 2.0 * 2f64.powi(80));
            let worst = if a < TANH_STEP / 2.0 { &mut worst_series } else { &mut worst_t };
            *worst = worst.max(rel);
            let q = if fma { sigmoid_quick::<true>(x, c) } else { sigmoid_quick::<false>(x, c) };
            worst_s = worst_s.max(error_of(q, &sx) / (ERR_SIGMOID / 2.0 * 2f64.powi(80)));
        }
    }
    println!("first tier, worst error in units of the analysis's bound: tanh {worst_t:.3} (series {worst_series:.3}), σ {worst_s:.3} (ERR_TANH {ERR_TANH:e})");
    assert!(worst_t < 1.0 && worst_series < 1.0 && worst_s < 1.0, "tanh {worst_t}, series {worst_series}, σ {worst_s}");
    assert!(worst_series > 0.0, "the series was sampled");
}

/// The second tier decides what the first leaves (about one value in 10^4; until session
/// 40 it left half of them to the exact computation), with the correctly rounded value.
#[test]
fn the_second_tier_decides_what_the_first_leaves() {
    let c = consts();
    let mut g = Bits::new(0x0bad_5eed_0bad_5eed);
    let mut found: Vec<(Func, f64)> = Vec::new();
    while found.len() < 120 {
        let x = g.value(-8, 3);
        if !tanh_lane::<true, QUICK>(x, c).1 {
            found.push((Func::Tanh, x));
        }
        if !sigmoid_lane::<true, QUICK>(x, c).1 {
            found.push((Func::Sigmoid, x));
        }
    }
    assert!(found.iter().any(|(f, _)| *f == Func::Tanh) && found.iter().any(|(f, _)| *f == Func::Sigmoid));
    for (f, x) in found {
        let want = exact(f, x).to_bits();
        for (v, decided) in [lane::<true, DOUBLE>(f, x), lane::<false, DOUBLE>(f, x)] {
            assert!(decided, "{f:?}({x:e}) left undecided by the second tier");
            assert_eq!(v.to_bits(), want, "{f:?}({x:e})");
        }
        let mut v = [x, 0.5];
        slice(f, &mut v);
        assert_eq!(v[0].to_bits(), want, "{f:?}({x:e}) in a slice");
    }
}

/// What the second tier leaves (σ's band (−746, −680], decided by no tier) takes the exact
/// computation, on every path: one value, a short slice, a long one.
#[test]
fn the_band_takes_the_exact_computation() {
    let c = consts();
    let band = [(-680.0f64).next_down(), -700.0, -720.5, -745.5, (-746.0f64).next_up()];
    for &x in &band {
        assert!(!sigmoid_lane::<true, DOUBLE>(x, c).1, "{x:e} is in the band");
        assert_eq!(sigmoid(x).to_bits(), exact(Func::Sigmoid, x).to_bits(), "σ({x:e})");
    }
    for len in [band.len(), 200] {
        let xs: Vec<f64> = (0..len).map(|i| if i % 7 < 5 { band[i % band.len()] } else { 0.25 * i as f64 }).collect();
        let mut v = xs.clone();
        slice(Func::Sigmoid, &mut v);
        assert!(same(&v, &exact_all(Func::Sigmoid, &xs)), "a slice of {len}");
    }
}

#[test]
fn the_table_is_two_to_the_j_over_512() {
    let c = consts();
    assert_eq!((c.hi[0], c.lo[0]), (1.0, 0.0));
    assert_eq!(c.hi[256], std::f64::consts::SQRT_2);
    // (hi + lo)² for j = 256 is 2 to within 2^−104
    let (h, l) = (Rational::exact_from(c.hi[256]), Rational::exact_from(c.lo[256]));
    let sq = (&h + &l) * (&h + &l) - Rational::from(2);
    assert!(sq.abs() < Rational::from_signeds(1, 1i64 << 62) / Rational::from(1i64 << 42));
    assert_eq!(c.c1.to_bits() & ((1 << 21) - 1), 0, "c1 has 32 significant bits");
}


/// tanh(k/32) as pairs: the high part the nearest double, the pair within 2^−105 of the
/// 300-bit value, and the table reaching the last k the first tier's clamp gives.
#[test]
fn the_tanh_table_is_tanh_of_k_over_32() {
    use crate::sim::activation_f64_quick::TANH_ENTRIES;
    let t = &consts().tanh;
    assert_eq!(t[0], [0.0, 0.0]);
    assert_eq!((TANH_ONE.next_down() / TANH_STEP).round() as usize, TANH_ENTRIES - 1, "the clamp's largest k is the last entry");
    for k in (1..TANH_ENTRIES).step_by(37).chain([1, 2, 32, TANH_ENTRIES - 1]) {
        let [h, l] = t[k];
        let exact = Float::from(k as f64 * TANH_STEP).tanh_prec_round(300, Nearest).0;
        assert_eq!(h, f64::rounding_from(&exact, Nearest).0, "tanh({k}/32): the high part");
        assert!(error_of((h, l), &exact) < 2f64.powi(-25), "tanh({k}/32): the pair");
    }
}

/// The staged spelling of the first tier (`activation_f64_staged`, 4 lanes and, with
/// AVX-512, 8) equals the scalar lanes, lane by lane, value and decision, on random values of every magnitude and on the edges of
/// every range (NaN, ±∞, the clamps, the series' end).
#[cfg(target_arch = "x86_64")]
#[test]
fn the_staged_first_tier_is_the_scalar_one() {
    use crate::num::correctly_rounded::{SIGMOID_ONE, SIGMOID_ZERO, TANH_ONE, TANH_TINY};
    use crate::sim::activation_f64_staged::{quick_pass, quick_pass_512, Scratch};
    if !crate::sim::cpu::avx2_fma() {
        return;
    }
    let avx512 = crate::sim::cpu::avx512();
    let c = consts();
    let mut g = Bits::new(0xf64a_4a32_0001);
    let mut xs: Vec<f64> = (0..40_000).map(|i| g.value(-40, 10) / if i % 3 == 0 { 64.0 } else { 1.0 }).collect();
    for e in [TANH_TINY, TANH_ONE, SIGMOID_ONE, SIGMOID_ZERO, SIGMOID_LOW, TANH_STEP / 2.0, 0.0, f64::MIN_POSITIVE, 0.5, 0.75] {
        for v in [e, e.next_up(), e.next_down()] {
            xs.extend([v, -v]);
        }
    }
    xs.extend([f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 700.0, -700.0, 1e300, -1e300]);
    // values the scalar tier leaves undecided (about one in 10^4), found by search, so that
    // both outcomes are compared for each function
    let (mut open_tanh, mut open_sigmoid) = (0, 0);
    while open_tanh < 6 || open_sigmoid < 6 {
        let x = g.value(-8, 3);
        let (t, s) = (!tanh_lane::<true, QUICK>(x, c).1, !sigmoid_lane::<true, QUICK>(x, c).1);
        if (t && open_tanh < 6) || (s && open_sigmoid < 6) {
            xs.push(x);
            (open_tanh, open_sigmoid) = (open_tanh + usize::from(t), open_sigmoid + usize::from(s));
        }
    }
    let mut open_count = [0usize; 2];
    // one scratch per width for all chunks, as the slices use it (earlier chunks' values
    // stay in it)
    let (mut s4, mut s8) = (Scratch::new(), Scratch::new());
    for (fi, f) in [Func::Tanh, Func::Sigmoid].into_iter().enumerate() {
        // chunks of 61 values: the last vector of each is partial; 4 lanes, then 8 where the
        // CPU has AVX-512
        for (chunk, wide) in xs.chunks(61).flat_map(|c| [(c, false), (c, true)]).filter(|&(_, w)| !w || avx512) {
            let (mut out, mut idx) = (chunk.to_vec(), [0u8; CHUNK]);
            // SAFETY: the CPU has AVX2 and FMA, and AVX-512 for `wide` (checked above); the
            // buffer holds CHUNK positions.
            let n = unsafe { if wide { quick_pass_512(f, &mut out, &mut idx, &mut s8) } else { quick_pass(f, &mut out, &mut idx, &mut s4) } };
            // (the 8-lane decisions equal the 4-lane ones lane by lane, below)
            if !wide {
                open_count[fi] += n;
            }
            for (i, &x) in chunk.iter().enumerate() {
                let (v, decided) = lane::<true, QUICK>(f, x);
                assert_eq!(decided, !idx[..n].contains(&(i as u8)), "{f:?}({x:e}): decided");
                // (in place: an undecided value keeps its input)
                let want = if decided { v } else { x };
                assert_eq!(out[i].to_bits(), want.to_bits(), "{f:?}({x:e}) = {want:e}, staged (8 lanes: {wide}) {:e}", out[i]);
            }
        }
    }
    // both outcomes were exercised
    assert!(open_count.iter().all(|&n| n > 0 && n < xs.len() / 10), "{open_count:?}");
    // the register path (AVX-512, at most SHORT values) on slices of 29 and 61: the same
    // values and decisions; undecided lanes keep their input
    if avx512 {
        use crate::sim::activation_f64_staged::short_pass_512;
        for f in [Func::Tanh, Func::Sigmoid] {
            for chunk in xs.chunks(29).chain(xs.chunks(61)) {
                let mut ys = chunk.to_vec();
                // SAFETY: the CPU has AVX-512 (checked above).
                let open = unsafe { short_pass_512(f, &mut ys) };
                assert_eq!(open >> chunk.len(), 0, "no lane past the slice");
                for (i, &x) in chunk.iter().enumerate() {
                    let (v, decided) = lane::<true, QUICK>(f, x);
                    assert_eq!(open & (1 << i) == 0, decided, "{f:?}({x:e}): decided, register path");
                    let want = if decided { v } else { x };
                    assert!(same(&[ys[i]], &[want]), "{f:?}({x:e}) = {want:e}, register path {:e}", ys[i]);
                }
            }
        }
    }
}

/// σ then tanh in one call (`sigmoid_then_tanh`, a batch-1 LSTM tick's gates and
/// candidate) gives the two slices' values: every length up to SHORT + 5 and every split
/// (multiples of 4 take the one staged pass on AVX2, the others and the longer slices two
/// calls), on values of every range with some that the first tier leaves undecided for σ
/// or for tanh. And the staged pass (`sigmoid_tanh_pass`, AVX2) equals the scalar first
/// tier lane by lane, value and decision, undecided lanes keeping their input.
#[test]
fn sigmoid_then_tanh_gives_both_slices() {
    use crate::sim::activation_f64_staged::SHORT;
    let c = consts();
    let mut g = Bits::new(0x51_6d0f_7a9);
    let mut xs = inputs(400);
    let (mut open_tanh, mut open_sigmoid) = (0, 0);
    while open_tanh < 4 || open_sigmoid < 4 {
        let x = g.value(-8, 3);
        let (t, s) = (!tanh_lane::<true, QUICK>(x, c).1, !sigmoid_lane::<true, QUICK>(x, c).1);
        if (t && open_tanh < 4) || (s && open_sigmoid < 4) {
            // (spread through the values, so that many slices hold one)
            let at = (g.0.next_u64() % xs.len() as u64) as usize;
            xs.insert(at, x);
            (open_tanh, open_sigmoid) = (open_tanh + usize::from(t), open_sigmoid + usize::from(s));
        }
    }
    let (want_s, want_t) = (exact_all(Func::Sigmoid, &xs), exact_all(Func::Tanh, &xs));
    let mut start = 0;
    let (mut undecided, mut staged) = (0, 0);
    for n in 0..=SHORT + 5 {
        for nsig in 0..=n {
            let at = start % (xs.len() - n);
            start += 7;
            let mut ys = xs[at..at + n].to_vec();
            sigmoid_then_tanh(&mut ys, nsig);
            let want: Vec<f64> = (at..at + n).map(|i| if i - at < nsig { want_s[i] } else { want_t[i] }).collect();
            assert!(same(&ys, &want), "n {n}, σ over {nsig}, from {at}");
            #[cfg(target_arch = "x86_64")]
            if n <= SHORT && nsig % 4 == 0 && crate::sim::cpu::avx2_fma() {
                use crate::sim::activation_f64_staged::{sigmoid_tanh_pass, Scratch};
                let mut zs = xs[at..at + n].to_vec();
                // SAFETY: the CPU has AVX2 and FMA (checked above).
                let open = unsafe { sigmoid_tanh_pass(&mut zs, nsig, &mut Scratch::new()) };
                assert_eq!(open.checked_shr(n as u32).unwrap_or(0), 0, "no lane past the slice");
                for (i, &x) in xs[at..at + n].iter().enumerate() {
                    let (v, decided) = lane::<true, QUICK>(if i < nsig { Func::Sigmoid } else { Func::Tanh }, x);
                    assert_eq!(open & (1 << i) == 0, decided, "lane {i} of {n} (σ over {nsig}): {x:e}");
                    assert!(same(&[zs[i]], &[if decided { v } else { x }]), "lane {i} of {n} (σ over {nsig}): {x:e} gave {:e}", zs[i]);
                }
                undecided += open.count_ones();
                staged += 1;
            }
        }
    }
    // the staged pass ran (on AVX2), and left undecided lanes for the later tiers
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        assert!(staged > 500 && undecided > 0, "{staged} staged passes, {undecided} undecided lanes");
    }
}

/// Short slices (a batch-1 tick has 16–64 values) after long ones, on one thread: the
/// scratch and buffers this thread keeps between calls hold earlier calls' values, and a
/// short σ runs only its own vectors. Every length from 1 to 2·CHUNK + 3, both functions,
/// against the exact computation.
#[test]
fn short_slices_after_long_ones() {
    let mut g = Bits::new(0x5107_5ca7_c4e5);
    let xs: Vec<f64> = (0..4000).map(|i| g.value(-12, 3) * if i % 5 == 0 { 40.0 } else { 1.0 }).collect();
    for f in [Func::Tanh, Func::Sigmoid] {
        let want = exact_all(f, &xs);
        let mut at = 0;
        for n in (1..=2 * CHUNK + 3).chain([4000 - 2 * CHUNK - 3]) {
            let (s, e) = (at % (4000 - n), at % (4000 - n) + n);
            let mut ys = xs[s..e].to_vec();
            slice(f, &mut ys);
            assert!(same(&ys, &want[s..e]), "{f:?}: a slice of {n} at {s}");
            #[cfg(target_arch = "x86_64")]
            if crate::sim::cpu::avx2_fma() {
                let mut ys = xs[s..e].to_vec();
                // SAFETY: the CPU has AVX2 and FMA (checked above).
                unsafe { slice_avx2(f, &mut ys) };
                assert!(same(&ys, &want[s..e]), "{f:?}: an AVX2 slice of {n} at {s}");
            }
            at += 997;
        }
    }
}

/// Short slices (a batch-1 tick's row) holding values the first tier leaves undecided
/// (found by search: about one in 10^4, so random inputs seldom reach the later tiers),
/// specials and σ's band left to the exact computation, against the exact computation.
#[test]
fn short_slices_with_undecided_values() {
    let mut g = Bits::new(0x0051_0e7a_1de5);
    for f in [Func::Tanh, Func::Sigmoid] {
        let decided = |x: f64| lane::<true, QUICK>(f, x).1;
        let mut hard = Vec::new();
        while hard.len() < 12 {
            let x = g.value(-8, 3);
            if !decided(x) {
                hard.push(x);
            }
        }
        hard.extend([f64::NAN, f64::INFINITY, -f64::INFINITY, -700.0, 0.0, -0.0, 1e-300]);
        // (lengths across the register path's limit of 64 and the staged path's chunk)
        for n in 1..=CHUNK + 6 {
            // every third value from the pool, the others ordinary
            let xs: Vec<f64> = (0..n).map(|i| if i % 3 == 1 { hard[(n + i) % hard.len()] } else { g.value(-6, 2) }).collect();
            let mut ys = xs.clone();
            slice(f, &mut ys);
            assert!(same(&ys, &exact_all(f, &xs)), "{f:?}: {xs:?}");
            #[cfg(target_arch = "x86_64")]
            if crate::sim::cpu::avx2_fma() {
                let mut ys = xs.clone();
                // SAFETY: the CPU has AVX2 and FMA (checked above).
                unsafe { slice_avx2(f, &mut ys) };
                assert!(same(&ys, &exact_all(f, &xs)), "{f:?}, AVX2: {xs:?}");
            }
        }
    }
}

/// A slice function under the timer.
type Timed = Box<dyn Fn(&mut [f64])>;

/// Timing, not a check: `cargo test --release --lib f64_ns_per_value -- --ignored --nocapture`.
#[test]
#[ignore]
fn f64_ns_per_value() {
    // random values in (−8, 8): a regular grid can hold an undecided value by chance, whose
    // ~30 µs would weigh 7 ns per value in 4096 (σ's band (−746, −680] only, since session
    // 40; about 10^−5 of random values before)
    let mut g = Bits::new(0x005e_ed0f_da7a);
    let xs: Vec<f64> = (0..4096).map(|_| g.value(-1, 2).clamp(-8.0, 8.0)).collect();
    let libm_tanh = |v: &mut [f64]| v.iter_mut().for_each(|x| *x = x.tanh());
    let libm_sigmoid = |v: &mut [f64]| v.iter_mut().for_each(|x| *x = 1.0 / (1.0 + (-*x).exp()));
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))] // (the AVX2 cases are x86 only)
    let mut cases: Vec<(&str, Timed)> = vec![
        ("tanh, dispatched", Box::new(|v: &mut [f64]| slice(Func::Tanh, v))),
        ("sigmoid, dispatched", Box::new(|v: &mut [f64]| slice(Func::Sigmoid, v))),
        ("tanh, portable", Box::new(|v: &mut [f64]| portable(Func::Tanh, v))),
        ("sigmoid, portable", Box::new(|v: &mut [f64]| portable(Func::Sigmoid, v))),
        ("tanh, one call per value", Box::new(|v: &mut [f64]| v.iter_mut().for_each(|x| *x = tanh(*x)))),
        ("sigmoid, one call per value", Box::new(|v: &mut [f64]| v.iter_mut().for_each(|x| *x = sigmoid(*x)))),
        ("tanh, libm", Box::new(libm_tanh)),
        ("sigmoid, libm 1/(1+exp(-x))", Box::new(libm_sigmoid)),
    ];
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        cases.push(("tanh, AVX2", Box::new(|v: &mut [f64]| unsafe { slice_avx2(Func::Tanh, v) })));
        cases.push(("sigmoid, AVX2", Box::new(|v: &mut [f64]| unsafe { slice_avx2(Func::Sigmoid, v) })));
    }
    for (name, f) in &cases {
        let mut ys = xs.clone();
        let mut ns = f64::INFINITY;
        for _ in 0..20 {
            let t0 = std::time::Instant::now();
            for _ in 0..50 {
                ys.copy_from_slice(&xs);
                f(&mut ys);
            }
            ns = ns.min(t0.elapsed().as_secs_f64() * 1e9 / (50.0 * 4096.0));
        }
        eprintln!("{name}: {ns:.2} ns/value");
    }
    // the first tier alone, per chunk: the compiler's vectorisation of the scalar lanes and
    // the staged spelling (`activation_f64_staged`) on 4 lanes, and on 8 with AVX-512
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        use crate::sim::activation_f64_staged::{quick_pass, quick_pass_512, Scratch};
        let avx512 = crate::sim::cpu::avx512();
        for f in [Func::Tanh, Func::Sigmoid] {
            let (mut out, mut idx) = ([0f64; CHUNK], [0u8; CHUNK]);
            let (mut s4, mut s8) = (Scratch::new(), Scratch::new());
            // (in place since session 60: each call on a fresh copy of its chunk, the copy
            // timed too)
            for way in (0..3).filter(|&w| w < 2 || avx512) {
                let mut ns = f64::INFINITY;
                for _ in 0..20 {
                    let t0 = std::time::Instant::now();
                    for _ in 0..50 {
                        for ch in xs.chunks(CHUNK) {
                            // SAFETY: the CPU has AVX2 and FMA, and AVX-512 for way 2 (checked
                            // above); the buffers hold CHUNK.
                            let ys = &mut out[..ch.len()];
                            ys.copy_from_slice(ch);
                            std::hint::black_box(unsafe {
                                match way {
                                    0 => quick_fma(f, ys, &mut idx),
                                    1 => quick_pass(f, ys, &mut idx, &mut s4),
                                    _ => quick_pass_512(f, ys, &mut idx, &mut s8),
                                }
                            });
                        }
                    }
                    ns = ns.min(t0.elapsed().as_secs_f64() * 1e9 / (50.0 * 4096.0));
                }
                eprintln!("{f:?}, first tier alone, {}: {ns:.2} ns/value", ["vectorised by the compiler", "staged, 4 lanes", "staged, 8 lanes"][way]);
            }
        }
    }
    // how often the first tier leaves a value to the double-double one
    let c = consts();
    // (−1/8, 1/8): where the pre-activations of networks initialised as PyTorch does mostly lie
    let small: Vec<f64> = xs.iter().map(|x| x / 8.0).collect();
    let tiny: Vec<f64> = xs.iter().map(|x| x / 64.0).collect();
    for (name, xs) in [("(-8, 8)", &xs), ("(-1, 1)", &small), ("(-1/8, 1/8)", &tiny)] {
        let rate = |lane: fn(f64, &Consts) -> (f64, bool)| xs.iter().filter(|&&x| !lane(x, c).1).count() as f64 / xs.len() as f64;
        eprintln!("first tier undecided on {name}: tanh {:.4}%, σ {:.4}%", 100.0 * rate(tanh_lane::<true, QUICK>), 100.0 * rate(sigmoid_lane::<true, QUICK>));
    }
    for (name, xs) in [("(-1, 1)", &small), ("(-1/8, 1/8)", &tiny)] {
        let mut ys = xs.clone();
        let mut ns = f64::INFINITY;
        for _ in 0..5 {
            let t0 = std::time::Instant::now();
            for _ in 0..40 {
                ys.copy_from_slice(xs);
                slice(Func::Tanh, &mut ys);
            }
            ns = ns.min(t0.elapsed().as_secs_f64() * 1e9 / (40.0 * 4096.0));
        }
        eprintln!("tanh, dispatched, on {name}: {ns:.2} ns/value");
        // in slices of 16, as a batch-1 tick of hidden 16 calls it (no gathering across ticks)
        let mut ns = f64::INFINITY;
        for _ in 0..5 {
            let t0 = std::time::Instant::now();
            for _ in 0..40 {
                ys.copy_from_slice(xs);
                ys.chunks_mut(16).for_each(|v| slice(Func::Tanh, v));
            }
            ns = ns.min(t0.elapsed().as_secs_f64() * 1e9 / (40.0 * 4096.0));
        }
        eprintln!("tanh, dispatched, on {name}, slices of 16: {ns:.2} ns/value");
    }
    // the exact computation alone (the fallback)
    let t0 = std::time::Instant::now();
    for &x in &xs[..400] {
        std::hint::black_box(cr::tanh(x));
        std::hint::black_box(cr::sigmoid(x));
    }
    eprintln!("exact computation (num::correctly_rounded): {:.0} ns/value", t0.elapsed().as_secs_f64() * 1e9 / 800.0);
}


/// The portable first tier compiled for AVX2 + FMA (the comparison of `f64_ns_per_value`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma")]
unsafe fn quick_fma(f: Func, xs: &mut [f64], undecided: &mut [u8]) -> usize {
    Lanes::<true>.pass(f, xs, undecided)
}
