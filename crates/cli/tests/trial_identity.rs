//! `wirerate trial` and a one-case plan with the same settings send the same trial on a real
//! lab (issue 18, item 2; the pure side is `src/cmd/trial_identity.rs`). Each front door runs
//! once, plain one way, both ways, one way with 16 flows and ToS 184 (a plan's `flows` and
//! `tos` dimensions, `--src-ports 16 --tos 184`) and with the IMIX (`frame-size = ["imix"]`,
//! `--size imix`), on the lab's kernel DUT: the plan through
//! `wirerate run` (its own lab, named `tid1`, built and removed by the run), then
//! `wirerate trial --lab tid1 --json` on a lab of the same name and topology.
//!
//! Identical is the deterministic part of the record: the plan's `engine.streams` and the
//! trial's `sent` are equal field by field (stream ids, ports, encapsulation, reference sizes
//! and lengths as sent, addresses and UDP ports, 100 % and rate in frames/s, duration, flows,
//! bursts, ToS), and so is the backend that ran it. Each stream's rate is also the one the
//! engine reported it was asked for (`tx.intended_pps`). What was measured (frames sent in
//! the time, received, latency) differs run to run and is not compared.
//!
//! Root is needed (namespaces, AF_PACKET, XDP). Without it the test prints `SKIP: …`; with
//! `WIRERATE_REQUIRE_ROOT=1` (CI) it fails instead.

use std::path::Path;
use std::process::Command;

use bench::results::SentStream;

mod common_run;
use common_run::{is_root, plan_file, run, run_ok, run_plan_ok, trials};

const LAB: &str = "tid1";

/// Whether the test cannot run here: prints the reason, or fails under
/// `WIRERATE_REQUIRE_ROOT=1`, where every test must run.
fn skip() -> bool {
    if is_root() {
        return false;
    }
    let why = "trial identity on a lab needs root (network namespaces, AF_PACKET)";
    assert!(
        std::env::var("WIRERATE_REQUIRE_ROOT").as_deref() != Ok("1"),
        "WIRERATE_REQUIRE_ROOT=1: {why}"
    );
    println!("SKIP: {why}");
    true
}

/// A one-case plan on lab `tid1`: one trial of 1 s at 5 % of 1 Gb/s.
fn plan(matrix: &str) -> String {
    format!(
        r#"name = "identity"
[topology]
kind = "lab"
lab = "forward"
name = "{LAB}"
speed = "1G"
[dut]
kind = "lab"
[dut.profiles.forward]
[run]
trial-duration = "1s"
max-load = 0.05
settle = "0s"
profile-settle = "0s"
[methodology.forwarding-rate]
trials = 1
[[matrix]]
protocol = ["udp"]
ip = [4]
methodologies = ["forwarding-rate"]
{matrix}
"#
    )
}

/// The plan's record: (backend, what each stream sent).
fn plan_side(dir: &Path, matrix: &str) -> (String, Vec<SentStream>) {
    let out = dir.join("run");
    run_plan_ok(&plan_file(dir, &plan(matrix)), &out);
    // One trial measured; a busy machine may add superseded ones before it (the tester fell
    // behind and the runner measured the same request again: the same streams, kept apart).
    let all = trials(&out);
    let t: Vec<_> = all.iter().filter(|t| !t.superseded).collect();
    assert_eq!(t.len(), 1, "one trial measured: {all:?}");
    assert!(
        all.iter().all(|s| s.key == t[0].key),
        "superseded records are of the same request: {all:?}"
    );
    let engine = t[0].engine.clone().expect("a UDP trial's engine facts");
    (engine.backend, engine.streams)
}

/// `wirerate trial --lab tid1 ARGS --json` with a plan's drain and backend: (backend, what
/// each stream sent); every stream's intended rate is the one its record says.
fn trial_side(args: &[&str]) -> (String, Vec<SentStream>) {
    let mut argv = vec!["trial", "--lab", LAB, "--json"];
    argv.extend_from_slice(&["--drain", "0.1", "--backend", "auto", "--link-speed", "1G"]);
    argv.extend_from_slice(args);
    let j: serde_json::Value = serde_json::from_str(&run_ok(&argv)).expect("trial JSON");
    let sent: Vec<SentStream> = serde_json::from_value(j["sent"].clone()).expect("`sent`");
    let streams = j["streams"].as_array().expect("streams");
    assert_eq!(streams.len(), sent.len());
    for (s, r) in sent.iter().zip(streams) {
        assert_eq!(r["stream_id"].as_u64(), Some(u64::from(s.stream_id)));
        assert_eq!(r["tx"]["intended_pps"].as_f64(), Some(s.pps.0), "{r}");
    }
    (j["backend"].as_str().unwrap_or_default().to_string(), sent)
}

fn lab_up() {
    run_ok(&["lab", "up", "--name", LAB]);
}

fn lab_down() {
    let _ = run(&["lab", "down", "--name", LAB]);
}

#[test]
fn trial_and_a_one_case_plan_send_the_same_trial_on_a_lab() {
    if skip() {
        return;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        panic!("iproute2 missing (scripts/install-deps.sh)");
    }
    lab_down();
    let d = tempfile::tempdir().unwrap();
    for (name, matrix, flags) in [
        ("plain", "frame-size = [128]", &["--size", "128"][..]),
        (
            "both ways",
            "frame-size = [512]\nbidirectional = true",
            &["--size", "512", "--direction", "both"][..],
        ),
        (
            "flows and tos",
            "frame-size = [256]\nflows = [16]\ntos = [184]",
            &["--size", "256", "--src-ports", "16", "--tos", "184"][..],
        ),
        ("imix", "frame-size = [\"imix\"]", &["--size", "imix"][..]),
    ] {
        let dir = d.path().join(name.replace(' ', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        let (plan_backend, plan_sent) = plan_side(&dir, matrix);
        lab_up();
        let trial = std::panic::catch_unwind(|| {
            trial_side(&[flags, &["--rate", "5%", "--duration", "1"][..]].concat())
        });
        lab_down();
        let (trial_backend, trial_sent) = trial.unwrap_or_else(|e| std::panic::resume_unwind(e));
        assert_eq!(plan_backend, trial_backend, "{name}: the backend");
        assert_eq!(plan_sent, trial_sent, "{name}: what each stream sent");
        let directions = if name == "both ways" { 2 } else { 1 };
        assert_eq!(plan_sent.len(), directions, "{name}");
        // 5 % of the path's line rate at 1 Gb/s, from both front doors (the IMIX's: its
        // weighted mean frame on the wire).
        let s = &plan_sent[0];
        let weight: u32 = s.weights.iter().sum();
        let size = s
            .sizes
            .iter()
            .zip(&s.weights)
            .map(|(b, w)| f64::from(*b) * f64::from(*w))
            .sum::<f64>()
            / f64::from(weight);
        let max = 1e9 / ((size + 20.0) * 8.0);
        assert!((plan_sent[0].max_pps.0 - max).abs() < 1e-9 * max, "{name}");
        assert!(
            (plan_sent[0].pps.0 - 0.05 * max).abs() < 1e-9 * max,
            "{name}"
        );
        if name == "flows and tos" {
            assert_eq!((plan_sent[0].flows, plan_sent[0].tos), ([1, 1, 16, 1], 184));
        }
    }
}
