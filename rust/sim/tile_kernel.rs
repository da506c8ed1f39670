//! The register-tiled microkernel of the lock-step batch engines: for a block of sequences
//! s and every output unit i,
//!
//!   acc[s][i] = acc[s][i] + Wᵀ[k][i]·z[s][k]    for k = k0, k0+1, … (ascending)
//!
//! each product and each sum rounded to the format (a multiply instruction, then an add
//! instruction: two roundings), or with `fma` the fused step acc = fma(Wᵀ[k][i], z[s][k], acc)
//! rounded once (`num::fused`; `vfmadd` for f64/f32, `vfmadd231ph` for native f16, the
//! round-to-odd emulation for f16 and bf16 in f32 lanes, from two directed-rounding FMAs
//! with AVX-512, from TwoSum with AVX2). `acc` arrives holding whatever the caller's
//! documented order put there first (a bias, or bias + input product), so this is the
//! "then + W_ik·z_k for k ascending" part of float_engine.rs and cells/affine.rs, computed
//! for many sequences at once. Only *independent* elements are reordered; each element's
//! own chain of operations is the sequential one, so the bits are those of the
//! per-sequence engines whatever the tile, block or thread.
//!
//! An affine map b + W₁z₁ + W₂z₂ (SimpleRNN: the input and the recurrent products) is one
//! pass ([`affine`]): the accumulators start from the bias row and take the terms' values
//! of k one after the other, k ascending within a term, which is the documented order
//! (bias, then the first term's products, then the second's); [`accumulate`] adds one
//! term to `acc` as it stands; [`affine_gates`] ends a gated cell's map with its rounded
//! addition to the other map, stored gate-major.
//!
//! Tiling: a tile of MR sequences (12 for f32 and f64 on AVX-512, 6 on AVX2) × NR vectors
//! of units keeps its MR·NR accumulators in
//! SIMD registers while k runs (a chunk of KC values of k at a time, the terms' k
//! concatenated; the accumulators are stored to `acc` and reloaded between chunks, which
//! is exact). Per k the tile loads NR weight vectors (contiguous in the packed panel) and
//! broadcasts MR values z[s][k]. The weights are packed once per plan ([`Packed`]): panels
//! of `NR·L` units (L lanes per vector), k-major inside a panel, units padded with zeros to
//! the panel width (the padded units are computed and ignored). On x86-64 with AVX-512 the
//! tile uses `std::arch` intrinsics (`tile_x86`; f32 and f64: 16 or 8 lanes; bf16/f16 in
//! f32 lanes with a vector rounding after each operation); f16 runs in native binary16
//! arithmetic instead when the CPU has AVX512-FP16 (`tile_f16`, 32 lanes, same bits). With
//! AVX2 + FMA and no AVX-512, f32 and f64 run the same tile and driver on 8 or 4 lanes
//! (`tile_avx2`: tiles of 6 sequences × 2 AVX2 vectors, panels of one 64-byte vector), and
//! with F16C also bf16 and f16 in f32 lanes (tiles of 4 × 2, round-to-odd from TwoSum;
//! bf16's fused step only when no product of the call under- or overflows f32); elsewhere a
//! portable loop performs the same operations.

use crate::sim::lanes::LaneFormat;

/// Sequences per register tile.
pub const MR: usize = 8;
/// Values of k per pass of `tile_x86`'s driver: a tile keeps its accumulators in
/// registers for up to KC values of k, and stores and reloads them between passes. 256 until
/// session 67, sized so that a panel's slice of a pass stayed in L1 (32 KiB for AVX-512's
/// panels of 128 bytes per k). Measured on Zen 5 (one build reading the pass length from the
/// environment, 3 alternating rounds, 1 thread; shapes (B, T, hidden, input)): at
/// (64, 30, 1024, 128) the LSTM f32+fma 128 / 256 / 512 / 1024: 0.96 / 1.05 / 1.09 / 1.11
/// of the 256 build, f32 0.92 / 0.97 / 1.10 / 1.09, the SimpleRNN f32+fma 0.96 / 0.99 / 1.01
/// / 1.04, the GRU f64+fma 0.95 / 0.93 / 1.08 / 1.03; at 1024 on 2 threads LSTM 1.08,
/// SimpleRNN 1.05, GRU f32 1.08; batch 1 at hidden 1024 (the unit split) 1.17; hidden 256
/// and 64 within −1% to +5%; the AVX2 tiles (`RNNSIM_ISA=avx2`) +2% to +5%. The slice a
/// pass now reads per panel (128 KiB) comes from L2, where the hardware prefetchers keep
/// it ahead of the tiles; the accumulators of a hidden-1024 LSTM's recurrent map (1 MiB for
/// 64 sequences) make one round trip per tick instead of four. Not measured on a CPU with
/// 512 KiB of L2 (Zen 3), where a pass's z copy (4 KiB per sequence in f32) takes a larger
/// share of it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const KC: usize = 1024;
/// Packed weights of more bytes than this are streamed from L3 with prefetching
/// (`tile_x86::Prefetch`), and on several threads each block's units are shared
/// (`unit_split`). Tuned with 1–2 MiB of L2 per core. On Zen 3's 512 KiB, streaming from
/// 512 KiB on instead ran the f64 SimpleRNN at hidden 256 (655 KB of weights) 8–9% faster
/// and the f32 GRU there (983 KB) 4–7% slower (1 thread, 25 alternating calls, session
/// 61), so this stays 1 MiB while the blocks follow the CPU's L2 (`cache_size::l2_budget`).
pub const L2_BUDGET: usize = 1 << 20;
/// Terms per `affine` call on the AVX-512 tiles (more run term by term).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const MAX_TERMS: usize = 2;

/// Wᵀ (K × units, row-major: `wt[k·units + i] = W_ik`) packed in panels of `pw` units.
#[derive(Debug, Clone)]
pub struct Packed<C> {
    pub k: usize,
    pub units: usize,
    /// panel width in units: NR·L
    pub pw: usize,
    /// units padded to a multiple of `pw` (the row stride `acc` must have)
    pub up: usize,
    /// data[p·k·pw + kk·pw + u] = Wᵀ[kk][p·pw + u] (0 past `units`)
    data: Vec<C>,
    /// f16 only: the binary16 repacking for the native tile, built on first use
    #[cfg(target_arch = "x86_64")]
    f16: std::sync::OnceLock<Box<Packed<u16>>>,
    /// bf16 on AVX2 only: (smallest nonzero, largest) finite weight magnitude, for the
    /// fused step's precondition (`tile_avx2::bf16_products_exact`), found on first use
    #[cfg(target_arch = "x86_64")]
    magnitudes: std::sync::OnceLock<[f32; 2]>,
    /// f32 on AVX512-BF16 only: the bf16 pairs of `tile_bf16_pairs`, or None when a weight
    /// is not a bf16 value in its range, found on first use
    #[cfg(target_arch = "x86_64")]
    bf16_pairs: std::sync::OnceLock<Option<Box<tile_bf16_pairs::Pairs>>>,
}

/// Lanes per 64-byte vector of `C`.
pub const fn lanes_of<C>() -> usize {
    64 / std::mem::size_of::<C>()
}

impl<C: Copy + Default> Packed<C> {
    /// Packs `wt` for tiles of `nr` vectors (1 or 2).
    pub fn new(wt: &[C], k: usize, units: usize, nr: usize) -> Self {
        debug_assert_eq!(wt.len(), k * units);
        let pw = nr * lanes_of::<C>();
        let up = units.div_ceil(pw).max(1) * pw;
        // on 2 MiB pages where Linux grants them: weights of several MiB are streamed
        // every tick, each 4 KiB page of them a TLB miss (`tile_rates`, Zen 4, 1152 × 4096:
        // f32 97–100 → 104, f64 43–45 → 48–51 G flop/s)
        let mut data = Vec::with_capacity(up * k);
        #[cfg(target_os = "linux")]
        crate::sim::block_results::advise_huge_pages(data.spare_capacity_mut());
        // written in storage order (panel, k, unit), each value once
        for p in 0..up / pw {
            for kk in 0..k {
                data.extend((p * pw..(p + 1) * pw).map(|i| if i < units { wt[kk * units + i] } else { C::default() }));
            }
        }
        debug_assert_eq!(data.len(), up * k);
        Packed {
            k,
            units,
            pw,
            up,
            data,
            #[cfg(target_arch = "x86_64")]
            f16: std::sync::OnceLock::new(),
            #[cfg(target_arch = "x86_64")]
            magnitudes: std::sync::OnceLock::new(),
            #[cfg(target_arch = "x86_64")]
            bf16_pairs: std::sync::OnceLock::new(),
        }
    }

    /// Two vectors per tile when there are enough units to fill them, and one when the
    /// units are an odd number of whole vectors below 16, where panels of two would pad
    /// more than 1/16 of the work (48 f32 units: 64 computed in panels of two vectors, 48
    /// in panels of one). Zen 4, session 24, end to end, 1 thread: GRU f32+fma at hidden 16
    /// (48 units) 9.5 → 10.3 M token-steps/s, f32 at hidden 48 (144 units) 2.25–2.28 →
    /// 2.63–2.65 M; at 31 vectors (LSTM hidden 124) one-vector panels were 3% slower.
    ///
    /// Where the AVX2 tiles run, always one vector (64 bytes: 16 f32 or 8 f64 units, one
    /// AVX2 stripe): see [`x86::one_stripe_panels`].
    pub fn for_units(wt: &[C], k: usize, units: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if x86::one_stripe_panels() {
            return Self::new(wt, k, units, 1);
        }
        let l = lanes_of::<C>();
        let vectors = units.div_ceil(l);
        let nr = if vectors > 1 && !(units.is_multiple_of(l) && vectors % 2 == 1 && vectors < 16) { 2 } else { 1 };
        Self::new(wt, k, units, nr)
    }
}

impl<C> Packed<C> {
    /// Bytes of the packed weights.
    pub fn bytes(&self) -> usize {
        self.k * self.up * std::mem::size_of::<C>()
    }
}

/// One product term of an affine map: Wᵀ packed, and the z rows it multiplies (`ns` rows
/// of stride `ldz`, the first `w.k` values of each used).
#[derive(Clone, Copy)]
pub struct Term<'a, C> {
    pub w: &'a Packed<C>,
    pub z: &'a [C],
    pub ldz: usize,
}

/// acc (ns rows of stride `packed.up`) += z (ns rows of stride `ldz`, first `packed.k`
/// values used) · Wᵀ, k ascending, every operation rounded, or every product-sum fused when
/// `fma` (see the module doc).
///
/// For the half formats with f32 sums this continues an f32 sum (f32's steps, no rounding:
/// `affine` ends a sum).
pub fn accumulate<F: LaneFormat>(packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, acc: &mut [F::C], fma: bool) {
    if f32_sums::<F>() {
        return accumulate::<F::Sum>(packed, z, ldz, ns, acc, fma);
    }
    if ns == 0 || packed.k == 0 {
        return;
    }
    let term = Term { w: packed, z, ldz };
    check_term(&term, ns);
    assert!(acc.len() >= ns * packed.up);
    let all = 0..packed.up / packed.pw;
    // SAFETY: `acc` covers the ns rows (checked) and is borrowed mutably for the call.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if let Some(done) = x86::affine::<F>(None, &[term], ns, acc.as_mut_ptr(), None, fma, all.clone()) {
            return done;
        }
        portable_term::<F>(&term, ns, acc.as_mut_ptr(), fma, all);
    }
}

/// out (ns rows of stride `up`, the terms' common padded width) = bias (a row of `up`
/// values), then + each term's products in order, k ascending within a term: the rows of
/// b + W₁z₁ + W₂z₂ + … in the documented order (float_engine.rs), in one pass over the
/// tiles (the accumulators go from the bias to the last term without leaving the
/// registers, except between chunks of KC values of k). Same bits as `fill_rows` then
/// `accumulate` term by term.
pub fn affine<F: LaneFormat>(bias: &[F::C], terms: &[Term<'_, F::C>], ns: usize, out: &mut [F::C], fma: bool) {
    assert!(out.len() >= ns * bias.len());
    let Some(t0) = terms.first() else {
        return crate::sim::block_io::fill_rows(&mut out[..ns * bias.len()], bias);
    };
    let panels = 0..t0.w.up / t0.w.pw;
    // SAFETY: `out` covers the ns rows (checked) and is borrowed mutably for the call.
    unsafe { affine_panels::<F>(bias, terms, ns, out.as_mut_ptr(), fma, panels) }
}

/// `affine` for the units of panels `panels` only (units panels.start·pw..panels.end·pw of
/// every row; the others untouched): each computed value is `affine`'s, bit for bit, so
/// disjoint ranges computed at the same time (`unit_split`) give `affine`'s rows.
///
/// # Safety
/// `out` points to `ns` rows of `bias.len()` values, and nothing else reads or writes the
/// units of `panels` in those rows during the call.
///
/// The half formats with f32 sums (`num::f32_sums`) run f32's tiles (`LaneFormat::Sum`),
/// then round each computed value to the half format (`round_lanes`, once per sum).
pub unsafe fn affine_panels<F: LaneFormat>(bias: &[F::C], terms: &[Term<'_, F::C>], ns: usize, out: *mut F::C, fma: bool, panels: std::ops::Range<usize>) {
    let up = bias.len();
    assert!(!terms.is_empty() && terms.iter().all(|t| t.w.up == up && t.w.pw == terms[0].w.pw) && panels.end <= up / terms[0].w.pw);
    if ns == 0 || panels.is_empty() {
        return;
    }
    if f32_sums::<F>() {
        affine_panels::<F::Sum>(bias, terms, ns, out, fma, panels.clone());
        let pw = terms[0].w.pw;
        for s in 0..ns {
            F::round_lanes(std::slice::from_raw_parts_mut(out.add(s * up + panels.start * pw), panels.len() * pw));
        }
        return;
    }
    terms.iter().for_each(|t| check_term(t, ns));
    #[cfg(target_arch = "x86_64")]
    if let Some(done) = x86::affine::<F>(Some(bias), terms, ns, out, None, fma, panels.clone()) {
        return done;
    }
    let pw = terms[0].w.pw;
    let units = panels.start * pw..panels.end * pw;
    for s in 0..ns {
        let row = std::slice::from_raw_parts_mut(out.add(s * up + units.start), units.len());
        row.copy_from_slice(&bias[units.clone()]);
    }
    for t in terms.iter().filter(|t| t.w.k > 0) {
        portable_term::<F>(t, ns, out, fma, panels.clone());
    }
}

/// Whether this build has the AVX-512 tiles (the cfg `rnnsim_avx512_tiles`, set by
/// `build.rs` where the building machine has AVX-512 or `RNNSIM_AVX512_TILES=1`): without
/// them an AVX-512 CPU runs the AVX2 tiles, with the same bits.
pub const AVX512_TILES_COMPILED: bool = cfg!(rnnsim_avx512_tiles);

/// Whether `affine_binary16` runs here: f16's native tile (x86-64 with AVX512-FP16).
pub fn native_f16() -> bool {
    #[cfg(target_arch = "x86_64")]
    return tile_f16::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `affine::<half::f16>` (C is f32: lanes holding f16 values, the bias row and the z rows) with
/// the rows left as the native tile computes them, in binary16: `out` gets ns rows of
/// `binary16_width(terms[0].w)` bits, the same values as `affine`'s rows,
/// without its conversion back to f32 lanes (a pass over the rows that took 35–45% of the
/// native tile's time in an f16 LSTM at hidden 16). For consumers that convert as they read
/// (`cells::gated_half_loops::Binary16`). Only where [`native_f16`].
pub fn affine_binary16<C: 'static>(bias: &[C], terms: &[Term<'_, C>], ns: usize, out: &mut [u16], fma: bool) {
    assert!(native_f16(), "affine_binary16 without the native f16 tile");
    if ns == 0 {
        return;
    }
    terms.iter().for_each(|t| check_term(t, ns));
    #[cfg(target_arch = "x86_64")]
    tile_f16::affine_binary16(crate::sim::same_type::slice(bias), x86::cast_terms(terms), ns, out, fma);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bias, out, fma);
}

/// `affine_binary16` with every term's z rows in binary16 already: (packing, rows, row
/// stride) per term (f16 inputs as given, or states kept in binary16), so that no row is
/// converted in or out.
pub fn affine_bits<C: 'static>(bias: &[C], terms: &[(&Packed<C>, &[u16], usize)], ns: usize, out: &mut [u16], fma: bool) {
    assert!(native_f16(), "affine_bits without the native f16 tile");
    if ns == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut t = [(x86::cast::<C, f32>(terms[0].0), terms[0].1, terms[0].2); 4];
        assert!(terms.len() <= t.len(), "affine_bits takes at most 4 terms");
        for (d, &(p, z, ldz)) in t.iter_mut().zip(terms) {
            *d = (x86::cast(p), z, ldz);
        }
        tile_f16::affine_bits(crate::sim::same_type::slice(bias), &t[..terms.len()], ns, out, fma);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bias, terms, out, fma);
}

/// The row stride, in binary16 values, of `affine_binary16`'s result for maps of `p`.
pub fn binary16_width<C: 'static>(p: &Packed<C>) -> usize {
    #[cfg(target_arch = "x86_64")]
    return tile_f16::binary16_width(x86::cast(p));
    #[cfg(not(target_arch = "x86_64"))]
    p.up
}

/// The gate split of a gated cell's map (`affine_gates`): `region[g]` is the region of
/// `pre` that gate block g (units g·hsz..(g + 1)·hsz) goes to, or None to leave it as a row
/// of `out`; region r holds unit u of sequence s at r·ns·hsz + s·hsz + u
/// (`cells::gated_pointwise`).
pub struct GateSplit<'a, C> {
    /// the rows (stride `addend_ld`, ≥ up) added in front of each sum that goes to a region
    pub addend: &'a [C],
    pub addend_ld: usize,
    pub pre: &'a mut [C],
    pub hsz: usize,
    pub region: [Option<usize>; 5],
}

/// `affine`, except that the gate blocks with a region go to `pre` as addend + sum (one
/// rounded addition: the pre-activation gi + gh of `cells::gated_pointwise`), computed as
/// the tiles' last step instead of stored to `out` and added in another pass. Same bits
/// as `affine` then those additions. False (and nothing done) when the tiles cannot split
/// the gates: hsz not a multiple of the SIMD lanes (a vector would hold two gates), no
/// AVX-512 or AVX2 tile for the format (or, for bf16's fused step on AVX2, products that
/// are not exact in f32), or the native f16 tile; the caller then runs `affine` and adds.
///
/// The half formats with f32 sums (`f32_sums`) run f32's AVX-512 tiles, whose last step
/// is then R(R(addend) + R(sum)) (each sum rounded before the addition, as the cells'
/// loops do), and leave the other rows as f32 sums (no rounding pass: their readers round,
/// `gated_half_loops::F32Sums`); false without AVX-512.
pub fn affine_gates<F: LaneFormat>(bias: &[F::C], terms: &[Term<'_, F::C>], ns: usize, out: &mut [F::C], split: GateSplit<'_, F::C>, fma: bool) -> bool {
    let (up, hsz) = (bias.len(), split.hsz);
    let units = terms.first().map_or(0, |t| t.w.units);
    let regions = split.region.iter().flatten().map(|&r| r + 1).max().unwrap_or(0);
    assert!(out.len() >= ns * up && terms.iter().all(|t| t.w.up == up && t.w.pw == terms[0].w.pw && t.w.units == units));
    assert!(hsz > 0 && units <= 5 * hsz && split.addend_ld >= up && split.addend.len() >= ns.saturating_sub(1) * split.addend_ld + up && split.pre.len() >= regions * ns * hsz);
    if ns == 0 || terms.is_empty() {
        return false;
    }
    terms.iter().for_each(|t| check_term(t, ns));
    // SAFETY: `out` covers the ns rows (checked) and is borrowed mutably for the call.
    #[cfg(target_arch = "x86_64")]
    return unsafe { x86::affine::<F>(Some(bias), terms, ns, out.as_mut_ptr(), Some(split), fma, 0..up / terms[0].w.pw).is_some() };
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (split, fma);
        false
    }
}

/// Whether F's sums run in another format (`LaneFormat::Sum`: the half formats with f32
/// sums), whose tiles F's maps then use.
#[inline(always)]
pub(crate) fn f32_sums<F: LaneFormat>() -> bool {
    std::any::TypeId::of::<F::Sum>() != std::any::TypeId::of::<F>()
}

fn check_term<C>(t: &Term<'_, C>, ns: usize) {
    assert!(t.w.k == 0 || t.z.len() >= (ns - 1) * t.ldz + t.w.k, "z rows do not cover the term");
}

/// # Safety
/// As `affine_panels`: `acc` holds `ns` rows of stride `t.w.up`, the units of `panels`
/// this call's alone.
unsafe fn portable_term<F: LaneFormat>(t: &Term<'_, F::C>, ns: usize, acc: *mut F::C, fma: bool, panels: std::ops::Range<usize>) {
    #[cfg(target_arch = "x86_64")]
    if crate::sim::cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked); the rest as for this function.
        return avx2_term::<F>(t, ns, acc, fma, panels);
    }
    if fma {
        portable::<F, true, false>(t.w, t.z, t.ldz, ns, acc, panels)
    } else {
        portable::<F, false, false>(t.w, t.z, t.ldz, ns, acc, panels)
    }
}

/// `portable_term` compiled for AVX2 + FMA (a CPU without AVX-512, for the formats the AVX2
/// tiles do not run: bf16 and f16): 8 f32 lanes, and the fused product-sums of f32/f64
/// from `vfmadd` instead of the odd-rounding emulation.
///
/// # Safety
/// As `portable_term`, and the CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx,fma")]
unsafe fn avx2_term<F: LaneFormat>(t: &Term<'_, F::C>, ns: usize, acc: *mut F::C, fma: bool, panels: std::ops::Range<usize>) {
    if fma {
        portable::<F, true, true>(t.w, t.z, t.ldz, ns, acc, panels)
    } else {
        portable::<F, false, true>(t.w, t.z, t.ldz, ns, acc, panels)
    }
}

/// The same operations in plain loops: the panel widths of the builtin formats by
/// [`blocked`] (a few sequences' accumulators held in registers), others unit by unit.
/// `HW`: the fused product-sums from `fma_hw_l` (only inside `avx2_term`).
#[inline(always)]
unsafe fn portable<F: LaneFormat, const FUSED: bool, const HW: bool>(packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, acc: *mut F::C, panels: std::ops::Range<usize>) {
    // S sequences at a time: their accumulators (S rows of pw lanes), one row of weights
    // and the broadcast z fit in AVX2's 16 vector registers (a row of 64 bytes is 2 ymm,
    // 128 bytes 4, 256 bytes 8; S = 3 at 4 ymm spilled)
    let wide = std::mem::size_of::<F::C>() == 8;
    match (packed.pw, wide) {
        (16, false) => blocked::<F, FUSED, HW, 16, 4>(packed, z, ldz, ns, acc, panels),
        (8, true) => blocked::<F, FUSED, HW, 8, 4>(packed, z, ldz, ns, acc, panels),
        (32, false) => blocked::<F, FUSED, HW, 32, 2>(packed, z, ldz, ns, acc, panels),
        (16, true) => blocked::<F, FUSED, HW, 16, 2>(packed, z, ldz, ns, acc, panels),
        (64, false) => blocked::<F, FUSED, HW, 64, 1>(packed, z, ldz, ns, acc, panels),
        (32, true) => blocked::<F, FUSED, HW, 32, 1>(packed, z, ldz, ns, acc, panels),
        _ => unit_by_unit::<F, FUSED, HW>(packed, z, ldz, ns, acc, panels),
    }
}

/// `portable` for panels of PW = `packed.pw` units (known at compile time, so the
/// accumulators stay in registers): S rows at a time, each row's panel accumulated in a
/// local array across all of k (k ascending: the same operations in the same order), the
/// weights of each kk loaded once for the S rows.
#[inline(always)]
unsafe fn blocked<F: LaneFormat, const FUSED: bool, const HW: bool, const PW: usize, const S: usize>(packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, acc: *mut F::C, panels: std::ops::Range<usize>) {
    let (k, pw, up) = (packed.k, PW, packed.up);
    assert_eq!(packed.pw, PW);
    for p in panels {
        let panel = &packed.data[p * k * pw..(p + 1) * k * pw];
        let mut s0 = 0;
        while s0 < ns {
            if s0 + S <= ns {
                rows::<F, FUSED, HW, PW, S>(panel, z, ldz, s0, k, acc.add(s0 * up + p * pw), up);
                s0 += S;
            } else {
                rows::<F, FUSED, HW, PW, 1>(panel, z, ldz, s0, k, acc.add(s0 * up + p * pw), up);
                s0 += 1;
            }
        }
    }
}

/// Rows s0..s0 + S of one panel (`out`: row s0's first unit of the panel, rows `up` apart).
#[inline(always)]
unsafe fn rows<F: LaneFormat, const FUSED: bool, const HW: bool, const PW: usize, const S: usize>(panel: &[F::C], z: &[F::C], ldz: usize, s0: usize, k: usize, out: *mut F::C, up: usize) {
    let mut a = [[F::C::default(); PW]; S];
    for (r, row) in a.iter_mut().enumerate() {
        row.copy_from_slice(std::slice::from_raw_parts(out.add(r * up), PW));
    }
    for (kk, w) in panel.chunks_exact(PW).take(k).enumerate() {
        let w: &[F::C; PW] = w.try_into().unwrap();
        for (r, row) in a.iter_mut().enumerate() {
            let zk = z[(s0 + r) * ldz + kk];
            for (x, &w) in row.iter_mut().zip(w) {
                *x = step::<F, FUSED, HW>(w, zk, *x);
            }
        }
    }
    for (r, row) in a.iter().enumerate() {
        std::slice::from_raw_parts_mut(out.add(r * up), PW).copy_from_slice(row);
    }
}

/// One product-sum x + w·z: fused (from the hardware when `HW`) or two roundings.
#[inline(always)]
fn step<F: LaneFormat, const FUSED: bool, const HW: bool>(w: F::C, zk: F::C, x: F::C) -> F::C {
    match (FUSED, HW) {
        (true, true) => F::fma_hw_l(w, zk, x),
        (true, false) => F::fma_l(w, zk, x),
        _ => F::add_l(x, F::mul_l(w, zk)),
    }
}

/// `portable` unit by unit (the unit index innermost, so it vectorises).
#[inline(always)]
unsafe fn unit_by_unit<F: LaneFormat, const FUSED: bool, const HW: bool>(packed: &Packed<F::C>, z: &[F::C], ldz: usize, ns: usize, acc: *mut F::C, panels: std::ops::Range<usize>) {
    let (k, pw, up) = (packed.k, packed.pw, packed.up);
    for p in panels {
        let panel = &packed.data[p * k * pw..(p + 1) * k * pw];
        for s in 0..ns {
            let a = std::slice::from_raw_parts_mut(acc.add(s * up + p * pw), pw);
            for kk in 0..k {
                let zk = z[s * ldz + kk];
                for (x, &w) in a.iter_mut().zip(&panel[kk * pw..(kk + 1) * pw]) {
                    *x = step::<F, FUSED, HW>(w, zk, *x);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[path = "tile_f16.rs"]
mod tile_f16;

#[cfg(target_arch = "x86_64")]
#[path = "tile_x86.rs"]
mod x86;

#[cfg(target_arch = "x86_64")]
#[path = "tile_bf16_pairs.rs"]
mod tile_bf16_pairs;

#[cfg(target_arch = "x86_64")]
#[path = "tile_avx2.rs"]
mod tile_avx2;

#[cfg(all(target_arch = "x86_64", rnnsim_avx512_tiles))]
#[path = "tile_avx512.rs"]
mod tile_avx512;

#[cfg(test)]
#[path = "tile_kernel_tests.rs"]
mod tests;

#[cfg(all(test, target_arch = "x86_64"))]
#[path = "tile_bf16_pairs_tests.rs"]
mod bf16_pairs_tests;
