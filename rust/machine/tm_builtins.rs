//! Named Turing machines: the busy-beaver champions for 2 to 5 states (bbchallenge.org) and
//! three classic deciders/transducers with accept and reject states.
//!
//! | name | machine | on the empty tape / what it does |
//! |------|---------|------------------------------------|
//! | `bb2` | `1RB1LB_1LA1RZ` | halts after 6 steps with 4 ones |
//! | `bb3` | `1RB1RZ_1LB0RC_1LC1LA` | halts after 21 steps with 5 ones |
//! | `bb4` | `1RB1LB_1LA0LC_1RZ1LD_1RD0RA` | halts after 107 steps with 13 ones |
//! | `bb5` | `1RB1LC_1RC1RB_1RD0LE_1LA1LD_1RZ0LA` | halts after 47,176,870 steps with 4,098 ones |
//! | `binary_increment` | two-way tape | adds one to a binary number (MSB first), accepts |
//! | `sipser_pow2` | Sipser's M2, one-way tape | decides `{0^(2^n) : n >= 0}` |
//! | `anbncn` | one-way tape | decides `{a^n b^n c^n : n >= 0}` |
//!
//! The step counts are the maximum-shift champions S(2..5) (Radó 1962; Lin & Radó 1965;
//! Brady 1983; Marxen & Buntrock 1990; S(5) proved by the bbchallenge collaboration, 2024).

use crate::error::{SimError, SimResult};
use crate::machine::tm::{TapeKind, TuringMachine};

/// The names [`builtin`] knows, in a stable order.
pub fn builtin_names() -> &'static [&'static str] {
    &[
        "bb2",
        "bb3",
        "bb4",
        "bb5",
        "binary_increment",
        "sipser_pow2",
        "anbncn",
    ]
}

/// The busy-beaver champions in bbchallenge's text format, `(name, text)`.
const BUSY_BEAVERS: [(&str, &str); 4] = [
    ("bb2", "1RB1LB_1LA1RZ"),
    ("bb3", "1RB1RZ_1LB0RC_1LC1LA"),
    ("bb4", "1RB1LB_1LA0LC_1RZ1LD_1RD0RA"),
    ("bb5", "1RB1LC_1RC1RB_1RD0LE_1LA1LD_1RZ0LA"),
];

/// The machine called `name` (see [`builtin_names`] and the module table). Unknown names give
/// `SimError::InvalidInput` listing the known ones.
pub fn builtin(name: &str) -> SimResult<TuringMachine> {
    if let Some((_, text)) = BUSY_BEAVERS.iter().find(|(n, _)| *n == name) {
        return TuringMachine::parse(text);
    }
    match name {
        "binary_increment" => binary_increment(),
        "sipser_pow2" => sipser_pow2(),
        "anbncn" => anbncn(),
        _ => Err(SimError::invalid_input(format!(
            "unknown machine {name:?}; known machines: {}",
            builtin_names().join(", ")
        ))),
    }
}

/// A transition given by names: `(state, read, next, write, move)`.
type Rule = (&'static str, &'static str, &'static str, &'static str, char);

/// The parts of a machine given by names, for [`TuringMachine::new`].
struct Spec {
    states: &'static [&'static str],
    input: &'static [&'static str],
    tape: &'static [&'static str],
    blank: &'static str,
    start: &'static str,
    accept: &'static [&'static str],
    reject: &'static [&'static str],
    kind: TapeKind,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Builds `spec` with `rules`; with `complete`, every (non-stopping state, symbol) pair the
/// rules leave out goes to the first reject state, writing what it read and moving right
/// (Sipser's convention for transitions omitted from state diagrams, 2013, §3.1).
fn build(spec: &Spec, rules: &[Rule], complete: bool) -> SimResult<TuringMachine> {
    let mut t: Vec<(String, String, String, String, char)> = rules
        .iter()
        .map(|&(q, r, n, w, m)| (q.into(), r.into(), n.into(), w.into(), m))
        .collect();
    if complete {
        let stopping = |q: &str| spec.accept.contains(&q) || spec.reject.contains(&q);
        for &q in spec.states.iter().filter(|q| !stopping(q)) {
            for &s in spec.tape {
                if !rules.iter().any(|r| r.0 == q && r.1 == s) {
                    t.push((q.into(), s.into(), spec.reject[0].into(), s.into(), 'R'));
                }
            }
        }
    }
    TuringMachine::new(
        strings(spec.states),
        strings(spec.input),
        strings(spec.tape),
        spec.blank.into(),
        t,
        spec.start.into(),
        strings(spec.accept),
        strings(spec.reject),
        vec![],
        spec.kind,
    )
}

/// Binary increment on a two-way tape: the input is a binary number over `{0, 1}`, most
/// significant bit first, starting at cell 0 (the empty input is read as 0). The machine
/// runs right to the end, then carries leftwards (`1 -> 0`) until it turns a `0` or a blank
/// into `1`, and accepts. The tape then holds the incremented number: same width as the
/// input (leading zeros kept) or one cell wider, at cell -1, when the input is all ones.
/// Blank `_`. Every input is accepted.
pub fn binary_increment() -> SimResult<TuringMachine> {
    let spec = Spec {
        states: &["right", "carry", "done"],
        input: &["0", "1"],
        tape: &["0", "1", "_"],
        blank: "_",
        start: "right",
        accept: &["done"],
        reject: &[],
        kind: TapeKind::TwoWay,
    };
    let rules: &[Rule] = &[
        ("right", "0", "right", "0", 'R'),
        ("right", "1", "right", "1", 'R'),
        ("right", "_", "carry", "_", 'L'),
        ("carry", "1", "carry", "0", 'L'),
        ("carry", "0", "done", "1", 'N'),
        ("carry", "_", "done", "1", 'N'),
    ];
    build(&spec, rules, false)
}

/// Sipser's M2 (Sipser 2013, Example 3.7 and Figure 3.8), deciding `{0^(2^n) : n >= 0}` on a
/// one-way tape: it crosses off every other `0` with `x` in each sweep, accepts if one `0`
/// is left, rejects if an odd number (more than one) is left, and the blank it writes over
/// the first `0` marks the left end. States `q1`..`q5`, `qaccept`, `qreject`; tape alphabet
/// `0`, `x` and the blank `_` (Sipser's ␣). All transitions of Figure 3.8 are listed,
/// including those into `qreject`.
pub fn sipser_pow2() -> SimResult<TuringMachine> {
    let spec = Spec {
        states: &["q1", "q2", "q3", "q4", "q5", "qaccept", "qreject"],
        input: &["0"],
        tape: &["0", "x", "_"],
        blank: "_",
        start: "q1",
        accept: &["qaccept"],
        reject: &["qreject"],
        kind: TapeKind::OneWay,
    };
    let rules: &[Rule] = &[
        ("q1", "0", "q2", "_", 'R'),
        ("q1", "_", "qreject", "_", 'R'),
        ("q1", "x", "qreject", "x", 'R'),
        ("q2", "x", "q2", "x", 'R'),
        ("q2", "_", "qaccept", "_", 'R'),
        ("q2", "0", "q3", "x", 'R'),
        ("q3", "x", "q3", "x", 'R'),
        ("q3", "0", "q4", "0", 'R'),
        ("q3", "_", "q5", "_", 'L'),
        ("q4", "x", "q4", "x", 'R'),
        ("q4", "0", "q3", "x", 'R'),
        ("q4", "_", "qreject", "_", 'R'),
        ("q5", "0", "q5", "0", 'L'),
        ("q5", "x", "q5", "x", 'L'),
        ("q5", "_", "q2", "_", 'R'),
    ];
    build(&spec, rules, false)
}

/// A decider for `{a^n b^n c^n : n >= 0}` on a one-way tape (the standard example of a
/// language that is decidable but not context-free; cf. Sipser 2013, Example 2.36 and §3.1).
/// Each round marks the leftmost `a` as `x`, the next `b` as `y` and the next `c` as `z`, then
/// returns to the last `x`; when no `a` is left it checks that only `y`s and `z`s remain.
/// Tape alphabet `a b c x y z _` (blank `_`). Every transition the algorithm does not use
/// goes to `qreject` (write the symbol read, move right), so it accepts or rejects every input.
pub fn anbncn() -> SimResult<TuringMachine> {
    let spec = Spec {
        states: &["q0", "q1", "q2", "q3", "q4", "qaccept", "qreject"],
        input: &["a", "b", "c"],
        tape: &["a", "b", "c", "x", "y", "z", "_"],
        blank: "_",
        start: "q0",
        accept: &["qaccept"],
        reject: &["qreject"],
        kind: TapeKind::OneWay,
    };
    let rules: &[Rule] = &[
        ("q0", "a", "q1", "x", 'R'),
        ("q0", "y", "q4", "y", 'R'),
        ("q0", "_", "qaccept", "_", 'R'),
        ("q1", "a", "q1", "a", 'R'),
        ("q1", "y", "q1", "y", 'R'),
        ("q1", "b", "q2", "y", 'R'),
        ("q2", "b", "q2", "b", 'R'),
        ("q2", "z", "q2", "z", 'R'),
        ("q2", "c", "q3", "z", 'L'),
        ("q3", "a", "q3", "a", 'L'),
        ("q3", "b", "q3", "b", 'L'),
        ("q3", "y", "q3", "y", 'L'),
        ("q3", "z", "q3", "z", 'L'),
        ("q3", "x", "q0", "x", 'R'),
        ("q4", "y", "q4", "y", 'R'),
        ("q4", "z", "q4", "z", 'R'),
        ("q4", "_", "qaccept", "_", 'R'),
    ];
    build(&spec, rules, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::tm::Status;

    /// Runs `name` on the blank tape and returns (steps, ones, status).
    fn bb(name: &str) -> (u64, u64, Status) {
        let m = builtin(name).unwrap();
        let r = m.run(&[], 100_000_000);
        (r.steps, m.ones(&r.tape), r.status)
    }

    #[test]
    fn busy_beaver_champions_2_to_4() {
        assert_eq!(bb("bb2"), (6, 4, Status::Halted));
        assert_eq!(bb("bb3"), (21, 5, Status::Halted));
        assert_eq!(bb("bb4"), (107, 13, Status::Halted));
    }

    /// S(5) = 47,176,870 and 4,098 ones. Fast in release builds (and at the crate's test
    /// opt-level 2); slow but correct without optimisation.
    #[test]
    fn busy_beaver_champion_5() {
        let t = std::time::Instant::now();
        let got = bb("bb5");
        eprintln!("bb5: {got:?} in {:?}", t.elapsed());
        assert_eq!(got, (47_176_870, 4_098, Status::Halted));
        let m = builtin("bb5").unwrap();
        let r = m.run(&[], 47_176_869);
        assert_eq!((r.halted, r.steps), (false, 47_176_869));
    }

    #[test]
    fn every_builtin_builds_and_unknown_names_fail() {
        for name in builtin_names() {
            assert_eq!(builtin(name).unwrap().validate(), Ok(()), "{name}");
        }
        let Err(SimError::InvalidInput(p)) = builtin("bb6") else {
            panic!()
        };
        assert!(p[0].contains("bb6") && p[0].contains("sipser_pow2"));
    }

    /// Every word over `alphabet` of length 0..=max_len.
    fn words(alphabet: &[&'static str], max_len: usize) -> Vec<Vec<&'static str>> {
        let mut all = vec![vec![]];
        let mut layer: Vec<Vec<&str>> = vec![vec![]];
        for _ in 0..max_len {
            layer = layer
                .iter()
                .flat_map(|w| alphabet.iter().map(move |a| [w.as_slice(), &[*a]].concat()))
                .collect();
            all.extend(layer.iter().cloned());
        }
        all
    }

    /// Runs `m` on `word`, which must stop; returns (accepted, trimmed tape as text).
    fn decide(m: &TuringMachine, word: &[&str]) -> (bool, String) {
        let r = m.run(&m.encode_input(word).unwrap(), 1_000_000);
        assert!(r.halted, "{word:?} did not stop");
        let tape = m
            .tape_contents(&r.tape)
            .iter()
            .map(|&s| m.tape_alphabet[s].as_str())
            .collect();
        (r.accepted.unwrap(), tape)
    }

    #[test]
    fn binary_increment_on_all_words_and_numbers() {
        let m = builtin("binary_increment").unwrap();
        for w in words(&["0", "1"], 10) {
            let v = u64::from_str_radix(&w.concat(), 2).unwrap_or(0);
            let expected = format!("{:0width$b}", v + 1, width = w.len());
            assert_eq!(decide(&m, &w), (true, expected), "{w:?}");
        }
        for n in 0..=1000u64 {
            let bits = format!("{n:b}");
            let word: Vec<&str> = bits.split("").filter(|s| !s.is_empty()).collect();
            assert_eq!(decide(&m, &word), (true, format!("{:b}", n + 1)), "{n}");
        }
    }

    #[test]
    fn sipser_m2_decides_powers_of_two() {
        let m = builtin("sipser_pow2").unwrap();
        assert_eq!(m.tape, TapeKind::OneWay);
        for n in 0..=70usize {
            let w = vec!["0"; n];
            assert_eq!(decide(&m, &w).0, n.is_power_of_two(), "0^{n}");
        }
        // Sipser's Example 3.7 trace of 0000 leaves the tape as a blank followed by x's.
        let r = m.run(&m.encode_input(&["0"; 4]).unwrap(), 1000);
        // (tape_string trims the blank at cell 0; the head ends one cell past the last x).
        assert_eq!((r.accepted, r.head), (Some(true), 5));
        assert_eq!(m.tape_string(&r.to_config()), "xxx_[_]");
        assert_eq!(r.tape[0], m.blank);
        assert!(m.encode_input(&["x"]).is_err());
    }

    #[test]
    fn anbncn_decides_its_language() {
        let m = builtin("anbncn").unwrap();
        let words = words(&["a", "b", "c"], 10);
        assert_eq!(words.len(), (0..=10).map(|k| 3usize.pow(k)).sum::<usize>());
        for w in words {
            let s = w.concat();
            let n = s.len() / 3;
            let member = s == format!("{}{}{}", "a".repeat(n), "b".repeat(n), "c".repeat(n));
            assert_eq!(decide(&m, &w).0, member, "{s:?}");
        }
    }
}
