//! Dense row-major matrices of exact rationals: the source of truth for every weight.

use malachite::Rational;

#[derive(Debug, Clone, PartialEq)]
pub struct RatMatrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<Rational>,
}

impl RatMatrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        RatMatrix { rows, cols, data: vec![Rational::from(0); rows * cols] }
    }

    pub fn from_rows(rows: Vec<Vec<Rational>>) -> Self {
        let r = rows.len();
        let c = rows.first().map_or(0, |x| x.len());
        RatMatrix { rows: r, cols: c, data: rows.into_iter().flatten().collect() }
    }

    pub fn get(&self, i: usize, j: usize) -> &Rational {
        &self.data[i * self.cols + j]
    }

    pub fn set(&mut self, i: usize, j: usize, v: Rational) {
        self.data[i * self.cols + j] = v;
    }

    pub fn row(&self, i: usize) -> &[Rational] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    pub fn nonzeros(&self) -> usize {
        self.data.iter().filter(|v| **v != 0u32).count()
    }

    /// Matrix product self · other (exact).
    pub fn matmul(&self, other: &RatMatrix) -> RatMatrix {
        assert_eq!(self.cols, other.rows, "matmul shape mismatch");
        let mut out = RatMatrix::zeros(self.rows, other.cols);
        for i in 0..self.rows {
            for k in 0..self.cols {
                let a = self.get(i, k);
                if *a == 0u32 {
                    continue;
                }
                for j in 0..other.cols {
                    let b = other.get(k, j);
                    if *b != 0u32 {
                        let idx = i * other.cols + j;
                        out.data[idx] += a * b;
                    }
                }
            }
        }
        out
    }

    /// Matrix–vector product self · v (exact).
    pub fn matvec(&self, v: &[Rational]) -> Vec<Rational> {
        (0..self.rows)
            .map(|i| {
                self.row(i)
                    .iter()
                    .zip(v)
                    .filter(|(a, b)| **a != 0u32 && **b != 0u32)
                    .fold(Rational::from(0), |acc, (a, b)| acc + a * b)
            })
            .collect()
    }
}
