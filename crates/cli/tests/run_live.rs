//! `wirerate run` on the real lab (issue 5). Root is needed; without it each test prints
//! `SKIP: …`. Every test uses its own lab name and run directory; they are serialised because
//! they measure.
//!
//! - `tbf_ground_truth`: the DUT's egress is rate-limited with tc tbf to 20 Mbit/s; the RFC 2544
//!   throughput search must find that rate within ±2 %.
//! - `iperf3_figures_match_iperf3`: the TCP figures in `trials.jsonl` are what iperf3's own JSON
//!   says, the raw JSON is kept per trial, and the SYN's MSS seen at the far port shows the
//!   DUT's MSS clamp (profile `mss-clamp-1200`).
//! - `kill9_then_resume`: `kill -9` in the middle of a search, then `--resume`: every trial recorded
//!   before the kill is still there, no trial is measured twice, and the run completes.

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bench::results::{read_records, Record};

mod common_run;
use common_run::{has_tool, is_root, plan_file, run, run_ok, run_plan_ok, trials, WIRERATE};

static SERIAL: Mutex<()> = Mutex::new(());

fn skip() -> bool {
    if !is_root() {
        println!("SKIP: run tests need root (network namespaces, AF_PACKET)");
        return true;
    }
    for tool in ["iperf3", "tcpdump", "tc"] {
        if !has_tool(tool) {
            println!("SKIP: {tool} not installed (scripts/install-deps.sh)");
            return true;
        }
    }
    false
}

/// Ground truth: tbf at 20 Mbit/s on the DUT's egress towards port B.
///
/// Conversion: tbf counts each packet's length as the kernel sees it on egress, i.e. the L2
/// frame with its 14-byte Ethernet header and without the 4-byte FCS. A 1518-byte test frame
/// (with FCS) is 1514 bytes to tbf, so the rate limit in frames/s is 20e6 / (1514 × 8) =
/// 1651.3 fps. The search's result is a fraction of the L1 line rate of the plan's 100 Mbit/s
/// reference link at 1518 B (100e6 / ((1518 + 20) × 8) = 8127.4 fps); result fps = fraction ×
/// 8127.4, compared with 1651.3 fps.
///
/// tbf's bucket (32 kB) and queue (`limit 32kb`) let up to 64 kB more through a trial than the
/// rate: 512 kbit, at most +0.85 % over a 3 s trial at 20 Mbit/s. Resolution 0.5 %. (A smaller
/// bucket and queue drop the short catch-up bursts of a sender on a shared CPU below the rate.)
///
/// On a shared machine a trial's achieved rate now and then falls more than the 1.5 % tester
/// tolerance short; the search then stops tester-limited (correctly: no DUT figure). The test
/// retries such a run up to four times; it never accepts a figure from a tester-limited trial.
#[test]
#[ignore = "flaky on 2 shared vCPUs: while the DUT's tbf queue holds frames the paced sender falls \
            behind (DESIGN.md §8 back-pressure), so every attempt can end tester-limited (all 4 did \
            in a CI dry run); run with: cargo test --release -p cli --test run_live tbf -- --ignored"]
fn tbf_ground_truth() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "tbf"
[topology]
kind = "lab"
lab = "forward"
name = "h8tbf"
speed = "100M"
[dut]
kind = "lab"
[dut.profiles.shaped]
lab = "forward"
setup = ["tc qdisc replace dev wr-dut-b root tbf rate 20mbit burst 32kb limit 32kb"]
teardown = ["tc qdisc del dev wr-dut-b root"]
stats-after = ["tc -s qdisc show dev wr-dut-b"]
[run]
trial-duration = "3s"
settle = "300ms"
profile-settle = "0s"
min-load = 0.17
max-load = 0.25
tester-tolerance = 0.015
[methodology.rfc2544-throughput]
loss-tolerance = 0.0
resolution = 0.005
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [1518]
methodologies = ["rfc2544-throughput"]
"#,
    );
    let mut attempt = 0;
    let (out, done, stdout) = loop {
        attempt += 1;
        let out = d.path().join(format!("run{attempt}"));
        let stdout = run_plan_ok(&plan, &out);
        let records = read_records(&out.join("trials.jsonl")).unwrap().records;
        let done = records
            .iter()
            .find_map(|r| match r {
                Record::Done(d) => d.result.clone(),
                _ => None,
            })
            .expect("a done record");
        if done.throughput(0).is_some() || attempt == 4 {
            break (out, done, stdout);
        }
        println!("attempt {attempt}: {} — retrying\n{stdout}", done.status);
    };
    let fraction = done
        .throughput(0)
        .unwrap_or_else(|| panic!("no complete throughput result in 4 attempts (every run tester-limited: the machine is too loaded to pace 2 kpps evenly)\n{stdout}"))
        .0;
    let line_fps = 100e6 / ((1518.0 + 20.0) * 8.0);
    let found_fps = fraction * line_fps;
    let tbf_fps = 20e6 / (1514.0 * 8.0);
    let err = (found_fps - tbf_fps) / tbf_fps;
    println!(
        "tbf ground truth: found {found_fps:.1} fps ({:.3} Mbit/s as tbf counts), tbf {tbf_fps:.1} fps (20 Mbit/s): error {:+.2} % in {} trials",
        found_fps * 1514.0 * 8.0 / 1e6,
        err * 100.0,
        done.trials
    );
    assert!(err.abs() <= 0.02, "error {:.2} %\n{stdout}", err * 100.0);
    // The qdisc really was there (stats-after hook output kept).
    let hooks = std::fs::read_to_string(out.join("hooks.jsonl")).unwrap();
    assert!(hooks.contains("qdisc tbf"), "{hooks}");
}

#[test]
fn iperf3_figures_match_iperf3() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "tcp"
[topology]
kind = "lab"
lab = "forward"
name = "h8tcp"
[dut]
kind = "lab"
[dut.profiles.forward]
[dut.profiles.mss-clamp-1200]
[run]
trial-duration = "1s"
settle = "100ms"
profile-settle = "0s"
[[matrix]]
protocol = ["tcp"]
ip = [4, 6]
sessions = [2]
methodologies = ["iperf3"]
"#,
    );
    let out = d.path().join("run");
    let stdout = run_plan_ok(&plan, &out);
    let ts = trials(&out);
    assert_eq!(ts.len(), 4, "{stdout}");
    for t in &ts {
        let tcp = t.tcp.as_ref().expect("tcp figures");
        let raw = t.iperf3.as_ref().expect("raw iperf3 JSON in the record");
        // Raw JSON kept as a file too, identical to the record's.
        let name: String = t
            .key
            .case_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let file: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("iperf3").join(format!("{name}-r0.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(&file, raw);
        // What iperf3 itself reported as received, and its retransmits and CPU figures.
        let end = &raw["end"];
        let received = end["sum_received"]["bits_per_second"].as_f64().unwrap();
        assert_eq!(tcp.l4_bps, received, "{}", t.key.case_id);
        assert_eq!(
            tcp.retransmits,
            end["sum_sent"]["retransmits"].as_u64(),
            "{}",
            t.key.case_id
        );
        assert_eq!(
            tcp.cpu_local,
            end["cpu_utilization_percent"]["host_total"]
                .as_f64()
                .unwrap()
        );
        assert!(tcp.l2_bps > tcp.l4_bps && tcp.l1_bps > tcp.l2_bps);
        // Control connection + 2 data connections seen at the far port, with the MSS the DUT
        // let through: clamped to 1200 by mss-clamp-1200, the interface's own otherwise.
        assert_eq!(tcp.syn_mss.len(), 3, "{}: {:?}", t.key.case_id, tcp.syn_mss);
        let want = if t.key.case_id.starts_with("mss-clamp-1200") {
            1200
        } else if t.key.case_id.contains("tcp6") {
            1440
        } else {
            1460
        };
        assert!(
            tcp.syn_mss.iter().all(|m| *m == want),
            "{}: SYN MSS {:?}, want {want}",
            t.key.case_id,
            tcp.syn_mss
        );
        println!(
            "{}: {:.3} Gb/s L4 (iperf3 said {:.3}), SYN MSS {:?}",
            t.key.case_id,
            tcp.l4_bps / 1e9,
            received / 1e9,
            tcp.syn_mss
        );
    }
}

#[test]
fn kill9_then_resume() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // Four repetitions of a binary search against a tbf-shaped DUT (several trials each), 300 ms
    // trials: the kill lands in the middle of a search, whose recorded trials must be replayed.
    // Four, not two: a repetition whose first trial is tester-limited stops after it, and with
    // two such the run could end before its third trial, leaving nothing to kill.
    let plan = plan_file(
        d.path(),
        r#"name = "k9"
[topology]
kind = "lab"
lab = "forward"
name = "h8k9"
speed = "100M"
[dut]
kind = "lab"
[dut.profiles.shaped]
lab = "forward"
setup = ["tc qdisc replace dev wr-dut-b root tbf rate 20mbit burst 16kb limit 16kb"]
[run]
repetitions = 4
trial-duration = "300ms"
settle = "50ms"
profile-settle = "0s"
min-load = 0.10
max-load = 0.30
tester-tolerance = 0.05
[methodology.rfc2544-throughput]
resolution = 0.02
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [1518]
methodologies = ["rfc2544-throughput"]
"#,
    );
    let out = d.path().join("run");
    let mut child = Command::new(WIRERATE)
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(d.path().join("first.stdout")).unwrap())
        .stderr(std::fs::File::create(d.path().join("first.stderr")).unwrap())
        .spawn()
        .unwrap();
    // What the first run printed and recorded, for a failure message.
    let first_run = || {
        let read = |f: &str| std::fs::read_to_string(d.path().join(f)).unwrap_or_default();
        format!(
            "stdout:\n{}\nstderr:\n{}\ntrials.jsonl:\n{}",
            read("first.stdout"),
            read("first.stderr"),
            std::fs::read_to_string(out.join("trials.jsonl")).unwrap_or_default()
        )
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = if out.join("trials.jsonl").exists() {
            trials(&out).len()
        } else {
            0
        };
        if n >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no 3 trials within 60 s\n{}",
            first_run()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended early\n{}",
            first_run()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: no handler, no cleanup.
    child.kill().unwrap();
    child.wait().unwrap();
    let before = trials(&out);
    assert!(before.len() >= 3);
    let stdout = run_ok(&[
        "run",
        plan.to_str().unwrap(),
        "--resume",
        out.to_str().unwrap(),
    ]);
    let after = trials(&out);
    // Nothing lost: the records from before the kill are still the first ones, unchanged.
    assert_eq!(&after[..before.len()], &before[..]);
    // Nothing repeated: every trial key exactly once.
    let mut keys: Vec<_> = after.iter().map(|t| t.key.clone()).collect();
    keys.sort();
    let n = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), n, "a trial was measured twice");
    // And the run is complete: every repetition done, each search's trial indices 0..k
    // contiguous.
    let records = read_records(&out.join("trials.jsonl")).unwrap().records;
    let done = records
        .iter()
        .filter(|r| matches!(r, Record::Done(_)))
        .count();
    assert_eq!(done, 4, "{stdout}");
    for rep in 0..4 {
        let idx: Vec<u32> = after
            .iter()
            .filter(|t| t.key.repetition == rep)
            .map(|t| t.key.index)
            .collect();
        // One trial is enough when it was tester-limited: the search then stops by design.
        let stopped_tester_limited = after
            .iter()
            .any(|t| t.key.repetition == rep && t.tester_limited);
        assert!(
            idx.len() >= 2 || (idx.len() == 1 && stopped_tester_limited),
            "repetition {rep}: {idx:?} (a single trial must be tester-limited)"
        );
        assert_eq!(
            idx,
            (0..idx.len() as u32).collect::<Vec<_>>(),
            "repetition {rep}"
        );
    }
    println!(
        "killed after {} trials; resume added {} (total {n}); stdout of the resumed run:\n{stdout}",
        before.len(),
        after.len() - before.len()
    );
}

/// SIGINT (what Ctrl-C sends) in the middle of a run: exit status 1 with the `--resume` hint,
/// the profile's teardown hook ran, the lab's namespaces are gone, and `--resume` finishes.
#[test]
fn sigint_stops_cleanly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "int"
[topology]
kind = "lab"
lab = "forward"
name = "h8int"
[dut]
kind = "lab"
[dut.profiles.forward]
teardown = ["echo torn-down"]
[run]
repetitions = 6
trial-duration = "500ms"
settle = "50ms"
profile-settle = "0s"
max-load = 0.01
tester-tolerance = 0.05
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [512]
methodologies = ["rfc2544-throughput"]
"#,
    );
    let out = d.path().join("run");
    let child = Command::new(WIRERATE)
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
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !out.join("trials.jsonl").exists() || trials(&out).is_empty() {
        assert!(Instant::now() < deadline, "no trial within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("interrupted") && stderr.contains("--resume"),
        "{stderr}"
    );
    let hooks = std::fs::read_to_string(out.join("hooks.jsonl")).unwrap();
    assert!(
        hooks.contains("torn-down"),
        "teardown hook did not run: {hooks}"
    );
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout);
    assert!(!ns.contains("wr-h8int-"), "lab left behind: {ns}");
    let before = trials(&out);
    assert!(before.len() < 6, "the run was not stopped early");
    let o = run(&[
        "run",
        plan.to_str().unwrap(),
        "--resume",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = trials(&out);
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(after.len(), 6, "one trial per repetition at 1 % load");
}
