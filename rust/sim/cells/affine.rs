//! The affine maps of the cell engines: the only place where weight matrices meet vectors.
//!
//! A [`DenseAffine`] keeps PyTorch's layout (row-major (rows, cols), e.g. an LSTM's stacked
//! gate matrix (4H, in)) and computes, for every row r, in this fixed order:
//!
//!   acc = b_r;   acc = acc + w_{r,k}·z_k   for k = 0, 1, … (ascending),   out_r = acc
//!
//! with every product and every sum rounded to the format, or with `fma` (an `fma=True`
//! run) every step acc = fma(w_{r,k}, z_k, acc) rounded once (`num::fused`), then
//! `Scalar::end_sum` (the half formats with f32 sums: the steps in f32, `out_r` the sum
//! rounded to the half format, `num::f32_sums`; the identity otherwise); z may be the
//! concatenation of several vectors ([x_t ; h_{t−1}]), taken in the order given. For one
//! sequence this is a matrix–vector product per step; a batched lock-step kernel replaces
//! exactly these calls by one GEMM over the batch (and, for the input maps, which do not
//! depend on the state, by one GEMM over all time steps), keeping the per-row order.

use crate::net::matrix::RatMatrix;
use crate::num::scalar::Scalar;
use malachite::Rational;

#[derive(Debug, Clone)]
pub struct DenseAffine<S> {
    pub rows: usize,
    pub cols: usize,
    /// row-major (rows, cols)
    pub w: Vec<S>,
    pub b: Vec<S>,
}

impl<S: Scalar> DenseAffine<S> {
    /// Rounds the exact weights to the format once.
    pub fn new(w: &RatMatrix, b: &[Rational]) -> Self {
        DenseAffine { rows: w.rows, cols: w.cols, w: w.to_dense().iter().map(S::from_rational).collect(), b: b.iter().map(S::from_rational).collect() }
    }

    /// Side by side [a | b] (same rows), so that `apply(&[x, h])` is b + A x + B h in order.
    pub fn concat(a: &RatMatrix, b: &RatMatrix, bias: &[Rational]) -> Self {
        assert_eq!(a.rows, b.rows, "concatenated blocks must have the same rows");
        let cols = a.cols + b.cols;
        let mut w = Vec::with_capacity(a.rows * cols);
        for r in 0..a.rows {
            w.extend(a.dense_row(r).iter().map(S::from_rational));
            w.extend(b.dense_row(r).iter().map(S::from_rational));
        }
        DenseAffine { rows: a.rows, cols, w, b: bias.iter().map(S::from_rational).collect() }
    }

    /// out_r = b_r + Σ_k w_rk z_k over z = parts[0] ++ parts[1] ++ …, in the documented order.
    #[inline]
    pub fn apply(&self, parts: &[&[S]], out: &mut [S], fma: bool) {
        debug_assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), self.cols);
        for (r, o) in out[..self.rows].iter_mut().enumerate() {
            let row = &self.w[r * self.cols..(r + 1) * self.cols];
            let mut acc = self.b[r].clone();
            let mut k = 0;
            for part in parts {
                for z in part.iter() {
                    acc = acc.plus_product(&row[k], z, fma);
                    k += 1;
                }
            }
            *o = acc.end_sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn rounds_every_operation_in_row_order() {
        // row 0: 0 + 2048·1 + 1·1 + 1·1 in f16: 2048 + 1 ties to 2048, twice
        let q = |v: i64| Rational::from(v);
        let w = RatMatrix::from_rows(vec![vec![q(2048), q(1), q(1)]]);
        let a = DenseAffine::<f16>::new(&w, &[q(0)]);
        let mut out = [f16::ZERO];
        let one = [f16::ONE];
        a.apply(&[&one, &[f16::ONE, f16::ONE]], &mut out, false);
        assert_eq!(out[0].to_f64(), 2048.0);
        let e = DenseAffine::<Rational>::new(&w, &[q(0)]);
        let mut out = [q(0)];
        e.apply(&[&[q(1), q(1), q(1)]], &mut out, false);
        assert_eq!(out[0], q(2050));
    }
}
