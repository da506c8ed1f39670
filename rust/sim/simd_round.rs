//! Rounding f32 lanes to the half formats' grids: the vector forms of
//! `lanes::round_bf16_in_f32` and `lanes::round_f16_in_f32` (same bits; tested against them),
//! 16 lanes at a time with AVX-512 and 8 at a time with AVX2 + F16C (the `_8` functions).
//! Used by the tile kernels after every operation and by the gated cells' elementwise step.
//! Callers must be compiled with (at least) `avx512f`, or `avx2,f16c` for the `_8` ones.
//! Also the masks of a partial vector ([`first_lanes`], [`first_lanes_8`]) and AVX2's
//! loads and stores of one ([`load_first_8`], [`store_first_8`]).

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
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    _mm512_mask_blend_ps(nan, round_bf16_grid(x), x)
}

/// [`round_bf16`] without the NaN blend, for results of operations on bf16 values (the
/// AVX-512 tiles, the gated cells' loops and batch-1 kernel): such a NaN is the default
/// NaN or a quietened operand, whose low 16 bits are zero, and the integer rounding keeps
/// those bits (as [`round_bf16_8_grid`]).
///
/// # Safety
/// As [`round_bf16`].
#[inline(always)]
pub unsafe fn round_bf16_grid(x: __m512) -> __m512 {
    let b = _mm512_castps_si512(x);
    let odd = _mm512_and_si512(_mm512_srli_epi32::<16>(b), _mm512_set1_epi32(1));
    _mm512_castsi512_ps(_mm512_and_si512(_mm512_add_epi32(b, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), _mm512_set1_epi32(0xffff_0000u32 as i32)))
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
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    _mm512_mask_blend_ps(nan, round_f16_grid(x), x)
}

/// [`round_f16`] without the NaN blend, for results of operations on binary16 values (the
/// AVX-512 tiles, the gated cells' loops): such a NaN is the default NaN or a quietened
/// operand, with its low 13 bits zero, which the conversion to binary16 and back keeps
/// (as [`round_f16_8_grid`]).
///
/// # Safety
/// As [`round_bf16`].
#[inline(always)]
pub unsafe fn round_f16_grid(x: __m512) -> __m512 {
    _mm512_cvtph_ps(_mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x))
}

/// [`round_f16`] (x to the binary16 grid, NaN kept) sooner: a batch-1 tick waits
/// for each rounding in turn, and the conversion to binary16 and back takes ~14 cycles
/// where 4 integer operations on x's bits do ([`round_f16_normal`]). The other lanes
/// (zeros, subnormal results, overflows to ±inf, infinities, NaNs) are `round_f16`'s, in a
/// branch that is rarely taken (one range test, off the lanes' dependent chain). For the
/// batch-1 kernel of f16 with f32 sums (`gated_single_vectors::V512h`).
///
/// # Safety
/// As [`round_bf16`].
#[inline(always)]
pub unsafe fn round_f16_soon(x: __m512) -> __m512 {
    let (r, other) = round_f16_normal(x);
    if other == 0 {
        r
    } else {
        _mm512_mask_blend_ps(other, r, round_f16(x))
    }
}

/// x rounded to binary16 on its bits: to nearest even at bit 13 (add 0xfff and the kept
/// part's last bit, clear the 13 bits; a carry moves into the exponent as it should). That
/// is the binary16 rounding where its result is a normal binary16 value: |x| in
/// [2^−14, 65520). Also the mask of the other lanes (zeros, subnormal results, overflows,
/// infinities, NaNs), where it is not. Four integer operations of latency
/// ([`round_f16_soon`]; `half_tables::apply_rounding` used it in session 48 and converts since 49).
///
/// # Safety
/// As [`round_bf16`].
#[inline(always)]
pub unsafe fn round_f16_normal(x: __m512) -> (__m512, __mmask16) {
    let b = _mm512_castps_si512(x);
    let odd = _mm512_and_si512(_mm512_srli_epi32::<13>(b), _mm512_set1_epi32(1));
    let r = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0xfff)), odd), _mm512_set1_epi32(!0x1fff));
    // |x| − 2^−14 ≥ 65520 − 2^−14 as unsigned bits: outside [2^−14, 65520)
    const LO: i32 = 0x3880_0000;
    const HI: i32 = 0x477f_f000;
    let abs = _mm512_and_si512(b, _mm512_set1_epi32(i32::MAX));
    let other = _mm512_cmpge_epu32_mask(_mm512_sub_epi32(abs, _mm512_set1_epi32(LO)), _mm512_set1_epi32(HI - LO));
    (_mm512_castsi512_ps(r), other)
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

/// The mask of the first `m` of 8 lanes (all of them when m ≥ 8), for `vmaskmovps`.
///
/// # Safety
/// The CPU must have AVX (the caller is compiled with it enabled).
#[inline(always)]
pub unsafe fn first_lanes_8(m: usize) -> __m256i {
    let m = m.min(8) as i32;
    _mm256_cmpgt_epi32(_mm256_set1_epi32(m), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
}

/// The first `n` of the 8 f32 values at `p` (all 8 when n ≥ 8), zeros in the other lanes.
/// A whole vector is a plain load, a partial one `vmaskmovps`, which reads nothing past
/// lane n − 1. The one place AVX2's loops split whole vectors from the last.
///
/// # Safety
/// The CPU must have AVX (the caller is compiled with it enabled); p[..min(n, 8)] readable.
#[inline(always)]
pub unsafe fn load_first_8(p: *const f32, n: usize) -> __m256 {
    if n >= 8 {
        _mm256_loadu_ps(p)
    } else {
        _mm256_maskload_ps(p, first_lanes_8(n))
    }
}

/// Stores the first `n` lanes of `v` at `p` (all 8 when n ≥ 8); memory past lane n − 1 is
/// not touched. A whole vector is a plain store: `vmaskmovps` to memory is slow on AMD's
/// cores (a loop of table lookups with it on every vector ran 1.42 ns per value against
/// 0.63 with plain stores on Zen 3, session 52).
///
/// # Safety
/// As [`load_first_8`], p[..min(n, 8)] writable.
#[inline(always)]
pub unsafe fn store_first_8(p: *mut f32, n: usize, v: __m256) {
    if n >= 8 {
        _mm256_storeu_ps(p, v)
    } else {
        _mm256_maskstore_ps(p, first_lanes_8(n), v)
    }
}

/// [`round_bf16`] on 8 lanes: the same integer rounding of the top 16 bits, NaN kept.
///
/// # Safety
/// The CPU must have AVX2 (the caller is compiled with it enabled).
#[inline(always)]
pub unsafe fn round_bf16_8(x: __m256) -> __m256 {
    _mm256_blendv_ps(round_bf16_8_grid(x), x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
}

/// [`round_f16`] on 8 lanes: F16C's `vcvtps2ph` (to nearest even) and `vcvtph2ps`, NaN kept.
///
/// # Safety
/// The CPU must have AVX and F16C (the caller is compiled with them enabled).
#[inline(always)]
pub unsafe fn round_f16_8(x: __m256) -> __m256 {
    _mm256_blendv_ps(round_f16_8_grid(x), x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
}

/// [`round_bf16_8`] without the NaN blend, for results of operations on bf16 values: such a
/// NaN is the default NaN or a quietened operand, whose low 16 bits are zero, and the integer
/// rounding keeps those bits (the same result as `round_bf16_8`'s blend).
///
/// # Safety
/// As [`round_bf16_8`].
#[inline(always)]
pub unsafe fn round_bf16_8_grid(x: __m256) -> __m256 {
    let b = _mm256_castps_si256(x);
    let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(b), _mm256_set1_epi32(1));
    let r = _mm256_and_si256(_mm256_add_epi32(b, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), _mm256_set1_epi32(0xffff_0000u32 as i32));
    _mm256_castsi256_ps(r)
}

/// [`round_f16_8`] without the NaN blend, for results of operations on binary16 values:
/// such a NaN is the default NaN or a quietened operand, with its low 13 bits zero, which
/// the conversion to binary16 and back keeps (sign and payload).
///
/// # Safety
/// As [`round_f16_8`].
#[inline(always)]
pub unsafe fn round_f16_8_grid(x: __m256) -> __m256 {
    _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x))
}

/// [`round_slice`] on 8 lanes (AVX2 + F16C), the last partial vector masked.
///
/// # Safety
/// As [`round_bf16_8`] and [`round_f16_8`].
#[inline(always)]
pub unsafe fn round_slice_8<const BF: bool>(v: &mut [f32]) {
    let (n, p) = (v.len(), v.as_mut_ptr());
    let mut i = 0;
    while i < n {
        let x = load_first_8(p.add(i), n - i);
        store_first_8(p.add(i), n - i, if BF { round_bf16_8(x) } else { round_f16_8(x) });
        i += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::lanes::{round_bf16_in_f32, round_f16_in_f32};

    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    unsafe fn both(xs: &[f32; 16]) -> ([f32; 16], [f32; 16], [f32; 16]) {
        let v = _mm512_loadu_ps(xs.as_ptr());
        let (mut h, mut b, mut soon) = ([0f32; 16], [0f32; 16], [0f32; 16]);
        _mm512_storeu_ps(h.as_mut_ptr(), round_f16(v));
        _mm512_storeu_ps(b.as_mut_ptr(), round_bf16(v));
        _mm512_storeu_ps(soon.as_mut_ptr(), round_f16_soon(v));
        (h, b, soon)
    }

    #[target_feature(enable = "avx2,avx,f16c")]
    unsafe fn both_8(xs: &[f32; 16]) -> ([f32; 16], [f32; 16]) {
        let (mut h, mut b) = (*xs, *xs);
        // a slice of 13: one whole vector and a masked tail of 5 (the rest untouched)
        round_slice_8::<false>(&mut h[..13]);
        round_slice_8::<true>(&mut b[..13]);
        (h, b)
    }

    #[test]
    fn vector_roundings_of_8_lanes_equal_the_scalar_ones() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")) {
            return;
        }
        let mut rng = crate::machine::random::SplitMix64(0x8_1a2e5);
        let specials = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 65504.0, 65520.0, 65519.996, 6e-8, 2.9802322e-8, -1e-40, f32::MAX, f32::from_bits(0x7f7f_8000), f32::from_bits(0x0000_8000), f32::from_bits(0x0001_8000)];
        for i in 0..200_000u32 {
            let mut xs = [0f32; 16];
            for (j, x) in xs.iter_mut().enumerate() {
                let bits = (rng.next_u64() >> 32) as u32;
                *x = match (i + j as u32) % 3 {
                    0 => f32::from_bits(bits),
                    1 => f32::from_bits((bits & 0x87ff_ffff) | 0x3000_0000),
                    _ => specials[bits as usize % specials.len()],
                };
            }
            // SAFETY: the features were checked above.
            let (h, b) = unsafe { both_8(&xs) };
            for j in 0..16 {
                let (wh, wb) = if j < 13 { (round_f16_in_f32(xs[j]), round_bf16_in_f32(xs[j])) } else { (xs[j], xs[j]) };
                assert!(h[j].to_bits() == wh.to_bits() || (h[j].is_nan() && wh.is_nan()), "f16 {:e}", xs[j]);
                assert!(b[j].to_bits() == wb.to_bits() || (b[j].is_nan() && wb.is_nan()), "bf16 {:e}", xs[j]);
            }
        }
    }

    /// load_first_8 then store_first_8 of n lanes from src into dst (both 9 values wide).
    #[target_feature(enable = "avx2,avx")]
    unsafe fn first_8(src: &[f32; 9], dst: &mut [f32; 9], n: usize) -> [f32; 8] {
        let v = load_first_8(src.as_ptr(), n);
        store_first_8(dst.as_mut_ptr(), n, v);
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), v);
        lanes
    }

    #[test]
    fn first_lanes_load_and_store_touch_n_values_only() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let src: [f32; 9] = std::array::from_fn(|j| j as f32 + 1.0);
        for n in 0..=9 {
            let mut dst = [-1f32; 9];
            // SAFETY: AVX2 was checked above; both arrays hold 9 ≥ min(n, 8) values.
            let lanes = unsafe { first_8(&src, &mut dst, n) };
            for j in 0..8 {
                assert_eq!(lanes[j], if j < n { src[j] } else { 0.0 }, "lane {j} of {n}");
            }
            for j in 0..9 {
                assert_eq!(dst[j], if j < n.min(8) { src[j] } else { -1.0 }, "value {j} of {n}");
            }
        }
    }

    #[target_feature(enable = "avx2,avx,f16c")]
    unsafe fn grid_and_blend_8(x: [f32; 8]) -> [[u32; 8]; 4] {
        let v = _mm256_loadu_ps(x.as_ptr());
        let mut out = [[0u32; 8]; 4];
        for (o, r) in out.iter_mut().zip([round_bf16_8_grid(v), round_bf16_8(v), round_f16_8_grid(v), round_f16_8(v)]) {
            _mm256_storeu_ps(o.as_mut_ptr().cast(), r);
        }
        out
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    unsafe fn grid_and_blend_16(x: [f32; 8]) -> [[u32; 8]; 4] {
        let v = _mm512_castps256_ps512(_mm256_loadu_ps(x.as_ptr()));
        let mut out = [[0u32; 8]; 4];
        for (o, r) in out.iter_mut().zip([round_bf16_grid(v), round_bf16(v), round_f16_grid(v), round_f16(v)]) {
            _mm256_storeu_ps(o.as_mut_ptr().cast(), _mm512_castps512_ps256(r));
        }
        out
    }

    /// The tiles' and the cells' roundings without the NaN blend (8 and 16 lanes) give the
    /// blended roundings' bits for the NaNs that operations on half values produce: the
    /// default NaN, and operands' NaNs quietened (half NaNs widened to f32, their low 16 or
    /// 13 bits zero), either sign: both as written here and as sums, products, differences
    /// and FMAs of values of the format (±∞, ±0, 1.5, its NaNs, signalling ones too)
    /// return them at run time.
    #[test]
    fn grid_roundings_keep_the_nans_of_half_arithmetic() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")) {
            return;
        }
        let wide = is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") && is_x86_feature_detected!("avx512dq");
        let bf = [0xffc0_0000u32, 0x7fc0_0000, 0x7fc1_0000, 0xffff_0000, 0x7fe5_0000, 0x7f81_0000, 0xff81_0000];
        let h = [0xffc0_0000u32, 0x7fc0_0000, 0x7fc0_2000, 0xffff_e000, 0x7fd5_6000, 0x7f80_2000, 0xff81_e000];
        // the NaNs of operations on values of the format, its NaNs among them (signalling
        // ones too: the operation quietens them), computed by the hardware
        let results = |set: &[u32]| -> Vec<f32> {
            let mut v: Vec<f32> = vec![f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.5];
            v.extend(set.iter().map(|&b| f32::from_bits(b)));
            let mut out = Vec::new();
            for &a in &v {
                for &b in &v {
                    // (black_box: computed at run time, not folded by the compiler)
                    let (a, b, c) = (std::hint::black_box(a), std::hint::black_box(b), std::hint::black_box(1.5f32));
                    let ops = [a + b, a * b, a - b, b - a, a.mul_add(b, c), c.mul_add(a, b), a.mul_add(c, b)];
                    out.extend(ops.into_iter().filter(|r| r.is_nan()));
                }
            }
            out
        };
        for (i, set) in [bf, h].iter().enumerate() {
            let mut x = [1.5f32; 8];
            for (j, &b) in set.iter().enumerate() {
                // a quietened NaN: the operation sets the quiet bit (22)
                x[j] = f32::from_bits(b | 0x0040_0000);
            }
            let made = results(set);
            assert!(made.len() > 100, "{} NaN results", made.len());
            for chunk in made.chunks(8) {
                let mut y = [1.5f32; 8];
                y[..chunk.len()].copy_from_slice(chunk);
                // SAFETY: the features were checked above.
                let out = unsafe { grid_and_blend_8(y) };
                assert_eq!(out[2 * i], out[2 * i + 1], "{} of {:x?}", if i == 0 { "bf16" } else { "f16" }, y.map(f32::to_bits));
                if wide {
                    // SAFETY: as above (`wide`).
                    let out = unsafe { grid_and_blend_16(y) };
                    assert_eq!(out[2 * i], out[2 * i + 1], "{} of {:x?} (16 lanes)", if i == 0 { "bf16" } else { "f16" }, y.map(f32::to_bits));
                }
            }
            // SAFETY: the features were checked above.
            let out = unsafe { grid_and_blend_8(x) };
            assert_eq!(out[2 * i], out[2 * i + 1], "{}", if i == 0 { "bf16" } else { "f16" });
            if wide {
                // SAFETY: as above (`wide`).
                let out = unsafe { grid_and_blend_16(x) };
                assert_eq!(out[2 * i], out[2 * i + 1], "{} (16 lanes)", if i == 0 { "bf16" } else { "f16" });
            }
        }
    }

    #[test]
    fn vector_roundings_equal_the_scalar_ones() {
        if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") && is_x86_feature_detected!("avx512dq")) {
            return;
        }
        let mut s = 0x1234_5678_9abc_def0u64;
        // the ends of `round_f16_soon`'s range: 2^−14 and 65520 (a tie that rounds to
        // +inf) and the f32s beside them, ±
        let edges = [0x3880_0000u32, 0x4780_0000 - 0x1000, 0x477f_e000, 0x0000_0001, 0x7f80_0000, 0x7fc0_0001, 0x7f80_0001, 0];
        for i in 0..200_000u32 {
            let mut xs = [0f32; 16];
            for (j, x) in xs.iter_mut().enumerate() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let bits = (s >> 32) as u32;
                let edge = edges[(bits >> 8) as usize % edges.len()].wrapping_add(bits & 0xff).wrapping_sub(0x80) | (bits & 0x8000_0000);
                *x = f32::from_bits(match (i as usize + j) % 3 {
                    0 => bits,
                    1 => (bits & 0x87ff_ffff) | 0x3000_0000,
                    _ => edge,
                });
            }
            // SAFETY: the features were checked above.
            let (h, b, soon) = unsafe { both(&xs) };
            for j in 0..16 {
                let (wh, wb) = (round_f16_in_f32(xs[j]), round_bf16_in_f32(xs[j]));
                assert!(h[j].to_bits() == wh.to_bits() || (h[j].is_nan() && wh.is_nan()), "f16 {:e}", xs[j]);
                assert!(soon[j].to_bits() == wh.to_bits() || (soon[j].is_nan() && wh.is_nan()), "f16 soon {:e} ({:#x})", xs[j], xs[j].to_bits());
                assert!(b[j].to_bits() == wb.to_bits() || (b[j].is_nan() && wb.is_nan()), "bf16 {:e}", xs[j]);
            }
        }
    }
}
