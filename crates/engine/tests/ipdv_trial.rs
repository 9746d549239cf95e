//! IPDV (RFC 8219 §7.3.2) from whole trials on both backends (#17 item 4): the same paced
//! stream from port A to port B over a veth pair (each end in a namespace of its own,
//! `wr-ipdv-<pid>-<n>-{a,b}`, removed on drop), once with the XDP backend and once with
//! AF_PACKET. Both trial reports must carry IPDV for the stream, follow the pairing rule
//! (without loss or reordering every frame after the first forms a pair), and give plausible,
//! mutually consistent figures: Dmin ≤ 0 ≤ Dmax and a median near zero, as paced traffic
//! through an idle link must show.
//!
//! Nothing here depends on the machine's speed: no rate is required, only bounds that a
//! correct measurement meets on any machine (a median IPDV of a millisecond would need the
//! one-way delay to grow by a millisecond per frame for half the trial).
//!
//! Needs root (namespaces, AF_PACKET, XDP); without it, or where XDP cannot be attached, the
//! test prints `SKIP: …` and returns.

use engine::port::PortSpec;
use engine::rx::IpdvReport;
use engine::stream::{Limit, Rate, StreamConfig};
use engine::trial::{self, Backend, StreamResult, TrialConfig, TrialStream};
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use wire::template::{FrameTemplate, StreamSpec};

fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("spawn");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        == Some("0")
}

/// `iv0` (192.0.2.1) in namespace `…-a` ⇄ `iv1` (192.0.2.2) in `…-b`, IPv6 off. Removed on
/// drop (the veth pair goes with its namespaces).
struct Net {
    a: String,
    b: String,
}

impl Net {
    fn new() -> Net {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let base = format!("wr-ipdv-{}-{n}", std::process::id());
        let net = Net {
            a: format!("{base}-a"),
            b: format!("{base}-b"),
        };
        for ns in [&net.a, &net.b] {
            sh(&["ip", "netns", "add", ns]);
            for k in ["all", "default"] {
                let key = format!("net.ipv6.conf.{k}.disable_ipv6=1");
                sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", &key]);
            }
        }
        let (a, b) = (net.a.as_str(), net.b.as_str());
        sh(&[
            "ip", "-n", a, "link", "add", "iv0", "type", "veth", "peer", "name", "iv1", "netns", b,
        ]);
        sh(&["ip", "-n", a, "addr", "add", "192.0.2.1/24", "dev", "iv0"]);
        sh(&["ip", "-n", b, "addr", "add", "192.0.2.2/24", "dev", "iv1"]);
        sh(&["ip", "-n", a, "link", "set", "iv0", "up"]);
        sh(&["ip", "-n", b, "link", "set", "iv1", "up"]);
        net
    }

    fn ports(&self) -> (PortSpec, PortSpec) {
        let mut a = PortSpec::new("a", "iv0");
        a.netns = Some(self.a.clone());
        a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 1));
        a.next_hop_v4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        let mut b = PortSpec::new("b", "iv1");
        b.netns = Some(self.b.clone());
        b.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        b.next_hop_v4 = Some(Ipv4Addr::new(192, 0, 2, 1));
        (a, b)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

const ID: u16 = 9;
/// Frames of the stream: half a second at 20 kpps.
const FRAMES: u64 = 10_000;

/// One trial of the paced stream on `backend`; `Err` carries the engine's message.
fn trial_on(net: &Net, backend: Backend) -> Result<StreamResult, String> {
    let (a, b) = net.ports();
    let mut spec = StreamSpec::new("ipv4".parse().unwrap());
    spec.stream_id = ID;
    let t = FrameTemplate::new(&spec, 64).unwrap();
    let stream = StreamConfig::single(ID, t, Rate::Pps(20_000.0), Limit::Frames(FRAMES));
    let mut cfg = TrialConfig::new(
        vec![a, b],
        vec![TrialStream {
            config: stream,
            tx_port: 0,
            rx_port: 1,
        }],
    );
    cfg.backend = backend;
    cfg.drain = Duration::from_millis(300);
    let report = trial::run(&cfg, &AtomicBool::new(false)).map_err(|e| e.to_string())?;
    assert_eq!(report.backend, backend);
    Ok(report.streams.into_iter().next().expect("one stream"))
}

/// What both backends' IPDV must satisfy; returns it.
fn check(backend: Backend, s: &StreamResult) -> IpdvReport {
    let name = backend.name();
    println!(
        "{name}: sent {} received {} lost_by_sequence {} out_of_order {} ipdv {:?}",
        s.tx.sent, s.rx.received, s.rx.lost_by_sequence, s.rx.out_of_order, s.ipdv
    );
    assert!(s.rx.received >= 2, "{name}: too few frames to judge");
    let i = s
        .ipdv
        .unwrap_or_else(|| panic!("{name}: the trial carries no IPDV"));
    // The rule: a pair is two frames with consecutive sequence numbers in order. Without a
    // gap or a reordering, that is every frame after the first.
    assert!(i.pairs < s.rx.received, "{name}: {i:?}");
    if s.rx.lost_by_sequence == 0 && s.rx.out_of_order == 0 && s.rx.duplicates == 0 {
        assert_eq!(i.pairs, s.rx.received - 1, "{name}: {i:?}");
    }
    assert!(
        i.min_ns <= i.median_ns && i.median_ns <= i.max_ns,
        "{name}: {i:?}"
    );
    // Thousands of pairs of real delays: some grow, some shrink.
    assert!(i.min_ns <= 0 && 0 <= i.max_ns, "{name}: {i:?}");
    assert!(
        i.median_ns.abs() < 1_000_000,
        "{name}: |Dmed| ≥ 1 ms: {i:?}"
    );
    i
}

#[test]
fn ipdv_from_both_backends_on_the_same_paced_stream() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET, XDP)");
        return;
    }
    let net = Net::new();
    let xdp = match trial_on(&net, Backend::Xdp) {
        Ok(s) => s,
        Err(e) if e.contains("XDP") => {
            println!("SKIP: the XDP backend cannot run here: {e}");
            return;
        }
        Err(e) => panic!("trial on xdp: {e}"),
    };
    let af = trial_on(&net, Backend::AfPacket).unwrap_or_else(|e| panic!("af_packet: {e}"));
    let x = check(Backend::Xdp, &xdp);
    let a = check(Backend::AfPacket, &af);
    // The same traffic, seen by two receivers: medians within a millisecond of each other
    // (each within one of zero, above), extremes on the same sides of zero.
    assert!(
        x.median_ns.abs_diff(a.median_ns) < 2_000_000,
        "xdp {x:?} af_packet {a:?}"
    );
}
