//! The first tier of `activation_f64`: tanh and σ in fewer operations than the
//! double-double evaluation, accurate to about 2^−70, then Ziv's test at a bound twice the
//! analysis's. Values it cannot decide (about one in 10^4; at most about one in 10^3 near
//! |x| = 2^−7, where tanh's two evaluations below meet) go to the double-double tier, and
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
//! * tanh(a) = −m/(2 + m), m = e^{−2a} − 1 = 2^k·(E − 2^−k), s = 2^k: for k ∈ {0, −1} as
//!   s·((th − 2^−k) + A + L), where th − 2^−k is exact and either 0 (n = 0) or of
//!   magnitude ≥ 2 − 2^{511/512} > 2^−8.5 > |A|, so (th − 2^−k) + A is an exact pair; else
//!   as (−1 + s·(th + A)) + s·L (th + A exact; −1 + s·eh exact as a pair, s·eh ≤ ½). Either
//!   way the low parts' sum is rounded (≤ s·2^−75, and for k ≤ −2 also 2^−106) and the pair
//!   normalised (`fast_two_sum`), so |δm| ≤ s·2^−71.4 + 2^−106. The relative error of
//!   −m/(2 + m) is |δm|·2/(|m|·(2 + m)), and 2 + m ≥ 1 is a pair rounded below 2^−104, so
//!   the analysis gives s·2^−70.4/(|m|·(2 + m)) + 2^−101 and Ziv's test uses twice that
//!   (rounded up: 2^−69). Small a makes |m| ≈ 2a small and the bound wide (2^−73/a
//!   relative, s = ½), so below a = [`TANH_SERIES_BELOW`] the odd series is used instead:
//! * tanh(a) = a + a³·P(a²) for a < 2^−7, P = Σ c_i z^{i−1}, i = 1..5, the Taylor
//!   coefficients of tanh (−1/3, 2/15, −17/315, 62/2835, −1382/155925; the first dropped
//!   term, c_6·z^5 relative to a³, is below 2^−91). z = a², a³ = a·z, corr = a³·P and P's
//!   Horner steps are each rounded once or twice; c_1 = −1/3 is off by 2^−53.4 relative;
//!   the later steps' errors are scaled by z ≤ 2^−14. So corr is within 4.8·2^−53 ≈
//!   2^−50.7 of a³·P relative, and tanh(a) = fast_two_sum(a, corr) adds no error; relative
//!   to tanh(a) ≥ a(1 − z/3) that is at most 2^−50.7·1.006·z/3 ≤ z·2^−52.2, plus the
//!   truncation. Ziv's test uses z·2^−51 + 2^−90 (twice that). The two bounds cross near
//!   a = 2^−7: 2^−52.2·a² = 2^−73/a at a = 2^−6.9 (both ~2^−66 there).

use crate::sim::activation_f64::{div_dd, div_dd_and_inverse, fast_two_sum, fmadd, table_parts, two_prod, Consts};

/// Ziv's bound of σ's first tier (above twice the analysis's 2^−70.5).
pub const ERR_SIGMOID: f64 = 1.0 / (1u128 << 69) as f64;
/// Ziv's bound of tanh's first tier, times |m|·(2 + m)/s (twice the analysis's 2^−70.4,
/// rounded up).
pub const ERR_TANH: f64 = 1.0 / (1u128 << 69) as f64;
/// The part of tanh's Ziv bound that does not scale with s (twice the analysis's 2^−101).
pub const ERR_TANH_FLOOR: f64 = 1.0 / (1u128 << 100) as f64;
/// Below this |x| (2^−7) tanh's first tier is the odd series (module doc).
pub const TANH_SERIES_BELOW: f64 = 1.0 / 128.0;
/// Ziv's bound of the series, relative, per unit of z = a² (twice the analysis's 2^−52.2).
pub const ERR_TANH_SERIES: f64 = 1.0 / (1u128 << 51) as f64;
/// The series' bound's constant part (twice its truncation, 2^−91).
pub const ERR_TANH_SERIES_FLOOR: f64 = 1.0 / (1u128 << 90) as f64;

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

/// tanh(a) = a + a³·P(a²) for a < [`TANH_SERIES_BELOW`] as a pair, and its absolute Ziv
/// bound (ERR_TANH_SERIES·a² + ERR_TANH_SERIES_FLOOR)·a, a ≥ |tanh a| (module doc).
#[inline(always)]
fn tanh_series<const FMA: bool>(a: f64) -> ((f64, f64), f64) {
    let z = a * a;
    let (last, rest) = TANH_SERIES.split_last().expect("coefficients");
    let mut p = *last;
    for &ci in rest.iter().rev() {
        p = fmadd::<FMA>(p, z, ci);
    }
    (fast_two_sum(a, (a * z) * p), (ERR_TANH_SERIES * z + ERR_TANH_SERIES_FLOOR) * a)
}

/// tanh(a) for a ∈ [2^−30, 20) as a pair, and Ziv's bound for it, absolute. From a =
/// [`TANH_SERIES_BELOW`] on: the relative bound times |q| = |m|/(2 + m), that is
/// ERR_TANH·s/(2 + m)² + ERR_TANH_FLOOR·|q| (the reciprocal of 2 + m is the one the division
/// computed); below, the series' (`tanh_series`). Both are evaluated, then one is selected
/// (branch-free, so the lanes stay vectorised).
#[inline(always)]
pub(crate) fn tanh_quick<const FMA: bool>(a: f64, c: &Consts) -> ((f64, f64), f64) {
    let series = tanh_series::<FMA>(a);
    let by_exp = tanh_by_exp::<FMA>(a, c);
    if a < TANH_SERIES_BELOW { series } else { by_exp }
}

/// tanh(a) = −m/(2 + m), m = e^{−2a} − 1, and its bound (see `tanh_quick`).
#[inline(always)]
fn tanh_by_exp<const FMA: bool>(a: f64, c: &Consts) -> ((f64, f64), f64) {
    let (scale, th, e_a, e_l) = exp_quick_parts::<FMA>(-2.0 * a, c);
    let (h, l) = if scale >= 0.5 {
        // k ∈ {0, −1}: 2^k·((th − 2^−k) + A + L), th − 2^−k exact
        let (h, l) = fast_two_sum(th - (3.0 - 2.0 * scale), e_a); // 2^−k = 1 or 2
        (h * scale, (l + e_l) * scale)
    } else {
        // −1 + 2^k·(th + A) + 2^k·L
        let (eh, el) = fast_two_sum(th, e_a);
        let (h, l) = fast_two_sum(-1.0, eh * scale);
        (h, l + (el + e_l) * scale)
    };
    let (mh, ml) = fast_two_sum(h, l);
    let (dh, dl) = fast_two_sum(2.0, mh);
    let (q, inv) = div_dd_and_inverse::<FMA>(-mh, -ml, dh, dl + ml);
    (q, ERR_TANH * scale * inv * inv + ERR_TANH_FLOOR * q.0.abs())
}
