//! Engine integration tests on the lab (issue 4): exact counts, induced loss, duplicates,
//! reordering, NAPT, latency. Root is needed; without it every test prints `SKIP: …`.
//!
//! Each test builds its own lab (`wr-et<N>-…`) and removes it on drop; traffic phases are
//! serialised by a lock so that tests do not disturb each other's DUT.

use engine::port::PortSpec;
use engine::stream::{Flows, Limit, Rate, StreamConfig};
use engine::trial::{self, Backend, TrialConfig, TrialReport, TrialStream};
use engine::tx::TxBackend;
use lab::{Lab, LabConfig, Node, PortId, Profile, StatsSnapshot, Topology};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use wire::encap::EncapSpec;
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::Pps;

static SERIAL: Mutex<()> = Mutex::new(());

mod common;
use common::is_root;
use lab::LabGuard;

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
        faces_dut: lab.topology() != Topology::Direct,
        xdp_rx_mode: None,
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
    StreamConfig::single(id, t, Rate::Pps(Pps(pps)), limit)
}

/// A stream sent from port A (index 0) and received on port B (index 1).
fn a_to_b(config: StreamConfig) -> TrialStream {
    TrialStream {
        config,
        tx_port: 0,
        rx_port: 1,
    }
}

/// A stream sent from port B (index 1) and received on port A (index 0).
fn b_to_a(config: StreamConfig) -> TrialStream {
    TrialStream {
        config,
        tx_port: 1,
        rx_port: 0,
    }
}

fn run(ports: Vec<PortSpec>, streams: Vec<TrialStream>) -> TrialReport {
    run_on(TxBackend::default(), ports, streams)
}

fn run_on(backend: TxBackend, ports: Vec<PortSpec>, streams: Vec<TrialStream>) -> TrialReport {
    run_with(Backend::AfPacket, backend, ports, streams)
}

/// A trial on `engine` (AF_PACKET or XDP), checked to have run on it.
fn run_b(engine: Backend, ports: Vec<PortSpec>, streams: Vec<TrialStream>) -> TrialReport {
    run_with(engine, TxBackend::default(), ports, streams)
}

fn run_with(
    engine: Backend,
    backend: TxBackend,
    ports: Vec<PortSpec>,
    streams: Vec<TrialStream>,
) -> TrialReport {
    let mut cfg = TrialConfig::new(ports, streams);
    cfg.backend = engine;
    cfg.tx_ring.backend = backend;
    cfg.drain = Duration::from_millis(300);
    let r = trial::run(&cfg, &AtomicBool::new(false)).expect("trial runs");
    assert_eq!(
        r.backend, engine,
        "ran on the backend asked for: {}",
        r.backend_note
    );
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

// ---------------------------------------------------------------------------------------------
// Kernel-side cross-checks. A DUT (or a veth backlog on a loaded 2-CPU machine) that drops a
// frame is not a tester bug, but the tests must stay exact: every count the tester reports is
// compared with a count the kernel keeps on its own.
//
// - `witness` puts named nftables counters at the netdev ingress of an interface, ahead of
//   everything else (priority -500), counting UDP frames to port 9 per IP family. AF_PACKET
//   taps run before netdev ingress, so on a tester port this counts exactly the frames the
//   receiver's ring was offered: `received` (plus duplicates) must equal it.
// - Whatever did not arrive and was not dropped on purpose by a counted rule is path loss. It
//   must be covered by the kernel's drop counters (interface rx/tx_dropped, softnet backlog
//   drops) between the snapshots before and after the trial, and it is printed. Those drop
//   counters only bound the loss from above: one veth backlog drop can show in more than one
//   of them, and softnet is host-wide. The exact figure is the per-hop counter difference.
// A tester that miscounts fails either `received == witnessed` or the drop-counter cover
// (frames claimed as sent that the kernel never saw and never dropped).
// ---------------------------------------------------------------------------------------------

const WITNESS: &str = "wr_witness";

/// Count UDP-to-port-9 frames arriving on `ifname` in `node` as `<label>_v4` and `<label>_v6`.
fn witness(lab: &Lab, node: Node, ifname: &str, label: &str) {
    nft(
        lab,
        node,
        &format!(
            "table netdev {WITNESS} {{\n counter {label}_v4 {{}}\n counter {label}_v6 {{}}\n chain in_{label} {{\n  type filter hook ingress device \"{ifname}\" priority -500; policy accept;\n  meta protocol ip udp dport 9 counter name \"{label}_v4\"\n  meta protocol ip6 udp dport 9 counter name \"{label}_v6\"\n }}\n}}\n"
        ),
    );
}

/// Packets of every named counter of `family table` in `node`.
fn counters(lab: &Lab, node: Node, family: &str, table: &str) -> HashMap<String, u64> {
    let out = lab
        .command(
            node,
            &["nft", "-j", "list", "counters", "table", family, table],
        )
        .unwrap()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nft list counters: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lab::stats::parse_nft_counters(&String::from_utf8_lossy(&out.stdout))
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.packets))
        .collect()
}

fn witnessed(lab: &Lab, node: Node) -> HashMap<String, u64> {
    counters(lab, node, "netdev", WITNESS)
}

/// Frames the XDP programs on `ifname` in `node` dropped, from the driver's own statistics
/// (`ethtool -S`: veth's `rx_queue_N_xdp_drops`, summed over queues).
fn xdp_drops(lab: &Lab, node: Node, ifname: &str) -> u64 {
    let out = lab
        .command(node, &["ethtool", "-S", ifname])
        .unwrap()
        .output()
        .unwrap();
    assert!(out.status.success(), "ethtool -S {ifname}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().split_once(':'))
        .filter(|(k, _)| k.starts_with("rx_queue_") && k.ends_with("_xdp_drops"))
        .map(|(_, v)| v.trim().parse::<u64>().unwrap())
        .sum()
}

/// The kernel's own count of test frames arriving on a tester port, for either backend.
///
/// - AF_PACKET: the nftables [`witness`] at netdev ingress, per IP family.
/// - XDP: the receiving program sees frames before netdev ingress and drops test frames, so
///   the witness would see none. The kernel's count is the veth driver's `xdp_drops` instead:
///   every frame the program dropped, i.e. every test frame of any stream (expected or not).
///   It does not tell families apart, so [`Arrivals::all`] is the XDP check.
struct Arrivals {
    engine: Backend,
    node: Node,
    ifname: String,
    label: String,
    base: HashMap<String, u64>,
    xdp0: u64,
}

impl Arrivals {
    fn watch(lab: &Lab, engine: Backend, node: Node, ifname: &str, label: &str) -> Arrivals {
        witness(lab, node, ifname, label);
        Arrivals {
            engine,
            node,
            ifname: ifname.into(),
            label: label.into(),
            base: witnessed(lab, node),
            xdp0: xdp_drops(lab, node, ifname),
        }
    }

    /// UDP-to-port-9 frames of family `fam` ("v4"/"v6") since `watch` (AF_PACKET only).
    fn family(&self, lab: &Lab, fam: &str) -> u64 {
        assert_eq!(self.engine, Backend::AfPacket, "per family: AF_PACKET only");
        let k = format!("{}_{fam}", self.label);
        witnessed(lab, self.node)[&k] - self.base.get(&k).copied().unwrap_or(0)
    }

    /// Test frames of both families since `watch`.
    /// Counts from now on (for a second trial on the same lab).
    fn rebase(&mut self, lab: &Lab) {
        self.base = witnessed(lab, self.node);
        self.xdp0 = xdp_drops(lab, self.node, &self.ifname);
    }

    fn all(&self, lab: &Lab) -> u64 {
        match self.engine {
            Backend::Xdp => xdp_drops(lab, self.node, &self.ifname) - self.xdp0,
            _ => self.family(lab, "v4") + self.family(lab, "v6"),
        }
    }
}

/// The kernel's drop counters between two snapshots: their sum, and which moved.
fn drops_between(before: &StatsSnapshot, after: &StatsSnapshot) -> (u64, String) {
    let mut total = 0;
    let mut what = Vec::new();
    for a in &after.interfaces {
        let b = before
            .interfaces
            .iter()
            .find(|b| b.node == a.node && b.ifname == a.ifname);
        let (rx0, tx0) = b.map(|b| (b.rx_dropped, b.tx_dropped)).unwrap_or((0, 0));
        let (rx, tx) = (
            a.rx_dropped.saturating_sub(rx0),
            a.tx_dropped.saturating_sub(tx0),
        );
        if rx + tx > 0 {
            what.push(format!(
                "{:?}/{} rx_dropped +{rx} tx_dropped +{tx}",
                a.node, a.ifname
            ));
            total += rx + tx;
        }
    }
    for a in &after.softnet {
        let d0 = before
            .softnet
            .iter()
            .find(|b| b.cpu == a.cpu)
            .map_or(0, |b| b.dropped);
        let d = a.dropped.saturating_sub(d0);
        if d > 0 {
            what.push(format!("softnet cpu{} dropped +{d}", a.cpu));
            total += d;
        }
    }
    (total, what.join(", "))
}

/// `expected` frames should have reached the witness and `arrived` did. Returns the path loss
/// and asserts that the kernel's own drop counters account for it (printing them when not 0).
fn path_loss(
    what: &str,
    expected: u64,
    arrived: u64,
    before: &StatsSnapshot,
    after: &StatsSnapshot,
) -> u64 {
    assert!(
        arrived <= expected,
        "{what}: kernel saw {arrived} frames arrive, more than the {expected} expected"
    );
    let lost = expected - arrived;
    let (drops, detail) = drops_between(before, after);
    if lost > 0 || drops > 0 {
        println!("{what}: path loss {lost} (expected {expected}, arrived {arrived}); kernel drop counters +{drops}: {detail}");
    }
    assert!(
        drops >= lost,
        "{what}: {lost} frames neither arrived nor were dropped by any kernel counter (+{drops}: {detail}) — the tester miscounts"
    );
    lost
}

#[test]
fn exact_counts_and_latency_on_plain_forwarding() {
    exact_counts_and_latency(Backend::AfPacket, "et1");
}

#[test]
fn exact_counts_and_latency_on_plain_forwarding_xdp() {
    exact_counts_and_latency(Backend::Xdp, "et1x");
}

fn exact_counts_and_latency(engine: Backend, lab_name: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip(lab_name, Topology::Forward, None) else {
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
    let wa = Arrivals::watch(&lab, engine, Node::A, &ai.ifname, "a");
    let wb = Arrivals::watch(&lab, engine, Node::B, &bi.ifname, "b");
    let before = lab.snapshot().unwrap();
    let r = run_b(
        engine,
        vec![a, b],
        vec![a_to_b(s4), a_to_b(s6), b_to_a(back)],
    );
    let after = lab.snapshot().unwrap();
    // Per port (both backends): the streams it received = the kernel's count of arrivals.
    let (arrived_a, arrived_b) = (wa.all(&lab), wb.all(&lab));
    let mut total_path_loss = 0;
    for (ids, count, arrived) in [
        (&[1u16, 2][..], n + n / 4, arrived_b),
        (&[3][..], n / 2, arrived_a),
    ] {
        let got: u64 = r
            .streams
            .iter()
            .filter(|s| ids.contains(&s.stream_id))
            .map(|s| s.rx.received)
            .sum();
        let what = format!("streams {ids:?}");
        total_path_loss += path_loss(&what, count, arrived, &before, &after);
        assert_eq!(got, arrived, "{what} received = kernel count");
    }
    let fam = |w: &Arrivals, f| (engine == Backend::AfPacket).then(|| w.family(&lab, f));
    let expect = [
        (1u16, n, fam(&wb, "v4")),
        (2, n / 4, fam(&wb, "v6")),
        (3, n / 2, fam(&wa, "v4")),
    ];
    for (id, count, arrived) in expect {
        let s = r.streams.iter().find(|s| s.stream_id == id).unwrap();
        assert_eq!(s.tx.sent, count, "stream {id} sent");
        if let Some(arrived) = arrived {
            // AF_PACKET: the witness also tells the families apart.
            assert_eq!(
                s.rx.received, arrived,
                "stream {id} received = kernel count"
            );
        }
        let lost = count - s.rx.received;
        assert_eq!(s.rx.lost, Some(lost));
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
    assert_eq!(r.total.received, r.total.sent - total_path_loss);
}

#[test]
fn nft_numgen_drop_gives_exact_loss() {
    numgen_drop_gives_exact_loss(Backend::AfPacket, "et2");
}

#[test]
fn nft_numgen_drop_gives_exact_loss_xdp() {
    numgen_drop_gives_exact_loss(Backend::Xdp, "et2x");
}

fn numgen_drop_gives_exact_loss(engine: Backend, lab_name: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip(lab_name, Topology::Forward, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    // Every 10th UDP packet to port 9 forwarded by the DUT is dropped, and counted.
    nft(
        &lab,
        Node::Dut,
        "table inet wr_engtest {\n counter dropped {}\n chain fw {\n  type filter hook forward priority 0; policy accept;\n  udp dport 9 numgen inc mod 10 0 counter name \"dropped\" drop\n }\n}\n",
    );
    let wb = Arrivals::watch(&lab, engine, Node::B, &bi.ifname, "b");
    let n = 10_000;
    let s = stream(
        5,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        20_000.0,
        Limit::Frames(n),
    );
    let before = lab.snapshot().unwrap();
    let r = run_b(engine, vec![a, b], vec![a_to_b(s)]);
    let after = lab.snapshot().unwrap();
    let rule_drops = counters(&lab, Node::Dut, "inet", "wr_engtest")["dropped"];
    let arrived = wb.all(&lab);
    let s = &r.streams[0];
    assert_eq!(s.tx.sent, n);
    // numgen counts the frames the rule sees; fewer than 10 lost upstream still leave 1,000.
    assert_eq!(
        rule_drops,
        n / 10,
        "the DUT's rule dropped every 10th frame"
    );
    let path = path_loss("drop test", n - rule_drops, arrived, &before, &after);
    assert_eq!(s.rx.received, arrived, "received = kernel count at B");
    assert_eq!(
        s.rx.lost,
        Some(rule_drops + path),
        "lost = the rule's drops + path loss (exactly every 10th frame when path loss is 0)"
    );
    assert_eq!(s.rx.received, n - n / 10 - path);
    assert_eq!(s.rx.duplicates, 0);
    assert_eq!(s.rx.out_of_order, 0);
}

#[test]
fn nft_dup_is_counted_as_duplicates() {
    dup_is_counted_as_duplicates(Backend::AfPacket, "et3");
}

/// Was `#[ignore]`d on 2026-11-22 (c63feb8 to bd10eb3; 4–25 of 10,000 frames vanished in the DUT
/// with no interface counter moving). Explained by A/B in one binary: without the receiving ports'
/// announcement 2 of 5 runs lost 43 and 123 frames, with it 10 of 10 passed. Most likely the XDP
/// sender's first frames, arriving at once, overflowed the DUT's queue of frames waiting for its
/// own ARP resolution of port B, which counts its drops on no interface.
#[test]
fn nft_dup_is_counted_as_duplicates_xdp() {
    dup_is_counted_as_duplicates(Backend::Xdp, "et3x");
}

fn dup_is_counted_as_duplicates(engine: Backend, lab_name: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip(lab_name, Topology::Forward, None) else {
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
            "table ip wr_engtest {{\n counter duped {{}}\n chain fw {{\n  type filter hook forward priority 0; policy accept;\n  udp dport 9 numgen inc mod 4 0 counter name \"duped\" dup to {} device \"{dut_b}\"\n }}\n}}\n",
            bi.ipv4
        ),
    );
    let wb = Arrivals::watch(&lab, engine, Node::B, &bi.ifname, "b");
    let n = 8_000;
    let s = stream(
        6,
        ai.ipv4.into(),
        bi.ipv4.into(),
        64,
        20_000.0,
        Limit::Frames(n),
    );
    let before = lab.snapshot().unwrap();
    let r = run_b(engine, vec![a, b], vec![a_to_b(s)]);
    let after = lab.snapshot().unwrap();
    let duped = counters(&lab, Node::Dut, "ip", "wr_engtest")["duped"];
    let arrived = wb.all(&lab);
    let s = &r.streams[0];
    assert_eq!(s.tx.sent, n);
    assert_eq!(duped, n / 4, "the DUT's rule duplicated every 4th frame");
    assert_eq!(
        s.rx.received + s.rx.duplicates,
        arrived,
        "every arriving copy is either received or a duplicate"
    );
    assert_eq!(s.rx.lost, Some(n - s.rx.received));
    if s.rx.received == n {
        // Every sequence number arrived, so the tester sent and counted every original. What
        // may still be missing are copies the DUT made itself: nf_dup transmits them from inside
        // the DUT, where a copy can die (e.g. queued on a neighbour entry not yet resolved)
        // without any interface drop counter seeing it. Those are the DUT's, and they are
        // reported, not blamed on the tester; every copy that did arrive must be a duplicate.
        let vanished = (n + duped) - arrived;
        if vanished > 0 {
            println!("dup test: {vanished} of the DUT's {duped} copies never left the DUT");
        }
        assert_eq!(
            s.rx.duplicates,
            duped - vanished,
            "duplicates are counted as duplicates, not as received"
        );
    } else {
        // Originals are missing: the kernel's drop counters must account for them.
        let path = path_loss("dup test", n + duped, arrived, &before, &after);
        assert!(s.rx.received >= n - path && s.rx.duplicates >= n / 4 - path);
    }
}

#[test]
fn reorder_option_is_counted_as_reordering() {
    reorder_is_counted(Backend::AfPacket, "et4");
}

#[test]
fn reorder_option_is_counted_as_reordering_xdp() {
    reorder_is_counted(Backend::Xdp, "et4x");
}

fn reorder_is_counted(engine: Backend, lab_name: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip(lab_name, Topology::Direct, None) else {
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
    let wb = Arrivals::watch(&lab, engine, Node::B, &bi.ifname, "b");
    let before = lab.snapshot().unwrap();
    let r = run_b(engine, vec![a, b], vec![a_to_b(s)]);
    let after = lab.snapshot().unwrap();
    let arrived = wb.all(&lab);
    let s = &r.streams[0];
    assert_eq!(s.tx.sent, 10_000);
    assert_eq!(s.tx.swapped_pairs, 100);
    let path = path_loss("reorder test", 10_000, arrived, &before, &after);
    assert_eq!(s.rx.received, arrived, "received = kernel count at B");
    assert_eq!(s.rx.received, 10_000 - path);
    // A lost frame of a swapped pair can take one reordering with it.
    assert!(s.rx.out_of_order <= 100 && s.rx.out_of_order + path >= 100);
    if path == 0 {
        assert_eq!(s.rx.out_of_order, 100);
    }
    assert_eq!((s.rx.lost, s.rx.duplicates), (Some(path), 0));
}

/// One frame seen by [`capture`]: kernel receive time (CLOCK_MONOTONIC ns, across steps of the
/// realtime clock the kernel stamps with), stream, sequence and the signature's send time
/// (CLOCK_MONOTONIC ns, one clock read per sender batch).
type Seen = (u64, u16, u32, u64);

/// Records every signed frame arriving on `spec` until `stop` is set: a second RX ring next
/// to the trial's own (AF_PACKET gives each its copy).
fn capture(spec: &PortSpec, ready: &AtomicBool, stop: &AtomicBool) -> Vec<Seen> {
    let ifindex = spec.enter(1).expect("enter port");
    let mut ring = spec
        .open_rx(ifindex, &engine::port::RxRingConfig::default())
        .expect("capture ring");
    ready.store(true, Ordering::Release);
    let mut seen = Vec::new();
    let mut clock = engine::rx_clock::RxClock::start();
    let mut on = |clock: &mut engine::rx_clock::RxClock, pkt: engine::sys::RxPacket<'_>| {
        let rx_ns = clock.receive_time(&pkt);
        if let Some((_, sig)) = wire::dissect::signature(pkt.data) {
            seen.push((rx_ns, sig.stream_id(), sig.seq32(), sig.timestamp_ns()));
        }
    };
    while !stop.load(Ordering::Acquire) {
        clock.resample_now();
        ring.drain(5, |_, pkt| on(&mut clock, pkt))
            .expect("capture");
    }
    ring.drain(0, |_, pkt| on(&mut clock, pkt))
        .expect("capture");
    seen
}

/// An explicit burst gap shows on the wire: bursts of 50 frames at 100 kpps, 10 ms of silence
/// after each. Checked on B's kernel receive timestamps without tight timing. A 2-CPU machine
/// under load can stall the sender past a gap, and the pacer then rightly catches up by
/// sending the next burst at once; such boundaries are recognised by the frames' own send
/// timestamps (less than half a gap between the bursts' sends) and set aside. Of the rest, at
/// least 90 % must show at least half the gap between arrivals too; at least half of all
/// boundaries must be usable; few gap-sized silences may fall inside bursts. Counts are exact
/// as always. An attempt whose own send timestamps show the sender stalled is run again (at
/// most three attempts; a CI run once had the sender stalled inside 24 of 30 bursts).
#[test]
fn burst_gap_shows_on_the_wire() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("burst-gap", Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let (burst, bursts, gap) = (50u64, 30u64, Duration::from_millis(10));
    let n = burst * bursts;
    let half_gap = gap.as_nanos() as u64 / 2;
    witness(&lab, Node::B, &bi.ifname, "b");
    // Up to three attempts: an attempt in which the *sender* was stalled (its own send
    // timestamps show a boundary without the gap or a gap-sized pause inside a burst) says
    // nothing about the wire and is run again; the assertions below apply unchanged to the
    // attempt kept.
    let mut attempt = 0;
    let (path, boundaries, usable, boundary_gaps, inner_gaps) = loop {
        attempt += 1;
        let mut s = stream(
            40,
            ai.ipv4.into(),
            bi.ipv4.into(),
            64,
            100_000.0,
            Limit::Frames(n),
        );
        s.burst = burst as u32;
        s.burst_gap = Some(gap);
        let witnessed_before = witnessed(&lab, Node::B)["b_v4"];
        let before = lab.snapshot().unwrap();
        let (ready, stop) = (AtomicBool::new(false), AtomicBool::new(false));
        let (r, seen) = std::thread::scope(|sc| {
            let cap = sc.spawn(|| capture(&b, &ready, &stop));
            while !ready.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let r = run(vec![a.clone(), b.clone()], vec![a_to_b(s)]);
            stop.store(true, Ordering::Release);
            (r, cap.join().expect("capture thread"))
        });
        let after = lab.snapshot().unwrap();
        let arrived = witnessed(&lab, Node::B)["b_v4"] - witnessed_before;
        let st = &r.streams[0];
        assert_eq!(st.tx.sent, n);
        // Average rate: 50 frames per (50 × 10 µs + 10 ms).
        let avg = burst as f64 / (burst as f64 * 10e-6 + gap.as_secs_f64());
        assert!(
            (st.tx.intended_pps.0 - avg).abs() < 1e-6 * avg,
            "{}",
            st.tx.intended_pps.0
        );
        let path = path_loss("burst gap test", n, arrived, &before, &after);
        assert_eq!(st.rx.received, arrived, "received = kernel count at B");
        assert_eq!(st.rx.received, n - path);
        assert_eq!((st.rx.duplicates, st.rx.out_of_order), (0, 0));
        // The pattern, from the capture.
        let mut frames: Vec<(u64, u32, u64)> = seen
            .iter()
            .filter(|f| f.1 == 40)
            .map(|f| (f.0, f.2, f.3))
            .collect();
        assert_eq!(frames.len() as u64, arrived, "the capture saw every frame");
        frames.sort_unstable();
        let (mut boundaries, mut usable, mut boundary_gaps, mut inner_gaps) = (0u64, 0, 0, 0);
        let (mut max_inner, mut sender_inner_stalls) = (0u64, 0u64);
        for w in frames.windows(2) {
            let (dt, prev, next) = (w[1].0.saturating_sub(w[0].0), w[0].1, w[1].1);
            let sent_dt = w[1].2.saturating_sub(w[0].2);
            let crosses = u64::from(prev) / burst != u64::from(next) / burst;
            if crosses {
                boundaries += 1;
                // The sender kept the gap (else it caught up after a stall: set aside).
                if sent_dt >= half_gap {
                    usable += 1;
                    boundary_gaps += u64::from(dt >= half_gap);
                }
            } else {
                inner_gaps += u64::from(dt >= half_gap);
                sender_inner_stalls += u64::from(sent_dt >= half_gap);
                max_inner = max_inner.max(dt);
            }
        }
        let clusters = 1 + frames
            .windows(2)
            .filter(|w| w[1].0 - w[0].0 >= half_gap)
            .count() as u64;
        println!(
            "burst gap, attempt {attempt}: {clusters} clusters of arrivals for {bursts} bursts; {boundaries} burst boundaries, {usable} sent with the gap (the rest caught up after a sender stall), {boundary_gaps} of those arrived with ≥ {} ms of silence; {inner_gaps} gaps that long inside bursts ({sender_inner_stalls} of them in the send times); largest gap inside a burst {:.3} ms",
            half_gap as f64 / 1e6,
            max_inner as f64 / 1e6
        );
        let sender_stalled = usable * 2 < boundaries || sender_inner_stalls * 10 > bursts;
        if !sender_stalled || attempt == 3 {
            break (path, boundaries, usable, boundary_gaps, inner_gaps);
        }
        println!("the sender was stalled in attempt {attempt} (a loaded machine): again");
    };
    assert!(
        boundaries >= bursts - 1 - path,
        "every burst boundary was seen"
    );
    assert!(
        usable * 2 >= boundaries,
        "the sender kept the gap at no more than half of the burst boundaries"
    );
    assert!(
        boundary_gaps * 10 >= usable * 9,
        "at least 90 % of the gaps sent arrive as gaps"
    );
    assert!(
        inner_gaps * 10 <= bursts,
        "at most 10 % as many gap-sized silences inside bursts as there are bursts"
    );
}

/// Two transmit and two receive threads per port (issue 4, "more on request"): four streams
/// A→B over two TX threads, counted by two RX threads in one fanout group steered by stream
/// id, plus one stream B→A. Every count is exact against the kernel's, each receive thread
/// sees its own streams' frames, and none arrives at a thread that does not expect it.
#[test]
fn two_tx_and_two_rx_threads_count_exactly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("rx-threads", Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let (a4, b4, a6, b6): (IpAddr, IpAddr, IpAddr, IpAddr) = (
        ai.ipv4.into(),
        bi.ipv4.into(),
        ai.ipv6.into(),
        bi.ipv6.into(),
    );
    let s50 = stream(50, a4, b4, 64, 20_000.0, Limit::Frames(10_000));
    let s51 = stream(51, a6, b6, 128, 10_000.0, Limit::Frames(5_000));
    let mut s52 = stream(52, a4, b4, 512, 10_000.0, Limit::Frames(5_000));
    s52.flows.src_port_count = 20;
    let mut s53 = stream(53, a4, b4, 64, 20_000.0, Limit::Frames(10_000));
    s53.reorder_every = Some(100);
    let s54 = stream(54, b4, a4, 64, 10_000.0, Limit::Frames(5_000));
    witness(&lab, Node::A, &ai.ifname, "a");
    witness(&lab, Node::B, &bi.ifname, "b");
    let streams: Vec<TrialStream> = [s50, s51, s52, s53]
        .into_iter()
        .map(a_to_b)
        .chain(std::iter::once(b_to_a(s54)))
        .collect();
    let mut cfg = TrialConfig::new(vec![a, b], streams);
    cfg.drain = Duration::from_millis(300);
    cfg.tx_threads = 2;
    cfg.rx_threads = 2;
    let before = lab.snapshot().unwrap();
    let r = trial::run(&cfg, &AtomicBool::new(false)).expect("trial runs");
    let after = lab.snapshot().unwrap();
    let (wa, wb) = (witnessed(&lab, Node::A), witnessed(&lab, Node::B));
    let get = |id: u16| r.streams.iter().find(|s| s.stream_id == id).unwrap();
    for p in &r.rx_ports {
        assert_eq!(p.ring_drops, 0, "RX ring drops on {}", p.port);
        assert_eq!(
            p.unexpected_streams, 0,
            "a frame reached the wrong thread on {}",
            p.port
        );
    }
    // Per family at each receiving port: what the kernel saw arrive = what the threads counted.
    let sent = |ids: &[u16]| ids.iter().map(|&i| get(i).tx.sent).sum::<u64>();
    let recv = |ids: &[u16]| ids.iter().map(|&i| get(i).rx.received).sum::<u64>();
    let mut path = 0;
    for (what, ids, arrived) in [
        ("A→B IPv4", &[50u16, 52, 53][..], wb["b_v4"]),
        ("A→B IPv6", &[51][..], wb["b_v6"]),
        ("B→A IPv4", &[54][..], wa["a_v4"]),
    ] {
        let lost = path_loss(what, sent(ids), arrived, &before, &after);
        path += lost;
        assert_eq!(recv(ids), arrived, "{what}: received = kernel count");
    }
    for (id, n) in [
        (50u16, 10_000u64),
        (51, 5_000),
        (52, 5_000),
        (53, 10_000),
        (54, 5_000),
    ] {
        let s = get(id);
        assert_eq!(s.tx.sent, n, "stream {id} sent");
        assert_eq!(s.rx.lost, Some(n - s.rx.received));
        assert_eq!((s.rx.duplicates, s.rx.late), (0, 0), "stream {id}");
        if path == 0 {
            assert_eq!(s.rx.received, n, "stream {id} received");
            let ooo = if id == 53 { 100 } else { 0 };
            assert_eq!(s.rx.out_of_order, ooo, "stream {id} out of order");
        }
    }
    // B's two receive threads: streams 50 and 52 on the first, 51 and 53 on the second.
    let pb = r.rx_ports.iter().find(|p| p.port == "b").unwrap();
    assert_eq!(pb.frames_per_thread.len(), 2);
    println!("B frames per RX thread: {:?}", pb.frames_per_thread);
    assert!(pb.frames_per_thread[0] >= recv(&[50, 52]));
    assert!(pb.frames_per_thread[1] >= recv(&[51, 53]));
    // A receives one stream: one thread. A's sender report covers both its threads.
    let pa = r.rx_ports.iter().find(|p| p.port == "a").unwrap();
    assert_eq!(pa.frames_per_thread.len(), 1);
    let (_, ta) = r.tx_ports.iter().find(|(p, _)| p == "a").unwrap();
    assert_eq!(ta.streams.len(), 4);
    assert_eq!(r.total.sent, 35_000);
}

/// Two XDP transmit threads on one port (issue 8, the same `--tx-threads` as AF_PACKET): four
/// streams A→B split over two senders, each with its own program and maps, counted by B's XDP
/// receiver. Every count is exact against the frames the receiver's program took off the
/// wire, the reordering option still shows, and A's sender report covers both threads.
#[test]
fn two_xdp_tx_threads_count_exactly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("xdp-rx-threads", Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let (a4, b4) = (IpAddr::from(ai.ipv4), IpAddr::from(bi.ipv4));
    let s60 = stream(60, a4, b4, 64, 20_000.0, Limit::Frames(10_000));
    let s61 = stream(
        61,
        ai.ipv6.into(),
        bi.ipv6.into(),
        128,
        10_000.0,
        Limit::Frames(5_000),
    );
    let mut s62 = stream(62, a4, b4, 512, 10_000.0, Limit::Frames(5_000));
    s62.flows.src_port_count = 20;
    let mut s63 = stream(63, a4, b4, 64, 20_000.0, Limit::Frames(10_000));
    s63.reorder_every = Some(100);
    let wb = Arrivals::watch(&lab, Backend::Xdp, Node::B, &bi.ifname, "b");
    let mut cfg = TrialConfig::new(
        vec![a, b],
        [s60, s61, s62, s63].into_iter().map(a_to_b).collect(),
    );
    cfg.backend = Backend::Xdp;
    cfg.drain = Duration::from_millis(300);
    cfg.tx_threads = 2;
    let before = lab.snapshot().unwrap();
    let r = trial::run(&cfg, &AtomicBool::new(false)).expect("trial runs");
    let after = lab.snapshot().unwrap();
    assert_eq!(r.backend, Backend::Xdp, "{}", r.backend_note);
    assert_eq!(r.tx_threads, 2);
    let arrived = wb.all(&lab);
    let sent: u64 = r.streams.iter().map(|s| s.tx.sent).sum();
    let received: u64 = r.streams.iter().map(|s| s.rx.received).sum();
    assert_eq!(sent, 30_000);
    let path = path_loss("two XDP senders", sent, arrived, &before, &after);
    assert_eq!(received, arrived, "received = frames the program took");
    for s in &r.streams {
        let id = s.stream_id;
        assert_eq!(s.rx.lost, Some(s.tx.sent - s.rx.received), "stream {id}");
        assert_eq!((s.rx.duplicates, s.rx.late), (0, 0), "stream {id}");
        if path == 0 {
            assert_eq!(s.rx.received, s.tx.sent, "stream {id} received");
            let ooo = if id == 63 { 100 } else { 0 };
            assert_eq!(s.rx.out_of_order, ooo, "stream {id} out of order");
        }
    }
    let (_, ta) = r.tx_ports.iter().find(|(p, _)| p == "a").unwrap();
    assert_eq!(ta.streams.len(), 4, "A's report covers both senders");
}

/// `--backend auto` (issue 8): a trial that fits the XDP backend runs on it, exactly; one it
/// cannot run (two receive threads) runs on AF_PACKET, and the note names the reason. The
/// default backend is AF_PACKET.
#[test]
fn auto_backend_picks_xdp_when_it_fits_and_says_why_not_otherwise() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("auto-backend", Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let s = |id| {
        stream(
            id,
            ai.ipv4.into(),
            bi.ipv4.into(),
            64,
            20_000.0,
            Limit::Frames(4_000),
        )
    };
    assert_eq!(
        TrialConfig::new(vec![a.clone()], Vec::new()).backend,
        Backend::AfPacket
    );
    // Fits: XDP, counted by B's program.
    let wb = Arrivals::watch(&lab, Backend::Xdp, Node::B, &bi.ifname, "b");
    let mut cfg = TrialConfig::new(vec![a.clone(), b.clone()], vec![a_to_b(s(70))]);
    cfg.backend = Backend::Auto;
    cfg.drain = Duration::from_millis(300);
    let before = lab.snapshot().unwrap();
    let r = trial::run(&cfg, &AtomicBool::new(false)).expect("trial runs");
    let after = lab.snapshot().unwrap();
    assert_eq!(r.backend, Backend::Xdp, "{}", r.backend_note);
    assert!(
        r.backend_note.starts_with("auto: xdp"),
        "{}",
        r.backend_note
    );
    let st = &r.streams[0];
    let path = path_loss("auto on XDP", 4_000, wb.all(&lab), &before, &after);
    assert_eq!(st.tx.sent, 4_000);
    assert_eq!(st.rx.received, 4_000 - path);
    // Does not fit (two RX threads): AF_PACKET, with the reason.
    let mut cfg = TrialConfig::new(vec![a, b], vec![a_to_b(s(71)), a_to_b(s(72))]);
    cfg.backend = Backend::Auto;
    cfg.rx_threads = 2;
    cfg.drain = Duration::from_millis(300);
    let r = trial::run(&cfg, &AtomicBool::new(false)).expect("trial runs");
    assert_eq!(r.backend, Backend::AfPacket, "{}", r.backend_note);
    assert!(
        r.backend_note.starts_with("auto: af_packet") && r.backend_note.contains("--rx-threads"),
        "{}",
        r.backend_note
    );
    assert_eq!(r.total.sent, 8_000);
    assert_eq!(
        r.rx_ports.iter().map(|p| p.ring_drops).sum::<u64>(),
        0,
        "AF_PACKET ring drops"
    );
}

/// Both TX backends count exactly: 20,000 frames per backend on the direct topology, each
/// checked against the kernel's count at B.
#[test]
fn both_tx_backends_count_exactly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et9", Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    witness(&lab, Node::B, &bi.ifname, "b");
    for (id, backend) in [(30u16, TxBackend::Ring), (31, TxBackend::Sendmmsg)] {
        let n = 20_000;
        let s = stream(
            id,
            ai.ipv4.into(),
            bi.ipv4.into(),
            64,
            50_000.0,
            Limit::Frames(n),
        );
        let w0 = witnessed(&lab, Node::B)["b_v4"];
        let before = lab.snapshot().unwrap();
        let r = run_on(backend, vec![a.clone(), b.clone()], vec![a_to_b(s)]);
        let after = lab.snapshot().unwrap();
        let arrived = witnessed(&lab, Node::B)["b_v4"] - w0;
        let s = &r.streams[0];
        let what = format!("{} backend", backend.name());
        assert_eq!(s.tx.sent, n, "{what}: sent");
        let path = path_loss(&what, n, arrived, &before, &after);
        assert_eq!(
            s.rx.received, arrived,
            "{what}: received = kernel count at B"
        );
        assert_eq!(s.rx.received, n - path, "{what}: received");
        assert_eq!(s.rx.lost, Some(path));
        assert_eq!((s.rx.duplicates, s.rx.out_of_order, s.rx.late), (0, 0, 0));
        assert!(s.rx.latency.expect("latency").min_ns > 0);
        assert_eq!(s.rx.negative_latency, 0);
    }
}

/// A frame the DUT's full port refuses is the DUT's loss, counted exactly (DESIGN.md §7,
/// docs/engine.md "When the DUT's port refuses a frame"), on both AF_PACKET senders.
///
/// The lab is set up as a run sets it (tester ports shaped to 1 Gb/s: a tbf qdisc, TSO off, so
/// a full DUT ring stops the tester port's queue). The DUT is slowed on purpose: 3,000
/// non-matching rules in a netdev ingress chain on `wr-dut-a`, with RPS off there so that they
/// run inside the DUT port's receive poll (on the DUT's CPU, lab::napi) — it drains its
/// 256-frame ring far slower than the 100,000 frames/s offered, so the ring overflows for sure.
/// The chain's first rule counts the test frames the DUT's port took. Then, for each sender:
///
/// - sent = taken by the DUT's port + refused by it, exactly: a refused frame is neither
///   retried (it would be taken later and counted twice) nor dropped uncounted;
/// - refusals happened (else the test proves nothing), and no frame arrived twice;
/// - what the DUT took and did not forward is covered by the kernel's drop counters, and the
///   receiver's count is the kernel's at port B.
#[test]
fn frames_the_duts_full_port_refuses_are_its_loss_counted_exactly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et20", Topology::Forward, None) else {
        return;
    };
    lab.set_wire_speed(Some(1_000_000_000)).expect("shaping");
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let rules: String = (0..3000)
        .map(|i| {
            format!(
                "  ip saddr 192.0.2.{} udp dport {} accept\n",
                i % 250 + 1,
                i + 1
            )
        })
        .collect();
    nft(
        &lab,
        Node::Dut,
        &format!(
            "table netdev wr_slow {{\n counter took {{}}\n chain in {{\n  type filter hook ingress device \"wr-dut-a\" priority 0; policy accept;\n  udp dport 9 counter name \"took\"\n{rules} }}\n}}\n"
        ),
    );
    let rps = lab
        .command(
            Node::Dut,
            &[
                "sh",
                "-c",
                "echo 0 > /sys/class/net/wr-dut-a/queues/rx-0/rps_cpus",
            ],
        )
        .unwrap()
        .status()
        .unwrap();
    assert!(rps.success(), "RPS off on wr-dut-a");
    let wb = Arrivals::watch(&lab, Backend::AfPacket, Node::B, &bi.ifname, "b");
    for (id, backend) in [(40u16, TxBackend::Ring), (41, TxBackend::Sendmmsg)] {
        let n = 20_000;
        let s = stream(
            id,
            ai.ipv4.into(),
            bi.ipv4.into(),
            64,
            100_000.0,
            Limit::Frames(n),
        );
        let took0 = counters(&lab, Node::Dut, "netdev", "wr_slow")["took"];
        let arrived0 = wb.all(&lab);
        let before = lab.snapshot().unwrap();
        let r = run_on(backend, vec![a.clone(), b.clone()], vec![a_to_b(s)]);
        let after = lab.snapshot().unwrap();
        let took = counters(&lab, Node::Dut, "netdev", "wr_slow")["took"] - took0;
        let arrived = wb.all(&lab) - arrived0;
        let s = &r.streams[0];
        let what = format!("{} backend", backend.name());
        println!(
            "{what}: sent {}, refused by the DUT's port {}, taken by it {took}, received {}, \
             lost {:?}, slipped {}",
            s.tx.sent, s.tx.refused_by_peer, s.rx.received, s.rx.lost, s.tx.slipped
        );
        assert!(
            s.tx.refused_by_peer > 0,
            "{what}: the slowed DUT's ring never overflowed; the test proves nothing"
        );
        assert_eq!(
            s.tx.sent,
            took + s.tx.refused_by_peer,
            "{what}: every frame handed over was taken by the DUT's port or refused by it"
        );
        assert_eq!(s.rx.duplicates, 0, "{what}: a refused frame was sent again");
        assert_eq!(
            s.rx.received, arrived,
            "{what}: received = kernel count at B"
        );
        assert_eq!(s.rx.lost, Some(s.tx.sent - s.rx.received), "{what}: lost");
        path_loss(&what, took, arrived, &before, &after);
    }
}

#[test]
fn napt_keeps_streams_identified() {
    napt_identifies(Backend::AfPacket, "et5");
}

#[test]
fn napt_keeps_streams_identified_xdp() {
    napt_identifies(Backend::Xdp, "et5x");
}

fn napt_identifies(engine: Backend, lab_name: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip(lab_name, Topology::Forward, Some("napt")) else {
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
    let wb = Arrivals::watch(&lab, engine, Node::B, &bi.ifname, "b");
    let before = lab.snapshot().unwrap();
    let r = run_b(engine, vec![a, b], vec![a_to_b(s1), a_to_b(s2)]);
    let after = lab.snapshot().unwrap();
    let arrived = wb.all(&lab);
    let sent: u64 = r.streams.iter().map(|s| s.tx.sent).sum();
    let path = path_loss("napt test", sent, arrived, &before, &after);
    for s in &r.streams {
        assert!(
            s.rx.received + path >= s.tx.sent,
            "stream {} identified through NAPT",
            s.stream_id
        );
        assert!(s.tx.sent > 0);
    }
    assert_eq!(
        r.streams.iter().map(|s| s.rx.received).sum::<u64>(),
        arrived,
        "every frame that arrived was identified"
    );
    assert_eq!(
        r.rx_ports.iter().map(|p| p.unexpected_streams).sum::<u64>(),
        0
    );
}

/// Rate accuracy over 5 s (issue 4): achieved offered rate within ±1 % of intended, and every
/// frame received. `#[ignore]`d because it takes ~20 s and needs a quiet machine:
/// `cargo test --release -p engine --test trial_lab rate_accuracy -- --ignored --nocapture`.
fn rate_accuracy(lab_name: &str, pps: Option<f64>) {
    rate_accuracy_with(Backend::AfPacket, lab_name, pps)
}

/// As [`rate_accuracy`], on the packet engine `engine`.
fn rate_accuracy_with(engine: Backend, lab_name: &str, pps: Option<f64>) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip(lab_name, Topology::Direct, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let pps = match pps {
        Some(p) => p,
        None => {
            // The highest rate the backend sustains here: start from an unpaced 1 s run, then
            // probe paced 1 s runs from 90 % of it downwards (steps of 10 %) and take the
            // first rate the pacer actually holds (no slipped frames, within ±0.5 %). Not a
            // fixed fraction of an unpaced burst: what a shared machine sustains varies.
            // The 5 s test then runs at 90 % of that.
            let probe = |rate: Rate, ns: u64| {
                let mut s = stream(
                    20,
                    ai.ipv4.into(),
                    bi.ipv4.into(),
                    64,
                    1.0,
                    Limit::DurationNs(ns),
                );
                s.rate = rate;
                // Only the sender's figures matter here; the receiver may overflow its ring
                // at the unpaced rate, so this does not go through `run`'s ring-drop check.
                let mut cfg = TrialConfig::new(vec![a.clone(), b.clone()], vec![a_to_b(s)]);
                cfg.drain = Duration::from_millis(100);
                cfg.backend = engine;
                let r = trial::run(&cfg, &AtomicBool::new(false)).expect("probe runs");
                r.streams[0].tx.clone()
            };
            let max = probe(Rate::Unlimited, 1_000_000_000).achieved_pps.0;
            println!("unpaced: {max:.0} frames/s");
            let mut chosen = None;
            for step in 1..=6 {
                let pps = (max * (1.0 - 0.1 * f64::from(step))).floor();
                let t = probe(Rate::Pps(Pps(pps)), 1_000_000_000);
                let err = (t.achieved_pps.0 - pps) / pps;
                println!(
                    "probe {pps:.0}: achieved {:.0} ({:+.3} %), slipped {}",
                    t.achieved_pps.0,
                    err * 100.0,
                    t.slipped
                );
                if t.slipped == 0 && err.abs() <= 0.005 {
                    chosen = Some(pps);
                    break;
                }
            }
            let held = chosen.expect("no rate from 40 % to 90 % of unpaced was held for 1 s");
            // A 1 s probe can catch a quiet second of a busy machine: test 5 s with 10 %
            // headroom below what was held.
            let pps = (held * 0.9).floor();
            println!("held {held:.0} frames/s for 1 s; testing {pps:.0} frames/s for 5 s");
            pps
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
    let wb = Arrivals::watch(&lab, engine, Node::B, &bi.ifname, "b");
    let before = lab.snapshot().unwrap();
    // `run_b` also checks the backend that ran and that no receive ring dropped a frame.
    let r = run_b(engine, vec![a, b], vec![a_to_b(s)]);
    let after = lab.snapshot().unwrap();
    let arrived = wb.all(&lab);
    let s = &r.streams[0];
    let err = (s.tx.achieved_pps.0 - pps) / pps;
    println!(
        "intended {pps:.0} achieved {:.1} ({:+.3} %), sent {} (planned {}), slipped {}, received {}",
        s.tx.achieved_pps.0,
        err * 100.0,
        s.tx.sent,
        (pps * 5.0).ceil(),
        s.tx.slipped,
        s.rx.received
    );
    let path = path_loss("rate test", s.tx.sent, arrived, &before, &after);
    assert_eq!(s.rx.received, arrived, "received = kernel count at B");
    assert_eq!(s.rx.received, s.tx.sent - path);
    assert!(err.abs() <= 0.01, "achieved rate within ±1 %");
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

#[test]
#[ignore = "5 s timing test; run with --ignored on a quiet machine"]
fn rate_accuracy_10kpps_xdp() {
    rate_accuracy_with(Backend::Xdp, "et6x", Some(10_000.0));
}

#[test]
#[ignore = "5 s timing test; run with --ignored on a quiet machine"]
fn rate_accuracy_100kpps_xdp() {
    rate_accuracy_with(Backend::Xdp, "et7x", Some(100_000.0));
}

#[test]
#[ignore = "7 s timing test; run with --ignored on a quiet machine"]
fn rate_accuracy_max_xdp() {
    rate_accuracy_with(Backend::Xdp, "et8x", None);
}

/// Issue 8: for the same induced faults, both backends report the same counts. One lab, one
/// DUT rule set, the same stream run once through each backend:
///
/// - loss: the DUT drops every 10th frame (`numgen inc mod 10`), counted by its rule;
/// - duplicates: the DUT duplicates every 8th frame (`dup`), counted by its rule;
/// - reordering: the stream swaps every 100th pair (the sender's option).
///
/// Each backend is held to the rule counters exactly (lost = the rule's drops + path loss, covered
/// by the kernel's drop counters; out of order = the swapped pairs), and the two backends'
/// lost/out-of-order counts must be equal when neither saw path loss. Duplicates are compared with
/// what arrived: a copy the kernel DUT makes can vanish inside it uncounted (seen on 2026-11-22:
/// nf_dup's copies die on unresolved neighbours without a drop counter), so each backend's
/// duplicates must equal the copies that arrived (kernel count − received), and equal the DUT's
/// count when every copy arrived.
#[test]
fn both_backends_count_the_same_faults_the_same() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = lab_or_skip("et9", Topology::Forward, None) else {
        return;
    };
    let (a, ai) = port(&lab, PortId::A, "a");
    let (b, bi) = port(&lab, PortId::B, "b");
    let dut_b = bi.peer.ifname.clone();
    // Drop the 10th of every 10 (phase 0) and duplicate the 1st of every 8 frames that pass.
    nft(
        &lab,
        Node::Dut,
        &format!(
            "table ip wr_engtest {{\n counter dropped {{}}\n counter duped {{}}\n chain fw {{\n  type filter hook forward priority 0; policy accept;\n  udp dport 9 numgen inc mod 10 0 counter name \"dropped\" drop\n  udp dport 9 numgen inc mod 8 0 counter name \"duped\" dup to {} device \"{dut_b}\"\n }}\n}}\n",
            bi.ipv4
        ),
    );
    let n = 8_000u64;
    let mut arrivals: Option<Arrivals> = None;
    let mut seen = Vec::new();
    for engine in [Backend::AfPacket, Backend::Xdp] {
        let mut s = stream(
            40,
            ai.ipv4.into(),
            bi.ipv4.into(),
            64,
            10_000.0,
            Limit::Frames(n),
        );
        s.reorder_every = Some(100);
        let w = match &mut arrivals {
            Some(w) => {
                w.engine = engine;
                w.rebase(&lab);
                w
            }
            None => arrivals.insert(Arrivals::watch(&lab, engine, Node::B, &bi.ifname, "b")),
        };
        let c0 = counters(&lab, Node::Dut, "ip", "wr_engtest");
        let before = lab.snapshot().unwrap();
        let r = run_b(engine, vec![a.clone(), b.clone()], vec![a_to_b(s)]);
        let after = lab.snapshot().unwrap();
        let c1 = counters(&lab, Node::Dut, "ip", "wr_engtest");
        let (dropped, duped) = (c1["dropped"] - c0["dropped"], c1["duped"] - c0["duped"]);
        let arrived = w.all(&lab);
        let s = &r.streams[0];
        let what = engine.name();
        println!(
            "{what}: sent {} received {} lost {:?} dup {} ooo {} | DUT dropped {dropped} duped {duped}, arrived {arrived}",
            s.tx.sent, s.rx.received, s.rx.lost, s.rx.duplicates, s.rx.out_of_order
        );
        assert_eq!(s.tx.sent, n, "{what}: sent");
        assert_eq!(s.tx.swapped_pairs, n / 100, "{what}: swapped pairs");
        assert_eq!(dropped, n / 10, "{what}: the rule dropped every 10th frame");
        assert_eq!(
            s.rx.received + s.rx.duplicates,
            arrived,
            "{what}: every arriving copy is received or a duplicate"
        );
        // Originals the DUT forwarded: n − dropped; those that did not arrive are path loss.
        let path = n - dropped - s.rx.received;
        if path > 0 {
            path_loss(what, n - dropped, s.rx.received, &before, &after);
        }
        assert_eq!(s.rx.lost, Some(dropped + path), "{what}: lost");
        let copies = arrived - s.rx.received;
        assert_eq!(
            s.rx.duplicates, copies,
            "{what}: duplicates = copies arrived"
        );
        assert!(copies <= duped, "{what}: no more copies than the DUT made");
        // A frame lost next to a swapped pair can take its reordering with it.
        assert!(s.rx.out_of_order <= n / 100 && s.rx.out_of_order + path >= n / 100);
        seen.push((
            path,
            duped - copies,
            s.rx.lost,
            s.rx.duplicates,
            s.rx.out_of_order,
        ));
    }
    let (p0, v0, lost0, dup0, ooo0) = seen[0];
    let (p1, v1, lost1, dup1, ooo1) = seen[1];
    if p0 == 0 && p1 == 0 {
        assert_eq!(
            (lost0, ooo0),
            (lost1, ooo1),
            "same loss and reordering on both backends"
        );
        assert_eq!((lost0, ooo0), (Some(n / 10), n / 100));
    } else {
        println!(
            "path loss af_packet {p0}, xdp {p1}: loss compared through the rule counters only"
        );
    }
    if v0 == 0 && v1 == 0 {
        assert_eq!(dup0, dup1, "same duplicates on both backends");
    } else {
        println!("DUT copies that vanished inside the DUT: af_packet {v0}, xdp {v1}");
    }
}
