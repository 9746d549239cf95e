//! Integration tests on real namespaces (root only): every effect is observed, not assumed.
//!
//! Each test uses its own lab name, so cargo's parallel test threads never share a namespace,
//! and a guard removes the lab even when the test panics. Without root or a needed tool a
//! test prints `SKIP: <reason>` and returns.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use lab::{Lab, LabConfig, LabError, MssBackend, Node, PortId, Profile, Topology};

/// Why this test cannot run here, if it cannot.
fn skip_reason(tools: &[&str]) -> Option<String> {
    if !lab::is_root() {
        return Some("needs root (network namespaces)".into());
    }
    for t in tools {
        if lab::cmd::tool(t).is_err()
            && !["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
                .iter()
                .any(|d| std::path::Path::new(d).join(t).exists())
        {
            return Some(format!("`{t}` not installed"));
        }
    }
    None
}

macro_rules! require {
    ($($tool:expr),*) => {
        if let Some(r) = skip_reason(&["ip", "nft" $(, $tool)*]) {
            println!("SKIP: {r}");
            return;
        }
    };
}

/// Removes the lab when the test ends, however it ends.
struct Guard(String);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = lab::down(&self.0);
    }
}

/// Run `body` with a deadline; on timeout remove the lab and fail.
fn with_deadline(name: &str, secs: u64, body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        body();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The body panicked; re-raise its panic.
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let _ = lab::down(name);
            panic!("test `{name}` exceeded {secs} s");
        }
    }
}

fn up(name: &str, topology: Topology, profile: Option<&str>) -> (Lab, Guard) {
    let lab = Lab::up(&LabConfig {
        name: name.into(),
        topology,
        profile: profile.map(|p| Profile::parse(p).unwrap()),
    })
    .unwrap_or_else(|e| panic!("lab up {name}: {e}"));
    (lab, Guard(name.into()))
}

fn ok(lab: &Lab, node: Node, argv: &[&str]) -> String {
    let out = lab.exec(node, argv).unwrap();
    assert!(
        out.status.success(),
        "`{}` in {node} failed: {}{}",
        argv.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ping(lab: &Lab, from: Node, to: &str) {
    ok(lab, from, &["ping", "-c", "2", "-i", "0.2", "-W", "2", to]);
}

/// Wait (polling, with a deadline) until something listens on TCP `port` in `node`.
fn wait_listening(lab: &Lab, node: Node, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let filter = format!("sport = :{port}");
    loop {
        let out = ok(lab, node, &["ss", "-Hltn", &filter]);
        if !out.trim().is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port} in {node}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start a one-shot iperf3 server in `node` with JSON output.
fn iperf3_server(lab: &Lab, node: Node, port: u16) -> Child {
    let p = port.to_string();
    let child = lab
        .command(node, &["iperf3", "-s", "-1", "-J", "-p", &p])
        .unwrap()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_listening(lab, node, port);
    child
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("iperf3 JSON: {e}: {s}"))
}

/// iperf3 TCP for 1 s from `from` to `dst`; returns the received rate in bit/s.
fn iperf3_tcp(lab: &Lab, server: Node, from: Node, dst: &str) -> f64 {
    let mut srv = iperf3_server(lab, server, 5201);
    let out = ok(
        lab,
        from,
        &["iperf3", "-c", dst, "-p", "5201", "-t", "1", "-J"],
    );
    let _ = srv.wait();
    json(&out)["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap()
}

#[test]
fn forward_ping_and_tcp_both_families() {
    require!("ping", "iperf3", "ss");
    with_deadline("it-fwd", 60, || {
        let (lab, _g) = up("it-fwd", Topology::Forward, None);
        let b = lab.port(PortId::B).unwrap();
        let a = lab.port(PortId::A).unwrap();
        assert_eq!(a.netns, "wr-it-fwd-a");
        assert_eq!(a.peer.node, Node::Dut);
        assert_eq!(a.gateway_v4, Some(a.peer.ipv4));
        assert_eq!(a.peer.mac, "02:77:72:00:01:0a");
        ping(&lab, Node::A, &b.ipv4.to_string());
        ping(&lab, Node::A, &b.ipv6.to_string());
        for dst in [b.ipv4.to_string(), b.ipv6.to_string()] {
            let bps = iperf3_tcp(&lab, Node::B, Node::A, &dst);
            println!("forward TCP A -> B {dst}: {:.2} Gbit/s", bps / 1e9);
            assert!(bps > 1e6, "TCP through the DUT: {bps} bit/s");
        }
        // `up` again on a lab that is up is fine and keeps it.
        let again = Lab::up(&LabConfig {
            name: "it-fwd".into(),
            topology: Topology::Forward,
            profile: None,
        })
        .unwrap();
        assert_eq!(again.profile().unwrap(), Some(Profile::Forward));
        // A different topology on the same name is refused, not silently rebuilt.
        let e = Lab::up(&LabConfig {
            name: "it-fwd".into(),
            topology: Topology::Direct,
            profile: None,
        })
        .unwrap_err();
        assert!(matches!(e, LabError::TopologyMismatch { .. }), "{e}");
    });
}

#[test]
fn endpoint_ping_and_tcp_both_families() {
    require!("ping", "iperf3", "ss");
    with_deadline("it-ep", 60, || {
        let (lab, _g) = up("it-ep", Topology::Endpoint, None);
        let a = lab.port(PortId::A).unwrap();
        assert!(lab.port(PortId::B).is_err());
        let dut4 = a.target_v4.unwrap().to_string();
        let dut6 = a.target_v6.unwrap().to_string();
        ping(&lab, Node::A, &dut4);
        ping(&lab, Node::A, &dut6);
        for dst in [dut4, dut6] {
            let bps = iperf3_tcp(&lab, Node::Dut, Node::A, &dst);
            println!("endpoint TCP A -> DUT {dst}: {:.2} Gbit/s", bps / 1e9);
            assert!(bps > 1e6);
        }
        // NAPT needs a forwarding DUT.
        let e = lab
            .apply_profile(&Profile::parse("napt").unwrap())
            .unwrap_err();
        assert!(matches!(e, LabError::ProfileNotForTopology { .. }), "{e}");
    });
}

#[test]
fn direct_ping_both_families() {
    require!("ping");
    with_deadline("it-direct", 30, || {
        let (lab, _g) = up("it-direct", Topology::Direct, None);
        let b = lab.port(PortId::B).unwrap();
        assert_eq!(b.peer.node, Node::A);
        ping(&lab, Node::A, &b.ipv4.to_string());
        ping(&lab, Node::A, &b.ipv6.to_string());
        assert!(lab.netns(Node::Dut).is_err());
    });
}

/// UDP packets/s the DUT delivered to port B (wr-b's rx counter over the run), offered by
/// iperf3 with 18-byte payloads (64-byte frames) for 2 s. The interface counter, not the
/// iperf3 server's count, because the server's socket also drops under CPU contention.
/// A speed: used only by the benchmark below, never asserted on.
fn udp_rate(lab: &Lab, dst: &str) -> (f64, String) {
    let mut srv = iperf3_server(lab, Node::B, 5201);
    let before = lab.snapshot().unwrap();
    let argv = [
        "iperf3", "-c", dst, "-p", "5201", "-u", "-b", "0", "-l", "18", "-t", "2", "-J",
    ];
    let out = ok(lab, Node::A, &argv);
    let after = lab.snapshot().unwrap();
    let _ = srv.wait();
    let v = json(&out);
    let sum = &v["end"]["sum"];
    let sent = sum["packets"].as_f64().unwrap();
    let lost = sum["lost_packets"].as_f64().unwrap();
    let secs = sum["seconds"].as_f64().unwrap();
    let rx = |s: &lab::StatsSnapshot| s.iface(Node::B, "wr-b").unwrap().rx_packets as f64;
    let at_b = rx(&after) - rx(&before);
    let pps = at_b / secs;
    let drops: u64 = after
        .softnet
        .iter()
        .zip(&before.softnet)
        .map(|(a, b)| a.dropped - b.dropped)
        .sum();
    let report = format!(
        "iperf3 sent {sent} (server lost {lost}) in {secs:.2} s; wr-b rx +{at_b} -> {pps:.0} pps forwarded; softnet drops +{drops}"
    );
    (pps, report)
}

/// The kernel's own packet counters of `node`'s namespace: `/proc/net/snmp` (as
/// `Ip:ForwDatagrams`, `Udp:InDatagrams`, …) and `/proc/net/snmp6` (`Ip6OutForwDatagrams`, …).
/// Per namespace, so they count exactly what that node's stack did.
fn snmp(lab: &Lab, node: Node) -> std::collections::HashMap<String, u64> {
    let text = ok(lab, node, &["cat", "/proc/net/snmp", "/proc/net/snmp6"]);
    let mut m = std::collections::HashMap::new();
    let mut header: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let Some(first) = w.next() else { continue };
        if let Some(proto) = first.strip_suffix(':') {
            // snmp: a header line of names, then a line of values with the same prefix.
            let rest: Vec<String> = w.map(str::to_string).collect();
            match header.take() {
                Some((p, names)) if p == proto && rest.iter().all(|x| x.parse::<i64>().is_ok()) => {
                    for (n, v) in names.iter().zip(&rest) {
                        m.insert(format!("{p}:{n}"), v.parse::<u64>().unwrap_or(0));
                    }
                }
                _ => header = Some((proto.to_string(), rest)),
            }
        } else if let Some(v) = w.next().and_then(|v| v.parse::<u64>().ok()) {
            // snmp6: `name value`.
            m.insert(first.to_string(), v);
        }
    }
    m
}

/// Packets the DUT forwarded, both families: counted by the kernel after the forward hook
/// accepted them (`ip_forward_finish`, `ip6_forward_finish`).
fn forwarded(m: &std::collections::HashMap<String, u64>) -> u64 {
    m["Ip:ForwDatagrams"] + m["Ip6OutForwDatagrams"]
}

/// The tester's receive counter on a port: an nftables counter of UDP datagrams to or from
/// iperf3's port arriving on `node`'s interface, before any socket. Exact whether or not
/// iperf3 reads them (the kernel's `Udp:InDatagrams` counts only what a program read, so a
/// datagram still queued when iperf3 closes its socket would vanish from it).
fn count_udp_rx(lab: &Lab, node: Node, port: u16) {
    let script = format!(
        "add table inet rx_count; \
         add counter inet rx_count udp_rx; \
         add chain inet rx_count rx {{ type filter hook prerouting priority -300; }}; \
         add rule inet rx_count rx udp sport {port} counter name udp_rx; \
         add rule inet rx_count rx udp dport {port} counter name udp_rx"
    );
    ok(lab, node, &["nft", &script]);
}

fn udp_rx(lab: &Lab, node: Node) -> u64 {
    let out = ok(
        lab,
        node,
        &["nft", "-j", "list", "counters", "table", "inet", "rx_count"],
    );
    lab::stats::parse_nft_counters(&out).unwrap()[0].packets
}

fn accepted(lab: &Lab) -> u64 {
    lab.snapshot()
        .unwrap()
        .counter("accepted")
        .map_or(0, |c| c.packets)
}

/// UDP datagrams sent through the DUT by the mechanism test: few, so that all of them (and
/// iperf3's control connection) fit in one softnet backlog. Even a DUT that stalled for the
/// whole run could not overflow its backlog, so any loss is a fault, not slowness.
const MECHANISM_PACKETS: u64 = 500;

#[test]
fn filter_stateless_10000_every_forwarded_packet_walks_the_list() {
    require!("iperf3", "ss");
    with_deadline("it-filter", 120, || {
        let (lab, _g) = up("it-filter", Topology::Forward, None);
        let dst = lab.port(PortId::B).unwrap().ipv4.to_string();

        let p = Profile::parse("filter-stateless-10000").unwrap();
        let t0 = Instant::now();
        lab.apply_profile(&p).unwrap();
        println!(
            "filter-stateless-10000 loaded in {:.3} s (printed, not asserted)",
            t0.elapsed().as_secs_f64()
        );

        // Loaded: 10,000 drop rules, then the counted accept as the chain's last rule, so a
        // packet reaches the `accepted` counter only after being compared with every rule.
        let rules = ok(
            &lab,
            Node::Dut,
            &["nft", "list", "table", "inet", "wirerate"],
        );
        let lines: Vec<&str> = rules.lines().map(str::trim).collect();
        let drops: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].ends_with(" drop"))
            .collect();
        assert_eq!(drops.len(), 10_000, "{}", &rules[..rules.len().min(2000)]);
        let last_drop = *drops.last().unwrap();
        assert_eq!(lines[last_drop + 1], "counter name \"accepted\" accept");
        assert_eq!(
            lines[last_drop + 2],
            "}",
            "the counted accept is the last rule"
        );

        // A fixed number of small UDP datagrams at ~1,000/s (18 bytes * 8 bit = 144 bit each).
        let backlog: u64 = std::fs::read_to_string("/proc/sys/net/core/netdev_max_backlog")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            MECHANISM_PACKETS * 2 <= backlog,
            "netdev_max_backlog {backlog} is too small for {MECHANISM_PACKETS} packets"
        );
        count_udp_rx(&lab, Node::A, 5201);
        count_udp_rx(&lab, Node::B, 5201);
        let (a0, b0, dut0) = (
            snmp(&lab, Node::A),
            snmp(&lab, Node::B),
            snmp(&lab, Node::Dut),
        );
        let acc0 = accepted(&lab);
        let before = lab.snapshot().unwrap();
        let srv = iperf3_server(&lab, Node::B, 5201);
        let n = MECHANISM_PACKETS.to_string();
        let argv = [
            "iperf3", "-c", &dst, "-p", "5201", "-u", "-b", "144K", "-l", "18", "-k", &n, "-J",
        ];
        let out = ok(&lab, Node::A, &argv);
        let srv_out = srv.wait_with_output().unwrap();
        let sent_by_iperf3 = json(&out)["end"]["sum"]["packets"].as_u64().unwrap();
        let srv_lost =
            json(&String::from_utf8_lossy(&srv_out.stdout))["end"]["sum"]["lost_packets"].as_i64();
        assert_eq!(sent_by_iperf3, MECHANISM_PACKETS, "iperf3 -k {n}");

        // Arrived at port B: every UDP datagram port A's stack sent (iperf3's data and its
        // UDP hello) arrived on port B, and B's reply on A. Poll until the last one is counted
        // (a condition with a deadline, not a sleep).
        let deadline = Instant::now() + Duration::from_secs(10);
        let (udp_a_to_b, udp_at_b, udp_b_to_a, udp_at_a) = loop {
            let (a1, b1) = (snmp(&lab, Node::A), snmp(&lab, Node::B));
            let sent_a = a1["Udp:OutDatagrams"] - a0["Udp:OutDatagrams"];
            let sent_b = b1["Udp:OutDatagrams"] - b0["Udp:OutDatagrams"];
            let (at_b, at_a) = (udp_rx(&lab, Node::B), udp_rx(&lab, Node::A));
            if (sent_a, sent_b) == (at_b, at_a) || Instant::now() > deadline {
                break (sent_a, at_b, sent_b, at_a);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        println!(
            "UDP A->B: sent {udp_a_to_b} (iperf3 data {sent_by_iperf3}), arrived at B {udp_at_b}; \
             B->A: sent {udp_b_to_a}, arrived at A {udp_at_a}; iperf3 server lost {srv_lost:?}"
        );
        assert!(udp_a_to_b >= MECHANISM_PACKETS);
        assert_eq!(udp_at_b, udp_a_to_b, "UDP A->B lost in the DUT");
        assert_eq!(udp_at_a, udp_b_to_a, "UDP B->A lost in the DUT");

        // Every forwarded packet walked the whole list: the counter behind the last rule
        // equals the kernel's count of forwarded packets, exactly. Read it between two reads
        // of the kernel's counters that agree, so no straggler (iperf3's last TCP ACK) is
        // forwarded in between.
        let deadline = Instant::now() + Duration::from_secs(10);
        let (dut1, acc) = loop {
            let m1 = snmp(&lab, Node::Dut);
            let acc = accepted(&lab);
            let m2 = snmp(&lab, Node::Dut);
            let key =
                |m: &std::collections::HashMap<String, u64>| (forwarded(m), m["Ip:InReceives"]);
            if key(&m1) == key(&m2) || Instant::now() > deadline {
                break (m2, acc - acc0);
            }
        };
        let fwd = forwarded(&dut1) - forwarded(&dut0);
        let in4 = dut1["Ip:InReceives"] - dut0["Ip:InReceives"];
        let fwd4 = dut1["Ip:ForwDatagrams"] - dut0["Ip:ForwDatagrams"];
        let after = lab.snapshot().unwrap();
        let d = |node, ifname: &str, f: fn(&lab::stats::IfaceStats) -> u64| {
            f(after.iface(node, ifname).unwrap()) - f(before.iface(node, ifname).unwrap())
        };
        let dut_tx =
            d(Node::Dut, "wr-dut-a", |i| i.tx_packets) + d(Node::Dut, "wr-dut-b", |i| i.tx_packets);
        let b_rx = d(Node::B, "wr-b", |i| i.rx_packets);
        let udp = udp_a_to_b + udp_b_to_a;
        println!(
            "DUT forwarded {fwd} (kernel), `accepted` counted {acc}; of them UDP {udp}, \
             iperf3's TCP control {}; DUT IPv4 received {in4}; DUT egress tx +{dut_tx}, \
             wr-b rx +{b_rx}",
            fwd.saturating_sub(udp)
        );
        assert_eq!(
            acc, fwd,
            "forwarded packets that did not reach the final accept"
        );
        // Nothing the DUT received over IPv4 was dropped (by a rule or otherwise): all of it is
        // test traffic between A and B, and all of it was forwarded.
        assert_eq!(in4, fwd4, "IPv4 received by the DUT but not forwarded");
        // Each UDP datagram crossed the DUT as one packet (UDP is not GRO-merged here), and
        // so was counted; the rest is the control connection.
        assert!(acc >= udp, "accepted {acc} < UDP through the DUT {udp}");
        // Every forwarded packet left through a DUT port (more with the DUT's own ARP/ND).
        assert!(dut_tx >= fwd, "DUT tx {dut_tx} < forwarded {fwd}");
        assert!(
            b_rx >= udp_a_to_b,
            "wr-b rx {b_rx} < UDP sent to B {udp_a_to_b}"
        );
        assert_eq!(
            after.conntrack_entries.unwrap_or(0),
            0,
            "stateless: no conntrack"
        );

        // Switching back removes the rules atomically.
        lab.apply_profile(&Profile::Forward).unwrap();
        let rules = ok(
            &lab,
            Node::Dut,
            &["nft", "list", "table", "inet", "wirerate"],
        );
        assert!(!rules.contains("drop"), "{rules}");
        assert!(!rules.contains("accepted"), "{rules}");
    });
}

/// Benchmark, not a test: how much 10,000 stateless rules cut the DUT's UDP forwarding rate.
/// The figures depend on this machine's speed and load (and on iperf3's), so it prints them
/// and asserts none. Run:
/// `cargo test --release -p lab --test lab_netns bench_filter_stateless_10000_ratio -- --ignored --nocapture`
#[test]
#[ignore = "benchmark: prints figures, asserts none; run with --ignored --nocapture"]
fn bench_filter_stateless_10000_ratio() {
    require!("iperf3", "ss");
    let loadavg = || {
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    println!("load average before: {}", loadavg());
    with_deadline("bench-filter", 120, move || {
        let (lab, _g) = up("bench-filter", Topology::Forward, None);
        let dst = lab.port(PortId::B).unwrap().ipv4.to_string();
        let (fwd, r1) = udp_rate(&lab, &dst);
        println!("forward: {r1}");

        let t0 = Instant::now();
        lab.apply_profile(&Profile::parse("filter-stateless-10000").unwrap())
            .unwrap();
        println!(
            "filter-stateless-10000 loaded in {:.3} s",
            t0.elapsed().as_secs_f64()
        );
        let (filtered, r2) = udp_rate(&lab, &dst);
        println!("filter-stateless-10000: {r2}");
        println!(
            "forward {fwd:.0} pps, filter-stateless-10000 {filtered:.0} pps, ratio {:.1}x",
            fwd / filtered.max(1.0)
        );
        println!("load average after: {}", loadavg());
    });
}

#[test]
fn napt_source_seen_at_b_is_the_duts() {
    require!("iperf3", "ss");
    with_deadline("it-napt", 60, || {
        let (lab, _g) = up("it-napt", Topology::Forward, Some("forward"));
        let a = lab.port(PortId::A).unwrap();
        let b = lab.port(PortId::B).unwrap();
        let dst = b.ipv4.to_string();
        let peer_seen_at_b = |lab: &Lab| {
            let srv = iperf3_server(lab, Node::B, 5201);
            ok(
                lab,
                Node::A,
                &["iperf3", "-c", &dst, "-p", "5201", "-t", "1"],
            );
            let out = srv.wait_with_output().unwrap();
            let v = json(&String::from_utf8_lossy(&out.stdout));
            v["start"]["connected"][0]["remote_host"]
                .as_str()
                .unwrap()
                .to_string()
        };
        // Control: plain routing shows port A's own address.
        assert_eq!(peer_seen_at_b(&lab), a.ipv4.to_string());

        lab.apply_profile(&Profile::parse("napt+filter-stateful-100").unwrap())
            .unwrap();
        let seen = peer_seen_at_b(&lab);
        println!(
            "napt: port B sees {seen} (DUT's B-side address {})",
            b.peer.ipv4
        );
        assert_eq!(seen, b.peer.ipv4.to_string());
        let s = lab.snapshot().unwrap();
        assert!(s.counter("masqueraded").unwrap().packets > 0);
        assert!(s.counter("established").unwrap().packets > 0);
        assert!(s.conntrack_entries.unwrap() > 0, "{s:?}");
        assert!(s.dut_cpu.is_some() == lab::dut_cpu().is_some());
    });
}

/// Wait for tshark to say it is capturing (a condition, not a sleep).
fn wait_capturing(cap: &mut Child) {
    let stderr = cap.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Capturing on") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(15))
        .expect("tshark did not start capturing");
}

/// Capture the first SYN to TCP port 5999 at port B and return its MSS option.
fn mss_seen_at_b(lab: &Lab, dst: &str) -> String {
    let mut cap = lab
        .command(
            Node::B,
            &[
                "tshark",
                "-n",
                "-i",
                "wr-b",
                "-f",
                "tcp dst port 5999",
                "-c",
                "1",
                "-a",
                "duration:20",
                "-T",
                "fields",
                "-e",
                "tcp.options.mss_val",
            ],
        )
        .unwrap()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_capturing(&mut cap);
    // Nothing listens on 5999: the SYN goes out, B answers RST; resend until captured.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let _ = lab.exec(Node::A, &["iperf3", "-c", dst, "-p", "5999", "-t", "1"]);
        if cap.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = cap.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn mss_clamp_1200_seen_in_syn_at_b() {
    require!("iperf3", "tshark");
    with_deadline("it-mss", 90, || {
        let (lab, _g) = up("it-mss", Topology::Forward, None);
        let b = lab.port(PortId::B).unwrap();
        let v4 = b.ipv4.to_string();
        let v6 = b.ipv6.to_string();
        // Control: without the clamp the SYN carries the veth's MSS (1500 - 40).
        assert_eq!(mss_seen_at_b(&lab, &v4), "1460");

        lab.apply_profile(&Profile::parse("mss-clamp-1200").unwrap())
            .unwrap();
        assert_eq!(mss_seen_at_b(&lab, &v4), "1200");
        assert_eq!(mss_seen_at_b(&lab, &v6), "1200");
        assert!(
            lab.snapshot()
                .unwrap()
                .counter("mss_clamped")
                .unwrap()
                .packets
                >= 2
        );

        // The xtables TCPMSS fallback does the same, and switching back removes it.
        if lab::features().unwrap().xtables_tcpmss {
            lab.apply_profile_using(
                &Profile::parse("mss-clamp-1200").unwrap(),
                MssBackend::XtablesTcpmss,
            )
            .unwrap();
            assert_eq!(mss_seen_at_b(&lab, &v4), "1200");
            lab.apply_profile(&Profile::Forward).unwrap();
            let tables = ok(&lab, Node::Dut, &["nft", "list", "tables"]);
            assert!(!tables.contains("mangle"), "{tables}");
        } else {
            println!("SKIP (part): xtables TCPMSS unavailable");
        }
    });
}

#[test]
fn unsupported_and_unknown_profiles_are_clear() {
    require!();
    with_deadline("it-errors", 30, || {
        let e = lab::LabError::from(Profile::parse("filter-bogus-3").unwrap_err());
        assert!(e.is_usage() && e.to_string().contains("valid profiles"));
        let f = lab::features().unwrap();
        println!("features: {f:?}");
        if !f.xdp_fastpath {
            let e = Lab::up(&LabConfig {
                name: "it-errors".into(),
                topology: Topology::Forward,
                profile: Some(Profile::Fastpath),
            })
            .unwrap_err();
            assert!(e.is_usage());
            assert!(
                e.to_string()
                    .contains("unsupported on this kernel: native XDP"),
                "{e}"
            );
            // Refused before anything was built.
            assert!(lab::status("it-errors").unwrap().is_none());
        }
        let cat = lab::catalogue();
        assert_eq!(cat.len(), lab::profiles::PATTERNS.len());
    });
}

#[test]
fn rps_steers_dut_ingress_to_the_dut_cpu() {
    require!();
    let Some(dut) = lab::dut_cpu() else {
        println!("SKIP: one CPU, no isolation");
        return;
    };
    with_deadline("it-rps", 30, move || {
        let (lab, _g) = up("it-rps", Topology::Forward, None);
        let mask = ok(
            &lab,
            Node::Dut,
            &["cat", "/sys/class/net/wr-dut-a/queues/rx-0/rps_cpus"],
        );
        let mask = u64::from_str_radix(mask.trim().replace(',', "").as_str(), 16).unwrap();
        assert_eq!(mask, 1 << dut);
        // A process started in the DUT runs on the DUT's CPU; in a port, elsewhere.
        let on_dut = ok(
            &lab,
            Node::Dut,
            &["grep", "Cpus_allowed_list", "/proc/self/status"],
        );
        assert!(on_dut.trim().ends_with(&dut.to_string()), "{on_dut}");
        let on_a = ok(
            &lab,
            Node::A,
            &["grep", "Cpus_allowed_list", "/proc/self/status"],
        );
        assert!(!on_a.contains(&dut.to_string()), "{on_a}");
    });
}

// ---- The XDP fast path (lab::fastpath) ----

/// Sends `n` identical UDP frames with scapy from `iface` (argv: iface, destination MAC,
/// source, destination, source port, destination port, n, payload in hex). IPv4 frames carry
/// TTL 64 and IP id 7, IPv6 frames hop limit 64.
const SCAPY_SEND: &str = "import sys
from scapy.all import Ether, IP, IPv6, UDP, Raw, sendp, conf
conf.verb = 0
iface, dmac, src, dst, sport, dport, n, payload = sys.argv[1:9]
ip = IPv6(src=src, dst=dst, hlim=64) if ':' in src else IP(src=src, dst=dst, ttl=64, id=7)
f = Ether(dst=dmac) / ip / UDP(sport=int(sport), dport=int(dport)) / Raw(bytes.fromhex(payload))
sendp([f] * int(n), iface=iface)
";

/// Payload of the fast path's test frames (18 bytes, as in a 64 B IPv4 frame).
const FP_PAYLOAD: &str = "5752000100000001a5a5a5a5a5a5a5a5c0de";

fn fastpath_skip_reason() -> Option<String> {
    if !cfg!(feature = "fastpath") {
        return Some(
            "this test build has no fast path: run `cargo test -p lab --features fastpath` \
             (the workspace's tests enable it through the binary)"
                .into(),
        );
    }
    let scapy = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import scapy.all"])
        .output();
    if !scapy.is_ok_and(|o| o.status.success()) {
        return Some("scapy not importable from /usr/bin/python3 (Debian python3-scapy)".into());
    }
    match lab::features() {
        Ok(f) if f.xdp_fastpath && f.xdp_conntrack => None,
        Ok(f) => Some(format!("no XDP fast path on this kernel: {f:?}")),
        Err(e) => Some(format!("cannot probe: {e}")),
    }
}

/// The DUT's receive polls run in NAPI threads on the DUT's CPU, real-time (lab::napi), in
/// every profile: after `lab up`, with the fast path on and after it is switched off, and
/// after a profile switch — so plain cells measure the DUT, not the tester's CPU.
#[test]
fn the_receive_polls_run_on_the_dut_cpu_in_every_profile() {
    require!();
    let Some(dut) = lab::dut_cpu() else {
        println!("SKIP: one CPU, no isolation");
        return;
    };
    with_deadline("it-fpoff", 60, move || {
        let (lab, _g) = up("it-fpoff", Topology::Forward, None);
        let on_dut_cpu = |lab: &Lab, when: &str| {
            for ifname in ["wr-dut-a", "wr-dut-b"] {
                let threaded = ok(
                    lab,
                    Node::Dut,
                    &["cat", &format!("/sys/class/net/{ifname}/threaded")],
                );
                assert_eq!(threaded.trim(), "1", "{ifname} {when}");
            }
            let mut napi = 0;
            for entry in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
                let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                if !comm.starts_with("napi/wr-dut-") {
                    continue;
                }
                let (Ok(status), Ok(stat)) = (
                    std::fs::read_to_string(entry.path().join("status")),
                    std::fs::read_to_string(entry.path().join("stat")),
                ) else {
                    continue; // ended meanwhile (another lab went down)
                };
                let cpus = status
                    .lines()
                    .find(|l| l.starts_with("Cpus_allowed_list"))
                    .unwrap();
                assert!(
                    cpus.trim().ends_with(&format!("\t{dut}")),
                    "{comm} {when}: {cpus}"
                );
                // Field 41 of /proc/PID/stat is the policy (1 = SCHED_FIFO), counted after
                // the parenthesised name.
                let after = &stat[stat.rfind(')').unwrap() + 2..];
                let policy = after.split(' ').nth(41 - 3).unwrap();
                assert_eq!(policy, "1", "{comm} {when}: policy {policy}");
                napi += 1;
            }
            assert!(
                napi >= 2,
                "no NAPI threads of the DUT's interfaces found {when}"
            );
        };
        on_dut_cpu(&lab, "after lab up");
        lab.apply_profile(&Profile::Napt { filter: None }).unwrap();
        on_dut_cpu(&lab, "after a profile switch");
        match fastpath_skip_reason() {
            Some(r) => println!("SKIP (fast path part): {r}"),
            None => {
                lab.apply_profile(&Profile::Forward).unwrap();
                lab.set_fastpath(true).unwrap();
                on_dut_cpu(&lab, "with the fast path on");
                lab.set_fastpath(false).unwrap();
                on_dut_cpu(&lab, "after the fast path was switched off");
                lab.apply_profile(&Profile::Forward).unwrap();
                on_dut_cpu(&lab, "after a profile switch from the fast path");
            }
        }
    });
}

#[allow(clippy::too_many_arguments)]
fn send_udp(
    lab: &Lab,
    node: Node,
    iface: &str,
    dmac: &str,
    src: &str,
    dst: &str,
    ports: (u16, u16),
    n: usize,
) {
    let (sp, dp, n) = (ports.0.to_string(), ports.1.to_string(), n.to_string());
    ok(
        lab,
        node,
        &[
            "/usr/bin/python3",
            "-c",
            SCAPY_SEND,
            iface,
            dmac,
            src,
            dst,
            &sp,
            &dp,
            &n,
            FP_PAYLOAD,
        ],
    );
}

/// A running tshark writing a classic pcap file.
struct Capture {
    child: Child,
    file: std::path::PathBuf,
}

/// What a capture saw; the file is removed on drop.
struct Captured {
    file: std::path::PathBuf,
    frames: Vec<Vec<u8>>,
}

impl Drop for Captured {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Capture up to `count` frames matching `filter` on `node`'s port (30 s at most).
fn capture(lab: &Lab, node: Node, filter: &str, count: usize, tag: &str) -> Capture {
    let iface = if node == Node::A { "wr-a" } else { "wr-b" };
    let file = std::env::temp_dir().join(format!("wr-{}-{tag}.pcap", lab.name()));
    let _ = std::fs::remove_file(&file);
    let c = count.to_string();
    let mut child = lab
        .command(
            node,
            &[
                "tshark",
                "-n",
                "-i",
                iface,
                "-f",
                filter,
                "-c",
                &c,
                "-a",
                "duration:30",
                "-F",
                "pcap",
                "-w",
                file.to_str().unwrap(),
            ],
        )
        .unwrap()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_capturing(&mut child);
    Capture { child, file }
}

impl Capture {
    fn finish(mut self) -> Captured {
        let _ = self.child.wait();
        let bytes = std::fs::read(&self.file).unwrap();
        Captured {
            frames: pcap_frames(&bytes),
            file: self.file.clone(),
        }
    }
}

/// The frames of a classic little-endian microsecond pcap file.
fn pcap_frames(b: &[u8]) -> Vec<Vec<u8>> {
    assert!(
        b.len() >= 24 && b[..4] == [0xd4, 0xc3, 0xb2, 0xa1],
        "not a classic pcap"
    );
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap()) as usize;
        i += 16;
        out.push(b[i..i + incl].to_vec());
        i += incl;
    }
    out
}

/// tshark's reading of each frame, with IPv4 and UDP checksum verification on.
fn tshark_fields(file: &std::path::Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut argv: Vec<&str> = vec![
        "-n",
        "-r",
        file.to_str().unwrap(),
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-T",
        "fields",
    ];
    for f in fields {
        argv.push("-e");
        argv.push(f);
    }
    let out = std::process::Command::new("tshark")
        .args(&argv)
        .output()
        .unwrap();
    assert!(out.status.success(), "tshark -r: {:?}", out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(|f| f.replace(':', "")).collect())
        .collect()
}

/// Drop UDP to `port` on arrival at `node` (after [`count_udp_rx`]'s counter), so the port
/// sends no ICMP port unreachable back through the DUT to disturb the DUT's counts.
fn sink_udp(lab: &Lab, node: Node, port: u16) {
    let script = format!(
        "add table inet sink; \
         add chain inet sink rx {{ type filter hook prerouting priority -200; }}; \
         add rule inet sink rx udp dport {port} drop"
    );
    ok(lab, node, &["nft", &script]);
}

fn fp_stats(lab: &Lab) -> lab::FastpathStats {
    lab.fastpath_stats().unwrap().expect("fast path is on")
}

fn mac_hex(m: &str) -> String {
    m.replace(':', "")
}

#[test]
fn fastpath_forwards_exact_counts_both_families_like_the_stack() {
    require!("tshark", "ethtool");
    if let Some(r) = fastpath_skip_reason() {
        println!("SKIP: {r}");
        return;
    }
    with_deadline("fp1", 180, || {
        const N: usize = 200;
        let (lab, _g) = up("fp1", Topology::Forward, None);
        let (a, b) = (lab.port(PortId::A).unwrap(), lab.port(PortId::B).unwrap());
        let (a4, b4) = (a.ipv4.to_string(), b.ipv4.to_string());
        let (a6, b6) = (a.ipv6.to_string(), b.ipv6.to_string());
        // Neighbours resolved both ways (RFC 2544 §11), so no frame waits in a queue.
        ping(&lab, Node::A, &b4);
        ping(&lab, Node::A, &b6);
        count_udp_rx(&lab, Node::B, 9);
        sink_udp(&lab, Node::B, 9);
        let send = |n: usize| {
            send_udp(&lab, Node::A, "wr-a", &a.peer.mac, &a4, &b4, (40000, 9), n);
            send_udp(&lab, Node::A, "wr-a", &a.peer.mac, &a6, &b6, (40000, 9), n);
        };
        // The stack's forwarding, as the reference.
        let cap = capture(&lab, Node::B, "udp dst port 9", 2, "slow");
        send(1);
        let slow = cap.finish();
        assert_eq!(slow.frames.len(), 2);
        let (slow4, slow6) = (&slow.frames[0], &slow.frames[1]);
        assert_eq!(slow4[12..14], [0x08, 0x00]);
        assert_eq!(slow6[12..14], [0x86, 0xdd]);

        lab.set_fastpath(true).unwrap();
        assert!(lab.fastpath().unwrap());
        assert_eq!(
            lab.fastpath_program().unwrap(),
            Some(lab::fastpath::Program::Forward)
        );
        let st0 = fp_stats(&lab);
        let snmp0 = snmp(&lab, Node::Dut);
        let rx0 = udp_rx(&lab, Node::B);
        let cap = capture(&lab, Node::B, "udp dst port 9", 2 * N, "fast");
        send(N);
        let fast = cap.finish();
        let st1 = fp_stats(&lab);
        let snmp1 = snmp(&lab, Node::Dut);
        let rx1 = udp_rx(&lab, Node::B);
        println!("fast path counters: {st0:?} -> {st1:?}");
        // Exact counts: every frame through the fast path, none through the stack.
        assert_eq!(st1.fwd4 - st0.fwd4, N as u64);
        assert_eq!(st1.fwd6 - st0.fwd6, N as u64);
        assert_eq!(
            forwarded(&snmp1),
            forwarded(&snmp0),
            "the stack forwarded none"
        );
        assert_eq!(rx1 - rx0, 2 * N as u64, "port B received exactly 2N");
        assert_eq!(fast.frames.len(), 2 * N);
        // Byte for byte what the stack forwards: MACs, TTL/hop limit, checksums, payload.
        let n4 = fast.frames.iter().filter(|f| *f == slow4).count();
        let n6 = fast.frames.iter().filter(|f| *f == slow6).count();
        assert_eq!((n4, n6), (N, N), "fast path frames differ from the stack's");
        // And as tshark reads them.
        let rows = tshark_fields(
            &fast.file,
            &[
                "eth.src",
                "eth.dst",
                "ip.ttl",
                "ipv6.hlim",
                "ip.checksum.status",
                "udp.checksum.status",
                "data.data",
            ],
        );
        assert_eq!(rows.len(), 2 * N);
        for r in &rows {
            assert_eq!(r[0], mac_hex(&b.peer.mac), "source MAC is the DUT's: {r:?}");
            assert_eq!(r[1], mac_hex(&b.mac), "destination MAC is port B's: {r:?}");
            let v4 = !r[2].is_empty();
            if v4 {
                assert_eq!(r[2], "63", "TTL 64 - 1: {r:?}");
                assert_eq!(r[4], "1", "IPv4 header checksum good: {r:?}");
            } else {
                assert_eq!(r[3], "63", "hop limit 64 - 1: {r:?}");
            }
            assert_eq!(r[5], "1", "UDP checksum good: {r:?}");
            assert_eq!(r[6], FP_PAYLOAD, "payload byte-identical: {r:?}");
        }
        // Frames it must not take: TTL 1 goes to the stack (which answers time exceeded).
        lab.set_fastpath(false).unwrap();
        assert!(!lab.fastpath().unwrap());
    });
}

#[test]
fn fastpath_napt_translates_like_masquerade_established_flows_only() {
    require!("tshark", "ethtool", "iperf3", "ss");
    if let Some(r) = fastpath_skip_reason() {
        println!("SKIP: {r}");
        return;
    }
    with_deadline("fp2", 180, || {
        const N: usize = 100;
        let (lab, _g) = up("fp2", Topology::Forward, Some("napt"));
        let (a, b) = (lab.port(PortId::A).unwrap(), lab.port(PortId::B).unwrap());
        let (a4, b4) = (a.ipv4.to_string(), b.ipv4.to_string());
        let dut_b = b.peer.ipv4.to_string();
        ping(&lab, Node::A, &b4);
        sink_udp(&lab, Node::B, 9);
        sink_udp(&lab, Node::A, 41000);
        lab.set_fastpath(true).unwrap();
        assert_eq!(
            lab.fastpath_program().unwrap(),
            Some(lab::fastpath::Program::Conntrack)
        );
        let to_b = |sport: u16, n: usize| {
            send_udp(&lab, Node::A, "wr-a", &a.peer.mac, &a4, &b4, (sport, 9), n)
        };

        // A new flow: its first packets take the stack, which masquerades them.
        let cap = capture(&lab, Node::B, "udp dst port 9", 3, "slow-out");
        to_b(41000, 3);
        let slow_out = cap.finish();
        assert_eq!(slow_out.frames.len(), 3);
        let f = &slow_out.frames[0];
        assert_eq!(f[26..30], b.peer.ipv4.octets(), "masqueraded to the DUT");
        let nat_port = u16::from_be_bytes([f[34], f[35]]);
        // One-way so far: confirmed but never answered, so not established, and not for the
        // fast path (an nftables `flow add` would not offload it either).
        let st0 = fp_stats(&lab);
        to_b(41000, 10);
        let st1 = fp_stats(&lab);
        assert_eq!(st1.fwd4, st0.fwd4, "one-way UDP stays on the stack");
        assert_eq!(st1.pass_conntrack - st0.pass_conntrack, 10);

        // B answers through the stack: the entry has now seen a reply.
        let from_b = |n: usize| {
            send_udp(
                &lab,
                Node::B,
                "wr-b",
                &b.peer.mac,
                &b4,
                &dut_b,
                (9, nat_port),
                n,
            )
        };
        let cap = capture(&lab, Node::A, "udp src port 9", 2, "slow-back");
        from_b(2);
        let slow_back = cap.finish();
        assert_eq!(slow_back.frames.len(), 2);
        assert_eq!(
            slow_back.frames[0][30..34],
            a.ipv4.octets(),
            "de-NATed to A"
        );

        // Established: both directions through the fast path, translated exactly like the
        // stack's masquerade did it (byte-identical frames), none through the stack.
        let st0 = fp_stats(&lab);
        let snmp0 = snmp(&lab, Node::Dut);
        let cap_b = capture(&lab, Node::B, "udp dst port 9", N, "fast-out");
        let cap_a = capture(&lab, Node::A, "udp src port 9", N, "fast-back");
        to_b(41000, N);
        from_b(N);
        let (fast_out, fast_back) = (cap_b.finish(), cap_a.finish());
        let st1 = fp_stats(&lab);
        let snmp1 = snmp(&lab, Node::Dut);
        println!("fast path counters: {st0:?} -> {st1:?}");
        assert_eq!(st1.fwd4 - st0.fwd4, 2 * N as u64);
        assert_eq!(st1.nat - st0.nat, 2 * N as u64);
        assert_eq!(
            forwarded(&snmp1),
            forwarded(&snmp0),
            "the stack forwarded none"
        );
        assert_eq!(fast_out.frames.len(), N);
        assert_eq!(fast_back.frames.len(), N);
        assert!(fast_out.frames.iter().all(|f| *f == slow_out.frames[0]));
        assert!(fast_back.frames.iter().all(|f| *f == slow_back.frames[0]));
        for cap in [&fast_out, &fast_back] {
            for r in tshark_fields(&cap.file, &["ip.checksum.status", "udp.checksum.status"]) {
                assert_eq!(r, ["1", "1"], "checksums good after translation");
            }
        }

        // TCP through NAPT + fast path: established segments fast-pathed (translated), the
        // handshake and teardown through the stack; the transfer completes.
        let st0 = fp_stats(&lab);
        let bps = iperf3_tcp(&lab, Node::B, Node::A, &b4);
        let st1 = fp_stats(&lab);
        println!("TCP through napt + fast path: {:.2} Gbit/s", bps / 1e9);
        assert!(bps > 0.0);
        assert!(st1.nat - st0.nat > 100, "{st0:?} -> {st1:?}");
        assert!(st1.pass_syn > st0.pass_syn);
    });
}

#[test]
fn fastpath_refuses_firewall_bypass_and_follows_profile_switches() {
    require!("ethtool");
    if let Some(r) = fastpath_skip_reason() {
        println!("SKIP: {r}");
        return;
    }
    with_deadline("fp3", 120, || {
        use lab::fastpath::Program;
        // The old profile name: forward with the fast path on.
        let (lab, g) = up("fp3", Topology::Forward, Some("fastpath"));
        assert_eq!(lab.profile().unwrap(), Some(Profile::Forward));
        assert_eq!(lab.fastpath_program().unwrap(), Some(Program::Forward));
        let tx = |node| {
            ok(
                &lab,
                node,
                &[
                    "ethtool",
                    "-k",
                    if node == Node::A { "wr-a" } else { "wr-b" },
                ],
            )
        };
        assert!(tx(Node::A).contains("tx-checksumming: off"));
        // A profile switch turns it off, before the new ruleset is in.
        lab.apply_profile(&Profile::parse("filter-stateless-10").unwrap())
            .unwrap();
        assert!(!lab.fastpath().unwrap());
        assert!(tx(Node::B).contains("tx-checksumming: on"));
        // Refused, nothing changed: every packet must walk those rules.
        let e = lab.set_fastpath(true).unwrap_err();
        assert!(
            matches!(e, LabError::Model(lab::ModelError::FastpathRefused { .. })),
            "{e}"
        );
        assert!(e.is_usage());
        let msg = e.to_string();
        assert!(
            msg.contains("`filter-stateless-10`") && msg.contains("10 rules"),
            "{msg}"
        );
        assert!(!lab.fastpath().unwrap());
        // Stateful profiles take the conntrack program; the MSS clamp the forward one.
        for (p, prog) in [
            ("filter-stateful-1", Program::Conntrack),
            ("napt+filter-stateful-1", Program::Conntrack),
            ("mss-clamp-1200", Program::Forward),
        ] {
            lab.apply_profile(&Profile::parse(p).unwrap()).unwrap();
            lab.set_fastpath(true).unwrap();
            lab.set_fastpath(true).unwrap(); // idempotent
            assert_eq!(lab.fastpath_program().unwrap(), Some(prog), "{p}");
            let liberal = ok(
                &lab,
                Node::Dut,
                &["cat", "/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal"],
            );
            let want = if prog == Program::Conntrack { "1" } else { "0" };
            assert_eq!(liberal.trim(), want, "{p}");
        }
        let st = lab::status("fp3").unwrap().unwrap();
        assert_eq!(st.fastpath.as_deref(), Some("on (forward)"));
        lab.set_fastpath(false).unwrap();
        lab.set_fastpath(false).unwrap();
        assert!(!lab.fastpath().unwrap());
        // The programs die with the namespace; no object file is left behind.
        lab.set_fastpath(true).unwrap();
        drop(g);
        assert!(lab::status("fp3").unwrap().is_none());
        let pid = std::process::id().to_string();
        let left: Vec<_> = std::fs::read_dir("/run/wirerate")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("fastpath-") && n.contains(&pid))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
    });
}

#[test]
fn fastpath_stateful_filter_skips_the_rules_only_for_established_flows() {
    require!("ethtool");
    if let Some(r) = fastpath_skip_reason() {
        println!("SKIP: {r}");
        return;
    }
    with_deadline("fp4", 120, || {
        let (lab, _g) = up("fp4", Topology::Forward, Some("filter-stateful-10"));
        let (a, b) = (lab.port(PortId::A).unwrap(), lab.port(PortId::B).unwrap());
        let (a4, b4) = (a.ipv4.to_string(), b.ipv4.to_string());
        ping(&lab, Node::A, &b4);
        sink_udp(&lab, Node::B, 9);
        sink_udp(&lab, Node::A, 41000);
        lab.set_fastpath(true).unwrap();
        let counter = |name: &str| {
            lab.snapshot()
                .unwrap()
                .counter(name)
                .map_or(0, |c| c.packets)
        };
        let to_b = |n| send_udp(&lab, Node::A, "wr-a", &a.peer.mac, &a4, &b4, (41000, 9), n);
        // One-way: every packet walks the 10 rules to the counted accept, as without it.
        let (acc0, st0) = (counter("accepted"), fp_stats(&lab));
        to_b(5);
        assert_eq!(counter("accepted") - acc0, 5);
        assert_eq!(fp_stats(&lab).fwd4, st0.fwd4);
        // A reply through the stack (it is `established` there), then the flow skips the
        // rules: the fast path forwards it and no rule counter moves.
        send_udp(&lab, Node::B, "wr-b", &b.peer.mac, &b4, &a4, (9, 41000), 1);
        let (acc1, est1, st1) = (counter("accepted"), counter("established"), fp_stats(&lab));
        to_b(50);
        let st2 = fp_stats(&lab);
        assert_eq!(st2.fwd4 - st1.fwd4, 50);
        assert_eq!(st2.nat, st1.nat, "no NAT in this profile");
        assert_eq!(counter("accepted"), acc1);
        assert_eq!(counter("established"), est1);
    });
}
