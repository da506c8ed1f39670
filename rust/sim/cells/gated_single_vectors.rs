//! The vectors the single-sequence kernel (`gated_single`) is written over: f32 in 16 lanes
//! with AVX-512 (`V512`) or 8 with AVX2 + FMA (`V256`), f64 in 8 lanes with AVX-512
//! (`V512d`) or 4 with AVX2 + FMA (`V256d`), and the half formats with f32 sums in 16 f32
//! lanes with AVX-512 (`V512h`) or 8 with AVX2 + FMA + F16C (`V256h`).
//! The kernel is one generic body; each operation here is one IEEE operation per
//! lane (or the exact activations of `activation_avx512` / `activation_avx2`, and for f64
//! those of the lock-step kernel, `float_batch::activate`), so both f32 widths give the same
//! bits, and every width those of the lock-step kernel.
//!
//! Every method is `#[inline(always)]` and has no target features of its own: it is
//! compiled into the kernel's entry point, which enables the features of its width.

use crate::net::activation::Activation;
use crate::sim::approx_activation::x86::{apply256, apply512};
use crate::sim::ziv::Func;
use crate::sim::fast_sigmoid::Sigmoid;
use crate::sim::fast_tanh::Tanh;
use std::arch::x86_64::*;

/// A vector of f32 or f64 lanes.
pub(crate) trait Vector: Copy {
    /// The lane type.
    type E: Copy;
    const LANES: usize;
    /// Whether the kernel applies tanh/σ to all the vectors of a kind in a tick at once
    /// (`act_gates`) rather than vector by vector as it computes them: f64, whose
    /// correctly rounded activations run as a call over a slice (`activation_f64::slice`).
    const GROUPED: bool = false;
    unsafe fn zero() -> Self;
    unsafe fn load(p: *const Self::E) -> Self;
    unsafe fn store(self, p: *mut Self::E);
    /// Stores the first n lanes (n ≤ LANES).
    unsafe fn store_first(self, p: *mut Self::E, n: usize);
    /// x_k in every lane.
    unsafe fn splat_from(p: *const Self::E) -> Self;
    /// An elementwise addition (one rounding to the lanes' format).
    unsafe fn add(self, o: Self) -> Self;
    /// An elementwise product (one rounding to the lanes' format).
    unsafe fn mul(self, o: Self) -> Self;
    /// One step of an affine map's sum, self + w·z: round(w·z + self) once when FUSED, else
    /// round(self + round(w·z)); in the sums' arithmetic, which is the lanes' own except for
    /// the half formats with f32 sums (`V512h`: f32's).
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self;
    /// The end of an affine map's sum: nothing, except for the half formats with f32 sums
    /// (`V512h`), whose f32 sum is rounded to the half format here (`Float::end_sum`).
    #[inline(always)]
    unsafe fn end_sum(self) -> Self {
        self
    }
    /// −self (the sign bit flipped).
    unsafe fn neg(self) -> Self;
    /// Lane j of self in every lane (j < LANES), from the register: no store and reload.
    unsafe fn lane(self, j: usize) -> Self;
    /// `a` on every lane, as `float_batch::activate` on each.
    unsafe fn act(self, a: Activation) -> Self;
    /// (s, act_a(s)) for s = self.add(o): one method so that f16 (`V512h`) can take the
    /// table index from the conversion that also rounds s.
    #[inline(always)]
    unsafe fn add_act(self, o: Self, a: Activation) -> (Self, Self) {
        let s = self.add(o);
        (s, s.act(a))
    }
    /// act_a(self.end_sum()), likewise.
    #[inline(always)]
    unsafe fn end_sum_act(self, a: Activation) -> Self {
        self.end_sum().act(a)
    }
    /// a[g][q] = act_g(a[g][q]) for every block g, act_g = `candidate` for g = `cand` (none
    /// when cand ≥ G), else `gate`: the same values as `act` on each vector.
    #[inline(always)]
    unsafe fn act_gates<const Q: usize, const G: usize>(a: &mut [[Self; Q]; G], gate: Activation, candidate: Activation, cand: usize) {
        for (g, row) in a.iter_mut().enumerate() {
            let f = if g == cand { candidate } else { gate };
            for v in row.iter_mut() {
                *v = v.act(f);
            }
        }
    }
}

/// 16 lanes, AVX-512 F/VL/DQ + FMA.
#[derive(Clone, Copy)]
pub(crate) struct V512(__m512);

/// 8 lanes, AVX2 + FMA.
#[derive(Clone, Copy)]
pub(crate) struct V256(__m256);

impl V512 {
    /// The vector of these lanes.
    #[inline(always)]
    pub(crate) fn from_raw(x: __m512) -> Self {
        V512(x)
    }
    /// Its lanes.
    #[inline(always)]
    pub(crate) fn raw(self) -> __m512 {
        self.0
    }
}

impl Vector for V512 {
    type E = f32;
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V512(_mm512_setzero_ps())
    }
    #[inline(always)]
    unsafe fn splat_from(p: *const f32) -> Self {
        V512(_mm512_set1_ps(*p))
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        V512(_mm512_loadu_ps(p))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        _mm512_storeu_ps(p, self.0)
    }
    #[inline(always)]
    unsafe fn store_first(self, p: *mut f32, n: usize) {
        _mm512_mask_storeu_ps(p, crate::sim::simd_round::first_lanes(n), self.0)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        V512(_mm512_add_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        V512(_mm512_mul_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self {
        V512(if FUSED { _mm512_fmadd_ps(w.0, z.0, self.0) } else { _mm512_add_ps(self.0, _mm512_mul_ps(w.0, z.0)) })
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        V512(_mm512_xor_ps(self.0, _mm512_set1_ps(-0.0)))
    }
    #[inline(always)]
    unsafe fn lane(self, j: usize) -> Self {
        V512(_mm512_permutexvar_ps(_mm512_set1_epi32(j as i32), self.0))
    }
    #[inline(always)]
    unsafe fn act(self, a: Activation) -> Self {
        use crate::sim::activation_avx512::apply16;
        let x = self.0;
        let (zero, one) = (_mm512_setzero_ps(), _mm512_set1_ps(1.0));
        V512(match a {
            Activation::Identity => x,
            Activation::Tanh => apply16::<Tanh>(x),
            Activation::Sigmoid => apply16::<Sigmoid>(x),
            Activation::ApproxTanh => apply512(Func::Tanh, x),
            Activation::ApproxSigmoid => apply512(Func::Sigmoid, x),
            // x > 0 ? x : 0 (NaN: 0)
            Activation::Relu => _mm512_maskz_mov_ps(gt512(x, zero), x),
            // x > 1 ? 1 : x > 0 ? x : 0
            Activation::Slu => _mm512_mask_blend_ps(gt512(x, one), _mm512_maskz_mov_ps(gt512(x, zero), x), one),
            Activation::Step => _mm512_maskz_mov_ps(gt512(x, zero), one),
            // x > 0 ? 1 : x < 0 ? −1 : 0
            Activation::Sign => _mm512_mask_blend_ps(gt512(zero, x), _mm512_maskz_mov_ps(gt512(x, zero), one), _mm512_set1_ps(-1.0)),
            // x > 0 ? 1 : x < 0 ? 0 : ½
            Activation::SatSigmoid => _mm512_mask_blend_ps(gt512(x, zero), _mm512_maskz_mov_ps(!gt512(zero, x), _mm512_set1_ps(0.5)), one),
        })
    }
}

impl Vector for V256 {
    type E = f32;
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V256(_mm256_setzero_ps())
    }
    #[inline(always)]
    unsafe fn splat_from(p: *const f32) -> Self {
        V256(_mm256_set1_ps(*p))
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        V256(_mm256_loadu_ps(p))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        _mm256_storeu_ps(p, self.0)
    }
    #[inline(always)]
    unsafe fn store_first(self, p: *mut f32, n: usize) {
        crate::sim::simd_round::store_first_8(p, n, self.0)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        V256(_mm256_add_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        V256(_mm256_mul_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self {
        V256(if FUSED { _mm256_fmadd_ps(w.0, z.0, self.0) } else { _mm256_add_ps(self.0, _mm256_mul_ps(w.0, z.0)) })
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        V256(_mm256_xor_ps(self.0, _mm256_set1_ps(-0.0)))
    }
    #[inline(always)]
    unsafe fn lane(self, j: usize) -> Self {
        V256(_mm256_permutevar8x32_ps(self.0, _mm256_set1_epi32(j as i32)))
    }
    #[inline(always)]
    unsafe fn act(self, a: Activation) -> Self {
        use crate::sim::activation_avx2::apply8;
        let x = self.0;
        let (zero, one) = (_mm256_setzero_ps(), _mm256_set1_ps(1.0));
        // blend(a, b, m): b where m is set, else a
        V256(match a {
            Activation::Identity => x,
            Activation::Tanh => apply8::<Tanh>(x),
            Activation::Sigmoid => apply8::<Sigmoid>(x),
            Activation::ApproxTanh => apply256(Func::Tanh, x),
            Activation::ApproxSigmoid => apply256(Func::Sigmoid, x),
            Activation::Relu => _mm256_and_ps(gt256(x, zero), x),
            Activation::Slu => _mm256_blendv_ps(_mm256_and_ps(gt256(x, zero), x), one, gt256(x, one)),
            Activation::Step => _mm256_and_ps(gt256(x, zero), one),
            Activation::Sign => _mm256_blendv_ps(_mm256_and_ps(gt256(x, zero), one), _mm256_set1_ps(-1.0), gt256(zero, x)),
            // (andnot(m, v) = v where m is clear)
            Activation::SatSigmoid => _mm256_blendv_ps(_mm256_andnot_ps(gt256(zero, x), _mm256_set1_ps(0.5)), one, gt256(x, zero)),
        })
    }
}

/// 16 lanes of a half format with f32 sums (`num::f32_sums`; bf16 when `BF`, else f16),
/// AVX-512 F/VL/DQ + FMA: the lanes hold values of the half format as f32s. An affine
/// map's steps are f32's (`V512`'s `sum_step`) and its end rounds to the half format once
/// (`end_sum`); every elementwise operation is computed in f32 and rounded to the half
/// format (`rounded`: `simd_round::round_bf16_grid` / `round_f16_soon`, the vector forms of
/// `Bf16SumF32::add` / `mul`: the sum or product of two half values is exact or correctly
/// rounded in f32, then rounded once more, and with f32's 24 bits ≥ 2p + 2 that double
/// rounding is innocuous, `num::float`); tanh/σ are the half tables
/// (`half_tables`, one gather).
#[derive(Clone, Copy)]
pub(crate) struct V512h<const BF: bool>(__m512);

impl<const BF: bool> V512h<BF> {
    /// x rounded to the half format. x is always the result of an operation on values of
    /// the format (a sum, a product, an affine map's f32 sum), so a NaN has the low bits
    /// that the rounding on the bits keeps (`gated_half_loops::round`), and bf16 needs no
    /// NaN test and blend on the tick's dependent chain (`round_bf16_grid`).
    #[inline(always)]
    unsafe fn rounded(x: __m512) -> Self {
        use crate::sim::simd_round::{round_bf16_grid, round_f16_soon};
        V512h(if BF { round_bf16_grid(x) } else { round_f16_soon(x) })
    }
    /// `func` of every lane from its table: index = the lane's half bits (bf16: the top 16
    /// of the f32; f16: `vcvtps2ph`, exact on the grid).
    #[inline(always)]
    unsafe fn looked_up(self, func: Func) -> Self {
        let idx = if BF { _mm512_srli_epi32::<16>(_mm512_castps_si512(self.0)) } else { _mm512_cvtepu16_epi32(to_binary16(self.0)) };
        Self::table_at(func, idx)
    }
    /// Entries `idx` of `func`'s table.
    #[inline(always)]
    unsafe fn table_at(func: Func, idx: __m512i) -> Self {
        use crate::num::round::BinaryFormat;
        V512h(crate::sim::half_tables::gather16(func, if BF { BinaryFormat::BF16 } else { BinaryFormat::F16 }, idx))
    }
    /// (round(x), act_a(round(x))). For f16 the one `vcvtps2ph` of x gives both the rounded
    /// value (converted back) and the table index, so a lookup waits for one conversion
    /// instead of three; bf16 rounds with integer operations and shifts.
    #[inline(always)]
    unsafe fn rounded_and_act(x: __m512, a: Activation) -> (Self, Self) {
        if BF || !matches!(a, Activation::Tanh | Activation::Sigmoid) {
            let s = Self::rounded(x);
            return (s, s.act(a));
        }
        let ph = to_binary16(x);
        // (a NaN x is kept by the conversion pair, as in `rounded`)
        let s = V512h(_mm512_cvtph_ps(ph));
        let func = if a == Activation::Tanh { Func::Tanh } else { Func::Sigmoid };
        (s, Self::table_at(func, _mm512_cvtepu16_epi32(ph)))
    }
}

/// The binary16 bits of x rounded to nearest even (`vcvtps2ph`; NaN → a binary16 NaN).
#[inline(always)]
unsafe fn to_binary16(x: __m512) -> __m256i {
    _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x)
}

impl<const BF: bool> Vector for V512h<BF> {
    type E = f32;
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V512h(_mm512_setzero_ps())
    }
    #[inline(always)]
    unsafe fn splat_from(p: *const f32) -> Self {
        V512h(_mm512_set1_ps(*p))
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        V512h(_mm512_loadu_ps(p))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        _mm512_storeu_ps(p, self.0)
    }
    #[inline(always)]
    unsafe fn store_first(self, p: *mut f32, n: usize) {
        V512(self.0).store_first(p, n)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        Self::rounded(_mm512_add_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        Self::rounded(_mm512_mul_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self {
        V512h(V512(self.0).sum_step::<FUSED>(V512(w.0), V512(z.0)).0)
    }
    #[inline(always)]
    unsafe fn end_sum(self) -> Self {
        Self::rounded(self.0)
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        V512h(V512(self.0).neg().0)
    }
    #[inline(always)]
    unsafe fn lane(self, j: usize) -> Self {
        V512h(V512(self.0).lane(j).0)
    }
    /// tanh/σ from the tables; every other activation maps a half value to itself, 0, ±1 or
    /// ½ (f32's, exact). The approximate ones are f32's only (`pack_any` refuses them here).
    #[inline(always)]
    unsafe fn act(self, a: Activation) -> Self {
        match a {
            Activation::Tanh => self.looked_up(Func::Tanh),
            Activation::Sigmoid => self.looked_up(Func::Sigmoid),
            _ => V512h(V512(self.0).act(a).0),
        }
    }
    #[inline(always)]
    unsafe fn add_act(self, o: Self, a: Activation) -> (Self, Self) {
        Self::rounded_and_act(_mm512_add_ps(self.0, o.0), a)
    }
    #[inline(always)]
    unsafe fn end_sum_act(self, a: Activation) -> Self {
        Self::rounded_and_act(self.0, a).1
    }
}

/// 8 lanes of a half format with f32 sums (bf16 when `BF`, else f16), AVX2 + FMA + F16C:
/// [`V512h`] on 256-bit vectors, the same operations in the same order, so the same bits.
/// An affine map's steps are f32's (`V256`'s `sum_step`), its end and every elementwise
/// result are rounded to the half format on the bits (`simd_round::round_bf16_8_grid`) or
/// by F16C's conversion pair (`round_f16_8_grid`), without a NaN blend: every value rounded
/// here is an operation's result on values of the format, whose NaN has the low bits those
/// roundings keep (`V512h::rounded`); tanh/σ are one `vgatherdps` from the half tables.
#[derive(Clone, Copy)]
pub(crate) struct V256h<const BF: bool>(__m256);

impl<const BF: bool> V256h<BF> {
    /// x rounded to the half format (x an operation's result: `V512h::rounded`).
    #[inline(always)]
    unsafe fn rounded(x: __m256) -> Self {
        use crate::sim::simd_round::{round_bf16_8_grid, round_f16_8_grid};
        V256h(if BF { round_bf16_8_grid(x) } else { round_f16_8_grid(x) })
    }
    /// Entries `idx` of `func`'s table.
    #[inline(always)]
    unsafe fn table_at(func: Func, idx: __m256i) -> Self {
        use crate::num::round::BinaryFormat;
        V256h(crate::sim::half_tables::gather8(func, if BF { BinaryFormat::BF16 } else { BinaryFormat::F16 }, idx))
    }
    /// `func` of every lane from its table: index = the lane's half bits (bf16: the top 16
    /// of the f32; f16: `vcvtps2ph`, exact on the grid).
    #[inline(always)]
    unsafe fn looked_up(self, func: Func) -> Self {
        let idx = if BF { _mm256_srli_epi32::<16>(_mm256_castps_si256(self.0)) } else { _mm256_cvtepu16_epi32(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(self.0)) };
        Self::table_at(func, idx)
    }
    /// (round(x), act_a(round(x))): for f16 the one `vcvtps2ph` of x gives both the rounded
    /// value (converted back) and the table index (`V512h::rounded_and_act`).
    #[inline(always)]
    unsafe fn rounded_and_act(x: __m256, a: Activation) -> (Self, Self) {
        if BF || !matches!(a, Activation::Tanh | Activation::Sigmoid) {
            let s = Self::rounded(x);
            return (s, s.act(a));
        }
        let ph = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
        let func = if a == Activation::Tanh { Func::Tanh } else { Func::Sigmoid };
        (V256h(_mm256_cvtph_ps(ph)), Self::table_at(func, _mm256_cvtepu16_epi32(ph)))
    }
}

impl<const BF: bool> Vector for V256h<BF> {
    type E = f32;
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V256h(_mm256_setzero_ps())
    }
    #[inline(always)]
    unsafe fn splat_from(p: *const f32) -> Self {
        V256h(_mm256_set1_ps(*p))
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        V256h(_mm256_loadu_ps(p))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        _mm256_storeu_ps(p, self.0)
    }
    #[inline(always)]
    unsafe fn store_first(self, p: *mut f32, n: usize) {
        V256(self.0).store_first(p, n)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        Self::rounded(_mm256_add_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        Self::rounded(_mm256_mul_ps(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self {
        V256h(V256(self.0).sum_step::<FUSED>(V256(w.0), V256(z.0)).0)
    }
    #[inline(always)]
    unsafe fn end_sum(self) -> Self {
        Self::rounded(self.0)
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        V256h(V256(self.0).neg().0)
    }
    #[inline(always)]
    unsafe fn lane(self, j: usize) -> Self {
        V256h(V256(self.0).lane(j).0)
    }
    /// tanh/σ from the tables; every other activation maps a half value to itself, 0, ±1 or
    /// ½ (f32's, exact). The approximate ones are f32's only (`pack_any` refuses them here).
    #[inline(always)]
    unsafe fn act(self, a: Activation) -> Self {
        match a {
            Activation::Tanh => self.looked_up(Func::Tanh),
            Activation::Sigmoid => self.looked_up(Func::Sigmoid),
            _ => V256h(V256(self.0).act(a).0),
        }
    }
    #[inline(always)]
    unsafe fn add_act(self, o: Self, a: Activation) -> (Self, Self) {
        Self::rounded_and_act(_mm256_add_ps(self.0, o.0), a)
    }
    #[inline(always)]
    unsafe fn end_sum_act(self, a: Activation) -> Self {
        Self::rounded_and_act(self.0, a).1
    }
}

/// 8 f64 lanes, AVX-512 F/VL/DQ + FMA.
#[derive(Clone, Copy)]
pub(crate) struct V512d(__m512d);

/// Vectors of f64 per tick that `V512d::act_gates` and `V256d::act_gates` take (5 gate
/// blocks × 4 vectors: hidden `F64_MAX_HIDDEN` in 8 lanes, `F64_AVX2_MAX_HIDDEN` in 4).
const MAX_VECTORS: usize = 20;

impl Vector for V512d {
    type E = f64;
    const LANES: usize = 8;
    const GROUPED: bool = true;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V512d(_mm512_setzero_pd())
    }
    #[inline(always)]
    unsafe fn splat_from(p: *const f64) -> Self {
        V512d(_mm512_set1_pd(*p))
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        V512d(_mm512_loadu_pd(p))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        _mm512_storeu_pd(p, self.0)
    }
    #[inline(always)]
    unsafe fn store_first(self, p: *mut f64, n: usize) {
        _mm512_mask_storeu_pd(p, crate::sim::simd_round::first_lanes(n) as __mmask8, self.0)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        V512d(_mm512_add_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        V512d(_mm512_mul_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self {
        V512d(if FUSED { _mm512_fmadd_pd(w.0, z.0, self.0) } else { _mm512_add_pd(self.0, _mm512_mul_pd(w.0, z.0)) })
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        V512d(_mm512_xor_pd(self.0, _mm512_set1_pd(-0.0)))
    }
    #[inline(always)]
    unsafe fn lane(self, j: usize) -> Self {
        V512d(_mm512_permutexvar_pd(_mm512_set1_epi64(j as i64), self.0))
    }
    #[inline(always)]
    unsafe fn act(self, a: Activation) -> Self {
        let mut one = [[self]];
        Self::act_gates::<1, 1>(&mut one, a, a, 1);
        one[0][0]
    }
    #[inline(always)]
    unsafe fn act_gates<const Q: usize, const G: usize>(a: &mut [[Self; Q]; G], gate: Activation, candidate: Activation, cand: usize) {
        act_gates_f64(a, gate, candidate, cand)
    }
}

/// `Vector::act_gates` of the f64 vectors (`V512d`, `V256d`), through a buffer: the gate
/// blocks' lanes, then the candidate's, each kind one call of `float_batch::activate` (the
/// lock-step kernel's own function, so the same bits): a call costs ~40 ns of set-up and
/// latency whatever its length (`activation_f64`), so a tick of hidden 16 makes three calls
/// instead of ten. σ gates with a tanh candidate (the LSTM) take one call for both
/// (`activation_f64::sigmoid_then_tanh`, the same bits as the two `activate`s).
#[inline(always)]
unsafe fn act_gates_f64<V: Vector<E = f64>, const Q: usize, const G: usize>(a: &mut [[V; Q]; G], gate: Activation, candidate: Activation, cand: usize) {
    assert!(Q * G <= MAX_VECTORS && V::LANES <= 8);
    let mut buf = std::mem::MaybeUninit::<[f64; MAX_VECTORS * 8]>::uninit();
    let (p, l) = (buf.as_mut_ptr().cast::<f64>(), V::LANES);
    let order = (0..G).filter(|&g| g != cand).chain((cand < G).then_some(cand));
    let mut n = 0;
    for g in order.clone() {
        for v in &a[g] {
            v.store(p.add(n * l));
            n += 1;
        }
    }
    let gates = (G - usize::from(cand < G)) * Q * l;
    // SAFETY: the first n·l values were written above
    let vals = std::slice::from_raw_parts_mut(p, n * l);
    if (gate, candidate) == (Activation::Sigmoid, Activation::Tanh) && cand < G {
        // σ and tanh in one call (an LSTM's gates and candidate; `activate`'s bits)
        crate::sim::activation_f64::sigmoid_then_tanh(vals, gates);
    } else {
        let (gv, cv) = vals.split_at_mut(gates);
        crate::sim::float_batch::activate::<f64>(gate, gv);
        crate::sim::float_batch::activate::<f64>(candidate, cv);
    }
    let mut n = 0;
    for g in order {
        for v in a[g].iter_mut() {
            *v = V::load(p.add(n * l));
            n += 1;
        }
    }
}

/// 4 f64 lanes, AVX2 + FMA: `V512d` on half the width (the same operations, so the same
/// bits), for hidden ≤ `F64_AVX2_MAX_HIDDEN`.
#[derive(Clone, Copy)]
pub(crate) struct V256d(__m256d);

impl Vector for V256d {
    type E = f64;
    const LANES: usize = 4;
    const GROUPED: bool = true;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V256d(_mm256_setzero_pd())
    }
    #[inline(always)]
    unsafe fn splat_from(p: *const f64) -> Self {
        V256d(_mm256_set1_pd(*p))
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        V256d(_mm256_loadu_pd(p))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        _mm256_storeu_pd(p, self.0)
    }
    #[inline(always)]
    unsafe fn store_first(self, p: *mut f64, n: usize) {
        if n >= 4 {
            return _mm256_storeu_pd(p, self.0);
        }
        // lane j stored where its 64-bit mask is negative: j < n
        let m = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n as i64), _mm256_setr_epi64x(0, 1, 2, 3));
        _mm256_maskstore_pd(p, m, self.0)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        V256d(_mm256_add_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        V256d(_mm256_mul_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self {
        V256d(if FUSED { _mm256_fmadd_pd(w.0, z.0, self.0) } else { _mm256_add_pd(self.0, _mm256_mul_pd(w.0, z.0)) })
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        V256d(_mm256_xor_pd(self.0, _mm256_set1_pd(-0.0)))
    }
    #[inline(always)]
    unsafe fn lane(self, j: usize) -> Self {
        // the two f32 halves of f64 lane j, in every lane
        let (lo, hi) = (2 * j as i32, 2 * j as i32 + 1);
        let idx = _mm256_setr_epi32(lo, hi, lo, hi, lo, hi, lo, hi);
        V256d(_mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(self.0), idx)))
    }
    #[inline(always)]
    unsafe fn act(self, a: Activation) -> Self {
        let mut one = [[self]];
        Self::act_gates::<1, 1>(&mut one, a, a, 1);
        one[0][0]
    }
    #[inline(always)]
    unsafe fn act_gates<const Q: usize, const G: usize>(a: &mut [[Self; Q]; G], gate: Activation, candidate: Activation, cand: usize) {
        act_gates_f64(a, gate, candidate, cand)
    }
}

// (functions, not closures: a closure would not inherit the caller's target features, and
// its intrinsics would become calls)

/// The lanes where v > c (false for NaN).
#[inline(always)]
unsafe fn gt512(v: __m512, c: __m512) -> __mmask16 {
    _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, c)
}

/// All ones in the lanes where v > c (none for NaN).
#[inline(always)]
unsafe fn gt256(v: __m256, c: __m256) -> __m256 {
    _mm256_cmp_ps::<_CMP_GT_OQ>(v, c)
}
