//! The standard busy-beaver text format of bbchallenge.org, e.g. BB(2) = `1RB1LB_1LA1RZ`.
//!
//! * Rows are separated by `_`, one per state, named `A`, `B`, `C`, ... in order; `A` starts.
//! * Each row holds one 3-character transition per tape symbol `0`, `1`, `2`, ... (`0` is the
//!   blank); the number of symbols is the row length / 3, the same for every row (at most 10).
//! * A transition is write-move-next, e.g. `1RB`: write `1`, move right, go to `B`.
//! * A next-state letter past the last row means halt, as the format's definition allows
//!   ("any state letter bigger or equal to A+n"): usually `Z`, often `H`. So `1RZ` writes 1,
//!   moves right and enters the halt state; in a machine with 8 or more states `H` is a
//!   working state, not a halt. `---` is a halting transition that leaves the symbol and does
//!   not move. Both kinds count as a step, as in bbchallenge's step counts (BB(2) runs 6 steps).
//!
//! Parsed machines have a two-way tape, input alphabet = every non-blank symbol, the working
//! states `A, B, ...` followed by the halt state `Z` (at most 25 working states, `A`..`Y`),
//! and no accept or reject states. [`TuringMachine::format`] always writes halts as `Z`.
//!
//! Sources: <https://bbchallenge.org>; the format was agreed on the bbchallenge forum
//! (<https://discuss.bbchallenge.org/t/standard-tm-text-format/60>, July 2022) and is
//! described in S. Ligocki, "Standard TM Text Format" (2022),
//! <https://www.sligocki.com/2022/10/09/standard-tm-format.html>.

use crate::error::{SimError, SimResult};
use crate::machine::tm::{bb_state_name, Move, TapeKind, Transition, TuringMachine};

/// At most `A`..`Y`: `Z` is the halt state.
const MAX_STATES: usize = 25;
/// One digit per written symbol.
const MAX_SYMBOLS: usize = 10;

/// Row-level problems: empty rows, lengths not a multiple of 3, rows of different widths,
/// too many rows or symbols.
fn check_rows(rows: &[Vec<char>], n_syms: usize, p: &mut Vec<String>) {
    if rows.len() > MAX_STATES {
        p.push(format!(
            "{} rows, but at most {MAX_STATES} states (A..Y) fit: Z is the halt state",
            rows.len()
        ));
    }
    if n_syms > MAX_SYMBOLS {
        p.push(format!(
            "row 1: {n_syms} transitions, but at most {MAX_SYMBOLS} symbols (0..9) fit one digit"
        ));
    }
    for (r, row) in rows.iter().enumerate() {
        let len = row.len();
        if len == 0 {
            p.push(format!(
                "row {}, column 1: empty row (two `_` in a row, or `_` at an end)",
                r + 1
            ));
        } else if len % 3 != 0 {
            let from = len - len % 3;
            let rest: String = row[from..].iter().collect();
            p.push(format!(
                "row {}, column {}: incomplete transition {rest:?} (the row has {len} characters, not a multiple of 3)",
                r + 1,
                from + 1
            ));
        } else if len / 3 != n_syms {
            p.push(format!(
                "row {}, column 1: {} transitions, but row 1 has {n_syms} (one per tape symbol)",
                r + 1,
                len / 3
            ));
        }
    }
}

/// Parses one 3-character transition of row `r` (0-based) for symbol `j`; reports each bad
/// character with its row and column. `n_rows` is also the index of the halt state.
fn parse_cell(
    cell: &[char],
    r: usize,
    j: usize,
    n_rows: usize,
    n_syms: usize,
    p: &mut Vec<String>,
) -> Option<Transition> {
    let text: String = cell.iter().collect();
    if text == "---" {
        return Some(Transition {
            next: n_rows,
            write: j,
            mv: Move::N,
        });
    }
    let n_before = p.len();
    let mut bad = |k: usize, what: String| {
        p.push(format!(
            "row {}, column {}: {:?} in {text:?}: {what}",
            r + 1,
            3 * j + k + 1,
            cell[k]
        ));
    };
    let write = match cell[0].to_digit(10) {
        Some(d) if (d as usize) < n_syms => d as usize,
        _ => {
            let hint = if n_syms > 0 {
                format!("0..{}", n_syms - 1)
            } else {
                "a digit".into()
            };
            bad(
                0,
                format!("the written symbol must be {hint} (or the whole transition `---`)"),
            );
            0
        }
    };
    let mv = match cell[1] {
        'L' => Move::L,
        'R' => Move::R,
        _ => {
            bad(1, "the move must be L or R".into());
            Move::N
        }
    };
    let next = match cell[2] {
        c @ 'A'..='Z' => ((c as u8 - b'A') as usize).min(n_rows),
        _ => {
            bad(2, "the next state must be a capital letter (A.. for rows, Z or any later letter: halt)".into());
            0
        }
    };
    (p.len() == n_before).then_some(Transition { next, write, mv })
}

/// Why `m` cannot be written in the text format (empty if it can), header fields only.
fn header_problems(m: &TuringMachine) -> Vec<String> {
    let mut p = Vec::new();
    if m.tape != TapeKind::TwoWay {
        p.push("the tape is one-way; the format describes two-way tapes".to_string());
    }
    let k = m.tape_alphabet.len();
    let digits: Vec<String> = (0..k).map(|s| s.to_string()).collect();
    if k == 0 || k > MAX_SYMBOLS || m.tape_alphabet != digits {
        p.push(format!(
            "the tape alphabet {:?} is not \"0\", \"1\", ... (at most {MAX_SYMBOLS})",
            m.tape_alphabet
        ));
    }
    if m.blank != 0 {
        p.push("the blank must be the first symbol \"0\"".to_string());
    }
    if k > 0 && m.input_alphabet.as_slice() != &m.tape_alphabet[1..] {
        p.push(format!(
            "the input alphabet {:?} is not every non-blank symbol in order",
            m.input_alphabet
        ));
    }
    if !m.accept.is_empty() || !m.reject.is_empty() {
        p.push("the format has no accept or reject states".to_string());
    }
    let n = m.states.len().saturating_sub(1);
    let mut names: Vec<String> = (0..n).map(|i| bb_state_name(i, n)).collect();
    names.push("Z".to_string());
    if n == 0 || n > MAX_STATES || m.states != names {
        p.push(format!(
            "the states {:?} are not A, B, ... (at most {MAX_STATES}) followed by the halt state Z",
            m.states
        ));
    }
    if m.halt != [n] {
        p.push("the only stopping state must be the last state, Z (halt)".to_string());
    }
    if m.start != 0 {
        p.push("the start state must be the first state, A".to_string());
    }
    p
}

/// Why the transition table of `m` (whose header is fine) cannot be written.
fn delta_problems(m: &TuringMachine) -> Vec<String> {
    let mut p = Vec::new();
    let n = m.states.len() - 1;
    if m.delta.len() != n + 1 || m.delta.iter().any(|row| row.len() != m.tape_alphabet.len()) {
        return vec!["the transition table does not match the states and symbols".to_string()];
    }
    for q in 0..n {
        for (r, t) in m.delta[q].iter().enumerate() {
            match t {
                None => p.push(format!(
                    "no transition for ({}, {r}): the format cannot express a missing (rejecting) transition",
                    m.states[q]
                )),
                Some(t) if t.mv == Move::N && !(t.next == n && t.write == r) => p.push(format!(
                    "transition ({}, {r}) does not move; only the halting `---` (write the symbol read, stay) may",
                    m.states[q]
                )),
                Some(_) => {}
            }
        }
    }
    if m.delta[n].iter().any(|t| t.is_some()) {
        p.push("the halt state Z has transitions".to_string());
    }
    p
}

/// Text of one transition of a machine in text shape; `halt` is the index of `Z`.
fn format_cell(t: &Transition, read: usize, halt: usize) -> String {
    if t.next == halt && t.mv == Move::N && t.write == read {
        return "---".to_string();
    }
    let mv = if t.mv == Move::L { 'L' } else { 'R' };
    let next = if t.next == halt {
        "Z".to_string()
    } else {
        bb_state_name(t.next, halt)
    };
    format!("{}{mv}{next}", t.write)
}

impl TuringMachine {
    /// Parses the busy-beaver text format of bbchallenge.org (see the module docs), after
    /// trimming surrounding whitespace. Malformed text gives `SimError::InvalidInput` listing
    /// every problem with its row (1-based), column (1-based, within the row) and the
    /// offending characters.
    pub fn parse(text: &str) -> SimResult<TuringMachine> {
        let text = text.trim();
        if text.is_empty() {
            return Err(SimError::invalid_input(
                "empty machine text; expected rows like \"1RB1LB_1LA1RZ\"",
            ));
        }
        let rows: Vec<Vec<char>> = text.split('_').map(|r| r.chars().collect()).collect();
        let (n_rows, n_syms) = (rows.len(), rows[0].len() / 3);
        let mut p = Vec::new();
        check_rows(&rows, n_syms, &mut p);
        let mut delta = vec![vec![None; n_syms]; n_rows + 1];
        for (r, row) in rows.iter().enumerate() {
            for (j, cell) in row.chunks_exact(3).enumerate() {
                let t = parse_cell(cell, r, j, n_rows, n_syms, &mut p);
                if j < n_syms {
                    delta[r][j] = t;
                }
            }
        }
        if !p.is_empty() {
            return Err(SimError::InvalidInput(p));
        }
        let mut states: Vec<String> = (0..n_rows).map(|i| bb_state_name(i, n_rows)).collect();
        states.push("Z".to_string());
        let tape_alphabet: Vec<String> = (0..n_syms).map(|s| s.to_string()).collect();
        Ok(TuringMachine {
            states,
            input_alphabet: tape_alphabet[1..].to_vec(),
            tape_alphabet,
            blank: 0,
            delta,
            start: 0,
            accept: vec![],
            reject: vec![],
            halt: vec![n_rows],
            tape: TapeKind::TwoWay,
        })
    }

    /// Writes the machine in the busy-beaver text format; `parse(format(m)) == m`. Halting
    /// transitions are written with `Z`, or `---` when they keep the symbol and do not move.
    /// Machines not of the parsed shape (one-way tape, accept/reject states, other names,
    /// missing transitions, non-halting `N` moves, ...) give `SimError::InvalidInput` with
    /// every reason.
    pub fn format(&self) -> SimResult<String> {
        let mut p = header_problems(self);
        if p.is_empty() {
            p = delta_problems(self);
        }
        if !p.is_empty() {
            let p = p
                .into_iter()
                .map(|m| format!("not expressible in the busy-beaver text format: {m}"));
            return Err(SimError::InvalidInput(p.collect()));
        }
        let halt = self.states.len() - 1;
        let rows: Vec<String> = (0..halt)
            .map(|q| {
                let row = self.delta[q].iter().enumerate();
                row.map(|(r, t)| format_cell(t.as_ref().unwrap(), r, halt))
                    .collect()
            })
            .collect();
        Ok(rows.join("_"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::tm::Status;
    use crate::machine::tm_builtins::{builtin, builtin_names};

    fn problems(text: &str) -> Vec<String> {
        match TuringMachine::parse(text) {
            Err(SimError::InvalidInput(p)) => p,
            other => panic!("{text:?}: expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn parses_bb2() {
        let m = TuringMachine::parse("  1RB1LB_1LA1RZ\n").unwrap();
        assert_eq!(m.states, ["A", "B", "Z"]);
        assert_eq!(
            (m.tape_alphabet.clone(), m.input_alphabet.clone(), m.blank),
            (vec!["0".to_string(), "1".into()], vec!["1".to_string()], 0)
        );
        assert_eq!(
            (
                m.start,
                m.halt.clone(),
                m.accept.is_empty(),
                m.reject.is_empty()
            ),
            (0, vec![2], true, true)
        );
        assert_eq!(m.tape, TapeKind::TwoWay);
        assert_eq!(
            m.delta[1][1],
            Some(Transition {
                next: 2,
                write: 1,
                mv: Move::R
            })
        );
        assert_eq!(m.delta[2], vec![None, None]);
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn halting_transitions_count_a_step() {
        let m = TuringMachine::parse("---").unwrap();
        let r = m.run(&[], 10);
        assert_eq!(
            (r.steps, r.status, r.accepted, r.head, r.tape.clone()),
            (1, Status::Halted, None, 0, vec![0])
        );
        let r = TuringMachine::parse("1LZ1LZ").unwrap().run(&[], 10);
        assert_eq!(
            (r.steps, r.status, r.head, r.offset, r.tape.clone()),
            (1, Status::Halted, -1, -1, vec![0, 1])
        );
    }

    #[test]
    fn any_letter_past_the_last_row_halts() {
        let z = TuringMachine::parse("1RB1LB_1LA1RZ").unwrap();
        assert_eq!(TuringMachine::parse("1RB1LB_1LA1RH").unwrap(), z);
        assert_eq!(TuringMachine::parse("1RB1LB_1LA1RC").unwrap(), z);
        // With 8 states, H is the eighth state.
        let m = TuringMachine::parse("1RH1RZ_1RA1RA_1RA1RA_1RA1RA_1RA1RA_1RA1RA_1RA1RA_1RZ1RZ")
            .unwrap();
        assert_eq!(m.delta[0][0].unwrap().next, 7);
        assert_eq!(
            m.format().unwrap(),
            "1RH1RZ_1RA1RA_1RA1RA_1RA1RA_1RA1RA_1RA1RA_1RA1RA_1RZ1RZ"
        );
    }

    #[test]
    fn malformed_texts_name_the_position() {
        let cases: &[(&str, &[&str])] = &[
            ("", &["empty"]),
            ("   ", &["empty"]),
            ("1RB1LB_1LA1XZ", &["row 2, column 5", "'X'", "L or R"]),
            ("1RB9LB_1LA1RZ", &["row 1, column 4", "'9'", "0..1"]),
            ("1Rb1LB_1LA1RZ", &["row 1, column 3", "'b'", "next state"]),
            (
                "1RB1L_1LA1RZ",
                &[
                    "row 1, column 4",
                    "incomplete transition \"1L\"",
                    "5 characters",
                ],
            ),
            (
                "1RB1LB_1LA",
                &["row 2, column 1", "1 transitions, but row 1 has 2"],
            ),
            ("1RB1LB__1LA1RZ", &["row 2, column 1", "empty row"]),
            ("1RB1LB_", &["row 2, column 1", "empty row"]),
            ("1RB 1LB_1LA1RZ", &["row 1, column 4", "' '"]),
            ("1RB-R-_1LA1RZ", &["row 1, column 4", "'-'", "---"]),
        ];
        for (text, needles) in cases {
            let p = problems(text);
            let all = p.join("\n");
            for n in *needles {
                assert!(all.contains(n), "{text:?}: missing {n:?} in {p:#?}");
            }
        }
        // Several problems at once, each with its own position.
        let p = problems("1XB1Lq_1LA9RZ");
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(
            p[0].starts_with("row 1, column 2")
                && p[1].starts_with("row 1, column 6")
                && p[2].starts_with("row 2, column 4"),
            "{p:#?}"
        );
        let p = problems(&vec!["1RA"; 26].join("_"));
        assert!(p[0].contains("26 rows"), "{p:#?}");
    }

    #[test]
    fn round_trip_builtins_and_random_machines() {
        for name in ["bb2", "bb3", "bb4", "bb5"] {
            let m = builtin(name).unwrap();
            let text = m.format().unwrap();
            assert_eq!(TuringMachine::parse(&text).unwrap(), m, "{name}");
            assert_eq!(TuringMachine::parse(&text).unwrap().format().unwrap(), text);
        }
        for seed in 0..200u64 {
            let m = TuringMachine::random(1 + (seed % 7) as usize, 2 + (seed % 4) as usize, seed);
            let text = m.format().unwrap();
            assert_eq!(
                TuringMachine::parse(&text).unwrap(),
                m,
                "seed {seed}: {text}"
            );
        }
        let big = TuringMachine::random(25, 10, 3);
        assert_eq!(TuringMachine::parse(&big.format().unwrap()).unwrap(), big);
    }

    #[test]
    fn format_refuses_other_shapes_with_reasons() {
        for name in builtin_names().iter().filter(|n| !n.starts_with("bb")) {
            let Err(SimError::InvalidInput(p)) = builtin(name).unwrap().format() else {
                panic!("{name}")
            };
            assert!(
                !p.is_empty() && p.iter().all(|m| m.starts_with("not expressible")),
                "{p:#?}"
            );
        }
        let mut m = builtin("bb2").unwrap();
        m.delta[0][1] = None;
        m.delta[1][0] = Some(Transition {
            next: 0,
            write: 1,
            mv: Move::N,
        });
        let Err(SimError::InvalidInput(p)) = m.format() else {
            panic!()
        };
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(p[0].contains("(A, 1)") && p[1].contains("(B, 0)"), "{p:#?}");
        let mut one_way = builtin("bb2").unwrap();
        one_way.tape = TapeKind::OneWay;
        assert!(one_way.format().is_err());
    }
}
