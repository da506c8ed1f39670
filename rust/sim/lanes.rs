//! How the lock-step batch kernel (`float_batch`) computes each builtin format: values held
//! in a hardware "lane" type (f32 for f32, f16 and bf16; f64 for f64), every operation
//! rounded to the format exactly as its `Float` impl does (num/float.rs), so the kernel's
//! results are bit for bit the per-sequence engine's.
//!
//! f16 and bf16: one operation in f32, then a branch-free (vectorisable) rounding of the
//! f32 result to the half format's grid, kept in f32. That is `half`'s `from_f32(a ∘ b)`
//! value: both are round-to-nearest-even of the same f32 (innocuous double rounding since
//! 24 ≥ 2p + 2, see num/float.rs).

use crate::num::float::Float;
use crate::num::round::BinaryFormat;
use crate::sim::half_tables;
use crate::sim::ziv::Func;
use half::{bf16, f16};
use std::mem::MaybeUninit;

/// A hardware float the kernel computes in.
pub trait Lane:
    Copy + Send + Sync + PartialOrd + std::fmt::Debug + std::ops::Neg<Output = Self> + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + 'static
{
    const ZERO: Self;
    const ONE: Self;
    const MINUS_ONE: Self;
    const HALF: Self;
}
impl Lane for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const MINUS_ONE: f32 = -1.0;
    const HALF: f32 = 0.5;
}
impl Lane for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    const MINUS_ONE: f64 = -1.0;
    const HALF: f64 = 0.5;
}

/// Which rounding follows each lane operation (selects the SIMD tile in `tile_kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    F64,
    F32,
    Bf16,
    F16,
}

/// A builtin format as the kernel computes it.
pub trait LaneFormat: Float {
    type C: Lane + Default;
    /// The format whose tiles compute the affine maps' sums (`tile_kernel::affine_panels`):
    /// the format itself, or f32 for the half formats with f32 sums (`num::f32_sums`),
    /// whose rows are then rounded to the format (`round_lanes`).
    type Sum: LaneFormat<C = Self::C>;
    const ROUNDING: Rounding;
    /// Whether a value is stored as its lane value, bit for bit (f32, f64, and the half
    /// formats with f32 sums, `repr(transparent)` over f32): slices of F and of F::C are
    /// then the same memory (`block_io::lane_inputs`, `block_results`).
    const STORED_AS_LANE: bool = false;
    fn to_lane(self) -> Self::C;
    /// Exact: `c` is a value of the format.
    fn from_lane(c: Self::C) -> Self;
    /// a + b rounded to the format.
    fn add_l(a: Self::C, b: Self::C) -> Self::C;
    /// a · b rounded to the format.
    fn mul_l(a: Self::C, b: Self::C) -> Self::C;
    /// w · z + acc rounded once (`Float::mul_add`).
    #[inline(always)]
    fn fma_l(w: Self::C, z: Self::C, acc: Self::C) -> Self::C {
        Self::from_lane(w).mul_add(Self::from_lane(z), Self::from_lane(acc)).to_lane()
    }
    /// `fma_l`, the same value, from the hardware FMA where it computes it (f32, f64: IEEE
    /// fusedMultiplyAdd is the correctly rounded w·z + acc). For code compiled with the `fma`
    /// target feature (`tile_kernel`'s AVX2 tier); elsewhere `mul_add` is libm's software fma.
    #[inline(always)]
    fn fma_hw_l(w: Self::C, z: Self::C, acc: Self::C) -> Self::C {
        Self::fma_l(w, z, acc)
    }
    /// tanh as `Float::tanh` defines it.
    fn tanh_l(x: Self::C) -> Self::C {
        Self::from_lane(x).tanh().to_lane()
    }
    fn sigmoid_l(x: Self::C) -> Self::C {
        Self::from_lane(x).sigmoid().to_lane()
    }
    /// `sigmoid_l` over a slice, in place.
    fn sigmoid_slice(v: &mut [Self::C]) {
        v.iter_mut().for_each(|x| *x = Self::sigmoid_l(*x));
    }
    /// `tanh_l` over a slice, in place.
    fn tanh_slice(v: &mut [Self::C]) {
        v.iter_mut().for_each(|x| *x = Self::tanh_l(*x));
    }
    /// The approximate tanh or σ (`Float::approx_tanh`, `approx_sigmoid`) over a slice.
    fn approx_slice(f: Func, v: &mut [Self::C]) {
        v.iter_mut().for_each(|x| {
            let y = Self::from_lane(*x);
            *x = match f {
                Func::Tanh => y.approx_tanh(),
                Func::Sigmoid => y.approx_sigmoid(),
            }
            .to_lane()
        });
    }
    /// Every value of `v` rounded to the format, in place: `add_l(a, b)` is this applied to
    /// the hardware a + b, `mul_l` to a · b (f16, bf16: the f32 operation, then the rounding;
    /// f32, f64: nothing to do). So an operation over a slice, then this, gives `add_l` /
    /// `mul_l` element by element, with the rounding vectorised on its own
    /// (`cells::gated_pointwise`).
    #[inline(always)]
    fn round_lanes(_v: &mut [Self::C]) {}
    /// `to_lane` over a slice, written into `dst` (uninitialised, of src's length; exact);
    /// f16 overrides it with F16C's conversion. Contract: every value of `dst` is written
    /// when the lengths are equal (`parallel_copy::written` relies on it).
    fn to_lanes_uninit(src: &[Self], dst: &mut [MaybeUninit<Self::C>]) {
        for (d, v) in dst.iter_mut().zip(src) {
            d.write(v.to_lane());
        }
    }
    /// `to_lanes_uninit` into a new vector.
    fn to_lanes(src: &[Self]) -> Vec<Self::C> {
        let mut out = vec![Self::C::ZERO; src.len()];
        Self::to_lanes_uninit(src, as_uninit(&mut out));
        out
    }
    /// `from_lane` over a slice (exact) into memory not yet initialised, value by value
    /// (inline: a flush of kept states calls it once per row of a tick); f16 overrides it
    /// with F16C's conversion.
    #[inline]
    fn from_lanes_uninit(dst: &mut [MaybeUninit<Self>], src: &[Self::C]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            d.write(Self::from_lane(s));
        }
    }
    /// `from_lane` over a slice (exact). In fixed chunks of 8, so that short rows are
    /// copied inline rather than by a call; the half formats call `from_lanes_uninit`.
    #[inline]
    fn from_lanes(dst: &mut [Self], src: &[Self::C]) {
        let mut d8 = dst.chunks_exact_mut(8);
        let mut s8 = src.chunks_exact(8);
        for (d, s) in (&mut d8).zip(&mut s8) {
            let (d, s): (&mut [Self; 8], &[Self::C; 8]) = (d.try_into().expect("8"), s.try_into().expect("8"));
            *d = s.map(Self::from_lane);
        }
        for (d, &s) in d8.into_remainder().iter_mut().zip(s8.remainder()) {
            *d = Self::from_lane(s);
        }
    }
}

impl LaneFormat for f64 {
    type Sum = f64;
    const STORED_AS_LANE: bool = true;
    const ROUNDING: Rounding = Rounding::F64;
    type C = f64;
    #[inline(always)]
    fn to_lane(self) -> f64 { self }
    #[inline(always)]
    fn from_lane(c: f64) -> f64 { c }
    #[inline(always)]
    fn add_l(a: f64, b: f64) -> f64 { a + b }
    #[inline(always)]
    fn mul_l(a: f64, b: f64) -> f64 { a * b }
    #[inline(always)]
    fn fma_hw_l(w: f64, z: f64, acc: f64) -> f64 { w.mul_add(z, acc) }
    fn tanh_slice(v: &mut [f64]) { crate::sim::activation_f64::slice(Func::Tanh, v) }
    fn sigmoid_slice(v: &mut [f64]) { crate::sim::activation_f64::slice(Func::Sigmoid, v) }
}

impl LaneFormat for f32 {
    type Sum = f32;
    const STORED_AS_LANE: bool = true;
    const ROUNDING: Rounding = Rounding::F32;
    type C = f32;
    #[inline(always)]
    fn to_lane(self) -> f32 { self }
    #[inline(always)]
    fn from_lane(c: f32) -> f32 { c }
    #[inline(always)]
    fn add_l(a: f32, b: f32) -> f32 { a + b }
    #[inline(always)]
    fn mul_l(a: f32, b: f32) -> f32 { a * b }
    #[inline(always)]
    fn fma_hw_l(w: f32, z: f32, acc: f32) -> f32 { w.mul_add(z, acc) }
    #[inline(always)]
    fn tanh_l(x: f32) -> f32 { crate::sim::fast_tanh::tanh_f32(x) }
    fn tanh_slice(v: &mut [f32]) { crate::sim::fast_tanh::tanh_f32_slice(v) }
    #[inline(always)]
    fn sigmoid_l(x: f32) -> f32 { crate::sim::fast_sigmoid::sigmoid_f32(x) }
    fn sigmoid_slice(v: &mut [f32]) { crate::sim::fast_sigmoid::sigmoid_f32_slice(v) }
    fn approx_slice(f: Func, v: &mut [f32]) { crate::sim::approx_activation::slice(f, v) }
}

/// f32 → the bf16 grid (round to nearest even on the top 16 bits), NaN kept.
#[inline(always)]
pub fn round_bf16_in_f32(x: f32) -> f32 {
    let b = x.to_bits();
    let r = (b.wrapping_add(0x7fff + ((b >> 16) & 1))) & 0xffff_0000;
    if x.is_nan() { x } else { f32::from_bits(r) }
}

/// f32 → the binary16 grid (11 significand bits from 2^-14 up, quantum 2^-24 below,
/// ±inf above 65504 after rounding), NaN kept. Branch-free selects only.
#[inline(always)]
pub fn round_f16_in_f32(x: f32) -> f32 {
    let a = x.abs();
    let b = a.to_bits();
    // normal range: keep 10 fraction bits of f32's 23, ties to even
    let normal = f32::from_bits((b.wrapping_add(0xfff + ((b >> 13) & 1))) & !0x1fff);
    // below 2^-14: 0.5 + a has an ulp of 2^-24, so the hardware addition rounds a to the
    // subnormal quantum (ties to even); subtracting 0.5 is exact
    let sub = (a + 0.5) - 0.5;
    let r = if a < f32::from_bits(0x3880_0000) { sub } else { normal }; // 2^-14
    let r = if r > 65504.0 { f32::INFINITY } else { r };
    if x.is_nan() { x } else { r.copysign(x) }
}

impl LaneFormat for f16 {
    type Sum = f16;
    const ROUNDING: Rounding = Rounding::F16;
    type C = f32;
    #[inline(always)]
    fn to_lane(self) -> f32 { self.to_f32() }
    #[inline(always)]
    fn from_lane(c: f32) -> f16 { f16::from_f32(c) }
    /// F16C's `vcvtph2ps`, 8 values at a time, when the CPU has it (`f16_to_lanes_f16c`),
    /// else `f16::to_f32` value by value (exact either way). (`half`'s slice conversion
    /// calls a function per 8 values.)
    #[inline]
    fn to_lanes_uninit(src: &[f16], dst: &mut [MaybeUninit<f32>]) {
        #[cfg(target_arch = "x86_64")]
        if crate::sim::cpu::avx2_f16c() {
            let n = dst.len().min(src.len());
            // SAFETY: the CPU has AVX2 and F16C (checked); dst has room for n values, which
            // the call writes.
            return unsafe { f16_to_lanes_f16c(dst.as_mut_ptr().cast(), &src[..n]) };
        }
        for (d, &s) in dst.iter_mut().zip(src) {
            d.write(s.to_f32());
        }
    }
    /// `from_lanes_uninit` (F16C's `vcvtps2ph` when the CPU has it).
    fn from_lanes(dst: &mut [f16], src: &[f32]) {
        Self::from_lanes_uninit(as_uninit(dst), src)
    }
    /// F16C's `vcvtps2ph`, 8 values at a time, when the CPU has it (`f16_from_lanes_f16c`),
    /// else `f16::from_f32` value by value: the same bits (exact on the grid; NaN quietened
    /// with its top payload bits).
    #[inline]
    fn from_lanes_uninit(dst: &mut [MaybeUninit<f16>], src: &[f32]) {
        #[cfg(target_arch = "x86_64")]
        if crate::sim::cpu::avx2_f16c() {
            let n = dst.len().min(src.len());
            // SAFETY: the CPU has AVX2 and F16C (checked); dst has room for n values, which
            // the call writes (binary16 bits: every bit pattern is an f16).
            return unsafe { f16_from_lanes_f16c::<false>(dst.as_mut_ptr().cast(), &src[..n]) };
        }
        for (d, &s) in dst.iter_mut().zip(src) {
            d.write(f16::from_f32(s));
        }
    }
    #[inline(always)]
    fn add_l(a: f32, b: f32) -> f32 { round_f16_in_f32(a + b) }
    /// The hardware conversion to binary16 and back with AVX-512 (`simd_round::round_f16`).
    fn round_lanes(v: &mut [f32]) { round_half_lanes::<false>(v) }
    #[inline(always)]
    fn mul_l(a: f32, b: f32) -> f32 { round_f16_in_f32(a * b) }
    #[inline(always)]
    fn tanh_l(x: f32) -> f32 { half_tables::one(Func::Tanh, BinaryFormat::F16, x) }
    #[inline(always)]
    fn sigmoid_l(x: f32) -> f32 { half_tables::one(Func::Sigmoid, BinaryFormat::F16, x) }
    fn tanh_slice(v: &mut [f32]) { half_tables::apply(Func::Tanh, BinaryFormat::F16, v) }
    fn sigmoid_slice(v: &mut [f32]) { half_tables::apply(Func::Sigmoid, BinaryFormat::F16, v) }
}

impl LaneFormat for bf16 {
    type Sum = bf16;
    const ROUNDING: Rounding = Rounding::Bf16;
    type C = f32;
    #[inline(always)]
    fn to_lane(self) -> f32 { self.to_f32() }
    #[inline(always)]
    fn from_lane(c: f32) -> bf16 { bf16::from_f32(c) }
    /// `from_lanes_uninit`.
    fn from_lanes(dst: &mut [bf16], src: &[f32]) {
        Self::from_lanes_uninit(as_uninit(dst), src)
    }
    /// Each value's top 16 bits (`bf16_of_lane`).
    #[inline]
    fn from_lanes_uninit(dst: &mut [MaybeUninit<bf16>], src: &[f32]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            d.write(bf16_of_lane(s));
        }
    }
    #[inline(always)]
    fn add_l(a: f32, b: f32) -> f32 { round_bf16_in_f32(a + b) }
    fn round_lanes(v: &mut [f32]) { round_half_lanes::<true>(v) }
    #[inline(always)]
    fn mul_l(a: f32, b: f32) -> f32 { round_bf16_in_f32(a * b) }
    #[inline(always)]
    fn tanh_l(x: f32) -> f32 { half_tables::one(Func::Tanh, BinaryFormat::BF16, x) }
    #[inline(always)]
    fn sigmoid_l(x: f32) -> f32 { half_tables::one(Func::Sigmoid, BinaryFormat::BF16, x) }
    fn tanh_slice(v: &mut [f32]) { half_tables::apply(Func::Tanh, BinaryFormat::BF16, v) }
    fn sigmoid_slice(v: &mut [f32]) { half_tables::apply(Func::Sigmoid, BinaryFormat::BF16, v) }
}

/// The half formats with f32 sums (`num::f32_sums`): the half format's lanes and
/// elementwise operations, f32's sums.
macro_rules! half_with_f32_sums_lanes {
    ($t:ty, $half:ty, $rounding:expr) => {
        impl LaneFormat for $t {
            type C = f32;
            type Sum = f32;
            const ROUNDING: Rounding = $rounding;
            const STORED_AS_LANE: bool = true;
            #[inline(always)]
            fn to_lane(self) -> f32 { self.0 }
            #[inline(always)]
            fn from_lane(c: f32) -> Self { Self(c) }
            #[inline(always)]
            fn add_l(a: f32, b: f32) -> f32 { <$half as LaneFormat>::add_l(a, b) }
            #[inline(always)]
            fn mul_l(a: f32, b: f32) -> f32 { <$half as LaneFormat>::mul_l(a, b) }
            fn round_lanes(v: &mut [f32]) { <$half as LaneFormat>::round_lanes(v) }
            #[inline(always)]
            fn tanh_l(x: f32) -> f32 { <$half as LaneFormat>::tanh_l(x) }
            #[inline(always)]
            fn sigmoid_l(x: f32) -> f32 { <$half as LaneFormat>::sigmoid_l(x) }
            fn tanh_slice(v: &mut [f32]) { <$half as LaneFormat>::tanh_slice(v) }
            fn sigmoid_slice(v: &mut [f32]) { <$half as LaneFormat>::sigmoid_slice(v) }
        }
    };
}
half_with_f32_sums_lanes!(crate::num::f32_sums::Bf16SumF32, bf16, Rounding::Bf16);
half_with_f32_sums_lanes!(crate::num::f32_sums::F16SumF32, f16, Rounding::F16);

/// `round_bf16_in_f32` (`BF`) or `round_f16_in_f32` over a slice, in place: 16 lanes at a
/// time with AVX-512 (`simd_round::round_slice`, the same bits), 8 with AVX2 + F16C
/// (`round_slice_8`), else value by value.
fn round_half_lanes<const BF: bool>(v: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx512() {
        // SAFETY: the CPU has AVX-512 (checked).
        return unsafe { round_lanes_avx512::<BF>(v) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_f16c() {
        // SAFETY: the CPU has AVX2 and F16C (checked).
        return unsafe { round_lanes_avx2::<BF>(v) };
    }
    let round = if BF { round_bf16_in_f32 } else { round_f16_in_f32 };
    v.iter_mut().for_each(|x| *x = round(*x));
}

/// `round_bf16_in_f32` (`BF`) or `round_f16_in_f32` of src[i] written to dst[i] (over the
/// shorter slice; every value when the lengths are equal): a copy, then [`round_half_lanes`]
/// in place, vector by vector (a `parallel_copy` chunk is in L1 for the second pass). The
/// half formats with f32 sums' `Float::round_f32_slice_uninit`, which the inputs of a run
/// take (value by value it was 0.17 ns per value: 3.6% of a bf16 SimpleRNN's run at hidden
/// 16, session 48).
pub(crate) fn round_half_lanes_into<const BF: bool>(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
    let n = src.len().min(dst.len());
    // SAFETY: both slices have at least n values, and a borrowed and a mutably borrowed
    // slice do not overlap; the n values written are then initialised f32s
    let dst = unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<f32>(), n);
        std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<f32>(), n)
    };
    round_half_lanes::<BF>(dst);
}

/// `dst` as memory to write (the half formats' `from_lanes` write it with
/// `from_lanes_uninit`).
fn as_uninit<T: Copy>(dst: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: MaybeUninit<T> has T's layout; the slice is initialised, and the callers
    // only write initialised values of T into it (T: Copy, so nothing is dropped).
    unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), dst.len()) }
}

/// bf16's value of a lane value: its top 16 bits (exact: a lane value of bf16 has its low
/// 16 bits zero), NaN as `bf16::NAN`.
#[inline(always)]
fn bf16_of_lane(s: f32) -> bf16 {
    if s.is_nan() { bf16::NAN } else { bf16::from_bits((s.to_bits() >> 16) as u16) }
}

/// The binary16 bits of src[i] written to dst + i: `vcvtps2ph` on 8 values at a time, the
/// tail by `f16::from_f32` (the same bits: exact on the grid, and `half` converts with this
/// instruction on such CPUs). `half`'s slice conversion copies each call's tail through
/// buffers, and the flush of kept states had gone through a buffer of its own (a `memset`
/// and a `memmove` call per row): the flush converts one row of `hidden` values per call.
///
/// With `STREAM` the 16-byte stores are non-temporal (`block_results::stream_copy`: a large
/// result written once).
///
/// # Safety
/// The CPU must have AVX and F16C; dst must have room for src.len() values, and be 16-byte
/// aligned with `STREAM`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
pub(crate) unsafe fn f16_from_lanes_f16c<const STREAM: bool>(dst: *mut u16, src: &[f32]) {
    use std::arch::x86_64::*;
    debug_assert!(!STREAM || (dst as usize).is_multiple_of(16));
    let s8 = src.chunks_exact(8);
    let (tail, full) = (s8.remainder(), src.len() - s8.remainder().len());
    for (i, s) in s8.enumerate() {
        let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(s.as_ptr()));
        // (8 binary16 values: 16 bytes)
        if STREAM {
            _mm_stream_si128(dst.add(8 * i).cast(), h);
        } else {
            _mm_storeu_si128(dst.add(8 * i).cast(), h);
        }
    }
    for (i, &s) in tail.iter().enumerate() {
        dst.add(full + i).write(f16::from_f32(s).to_bits());
    }
}

/// The f32 values of src[i] written to dst + i: `vcvtph2ps` on 8 values at a time, the tail
/// by `f16::to_f32` (exact, the same values).
///
/// # Safety
/// The CPU must have AVX and F16C; dst must have room for src.len() values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_to_lanes_f16c(dst: *mut f32, src: &[f16]) {
    use std::arch::x86_64::*;
    let s8 = src.chunks_exact(8);
    let (tail, full) = (s8.remainder(), src.len() - s8.remainder().len());
    for (i, s) in s8.enumerate() {
        _mm256_storeu_ps(dst.add(8 * i), _mm256_cvtph_ps(_mm_loadu_si128(s.as_ptr().cast())));
    }
    for (i, &s) in tail.iter().enumerate() {
        dst.add(full + i).write(s.to_f32());
    }
}

/// `simd_round::round_slice` compiled for AVX-512 (bf16 when `BF`, else f16).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn round_lanes_avx512<const BF: bool>(v: &mut [f32]) {
    crate::sim::simd_round::round_slice::<BF>(v)
}

/// `simd_round::round_slice_8` compiled for AVX2 + F16C (bf16 when `BF`, else f16).
///
/// # Safety
/// The CPU must have AVX2 and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,f16c")]
unsafe fn round_lanes_avx2<const BF: bool>(v: &mut [f32]) {
    crate::sim::simd_round::round_slice_8::<BF>(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `from_lanes_uninit` and `from_lanes` give `from_lane`'s bits at every length (F16C's
    /// 8 at a time and the tail): every f16 bit pattern (NaN payloads included) and bf16
    /// values with NaNs.
    #[test]
    fn conversions_into_uninitialised_rows_equal_the_elementwise_ones() {
        fn check<F: LaneFormat + Copy>(lanes: &[F::C], bits: impl Fn(F) -> u16, nan_bits: impl Fn(F::C) -> Option<u16>) {
            for len in (0..=40).chain([lanes.len()]) {
                for at in [0, 3] {
                    let src = &lanes[at.min(lanes.len() - len)..][..len];
                    let mut uninit = vec![MaybeUninit::<F>::uninit(); len];
                    F::from_lanes_uninit(&mut uninit, src);
                    let mut init = vec![F::from_lane(lanes[0]); len];
                    F::from_lanes(&mut init, src);
                    for (i, (&s, (u, d))) in src.iter().zip(uninit.iter().zip(&init)).enumerate() {
                        // SAFETY: from_lanes_uninit wrote all len values.
                        let u = bits(unsafe { u.assume_init() });
                        let want = nan_bits(s).unwrap_or(bits(F::from_lane(s)));
                        assert_eq!((u, bits(*d)), (want, want), "{} len {len} value {i}", std::any::type_name::<F>());
                    }
                }
            }
        }
        let every_f16: Vec<f32> = (0..=u16::MAX).map(|b| f16::from_bits(b).to_f32()).collect();
        check::<f16>(&every_f16, f16::to_bits, |_| None);
        let mut bf: Vec<f32> = (0..=u16::MAX).step_by(7).map(|b| bf16::from_bits(b).to_f32()).collect();
        bf.extend([f32::NAN, -f32::NAN, f32::from_bits(0x7fc0_0001), 0.0, -0.0]);
        // (a lane NaN is stored as bf16::NAN, `from_lanes`' rule; `from_lane` keeps its payload)
        check::<bf16>(&bf, bf16::to_bits, |s| s.is_nan().then_some(bf16::NAN.to_bits()));
        let f: Vec<f32> = (0..100).map(|i| i as f32 * -0.37 + 1.5).collect();
        check::<f32>(&f, |x| (x.to_bits() >> 16) as u16 ^ x.to_bits() as u16, |_| None);
        // and back: `to_lanes` (F16C's 8 at a time and the tail) is `to_lane` of each value,
        // every f16 bit pattern at every length (a NaN as a NaN with the same sign)
        let every: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        for len in (0..=40).chain([every.len()]) {
            for at in [0, 5] {
                let src = &every[at.min(every.len() - len)..][..len];
                for (i, (&l, &h)) in <f16 as LaneFormat>::to_lanes(src).iter().zip(src).enumerate() {
                    let want = h.to_lane();
                    let same = l.to_bits() == want.to_bits() || (l.is_nan() && want.is_nan() && l.is_sign_negative() == want.is_sign_negative());
                    assert!(same, "f16 to lanes, len {len} value {i}: {l} for {h}");
                }
            }
        }
    }

    #[test]
    fn bulk_conversions_from_lanes_equal_the_elementwise_ones() {
        let mut s = 77u64;
        let mut src = Vec::new();
        for _ in 0..10_000 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            src.push(f32::from_bits((s >> 32) as u32));
        }
        src.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-40, 65504.0, 6e-8]);
        let h: Vec<f32> = src.iter().map(|&x| round_f16_in_f32(x)).collect();
        let b: Vec<f32> = src.iter().map(|&x| round_bf16_in_f32(x)).collect();
        let (mut dh, mut db) = (vec![f16::ZERO; h.len()], vec![bf16::ZERO; b.len()]);
        <f16 as LaneFormat>::from_lanes(&mut dh, &h);
        <bf16 as LaneFormat>::from_lanes(&mut db, &b);
        let (back_h, back_b) = (<f16 as LaneFormat>::to_lanes(&dh), <bf16 as LaneFormat>::to_lanes(&db));
        for i in 0..h.len() {
            assert!(back_h[i].to_bits() == dh[i].to_f32().to_bits() || back_h[i].is_nan() && dh[i].is_nan(), "f16 to_lanes {:e}", h[i]);
            assert!(back_b[i].to_bits() == db[i].to_f32().to_bits() || back_b[i].is_nan() && db[i].is_nan(), "bf16 to_lanes {:e}", b[i]);
        }
        for i in 0..h.len() {
            let (wh, wb) = (<f16 as LaneFormat>::from_lane(h[i]), <bf16 as LaneFormat>::from_lane(b[i]));
            assert!(dh[i].to_bits() == wh.to_bits() || (dh[i].is_nan() && wh.is_nan()), "f16 {:e}", h[i]);
            assert!(db[i].to_bits() == wb.to_bits() || (db[i].is_nan() && wb.is_nan()), "bf16 {:e}", b[i]);
        }
    }

    #[test]
    fn round_lanes_equals_the_rounding_of_each_value() {
        let mut rng = crate::machine::random::SplitMix64(0x05ee_d0f1_a4e5);
        let mut src = Vec::new();
        for i in 0..4_000u32 {
            let bits = (rng.next_u64() >> 32) as u32;
            // half of them near the f16 range (subnormals, overflow), the rest anywhere
            src.push(f32::from_bits(if i % 2 == 0 { (bits & 0x87ff_ffff) | 0x3000_0000 } else { bits }));
        }
        src.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 65504.0, 65520.0, 6e-8, 2.9802322e-8, -1e-40]);
        for len in [0, 1, 15, 16, 17, 33, src.len()] {
            let (mut h, mut b, mut s32) = (src[..len].to_vec(), src[..len].to_vec(), src[..len].to_vec());
            <f16 as LaneFormat>::round_lanes(&mut h);
            <bf16 as LaneFormat>::round_lanes(&mut b);
            <f32 as LaneFormat>::round_lanes(&mut s32);
            for i in 0..len {
                let (wh, wb) = (round_f16_in_f32(src[i]), round_bf16_in_f32(src[i]));
                assert!(h[i].to_bits() == wh.to_bits() || (h[i].is_nan() && wh.is_nan()), "f16 {:e}: {:e} vs {wh:e}", src[i], h[i]);
                assert!(b[i].to_bits() == wb.to_bits() || (b[i].is_nan() && wb.is_nan()), "bf16 {:e}", src[i]);
                assert!(s32[i].to_bits() == src[i].to_bits(), "f32 values are kept");
            }
        }
    }

    #[test]
    fn half_roundings_match_the_half_crate_on_every_f32_pattern_sampled() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..2_000_000u64 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // every 4th sample near the f16 range, others anywhere
            let bits = if i % 4 == 0 { ((s >> 32) as u32 & 0x87ff_ffff) | 0x3000_0000 } else { (s >> 32) as u32 };
            let x = f32::from_bits(bits);
            let h = round_f16_in_f32(x);
            let want = f16::from_f32(x).to_f32();
            assert!(h.to_bits() == want.to_bits() || (h.is_nan() && want.is_nan()), "f16 {x:e}: {h:e} vs {want:e}");
            let b = round_bf16_in_f32(x);
            let want = bf16::from_f32(x).to_f32();
            assert!(b.to_bits() == want.to_bits() || (b.is_nan() && want.is_nan()), "bf16 {x:e}: {b:e} vs {want:e}");
        }
    }
}
