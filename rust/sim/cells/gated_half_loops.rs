//! The elementwise steps of the gated cells (`gated_pointwise`) for bf16 and f16 (with
//! their own sums or with f32 sums: lanes are f32 either way), with AVX-512 or AVX2 + F16C:
//! each operation's rounding to the format done in registers, right after the operation.
//!
//! `gated_pointwise` runs a half format's step as one pass over the rows per operation and
//! one more per rounding (`LaneFormat::round_lanes`): c' = (c·f) + (g·i) was six passes and
//! a copy. Here each step is one loop, 16 values at a time with AVX-512 and 8 with AVX2
//! (the last vector masked), with the same operations in the same order on the same
//! operands and the same rounding after each (`simd_round::round_bf16` / `round_f16` and
//! their 8-lane forms, which `round_lanes` applies, here without their NaN test: `round`),
//! so every value has the bits of the passes'. R below is that rounding; IEEE + and · are
//! the lane operations of `gated_pointwise` (a + (−b) for its ADD_NEG).
//!
//! The loops that read the gate sums (gi and gh) take them as their rows hold them
//! (`Read`): values of the format (`Lanes`); a half format's f32 sums (`F32Sums`), rounded
//! first, so that a half format with f32 sums leaves its maps as the f32 sums and R(gi) is
//! done here in registers instead of in a pass after the tiles
//! (`tile_kernel::affine_panels`; R is idempotent, so rows that were rounded already give
//! the same values); or f16's binary16 bits (`Binary16`), converted as read, so that the
//! native f16 tile's rows need no conversion pass back to f32 lanes
//! (`tile_kernel::affine_binary16`).
//!
//! With AVX512-FP16 (and -BW), f16's loops compute in binary16 itself (`F16Native`, the
//! bodies `gated_pointwise::*_fp16`): operands converted to binary16 as loaded (exact for
//! values on the grid; for f32 sums the conversion is R), `vaddph`/`vmulph`, whose
//! correctly rounded binary16 results are R of the f32 operations' (innocuous double
//! rounding), and one conversion back per stored result: a sum or product and its
//! rounding are one instruction instead of an f32 operation, two conversions, a NaN test
//! and a blend. The loops are written once over the arithmetic (`Arith`: [`Bf16`], [`F16`]
//! in 16 f32 lanes, [`Bf16x8`], [`F16x8`] in 8, [`F16Native`]); the gate-sum loops run over
//! a grid of rows (one call per block and gate instead of one per sequence: at hidden 16 a
//! row is one vector, and the calls' setup had cost more than their arithmetic).
//! Alternating builds, 1 thread, (1024, 1000, 16, 4), M token-steps/s: f16 with f32 sums
//! GRU 14.5–15.2 → 17.2–17.9, f16 LSTM 13.5–13.8 → 13.4–14.8 (AVX-512, session 38).
//!
//! Callers must be compiled with AVX-512 (`gated_pointwise`'s `_avx512` bodies; `_fp16` for
//! `F16Native`) or, for the 8-lane arithmetic, AVX2 and F16C (its `_avx2` bodies), and pass
//! slices of equal length (the first one's is used) or grids whose rows lie in their slices
//! (`gated_pointwise::at`).

pub use crate::sim::cells::gated_pointwise::Grid;
use crate::sim::simd_round::{first_lanes, load_first_8, round_bf16_8_grid, round_bf16_grid, round_f16_8_grid, round_f16_grid, store_first_8};
use std::arch::x86_64::*;

/// The arithmetic of a loop: a register of `W` values of the format and its rounded
/// operations. [`Bf16`] and [`F16`] hold 16 in f32 lanes (AVX-512), [`Bf16x8`] and
/// [`F16x8`] 8 (AVX2), and round each result there; [`F16Native`] holds 16 binary16 values
/// and runs `vaddph`/`vmulph` (AVX512-FP16).
///
/// # Safety (every method)
/// The CPU has the arithmetic's features and the caller is compiled with them (AVX-512F;
/// for [`F16Native`] also AVX512-FP16, -BW and -VL; for the 8-lane ones AVX2 and F16C); the
/// elements at p[i..] of the mask are readable (`load`, `read`) or writable (`store`).
pub trait Arith {
    type V: Copy;
    /// Which of a vector's lanes a loop touches: all `W` but in the last vector.
    type M: Copy;
    /// The values in a register.
    const W: usize;
    /// The mask of the first min(m, W) lanes.
    fn mask(m: usize) -> Self::M;
    /// Values of the format in f32 lanes (those of p[i..] of the mask; zeros past it).
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn load(m: Self::M, p: *const f32, i: usize) -> Self::V;
    /// A row of gate sums, as its form `R` holds them.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn read<R: Read>(m: Self::M, p: *const R::E, i: usize) -> Self::V;
    /// Stores the masked values to p[i..] as f32 lanes.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn store(m: Self::M, p: *mut f32, i: usize, v: Self::V);
    /// R(a + b)
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// R(a · b)
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// −a (exact)
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn neg(a: Self::V) -> Self::V;
}

/// bf16 (`BF`) or f16 in 16 f32 lanes: the f32 operation, then R in registers ([`round`]).
pub struct InLanes<const BF: bool>;
/// bf16 in 16 f32 lanes.
pub type Bf16 = InLanes<true>;
/// f16 in 16 f32 lanes.
pub type F16 = InLanes<false>;

impl<const BF: bool> Arith for InLanes<BF> {
    type V = __m512;
    type M = __mmask16;
    const W: usize = 16;
    #[inline(always)]
    fn mask(m: usize) -> __mmask16 {
        first_lanes(m)
    }
    #[inline(always)]
    unsafe fn load(m: __mmask16, p: *const f32, i: usize) -> __m512 {
        _mm512_maskz_loadu_ps(m, p.add(i))
    }
    #[inline(always)]
    unsafe fn read<R: Read>(m: __mmask16, p: *const R::E, i: usize) -> __m512 {
        R::read::<BF>(m, p, i)
    }
    #[inline(always)]
    unsafe fn store(m: __mmask16, p: *mut f32, i: usize, v: __m512) {
        _mm512_mask_storeu_ps(p.add(i), m, v)
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        round::<BF>(_mm512_add_ps(a, b))
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        round::<BF>(_mm512_mul_ps(a, b))
    }
    #[inline(always)]
    unsafe fn neg(a: __m512) -> __m512 {
        _mm512_xor_ps(a, _mm512_set1_ps(-0.0))
    }
}

/// bf16 (`BF`) or f16 in 8 f32 lanes (AVX2 + F16C): the f32 operation, then R in registers
/// ([`round_8`]). The mask is the count of lanes left: a whole vector is a plain load and
/// store, and only the last, partial one `vmaskmovps` (whose store form is slow on AMD's
/// cores: `simd_round::round_slice_8` splits its loop the same way).
pub struct InLanes8<const BF: bool>;
/// bf16 in 8 f32 lanes.
pub type Bf16x8 = InLanes8<true>;
/// f16 in 8 f32 lanes.
pub type F16x8 = InLanes8<false>;

impl<const BF: bool> Arith for InLanes8<BF> {
    type V = __m256;
    type M = usize;
    const W: usize = 8;
    #[inline(always)]
    fn mask(m: usize) -> usize {
        m.min(8)
    }
    #[inline(always)]
    unsafe fn load(m: usize, p: *const f32, i: usize) -> __m256 {
        load_first_8(p.add(i), m)
    }
    #[inline(always)]
    unsafe fn read<R: Read>(m: usize, p: *const R::E, i: usize) -> __m256 {
        R::read_8::<BF>(m, p, i)
    }
    #[inline(always)]
    unsafe fn store(m: usize, p: *mut f32, i: usize, v: __m256) {
        store_first_8(p.add(i), m, v)
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        round_8::<BF>(_mm256_add_ps(a, b))
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        round_8::<BF>(_mm256_mul_ps(a, b))
    }
    #[inline(always)]
    unsafe fn neg(a: __m256) -> __m256 {
        _mm256_xor_ps(a, _mm256_set1_ps(-0.0))
    }
}

/// f16 in binary16 registers (16 values in a ymm): `vaddph`/`vmulph` return the correctly
/// rounded binary16 sum and product of binary16 operands, which is R of the exact f32 sum
/// or product (innocuous double rounding: 24 ≥ 2·11 + 2; as `tile_f16`), subnormals
/// included; values in f32 lanes are converted as loaded (`vcvtps2ph`, exact on the grid,
/// and R itself on f32 sums) and stored (`vcvtph2ps`, exact). A NaN stays a NaN (quietened,
/// its payload cut to binary16's, where the f32-lane loops keep the f32 NaN: the engines
/// compare a NaN as a NaN). Only in bodies compiled with AVX512-FP16, -BW and -VL
/// (`cpu::avx512_fp16`).
pub struct F16Native;

impl Arith for F16Native {
    type V = __m256i;
    type M = __mmask16;
    const W: usize = 16;
    #[inline(always)]
    fn mask(m: usize) -> __mmask16 {
        first_lanes(m)
    }
    #[inline(always)]
    unsafe fn load(m: __mmask16, p: *const f32, i: usize) -> __m256i {
        to_binary16(_mm512_maskz_loadu_ps(m, p.add(i)))
    }
    #[inline(always)]
    unsafe fn read<R: Read>(m: __mmask16, p: *const R::E, i: usize) -> __m256i {
        R::read_binary16(m, p, i)
    }
    #[inline(always)]
    unsafe fn store(m: __mmask16, p: *mut f32, i: usize, v: __m256i) {
        _mm512_mask_storeu_ps(p.add(i), m, _mm512_cvtph_ps(v))
    }
    #[inline(always)]
    unsafe fn add(a: __m256i, b: __m256i) -> __m256i {
        vaddph(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: __m256i, b: __m256i) -> __m256i {
        vmulph(a, b)
    }
    #[inline(always)]
    unsafe fn neg(a: __m256i) -> __m256i {
        _mm256_xor_si256(a, _mm256_set1_epi16(i16::MIN))
    }
}

/// f32 → binary16, rounded to nearest even (exact for values on the grid).
#[inline(always)]
unsafe fn to_binary16(x: __m512) -> __m256i {
    _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x)
}

/// `vaddph` on 16 binary16 values (asm: the f16 intrinsics are unstable in Rust 1.95).
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512fp16")]
unsafe fn vaddph(a: __m256i, b: __m256i) -> __m256i {
    let r: __m256i;
    // SAFETY: AVX512-FP16 and -VL (the target features); registers only.
    std::arch::asm!("vaddph {r}, {a}, {b}", r = lateout(ymm_reg) r, a = in(ymm_reg) a, b = in(ymm_reg) b, options(pure, nomem, nostack, preserves_flags));
    r
}

/// `vmulph` on 16 binary16 values.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512fp16")]
unsafe fn vmulph(a: __m256i, b: __m256i) -> __m256i {
    let r: __m256i;
    // SAFETY: as `vaddph`.
    std::arch::asm!("vmulph {r}, {a}, {b}", r = lateout(ymm_reg) r, a = in(ymm_reg) a, b = in(ymm_reg) b, options(pure, nomem, nostack, preserves_flags));
    r
}

/// R(x): x rounded to bf16 (`BF`) or f16, on the bits alone (`round_bf16_grid` /
/// `round_f16_grid`: no NaN test and blend, two of f16's four operations per rounding).
/// That keeps a NaN as `round_bf16` / `round_f16` do when its low 16 / 13 bits are zero,
/// and every NaN the loops round has them: each x here is the result of an operation on
/// values of the format (a lane operation, or a tile's f32 sum of their products, and a
/// NaN there is the default NaN or a quietened operand), and the runs refuse NaN and
/// infinite inputs, weights and states, so no NaN enters with other bits. (The tiles'
/// roundings rest on the same argument, `simd_round::round_f16_grid`.)
#[inline(always)]
unsafe fn round<const BF: bool>(x: __m512) -> __m512 {
    if BF {
        round_bf16_grid(x)
    } else {
        round_f16_grid(x)
    }
}

/// [`round`] on 8 lanes (`round_bf16_8_grid` / `round_f16_8_grid`; the same argument).
#[inline(always)]
unsafe fn round_8<const BF: bool>(x: __m256) -> __m256 {
    if BF {
        round_bf16_8_grid(x)
    } else {
        round_f16_8_grid(x)
    }
}

/// The values i..i+16 of `p` (those of the mask `m`; zeros past it).
#[inline(always)]
unsafe fn load(m: __mmask16, p: *const f32, i: usize) -> __m512 {
    _mm512_maskz_loadu_ps(m, p.add(i))
}

/// Runs `$body` over the vectors of `$n` values, `$h::W` at a time: `$i` the first value's
/// index, `$m` the mask of the vector's values (all W but in the last).
macro_rules! vectors {
    ($h:ty, $n:expr, |$m:ident, $i:ident| $body:block) => {{
        let n = $n;
        let mut $i = 0;
        while $i < n {
            let $m = <$h>::mask(n - $i);
            $body
            $i += <$h>::W;
        }
    }};
}

/// How a loop reads a row of gate sums (gi or gh, `GateRows`'s `Sums`): a vector of 16
/// values (or 8: `read_8`) from the row's elements i.. (those of the mask; zeros past it).
pub trait Read {
    /// The row's element type.
    type E;
    /// As f32 lanes of the format.
    ///
    /// # Safety
    /// AVX-512F (and F16C for `Binary16`); the masked elements of p[i..] are readable.
    unsafe fn read<const BF: bool>(m: __mmask16, p: *const Self::E, i: usize) -> __m512;
    /// As binary16 (f16 only).
    ///
    /// # Safety
    /// AVX-512F, -BW and -VL; the masked elements of p[i..] are readable.
    unsafe fn read_binary16(m: __mmask16, p: *const Self::E, i: usize) -> __m256i;
    /// As 8 f32 lanes of the format (the first m ≤ 8 of p[i..]).
    ///
    /// # Safety
    /// AVX2 and F16C; p[i..i + m] is readable.
    unsafe fn read_8<const BF: bool>(m: usize, p: *const Self::E, i: usize) -> __m256;
}

/// Values of the format in f32 lanes: read as they are.
pub struct Lanes;
impl Read for Lanes {
    type E = f32;
    #[inline(always)]
    unsafe fn read<const BF: bool>(m: __mmask16, p: *const f32, i: usize) -> __m512 {
        load(m, p, i)
    }
    #[inline(always)]
    unsafe fn read_binary16(m: __mmask16, p: *const f32, i: usize) -> __m256i {
        to_binary16(load(m, p, i))
    }
    #[inline(always)]
    unsafe fn read_8<const BF: bool>(m: usize, p: *const f32, i: usize) -> __m256 {
        load_first_8(p.add(i), m)
    }
}

/// A half format's f32 sums, not yet rounded to it: R(x) as read. (Rows already rounded
/// give their own values: R is idempotent.)
pub struct F32Sums;
impl Read for F32Sums {
    type E = f32;
    #[inline(always)]
    unsafe fn read<const BF: bool>(m: __mmask16, p: *const f32, i: usize) -> __m512 {
        round::<BF>(load(m, p, i))
    }
    #[inline(always)]
    unsafe fn read_binary16(m: __mmask16, p: *const f32, i: usize) -> __m256i {
        // (the conversion is R: f16's rounding to nearest even)
        to_binary16(load(m, p, i))
    }
    #[inline(always)]
    unsafe fn read_8<const BF: bool>(m: usize, p: *const f32, i: usize) -> __m256 {
        round_8::<BF>(load_first_8(p.add(i), m))
    }
}

/// f16 values as binary16 bits (the native f16 tile's rows): converted as read
/// (`vcvtph2ps`, exact), or read as they are. f16 only.
pub struct Binary16;
impl Read for Binary16 {
    type E = u16;
    #[inline(always)]
    unsafe fn read<const BF: bool>(m: __mmask16, p: *const u16, i: usize) -> __m512 {
        debug_assert!(!BF, "binary16 rows hold f16 values");
        vcvtph2ps_masked(m, p.add(i))
    }
    #[inline(always)]
    unsafe fn read_binary16(m: __mmask16, p: *const u16, i: usize) -> __m256i {
        _mm256_maskz_loadu_epi16(m, p.add(i).cast())
    }
    #[inline(always)]
    unsafe fn read_8<const BF: bool>(m: usize, p: *const u16, i: usize) -> __m256 {
        debug_assert!(!BF, "binary16 rows hold f16 values");
        if m >= 8 {
            return _mm256_cvtph_ps(_mm_loadu_si128(p.add(i).cast()));
        }
        // (a partial vector through a copy: AVX2 has no masked 16-bit load)
        let mut bits = [0u16; 8];
        std::ptr::copy_nonoverlapping(p.add(i), bits.as_mut_ptr(), m);
        _mm256_cvtph_ps(_mm_loadu_si128(bits.as_ptr().cast()))
    }
}

/// The f32 values of the binary16 values p[0..16] of the mask `m` (zeros elsewhere), in asm:
/// the masked 16-bit load of the intrinsics needs AVX-512BW, which the cells' AVX-512
/// bodies are not compiled with; a masked conversion from memory reads only the masked
/// values (EVEX fault suppression).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn vcvtph2ps_masked(m: __mmask16, p: *const u16) -> __m512 {
    let r: __m512;
    // SAFETY: AVX-512F (the target feature); the masked values at p are the caller's.
    std::arch::asm!("vcvtph2ps {r} {{{m}}}{{z}}, ymmword ptr [{p}]", r = lateout(zmm_reg) r, m = in(kreg) m, p = in(reg) p, options(pure, readonly, nostack, preserves_flags));
    r
}

/// dst[j] = R(a[j] · b[j]) when `MUL` (the LSTM's h' = o · act(c')), else R(a[j] + b[j]) (a
/// gate's pre-activation gi + gh), over the grid; a[j] and b[j] read as `A` and `B` say.
///
/// # Safety
/// The features of `H` (AVX-512F; for [`F16Native`] also AVX512-FP16, -BW, -VL; for the
/// 8-lane arithmetic AVX2 and F16C); each
/// operand's rows (pointer, stride) hold the grid's values.
#[inline(always)]
pub unsafe fn op_rows<H: Arith, const MUL: bool, A: Read, B: Read>(g: Grid, (d, ldd): (*mut f32, usize), (a, lda): (*const A::E, usize), (b, ldb): (*const B::E, usize)) {
    for j in 0..g.rows {
        let (d, a, b) = (d.add(j * ldd), a.add(j * lda), b.add(j * ldb));
        vectors!(H, g.cols, |m, i| {
            let (x, y) = (H::read::<A>(m, a, i), H::read::<B>(m, b, i));
            H::store(m, d, i, if MUL { H::mul(x, y) } else { H::add(x, y) });
        });
    }
}

/// n[j] = R(R(r[j] · gh[j]) + gi[j]) over the grid (the GRU's candidate pre-activation;
/// gh[j] and gi[j] read as `GH` and `GI` say).
///
/// # Safety
/// As [`op_rows`].
#[inline(always)]
pub unsafe fn mul_add_rows<H: Arith, GH: Read, GI: Read>(g: Grid, (n, ldn): (*mut f32, usize), (r, ldr): (*const f32, usize), (gh, ldh): (*const GH::E, usize), (gi, ldi): (*const GI::E, usize)) {
    for j in 0..g.rows {
        let (d, r, gh, gi) = (n.add(j * ldn), r.add(j * ldr), gh.add(j * ldh), gi.add(j * ldi));
        vectors!(H, g.cols, |m, i| {
            let p = H::mul(H::load(m, r, i), H::read::<GH>(m, gh, i));
            H::store(m, d, i, H::add(p, H::read::<GI>(m, gi, i)));
        });
    }
}

/// c[j] = R(R(c[j] · f[j]) + R(g[j] · i[j])), written to g[j] too (the LSTM's new cell,
/// kept in the candidate's region for act(c')).
///
/// # Safety
/// As [`op_rows`] (g, f and i at least as long as c).
#[inline(always)]
pub unsafe fn cell_rows<H: Arith>(c: &mut [f32], g: &mut [f32], f: &[f32], i: &[f32]) {
    debug_assert!(g.len() >= c.len() && f.len() >= c.len() && i.len() >= c.len());
    let (cp, gp, f, ip) = (c.as_mut_ptr(), g.as_mut_ptr(), f.as_ptr(), i.as_ptr());
    vectors!(H, c.len(), |m, j| {
        let cf = H::mul(H::load(m, cp, j), H::load(m, f, j));
        let gi = H::mul(H::load(m, gp, j), H::load(m, ip, j));
        let c1 = H::add(cf, gi);
        H::store(m, cp, j, c1);
        H::store(m, gp, j, c1);
    });
}

/// h[j] = R(R(R(h[j] + (−n[j])) · z[j]) + n[j]) (the GRU's new state).
///
/// # Safety
/// As [`op_rows`] (n and z at least as long as h).
#[inline(always)]
pub unsafe fn state_rows<H: Arith>(h: &mut [f32], n: &[f32], z: &[f32]) {
    debug_assert!(n.len() >= h.len() && z.len() >= h.len());
    let (hp, np, zp) = (h.as_mut_ptr(), n.as_ptr(), z.as_ptr());
    vectors!(H, h.len(), |m, i| {
        let nv = H::load(m, np, i);
        let d = H::add(H::load(m, hp, i), H::neg(nv));
        let p = H::mul(d, H::load(m, zp, i));
        H::store(m, hp, i, H::add(p, nv));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::lanes::{round_bf16_in_f32, round_f16_in_f32};

    /// The loops compiled for AVX-512, as `gated_pointwise`'s `_avx512` bodies call them;
    /// steps 7–10 read gate rows as binary16 bits (f16 only: a, b, c are on its grid). The
    /// grid loops run over rows of 7 values, then the last, shorter row as a grid of its
    /// own (every operand in the same rows).
    #[inline(always)]
    unsafe fn steps<H: Arith>(step: u8, out: &mut [f32], out2: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
        match step {
            3 => return cell_rows::<H>(out, out2, a, b),
            4 => return state_rows::<H>(out, a, b),
            _ => {}
        }
        let bits = |v: &[f32]| v.iter().map(|&x| half::f16::from_f32(x).to_bits()).collect::<Vec<u16>>();
        let (a16, b16, c16, n) = (bits(a), bits(b), bits(c), out.len());
        for (g, k) in [(Grid { rows: n / 7, cols: 7 }, 0), (Grid { rows: 1, cols: n % 7 }, n / 7 * 7)] {
            let (d, a, b, c) = ((out.as_mut_ptr().add(k), 7), (a.as_ptr().add(k), 7), (b.as_ptr().add(k), 7), (c.as_ptr().add(k), 7));
            let (a16, b16, c16) = ((a16.as_ptr().add(k), 7), (b16.as_ptr().add(k), 7), (c16.as_ptr().add(k), 7));
            match step {
                0 => op_rows::<H, false, Lanes, Lanes>(g, d, a, b),
                1 => op_rows::<H, true, Lanes, Lanes>(g, d, a, b),
                2 => mul_add_rows::<H, Lanes, Lanes>(g, d, a, b, c),
                5 => op_rows::<H, false, F32Sums, F32Sums>(g, d, a, b),
                6 => mul_add_rows::<H, F32Sums, F32Sums>(g, d, a, b, c),
                7 => op_rows::<H, false, Lanes, Binary16>(g, d, a, b16),
                8 => op_rows::<H, false, Binary16, Binary16>(g, d, a16, b16),
                9 => mul_add_rows::<H, Binary16, Binary16>(g, d, a, b16, c16),
                _ => mul_add_rows::<H, Binary16, Lanes>(g, d, a, b16, c),
            }
        }
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma,f16c")]
    unsafe fn run<H: Arith>(step: u8, out: &mut [f32], out2: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
        steps::<H>(step, out, out2, a, b, c)
    }

    /// The 8-lane loops compiled for AVX2 and F16C, as `gated_pointwise`'s `_avx2` bodies.
    #[target_feature(enable = "avx2,avx,fma,f16c")]
    unsafe fn run_8<H: Arith>(step: u8, out: &mut [f32], out2: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
        steps::<H>(step, out, out2, a, b, c)
    }

    /// As the f16 bodies with AVX512-FP16 compile them (`gated_pointwise`'s `_fp16`).
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512fp16,avx2,avx,fma,f16c")]
    unsafe fn run_native(step: u8, out: &mut [f32], out2: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
        steps::<F16Native>(step, out, out2, a, b, c)
    }

    /// Lane values of the format: every value `round` gives, from a spread of f32s (NaNs,
    /// infinities, zeros of both signs, subnormals, values at the format's extremes).
    fn values(round: fn(f32) -> f32, n: usize, seed: u32) -> Vec<f32> {
        let special = [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-8, -6.0e-8, 65504.0, -65504.0, 3.0e38, 1.0, -1.0, 0.5];
        let mut x = seed.wrapping_mul(2654435761) | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let v = if i % 5 == 0 { special[(x as usize) % special.len()] } else { f32::from_bits(x & 0xbfff_ffff) * if x & 1 == 0 { 1.0 } else { 1e-30 } };
                round(v)
            })
            .collect()
    }

    /// Each loop gives, bit for bit (a NaN as a NaN), the passes of `gated_pointwise`: the
    /// lane operation, then the rounding of each value (`round_bf16_in_f32` /
    /// `round_f16_in_f32`, which `round_lanes` applies), for every length 0–40 (partial last
    /// vectors) and NaN, infinite, zero, subnormal and overflowing operands, in each
    /// arithmetic the CPU has: 16 f32 lanes (AVX-512), binary16 (AVX512-FP16, f16), 8 f32
    /// lanes (AVX2 + F16C). With `F32Sums` (steps 5 and 6) the gate sums are f32 values off
    /// the grid, rounded first; with `Binary16` (steps 7–10, f16) they are binary16 bits.
    #[test]
    fn loops_equal_an_operation_then_a_rounding_per_value() {
        use crate::sim::cpu;
        let ariths = [("16 f32 lanes", cpu::avx512()), ("binary16", cpu::avx512_fp16()), ("8 f32 lanes", cpu::avx2_f16c())];
        let mut ran = 0;
        for (bf, round) in [(true, round_bf16_in_f32 as fn(f32) -> f32), (false, round_f16_in_f32)] {
            for n in 0..=40 {
                // (the binary16 rows of steps 7–10 hold f16 values)
                for step in (0..11u8).filter(|&st| st < 7 || !bf) {
                    let seed = (n as u32) * 16 + u32::from(step) + if bf { 1000 } else { 0 };
                    // the gate sums of `F32Sums` (a, b of step 5; b, c of step 6) as f32 sums
                    let sum = |v: f32| v;
                    let (ra, rb, rc) = match step {
                        5 => (sum as fn(f32) -> f32, sum as fn(f32) -> f32, round),
                        6 => (round, sum as fn(f32) -> f32, sum as fn(f32) -> f32),
                        _ => (round, round, round),
                    };
                    let (a, b, c) = (values(ra, n, seed), values(rb, n, seed + 1), values(rc, n, seed + 2));
                    let (o0, g0) = (values(round, n, seed + 3), values(round, n, seed + 4));
                    let want: Vec<f32> = (0..n)
                        .map(|j| match step {
                            0 => round(a[j] + b[j]),
                            1 => round(a[j] * b[j]),
                            2 => round(round(a[j] * b[j]) + c[j]),
                            3 => round(round(o0[j] * a[j]) + round(g0[j] * b[j])),
                            4 => round(round(round(o0[j] + (-a[j])) * b[j]) + a[j]),
                            5 => round(round(a[j]) + round(b[j])),
                            6 => round(round(a[j] * round(b[j])) + round(c[j])),
                            7 | 8 => round(a[j] + b[j]),
                            _ => round(round(a[j] * b[j]) + c[j]),
                        })
                        .collect();
                    // (binary16 arithmetic is f16's)
                    for (arith, _) in ariths.iter().filter(|&&(ar, has)| has && (!bf || ar != "binary16")) {
                        let (mut out, mut out2) = (o0.clone(), g0.clone());
                        // SAFETY: the CPU has the arithmetic's features (`ariths`); the
                        // slices have n values
                        unsafe {
                            match (bf, *arith) {
                                (true, "16 f32 lanes") => run::<Bf16>(step, &mut out, &mut out2, &a, &b, &c),
                                (false, "16 f32 lanes") => run::<F16>(step, &mut out, &mut out2, &a, &b, &c),
                                (true, "8 f32 lanes") => run_8::<Bf16x8>(step, &mut out, &mut out2, &a, &b, &c),
                                (false, "8 f32 lanes") => run_8::<F16x8>(step, &mut out, &mut out2, &a, &b, &c),
                                _ => run_native(step, &mut out, &mut out2, &a, &b, &c),
                            }
                        };
                        ran += 1;
                        // (a NaN as any NaN, as the engines' tests compare them: which NaN an
                        // operation on two returns depends on the operand order, and the
                        // compiler may swap the operands of + and · in the passes)
                        let bits = |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
                        assert_eq!(bits(&out), bits(&want), "bf16 {bf} ({arith}), step {step}, {n} values");
                        // the cell's value is also written over the candidate; the others leave it
                        assert_eq!(bits(&out2), if step == 3 { bits(&want) } else { bits(&g0) }, "bf16 {bf} ({arith}), step {step}, {n} values: second row");
                    }
                }
            }
        }
        // (on an x86-64 CPU without AVX2 and F16C nothing runs: the loops are not used there)
        assert!(ran > 0 || !cpu::avx2_f16c());
    }
}
