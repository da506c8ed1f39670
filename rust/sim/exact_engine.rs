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
use malachite::base::num::arithmetic::traits::{AddMulAssign, DivExact, Gcd, Lcm, Parity, Sign};
use malachite::base::num::conversion::traits::{ExactFrom, RoundingFrom};
use malachite::base::rounding_modes::RoundingMode;
use malachite::{Integer, Natural, Rational};
use std::cmp::Ordering;

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

/// The constant part c = W x + b of one tick, over its denominator, with f64 approximations,
/// and the small form the integer fast path uses: ĉ_i·(L/d_c) over L = lcm(d_V, d_c).
#[derive(Debug, Clone)]
pub struct Affine {
    pub num: Vec<Integer>,
    pub den: Natural,
    pub approx: Vec<f64>,
    /// L = lcm(d_V, d_c)
    l: Natural,
    /// L as i128, L/d_V, and ĉ_i·(L/d_c), when they fit an i128
    small: Option<(i128, i128, Vec<Option<i128>>)>,
}

/// The fractional inputs' f64 contributions to each unit: sum, magnitude, term count.
struct Frac {
    has: Vec<bool>,
    sum: Vec<f64>,
    mag: Vec<f64>,
    terms: Vec<f64>,
}

impl Frac {
    fn new(d: usize) -> Self {
        Frac { has: vec![false; d], sum: vec![0.0; d], mag: vec![0.0; d], terms: vec![0.0; d] }
    }
    #[inline]
    fn add(&mut self, i: usize, t: f64) {
        self.has[i] = true;
        self.sum[i] += t;
        self.mag[i] += t.abs();
        self.terms[i] += 1.0;
    }
}

/// A unit's new value: an i64 integer, or a numerator over the tick's denominator E.
enum Out {
    Int(i64),
    Frac(Integer),
}

/// A network prepared for exact runs.
#[derive(Debug, Clone)]
pub struct ExactPlan {
    pub d: usize,
    pub n_in: usize,
    pub activation: Activation,
    pub v: SparseInt,
    /// V by columns: v_cols.rows[j] = [(i, V̂_ij)] (the tick propagates from nonzero units)
    v_cols: SparseInt,
    /// v_cols entries as i128 (None where they do not fit), parallel to `v_cols.rows`
    v_cols_small: Vec<Vec<Option<i128>>>,
    /// W stored by columns: w_cols.rows[k] = [(i, Ŵ_ik)]
    pub w_cols: SparseInt,
    pub b: Vec<Rational>,
    pub readout: Option<(SparseInt, Vec<Rational>)>,
    pub h0: ExactVector,
    pub max_bits: u64,
}

fn to_i128(n: &Integer) -> Option<i128> {
    i128::try_from(n).ok()
}

impl ExactPlan {
    pub fn new(net: &SimpleRnn, max_bits: u64) -> SimResult<Self> {
        net.activation.require_exact()?;
        let v = SparseInt::from_matrix(&net.v);
        let v_cols = SparseInt::from_matrix(&net.v.transpose());
        let v_cols_small = v_cols.rows.iter().map(|r| r.iter().map(|(_, w)| to_i128(w)).collect()).collect();
        Ok(ExactPlan {
            d: net.hidden_size(),
            n_in: net.input_size(),
            activation: net.activation,
            v,
            v_cols,
            v_cols_small,
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
        let mut den = Natural::from(1u32);
        for r in &c {
            den = den.lcm(r.to_denominator());
        }
        let num: Vec<Integer> = c.iter().map(|r| scaled_numerator(r, &den)).collect();
        let approx = num.iter().map(|n| approx_ratio(n, &den)).collect();
        let l = (&self.v.den).lcm(&den);
        let small = (|| {
            let l_s = i128::try_from(&l).ok()?;
            let fv = i128::try_from(&(&l / &self.v.den)).ok()?;
            let fc = Integer::from(&l / &den);
            let cs = num.iter().map(|n| to_i128(&(n * &fc))).collect();
            Some((l_s, fv, cs))
        })();
        Affine { num, den, approx, l, small }
    }

    /// One tick: h ↦ σ(V h + c).
    ///
    /// The tick propagates from the nonzero units only (by columns of V). Per unit: the
    /// integer parts are summed in i128 over L = lcm(d_V, d_c) (no big number); if no input of
    /// the unit is fractional, that is the exact pre-activation. Otherwise the f64 interval
    /// filter settles saturated units, and only the rest do big-number work over
    /// E = lcm(d_V·D, L):  P = f_V·Σ_j V̂_ij n_j + f_L·s,  f_V = E/(d_V D), f_L = E/L.
    pub fn tick(&self, h: &ExactVector, c: &Affine) -> SimResult<ExactVector> {
        let d = self.d;
        let base = &self.v.den * &h.den;
        // g = gcd(L, d_V·D): L itself when L divides d_V (no big remainder needed)
        let g = if (&self.v.den % &c.l) == 0u32 { c.l.clone() } else { (&c.l).gcd(&(&base % &c.l)) };
        let mut f_v = Integer::from(&c.l / &g);
        let mut e = &base * Natural::exact_from(&f_v);
        // f_L = base/g, computed as (d_V/g)·D when g divides d_V (no big division)
        let mut f_l = if (&self.v.den % &g) == 0u32 {
            Integer::from(&(&self.v.den / &g) * &h.den)
        } else {
            Integer::from(&base / &g)
        };
        if self.activation == Activation::SatSigmoid && e.odd() {
            // sat_sigmoid(0) = 1/2 must be a numerator over E: make E even (same value)
            e <<= 1u64;
            f_v <<= 1u64;
            f_l <<= 1u64;
        }
        let e_int = Integer::from(&e);
        // accumulate from the nonzero units
        let mut small: Vec<Option<i128>> = match &c.small {
            Some((_, _, cs)) => cs.clone(),
            None => vec![None; d],
        };
        let fv_l = c.small.as_ref().map(|(_, fv, _)| *fv);
        let any_frac = h.num.iter().any(|n| *n != 0u32);
        let mut frac = Frac::new(if any_frac { d } else { 0 });
        for j in 0..h.len() {
            let ij = h.int[j];
            if ij != 0 {
                for ((i, _), w) in self.v_cols.rows[j].iter().zip(&self.v_cols_small[j]) {
                    small[*i] = small[*i].and_then(|s| w.and_then(|w| w.checked_mul(ij as i128)?.checked_mul(fv_l?)?.checked_add(s)));
                }
            }
            if any_frac && h.num[j] != 0u32 {
                let a = approx_ratio(&h.num[j], &h.den);
                for ((i, _), w) in self.v_cols.rows[j].iter().zip(&self.v_cols.approx[j]) {
                    frac.add(*i, w * a);
                }
            }
        }
        let mut int = vec![0i64; d];
        let mut num = vec![Integer::from(0); d];
        for i in 0..d {
            let has_frac = any_frac && frac.has[i];
            let out = match (small[i], has_frac, &c.small) {
                (Some(s), false, Some((l, _, _))) => self.activate_small(s, *l, &f_l),
                (s, has, _) => {
                    let decided = if has { self.decide(i, h, &frac, s, c) } else { None };
                    match decided {
                        Some(v) => Out::Int(v),
                        None => self.big_unit(i, h, s, c, (&f_v, &f_l, &e, &e_int)),
                    }
                }
            };
            match out {
                Out::Int(v) => int[i] = v,
                Out::Frac(n) => num[i] = n,
            }
        }
        let mut next = ExactVector::successor(int, num, e, h);
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

    /// Unit i's value from big-number arithmetic over E (`s`: its integer parts over L, or
    /// None when they overflowed i128, in which case they are added as big numbers too).
    fn big_unit(&self, i: usize, h: &ExactVector, s: Option<i128>, c: &Affine, f: (&Integer, &Integer, &Natural, &Integer)) -> Out {
        let (f_v, f_l, e, e_int) = f;
        let mut p = Integer::from(0);
        for (j, w) in &self.v.rows[i] {
            if h.num[*j] != 0u32 {
                p.add_mul_assign(w, &h.num[*j]);
            }
            if s.is_none() && h.int[*j] != 0 {
                p.add_mul_assign(w, Integer::from(h.int[*j]) * Integer::from(&h.den));
            }
        }
        if *f_v != 1u32 {
            p *= f_v;
        }
        match s {
            Some(0) => {}
            Some(s) => p.add_mul_assign(Integer::from(s), f_l),
            None => {
                if c.num[i] != 0u32 {
                    p.add_mul_assign(&c.num[i], Integer::from(e / &c.den));
                }
            }
        }
        self.activate_big(p, e_int)
    }

    /// σ(s/L) for an exact small pre-activation.
    fn activate_small(&self, s: i128, l: i128, f_l: &Integer) -> Out {
        let frac = |s: i128| -> Out {
            if s % l == 0 {
                if let Ok(v) = i64::try_from(s / l) {
                    return Out::Int(v);
                }
            }
            Out::Frac(Integer::from(s) * f_l)
        };
        match self.activation {
            Activation::Identity => frac(s),
            Activation::Relu => if s > 0 { frac(s) } else { Out::Int(0) },
            Activation::Slu => if s <= 0 { Out::Int(0) } else if s >= l { Out::Int(1) } else { frac(s) },
            Activation::Step => Out::Int(i64::from(s > 0)),
            Activation::Sign => Out::Int(s.signum() as i64),
            Activation::SatSigmoid => match s.signum() {
                1 => Out::Int(1),
                -1 => Out::Int(0),
                _ => Out::Frac((f_l * Integer::from(l)) >> 1u64),
            },
            Activation::Tanh | Activation::Sigmoid | Activation::ApproxTanh | Activation::ApproxSigmoid => unreachable!("rejected by ExactPlan::new"),
        }
    }

    /// σ(P/E) for a pre-activation over the tick's denominator.
    fn activate_big(&self, p: Integer, e: &Integer) -> Out {
        let frac = |p: Integer| if p == 0u32 { Out::Int(0) } else if &p == e { Out::Int(1) } else { Out::Frac(p) };
        match self.activation {
            Activation::Identity => frac(p),
            Activation::Relu => if p > 0u32 { frac(p) } else { Out::Int(0) },
            Activation::Slu => if p <= 0u32 { Out::Int(0) } else if &p >= e { Out::Int(1) } else { frac(p) },
            Activation::Step => Out::Int(i64::from(p > 0u32)),
            Activation::Sign => Out::Int(match p.sign() {
                Ordering::Greater => 1,
                Ordering::Less => -1,
                Ordering::Equal => 0,
            }),
            Activation::SatSigmoid => match p.sign() {
                Ordering::Greater => Out::Int(1),
                Ordering::Less => Out::Int(0),
                Ordering::Equal => Out::Frac(e >> 1u64),
            },
            Activation::Tanh | Activation::Sigmoid | Activation::ApproxTanh | Activation::ApproxSigmoid => unreachable!("rejected by ExactPlan::new"),
        }
    }

    /// Some(0), Some(1) or Some(−1) when unit i's value is certain from the bounds, None if undecided.
    /// The integer part s/L is exact (rounded once to f64); the fractional inputs are
    /// approximated with relative error < 2^-50 each, and the error bound is summed
    /// conservatively.
    fn decide(&self, i: usize, h: &ExactVector, frac: &Frac, s: Option<i128>, c: &Affine) -> Option<i64> {
        if matches!(self.activation, Activation::Identity) {
            return None;
        }
        let (mut acc, mut mag, mut terms) = match (s, &c.small) {
            (Some(s), Some((l, _, _))) => {
                let v = s as f64 / *l as f64;
                (v, v.abs(), 2.0)
            }
            _ => {
                // integer parts through the f64 weights
                let mut a = c.approx[i];
                let mut m = a.abs();
                let mut t = 1.0;
                for ((j, _), w) in self.v.rows[i].iter().zip(&self.v.approx[i]) {
                    if h.int[*j] != 0 {
                        let x = w * h.int[*j] as f64;
                        a += x;
                        m += x.abs();
                        t += 1.0;
                    }
                }
                (a, m, t)
            }
        };
        acc += frac.sum[i];
        mag += frac.mag[i];
        terms += frac.terms[i];
        if !acc.is_finite() || !mag.is_finite() {
            return None;
        }
        // each term has relative error < 2^-49 (two approximations and a product), and each
        // of the `terms` additions adds at most 2^-53 of the running magnitude
        let err = mag * (terms + 4.0) * 2f64.powi(-48);
        match self.activation {
            Activation::Relu | Activation::Step | Activation::Slu | Activation::SatSigmoid if acc + err < 0.0 => Some(0),
            Activation::Slu if acc - err > 1.0 => Some(1),
            Activation::Step | Activation::Sign | Activation::SatSigmoid if acc - err > 0.0 => Some(1),
            Activation::Sign if acc + err < 0.0 => Some(-1),
            _ => None,
        }
    }

    /// y = w h + c for the readout, as reduced rationals: the integer parts in small
    /// rationals, the fractional parts over d_w·D (one gcd, only when they are nonzero).
    pub fn output(&self, h: &ExactVector) -> Vec<Rational> {
        let Some((r, b)) = &self.readout else { return Vec::new() };
        let den = Integer::from(&r.den * &h.den);
        let wd = Rational::from(&r.den);
        r.rows
            .iter()
            .zip(b)
            .map(|(row, bo)| {
                let mut small = Integer::from(0);
                let mut s = Integer::from(0);
                for (j, w) in row {
                    if h.num[*j] != 0u32 {
                        s.add_mul_assign(w, &h.num[*j]);
                    }
                    if h.int[*j] != 0 {
                        small += w * Integer::from(h.int[*j]);
                    }
                }
                let big = if s == 0u32 { Rational::from(0) } else { Rational::from_integers(s, den.clone()) };
                big + Rational::from(small) / &wd + bo
            })
            .collect()
    }

    /// The readout approximately (f64), without any gcd or big product by D: for thresholds
    /// on long runs (integer parts exactly, fractional parts to 2^-50 relative).
    pub fn output_approx(&self, h: &ExactVector) -> Vec<f64> {
        let Some((r, b)) = &self.readout else { return Vec::new() };
        let den = &r.den * &h.den;
        let wd = approx_ratio(&Integer::from(1), &r.den);
        r.rows
            .iter()
            .zip(b)
            .map(|(row, bo)| {
                let mut s = Integer::from(0);
                let mut small = 0.0;
                for (j, w) in row {
                    if h.num[*j] != 0u32 {
                        s.add_mul_assign(w, &h.num[*j]);
                    }
                    if h.int[*j] != 0 {
                        small += approx_ratio(w, &Natural::from(1u32)) * wd * h.int[*j] as f64;
                    }
                }
                let big = if s == 0u32 { 0.0 } else { approx_ratio(&s, &den) };
                big + small + f64::rounding_from(bo, RoundingMode::Nearest).0
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
                    Activation::Sign => if p > 0u32 { q("1") } else if p < 0u32 { q("-1") } else { q("0") },
                    Activation::SatSigmoid => if p > 0u32 { q("1") } else if p < 0u32 { q("0") } else { q("1/2") },
                    _ => unreachable!(),
                }
            })
            .collect()
    }

    #[test]
    fn base4_stack_push_pop_matches_naive_rationals() {
        // a one-stack push/pop machine fragment: s' = s/4 + 1/4·x0 + 3/4·x1 (push), clipped
        for act in [Activation::Slu, Activation::Relu, Activation::Identity, Activation::Step, Activation::Sign, Activation::SatSigmoid] {
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
        for act in [Activation::Slu, Activation::SatSigmoid, Activation::Sign, Activation::Step] {
            let n = net(&[&["1", "0"], &["0", "1"]], &[&["1"], &["-1"]], &["-1", "1"], &["1/3", "2/3"], act);
            let plan = ExactPlan::new(&n, DEFAULT_MAX_BITS).unwrap();
            let mut h = plan.h0.clone();
            let mut naive = n.h0.clone();
            for t in 0..20 {
                let x = vec![Rational::from(t % 3) / Rational::from(3)];
                h = plan.tick(&h, &plan.affine(&x)).unwrap();
                naive = naive_tick(&n, &naive, &x);
                assert_eq!(h.to_rationals(), naive, "{act:?} tick {t}");
            }
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
