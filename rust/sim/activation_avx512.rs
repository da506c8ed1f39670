//! tanh and σ over f32 lanes with AVX-512 + FMA: 16 values per step, the same results as
//! `fast_tanh` / `fast_sigmoid` (so, bit for bit, the documented `round_f32(correctly rounded f64 value)`),
//! about four times faster than their auto-vectorised loops. (The half formats look their
//! results up instead: `half_tables`.)
//!
//! Each value is clamped (`vrangeps`), widened to f64 and approximated there with
//! branch-free FMA code (below), to a relative error under 2^−40; a Ziv test (`ziv`) then
//! decides the rounding to f32: when every f64 within 2^16 ulps of y (an interval of at
//! least y(1 ± 2^−37): [`ZIV_ULPS`]) rounds to the same f32 (tested on y's bits, `settle`),
//! that value is the rounding of the documented f64 (which lies within 2^−50 of the true
//! value, inside that interval); otherwise (about one value in 2^11) the documented formula
//! is evaluated by the scalar fallback, after the loop (`run`). The approximation may
//! differ from the portable one by an ulp or two of f64: only the decided results matter,
//! and those are the documented ones.
//!
//! Approximations (tanh on |x|, its sign applied to the f32 result; σ on x):
//! * e^y for y = −u, u = 2·min(|x|, 40) (tanh) or x clamped to [−110, 110] (σ):
//!   table-driven reduction y = (16n + j)·(ln 2)/16 + r, k = 16n + j = round(16y/ln 2) (the
//!   1.5·2^52 rounding trick), r = y − k·fl(ln2/16) in one FMA, |r| ≤ ln2/32 + 2^−40.
//!   fl(ln2/16) is off by at most 2^−58, so r by |k|·2^−58 ≤ |u|·2^−53.4 + 2^−59: a
//!   relative error of e^y, which is below 2^−53.4 relative to |expm1(y)| (u·e^−u/(1 −
//!   e^−u) ≤ 1) and below 2^−46.6 for σ's e^y (|k| ≤ 2540). T_j = 2^{j/16} from a 16-entry
//!   table (`vpermt2pd` on the low 4 bits of k), S = T_j·2^n (integer operations on the
//!   bits: `exp_parts`), and q = expm1(r) = r + r²·P(r), P the minimax cubic for q's
//!   relative error ([`EXPM1_P`]: 2^−41.1), evaluated by Estrin's scheme. Then each
//!   function takes one FMA on S and q (`exponential`): σ's e^y = S·q + S (q's error is
//!   below 2^−46.6 relative to 1 + q, and T_j's rounding and the FMA's add 2^−53 each:
//!   below 2^−45.5 with r's), tanh's expm1(y) = S·q + (S − 1) (S − 1 is exact for S ∈ [½, 1]
//!   (Sterbenz), and below ½ its rounding is relative to |expm1(y)| > ½; T_j's own
//!   rounding, 2^−53, is below 2^−47 relative to |expm1(y)| ≥ 0.021 when k ≠ 0, and T_0 = 1;
//!   when k ≠ 0, |S·q| ≤ 1.02·|expm1(y)|, so q's error stays 2^−41.0 relative to
//!   expm1(y)).
//! * −tanh|x| = e/(2 + e), e = expm1(−2|x|) ∈ (−1, 0]; σ(x) = 1/(1 + e^{−x}) for either
//!   sign of x (no cancellation: 1 + e^{−x} ≥ 1 carries e^{−x}'s relative error at most).
//!   The quotient n/d (`divide`): x0 = rcp14(d) (relative error below 2^−14),
//!   ε = 1 − d·x0, n/d = n·x0·(1 + ε + ε² + …) ≈ q0 + q0·(ε + ε²), q0 = n·x0 (σ: q0 = x0),
//!   error below ε³ + a few 2^−53 ≈ 2^−42. e's error enters the numerator and the
//!   denominator together: the result's relative error is e's times 2/(2 + e), which is
//!   below 2^−41.0 where q's error dominates (k = 0, and |y| near ln2/32, where
//!   e^y/(1 − e^{2y}) ≤ 23 and |q| ≤ 0.022 keep it there).
//!   Relative errors: tanh below 2^−41.0 + 2^−42 + a few 2^−53 < 2^−40.4, σ below
//!   2^−45.5 + 2^−42 < 2^−41.8 (measured on a grid: 2^−41.07 and 2^−42.53). Every f32 input
//!   is checked against the documented rounding by an ignored test (`every_f32_…`).
//! * The Ziv test on y's bits (`settle`): the f32 rounding of a normal result keeps y's top
//!   35 bits and rounds on the 29 it drops, so every f64 within 2^16 ulps of y rounds to
//!   the f32 that the hardware conversion of y gives unless those 29 bits lie within 2^16
//!   of the midpoint 2^28 (an integer addition and `vptestnmq`, 2 operations per 8 lanes;
//!   it replaced the conversion of y − 2^16 ulps and y + 2^16 ulps and their comparison,
//!   which took 4). Since session 43 a step tests its 32 values at once: the dropped bits
//!   shifted and masked (`vpaddq`, `vpandq`), their unsigned minimum over the step's four
//!   vectors (`vpminuq`), one `vptestnmq`, and x's NaNs; only a step with an open lane (rare)
//!   makes the per-lane masks and blends x into those lanes. The 8-lane masks, their joining,
//!   the NaN test per vector and the masked stores had cost Zen 5 about 1.5 cycles per 8
//!   values (in a standalone copy of this loop, pass two ran 0.166 ns per value, 0.118
//!   without any test, 0.156 with this one). Measured here, alternating binaries:
//!   `ns_per_value` tanh 0.370–0.377 → 0.365–0.369, σ 0.339–0.340 → 0.326–0.331;
//!   `register_latency` (`apply16`) tanh 20.5–20.8 → 19.6–19.9 ns, σ 19.6–19.7 → 18.5–18.9.
//!   tanh's results are normal or are x itself (subnormal x, which the conversion
//!   returns: y is within 2^−166 of x, the grid 2^−149); σ's below 2^−126 (x < −87.3)
//!   round to subnormals, spaced 2^−149 whatever y's bits: a vector with x < −87
//!   in a lane takes a branch that rounds 2^−126 + y there (whose binade has that spacing,
//!   the addition's error 2^−179 inside the interval) and subtracts 2^−126 from the f32
//!   (exact).
//! * The critical path of a vector (what a batch-1 tick waits for twice) is ~19 dependent
//!   operations. In registers, as the single-sequence kernel calls it (`apply16`), a
//!   dependent call takes 23–25 ns (`register_latency`, session 31; 28 before) against
//!   0.62–0.67 × 16 = 10–11 ns of throughput per 16 values in `run`.
//! * NaN propagates through every step (the clamp `vrangeps` returns a NaN operand), and
//!   a NaN lane is left undecided: the scalar fallback returns x quietened, the scalar
//!   paths' NaN. tanh(±0) = ±0 with no special case (y = ±0, its bits far from a
//!   midpoint, x's sign put on it).
//! * What bounds the loop (Zen 4, `llvm-mca -mcpu=znver4` and `ns_per_value`): a 512-bit
//!   FMA, multiply or `vrcp14pd` takes both FMA pipes for a cycle, and each 8 values take
//!   13 of them (12 for σ). So the clamp, 2^n, the Ziv test and the sums are done on the
//!   other pipes (`vrangeps`, integer additions and shifts, adds), and the constants stay
//!   in registers (no call inside the loop); then `run` goes over a chunk in two passes,
//!   each with half the dependent chain. Session 26, alternating binaries, best of 3–4:
//!   tanh 1.13 → 0.84 ns per value, σ 1.07 → 0.81. Session 31, ~27 operations per 8
//!   values instead of ~36 (the Ziv test on the bits, one FMA for e or e^y instead of a
//!   product and two sums each for the numerator and the denominator, σ without a
//!   numerator, tanh's abs and sign per 16 values in f32): tanh 0.84 → 0.67, σ 0.81 → 0.62.
//!
//! Rounding to f32: the hardware conversion (nearest-even, like `as f32`).

use crate::sim::simd_round::first_lanes;
use crate::sim::ziv::{Approximated, Func};
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// `[f(i) for i in 0..M]` as vectors, one operation for all M chains before the next (the
/// chains interleaved in program order: see `run`). A loop, not `array::from_fn`: a closure
/// may be compiled out of line without the caller's target features. f64 vectors, or those
/// of the type of `zero` (`each!(M, zero; i => f(i))`).
macro_rules! each {
    ($m:expr, $zero:expr; $i:ident => $e:expr) => {{
        let mut out = [$zero; $m];
        for $i in 0..$m {
            out[$i] = $e;
        }
        out
    }};
    ($m:expr, $i:ident => $e:expr) => {
        each!($m, _mm512_setzero_pd(); $i => $e)
    };
}

/// The documented value rounded to f32: the scalar fallback (also `activation_avx2`'s).
pub(crate) fn fallback<A: Approximated>(x: f32) -> f32 {
    A::documented(f64::from(x)) as f32
}

/// Whether this CPU runs [`apply`] (and `RNNSIM_PORTABLE` is not set: `cpu`).
pub fn available() -> bool {
    crate::sim::cpu::avx512()
}

/// `A` over `xs` in place; false (nothing done) when the CPU lacks AVX-512/FMA.
pub fn apply<A: Approximated>(xs: &mut [f32]) -> bool {
    if !available() {
        return false;
    }
    // SAFETY: the CPU has every feature `run` is compiled for (checked above).
    unsafe { run::<A>(xs) };
    true
}

/// Vectors of 16 values per step of `run`.
const STEP: usize = 2;

/// Steps of `run` per chunk (its two passes, then the scalar fallback).
const CHUNK: usize = 16;

/// A step's pass-one values (`exponentials`: expm1(−u) for tanh, e^{−x} for σ), kept between
/// `run`'s two passes.
type Pass1 = [__m512d; 2 * STEP];

#[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
unsafe fn run<A: Approximated>(xs: &mut [f32]) {
    let n = xs.len();
    let p = xs.as_mut_ptr();
    let mut i = 0;
    // STEP vectors per step: 2·STEP f64 chains, interleaved operation by operation
    // (`each!`), so that the scheduler sees every chain's next operation at once. Measured
    // on Zen 4 (`ns_per_value`, alternating binaries): the same 4 chains written one after
    // the other ran tanh 1.05 and σ 1.025 ns per value, interleaved 1.00 and 0.98; 6 or 8
    // chains interleaved 1.01–1.14 (the chains' values and the constants no longer fit in
    // the 32 registers: LLVM broadcasts the constants again from memory)
    // The loop runs CHUNK steps with no call in it: an undecided lane (about one in 2^11)
    // keeps its x, and its block's mask is noted; the chunk's undecided lanes are then
    // finished by the scalar fallback. With the fallback's call inside the loop, LLVM
    // broadcast ~13 constants from memory every step instead of keeping them in registers
    // (a call clobbers every vector register). Among multiplies and adds a broadcast takes
    // an issue slot on Zen 4 (measured in session 25; llvm-mca -mcpu=znver4 puts it on the
    // FP1 pipe: 52 cycles per step, 42 without them); measured −10% tanh, −5% σ. (Beside
    // FMAs alone it is free: 12 broadcasts and 24 FMAs run 24 cycles, where the model says 36.)
    while i + 16 * STEP <= n {
        let steps = ((n - i) / (16 * STEP)).min(CHUNK);
        let (mut undecided, mut any) = ([0u16; CHUNK * STEP], 0u16);
        // two passes over the chunk: the exponentials, kept in L1 (4 KiB), then the quotient
        // and the Ziv test. One pass held a vector's whole chain (~35 dependent operations)
        // and the scheduler saw about one step of it at a time, so the loop waited on
        // latency; each pass's chain is half as long, and the window holds more steps of it
        // (as in `activation_f64_staged`). Zen 4, alternating binaries, 3 runs: tanh 0.925
        // → 0.841 ns per value, σ 0.920 → 0.806 (session 26); 8 chains per step (STEP = 4)
        // 1.02–1.08 (registers); chunks of 8 steps 0.85 and 0.81 (uninitialised: each
        // step's values are written before they are read)
        let mut kept = MaybeUninit::<[Pass1; CHUNK]>::uninit();
        let kept = kept.as_mut_ptr().cast::<Pass1>();
        for s in 0..steps {
            kept.add(s).write(exponentials::<A, STEP, { 2 * STEP }>(load::<STEP>(p.add(i + 16 * STEP * s))));
        }
        for s in 0..steps {
            let q = p.add(i + 16 * STEP * s);
            let x = load::<STEP>(q);
            let r = settle::<A, STEP, { 2 * STEP }>(x, kept.add(s).read());
            for (j, &(y, u)) in r.iter().enumerate() {
                _mm512_storeu_ps(q.add(16 * j), y);
                undecided[STEP * s + j] = u;
                any |= u;
            }
        }
        if any != 0 {
            finish_undecided::<A>(p.add(i), &undecided[..STEP * steps]);
        }
        i += 16 * STEP * steps;
    }
    while i < n {
        let m = (n - i).min(16);
        let live = first_lanes(m);
        let x = _mm512_maskz_loadu_ps(live, p.add(i));
        let [(y, u)] = settle::<A, 1, 2>([x], exponentials::<A, 1, 2>([x]));
        _mm512_mask_storeu_ps(p.add(i), live, y);
        if u & live != 0 {
            finish_undecided::<A>(p.add(i), &[u & live]);
        }
        i += m;
    }
}

/// N vectors of 16 values from p.
#[inline(always)]
unsafe fn load<const N: usize>(p: *const f32) -> [__m512; N] {
    let mut x = [_mm512_setzero_ps(); N];
    for (j, v) in x.iter_mut().enumerate() {
        *v = _mm512_loadu_ps(p.add(16 * j));
    }
    x
}

/// Pass one on N vectors of 16 values, as M = 2N halves of 8 in f64: expm1(−u), u =
/// 2·min(|x|, 40), for tanh; e^{−x}, x clamped to [−110, 110], for σ (module doc).
#[inline(always)]
unsafe fn exponentials<A: Approximated, const N: usize, const M: usize>(x: [__m512; N]) -> [__m512d; M] {
    const { assert!(M == 2 * N) };
    // the clamp in f32, one instruction per 16 values (vrangeps, the smaller magnitude of x
    // and c; NaN passes): tanh takes |x| (the sign is applied to the f32 result, `settle`)
    // and doubles it (exact), σ keeps x's sign
    let mut c = [_mm512_setzero_ps(); N];
    for j in 0..N {
        c[j] = match A::FUNC {
            Func::Tanh => {
                let a = _mm512_range_ps::<CLAMP_ABS>(x[j], _mm512_set1_ps(40.0));
                _mm512_add_ps(a, a)
            }
            Func::Sigmoid => _mm512_range_ps::<CLAMP_KEEPING_SIGN>(x[j], _mm512_set1_ps(110.0)),
        };
    }
    let u = each!(M, i => if i % 2 == 0 { _mm512_cvtps_pd(_mm512_castps512_ps256(c[i / 2])) } else { _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(c[i / 2])) });
    exponential::<A, M>(u)
}

/// expm1(−u) (tanh) or e^{−u} (σ) of M vectors of 8 lanes, each one FMA on e^{−u} = S·(1 + q)
/// (`exp_parts`): S·q + (S − 1) and S·q + S (module doc).
#[inline(always)]
unsafe fn exponential<A: Approximated, const M: usize>(u: [__m512d; M]) -> [__m512d; M] {
    let (s, q) = exp_parts::<M>(u);
    match A::FUNC {
        Func::Tanh => {
            let s1 = each!(M, i => _mm512_sub_pd(s[i], _mm512_set1_pd(1.0)));
            each!(M, i => _mm512_fmadd_pd(s[i], q[i], s1[i]))
        }
        Func::Sigmoid => each!(M, i => _mm512_fmadd_pd(s[i], q[i], s[i])),
    }
}

/// The f64 value of pass two from pass one's `v` (M vectors of 8 lanes): tanh −|tanh x| =
/// e/(2 + e), e = expm1(−2|x|); σ 1/(1 + e^{−x}) ([`divide`]).
#[inline(always)]
unsafe fn quotient<A: Approximated, const M: usize>(v: [__m512d; M]) -> [__m512d; M] {
    match A::FUNC {
        Func::Tanh => divide(Some(v), each!(M, i => _mm512_add_pd(v[i], _mm512_set1_pd(2.0)))),
        Func::Sigmoid => divide(None, each!(M, i => _mm512_add_pd(v[i], _mm512_set1_pd(1.0)))),
    }
}

/// Pass two on N vectors of 16 values x and their pass-one values `v`: the results rounded
/// to f32 where the Ziv test decides them, x in the undecided lanes (NaN lanes among them),
/// and the mask of those lanes.
///
/// The test (module doc): y's f64 bits round to the f32 of their top 35 bits unless the 29
/// bits that rounding drops lie within [`ZIV_ULPS`] of 2^28, the midpoint between two f32s
/// (an integer addition and a test per 8 lanes); then y and every value within that many
/// f64 ulps of it, the documented value among them, round to the one f32 the hardware
/// conversion gives. This holds wherever the f32 is normal. Only σ's results below 2^−126
/// (x < −87.3) round to subnormals, whose f32 spacing is 2^−149 whatever the f64 bits: those
/// lanes round 2^−126 + y instead, whose binade has that spacing, and subtract 2^−126 from
/// the f32 (exact), a branch that a vector without such lanes skips.
#[inline(always)]
unsafe fn settle<A: Approximated, const N: usize, const M: usize>(x: [__m512; N], v: [__m512d; M]) -> [(__m512, u16); N] {
    const { assert!(M == 2 * N) };
    let mut y = quotient::<A, M>(v);
    let mut tiny = [0u8; M];
    if let Func::Sigmoid = A::FUNC {
        let any = x.iter().fold(0, |any, &v| any | _mm512_cmp_ps_mask::<_CMP_LT_OQ>(v, _mm512_set1_ps(-87.0)));
        if any != 0 {
            let least = _mm512_set1_pd(f64::from(f32::MIN_POSITIVE));
            for i in 0..M {
                tiny[i] = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(y[i], least);
                y[i] = _mm512_mask_add_pd(y[i], tiny[i], y[i], least);
            }
        }
    }
    let (mut f, mut near) = ([_mm256_setzero_ps(); M], [0u8; M]);
    for i in 0..M {
        f[i] = _mm512_cvtpd_ps(y[i]);
    }
    // the Ziv test of the whole step in vector operations: t is zero in the lanes whose
    // dropped bits lie in the window (`ZIV_WINDOW`), so the unsigned minimum over the step
    // is zero when any lane's are; with x's NaNs, one mask test decides whether any lane is
    // open (rare: the window holds 2^17 of the 2^29 patterns of the dropped bits), and only
    // then are the lanes' masks made
    let t = each!(M, _mm512_setzero_si512(); i => _mm512_and_si512(_mm512_add_epi64(_mm512_castpd_si512(y[i]), _mm512_set1_epi64(ZIV_SHIFT)), _mm512_set1_epi64(ZIV_WINDOW)));
    let least = t[1..].iter().fold(t[0], |m, &v| _mm512_min_epu64(m, v));
    let mut nan = [0u16; N];
    for j in 0..N {
        nan[j] = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x[j], x[j]);
    }
    let open = _mm512_testn_epi64_mask(least, least) != 0 || nan.iter().any(|&m| m != 0);
    if open {
        for i in 0..M {
            near[i] = _mm512_testn_epi64_mask(t[i], t[i]);
        }
    }
    let mut out = [(_mm512_setzero_ps(), 0u16); N];
    for (j, o) in out.iter_mut().enumerate() {
        let mut r = join(f[2 * j], f[2 * j + 1]);
        let halves = |m: &[u8]| u16::from(m[2 * j]) | u16::from(m[2 * j + 1]) << 8;
        r = match A::FUNC {
            // x's sign on |y|: tanh(±0) = ±0
            Func::Tanh => _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<COPY_SIGN>(_mm512_castps_si512(r), _mm512_castps_si512(x[j]), _mm512_set1_epi32(i32::MIN))),
            Func::Sigmoid => {
                let t = halves(&tiny);
                if t != 0 {
                    _mm512_mask_sub_ps(r, t, r, _mm512_set1_ps(f32::MIN_POSITIVE))
                } else {
                    r
                }
            }
        };
        // NaN lanes go to the fallback, which returns x quietened (the scalar paths' NaN)
        *o = if open {
            let u = halves(&near) | nan[j];
            (_mm512_mask_blend_ps(u, r, x[j]), u)
        } else {
            (r, 0)
        };
    }
    out
}

/// `vrangeps` immediate: bits 1:0 = 10 (the smaller absolute value), bits 3:2 = 00 (the
/// sign of the first operand).
const CLAMP_KEEPING_SIGN: i32 = 0b0010;
/// `vrangeps` immediate: the smaller absolute value, bits 3:2 = 10 (sign bit cleared).
const CLAMP_ABS: i32 = 0b1010;
/// `vpternlog` immediate for c ? b : a, bit by bit: with c the sign bit, a's magnitude and b's
/// sign (tanh's sign put on |y|).
const COPY_SIGN: i32 = 0xd8;

/// The half-width of the Ziv interval in f64 ulps of y: y and every f64 within 2^16 ulps of
/// it (at least y(1 ± 2^−37), wider than the approximation's error, 2^−40.4: module doc)
/// round to the same f32 unless the 29 bits the rounding drops lie in [2^28 − 2^16,
/// 2^28 + 2^16), around the midpoint 2^28. On the bits, counted across binades and signs,
/// so integer operations: on Zen 4 they leave the two FMA pipes, this loop's bottleneck.
const ZIV_ULPS: i64 = 1 << 16;
/// Added to y's bits: the dropped bits d become d − (2^28 − 2^16) mod 2^29, below 2^17
/// exactly when d is in the window of [`ZIV_ULPS`].
const ZIV_SHIFT: i64 = ZIV_ULPS - (1 << 28);
/// The bits 17..28: zero (`vptestnmq`) exactly when the shifted dropped bits are below 2^17.
const ZIV_WINDOW: i64 = ((1 << 29) - 1) & !(2 * ZIV_ULPS - 1);

/// `A` on 16 values in registers (the single-sequence kernel, `gated_single`): the decided
/// results, the undecided lanes (rare) from the scalar fallback through memory.
#[inline(always)]
pub(crate) unsafe fn apply16<A: Approximated>(x: __m512) -> __m512 {
    let [(y, u)] = settle::<A, 1, 2>([x], exponentials::<A, 1, 2>([x]));
    if u == 0 {
        return y;
    }
    let mut buf = [0f32; 16];
    _mm512_storeu_ps(buf.as_mut_ptr(), y);
    finish_undecided::<A>(buf.as_mut_ptr(), &[u]);
    _mm512_loadu_ps(buf.as_ptr())
}

/// The lanes of `undecided` (a mask per block of 16 values at p, which still hold their x:
/// [`settle`]) from the scalar fallback. p must point to the blocks' set lanes.
#[cold]
unsafe fn finish_undecided<A: Approximated>(p: *mut f32, undecided: &[u16]) {
    for (b, &mask) in undecided.iter().enumerate().filter(|(_, m)| **m != 0) {
        for j in (0..16).filter(|j| mask & (1 << j) != 0) {
            *p.add(16 * b + j) = fallback::<A>(*p.add(16 * b + j));
        }
    }
}

/// Two halves of 8 into one vector of 16.
#[inline(always)]
unsafe fn join(lo: __m256, hi: __m256) -> __m512 {
    _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo), hi)
}

/// 2^{j/16} for j = 0..7 and 8..15, correctly rounded.
pub(crate) const EXP2_SIXTEENTHS: [[f64; 8]; 2] = [
    [1.0, 1.0442737824274138, 1.0905077326652577, 1.1387886347566916, 1.189207115002721, 1.241857812073484, 1.2968395546510096, 1.3542555469368927],
    [std::f64::consts::SQRT_2, 1.4768261459394993, 1.5422108254079407, 1.6104903319492543, 1.681792830507429, 1.7562521603732995, 1.8340080864093424, 1.9152065613971474],
];

/// The bits of 2^{j/16} ([`EXP2_SIXTEENTHS`]) less j·2^48, j = 0..15 (see `exp_parts`).
const EXP2_SIXTEENTHS_LESS_J: [[i64; 8]; 2] = {
    let mut out = [[0i64; 8]; 2];
    let mut j = 0;
    while j < 16 {
        out[j / 8][j % 8] = EXP2_SIXTEENTHS[j / 8][j % 8].to_bits() as i64 - ((j as i64) << 48);
        j += 1;
    }
    out
};

/// (S, q) with e^{−u} = S·(1 + q), S = 2^{k/16} (see the module doc); |u| ≤ 110, or NaN.
/// M vectors at a time.
#[inline(always)]
unsafe fn exp_parts<const M: usize>(u: [__m512d; M]) -> ([__m512d; M], [__m512d; M]) {
    const MAGIC: f64 = 6755399441055744.0; // 1.5·2^52
    // ln2/16 rounded to double: k·LN2_16 is off by |k|·2^−58 ≤ 2^−46.6 (|k| < 2600), an
    // absolute error of r, so a relative one of e^{−u} (module doc)
    const LN2_16: f64 = std::f64::consts::LN_2 / 16.0;
    // k = round(−16u/ln 2)
    let shifted = each!(M, i => _mm512_fmadd_pd(u[i], _mm512_set1_pd(-16.0 * std::f64::consts::LOG2_E), _mm512_set1_pd(MAGIC)));
    let k = each!(M, i => _mm512_sub_pd(shifted[i], _mm512_set1_pd(MAGIC)));
    let r = each!(M, i => _mm512_fnmsub_pd(k[i], _mm512_set1_pd(LN2_16), u[i])); // −u − k·ln2/16
    // S = T_j · 2^n, k = 16n + j, in integer operations: `shifted`'s low 16 bits are k mod
    // 2^16 (its mantissa is 2^51 + k), so shifted << 48 = (j << 48) + (n << 52) mod 2^64;
    // added to the bits of T_j − (j << 48) (`EXP2_SIXTEENTHS_LESS_J`, looked up by the low 4
    // bits, j), that is T_j's bits with n added to the exponent: T_j·2^n, exactly (|n| ≤
    // 160, a normal double). `vscalefpd` and a multiply did this before; this leaves the FMA pipes.
    let (lo, hi) = (_mm512_loadu_si512(EXP2_SIXTEENTHS_LESS_J[0].as_ptr().cast()), _mm512_loadu_si512(EXP2_SIXTEENTHS_LESS_J[1].as_ptr().cast()));
    let s = each!(M, i => {
        let bits = _mm512_castpd_si512(shifted[i]);
        _mm512_castsi512_pd(_mm512_add_epi64(_mm512_permutex2var_epi64(lo, bits, hi), _mm512_slli_epi64::<48>(bits)))
    });
    // q = r + r²·P(r), P the cubic of EXPM1_P by Estrin's scheme (two FMAs deep)
    let [c0, c1, c2, c3] = EXPM1_P;
    let r2 = each!(M, i => _mm512_mul_pd(r[i], r[i]));
    let p01 = each!(M, i => _mm512_fmadd_pd(r[i], _mm512_set1_pd(c1), _mm512_set1_pd(c0)));
    let p23 = each!(M, i => _mm512_fmadd_pd(r[i], _mm512_set1_pd(c3), _mm512_set1_pd(c2)));
    let p = each!(M, i => _mm512_fmadd_pd(r2[i], p23[i], p01[i]));
    let q = each!(M, i => _mm512_fmadd_pd(r2[i], p[i], r[i]));
    (s, q)
}

/// P(r) = c0 + c1·r + c2·r² + c3·r³ with r + r²·P(r) = expm1(r) to a relative error below
/// 2^−41.1 for |r| ≤ ln2/32 + 2^−40: the minimax polynomial for that relative error (Remez
/// exchange at 40 digits, the coefficients then rounded to double and the error of the rounded
/// ones measured on 20,001 points: `docs/expm1_minimax.py`; the Taylor coefficients ½, ⅙,
/// 1/24, 1/120 would give 2^−37).
pub(crate) const EXPM1_P: [f64; 4] = [0.4999999999038571, 0.16666666662546284, 0.04166748377365221, 0.008333566791442332];

/// n/d (or 1/d when n is None) to about 2^−42: x0 = rcp14(d) and the series 1 + e + e², e
/// = 1 − d·x0 (module doc).
#[inline(always)]
unsafe fn divide<const M: usize>(n: Option<[__m512d; M]>, d: [__m512d; M]) -> [__m512d; M] {
    let x0 = each!(M, i => _mm512_rcp14_pd(d[i]));
    let e = each!(M, i => _mm512_fnmadd_pd(d[i], x0[i], _mm512_set1_pd(1.0)));
    let t = each!(M, i => _mm512_fmadd_pd(e[i], e[i], e[i]));
    let q0 = match n {
        Some(n) => each!(M, i => _mm512_mul_pd(n[i], x0[i])),
        None => x0,
    };
    each!(M, i => _mm512_fmadd_pd(q0[i], t[i], q0[i]))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sim::fast_sigmoid::Sigmoid;
    use crate::sim::fast_tanh::Tanh;

    pub(crate) fn samples(seed: u64, count: usize) -> Vec<f32> {
        let mut s = seed;
        let mut xs = Vec::with_capacity(count + 32);
        for i in 0..count {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let bits = (s >> 32) as u32;
            // a third anywhere, a third |x| < 256, a third |x| < 8
            xs.push(f32::from_bits(match i % 3 {
                0 => bits,
                1 => bits & 0x83ff_ffff,
                _ => bits & 0x80ff_ffff | 0x3000_0000,
            }));
        }
        xs.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, -1e-40, 0.3, -0.35, 0.347, 9.0, 20.0]);
        xs.extend([-103.0, -104.0, -110.0, -120.0, 88.0, 17.0, 40.0, -40.0, f32::MIN_POSITIVE, 1e-30, 6e-8, 2.4e-4]);
        // signalling NaNs (returned quietened, payload and sign kept) and NaNs with payloads
        xs.extend([0x7fa0_0001u32, 0xffa0_0001, 0x7fc0_1234, 0xffc0_0000].map(f32::from_bits));
        xs
    }

    #[test]
    fn equals_the_documented_rounding_bit_for_bit() {
        if !available() {
            return;
        }
        let xs = samples(4242, 600_000);
        check::<Tanh>(&xs, apply::<Tanh>);
        check::<Sigmoid>(&xs, apply::<Sigmoid>);
    }

    /// Every f32 from −87 to −104, where σ's results fall below 2^−126 (from x < −87.3,
    /// `settle`'s branch for subnormal results) and then below 2^−150 (0), against the
    /// documented rounding: 2.2 million inputs, vectors mixing both kinds of lane at −87.3.
    #[test]
    fn sigmoid_where_its_results_are_subnormal() {
        if !available() {
            return;
        }
        let xs: Vec<f32> = ((-87.0f32).to_bits()..=(-104.0f32).to_bits()).map(f32::from_bits).collect();
        let mut ys = xs.clone();
        assert!(apply::<Sigmoid>(&mut ys));
        let (wrong, subnormal) = xs.iter().zip(&ys).fold((0, 0), |(w, s), (&x, &y)| (w + usize::from(y.to_bits() != fallback::<Sigmoid>(x).to_bits()), s + usize::from(y.is_subnormal())));
        assert_eq!(wrong, 0, "inputs whose σ differs from the documented rounding");
        assert!(subnormal > xs.len() / 2, "{subnormal} subnormal results of {}", xs.len());
    }

    /// Inputs whose documented value lies within 2^7 f64 ulps of an f32 midpoint (one in 16
    /// of all f32 searched, `print_hard_to_round`): tanh, σ. Each vector path must send them
    /// to the fallback or round them right.
    pub(crate) fn hard_to_round() -> (Vec<f32>, Vec<f32>) {
        const TANH: [u32; 9] = [0x39b89ba3, 0x4013cd84, 0xba27ba3b, 0xbbc11b0b, 0xbbe46e2b, 0xbda6889b, 0xbdee483b, 0xbe99e4bb, 0xbf325d3b];
        const SIGMOID: [u32; 11] = [0x34000003, 0x3ad35403, 0x3b764e13, 0x3bd7a333, 0x3e688753, 0x3eafbe73, 0xb37ffffb, 0xbbae719b, 0xbc9d035b, 0xbd567bbb, 0xc156defc];
        // each one among neighbours, so it sits in every lane of a vector
        let around = |bits: &[u32]| -> Vec<f32> { bits.iter().flat_map(|&b| (0..17).map(move |d| f32::from_bits(b + d - 8))).collect() };
        (around(&TANH), around(&SIGMOID))
    }

    #[test]
    fn the_hard_to_round_inputs_are_near_midpoints() {
        let (tanh, sigmoid) = hard_to_round();
        assert!(tanh.chunks(17).all(|around| near_f32_midpoint::<Tanh>(around[8], 1 << 7)));
        assert!(sigmoid.chunks(17).all(|around| near_f32_midpoint::<Sigmoid>(around[8], 1 << 7)));
    }

    /// `hard_to_round`'s inputs through a vector path's tanh and σ against the documented
    /// rounding, bit for bit.
    pub(crate) fn check_hard_to_round(apply_tanh: fn(&mut [f32]) -> bool, apply_sigmoid: fn(&mut [f32]) -> bool) {
        let (tanh, sigmoid) = hard_to_round();
        check::<Tanh>(&tanh, apply_tanh);
        check::<Sigmoid>(&sigmoid, apply_sigmoid);
    }

    #[test]
    fn hard_to_round_inputs_equal_the_documented_rounding() {
        if available() {
            check_hard_to_round(apply::<Tanh>, apply::<Sigmoid>);
        }
    }

    /// `apply` (this module's or `activation_avx2`'s) on prefixes of xs against the
    /// documented rounding, bit for bit.
    pub(crate) fn check<A: Approximated>(xs: &[f32], apply: fn(&mut [f32]) -> bool) {
        // odd lengths exercise the masked tail
        for len in [xs.len(), 1, 7, 9, 17, 33] {
            let mut ys = xs[..len].to_vec();
            assert!(apply(&mut ys));
            for (&x, &y) in xs.iter().zip(&ys) {
                let want = fallback::<A>(x);
                // NaNs too: the same payload, quietened, as the scalar paths
                assert!(y.to_bits() == want.to_bits(), "{:?} {x:e} ({:#x}): {y:e} ({:#x}) vs {want:e} ({:#x})", A::FUNC, x.to_bits(), y.to_bits(), want.to_bits());
            }
        }
    }

    #[test]
    fn approximations_are_within_their_error_bound() {
        if !available() {
            return;
        }
        let mut worst = [0f64; 2];
        // −50..50 on a grid, and ±2^−e down to the smallest subnormal
        let tiny = (0..1075).flat_map(|e| [2f64.powi(-e), -(2f64.powi(-e) * 1.37)]);
        for x in (0..400_000).map(|i| (i as f64 - 200_000.0) / 4_000.0).chain(tiny) {
            let xs = [x; 8];
            // SAFETY: available() checked the CPU features.
            let (t, s) = unsafe {
                let v = _mm512_loadu_pd(xs.as_ptr());
                let mut out = [[0f64; 8]; 2];
                _mm512_storeu_pd(out[0].as_mut_ptr(), tanh8_entry(v));
                _mm512_storeu_pd(out[1].as_mut_ptr(), sigmoid8_entry(v));
                (out[0][0], out[1][0])
            };
            for (k, (got, want)) in [(t, Tanh::documented(x)), (s, Sigmoid::documented(x))].into_iter().enumerate() {
                if want.abs() > 1e-300 {
                    worst[k] = worst[k].max(((got - want) / want).abs());
                }
            }
        }
        eprintln!("relative errors: tanh 2^{:.2}, σ 2^{:.2}", worst[0].log2(), worst[1].log2());
        assert!(worst[0] < 2f64.powi(-40) && worst[1] < 2f64.powi(-40), "relative errors {worst:?}");
    }

    /// Every one of the 2^32 f32 inputs, both functions, against the documented rounding
    /// (about a minute on 2 cores: `cargo test --release --lib every_f32 -- --ignored`).
    #[test]
    #[ignore]
    fn every_f32_equals_the_documented_rounding() {
        if !available() {
            return;
        }
        assert_eq!(every_f32_wrong(apply::<Tanh>, apply::<Sigmoid>), 0, "inputs whose result differs from the documented rounding");
    }

    /// Whether the documented f64 value of f(x) lies within `ulps` f64 ulps of an f32
    /// midpoint (the 29 bits its f32 rounding drops within `ulps` of 2^28): the inputs whose
    /// rounding a fast test must leave undecided.
    pub(crate) fn near_f32_midpoint<A: Approximated>(x: f32, ulps: u64) -> bool {
        let low = A::documented(f64::from(x)).to_bits() & ((1 << 29) - 1);
        low.abs_diff(1 << 28) < ulps
    }

    /// Prints the f32 inputs (one in 16 of all) whose documented value lies within 2^7 f64
    /// ulps of an f32 midpoint: the tables of [`hard_to_round`] (`cargo test --release --lib
    /// print_hard_to_round -- --ignored --nocapture`, ~1 min on 2 cores).
    #[test]
    #[ignore]
    fn print_hard_to_round() {
        use rayon::prelude::*;
        fn hard<A: Approximated>() -> Vec<u32> {
            (0..1u32 << 28).into_par_iter().map(|i| i << 4 | (i >> 24 & 15)).filter(|&b| near_f32_midpoint::<A>(f32::from_bits(b), 1 << 7)).collect()
        }
        for (name, bits) in [("tanh", hard::<Tanh>()), ("σ", hard::<Sigmoid>())] {
            eprintln!("{name}: {} inputs: {:#x?}", bits.len(), bits);
        }
    }

    /// How many of the 2^32 f32 inputs of tanh and σ (`apply_tanh`, `apply_sigmoid`) differ
    /// from the documented rounding (rayon over blocks of 2^16).
    pub(crate) fn every_f32_wrong(apply_tanh: fn(&mut [f32]) -> bool, apply_sigmoid: fn(&mut [f32]) -> bool) -> u64 {
        use rayon::prelude::*;
        fn block<A: Approximated>(hi: u32, apply: fn(&mut [f32]) -> bool) -> u64 {
            let xs: Vec<f32> = (0..1u32 << 16).map(|lo| f32::from_bits(hi << 16 | lo)).collect();
            let mut ys = xs.clone();
            assert!(apply(&mut ys));
            let wrong = xs.iter().zip(&ys).filter(|&(&x, &y)| {
                let want = fallback::<A>(x);
                !(y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()))
            });
            wrong.count() as u64
        }
        (0..1u32 << 16).into_par_iter().map(|hi| block::<Tanh>(hi, apply_tanh) + block::<Sigmoid>(hi, apply_sigmoid)).sum()
    }

    /// tanh's f64 value (before the rounding to f32) of 8 f64 inputs, through the functions `run` calls.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    unsafe fn tanh8_entry(v: __m512d) -> __m512d {
        let a = _mm512_range_pd::<CLAMP_ABS>(v, _mm512_set1_pd(40.0));
        let [y] = quotient::<Tanh, 1>(exponential::<Tanh, 1>([_mm512_add_pd(a, a)]));
        // x's sign on |y|
        _mm512_castsi512_pd(_mm512_ternarylogic_epi64::<COPY_SIGN>(_mm512_castpd_si512(y), _mm512_castpd_si512(v), _mm512_set1_epi64(i64::MIN)))
    }

    /// σ's f64 value of 8 f64 inputs, as [`tanh8_entry`].
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    unsafe fn sigmoid8_entry(v: __m512d) -> __m512d {
        quotient::<Sigmoid, 1>(exponential::<Sigmoid, 1>([_mm512_range_pd::<CLAMP_KEEPING_SIGN>(v, _mm512_set1_pd(110.0))]))[0]
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use crate::sim::fast_sigmoid::Sigmoid;
    use crate::sim::fast_tanh::Tanh;

    /// y ← act(3y − 1) on one register of 16 lanes, 100k times: the latency of the
    /// single-sequence kernel's activations (`gated_single`), ns per call.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    unsafe fn chain<A: Approximated>() -> f64 {
        let mut best = f64::INFINITY;
        for _ in 0..20 {
            let mut y = _mm512_set1_ps(0.3);
            let t0 = std::time::Instant::now();
            for _ in 0..100_000 {
                y = apply16::<A>(_mm512_fmadd_ps(y, _mm512_set1_ps(3.0), _mm512_set1_ps(-1.0)));
            }
            best = best.min(t0.elapsed().as_secs_f64() * 1e9 / 100_000.0);
            std::hint::black_box(y);
        }
        best
    }

    #[test]
    #[ignore]
    fn register_latency() {
        if !crate::sim::cpu::avx512() {
            return;
        }
        // SAFETY: the CPU has AVX-512 (checked)
        let (t, s) = unsafe { (chain::<Tanh>(), chain::<Sigmoid>()) };
        eprintln!("apply16 in registers: tanh {t:.1} ns, sigmoid {s:.1} ns per dependent call (with one FMA)");
    }

    #[test]
    #[ignore]
    fn ns_per_value() {
        let xs: Vec<f32> = (0..4096).map(|i| ((i * 7919) % 4096) as f32 / 512.0 - 4.0).collect();
        use crate::sim::activation_avx2::apply as avx2;
        for (name, f) in [("tanh", apply::<Tanh> as fn(&mut [f32]) -> bool), ("sigmoid", apply::<Sigmoid>), ("tanh (AVX2)", avx2::<Tanh>), ("sigmoid (AVX2)", avx2::<Sigmoid>)] {
            let ns = crate::sim::timing::best_ns_per_value(&xs, &|v| {
                f(v);
            });
            eprintln!("{name}: {ns:.3} ns/value");
            // latency: each call on 16 values takes the previous call's results (what a
            // batch-1 LSTM step waits for twice: the gates, then tanh(c))
            let mut v: Vec<f32> = xs[..16].to_vec();
            let mut lat = f64::INFINITY;
            for _ in 0..30 {
                let t0 = std::time::Instant::now();
                for _ in 0..1000 {
                    f(&mut v);
                    v.iter_mut().for_each(|x| *x = 3.0 * *x - 1.0);
                }
                lat = lat.min(t0.elapsed().as_secs_f64() * 1e9 / 1000.0);
            }
            eprintln!("{name}: {lat:.1} ns per dependent call of 16 values");
        }
    }
}
