//! The first tier of `activation_f64`: tanh and σ in fewer operations than the
//! double-double evaluation, accurate to about 2^−70, then Ziv's test at a bound twice the
//! analysis's (tanh: to between 2^−64 and 2^−99, by the distance to the nearest k/32).
//! Values it cannot decide (σ about one in 10^4, tanh one in 3·10^3) go to the double-double tier, and
//! from there to the exact computation: the results are the correctly rounded values
//! either way.
//!
//! * e^y for y ∈ [−680, 0] with `activation_f64`'s table (n = 512k + j, r = y − n·ln 2/512,
//!   |r| < 2^−10.5) as E = th + A + L (not normalised), e^y = 2^k·E:
//!   - r as a pair: t = y − n·c1 (exact), rh = t − n·c2 (one FMA), rl = (t − rh) − n·c2
//!     (t − rh is exact by Sterbenz when |n·c2| ≤ |t|/2; otherwise |t| < 2|n·c2| ≤ 2^−22.1
//!     and its rounding is below 2^−75). With the dropped n·c3 (≤ 2^−76 for |n| ≤ 2^19, y ≥
//!     −680), |rh + rl − r| ≤ 2^−74; for tanh (y ≥ −40, |n| < 2^15) ≤ 2^−79.
//!   - e^r − 1 = rh + Pl + rl·rh + …, Pl = rh²·q + rl, q = 1/2 + rh/6 + … + rh⁵/5040 by
//!     Estrin's scheme ((1/2 + rh/6) + rh²(1/24 + rh/120) + rh⁴(1/720 + rh/5040): q within
//!     2^−53, two roundings of 2^−54; truncation below 2^−99): Pl's errors are q's times rh²
//!     (2^−74), rh²'s rounding (2^−76), the FMA's (2^−76) and the dropped rl·rh (≤ 2^−74.5).
//!   - E = T_j(1 + P) = th + th·rh + (th·Pl + tl + tl·rh) (+ tl·Pl ≤ 2^−75, dropped), with
//!     th·rh = A + Ae exactly (two_prod) and L = th·Pl + ((tl + tl·rh) + Ae) (|L| < 2^−21,
//!     rounding ≤ 2^−75; the inner sums' below 2^−104).
//!
//!   The error of E, th ∈ [1, 2) multiplying r's and Pl's: 2·(2^−74 + 2^−74.5 + 2^−74 +
//!   2·2^−76) + 2·2^−75 ≤ 2^−71.1 (σ), with tanh's r: ≤ 2^−71.6. (Before session 30 the tier rounded
//!   r and P to one double each, 2^−61: 1% of σ's and 2.3% of tanh's values on (−1, 1) went
//!   to the double-double tier, a third of tanh's time there.)
//! * σ(x) = 1/(1 + e) or e/(1 + e), e = e^−|x|: th + A (an exact pair), its low part plus L
//!   (rounding ≤ 2^−74.4 relative to E ≥ 1), normalised and scaled by 2^k; d = 1 + e as a
//!   pair (`fast_two_sum`, then the low parts added: ≤ 2^−104); the quotient by
//!   `activation_f64::div_dd` (~2^−103). The relative error of e carries over at most once:
//!   ≤ 2^−71.1 + 2^−74.4 + 2^−103 < 2^−70.5. Ziv's test: 2^−69.
//! * tanh(a) for a ∈ [2^−30, 20) by the addition formula (session 60; before, −m/(2 + m) with
//!   m = e^{−2a} − 1 from the exponential above, and the odd series below a = 2^−7: about
//!   90 vector operations against about 60 now, and no second formula for small a):
//!   k = round(32a), c = k/32, y = a − c (exact: Sterbenz, c/2 ≤ a ≤ 2c for k ≥ 1, and y = a
//!   for k = 0; |y| ≤ 1/64), and
//!
//!     tanh a = (t + τ)/(1 + t·τ),   t = tanh c,   τ = tanh y,
//!
//!   t a pair (th, tl) from [`tanh_pairs`] (malachite-float's tanh(k/32) to 256 bits, split:
//!   error ≤ 2^−106·t), τ = fast_two_sum(y, y·z·P(z)), z = y², P = Σ c_i z^{i−1}, i = 1..5,
//!   the Taylor coefficients of tanh (−1/3, 2/15, −17/315, 62/2835, −1382/155925). The series'
//!   error is that of corr = (y·z)·P, of which the roundings of z, y·z, P's last Horner step
//!   and the product, and c_1 = −1/3's 2^−54.6, are at most 4.7·2^−53 ≈ 2^−50.8 of
//!   |corr| ≤ |y|·z/3 (the earlier steps' are scaled by z ≤ 2^−12), with or without FMA;
//!   the truncation, c_6·y^13 (c_6 < 0.0036), is below z·2^−68·|y|: so
//!   |δτ| ≤ z·2^−52.3·|τ| (|τ| ≥ |y|(1 − z/3)). The numerator t + τ is
//!   fast_two_sum(th, τh) (|th| ≥ tanh(1/32) > 2^−5.01 > tanh(1/64) ≥ |τh| for k ≥ 1; th = 0
//!   for k = 0, where it is exact) plus tl + τl; the denominator 1 + t·τ is
//!   fast_two_sum(1, ph) plus pe + (th·τl + tl·τh), ph + pe = th·τh exactly (two_prod); then
//!   `activation_f64::div_dd` (~2^−103). ∂tanh/∂τ = (1 − t²)/(1 + tτ)² ≤ 1/(1 − 2^−6)² <
//!   1.032 and |τ| ≤ tanh a (|y| ≤ a), so τ's error is at most 1.032·z·2^−52.3 ≤ z·2^−52.25
//!   of tanh a; t's, the sums' and the quotient's together stay below 2^−99. Ziv's test
//!   uses twice the analysis's, [`ERR_TANH`]·z + [`ERR_TANH_FLOOR`] relative (times |qh|).
//!   Left undecided: about one value in 3·10^3 (1 to 2 of 4,096 random values on (−8, 8),
//!   (−1, 1) and (−1/8, 1/8); the bound grows with z ≤ 2^−12). The first tier alone: 4.8 →
//!   3.1 ns per value on Zen 3 (AVX2, staged: `activation_f64_staged`), tanh over a slice
//!   4.9 → 3.4 (`f64_ns_per_value`; 3.0 with the staged pass in place).

use crate::sim::activation_f64::{div_dd, fast_two_sum, fmadd, table_parts, two_prod, Consts, MAGIC};
use malachite::base::num::conversion::traits::RoundingFrom;
use malachite::base::rounding_modes::RoundingMode::Nearest;
use malachite::Float;

/// Ziv's bound of σ's first tier (above twice the analysis's 2^−70.5).
pub const ERR_SIGMOID: f64 = 1.0 / (1u128 << 69) as f64;
/// Ziv's bound of tanh's first tier, relative, per unit of z = y² (twice the analysis's
/// 2^−52.25, rounded up; module doc).
pub const ERR_TANH: f64 = 1.0 / (1u128 << 51) as f64;
/// The part of tanh's Ziv bound that does not scale with z, relative (far above twice the
/// analysis's 2^−99; as the series' bound before session 60).
pub const ERR_TANH_FLOOR: f64 = 1.0 / (1u128 << 90) as f64;
/// tanh's table step: t = tanh(k·TANH_STEP), y = a − k·TANH_STEP, |y| ≤ TANH_STEP/2.
pub const TANH_STEP: f64 = 1.0 / 32.0;
/// Entries of [`tanh_pairs`]: k = 0..=round(20/TANH_STEP) (a < `TANH_ONE` = 20).
pub const TANH_ENTRIES: usize = 641;

/// tanh's Taylor coefficients c_1..c_5 of a^3, a^5, …, a^11: 2^{2n}(2^{2n} − 1)B_{2n}/(2n)!.
pub(crate) const TANH_SERIES: [f64; 5] = [-1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0, -1382.0 / 155925.0];

/// E = T_j·(1 + P) for y ∈ [−680, 0] as (2^k, th, A, L): E = th + A + L (not normalised;
/// th + A is an exact pair), e^y = 2^k·E, error of E ≤ 2^−71.1 (module doc).
#[inline(always)]
fn exp_quick_parts<const FMA: bool>(y: f64, c: &Consts) -> (f64, f64, f64, f64) {
    let (scale, n, (th, tl)) = table_parts(y, c);
    let t = fmadd::<FMA>(-n, c.c1, y); // exact
    let rh = fmadd::<FMA>(-n, c.c2, t);
    let rl = fmadd::<FMA>(-n, c.c2, t - rh);
    // q by Estrin's scheme (3 dependent steps where Horner's takes 5)
    let r2 = rh * rh;
    let q_lo = fmadd::<FMA>(rh, 1.0 / 6.0, 0.5);
    let q_mid = fmadd::<FMA>(rh, 1.0 / 120.0, 1.0 / 24.0);
    let q_hi = fmadd::<FMA>(rh, 1.0 / 5040.0, 1.0 / 720.0);
    let q = fmadd::<FMA>(r2 * r2, q_hi, fmadd::<FMA>(r2, q_mid, q_lo));
    let pl = fmadd::<FMA>(r2, q, rl);
    let (a, ae) = two_prod::<FMA>(th, rh);
    let l = fmadd::<FMA>(th, pl, fmadd::<FMA>(tl, rh, tl) + ae);
    (scale, th, a, l)
}

/// σ(x) for x ∈ [−680, 40) as a pair, relative error ≤ 2^−70.5.
#[inline(always)]
pub(crate) fn sigmoid_quick<const FMA: bool>(x: f64, c: &Consts) -> (f64, f64) {
    let (scale, th, a, l) = exp_quick_parts::<FMA>(-x.abs(), c);
    let (eh, el) = fast_two_sum(th, a);
    let (eh, el) = fast_two_sum(eh, el + l);
    let (eh, el) = (eh * scale, el * scale);
    let (dh, dl) = fast_two_sum(1.0, eh);
    let (nh, nl) = if x < 0.0 { (eh, el) } else { (1.0, 0.0) };
    div_dd::<FMA>(nh, nl, dh, dl + el)
}

/// tanh(k·TANH_STEP), k = 0..TANH_ENTRIES, as pairs (th, tl): malachite-float's value to
/// 256 bits, split into the nearest double and the nearest double to the rest (10 KiB; made
/// once, with the other constants: `activation_f64::Consts::tanh`).
pub(crate) fn tanh_pairs() -> Box<[[f64; 2]; TANH_ENTRIES]> {
    Box::new(std::array::from_fn(|k| {
        let t = Float::from(k as f64 * TANH_STEP).tanh_prec_round(256, Nearest).0;
        let h = f64::rounding_from(&t, Nearest).0;
        let rest = t.sub_prec_round(Float::from(h), 256, Nearest).0;
        [h, f64::rounding_from(&rest, Nearest).0]
    }))
}

/// (k, y) with a = k·TANH_STEP + y, k = round(a/TANH_STEP) (ties to even, by the 1.5·2^52
/// trick) and y exact, for a ∈ [0, 20].
#[inline(always)]
pub(crate) fn tanh_reduce<const FMA: bool>(a: f64) -> (usize, f64) {
    let shifted = fmadd::<FMA>(a, 1.0 / TANH_STEP, MAGIC); // a·32 exact: one rounding either way
    let k = shifted.to_bits().wrapping_sub(MAGIC.to_bits()) as usize;
    (k, fmadd::<FMA>(-(shifted - MAGIC), TANH_STEP, a))
}

/// τ = tanh y = y + y·z·P(z), z = y², as a pair, and z (module doc).
#[inline(always)]
pub(crate) fn tanh_small<const FMA: bool>(y: f64) -> ((f64, f64), f64) {
    let z = y * y;
    let (last, rest) = TANH_SERIES.split_last().expect("coefficients");
    let mut p = *last;
    for &ci in rest.iter().rev() {
        p = fmadd::<FMA>(p, z, ci);
    }
    (fast_two_sum(y, (y * z) * p), z)
}

/// tanh(a) for a ∈ [2^−30, 20) as a pair, and Ziv's bound for it, absolute: the addition
/// formula (module doc).
#[inline(always)]
pub(crate) fn tanh_quick<const FMA: bool>(a: f64, c: &Consts) -> ((f64, f64), f64) {
    let (k, y) = tanh_reduce::<FMA>(a);
    // (k ≤ 640 but for a NaN, whose lane the caller replaces)
    let [th, tl] = c.tanh[k.min(TANH_ENTRIES - 1)];
    let ((sh, sl), z) = tanh_small::<FMA>(y);
    let (nh, ne) = fast_two_sum(th, sh);
    let nl = ne + (tl + sl);
    let (ph, pe) = two_prod::<FMA>(th, sh);
    let (dh, de) = fast_two_sum(1.0, ph);
    let dl = de + (pe + fmadd::<FMA>(th, sl, tl * sh));
    let q = div_dd::<FMA>(nh, nl, dh, dl);
    (q, fmadd::<FMA>(ERR_TANH, z, ERR_TANH_FLOOR) * q.0.abs())
}
