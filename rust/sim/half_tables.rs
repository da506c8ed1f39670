//! tanh and σ of the half formats (f16, bf16) by table lookup, exact by construction.
//!
//! A lane of a half format holds a value of the format (every pre-activation is rounded to
//! it, or is an f32 sum that the index rounds, below), so the input is one of 2^16 bit
//! patterns, and the documented result
//! round_F(D(x)) (`num::float::Float::tanh` / `sigmoid`: D the correctly rounded f64 value,
//! rounded once to F) is tabulated for all of them from that definition itself: one table per
//! (function, format), 65536 f32 values (256 KiB), built on first use (65536 evaluations
//! of D, a few milliseconds). A lookup is an index (bf16: the lane's top 16 bits; f16: the
//! binary16 bits, `vcvtps2ph`, exact on the grid) and a load: with AVX-512, 16 lanes per
//! gather (AVX2: 8), several times faster than evaluating D's approximation and deciding its rounding
//! (`ziv`), which is what the f32 lanes still do.
//!
//! A half format's f32 sums, not on its grid, take [`apply_rounding`]: the entry of R(x),
//! x rounded to the format (to nearest even), whose bits are the index: f16's conversion
//! rounds already, bf16's index is its rounding in registers (a few integer operations per
//! vector, which slowed the gathers of values on the grid by a fifth when `apply` made
//! them too: session 45). The pass that would round the sums first is then not made
//! (`float_batch::unrounded_sums`).
//!
//! NaN lanes: arithmetic NaNs are quiet (bit 22 set), so their top 16 bits are a bf16 NaN
//! and `vcvtps2ph` gives a binary16 NaN; the table holds NaN there. (`apply_rounding`
//! quietens a bf16 NaN's index, so a signalling one does not read as ±∞ either.)

use crate::num::float::Float;
use crate::num::round::BinaryFormat;
use crate::sim::ziv::Func;
use half::{bf16, f16};
use std::sync::OnceLock;

/// Entries per table (every 16-bit pattern).
const SIZE: usize = 1 << 16;

/// The table of `func` in `fmt` (f16 or bf16): entry i = round_F(D(the value with bits i))
/// as an f32.
pub(crate) fn table(func: Func, fmt: BinaryFormat) -> &'static [f32] {
    static TABLES: [OnceLock<Box<[f32]>>; 4] = [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let bf = fmt == BinaryFormat::BF16;
    debug_assert!(bf || fmt == BinaryFormat::F16, "half tables exist for f16 and bf16 only");
    let slot = usize::from(func == Func::Sigmoid) * 2 + usize::from(bf);
    TABLES[slot].get_or_init(|| (0..SIZE).map(|i| definition(func, bf, value(i as u16, bf))).collect())
}

/// The value of the format (bf16 or f16) with 16-bit pattern `bits`, as an f32: entry
/// `bits` of a table is the function of it.
pub(crate) fn value(bits: u16, bf: bool) -> f32 {
    if bf { bf16::from_bits(bits).to_f32() } else { f16::from_bits(bits).to_f32() }
}

/// f16's table of `func` as binary16 bits (entry i: the bits of `table`'s entry i, an f16
/// value: exact), 128 KiB where the f32 table takes 256, and one entry of padding: a 32-bit
/// gather at 2·i reads entries i and i + 1 (`gather_bits_only_avx512`).
fn table_bits(func: Func) -> &'static [u16] {
    static TABLES: [OnceLock<Box<[u16]>>; 2] = [OnceLock::new(), OnceLock::new()];
    TABLES[usize::from(func == Func::Sigmoid)].get_or_init(|| table(func, BinaryFormat::F16).iter().map(|&v| f16::from_f32(v).to_bits()).chain([0]).collect())
}

/// The documented result for a lane value x of the format: `Float::tanh` / `Float::sigmoid`
/// of f16 or bf16 (round_F of the correctly rounded f64 value), as an f32.
fn definition(func: Func, bf: bool, x: f32) -> f32 {
    match (func, bf) {
        (Func::Tanh, false) => Float::tanh(f16::from_f32(x)).to_f32(),
        (Func::Sigmoid, false) => Float::sigmoid(f16::from_f32(x)).to_f32(),
        (Func::Tanh, true) => Float::tanh(bf16::from_f32(x)).to_f32(),
        (Func::Sigmoid, true) => Float::sigmoid(bf16::from_f32(x)).to_f32(),
    }
}

/// The format's bit pattern of a lane value on its grid.
#[inline(always)]
fn index(x: f32, bf: bool) -> usize {
    if bf { (x.to_bits() >> 16) as usize } else { usize::from(f16::from_f32(x).to_bits()) }
}

/// The format's bit pattern of R(x), x rounded to the format (to nearest even), a NaN's
/// quietened (bf16: bit 22 set, as f16's conversion does; a signalling NaN's top half
/// alone could read as ±∞).
#[inline(always)]
fn index_rounding(x: f32, bf: bool) -> usize {
    if !bf {
        return index(x, bf);
    }
    let r = if x.is_nan() { x.to_bits() | QUIET } else { crate::sim::lanes::round_bf16_in_f32(x).to_bits() };
    (r >> 16) as usize
}

/// f32's quiet-NaN bit.
const QUIET: u32 = 0x0040_0000;

/// `index_rounding` of bf16 on 16 lanes.
///
/// # Safety
/// The caller is compiled with AVX-512F.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn bf16_index_16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    let rounded = _mm512_castps_si512(crate::sim::simd_round::round_bf16_grid(x));
    let quiet = _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(QUIET as i32));
    _mm512_srli_epi32::<16>(_mm512_mask_blend_epi32(nan, rounded, quiet))
}

/// `index_rounding` of bf16 on 8 lanes.
///
/// # Safety
/// The caller is compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn bf16_index_8(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
    let rounded = _mm256_castps_si256(crate::sim::simd_round::round_bf16_8_grid(x));
    let quiet = _mm256_or_si256(_mm256_castps_si256(x), _mm256_set1_epi32(QUIET as i32));
    _mm256_srli_epi32::<16>(_mm256_blendv_epi8(rounded, quiet, nan))
}

/// `func` of one lane value of `fmt` (f16 or bf16), as an f32 holding the result.
#[inline]
pub fn one(func: Func, fmt: BinaryFormat, x: f32) -> f32 {
    table(func, fmt)[index(x, fmt == BinaryFormat::BF16)]
}

/// `func` over lane values of `fmt`, in place: with AVX-512 each vector by `half_segments`
/// (polynomials checked against this table on every value), the few lanes they leave read
/// from the table (`gather_avx512`); with AVX2 by gathers.
pub fn apply(func: Func, fmt: BinaryFormat, xs: &mut [f32]) {
    apply_with::<false>(func, fmt, xs)
}

/// `func` of R(x) for every x of `xs`, x rounded to `fmt` (a half format's f32 sums), in
/// place: `apply` of the rounded values, without a rounding pass.
pub fn apply_rounding(func: Func, fmt: BinaryFormat, xs: &mut [f32]) {
    apply_with::<true>(func, fmt, xs)
}

fn apply_with<const ROUNDING: bool>(func: Func, fmt: BinaryFormat, xs: &mut [f32]) {
    let t = table(func, fmt);
    let bf = fmt == BinaryFormat::BF16;
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512_f16c() {
        // SAFETY: the CPU has AVX-512F and F16C (checked), the table has 2^16 entries and
        // every index is a 16-bit value.
        return unsafe { gather_avx512::<ROUNDING>(t, crate::sim::half_segments::segments(func, fmt), bf, xs) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_f16c() {
        // SAFETY: the CPU has AVX2 and F16C (checked); the table as above.
        return unsafe { gather_avx2::<ROUNDING>(t, bf, xs) };
    }
    let index = if ROUNDING { index_rounding } else { index };
    xs.iter_mut().for_each(|x| *x = t[index(*x, bf)]);
}

/// `func` of f16 values given as their binary16 bits, which are the table's index (no
/// conversion): dst[r·ld_dst + j] = the table's entry src[r·ld_src + j] for the first `d`
/// values of `rows` rows (the native f16 tile's rows, `tile_kernel::affine_binary16`, to
/// the f32 lanes of the states; the other values of dst untouched). With AVX-512 (and BW)
/// 16 values per gather. (A block that keeps its states in binary16 takes
/// [`apply_f16_bits_only`] instead.)
pub fn apply_f16_bits(func: Func, src: &[u16], ld_src: usize, dst: &mut [f32], ld_dst: usize, rows: usize, d: usize) {
    let t = table(func, BinaryFormat::F16);
    assert!(d <= ld_src && d <= ld_dst && (rows == 0 || (src.len() >= (rows - 1) * ld_src + d && dst.len() >= (rows - 1) * ld_dst + d)));
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512_fp16() {
        // SAFETY: the CPU has AVX-512F/BW/VL (checked: the FP16 tier has them); the rows are
        // in bounds (checked above) and every index is a 16-bit value.
        return unsafe { gather_bits_avx512(t, src, ld_src, dst, ld_dst, rows, d) };
    }
    for r in 0..rows {
        for (y, &b) in dst[r * ld_dst..r * ld_dst + d].iter_mut().zip(&src[r * ld_src..r * ld_src + d]) {
            *y = t[usize::from(b)];
        }
    }
}

/// [`apply_f16_bits`] that writes only the results' binary16 bits (row r at r·d of `bits`),
/// no f32 lanes: the f16 SimpleRNN on the native tile keeps its states in binary16 only
/// (`float_batch::run_block`). Looked up in the table of bits ([`table_bits`], half the f32
/// table's size), with AVX-512 16 values per gather.
pub fn apply_f16_bits_only(func: Func, src: &[u16], ld_src: usize, rows: usize, d: usize, bits: &mut [u16]) {
    let t = table_bits(func);
    assert!(d <= ld_src && (rows == 0 || src.len() >= (rows - 1) * ld_src + d) && bits.len() >= rows * d);
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512_fp16() {
        // SAFETY: the CPU has AVX-512F/BW (checked: the FP16 tier has them); the rows are in
        // bounds (checked above), every index is a 16-bit value, and the table has an entry
        // of padding after the last.
        return unsafe { gather_bits_only_avx512(t, src, ld_src, rows, d, bits) };
    }
    for r in 0..rows {
        for (b, &i) in bits[r * d..(r + 1) * d].iter_mut().zip(&src[r * ld_src..r * ld_src + d]) {
            *b = t[usize::from(i)];
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,avx")]
unsafe fn gather_bits_only_avx512(t: &[u16], src: &[u16], ld_src: usize, rows: usize, d: usize, bits: &mut [u16]) {
    use std::arch::x86_64::*;
    debug_assert_eq!(t.len(), SIZE + 1);
    let (sp, bp) = (src.as_ptr(), bits.as_mut_ptr());
    for r in 0..rows {
        let sr = sp.add(r * ld_src);
        let mut i = 0;
        while i < d {
            let live = crate::sim::simd_round::first_lanes((d - i).min(16));
            let idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, sr.add(i).cast()));
            // 32 bits at 2·idx: entry idx in the low half (little-endian), idx + 1 above
            let g = _mm512_mask_i32gather_epi32::<2>(_mm512_setzero_si512(), live, idx, t.as_ptr().cast());
            _mm256_mask_storeu_epi16(bp.add(r * d + i).cast(), live, _mm512_cvtepi32_epi16(g));
            i += 16;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,avx")]
unsafe fn gather_bits_avx512(t: &[f32], src: &[u16], ld_src: usize, dst: &mut [f32], ld_dst: usize, rows: usize, d: usize) {
    use std::arch::x86_64::*;
    debug_assert_eq!(t.len(), SIZE);
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    for r in 0..rows {
        let (sr, dr) = (sp.add(r * ld_src), dp.add(r * ld_dst));
        let mut i = 0;
        while i < d {
            let live = crate::sim::simd_round::first_lanes((d - i).min(16));
            let idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, sr.add(i).cast()));
            let y = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), live, idx, t.as_ptr().cast());
            _mm512_mask_storeu_ps(dr.add(i), live, y);
            i += 16;
        }
    }
}

/// Entries `idx` (16 lanes of 16-bit patterns) of `func`'s table in `fmt`: the register
/// kernels' lookup (`gated_single_vectors::V512h`, `gated_single_f16::V256ph`).
///
/// # Safety
/// The caller is compiled with AVX-512F; every lane of idx is below 2^16.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn gather16(func: Func, fmt: BinaryFormat, idx: std::arch::x86_64::__m512i) -> std::arch::x86_64::__m512 {
    std::arch::x86_64::_mm512_i32gather_ps::<4>(idx, table(func, fmt).as_ptr().cast())
}

/// Entries `idx` (8 lanes of 16-bit patterns) of `func`'s table in `fmt`: [`gather16`] on
/// AVX2 (`gated_single_vectors::V256h`).
///
/// # Safety
/// The caller is compiled with AVX2; every lane of idx is below 2^16.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn gather8(func: Func, fmt: BinaryFormat, idx: std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256 {
    std::arch::x86_64::_mm256_i32gather_ps::<4>(table(func, fmt).as_ptr().cast(), idx)
}

/// Lanes of a vector that `gather_avx512` looks up one by one when the segments leave them;
/// a vector with more is gathered whole (a gather reads one element per cycle on Zen 5).
#[cfg(target_arch = "x86_64")]
const PATCH_MAX: u32 = 4;

/// `apply`/`apply_rounding` with AVX-512: each vector by `half_segments`, the lanes they
/// leave (at most `PATCH_MAX`) read from the table one by one; a vector with more lanes
/// left, or every vector when the segments failed their check, by a gather. Whole vectors
/// unmasked, then the tail masked.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma,f16c,popcnt")]
unsafe fn gather_avx512<const ROUNDING: bool>(t: &[f32], seg: Option<&crate::sim::half_segments::Segments>, bf: bool, xs: &mut [f32]) {
    debug_assert_eq!(t.len(), SIZE);
    let regs = seg.map(|s| s.regs());
    let (n, p) = (xs.len(), xs.as_mut_ptr());
    let mut i = 0;
    while i + 16 <= n {
        vector::<ROUNDING>(t, regs.as_ref(), bf, p.add(i), 0xffff);
        i += 16;
    }
    if i < n {
        vector::<ROUNDING>(t, regs.as_ref(), bf, p.add(i), crate::sim::simd_round::first_lanes(n - i));
    }
}

/// One vector of `gather_avx512`: the lanes `live` of p, in place.
///
/// The evaluation starts from the value of the format each lane stands for: x itself
/// (`apply`), or R(x) (`apply_rounding`): f16 by the conversion to binary16 and back, whose
/// binary16 bits are also the table's index (every lane: subnormals, overflows to ±∞ and
/// NaNs included), bf16 by its rounding on the bits, whose NaN lanes go to the table (a
/// NaN's bits can carry into ±0).
///
/// # Safety
/// The caller is compiled with AVX-512F/VL/DQ, FMA, F16C and POPCNT; `t` has `SIZE` entries
/// and p is valid for reads and writes of the `live` lanes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn vector<const ROUNDING: bool>(t: &[f32], regs: Option<&crate::sim::half_segments::Regs>, bf: bool, p: *mut f32, live: std::arch::x86_64::__mmask16) {
    use std::arch::x86_64::*;
    let x = _mm512_maskz_loadu_ps(live, p);
    // f16's binary16 bits of R(x) (`apply_rounding`), which its index widens
    let half = if ROUNDING && !bf { Some(_mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x)) } else { None };
    if let Some(r) = regs {
        let (v, sure) = match half {
            Some(h) => (_mm512_cvtph_ps(h), live),
            None if ROUNDING => (crate::sim::simd_round::round_bf16_grid(x), live & _mm512_cmp_ps_mask::<_CMP_ORD_Q>(x, x)),
            None => (x, live),
        };
        let (y, decided) = crate::sim::half_segments::eval(r, v);
        let left = live & !(decided & sure);
        if left == 0 {
            _mm512_mask_storeu_ps(p, live, y);
            return;
        }
        if left.count_ones() <= PATCH_MAX {
            // the lanes the segments left (rarely more than one) from the table one by one,
            // after the vector's store: a gather reads all 16
            let mut ix = [0u32; 16];
            _mm512_storeu_si512(ix.as_mut_ptr().cast(), index_of::<ROUNDING>(half, x, bf));
            _mm512_mask_storeu_ps(p, live, y);
            let mut rest = left;
            while rest != 0 {
                let j = rest.trailing_zeros() as usize;
                *p.add(j) = *t.get_unchecked(ix[j] as usize);
                rest &= rest - 1;
            }
            return;
        }
    }
    let y = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), live, index_of::<ROUNDING>(half, x, bf), t.as_ptr().cast());
    _mm512_mask_storeu_ps(p, live, y);
}

/// The table's index of 16 lanes: f16's binary16 bits `half` widened when `vector` has
/// them, else [`index_16`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn index_of<const ROUNDING: bool>(half: Option<std::arch::x86_64::__m256i>, x: std::arch::x86_64::__m512, bf: bool) -> std::arch::x86_64::__m512i {
    match half {
        Some(h) => std::arch::x86_64::_mm512_cvtepu16_epi32(h),
        None => index_16::<ROUNDING>(x, bf),
    }
}

/// The table's index of 16 lanes: the format's bits of x (`apply`, x on the grid) or of
/// R(x) (`apply_rounding`): bf16 the top 16 bits (`bf16_index_16`), f16 the binary16 bits
/// (`vcvtps2ph` rounds), widened to 32.
///
/// # Safety
/// The caller is compiled with AVX-512F and F16C.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn index_16<const ROUNDING: bool>(x: std::arch::x86_64::__m512, bf: bool) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    if bf {
        if ROUNDING { bf16_index_16(x) } else { _mm512_srli_epi32::<16>(_mm512_castps_si512(x)) }
    } else {
        _mm512_cvtepu16_epi32(_mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x))
    }
}

/// `gather_avx512` on 8 lanes (AVX2's `vgatherdps`, F16C's `vcvtps2ph`), the tail masked
/// (`simd_round::load_first_8` / `store_first_8`: whole vectors plain; with `vmaskmovps` on
/// every vector, as before session 52, this loop ran 2.3× the time on Zen 3).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,f16c")]
unsafe fn gather_avx2<const ROUNDING: bool>(t: &[f32], bf: bool, xs: &mut [f32]) {
    debug_assert_eq!(t.len(), SIZE);
    use crate::sim::simd_round::{load_first_8, store_first_8};
    let (n, p) = (xs.len(), xs.as_mut_ptr());
    let mut i = 0;
    while i < n {
        // a partial vector's other lanes hold 0 (index 0, in the table) and are not stored
        store_first_8(p.add(i), n - i, lookup_8::<ROUNDING>(t, bf, load_first_8(p.add(i), n - i)));
        i += 8;
    }
}

/// The table's values at the index of 8 lanes (`gather_avx2`'s step).
///
/// # Safety
/// The caller is compiled with AVX2 and F16C; `t` has `SIZE` values.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn lookup_8<const ROUNDING: bool>(t: &[f32], bf: bool, x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let idx = if bf && ROUNDING {
        bf16_index_8(x)
    } else if bf {
        _mm256_srli_epi32::<16>(_mm256_castps_si256(x))
    } else {
        _mm256_cvtepu16_epi32(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x))
    };
    _mm256_i32gather_ps::<4>(t.as_ptr(), idx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `xs` in a fixed pseudo-random order (Fisher–Yates with a 64-bit LCG).
    fn shuffled(xs: &[f32]) -> Vec<f32> {
        let mut v = xs.to_vec();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for i in (1..v.len()).rev() {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            v.swap(i, (state >> 33) as usize % (i + 1));
        }
        v
    }

    /// The vectors of the shuffled values of f16 that the segments leave lanes in: some with
    /// 1 to `PATCH_MAX` (read one by one) and some with more (gathered), so the shuffled
    /// pass of `every_half_value_gets_the_documented_result` runs both of `gather_avx512`'s
    /// routes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn both_routes_for_the_lanes_left_are_taken() {
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma,f16c")]
        unsafe fn counts(seg: &crate::sim::half_segments::Segments, xs: &[f32]) -> (usize, usize) {
            let r = seg.regs();
            let (mut few, mut many) = (0, 0);
            for v in xs.chunks_exact(16) {
                let (_, decided) = crate::sim::half_segments::eval(&r, std::arch::x86_64::_mm512_loadu_ps(v.as_ptr()));
                match (!decided).count_ones() {
                    0 => {}
                    k if k <= PATCH_MAX => few += 1,
                    _ => many += 1,
                }
            }
            (few, many)
        }
        if !crate::sim::cpu::avx512_f16c() {
            return;
        }
        let xs = shuffled(&(0..SIZE).map(|i| value(i as u16, false)).collect::<Vec<_>>());
        for func in [Func::Tanh, Func::Sigmoid] {
            let seg = crate::sim::half_segments::segments(func, BinaryFormat::F16).expect("the segments pass their check");
            // SAFETY: the CPU has AVX-512F, FMA and F16C (checked above).
            let (few, many) = unsafe { counts(seg, &xs) };
            eprintln!("{func:?} f16, shuffled: {few} vectors with 1..={PATCH_MAX} lanes left, {many} with more");
            assert!(few > 0 && many > 0, "{func:?}: {few} / {many}");
        }
    }

    /// Every value of both formats (and odd slice lengths, for the masked tail), against the
    /// definition `Float::tanh` / `Float::sigmoid` evaluated element by element.
    #[test]
    fn every_half_value_gets_the_documented_result() {
        for bf in [false, true] {
            let fmt = if bf { BinaryFormat::BF16 } else { BinaryFormat::F16 };
            let xs: Vec<f32> = (0..SIZE).map(|i| if bf { bf16::from_bits(i as u16).to_f32() } else { f16::from_bits(i as u16).to_f32() }).collect();
            for func in [Func::Tanh, Func::Sigmoid] {
                // the definition per element, from the value (not from a table index)
                let want: Vec<f32> = xs.iter().map(|&x| definition(func, bf, x)).collect();
                let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
                for len in [SIZE, 1, 15, 17, 33] {
                    let mut ys = xs[..len].to_vec();
                    apply(func, fmt, &mut ys);
                    for ((&x, &y), &w) in xs.iter().zip(&ys).zip(&want) {
                        assert!(same(y, w), "{func:?} {fmt:?} {x:e}: {y:e} vs {w:e}");
                        assert!(same(one(func, fmt, x), w), "{func:?} {fmt:?} {x:e} (one)");
                    }
                }
                // in a shuffled order, which puts the values the segments leave in every lane
                // position and mixes them with decided ones (`gather_avx512`'s one-by-one reads)
                let mut ys = shuffled(&xs);
                let want_shuffled: Vec<f32> = ys.iter().map(|&x| definition(func, bf, x)).collect();
                apply(func, fmt, &mut ys);
                assert!(ys.iter().zip(&want_shuffled).all(|(&a, &b)| same(a, b)), "{func:?} {fmt:?}: shuffled");
                // and `apply_rounding`'s route (its values from the bits' rounding) on them
                let mut ys = shuffled(&xs);
                apply_rounding(func, fmt, &mut ys);
                assert!(ys.iter().zip(&want_shuffled).all(|(&a, &b)| same(a, b)), "{func:?} {fmt:?}: shuffled, apply_rounding");
                // from the binary16 bits, rows of 1–33 values at strides with gaps
                if !bf {
                    let bits: Vec<u16> = (0..SIZE as u32).map(|i| i as u16).collect();
                    for (d, rows) in [(1, 3), (15, 2), (16, 4), (17, 5), (33, 2), (256, 250)] {
                        let (ld_src, ld_dst) = (d + 3, d + 5);
                        let mut ys = vec![-7.0f32; rows * ld_dst];
                        apply_f16_bits(func, &bits, ld_src, &mut ys, ld_dst, rows, d);
                        // the bits alone, from the table of bits: the definition's binary16 bits
                        // (a NaN's too), row r at r·d
                        let mut only = vec![0u16; rows * d];
                        apply_f16_bits_only(func, &bits, ld_src, rows, d, &mut only);
                        for r in 0..rows {
                            for j in 0..d {
                                assert_eq!(only[r * d + j], f16::from_f32(want[r * ld_src + j]).to_bits(), "{func:?} bits only, rows of {d}: row {r} value {j}");
                            }
                        }
                        for r in 0..rows {
                            for j in 0..ld_dst {
                                let want_y = if j < d { want[r * ld_src + j] } else { -7.0 };
                                assert!(same(ys[r * ld_dst + j], want_y), "{func:?} f16 bits {}: row {r} value {j}", r * ld_src + j);
                            }
                        }
                    }
                }
                // `apply_rounding` of f32 values off the grid (a half format's unrounded f32
                // sums): the entry of R(x), x rounded to the format (ties to even: exact
                // halfway points between neighbours included)
                let round = |x: f32| if bf { crate::sim::lanes::round_bf16_in_f32(x) } else { crate::sim::lanes::round_f16_in_f32(x) };
                let mut off: Vec<f32> = xs.iter().step_by(7).flat_map(|&x| {
                    let b = x.to_bits();
                    [f32::from_bits(b ^ 1), f32::from_bits(b.wrapping_add(if bf { 0x8000 } else { 0x1000 })), f32::from_bits(b.wrapping_add(0x3fff))]
                }).collect();
                // NaNs: quiet with payload, and signalling with the payload in the low half only
                off.extend([0x7fff_ffffu32, 0x7f80_0001, 0xff80_8000].map(f32::from_bits));
                let want_off: Vec<f32> = off.iter().map(|&x| definition(func, bf, round(x))).collect();
                for len in [off.len(), 1, 15, 17] {
                    let mut ys = off[..len].to_vec();
                    apply_rounding(func, fmt, &mut ys);
                    for ((&x, &y), &w) in off.iter().zip(&ys).zip(&want_off) {
                        assert!(same(y, w), "{func:?} {fmt:?} off the grid {x:e}: {y:e} vs {w:e}");
                        assert!(same(table(func, fmt)[index_rounding(x, bf)], w), "{func:?} {fmt:?} off the grid {x:e} (scalar)");
                    }
                }
                // and on the grid, `apply`'s values
                let mut ys = xs.clone();
                apply_rounding(func, fmt, &mut ys);
                assert!(ys.iter().zip(&want).all(|(&a, &b)| same(a, b)), "{func:?} {fmt:?}: apply_rounding on the grid");
                // the independent approximation path (`ziv`) agrees on every value
                let mut portable = xs.clone();
                portable.iter_mut().for_each(|x| *x = crate::sim::ziv::to_half_for_tests(func, *x, fmt));
                assert!(portable.iter().zip(&want).all(|(&a, &b)| same(a, b)), "{func:?} {fmt:?}: Ziv path");
            }
        }
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    /// ns per value of `apply_rounding` (the half formats' activations of their f32 sums) on
    /// 4,096 sums like a gated cell's at hidden 16 (each a sum of 20 products of uniform
    /// values, standard deviation about 0.75), and of f32's correctly rounded tanh / σ on the
    /// same values (`timing::best_ns_per_value`); the half results are checked against the
    /// table's entry of each rounded sum. `cargo test --release --lib half_ns_per_value --
    /// --ignored --nocapture`.
    #[test]
    #[ignore]
    fn half_ns_per_value() {
        use crate::sim::timing::best_ns_per_value as time;
        let mut state = 1u64;
        let mut uniform = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let xs: Vec<f32> = (0..4096).map(|_| (0..20).map(|_| (uniform() - 0.5) * (uniform() * 2.0 - 1.0)).sum()).collect();
        for func in [Func::Sigmoid, Func::Tanh] {
            for fmt in [BinaryFormat::F16, BinaryFormat::BF16] {
                eprintln!("{func:?} {fmt:?} apply_rounding: {:.3} ns/value", time(&xs, &|v| apply_rounding(func, fmt, v)));
                let mut ys = xs.clone();
                apply_rounding(func, fmt, &mut ys);
                let bf = fmt == BinaryFormat::BF16;
                for (&x, &y) in xs.iter().zip(&ys) {
                    assert_eq!(y.to_bits(), table(func, fmt)[index_rounding(x, bf)].to_bits(), "{func:?} {fmt:?} {x:e}");
                }
            }
            let f32_ns = match func {
                Func::Tanh => time(&xs, &|v| crate::sim::fast_tanh::tanh_f32_slice(v)),
                Func::Sigmoid => time(&xs, &|v| crate::sim::fast_sigmoid::sigmoid_f32_slice(v)),
            };
            eprintln!("{func:?} f32, correctly rounded: {f32_ns:.3} ns/value");
        }
    }
}
