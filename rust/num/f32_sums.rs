//! The half formats with f32 sums (`accumulate="f32"`): bf16 or f16 values, whose affine
//! maps are summed in f32 and rounded to the half format once, at the end of each sum.
//!
//! This is how bf16/f16 networks run on hardware with f32 accumulators (PyTorch's bf16
//! matrix products on the CPU, `vdpbf16ps`, tensor cores): weights, inputs, states and
//! every elementwise operation are those of the half format (`num::float`: each operation
//! computed in f32 and rounded once), but an affine map b + Σ_k w_k·z_k keeps its running
//! sum in f32:
//!
//!   acc = b;   acc = acc + w_k·z_k in f32, k ascending (each product and sum rounded to
//!   f32, or with `fma` each step fused and rounded to f32 once);   out = round_half(acc)
//!
//! which is `dtype="f32"`'s sum over the same (half) values, then one rounding. A product
//! of two f16 values is exact in f32, so there the unfused and fused sums differ only in
//! the additions' roundings; a bf16 product is exact in f32 unless it leaves f32's range.
//!
//! The values are kept in an f32 (`repr(transparent)`), which between the end of a sum
//! and its rounding holds the f32 sum; everywhere else it holds a value of the half
//! format. `Float::plus_product` is f32's step and `Float::end_sum` the rounding; the
//! lock-step kernels run f32's tiles for the maps (`LaneFormat::Sum`) and then round the
//! rows (`tile_kernel::affine_panels`).

use crate::num::float::Float;
use crate::num::round::BinaryFormat;
use crate::sim::lanes::{round_bf16_in_f32, round_f16_in_f32};
use half::{bf16, f16};
use std::mem::MaybeUninit;

macro_rules! half_with_f32_sums {
    ($(#[$doc:meta])* $name:ident, $half:ty, $round:path, $bf:expr, $fmt:expr, $label:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
        #[repr(transparent)]
        pub struct $name(pub f32);

        impl $name {
            /// The half-format value (exact: a stored value is on the half grid).
            #[inline(always)]
            fn half(self) -> $half {
                <$half>::from_f32(self.0)
            }
            #[inline(always)]
            fn of(h: $half) -> Self {
                $name(h.to_f32())
            }
        }

        impl Float for $name {
            const NAME: &'static str = $label;
            fn binary_format() -> BinaryFormat { $fmt }
            fn zero() -> Self { $name(0.0) }
            fn one() -> Self { $name(1.0) }
            fn from_f64_exact(v: f64) -> Self { $name(v as f32) }
            fn from_f64_rounded(v: f64) -> Self { Self::of(<$half as Float>::from_f64_rounded(v)) }
            #[inline(always)]
            fn from_f32_rounded(v: f32) -> Self { $name($round(v)) }
            /// `from_f32_rounded` vector by vector (`lanes::round_half_lanes_into`).
            fn round_f32_slice_uninit(v: &[f32], out: &mut [MaybeUninit<Self>]) {
                crate::sim::lanes::round_half_lanes_into::<$bf>(v, f32_slots(out))
            }
            /// An f16 value is one of f16 (f32 sums) as it is, and an f32 exactly; bf16's
            /// rounds it.
            fn round_f16_slice_uninit(v: &[f16], out: &mut [MaybeUninit<Self>]) {
                if $bf {
                    crate::num::float::round_f16_via_lanes(v, out)
                } else {
                    <f16 as crate::sim::lanes::LaneFormat>::to_lanes_uninit(v, f32_slots(out))
                }
            }
            fn to_f64(self) -> f64 { f64::from(self.0) }
            /// An elementwise addition: the half format's.
            #[inline(always)]
            fn add(self, o: Self) -> Self { $name($round(self.0 + o.0)) }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { $name($round(self.0 * o.0)) }
            /// The half format's fused step (an elementwise one; the sums' steps are
            /// `plus_product`).
            #[inline(always)]
            fn mul_add(self, z: Self, acc: Self) -> Self { Self::of(self.half().mul_add(z.half(), acc.half())) }
            /// A sum's step in f32: RN32(self + RN32(w·z)), or RN32(w·z + self) with `fma`.
            #[inline(always)]
            fn plus_product(self, w: Self, z: Self, fma: bool) -> Self { $name(self.0.plus_product(w.0, z.0, fma)) }
            /// The f32 sum rounded to the half format.
            #[inline(always)]
            fn end_sum(self) -> Self { $name($round(self.0)) }
            fn is_nan(self) -> bool { self.0.is_nan() }
            fn tanh(self) -> Self { Self::of(self.half().tanh()) }
            fn sigmoid(self) -> Self { Self::of(self.half().sigmoid()) }
        }
    };
}

half_with_f32_sums!(
    /// bf16 values, affine maps summed in f32 (`dtype="bf16", accumulate="f32"`).
    Bf16SumF32, bf16, round_bf16_in_f32, true, BinaryFormat::BF16, "bf16 (f32 sums)"
);
half_with_f32_sums!(
    /// f16 values, affine maps summed in f32 (`dtype="f16", accumulate="f32"`).
    F16SumF32, f16, round_f16_in_f32, false, BinaryFormat::F16, "f16 (f32 sums)"
);

/// A slice of uninitialised values of a half format with f32 sums as uninitialised f32s
/// (`repr(transparent)`: the same layout).
fn f32_slots<T>(out: &mut [MaybeUninit<T>]) -> &mut [MaybeUninit<f32>] {
    debug_assert!(std::mem::size_of::<T>() == 4 && std::mem::align_of::<T>() == 4);
    // SAFETY: called with Bf16SumF32 and F16SumF32 only, both repr(transparent) over f32;
    // MaybeUninit keeps the layout, and the slice's length and borrow carry over
    unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len()) }
}

/// Whether T is stored as one f32 (f32 itself, or a half format with f32 sums: both
/// `repr(transparent)` over f32).
pub fn f32_layout<T: 'static>() -> bool {
    use std::any::TypeId;
    let t = TypeId::of::<T>();
    t == TypeId::of::<f32>() || t == TypeId::of::<Bf16SumF32>() || t == TypeId::of::<F16SumF32>()
}

/// The same buffer seen as values of another f32-layout type (`f32_layout`: the values'
/// f32s unchanged, no copy); panics unless both types are.
pub fn cast_vec<A: 'static, B: 'static>(v: Vec<A>) -> Vec<B> {
    assert!(f32_layout::<A>() && f32_layout::<B>(), "cast_vec between types not stored as one f32");
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: A and B are both f32 or `repr(transparent)` wrappers of it (checked): same
    // size, alignment and validity, so the allocation, length and capacity carry over.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<B>(), v.len(), v.capacity()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sum that the half format's own steps lose and f32's keep: 256 + 1 + 1 in bf16 is
    /// 256 at each step (the quantum at 256 is 2), in f32 258, which bf16 holds.
    #[test]
    fn sums_run_in_f32_and_are_rounded_once_at_the_end() {
        let (b, one) = (Bf16SumF32::from_f64_rounded(256.0), Bf16SumF32::one());
        for fma in [false, true] {
            let acc = b.plus_product(one, one, fma).plus_product(one, one, fma);
            assert_eq!(acc.0, 258.0);
            assert_eq!(acc.end_sum().0, 258.0);
            let half = bf16::from_f64(256.0).plus_product(bf16::ONE, bf16::ONE, fma).plus_product(bf16::ONE, bf16::ONE, fma);
            assert_eq!(half.to_f64(), 256.0, "the half format's own sum rounds at each step");
        }
        // 256 + 1 + 1 + 1 = 259 ties to 260 at the end (bf16's grid at 256 is 2 apart)
        let acc = (0..3).fold(b, |a, _| a.plus_product(one, one, false));
        assert_eq!(acc.end_sum().0, 260.0);
        // f16: 2048 + 1 in f32 is 2049, rounded once to 2048 (ties to even)
        let acc = F16SumF32::from_f64_rounded(2048.0).plus_product(F16SumF32::one(), F16SumF32::one(), false);
        assert_eq!((acc.0, acc.end_sum().0), (2049.0, 2048.0));
    }

    /// The slice roundings (a run's inputs: `round_f32_slice_uninit` vector by vector, and
    /// f16 inputs by `round_f16_slice_uninit`) give `from_f32_rounded`'s bits value by
    /// value: f32s around every half-format boundary (ties, subnormals, overflow, NaN
    /// payloads), lengths that leave a partial vector, and every f16.
    #[test]
    fn slice_roundings_are_the_value_roundings() {
        fn check<T: Float + Copy>(xs: &[f32], halves: &[f16], bits: impl Fn(T) -> u32) {
            for len in [xs.len(), 0, 1, 15, 17, 31] {
                let mut out = vec![MaybeUninit::<T>::uninit(); len];
                T::round_f32_slice_uninit(&xs[..len], &mut out);
                for (o, &x) in out.iter().zip(xs) {
                    // SAFETY: the contract: every value of an output of the input's length
                    assert_eq!(bits(unsafe { o.assume_init() }), bits(T::from_f32_rounded(x)), "{} of {x:e} ({:#x})", T::NAME, x.to_bits());
                }
            }
            let mut out = vec![MaybeUninit::<T>::uninit(); halves.len()];
            T::round_f16_slice_uninit(halves, &mut out);
            for (o, &h) in out.iter().zip(halves) {
                // SAFETY: as above
                assert_eq!(bits(unsafe { o.assume_init() }), bits(T::from_f32_rounded(h.to_f32())), "{} of f16 {h}", T::NAME);
            }
        }
        let mut xs: Vec<f32> = Vec::new();
        for e in (0u32..=255).map(|e| e << 23) {
            for low in [0u32, 1, 0xfff, 0x1000, 0x1001, 0x2fff, 0x3000, 0x7fff, 0x8000, 0x8001, 0x1_8000, 0x7f_ffff] {
                xs.extend([e | low, (e | low) | 0x8000_0000].map(f32::from_bits));
            }
        }
        xs.extend([65504.0f32, 65519.99, 65520.0, 5.96e-8, 2.98e-8, 2.99e-8, 6.1e-5]);
        let halves: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        check::<F16SumF32>(&xs, &halves, |v| v.0.to_bits());
        check::<Bf16SumF32>(&xs, &halves, |v| v.0.to_bits());
    }

    /// Everything but the sums is the half format's: constructors, elementwise operations,
    /// activations, overflow to ±inf.
    #[test]
    fn values_and_elementwise_operations_are_the_half_formats() {
        let xs = [0.1, -3.7, 1.0e-6, 65519.0, 65520.0, 3.0e38, 7.25, -0.0];
        for &x in &xs {
            assert_eq!(Bf16SumF32::from_f64_rounded(x).to_f64(), bf16::from_f64_rounded(x).to_f64());
            assert_eq!(F16SumF32::from_f64_rounded(x).to_f64(), f16::from_f64_rounded(x).to_f64());
            assert_eq!(Bf16SumF32::from_f32_rounded(x as f32).to_f64(), bf16::from_f32_rounded(x as f32).to_f64());
            assert_eq!(F16SumF32::from_f32_rounded(x as f32).to_f64(), f16::from_f32_rounded(x as f32).to_f64());
            for &y in &xs {
                let (a, b) = (Bf16SumF32::from_f64_rounded(x), Bf16SumF32::from_f64_rounded(y));
                let (p, q) = (bf16::from_f64_rounded(x), bf16::from_f64_rounded(y));
                assert_eq!(a.add(b).to_f64().to_bits(), p.add(q).to_f64().to_bits());
                assert_eq!(a.mul(b).to_f64().to_bits(), p.mul(q).to_f64().to_bits());
                let (a, b) = (F16SumF32::from_f64_rounded(x), F16SumF32::from_f64_rounded(y));
                let (p, q) = (f16::from_f64_rounded(x), f16::from_f64_rounded(y));
                assert_eq!(a.add(b).to_f64().to_bits(), p.add(q).to_f64().to_bits());
                assert_eq!(a.mul(b).to_f64().to_bits(), p.mul(q).to_f64().to_bits());
            }
            let a = Bf16SumF32::from_f64_rounded(x);
            assert_eq!(a.tanh().to_f64(), bf16::from_f64_rounded(x).tanh().to_f64());
            assert_eq!(a.sigmoid().to_f64(), bf16::from_f64_rounded(x).sigmoid().to_f64());
        }
        assert_eq!(F16SumF32(70000.0).end_sum().0, f32::INFINITY);
        let v = vec![Bf16SumF32(1.5), Bf16SumF32(-2.0)];
        let (p, c) = (v.as_ptr() as usize, v.capacity());
        let w: Vec<f32> = cast_vec(v);
        assert_eq!((w.as_ptr() as usize, w.capacity(), w.as_slice()), (p, c, &[1.5f32, -2.0][..]));
        assert!(Bf16SumF32(f32::NAN).end_sum().is_nan());
    }
}
