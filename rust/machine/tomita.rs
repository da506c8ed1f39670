//! The seven Tomita grammars (M. Tomita, "Dynamic construction of finite-state automata from
//! examples using hill-climbing", Proc. 4th Annual Conference of the Cognitive Science
//! Society, 1982, pp. 105-108) and the parity language, as minimal complete DFAs over the
//! alphabet `["0", "1"]`, together with direct string predicates used as test oracles.
//!
//! Each built-in DFA is complete and minimal, with its states listed in the breadth-first
//! order that [`Dfa::minimize`] produces, so `minimize()` returns it unchanged.

use crate::error::{SimError, SimResult};
use crate::machine::dfa::Dfa;

/// Builds a built-in binary DFA whose start state is `states[0]`; `rows[i]` gives the
/// targets of `states[i]` on "0" and on "1".
fn binary_dfa(states: &[&str], rows: &[(&str, &str)], accept: &[&str]) -> Dfa {
    let transitions = states
        .iter()
        .zip(rows)
        .flat_map(|(q, (t0, t1))| {
            [
                (q.to_string(), "0".to_string(), t0.to_string()),
                (q.to_string(), "1".to_string(), t1.to_string()),
            ]
        })
        .collect();
    Dfa::new(
        states.iter().map(|s| s.to_string()).collect(),
        vec!["0".to_string(), "1".to_string()],
        transitions,
        states[0].to_string(),
        accept.iter().map(|s| s.to_string()).collect(),
    )
    .expect("built-in Tomita DFA tables are valid")
}

/// The minimal complete DFA of Tomita grammar `n` (Tomita 1982), for `n` in 1..=7, over
/// the alphabet `["0", "1"]`:
///
/// 1. `1*`;
/// 2. `(10)*`;
/// 3. no odd-length maximal run of 1s is followed, anywhere later in the string, by an
///    odd-length maximal run of 0s;
/// 4. no `000` substring;
/// 5. an even number of 0s and an even number of 1s;
/// 6. (#0 − #1) ≡ 0 (mod 3);
/// 7. `0*1*0*1*`.
///
/// Minimal state counts (dead state included): 2, 3, 5, 4, 4, 3, 5.
/// Any other `n` fails with [`SimError::InvalidInput`].
pub fn tomita(n: u32) -> SimResult<Dfa> {
    let dfa = match n {
        1 => binary_dfa(
            &["ones", "dead"],
            &[("dead", "ones"), ("dead", "dead")],
            &["ones"],
        ),
        2 => binary_dfa(
            &["pairs", "dead", "after_1"],
            &[("dead", "after_1"), ("dead", "dead"), ("pairs", "dead")],
            &["pairs"],
        ),
        3 => tomita3(),
        4 => tomita4(),
        5 => tomita5(),
        6 => binary_dfa(
            &["diff0", "diff1", "diff2"],
            &[("diff1", "diff2"), ("diff2", "diff0"), ("diff0", "diff1")],
            &["diff0"],
        ),
        7 => tomita7(),
        _ => {
            return Err(SimError::invalid_input(format!(
                "there is no Tomita grammar {n} (valid: 1 to 7)"
            )))
        }
    };
    Ok(dfa)
}

/// Tomita 3. States: `even_ones` — no odd 1-run has ended yet and the current 1-run (if
/// any) has even length; `odd_ones` — inside an odd 1-run, none ended before; `odd_zeros`
/// — an odd 1-run has ended and the current 0-run is odd so far; `after_odd_ones` — an odd
/// 1-run has ended and no odd 0-run is open; `dead` — an odd 0-run ended after an odd 1-run.
fn tomita3() -> Dfa {
    binary_dfa(
        &[
            "even_ones",
            "odd_ones",
            "odd_zeros",
            "after_odd_ones",
            "dead",
        ],
        &[
            ("even_ones", "odd_ones"),
            ("odd_zeros", "even_ones"),
            ("after_odd_ones", "dead"),
            ("odd_zeros", "after_odd_ones"),
            ("dead", "dead"),
        ],
        &["even_ones", "odd_ones", "after_odd_ones"],
    )
}

/// Tomita 4. States `no_0`, `one_0`, `two_0`: the word so far has no `000` and ends in
/// zero, one or two 0s; `dead`: a `000` has occurred.
fn tomita4() -> Dfa {
    binary_dfa(
        &["no_0", "one_0", "two_0", "dead"],
        &[
            ("one_0", "no_0"),
            ("two_0", "no_0"),
            ("dead", "no_0"),
            ("dead", "dead"),
        ],
        &["no_0", "one_0", "two_0"],
    )
}

/// Tomita 5. States name the parities of the numbers of 0s and 1s read so far.
fn tomita5() -> Dfa {
    binary_dfa(
        &["even0_even1", "odd0_even1", "even0_odd1", "odd0_odd1"],
        &[
            ("odd0_even1", "even0_odd1"),
            ("even0_even1", "odd0_odd1"),
            ("odd0_odd1", "even0_even1"),
            ("even0_odd1", "odd0_even1"),
        ],
        &["even0_even1"],
    )
}

/// Tomita 7. `zeros1`, `ones1`, `zeros2`, `ones2`: the greedy match of `0*1*0*1*` is
/// currently in that block; `dead`: the word has left the pattern.
fn tomita7() -> Dfa {
    binary_dfa(
        &["zeros1", "ones1", "zeros2", "ones2", "dead"],
        &[
            ("zeros1", "ones1"),
            ("zeros2", "ones1"),
            ("zeros2", "ones2"),
            ("dead", "ones2"),
            ("dead", "dead"),
        ],
        &["zeros1", "ones1", "zeros2", "ones2"],
    )
}

/// The parity language over `["0", "1"]`: words with an odd number of 1s. Minimal, two
/// states (`even`, the start, and `odd`, accepting).
pub fn parity() -> Dfa {
    binary_dfa(
        &["even", "odd"],
        &[("even", "odd"), ("odd", "even")],
        &["odd"],
    )
}

/// Maximal runs of equal characters, as (character, length), left to right.
fn runs(word: &str) -> Vec<(char, usize)> {
    let mut out: Vec<(char, usize)> = Vec::new();
    for c in word.chars() {
        match out.last_mut() {
            Some((last, len)) if *last == c => *len += 1,
            _ => out.push((c, 1)),
        }
    }
    out
}

/// Tomita 3 literally: scanning the maximal runs left to right, fail on an odd 0-run once
/// an odd 1-run has been seen.
fn tomita3_predicate(word: &str) -> bool {
    let mut seen_odd_ones = false;
    for (c, len) in runs(word) {
        if len % 2 == 1 {
            if c == '0' && seen_odd_ones {
                return false;
            }
            if c == '1' {
                seen_odd_ones = true;
            }
        }
    }
    true
}

/// Tomita 7 literally: match `0*1*0*1*` greedily, moving to the next starred block only
/// when the current character cannot extend the current one.
fn tomita7_predicate(word: &str) -> bool {
    const PATTERN: [char; 4] = ['0', '1', '0', '1'];
    let mut phase = 0;
    for c in word.chars() {
        while phase < PATTERN.len() && PATTERN[phase] != c {
            phase += 1;
        }
        if phase == PATTERN.len() {
            return false;
        }
    }
    true
}

/// Membership in Tomita grammar `n` (Tomita 1982), computed directly from the definitions
/// listed on [`tomita`] with plain string logic; the test oracle for the DFAs.
/// Returns false for `n` outside 1..=7 and for words with characters other than `0`/`1`.
pub fn tomita_predicate(n: u32, word: &str) -> bool {
    if !word.chars().all(|c| c == '0' || c == '1') {
        return false;
    }
    let zeros = word.chars().filter(|&c| c == '0').count() as i64;
    let ones = word.len() as i64 - zeros;
    match n {
        1 => zeros == 0,
        2 => word.len().is_multiple_of(2) && word.as_bytes().chunks(2).all(|pair| pair == b"10"),
        3 => tomita3_predicate(word),
        4 => !word.contains("000"),
        5 => zeros % 2 == 0 && ones % 2 == 0,
        6 => (zeros - ones).rem_euclid(3) == 0,
        7 => tomita7_predicate(word),
        _ => false,
    }
}

/// Membership in the parity language (odd number of 1s), computed directly on the string.
pub fn parity_predicate(word: &str) -> bool {
    word.chars().filter(|&c| c == '1').count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every binary string of length 0..=max_len, with its symbol-index encoding.
    fn all_binary(max_len: usize) -> Vec<(String, Vec<usize>)> {
        let mut out = Vec::new();
        for len in 0..=max_len {
            for bits in 0u32..(1 << len) {
                let w: Vec<usize> = (0..len)
                    .map(|i| ((bits >> (len - 1 - i)) & 1) as usize)
                    .collect();
                let s: String = w.iter().map(|&b| if b == 1 { '1' } else { '0' }).collect();
                out.push((s, w));
            }
        }
        out
    }

    #[test]
    fn tomita_dfas_agree_with_predicates_up_to_length_14() {
        let words = all_binary(14);
        assert_eq!(words.len(), (1 << 15) - 1);
        for n in 1..=7 {
            let d = tomita(n).unwrap();
            let mut accepted = 0;
            for (s, w) in &words {
                assert_eq!(d.accepts(w), tomita_predicate(n, s), "tomita {n} on {s:?}");
                accepted += usize::from(d.accepts(w));
            }
            // Guard against a vacuous oracle: every language is non-trivial at these lengths.
            assert!(accepted > 0 && accepted < words.len(), "tomita {n}");
        }
        let p = parity();
        for (s, w) in &words {
            assert_eq!(p.accepts(w), parity_predicate(s), "parity on {s:?}");
        }
    }

    #[test]
    fn predicates_on_known_words() {
        let cases: [(u32, &str, bool); 22] = [
            (1, "", true),
            (1, "111", true),
            (1, "101", false),
            (2, "1010", true),
            (2, "101", false),
            (2, "01", false),
            (3, "10", false),
            (3, "1000", false),
            (3, "110", true),
            (3, "1001", true),
            (3, "100110", false),
            (3, "11010", false),
            (3, "0110", true),
            (4, "100100", true),
            (4, "10001", false),
            (5, "0110", true),
            (5, "010", false),
            (6, "0011", true),
            (6, "000", true),
            (6, "01", true),
            (7, "0101", true),
            (7, "1010", false),
        ];
        for (n, w, expected) in cases {
            assert_eq!(tomita_predicate(n, w), expected, "tomita {n} on {w:?}");
        }
        assert!(!tomita_predicate(8, ""));
        assert!(!tomita_predicate(1, "12"));
    }

    #[test]
    fn tomita_dfas_are_minimal() {
        // Minimal complete state counts, dead state included (computed by minimize()):
        // tomita1 = 2, tomita2 = 3, tomita3 = 5, tomita4 = 4, tomita5 = 4, tomita6 = 3,
        // tomita7 = 5, parity = 2.
        let expected = [2, 3, 5, 4, 4, 3, 5];
        for n in 1..=7u32 {
            let d = tomita(n).unwrap();
            let m = d.minimize();
            assert_eq!(m.states.len(), expected[n as usize - 1], "tomita {n}");
            assert_eq!(m, d, "tomita {n} is not already in minimal BFS form");
            assert!(d.is_complete());
        }
        assert_eq!(parity().minimize(), parity());
        assert_eq!(parity().states.len(), 2);
    }

    #[test]
    fn tomita_pairs_shortest_counterexamples() {
        let t: Vec<Dfa> = (1..=7).map(|n| tomita(n).unwrap()).collect();
        // 1* vs (10)*: both accept "", both reject "0", "1" is the first difference.
        assert_eq!(t[0].equivalent(&t[1]).unwrap(), Some(vec![1]));
        // no-000 vs 0*1*0*1*: both accept every word of length <= 2; "000" comes first.
        assert_eq!(t[3].equivalent(&t[6]).unwrap(), Some(vec![0, 0, 0]));
        // tomita 5 vs parity differ on the empty word.
        assert_eq!(t[4].equivalent(&parity()).unwrap(), Some(vec![]));
        for (i, a) in t.iter().enumerate() {
            assert_eq!(a.equivalent(a).unwrap(), None);
            for b in &t[i + 1..] {
                let cx = a
                    .equivalent(b)
                    .unwrap()
                    .expect("Tomita languages are pairwise distinct");
                assert_ne!(a.accepts(&cx), b.accepts(&cx));
            }
        }
    }

    #[test]
    fn tomita_json_round_trip_and_range() {
        for n in 1..=7 {
            let d = tomita(n).unwrap();
            assert_eq!(Dfa::from_json(&d.to_json()).unwrap(), d);
        }
        assert!(matches!(tomita(0), Err(SimError::InvalidInput(_))));
        assert!(matches!(tomita(8), Err(SimError::InvalidInput(_))));
    }
}
