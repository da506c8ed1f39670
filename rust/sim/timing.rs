//! Test-only timing of slice functions (the ignored `ns_per_value` tests that report the
//! activations' cost per value).

/// Best ns per value of `f` over `xs`: 30 rounds of 100 calls, each on a fresh copy of `xs`
/// (the machine is shared: the best round), the copies that reset the values not timed
/// (glibc's memmove took as long as the function on an EPYC 7003).
pub(crate) fn best_ns_per_value(xs: &[f32], f: &dyn Fn(&mut [f32])) -> f64 {
    let mut ys = xs.to_vec();
    let mut ns = f64::INFINITY;
    for _ in 0..30 {
        let mut spent = std::time::Duration::ZERO;
        for _ in 0..100 {
            ys.copy_from_slice(xs);
            let t0 = std::time::Instant::now();
            f(&mut ys);
            spent += t0.elapsed();
        }
        ns = ns.min(spent.as_secs_f64() * 1e9 / (100.0 * xs.len() as f64));
    }
    ns
}
