//! The elementwise steps of the gated cells (`gated_pointwise`) for bf16 and f16 (with
//! their own sums or with f32 sums: lanes are f32 either way), with AVX-512: each
//! operation's rounding to the format done in registers, right after the operation.
//!
//! `gated_pointwise` runs a half format's step as one pass over the rows per operation and
//! one more per rounding (`LaneFormat::round_lanes`): c' = (c·f) + (g·i) was six passes and
//! a copy. Here each step is one loop, 16 values at a time (the last vector masked), with
//! the same operations in the same order on the same operands and the same rounding after
//! each (`simd_round::round_bf16` / `round_f16`, which `round_lanes` applies), so every
//! value has the bits of the passes'. R below is that rounding; IEEE + and · are the lane
//! operations of `gated_pointwise` (a + (−b) for its ADD_NEG).
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
//! Callers must be compiled with AVX-512 (`gated_pointwise`'s `_avx512` bodies) and pass
//! slices of equal length (the first one's is used).

use crate::sim::simd_round::{first_lanes, round_bf16, round_f16};
use std::arch::x86_64::*;

/// R(x): x rounded to bf16 (`BF`) or f16, NaN kept.
#[inline(always)]
unsafe fn round<const BF: bool>(x: __m512) -> __m512 {
    if BF {
        round_bf16(x)
    } else {
        round_f16(x)
    }
}

/// The values i..i+16 of `p` (those of the mask `m`; zeros past it).
#[inline(always)]
unsafe fn load(m: __mmask16, p: *const f32, i: usize) -> __m512 {
    _mm512_maskz_loadu_ps(m, p.add(i))
}

/// Runs `$body` over the vectors of `$n` values: `$i` the first value's index, `$m` the
/// mask of the vector's values (all 16 but in the last).
macro_rules! vectors {
    ($n:expr, |$m:ident, $i:ident| $body:block) => {{
        let n = $n;
        let mut $i = 0;
        while $i < n {
            let $m = first_lanes(n - $i);
            $body
            $i += 16;
        }
    }};
}

/// How a loop reads a row of gate sums (gi or gh, `GateRows`'s `Sums`): a vector of 16
/// f32 lane values from the row's elements i..i+16 (those of the mask; zeros past it).
pub trait Read {
    /// The row's element type.
    type E;
    /// # Safety
    /// AVX-512F (and F16C for `Binary16`); the masked elements of p[i..] are readable.
    unsafe fn read<const BF: bool>(m: __mmask16, p: *const Self::E, i: usize) -> __m512;
}

/// Values of the format in f32 lanes: read as they are.
pub struct Lanes;
impl Read for Lanes {
    type E = f32;
    #[inline(always)]
    unsafe fn read<const BF: bool>(m: __mmask16, p: *const f32, i: usize) -> __m512 {
        load(m, p, i)
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
}

/// f16 values as binary16 bits (the native f16 tile's rows): converted as read
/// (`vcvtph2ps`, exact). f16 only.
pub struct Binary16;
impl Read for Binary16 {
    type E = u16;
    #[inline(always)]
    unsafe fn read<const BF: bool>(m: __mmask16, p: *const u16, i: usize) -> __m512 {
        debug_assert!(!BF, "binary16 rows hold f16 values");
        vcvtph2ps_masked(m, p.add(i))
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
/// gate's pre-activation gi + gh), a[j] and b[j] read as `A` and `B` say.
///
/// # Safety
/// AVX-512F; a and b at least as long as dst.
#[inline(always)]
pub unsafe fn op_rows<const BF: bool, const MUL: bool, A: Read, B: Read>(dst: &mut [f32], a: &[A::E], b: &[B::E]) {
    debug_assert!(a.len() >= dst.len() && b.len() >= dst.len());
    let (d, a, b) = (dst.as_mut_ptr(), a.as_ptr(), b.as_ptr());
    vectors!(dst.len(), |m, i| {
        let (x, y) = (A::read::<BF>(m, a, i), B::read::<BF>(m, b, i));
        _mm512_mask_storeu_ps(d.add(i), m, round::<BF>(if MUL { _mm512_mul_ps(x, y) } else { _mm512_add_ps(x, y) }));
    });
}

/// n[j] = R(R(r[j] · gh[j]) + gi[j]) (the GRU's candidate pre-activation; gh[j] and gi[j]
/// read as `GH` and `GI` say).
///
/// # Safety
/// As [`op_rows`] (r, gh and gi at least as long as n).
#[inline(always)]
pub unsafe fn mul_add_rows<const BF: bool, GH: Read, GI: Read>(n: &mut [f32], r: &[f32], gh: &[GH::E], gi: &[GI::E]) {
    debug_assert!(r.len() >= n.len() && gh.len() >= n.len() && gi.len() >= n.len());
    let (d, r, gh, gi) = (n.as_mut_ptr(), r.as_ptr(), gh.as_ptr(), gi.as_ptr());
    vectors!(n.len(), |m, i| {
        let p = round::<BF>(_mm512_mul_ps(load(m, r, i), GH::read::<BF>(m, gh, i)));
        _mm512_mask_storeu_ps(d.add(i), m, round::<BF>(_mm512_add_ps(p, GI::read::<BF>(m, gi, i))));
    });
}

/// c[j] = R(R(c[j] · f[j]) + R(g[j] · i[j])), written to g[j] too (the LSTM's new cell,
/// kept in the candidate's region for act(c')).
///
/// # Safety
/// As [`op_rows`] (g, f and i at least as long as c).
#[inline(always)]
pub unsafe fn cell_rows<const BF: bool>(c: &mut [f32], g: &mut [f32], f: &[f32], i: &[f32]) {
    debug_assert!(g.len() >= c.len() && f.len() >= c.len() && i.len() >= c.len());
    let (cp, gp, f, ip) = (c.as_mut_ptr(), g.as_mut_ptr(), f.as_ptr(), i.as_ptr());
    vectors!(c.len(), |m, j| {
        let cf = round::<BF>(_mm512_mul_ps(load(m, cp, j), load(m, f, j)));
        let gi = round::<BF>(_mm512_mul_ps(load(m, gp, j), load(m, ip, j)));
        let c1 = round::<BF>(_mm512_add_ps(cf, gi));
        _mm512_mask_storeu_ps(cp.add(j), m, c1);
        _mm512_mask_storeu_ps(gp.add(j), m, c1);
    });
}

/// h[j] = R(R(R(h[j] + (−n[j])) · z[j]) + n[j]) (the GRU's new state).
///
/// # Safety
/// As [`op_rows`] (n and z at least as long as h).
#[inline(always)]
pub unsafe fn state_rows<const BF: bool>(h: &mut [f32], n: &[f32], z: &[f32]) {
    debug_assert!(n.len() >= h.len() && z.len() >= h.len());
    let (hp, np, zp) = (h.as_mut_ptr(), n.as_ptr(), z.as_ptr());
    let sign = _mm512_set1_ps(-0.0);
    vectors!(h.len(), |m, i| {
        let nv = load(m, np, i);
        let d = round::<BF>(_mm512_add_ps(load(m, hp, i), _mm512_xor_ps(nv, sign)));
        let p = round::<BF>(_mm512_mul_ps(d, load(m, zp, i)));
        _mm512_mask_storeu_ps(hp.add(i), m, round::<BF>(_mm512_add_ps(p, nv)));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::lanes::{round_bf16_in_f32, round_f16_in_f32};

    /// The loops compiled for AVX-512, as `gated_pointwise`'s `_avx512` bodies call them;
    /// steps 7–10 read gate rows as binary16 bits (f16 only: a, b, c are on its grid).
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,avx,fma,f16c")]
    unsafe fn run<const BF: bool>(step: u8, out: &mut [f32], out2: &mut [f32], a: &[f32], b: &[f32], c: &[f32]) {
        let bits = |v: &[f32]| v.iter().map(|&x| half::f16::from_f32(x).to_bits()).collect::<Vec<u16>>();
        match step {
            0 => op_rows::<BF, false, Lanes, Lanes>(out, a, b),
            1 => op_rows::<BF, true, Lanes, Lanes>(out, a, b),
            2 => mul_add_rows::<BF, Lanes, Lanes>(out, a, b, c),
            3 => cell_rows::<BF>(out, out2, a, b),
            4 => state_rows::<BF>(out, a, b),
            5 => op_rows::<BF, false, F32Sums, F32Sums>(out, a, b),
            6 => mul_add_rows::<BF, F32Sums, F32Sums>(out, a, b, c),
            7 => op_rows::<BF, false, Lanes, Binary16>(out, a, &bits(b)),
            8 => op_rows::<BF, false, Binary16, Binary16>(out, &bits(a), &bits(b)),
            9 => mul_add_rows::<BF, Binary16, Binary16>(out, a, &bits(b), &bits(c)),
            _ => mul_add_rows::<BF, Binary16, Lanes>(out, a, &bits(b), c),
        }
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
    /// vectors) and NaN, infinite, zero, subnormal and overflowing operands. With `F32Sums`
    /// (steps 5 and 6) the gate sums are f32 values off the grid, rounded first; with
    /// `Binary16` (steps 7–10, f16) they are binary16 bits.
    #[test]
    fn loops_equal_an_operation_then_a_rounding_per_value() {
        if !crate::sim::cpu::avx512() {
            return;
        }
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
                    let (mut out, mut out2) = (values(round, n, seed + 3), values(round, n, seed + 4));
                    let (o0, g0) = (out.clone(), out2.clone());
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
                    // SAFETY: the CPU has AVX-512 (checked above); the slices have n values
                    unsafe {
                        if bf {
                            run::<true>(step, &mut out, &mut out2, &a, &b, &c)
                        } else {
                            run::<false>(step, &mut out, &mut out2, &a, &b, &c)
                        }
                    };
                    // (a NaN as any NaN, as the engines' tests compare them: which NaN an
                    // operation on two returns depends on the operand order, and the
                    // compiler may swap the operands of + and · in the passes)
                    let bits = |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
                    assert_eq!(bits(&out), bits(&want), "bf16 {bf}, step {step}, {n} values");
                    // the cell's value is also written over the candidate; the others leave it
                    assert_eq!(bits(&out2), if step == 3 { bits(&want) } else { bits(&g0) }, "bf16 {bf}, step {step}, {n} values: second row");
                }
            }
        }
    }
}
