//! Helpers shared by the `wirerate run` integration tests (`run_live`, `run_ports`): the
//! binary under test, root detection, the plan file and the trials a run recorded.
//!
//! Each test file compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use bench::results::{read_records, Record, TrialRecord};

pub const WIRERATE: &str = env!("CARGO_BIN_EXE_wirerate");

/// Whether this process runs as root (namespaces, AF_PACKET).
#[allow(unused_imports)] // not every test binary uses it
pub use lab::is_root;

/// Whether `tool` is on the PATH.
pub fn has_tool(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `wirerate ARGS`, with no stdin, to completion.
pub fn run(args: &[&str]) -> Output {
    Command::new(WIRERATE)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `wirerate run PLAN --out OUT` in the background, stdout and stderr piped, no stdin: for
/// tests that act on the network while the run measures.
pub fn spawn_run(plan: &Path, out: &Path) -> std::process::Child {
    Command::new(WIRERATE)
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning wirerate run")
}

/// Waits for a [`spawn_run`] child, killing it and failing the test after `limit`; its output.
pub fn finish_within(mut run: std::process::Child, limit: std::time::Duration) -> Output {
    let end = std::time::Instant::now() + limit;
    while run.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > end {
            let _ = run.kill();
            panic!("the run took more than {} s", limit.as_secs());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    run.wait_with_output().unwrap()
}

/// The trial records of the run in `dir` (its `trials.jsonl`).
pub fn trials(dir: &Path) -> Vec<TrialRecord> {
    read_records(&dir.join("trials.jsonl"))
        .unwrap()
        .records
        .into_iter()
        .filter_map(|r| match r {
            Record::Trial(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Writes `text` to `dir/plan.toml`.
pub fn plan_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// `wirerate ARGS`, which must succeed (else the test fails with its stdout and stderr);
/// returns its stdout.
#[track_caller]
pub fn run_ok(args: &[&str]) -> String {
    let o = run(args);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// `wirerate run PLAN --out OUT`, which must succeed; returns its stdout.
#[track_caller]
pub fn run_plan_ok(plan: &Path, out: &Path) -> String {
    run_ok(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// A lab that is taken down when the test ends, however it ends (a failed assertion too).
#[allow(unused_imports)] // not every test binary uses it
pub use lab::LabGuard;
