//! `wirerate run` on real interfaces (issues 5 and 7), without touching the host's own: each
//! test builds its own namespaces and veths (`wr-prt<pid><tag>-*`), removed on drop even when
//! the test fails. Root is needed; without it each test prints `SKIP: …`.
//!
//! - `real_ports_through_a_linux_router`: tester A — router namespace (plain IP forwarding) —
//!   tester B, and a plan whose ports are those interfaces in those namespaces and whose DUT
//!   is a "device" with hooks run inside the router namespace: setup adds an nft counter of
//!   the test frames, stats-after reads it. UDP over IPv4 and IPv6 and TCP (iperf3) run; every
//!   UDP frame sent is received, and the router's counter saw exactly those frames.
//! - `pppoe_ports_carry_the_trials`: port A plays our PPPoE client, port B our access
//!   concentrator, over one veth (the loopback of issue 7, driven by a plan): the run waits for
//!   the session, UDP 64/512/1000 B rides it with exact counts, the load is a fraction of the
//!   line rate of the encapsulated frame (+8 bytes), session statistics land in
//!   `sessions.jsonl`, and the session is closed with PADT at the end.
//! - `pppoe_timeout_sends_nothing`: an access concentrator nobody dials: the run stops with a
//!   clear error after the plan's timeout and records no trial.
//! - `dslite_ports_carry_the_trials`: port A plays our B4, port B our AFTR, over one veth: the
//!   B4's tunnel probe is answered before any traffic, UDP rides the softwire with exact counts,
//!   loads count the tunnelled frame (+40 bytes), and both ends' statistics are recorded.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use bench::plan::Plan;

mod common_run;
use common_run::{has_tool, is_root, plan_file, run, run_plan_ok, trials};

static SERIAL: Mutex<()> = Mutex::new(());

fn skip(tools: &[&str]) -> bool {
    if !is_root() {
        println!("SKIP: run tests on ports need root (network namespaces, AF_PACKET)");
        return true;
    }
    for tool in tools {
        if !has_tool(tool) {
            assert!(
                std::env::var_os("CI").is_none(),
                "{tool} is missing (scripts/install-deps.sh)"
            );
            println!("SKIP: {tool} not installed (scripts/install-deps.sh)");
            return true;
        }
    }
    false
}

fn sh(cmd: &str) {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Namespaces `wr-prt<pid><tag>-<node>`, deleted on drop.
struct Nets {
    prefix: String,
    nodes: Vec<String>,
}

impl Nets {
    fn new(tag: &str, nodes: &[&str]) -> Nets {
        let prefix = format!("wr-prt{}{tag}", std::process::id() % 100_000);
        let n = Nets {
            prefix,
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
        };
        n.remove();
        for node in nodes {
            sh(&format!("ip netns add {}", n.ns(node)));
            sh(&format!("ip -n {} link set lo up", n.ns(node)));
        }
        n
    }

    fn ns(&self, node: &str) -> String {
        format!("{}-{node}", self.prefix)
    }

    /// A veth `left`@`l` — `right`@`r`, both up.
    fn veth(&self, l: &str, left: &str, r: &str, right: &str) {
        let (nl, nr) = (self.ns(l), self.ns(r));
        sh(&format!(
            "ip link add {left} netns {nl} type veth peer name {right} netns {nr}"
        ));
        sh(&format!("ip -n {nl} link set {left} up"));
        sh(&format!("ip -n {nr} link set {right} up"));
    }

    fn remove(&self) {
        for node in &self.nodes {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(node)])
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Nets {
    /// Two namespaces `c` and `s` joined by one veth `wrptc` — `wrpts`: a port plays each end.
    fn one_link(tag: &str) -> Nets {
        let n = Nets::new(tag, &["c", "s"]);
        n.veth("c", "wrptc", "s", "wrpts");
        n
    }

    /// No IPv6 in `c` and `s`: only the plan's control planes speak on the link.
    fn without_ipv6(&self) {
        for ns in [self.ns("c"), self.ns("s")] {
            sh(&format!(
                "ip netns exec {ns} sysctl -qw net.ipv6.conf.all.disable_ipv6=1"
            ));
        }
    }
}

impl Drop for Nets {
    fn drop(&mut self) {
        self.remove();
    }
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The statistics line `sessions.jsonl` has for `port`.
fn stats_of(lines: &[serde_json::Value], port: &str) -> serde_json::Value {
    lines
        .iter()
        .find(|l| l["event"] == "stats" && l["port"] == port)
        .unwrap_or_else(|| panic!("no stats for {port}: {lines:?}"))
        .clone()
}

#[test]
fn real_ports_through_a_linux_router() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip(&["nft", "iperf3", "tcpdump"]) {
        return;
    }
    let n = Nets::new("r", &["a", "dut", "b"]);
    n.veth("a", "wrpta", "dut", "wrptra");
    n.veth("b", "wrptb", "dut", "wrptrb");
    let (a, r, b) = (n.ns("a"), n.ns("dut"), n.ns("b"));
    // A plain Linux router: addresses, forwarding, default routes on the testers (iperf3 uses
    // the kernel's stack; the engine answers ARP/ND and resolves its next hop itself).
    for cmd in [
        format!("ip -n {r} addr add 198.51.100.1/24 dev wrptra"),
        format!("ip -n {r} addr add 203.0.113.1/24 dev wrptrb"),
        format!("ip -n {r} addr add 2001:db8:a::1/64 dev wrptra nodad"),
        format!("ip -n {r} addr add 2001:db8:b::1/64 dev wrptrb nodad"),
        format!(
            "ip netns exec {r} sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1"
        ),
        format!("ip -n {a} addr add 198.51.100.2/24 dev wrpta"),
        format!("ip -n {a} addr add 2001:db8:a::2/64 dev wrpta nodad"),
        format!("ip -n {a} route add default via 198.51.100.1"),
        format!("ip -n {a} -6 route add default via 2001:db8:a::1"),
        format!("ip -n {b} addr add 203.0.113.2/24 dev wrptb"),
        format!("ip -n {b} addr add 2001:db8:b::2/64 dev wrptb nodad"),
        format!("ip -n {b} route add default via 203.0.113.1"),
        format!("ip -n {b} -6 route add default via 2001:db8:b::1"),
    ] {
        sh(&cmd);
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        &format!(
            r#"name = "ports"
[topology]
kind = "interfaces"
[ports.lan]
interface = "wrpta"
namespace = "{a}"
ipv4 = "198.51.100.2"
gateway-v4 = "198.51.100.1"
ipv6 = "2001:db8:a::2"
gateway-v6 = "2001:db8:a::1"
speed = "1G"
[ports.wan]
interface = "wrptb"
namespace = "{b}"
ipv4 = "203.0.113.2"
gateway-v4 = "203.0.113.1"
ipv6 = "2001:db8:b::2"
gateway-v6 = "2001:db8:b::1"
speed = "1G"
[dut]
kind = "device"
netns = "{r}"
[dut.profiles.counted]
setup = ["nft add table inet wrpt && nft add chain inet wrpt fw '{{ type filter hook forward priority 0; }}' && nft add rule inet wrpt fw udp dport 9 counter"]
stats-after = ["nft list table inet wrpt"]
teardown = ["nft delete table inet wrpt"]
[run]
trial-duration = "1s"
settle = "100ms"
# A frame held up to a second in a user-space uplink (a busy machine) still counts.
drain = "1s"
profile-settle = "0s"
max-load = 0.01
tester-tolerance = 0.05
[methodology.iperf3]
duration = "1s"
omit = "0s"
[[matrix]]
protocol = ["udp"]
ip = [4, 6]
frame-size = [512]
methodologies = ["rfc2544-throughput"]
[[matrix]]
protocol = ["tcp"]
ip = [4]
methodologies = ["iperf3"]
"#
        ),
    );
    let check = run(&["plan", "check", plan.to_str().unwrap()]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("ports: lan (wrpta in"));
    let out = d.path().join("run");
    let stdout = run_plan_ok(&plan, &out);
    println!("{stdout}");
    let ts = trials(&out);
    let udp: Vec<_> = ts
        .iter()
        .filter(|t| t.tcp.is_none() && !t.superseded)
        .collect();
    assert_eq!(udp.len(), 2, "one passing trial per IP version at 1 % load");
    for t in &udp {
        assert!(t.outcome.received > 0, "{t:?}");
        assert_eq!(t.outcome.lost, 0, "{t:?}");
    }
    // Every frame port B received crossed the router, also in trials measured again after a
    // tester stall (superseded, kept in the records): the rule counts those too.
    let received: u64 = ts
        .iter()
        .filter(|t| t.tcp.is_none())
        .map(|t| t.outcome.received)
        .sum();
    // The router counted exactly the frames port B received (IPv4 and IPv6, one inet rule).
    let hooks = jsonl(&out.join("hooks.jsonl"));
    let last = hooks
        .iter()
        .rfind(|h| h["stage"] == "stats-after")
        .expect("stats-after ran");
    let text = last["output"]["stdout"].as_str().unwrap();
    let counted: u64 = text
        .split("counter packets ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no counter in {text}"));
    println!("UDP frames received at B {received}, counted by the router's nft rule {counted}");
    assert_eq!(counted, received);
    assert!(hooks.iter().any(|h| h["stage"] == "teardown"));
    // TCP crossed the router too.
    let tcp = ts
        .iter()
        .find_map(|t| t.tcp.as_ref())
        .expect("an iperf3 trial");
    assert!(tcp.l4_bps.0 > 0.0, "{tcp:?}");
    assert_eq!(tcp.syn_mss.first(), Some(&1460), "{tcp:?}");
    // Nothing of the plan's interfaces was removed, and no lab was built.
    sh(&format!("ip -n {a} link show wrpta"));
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains("wr-wr-"));
}

const PPPOE_PLAN: &str = r#"name = "pppoe-loop"
[topology]
kind = "interfaces"
[ports.subscriber]
interface = "wrptc"
namespace = "NS_C"
speed = "1G"
[ports.subscriber.pppoe]
role = "client"
user = "cpe"
password = "secret"
timeout = "15s"
[ports.isp]
interface = "wrpts"
namespace = "NS_S"
speed = "1G"
[ports.isp.pppoe]
role = "server"
mru = 1454
auth = ["pap"]
users = [{ user = "cpe", password = "secret" }]
timeout = "15s"
[dut]
kind = "device"
[dut.profiles.loopback]
[run]
trial-duration = "1s"
settle = "100ms"
# A frame held up to a second in a user-space uplink (a busy machine) still counts.
drain = "1s"
profile-settle = "0s"
max-load = 0.01
tester-tolerance = 0.05
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["pppoe"]
frame-size = [64, 512, 1000]
methodologies = ["rfc2544-throughput"]
"#;

#[test]
fn pppoe_ports_carry_the_trials() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip(&[]) {
        return;
    }
    let n = Nets::one_link("p");
    // Only PPPoE speaks on the link.
    n.without_ipv6();
    let d = tempfile::tempdir().unwrap();
    let text = PPPOE_PLAN
        .replace("NS_C", &n.ns("c"))
        .replace("NS_S", &n.ns("s"));
    let plan_path = plan_file(d.path(), &text);
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let out = d.path().join("run");
    let stdout = run_plan_ok(&plan_path, &out);
    println!("{stdout}");
    // A trial the tester stalled in is recorded as superseded and measured again under the
    // same key; it is not one of the case's trials.
    let ts: Vec<_> = trials(&out).into_iter().filter(|t| !t.superseded).collect();
    assert_eq!(ts.len(), 3, "one passing trial per frame size at 1 % load");
    let cases = plan.cases().unwrap();
    for t in &ts {
        let case = cases.iter().find(|c| c.id == t.key.case_id).unwrap();
        let size = case
            .frame()
            .and_then(|f| f.fixed())
            .map(|b| b as u32)
            .unwrap();
        let o = &t.outcome;
        let sent = o.received + o.lost;
        assert!(o.received > 0 && o.lost == 0, "{}: {o:?}", case.id);
        // 100 % is the line rate of the PPPoE frame (size + 8 on the wire, + 20 B of L1).
        let line = plan.line_pps(case).0;
        let expect = 1e9 / ((size as f64 + 8.0 + 20.0) * 8.0);
        assert!((line - expect).abs() < 1e-6, "{line} vs {expect}");
        // The sender was asked for 1 % of that line rate and the recorded offered load is the
        // achieved rate over the same line rate: a plain-frame line rate would be off by
        // (size + 28) / (size + 20), 12.5 % at 64 B.
        let achieved = o.offered.0 * line;
        let asked = 0.01 * line;
        let err = (achieved - asked) / asked;
        println!(
            "{}: sent {sent} received {} lost 0; line rate {line:.0} pps on the {}-byte PPPoE frame; asked {asked:.0} pps, achieved {achieved:.0} pps ({:+.2} %)",
            case.id,
            o.received,
            size + 8,
            err * 100.0
        );
        // Too fast means the wrong line rate; too slow is a stalled sender on a loaded
        // machine, which the run itself flags as tester-limited (never a DUT figure).
        assert!(err < 0.05, "{err}");
        assert!(t.tester_limited || err > -0.05, "{err} not flagged");
    }
    let lines = jsonl(&out.join("sessions.jsonl"));
    let ups: Vec<_> = lines.iter().filter(|l| l["event"] == "up").collect();
    assert_eq!(ups.len(), 2, "{lines:?}");
    assert!(ups.iter().all(|u| u["our_mru"].is_number()));
    let (c, s) = (stats_of(&lines, "subscriber"), stats_of(&lines, "isp"));
    println!("client {c}\nserver {s}");
    assert_eq!(s["sessions_up_total"], 1);
    assert_eq!(s["setup_count"], 1);
    assert!(s["setup_mean_ms"].as_f64().unwrap() > 0.0);
    // The client closed at the end: LCP Terminate and a PADT the AC received.
    assert_eq!(c["padt_tx"], 1, "{c}");
    assert_eq!(s["padt_rx"], 1, "{s}");
    assert_eq!(s["ended"]["PeerPadt"], 1, "{s}");
}

/// The run's access concentrator takes a subscriber table (`subscribers = "FILE"`, relative
/// to the plan): the CPE logs in as its user and gets the table's fixed address, and the
/// trial rides that session.
#[test]
fn pppoe_ports_take_a_subscriber_table() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip(&[]) {
        return;
    }
    let n = Nets::one_link("q");
    n.without_ipv6();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("subs.txt"),
        "other  pw\ncpe    secret  ipv4=192.0.2.77\n",
    )
    .unwrap();
    let text = PPPOE_PLAN
        .replace("NS_C", &n.ns("c"))
        .replace("NS_S", &n.ns("s"))
        .replace(
            "users = [{ user = \"cpe\", password = \"secret\" }]",
            "subscribers = \"subs.txt\"",
        )
        .replace("frame-size = [64, 512, 1000]", "frame-size = [512]");
    let plan_path = plan_file(d.path(), &text);
    let out = d.path().join("run");
    println!("{}", run_plan_ok(&plan_path, &out));
    let ts: Vec<_> = trials(&out).into_iter().filter(|t| !t.superseded).collect();
    assert_eq!(ts.len(), 1);
    assert!(
        ts[0].outcome.received > 0 && ts[0].outcome.lost == 0,
        "{ts:?}"
    );
    let lines = jsonl(&out.join("sessions.jsonl"));
    let up = lines
        .iter()
        .find(|l| l["event"] == "up" && l["user"] == "cpe")
        .unwrap_or_else(|| panic!("the AC's up line: {lines:?}"));
    assert_eq!(up["peer_ipv4"], "192.0.2.77", "{up}");
    let client_up = lines
        .iter()
        .find(|l| l["event"] == "up" && l["local_ipv4"] == "192.0.2.77");
    assert!(
        client_up.is_some(),
        "the CPE has the table's address: {lines:?}"
    );
}

#[test]
fn pppoe_timeout_sends_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip(&[]) {
        return;
    }
    let n = Nets::one_link("t");
    let d = tempfile::tempdir().unwrap();
    // The subscriber side is a plain port: nobody dials the AC.
    let text = PPPOE_PLAN
        .replace("NS_C", &n.ns("c"))
        .replace("NS_S", &n.ns("s"))
        .replace(
            "[ports.subscriber.pppoe]\nrole = \"client\"\nuser = \"cpe\"\npassword = \"secret\"\ntimeout = \"15s\"\n",
            "ipv4 = \"192.0.2.2\"\ngateway-v4 = \"192.0.2.1\"\n",
        )
        .replace("timeout = \"15s\"", "timeout = \"1s\"");
    let plan = plan_file(d.path(), &text);
    let out = d.path().join("run");
    let o = run(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    println!("{err}");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("PPPoE on port isp: no subscriber (the DUT's PPPoE client) brought a session up within 1 s; nothing was sent"),
        "{err}"
    );
    assert!(trials(&out).is_empty());
    let lines = jsonl(&out.join("sessions.jsonl"));
    let s = lines.iter().find(|l| l["event"] == "stats").expect("stats");
    assert_eq!(s["sessions_up_total"], 0, "{s}");
}

#[test]
fn dslite_ports_carry_the_trials() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip(&[]) {
        return;
    }
    let n = Nets::one_link("d");
    n.without_ipv6();
    let text = format!(
        r#"name = "dslite-loop"
[topology]
kind = "interfaces"
[ports.b4]
interface = "wrptc"
namespace = "{}"
speed = "1G"
[ports.b4.dslite]
role = "b4"
address = "2001:db8:c::2"
peer = "2001:db8:d::1"
timeout = "10s"
[ports.aftr]
interface = "wrpts"
namespace = "{}"
ipv4 = "203.0.113.2"
speed = "1G"
[ports.aftr.dslite]
role = "aftr"
address = "2001:db8:d::1"
[dut]
kind = "device"
[dut.profiles.loopback]
[run]
trial-duration = "1s"
settle = "100ms"
# A frame held up to a second in a user-space uplink (a busy machine) still counts.
drain = "1s"
profile-settle = "0s"
max-load = 0.01
tester-tolerance = 0.05
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["dslite"]
frame-size = [64, 512, 1000]
methodologies = ["rfc2544-throughput"]
"#,
        n.ns("c"),
        n.ns("s")
    );
    let d = tempfile::tempdir().unwrap();
    let plan_path = plan_file(d.path(), &text);
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let out = d.path().join("run");
    let stdout = run_plan_ok(&plan_path, &out);
    println!("{stdout}");
    // A trial the tester stalled in is recorded as superseded and measured again under the
    // same key; it is not one of the case's trials.
    let ts: Vec<_> = trials(&out).into_iter().filter(|t| !t.superseded).collect();
    assert_eq!(ts.len(), 3, "one passing trial per frame size at 1 % load");
    let cases = plan.cases().unwrap();
    for t in &ts {
        let case = cases.iter().find(|c| c.id == t.key.case_id).unwrap();
        let size = case
            .frame()
            .and_then(|f| f.fixed())
            .map(|b| b as u32)
            .unwrap();
        let o = &t.outcome;
        assert!(o.received > 0 && o.lost == 0, "{}: {o:?}", case.id);
        let line = plan.line_pps(case).0;
        let expect = 1e9 / ((size as f64 + 40.0 + 20.0) * 8.0);
        assert!((line - expect).abs() < 1e-6, "{line} vs {expect}");
        println!(
            "{}: sent = received = {}; line rate {line:.0} pps on the {}-byte tunnelled frame",
            case.id,
            o.received,
            size + 40
        );
    }
    let lines = jsonl(&out.join("sessions.jsonl"));
    println!("{lines:#?}");
    let (b4, aftr) = (stats_of(&lines, "b4"), stats_of(&lines, "aftr"));
    assert_eq!(b4["probe_replies"], 1, "{b4}");
    assert!(b4["setup_ms"].as_f64().unwrap() > 0.0, "{b4}");
    assert_eq!(aftr["softwires_up"], 1, "{aftr}");
    let sent: u64 = ts.iter().map(|t| t.outcome.received).sum();
    let on_xdp = ts
        .iter()
        .all(|t| t.engine.as_ref().is_some_and(|e| e.backend == "xdp"));
    if on_xdp {
        // The XDP receiver counts the test frames inside the tunnel before any socket sees
        // them: the AFTR's own socket decapsulated its probe only.
        assert!(
            aftr["tunnel"]["decapsulated"].as_u64().unwrap() >= 1,
            "{aftr}"
        );
    } else {
        // The AFTR decapsulated every test frame and the probe (its socket sees them too).
        assert!(
            aftr["tunnel"]["decapsulated"].as_u64().unwrap() >= sent,
            "{aftr}"
        );
    }
}
