//! Linear forms over a network's units, inputs and the constant 1, with exact coefficients.
//!
//! A compiler writes every pre-activation as such a form (c₀ + Σ_j v_j h_j + Σ_k w_k x_k);
//! the form's unit, input and constant parts are then one row of V, W and b. Compilers that
//! fold a second layer into the first (Lemma 4.4) also keep "config forms" that read a
//! machine configuration back out of the hidden state; [`LinearForm::eval`] evaluates them.

use malachite::base::num::arithmetic::traits::Lcm;
use malachite::{Integer, Natural, Rational};
use std::collections::BTreeMap;

/// One variable of a form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Term {
    /// The constant 1 (the bias).
    One,
    /// Hidden unit j of the previous tick.
    Unit(usize),
    /// Input column k of the current tick.
    Input(usize),
}

/// Σ coefficient·term, zero coefficients never stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinearForm {
    terms: BTreeMap<Term, Rational>,
}

impl LinearForm {
    pub fn zero() -> Self {
        LinearForm::default()
    }

    pub fn term(t: Term, c: impl Into<Rational>) -> Self {
        let mut f = LinearForm::zero();
        f.add_term(t, &c.into());
        f
    }

    pub fn unit(j: usize) -> Self {
        Self::term(Term::Unit(j), 1)
    }

    pub fn input(k: usize) -> Self {
        Self::term(Term::Input(k), 1)
    }

    pub fn constant(c: impl Into<Rational>) -> Self {
        Self::term(Term::One, c)
    }

    /// Σ_j units[j] (each with coefficient 1).
    pub fn sum_units(units: impl IntoIterator<Item = usize>) -> Self {
        let mut f = LinearForm::zero();
        for j in units {
            f.add_term(Term::Unit(j), &Rational::from(1));
        }
        f
    }

    pub fn add_term(&mut self, t: Term, c: &Rational) {
        if *c == 0u32 {
            return;
        }
        let e = self.terms.entry(t).or_insert_with(|| Rational::from(0));
        *e += c;
        if *e == 0u32 {
            self.terms.remove(&t);
        }
    }

    /// self += c·other
    pub fn add_scaled(&mut self, c: &Rational, other: &LinearForm) {
        if *c == 0u32 {
            return;
        }
        for (t, v) in &other.terms {
            self.add_term(*t, &(c * v));
        }
    }

    /// self + c·other
    pub fn plus(mut self, c: impl Into<Rational>, other: &LinearForm) -> Self {
        self.add_scaled(&c.into(), other);
        self
    }

    pub fn scaled(&self, c: impl Into<Rational>) -> Self {
        LinearForm::zero().plus(c, self)
    }

    pub fn coefficient(&self, t: Term) -> Rational {
        self.terms.get(&t).cloned().unwrap_or_else(|| Rational::from(0))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Term, &Rational)> {
        self.terms.iter()
    }

    pub fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether the form reads any input column.
    pub fn reads_input(&self) -> bool {
        self.terms.keys().any(|t| matches!(t, Term::Input(_)))
    }

    /// An upper bound of the form over unit values in [0, 1]: the constant plus the positive
    /// unit coefficients (forms that read inputs have no such bound: panics in debug builds).
    pub fn syntactic_bound(&self) -> Rational {
        debug_assert!(!self.reads_input(), "syntactic_bound of a form that reads the input");
        let mut s = self.coefficient(Term::One);
        for (t, c) in &self.terms {
            if matches!(t, Term::Unit(_)) && *c > 0u32 {
                s += c;
            }
        }
        s
    }

    /// The value on the hidden state h (input terms must be absent; the constant counts).
    pub fn eval(&self, h: &[Rational]) -> Rational {
        let mut s = Rational::from(0);
        for (t, c) in &self.terms {
            match t {
                Term::One => s += c,
                Term::Unit(j) => {
                    if h[*j] != 0u32 {
                        s += c * &h[*j];
                    }
                }
                Term::Input(_) => panic!("eval of a form that reads the input"),
            }
        }
        s
    }

    /// The value on a state given as integer numerators over one denominator (the exact
    /// engine's representation): (Σ ĉ_j n_j + ĉ₀·D)/(d·D) with ĉ = c·d, d = lcm of the
    /// coefficients' denominators. One big×small product per nonzero unit, one gcd at the end.
    pub fn eval_over(&self, num: &[Integer], den: &Natural) -> Rational {
        let mut d = Natural::from(1u32);
        for c in self.terms.values() {
            d = d.lcm(c.to_denominator());
        }
        let dq = Rational::from(&d);
        let mut s = Integer::from(0);
        for (t, c) in &self.terms {
            let ci = Integer::rounding_from_rational(&(c * &dq));
            match t {
                Term::One => s += ci * Integer::from(den),
                Term::Unit(j) => {
                    if num[*j] != 0u32 {
                        s += ci * &num[*j];
                    }
                }
                Term::Input(_) => panic!("eval of a form that reads the input"),
            }
        }
        Rational::from_integers(s, Integer::from(d * den))
    }
}

trait ExactInteger {
    fn rounding_from_rational(r: &Rational) -> Integer;
}

impl ExactInteger for Integer {
    /// r must be an integer (it is: r = c·lcm of denominators).
    fn rounding_from_rational(r: &Rational) -> Integer {
        debug_assert_eq!(*r.denominator_ref(), 1u32);
        let (n, _) = r.to_numerator_and_denominator();
        let m = Integer::from(n);
        if *r < 0u32 { -m } else { m }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::num::rational::parse_rational;

    fn q(s: &str) -> Rational {
        parse_rational(s).unwrap()
    }

    #[test]
    fn adding_cancels_and_evaluates() {
        let a = LinearForm::unit(0).plus(q("1/2"), &LinearForm::unit(1)).plus(-1, &LinearForm::constant(3));
        let b = a.scaled(2).plus(-2, &LinearForm::unit(0));
        assert_eq!(b.coefficient(Term::Unit(0)), 0u32);
        assert_eq!(b.iter().count(), 2);
        let h = vec![q("1/3"), q("4")];
        assert_eq!(a.eval(&h), q("1/3") + q("2") - q("3"));
        assert_eq!(b.eval(&h), q("4") - q("6"));
        assert_eq!(a.syntactic_bound(), q("3/2") - q("3"));
    }

    #[test]
    fn eval_over_shared_denominator_equals_eval() {
        let f = LinearForm::unit(0).plus(q("-3/4"), &LinearForm::unit(2)).plus(q("5/6"), &LinearForm::constant(1));
        let num = vec![Integer::from(7), Integer::from(0), Integer::from(-5)];
        let den = Natural::from(12u32);
        let h: Vec<Rational> = num.iter().map(|n| Rational::from_integers_ref(n, &Integer::from(&den))).collect();
        assert_eq!(f.eval_over(&num, &den), f.eval(&h));
    }
}
