//! The register kernel's parts: the vector activations against the lane activations of the
//! lock-step kernel, and the padded layout. (The whole kernel against the per-sequence
//! engine, bit for bit: `gated_batch_tests`.)

use super::*;

#[cfg(target_arch = "x86_64")]
#[test]
fn vector_activations_equal_the_lane_activations_bit_for_bit() {
    use crate::sim::float_batch::activate;
    let mut s = 99u64;
    let mut xs: Vec<f32> = vec![0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -1.5, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, -1e-40, f32::MIN_POSITIVE, 88.5, -104.5];
    for i in 0..20_000 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let bits = (s >> 32) as u32;
        xs.push(f32::from_bits(if i % 2 == 0 { bits } else { bits & 0x80ff_ffff | 0x3c00_0000 }));
    }
    xs.resize(xs.len().next_multiple_of(16), 0.25);
    for lanes in widths() {
        for a in [Activation::Identity, Activation::Relu, Activation::Slu, Activation::Step, Activation::Tanh, Activation::Sigmoid, Activation::Sign, Activation::SatSigmoid] {
            let mut want = xs.clone();
            activate::<f32>(a, &mut want);
            let mut got = vec![0f32; xs.len()];
            for (d, x) in got.chunks_exact_mut(lanes).zip(xs.chunks_exact(lanes)) {
                // SAFETY: widths() checked the CPU features; `lanes` values each side.
                unsafe {
                    if lanes == 16 { x86::act_slice_avx512(a, x, d) } else { x86::act_slice_avx2(a, x, d) }
                };
            }
            for ((&x, &w), &g) in xs.iter().zip(&want).zip(&got) {
                assert!(w.to_bits() == g.to_bits() || (w.is_nan() && g.is_nan()), "{lanes} lanes, {a:?}({x:e}): {g:e} vs {w:e}");
            }
        }
    }
}

/// The vector widths the kernel may use here (under `RNNSIM_ISA`): 16 (AVX-512), 8 (AVX2).
fn widths() -> Vec<usize> {
    use crate::sim::cpu;
    [(16, cpu::avx512()), (8, cpu::avx2_fma())].into_iter().filter(|&(_, ok)| ok).map(|(w, _)| w).collect()
}

/// A random f32 gated layer (weights uniform in ±scale/√hidden).
fn random_plan(kind: GatedKind, h: usize, n: usize, seed: u64, scale: f64) -> GatedPlan<f32> {
    use crate::net::matrix::RatMatrix;
    use crate::sim::cells::affine::DenseAffine;
    use malachite::Rational;
    let blocks = match kind {
        GatedKind::Gru => 3,
        GatedKind::Lstm => 4,
        GatedKind::DoublingLstm => 5,
    };
    let mut s = seed;
    let mut val = |sc: f64| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        Rational::try_from(((s >> 40) as f64 / (1u64 << 24) as f64 - 0.5) * 2.0 * sc).unwrap()
    };
    let sc = scale / (h as f64).sqrt();
    let w_ih = RatMatrix::from_rows((0..blocks * h).map(|_| (0..n).map(|_| val(sc)).collect()).collect());
    let w_hh = RatMatrix::from_rows((0..blocks * h).map(|_| (0..h).map(|_| val(sc)).collect()).collect());
    let b: Vec<Rational> = (0..blocks * h).map(|_| val(sc)).collect();
    GatedPlan::<f32> { kind, hidden: h, ih: DenseAffine::new(&w_ih, &b), hh: DenseAffine::new(&w_hh, &b), gate: Activation::Sigmoid, candidate: Activation::Tanh, output: Activation::Tanh, lockstep: Default::default() }
}

/// (top h rows, top c rows, every layer's final h and c) of a run of `layers` on x.
fn run_rows(layers: &[&RegLayer<f32>], x: &[f32], n: usize, t: usize, fma: bool) -> (Vec<u32>, Vec<u32>, Vec<Vec<u32>>) {
    let top = layers.last().unwrap();
    let gru = top.kind == GatedKind::Gru;
    let (mut hs, mut cs) = (vec![MaybeUninit::<f32>::uninit(); t * top.hidden], vec![MaybeUninit::<f32>::uninit(); t * top.hidden]);
    let mut vals: Vec<(Vec<f32>, Vec<f32>)> = layers.iter().map(|l| (vec![0.25f32; l.hidden], vec![-0.5f32; if l.kind == GatedKind::Gru { 0 } else { l.hidden }])).collect();
    let mut st: Vec<LayerState<'_, f32>> = vals.iter_mut().map(|(h, c)| LayerState { h, c }).collect();
    run(layers, x, n, t, &mut st, Some(&mut hs), if gru { None } else { Some(&mut cs) }, fma, &Control::new()).unwrap();
    // SAFETY: run wrote all t rows of hs (and of cs when given)
    let bits = |v: &[MaybeUninit<f32>]| v.iter().map(|m| unsafe { m.assume_init() }.to_bits()).collect::<Vec<u32>>();
    let fin = vals.iter().flat_map(|(h, c)| [h.iter().map(|v| v.to_bits()).collect(), c.iter().map(|v| v.to_bits()).collect()]).collect();
    (bits(&hs), if gru { Vec::new() } else { bits(&cs) }, fin)
}

#[test]
fn both_vector_widths_give_the_same_bits() {
    // the AVX2 body (8 lanes) against the AVX-512 one (16 lanes, itself checked against the
    // per-sequence engine by gated_batch_tests) on the same layers: hidden sizes up to 64
    // (ragged vectors), 1–2 layers, fused and not, weights large enough to saturate
    let w = widths();
    if w != [16, 8] {
        return;
    }
    for kind in [GatedKind::Lstm, GatedKind::DoublingLstm, GatedKind::Gru] {
        for (i, h) in [1, 5, 8, 9, 16, 17, 24, 31, 32, 40, 57, 64].into_iter().enumerate() {
            let (n, t) = (3, 700);
            let x: Vec<f32> = (0..t * n).map(|j| ((j * 7919 % 1000) as f32 / 250.0) - 2.0).collect();
            let plans = [random_plan(kind, h, n, 11 + i as u64, 4.0), random_plan(kind, h, h, 99 + i as u64, 1.0)];
            for depth in [1, 2] {
                for fma in [true, false] {
                    let wide: Vec<RegLayer<f32>> = plans[..depth].iter().map(|g| pack_for(g, 16, |v| v, Rounding::F32).unwrap()).collect();
                    let narrow: Vec<RegLayer<f32>> = plans[..depth].iter().map(|g| pack_for(g, 8, |v| v, Rounding::F32).unwrap()).collect();
                    let a = run_rows(&wide.iter().collect::<Vec<_>>(), &x, n, t, fma);
                    let b = run_rows(&narrow.iter().collect::<Vec<_>>(), &x, n, t, fma);
                    assert!(a == b, "{kind:?} hidden {h} depth {depth} fma {fma}");
                }
            }
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
    for (lanes, q) in [(16, 2), (8, 3)] {
        let l = pack_for(&g, lanes, |v| v, Rounding::F32).expect("hidden 17 ≤ 64");
        assert_eq!(l.q, q);
        let block = q * lanes;
        let width = 4 * block;
        assert_eq!((l.w_ih.len(), l.b_ih.len(), l.w_hh.len()), (n * width, width, h * width));
        for blk in 0..4 {
            for u in 0..block {
                let at = blk * block + u;
                let (bias, w1) = if u < h { ((blk * h + u) as f32, (100 * (blk * h + u) + 1) as f32) } else { (0.0, 0.0) };
                assert_eq!((l.b_ih[at], l.w_ih[width + at]), (bias, w1), "{lanes} lanes, block {blk} unit {u}");
            }
        }
    }
    for lanes in [16, 8] {
        assert!(pack_for(&GatedPlan::<f32> { hidden: 65, ..g.clone() }, lanes, |v| v, Rounding::F32).is_none());
    }
}

#[test]
#[ignore]
fn ns_per_tick() {
    for lanes in widths() {
        for kind in [GatedKind::Lstm, GatedKind::Gru] {
            for (h, approx) in [(16, false), (16, true), (32, false), (64, false)] {
                let n = 8;
                let plan = random_plan(kind, h, n, 5, 1.0);
                let plan = if approx { GatedPlan { gate: plan.gate.approximate(), candidate: plan.candidate.approximate(), output: plan.output.approximate(), ..plan } } else { plan };
                let l = pack_for(&plan, lanes, |v| v, Rounding::F32).unwrap();
                let t = 4000;
                let x: Vec<f32> = (0..t * n).map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0).collect();
                let mut best = f64::INFINITY;
                for _ in 0..15 {
                    let t0 = std::time::Instant::now();
                    run_rows(&[&l], &x, n, t, true);
                    best = best.min(t0.elapsed().as_secs_f64() * 1e9 / t as f64);
                }
                let what = if approx { " (approximate activations)" } else { "" };
                eprintln!("{lanes} lanes, {kind:?} hidden {h}{what}: {best:.1} ns per tick");
            }
        }
    }
}

/// The half vectors (`V512h` with AVX-512, `V256h` with AVX2 + F16C; bf16 and f16 with f32
/// sums) against the scalar formats
/// (`num::f32_sums`) lane by lane: elementwise add and mul rounded to the format, the f32
/// sum steps, the end of a sum, and the activations with and without the fused rounding of
/// f16 (`add_act`, `end_sum_act`): random values on each grid and the specials (±0, ±inf,
/// NaN, subnormals, values near the largest finite).
#[cfg(target_arch = "x86_64")]
#[test]
fn half_vectors_equal_the_scalar_formats() {
    use crate::num::f32_sums::{Bf16SumF32, F16SumF32};
    use crate::num::float::Float;
    fn each<T: Float + Copy>(bf: bool, avx512: bool, wrap: fn(f32) -> T, unwrap: fn(T) -> f32) {
        let mut s = 7u64;
        let mut vals: Vec<f32> = vec![0.0, -0.0, 1.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 6.0e-8, -6.0e-8, 65504.0, -65504.0, 3.0e38, 1.0e-40, 0.5, 2.5, 255.0, 257.0];
        for i in 0..4000 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let bits = (s >> 32) as u32;
            // every exponent, and values within ±8 where tanh/σ vary
            vals.push(f32::from_bits(if i % 2 == 0 { bits } else { bits & 0x80ff_ffff | 0x3c00_0000 }));
        }
        // the lanes hold values of the format (the sum steps' inputs too); the NaNs that
        // reach an activation are results of arithmetic, which quiets them (bit 22 set, so a
        // bf16 index, the top 16 bits, is a NaN: `half_tables`)
        let quiet = |v: f32| if v.is_nan() { f32::from_bits(v.to_bits() | 0x0040_0000) } else { v };
        let on_grid: Vec<f32> = vals.iter().map(|&v| quiet(unwrap(T::from_f32_rounded(v)))).collect();
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        for f in [Activation::Tanh, Activation::Sigmoid, Activation::Relu, Activation::Identity, Activation::Sign] {
            for (i, (xa, xb)) in on_grid.chunks_exact(16).zip(on_grid.chunks_exact(16).rev()).enumerate() {
                let (a, b): (&[f32; 16], &[f32; 16]) = (xa.try_into().unwrap(), xb.try_into().unwrap());
                // the end of a sum sees any f32: a + b·b is one off the grid
                let mut wide = *a;
                for (w, (&p, &q)) in wide.iter_mut().zip(a.iter().zip(b)) {
                    *w = p + q * 0.3;
                }
                // SAFETY: the caller checked the CPU's features for the width
                let ops = |a: &[f32; 16], b: &[f32; 16]| unsafe {
                    match (avx512, bf) {
                        (true, true) => x86::half_ops::<true>(f, a, b),
                        (true, false) => x86::half_ops::<false>(f, a, b),
                        (false, true) => x86::half_ops_avx2::<true>(f, a, b),
                        (false, false) => x86::half_ops_avx2::<false>(f, a, b),
                    }
                };
                let (got, ends) = (ops(a, b), ops(&wide, b));
                let act = |v: T| crate::sim::float_engine::activate(f, v);
                for j in 0..16 {
                    let (p, q) = (wrap(a[j]), wrap(b[j]));
                    let sum = p.add(q);
                    let want = [sum, p.mul(q), wrap(a[j]).end_sum(), sum, act(sum), act(p.end_sum()), act(p), p.plus_product(q, q, true), p.plus_product(q, q, false)];
                    for (r, w) in want.iter().enumerate() {
                        assert!(same(got[r][j], unwrap(*w)), "AVX-512 {avx512} bf16 {bf} {f:?} row {r} chunk {i} lane {j}: {:e} {:e} -> {:e}, want {:e}", a[j], b[j], got[r][j], unwrap(*w));
                    }
                    let e = wrap(wide[j]).end_sum();
                    assert!(same(ends[2][j], unwrap(e)) && same(ends[5][j], unwrap(act(e))), "bf16 {bf} {f:?} end of the sum {:e}", wide[j]);
                }
            }
        }
    }
    for avx512 in [true, false].into_iter().filter(|&w| if w { crate::sim::cpu::avx512() } else { crate::sim::cpu::avx2_f16c() }) {
        each::<Bf16SumF32>(true, avx512, Bf16SumF32, |v| v.0);
        each::<F16SumF32>(false, avx512, F16SumF32, |v| v.0);
    }
}

/// The native f16 vector (`V256ph`, AVX512-FP16) against the scalar f16 (`half::f16` through
/// `num::float::Float`) lane by lane: add, mul, the sum steps fused and not, the
/// activations, negation and the lane broadcast, on random binary16 patterns (every
/// exponent, subnormals, ±inf, NaN) and values within ±8.
#[cfg(target_arch = "x86_64")]
#[test]
fn native_f16_vectors_equal_the_scalar_format() {
    use crate::num::float::Float;
    use half::f16 as h16;
    if !f16_available() {
        return;
    }
    let mut s = 11u64;
    let mut vals: Vec<u16> = [0.0f32, -0.0, 1.0, -1.0, 65504.0, -65504.0, 6.0e-8, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.5, 2.5, 1000.0].iter().map(|&v| h16::from_f32(v).to_bits()).collect();
    for i in 0..8000 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let bits = (s >> 48) as u16;
        vals.push(if i % 2 == 0 { bits } else { bits & 0x83ff | 0x3c00 | ((bits >> 4) & 0x0c00) });
    }
    vals.resize(vals.len().next_multiple_of(16), 0x3c00);
    let same = |a: u16, b: h16| a == b.to_bits() || (h16::from_bits(a).is_nan() && b.is_nan());
    for f in [Activation::Tanh, Activation::Sigmoid, Activation::Relu, Activation::Slu, Activation::Step, Activation::Sign, Activation::SatSigmoid, Activation::Identity] {
        for (xa, xb) in vals.chunks_exact(16).zip(vals.chunks_exact(16).rev()) {
            let (a, b): (&[u16; 16], &[u16; 16]) = (xa.try_into().unwrap(), xb.try_into().unwrap());
            // SAFETY: AVX512-FP16 checked above
            let got = unsafe { x86::f16_ops(f, a, b) };
            for j in 0..16 {
                let (p, q) = (h16::from_bits(a[j]), h16::from_bits(b[j]));
                let want = [Float::add(p, q), Float::mul(p, q), crate::sim::float_engine::activate(f, p), p.plus_product(q, q, true), p.plus_product(q, q, false), -p, h16::from_bits(a[5])];
                for (r, w) in want.iter().enumerate() {
                    // (the fused step's exact zero may carry either sign in the scalar definition)
                    let zeros = r == 3 && h16::from_bits(got[r][j]) == h16::ZERO && *w == h16::ZERO;
                    assert!(same(got[r][j], *w) || zeros, "{f:?} row {r} lane {j}: {p} {q} -> {}, want {w}", h16::from_bits(got[r][j]));
                }
            }
        }
    }
}
