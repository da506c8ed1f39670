//! The approximate f32 tanh and σ of `approx_activations=True`: faster than the correctly
//! rounded ones (`fast_tanh`, `fast_sigmoid`: f64 work and a Ziv test; on Zen 3 with AVX2,
//! tanh 0.92–0.95 against 1.2 ns per value and σ 0.65–0.69 against 1.5: `approx_ns_per_value`),
//! at most 2 ulp from the true value (measured on all 2^32 inputs: the ignored test
//! `every_f32_error`; README "Approximate activations"), and **defined by the sequence of
//! f32 operations below**, each an IEEE operation rounded to nearest (fma: one rounding), so
//! every width computes the same bits: 16 lanes with AVX-512, 8 with AVX2 + FMA, one in the
//! portable code, and `rnnsim/reference.py` in numpy.
//!
//! The formulas (Cephes' `expf` and `tanhf`, S. Moshier, with their minimax coefficients):
//! * e^y for y ∈ [−104, 0]: k = round(y·log2 e) by the 1.5·2^23 trick (t = fma(y, log2 e,
//!   1.5·2^23), k = t − 1.5·2^23, ties to even), r = fma(−k, ln2_hi, y), r = fma(−k, ln2_lo, r)
//!   (Cody–Waite, ln2_hi with 9 trailing zero bits, so k·ln2_hi is exact), p = P(r) by Horner
//!   (fma), e^r = fma(p, r², r) + 1 (r² = r·r), then e^y = e^r·2^k rounded once (AVX-512
//!   `vscalefps`; elsewhere e^r·2^⌊k/2⌋, exact, then ·2^(k−⌊k/2⌋), rounded: the same value).
//! * σ(x) = n/(1 + e), e = e^y, y = max(−104, −|x|), n = e for x < 0, else 1.
//! * tanh(x) = sign(x)·t(|x|): for a = |x| < 0.625, t = fma(a·z, Q(z), a), z = a·a, Q the
//!   degree-4 polynomial (Horner); else t = (1 − e)/(1 + e), e = e^y, y = max(−19, −2a).
//! * NaN returns x + 0 (x quietened), as the correctly rounded paths do.
//!
//! The clamps: σ(−104) and below round to 0 (the true σ(−104) = 6.8·10^−46 is under half
//! the smallest subnormal), tanh(9.5) and above to 1.

use crate::num::fused::fma_via_odd;
use crate::sim::ziv::Func;

// (the constants as Cephes writes them; each decimal rounds to the same f32 here as in
// numpy's float32(float(text)), which `reference_approx.py` uses)

/// ln 2 = LN2_HI + LN2_LO, LN2_HI with 15 significant bits.
#[allow(clippy::excessive_precision)]
const LN2_HI: f32 = 0.693_145_751_953_125;
#[allow(clippy::excessive_precision)]
const LN2_LO: f32 = 1.428_606_765_330_187e-6;
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// 1.5·2^23: t = y·log2 e + MAGIC holds round(y·log2 e) in its low bits.
const MAGIC: f32 = 12_582_912.0;
/// e^r = 1 + r + r²·P(r) on |r| ≤ ln2/2 (Cephes `expf`), highest degree first.
#[allow(clippy::excessive_precision)]
const EXP_P: [f32; 6] = [1.987_569_15e-4, 1.398_199_950_7e-3, 8.333_451_907_3e-3, 4.166_579_589_4e-2, 1.666_666_545_9e-1, 5.000_000_120_1e-1];
/// tanh a = a + a·z·Q(z), z = a², on a < 0.625 (Cephes `tanhf`), highest degree first.
#[allow(clippy::excessive_precision)]
const TANH_Q: [f32; 5] = [-5.704_988_727_45e-3, 2.063_908_879_54e-2, -5.373_971_555_31e-2, 1.333_144_220_36e-1, -3.333_328_194_22e-1];

/// The f32 operations the formulas use, on one lane or a vector of them.
pub(crate) trait Ops: Copy {
    type Mask: Copy;
    unsafe fn splat(x: f32) -> Self;
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn sub(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    unsafe fn div(self, o: Self) -> Self;
    /// round(self·b + c).
    unsafe fn fmadd(self, b: Self, c: Self) -> Self;
    /// round(c − self·b).
    unsafe fn fnmadd(self, b: Self, c: Self) -> Self;
    /// c > self ? c : self (self when it is NaN, like `vmaxps(c, self)`).
    unsafe fn max_with(self, c: f32) -> Self;
    unsafe fn abs(self) -> Self;
    /// self with the sign bit of s flipped in (self ^ (s & −0.0)).
    unsafe fn xor_sign_of(self, s: Self) -> Self;
    /// self·2^k rounded once, k an integer-valued lane in [−150, 0].
    unsafe fn scale(self, k: Self) -> Self;
    unsafe fn lt(self, c: Self) -> Self::Mask;
    /// a where m is set, else b.
    unsafe fn select(m: Self::Mask, a: Self, b: Self) -> Self;
    /// x + 0 where x is NaN, else self.
    unsafe fn nan_from(self, x: Self) -> Self;
}

/// e^y for y ∈ [−104, 0] (module doc).
#[inline(always)]
unsafe fn exp_neg<V: Ops>(y: V) -> V {
    let t = y.fmadd(V::splat(LOG2_E), V::splat(MAGIC));
    let k = t.sub(V::splat(MAGIC));
    let r = k.fnmadd(V::splat(LN2_HI), y);
    let r = k.fnmadd(V::splat(LN2_LO), r);
    let mut p = V::splat(EXP_P[0]);
    for &c in &EXP_P[1..] {
        p = p.fmadd(r, V::splat(c));
    }
    let er = p.fmadd(r.mul(r), r).add(V::splat(1.0));
    er.scale(k)
}

/// σ(x), the approximation of the module doc.
#[inline(always)]
pub(crate) unsafe fn sigmoid<V: Ops>(x: V) -> V {
    let y = x.abs().mul(V::splat(-1.0)).max_with(-104.0);
    let e = exp_neg(y);
    let n = V::select(x.lt(V::splat(0.0)), e, V::splat(1.0));
    n.div(e.add(V::splat(1.0))).nan_from(x)
}

/// tanh(x), the approximation of the module doc.
#[inline(always)]
pub(crate) unsafe fn tanh<V: Ops>(x: V) -> V {
    let a = x.abs();
    let e = exp_neg(a.mul(V::splat(-2.0)).max_with(-19.0));
    let large = V::splat(1.0).sub(e).div(V::splat(1.0).add(e));
    let z = a.mul(a);
    let mut q = V::splat(TANH_Q[0]);
    for &c in &TANH_Q[1..] {
        q = q.fmadd(z, V::splat(c));
    }
    let small = a.mul(z).fmadd(q, a);
    V::select(a.lt(V::splat(0.625)), small, large).xor_sign_of(x).nan_from(x)
}

/// One lane: the portable code, and the reference the vector widths are tested against.
impl Ops for f32 {
    type Mask = bool;
    #[inline(always)]
    unsafe fn splat(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    unsafe fn add(self, o: f32) -> f32 {
        self + o
    }
    #[inline(always)]
    unsafe fn sub(self, o: f32) -> f32 {
        self - o
    }
    #[inline(always)]
    unsafe fn mul(self, o: f32) -> f32 {
        self * o
    }
    #[inline(always)]
    unsafe fn div(self, o: f32) -> f32 {
        self / o
    }
    /// (`f32::mul_add` is a libm call without the `fma` target feature; the round-to-odd
    /// emulation is the same value, `num::fused`.)
    #[inline(always)]
    unsafe fn fmadd(self, b: f32, c: f32) -> f32 {
        fma_via_odd(f64::from(self), f64::from(b), f64::from(c)) as f32
    }
    #[inline(always)]
    unsafe fn fnmadd(self, b: f32, c: f32) -> f32 {
        fma_via_odd(-f64::from(self), f64::from(b), f64::from(c)) as f32
    }
    #[inline(always)]
    unsafe fn max_with(self, c: f32) -> f32 {
        if c > self { c } else { self }
    }
    #[inline(always)]
    unsafe fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline(always)]
    unsafe fn xor_sign_of(self, s: f32) -> f32 {
        f32::from_bits(self.to_bits() ^ (s.to_bits() & 0x8000_0000))
    }
    #[inline(always)]
    unsafe fn scale(self, k: f32) -> f32 {
        let k = k as i32;
        let (k1, k2) = (k >> 1, k - (k >> 1));
        self * pow2(k1) * pow2(k2)
    }
    #[inline(always)]
    unsafe fn lt(self, c: f32) -> bool {
        self < c
    }
    #[inline(always)]
    unsafe fn select(m: bool, a: f32, b: f32) -> f32 {
        if m { a } else { b }
    }
    #[inline(always)]
    unsafe fn nan_from(self, x: f32) -> f32 {
        if x.is_nan() { x + 0.0 } else { self }
    }
}

/// 2^k for k ∈ [−126, 127] (`scale` passes [−75, 0]; a NaN lane's k is 0, its result
/// replaced later).
#[inline(always)]
fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `f` on one lane or a vector of them.
#[inline(always)]
unsafe fn apply<V: Ops>(f: Func, x: V) -> V {
    match f {
        Func::Tanh => tanh(x),
        Func::Sigmoid => sigmoid(x),
    }
}

/// One value, portable.
pub fn one(f: Func, x: f32) -> f32 {
    // SAFETY: the f32 impl of `Ops` is plain arithmetic.
    unsafe { apply(f, x) }
}

/// `f` over a slice in place: AVX-512 (16 lanes), else AVX2 + FMA (8), else one at a time.
pub fn slice(f: Func, xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::sim::cpu;
        if cpu::avx512() {
            // SAFETY: the CPU has the features (cpu).
            return unsafe { x86::slice512(f, xs) };
        }
        if cpu::avx2_fma() {
            // SAFETY: as above.
            return unsafe { x86::slice256(f, xs) };
        }
    }
    xs.iter_mut().for_each(|x| *x = one(f, *x));
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! The vector widths: `Ops` on `__m512` (AVX-512 F/VL/DQ + FMA) and `__m256` (AVX2 +
    //! FMA), and the slice loops.
    use super::{apply, Func, Ops};
    use std::arch::x86_64::*;

    /// The array of the n vectors e (for j = 0..n), by a plain loop: a closure would not
    /// inherit the caller's target features, and the intrinsics in it would become calls
    /// (measured: 10.6–11.0 ns per value with closures, against 0.9 with the loop).
    macro_rules! each {
        ($n:expr, |$j:ident| $e:expr) => {{
            let mut out = [_mm256_setzero_ps(); $n];
            for $j in 0..$n {
                out[$j] = $e;
            }
            out
        }};
    }

    /// f on 16 lanes (for `gated_single`).
    #[inline(always)]
    pub(crate) unsafe fn apply512(f: Func, x: __m512) -> __m512 {
        apply(f, x)
    }

    /// f on 8 lanes (for `gated_single`).
    #[inline(always)]
    pub(crate) unsafe fn apply256(f: Func, x: __m256) -> __m256 {
        apply(f, x)
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    pub(super) unsafe fn slice512(f: Func, xs: &mut [f32]) {
        let (n, p) = (xs.len(), xs.as_mut_ptr());
        let mut i = 0;
        while i < n {
            let m = (n - i).min(16);
            let live = crate::sim::simd_round::first_lanes(m);
            let x = _mm512_maskz_loadu_ps(live, p.add(i));
            _mm512_mask_storeu_ps(p.add(i), live, apply512(f, x));
            i += m;
        }
    }

    /// f over a slice with AVX2 + FMA: four vectors side by side ([`Side`]) while 32 values
    /// remain, then one vector at a time. Session 62, on an AMD EPYC 7003 (Zen 3), 4,096
    /// values on (−4, 4) (`approx_ns_per_value`): one vector at a time tanh 1.33–1.42 and σ
    /// 0.95–0.98 ns per value, two side by side 1.02–1.15 / 0.79–0.80, three 0.96–1.00 /
    /// 0.75–0.77, four 0.92–0.95 / 0.65–0.69, six 0.97–1.01 / 0.60–0.63, eight 0.98–1.00 /
    /// 0.69–0.72.
    #[target_feature(enable = "avx2,avx,fma")]
    pub(super) unsafe fn slice256(f: Func, xs: &mut [f32]) {
        let mut groups = xs.chunks_exact_mut(32);
        for g in &mut groups {
            side_by_side::<4>(f, g);
        }
        let mut chunks = groups.into_remainder().chunks_exact_mut(8);
        for c in &mut chunks {
            let x = _mm256_loadu_ps(c.as_ptr());
            _mm256_storeu_ps(c.as_mut_ptr(), apply256(f, x));
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let mut buf = [0f32; 8];
            buf[..rest.len()].copy_from_slice(rest);
            let y = apply256(f, _mm256_loadu_ps(buf.as_ptr()));
            _mm256_storeu_ps(buf.as_mut_ptr(), y);
            rest.copy_from_slice(&buf[..rest.len()]);
        }
    }

    /// `f` on the 8·N values of g, N vectors of 8 side by side (`Side`: each operation
    /// applied to the N in turn).
    #[inline(always)]
    unsafe fn side_by_side<const N: usize>(f: Func, g: &mut [f32]) {
        debug_assert_eq!(g.len(), 8 * N);
        let p = g.as_mut_ptr();
        let y = apply(f, Side::<N>(each!(N, |j| _mm256_loadu_ps(p.add(8 * j)))));
        for (j, v) in y.0.iter().enumerate() {
            _mm256_storeu_ps(p.add(8 * j), *v);
        }
    }

    /// N vectors of 8 lanes side by side: every operation of `Ops` applied to each in turn,
    /// so that the N evaluations' chains are interleaved in program order (the loop over one
    /// vector is bound by the latency of its chain). The same operations per lane as `__m256`.
    #[derive(Clone, Copy)]
    struct Side<const N: usize>([__m256; N]);

    impl<const N: usize> Ops for Side<N> {
        type Mask = [__m256; N];
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            Side([_mm256_set1_ps(x); N])
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            Side(each!(N, |j| self.0[j].add(o.0[j])))
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            Side(each!(N, |j| self.0[j].sub(o.0[j])))
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            Side(each!(N, |j| self.0[j].mul(o.0[j])))
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            Side(each!(N, |j| self.0[j].div(o.0[j])))
        }
        #[inline(always)]
        unsafe fn fmadd(self, b: Self, c: Self) -> Self {
            Side(each!(N, |j| self.0[j].fmadd(b.0[j], c.0[j])))
        }
        #[inline(always)]
        unsafe fn fnmadd(self, b: Self, c: Self) -> Self {
            Side(each!(N, |j| self.0[j].fnmadd(b.0[j], c.0[j])))
        }
        #[inline(always)]
        unsafe fn max_with(self, c: f32) -> Self {
            Side(each!(N, |j| self.0[j].max_with(c)))
        }
        #[inline(always)]
        unsafe fn abs(self) -> Self {
            Side(each!(N, |j| self.0[j].abs()))
        }
        #[inline(always)]
        unsafe fn xor_sign_of(self, s: Self) -> Self {
            Side(each!(N, |j| self.0[j].xor_sign_of(s.0[j])))
        }
        #[inline(always)]
        unsafe fn scale(self, k: Self) -> Self {
            Side(each!(N, |j| self.0[j].scale(k.0[j])))
        }
        #[inline(always)]
        unsafe fn lt(self, c: Self) -> [__m256; N] {
            each!(N, |j| self.0[j].lt(c.0[j]))
        }
        #[inline(always)]
        unsafe fn select(m: [__m256; N], a: Self, b: Self) -> Self {
            Side(each!(N, |j| <__m256 as Ops>::select(m[j], a.0[j], b.0[j])))
        }
        #[inline(always)]
        unsafe fn nan_from(self, x: Self) -> Self {
            Side(each!(N, |j| self.0[j].nan_from(x.0[j])))
        }
    }

    impl Ops for __m512 {
        type Mask = __mmask16;
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            _mm512_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            _mm512_add_ps(self, o)
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            _mm512_sub_ps(self, o)
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            _mm512_mul_ps(self, o)
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            _mm512_div_ps(self, o)
        }
        #[inline(always)]
        unsafe fn fmadd(self, b: Self, c: Self) -> Self {
            _mm512_fmadd_ps(self, b, c)
        }
        #[inline(always)]
        unsafe fn fnmadd(self, b: Self, c: Self) -> Self {
            _mm512_fnmadd_ps(self, b, c)
        }
        #[inline(always)]
        unsafe fn max_with(self, c: f32) -> Self {
            _mm512_max_ps(_mm512_set1_ps(c), self)
        }
        #[inline(always)]
        unsafe fn abs(self) -> Self {
            _mm512_abs_ps(self)
        }
        #[inline(always)]
        unsafe fn xor_sign_of(self, s: Self) -> Self {
            // 0x78: a ^ (b & c)
            let (a, b) = (_mm512_castps_si512(self), _mm512_castps_si512(s));
            _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0x78>(a, b, _mm512_set1_epi32(i32::MIN)))
        }
        #[inline(always)]
        unsafe fn scale(self, k: Self) -> Self {
            _mm512_scalef_ps(self, k)
        }
        #[inline(always)]
        unsafe fn lt(self, c: Self) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(self, c)
        }
        #[inline(always)]
        unsafe fn select(m: __mmask16, a: Self, b: Self) -> Self {
            _mm512_mask_blend_ps(m, b, a)
        }
        #[inline(always)]
        unsafe fn nan_from(self, x: Self) -> Self {
            let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
            _mm512_mask_add_ps(self, nan, x, _mm512_setzero_ps())
        }
    }

    impl Ops for __m256 {
        type Mask = __m256;
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            _mm256_set1_ps(x)
        }
        #[inline(always)]
        unsafe fn add(self, o: Self) -> Self {
            _mm256_add_ps(self, o)
        }
        #[inline(always)]
        unsafe fn sub(self, o: Self) -> Self {
            _mm256_sub_ps(self, o)
        }
        #[inline(always)]
        unsafe fn mul(self, o: Self) -> Self {
            _mm256_mul_ps(self, o)
        }
        #[inline(always)]
        unsafe fn div(self, o: Self) -> Self {
            _mm256_div_ps(self, o)
        }
        #[inline(always)]
        unsafe fn fmadd(self, b: Self, c: Self) -> Self {
            _mm256_fmadd_ps(self, b, c)
        }
        #[inline(always)]
        unsafe fn fnmadd(self, b: Self, c: Self) -> Self {
            _mm256_fnmadd_ps(self, b, c)
        }
        #[inline(always)]
        unsafe fn max_with(self, c: f32) -> Self {
            _mm256_max_ps(_mm256_set1_ps(c), self)
        }
        #[inline(always)]
        unsafe fn abs(self) -> Self {
            _mm256_andnot_ps(_mm256_set1_ps(-0.0), self)
        }
        #[inline(always)]
        unsafe fn xor_sign_of(self, s: Self) -> Self {
            _mm256_xor_ps(self, _mm256_and_ps(s, _mm256_set1_ps(-0.0)))
        }
        /// ·2^⌊k/2⌋ (exact: the product stays normal), then ·2^(k − ⌊k/2⌋) (one rounding).
        #[inline(always)]
        unsafe fn scale(self, k: Self) -> Self {
            let k = _mm256_cvttps_epi32(k);
            let k1 = _mm256_srai_epi32::<1>(k);
            let k2 = _mm256_sub_epi32(k, k1);
            let bias = _mm256_set1_epi32(127);
            let p1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(k1, bias)));
            let p2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(k2, bias)));
            _mm256_mul_ps(_mm256_mul_ps(self, p1), p2)
        }
        #[inline(always)]
        unsafe fn lt(self, c: Self) -> __m256 {
            _mm256_cmp_ps::<_CMP_LT_OQ>(self, c)
        }
        #[inline(always)]
        unsafe fn select(m: __m256, a: Self, b: Self) -> Self {
            _mm256_blendv_ps(b, a, m)
        }
        #[inline(always)]
        unsafe fn nan_from(self, x: Self) -> Self {
            let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x);
            _mm256_blendv_ps(self, _mm256_add_ps(x, _mm256_setzero_ps()), nan)
        }
    }
}

#[cfg(test)]
#[path = "approx_activation_tests.rs"]
mod tests;
