//! Rounding f32 lanes to the half formats' grids, 16 lanes at a time (AVX-512): the vector
//! forms of `lanes::round_bf16_in_f32` and `lanes::round_f16_in_f32` (same bits; tested
//! against them). Used by the tile kernel after every operation and by the activations.
//! Callers must be compiled with (at least) `avx512f`. Also the mask of a partial vector
//! ([`first_lanes`]), which the 16-lane loops share.

use std::arch::x86_64::*;

/// The mask of the first `m` of 16 lanes (all of them when m ≥ 16): a loop's last, partial
/// vector.
#[inline(always)]
pub fn first_lanes(m: usize) -> __mmask16 {
    if m >= 16 { 0xffff } else { (1u16 << m) - 1 }
}

/// f32 → the bf16 grid: round to nearest even on the top 16 bits, NaN kept.
///
/// # Safety
/// The CPU must have AVX-512F (the caller is compiled with it enabled).
#[inline(always)]
pub unsafe fn round_bf16(x: __m512) -> __m512 {
    let b = _mm512_castps_si512(x);
    let odd = _mm512_and_si512(_mm512_srli_epi32::<16>(b), _mm512_set1_epi32(1));
    let r = _mm512_and_si512(_mm512_add_epi32(b, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), _mm512_set1_epi32(0xffff_0000u32 as i32));
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    _mm512_mask_blend_ps(nan, _mm512_castsi512_ps(r), x)
}

/// f32 → the binary16 grid: the hardware conversion to binary16 and back (`vcvtps2ph`
/// with round-to-nearest-even, then `vcvtph2ps`, exact): subnormals kept, ±inf above 65504
/// after rounding, as IEEE conversion defines; NaN kept as x (the conversion would quieten
/// it and drop the low payload bits). Two instructions and a blend, where the bit rounding
/// of `lanes::round_f16_in_f32` takes about fourteen.
///
/// # Safety
/// As [`round_bf16`].
#[inline(always)]
pub unsafe fn round_f16(x: __m512) -> __m512 {
    let r = _mm512_cvtph_ps(_mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x));
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    _mm512_mask_blend_ps(nan, r, x)
}

/// `round_f16` or `round_bf16` (`BF`) over a slice, in place, the last partial vector masked.
///
/// # Safety
/// As [`round_bf16`].
#[inline(always)]
pub unsafe fn round_slice<const BF: bool>(v: &mut [f32]) {
    let (n, p) = (v.len(), v.as_mut_ptr());
    let mut i = 0;
    while i < n {
        let m = first_lanes(n - i);
        let x = _mm512_maskz_loadu_ps(m, p.add(i));
        _mm512_mask_storeu_ps(p.add(i), m, if BF { round_bf16(x) } else { round_f16(x) });
        i += 16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::lanes::{round_bf16_in_f32, round_f16_in_f32};

    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    unsafe fn both(xs: &[f32; 16]) -> ([f32; 16], [f32; 16]) {
        let v = _mm512_loadu_ps(xs.as_ptr());
        let (mut h, mut b) = ([0f32; 16], [0f32; 16]);
        _mm512_storeu_ps(h.as_mut_ptr(), round_f16(v));
        _mm512_storeu_ps(b.as_mut_ptr(), round_bf16(v));
        (h, b)
    }

    #[test]
    fn vector_roundings_equal_the_scalar_ones() {
        if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") && is_x86_feature_detected!("avx512dq")) {
            return;
        }
        let mut s = 0x1234_5678_9abc_def0u64;
        for i in 0..200_000u32 {
            let mut xs = [0f32; 16];
            for x in xs.iter_mut() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let bits = (s >> 32) as u32;
                *x = f32::from_bits(if i % 2 == 0 { bits } else { (bits & 0x87ff_ffff) | 0x3000_0000 });
            }
            // SAFETY: the features were checked above.
            let (h, b) = unsafe { both(&xs) };
            for j in 0..16 {
                let (wh, wb) = (round_f16_in_f32(xs[j]), round_bf16_in_f32(xs[j]));
                assert!(h[j].to_bits() == wh.to_bits() || (h[j].is_nan() && wh.is_nan()), "f16 {:e}", xs[j]);
                assert!(b[j].to_bits() == wb.to_bits() || (b[j].is_nan() && wb.is_nan()), "bf16 {:e}", xs[j]);
            }
        }
    }
}
