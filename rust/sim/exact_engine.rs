//! The exact engine: h_t = σ(V h_{t−1} + W x_t + b) over the rationals, σ piecewise linear.
//!
//! Representation (see `num::exact_vector`): the state is integer numerators over one shared
//! denominator D. Weights are integer matrices over their own common denominators
//! (V = V̂/d_V, W = Ŵ/d_W, b = b̂/d_b), stored sparsely. With c = W x_t + b = ĉ/d_c:
//!
//!   pre_i = (Σ_j V̂_ij n_j)/(d_V D) + ĉ_i/d_c = (f_V Σ_j V̂_ij n_j + f_c ĉ_i) / E,
//!   E = lcm(d_V D, d_c),  f_V = E/(d_V D),  f_c = E/d_c,
//!
//! so one tick costs one big×small multiply-add per nonzero (weight, state) pair and no gcd.
//! Exact zeros of the state are skipped.
//!
//! Saturation decided exactly: for relu/slu/step units the pre-activation is first bounded
//! with f64 approximations of the state (relative error < 2^-50 each, error bound summed
//! conservatively). If the interval lies strictly below 0 the unit is exactly 0; for slu
//! strictly above 1 (step: above 0) it is exactly 1. Only undecided units do big-number
//! work. The result is identical to computing every unit exactly; it just skips the work
//! whose outcome is already certain (a gated unit of a compiled machine that is off).

use crate::error::{SimError, SimResult};
use crate::net::activation::Activation;
use crate::net::matrix::RatMatrix;
use crate::net::simple_rnn::SimpleRnn;
use crate::num::exact_vector::{approx_ratio, ExactVector};
use malachite::base::num::arithmetic::traits::{AddMulAssign, DivExact, Gcd, Lcm};
use malachite::{Integer, Natural, Rational};

/// Default cap on the bit size of any exact numerator or denominator.
pub const DEFAULT_MAX_BITS: u64 = 1 << 26;

/// Sparse integer rows over a common denominator.
#[derive(Debug, Clone)]
pub struct SparseInt {
    pub rows: Vec<Vec<(usize, Integer)>>,
    pub den: Natural,
    /// f64 value of each entry (NaN where not representable), parallel to `rows`
    pub approx: Vec<Vec<f64>>,
}

impl SparseInt {
    /// The matrix's nonzeros as integers over the lcm of their denominators.
    pub fn from_matrix(m: &RatMatrix) -> Self {
        let mut den = Natural::from(1u32);
        for (_, _, v) in m.triples() {
            den = den.lcm(v.to_denominator());
        }
        let mut out = Vec::with_capacity(m.rows);
        let mut approx = Vec::with_capacity(m.rows);
        for i in 0..m.rows {
            let row: Vec<(usize, Integer)> =
                m.row_nonzeros(i).iter().map(|(j, v)| (*j, scaled_numerator(v, &den))).collect();
            approx.push(row.iter().map(|(_, n)| approx_ratio(n, &den)).collect());
            out.push(row);
        }
        SparseInt { rows: out, den, approx }
    }
}

/// v·den as an integer (den must be a multiple of v's denominator).
fn scaled_numerator(v: &Rational, den: &Natural) -> Integer {
    let (n, d) = v.to_numerator_and_denominator();
    let mag = Integer::from(n * den.div_exact(d));
    if *v < 0u32 { -mag } else { mag }
}

/// The constant part c = W x + b of one tick, over its denominator, with f64 approximations.
#[derive(Debug, Clone)]
pub struct Affine {
    pub num: Vec<Integer>,
    pub den: Natural,
    pub approx: Vec<f64>,
}

/// A network prepared for exact runs.
#[derive(Debug, Clone)]
pub struct ExactPlan {
    pub d: usize,
    pub n_in: usize,
    pub activation: Activation,
    pub v: SparseInt,
    /// W stored by columns: w_cols.rows[k] = [(i, Ŵ_ik)]
    pub w_cols: SparseInt,
    pub b: Vec<Rational>,
    pub readout: Option<(SparseInt, Vec<Rational>)>,
    pub h0: ExactVector,
    pub max_bits: u64,
}

impl ExactPlan {
    pub fn new(net: &SimpleRnn, max_bits: u64) -> SimResult<Self> {
        net.activation.require_exact()?;
        Ok(ExactPlan {
            d: net.hidden_size(),
            n_in: net.input_size(),
            activation: net.activation,
            v: SparseInt::from_matrix(&net.v),
            w_cols: SparseInt::from_matrix(&net.w.transpose()),
            b: net.b.clone(),
            readout: net.readout.as_ref().map(|r| (SparseInt::from_matrix(&r.w), r.b.clone())),
            h0: ExactVector::from_rationals(&net.h0),
            max_bits,
        })
    }

    /// c = W x + b for one input row, exactly.
    pub fn affine(&self, x: &[Rational]) -> Affine {
        let mut c: Vec<Rational> = self.b.clone();
        let wd = Rational::from(&self.w_cols.den);
        for (k, xk) in x.iter().enumerate() {
            if *xk == 0u32 {
                continue;
            }
            let scale = xk / &wd;
            for (i, w) in &self.w_cols.rows[k] {
                c[*i] += Rational::from(w) * &scale;
            }
        }
        let v = ExactVector::from_rationals(&c);
        let approx = (0..v.len()).map(|i| v.approx(i)).collect();
        Affine { num: v.num, den: v.den, approx }
    }

    /// One tick: h ↦ σ(V h + c).
    pub fn tick(&self, h: &ExactVector, c: &Affine) -> SimResult<ExactVector> {
        let base = &self.v.den * &h.den;
        let (e, f_v, f_c) = if c.den == 1u32 {
            (base.clone(), Natural::from(1u32), base)
        } else {
            let g = (&c.den).gcd(&(&base % &c.den));
            let f_v = (&c.den).div_exact(&g);
            let f_c = (&base).div_exact(&g);
            (&base * &f_v, f_v, f_c)
        };
        let h_approx: Vec<f64> = (0..h.len()).map(|j| h.approx(j)).collect();
        let f_v = Integer::from(f_v);
        let f_c = Integer::from(f_c);
        let e_int = Integer::from(&e);
        let mut out = Vec::with_capacity(self.d);
        for i in 0..self.d {
            out.push(self.unit(i, h, &h_approx, c, &f_v, &f_c, &e_int));
        }
        let mut next = ExactVector::successor(out, e, h);
        next.normalize();
        let bits = next.max_bits();
        if bits > self.max_bits {
            return Err(SimError::LimitExceeded(format!(
                "exact values reached {bits} bits, above max_bits={}; raise max_bits to continue",
                self.max_bits
            )));
        }
        Ok(next)
    }

    /// Unit i's new numerator over E.
    #[allow(clippy::too_many_arguments)]
    fn unit(&self, i: usize, h: &ExactVector, h_approx: &[f64], c: &Affine, f_v: &Integer, f_c: &Integer, e: &Integer) -> Integer {
        if let Some(v) = self.decide(i, h, h_approx, c) {
            return if v { e.clone() } else { Integer::from(0) };
        }
        let mut s = Integer::from(0);
        for (j, w) in &self.v.rows[i] {
            let n = &h.num[*j];
            if *n != 0u32 {
                s.add_mul_assign(w, n);
            }
        }
        if *f_v != 1u32 {
            s *= f_v;
        }
        if c.num[i] != 0u32 {
            s.add_mul_assign(&c.num[i], f_c);
        }
        match self.activation {
            Activation::Identity => s,
            Activation::Relu => if s > 0u32 { s } else { Integer::from(0) },
            Activation::Slu => {
                if s <= 0u32 { Integer::from(0) } else if &s >= e { e.clone() } else { s }
            }
            Activation::Step => if s > 0u32 { e.clone() } else { Integer::from(0) },
            Activation::Tanh | Activation::Sigmoid => unreachable!("rejected by ExactPlan::new"),
        }
    }

    /// Some(false) if unit i is certainly 0, Some(true) if certainly 1, None if undecided.
    fn decide(&self, i: usize, h: &ExactVector, h_approx: &[f64], c: &Affine) -> Option<bool> {
        if matches!(self.activation, Activation::Identity) {
            return None;
        }
        let mut s = c.approx[i];
        let mut mag = s.abs();
        let mut terms = 1.0;
        for ((j, _), w) in self.v.rows[i].iter().zip(&self.v.approx[i]) {
            if h.num[*j] == 0u32 {
                continue;
            }
            let t = w * h_approx[*j];
            s += t;
            mag += t.abs();
            terms += 1.0;
        }
        if !s.is_finite() || !mag.is_finite() {
            return None;
        }
        // each term has relative error < 2^-49 (two approximations and a product), and each
        // of the `terms` additions adds at most 2^-53 of the running magnitude
        let err = mag * (terms + 4.0) * 2f64.powi(-48);
        match self.activation {
            Activation::Relu | Activation::Step | Activation::Slu if s + err < 0.0 => Some(false),
            Activation::Slu if s - err > 1.0 => Some(true),
            Activation::Step if s - err > 0.0 => Some(true),
            _ => None,
        }
    }

    /// y = w h + c for the readout, as reduced rationals.
    pub fn output(&self, h: &ExactVector) -> Vec<Rational> {
        let Some((r, b)) = &self.readout else { return Vec::new() };
        let den = Integer::from(&r.den * &h.den);
        r.rows
            .iter()
            .zip(b)
            .map(|(row, bo)| {
                let mut s = Integer::from(0);
                for (j, w) in row {
                    if h.num[*j] != 0u32 {
                        s.add_mul_assign(w, &h.num[*j]);
                    }
                }
                Rational::from_integers(s, den.clone()) + bo
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::simple_rnn::Linear;
    use crate::num::rational::parse_rational;

    fn q(s: &str) -> Rational {
        parse_rational(s).unwrap()
    }

    fn net(v: &[&[&str]], w: &[&[&str]], b: &[&str], h0: &[&str], act: Activation) -> SimpleRnn {
        let m = |rows: &[&[&str]]| RatMatrix::from_rows(rows.iter().map(|r| r.iter().map(|s| q(s)).collect()).collect());
        SimpleRnn::new(m(v), m(w), b.iter().map(|s| q(s)).collect(), Some(h0.iter().map(|s| q(s)).collect()), act, None)
            .unwrap()
    }

    /// The straightforward rational computation the engine must equal.
    fn naive_tick(n: &SimpleRnn, h: &[Rational], x: &[Rational]) -> Vec<Rational> {
        let vh = n.v.matvec(h);
        let wx = n.w.matvec(x);
        (0..n.hidden_size())
            .map(|i| {
                let p = &vh[i] + &wx[i] + &n.b[i];
                match n.activation {
                    Activation::Identity => p,
                    Activation::Relu => if p > 0u32 { p } else { q("0") },
                    Activation::Slu => if p <= 0u32 { q("0") } else if p >= 1u32 { q("1") } else { p },
                    Activation::Step => if p > 0u32 { q("1") } else { q("0") },
                    _ => unreachable!(),
                }
            })
            .collect()
    }

    #[test]
    fn base4_stack_push_pop_matches_naive_rationals() {
        // a one-stack push/pop machine fragment: s' = s/4 + 1/4·x0 + 3/4·x1 (push), clipped
        for act in [Activation::Slu, Activation::Relu, Activation::Identity, Activation::Step] {
            let n = net(&[&["1/4", "0"], &["4", "-1"]], &[&["1/4", "3/4"], &["0", "-2"]], &["0", "-1/3"], &["0", "1/2"], act);
            let plan = ExactPlan::new(&n, DEFAULT_MAX_BITS).unwrap();
            let mut h = plan.h0.clone();
            let mut naive = n.h0.clone();
            for t in 0..200 {
                let x = if t % 3 == 0 { vec![q("1"), q("0")] } else { vec![q("0"), q("1")] };
                h = plan.tick(&h, &plan.affine(&x)).unwrap();
                naive = naive_tick(&n, &naive, &x);
                assert_eq!(h.to_rationals(), naive, "{act:?} tick {t}");
            }
        }
    }

    #[test]
    fn saturation_filter_agrees_with_exact_on_boundaries() {
        // pre-activations that land exactly on 0 and 1 must not be misjudged
        let n = net(&[&["1", "0"], &["0", "1"]], &[&["1"], &["-1"]], &["-1", "1"], &["1/3", "2/3"], Activation::Slu);
        let plan = ExactPlan::new(&n, DEFAULT_MAX_BITS).unwrap();
        let mut h = plan.h0.clone();
        let mut naive = n.h0.clone();
        for t in 0..20 {
            let x = vec![Rational::from(t % 3) / Rational::from(3)];
            h = plan.tick(&h, &plan.affine(&x)).unwrap();
            naive = naive_tick(&n, &naive, &x);
            assert_eq!(h.to_rationals(), naive);
        }
    }

    #[test]
    fn denominators_that_cancel_do_not_grow() {
        // h' = slu(h/3 + 2/3·1) with h = 1: the value stays 1 over 3^t unless reduced
        let n = net(&[&["1/3"]], &[&["2/3"]], &["0"], &["1"], Activation::Slu);
        let plan = ExactPlan::new(&n, 1000).unwrap();
        let mut h = plan.h0.clone();
        for _ in 0..5000 {
            h = plan.tick(&h, &plan.affine(&[q("1")])).unwrap();
        }
        assert_eq!(h.to_rationals(), vec![q("1")]);
    }

    #[test]
    fn max_bits_raises_limit_exceeded() {
        let n = net(&[&["1/3"]], &[&["1"]], &["1/7"], &["1"], Activation::Identity);
        let plan = ExactPlan::new(&n, 200).unwrap();
        let mut h = plan.h0.clone();
        let mut res = Ok(());
        for _ in 0..1000 {
            match plan.tick(&h, &plan.affine(&[q("1/5")])) {
                Ok(next) => h = next,
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        assert!(matches!(res, Err(SimError::LimitExceeded(_))));
    }

    #[test]
    fn readout_and_tanh_rejection() {
        let mut n = net(&[&["1"]], &[&["1"]], &["0"], &["1/2"], Activation::Relu);
        n.readout = Some(Linear { w: RatMatrix::from_rows(vec![vec![q("2")]]), b: vec![q("-1")] });
        let plan = ExactPlan::new(&n, DEFAULT_MAX_BITS).unwrap();
        assert_eq!(plan.output(&plan.h0), vec![q("0")]);
        n.activation = Activation::Tanh;
        assert!(matches!(ExactPlan::new(&n, 64), Err(SimError::Unsupported(_))));
    }
}
