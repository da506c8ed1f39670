//! The register kernels' vector of f16 in its own arithmetic (`dtype="f16"`, the format's
//! own sums) on CPUs with AVX512-FP16: 16 binary16 lanes in a 256-bit register (`V256ph`),
//! every operation one native instruction (`vaddph`, `vmulph`, `vfmadd231ph`: IEEE binary16
//! rounded to nearest even, subnormals kept, as `tile_f16`, so the same bits as the f32-lane
//! rounding of `lanes::LaneFormat for f16` and as the per-sequence engine), tanh/σ one gather
//! from the f16 tables (`half_tables`; the index is the lane's 16 bits, zero-extended).
//!
//! Memory holds the binary16 bits (`u16`): the packed weights, and the rows the kernels
//! read and write; `gated_batch` and `rnn_single` convert the block's f32 lanes (which hold
//! f16 values, so both conversions are exact) at the kernels' edges.
//!
//! The f16 intrinsics are unstable in Rust 1.95, so the three arithmetic instructions are
//! one-line `asm!` blocks on `__m256i` registers (as `tile_f16`); everything else is stable
//! AVX-512 F/VL/BW and F16C.

use super::vectors::{Vector, V512};
use crate::net::activation::Activation;
use crate::num::round::BinaryFormat;
use crate::sim::ziv::Func;
use std::arch::asm;
use std::arch::x86_64::*;

/// 16 binary16 lanes (AVX512-FP16 with VL).
#[derive(Clone, Copy)]
pub(crate) struct V256ph(__m256i);

impl V256ph {
    /// The lanes as f32 (exact).
    #[inline(always)]
    pub(crate) unsafe fn wide(self) -> __m512 {
        _mm512_cvtph_ps(self.0)
    }
    /// f32 lanes holding f16 values, as binary16 (exact).
    #[inline(always)]
    pub(crate) unsafe fn narrow(x: __m512) -> Self {
        V256ph(_mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x))
    }
    /// `func` of every lane from its f16 table.
    #[inline(always)]
    unsafe fn looked_up(self, func: Func) -> Self {
        Self::narrow(crate::sim::half_tables::gather16(func, BinaryFormat::F16, _mm512_cvtepu16_epi32(self.0)))
    }
}

impl Vector for V256ph {
    type E = u16;
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> Self {
        V256ph(_mm256_setzero_si256())
    }
    #[inline(always)]
    unsafe fn splat_from(p: *const u16) -> Self {
        V256ph(_mm256_set1_epi16(*p as i16))
    }
    #[inline(always)]
    unsafe fn load(p: *const u16) -> Self {
        V256ph(_mm256_loadu_si256(p.cast()))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u16) {
        _mm256_storeu_si256(p.cast(), self.0)
    }
    #[inline(always)]
    unsafe fn store_first(self, p: *mut u16, n: usize) {
        _mm256_mask_storeu_epi16(p.cast(), crate::sim::simd_round::first_lanes(n), self.0)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        V256ph(vaddph(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        V256ph(vmulph(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sum_step<const FUSED: bool>(self, w: Self, z: Self) -> Self {
        V256ph(if FUSED { vfmadd231ph(self.0, w.0, z.0) } else { vaddph(self.0, vmulph(w.0, z.0)) })
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        V256ph(_mm256_xor_si256(self.0, _mm256_set1_epi16(i16::MIN)))
    }
    #[inline(always)]
    unsafe fn lane(self, j: usize) -> Self {
        V256ph(_mm256_permutexvar_epi16(_mm256_set1_epi16(j as i16), self.0))
    }
    /// tanh/σ from the tables; every other activation maps an f16 value to itself, 0, ±1 or
    /// ½: f32's on the exact f32 values, converted back exactly. (The approximate ones are
    /// f32's only: the packers refuse them here.)
    #[inline(always)]
    unsafe fn act(self, a: Activation) -> Self {
        match a {
            Activation::Tanh => self.looked_up(Func::Tanh),
            Activation::Sigmoid => self.looked_up(Func::Sigmoid),
            Activation::Identity => self,
            _ => Self::narrow(V512::from_raw(self.wide()).act(a).raw()),
        }
    }
}

/// z_k read from f32 memory holding f16 values (a SimpleRNN tick's x_t in the block's f32
/// lanes), converted (exact) and broadcast to the 16 lanes.
pub(crate) struct F32Inputs(pub(crate) *const f32);

impl super::x86::Source<V256ph> for F32Inputs {
    #[inline(always)]
    unsafe fn at(&self, k: usize) -> V256ph {
        let h = _mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm_load_ss(self.0.add(k)));
        V256ph(_mm256_broadcastw_epi16(h))
    }
}

// The instructions (inlined into the kernels, which have the same target features).

#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512fp16")]
unsafe fn vaddph(a: __m256i, b: __m256i) -> __m256i {
    let r: __m256i;
    // SAFETY: register-only arithmetic on a CPU with avx512fp16 (the target feature).
    asm!("vaddph {r}, {a}, {b}", r = lateout(ymm_reg) r, a = in(ymm_reg) a, b = in(ymm_reg) b, options(pure, nomem, nostack, preserves_flags));
    r
}

#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512fp16")]
unsafe fn vmulph(a: __m256i, b: __m256i) -> __m256i {
    let r: __m256i;
    // SAFETY: as for vaddph.
    asm!("vmulph {r}, {a}, {b}", r = lateout(ymm_reg) r, a = in(ymm_reg) a, b = in(ymm_reg) b, options(pure, nomem, nostack, preserves_flags));
    r
}

/// acc + w·z rounded once to binary16.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512fp16")]
unsafe fn vfmadd231ph(acc: __m256i, w: __m256i, z: __m256i) -> __m256i {
    let mut r = acc;
    // SAFETY: as for vaddph; r = w·z + r.
    asm!("vfmadd231ph {r}, {w}, {z}", r = inout(ymm_reg) r, w = in(ymm_reg) w, z = in(ymm_reg) z, options(pure, nomem, nostack, preserves_flags));
    r
}

/// Whether this CPU runs `V256ph` (AVX512-FP16 with BW, and F16C).
pub fn available() -> bool {
    crate::sim::cpu::avx512_fp16() && crate::sim::cpu::avx512_f16c()
}
