//! The register kernel's parts: the vector activations against the lane activations of the
//! lock-step kernel, and the padded layout. (The whole kernel against the per-sequence
//! engine, bit for bit: `gated_batch_tests`.)

use super::*;
use crate::sim::float_batch::activate;

#[test]
fn vector_activations_equal_the_lane_activations_bit_for_bit() {
    if !available() {
        return;
    }
    let mut s = 99u64;
    let mut xs: Vec<f32> = vec![0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -1.5, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, -1e-40, f32::MIN_POSITIVE, 88.5, -104.5];
    for i in 0..20_000 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let bits = (s >> 32) as u32;
        xs.push(f32::from_bits(if i % 2 == 0 { bits } else { bits & 0x80ff_ffff | 0x3c00_0000 }));
    }
    xs.resize(xs.len().next_multiple_of(16), 0.25);
    for a in [Activation::Identity, Activation::Relu, Activation::Slu, Activation::Step, Activation::Tanh, Activation::Sigmoid, Activation::Sign, Activation::SatSigmoid] {
        let mut want = xs.clone();
        activate::<f32>(a, &mut want);
        let mut got = vec![0f32; xs.len()];
        for (d, x) in got.chunks_exact_mut(16).zip(xs.chunks_exact(16)) {
            // SAFETY: available() checked the CPU features; 16 values each side.
            unsafe { x86::act_slice16(a, x, d) };
        }
        for ((&x, &w), &g) in xs.iter().zip(&want).zip(&got) {
            assert!(w.to_bits() == g.to_bits() || (w.is_nan() && g.is_nan()), "{a:?}({x:e}): {g:e} vs {w:e}");
        }
    }
}

#[test]
fn each_gate_block_is_padded_to_whole_vectors() {
    use crate::net::matrix::RatMatrix;
    use crate::sim::cells::affine::DenseAffine;
    use malachite::Rational;
    // an LSTM of hidden 17, 2 inputs: 4 blocks of 2 vectors; w_ih[r][k] = 100·r + k
    let (h, n) = (17, 2);
    let q = |v: i64| Rational::from(v);
    let w_ih = RatMatrix::from_rows((0..4 * h).map(|r| (0..n).map(|k| q(100 * r as i64 + k as i64)).collect()).collect());
    let w_hh = RatMatrix::from_rows((0..4 * h).map(|_| vec![q(0); h]).collect());
    let b: Vec<Rational> = (0..4 * h).map(|r| q(r as i64)).collect();
    let g = GatedPlan::<f32> { kind: GatedKind::Lstm, hidden: h, ih: DenseAffine::new(&w_ih, &b), hh: DenseAffine::new(&w_hh, &b), gate: Activation::Sigmoid, candidate: Activation::Tanh, output: Activation::Tanh, lockstep: Default::default() };
    let l = pack(&g).expect("hidden 17 ≤ 64");
    assert_eq!(l.q, 2);
    let width = 4 * 2 * 16;
    assert_eq!((l.w_ih.len(), l.b_ih.len(), l.w_hh.len()), (n * width, width, h * width));
    for blk in 0..4 {
        for u in 0..32 {
            let at = blk * 32 + u;
            let (bias, w1) = if u < h { ((blk * h + u) as f32, (100 * (blk * h + u) + 1) as f32) } else { (0.0, 0.0) };
            assert_eq!((l.b_ih[at], l.w_ih[width + at]), (bias, w1), "block {blk} unit {u}");
        }
    }
    let big = GatedPlan::<f32> { hidden: 65, ..g };
    assert!(pack(&big).is_none());
}

#[test]
#[ignore]
fn ns_per_tick() {
    use crate::net::matrix::RatMatrix;
    use crate::sim::cells::affine::DenseAffine;
    use malachite::Rational;
    if !available() {
        return;
    }
    for (kind, blocks) in [(GatedKind::Lstm, 4), (GatedKind::Gru, 3)] {
        for h in [16, 32, 64] {
            let n = 8;
            let mut s = 5u64;
            let mut val = |sc: f64| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                Rational::try_from(((s >> 40) as f64 / (1u64 << 24) as f64 - 0.5) * 2.0 * sc).unwrap()
            };
            let sc = 1.0 / (h as f64).sqrt();
            let w_ih = RatMatrix::from_rows((0..blocks * h).map(|_| (0..n).map(|_| val(sc)).collect()).collect());
            let w_hh = RatMatrix::from_rows((0..blocks * h).map(|_| (0..h).map(|_| val(sc)).collect()).collect());
            let b: Vec<Rational> = (0..blocks * h).map(|_| val(sc)).collect();
            let g = GatedPlan::<f32> { kind, hidden: h, ih: DenseAffine::new(&w_ih, &b), hh: DenseAffine::new(&w_hh, &b), gate: Activation::Sigmoid, candidate: Activation::Tanh, output: Activation::Tanh, lockstep: Default::default() };
            let l = pack(&g).unwrap();
            let t = 4000;
            let x: Vec<f32> = (0..t * n).map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0).collect();
            let mut out = vec![MaybeUninit::<f32>::uninit(); t * h];
            let mut best = f64::INFINITY;
            for _ in 0..15 {
                let (mut hv, mut cv) = (vec![0f32; h], vec![0f32; if kind == GatedKind::Gru { 0 } else { h }]);
                let mut st = [LayerState { h: &mut hv, c: &mut cv }];
                let t0 = std::time::Instant::now();
                run(&[&l], &x, n, t, &mut st, Some(&mut out), None, true, &Control::new()).unwrap();
                best = best.min(t0.elapsed().as_secs_f64() * 1e9 / t as f64);
            }
            eprintln!("{kind:?} hidden {h}: {best:.1} ns per tick");
        }
    }
}
