//! `wirerate linerate` from the outside: JSON figures against the DESIGN.md §4 formula
//! (computed here), and the one-line, exit-2 errors for bad input.

use std::process::{Command, Output};

const WIRERATE: &str = env!("CARGO_BIN_EXE_wirerate");

fn run(args: &[&str]) -> Output {
    Command::new(WIRERATE)
        .args(args)
        .output()
        .expect("run wirerate")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs()
}

#[test]
fn json_figures_follow_the_formula() {
    // (encapsulation, bytes it adds on the wan link)
    let encaps = [
        ("ipv4", 0usize),
        ("vlan", 4),
        ("qinq", 8),
        ("mpls:2", 8),
        ("pppoe", 8),
        ("pppoe+vlan", 12),
        ("dslite", 40),
    ];
    let speeds = [
        ("10M", 10e6),
        ("1G", 1e9),
        ("2.5G", 2.5e9),
        ("100G", 100e9),
        ("400G", 400e9),
    ];
    for (encap, extra) in encaps {
        for (speed_text, speed) in speeds {
            for bidir in [false, true] {
                let mut args = vec![
                    "linerate",
                    "--json",
                    "--speed",
                    speed_text,
                    "--encap",
                    encap,
                    "--sizes",
                    "64,128,1024,1280",
                ];
                if bidir {
                    args.push("--bidirectional");
                }
                let v = json(&args);
                for row in v["rows"].as_array().unwrap() {
                    let size = row["size"]["bytes"].as_u64().unwrap() as usize;
                    let pps = speed / ((size + extra + 20) * 8) as f64;
                    let ctx = format!("{encap} {speed_text} {size} bidir={bidir}");
                    assert!(close(row["max_pps"].as_f64().unwrap(), pps), "{ctx}");
                    let dirs = if bidir { 2.0 } else { 1.0 };
                    assert!(
                        close(row["total_pps"].as_f64().unwrap(), dirs * pps),
                        "{ctx}"
                    );
                    // Totals are at the reference link: plain frame bytes.
                    assert!(
                        close(
                            row["total_l2"].as_f64().unwrap(),
                            dirs * pps * (size * 8) as f64
                        ),
                        "{ctx}"
                    );
                    assert!(
                        close(
                            row["total_l1"].as_f64().unwrap(),
                            dirs * pps * ((size + 20) * 8) as f64
                        ),
                        "{ctx}"
                    );
                    let links = row["links"].as_array().unwrap();
                    let bottleneck = &links[row["bottleneck"].as_u64().unwrap() as usize];
                    if extra > 0 {
                        assert_eq!(links.len(), 2, "{ctx}");
                        assert_eq!(bottleneck["link"], "wan", "{ctx}");
                        assert_eq!(
                            links[1]["frames"][0].as_u64().unwrap() as usize,
                            size + extra,
                            "{ctx}"
                        );
                    } else {
                        assert_eq!(links.len(), 1, "{ctx}");
                    }
                    // The bottleneck runs at line rate at L1.
                    assert!(close(bottleneck["l1"].as_f64().unwrap(), speed), "{ctx}");
                }
            }
        }
    }
}

#[test]
fn table_names_the_bottleneck_and_fragmentation() {
    let out = run(&["linerate", "--encap", "pppoe", "--sizes", "64,1518"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("bottleneck"), "{text}");
    assert!(
        text.contains("1518+64"),
        "1500-byte IPv4 in PPPoE is two frames: {text}"
    );
    assert!(text.contains("fragmented"), "{text}");
}

#[test]
fn default_sizes_are_rfc2544_plus_imix() {
    let v = json(&["linerate", "--json"]);
    let sizes: Vec<String> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["size"]["bytes"]
                .as_u64()
                .map(|b| b.to_string())
                .unwrap_or_else(|| r["size"]["kind"].as_str().unwrap().into())
        })
        .collect();
    assert_eq!(
        sizes,
        ["64", "128", "256", "512", "1024", "1280", "1518", "imix"]
    );
}

/// Bad input: exit status 2 and exactly one line on stderr that says what would work.
fn refused(args: &[&str], hint: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(hint), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    refused(&["linerate", "--encap", "gre"], "valid parts");
    refused(&["linerate", "--encap", "vlan+qinq"], "twice");
    refused(
        &["linerate", "--sizes", "63"],
        "smallest that works is 64 B",
    );
    refused(
        &["linerate", "--encap", "ipv6", "--sizes", "64"],
        "smallest that works is 82 B",
    );
    refused(
        &["linerate", "--encap", "pppoe", "--sizes", "60"],
        "smallest that works is 64 B",
    );
    refused(&["linerate", "--speed", "fast"], "not a number");
    refused(&["linerate", "--speed", "1T"], "outside 10M..400G");
    refused(&["linerate", "--sizes", "64-1518:0"], "STEP");
    refused(
        &["craft", "--encap", "gre", "-o", "/dev/null"],
        "valid parts",
    );
    refused(
        &["craft", "--size", "40", "-o", "/dev/null"],
        "smallest that works is 64 B",
    );
}

#[test]
fn version_help_and_completions_come_from_one_definition() {
    let v = run(&["--version"]);
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("wirerate "));
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    for sub in ["linerate", "craft", "lab", "trial", "bench", "completions"] {
        assert!(help.contains(sub), "--help lists {sub}");
    }
    let bash = String::from_utf8(run(&["completions", "bash"]).stdout).unwrap();
    assert!(
        bash.contains("linerate") && bash.contains("--bidirectional"),
        "bash completion covers flags"
    );
}
