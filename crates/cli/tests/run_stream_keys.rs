//! A plan's stream keys reach the wire: a one-case plan on the built-in lab with
//! `run.src-ports = 16`, `run.random-seed` and `run.tos = 184` (DSCP 46, EF), one forwarding-rate
//! trial of 1 s at 1 % of 1 Gb/s. tcpdump on the DUT's egress towards port B (in the DUT's
//! namespace, so whatever backend receives at port B) captures the test frames, and tshark —
//! an independent dissector — must find exactly 16 distinct UDP source ports, 1024..=1039 as
//! `wirerate trial --src-ports 16` sends them, and the ToS byte 0xb8 on every one of them; the
//! run's own record must say the same and that the DUT forwarded them.
//!
//! Root is needed (namespaces, AF_PACKET, XDP), and tcpdump and tshark. Without root the test
//! prints `SKIP: …`; with `WIRERATE_REQUIRE_ROOT=1` (CI) it fails instead.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common_run;
use common_run::{finish_within, has_tool, is_root, plan_file, run, spawn_run, trials};

/// The lab the run builds and removes (namespaces `wr-skw1-*`).
const LAB: &str = "skw1";

/// Whether the test cannot run here: prints the reason, or fails under
/// `WIRERATE_REQUIRE_ROOT=1`, where every test must run.
fn skip() -> bool {
    let why = if !is_root() {
        "stream keys on the wire need root (network namespaces, AF_PACKET)".to_string()
    } else if let Some(t) = ["tcpdump", "tshark"].into_iter().find(|t| !has_tool(t)) {
        format!("{t} is not installed (scripts/install-deps.sh)")
    } else {
        return false;
    };
    assert!(
        std::env::var("WIRERATE_REQUIRE_ROOT").as_deref() != Ok("1"),
        "WIRERATE_REQUIRE_ROOT=1: {why}"
    );
    println!("SKIP: {why}");
    true
}

fn plan() -> String {
    format!(
        r#"name = "stream-keys"
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
max-load = 0.01
settle = "0s"
# Time for the capture to start between the lab coming up and the trial.
profile-settle = "3s"
src-ports = 16
random-seed = 4814
tos = 184
[methodology.forwarding-rate]
trials = 1
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [128]
methodologies = ["forwarding-rate"]
"#
    )
}

/// A child process killed and reaped when dropped (the capture, if the test fails early).
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// (UDP source port, ToS byte) of every test frame (UDP to port 9) tshark reads in `pcap`.
fn ports_and_tos(pcap: &Path) -> Vec<(u16, u8)> {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args([
            "-Y",
            "udp.dstport == 9",
            "-T",
            "fields",
            "-e",
            "udp.srcport",
            "-e",
            "ip.dsfield",
        ])
        .output()
        .expect("tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut f = l.split('\t');
            let port = f.next().and_then(|p| p.trim().parse().ok());
            let tos = f
                .next()
                .and_then(|t| u8::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok());
            match (port, tos) {
                (Some(p), Some(t)) => (p, t),
                _ => panic!("tshark line `{l}`"),
            }
        })
        .collect()
}

#[test]
fn src_ports_and_tos_from_a_plan_are_on_the_wire() {
    if skip() {
        return;
    }
    let _ = run(&["lab", "down", "--name", LAB]);
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    let pcap = d.path().join("egress.pcap");
    let run = spawn_run(&plan_file(d.path(), &plan()), &out);
    // The DUT's egress towards port B, once the run has built it.
    let dut = format!("wr-{LAB}-dut");
    let end = Instant::now() + Duration::from_secs(30);
    while !Command::new("ip")
        .args([
            "netns", "exec", &dut, "ip", "link", "show", "wr-dut-b", "up",
        ])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    {
        assert!(Instant::now() < end, "the run built no lab within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dump = Proc(
        Command::new("ip")
            .args([
                "netns", "exec", &dut, "tcpdump", "-i", "wr-dut-b", "-U", "-n", "-s", "96", "-w",
            ])
            .arg(&pcap)
            .arg("udp and dst port 9")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tcpdump"),
    );
    let output = finish_within(run, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // tcpdump writes the last packets on SIGINT.
    let _ = Command::new("kill")
        .args(["-INT", &dump.0.id().to_string()])
        .status();
    drop(dump);
    // One trial, and those a tester stall on a loaded machine had the runner measure again
    // (`superseded`): every one sent the same streams, the capture saw them all.
    let t = trials(&out);
    assert_eq!(
        t.iter().filter(|r| !r.superseded).count(),
        1,
        "one trial: {t:?}"
    );
    let t: Vec<_> = t.into_iter().rev().collect();
    for r in &t {
        let e = r.engine.as_ref().expect("a UDP trial's engine facts");
        assert_eq!(
            (
                e.streams[0].flows,
                e.streams[0].random_seed,
                e.streams[0].tos
            ),
            ([1, 1, 16, 1], Some(4814), 184)
        );
    }
    let engine = t[0].engine.clone().expect("a UDP trial's engine facts");
    assert_eq!(engine.streams[0].flows, [1, 1, 16, 1]);
    assert_eq!(engine.streams[0].random_seed, Some(4814));
    assert_eq!(engine.streams[0].tos, 184);
    let received: u64 = t.iter().map(|r| r.outcome.received).sum();
    assert!(received > 1000, "the DUT forwarded the frames: {received}");

    let frames = ports_and_tos(&pcap);
    let ports: BTreeSet<u16> = frames.iter().map(|f| f.0).collect();
    let tos: BTreeSet<u8> = frames.iter().map(|f| f.1).collect();
    println!(
        "tshark: {} test frames on the DUT's egress, source ports {:?}, ToS {:x?}; the run received {received}",
        frames.len(),
        ports,
        tos
    );
    // The capture is a cross-check of the fields, not a counter: tcpdump on a loaded machine
    // may start late or drop some (8,094 of 8,446 in one run).
    assert!(frames.len() >= 1000, "{} captured", frames.len());
    assert_eq!(ports, (1024..1040).collect::<BTreeSet<u16>>());
    assert_eq!(tos, BTreeSet::from([0xb8]));
    // Pseudorandom (RFC 4814), not stepped: stepping would make nearly every next frame's port
    // the one after (mod 16), a seeded random choice about one in 16.
    let stepped = frames
        .windows(2)
        .filter(|w| w[1].0 == 1024 + (w[0].0 - 1024 + 1) % 16)
        .count();
    let share = stepped as f64 / (frames.len() - 1) as f64;
    println!("consecutive frames one port apart: {:.1} %", share * 100.0);
    assert!(share < 0.5, "{:.1} % stepped", share * 100.0);
}
