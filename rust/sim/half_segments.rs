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
//!   [−8.25, 7.75). tanh evaluates at c = x clamped to [−7.5, 7.5] (`vrangeps`; tanh(±7.5)
//!   rounds to ±1 in both formats, as tanh(x) beyond), σ at c = x. y = RN(2c + 2^23 + 48) is
//!   2^23 + 32 + s with s = RN(2c) + 16 (the integer nearest to 2c, ties to even: a tie sits
//!   on the boundary of two segments, where either polynomial holds), so s is y's low 5
//!   bits, the index of a two-register permute (`vpermi2ps`) into each coefficient's 32
//!   entries, and t = c − c_s = c − RN(2c)/2 is exact (`vreduceps` with one fraction bit).
//! - **Polynomial.** p(t) = Σ_{k≤5} a_{s,k} t^k in f32 FMAs by Estrin's scheme,
//!   (a_0 + a_1 t) + t²((a_2 + a_3 t) + t²(a_4 + a_5 t)) (session 48; Horner's before): a_s interpolates
//!   the target g at the 6 Chebyshev nodes of [−1/4, 1/4], where g = σ, or g(x) = tanh(x)/x
//!   for tanh (even, 1 at 0), whose product r = c·p keeps the error relative near 0 (σ: r = p);
//!   D is the correctly rounded f64 tanh or σ (`activation_f64`), the table's own source.
//! - **Rounding test (Ziv), on r's bits** (session 49). K bounds the distance, counted in
//!   steps of the f32 bit pattern (ulps), between r and the f32 rounding of D(c), plus one:
//!   the largest distance over every value of the format in the domain, measured at first
//!   use with the same f32 operations (`Segments::bound`). D(c) then lies between the f32
//!   values K steps below and above r, and when all of those round to the same value of the
//!   format, so does D(c) (rounding is monotone): that value is the documented result
//!   round_F(D(x)). The format keeps an f32's top bits and drops d (bf16 16, f16 13: f16's
//!   grid from 2^−14 up); with u = r's bits, w = u + 2^(d−1) − K, the test is w mod 2^d <
//!   2^d − 2K (the interval holds no boundary of the rounding half away from zero on the
//!   bits) and the result is w with its d bits cleared: four integer operations. Below
//!   2^−14 (tanh of f16's subnormals, whose result is x itself) the grid on the bits is finer
//!   than f16's, and x, a point of both, is what the test decides; the check below confirms
//!   it for every such value. A tie would need D(x) on a midpoint of the format, and the
//!   check shows none reaches a result. (Until session 48 the test rounded p ± E_s with a
//!   bound per segment, and f16 tanh's lanes below 2^−14 went to the table: 9 operations
//!   where these take 4.)
//! - **The rest.** σ's lanes outside [−8.25, 7.75) (its lower tail, saturation, ±∞), NaN
//!   lanes and lanes failing the test are not decided: the caller reads them from the table,
//!   one by one when a vector has a few, else by a gather of the whole vector
//!   (`half_tables::gather_avx512`). The test leaves a handful of each format's values to the
//!   table (`every_value_is_decided_as_the_table_says` prints the counts).
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
/// tanh's lanes are evaluated at x clamped to [−CLAMP, CLAMP] (`vrangeps`), inside the
/// segments: tanh(±7.5) rounds to ±1 in both formats, as tanh(x) does beyond.
const CLAMP: f32 = 7.5;
/// The segments' domain [LOW, HIGH) (σ's lanes outside it go to the table).
const LOW: f32 = -8.25;
const HIGH: f32 = 7.75;

/// One (function, format)'s segments: coefficients and error bound.
pub(crate) struct Segments {
    /// coef[k][s]: the coefficient of t^k on segment s.
    coef: [[f32; SEGMENTS]; DEGREE + 1],
    /// K: a bound, in steps of the f32 bit pattern, on the distance between the evaluated
    /// result r and the documented value D (below).
    k: u32,
    /// Whether the function is tanh (p approximates tanh(x)/x, the result is c·p) or σ.
    tanh: bool,
    /// Whether the format is bf16 (else f16).
    bf: bool,
    /// Values in the domain (σ: [LOW, HIGH); tanh: all but NaN) that the check left to the
    /// table (the test failed), of all the format's values there: the route's reach,
    /// reported by the tests.
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

/// Fits the segments, measures their bound and runs the check (x86-64 with AVX-512 and F16C).
fn build(func: Func, bf: bool) -> Option<Segments> {
    if crate::sim::cpu::avx512_f16c() {
        let fmt = if bf { BinaryFormat::BF16 } else { BinaryFormat::F16 };
        let table = crate::sim::half_tables::table(func, fmt);
        let mut s = Segments { coef: fit(func), k: 0, tanh: func == Func::Tanh, bf, left: (0, 0) };
        s.k = s.bound();
        // SAFETY: the CPU has AVX-512F, FMA and F16C (checked above).
        return unsafe { check(s, table) };
    }
    None
}

/// A signed f32's bits as a position on a line on which each step is an ulp (−0 and +0 at 0).
fn position(v: f32) -> i64 {
    let m = i64::from(v.to_bits() & 0x7fff_ffff);
    if v.is_sign_negative() { -m } else { m }
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
    /// The segment and the result r of a value x of the format, with [`eval`]'s f32
    /// operations: c = x (σ) or x clamped to [−CLAMP, CLAMP] (tanh), p = p_s(c − c_s), r = p
    /// (σ) or c·p (tanh).
    fn scalar(&self, x: f32) -> (usize, f32) {
        let c = self.clamped(x);
        let y = c.mul_add(2.0, MAGIC);
        let s = (y.to_bits() & 31) as usize;
        let t = (y - MAGIC).mul_add(-0.5, c);
        let a = |k: usize| self.coef[k][s];
        let t2 = t * t;
        let (q0, q1, q2) = (a(1).mul_add(t, a(0)), a(3).mul_add(t, a(2)), a(5).mul_add(t, a(4)));
        let p = q2.mul_add(t2, q1).mul_add(t2, q0);
        (s, if self.tanh { c * p } else { p })
    }

    /// c: the value the evaluation starts from, x (σ) or x clamped to [−CLAMP, CLAMP] (tanh).
    fn clamped(&self, x: f32) -> f32 {
        if self.tanh && x.abs() > CLAMP { CLAMP.copysign(x) } else { x }
    }

    /// K: one more than the largest distance, in f32 bit steps, between r (`scalar`) and
    /// RN_f32(D(c)) over the format's values in the domain, so that D(c) lies between the
    /// f32 values K steps below and above r. (A clamped tanh lane is measured at c, whose
    /// rounding, ±1, is that of D(x).)
    fn bound(&self) -> u32 {
        let func = if self.tanh { Func::Tanh } else { Func::Sigmoid };
        let mut worst = 0i64;
        for bits in 0..=u16::MAX {
            let x = value(bits, self.bf);
            if x.is_nan() || (!self.tanh && !(LOW..HIGH).contains(&x)) {
                continue;
            }
            let r = self.scalar(x).1;
            worst = worst.max((position(r) - position(d(func, f64::from(self.clamped(x))) as f32)).abs());
        }
        u32::try_from(worst + 1).unwrap_or(u32::MAX)
    }
}

/// The registers of one `Segments` for a loop of [`eval`]s.
#[derive(Clone, Copy)]
pub(crate) struct Regs {
    coef: [[std::arch::x86_64::__m512; 2]; DEGREE + 1],
    /// 2^(d−1) − K, d the f32 bits the format drops (f16 13, bf16 16); its double 2^d − 2K
    /// is the test's limit. 0 when K ≥ 2^(d−1): then no lane is decided.
    shift: i32,
    /// the mask of the bits the format keeps
    top: i32,
    tanh: bool,
}

impl Segments {
    /// The coefficient vectors and the test's constants, loaded once per call of the loop.
    ///
    /// # Safety
    /// The caller is compiled with AVX-512F.
    #[inline(always)]
    pub(crate) unsafe fn regs(&self) -> Regs {
        use std::arch::x86_64::*;
        let dropped = if self.bf { 16 } else { 13 };
        let half = 1i64 << (dropped - 1);
        let k = i64::from(self.k);
        let shift = if k < half { (half - k) as i32 } else { 0 };
        // (a plain loop, no closure: `std::array::from_fn`'s was once compiled out of line,
        // each load in it then a call, `test_no_vector_intrinsic_is_compiled_out_of_line`)
        let mut coef = [[_mm512_setzero_ps(); 2]; DEGREE + 1];
        for (c, a) in coef.iter_mut().zip(&self.coef) {
            *c = [_mm512_loadu_ps(a.as_ptr()), _mm512_loadu_ps(a.as_ptr().add(16))];
        }
        Regs { coef, shift, top: (u32::MAX << dropped) as i32, tanh: self.tanh }
    }
}

/// The results of 16 lanes of the format's values x, and the mask of lanes this route
/// decided (the others hold garbage: the caller reads them from the table).
///
/// # Safety
/// The caller is compiled with AVX-512F, AVX-512DQ and FMA.
#[inline(always)]
pub(crate) unsafe fn eval(r: &Regs, x: std::arch::x86_64::__m512) -> (std::arch::x86_64::__m512, std::arch::x86_64::__mmask16) {
    use std::arch::x86_64::*;
    // c: tanh's x clamped to [−CLAMP, CLAMP] keeping its sign (`vrangeps`: the smaller
    // magnitude, x's sign), NaN lanes left; σ's lanes outside [LOW, HIGH) (and NaNs) left
    let (c, inside) = if r.tanh {
        (_mm512_range_ps::<0b0010>(x, _mm512_set1_ps(CLAMP)), _mm512_cmp_ps_mask::<_CMP_ORD_Q>(x, x))
    } else {
        (x, _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_set1_ps(LOW)) & _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(HIGH)))
    };
    let s = _mm512_castps_si512(_mm512_fmadd_ps(c, _mm512_set1_ps(2.0), _mm512_set1_ps(MAGIC)));
    // t = c − RN(2c)/2, exact (`vreduceps`, one fraction bit kept, to nearest even as the
    // index's rounding)
    let t = _mm512_reduce_ps::<{ 1 << 4 }>(c);
    let at = |c: &[__m512; 2]| _mm512_permutex2var_ps(c[0], s, c[1]);
    // Estrin's scheme: 3 FMAs in a row where Horner's takes 5 (a shorter dependent chain;
    // 0.99–1.06 end to end in session 48's alternating runs)
    let t2 = _mm512_mul_ps(t, t);
    let q = |k: usize| _mm512_fmadd_ps(at(&r.coef[k + 1]), t, at(&r.coef[k]));
    let (q0, q1, q2) = (q(0), q(2), q(4));
    let p = _mm512_fmadd_ps(_mm512_fmadd_ps(q2, t2, q1), t2, q0);
    let res = if r.tanh { _mm512_mul_ps(c, p) } else { p };
    // the rounding test on r's bits u: D lies within K steps of u, and every f32 in
    // [u − K, u + K] rounds (half away from zero, on the bits) to the same value of the
    // format when w = u + 2^(d−1) − K and w + 2K lie in one cell of 2^d, that is when
    // w mod 2^d < 2^d − 2K; that value is then w with the dropped bits cleared
    let w = _mm512_add_epi32(_mm512_castps_si512(res), _mm512_set1_epi32(r.shift));
    let low = _mm512_andnot_si512(_mm512_set1_epi32(r.top), w);
    let same = _mm512_cmplt_epu32_mask(low, _mm512_set1_epi32(2 * r.shift));
    (_mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(r.top))), inside & same)
}

/// The check: [`eval`] on every value of the format, each decided lane against the table.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ, FMA and F16C.
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma,f16c")]
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
            if !xs[j].is_nan() && (s.tanh || (LOW..HIGH).contains(&xs[j])) {
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
    /// decide all but under 0.2% of the values in their domain (σ: [LOW, HIGH); tanh: all
    /// but NaN); the rest go to the table. `half_tables`' own test then runs `apply` through
    /// them on every value.
    #[test]
    fn every_value_is_decided_as_the_table_says() {
        if !crate::sim::cpu::avx512_f16c() {
            return;
        }
        for fmt in [BinaryFormat::BF16, BinaryFormat::F16] {
            for func in [Func::Tanh, Func::Sigmoid] {
                let s = segments(func, fmt).unwrap_or_else(|| panic!("{func:?} {fmt:?}: the check found a difference"));
                let (left, inside) = s.left;
                eprintln!("{func:?} {fmt:?}: K = {}, {left} of {inside} values in the domain left to the table", s.k);
                assert!(inside > 5000 && left * 500 < inside, "{func:?} {fmt:?}: {left} of {inside} left");
            }
        }
    }

    /// The check is what makes the route exact: a segment whose polynomial is off by a few
    /// ulps of the format, with its bound unchanged, fails it; the bound measured for the same
    /// polynomial (`bound`) passes, leaving at least that segment's values to the table.
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
        honest.k = honest.bound();
        assert!(honest.k > fresh().k, "the wrong segment's bound is wider: {} vs {}", honest.k, fresh().k);
        // SAFETY: as above.
        let s = unsafe { check(honest, table) }.expect("a measured bound is never wrong");
        // the 192 bf16 values of [0.25, 0.75): 128 in [0.25, 0.5), 64 in [0.5, 0.75)
        assert!(s.left.0 >= 192, "segment 17's values go to the table: {:?}", s.left);
    }
}
