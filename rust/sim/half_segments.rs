//! tanh and σ of the half formats (f16, bf16) by polynomial segments and a rounding test,
//! checked against `half_tables` on every input: the AVX-512 route of `half_tables::apply`
//! (x86-64 only).
//!
//! Why: on Zen 5 a table gather reads one element per cycle (`vgatherdps`, 16 cycles per
//! vector; session 44), which made the half formats' activations 14–29% slower than f32's
//! correctly rounded evaluation (session 45). A lane of a half format is one of 2^16 values,
//! so any evaluation that gives the table's entry for every one of them is exact; this one
//! is about 1.7× faster than the gather in a C loop of bf16 σ (0.21 against 0.36 ns per
//! value, session 47). Without AVX-512 (the AVX2 tier) the gathers stay.
//!
//! The evaluation, on 16 f32 lanes holding values x of the format:
//! - **Segments.** 32 segments of width 1/2 centred on c_s = (s − 16)/2, s = 0..31, cover
//!   [−8.25, 7.75). y = RN(2x + 2^23 + 48) is 2^23 + 32 + s with s = RN(2x) + 16 (the
//!   integer nearest to 2x, ties to even: a tie sits on the boundary of two segments, where
//!   either polynomial holds), so s is y's low 5 bits, the index of a two-register permute
//!   (`vpermi2ps`) into each coefficient's 32 entries, and t = x − c_s = x − (y − 2^23 − 48)/2
//!   is exact (one FMA).
//! - **Polynomial.** p(t) = Σ_{k≤5} a_{s,k} t^k in f32 FMAs by Estrin's scheme,
//!   (a_0 + a_1 t) + t²((a_2 + a_3 t) + t²(a_4 + a_5 t)) (session 48; Horner's before): a_s interpolates
//!   the target g at the 6 Chebyshev nodes of [−1/4, 1/4], where g = σ, or g(x) = tanh(x)/x
//!   for tanh (even, 1 at 0), whose product x·p keeps the error relative near 0; D is the
//!   correctly rounded f64 tanh or σ (`activation_f64`), the table's own source.
//! - **Rounding test (Ziv).** E_s bounds |p(x) − g(x)| on segment s: the largest error over
//!   every value of the format in it, measured at first use with the same f32 operations
//!   (`Segments::scalar`), widened by an f32 ulp of |p| (session 47 also doubled it; the
//!   check below, not the margin, is what makes a decided value right). σ's result lies between
//!   p − E_s and p + E_s, tanh's between x·(p − E_s) and x·(p + E_s); when both ends round to
//!   the same value of the format, that value is the documented result round_F(D(x))
//!   (rounding is monotone). Both ends round on their f32 bits, half away from zero: bf16
//!   adds 2^15 and clears the low 16 bits, f16 adds 2^12 and clears 13, which is f16's grid
//!   from 2^−14 up (below, subnormals: tanh's lanes with 0 < |x| < 2^−14, whose results lie
//!   there, are not decided, f16's 2,046 subnormal values; σ's results in the segments are
//!   above 2.6·10^−4). A tie would need D(x)
//!   on a midpoint of the format, and the check below shows none reaches a result.
//!   (`vcvtps2ph` for f16's ends measured slower: three conversions per vector.)
//! - **The rest.** Lanes outside the segments (σ's lower tail, saturation, ±∞, NaN) and lanes
//!   failing the test are not decided: the caller reads them from the table, one by one when
//!   a vector has a few, else by a gather of the whole vector (`half_tables::gather_avx512`).
//!   The test leaves none or a handful of each format's values in [−8.25, 7.75): bf16 tanh 0
//!   and σ 4 of 33,277, f16 tanh 30 and σ 34 of its 34,787 normal values and zeros (session 48; session 47's
//!   Horner scheme and wider bound left 44 and 37).
//!
//! **The check.** At first use, [`segments`] runs [`eval`] on all 2^16 values of the format
//! and compares every lane it decides with `half_tables`' entry; a single difference and the
//! segments are not used (the gathers then serve every vector). So the route is exact by
//! exhaustion, on the CPU that runs it. (It caught the first version's offset 2^23 + 16, which
//! sent x < −8 to segment 31 with a bound that then swallowed the segment.)
//! `every_value_is_decided_as_the_table_says` checks that the segments pass and decide almost
//! every value in range, `the_check_refuses_a_wrong_polynomial` that the check can fail.

use crate::num::round::BinaryFormat;
use crate::sim::half_tables::value;
use crate::sim::ziv::Func;
use std::sync::OnceLock;

/// Segments (two registers of 16 f32 coefficients).
const SEGMENTS: usize = 32;
/// Polynomial degree on each segment.
const DEGREE: usize = 5; // (Estrin's scheme below is written for 5)
/// 2^23 + 48: RN(2x + MAGIC) = 2^23 + RN(2x) + 48 for 2x ∈ [−16.5, 15.5), in [2^23, 2^24)
/// where the f32 grid is the integers, so its low 5 bits are s = RN(2x) + 16. (2^23 + 16
/// would put 2x + MAGIC below 2^23 for x < −8, on a grid of halves: a wrong segment.)
const MAGIC: f32 = 8_388_656.0;
/// The bits of 2^−14, f16's smallest normal value, as an f32.
const F16_MIN_NORMAL: u32 = 0x3880_0000;
/// E_s = MARGIN · (the largest error measured) + an ulp of |p|. Session 47's 2 left f16's
/// tanh / σ 46 / 39 values to the table, 1 leaves 30 / 34 (the check passes either way).
const MARGIN: f64 = 1.0;
/// The segments' domain [LOW, HIGH).
const LOW: f32 = -8.25;
const HIGH: f32 = 7.75;

/// One (function, format)'s segments: coefficients and error bounds.
pub(crate) struct Segments {
    /// coef[k][s]: the coefficient of t^k on segment s.
    coef: [[f32; SEGMENTS]; DEGREE + 1],
    /// E_s, a bound on |p(x) − g(x)| over the format's values of segment s (g: `target`).
    err: [f32; SEGMENTS],
    /// Whether the function is tanh (p approximates tanh(x)/x, the result is x·p) or σ.
    tanh: bool,
    /// Whether the format is bf16 (else f16).
    bf: bool,
    /// Values in [LOW, HIGH) that the check left to the table (the test failed), of all the
    /// format's values there: the route's reach, reported by the tests.
    pub(crate) left: (usize, usize),
}

/// The checked segments of `func` in `fmt` (f16 or bf16), or None when the CPU has no
/// AVX-512 with F16C or the check against the table found a difference.
pub(crate) fn segments(func: Func, fmt: BinaryFormat) -> Option<&'static Segments> {
    static ALL: [OnceLock<Option<Segments>>; 4] = [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let bf = fmt == BinaryFormat::BF16;
    ALL[usize::from(func == Func::Sigmoid) * 2 + usize::from(bf)].get_or_init(|| build(func, bf)).as_ref()
}

/// The documented function in f64 (correctly rounded).
fn d(func: Func, x: f64) -> f64 {
    match func {
        Func::Tanh => crate::sim::activation_f64::tanh(x),
        Func::Sigmoid => crate::sim::activation_f64::sigmoid(x),
    }
}

/// What the polynomial approximates: σ(x), or tanh(x)/x (an even function, 1 at 0), whose
/// product with x keeps tanh's relative error near 0.
fn target(func: Func, x: f64) -> f64 {
    match func {
        Func::Tanh if x == 0.0 => 1.0,
        Func::Tanh => d(func, x) / x,
        Func::Sigmoid => d(func, x),
    }
}

/// Fits the segments, measures their bounds and runs the check (x86-64 with AVX-512 and F16C).
fn build(func: Func, bf: bool) -> Option<Segments> {
    if crate::sim::cpu::avx512_f16c() {
        let fmt = if bf { BinaryFormat::BF16 } else { BinaryFormat::F16 };
        let table = crate::sim::half_tables::table(func, fmt);
        let tanh = func == Func::Tanh;
        let mut s = Segments { coef: fit(func), err: [0.0; SEGMENTS], tanh, bf, left: (0, 0) };
        // E_s: the largest |p(x) − target(x)| over the segment's values (tanh: D(x)/x, x ≠ 0),
        // times MARGIN, plus an ulp of |p|
        let mut worst = [(0.0f64, 0.0f32); SEGMENTS];
        for bits in 0..=u16::MAX {
            let x = value(bits, bf);
            if !(LOW..HIGH).contains(&x) || x == 0.0 {
                continue;
            }
            let (seg, p) = s.scalar(x);
            let w = &mut worst[seg];
            w.0 = w.0.max((f64::from(p) - target(func, f64::from(x))).abs());
            w.1 = w.1.max(p.abs());
        }
        for (e, &(err, p)) in s.err.iter_mut().zip(&worst) {
            let ulp = f32::from_bits(p.to_bits() & 0x7f80_0000) * f32::EPSILON;
            *e = (MARGIN * err) as f32 + ulp;
        }
        // SAFETY: the CPU has AVX-512F, FMA and F16C (checked above).
        return unsafe { check(s, table) };
    }
    None
}

/// The coefficients: on each segment, the polynomial of degree DEGREE in t = x − c_s through
/// D at the Chebyshev nodes c_s + cos((2j + 1)π / 12)/4, j = 0..5 (solved in f64, rounded to f32).
fn fit(func: Func) -> [[f32; SEGMENTS]; DEGREE + 1] {
    const N: usize = DEGREE + 1;
    let mut coef = [[0.0f32; SEGMENTS]; N];
    for s in 0..SEGMENTS {
        let c = (s as f64 - 16.0) / 2.0;
        // the Vandermonde system [t_j^k | D(c + t_j)], by Gaussian elimination with pivoting
        let mut m = [[0.0f64; N + 1]; N];
        for (j, row) in m.iter_mut().enumerate() {
            let t = 0.25 * ((2 * j + 1) as f64 * std::f64::consts::PI / (2 * N) as f64).cos();
            for k in 0..N {
                row[k] = t.powi(k as i32);
            }
            row[N] = target(func, c + t);
        }
        for col in 0..N {
            let pivot = (col..N).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs())).unwrap_or(col);
            m.swap(col, pivot);
            for r in col + 1..N {
                let f = m[r][col] / m[col][col];
                for k in col..=N {
                    m[r][k] -= f * m[col][k];
                }
            }
        }
        for k in (0..N).rev() {
            let rest: f64 = (k + 1..N).map(|j| m[k][j] * f64::from(coef[j][s])).sum();
            coef[k][s] = ((m[k][N] - rest) / m[k][k]) as f32;
        }
    }
    coef
}

impl Segments {
    /// The segment and p(x) of a value in [LOW, HIGH), with the vector route's f32 operations.
    fn scalar(&self, x: f32) -> (usize, f32) {
        let y = x.mul_add(2.0, MAGIC);
        let s = (y.to_bits() & 31) as usize;
        let t = (y - MAGIC).mul_add(-0.5, x);
        let a = |k: usize| self.coef[k][s];
        let t2 = t * t;
        let (q0, q1, q2) = (a(1).mul_add(t, a(0)), a(3).mul_add(t, a(2)), a(5).mul_add(t, a(4)));
        (s, q2.mul_add(t2, q1).mul_add(t2, q0))
    }
}

/// The registers of one `Segments` for a loop of [`eval`]s.
#[derive(Clone, Copy)]
pub(crate) struct Regs {
    coef: [[std::arch::x86_64::__m512; 2]; DEGREE + 1],
    err: [std::arch::x86_64::__m512; 2],
    tanh: bool,
    bf: bool,
}

impl Segments {
    /// The coefficient and bound vectors, loaded once per call of the loop.
    ///
    /// # Safety
    /// The caller is compiled with AVX-512F.
    #[inline(always)]
    pub(crate) unsafe fn regs(&self) -> Regs {
        use std::arch::x86_64::*;
        let two = |a: &[f32; SEGMENTS]| [_mm512_loadu_ps(a.as_ptr()), _mm512_loadu_ps(a.as_ptr().add(16))];
        Regs {
            coef: std::array::from_fn(|k| two(&self.coef[k])),
            err: two(&self.err),
            tanh: self.tanh,
            bf: self.bf,
        }
    }
}

/// The results of 16 lanes of the format's values x, and the mask of lanes this route
/// decided (the others hold garbage: the caller reads them from the table).
///
/// # Safety
/// The caller is compiled with AVX-512F, FMA and F16C.
#[inline(always)]
pub(crate) unsafe fn eval(r: &Regs, x: std::arch::x86_64::__m512) -> (std::arch::x86_64::__m512, std::arch::x86_64::__mmask16) {
    use std::arch::x86_64::*;
    let mut inside = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_set1_ps(LOW)) & _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(HIGH));
    if r.tanh && !r.bf {
        // f16's grid is that of its precision only from 2^−14 up (below: subnormals), and
        // |tanh(x)| < 2^−14 needs |x| < 2^−14: such lanes but ±0 (tanh(±0) = x·(p ± E) = ±0,
        // exact) go to the table. (σ's results in the segments are above 2.6·10^−4.) Tested
        // on x, off the evaluation's chain: 0 < |x| < 2^−14 when |x|'s bits − 1, as unsigned
        // integers, are below 2^−14's − 1
        let magnitude = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fff_ffff));
        let less_one = _mm512_sub_epi32(magnitude, _mm512_set1_epi32(1));
        inside &= _mm512_cmpge_epu32_mask(less_one, _mm512_set1_epi32(F16_MIN_NORMAL as i32 - 1));
    }
    let y = _mm512_fmadd_ps(x, _mm512_set1_ps(2.0), _mm512_set1_ps(MAGIC));
    let s = _mm512_castps_si512(y);
    let t = _mm512_fmadd_ps(_mm512_sub_ps(y, _mm512_set1_ps(MAGIC)), _mm512_set1_ps(-0.5), x);
    let at = |c: &[__m512; 2]| _mm512_permutex2var_ps(c[0], s, c[1]);
    // Estrin's scheme: 3 FMAs in a row where Horner's takes 5 (a shorter dependent chain;
    // 0.99–1.06 end to end in session 48's alternating runs)
    let t2 = _mm512_mul_ps(t, t);
    let q = |k: usize| _mm512_fmadd_ps(at(&r.coef[k + 1]), t, at(&r.coef[k]));
    let (q0, q1, q2) = (q(0), q(2), q(4));
    let p = _mm512_fmadd_ps(_mm512_fmadd_ps(q2, t2, q1), t2, q0);
    let e = at(&r.err);
    let (lo, hi) = if r.tanh {
        (_mm512_mul_ps(x, _mm512_sub_ps(p, e)), _mm512_mul_ps(x, _mm512_add_ps(p, e)))
    } else {
        (_mm512_sub_ps(p, e), _mm512_add_ps(p, e))
    };
    // round both ends to the format on the bits, half away from zero: add half an ulp of the
    // format (bf16 2^15, f16 in its normal range 2^12) and clear the bits below its ulp
    let (half, top) = if r.bf { (0x8000, 0xffff_0000u32) } else { (0x1000, 0xffff_e000) };
    let lo = _mm512_add_epi32(_mm512_castps_si512(lo), _mm512_set1_epi32(half));
    let hi = _mm512_add_epi32(_mm512_castps_si512(hi), _mm512_set1_epi32(half));
    let top = _mm512_set1_epi32(top as i32);
    let same = _mm512_testn_epi32_mask(_mm512_xor_si512(lo, hi), top);
    let result = _mm512_castsi512_ps(_mm512_and_si512(hi, top));
    (result, inside & same)
}

/// The check: [`eval`] on every value of the format, each decided lane against the table.
///
/// # Safety
/// The CPU has AVX-512F, FMA and F16C.
#[target_feature(enable = "avx512f,avx512vl,avx2,avx,fma,f16c")]
unsafe fn check(mut s: Segments, table: &[f32]) -> Option<Segments> {
    use std::arch::x86_64::*;
    let r = s.regs();
    let all: Vec<f32> = (0..=u16::MAX).map(|b| value(b, s.bf)).collect();
    let (mut left, mut inside) = (0, 0);
    for (xs, want) in all.chunks_exact(16).zip(table.chunks_exact(16)) {
        let (y, decided) = eval(&r, _mm512_loadu_ps(xs.as_ptr()));
        let mut ys = [0.0f32; 16];
        _mm512_storeu_ps(ys.as_mut_ptr(), y);
        for j in 0..16 {
            let decided = decided >> j & 1 == 1;
            if decided && ys[j].to_bits() != want[j].to_bits() {
                return None;
            }
            // in range, and not an f16 subnormal (tanh's result is one: the table's)
            if (LOW..HIGH).contains(&xs[j]) && (s.bf || xs[j] == 0.0 || xs[j].abs() >= f32::from_bits(F16_MIN_NORMAL)) {
                inside += 1;
                left += usize::from(!decided);
            }
        }
    }
    s.left = (left, inside);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On an AVX-512 CPU the segments of all four (function, format) pairs pass the check and
    /// decide all but under 0.2% of the values in [LOW, HIGH) (the rest go to the table:
    /// session 48 measured 0 and 4 of 33,277 for bf16's tanh and σ, 30 and 34 of f16's 34,787
    /// normal values and zeros); `half_tables`'
    /// own test then runs `apply` through them on every value.
    #[test]
    fn every_value_is_decided_as_the_table_says() {
        if !crate::sim::cpu::avx512_f16c() {
            return;
        }
        for fmt in [BinaryFormat::BF16, BinaryFormat::F16] {
            for func in [Func::Tanh, Func::Sigmoid] {
                let s = segments(func, fmt).unwrap_or_else(|| panic!("{func:?} {fmt:?}: the check found a difference"));
                let (left, inside) = s.left;
                eprintln!("{func:?} {fmt:?}: {left} of {inside} values in [{LOW}, {HIGH}) left to the table");
                assert!(inside > 5000 && left * 500 < inside, "{func:?} {fmt:?}: {left} of {inside} left");
            }
        }
    }

    /// The check is what makes the route exact: a segment whose polynomial is off by a few
    /// ulps of the format, with its bound unchanged, fails it; an honest bound for the same
    /// polynomial passes, leaving that segment's values to the table.
    #[test]
    fn the_check_refuses_a_wrong_polynomial() {
        if !crate::sim::cpu::avx512_f16c() {
            return;
        }
        let table = crate::sim::half_tables::table(Func::Sigmoid, BinaryFormat::BF16);
        let fresh = || build(Func::Sigmoid, true).expect("the segments pass");
        let mut wrong = fresh();
        wrong.coef[0][17] += 1.0 / 64.0; // segment 17: x in [0.25, 0.75), σ ≈ 0.6, ulp 2^-8
        // SAFETY: the CPU has AVX-512F, FMA and F16C (checked above).
        assert!(unsafe { check(wrong, table) }.is_none(), "a wrong segment passed the check");
        let mut honest = fresh();
        honest.coef[0][17] += 1.0 / 64.0;
        honest.err[17] = 1.0 / 32.0;
        // SAFETY: as above.
        let s = unsafe { check(honest, table) }.expect("a wide bound is never wrong");
        // the 192 bf16 values of [0.25, 0.75): 128 in [0.25, 0.5), 64 in [0.5, 0.75)
        assert!(s.left.0 >= 192, "segment 17's values go to the table: {:?}", s.left);
    }
}
