//! The Ziv rounding test shared by the fast activations (`fast_tanh`, `fast_sigmoid`): how
//! a cheap approximation y of f(x) yields **exactly** the documented result round_F(D(x)),
//! D the documented f64 value (correctly rounded, num/float.rs), F the lane's format.
//!
//! If |y − f(x)| and |D(x) − f(x)| are both below δ·|y| (δ = 2^−36: the approximations are
//! good to 2^−38 or better, D to 2^−53), both lie in [y(1 − δ), y(1 + δ)]. Rounding is
//! monotone, so when both ends round to the same value r of F, r = round_F(D(x)). Otherwise
//! (a midpoint of F within 2^−36 of y: about one value in 2^11 for f32) D is evaluated.
//! The speed depends on the path (AVX-512, AVX2, portable), the bits do not.

#[cfg(test)]
use crate::num::round::{round_f64_in, BinaryFormat};

/// The relative half-width of the decision interval.
pub const DELTA: f64 = 1.0 / (1u64 << 36) as f64;

/// The activations with a fast path.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Func {
    Tanh,
    Sigmoid,
}

/// An activation: a vectorisable approximation and the documented formula.
pub trait Approximated {
    const FUNC: Func;
    /// f(x) to a relative error below 2^−38 (branch-free, so loops over it vectorise).
    fn approx(x: f64) -> f64;
    /// The documented f64 value.
    fn documented(x: f64) -> f64;
}

/// round_F(D(x)) for F = f32.
#[inline]
pub fn to_f32<A: Approximated>(x: f32) -> f32 {
    let y = A::approx(f64::from(x));
    let (lo, hi) = ((y * (1.0 - DELTA)) as f32, (y * (1.0 + DELTA)) as f32);
    if lo.to_bits() == hi.to_bits() { lo } else { A::documented(f64::from(x)) as f32 }
}

/// `to_f32` over a slice, in place: AVX-512 + FMA (`activation_avx512`), else AVX2 + FMA
/// (`activation_avx2`), else portable vectorised passes.
pub fn slice_f32<A: Approximated>(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::sim::activation_avx512::apply::<A>(xs) || crate::sim::activation_avx2::apply::<A>(xs) {
        return;
    }
    slice_f32_portable::<A>(xs)
}

#[inline(always)]
fn slice_f32_portable<A: Approximated>(xs: &mut [f32]) {
    const CHUNK: usize = 64;
    let (mut ys, mut lo, mut hi) = ([0f64; CHUNK], [0f32; CHUNK], [0f32; CHUNK]);
    for chunk in xs.chunks_mut(CHUNK) {
        let m = chunk.len();
        // straight-line passes the compiler vectorises
        for (y, &x) in ys[..m].iter_mut().zip(chunk.iter()) {
            *y = A::approx(f64::from(x));
        }
        for ((l, h), &y) in lo[..m].iter_mut().zip(hi[..m].iter_mut()).zip(ys[..m].iter()) {
            *l = (y * (1.0 - DELTA)) as f32;
            *h = (y * (1.0 + DELTA)) as f32;
        }
        let undecided: u32 = lo[..m].iter().zip(&hi[..m]).map(|(l, h)| u32::from(l.to_bits() != h.to_bits())).sum();
        // (a separate branch: merged into one loop, the compiler would evaluate the
        // documented formula for every element)
        if undecided == 0 {
            chunk.copy_from_slice(&lo[..m]);
        } else {
            for ((x, l), h) in chunk.iter_mut().zip(lo.iter()).zip(hi.iter()) {
                *x = if l.to_bits() == h.to_bits() { *l } else { A::documented(f64::from(*x)) as f32 };
            }
        }
    }
}

/// The portable slice path (tests compare it with the dispatched one).
#[cfg(test)]
pub fn slice_f32_portable_for_tests<A: Approximated>(xs: &mut [f32]) {
    slice_f32_portable::<A>(xs)
}

/// round_F(D(x)) for a half format F (f16 or bf16) by the Ziv test, as an f32: the half
/// formats use exact tables (`half_tables`), whose test compares them with this.
#[cfg(test)]
pub fn to_half_for_tests(func: Func, x: f32, fmt: BinaryFormat) -> f32 {
    fn to_half<A: Approximated>(x: f32, fmt: BinaryFormat) -> f32 {
        let y = A::approx(f64::from(x));
        let (lo, hi) = (round_f64_in(y * (1.0 - DELTA), fmt), round_f64_in(y * (1.0 + DELTA), fmt));
        let r = if lo.to_bits() == hi.to_bits() { lo } else { round_f64_in(A::documented(f64::from(x)), fmt) };
        r as f32
    }
    match func {
        Func::Tanh => to_half::<crate::sim::fast_tanh::Tanh>(x, fmt),
        Func::Sigmoid => to_half::<crate::sim::fast_sigmoid::Sigmoid>(x, fmt),
    }
}
