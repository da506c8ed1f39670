//! Whether the AVX-512 tiles are compiled: the cfg `rnnsim_avx512_tiles`.
//!
//! The matrix tiles are generic over format, tile height, stripe width, fused or not and
//! streamed or not, and rustc compiles one copy of each for every combination
//! (`rust/sim/tile_x86.rs`). The AVX-512 ones (ten lane types, tiles of up to 12
//! sequences) were about nine tenths of those copies, and most of the crate's build time:
//! on a 2-core Zen 3 guest, which cannot run them, a release build took 37–42 min with them
//! (session 58). They are compiled when
//!
//! - `RNNSIM_AVX512_TILES=1` is set (for a wheel that other machines will run), or
//! - it is unset and the machine that builds has AVX-512 F, VL and DQ, and builds for
//!   itself (a `pip install` from source: the machine that will run the code).
//!
//! `RNNSIM_AVX512_TILES=0` leaves them out. Without them an AVX-512 CPU runs the AVX2 tiles
//! (the same bits: every tier computes the same operations in the same order); the AVX-512
//! activations and single-sequence kernels are compiled either way.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rnnsim_avx512_tiles)");
    println!("cargo::rerun-if-env-changed=RNNSIM_AVX512_TILES");
    println!("cargo::rerun-if-changed=build.rs");
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    let on = match std::env::var("RNNSIM_AVX512_TILES").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        Ok(other) => panic!("RNNSIM_AVX512_TILES is {other:?}: set it to 1 (compile the AVX-512 tiles) or 0 (leave them out), or unset it (compile them when this machine has AVX-512)"),
        Err(_) => x86_64 && builds_for_itself() && host_has_avx512(),
    };
    if on && x86_64 {
        println!("cargo::rustc-cfg=rnnsim_avx512_tiles");
    }
}

/// The target is the machine running this script (no cross-compilation).
fn builds_for_itself() -> bool {
    matches!((std::env::var("HOST"), std::env::var("TARGET")), (Ok(h), Ok(t)) if h == t)
}

/// This machine has the features the AVX-512 tiles need (`rust/sim/cpu.rs`, `avx512`).
fn host_has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}
