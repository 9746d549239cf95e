//! A fuzz-style property test of the plan parser (issue 19): bounded, seeded, on stable Rust.
//! Plans come from the shipped demo plan with random edits (bytes replaced, inserted, lines
//! dropped, duplicated or swapped, values replaced by odd ones), so most cases get deep into
//! the checks instead of stopping at the first TOML syntax error.

use super::*;
use proptest::prelude::*;

fn demo() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lab-demo.toml"
    ))
    .unwrap()
}

/// Values that have broken parsers before: huge, negative, empty, odd units and types.
const ODD: &[&str] = &[
    "\"99999999999h\"",
    "-1",
    "0",
    "1e308",
    "nan",
    "\"\"",
    "[]",
    "{}",
    "\"-oProxyCommand=x\"",
    "\"1e-300pps\"",
    "18446744073709551616",
    "\"é\"",
    "[64, 9018, 0]",
    "true",
];

#[derive(Debug, Clone)]
enum Edit {
    Byte(usize, u8),
    Insert(usize, u8),
    DropLine(usize),
    DupLine(usize),
    SwapLines(usize, usize),
    OddValue(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Byte(i, b)),
        (
            any::<usize>(),
            prop_oneof![Just(b'='), Just(b'['), Just(b'"'), Just(b'\n'), Just(b'.')]
        )
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::DropLine),
        any::<usize>().prop_map(Edit::DupLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        (any::<usize>(), 0..ODD.len()).prop_map(|(l, v)| Edit::OddValue(l, v)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for e in edits {
        let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
        let n = lines.len().max(1);
        match *e {
            Edit::Byte(i, b) if !bytes.is_empty() => {
                let i = i % bytes.len();
                bytes[i] = b;
                continue;
            }
            Edit::Insert(i, b) => {
                let i = i % (bytes.len() + 1);
                bytes.insert(i, b);
                continue;
            }
            Edit::DropLine(l) if !lines.is_empty() => {
                lines.remove(l % n);
            }
            Edit::DupLine(l) if !lines.is_empty() => {
                let line = lines[l % n].clone();
                lines.insert(l % n, line);
            }
            Edit::SwapLines(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
            Edit::OddValue(l, v) => {
                let line = &mut lines[l % n];
                if let Some(eq) = line.iter().position(|b| *b == b'=') {
                    line.truncate(eq + 1);
                    line.extend_from_slice(b" ");
                    line.extend_from_slice(ODD[v].as_bytes());
                }
            }
            _ => continue,
        }
        bytes = lines.join(&b'\n');
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        // Repeatable in CI: the same cases every run.
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5752_0019_0015),
        ..ProptestConfig::default()
    })]

    /// Whatever the plan says: no panic; either a plan whose cases and estimate can be
    /// computed, or errors that each point at a line of the file and say something.
    #[test]
    fn parser_never_panics_and_errors_point_into_the_file(edits in proptest::collection::vec(edit(), 1..6)) {
        let bytes = apply(&demo(), &edits);
        let text = String::from_utf8_lossy(&bytes);
        let lines = text.lines().count().max(1);
        match Plan::parse(&text, "fuzz.toml") {
            Ok(plan) => {
                let cases = plan.cases().unwrap();
                prop_assert!(!cases.is_empty());
                let est = plan.estimate().unwrap();
                prop_assert!(est.seconds.is_finite() && est.seconds >= 0.0);
            }
            Err(errs) => {
                prop_assert!(!errs.0.is_empty());
                for e in &errs.0 {
                    prop_assert!(e.line >= 1 && e.line <= lines + 1, "{e} (of {lines} lines)");
                    prop_assert!(!e.message.trim().is_empty(), "{e}");
                    prop_assert!(e.file == "fuzz.toml");
                }
            }
        }
        // Locating any key never panics either.
        let _ = locate(&text, "dut.profiles.napt.stats-after[0]");
    }
}
