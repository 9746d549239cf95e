//! Issue 7, independent peers: our PPPoE server and client against scapy (Debian's
//! `/usr/bin/python3`, whose scapy is an implementation independent of ours) over a veth pair
//! between two `wr-em…` namespaces, through the engine's `control` loop on real AF_PACKET
//! sockets. Root is needed (else `SKIP: …`); without scapy the tests skip too, except under CI
//! (`CI` set), where a missing scapy fails.
//!
//! The scripts are in `crates/emulate/tests/peers/`.

mod common_isp;

use common_isp::{is_root, Capture, NsPair};
use emulate::ppp::link::DownReason;
use emulate::pppoe::client::{Client, ClientConfig, ClientEvent};
use emulate::pppoe::server::{Server, ServerConfig, ServerEvent};
use emulate::pppoe::HostileReason;
use engine::control::{self, ControlPort, ControlPortStats};
use engine::port::PortSpec;
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wire::ethernet::MacAddr;

const PYTHON: &str = "/usr/bin/python3";

/// `true` when the test can run; prints `SKIP: …` otherwise (and fails under CI without scapy).
fn can_run() -> bool {
    if !is_root() {
        println!("SKIP: PPPoE peer tests need root (network namespaces, AF_PACKET)");
        return false;
    }
    let scapy = Command::new(PYTHON)
        .args(["-c", "import scapy.layers.ppp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !scapy {
        if std::env::var_os("CI").is_some() {
            panic!("scapy is missing for {PYTHON} (apt-get install python3-scapy)");
        }
        println!("SKIP: {PYTHON} has no scapy (apt-get install python3-scapy)");
        return false;
    }
    true
}

fn peer_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../emulate/tests/peers")
        .join(name)
}

/// A scapy peer running inside a namespace.
struct Peer {
    script: String,
    child: std::process::Child,
}

impl Peer {
    fn spawn(ns: &str, script: &str, args: &[&str]) -> Peer {
        let child = Command::new("ip")
            .args(["netns", "exec", ns, PYTHON])
            .arg(peer_script(script))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the scapy peer");
        Peer {
            script: script.into(),
            child,
        }
    }

    /// Waits (killing it after `timeout`); returns its success and its `RESULT` JSON.
    fn wait(mut self, timeout: Duration) -> (bool, serde_json::Value) {
        let end = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("waiting for the peer") {
                break Some(s);
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut out = String::new();
        let mut err = String::new();
        let _ = self.child.stdout.take().unwrap().read_to_string(&mut out);
        let _ = self.child.stderr.take().unwrap().read_to_string(&mut err);
        let script = &self.script;
        eprintln!("--- {script} stderr ---\n{err}--- {script} stdout ---\n{out}");
        let json = out
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .map(|j| serde_json::from_str(j).expect("peer RESULT json"))
            .unwrap_or(serde_json::Value::Null);
        (status.is_some_and(|s| s.success()), json)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_peer(ns: &str, script: &str, args: &[&str], timeout: Duration) -> (bool, serde_json::Value) {
    Peer::spawn(ns, script, args).wait(timeout)
}

/// A control plane running on a port in its own thread until stopped.
struct Running<C: Send + 'static, E: Send + 'static> {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<(C, Vec<E>, ControlPortStats)>>,
}

impl<C: Send + 'static, E: Send + 'static> Running<C, E> {
    /// Starts `make(port MAC)` on `port`; `events` drains the machine's events each turn.
    fn start(
        port: PortSpec,
        make: impl FnOnce(MacAddr) -> C + Send + 'static,
        mut events: impl FnMut(&mut C) -> Vec<E> + Send + 'static,
    ) -> Self
    where
        C: control::ControlPlane,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let stop2 = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut cp = ControlPort::open(&port).expect("control port");
            let mac = MacAddr(cp.mac().expect("mac"));
            let mut m = make(mac);
            let mut all = Vec::new();
            ready_tx.send(()).unwrap();
            while !stop2.load(Ordering::Relaxed) {
                cp.step(&mut m, Duration::from_millis(20)).expect("step");
                all.extend(events(&mut m));
            }
            (m, all, cp.stats)
        });
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("control port ready");
        Running {
            stop,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> (C, Vec<E>, ControlPortStats) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().expect("control thread")
    }
}

impl<C: Send + 'static, E: Send + 'static> Drop for Running<C, E> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn server_cfg(mac: MacAddr) -> ServerConfig {
    ServerConfig {
        mac,
        mru: 1454,
        ..ServerConfig::default()
    }
}

fn in_pool(a: &str) -> bool {
    let a: Ipv4Addr = a.parse().expect("address");
    let (first, size) = (u32::from(Ipv4Addr::new(198, 51, 100, 10)), 240);
    (first..first + size).contains(&u32::from(a))
}

/// (a) scapy plays the subscriber: discovery, LCP (MRU 1454, magic), PAP, IPCP; our AC gives
/// it an address from the pool; the scapy PADT ends the session.
#[test]
fn scapy_client_gets_a_session_from_our_server() {
    if !can_run() {
        return;
    }
    let ns = NsPair::new("wr-em", "wrem", "c");
    let srv = Running::start(
        ns.port_a("a"),
        |mac| Server::new(server_cfg(mac)),
        |s: &mut Server| s.take_events(),
    );
    let (ok, r) = run_peer(
        &ns.b,
        "pppoe_client.py",
        &[
            "--iface",
            "wrem1",
            "--user",
            "wirerate",
            "--password",
            "wirerate",
        ],
        Duration::from_secs(30),
    );
    std::thread::sleep(Duration::from_millis(300));
    let (server, events, port) = srv.finish();
    eprintln!("server stats: {:#?}\nport: {port:?}", server.stats);
    assert!(ok, "scapy client failed: {r}");
    assert_eq!(r["ac_mru"], 1454, "our LCP request carries MRU 1454");
    assert_eq!(r["ac_auth"], 0xc023, "our LCP request asks for PAP");
    assert!(r["ac_magic"].as_u64().is_some_and(|m| m != 0));
    assert_eq!(r["cookie_len"], 8, "PADO carries an 8-byte AC-Cookie");
    assert!(
        in_pool(r["address"].as_str().unwrap()),
        "IPCP Ack address {r}"
    );
    assert_eq!(r["ac_address"], "198.51.100.1");
    let ups: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::SessionUp { info, user, .. } => Some((*info, user.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ups.len(), 1, "one session up: {events:?}");
    assert_eq!(ups[0].1.as_deref(), Some("wirerate"));
    assert_eq!(
        ups[0].0.session_id,
        r["session_id"].as_u64().unwrap() as u16
    );
    assert_eq!(
        ups[0].0.negotiated.peer_ipv4.map(|a| a.to_string()),
        r["address"].as_str().map(String::from)
    );
    assert!(events.iter().any(|e| matches!(
        e,
        ServerEvent::SessionDown {
            reason: DownReason::PeerPadt,
            ..
        }
    )));
    let st = &server.stats;
    assert_eq!((st.sessions_up_total, st.sessions_up), (1, 0));
    assert_eq!(st.padt_rx, 1);
    assert_eq!(st.ended.get(DownReason::PeerPadt), 1);
    assert_eq!(st.hostile.total(), 0, "{:?}", st.hostile);
}

/// (b) Our subscriber against a scapy-scripted AC: discovery with its cookie, LCP with its MRU
/// 1492, PAP, IPCP Naks to its address and DNS, IPv6CP Protocol-Rejected; then we close
/// (LCP Terminate + PADT) and scapy sees our PADT.
#[test]
fn our_client_gets_a_session_from_a_scapy_server() {
    if !can_run() {
        return;
    }
    let ns = NsPair::new("wr-em", "wrem", "s");
    let peer = Peer::spawn(
        &ns.b,
        "pppoe_server.py",
        &[
            "--iface",
            "wrem1",
            "--address",
            "203.0.113.77",
            "--mru",
            "1492",
        ],
    );
    // Give scapy a moment to open its socket (our PADI is retried anyway).
    std::thread::sleep(Duration::from_millis(500));
    let mut up_at: Option<Instant> = None;
    let cli = Running::start(
        ns.port_a("a"),
        |mac| {
            let mut c = Client::new(ClientConfig {
                mac,
                auth: vec![emulate::ppp::AuthMethod::Pap],
                ..ClientConfig::default()
            });
            c.start(control::now());
            c
        },
        move |c: &mut Client| {
            let ev = c.take_events();
            if ev.iter().any(|e| matches!(e, ClientEvent::Up(_))) {
                up_at = Some(Instant::now());
            }
            if up_at.is_some_and(|t| t.elapsed() > Duration::from_millis(300)) {
                up_at = None;
                c.close(control::now());
            }
            ev
        },
    );
    let (ok, r) = peer.wait(Duration::from_secs(30));
    let (client, events, port) = cli.finish();
    eprintln!(
        "client stats: {:?}\nport: {port:?}\nevents: {events:?}",
        client.stats
    );
    assert!(ok, "scapy server: {r}");
    let info = events
        .iter()
        .find_map(|e| match e {
            ClientEvent::Up(i) => Some(*i),
            _ => None,
        })
        .expect("our client came up");
    assert_eq!(info.session_id, 0x1234);
    assert_eq!(
        info.negotiated.local_ipv4,
        Some(Ipv4Addr::new(203, 0, 113, 77))
    );
    assert_eq!(
        info.negotiated.peer_ipv4,
        Some(Ipv4Addr::new(203, 0, 113, 1))
    );
    assert_eq!(info.negotiated.dns[0], Some(Ipv4Addr::new(203, 0, 113, 53)));
    assert_eq!(info.negotiated.peer_mru, 1492, "the scapy AC's MRU");
    assert_eq!(info.max_datagram(), 1492);
    assert_eq!(r["pap_user"], "wirerate");
    assert_eq!(r["client_mru"], 1492, "our LCP request");
    assert_eq!(r["padi_host_uniq"], true);
    assert_eq!(r["terminate_from_client"], true);
    assert_eq!(r["padt_from_client"], true);
    assert!(r["ipcp_naks"].as_u64().unwrap() >= 1);
    assert_eq!(client.stats.padt_tx, 1);
    assert_eq!(
        client.stats.hostile.total(),
        0,
        "{:?}",
        client.stats.hostile
    );
}

/// (c) Hostile input from scapy: one frame of each malformed kind and a flood of 3,000 PADIs.
/// The server neither panics nor wedges, counts each by reason, keeps no state for the flood,
/// and a normal scapy subscriber still gets a session afterwards.
#[test]
fn hostile_scapy_input_is_counted_and_the_server_still_serves() {
    if !can_run() {
        return;
    }
    let ns = NsPair::new("wr-em", "wrem", "h");
    let srv = Running::start(
        ns.port_a("a"),
        |mac| Server::new(server_cfg(mac)),
        |s: &mut Server| s.take_events(),
    );
    let (ok, h) = run_peer(
        &ns.b,
        "pppoe_hostile.py",
        &["--iface", "wrem1", "--flood", "3000"],
        Duration::from_secs(60),
    );
    assert!(ok, "hostile script: {h}");
    // Let the server drain its socket, then a normal subscriber must still get in.
    std::thread::sleep(Duration::from_millis(500));
    let (ok, r) = run_peer(
        &ns.b,
        "pppoe_client.py",
        &["--iface", "wrem1"],
        Duration::from_secs(30),
    );
    std::thread::sleep(Duration::from_millis(300));
    let (server, events, port) = srv.finish();
    let st = &server.stats;
    eprintln!("server stats: {st:#?}\nport: {port:?}");
    assert!(ok, "normal subscriber after the hostile input: {r}");
    assert!(in_pool(r["address"].as_str().unwrap()));
    let ups = events
        .iter()
        .filter(|e| matches!(e, ServerEvent::SessionUp { .. }))
        .count();
    assert_eq!(ups, 1);
    assert_eq!(
        st.sessions_started, 1,
        "no session from any hostile frame or the flood"
    );
    let hostile = |r: HostileReason| st.hostile.get(r);
    use HostileReason::*;
    assert_eq!(hostile(BadTags), 1, "truncated tags");
    assert_eq!(
        hostile(TruncatedPppoe),
        2,
        "LENGTH past the frame, 3-byte header"
    );
    assert_eq!(hostile(BadVersion), 1);
    assert_eq!(
        hostile(UnexpectedCode),
        2,
        "unknown code 0x42, a PADO sent to the AC"
    );
    assert_eq!(hostile(WrongEtherType), 1);
    assert_eq!(hostile(NonZeroSessionId), 1);
    assert_eq!(hostile(MissingServiceName), 1);
    assert_eq!(hostile(BadMaxPayload), 1);
    assert_eq!(hostile(BadSourceMac), 1);
    assert_eq!(
        hostile(BadCookie),
        2,
        "PADR without a cookie, with a wrong one"
    );
    assert_eq!(
        hostile(UnknownSession),
        2,
        "session frame and PADT for id 0x4242"
    );
    // The flood: every PADI was seen (2 ordinary ones: the hostile script's probe and the
    // subscriber's), each got a PADO or was rate-limited, and nothing else happened.
    let flood = h["flood"].as_u64().unwrap();
    let valid_padis = flood + 2;
    let limited = hostile(PadiRateLimited);
    assert_eq!(
        st.pado_tx + limited,
        valid_padis,
        "PADO or rate-limited, nothing lost"
    );
    assert!(
        port.rx >= flood,
        "all flood frames reached the server: {port:?}"
    );
    eprintln!(
        "flood: {flood} PADIs in {:.3} s -> {} PADOs, {limited} rate-limited",
        h["flood_seconds"].as_f64().unwrap(),
        st.pado_tx
    );
}

/// `wirerate pppoe server` and `wirerate pppoe client` (the manual-use commands) bring a CHAP
/// session up between two namespaces and report it: events and statistics as JSON lines.
#[test]
fn cli_server_and_client_bring_a_session_up() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET)");
        return;
    }
    let ns = NsPair::new("wr-em", "wrem", "x");
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let common = ["--user", "alice", "--password", "s3cret", "--auth", "chap"];
    let server = Command::new(bin)
        .args([
            "pppoe", "server", "--netns", &ns.a, "--dev", "wrem0", "--json",
        ])
        .args(["--sessions", "1", "--duration", "20", "--mru", "1454"])
        .args(common)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("wirerate pppoe server");
    std::thread::sleep(Duration::from_millis(300));
    let client = Command::new(bin)
        .args([
            "pppoe", "client", "--netns", &ns.b, "--dev", "wrem1", "--json",
        ])
        .args(["--hold", "0.5", "--duration", "20"])
        .args(common)
        .stdin(Stdio::null())
        .output()
        .expect("wirerate pppoe client");
    let server = server.wait_with_output().expect("server output");
    let lines = |b: &[u8]| -> Vec<serde_json::Value> {
        String::from_utf8_lossy(b)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect()
    };
    let (c, s) = (lines(&client.stdout), lines(&server.stdout));
    eprintln!("client: {c:#?}\nserver: {s:#?}");
    assert!(client.status.success() && server.status.success());
    let up = c.iter().find(|v| v["event"] == "up").expect("client up");
    assert_eq!(up["auth"], "ChapMd5");
    assert_eq!(up["peer_mru"], 1454);
    assert_eq!(up["local_ipv4"], "198.51.100.10");
    assert!(c
        .iter()
        .any(|v| v["event"] == "down" && v["reason"] == "LocalClose"));
    let sup = s.iter().find(|v| v["event"] == "up").expect("server up");
    assert_eq!(sup["user"], "alice");
    assert_eq!(sup["session_id"], up["session_id"]);
    let stats = s
        .iter()
        .find(|v| v["event"] == "stats")
        .expect("server stats");
    assert_eq!(stats["sessions_up_total"], 1);
    // Our client sends LCP Terminate-Request then PADT; whichever the AC acts on first ends it.
    let ended = &stats["ended"];
    assert_eq!(
        ended["PeerPadt"].as_u64().unwrap_or(0) + ended["PeerTerminate"].as_u64().unwrap_or(0),
        1,
        "{stats}"
    );
}

/// Issue #19 row 18: `wirerate pppoe` refuses a pool or an MRU that cannot work as asked —
/// exit status 2, one message naming the flags and what would fit — before it opens a port
/// (so no root is needed, and the missing interface is never reached).
#[test]
fn cli_refuses_pools_and_mrus_that_cannot_work() {
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["server", "--pool-size", "3000"],
            &[
                "--pool 198.51.100.10 --pool-size 3000:",
                "198.51.111.193",
                "the largest pool from 198.51.100.10 that fits is 245",
            ],
        ),
        (
            &["server", "--pool-size", "0"],
            &["--pool-size 0:", "would refuse every subscriber"],
        ),
        (
            &["server", "--pool", "198.51.100.1"],
            &["gateway's own address 198.51.100.1", "at 198.51.100.2"],
        ),
        (
            &["server", "--pool", "198.51.100.0"],
            &["--pool 198.51.100.0:", "network address"],
        ),
        (
            &["server", "--pool", "192.0.2.255"],
            &["--pool 192.0.2.255:", "broadcast address"],
        ),
        (
            &["server", "--pool", "10.0.0.10"],
            &["--pool 10.0.0.10:", "outside the documentation ranges"],
        ),
        (&["server", "--mru", "0"], &["--mru 0:", "give 64 to 1492"]),
        (
            &["server", "--mru", "63"],
            &["--mru 63:", "give 64 to 1492"],
        ),
        (
            &["server", "--mru", "1500"],
            &["--mru 1500:", "give 64 to 1492"],
        ),
        (&["client", "--mru", "0"], &["--mru 0:", "give 64 to 1492"]),
    ];
    for (args, want) in cases {
        let out = Command::new(bin)
            .arg("pppoe")
            .args(*args)
            .args(["--dev", "wr-nonexistent0", "--duration", "1"])
            .stdin(Stdio::null())
            .output()
            .expect("wirerate pppoe");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for w in *want {
            assert!(err.contains(w), "{args:?}: {w:?} not in {err}");
        }
    }
    // What fits is accepted (and then fails only on the missing interface, exit 1).
    for args in [
        &["server", "--pool-size", "245", "--mru", "64"][..],
        &[
            "server",
            "--pool",
            "203.0.113.2",
            "--gateway",
            "203.0.113.1",
            "--pool-size",
            "253",
        ],
        &["client", "--mru", "1492"],
    ] {
        let out = Command::new(bin)
            .arg("pppoe")
            .args(args)
            .args(["--dev", "wr-nonexistent0", "--duration", "1"])
            .stdin(Stdio::null())
            .output()
            .expect("wirerate pppoe");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("wr-nonexistent0"), "{args:?}: {err}");
    }
}

/// Loopback throughput through PPPoE: our client (port b) and our AC (port a) bring a session
/// up over the veth and keep running their control loops (echo, etc.) in their own threads
/// while an engine trial sends signed UDP inside the session both ways, built with
/// `FrameTemplate` + `SessionInfo::apply_to`. Counts are exact, and the line rate is computed
/// on the encapsulated frame (reference size + 8) with `wire::linerate`.
#[test]
fn loopback_trial_through_a_pppoe_session_both_ways() {
    use engine::stream::{Limit, Rate, StreamConfig};
    use engine::trial::{self, TrialConfig, TrialStream};
    use wire::encap::EncapSpec;
    use wire::linerate::{FrameSize, Path};
    use wire::template::{FrameTemplate, StreamSpec};

    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET)");
        return;
    }
    let ns = NsPair::new("wr-em", "wrem", "t");
    let (stx, srx) = std::sync::mpsc::channel();
    let srv = Running::start(
        ns.port_a("a"),
        |mac| Server::new(server_cfg(mac)),
        move |s: &mut Server| {
            let ev = s.take_events();
            for e in &ev {
                if let ServerEvent::SessionUp { info, .. } = e {
                    let _ = stx.send(*info);
                }
            }
            // Data frames of the trial reach this socket too: do not keep them.
            ev.into_iter()
                .filter(|e| !matches!(e, ServerEvent::Data { .. }))
                .collect()
        },
    );
    let (ctx, crx) = std::sync::mpsc::channel();
    let cli = Running::start(
        ns.port_b("b"),
        |mac| {
            let mut c = Client::new(ClientConfig {
                mac,
                ..ClientConfig::default()
            });
            c.start(control::now());
            c
        },
        move |c: &mut Client| {
            let ev = c.take_events();
            for e in &ev {
                if let ClientEvent::Up(info) = e {
                    let _ = ctx.send(*info);
                }
            }
            ev.into_iter()
                .filter(|e| !matches!(e, ClientEvent::Data { .. }))
                .collect()
        },
    );
    let s_info = srx.recv_timeout(Duration::from_secs(10)).expect("AC up");
    let c_info = crx
        .recv_timeout(Duration::from_secs(10))
        .expect("client up");
    assert_eq!(s_info.session_id, c_info.session_id);
    let client_addr = c_info.negotiated.local_ipv4.expect("IPCP address");

    let encap: EncapSpec = "ipv4+pppoe".parse().expect("encap");
    let frames = 5_000u64;
    let sizes = [64usize, 512, 1000];
    let mut streams = Vec::new();
    let mut id = 1u16;
    for &size in &sizes {
        for (info, tx_port, rx_port, dst) in [
            (&c_info, 1usize, 0usize, Ipv4Addr::new(203, 0, 113, 2)),
            (&s_info, 0, 1, client_addr),
        ] {
            let mut spec = StreamSpec::new(encap);
            spec.stream_id = id;
            spec.dst_ip = dst.into();
            spec.dst_port = 9;
            info.apply_to(&mut spec);
            let t = FrameTemplate::new(&spec, size).expect("template");
            assert_eq!(
                t.len() + 4,
                size + 8,
                "PPPoE adds 8 bytes to the reference frame"
            );
            assert!(t.len() - 22 <= info.max_datagram(), "within the peer's MRU");
            streams.push(TrialStream {
                config: StreamConfig {
                    rewrite_macs: false,
                    ..StreamConfig::single(
                        id,
                        t,
                        Rate::Pps(wire::units::Pps(5_000.0)),
                        Limit::Frames(frames),
                    )
                },
                tx_port,
                rx_port,
            });
            id += 1;
        }
    }
    let mut pa = ns.port_a("a");
    pa.name = "ac".into();
    let mut pb = ns.port_b("b");
    pb.name = "subscriber".into();
    let mut cfg = TrialConfig::new(vec![pa, pb], streams);
    cfg.drain = Duration::from_millis(300);
    let report = trial::run(&cfg, &AtomicBool::new(false)).expect("trial");
    let (server, _, _) = srv.finish();
    let (client, _, _) = cli.finish();
    for p in &report.rx_ports {
        assert_eq!(p.ring_drops, 0, "ring drops on {}", p.port);
    }
    for s in &report.streams {
        eprintln!(
            "stream {} {}->{}: sent {} received {} lost {}",
            s.stream_id,
            s.tx_port,
            s.rx_port,
            s.tx.sent,
            s.rx.received,
            s.rx.lost.unwrap_or(0)
        );
        assert_eq!(s.tx.sent, frames, "stream {}", s.stream_id);
        assert_eq!(s.rx.received, frames, "stream {}", s.stream_id);
        assert_eq!(s.rx.duplicates, 0);
    }
    assert_eq!(report.total.received, frames * sizes.len() as u64 * 2);
    // The sessions survived the trial (their control loops kept running).
    assert_eq!(server.stats.sessions_up, 1);
    assert!(client.is_up());
    // Line rate on the encapsulated frame: at 1 Gb/s the PPPoE (wan) link carries size + 8.
    let path = Path::router(wire::units::BitsPerSec(1e9), encap, 1500);
    for &size in &sizes {
        let r = path
            .rate(&FrameSize::Fixed { bytes: size }, true)
            .expect("rate");
        let wan = &r.links[1];
        assert_eq!(wan.frames, vec![size + 8]);
        assert_eq!(r.bottleneck, 1, "the PPPoE link limits the rate");
        let expect = 1e9 / ((size + 8 + 20) as f64 * 8.0);
        assert!((r.max_pps.0 - expect).abs() < 1e-6);
        eprintln!(
            "{size} B: PPPoE frame {} B, max {:.0} pps per direction, {:.0} both ways",
            size + 8,
            r.max_pps.0,
            r.total_pps.0
        );
    }
}

/// Ctrl-C handling of `wirerate pppoe`: SIGTERM to a client with a session up closes it (LCP
/// Terminate + PADT) and exits 0 with its statistics; SIGINT to the server with a session up
/// sends that session a PADT (captured by tcpdump on the subscriber's side, and seen by our
/// client, which goes down), prints the statistics (ended by reason, setup times) and exits 0.
#[test]
fn sigint_closes_every_session_with_a_padt_and_prints_statistics() {
    use std::io::BufRead;
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET)");
        return;
    }
    let have_tcpdump = Command::new("which")
        .arg("tcpdump")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let ns = NsPair::new("wr-em", "wrem", "i");
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let spawn = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("wirerate pppoe")
    };
    let signal = |c: &std::process::Child, sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &c.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig}");
    };
    let wait_exit = |mut c: std::process::Child| {
        let end = Instant::now() + Duration::from_secs(5);
        while c.try_wait().expect("try_wait").is_none() {
            assert!(
                Instant::now() < end,
                "did not stop within 5 s of the signal"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        c.wait_with_output().expect("output")
    };
    let lines = |b: &[u8]| -> Vec<serde_json::Value> {
        String::from_utf8_lossy(b)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect()
    };
    // Waits for the client's "up" line; returns the rest of its output once it exits.
    let first_line = |c: &mut std::process::Child| -> serde_json::Value {
        let mut out = std::io::BufReader::new(c.stdout.as_mut().unwrap());
        let mut line = String::new();
        let _ = out.read_line(&mut line);
        serde_json::from_str(&line).unwrap_or(serde_json::Value::Null)
    };
    let server = spawn(&["pppoe", "server", "--netns", &ns.a, "--dev", "wrem0"]);
    std::thread::sleep(Duration::from_millis(300));

    // 1. SIGTERM to a client whose session is up.
    let mut c1 = spawn(&["pppoe", "client", "--netns", &ns.b, "--dev", "wrem1"]);
    assert_eq!(first_line(&mut c1)["event"], "up");
    signal(&c1, "-TERM");
    let out1 = wait_exit(c1);
    let l1 = lines(&out1.stdout);
    eprintln!("client 1 after its up line: {l1:#?}");
    assert_eq!(out1.status.code(), Some(0));
    assert!(l1
        .iter()
        .any(|v| v["event"] == "down" && v["reason"] == "LocalClose"));
    let st1 = l1.iter().find(|v| v["event"] == "stats").expect("stats");
    assert_eq!(st1["padt_tx"], 1, "the client's PADT");
    assert!(st1["setup_ms"].as_f64().is_some());

    // 2. SIGINT to the server while a second client's session is up.
    let mut c2 = spawn(&["pppoe", "client", "--netns", &ns.b, "--dev", "wrem1"]);
    assert_eq!(first_line(&mut c2)["event"], "up");
    let dump = have_tcpdump.then(|| {
        let mut d = Command::new("ip");
        d.args([
            "netns", "exec", &ns.b, "tcpdump", "-i", "wrem1", "-Q", "in", "-c", "1",
        ])
        .args(["-n", "-l", "ether proto 0x8863 and ether[15] = 0xa7"])
        .stdout(Stdio::piped());
        Capture::start(d)
    });
    signal(&server, "-INT");
    let so = wait_exit(server);
    let s = lines(&so.stdout);
    eprintln!("server: {s:#?}");
    assert_eq!(so.status.code(), Some(0), "a stop by Ctrl-C exits 0");
    let st = s
        .iter()
        .find(|v| v["event"] == "stats")
        .expect("server stats");
    assert_eq!(st["sessions_up_total"], 2);
    assert_eq!(st["padt_tx"], 1, "one PADT for the one open session");
    assert_eq!(st["ended"]["LocalClose"], 1, "{st}");
    assert_eq!(st["setup_count"], 2);
    assert!(st["setup_mean_ms"].as_f64().is_some());
    // Every session that ended has its `down` line, the one closed at the stop too (issue 19
    // row 17: sessions ending during the shutdown had none, so a subscriber whose
    // authentication failed and who left without a word showed only in the totals).
    let ended: u64 = st["ended"]
        .as_object()
        .expect("ended by reason")
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    let downs = s.iter().filter(|v| v["event"] == "down").count() as u64;
    assert_eq!(downs, ended, "{s:#?}");
    assert!(s
        .iter()
        .any(|v| v["event"] == "down" && v["reason"] == "LocalClose"));
    let out2 = wait_exit(c2);
    let l2 = lines(&out2.stdout);
    eprintln!("client 2 after its up line: {l2:#?}");
    let down = l2
        .iter()
        .find(|v| v["event"] == "down")
        .expect("client 2 down");
    assert!(
        down["reason"] == "PeerPadt" || down["reason"] == "PeerTerminate",
        "{down}"
    );
    match dump {
        Some(d) => {
            let (stdout, _) = d.wait();
            let text = String::from_utf8_lossy(&stdout);
            eprintln!("tcpdump: {text}");
            assert!(
                text.contains("PADT"),
                "tcpdump saw the server's PADT: {text}"
            );
        }
        None => println!("SKIP (capture only): no tcpdump"),
    }
}

/// Issue 35: a subscriber table's `prefix=` is what that subscriber's session delegates.
/// `wirerate pppoe server --provision --subscribers FILE` against scapy's PPPoE subscriber
/// running IPv6CP and a DHCPv6 Solicit with an IA_PD (scapy's dhcp6 layers build the request
/// and dissect the Reply): alice, whose line says `prefix=2001:db8:300::/56`, gets exactly
/// that; bob, without one, the pool's first /56 (2001:db8:200::/56); the AC's lease lines say
/// the same.
#[test]
fn a_subscribers_table_prefix_is_what_dhcpv6_delegates_to_an_independent_client() {
    if !can_run() {
        return;
    }
    let ns = NsPair::new("wr-em", "wrem", "p");
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path().join("subscribers.txt");
    std::fs::write(
        &table,
        "alice s3cret prefix=2001:db8:300::/56\nbob hunter2\n",
    )
    .unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_wirerate"))
        .args(["pppoe", "server", "--netns", &ns.a, "--dev", "wrem0"])
        .args([
            "--provision",
            "--json",
            "--sessions",
            "2",
            "--duration",
            "60",
        ])
        .arg("--subscribers")
        .arg(&table)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("wirerate pppoe server");
    let mut out = server.stdout.take().unwrap();
    let server_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        out.read_to_end(&mut b).map(|_| b)
    });
    let mut got = Vec::new();
    for (user, pw) in [("alice", "s3cret"), ("bob", "hunter2")] {
        let (ok, r) = run_peer(
            &ns.b,
            "pppoe_client.py",
            &[
                "--iface",
                "wrem1",
                "--user",
                user,
                "--password",
                pw,
                "--dhcpv6-pd",
            ],
            Duration::from_secs(40),
        );
        assert!(ok, "{user}: scapy client failed: {r}");
        got.push(r["delegated"].as_str().unwrap_or_default().to_string());
    }
    let status = server.wait().expect("server exit");
    assert!(status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&server_out.join().unwrap().expect("server output"))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect();
    assert_eq!(got, ["2001:db8:300::/56", "2001:db8:200::/56"]);
    let leases: Vec<&str> = lines
        .iter()
        .filter(|v| v["event"] == "lease")
        .filter_map(|v| v["prefix"].as_str())
        .collect();
    assert_eq!(
        leases,
        ["2001:db8:300::/56", "2001:db8:200::/56"],
        "the AC's lease lines"
    );
}
