// scratch probe (not committed): times tile_kernel::affine at a shape
use rnnsim::sim::tile_kernel::{affine, Packed, Term};
use std::time::Instant;
fn main() {
    let a: Vec<usize> = std::env::args().skip(1).take(4).map(|s| s.parse().unwrap()).collect();
    let fma = std::env::args().any(|s| s == "fma");
    let (ns, d, n, reps) = (a[0], a[1], a[2], a[3]);
    let mut s = 1u64;
    let mut r = || { s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((s >> 40) as f32 / 16777216.0 - 0.5) * 0.1 };
    let wx: Vec<f32> = (0..n * d).map(|_| r()).collect();
    let wv: Vec<f32> = (0..d * d).map(|_| r()).collect();
    let (px, pv) = (Packed::for_units(&wx, n, d), Packed::for_units(&wv, d, d));
    let up = pv.up;
    let x: Vec<f32> = (0..ns * n * 16).map(|_| r()).collect();
    let h: Vec<f32> = (0..ns * up).map(|_| r()).collect();
    let b: Vec<f32> = (0..up).map(|_| r()).collect();
    let mut out = vec![0f32; ns * up];
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t0 = Instant::now();
        for _ in 0..10 {
            affine::<f32>(&b, &[Term { w: &px, z: &x, ldz: n * 16 }, Term { w: &pv, z: &h, ldz: up }], ns, &mut out, fma);
        }
        best = best.min(t0.elapsed().as_secs_f64() / 10.0);
    }
    let flops = 2.0 * (ns * d * (d + n)) as f64;
    println!("ns {ns} d {d} n {n} fma {fma}: {:.1} us/tick, {:.1} G flops/s", best * 1e6, flops / best / 1e9);
}
