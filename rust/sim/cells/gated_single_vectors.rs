//! The f32 vectors the single-sequence kernel (`gated_single`) is written over: 16 lanes
//! with AVX-512 (`V512`), 8 with AVX2 + FMA (`V256`). The kernel is one generic body; each
//! operation here is one IEEE operation per lane (or the exact activations of
//! `activation_avx512` / `activation_avx2`), so both widths give the same bits.
//!
//! Every method is `#[inline(always)]` and has no target features of its own: it is
//! compiled into the kernel's entry point, which enables the features of its width.

use crate::net::activation::Activation;
use crate::sim::approx_activation::x86::{apply256, apply512};
use crate::sim::ziv::Func;
use crate::sim::fast_sigmoid::Sigmoid;
use crate::sim::fast_tanh::Tanh;
use std::arch::x86_64::*;

/// A vector of f32 lanes.
pub(super) trait Vector: Copy {
    const LANES: usize;
    unsafe fn zero() -> Self;
    unsafe fn splat(x: f32) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn store(self, p: *mut f32);
    /// Stores the first n lanes (n ≤ LANES).
    unsafe fn store_first(self, p: *mut f32, n: usize);
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    /// round(self·w + acc), one rounding.
    unsafe fn fmadd(self, w: Self, acc: Self) -> Self;
    /// −self (the sign bit flipped).
    unsafe fn neg(self) -> Self;
    /// Lane j of self in every lane (j < LANES), from the register: no store and reload.
    unsafe fn lane(self, j: usize) -> Self;
    /// `a` on every lane, as `float_batch::activate` on each.
    unsafe fn act(self, a: Activation) -> Self;
}

/// 16 lanes, AVX-512 F/VL/DQ + FMA.
#[derive(Clone, Copy)]
pub(super) struct V512(__m512);

/// 8 lanes, AVX2 + FMA.
#[derive(Clone, Copy)]
pub(super) struct V256(__m256);

impl Vector for V512 {
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V512(_mm512_setzero_ps())
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        V512(_mm512_set1_ps(x))
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
    unsafe fn fmadd(self, w: Self, acc: Self) -> Self {
        V512(_mm512_fmadd_ps(self.0, w.0, acc.0))
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
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V256(_mm256_setzero_ps())
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        V256(_mm256_set1_ps(x))
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
        // lane j is stored where its mask's sign bit is set: j < n
        let m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n.min(8) as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        _mm256_maskstore_ps(p, m, self.0)
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
    unsafe fn fmadd(self, w: Self, acc: Self) -> Self {
        V256(_mm256_fmadd_ps(self.0, w.0, acc.0))
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
