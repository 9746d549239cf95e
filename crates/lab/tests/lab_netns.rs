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
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
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

#[test]
fn filter_stateless_10000_cuts_udp_rate_tenfold() {
    require!("iperf3", "ss");
    with_deadline("it-filter", 90, || {
        let (lab, _g) = up("it-filter", Topology::Forward, None);
        let dst = lab.port(PortId::B).unwrap().ipv4.to_string();
        let (fwd, r1) = udp_rate(&lab, &dst);
        println!("forward: {r1}");

        let p = Profile::parse("filter-stateless-10000").unwrap();
        let t0 = Instant::now();
        lab.apply_profile(&p).unwrap();
        let load = t0.elapsed();
        println!(
            "filter-stateless-10000 loaded in {:.3} s",
            load.as_secs_f64()
        );
        assert!(load < Duration::from_secs(5), "10,000 rules took {load:?}");
        let rules = ok(
            &lab,
            Node::Dut,
            &["nft", "list", "table", "inet", "wirerate"],
        );
        assert_eq!(
            rules.lines().filter(|l| l.ends_with(" drop")).count(),
            10_000
        );

        let (filtered, r2) = udp_rate(&lab, &dst);
        println!("filter-stateless-10000: {r2}");
        println!("ratio forward/filtered = {:.1}", fwd / filtered.max(1.0));
        assert!(filtered > 0.0, "the filter must still forward");
        assert!(
            fwd >= 10.0 * filtered,
            "expected >= 10x: forward {fwd:.0} pps vs filtered {filtered:.0} pps"
        );
        // Every forwarded packet walked the list to the final accept.
        let s = lab.snapshot().unwrap();
        assert!(s.counter("accepted").unwrap().packets > 0);
        assert_eq!(
            s.conntrack_entries.unwrap_or(0),
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
        assert!(!rules.contains("drop"));
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
    // Wait for tshark to say it is capturing (condition, not a sleep).
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
        let e = Profile::parse("filter-bogus-3").unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("valid profiles"));
        let f = lab::features().unwrap();
        println!("features: {f:?}");
        if !f.flowtable {
            let e = Lab::up(&LabConfig {
                name: "it-errors".into(),
                topology: Topology::Forward,
                profile: Some(Profile::Fastpath),
            })
            .unwrap_err();
            assert!(e.is_usage());
            assert!(
                e.to_string()
                    .contains("unsupported on this kernel: nftables flowtable"),
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
