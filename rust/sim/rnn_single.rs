//! One sequence of a SimpleRNN a tick at a time in registers: the lock-step kernel's path for
//! a block of one sequence on one thread (`float_batch::run_block`) when the hidden size is
//! at most 64 in f32 (and bf16 / f16 with f32 sums, in f32 lanes) or 32 in f64. With
//! AVX-512 the units are vectors of 16 f32 or 8 f64 lanes (`V512`, `V512h`, `V512d`), with
//! AVX2 + FMA of 8 or 4 (`V256`, `V256h` with F16C, `V256d`: up to 8 vectors either way);
//! `gated_single_vectors`, the units padded to whole vectors with zero weights. Per tick:
//!
//!   h_t = act(b + Σ_k W[:, k]·x_k + Σ_j V[:, j]·h_{t−1, j})   (k, then j ascending; fused
//!   or mul-then-add as the run's `fma`)
//!
//! the order of `FloatPlan` and of the tiles (one accumulator per unit from the bias, the
//! input terms, then the recurrent ones), so the same bits on every width. A call runs a
//! range of ticks ([`AnyRnn::ticks`]): h_t is written to the block's ring slot of tick t
//! (`Ring`) and kept for the next tick in registers (one vector: its lanes broadcast by
//! permutes, as `gated_single` does) or in a small buffer stored whole (several vectors);
//! only the range's first tick reads h_{t−1} from the ring. tanh/σ are the exact
//! activations of the vectors (`Vector::act`: in registers for f32, one call over the
//! tick's values for f64). Against the tiles at batch 1, hidden 16, input 4, tanh, 1 thread
//! (Zen 4): f32 113 → 59 ns per tick, f64 198 → 154; with the identity 82 → 32 and 88 → 42
//! (the tile driver, its scratch rows and a call per tick cost more than the 20 dependent
//! products). The f64 tick is now mostly its tanh call's latency (~110 ns for 16 values).
//! Until session 68 a call ran one tick, reading h_{t−1} back from the ring slot its masked
//! store had just written (Zen 5, batch 1, 1 thread, hidden 16, ns per tick: f32 tanh 42.0
//! → 37.9, the identity 25.0 → 17.5, f64 tanh 71.2 → 64.8; hidden 64, four vectors, 150
//! either way).

use crate::net::activation::Activation;
use crate::num::f32_sums::{cast_vec, Bf16SumF32, F16SumF32};
use crate::sim::float_engine::FloatPlan;
use crate::sim::lanes::Rounding;
use std::any::Any;
use std::ops::Range;

/// Largest hidden size run here, f32 (4 vectors of 16 with AVX-512, 8 of 8 with AVX2) and
/// f64 (4 vectors of 8, or 8 of 4).
pub const MAX_HIDDEN_F32: usize = 64;
pub const MAX_HIDDEN_F64: usize = 32;

/// A SimpleRNN's weights for this kernel: Wᵀ and Vᵀ k-major, each row padded to Q·L units
/// with zeros, the bias likewise.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub struct RnnLayer<E> {
    d: usize,
    n: usize,
    /// lanes of a vector: 16 (f32 lanes) or 8 (f64) with AVX-512, 8 or 4 with AVX2
    lanes: usize,
    /// vectors of the units
    q: usize,
    act: Activation,
    /// the arithmetic of the lanes: f32 or f64 (their own), or bf16 / f16 with f32 sums
    /// (f32 lanes, `gated_single_vectors::V512h`)
    format: Rounding,
    wx: Vec<E>,
    v: Vec<E>,
    b: Vec<E>,
}

/// A layer packed for this kernel, in its lane type.
pub enum AnyRnn {
    F32(RnnLayer<f32>),
    F64(RnnLayer<f64>),
    /// f16 in its own arithmetic (binary16 bits, AVX512-FP16: `gated_single_f16::V256ph`)
    F16(RnnLayer<u16>),
}

/// `plan` (a `FloatPlan` of some format) packed for this kernel when its format is f32, f64
/// or a half format with f32 sums (`accumulate="f32"`, in f32 lanes; not with the
/// approximate activations, which are f32's), its hidden size fits, and the CPU has AVX-512
/// F/VL/DQ and FMA or else AVX2 and FMA (and F16C for the half formats). f16 in its own
/// arithmetic needs AVX512-FP16.
pub fn pack_any(plan: &dyn Any) -> Option<AnyRnn> {
    use crate::sim::cpu;
    let wide = cpu::avx512();
    if !wide && !cpu::avx2_fma() {
        return None;
    }
    // f32 lanes per vector, and whether the half formats' conversions are there (F16C)
    let (l32, halves) = if wide { (16, true) } else { (8, cpu::avx2_f16c()) };
    if let Some(p) = plan.downcast_ref::<FloatPlan<f32>>() {
        return pack(p, l32, MAX_HIDDEN_F32, Rounding::F32).map(AnyRnn::F32);
    }
    if let Some(p) = plan.downcast_ref::<FloatPlan<f64>>() {
        return pack(p, l32 / 2, MAX_HIDDEN_F64, Rounding::F64).map(AnyRnn::F64);
    }
    if let Some(p) = plan.downcast_ref::<FloatPlan<half::f16>>() {
        if !crate::sim::cells::gated_single::f16_available() {
            return None;
        }
        return pack(p, 16, MAX_HIDDEN_F32, Rounding::F16).map(|l| AnyRnn::F16(l.in_bits()));
    }
    if !halves {
        return None;
    }
    if let Some(p) = plan.downcast_ref::<FloatPlan<Bf16SumF32>>() {
        return pack(p, l32, MAX_HIDDEN_F32, Rounding::Bf16).map(|l| AnyRnn::F32(l.in_f32()));
    }
    if let Some(p) = plan.downcast_ref::<FloatPlan<F16SumF32>>() {
        return pack(p, l32, MAX_HIDDEN_F32, Rounding::F16).map(|l| AnyRnn::F32(l.in_f32()));
    }
    None
}

impl<E: 'static> RnnLayer<E> {
    /// The same layer with its values seen as f32s (E stored as one f32: `f32_sums::cast_vec`).
    fn in_f32(self) -> RnnLayer<f32> {
        RnnLayer { d: self.d, n: self.n, lanes: self.lanes, q: self.q, act: self.act, format: self.format, wx: cast_vec(self.wx), v: cast_vec(self.v), b: cast_vec(self.b) }
    }
}

impl RnnLayer<half::f16> {
    /// The same layer as binary16 bits.
    fn in_bits(self) -> RnnLayer<u16> {
        let bits = |v: Vec<half::f16>| v.into_iter().map(half::f16::to_bits).collect();
        RnnLayer { d: self.d, n: self.n, lanes: self.lanes, q: self.q, act: self.act, format: self.format, wx: bits(self.wx), v: bits(self.v), b: bits(self.b) }
    }
}

fn pack<E: crate::num::float::Float + Copy>(p: &FloatPlan<E>, lanes: usize, max: usize, format: Rounding) -> Option<RnnLayer<E>> {
    let (d, n) = (p.d, p.n_in);
    let halves = matches!(format, Rounding::Bf16 | Rounding::F16);
    if d == 0 || d > max || (halves && matches!(p.activation, Activation::ApproxTanh | Activation::ApproxSigmoid)) {
        return None;
    }
    let q = d.div_ceil(lanes);
    let width = q * lanes;
    // rows k of a k-major matrix (k·d + unit) at stride `width`
    let padded = |m: &[E], rows: usize| {
        let mut out = vec![E::zero(); rows * width];
        for k in 0..rows {
            out[k * width..k * width + d].copy_from_slice(&m[k * d..(k + 1) * d]);
        }
        out
    };
    let mut b = vec![E::zero(); width];
    b[..d].copy_from_slice(&p.b);
    Some(RnnLayer { d, n, lanes, q, act: p.activation, format, wx: padded(&p.wt, n), v: padded(&p.vt, d), b })
}

/// The block's ring of state slots (`float_batch::run_block`, one sequence): slot k holds
/// `len` values from k·len; tick t reads h_{t−1} from slot t mod `slots` and writes h_t to
/// slot (t + 1) mod `slots`, its first d values.
pub struct Ring<'a, C> {
    pub values: &'a mut [C],
    pub len: usize,
    pub slots: usize,
}

impl AnyRnn {
    /// Ticks `ticks` of one sequence, each h_t into its ring slot (`Ring`), from the inputs
    /// `x` (n values per tick from `ticks.start`), all of the layer's lane type C (f32 or
    /// f64: checked by `same_type`).
    pub fn ticks<C: 'static>(&self, x: &[C], ring: Ring<'_, C>, ticks: Range<usize>, fma: bool) {
        #[cfg(target_arch = "x86_64")]
        {
            use crate::sim::same_type::slice;
            match self {
                AnyRnn::F32(l) => {
                    let (x, ring) = (slice(x), ring.of_lanes());
                    match (l.format, l.lanes) {
                        (Rounding::Bf16, 16) => x86::ticks::<x86::V512h<true>>(l, x, ring, ticks, fma),
                        (Rounding::F16, 16) => x86::ticks::<x86::V512h<false>>(l, x, ring, ticks, fma),
                        (_, 16) => x86::ticks::<x86::V512>(l, x, ring, ticks, fma),
                        (Rounding::Bf16, _) => x86::ticks_avx2_f16c::<x86::V256h<true>>(l, x, ring, ticks, fma),
                        (Rounding::F16, _) => x86::ticks_avx2_f16c::<x86::V256h<false>>(l, x, ring, ticks, fma),
                        _ => x86::ticks_avx2::<x86::V256>(l, x, ring, ticks, fma),
                    }
                }
                AnyRnn::F64(l) if l.lanes == 8 => x86::ticks::<x86::V512d>(l, slice(x), ring.of_lanes(), ticks, fma),
                AnyRnn::F64(l) => x86::ticks_avx2::<x86::V256d>(l, slice(x), ring.of_lanes(), ticks, fma),
                AnyRnn::F16(l) => x86::ticks_f16(l, slice(x), ring.of_lanes(), ticks, fma),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, ring, ticks, fma);
            unreachable!("pack_any makes no layer off x86-64")
        }
    }
}

impl<'a, C: 'static> Ring<'a, C> {
    /// The same ring as values of E, which C must be (`same_type`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn of_lanes<E: 'static>(self) -> Ring<'a, E> {
        Ring { values: crate::sim::same_type::slice_mut(self.values), len: self.len, slots: self.slots }
    }
}

impl<C> Ring<'_, C> {
    /// Whether the slots hold what ticks of a layer of `d` units read and write.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn fits(&self, d: usize) -> bool {
        self.len >= d && self.slots >= 2 && self.values.len() >= self.slots * self.len
    }
}

/// The slot tick t writes (h_t; tick t + 1 reads it) of a ring at `values` (`Ring`).
///
/// # Safety
/// `values` must hold `slots · len` values.
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
unsafe fn slot_of<E>(values: *mut E, len: usize, slots: usize, t: usize) -> *mut E {
    // SAFETY: the caller's promise; the offset is below slots · len
    unsafe { values.add((t + 1) % slots * len) }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{slot_of, Ring, RnnLayer};
    pub(super) use crate::sim::cells::gated_single::vectors::{Vector, V256, V256d, V256h, V512, V512d, V512h};
    use crate::sim::cells::gated_single::x86::{accumulate, affine, live, Memory, Registers, Source};
    use std::mem::MaybeUninit;
    use std::ops::Range;

    /// `$entry::<[$v,] Q, FUSED>($args)` for the layer's Q = `$q` vectors (one arm per
    /// literal in `[..]`, the last for every larger count) and FUSED = `$fma`.
    macro_rules! by_q {
        ($entry:ident, $q:expr, $fma:expr, [$($n:literal),*], $last:literal, $args:tt) => {
            match ($q, $fma) {
                $(($n, true) => $entry::<$n, true> $args, ($n, false) => $entry::<$n, false> $args,)*
                (_, true) => $entry::<$last, true> $args,
                (_, false) => $entry::<$last, false> $args,
            }
        };
        ($entry:ident::<$v:ty>, $q:expr, $fma:expr, [$($n:literal),*], $last:literal, $args:tt) => {
            match ($q, $fma) {
                $(($n, true) => $entry::<$v, $n, true> $args, ($n, false) => $entry::<$v, $n, false> $args,)*
                (_, true) => $entry::<$v, $last, true> $args,
                (_, false) => $entry::<$v, $last, false> $args,
            }
        };
    }

    /// `AnyRnn::ticks` on the layer's AVX-512 vectors V (16 f32 or 8 f64 lanes, up to 4).
    pub(super) fn ticks<V: Vector>(l: &RnnLayer<V::E>, x: &[V::E], ring: Ring<'_, V::E>, ticks: Range<usize>, fma: bool) {
        assert!(crate::sim::cpu::avx512() && x.len() >= ticks.len() * l.n && ring.fits(l.d));
        let (x, r, len, slots) = (x.as_ptr(), ring.values.as_mut_ptr(), ring.len, ring.slots);
        // SAFETY: the CPU has AVX-512 F/VL/DQ and FMA, and the slices hold what the ticks read
        // and write (asserted: every tick's inputs, every slot; d values stored per slot).
        unsafe { by_q!(ticks_512::<V>, l.q, fma, [1, 2, 3], 4, (l, x, r, len, slots, ticks)) }
    }

    /// `AnyRnn::ticks` on the layer's AVX2 vectors V (8 f32 or 4 f64 lanes, up to 8).
    pub(super) fn ticks_avx2<V: Vector>(l: &RnnLayer<V::E>, x: &[V::E], ring: Ring<'_, V::E>, ticks: Range<usize>, fma: bool) {
        assert!(crate::sim::cpu::avx2_fma() && x.len() >= ticks.len() * l.n && ring.fits(l.d));
        let (x, r, len, slots) = (x.as_ptr(), ring.values.as_mut_ptr(), ring.len, ring.slots);
        // SAFETY: the CPU has AVX2 and FMA (asserted); the slices as in `ticks`.
        unsafe { by_q!(ticks_256::<V>, l.q, fma, [1, 2, 3, 4, 5, 6, 7], 8, (l, x, r, len, slots, ticks)) }
    }

    /// [`ticks_avx2`] with F16C as well, for the half formats' `V256h`. (One function per
    /// feature set: a run-time flag choosing between the two instantiated `ticks_256::<V256h>`,
    /// which calls F16C's conversions out of line, one call per vector; LLVM removed it only
    /// while it inlined this entry into its caller, which a change of codegen units undid.)
    pub(super) fn ticks_avx2_f16c<V: Vector>(l: &RnnLayer<V::E>, x: &[V::E], ring: Ring<'_, V::E>, ticks: Range<usize>, fma: bool) {
        use crate::sim::cpu;
        assert!(cpu::avx2_fma() && cpu::avx2_f16c() && x.len() >= ticks.len() * l.n && ring.fits(l.d));
        let (x, r, len, slots) = (x.as_ptr(), ring.values.as_mut_ptr(), ring.len, ring.slots);
        // SAFETY: the CPU has AVX2, FMA and F16C (asserted); the slices as in `ticks`.
        unsafe { by_q!(ticks_256_f16c::<V>, l.q, fma, [1, 2, 3, 4, 5, 6, 7], 8, (l, x, r, len, slots, ticks)) }
    }

    /// `AnyRnn::ticks` in f16's own arithmetic, a tick per call (`tick_f16_native`): each x_k
    /// (f32 lanes holding f16 values) converted as it is broadcast, h_{t−1} converted into
    /// registers from its slot (the recurrent terms' h_j broadcast from them by permutes),
    /// h_t converted back as it is stored (all exact).
    pub(super) fn ticks_f16(l: &RnnLayer<u16>, x: &[f32], ring: Ring<'_, f32>, ticks: Range<usize>, fma: bool) {
        assert!(crate::sim::cells::gated_single::f16_available() && x.len() >= ticks.len() * l.n && ring.fits(l.d));
        let (xp, r, len, slots) = (x.as_ptr(), ring.values.as_mut_ptr(), ring.len, ring.slots);
        for t in ticks.clone() {
            // SAFETY: the CPU has AVX512-FP16, BW and F16C (checked); the slices hold what the
            // tick reads and writes (asserted; h and out through masked loads and stores of d
            // values, in two different slots: slots ≥ 2)
            unsafe {
                let (x, h, out) = (xp.add((t - ticks.start) * l.n), r.add(t % slots * len), slot_of(r, len, slots, t));
                by_q!(tick_f16_native, l.q, fma, [1, 2, 3], 4, (l, x, h, out))
            }
        }
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512fp16,fma,avx2,avx,f16c")]
    unsafe fn tick_f16_native<const Q: usize, const FUSED: bool>(l: &RnnLayer<u16>, x: *const f32, h: *const f32, out: *mut f32) {
        use crate::sim::cells::gated_single::f16::{F32Inputs, V256ph};
        use crate::sim::simd_round::first_lanes;
        use std::arch::x86_64::{_mm512_mask_storeu_ps, _mm512_maskz_loadu_ps};
        let mut hv = [V256ph::zero(); Q];
        for (q, v) in hv.iter_mut().enumerate() {
            *v = V256ph::narrow(_mm512_maskz_loadu_ps(first_lanes(live::<V256ph>(q, l.d)), h.add(q * 16)));
        }
        let pre = affine::<V256ph, Q, 1, FUSED>(l.wx.as_ptr(), l.b.as_ptr(), F32Inputs(x), l.n);
        let a = accumulate::<V256ph, Q, 1, FUSED>(pre, l.v.as_ptr(), Registers(&hv), l.d);
        for (q, v) in a[0].iter().enumerate() {
            let y = v.end_sum_act(l.act);
            _mm512_mask_storeu_ps(out.add(q * 16), first_lanes(live::<V256ph>(q, l.d)), y.wide());
        }
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2,avx")]
    unsafe fn ticks_512<V: Vector, const Q: usize, const FUSED: bool>(l: &RnnLayer<V::E>, x: *const V::E, ring: *mut V::E, len: usize, slots: usize, ticks: Range<usize>) {
        ticks_body::<V, Q, FUSED>(l, x, ring, len, slots, ticks)
    }

    #[target_feature(enable = "avx2,avx,fma")]
    unsafe fn ticks_256<V: Vector, const Q: usize, const FUSED: bool>(l: &RnnLayer<V::E>, x: *const V::E, ring: *mut V::E, len: usize, slots: usize, ticks: Range<usize>) {
        ticks_body::<V, Q, FUSED>(l, x, ring, len, slots, ticks)
    }

    #[target_feature(enable = "avx2,avx,fma,f16c")]
    unsafe fn ticks_256_f16c<V: Vector, const Q: usize, const FUSED: bool>(l: &RnnLayer<V::E>, x: *const V::E, ring: *mut V::E, len: usize, slots: usize, ticks: Range<usize>) {
        ticks_body::<V, Q, FUSED>(l, x, ring, len, slots, ticks)
    }

    /// Lanes of h_t that `ticks_body` keeps for the next tick: Q·L ≤ 64 (f32: 4 vectors of
    /// 16 or 8 of 8; f64: 4 of 8 or 8 of 4).
    const KEPT_LANES: usize = 64;

    /// The ticks on the vectors V (see the module doc), inlined into its entry: h_{t−1} of
    /// the first from its slot, then from the registers (Q = 1: permutes) or from `kept`.
    #[inline(always)]
    unsafe fn ticks_body<V: Vector, const Q: usize, const FUSED: bool>(l: &RnnLayer<V::E>, x: *const V::E, ring: *mut V::E, len: usize, slots: usize, ticks: Range<usize>) {
        let Range { start, end } = ticks;
        if start == end {
            return;
        }
        assert!(Q * V::LANES <= KEPT_LANES);
        let mut kept = MaybeUninit::<[V::E; KEPT_LANES]>::uninit();
        let kp = kept.as_mut_ptr().cast::<V::E>();
        let mut h = step::<V, Q, FUSED>(l, x, Memory(ring.add(start % slots * len).cast_const()));
        keep::<V, Q>(&h, kp, slot_of(ring, len, slots, start), l.d);
        for t in start + 1..end {
            let xt = x.add((t - start) * l.n);
            h = if Q == 1 { step::<V, Q, FUSED>(l, xt, Registers(&h)) } else { step::<V, Q, FUSED>(l, xt, Memory(kp.cast_const())) };
            keep::<V, Q>(&h, kp, slot_of(ring, len, slots, t), l.d);
        }
    }

    /// h_t's d values into its slot and, with several vectors, all its lanes into `kept`
    /// (whole stores: the next tick's broadcasts read them).
    #[inline(always)]
    unsafe fn keep<V: Vector, const Q: usize>(h: &[V; Q], kept: *mut V::E, slot: *mut V::E, d: usize) {
        for (q, v) in h.iter().enumerate() {
            if Q > 1 {
                v.store(kept.add(q * V::LANES));
            }
            v.store_first(slot.add(q * V::LANES), live::<V>(q, d));
        }
    }

    /// One tick: h_t from the inputs at x and h_{t−1} from `h` (the padded lanes hold the
    /// activation of a zero sum, never read as inputs).
    #[inline(always)]
    unsafe fn step<V: Vector, const Q: usize, const FUSED: bool>(l: &RnnLayer<V::E>, x: *const V::E, h: impl Source<V>) -> [V; Q] {
        let pre = affine::<V, Q, 1, FUSED>(l.wx.as_ptr(), l.b.as_ptr(), Memory(x), l.n);
        let mut a = accumulate::<V, Q, 1, FUSED>(pre, l.v.as_ptr(), h, l.d);
        // one sum per unit (bias, inputs, recurrent terms), ended once (`Vector::end_sum`),
        // then the activation
        if V::GROUPED {
            for v in a[0].iter_mut() {
                *v = v.end_sum();
            }
            V::act_gates(&mut a, l.act, l.act, 1);
        } else {
            for v in a[0].iter_mut() {
                *v = v.end_sum_act(l.act);
            }
        }
        a[0]
    }
}
