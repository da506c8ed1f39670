//! The first tier of `activation_f64`: tanh and σ in fewer operations than the
//! double-double evaluation, accurate to about 2^−61, then Ziv's test at a bound twice the
//! analysis's. Values it cannot decide (about 1% of σ's and of tanh's, at most about 4% near
//! |x| = 0.08, where tanh's two evaluations below meet) go to the double-double tier, and from there to
//! the exact computation: the results are the correctly rounded values either way.
//!
//! * e^y for y ∈ [−680, 0] with `activation_f64`'s table (n = 512k + j, r = y − n·ln 2/512):
//!   r = (y − n·c1) − n·c2 (the first subtraction exact; error ≤ 2^−64, |r| < 2^−10.5),
//!   P = r + r²·(1/2 + r/6 + … + r⁵/5040) (truncation below 2^−85; the last rounding
//!   ≤ 2^−64), B = th·P + (tl + tl·P) (|B| < 2^−9.5: rounding ≤ 2^−63, twice without FMA),
//!   E = th + B normalised (exact: |B| < th). Error of E relative to E ≥ 1:
//!   th·(2^−64 + 2^−64) + 2^−63 (+ 2^−63) ≤ 2^−61. e^y = 2^k·E (exact scaling; below
//!   y = −680 the low part would become subnormal).
//! * σ(x) = 1/(1 + e) or e/(1 + e), e = e^−|x|, d = 1 + e as a pair (`fast_two_sum`, then
//!   the low parts added: rounding below 2^−104), the quotient by `activation_f64::div_dd`
//!   (~2^−103). The relative error of e carries over at most once: ≤ 2^−61. Ziv's test:
//!   2^−60.
//! * tanh(a) = −m/(2 + m), m = e^{−2a} − 1 = 2^k·(E − 2^−k), for k ∈ {0, −1} as
//!   2^k·((th − 2^−k) + B) (th − 2^−k exact, and |th − 2^−k| ≥ |B| or 0: no error in the
//!   sum), else 2^k·E − 1. Either way |δm| ≤ 2^k·2^−61 = s·2^−61 (s = 2^k), plus, when
//!   k ≤ −2, the rounding of the low parts' sum (≤ 2^−105: small against |m| > 1/2, but not
//!   against s·2^−61 once k < −44). The relative error of −m/(2 + m) is
//!   |δm|·2/(|m|·(2 + m)), and 2 + m ≥ 1 is a pair rounded below 2^−104, so the analysis
//!   gives s·2^−60/(|m|·(2 + m)) + 2^−101 and Ziv's test uses twice that. Small a makes |m|
//!   small and the bound wide (2^−61/a relative), so below a = [`TANH_SERIES_BELOW`] the odd
//!   series is used instead:
//! * tanh(a) = a + a³·P(a²) for a < 0.083, P = Σ c_i z^{i−1}, i = 1..8, the Taylor
//!   coefficients of tanh (−1/3, 2/15, −17/315, …: truncation below 2^−76 relative at
//!   a = 0.083, measured at 300 bits). z = a², a³ = a·z, corr = a³·P and P's Horner steps are
//!   each rounded once or twice; c_1 = −1/3 is off by 2^−53.4 relative; the later steps'
//!   errors are scaled by z ≤ 2^−7.1. So corr is within 4.8·2^−53 ≈ 2^−50.7 of a³·P
//!   relative, and tanh(a) = fast_two_sum(a, corr) adds no error; relative to tanh(a) ≥
//!   a(1 − z/3) that is at most 2^−50.7·1.006·z/3 ≤ z·2^−52.2, plus the truncation.
//!   Ziv's test uses z·2^−51 + 2^−75 (twice that). The two bounds cross near a = 1/12:
//!   2^−51·a² = 2^−62/a (s = ½ there).

use crate::sim::activation_f64::{div_dd, div_dd_and_inverse, fast_two_sum, table_parts, Consts};

/// Ziv's bound of σ's first tier (twice the 2^−61 of the analysis).
pub const ERR_SIGMOID: f64 = 1.0 / (1u128 << 60) as f64;
/// Ziv's bound of tanh's first tier, times |m|·(2 + m)/s (twice the analysis's 2·2^−61).
pub const ERR_TANH: f64 = 1.0 / (1u128 << 59) as f64;
/// The part of tanh's Ziv bound that does not scale with s (twice the analysis's 2^−101).
pub const ERR_TANH_FLOOR: f64 = 1.0 / (1u128 << 100) as f64;
/// Below this |x| tanh's first tier is the odd series (module doc).
pub const TANH_SERIES_BELOW: f64 = 0.083;
/// Ziv's bound of the series, relative, per unit of z = a² (twice the analysis's 2^−52.2).
pub const ERR_TANH_SERIES: f64 = 1.0 / (1u128 << 51) as f64;
/// The series' bound's constant part (twice its truncation, 2^−76).
pub const ERR_TANH_SERIES_FLOOR: f64 = 1.0 / (1u128 << 75) as f64;

/// tanh's Taylor coefficients c_1..c_8 of a^3, a^5, …, a^17: 2^{2n}(2^{2n} − 1)B_{2n}/(2n)!.
#[allow(clippy::excessive_precision)]
pub(crate) const TANH_SERIES: [f64; 8] = [
    -1.0 / 3.0,
    2.0 / 15.0,
    -17.0 / 315.0,
    62.0 / 2835.0,
    -1382.0 / 155925.0,
    21844.0 / 6081075.0,
    -929569.0 / 638512875.0,
    6404582.0 / 10854718875.0,
];

/// a·b + c: one FMA when `FMA`, else a product and a sum (both within the error budget).
#[inline(always)]
fn fmadd<const FMA: bool>(a: f64, b: f64, c: f64) -> f64 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// E = T_j·(1 + P) for y ∈ [−680, 0] as (2^k, th, B): E = th + B (not normalised),
/// e^y = 2^k·E, relative error ≤ 2^−61 (module doc).
#[inline(always)]
fn exp_quick_parts<const FMA: bool>(y: f64, c: &Consts) -> (f64, f64, f64) {
    let (scale, n, (th, tl)) = table_parts(y, c);
    let r = fmadd::<FMA>(-n, c.c2, fmadd::<FMA>(-n, c.c1, y));
    let q = fmadd::<FMA>(r, fmadd::<FMA>(r, fmadd::<FMA>(r, fmadd::<FMA>(r, fmadd::<FMA>(r, 1.0 / 5040.0, 1.0 / 720.0), 1.0 / 120.0), 1.0 / 24.0), 1.0 / 6.0), 0.5);
    let p = fmadd::<FMA>(r * r, q, r);
    let b = fmadd::<FMA>(th, p, fmadd::<FMA>(tl, p, tl));
    (scale, th, b)
}

/// σ(x) for x ∈ [−680, 40) as a pair, relative error ≤ 2^−61.
#[inline(always)]
pub(crate) fn sigmoid_quick<const FMA: bool>(x: f64, c: &Consts) -> (f64, f64) {
    let (scale, th, b) = exp_quick_parts::<FMA>(-x.abs(), c);
    let (eh, el) = fast_two_sum(th, b);
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
    let mut p = TANH_SERIES[7];
    for &ci in TANH_SERIES[..7].iter().rev() {
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
    let (scale, th, b) = exp_quick_parts::<FMA>(-2.0 * a, c);
    let (mh, ml) = if scale >= 0.5 {
        // k ∈ {0, −1}: 2^k·((th − 2^−k) + B), th − 2^−k exact
        let (h, l) = fast_two_sum(th - (3.0 - 2.0 * scale), b); // 2^−k = 1 or 2
        (h * scale, l * scale)
    } else {
        let (eh, el) = fast_two_sum(th, b);
        let (h, l) = fast_two_sum(-1.0, eh * scale);
        (h, l + el * scale)
    };
    let (dh, dl) = fast_two_sum(2.0, mh);
    let (q, inv) = div_dd_and_inverse::<FMA>(-mh, -ml, dh, dl + ml);
    (q, ERR_TANH * scale * inv * inv + ERR_TANH_FLOOR * q.0.abs())
}
