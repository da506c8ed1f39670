//! A slice of one generic type seen as another that the caller knows to be the same type
//! (the kernels are generic over a format F and dispatch on the concrete f32/f64 inside):
//! checked by `TypeId`, so a wrong guess panics instead of reinterpreting memory.

use std::any::TypeId;

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
