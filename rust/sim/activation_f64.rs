//! tanh and σ correctly rounded to f64, fast: on (−8, 8), σ 1.9 and tanh 2.6 ns per
//! value on a 2026 Xeon with AVX-512 (glibc's scalar tanh, not correctly rounded, 11; tanh
//! measured there before session 60's addition formula), σ 3.5 and tanh 3.0 on Zen 3 with
//! AVX2 (tanh 4.9 before; glibc's tanh 15–25). The results are those of
//! `num::correctly_rounded` (the definition), bit for bit; the speed depends on the CPU
//! (AVX-512, AVX2 + FMA, portable), the bits do not.
//!
//! Method: three tiers, each ending in Ziv's test: with an error bound e, when
//! hi + (lo − e) and hi + (lo + e) round to the same f64, the true value, which lies between
//! them, rounds to it too (rounding is monotone).
//! 1. `activation_f64_quick`: a short evaluation to about 2^−70 (its module doc), for every
//!    value of a chunk of 64. It leaves σ about one value in 10^4 (none of 4,096 random
//!    values on each of (−8, 8), (−1, 1), (−1/8, 1/8)) and tanh about one in 3·10^3 (1, 2
//!    and 2 of those 4,096: its bound grows with the square of the distance to the nearest
//!    k/32, `activation_f64_quick`).
//!    On AVX2 + FMA and on AVX-512 the tier runs in `activation_f64_staged`'s spelling: the
//!    same operations in stages over a chunk, on 4 resp. 8 lanes (the scalar lanes' chain
//!    is bound by latency; their 8-lane vectorisation by the compiler measured slower).
//!    With AVX-512, slices of at most 64 values (a batch-1 tick's rows) run it in registers
//!    instead (`activation_f64_staged::short_pass_512`), and the few values it leaves go
//!    through the next tiers one by one.
//! 2. The values it leaves, gathered (across chunks, up to 64 at a time): the double-double
//!    evaluation below (relative error below 2^−95), e = [`ERR`]·|hi| + [`ERR_FLOOR`]
//!    (2^−92 relative).
//! 3. What that leaves: the exact computation of `num::correctly_rounded`. Random values
//!    reach it with a probability of about 2^−38 (Ziv's interval must hold an f64
//!    midpoint), so in practice only σ's band (−746, −680] below goes there. (Until session
//!    40 the second tier's bound was 2^−70, barely below the first tier's 2^−69: it decided
//!    half of what the first left, and the other ~2·10^−5 of all values took the exact
//!    computation at about 13 µs each, 7% of the time of an f64 GRU at hidden 16.)
//!
//! The double-double evaluation:
//!
//! * e^y, y ∈ [−680, 0] (Tang's method, a 512-entry table): n = round(y·512/ln 2),
//!   n = 512k + j, r = y − n·(C1 + C2 + C3) (ln 2/512 split so that n·C1 is exact and
//!   y − n·C1 is exact by Sterbenz; r as a double-double rh + rl, |r| ≤ ln 2/1024 <
//!   2^−10.5; the roundings of (rl − n·C2's low part) − n·C3 and the dropped rest of
//!   ln 2/512 are below 2^−117 absolute in all (measured 2^−118), which is 2^−107 of m
//!   below at worst, and r is exact for n = 0), e^y = 2^k·T_j·(1 + P) with T_j =
//!   2^{j/512} a double-double (|lo| < 2^−53, so its error is below 2^−107 absolute),
//!   built on first use from malachite-float's correctly rounded 2^{j/512} and ln 2.
//! * P = e^r − 1 (`expm1_reduced`) = P(rh) + rl·(1 + P(rh)) (the dropped rl²/2 is below
//!   2^−106·r²), P(rh) = rh + rh²·R, R = 1/2 + rh(1/3! + rh(1/4! + rh(1/5! + rh·U))), the
//!   four outer steps of Horner's scheme in double-double (the coefficients as pairs,
//!   `Consts::inv_fact`; each step is an exact product, an exact sum and a low part rounded
//!   at 2^−104 relative), U = 1/6! + rh/7! + rh²/8! + rh³/9! in double (its 2^−51 relative
//!   error is 2^−113 of P once scaled by rh⁵/6!). The truncation, rh⁹/10! + …, is below
//!   2^−116 of P; rh² = s + se exactly (`two_prod`). P's relative error: below 2^−101.
//! * tanh(x) = sign(x)·(−m/(2 + m)), m = e^y − 1, y = −2|x|: for k ∈ {0, −1} m is
//!   2^k·((T_j − 2^−k) + T_j·P) with T_j − 2^−k exact, so no cancellation; below, |m| >
//!   1/2. k = 0 only for n = 0, where T_0 = 1 is exact and m = P. k = −1 for n ∈ [−512,
//!   −1] (y > −0.7, so m > −1/2); the smallest |m| there is at j = 511 (|T_511 − 2| =
//!   2^−8.53) with r near +ln 2/1024, where T_511·P cancels part of it: |m| ≥ 2^−10.53.
//!   The largest error: T_j's 2^−107 (times 2^k) against that |m|, 2^−97.5 relative to m
//!   (measured 2^−97.8), times 2/(2 + m) ≤ 4/3 for the quotient; with the sums' low parts
//!   (2^−104 each) and the quotient's (2^−102): below 2^−96.5, under the 2^−95 the bound
//!   assumes.
//! * σ(x) = 1/(1 + e) for x ≥ 0 and e/(1 + e) for x < 0, e = e^−|x| (no cancellation:
//!   the relative error of e, ~2^−103, carries over at most once): below 2^−101. For x
//!   near −680, e ≥ 2^−982 but the low parts (e's, the quotient's remainder terms) fall
//!   among subnormals and are rounded to 2^−1074: an absolute error of a few 2^−1075,
//!   which the bound's absolute part [`ERR_FLOOR`] (2^−1070) covers.
//! * The shortcuts of `correctly_rounded` (tanh: x for |x| < 2^−30, ±1 from 20; σ: 1 from
//!   40, +0 from −746, NaN for NaN). σ for x ∈ (−746, −680] goes to the exact computation:
//!   there e^x nears the subnormal range, where a double-double loses its low part.
//!
//! Products of two doubles are exact pairs through FMA (a·b − round(a·b) = fma(a, b, −p)),
//! or Dekker's splitting where the code is compiled without FMA.

use crate::num::correctly_rounded::{self as cr, SIGMOID_ONE, SIGMOID_ZERO, TANH_ONE, TANH_TINY};
use crate::sim::activation_f64_quick::{sigmoid_quick, tanh_pairs, tanh_quick, ERR_SIGMOID, TANH_ENTRIES};
use crate::sim::ziv::Func;
use malachite::base::num::conversion::traits::RoundingFrom;
use malachite::base::rounding_modes::RoundingMode::Nearest;
use malachite::{Float, Rational};
use std::sync::OnceLock;

const TABLE_BITS: u32 = 9;
const TABLE: usize = 1 << TABLE_BITS;
/// The relative half-width of the second tier's Ziv interval (its error is below 2^−95:
/// module doc).
pub const ERR: f64 = 1.0 / (1u128 << 92) as f64;
/// The absolute part of that half-width: σ's results near 2^−981 (x near −680) have their
/// low parts rounded among subnormals (module doc).
pub const ERR_FLOOR: f64 = f64::MIN_POSITIVE / (1u64 << 48) as f64;
/// σ below this (and above `SIGMOID_ZERO`) is left to the exact computation.
pub(crate) const SIGMOID_LOW: f64 = -680.0;
/// 1.5·2^52: y·512/ln 2 + MAGIC holds round(y·512/ln 2) in its low bits.
pub(crate) const MAGIC: f64 = 6_755_399_441_055_744.0;

/// T_j = 2^{j/512} = hi[j] + lo[j], ln 2/512 = c1 + c2 + c3 (c1 with 32 significant bits),
/// and 1/3!, 1/4!, 1/5! as pairs (nearest double, nearest double to the rest).
pub(crate) struct Consts {
    pub(crate) hi: [f64; TABLE],
    pub(crate) lo: [f64; TABLE],
    pub(crate) c1: f64,
    pub(crate) c2: f64,
    c3: f64,
    inv_fact: [(f64, f64); 3],
    /// 512/ln 2 rounded.
    pub(crate) inv: f64,
    /// tanh(k/32) as pairs, the table of tanh's first tier (`activation_f64_quick::tanh_pairs`).
    pub(crate) tanh: Box<[[f64; 2]; TANH_ENTRIES]>,
}

/// The constants, computed once from malachite-float's correctly rounded values.
pub(crate) fn consts() -> &'static Consts {
    static CONSTS: OnceLock<Box<Consts>> = OnceLock::new();
    CONSTS.get_or_init(|| {
        const P: u64 = 256;
        // splits v into doubles of the given widths, each the nearest to what remains
        let split = |v: Float, bits: [u64; 3]| {
            let mut rest = v;
            bits.map(|b| {
                let (part, _) = Float::from_float_prec_round_ref(&rest, b, Nearest);
                let d = f64::rounding_from(&part, Nearest).0;
                rest = std::mem::take(&mut rest).sub_prec_round(Float::from(d), P, Nearest).0;
                d
            })
        };
        let mut c = Box::new(Consts { hi: [0.0; TABLE], lo: [0.0; TABLE], c1: 0.0, c2: 0.0, c3: 0.0, inv_fact: [(0.0, 0.0); 3], inv: 0.0, tanh: tanh_pairs() });
        for j in 0..TABLE {
            let t = Float::power_of_2_rational_prec_round(Rational::from_unsigneds(j as u64, TABLE as u64), P, Nearest).0;
            let [h, l, _] = split(t, [53, 53, 53]);
            (c.hi[j], c.lo[j]) = (h, l);
        }
        let l = Float::ln_2_prec(P).0 >> TABLE_BITS;
        [c.c1, c.c2, c.c3] = split(l.clone(), [32, 53, 53]);
        c.inv = f64::rounding_from(l.reciprocal_prec_round(P, Nearest).0, Nearest).0;
        for (i, factorial) in [6u64, 24, 120].into_iter().enumerate() {
            let [h, l, _] = split(Float::from_rational_prec_round(Rational::from_unsigneds(1, factorial), P, Nearest).0, [53, 53, 53]);
            c.inv_fact[i] = (h, l);
        }
        c
    })
}

#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// (a + b, error) for |a| ≥ |b| (or a = 0).
#[inline(always)]
pub(crate) fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// (a·b, error), exact.
#[inline(always)]
pub(crate) fn two_prod<const FMA: bool>(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    if FMA {
        (p, a.mul_add(b, -p))
    } else {
        // Dekker: a = ah + al with 26-bit halves (Veltkamp), then the four partial products
        const SPLIT: f64 = 134_217_729.0;
        let (ca, cb) = (SPLIT * a, SPLIT * b);
        let (ah, bh) = (ca - (ca - a), cb - (cb - b));
        let (al, bl) = (a - ah, b - bh);
        (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
    }
}

/// (nh + nl)/(dh + dl) as a double-double (relative error ~2^−103), with one division:
/// qh = nh·(1/dh), the remainder nh + nl − qh·(dh + dl) (nh − round(qh·dh) is exact, by
/// Sterbenz), ql = remainder·(1/dh).
#[inline(always)]
pub(crate) fn div_dd<const FMA: bool>(nh: f64, nl: f64, dh: f64, dl: f64) -> (f64, f64) {
    div_dd_and_inverse::<FMA>(nh, nl, dh, dl).0
}

/// `div_dd` and the reciprocal 1/dh it computed (for an error bound in terms of the
/// denominator, without a second division).
#[inline(always)]
pub(crate) fn div_dd_and_inverse<const FMA: bool>(nh: f64, nl: f64, dh: f64, dl: f64) -> ((f64, f64), f64) {
    let inv = 1.0 / dh;
    let qh = nh * inv;
    let (p, pe) = two_prod::<FMA>(qh, dh);
    let rem = (((nh - p) - pe) + nl) - qh * dl;
    (fast_two_sum(qh, rem * inv), inv)
}

/// For y ∈ [−680, 0]: n = round(y·512/ln 2) = 512k + j, and (2^k, n, T_j as (th, tl)).
#[inline(always)]
pub(crate) fn table_parts(y: f64, c: &Consts) -> (f64, f64, (f64, f64)) {
    let shifted = y * c.inv + MAGIC;
    let n = shifted - MAGIC;
    let bits = shifted.to_bits().wrapping_sub(MAGIC.to_bits()); // n, two's complement
    let j = (bits & (TABLE as u64 - 1)) as usize;
    // 2^k, k = (n − j)/512, built in the exponent field: (n − j) << (52 − 9) = k << 52
    let scale = f64::from_bits((bits.wrapping_sub(j as u64) << (52 - TABLE_BITS)).wrapping_add(1023 << 52));
    (scale, n, (c.hi[j], c.lo[j]))
}

/// e^y = 2^k·T_j·(1 + P) for y ∈ [−680, 0]: (2^k, T_j as (th, tl), P = e^r − 1 as (ph, pl)).
#[inline(always)]
fn exp_parts<const FMA: bool>(y: f64, c: &Consts) -> (f64, (f64, f64), (f64, f64)) {
    let (scale, n, t_j) = table_parts(y, c);
    let t = y - n * c.c1; // exact
    let (p, pe) = two_prod::<FMA>(n, c.c2);
    let (rh, rl) = two_sum(t, -p);
    let (rh, rl) = fast_two_sum(rh, (rl - pe) - n * c.c3);
    (scale, t_j, expm1_reduced::<FMA>(rh, rl, c))
}

/// e^r − 1 for r = rh + rl, |r| < 2^−10.5, as a double-double (relative error below
/// 2^−101: module doc): P(rh) by Horner's scheme, its four outer steps in double-double,
/// then + rl·(1 + P(rh)).
#[inline(always)]
fn expm1_reduced<const FMA: bool>(rh: f64, rl: f64, c: &Consts) -> (f64, f64) {
    // U = 1/6! + rh/7! + rh²/8! + rh³/9!, in double
    let u = fmadd::<FMA>(rh, fmadd::<FMA>(rh, fmadd::<FMA>(rh, 1.0 / 362_880.0, 1.0 / 40_320.0), 1.0 / 5040.0), 1.0 / 720.0);
    // (vh, vl) = c + rh·(vh, vl) for c = 1/5!, 1/4!, 1/3!, 1/2
    let (mut vh, mut vl) = (u, 0.0);
    for (ch, cl) in [c.inv_fact[2], c.inv_fact[1], c.inv_fact[0], (0.5, 0.0)] {
        let (p, pe) = two_prod::<FMA>(rh, vh);
        let (sh, sl) = two_sum(ch, p);
        (vh, vl) = fast_two_sum(sh, sl + (cl + (pe + rh * vl)));
    }
    // P(rh) = rh + rh²·R, rh² = s + se exactly
    let (s, se) = two_prod::<FMA>(rh, rh);
    let (p, pe) = two_prod::<FMA>(s, vh);
    let (h, l) = two_sum(rh, p);
    fast_two_sum(h, l + ((pe + (s * vl + se * vh)) + (rl + rl * h)))
}

/// a·b + c: one FMA when `FMA`, else a product and a sum (both within the error budgets).
#[inline(always)]
pub(crate) fn fmadd<const FMA: bool>(a: f64, b: f64, c: f64) -> f64 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// (u − 1 + tl) + T·P as a double-double, T = th + tl: T·(1 + P) − 1 + u.
#[inline(always)]
fn t_times_one_plus_p<const FMA: bool>(u: f64, (th, tl): (f64, f64), (ph, pl): (f64, f64)) -> (f64, f64) {
    let (a, ae) = two_prod::<FMA>(th, ph);
    let (eh, el) = two_sum(th + u, a);
    fast_two_sum(eh, el + (tl + (ae + (th * pl + tl * ph))))
}

/// e^y as a double-double, y ∈ [−680, 0].
#[inline(always)]
fn exp_dd<const FMA: bool>(y: f64, c: &Consts) -> (f64, f64) {
    let (scale, t, p) = exp_parts::<FMA>(y, c);
    let (eh, el) = t_times_one_plus_p::<FMA>(0.0, t, p);
    (eh * scale, el * scale)
}

/// e^y − 1 as a double-double, y ∈ [−40, 0]. For k ∈ {0, −1} (y > −0.7) as
/// 2^k·((T_j − 2^−k) + T_j·P): T_j ∈ [1, 2), so T_j − 2^−k is exact (Sterbenz), and for
/// n = 0 it is 0, so small y keep their relative accuracy; else as 2^k·T_j(1 + P) − 1
/// (|e^y − 1| > 1/2: no cancellation).
#[inline(always)]
fn expm1_dd<const FMA: bool>(y: f64, c: &Consts) -> (f64, f64) {
    let (scale, t, p) = exp_parts::<FMA>(y, c);
    let (u, w) = if scale == 1.0 {
        (-1.0, 0.0)
    } else if scale == 0.5 {
        (-2.0, 0.0)
    } else {
        (0.0, -1.0)
    };
    let (eh, el) = t_times_one_plus_p::<FMA>(u, t, p);
    let (mh, ml) = two_sum(eh * scale, w);
    fast_two_sum(mh, ml + el * scale)
}

/// Ziv's test on q = qh + ql with the error bound `e` (absolute): (the rounding, decided).
#[inline(always)]
fn decide(qh: f64, ql: f64, e: f64) -> (f64, bool) {
    let (lo, hi) = (qh + (ql - e), qh + (ql + e));
    (lo, lo == hi)
}

/// tanh(a) for a = |x| ∈ [2^−30, 20) as a double-double: −m/(2 + m), m = e^{−2a} − 1.
#[inline(always)]
pub(crate) fn tanh_dd<const FMA: bool>(a: f64, c: &Consts) -> (f64, f64) {
    let (mh, ml) = expm1_dd::<FMA>(-2.0 * a, c);
    let (dh, dl) = two_sum(2.0, mh);
    let (dh, dl) = fast_two_sum(dh, dl + ml);
    div_dd::<FMA>(-mh, -ml, dh, dl)
}

/// σ(x) for x ∈ [−680, 40) as a double-double: 1/(1 + e) or e/(1 + e), e = e^−|x|.
#[inline(always)]
pub(crate) fn sigmoid_dd<const FMA: bool>(x: f64, c: &Consts) -> (f64, f64) {
    let (eh, el) = exp_dd::<FMA>(-x.abs(), c);
    let (dh, dl) = two_sum(1.0, eh);
    let (dh, dl) = fast_two_sum(dh, dl + el);
    let (nh, nl) = if x < 0.0 { (eh, el) } else { (1.0, 0.0) };
    div_dd::<FMA>(nh, nl, dh, dl)
}

/// A pair and the absolute error bound `err`·|q|.
#[inline(always)]
fn relative(q: (f64, f64), err: f64) -> ((f64, f64), f64) {
    (q, err * q.0.abs())
}

/// A second-tier pair and its Ziv bound, [`ERR`]·|q| + [`ERR_FLOOR`].
#[inline(always)]
fn second_tier_bound(q: (f64, f64)) -> ((f64, f64), f64) {
    (q, ERR * q.0.abs() + ERR_FLOOR)
}

/// Which evaluation a lane uses (`QUICK`): the first tier (`activation_f64_quick`, ~2^−70)
/// or the double-double one (2^−95).
const QUICK: bool = true;
const DOUBLE: bool = false;

/// tanh(x) and whether it is decided (when not, the next tier is needed). Outside the main
/// range [2^−30, 20) of |x| (tiny, ±1, NaN) every tier decides.
#[inline(always)]
fn tanh_lane<const FMA: bool, const TIER: bool>(x: f64, c: &Consts) -> (f64, bool) {
    let a = x.abs();
    let am = a.clamp(TANH_TINY, TANH_ONE.next_down());
    let ((qh, ql), e) = if TIER == QUICK { tanh_quick::<FMA>(am, c) } else { second_tier_bound(tanh_dd::<FMA>(am, c)) };
    let (t, decided) = decide(qh, ql, e);
    let main = (TANH_TINY..TANH_ONE).contains(&a);
    let v = if a < TANH_TINY {
        x
    } else if main {
        t.copysign(x)
    } else if a >= TANH_ONE {
        1f64.copysign(x)
    } else {
        x + x // NaN
    };
    (v, decided || !main)
}

/// σ(x) and whether it is decided.
#[inline(always)]
fn sigmoid_lane<const FMA: bool, const TIER: bool>(x: f64, c: &Consts) -> (f64, bool) {
    let xm = x.clamp(SIGMOID_LOW, SIGMOID_ONE);
    let ((qh, ql), e) = if TIER == QUICK { relative(sigmoid_quick::<FMA>(xm, c), ERR_SIGMOID) } else { second_tier_bound(sigmoid_dd::<FMA>(xm, c)) };
    let (s, decided) = decide(qh, ql, e);
    let main = x > SIGMOID_LOW && x < SIGMOID_ONE;
    let band = x > SIGMOID_ZERO && x <= SIGMOID_LOW; // left to the exact computation
    let v = if main {
        s
    } else if x >= SIGMOID_ONE {
        1.0
    } else if x <= SIGMOID_ZERO {
        0.0
    } else {
        x + x // NaN, or the band left to the exact computation
    };
    (v, if main { decided } else { !band })
}

/// One tier over `xs` (at most CHUNK values): results into `out`, 1 into `undecided` where
/// the tier cannot decide. Straight-line lanes the compiler vectorises.
#[inline(always)]
fn tier_pass<const FMA: bool, const TIER: bool>(f: Func, xs: &[f64], out: &mut [f64], undecided: &mut [u8]) {
    // (plain loops: a closure would not inherit the caller's target features)
    let c = consts();
    let lanes = out.iter_mut().zip(undecided.iter_mut()).zip(xs);
    match f {
        Func::Tanh => {
            for ((o, u), &x) in lanes {
                let (v, d) = tanh_lane::<FMA, TIER>(x, c);
                (*o, *u) = (v, u8::from(!d));
            }
        }
        Func::Sigmoid => {
            for ((o, u), &x) in lanes {
                let (v, d) = sigmoid_lane::<FMA, TIER>(x, c);
                (*o, *u) = (v, u8::from(!d));
            }
        }
    }
}

pub(crate) const CHUNK: usize = 64;

/// A spelling of the first tier: over `xs` (at most CHUNK values), in place, the results into
/// `xs` except at the values it leaves undecided, which keep their input; their positions
/// into `undecided`; returns how many.
/// (A trait rather than a closure: its `#[inline(always)]` method is inlined into the
/// caller, target features included.)
pub(crate) trait FirstTier {
    fn pass(&mut self, f: Func, xs: &mut [f64], undecided: &mut [u8]) -> usize;
}

/// The scalar lanes of this module ([`quick_pass`]), vectorised by the compiler.
pub(crate) struct Lanes<const FMA: bool>;
impl<const FMA: bool> FirstTier for Lanes<FMA> {
    #[inline(always)]
    fn pass(&mut self, f: Func, xs: &mut [f64], undecided: &mut [u8]) -> usize {
        let m = xs.len();
        let mut out = [0f64; CHUNK];
        let n = quick_pass::<FMA>(f, xs, &mut out[..m], undecided);
        for &i in &undecided[..n] {
            out[usize::from(i)] = xs[usize::from(i)];
        }
        xs.copy_from_slice(&out[..m]);
        n
    }
}

/// The first tier over `xs` (at most CHUNK values), portable: the results into `out`, the
/// positions of the values it leaves undecided into `undecided`; returns how many.
#[inline(always)]
fn quick_pass<const FMA: bool>(f: Func, xs: &[f64], out: &mut [f64], undecided: &mut [u8]) -> usize {
    let mut flags = [0u8; CHUNK];
    let m = xs.len();
    tier_pass::<FMA, QUICK>(f, xs, &mut out[..m], &mut flags[..m]);
    let mut n = 0;
    for (i, &u) in flags[..m].iter().enumerate() {
        undecided[n] = i as u8;
        n += usize::from(u);
    }
    n
}

/// f over `xs` in place: the first tier (`quick`: [`Lanes`], or the AVX2 spelling) over
/// each chunk; the values it leaves undecided are collected (across chunks, up to CHUNK of
/// them, so that the pass over them is vectorised and its fixed cost shared) and go through
/// the double-double tier, and the few left after that through the exact computation.
#[inline(always)]
fn slice_body<const FMA: bool>(f: Func, xs: &mut [f64], quick: &mut impl FirstTier, b: &mut SliceBuffers) {
    let SliceBuffers { idx, rest, at, rest_out, flags } = b;
    // the values left undecided so far (rest), and their positions in xs (at)
    let mut pending = 0;
    let mut start = 0;
    while start < xs.len() {
        let m = (xs.len() - start).min(CHUNK);
        let n = quick.pass(f, &mut xs[start..start + m], idx);
        if pending + n > CHUNK {
            second_tier::<FMA>(f, xs, &rest[..pending], &at[..pending], rest_out, flags);
            pending = 0;
        }
        for &i in &idx[..n] {
            (rest[pending], at[pending]) = (xs[start + usize::from(i)], start + usize::from(i));
            pending += 1;
        }
        start += m;
    }
    second_tier::<FMA>(f, xs, &rest[..pending], &at[..pending], rest_out, flags);
}

/// The buffers of [`slice_body`]: the first tier's undecided positions in a
/// chunk, the undecided values gathered and their positions, the second tier's results and
/// flags. On x86-64 each thread keeps one with its first tier's scratch
/// (`activation_f64_staged::with_kept_512`): made per call, their 2.1 KiB of zeros were a
/// fixed cost beside the 16 values of a batch-1 tick.
pub(crate) struct SliceBuffers {
    idx: [u8; CHUNK],
    rest: [f64; CHUNK],
    at: [usize; CHUNK],
    rest_out: [f64; CHUNK],
    flags: [u8; CHUNK],
}

impl SliceBuffers {
    pub(crate) fn new() -> SliceBuffers {
        SliceBuffers { idx: [0; CHUNK], rest: [0.0; CHUNK], at: [0; CHUNK], rest_out: [0.0; CHUNK], flags: [0; CHUNK] }
    }
}

/// The double-double tier over `rest` (at most CHUNK values, gathered from xs at `at`), the
/// exact computation for what it leaves; the results into xs at `at`.
#[inline(always)]
fn second_tier<const FMA: bool>(f: Func, xs: &mut [f64], rest: &[f64], at: &[usize], rest_out: &mut [f64; CHUNK], flags: &mut [u8; CHUNK]) {
    let n = rest.len();
    if n == 0 {
        return;
    }
    tier_pass::<FMA, DOUBLE>(f, rest, &mut rest_out[..n], &mut flags[..n]);
    for (((&i, &v), &u), &x) in at.iter().zip(&rest_out[..n]).zip(&flags[..n]).zip(rest) {
        xs[i] = if u == 0 { v } else { exact(f, x) };
    }
}

/// The exact computation (`num::correctly_rounded`).
#[cold]
fn exact(f: Func, x: f64) -> f64 {
    match f {
        Func::Tanh => cr::tanh(x),
        Func::Sigmoid => cr::sigmoid(x),
    }
}

/// Whether the portable path has a hardware FMA (`f64::mul_add` is one instruction).
const PORTABLE_FMA: bool = cfg!(any(target_feature = "fma", target_arch = "aarch64"));

/// f over `xs`, in place, correctly rounded: AVX-512, else AVX2 + FMA, else portable.
pub fn slice(f: Func, xs: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::sim::cpu::avx512() {
            // SAFETY: the CPU has the features (checked above).
            return unsafe { slice_avx512(f, xs) };
        }
        if crate::sim::cpu::avx2_fma() {
            // SAFETY: as above.
            return unsafe { slice_avx2(f, xs) };
        }
    }
    portable(f, xs)
}

/// σ over `xs[..nsig]` and tanh over `xs[nsig..]`, in place, correctly rounded: the same
/// values as [`slice`] of each. On AVX2 + FMA without AVX-512, a short slice (at most
/// `activation_f64_staged::SHORT` values, `nsig` a multiple of 4: a batch-1 LSTM tick's
/// gates and candidate at hidden 16) runs the first tier of both in one staged pass
/// (`activation_f64_staged::sigmoid_tanh_pass`), the two chains overlapping, and the few
/// values it leaves through the next tiers one by one; otherwise two calls of [`slice`].
pub fn sigmoid_then_tanh(xs: &mut [f64], nsig: usize) {
    assert!(nsig <= xs.len(), "sigmoid_then_tanh: σ over {nsig} of {} values", xs.len());
    #[cfg(target_arch = "x86_64")]
    {
        use crate::sim::activation_f64_staged::SHORT;
        if xs.len() <= SHORT && nsig % 4 == 0 && !crate::sim::cpu::avx512() && crate::sim::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe { sigmoid_then_tanh_avx2(xs, nsig) };
        }
    }
    let (gates, candidate) = xs.split_at_mut(nsig);
    slice(Func::Sigmoid, gates);
    slice(Func::Tanh, candidate);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma")]
unsafe fn sigmoid_then_tanh_avx2(xs: &mut [f64], nsig: usize) {
    use crate::sim::activation_f64_staged::{sigmoid_tanh_pass, with_kept_256};
    // (the closure only calls a function with the target features)
    let mut open = with_kept_256(|(s, _)| sigmoid_tanh_pass(xs, nsig, s));
    while open != 0 {
        let i = open.trailing_zeros() as usize;
        let f = if i < nsig { Func::Sigmoid } else { Func::Tanh };
        xs[i] = after_first_tier::<true>(f, xs[i]);
        open &= open - 1;
    }
}

/// f over `xs`, in place, correctly rounded, without SIMD beyond what the build targets.
pub(crate) fn portable(f: Func, xs: &mut [f64]) {
    slice_body::<PORTABLE_FMA>(f, xs, &mut Lanes::<PORTABLE_FMA>, &mut SliceBuffers::new())
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,avx,fma")]
unsafe fn slice_avx512(f: Func, xs: &mut [f64]) {
    use crate::sim::activation_f64_staged::{short_pass_512, SHORT};
    if xs.len() <= SHORT {
        // a batch-1 tick's row: in registers, then the undecided lanes (about one in 10^4)
        // one by one
        let mut open = short_pass_512(f, xs);
        while open != 0 {
            let i = open.trailing_zeros() as usize;
            xs[i] = after_first_tier::<true>(f, xs[i]);
            open &= open - 1;
        }
        return;
    }
    // the staged first tier on 8 lanes (`activation_f64_staged`), this thread's scratch
    // (the closure only calls a function with the target features)
    crate::sim::activation_f64_staged::with_kept_512(|k| slice_avx512_in(f, xs, k))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,avx,fma")]
unsafe fn slice_avx512_in(f: Func, xs: &mut [f64], (s, b): &mut (crate::sim::activation_f64_staged::Scratch<std::arch::x86_64::__m512d>, SliceBuffers)) {
    // SAFETY: the caller checked AVX-512 F, DQ and VL.
    slice_body::<true>(f, xs, &mut unsafe { crate::sim::activation_f64_staged::Avx512::new(s) }, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma")]
pub(crate) unsafe fn slice_avx2(f: Func, xs: &mut [f64]) {
    crate::sim::activation_f64_staged::with_kept_256(|k| slice_avx2_in(f, xs, k))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma")]
unsafe fn slice_avx2_in(f: Func, xs: &mut [f64], (s, b): &mut (crate::sim::activation_f64_staged::Scratch<std::arch::x86_64::__m256d>, SliceBuffers)) {
    // SAFETY: the caller's CPU has AVX2 and FMA.
    slice_body::<true>(f, xs, &mut unsafe { crate::sim::activation_f64_staged::Avx2::new(s) }, b)
}

/// One lane of a tier.
#[inline(always)]
fn lane<const FMA: bool, const TIER: bool>(f: Func, x: f64) -> (f64, bool) {
    match f {
        Func::Tanh => tanh_lane::<FMA, TIER>(x, consts()),
        Func::Sigmoid => sigmoid_lane::<FMA, TIER>(x, consts()),
    }
}

/// f(x) for one value: the tiers in turn, then, when undecided, the exact computation.
#[inline(always)]
fn one_body<const FMA: bool>(f: Func, x: f64) -> f64 {
    match lane::<FMA, QUICK>(f, x) {
        (v, true) => v,
        _ => after_first_tier::<FMA>(f, x),
    }
}

/// f(x) for a value the first tier left undecided: the double-double tier, then, when
/// undecided, the exact computation.
#[inline(always)]
fn after_first_tier<const FMA: bool>(f: Func, x: f64) -> f64 {
    match lane::<FMA, DOUBLE>(f, x) {
        (v, true) => v,
        _ => exact(f, x),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn one_fma(f: Func, x: f64) -> f64 {
    one_body::<true>(f, x)
}

fn one(f: Func, x: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        // SAFETY: the CPU has FMA (checked above).
        return unsafe { one_fma(f, x) };
    }
    one_body::<PORTABLE_FMA>(f, x)
}

/// tanh(x) correctly rounded.
pub fn tanh(x: f64) -> f64 {
    one(Func::Tanh, x)
}

/// σ(x) correctly rounded.
pub fn sigmoid(x: f64) -> f64 {
    one(Func::Sigmoid, x)
}

#[cfg(test)]
#[path = "activation_f64_tests.rs"]
mod tests;
