//! tanh and σ over f32 lanes with AVX2 + FMA (a CPU without AVX-512): 8 values per step,
//! the same results as `activation_avx512` and the portable loops, bit for bit the
//! documented `round_f32(correctly rounded f64 value)`.
//!
//! The approximations run on 4 f64 lanes, each reading a table (on an AMD EPYC 7003, Zen 3,
//! measured in `ns_per_value`: tanh 1.70 → 1.29 ns per value and σ 1.57 → 1.46 against
//! session 20's 4-entry `vpermilpd` table and quintic, whose chains were longer; the loop
//! is bound by latency more than by issue slots, and tanh over a slice runs in passes over
//! chunks of 64 values, [`tanh_staged`]: 1.29 → 1.15 ns):
//! * tanh by the addition formula tanh(k/64 + y) = (t + τ)/(1 + t·τ), t from a table of
//!   tanh(k/64) (four scalar loads, [`gather4`]) and τ = tanh y, |y| ≤ 2^−7, a degree-7 odd
//!   Taylor polynomial ([`tanh4`]);
//! * σ from e^{−x} = 2^{k/64}·(1 + expm1(r)), x clamped to [−110, 110], the 64-entry table
//!   of 2^{j/64} (one `vgatherqpd`), 2^⌊k/64⌋ added to the entry's exponent field and a
//!   Taylor polynomial for |r| ≤ ln2/128 ([`exp_parts`]), then 1/(1 + e^{−x}) ([`sigmoid4`]);
//! * the quotient by `vdivpd` (correctly rounded; an rcp series costs more issue slots).
//!   Relative errors: tanh below 2^−49.4, σ below 2^−46.6 (measured on a grid by the test:
//!   2^−51.0 and 2^−48.9), well inside the Ziv test's 2^−40.
//! * The Ziv test on the f64 result's bits instead of two roundings: for a result y in the
//!   f32 normal range, round_f32(y) is the rounding of every value within 2^−40·|y| of y
//!   unless the 29 bits the rounding drops lie within 2^17 (f64 ulps of y, ≥ 2^−36·|y|) of
//!   their midpoint 2^28 (the f32 midpoints of y's binade, and those of its neighbours lie
//!   2^27 ulps or more from it): one shuffle and four integer operations per 8 values. The
//!   inputs whose result may be f32-subnormal (tanh: |x| < 2^−125; σ: x < −87) or NaN,
//!   and the undecided lanes (about one value in 2^11), take the previous test: when
//!   y(1 ± 2^−36) round to the same f32, that is the rounding of the documented value;
//!   else the scalar fallback (`activation_avx512`'s).

use crate::sim::activation_avx512::fallback;
use crate::sim::fast_tanh::Tanh;
use crate::sim::ziv::{Approximated, Func, DELTA};
use std::arch::x86_64::*;
use std::sync::LazyLock;

/// Whether this CPU runs [`apply`] (and `RNNSIM_ISA` allows it: `cpu`).
pub fn available() -> bool {
    crate::sim::cpu::avx2_fma()
}

/// `A` over `xs` in place; false (nothing done) when the CPU lacks AVX2/FMA.
pub fn apply<A: Approximated>(xs: &mut [f32]) -> bool {
    if !available() {
        return false;
    }
    // SAFETY: the CPU has every feature `run` is compiled for (checked above).
    unsafe { run::<A>(xs) };
    true
}

#[target_feature(enable = "avx2,avx,fma")]
unsafe fn run<A: Approximated>(xs: &mut [f32]) {
    let n = xs.len();
    let p = xs.as_mut_ptr();
    let table = table::<A>();
    let mut i = 0;
    while A::FUNC == Func::Tanh && i + STAGED <= n {
        tanh_staged(p.add(i), table);
        i += STAGED;
    }
    // two vectors per step: four independent f64 chains in flight
    while i + 16 <= n {
        let (x0, x1) = (_mm256_loadu_ps(p.add(i)), _mm256_loadu_ps(p.add(i + 8)));
        let (r0, r1) = (approx8::<A>(x0, table), approx8::<A>(x1, table));
        finish::<A>(p.add(i), x0, r0, 8);
        finish::<A>(p.add(i + 8), x1, r1, 8);
        i += 16;
    }
    while i < n {
        let m = (n - i).min(8);
        let mut buf = [0f32; 8];
        buf[..m].copy_from_slice(&xs[i..i + m]);
        let x = _mm256_loadu_ps(buf.as_ptr());
        finish::<A>(buf.as_mut_ptr(), x, approx8::<A>(x, table), m);
        xs[i..i + m].copy_from_slice(&buf[..m]);
        i += m;
    }
}

/// The table `A`'s approximation reads ([`tanh4`], [`sigmoid4`]), built on first use.
fn table<A: Approximated>() -> *const f64 {
    match A::FUNC {
        Func::Tanh => TANH_SIXTYFOURTHS.as_ptr(),
        Func::Sigmoid => EXP2_SIXTYFOURTHS.as_ptr(),
    }
}

/// The f64 approximations of 8 values (lanes 0–3, 4–7), their f32 roundings, and whether
/// the fast Ziv test (module doc) decided all 8.
struct Approx8 {
    y: (__m256d, __m256d),
    rounded: __m256,
    decided: bool,
}

#[inline(always)]
unsafe fn approx8<A: Approximated>(x: __m256, table: *const f64) -> Approx8 {
    let (lo, hi) = (_mm256_cvtps_pd(_mm256_castps256_ps128(x)), _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x)));
    let (ylo, yhi) = match A::FUNC {
        Func::Tanh => (tanh4(lo, table), tanh4(hi, table)),
        Func::Sigmoid => (sigmoid4(lo, table), sigmoid4(hi, table)),
    };
    rounded8::<A>(x, ylo, yhi)
}

/// The f32 roundings of 8 approximations (of x's lanes 0–3 and 4–7) and the fast Ziv test.
#[inline(always)]
unsafe fn rounded8<A: Approximated>(x: __m256, ylo: __m256d, yhi: __m256d) -> Approx8 {
    let rounded = _mm256_set_m128(_mm256_cvtpd_ps(yhi), _mm256_cvtpd_ps(ylo));
    let near = near_midpoint(ylo, yhi);
    // inputs whose result may be f32-subnormal, and NaN (the unordered compare)
    let odd = match A::FUNC {
        Func::Tanh => _mm256_cmp_ps::<_CMP_NGE_UQ>(_mm256_andnot_ps(_mm256_set1_ps(-0.0), x), _mm256_set1_ps(f32::MIN_POSITIVE * 2.0)),
        Func::Sigmoid => _mm256_cmp_ps::<_CMP_NGE_UQ>(x, _mm256_set1_ps(-87.0)),
    };
    let decided = _mm256_movemask_ps(_mm256_or_ps(near, odd)) == 0;
    Approx8 { y: (ylo, yhi), rounded, decided }
}

/// The fast Ziv test (module doc) of 8 f64 values in the f32 normal range: all-ones in the
/// lanes whose f32 rounding may differ from that of a value within 2^−40 of them (in the
/// lane order of `vshufps`: y_lo 0, 1, y_hi 0, 1, y_lo 2, 3, y_hi 2, 3).
#[inline(always)]
unsafe fn near_midpoint(ylo: __m256d, yhi: __m256d) -> __m256 {
    let low = _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(_mm256_castpd_ps(ylo), _mm256_castpd_ps(yhi)));
    // dropped bits + 2^17 in [2^28, 2^28 + 2^18): within 2^17 of the midpoint
    let v = _mm256_add_epi32(_mm256_and_si256(low, _mm256_set1_epi32((1 << 29) - 1)), _mm256_set1_epi32(1 << 17));
    _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_srli_epi32::<18>(v), _mm256_set1_epi32(1 << 10)))
}

/// The Ziv bounds (round_f32(y(1 − δ)), round_f32(y(1 + δ))) of 8 values, for the blocks the
/// fast test leaves.
#[inline(always)]
unsafe fn ziv_bounds(x: __m256, (ylo, yhi): (__m256d, __m256d)) -> (__m256, __m256) {
    let (below, above) = (_mm256_set1_pd(1.0 - DELTA), _mm256_set1_pd(1.0 + DELTA));
    let down = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_mul_pd(yhi, below)), _mm256_cvtpd_ps(_mm256_mul_pd(ylo, below)));
    let up = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_mul_pd(yhi, above)), _mm256_cvtpd_ps(_mm256_mul_pd(ylo, above)));
    // a NaN lane returns x quietened (x + 0), as the scalar paths do
    let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x);
    let quiet = _mm256_add_ps(x, _mm256_setzero_ps());
    (_mm256_blendv_ps(down, quiet, nan), _mm256_blendv_ps(up, quiet, nan))
}

/// `A` on 8 values in registers (the single-sequence kernel, `gated_single`): the decided
/// results, the undecided lanes (rare) from the scalar fallback through memory.
#[inline(always)]
pub(crate) unsafe fn apply8<A: Approximated>(x: __m256) -> __m256 {
    let r = approx8::<A>(x, table::<A>());
    if r.decided {
        return r.rounded;
    }
    let mut buf = [0f32; 8];
    finish::<A>(buf.as_mut_ptr(), x, r, 8);
    _mm256_loadu_ps(buf.as_ptr())
}

/// Stores the first m results at p: the fast test's when it decided all 8, else those the
/// Ziv bounds decide and the scalar fallback for the rest.
#[inline(always)]
unsafe fn finish<A: Approximated>(p: *mut f32, x: __m256, r: Approx8, m: usize) {
    let mut d = [0f32; 8];
    if r.decided {
        if m == 8 {
            _mm256_storeu_ps(p, r.rounded);
            return;
        }
        _mm256_storeu_ps(d.as_mut_ptr(), r.rounded);
    } else {
        let (down, up) = ziv_bounds(x, r.y);
        _mm256_storeu_ps(d.as_mut_ptr(), down);
        let same = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(down), _mm256_castps_si256(up)))) as u32;
        let mut xs = [0f32; 8];
        _mm256_storeu_ps(xs.as_mut_ptr(), x);
        for j in (0..8).filter(|j| same & (1 << j) == 0) {
            d[j] = fallback::<A>(xs[j]);
        }
    }
    std::ptr::copy_nonoverlapping(d.as_ptr(), p, m);
}

/// 2^{j/64}, j = 0..63, correctly rounded: every eighth entry of `activation_f64`'s table of
/// 2^{j/512} (its high parts). The table of [`exp_parts`] (512 bytes).
static EXP2_SIXTYFOURTHS: LazyLock<[f64; 64]> = LazyLock::new(|| std::array::from_fn(|j| crate::sim::activation_f64::consts().hi[8 * j]));

/// 1.5·2^52: x + MAGIC holds round(x) in its low bits (|x| < 2^51).
const MAGIC: f64 = 6755399441055744.0;

/// (S, q) with e^{−a} = S·(1 + q): k = round(−64a/ln2), S = 2^{k/64} = 2^{j/64}·2^{⌊k/64⌋}
/// (j = k mod 64: one `vgatherqpd` from `table`, [`EXP2_SIXTYFOURTHS`], and the floor added to
/// the entry's exponent field, exactly), r = −a − k·ln2/64 (|r| ≤ ln2/128 + 2^−46.6) and
/// q = expm1(r) = r + r²(1/2 + r/6 + r²/24 + r³/120) (the next term, r⁶/720, is below
/// 2^−54.7, relative to 1 + q);
/// fl(ln2/64) is off by at most 2^−60, so r by |k|·2^−60 ≤ 2^−46.6 (|a| ≤ 110: |k| < 10200),
/// a relative error of e^{−a}. |a| ≤ 110, or NaN (any index, masked into the table).
#[inline(always)]
unsafe fn exp_parts(a: __m256d, table: *const f64) -> (__m256d, __m256d) {
    const LN2_64: f64 = std::f64::consts::LN_2 / 64.0;
    let shifted = _mm256_fmadd_pd(a, _mm256_set1_pd(-64.0 * std::f64::consts::LOG2_E), _mm256_set1_pd(MAGIC));
    let k = _mm256_sub_pd(shifted, _mm256_set1_pd(MAGIC));
    let r = _mm256_fnmsub_pd(k, _mm256_set1_pd(LN2_64), a); // −a − k·ln2/64
    // the integer k − 2^51·3 sits in the bits of `shifted`; its low 32 bits are k (k > −2^31)
    let bits = _mm256_castpd_si256(shifted);
    let t = _mm256_i64gather_pd::<8>(table, _mm256_and_si256(bits, _mm256_set1_epi64x(63)));
    // S = T·2^floor(k/64), exactly, by adding floor(k/64) to T's exponent field: the floor by
    // an arithmetic shift of the low 32 bits, whose low 12 bits the shift by 52 moves there
    // (two's complement: a negative value's carry out of bit 63 is dropped, so the sum is
    // T's bits with the exponent lowered; T ∈ [1, 2) and |floor(k/64)| ≤ 159, from |a| ≤ 110,
    // keep it normal)
    let m = _mm256_slli_epi64::<52>(_mm256_srai_epi32::<6>(bits));
    let s = _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(t), m));
    // q = r + r²·P(r), P by Estrin's scheme
    let r2 = _mm256_mul_pd(r, r);
    let p01 = _mm256_fmadd_pd(r, _mm256_set1_pd(1.0 / 6.0), _mm256_set1_pd(0.5));
    let p23 = _mm256_fmadd_pd(r, _mm256_set1_pd(1.0 / 120.0), _mm256_set1_pd(1.0 / 24.0));
    let q = _mm256_fmadd_pd(r2, _mm256_fmadd_pd(r2, p23, p01), r);
    (s, q)
}

/// table[index] on 4 lanes by four scalar loads (two `vmovsd` + `vmovhpd` pairs) instead of
/// a `vgatherqpd`: for [`tanh4`] that measured 1.38 → 1.29 ns per value and 32 → 30 ns per
/// dependent call on Zen 3 (alternating processes, `ns_per_value`); for σ ([`exp_parts`])
/// the same throughput and 33 → 34 ns per dependent call, so σ keeps the gather. Every
/// index must lie in the table (the caller masks them).
#[inline(always)]
unsafe fn gather4(table: *const f64, index: __m256i) -> __m256d {
    let lo = _mm256_castsi256_si128(index);
    let hi = _mm256_extracti128_si256::<1>(index);
    let (i0, i1) = (_mm_cvtsi128_si64(lo) as usize, _mm_extract_epi64::<1>(lo) as usize);
    let (i2, i3) = (_mm_cvtsi128_si64(hi) as usize, _mm_extract_epi64::<1>(hi) as usize);
    load4(table, [i0, i1, i2, i3])
}

/// table[i] for four indices (each in the table): two `vmovsd` + `vmovhpd` pairs.
#[inline(always)]
unsafe fn load4(table: *const f64, [i0, i1, i2, i3]: [usize; 4]) -> __m256d {
    let a = _mm_loadh_pd(_mm_load_sd(table.add(i0)), table.add(i1));
    let b = _mm_loadh_pd(_mm_load_sd(table.add(i2)), table.add(i3));
    _mm256_set_m128d(b, a)
}

/// Entries of [`TANH_SIXTYFOURTHS`]: a power of two, so that masking any index (a NaN's
/// bits) keeps it in the table.
const TANH_ENTRIES: usize = 2048;

/// tanh(k/64) for k = 0..TANH_ENTRIES − 1, the documented (correctly rounded) values: the
/// table of [`tanh4`]'s addition formula (16 KiB; k ≤ 1152 is used).
static TANH_SIXTYFOURTHS: LazyLock<Box<[f64; TANH_ENTRIES]>> = LazyLock::new(|| Box::new(std::array::from_fn(|k| crate::sim::activation_f64::tanh(k as f64 / 64.0))));

/// tanh on 4 lanes by the addition formula, relative error < 2^−49: with a = min(|x|, 18),
/// k = round(64a) and y = a − k/64 (exact: |y| ≤ 2^−7, a and k/64 on a common grid),
///
///   tanh a = (t + τ) / (1 + t·τ),   t = tanh(k/64) (the table, to 2^−53),
///   τ = tanh y = y − y³/3 + 2y⁵/15 − 17y⁷/315 (the next term is below 2^−61.5·|y|),
///
/// and the sign of x restored. Errors, relative: t and τ are within 2^−53 (τ's last FMA;
/// the polynomial's other roundings are scaled by y²/3 ≤ 2^−15.6), and the sum magnifies
/// them at most (t + |τ|)/(t − |τ|) ≤ 3.0001 times (t ≥ tanh(1/64) and |τ| ≤ tanh(1/128)
/// when k ≥ 1; t = 0 when k = 0); the sum, the denominator 1 + t·τ ∈ [0.99, 1.01] and the
/// quotient add a rounding each: below 6·2^−53 ≈ 2^−50.4 in all, and at |x| ≥ 18, where
/// tanh is 1 to within 2^−50.9, the clamp's on top of t's and the roundings' (k = 1152:
/// t·(1 ± 2^−53), τ = 0): below 2^−49.4 everywhere (measured on a grid: [`tests`]). One
/// table read replaces session 20's e^{−2a} reduction, 4-entry table and quintic (measured
/// on an AMD EPYC 7003: 1.31 → 1.08 ns per value for the approximation alone, with
/// `vgatherqpd`; [`gather4`] since).
/// NaN: the index is masked into the table, the result NaN (`odd` lanes).
#[inline(always)]
unsafe fn tanh4(x: __m256d, table: *const f64) -> __m256d {
    let (y, index) = tanh_reduce(x);
    let (num, den) = tanh_terms(x, y, gather4(table, index));
    _mm256_div_pd(num, den)
}

/// [`tanh4`]'s reduction: (y, the table index k).
#[inline(always)]
unsafe fn tanh_reduce(x: __m256d) -> (__m256d, __m256i) {
    // |x| clamped at 18; NaN passes (vminpd returns its second operand)
    let a = _mm256_min_pd(_mm256_set1_pd(18.0), _mm256_andnot_pd(_mm256_set1_pd(-0.0), x));
    let shifted = _mm256_fmadd_pd(a, _mm256_set1_pd(64.0), _mm256_set1_pd(MAGIC));
    let k = _mm256_sub_pd(shifted, _mm256_set1_pd(MAGIC));
    let y = _mm256_fnmadd_pd(k, _mm256_set1_pd(1.0 / 64.0), a);
    // the integer k sits in the low bits of `shifted`
    (y, _mm256_and_si256(_mm256_castpd_si256(shifted), _mm256_set1_epi64x(TANH_ENTRIES as i64 - 1)))
}

/// [`tanh4`]'s numerator ±(t + τ) (the sign of x) and denominator 1 + t·τ, t = tanh(k/64).
#[inline(always)]
unsafe fn tanh_terms(x: __m256d, y: __m256d, t: __m256d) -> (__m256d, __m256d) {
    let z = _mm256_mul_pd(y, y);
    let q = _mm256_fmadd_pd(z, _mm256_fmadd_pd(z, _mm256_set1_pd(-17.0 / 315.0), _mm256_set1_pd(2.0 / 15.0)), _mm256_set1_pd(-1.0 / 3.0));
    let tau = _mm256_fmadd_pd(_mm256_mul_pd(y, z), q, y);
    let num = _mm256_xor_pd(_mm256_add_pd(t, tau), _mm256_and_pd(x, _mm256_set1_pd(-0.0)));
    (num, _mm256_fmadd_pd(t, tau, _mm256_set1_pd(1.0)))
}

/// σ on 4 lanes, relative error < 2^−46: σ(x) = 1/(1 + e^{−x}) for either sign of x, e^{−x}
/// from [`exp_parts`] on x clamped to [−110, 110] (max, then min: a NaN x passes both), no
/// cancellation (1 + e^{−x} ≥ 1 carries e^{−x}'s relative error at most). The denominator
/// is s·q + (s + 1), not e + 1: one dependent step fewer (e + 1 measured 8% slower). Session
/// 31: one formula for both signs instead of 1/(1 + e) or e/(1 + e) with e = e^{−|x|} (no
/// second FMA, comparison or blend): 1.205 → 1.105 ns per value on Zen 4 (`ns_per_value`,
/// alternating binaries), 27.6 → 28.1 ns per dependent call.
#[inline(always)]
unsafe fn sigmoid4(x: __m256d, table: *const f64) -> __m256d {
    let a = _mm256_min_pd(_mm256_set1_pd(110.0), _mm256_max_pd(_mm256_set1_pd(-110.0), x));
    let (s, q) = exp_parts(a, table);
    let d = _mm256_fmadd_pd(s, q, _mm256_add_pd(s, _mm256_set1_pd(1.0)));
    _mm256_div_pd(_mm256_set1_pd(1.0), d)
}

/// Values per staged chunk of tanh in [`run`]: 16 vectors of 4 f64 lanes.
const STAGED: usize = 64;

/// tanh over the STAGED values at p in three passes over the chunk's 16 f64 vectors: the
/// reductions (table indices stored), the table reads and the polynomials (numerators and
/// denominators stored), the quotients and the roundings. The operations of [`tanh4`], so
/// the same bits; within a pass the vectors are independent, so the chain the out-of-order
/// window must cover is a third of one whole evaluation's (the loop is bound by latency):
/// `ns_per_value` 1.29 → 1.15 ns per value on Zen 3. σ's chain is shorter before its table
/// read, and staged in two or three passes it measured no faster (1.45–1.59 against
/// 1.45–1.56 ns), so σ keeps the two-vector loop.
#[inline(always)]
unsafe fn tanh_staged(p: *mut f32, table: *const f64) {
    const V: usize = STAGED / 4;
    let zero = _mm256_setzero_pd();
    let (mut num, mut den, mut index) = ([zero; V], [zero; V], [[0i64; 4]; V]);
    for h in 0..V {
        let (y, i) = tanh_reduce(quarter(p, h));
        num[h] = y;
        _mm256_storeu_si256(index[h].as_mut_ptr() as *mut __m256i, i);
    }
    for h in 0..V {
        let t = load4(table, index[h].map(|i| i as usize));
        (num[h], den[h]) = tanh_terms(quarter(p, h), num[h], t);
    }
    for g in 0..V / 2 {
        let (ylo, yhi) = (_mm256_div_pd(num[2 * g], den[2 * g]), _mm256_div_pd(num[2 * g + 1], den[2 * g + 1]));
        let x = _mm256_loadu_ps(p.add(8 * g));
        finish::<Tanh>(p.add(8 * g), x, rounded8::<Tanh>(x, ylo, yhi), 8);
    }
}

/// The h-th 4 f32 values at p as f64 lanes.
#[inline(always)]
unsafe fn quarter(p: *const f32, h: usize) -> __m256d {
    _mm256_cvtps_pd(_mm_loadu_ps(p.add(4 * h)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::activation_avx512::tests::{check, check_hard_to_round, every_f32_wrong, samples};
    use crate::machine::random::SplitMix64;
    use crate::sim::fast_sigmoid::Sigmoid;
    use crate::sim::fast_tanh::Tanh;

    #[test]
    fn equals_the_documented_rounding_bit_for_bit() {
        if !available() {
            return;
        }
        let xs = samples(777, 600_000);
        check::<Tanh>(&xs, apply::<Tanh>);
        check::<Sigmoid>(&xs, apply::<Sigmoid>);
    }

    #[test]
    fn hard_to_round_inputs_equal_the_documented_rounding() {
        if available() {
            check_hard_to_round(apply::<Tanh>, apply::<Sigmoid>);
        }
    }

    /// The fast test against its definition: on values near f32 midpoints of every binade
    /// (and anywhere), each lane it decides rounds like every value within 2^−40 of it; and
    /// it decides all but about 2^−11 of values with uniform low bits.
    #[test]
    fn the_fast_test_decides_only_what_the_error_bound_allows() {
        if !available() {
            return;
        }
        let mut rng = SplitMix64(0x21f);
        let (mut decided, mut uniform, mut uniform_decided) = (0, 0, 0);
        for round in 0..40_000 {
            let ys: [f64; 8] = std::array::from_fn(|_| {
                let r = rng.next_u64();
                let e = -126 + (r % 127) as i32;
                let f = f64::from(f32::from_bits(((e + 127) as u32) << 23 | (r >> 8) as u32 & 0x7f_ffff));
                let y = if round % 4 == 3 {
                    f64::from_bits(f.to_bits() ^ (r >> 40) & 0x1fff_ffff) // uniform low bits
                } else {
                    // the midpoint above f, then an offset of up to 2^19 f64 ulps
                    let mid = f64::from_bits(f.to_bits() + (1 << 28));
                    let off = (r >> 44) as i64 % (1 << 19) * if r & 1 == 0 { 1 } else { -1 };
                    f64::from_bits((mid.to_bits() as i64 + off) as u64)
                };
                if r & 2 == 0 { y } else { -y }
            });
            // SAFETY: available() checked the CPU features.
            let mask = unsafe { _mm256_movemask_ps(near_midpoint(_mm256_loadu_pd(ys.as_ptr()), _mm256_loadu_pd(ys[4..].as_ptr()))) };
            for (lane, y) in [0, 1, 4, 5, 2, 3, 6, 7].iter().map(|&i| ys[i]).enumerate() {
                let fast = mask & (1 << lane) == 0;
                let bound = 2f64.powi(-40) * y.abs();
                let safe = (y - bound) as f32 == y as f32 && (y + bound) as f32 == y as f32;
                assert!(!fast || safe, "{y:e} ({:#x}) decided, but a value within 2^−40 rounds elsewhere", y.to_bits());
                decided += usize::from(fast);
                if round % 4 == 3 {
                    uniform += 1;
                    uniform_decided += usize::from(fast);
                }
            }
        }
        assert!(decided < 40_000 * 8 * 9 / 10, "near midpoints most lanes must stay undecided ({decided})");
        assert!(uniform - uniform_decided < uniform / 500, "{} of {uniform} uniform values undecided", uniform - uniform_decided);
    }

    #[test]
    fn approximations_are_within_their_error_bound() {
        if !available() {
            return;
        }
        let mut worst = [0f64; 2];
        let tiny = (0..1075).flat_map(|e| [2f64.powi(-e), -(2f64.powi(-e) * 1.37)]);
        for x in (0..400_000).map(|i| (i as f64 - 200_000.0) / 4_000.0).chain(tiny) {
            // SAFETY: available() checked the CPU features.
            let (t, s) = unsafe { both(x) };
            for (k, (got, want)) in [(t, Tanh::documented(x)), (s, Sigmoid::documented(x))].into_iter().enumerate() {
                if want.abs() > 1e-300 {
                    worst[k] = worst[k].max(((got - want) / want).abs());
                }
            }
        }
        eprintln!("relative errors: tanh 2^{:.2}, σ 2^{:.2}", worst[0].log2(), worst[1].log2());
        assert!(worst[0] < 2f64.powi(-45) && worst[1] < 2f64.powi(-45), "relative errors {worst:?}");
    }

    #[target_feature(enable = "avx2,avx,fma")]
    unsafe fn both(x: f64) -> (f64, f64) {
        let v = _mm256_set1_pd(x);
        let mut out = [[0f64; 4]; 2];
        _mm256_storeu_pd(out[0].as_mut_ptr(), tanh4(v, table::<Tanh>()));
        _mm256_storeu_pd(out[1].as_mut_ptr(), sigmoid4(v, table::<Sigmoid>()));
        (out[0][0], out[1][0])
    }

    /// Every f32 input, both functions (`cargo test --release --lib every_f32 -- --ignored`).
    #[test]
    #[ignore]
    fn every_f32_equals_the_documented_rounding_avx2() {
        if !available() {
            return;
        }
        assert_eq!(every_f32_wrong(apply::<Tanh>, apply::<Sigmoid>), 0, "inputs whose result differs from the documented rounding");
    }
}
