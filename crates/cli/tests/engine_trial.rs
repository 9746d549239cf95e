//! Engine integration tests on the lab (issue 4): exact counts, induced loss, duplicates,
//! reordering, NAPT, latency. Root is needed; without it every test prints `SKIP: …`.
//!
//! Each test builds its own lab (`wr-et<N>-…`) and removes it on drop; traffic phases are
//! serialised by a lock so that tests do not disturb each other's DUT.

use engine::port::PortSpec;
use engine::stream::{Flows, Limit, Rate, StreamConfig};
use engine::trial::{self, TrialConfig, TrialReport, TrialStream};
use lab::{Lab, LabConfig, Node, PortId, Profile, Topology};
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;
use wire::encap::EncapSpec;
use wire::template::{FrameTemplate, StreamSpec};

static SERIAL: Mutex<()> = Mutex::new(());

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

struct LabGuard(Option<Lab>);

impl Drop for LabGuard {
    fn drop(&mut self) {
        if let Some(l) = self.0.take() {
            let _ = l.down();
        }
    }
}

impl std::ops::Deref for LabGuard {
    type Target = Lab;
    fn deref(&self) -> &Lab {
        self.0.as_ref().unwrap()
    }
}

fn lab_or_skip(name: &str, topology: Topology, profile: Option<&str>) -> Option<LabGuard> {
    if !is_root() {
        println!("SKIP: engine trial tests need root (network namespaces, AF_PACKET)");
        return None;
    }
    let _ = lab::down(name);
    let cfg = LabConfig {
        name: name.into(),
        topology,
        profile: profile.map(|p| Profile::parse(p).expect("profile")),
    };
    Some(LabGuard(Some(Lab::up(&cfg).expect("lab up"))))
}

fn port(lab: &Lab, id: PortId, name: &str) -> (PortSpec, lab::PortInfo) {
    let i = lab.port(id).expect("port info");
    let spec = PortSpec {
        name: name.into(),
        ifname: i.ifname.clone(),
        netns: Some(i.netns.clone()),
        ipv4: Some(i.ipv4),
        ipv6: Some(i.ipv6),
        next_hop_v4: i.gateway_v4.or(i.target_v4),
        next_hop_v6: i.gateway_v6.or(i.target_v6),
        // Without a DUT (direct topology) its CPU is free: give it to port B's threads.
        cpus: match (lab.topology(), id, lab::dut_cpu()) {
            (Topology::Direct, PortId::B, Some(c)) => vec![c],
            _ => Lab::cpus_for(Node::A),
        },
    };
    (spec, i)
}

fn stream(id: u16, src: IpAddr, dst: IpAddr, size: usize, pps: f64, limit: Limit) -> StreamConfig {
    let encap: EncapSpec = if src.is_ipv4() { "ipv4" } else { "ipv6" }.parse().unwrap();
    let mut spec = StreamSpec::new(encap);
    spec.stream_id = id;
    spec.src_ip = src;
    spec.dst_ip = dst;
    spec.dst_port = 9;
    let t = FrameTemplate::new(&spec, size).expect("template");
    StreamConfig {
        id,
        frames: vec![t],
        weights: vec![1],
        flows: Flows::default(),
        rate: Rate::Pps(pps),
        burst: 1,
        limit,
        reorder_every: None,
        rewrite_macs: true,
    }
}

fn run(ports: Vec<PortSpec>, streams: Vec<TrialStream>) -> TrialReport {
    let mut cfg = TrialConfig::new(ports, streams);
    cfg.drain = Duration::from_millis(300);
    let r = trial::run(&cfg, &AtomicBool::new(false)).expect("trial runs");
    for p in &r.rx_ports {
        assert_eq!(
            p.ring_drops, 0,
            "RX ring drops on {}: counts would not be exact",
            p.port
        );
    }
    r
}

fn nft(lab: &Lab, node: Node, script: &str) {
    let mut c = lab.command(node, &["nft", "-f", "-"]).unwrap();
    use std::io::Write;
    use std::process::Stdio;
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "nft failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn exact_counts_and_latency_on_plain_forwarding() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et1", Topology::Forward, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let n = 20_000;
    let s4 = stream(
        1,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        20_000.0,
        Limit::Frames(n),
    );
    let s6 = stream(
        2,
        ai.ipv6.into(),
        bi.ipv6.into(),
        128,
        5_000.0,
        Limit::Frames(n / 4),
    );
    let back = stream(
        3,
        bi.ipv4.into(),
        ai.ipv4.into(),
        64,
        10_000.0,
        Limit::Frames(n / 2),
    );
    let r = run(
        vec![a, b],
        vec![
            TrialStream {
                config: s4,
                tx_port: 0,
                rx_port: 1,
            },
            TrialStream {
                config: s6,
                tx_port: 0,
                rx_port: 1,
            },
            TrialStream {
                config: back,
                tx_port: 1,
                rx_port: 0,
            },
        ],
    );
    let expect = [(1u16, n), (2, n / 4), (3, n / 2)];
    for (id, count) in expect {
        let s = r.streams.iter().find(|s| s.stream_id == id).unwrap();
        assert_eq!(s.tx.sent, count, "stream {id} sent");
        assert_eq!(s.rx.received, count, "stream {id} received");
        assert_eq!(s.rx.lost, Some(0));
        assert_eq!((s.rx.duplicates, s.rx.out_of_order, s.rx.late), (0, 0, 0));
        let l = s.rx.latency.expect("latency measured");
        assert!(l.min_ns > 0, "latency positive: {l:?}");
        // The median, not the maximum: on a shared 2-CPU machine a scheduling hiccup of the
        // DUT's softirq can delay single frames by several ms; the maximum is printed.
        assert!(l.p50_ns < 10_000_000, "latency below 10 ms on veth: {l:?}");
        println!("stream {id}: latency {l:?}");
        assert_eq!(s.rx.negative_latency, 0);
    }
    assert_eq!(r.directions.len(), 2);
    assert_eq!(r.total.sent, n + n / 4 + n / 2);
    assert_eq!(r.total.received, r.total.sent);
}

#[test]
fn nft_numgen_drop_gives_exact_loss() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et2", Topology::Forward, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    // Every 10th UDP packet to port 9 forwarded by the DUT is dropped.
    nft(
        &lab,
        Node::Dut,
        "table inet wr_engtest {\n chain fw {\n  type filter hook forward priority 0; policy accept;\n  udp dport 9 numgen inc mod 10 0 drop\n }\n}\n",
    );
    let n = 10_000;
    let s = stream(
        5,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        20_000.0,
        Limit::Frames(n),
    );
    let r = run(
        vec![a, b],
        vec![TrialStream {
            config: s,
            tx_port: 0,
            rx_port: 1,
        }],
    );
    let s = &r.streams[0];
    assert_eq!(s.tx.sent, n);
    assert_eq!(s.rx.lost, Some(n / 10), "exactly every 10th frame lost");
    assert_eq!(s.rx.received, n - n / 10);
    assert_eq!(s.rx.duplicates, 0);
    assert_eq!(s.rx.out_of_order, 0);
}

#[test]
fn nft_dup_is_counted_as_duplicates() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et3", Topology::Forward, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let dut_b = bi.peer.ifname.clone();
    // Duplicate every 4th test frame the DUT forwards; the copy leaves through the output path,
    // so the forward chain's counter sees only originals and the expectation is exact.
    nft(
        &lab,
        Node::Dut,
        &format!(
            "table ip wr_engtest {{\n chain fw {{\n  type filter hook forward priority 0; policy accept;\n  udp dport 9 numgen inc mod 4 0 dup to {} device \"{dut_b}\"\n }}\n}}\n",
            bi.ipv4
        ),
    );
    let n = 8_000;
    let s = stream(
        6,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        20_000.0,
        Limit::Frames(n),
    );
    let r = run(
        vec![a, b],
        vec![TrialStream {
            config: s,
            tx_port: 0,
            rx_port: 1,
        }],
    );
    let s = &r.streams[0];
    assert_eq!(s.tx.sent, n);
    assert_eq!(s.rx.received, n, "duplicates are not counted as received");
    assert_eq!(s.rx.duplicates, n / 4);
    assert_eq!(s.rx.lost, Some(0));
}

#[test]
fn reorder_option_is_counted_as_reordering() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et4", Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let mut s = stream(
        7,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        20_000.0,
        Limit::Frames(10_000),
    );
    s.reorder_every = Some(100);
    let r = run(
        vec![a, b],
        vec![TrialStream {
            config: s,
            tx_port: 0,
            rx_port: 1,
        }],
    );
    let s = &r.streams[0];
    assert_eq!(s.tx.sent, 10_000);
    assert_eq!(s.tx.swapped_pairs, 100);
    assert_eq!(s.rx.received, 10_000);
    assert_eq!(s.rx.out_of_order, 100);
    assert_eq!((s.rx.lost, s.rx.duplicates), (Some(0), 0));
}

#[test]
fn napt_keeps_streams_identified() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et5", Topology::Forward, Some("napt")) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let mut s1 = stream(
        10,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        10_000.0,
        Limit::Frames(5_000),
    );
    s1.flows = Flows {
        src_port_count: 50,
        ..Flows::default()
    };
    let s2 = stream(
        11,
        ai.ipv4.into(),
        bi.ipv4.into(),
        512,
        5_000.0,
        Limit::Frames(2_500),
    );
    let r = run(
        vec![a, b],
        vec![
            TrialStream {
                config: s1,
                tx_port: 0,
                rx_port: 1,
            },
            TrialStream {
                config: s2,
                tx_port: 0,
                rx_port: 1,
            },
        ],
    );
    for s in &r.streams {
        assert_eq!(
            s.rx.received, s.tx.sent,
            "stream {} identified through NAPT",
            s.stream_id
        );
        assert!(s.tx.sent > 0);
    }
    assert_eq!(
        r.rx_ports.iter().map(|p| p.unexpected_streams).sum::<u64>(),
        0
    );
}

/// Rate accuracy over 5 s (issue 4): achieved offered rate within ±1 % of intended, and every
/// frame received. `#[ignore]`d because it takes ~20 s and needs a quiet machine:
/// `cargo test --release -p cli --test engine_trial rate_accuracy -- --ignored --nocapture`.
fn rate_accuracy(lab_name: &str, pps: Option<f64>) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip(lab_name, Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let pps = match pps {
        Some(p) => p,
        None => {
            // The highest rate the backend sustains here: an unpaced 2 s run, less 20 % (headroom for
            // a machine shared with other work).
            let mut s = stream(
                20,
                ai.ipv4.into(),
                bi.ipv4.into(),
                64,
                1.0,
                Limit::DurationNs(2_000_000_000),
            );
            s.rate = Rate::Unlimited;
            let r = run(
                vec![a.clone(), b.clone()],
                vec![TrialStream {
                    config: s,
                    tx_port: 0,
                    rx_port: 1,
                }],
            );
            let max = r.streams[0].tx.achieved_pps;
            println!("unpaced: {max:.0} frames/s; testing at 80 %");
            (max * 0.8).floor()
        }
    };
    let s = stream(
        21,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        pps,
        Limit::DurationNs(5_000_000_000),
    );
    let r = run(
        vec![a, b],
        vec![TrialStream {
            config: s,
            tx_port: 0,
            rx_port: 1,
        }],
    );
    let s = &r.streams[0];
    let err = (s.tx.achieved_pps - pps) / pps;
    println!(
        "intended {pps:.0} achieved {:.1} ({:+.3} %), sent {} (planned {}), slipped {}, received {}",
        s.tx.achieved_pps,
        err * 100.0,
        s.tx.sent,
        (pps * 5.0).ceil(),
        s.tx.slipped,
        s.rx.received
    );
    assert!(err.abs() <= 0.01, "achieved rate within ±1 %");
    assert_eq!(s.rx.received, s.tx.sent);
}

#[test]
#[ignore = "5 s timing test; run with --ignored on a quiet machine"]
fn rate_accuracy_10kpps() {
    rate_accuracy("et6", Some(10_000.0));
}

#[test]
#[ignore = "5 s timing test; run with --ignored on a quiet machine"]
fn rate_accuracy_100kpps() {
    rate_accuracy("et7", Some(100_000.0));
}

#[test]
#[ignore = "7 s timing test; run with --ignored on a quiet machine"]
fn rate_accuracy_max() {
    rate_accuracy("et8", None);
}
