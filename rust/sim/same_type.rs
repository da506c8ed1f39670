//! A slice of one generic type seen as another that the caller knows to be the same type
//! (the kernels are generic over a format F and dispatch on the concrete f32/f64 inside):
//! checked by `TypeId`, so a wrong guess panics instead of reinterpreting memory.

use std::any::TypeId;
use std::mem::MaybeUninit;

/// `s` as a slice of B; panics unless A is B.
pub fn slice<A: 'static, B: 'static>(s: &[A]) -> &[B] {
    assert_eq!(TypeId::of::<A>(), TypeId::of::<B>(), "same_type::slice of another type");
    // SAFETY: A and B are the same type (checked above), so the slice is reinterpreted as itself.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<B>(), s.len()) }
}

/// `s` as a mutable slice of B; panics unless A is B.
pub fn slice_mut<A: 'static, B: 'static>(s: &mut [A]) -> &mut [B] {
    assert_eq!(TypeId::of::<A>(), TypeId::of::<B>(), "same_type::slice_mut of another type");
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<B>(), s.len()) }
}

/// `s` (values not yet written) as a mutable slice of B; panics unless A is B or both are
/// stored as one f32 (`f32_sums::f32_layout`: f32 and the half formats with f32 sums, whose
/// values are the f32s of the lanes).
pub fn uninit_lanes_mut<A: 'static, B: 'static>(s: &mut [MaybeUninit<A>]) -> &mut [MaybeUninit<B>] {
    use crate::num::f32_sums::f32_layout;
    assert!(TypeId::of::<A>() == TypeId::of::<B>() || (f32_layout::<A>() && f32_layout::<B>()), "same_type::uninit_lanes_mut of another layout");
    // SAFETY: A and B are the same type, or both f32 / `repr(transparent)` over f32 (checked):
    // same size, alignment and validity.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<MaybeUninit<B>>(), s.len()) }
}

/// `s` (f16 values not yet written) as their binary16 bits; panics unless A is `half::f16`
/// (`repr(transparent)` over u16).
pub fn f16_bits_mut<A: 'static>(s: &mut [MaybeUninit<A>]) -> &mut [MaybeUninit<u16>] {
    assert_eq!(TypeId::of::<A>(), TypeId::of::<half::f16>(), "same_type::f16_bits_mut of another type");
    // SAFETY: A is half::f16, a transparent u16 (checked).
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<MaybeUninit<u16>>(), s.len()) }
}

/// `s` (f16 values) as their binary16 bits, or None unless A is `half::f16`
/// (`repr(transparent)` over u16).
pub fn f16_bits<A: 'static>(s: &[A]) -> Option<&[u16]> {
    (TypeId::of::<A>() == TypeId::of::<half::f16>()).then(|| {
        // SAFETY: A is half::f16, a transparent u16 (checked).
        unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u16>(), s.len()) }
    })
}
