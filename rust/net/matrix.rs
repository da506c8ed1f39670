//! Matrices of exact rationals, stored sparsely: the nonzero entries of each row, sorted by
//! column. Compiled machines have a handful of nonzeros per row (a 10,000-state DFA gives a
//! 20,001 × 20,001 recurrent matrix with 60,000 nonzeros), so dense storage is never assumed.

use malachite::Rational;

static ZERO: Rational = Rational::const_from_unsigneds(0, 1);

#[derive(Debug, Clone, PartialEq)]
pub struct RatMatrix {
    pub rows: usize,
    pub cols: usize,
    /// entries[i] = [(j, value)] for the nonzero values of row i, sorted by j
    entries: Vec<Vec<(usize, Rational)>>,
}

impl RatMatrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        RatMatrix { rows, cols, entries: vec![Vec::new(); rows] }
    }

    /// From row-major dense values (`data.len()` must be rows·cols).
    pub fn from_dense(rows: usize, cols: usize, data: Vec<Rational>) -> Self {
        assert_eq!(data.len(), rows * cols, "dense data does not fill the shape");
        let mut m = RatMatrix::zeros(rows, cols);
        for (idx, v) in data.into_iter().enumerate() {
            if v != 0u32 {
                m.entries[idx / cols.max(1)].push((idx % cols.max(1), v));
            }
        }
        m
    }

    /// From dense rows of equal length.
    pub fn from_rows(rows: Vec<Vec<Rational>>) -> Self {
        let r = rows.len();
        let c = rows.first().map_or(0, |x| x.len());
        RatMatrix::from_dense(r, c, rows.into_iter().flatten().collect())
    }

    /// From (row, column, value) triples; later triples overwrite earlier ones.
    pub fn from_triples(rows: usize, cols: usize, triples: impl IntoIterator<Item = (usize, usize, Rational)>) -> Self {
        let mut m = RatMatrix::zeros(rows, cols);
        for (i, j, v) in triples {
            m.set(i, j, v);
        }
        m
    }

    pub fn get(&self, i: usize, j: usize) -> &Rational {
        let row = &self.entries[i];
        match row.binary_search_by_key(&j, |(c, _)| *c) {
            Ok(p) => &row[p].1,
            Err(_) => &ZERO,
        }
    }

    /// Sets entry (i, j); setting 0 removes it.
    pub fn set(&mut self, i: usize, j: usize, v: Rational) {
        assert!(i < self.rows && j < self.cols, "index ({i}, {j}) outside ({}, {})", self.rows, self.cols);
        let row = &mut self.entries[i];
        match (row.binary_search_by_key(&j, |(c, _)| *c), v == 0u32) {
            (Ok(p), true) => {
                row.remove(p);
            }
            (Ok(p), false) => row[p].1 = v,
            (Err(_), true) => {}
            (Err(p), false) => row.insert(p, (j, v)),
        }
    }

    /// The nonzero entries of row i, sorted by column.
    pub fn row_nonzeros(&self, i: usize) -> &[(usize, Rational)] {
        &self.entries[i]
    }

    pub fn dense_row(&self, i: usize) -> Vec<Rational> {
        let mut out = vec![Rational::from(0); self.cols];
        for (j, v) in &self.entries[i] {
            out[*j] = v.clone();
        }
        out
    }

    /// Row-major dense values (rows·cols of them: only for matrices known to be small).
    pub fn to_dense(&self) -> Vec<Rational> {
        (0..self.rows).flat_map(|i| self.dense_row(i)).collect()
    }

    /// (row, column, value) for every nonzero, row by row.
    pub fn triples(&self) -> impl Iterator<Item = (usize, usize, &Rational)> + '_ {
        self.entries.iter().enumerate().flat_map(|(i, r)| r.iter().map(move |(j, v)| (i, *j, v)))
    }

    pub fn nonzeros(&self) -> usize {
        self.entries.iter().map(|r| r.len()).sum()
    }

    pub fn transpose(&self) -> RatMatrix {
        let mut t = RatMatrix::zeros(self.cols, self.rows);
        for (i, j, v) in self.triples() {
            t.entries[j].push((i, v.clone()));
        }
        t
    }

    /// Matrix product self · other (exact, sparse).
    pub fn matmul(&self, other: &RatMatrix) -> RatMatrix {
        assert_eq!(self.cols, other.rows, "matmul shape mismatch");
        let mut out = RatMatrix::zeros(self.rows, other.cols);
        let mut acc: Vec<Rational> = vec![Rational::from(0); other.cols];
        let mut touched: Vec<usize> = Vec::new();
        for i in 0..self.rows {
            for (k, a) in &self.entries[i] {
                for (j, b) in &other.entries[*k] {
                    if acc[*j] == 0u32 {
                        touched.push(*j);
                    }
                    acc[*j] += a * b;
                }
            }
            touched.sort_unstable();
            touched.dedup();
            for &j in &touched {
                let v = std::mem::replace(&mut acc[j], Rational::from(0));
                if v != 0u32 {
                    out.entries[i].push((j, v));
                }
            }
            touched.clear();
        }
        out
    }

    /// Matrix–vector product self · v (exact).
    pub fn matvec(&self, v: &[Rational]) -> Vec<Rational> {
        self.entries
            .iter()
            .map(|row| {
                row.iter().filter(|(j, _)| v[*j] != 0u32).fold(Rational::from(0), |acc, (j, a)| acc + a * &v[*j])
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64) -> Rational {
        Rational::from(n)
    }

    #[test]
    fn sparse_storage_behaves_like_a_dense_matrix() {
        let a = RatMatrix::from_rows(vec![vec![q(1), q(0), q(2)], vec![q(0), q(0), q(-1)]]);
        assert_eq!(a.nonzeros(), 3);
        assert_eq!(a.to_dense(), vec![q(1), q(0), q(2), q(0), q(0), q(-1)]);
        assert_eq!(*a.get(1, 2), q(-1));
        assert_eq!(*a.get(1, 0), q(0));
        let b = RatMatrix::from_rows(vec![vec![q(1), q(1)], vec![q(5), q(0)], vec![q(0), q(3)]]);
        assert_eq!(a.matmul(&b).to_dense(), vec![q(1), q(7), q(0), q(-3)]);
        assert_eq!(a.matvec(&[q(1), q(1), q(1)]), vec![q(3), q(-1)]);
        assert_eq!(a.transpose().transpose(), a);
        let mut c = a.clone();
        c.set(0, 0, q(0));
        c.set(1, 1, q(4));
        assert_eq!(c.to_dense(), vec![q(0), q(0), q(2), q(0), q(4), q(-1)]);
        // cancellation inside a product leaves no explicit zero
        let d = RatMatrix::from_rows(vec![vec![q(1), q(-1)]]).matmul(&RatMatrix::from_rows(vec![vec![q(2)], vec![q(2)]]));
        assert_eq!(d.nonzeros(), 0);
    }
}
