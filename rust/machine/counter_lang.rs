//! The counting languages of Weiss, Goldberg & Yahav (2018), "On the practical computational
//! power of finite precision RNNs for language recognition" (seed 003), with plain membership
//! predicates (the reference every counter network is checked against) and the words a
//! precision sweep tries at each n.
//!
//! - `anbn`       = { aⁿbⁿ : n ≥ 0 } over {a, b}
//! - `anbncn`     = { aⁿbⁿcⁿ : n ≥ 0 } over {a, b, c}
//! - `dyck1`      = balanced parentheses over {"(", ")"} (every prefix has #( ≥ #), equal at the end)
//! - `anbn_sigma` = { aⁿbⁿw : n ≥ 1, w ∈ {a, b}* } over {a, b} (seed 003, the QRNN slides:
//!   "L = {aⁿbⁿw | n ≥ 1, w ∈ {a,b}*}"); equivalently the word is a^k b^j v with k ≥ 1 a's,
//!   then a maximal run of j ≥ k b's (v empty or starting with a), or j > k.
//!
//! Symbols are indices into `alphabet()`.

use crate::error::{SimError, SimResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Anbn,
    Anbncn,
    Dyck1,
    AnbnSigma,
}

pub const LANGUAGE_NAMES: [&str; 4] = ["anbn", "anbncn", "dyck1", "anbn_sigma"];

/// One word of a sweep: `prefix` copies of symbol 0, then the runs (symbol, count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepWord {
    pub prefix: usize,
    pub runs: Vec<(usize, usize)>,
}

impl SweepWord {
    /// The word's maximal runs (empty runs dropped, equal neighbours merged).
    pub fn runs(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (s, k) in std::iter::once((0, self.prefix)).chain(self.runs.iter().copied()) {
            match out.last_mut() {
                _ if k == 0 => {}
                Some((t, m)) if *t == s => *m += k,
                _ => out.push((s, k)),
            }
        }
        out
    }

    pub fn symbols(&self) -> Vec<usize> {
        let mut w = vec![0; self.prefix];
        for &(s, k) in &self.runs {
            w.extend(std::iter::repeat_n(s, k));
        }
        w
    }
}

impl Language {
    pub fn parse(name: &str) -> SimResult<Language> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "anbn" => Language::Anbn,
            "anbncn" => Language::Anbncn,
            "dyck1" => Language::Dyck1,
            "anbn_sigma" => Language::AnbnSigma,
            _ => {
                return Err(SimError::invalid_input(format!(
                    "unknown language {name:?}: expected one of {}",
                    LANGUAGE_NAMES.join(", ")
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::Anbn => "anbn",
            Language::Anbncn => "anbncn",
            Language::Dyck1 => "dyck1",
            Language::AnbnSigma => "anbn_sigma",
        }
    }

    pub fn alphabet(self) -> &'static [&'static str] {
        match self {
            Language::Anbn | Language::AnbnSigma => &["a", "b"],
            Language::Anbncn => &["a", "b", "c"],
            Language::Dyck1 => &["(", ")"],
        }
    }

    /// Plain membership test (the reference semantics).
    pub fn member(self, w: &[usize]) -> bool {
        self.member_runs(&runs(w))
    }

    /// Membership of the word given by its maximal runs (symbol, length ≥ 1), consecutive
    /// runs having different symbols (a sweep word's runs, without spelling it out).
    pub fn member_runs(self, runs: &[(usize, usize)]) -> bool {
        match self {
            Language::Anbn => match runs {
                [] => true,
                [(0, i), (1, j)] => i == j,
                _ => false,
            },
            Language::Anbncn => match runs {
                [] => true,
                [(0, i), (1, j), (2, k)] => i == j && j == k,
                _ => false,
            },
            Language::Dyck1 => {
                let mut depth: i64 = 0;
                for &(s, k) in runs {
                    depth += if s == 0 { k as i64 } else { -(k as i64) };
                    if depth < 0 {
                        return false;
                    }
                }
                depth == 0
            }
            Language::AnbnSigma => match runs {
                [(0, k), (1, j), ..] => j >= k,
                _ => false,
            },
        }
    }

    /// The words a precision sweep tries at n (documented in the README):
    /// anbn and dyck1: xⁿyⁿ (in), xⁿyⁿ⁺¹ and xⁿ⁺¹yⁿ (out);
    /// anbncn: aⁿbⁿcⁿ (in), aⁿbⁿcⁿ⁺¹, aⁿbⁿ⁺¹cⁿ, aⁿ⁺¹bⁿcⁿ (out);
    /// anbn_sigma (n ≥ 1): aⁿbⁿ and aⁿbⁿa (in), aⁿ⁺¹bⁿ and aⁿ⁺¹bⁿa (out).
    pub fn sweep_words(self, n: usize) -> Vec<SweepWord> {
        let w = |prefix: usize, runs: &[(usize, usize)]| SweepWord { prefix, runs: runs.to_vec() };
        match self {
            Language::Anbn | Language::Dyck1 => vec![w(n, &[(1, n)]), w(n, &[(1, n + 1)]), w(n + 1, &[(1, n)])],
            Language::Anbncn => vec![
                w(n, &[(1, n), (2, n)]),
                w(n, &[(1, n), (2, n + 1)]),
                w(n, &[(1, n + 1), (2, n)]),
                w(n + 1, &[(1, n), (2, n)]),
            ],
            Language::AnbnSigma => {
                if n == 0 {
                    return vec![w(0, &[]), w(1, &[])];
                }
                vec![w(n, &[(1, n)]), w(n, &[(1, n), (0, 1)]), w(n + 1, &[(1, n)]), w(n + 1, &[(1, n), (0, 1)])]
            }
        }
    }
}

/// Maximal runs (symbol, length).
fn runs(w: &[usize]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &s in w {
        match out.last_mut() {
            Some((t, k)) if *t == s => *k += 1,
            _ => out.push((s, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(s: &str, lang: Language) -> Vec<usize> {
        s.chars().map(|c| lang.alphabet().iter().position(|a| a.starts_with(c)).unwrap()).collect()
    }

    #[test]
    fn membership() {
        let l = Language::Anbn;
        assert!(l.member(&[]) && l.member(&word("aabb", l)) && !l.member(&word("abab", l)) && !l.member(&word("aab", l)));
        let l = Language::Anbncn;
        assert!(l.member(&word("abc", l)) && !l.member(&word("ac", l)) && !l.member(&word("aabbc", l)));
        let l = Language::Dyck1;
        assert!(l.member(&word("(()())", l)) && !l.member(&word("())(", l)) && l.member(&[]));
        let l = Language::AnbnSigma;
        assert!(!l.member(&[]) && l.member(&word("ab", l)) && l.member(&word("aabbba", l)) && !l.member(&word("aabab", l)));
        assert!(!l.member(&word("ba", l)) && !l.member(&word("b", l)));
    }

    #[test]
    fn sweep_words_have_the_documented_membership() {
        for lang in [Language::Anbn, Language::Anbncn, Language::Dyck1, Language::AnbnSigma] {
            for n in 0..6 {
                let ws = lang.sweep_words(n);
                assert!(lang.member(&ws[0].symbols()) == (lang != Language::AnbnSigma || n > 0), "{lang:?} {n}");
                for w in &ws {
                    assert_eq!(lang.member(&w.symbols()), lang.member_runs(&w.runs()), "{lang:?} {w:?}");
                }
            }
        }
        assert!(matches!(Language::parse("anbm"), Err(SimError::InvalidInput(_))));
    }
}
