//! The first tier of `activation_f64` (`activation_f64_quick`) written out in AVX2 + FMA
//! intrinsics, 4 f64 lanes per vector: the same operations in the same order, so the same
//! pairs and the same Ziv bounds bit for bit (the test compares them lane by lane), and so
//! the same proofs (the error analysis is `activation_f64_quick`'s module doc).
//!
//! Why a second spelling: the evaluation is one long dependency chain (about 35 dependent
//! operations and a division, some 150 cycles per vector), and the out-of-order window
//! holds about one vector's worth of it, so the loop the compiler vectorised from the scalar
//! lanes ran near 20 cycles per value, bound by latency. Here a chunk of 64 values goes
//! through the evaluation in stages, one pass of the 16 vectors per stage, the
//! intermediate values kept in L1 between passes: σ in four (the reduction, the
//! polynomial, the table and the quotient's operands, the quotient and Ziv's test), tanh in
//! six (|x| and which formula, the series, then σ's four on e^{−2|x|}). Within a pass the
//! vectors are independent and the chain is a fraction of the whole, so the window holds
//! several vectors of it: the tier alone measured σ 5.6 → 3.4 ns per value and tanh
//! 7.5 → 4.8 on Zen 3 (`f64_ns_per_value`), then 2.8 and 4.0 with the intermediate arrays
//! made once per slice ([`Scratch`]) instead of zeroed per chunk. Splitting the quotient
//! into two passes measured slower (σ 4.8–6.3 ns, with per-chunk arrays). Also: the 2^{j/512} table is read as (high, low) pairs, one 16-byte load per lane
//! with the index from memory; tanh evaluates only the formulas some lane of a vector needs
//! (the odd series below |x| = 0.083, e^{−2|x|} above); and the undecided lanes come out
//! as a 4-bit mask per vector, appended to the caller's list of positions.
//!
//! Lanes outside the main ranges (NaN, tanh's tiny and saturated inputs, σ's saturated
//! inputs and the band (−746, −680] left to the exact computation) take the scalar
//! `*_lane`'s values: the same selections, vectorised.

use crate::num::correctly_rounded::{SIGMOID_ONE, SIGMOID_ZERO, TANH_ONE, TANH_TINY};
use crate::sim::activation_f64::{consts, Consts, FirstTier, CHUNK, MAGIC, SIGMOID_LOW};
use crate::sim::activation_f64_quick::{ERR_SIGMOID, ERR_TANH, ERR_TANH_FLOOR, ERR_TANH_SERIES, ERR_TANH_SERIES_FLOOR, TANH_SERIES, TANH_SERIES_BELOW};
use crate::sim::ziv::Func;
use std::arch::x86_64::*;
use std::sync::LazyLock;

/// Vectors of 4 lanes per chunk.
const VECS: usize = CHUNK / 4;

/// The first tier over `xs` (at most CHUNK values): the results into `out`, and the
/// positions of the values it leaves undecided into `undecided`; returns how many it left.
/// σ runs all 16 vectors of the chunk (constant trip counts, measured faster; the vectors
/// past the input hold earlier chunks' values, whose results are dropped), tanh the ones
/// holding input (it picks its vectors per pass anyway).
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,avx,fma")]
pub(crate) unsafe fn quick_pass(f: Func, xs: &[f64], out: &mut [f64], undecided: &mut [u8], s: &mut Scratch) -> usize {
    let m = xs.len();
    assert!(m <= CHUNK && out.len() >= m && undecided.len() >= m, "quick_pass: more than a chunk, or buffers shorter than the input");
    let nv = m.div_ceil(4);
    // the input, its last vector padded with 0.5 (an ordinary value)
    let x = s.x.as_mut_ptr() as *mut f64;
    std::ptr::copy_nonoverlapping(xs.as_ptr(), x, m);
    for i in m..4 * nv {
        *x.add(i) = 0.5;
    }
    let c = consts();
    match f {
        Func::Tanh => tanh_chunk(nv, s, c),
        Func::Sigmoid => sigmoid_chunk(s, c),
    }
    let (v, open) = (&s.v, &s.open);
    std::ptr::copy_nonoverlapping(v.as_ptr() as *const f64, out.as_mut_ptr(), m);
    let mut n = 0;
    for (i, &o) in open[..nv].iter().enumerate() {
        let mut bits = o;
        while bits != 0 {
            let lane = 4 * i + bits.trailing_zeros() as usize;
            if lane < m {
                undecided[n] = lane as u8;
                n += 1;
            }
            bits &= bits - 1;
        }
    }
    n
}

/// The intermediate values of a chunk, one vector of 4 lanes per entry (about 7 KiB, in L1),
/// made once per slice: zeroing them per chunk measured as a sixth of σ's time.
pub(crate) struct Scratch {
    x: [__m256d; VECS],
    /// The results.
    v: [__m256d; VECS],
    /// The undecided lanes' bits.
    open: [i32; VECS],
    e: ExpStages,
    q: Operands,
    /// tanh: |x| clamped, which lanes take the series, and the series' pairs and bounds.
    am: [__m256d; VECS],
    series: [i32; VECS],
    sh: [__m256d; VECS],
    sl: [__m256d; VECS],
    se: [__m256d; VECS],
}

impl Scratch {
    pub(crate) fn new() -> Scratch {
        // SAFETY: every field is an array of f64 vectors or of integers, for which all-zero
        // bits are a value.
        unsafe { std::mem::zeroed() }
    }
}

/// This spelling as `activation_f64`'s first tier, with its scratch.
pub(crate) struct Avx2(Scratch);

impl Avx2 {
    /// # Safety
    /// The CPU must have AVX2 and FMA (`pass` runs [`quick_pass`]).
    pub(crate) unsafe fn new() -> Avx2 {
        Avx2(Scratch::new())
    }
}

impl FirstTier for Avx2 {
    #[inline(always)]
    fn pass(&mut self, f: Func, xs: &[f64], out: &mut [f64], undecided: &mut [u8]) -> usize {
        // SAFETY: `new`'s caller vouched for AVX2 and FMA.
        unsafe { quick_pass(f, xs, out, undecided, &mut self.0) }
    }
}

#[inline(always)]
unsafe fn splat(v: f64) -> __m256d {
    _mm256_set1_pd(v)
}

#[inline(always)]
unsafe fn abs(x: __m256d) -> __m256d {
    _mm256_andnot_pd(splat(-0.0), x)
}

/// −x (the sign bit flipped, as the scalar tier's negation).
#[inline(always)]
unsafe fn neg(x: __m256d) -> __m256d {
    _mm256_xor_pd(x, splat(-0.0))
}

/// (a + b, error) for |a| ≥ |b| (`activation_f64::fast_two_sum`).
#[inline(always)]
unsafe fn fast_two_sum(a: __m256d, b: __m256d) -> (__m256d, __m256d) {
    let s = _mm256_add_pd(a, b);
    (s, _mm256_sub_pd(b, _mm256_sub_pd(s, a)))
}

/// `activation_f64::div_dd_and_inverse`: ((nh + nl)/(dh + dl) as a pair, 1/dh).
#[inline(always)]
unsafe fn div_dd(nh: __m256d, nl: __m256d, dh: __m256d, dl: __m256d) -> ((__m256d, __m256d), __m256d) {
    let inv = _mm256_div_pd(splat(1.0), dh);
    let qh = _mm256_mul_pd(nh, inv);
    let p = _mm256_mul_pd(qh, dh);
    let pe = _mm256_fmsub_pd(qh, dh, p);
    let rem = _mm256_sub_pd(_mm256_add_pd(_mm256_sub_pd(_mm256_sub_pd(nh, p), pe), nl), _mm256_mul_pd(qh, dl));
    (fast_two_sum(qh, _mm256_mul_pd(rem, inv)), inv)
}

/// The operands of a chunk of quotients (nh + nl)/(dh + dl), one vector each.
struct Operands {
    nh: [__m256d; VECS],
    nl: [__m256d; VECS],
    dh: [__m256d; VECS],
    dl: [__m256d; VECS],
}

impl Operands {
    /// The quotient of vector i as a pair, and 1/dh.
    #[inline(always)]
    unsafe fn divide(&self, i: usize) -> ((__m256d, __m256d), __m256d) {
        div_dd(self.nh[i], self.nl[i], self.dh[i], self.dl[i])
    }
}

/// Ziv's test on qh + ql with the absolute bound e: (the rounding, all-ones where undecided).
#[inline(always)]
unsafe fn decide(qh: __m256d, ql: __m256d, e: __m256d) -> (__m256d, __m256d) {
    let lo = _mm256_add_pd(qh, _mm256_sub_pd(ql, e));
    let hi = _mm256_add_pd(qh, _mm256_add_pd(ql, e));
    (lo, _mm256_cmp_pd::<_CMP_NEQ_UQ>(lo, hi))
}

/// e^y's intermediate values for a chunk of vectors, y ∈ [−680, 0]
/// (`activation_f64_quick::exp_quick_parts` with `activation_f64::table_parts`, in stages).
struct ExpStages {
    /// 2^k.
    scale: [__m256d; VECS],
    /// The table index j of n = 512k + j, per lane.
    j: [[i64; 4]; VECS],
    /// r, then P = e^r − 1.
    r: [__m256d; VECS],
}

impl ExpStages {
    /// Stage 1: n = round(y·512/ln 2) = 512k + j, 2^k, r = (y − n·c1) − n·c2.
    #[inline(always)]
    unsafe fn reduce(&mut self, i: usize, y: __m256d, c: &Consts) {
        let shifted = _mm256_add_pd(_mm256_mul_pd(y, splat(c.inv)), splat(MAGIC));
        let n = _mm256_sub_pd(shifted, splat(MAGIC));
        let bits = _mm256_sub_epi64(_mm256_castpd_si256(shifted), _mm256_set1_epi64x(MAGIC.to_bits() as i64));
        let j = _mm256_and_si256(bits, _mm256_set1_epi64x((c.hi.len() - 1) as i64));
        let k = _mm256_slli_epi64::<{ 52 - 9 }>(_mm256_sub_epi64(bits, j));
        self.scale[i] = _mm256_castsi256_pd(_mm256_add_epi64(k, _mm256_set1_epi64x(1023 << 52)));
        _mm256_storeu_si256(self.j[i].as_mut_ptr() as *mut __m256i, j);
        self.r[i] = _mm256_fnmadd_pd(n, splat(c.c2), _mm256_fnmadd_pd(n, splat(c.c1), y));
    }

    /// Stage 2: P = r + r²·(1/2 + r/6 + … + r⁵/5040), in place of r.
    #[inline(always)]
    unsafe fn polynomial(&mut self, i: usize) {
        let r = self.r[i];
        let mut q = _mm256_fmadd_pd(r, splat(1.0 / 5040.0), splat(1.0 / 720.0));
        for coef in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5] {
            q = _mm256_fmadd_pd(r, q, splat(coef));
        }
        self.r[i] = _mm256_fmadd_pd(_mm256_mul_pd(r, r), q, r);
    }

    /// Stage 3: (2^k, T_j's high part, B = th·P + (tl + tl·P)): e^y = 2^k·(th + B).
    #[inline(always)]
    unsafe fn parts(&self, i: usize) -> (__m256d, __m256d, __m256d) {
        let (th, tl) = table_pairs(&self.j[i]);
        let p = self.r[i];
        (self.scale[i], th, _mm256_fmadd_pd(th, p, _mm256_fmadd_pd(tl, p, tl)))
    }
}

/// T_j = 2^{j/512} as (high, low) pairs side by side, so that one 16-byte load reads both.
static PAIRS: LazyLock<Box<[[f64; 2]; 512]>> = LazyLock::new(|| {
    let c = consts();
    Box::new(std::array::from_fn(|j| [c.hi[j], c.lo[j]]))
});

/// (T_j's high parts, low parts) of four lanes' j (each below 512): four 16-byte loads.
#[inline(always)]
unsafe fn table_pairs(j: &[i64; 4]) -> (__m256d, __m256d) {
    let t = PAIRS.as_ptr();
    let at = |i: i64| _mm_loadu_pd(t.add(i as usize) as *const f64);
    // [h0 l0 h2 l2], [h1 l1 h3 l3] → [h0 h1 h2 h3], [l0 l1 l2 l3]
    let (a, b) = (_mm256_set_m128d(at(j[2]), at(j[0])), _mm256_set_m128d(at(j[3]), at(j[1])));
    (_mm256_unpacklo_pd(a, b), _mm256_unpackhi_pd(a, b))
}

/// σ's main range (SIGMOID_LOW, SIGMOID_ONE) tested as |x + MIDDLE| < RADIUS: rounding is
/// monotone and ±RADIUS are doubles, so no lane outside passes (a lane within an ulp of an
/// end may fail, and takes the general selection).
const SIGMOID_MIDDLE: f64 = -(SIGMOID_LOW + SIGMOID_ONE) / 2.0;
const SIGMOID_RADIUS: f64 = (SIGMOID_ONE - SIGMOID_LOW) / 2.0;

/// `activation_f64::sigmoid_lane` (first tier) over a chunk of vectors: the values, and the
/// undecided lanes' bits per vector.
#[inline(always)]
unsafe fn sigmoid_chunk(s: &mut Scratch, c: &Consts) {
    let Scratch { x, v, open, e, q, .. } = s;
    for (i, &x) in x.iter().enumerate() {
        // clamp as f64::clamp does (NaN lanes are replaced below); y = −|xm|
        let xm = _mm256_min_pd(_mm256_max_pd(x, splat(SIGMOID_LOW)), splat(SIGMOID_ONE));
        e.reduce(i, _mm256_or_pd(xm, splat(-0.0)), c);
    }
    for i in 0..VECS {
        e.polynomial(i);
    }
    // the quotient's operands, then the quotient
    for (i, &x) in x.iter().enumerate() {
        let (scale, th, b) = e.parts(i);
        let (eh, el) = fast_two_sum(th, b);
        let (eh, el) = (_mm256_mul_pd(eh, scale), _mm256_mul_pd(el, scale));
        let (h, l) = fast_two_sum(splat(1.0), eh);
        // (x < 0 as xm < 0, except NaN, whose lanes are replaced)
        let negative = _mm256_cmp_pd::<_CMP_LT_OQ>(x, _mm256_setzero_pd());
        (q.nh[i], q.nl[i]) = (_mm256_blendv_pd(splat(1.0), eh, negative), _mm256_and_pd(el, negative));
        (q.dh[i], q.dl[i]) = (h, _mm256_add_pd(l, el));
    }
    for (i, &x) in x.iter().enumerate() {
        let ((qh, ql), _) = q.divide(i);
        let (s, undecided) = decide(qh, ql, _mm256_mul_pd(splat(ERR_SIGMOID), abs(qh)));
        if _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(abs(_mm256_add_pd(x, splat(SIGMOID_MIDDLE))), splat(SIGMOID_RADIUS))) == 0b1111 {
            // every lane in (SIGMOID_LOW, SIGMOID_ONE): no selection
            (v[i], open[i]) = (s, _mm256_movemask_pd(undecided));
            continue;
        }
        let main = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(x, splat(SIGMOID_LOW)), _mm256_cmp_pd::<_CMP_LT_OQ>(x, splat(SIGMOID_ONE)));
        let band = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(x, splat(SIGMOID_ZERO)), _mm256_cmp_pd::<_CMP_LE_OQ>(x, splat(SIGMOID_LOW)));
        // outside: 1 from SIGMOID_ONE, +0 to SIGMOID_ZERO, else x + x (NaN, or the band)
        let ones = _mm256_cmp_pd::<_CMP_GE_OQ>(x, splat(SIGMOID_ONE));
        let zeros = _mm256_cmp_pd::<_CMP_LE_OQ>(x, splat(SIGMOID_ZERO));
        let outside = _mm256_blendv_pd(_mm256_blendv_pd(_mm256_add_pd(x, x), _mm256_setzero_pd(), zeros), splat(1.0), ones);
        v[i] = _mm256_blendv_pd(outside, s, main);
        open[i] = _mm256_movemask_pd(_mm256_or_pd(_mm256_and_pd(undecided, main), band));
    }
}

/// `activation_f64_quick::tanh_series` on 4 lanes: (pair, absolute Ziv bound).
#[inline(always)]
unsafe fn tanh_series(a: __m256d) -> (__m256d, __m256d, __m256d) {
    let z = _mm256_mul_pd(a, a);
    let mut p = splat(TANH_SERIES[7]);
    for &ci in TANH_SERIES[..7].iter().rev() {
        p = _mm256_fmadd_pd(p, z, splat(ci));
    }
    let (h, l) = fast_two_sum(a, _mm256_mul_pd(_mm256_mul_pd(a, z), p));
    (h, l, _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(splat(ERR_TANH_SERIES), z), splat(ERR_TANH_SERIES_FLOOR)), a))
}

/// tanh's main range [TANH_TINY, TANH_ONE) of |x|, without its left end, tested as
/// |a + MIDDLE| < RADIUS (as σ's: no lane outside passes).
const TANH_MIDDLE: f64 = -(TANH_TINY + TANH_ONE) / 2.0;
const TANH_RADIUS: f64 = (TANH_ONE - TANH_TINY) / 2.0;

/// `activation_f64::tanh_lane` (first tier) over a chunk of vectors: the values, and the
/// undecided lanes' bits per vector. A vector evaluates the series, e^{−2a} or both, as its
/// lanes need (`activation_f64_quick::tanh_quick` selects per lane).
#[inline(always)]
unsafe fn tanh_chunk(nv: usize, st: &mut Scratch, c: &Consts) {
    let Scratch { x, v, open, e, q, am, series, sh, sl, se } = st;
    let x = &x[..nv];
    for (i, &x) in x.iter().enumerate() {
        // clamp as f64::clamp does (NaN lanes are replaced below)
        am[i] = _mm256_min_pd(_mm256_max_pd(abs(x), splat(TANH_TINY)), splat(TANH_ONE.next_down()));
        series[i] = _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(am[i], splat(TANH_SERIES_BELOW)));
    }
    let by_exp = |i: usize| series[i] != 0b1111;
    for i in (0..x.len()).filter(|&i| series[i] != 0) {
        (sh[i], sl[i], se[i]) = tanh_series(am[i]);
    }
    for i in (0..x.len()).filter(|&i| by_exp(i)) {
        e.reduce(i, _mm256_mul_pd(splat(-2.0), am[i]), c);
    }
    for i in (0..x.len()).filter(|&i| by_exp(i)) {
        e.polynomial(i);
    }
    // m = e^{−2a} − 1 (`tanh_by_exp`), and the quotient's operands −m and 2 + m
    for i in (0..x.len()).filter(|&i| by_exp(i)) {
        let (scale, th, b) = e.parts(i);
        // k ∈ {0, −1}: 2^k·((th − 2^−k) + B)
        let (h, l) = fast_two_sum(_mm256_sub_pd(th, _mm256_sub_pd(splat(3.0), _mm256_mul_pd(splat(2.0), scale))), b);
        let (near_h, near_l) = (_mm256_mul_pd(h, scale), _mm256_mul_pd(l, scale));
        // else 2^k·(th + B) − 1
        let (eh, el) = fast_two_sum(th, b);
        let (h, l) = fast_two_sum(splat(-1.0), _mm256_mul_pd(eh, scale));
        let (far_h, far_l) = (h, _mm256_add_pd(l, _mm256_mul_pd(el, scale)));
        let near = _mm256_cmp_pd::<_CMP_GE_OQ>(scale, splat(0.5));
        let (m_h, m_l) = (_mm256_blendv_pd(far_h, near_h, near), _mm256_blendv_pd(far_l, near_l, near));
        let (d_h, d_l) = fast_two_sum(splat(2.0), m_h);
        (q.nh[i], q.nl[i], q.dh[i], q.dl[i]) = (neg(m_h), neg(m_l), d_h, _mm256_add_pd(d_l, m_l));
    }
    for (i, &x) in x.iter().enumerate() {
        let s = _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_and_si256(_mm256_set1_epi64x(series[i] as i64), _mm256_set_epi64x(8, 4, 2, 1)), _mm256_setzero_si256()));
        let (qh, ql, err) = if series[i] == 0b1111 {
            (sh[i], sl[i], se[i])
        } else {
            let ((qh, ql), inv) = q.divide(i);
            let rel = _mm256_mul_pd(_mm256_mul_pd(_mm256_mul_pd(splat(ERR_TANH), e.scale[i]), inv), inv);
            let err = _mm256_add_pd(rel, _mm256_mul_pd(splat(ERR_TANH_FLOOR), abs(qh)));
            (_mm256_blendv_pd(qh, sh[i], s), _mm256_blendv_pd(ql, sl[i], s), _mm256_blendv_pd(err, se[i], s))
        };
        let (t, undecided) = decide(qh, ql, err);
        let a = abs(x);
        let sign = _mm256_and_pd(x, splat(-0.0));
        if _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(abs(_mm256_add_pd(a, splat(TANH_MIDDLE))), splat(TANH_RADIUS))) == 0b1111 {
            // every lane in [TANH_TINY, TANH_ONE) (the test excludes the left end): no selection
            (v[i], open[i]) = (_mm256_or_pd(abs(t), sign), _mm256_movemask_pd(undecided));
            continue;
        }
        let main = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GE_OQ>(a, splat(TANH_TINY)), _mm256_cmp_pd::<_CMP_LT_OQ>(a, splat(TANH_ONE)));
        // outside: x below TANH_TINY, ±1 from TANH_ONE, else x + x (NaN)
        let tiny = _mm256_cmp_pd::<_CMP_LT_OQ>(a, splat(TANH_TINY));
        let ones = _mm256_cmp_pd::<_CMP_GE_OQ>(a, splat(TANH_ONE));
        let outside = _mm256_blendv_pd(_mm256_blendv_pd(_mm256_add_pd(x, x), _mm256_or_pd(splat(1.0), sign), ones), x, tiny);
        v[i] = _mm256_blendv_pd(outside, _mm256_or_pd(abs(t), sign), main);
        open[i] = _mm256_movemask_pd(_mm256_and_pd(undecided, main));
    }
}
