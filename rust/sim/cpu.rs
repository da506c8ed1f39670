//! Which vector instruction sets the float engines use, decided once per process.
//!
//! Every AVX-512, AVX-512-FP16 and AVX2 path asks here, so one switch caps them all: with
//! `RNNSIM_ISA=avx2` in the environment the engines run as on a CPU without AVX-512 (the
//! AVX2 tiles, kernels and activations, and the portable loops compiled for AVX2 + FMA), with `RNNSIM_ISA=baseline` as on one without
//! AVX2 either (the loops as compiled for the target, SSE2 on x86-64). The bits do not
//! change (`float_batch`: the instruction set changes the speed, not the results), which the
//! tests check by running the same batches in processes with each cap; and a user can
//! measure what another machine would get. Any other value is ignored (no cap).

use std::sync::OnceLock;

/// The instruction-set tiers, in order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Isa {
    Baseline,
    Avx2,
    Avx512,
}

/// The cap set by `RNNSIM_ISA` (read once): `Avx512` (no cap) when unset or unknown.
pub fn cap() -> Isa {
    static CAP: OnceLock<Isa> = OnceLock::new();
    *CAP.get_or_init(|| match std::env::var("RNNSIM_ISA").as_deref() {
        Ok("baseline") => Isa::Baseline,
        Ok("avx2") => Isa::Avx2,
        _ => Isa::Avx512,
    })
}

/// What this CPU runs, under the cap (detected once).
struct Tiers {
    avx512: bool,
    avx512_fp16: bool,
    avx512_f16c: bool,
    avx512_bf16: bool,
    avx2_fma: bool,
    avx2_f16c: bool,
}

fn tiers() -> &'static Tiers {
    static TIERS: OnceLock<Tiers> = OnceLock::new();
    TIERS.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx512 = cap() >= Isa::Avx512 && has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("fma");
            let avx2_fma = cap() >= Isa::Avx2 && has!("avx2") && has!("fma");
            Tiers {
                avx512,
                avx512_fp16: avx512 && has!("avx512fp16") && has!("avx512bw"),
                avx512_f16c: avx512 && has!("f16c") && has!("popcnt"),
                avx512_bf16: avx512 && has!("avx512bf16") && has!("avx512bw"),
                avx2_fma,
                avx2_f16c: avx2_fma && has!("f16c"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Tiers { avx512: false, avx512_fp16: false, avx512_f16c: false, avx512_bf16: false, avx2_fma: false, avx2_f16c: false }
        }
    })
}

/// AVX-512 F/VL/DQ and FMA: the tiles, the activations, the single-sequence kernel.
pub fn avx512() -> bool {
    tiers().avx512
}

/// [`avx512`] and AVX-512-FP16/BW: the native binary16 tile.
pub fn avx512_fp16() -> bool {
    tiers().avx512_fp16
}

/// [`avx512`], F16C and POPCNT: the f16/bf16 activations (`half_tables`, `half_segments`).
pub fn avx512_f16c() -> bool {
    tiers().avx512_f16c
}

/// [`avx512`] and AVX512-BF16/BW: `vdpbf16ps`, the tile of bf16 products in f32 sums
/// (`tile_bf16_pairs`).
pub fn avx512_bf16() -> bool {
    tiers().avx512_bf16
}

/// AVX2 and FMA (also true on AVX-512 CPUs): the AVX2 tiles, kernels and activations,
/// and the portable loops compiled for them, when AVX-512 is missing or capped.
pub fn avx2_fma() -> bool {
    tiers().avx2_fma
}

/// [`avx2_fma`] and F16C: the AVX2 tiles, roundings and table gathers of f16 and bf16.
pub fn avx2_f16c() -> bool {
    tiers().avx2_f16c
}

/// Whether the CPU's vector pipes run a 512-bit FMA in one slot (two of them per cycle):
/// Intel's AVX-512 cores, and AMD's from Zen 5 (CPUID family 0x1A) on. Zen 4 (family 0x19)
/// splits a 512-bit FMA over its two 256-bit pipes. The f32/f64 tiles choose how to broadcast
/// by it (`tile_avx512::register_broadcast`). Zen 5's mobile parts (Strix Point, also family
/// 0x1A) have 256-bit pipes and are counted in; the choice changes the speed, not the bits.
pub fn full_width_fma() -> bool {
    static FULL: OnceLock<bool> = OnceLock::new();
    *FULL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            // (CPUID leaves 0, the vendor string, and 1, the family, exist on every x86-64 CPU)
            let r = std::arch::x86_64::__cpuid(0);
            let mut v = [0u8; 12];
            v[..4].copy_from_slice(&r.ebx.to_le_bytes());
            v[4..8].copy_from_slice(&r.edx.to_le_bytes());
            v[8..].copy_from_slice(&r.ecx.to_le_bytes());
            let eax = std::arch::x86_64::__cpuid(1).eax;
            full_width_fma_of(&v, eax)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// [`full_width_fma`] from the vendor string and CPUID leaf 1's EAX: the family is bits
/// 8–11, plus bits 20–27 when those read 0xF (Intel's and AMD's manuals, "CPUID").
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn full_width_fma_of(vendor: &[u8; 12], leaf1_eax: u32) -> bool {
    let base = (leaf1_eax >> 8) & 0xF;
    let family = if base == 0xF { base + ((leaf1_eax >> 20) & 0xFF) } else { base };
    vendor == b"GenuineIntel" || (vendor == b"AuthenticAMD" && family >= 0x1A)
}

#[cfg(test)]
mod tests {
    use super::full_width_fma_of;

    #[test]
    fn full_width_fma_by_vendor_and_family() {
        // leaf 1 EAX as the machines of sessions 23–42 report it
        let (intel, amd) = (b"GenuineIntel", b"AuthenticAMD");
        assert!(full_width_fma_of(intel, 0x0008_06F8), "Sapphire Rapids (family 6)");
        assert!(!full_width_fma_of(amd, 0x00A1_0F11), "Zen 4 EPYC (family 0xF + 0xA = 0x19)");
        assert!(!full_width_fma_of(amd, 0x00A0_0F11), "Zen 3 EPYC (family 0x19)");
        assert!(full_width_fma_of(amd, 0x00B0_0F21), "Zen 5 EPYC (family 0xF + 0xB = 0x1A)");
        assert!(full_width_fma_of(amd, 0x00C0_0F00), "a later AMD family (0x1B)");
        assert!(!full_width_fma_of(b"HygonGenuine", 0x00B0_0F21), "another vendor");
    }
}
