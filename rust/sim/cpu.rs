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
                avx512_f16c: avx512 && has!("f16c"),
                avx2_fma,
                avx2_f16c: avx2_fma && has!("f16c"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Tiers { avx512: false, avx512_fp16: false, avx512_f16c: false, avx2_fma: false, avx2_f16c: false }
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

/// [`avx512`] and F16C: the gathers of the f16/bf16 activation tables.
pub fn avx512_f16c() -> bool {
    tiers().avx512_f16c
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

/// Whether the CPU is Intel's (CPUID vendor "GenuineIntel"): the fused tiles choose how to
/// broadcast (`tile_x86::register_broadcast`).
pub fn intel() -> bool {
    static INTEL: OnceLock<bool> = OnceLock::new();
    *INTEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            // (CPUID leaf 0, the vendor string, exists on every x86-64 CPU)
            let r = std::arch::x86_64::__cpuid(0);
            let mut v = [0u8; 12];
            v[..4].copy_from_slice(&r.ebx.to_le_bytes());
            v[4..8].copy_from_slice(&r.edx.to_le_bytes());
            v[8..].copy_from_slice(&r.ecx.to_le_bytes());
            &v == b"GenuineIntel"
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}
