//! The first tier of `activation_f64` (`activation_f64_quick`) written out in vector
//! operations (`activation_f64_vectors::Pd`: AVX2 + FMA, 4 f64 lanes per vector, or
//! AVX-512, 8): the same operations in the same order, so the same pairs and the same Ziv
//! bounds bit for bit (the test compares them lane by lane at both widths), and so the
//! same proofs (the error analysis is `activation_f64_quick`'s module doc).
//!
//! Why a second spelling: the evaluation is one long dependency chain (about 35 dependent
//! operations and a division, some 150 cycles per vector), and the out-of-order window
//! holds about one vector's worth of it, so the loop the compiler vectorised from the scalar
//! lanes ran near 20 cycles per value, bound by latency. Here a chunk of 64 values goes
//! through the evaluation in stages, one pass of its vectors (16 of 4 lanes) per stage, the
//! intermediate values kept in L1 between passes: σ in four (the reduction, the
//! polynomial, the table and the quotient's operands, the quotient and Ziv's test), tanh in
//! three (the reduction and the series, the table and the quotient's operands, the quotient
//! and Ziv's test; six before session 60's addition formula, `activation_f64_quick`). Within a pass the
//! vectors are independent and the chain is a fraction of the whole, so the window holds
//! several vectors of it: the tier alone measured σ 5.6 → 3.4 ns per value and tanh
//! 7.5 → 4.8 on Zen 3 (`f64_ns_per_value`), then 2.8 and 4.0 with the intermediate arrays
//! made once per slice ([`Scratch`]) instead of zeroed per chunk. Splitting the quotient
//! into two passes measured slower (σ 4.8–6.3 ns, with per-chunk arrays). Also: the 2^{j/512} table is read as (high, low) pairs, one 16-byte load per lane
//! with the index from memory (tanh's tanh(k/32) table likewise); and the undecided lanes come out
//! as a bit mask per vector, appended to the caller's list of positions. On AVX-512 the
//! same stages run on 8 lanes (8 vectors per chunk): on a 2026 Xeon, whole slices, σ
//! 2.6 → 1.9 and tanh 3.6 → 2.6 ns per value against the 4-lane spelling (3.0 and 3.8 for
//! the compiler's 8-lane vectorisation of the scalar lanes; the tier alone 2.3 → 1.5 and
//! 3.3 → 2.25).
//!
//! Short slices (at most [`SHORT`] values, a batch-1 tick's rows) take a second route with
//! AVX-512, [`short_pass_512`]: each vector's stages in a row, in registers, through the
//! same per-vector functions (`reduce_vector`, `polynomial_vector`, …, `tanh_finish`) that
//! the chunk's stage loops call, so again the same operations. There the call's latency is
//! what a tick waits for, and the stages' round trips through memory, the thread-local
//! scratch and the copies had cost more than the evaluation (Zen 4, batch-1 f64 SimpleRNN
//! at hidden 16: 147–160 → 124–126 ns per tick).
//!
//! With AVX2 (this module's 4-lane spelling), a batch-1 LSTM tick's σ gates and tanh
//! candidate run as one staged pass instead of two calls ([`sigmoid_tanh_pass`], session 64):
//! the stages take σ's vectors, then tanh's, and the two chains overlap; σ or tanh alone
//! through it measured slower than [`quick_pass`], so those keep their calls.
//!
//! Lanes outside the main ranges (NaN, tanh's tiny and saturated inputs, σ's saturated
//! inputs and the band (−746, −680] left to the exact computation) take the scalar
//! `*_lane`'s values: the same selections, vectorised.

use crate::num::correctly_rounded::{SIGMOID_ONE, SIGMOID_ZERO, TANH_ONE, TANH_TINY};
use crate::sim::activation_f64::{consts, Consts, FirstTier, SliceBuffers, CHUNK, MAGIC, SIGMOID_LOW};
use crate::sim::activation_f64_quick::{ERR_SIGMOID, ERR_TANH, ERR_TANH_FLOOR, TANH_SERIES, TANH_STEP};
use crate::sim::ziv::Func;
use crate::sim::activation_f64_vectors::{all, Pd};
use std::arch::x86_64::*;
use std::cell::RefCell;
use std::sync::LazyLock;

/// Vectors per chunk, at most (4 lanes).
const VECS: usize = CHUNK / 4;

/// The first tier over `xs` (at most CHUNK values), in place: the results into `xs`, except
/// at the values it leaves undecided, which keep their input and whose positions go into
/// `undecided`; returns how many it left. σ runs all the vectors of a full chunk (constant
/// trip counts, measured faster), tanh and a shorter σ the vectors holding input (a batch-1
/// tick of hidden 16 has 16 values: σ over 64 took 108 ns, over 16 40 on Zen 4). In place
/// since session 60: the chunk's first stage reads xs and its last writes it, where the
/// input and the results had gone through memcpy calls to and from the scratch and a
/// buffer (three per chunk: 11% of tanh's time over a slice on Zen 3).
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,avx,fma")]
pub(crate) unsafe fn quick_pass(f: Func, xs: &mut [f64], undecided: &mut [u8], s: &mut Scratch<__m256d>) -> usize {
    pass_body(f, xs, undecided, s)
}

/// [`quick_pass`] on 8 lanes.
///
/// # Safety
/// The CPU must have AVX-512 F, DQ and VL.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,avx,fma")]
pub(crate) unsafe fn quick_pass_512(f: Func, xs: &mut [f64], undecided: &mut [u8], s: &mut Scratch<__m512d>) -> usize {
    pass_body(f, xs, undecided, s)
}

/// The most values [`short_pass_512`] takes: 8 vectors of 8 lanes.
pub(crate) const SHORT: usize = 64;

/// The first tier over a short slice (at most [`SHORT`] values: a batch-1 tick's row) on 8
/// lanes, each vector's stages in a row in registers (`tanh_vector`, `sigmoid_vector`: the
/// same operations as the chunk's stages, so the same bits). A batch-1 tick waits for this
/// call: run in stages through the thread's kept scratch, its chain went through memory
/// between stages, behind a thread-local lookup and copies in and out. The results go into
/// `xs`, except at the undecided lanes, which keep their input; returns those lanes' bits
/// (lane i as bit i).
///
/// # Safety
/// The CPU must have AVX-512 F, DQ and VL.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,avx,fma")]
pub(crate) unsafe fn short_pass_512(f: Func, xs: &mut [f64]) -> u64 {
    let m = xs.len();
    assert!(m <= SHORT, "short_pass_512: more than {SHORT} values");
    let c = consts();
    let p = xs.as_mut_ptr();
    let mut open = 0;
    for i in 0..m.div_ceil(8) {
        // this vector's lanes of xs, the rest padded with 0.5 (an ordinary value); masked-off
        // lanes are neither read nor written
        let mask = ((1u32 << (m - 8 * i).min(8)) - 1) as __mmask8;
        let x = _mm512_mask_loadu_pd(_mm512_set1_pd(0.5), mask, p.add(8 * i));
        let (v, o) = match f {
            Func::Tanh => tanh_vector(x, c),
            Func::Sigmoid => sigmoid_vector(x, c),
        };
        let o = o as __mmask8 & mask;
        _mm512_mask_storeu_pd(p.add(8 * i), mask, _mm512_mask_blend_pd(o, v, x));
        open |= u64::from(o) << (8 * i);
    }
    open
}

/// Where a pass over `xs` in vectors of `l` lanes runs, and whether in place: whole vectors
/// run in place (xs's pointer, true); a partial last vector sends the values through `pad`
/// (room for them rounded up to whole vectors), the lanes past xs holding 0.5 (an ordinary
/// value), and the caller copies the first xs.len() back (false).
///
/// # Safety
/// `pad` must be valid for writes of xs.len() rounded up to a multiple of `l` values.
#[inline(always)]
unsafe fn in_place_or_padded(xs: &mut [f64], l: usize, pad: *mut f64) -> (*mut f64, bool) {
    let m = xs.len();
    let n = m.div_ceil(l) * l;
    if m == n {
        return (xs.as_mut_ptr(), true);
    }
    std::ptr::copy_nonoverlapping(xs.as_ptr(), pad, m);
    for i in m..n {
        *pad.add(i) = 0.5;
    }
    (pad, false)
}

/// σ over `xs[..nsig]` and tanh over the rest, the first tier of both in one staged pass on
/// 4 lanes (at most [`SHORT`] values, `nsig` a multiple of 4: a batch-1 LSTM tick's gates and
/// candidate). Each stage runs σ's vectors, then tanh's, through the same per-vector
/// functions as [`quick_pass`]'s chunks (so the same bits lane by lane), and the two chains
/// overlap where two calls would wait for one, then the other: a batch-1 tick waits for
/// this call. The results go into `xs`, except at the undecided lanes, which keep their
/// input; returns those lanes' bits (lane i as bit i).
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[target_feature(enable = "avx2,avx,fma")]
pub(crate) unsafe fn sigmoid_tanh_pass(xs: &mut [f64], nsig: usize, s: &mut Scratch<__m256d>) -> u64 {
    const L: usize = 4;
    let m = xs.len();
    assert!(m <= SHORT && nsig <= m && nsig % L == 0, "sigmoid_tanh_pass: {m} values, σ over {nsig}");
    let (nsv, nv) = (nsig / L, m.div_ceil(L));
    // (a partial last vector is tanh's)
    let mut pad = std::mem::MaybeUninit::<[f64; SHORT]>::uninit();
    let (p, whole) = in_place_or_padded(xs, L, pad.as_mut_ptr() as *mut f64);
    let c = consts();
    let table = c.tanh.as_ptr();
    let Scratch { x, open, e, q, sh, sl, z } = s;
    // stage 1: σ's reduction; tanh's reduction and series
    for i in 0..nsv {
        x[i] = <__m256d as Pd>::loadu(p.add(L * i));
        e.reduce(i, sigmoid_argument(x[i]), c);
    }
    for i in nsv..nv {
        x[i] = <__m256d as Pd>::loadu(p.add(L * i));
        (sh[i], sl[i], z[i]) = tanh_small(x[i], &mut e.j[i]);
    }
    // stage 2: σ's polynomial; tanh's table and quotient's operands
    for i in 0..nsv {
        e.polynomial(i);
    }
    for i in nsv..nv {
        [q.nh[i], q.nl[i], q.dh[i], q.dl[i]] = tanh_operands(table, &e.j[i], sh[i], sl[i]);
    }
    // stage 3: σ's table and quotient's operands
    for i in 0..nsv {
        [q.nh[i], q.nl[i], q.dh[i], q.dl[i]] = sigmoid_operands(x[i], e.parts(i));
    }
    // stage 4: the quotients and Ziv's tests
    for i in 0..nsv {
        let v;
        (v, open[i]) = sigmoid_finish(x[i], q.divide(i).0);
        <__m256d as Pd>::storeu(p.add(L * i), v);
    }
    for i in nsv..nv {
        let v;
        (v, open[i]) = tanh_finish(x[i], tanh_quotient(q.divide(i), z[i]));
        <__m256d as Pd>::storeu(p.add(L * i), v);
    }
    if !whole {
        std::ptr::copy_nonoverlapping(p, xs.as_mut_ptr(), m);
    }
    // the undecided lanes get their input back
    let inputs = x.as_ptr() as *const f64;
    let mut bits = 0u64;
    for (i, &o) in open[..nv].iter().enumerate() {
        bits |= u64::from(o) << (L * i);
    }
    if m < 64 {
        // (the pad's lanes)
        bits &= (1u64 << m) - 1;
    }
    let mut left = bits;
    while left != 0 {
        let lane = left.trailing_zeros() as usize;
        xs[lane] = *inputs.add(lane);
        left &= left - 1;
    }
    bits
}

#[inline(always)]
unsafe fn pass_body<V: Pd>(f: Func, xs: &mut [f64], undecided: &mut [u8], s: &mut Scratch<V>) -> usize {
    let m = xs.len();
    assert!(m <= CHUNK && undecided.len() >= m, "quick_pass: more than a chunk, or a buffer shorter than the input");
    let l = V::LANES;
    let nv = m.div_ceil(l);
    let mut pad = std::mem::MaybeUninit::<[f64; CHUNK]>::uninit();
    let (p, whole) = in_place_or_padded(xs, l, pad.as_mut_ptr() as *mut f64);
    let c = consts();
    match f {
        Func::Tanh => tanh_chunk(nv, p, s, c),
        // (a full chunk with the constant count, so that its loops keep constant trip counts)
        Func::Sigmoid if nv == CHUNK / V::LANES => sigmoid_chunk(CHUNK / V::LANES, p, s, c),
        Func::Sigmoid => sigmoid_chunk(nv, p, s, c),
    }
    if !whole {
        std::ptr::copy_nonoverlapping(p, xs.as_mut_ptr(), m);
    }
    // the undecided lanes get their input back (from the chunk's copy in the scratch)
    let inputs = s.x.as_ptr() as *const f64;
    let mut n = 0;
    for (i, &o) in s.open[..nv].iter().enumerate() {
        let mut bits = o;
        while bits != 0 {
            let lane = l * i + bits.trailing_zeros() as usize;
            if lane < m {
                xs[lane] = *inputs.add(lane);
                undecided[n] = lane as u8;
                n += 1;
            }
            bits &= bits - 1;
        }
    }
    n
}

/// The intermediate values of a chunk, one vector per entry (CHUNK / V::LANES of each
/// array used; about 7 KiB with 4 lanes, in L1), made once per slice: zeroing them per
/// chunk measured as a sixth of σ's time.
pub(crate) struct Scratch<V: Pd> {
    x: [V; VECS],
    /// The undecided lanes' bits.
    open: [u32; VECS],
    e: ExpStages<V>,
    q: Operands<V>,
    /// tanh: τ as a pair, and z (`tanh_small`).
    sh: [V; VECS],
    sl: [V; VECS],
    z: [V; VECS],
}

impl<V: Pd> Scratch<V> {
    pub(crate) fn new() -> Scratch<V> {
        // SAFETY: every field is an array of f64 vectors or of integers, for which all-zero
        // bits are a value.
        unsafe { std::mem::zeroed() }
    }
}

/// A thread's scratch of one width with `slice_body`'s buffers.
type Kept<V> = RefCell<Option<Box<(Scratch<V>, SliceBuffers)>>>;

thread_local! {
    /// Each thread's scratch and buffers of each width, made (zeroed) on first use. Made per
    /// call, the zeroing of their ~15 KiB was the larger part of a short slice: tanh over
    /// the 16 values of a batch-1 tick at hidden 16 took 191 ns, of which the tier 59 (Zen 4).
    static KEPT_256: Kept<__m256d> = const { RefCell::new(None) };
    static KEPT_512: Kept<__m512d> = const { RefCell::new(None) };
}

/// `run` with this thread's scratch and buffers of `V`'s width, or with new ones when those
/// are taken (a call inside `run`) or gone (the thread is ending).
fn with_kept<V: Pd, R>(cell: &'static std::thread::LocalKey<Kept<V>>, run: impl FnOnce(&mut (Scratch<V>, SliceBuffers)) -> R) -> R {
    let mut run = Some(run);
    let done = cell.try_with(|c| {
        let mut slot = c.try_borrow_mut().ok()?;
        let kept = slot.get_or_insert_with(|| Box::new((Scratch::new(), SliceBuffers::new())));
        Some(run.take().expect("run once")(kept))
    });
    match done {
        Ok(Some(r)) => r,
        _ => run.take().expect("not run yet")(&mut (Scratch::new(), SliceBuffers::new())),
    }
}

/// `run` with this thread's 4-lane scratch and buffers.
pub(crate) fn with_kept_256<R>(run: impl FnOnce(&mut (Scratch<__m256d>, SliceBuffers)) -> R) -> R {
    with_kept(&KEPT_256, run)
}

/// `run` with this thread's 8-lane scratch and buffers.
pub(crate) fn with_kept_512<R>(run: impl FnOnce(&mut (Scratch<__m512d>, SliceBuffers)) -> R) -> R {
    with_kept(&KEPT_512, run)
}

/// This spelling as `activation_f64`'s first tier, with its scratch: 4 lanes (AVX2).
pub(crate) struct Avx2<'a>(&'a mut Scratch<__m256d>);

impl<'a> Avx2<'a> {
    /// # Safety
    /// The CPU must have AVX2 and FMA (`pass` runs [`quick_pass`]).
    pub(crate) unsafe fn new(s: &'a mut Scratch<__m256d>) -> Avx2<'a> {
        Avx2(s)
    }
}

impl FirstTier for Avx2<'_> {
    #[inline(always)]
    fn pass(&mut self, f: Func, xs: &mut [f64], undecided: &mut [u8]) -> usize {
        // SAFETY: `new`'s caller vouched for AVX2 and FMA.
        unsafe { quick_pass(f, xs, undecided, &mut *self.0) }
    }
}

/// This spelling on 8 lanes (AVX-512).
pub(crate) struct Avx512<'a>(&'a mut Scratch<__m512d>);

impl<'a> Avx512<'a> {
    /// # Safety
    /// The CPU must have AVX-512 F, DQ and VL (`pass` runs [`quick_pass_512`]).
    pub(crate) unsafe fn new(s: &'a mut Scratch<__m512d>) -> Avx512<'a> {
        Avx512(s)
    }
}

impl FirstTier for Avx512<'_> {
    #[inline(always)]
    fn pass(&mut self, f: Func, xs: &mut [f64], undecided: &mut [u8]) -> usize {
        // SAFETY: `new`'s caller vouched for AVX-512.
        unsafe { quick_pass_512(f, xs, undecided, &mut *self.0) }
    }
}

#[inline(always)]
unsafe fn splat<V: Pd>(v: f64) -> V {
    V::splat(v)
}

#[inline(always)]
unsafe fn abs<V: Pd>(x: V) -> V {
    V::andnot(splat(-0.0), x)
}

/// (a + b, error) for |a| ≥ |b| (`activation_f64::fast_two_sum`).
#[inline(always)]
unsafe fn fast_two_sum<V: Pd>(a: V, b: V) -> (V, V) {
    let s = V::add(a, b);
    (s, V::sub(b, V::sub(s, a)))
}

/// `activation_f64::div_dd_and_inverse`: ((nh + nl)/(dh + dl) as a pair, 1/dh).
#[inline(always)]
unsafe fn div_dd<V: Pd>(nh: V, nl: V, dh: V, dl: V) -> ((V, V), V) {
    let inv = V::div(splat(1.0), dh);
    let qh = V::mul(nh, inv);
    let p = V::mul(qh, dh);
    let pe = V::fmsub(qh, dh, p);
    let rem = V::sub(V::add(V::sub(V::sub(nh, p), pe), nl), V::mul(qh, dl));
    (fast_two_sum(qh, V::mul(rem, inv)), inv)
}

/// The operands of a chunk of quotients (nh + nl)/(dh + dl), one vector each.
struct Operands<V> {
    nh: [V; VECS],
    nl: [V; VECS],
    dh: [V; VECS],
    dl: [V; VECS],
}

impl<V: Pd> Operands<V> {
    /// The quotient of vector i as a pair, and 1/dh.
    #[inline(always)]
    unsafe fn divide(&self, i: usize) -> ((V, V), V) {
        div_dd(self.nh[i], self.nl[i], self.dh[i], self.dl[i])
    }
}

/// Ziv's test on qh + ql with the absolute bound e: (the rounding, the undecided lanes).
#[inline(always)]
unsafe fn decide<V: Pd>(qh: V, ql: V, e: V) -> (V, V::M) {
    let lo = V::add(qh, V::sub(ql, e));
    let hi = V::add(qh, V::add(ql, e));
    (lo, V::neq(lo, hi))
}

/// e^y's stage 1 on a vector, y ∈ [−680, 0] (`activation_f64_quick::exp_quick_parts` with
/// `activation_f64::table_parts`): n = round(y·512/ln 2) = 512k + j, t = y − n·c1,
/// rh = t − n·c2, rl = (t − rh) − n·c2. Returns (2^k, rh, rl); the lanes' j go to `j`.
#[inline(always)]
unsafe fn reduce_vector<V: Pd>(y: V, c: &Consts, j: &mut [i64; 8]) -> (V, V, V) {
    debug_assert_eq!(c.hi.len(), 512);
    let shifted = V::add(V::mul(y, splat(c.inv)), splat(MAGIC));
    let n = V::sub(shifted, splat(MAGIC));
    let scale = V::scale_and_index(shifted, MAGIC.to_bits() as i64, j.as_mut_ptr());
    let t = V::fnmadd(n, splat(c.c1), y);
    let rh = V::fnmadd(n, splat(c.c2), t);
    (scale, rh, V::fnmadd(n, splat(c.c2), V::sub(t, rh)))
}

/// Stage 2: Pl = rh²·(1/2 + rh/6 + … + rh⁵/5040) + rl (Estrin's scheme).
#[inline(always)]
unsafe fn polynomial_vector<V: Pd>(rh: V, rl: V) -> V {
    let r2 = V::mul(rh, rh);
    let q_lo = V::fmadd(rh, splat(1.0 / 6.0), splat(0.5));
    let q_mid = V::fmadd(rh, splat(1.0 / 120.0), splat(1.0 / 24.0));
    let q_hi = V::fmadd(rh, splat(1.0 / 5040.0), splat(1.0 / 720.0));
    let q = V::fmadd(V::mul(r2, r2), q_hi, V::fmadd(r2, q_mid, q_lo));
    V::fmadd(r2, q, rl)
}

/// Stage 3: (th, A, L) with A + Ae = th·rh exactly and L = th·Pl + ((tl + tl·rh) + Ae):
/// e^y = 2^k·(th + A + L).
#[inline(always)]
unsafe fn parts_vector<V: Pd>(j: &[i64; 8], rh: V, pl: V) -> (V, V, V) {
    let (th, tl) = V::pairs(PAIRS.as_ptr(), j.as_ptr());
    let a = V::mul(th, rh);
    let ae = V::fmsub(th, rh, a);
    (th, a, V::fmadd(th, pl, V::add(V::fmadd(tl, rh, tl), ae)))
}

/// e^y = 2^k·(th + A + L) on one vector: the three stages in a row.
#[inline(always)]
unsafe fn exp_vector<V: Pd>(y: V, c: &Consts) -> (V, V, V, V) {
    let mut j = [0i64; 8];
    let (scale, rh, rl) = reduce_vector(y, c, &mut j);
    let (th, a, l) = parts_vector(&j, rh, polynomial_vector(rh, rl));
    (scale, th, a, l)
}

/// The stages' values for a chunk of vectors.
struct ExpStages<V> {
    /// 2^k.
    scale: [V; VECS],
    /// The table index j of n = 512k + j, per lane (the first V::LANES of each row).
    j: [[i64; 8]; VECS],
    /// r = rh + rl.
    rh: [V; VECS],
    /// rl, then Pl (e^r − 1 = rh + Pl).
    rl: [V; VECS],
}

impl<V: Pd> ExpStages<V> {
    #[inline(always)]
    unsafe fn reduce(&mut self, i: usize, y: V, c: &Consts) {
        (self.scale[i], self.rh[i], self.rl[i]) = reduce_vector(y, c, &mut self.j[i]);
    }

    #[inline(always)]
    unsafe fn polynomial(&mut self, i: usize) {
        self.rl[i] = polynomial_vector(self.rh[i], self.rl[i]);
    }

    /// (2^k, th, A, L).
    #[inline(always)]
    unsafe fn parts(&self, i: usize) -> (V, V, V, V) {
        let (th, a, l) = parts_vector(&self.j[i], self.rh[i], self.rl[i]);
        (self.scale[i], th, a, l)
    }
}

/// T_j = 2^{j/512} as (high, low) pairs side by side, so that one 16-byte load reads both.
static PAIRS: LazyLock<Box<[[f64; 2]; 512]>> = LazyLock::new(|| {
    let c = consts();
    Box::new(std::array::from_fn(|j| [c.hi[j], c.lo[j]]))
});

/// σ's main range (SIGMOID_LOW, SIGMOID_ONE) tested as |x + MIDDLE| < RADIUS: rounding is
/// monotone and ±RADIUS are doubles, so no lane outside passes (a lane within an ulp of an
/// end may fail, and takes the general selection).
const SIGMOID_MIDDLE: f64 = -(SIGMOID_LOW + SIGMOID_ONE) / 2.0;
const SIGMOID_RADIUS: f64 = (SIGMOID_ONE - SIGMOID_LOW) / 2.0;

/// σ's clamped argument y = −|xm| of e^y.
#[inline(always)]
unsafe fn sigmoid_argument<V: Pd>(x: V) -> V {
    // clamp as f64::clamp does (NaN lanes are replaced at the end)
    let xm = V::min(V::max(x, splat(SIGMOID_LOW)), splat(SIGMOID_ONE));
    V::or(xm, splat(-0.0))
}

/// σ's quotient's operands (nh, nl, dh, dl) from e^−|x| = 2^k·(th + A + L).
#[inline(always)]
unsafe fn sigmoid_operands<V: Pd>(x: V, (scale, th, a, l): (V, V, V, V)) -> [V; 4] {
    let (eh, el) = fast_two_sum(th, a);
    let (eh, el) = fast_two_sum(eh, V::add(el, l));
    let (eh, el) = (V::mul(eh, scale), V::mul(el, scale));
    let (h, l) = fast_two_sum(splat(1.0), eh);
    // (x < 0 as xm < 0, except NaN, whose lanes are replaced)
    let negative = V::lt(x, splat(0.0));
    [V::blend(splat(1.0), eh, negative), V::keep(el, negative), h, V::add(l, el)]
}

/// σ's result from the quotient: Ziv's test, then the lanes outside the main range; the
/// value and the undecided lanes' bits.
#[inline(always)]
unsafe fn sigmoid_finish<V: Pd>(x: V, (qh, ql): (V, V)) -> (V, u32) {
    let (s, undecided) = decide(qh, ql, V::mul(splat(ERR_SIGMOID), abs(qh)));
    if V::bits(V::lt(abs(V::add(x, splat(SIGMOID_MIDDLE))), splat(SIGMOID_RADIUS))) == all::<V>() {
        // every lane in (SIGMOID_LOW, SIGMOID_ONE): no selection
        return (s, V::bits(undecided));
    }
    let main = V::mask_and(V::gt(x, splat(SIGMOID_LOW)), V::lt(x, splat(SIGMOID_ONE)));
    let band = V::mask_and(V::gt(x, splat(SIGMOID_ZERO)), V::le(x, splat(SIGMOID_LOW)));
    // outside: 1 from SIGMOID_ONE, +0 to SIGMOID_ZERO, else x + x (NaN, or the band)
    let ones = V::ge(x, splat(SIGMOID_ONE));
    let zeros = V::le(x, splat(SIGMOID_ZERO));
    let outside = V::blend(V::blend(V::add(x, x), splat(0.0), zeros), splat(1.0), ones);
    (V::blend(outside, s, main), V::bits(V::mask_or(V::mask_and(undecided, main), band)))
}

/// `activation_f64::sigmoid_lane` (first tier) over the nv vectors at p, in stages, in place:
/// the first reads them (into the scratch), the last writes the values; the undecided lanes'
/// bits per vector into `open`.
#[inline(always)]
unsafe fn sigmoid_chunk<V: Pd>(nv: usize, p: *mut f64, s: &mut Scratch<V>, c: &Consts) {
    let Scratch { x, open, e, q, .. } = s;
    let l = V::LANES;
    for i in 0..nv {
        x[i] = V::loadu(p.add(l * i));
        e.reduce(i, sigmoid_argument(x[i]), c);
    }
    let x = &x[..nv];
    for i in 0..x.len() {
        e.polynomial(i);
    }
    for (i, &x) in x.iter().enumerate() {
        [q.nh[i], q.nl[i], q.dh[i], q.dl[i]] = sigmoid_operands(x, e.parts(i));
    }
    for (i, &x) in x.iter().enumerate() {
        let v;
        (v, open[i]) = sigmoid_finish(x, q.divide(i).0);
        V::storeu(p.add(l * i), v);
    }
}

/// The same on one vector, its stages in a row (the register path, `short_pass_512`).
#[inline(always)]
unsafe fn sigmoid_vector<V: Pd>(x: V, c: &Consts) -> (V, u32) {
    let [nh, nl, dh, dl] = sigmoid_operands(x, exp_vector(sigmoid_argument(x), c));
    sigmoid_finish(x, div_dd(nh, nl, dh, dl).0)
}

/// tanh's main range [TANH_TINY, TANH_ONE) of |x|, without its left end, tested as
/// |a + MIDDLE| < RADIUS (as σ's: no lane outside passes).
const TANH_MIDDLE: f64 = -(TANH_TINY + TANH_ONE) / 2.0;
const TANH_RADIUS: f64 = (TANH_ONE - TANH_TINY) / 2.0;

/// Stage 1 of tanh on a vector (`activation_f64_quick::tanh_reduce` and `tanh_small`): |x|
/// clamped to the main range (clamp as f64::clamp does; NaN lanes become TANH_TINY here and
/// are replaced at the end), k = round(32a) to `j`, and τ = tanh(a − k/32) as a pair, with
/// z = (a − k/32)².
#[inline(always)]
unsafe fn tanh_small<V: Pd>(x: V, j: &mut [i64; 8]) -> (V, V, V) {
    let am = V::min(V::max(abs(x), splat(TANH_TINY)), splat(TANH_ONE.next_down()));
    let shifted = V::fmadd(am, splat(1.0 / TANH_STEP), splat(MAGIC));
    V::index(shifted, MAGIC.to_bits() as i64, j.as_mut_ptr());
    let y = V::fnmadd(V::sub(shifted, splat(MAGIC)), splat(TANH_STEP), am);
    let z = V::mul(y, y);
    let (last, rest) = TANH_SERIES.split_last().expect("coefficients");
    let mut p = splat(*last);
    for &ci in rest.iter().rev() {
        p = V::fmadd(p, z, splat(ci));
    }
    let (h, l) = fast_two_sum(y, V::mul(V::mul(y, z), p));
    (h, l, z)
}

/// Stage 2: the quotient's operands (nh, nl, dh, dl): t + τ and 1 + t·τ, t = tanh(k/32) from
/// `table` (`activation_f64_quick::tanh_quick`).
#[inline(always)]
unsafe fn tanh_operands<V: Pd>(table: *const [f64; 2], j: &[i64; 8], sh: V, sl: V) -> [V; 4] {
    let (th, tl) = V::pairs(table, j.as_ptr());
    let (nh, ne) = fast_two_sum(th, sh);
    let ph = V::mul(th, sh);
    let pe = V::fmsub(th, sh, ph);
    let (dh, de) = fast_two_sum(splat(1.0), ph);
    [nh, V::add(ne, V::add(tl, sl)), dh, V::add(de, V::add(pe, V::fmadd(th, sl, V::mul(tl, sh))))]
}

/// Stage 3's pair and absolute Ziv bound: the quotient, (ERR_TANH·z + ERR_TANH_FLOOR)·|qh|.
#[inline(always)]
unsafe fn tanh_quotient<V: Pd>(((qh, ql), _): ((V, V), V), z: V) -> (V, V, V) {
    (qh, ql, V::mul(V::fmadd(splat(ERR_TANH), z, splat(ERR_TANH_FLOOR)), abs(qh)))
}

/// tanh's result from a pair and its bound: Ziv's test, the sign, then the lanes outside
/// the main range; the value and the undecided lanes' bits.
#[inline(always)]
unsafe fn tanh_finish<V: Pd>(x: V, (qh, ql, err): (V, V, V)) -> (V, u32) {
    let (t, undecided) = decide(qh, ql, err);
    let a = abs(x);
    let sign = V::and(x, splat(-0.0));
    if V::bits(V::lt(abs(V::add(a, splat(TANH_MIDDLE))), splat(TANH_RADIUS))) == all::<V>() {
        // every lane in [TANH_TINY, TANH_ONE) (the test excludes the left end): no selection
        return (V::or(abs(t), sign), V::bits(undecided));
    }
    let main = V::mask_and(V::ge(a, splat(TANH_TINY)), V::lt(a, splat(TANH_ONE)));
    // outside: x below TANH_TINY, ±1 from TANH_ONE, else x + x (NaN)
    let tiny = V::lt(a, splat(TANH_TINY));
    let ones = V::ge(a, splat(TANH_ONE));
    let outside = V::blend(V::blend(V::add(x, x), V::or(splat(1.0), sign), ones), x, tiny);
    (V::blend(outside, V::or(abs(t), sign), main), V::bits(V::mask_and(undecided, main)))
}

/// `activation_f64::tanh_lane` (first tier) over the nv vectors at p, in stages, in place (as
/// [`sigmoid_chunk`]).
#[inline(always)]
unsafe fn tanh_chunk<V: Pd>(nv: usize, p: *mut f64, st: &mut Scratch<V>, c: &Consts) {
    let Scratch { x, open, e, q, sh, sl, z, .. } = st;
    let l = V::LANES;
    let table = c.tanh.as_ptr();
    for i in 0..nv {
        x[i] = V::loadu(p.add(l * i));
        (sh[i], sl[i], z[i]) = tanh_small(x[i], &mut e.j[i]);
    }
    let x = &x[..nv];
    for i in 0..x.len() {
        [q.nh[i], q.nl[i], q.dh[i], q.dl[i]] = tanh_operands(table, &e.j[i], sh[i], sl[i]);
    }
    for (i, &x) in x.iter().enumerate() {
        let v;
        (v, open[i]) = tanh_finish(x, tanh_quotient(q.divide(i), z[i]));
        V::storeu(p.add(l * i), v);
    }
}

/// The same on one vector, its stages in a row (the register path, `short_pass_512`).
#[inline(always)]
unsafe fn tanh_vector<V: Pd>(x: V, c: &Consts) -> (V, u32) {
    let mut j = [0i64; 8];
    let (sh, sl, z) = tanh_small(x, &mut j);
    let [nh, nl, dh, dl] = tanh_operands(c.tanh.as_ptr(), &j, sh, sl);
    tanh_finish(x, tanh_quotient(div_dd(nh, nl, dh, dl), z))
}
