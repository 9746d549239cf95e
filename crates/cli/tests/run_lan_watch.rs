//! Issue 35 item 5: the LAN health watch. A Linux gateway (a namespace that forwards IPv4,
//! the real kernel answering ARP) between the run's two ports, each of which has a gateway
//! address, so both are watched:
//!
//! ```text
//! lan (port "lan", 192.0.2.2)  ─veth─  gw (192.0.2.1 | 198.51.100.1)  ─veth─  isp (port
//!   "wan", 198.51.100.2)
//! ```
//!
//! `a_gateway_whose_lan_link_goes_down_mid_trial_is_flagged_in_that_trial_alone`: one
//! `wirerate run` of three 3 s UDP trials (forwarding-rate, 0.5 % of 1 Gb/s, lan → wan) and
//! one 2 s iperf3 trial. During the second UDP trial (found by its frames reaching the
//! gateway) a thread takes the gateway's LAN veth down for 1.5 s and up again. Then:
//! - that trial's record (whether kept or superseded) has one gap on port lan for
//!   192.0.2.1, as long as the link was down within one probe period either side, and the
//!   report's notes name that trial, port and address; port wan's watch of 198.51.100.1 in
//!   the same trial has no gap;
//! - every other trial, UDP and TCP, has a watch of both gateways with probes sent, no gap,
//!   and at most one unanswered probe each (a reply a loaded scheduler made late counts
//!   for the next probe; the last probe's answer is waited for): exactly the gateway being
//!   there.
//!
//! Root is needed (else `SKIP: …`); iperf3 and tcpdump must be installed (a missing one
//! skips, but fails under `CI`). Namespaces `wr-lw<pid>…`, removed on drop.

#[path = "common_cpe/mod.rs"]
mod common_cpe;
mod common_isp;
#[path = "common_run/mod.rs"]
mod common_run;

use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use bench::results::{LAN_GAP_THRESHOLD, LAN_WATCH_PERIOD};
use common_cpe::{sh, wait_until, Cpe};
use common_run::{finish_within, plan_file, spawn_run, trials, WIRERATE};

/// How long the gateway's LAN link stays down: above the gap threshold, inside a trial.
const DOWN: Duration = Duration::from_millis(1500);

fn plan(c: &Cpe) -> String {
    format!(
        r#"name = "lan-watch"
[topology]
kind = "interfaces"
[ports.lan]
interface = "lwl0"
namespace = "{lan}"
ipv4 = "192.0.2.2"
gateway-v4 = "192.0.2.1"
speed = "1G"
[ports.wan]
interface = "lww1"
namespace = "{isp}"
ipv4 = "198.51.100.2"
gateway-v4 = "198.51.100.1"
speed = "1G"
[dut]
kind = "device"
[dut.profiles.gateway]
[run]
repetitions = 3
trial-duration = "3s"
settle = "100ms"
profile-settle = "0s"
max-load = 0.005
backend = "af_packet"
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [64]
methodologies = ["forwarding-rate"]
[[matrix]]
protocol = ["tcp"]
ip = [4]
methodologies = ["iperf3"]
[methodology.iperf3]
omit = "0s"
duration = "2s"
"#,
        lan = c.lan,
        isp = c.isp,
    )
}

/// Packets the gateway's LAN veth has received so far.
fn gw_lan_rx(c: &Cpe) -> u64 {
    sh(&c.gw, "cat /sys/class/net/lwl1/statistics/rx_packets")
        .trim()
        .parse()
        .unwrap_or(0)
}

#[test]
fn a_gateway_whose_lan_link_goes_down_mid_trial_is_flagged_in_that_trial_alone() {
    if !common_isp::root_and_tools(&["iperf3", "tcpdump"]) {
        return;
    }
    let c = Cpe::new("lw", "", false);
    // The gateway's WAN side, and kernel addresses at both ends for iperf3 (the engine's
    // ports answer ARP for the same addresses during UDP trials).
    sh(&c.gw, "ip addr add 198.51.100.1/24 dev lww0");
    sh(
        &c.lan,
        "ip addr add 192.0.2.2/24 dev lwl0; ip route add default via 192.0.2.1",
    );
    sh(
        &c.isp,
        "ip addr add 198.51.100.2/24 dev lww1; ip route add default via 198.51.100.1",
    );
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(d.path(), &plan(&c));
    let check = Command::new(WIRERATE)
        .args(["plan", "check", plan.to_str().unwrap()])
        .output()
        .unwrap();
    let check_out = String::from_utf8_lossy(&check.stdout).to_string();
    assert!(
        check.status.success(),
        "{check_out}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        check_out.contains("LAN watch: lan asks 192.0.2.1, wan asks 198.51.100.1"),
        "{check_out}"
    );
    let out = d.path().join("run");
    let run = spawn_run(&plan, &out);

    // The second UDP trial: the first one recorded, then its frames reaching the gateway
    // (a few hundred packets are test frames: the watch sends ten ARP requests a second).
    wait_until("the first trial", Duration::from_secs(60), || {
        out.join("trials.jsonl").exists() && !trials(&out).is_empty()
    });
    let base = gw_lan_rx(&c);
    wait_until("the second trial's frames", Duration::from_secs(30), || {
        gw_lan_rx(&c) > base + 300
    });
    let gw = c.gw.clone();
    // The link is down at least DOWN (from the first command's return to the second's
    // start) and at most from the first command's start to the second's return.
    let flap = std::thread::spawn(move || {
        let before = Instant::now();
        sh(&gw, "ip link set lwl1 down");
        std::thread::sleep(DOWN);
        sh(&gw, "ip link set lwl1 up");
        before.elapsed()
    });
    let down_at_most = flap.join().unwrap();
    let output = finish_within(run, Duration::from_secs(180));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let all = trials(&out);
    let lan_gw: IpAddr = "192.0.2.1".parse().unwrap();
    let wan_gw: IpAddr = "198.51.100.1".parse().unwrap();
    let period = LAN_WATCH_PERIOD.as_millis() as u64;
    let mut flagged = Vec::new();
    for t in &all {
        let what = format!(
            "{} rep {} trial {}{}: {:?}",
            t.key.case_id,
            t.key.repetition,
            t.key.index,
            if t.superseded { " (superseded)" } else { "" },
            t.lan_watch
        );
        println!("{what}");
        let gateways: Vec<(&str, IpAddr)> = t
            .lan_watch
            .iter()
            .map(|w| (w.port.as_str(), w.gateway))
            .collect();
        assert_eq!(gateways, [("lan", lan_gw), ("wan", wan_gw)], "{what}");
        for w in &t.lan_watch {
            assert!(w.probes > 0 && w.answered <= w.probes, "{what}");
        }
        if t.lan_gaps().next().is_some() {
            flagged.push(t);
            continue;
        }
        for w in &t.lan_watch {
            assert!(w.answered + 1 >= w.probes, "{what}");
            assert!(
                w.longest_gap_ms < LAN_GAP_THRESHOLD.as_millis() as u64,
                "{what}"
            );
        }
    }
    assert!(
        all.iter().any(|t| t.tcp.is_some()),
        "an iperf3 trial: {stdout}"
    );
    assert_eq!(flagged.len(), 1, "one trial flagged: {stdout}");
    let hit = flagged[0];
    assert!(hit.engine.is_some(), "a UDP trial");
    let lan = &hit.lan_watch[0];
    assert!(hit.lan_watch[1].gaps.is_empty(), "{:?}", hit.lan_watch);
    assert_eq!(lan.gaps.len(), 1, "{lan:?}");
    let g = lan.gaps[0];
    let (least, most) = (DOWN.as_millis() as u64, down_at_most.as_millis() as u64);
    println!("link down {least}..{most} ms; gap {} ms", g.length_ms);
    assert!(
        g.length_ms + period >= least && g.length_ms <= most + period,
        "gap {} ms against {least}..{most} ms down ± {period} ms: {lan:?}",
        g.length_ms
    );
    assert_eq!(lan.longest_gap_ms, g.length_ms);

    // The report's notes name the trial, the port and the address.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap_or_default();
    let rendered = if summary.is_empty() {
        let r = Command::new(WIRERATE)
            .args(["report", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        std::fs::read_to_string(out.join("summary.md")).unwrap()
    } else {
        summary
    };
    let needle = format!(
        "{} ({}, repetition {}, trial {}): the gateway 192.0.2.1 did not answer ARP/ND on port lan for",
        hit.key.case_id,
        hit.key.methodology.name(),
        hit.key.repetition,
        hit.key.index
    );
    assert!(rendered.contains(&needle), "{needle}\n{rendered}");
    assert_eq!(rendered.matches("(LAN watch)").count(), 1, "{rendered}");
}
