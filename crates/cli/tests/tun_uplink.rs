//! Issue 14 item 2: TCP through the emulated uplink. Our PPPoE client (or B4) plays the
//! gateway's WAN and our access concentrator (or AFTR) the ISP, each handing its session's
//! (softwire's) IP packets to a TUN device (`--tun`), with real kernels everywhere else:
//!
//! ```text
//! lan (iperf3 -c) ─veth─ gw (forwarding, nft NAPT + MSS clamp, WAN = our client's TUN)
//!          ─veth (PPPoE or IPv4-in-IPv6)─ isp (our AC/AFTR) ─TUN─ inet (iperf3 -s, 203.0.113.1)
//! ```
//!
//! Root is needed (else `SKIP: …`); iperf3, nft and tshark must be installed (a missing one
//! skips, but fails under `CI`). Namespaces `wr-t14<pid>…`, removed on drop.

mod common_isp;
#[path = "common_run/mod.rs"]
mod common_run;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common_isp::ip;

const INTERNET: &str = "203.0.113.1";

fn can_run() -> bool {
    common_isp::root_and_tools(&["iperf3", "nft", "tshark", "tcpdump"])
}

fn sh(ns: &str, script: &str) -> String {
    common_isp::ns_sh(ns, script)
}

/// The four namespaces; removed (with what runs inside) on drop.
struct Uplink {
    lan: String,
    gw: String,
    isp: String,
    inet: String,
}

impl Uplink {
    fn new(tag: &str) -> Uplink {
        let id = std::process::id() % 100_000;
        let n = |s: &str| format!("wr-t14{id}{tag}{s}");
        let u = Uplink {
            lan: n("lan"),
            gw: n("gw"),
            isp: n("isp"),
            inet: n("inet"),
        };
        u.remove();
        for ns in u.all() {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        ip(&[
            "link", "add", "t14l0", "netns", &u.lan, "type", "veth", "peer", "name", "t14l1",
            "netns", &u.gw,
        ]);
        ip(&[
            "link", "add", "t14w0", "netns", &u.gw, "type", "veth", "peer", "name", "t14w1",
            "netns", &u.isp,
        ]);
        sh(
            &u.lan,
            "ip addr add 192.0.2.2/24 dev t14l0; ip link set t14l0 up; \
             ip route add default via 192.0.2.1",
        );
        // The gateway: LAN side addressed, WAN veth carries only PPPoE (no IP, no IPv6
        // chatter); forwarding, NAPT out of the session's TUN, and the MSS clamp to the
        // route's MTU (the WAN TUN's MTU: the AC's MRU 1454 → MSS 1414; DS-Lite 1460 → 1420).
        sh(
            &u.gw,
            "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv4.ip_forward=1; \
             ip addr add 192.0.2.1/24 dev t14l1; ip link set t14l1 up; ip link set t14w0 up",
        );
        sh(
            &u.gw,
            "nft -f - <<'EOF'\n\
             table ip t14 {\n\
               chain clamp {\n\
                 type filter hook forward priority 0; policy accept;\n\
                 tcp flags syn tcp option maxseg size set rt mtu\n\
               }\n\
               chain napt {\n\
                 type nat hook postrouting priority 100;\n\
                 oifname \"t14wan\" masquerade\n\
               }\n\
             }\n\
             EOF",
        );
        sh(
            &u.isp,
            "sysctl -qw net.ipv6.conf.all.disable_ipv6=1; ip link set t14w1 up",
        );
        u
    }

    fn all(&self) -> [&String; 4] {
        [&self.lan, &self.gw, &self.isp, &self.inet]
    }

    fn remove(&self) {
        for ns in self.all() {
            let _ = lab::netns::delete(ns);
        }
    }
}

impl Drop for Uplink {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A `wirerate … --json` child whose stdout lines are collected as they come.
struct Wirerate {
    child: Child,
    lines: Arc<Mutex<Vec<serde_json::Value>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Wirerate {
    fn spawn(args: &[&str]) -> Wirerate {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wirerate"))
            .args(args)
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("wirerate");
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l2 = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v = serde_json::from_str(&line).expect("a JSON line");
                l2.lock().unwrap().push(v);
            }
        });
        Wirerate {
            child,
            lines,
            reader: Some(reader),
        }
    }

    fn lines(&self) -> Vec<serde_json::Value> {
        self.lines.lock().unwrap().clone()
    }

    /// The MSS of every `syn` line (direction `up`: from the session into the AC's TUN).
    fn syn_mss(&self) -> Vec<u64> {
        self.lines()
            .iter()
            .filter(|v| v["event"] == "syn" && v["direction"] == "up")
            .map(|v| v["mss"].as_u64().expect("an MSS option"))
            .collect()
    }

    /// SIGTERM (a clean stop), then all output.
    fn stop(mut self) -> (bool, Vec<serde_json::Value>) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("wait");
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        (status.success(), self.lines())
    }
}

impl Drop for Wirerate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One iperf3 run from the LAN host to the Internet host; (bytes sent, bytes received).
fn iperf3(u: &Uplink, mss: Option<u32>) -> (u64, u64) {
    let mut server = Command::new("ip")
        .args([
            "netns", "exec", &u.inet, "iperf3", "-s", "-1", "-B", INTERNET,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    wait_until("the iperf3 server", Duration::from_secs(5), || {
        sh(&u.inet, "ss -Hltn 'sport = :5201'").contains("5201")
    });
    let mut args = vec![
        "netns".to_string(),
        "exec".into(),
        u.lan.clone(),
        "iperf3".into(),
        "-c".into(),
        INTERNET.into(),
        "-t".into(),
        "2".into(),
        "-J".into(),
    ];
    if let Some(m) = mss {
        args.extend(["-M".into(), m.to_string()]);
    }
    let out = Command::new("ip").args(&args).output().expect("iperf3 -c");
    let _ = server.kill();
    let _ = server.wait();
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("iperf3 -J output is JSON");
    assert!(out.status.success(), "iperf3 -c failed: {json}");
    let end = &json["end"];
    let sent = end["sum_sent"]["bytes"].as_u64().expect("sum_sent");
    let received = end["sum_received"]["bytes"].as_u64().expect("sum_received");
    eprintln!(
        "iperf3 -M {mss:?}: sent {sent} B, received {received} B, {:.0} Mb/s",
        end["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0)
            / 1e6
    );
    (sent, received)
}

/// One encapsulation of the uplink: how to start both ends and what the ISP side must see.
struct Wan {
    name: &'static str,
    server: &'static [&'static str],
    client: &'static [&'static str],
    /// The gateway's WAN address line `ip -4 addr` shows once up.
    wan_addr: &'static str,
    /// The WAN TUN's MTU and the MSS the clamp derives from it (MTU − 40).
    mtu: u32,
    /// tcpdump's capture filter for client SYNs on the ISP-side veth, and tshark's display
    /// filter for the same.
    capture: &'static str,
    display: &'static str,
}

const PPPOE: Wan = Wan {
    name: "PPPoE",
    server: &["pppoe", "server"],
    client: &["pppoe", "client"],
    wan_addr: "198.51.100.10 peer 198.51.100.1",
    // The AC's MRU (1454 by default) is the session's MTU towards the ISP.
    mtu: 1454,
    capture: "pppoes and tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
    display: "pppoes && tcp.flags.syn == 1 && tcp.flags.ack == 0",
};

const DSLITE: Wan = Wan {
    name: "DS-Lite",
    server: &["dslite", "aftr"],
    client: &["dslite", "b4"],
    wan_addr: "192.0.0.2 peer 192.0.0.1",
    // The largest IPv4 packet a 1500-byte IPv6 link carries whole: 1500 − 40.
    mtu: 1460,
    // IPv4-in-IPv6 (next header 4), inner TCP (IPv4 protocol 6 at ip6[49]) with SYN and
    // not ACK (the inner TCP flags at ip6[40 + 20 + 13]).
    capture: "ip6 and ip6[6] == 4 and ip6[49] == 6 and ip6[73] & 0x12 == 0x02",
    display: "ipv6.nxt == 4 && tcp.flags.syn == 1 && tcp.flags.ack == 0",
};

#[test]
fn iperf3_tcp_through_our_pppoe_uplink_with_the_gateways_mss_clamp_seen_at_the_isp() {
    if !can_run() {
        return;
    }
    tcp_through_the_uplink(&Uplink::new("p"), &PPPOE);
}

#[test]
fn iperf3_tcp_through_our_dslite_uplink_with_the_gateways_mss_clamp_seen_at_the_aftr() {
    if !can_run() {
        return;
    }
    tcp_through_the_uplink(&Uplink::new("d"), &DSLITE);
}

fn tcp_through_the_uplink(u: &Uplink, wan: &Wan) {
    let clamp = u64::from(wan.mtu - 40);
    let mut args = wan.server.to_vec();
    args.extend(["--netns", &u.isp, "--dev", "t14w1", "--tun", "t14inet"]);
    args.extend(["--tun-netns", &u.inet, "--duration", "120"]);
    let server = Wirerate::spawn(&args);
    wait_until("the ISP side's TUN", Duration::from_secs(10), || {
        sh(&u.inet, "ip -4 addr show").contains(INTERNET)
    });
    let mut args = wan.client.to_vec();
    args.extend(["--netns", &u.gw, "--dev", "t14w0", "--tun", "t14wan"]);
    args.extend(["--duration", "120"]);
    let client = Wirerate::spawn(&args);
    wait_until("the gateway's WAN address", Duration::from_secs(10), || {
        sh(&u.gw, "ip -4 addr show").contains(wan.wan_addr)
    });
    let mtu = sh(&u.gw, "cat /sys/class/net/t14wan/mtu");
    assert_eq!(
        mtu.trim(),
        wan.mtu.to_string(),
        "{}: the WAN TUN's MTU",
        wan.name
    );
    let ping = sh(&u.lan, "ping -c 2 -W 2 203.0.113.1");
    assert!(ping.contains("2 received"), "{ping}");

    // Frames carrying client SYNs on the ISP-side veth, for tshark.
    let pcap =
        std::env::temp_dir().join(format!("wr-t14-{}-{}.pcap", std::process::id(), wan.name));
    let mut dump = Command::new("ip")
        .args([
            "netns", "exec", &u.isp, "tcpdump", "-i", "t14w1", "-U", "-w",
        ])
        .arg(&pcap)
        .arg(wan.capture)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tcpdump");
    std::thread::sleep(Duration::from_millis(500));

    // Without -M the LAN host offers 1460; the clamp makes it the WAN MTU − 40. A smaller -M
    // passes the clamp unchanged. The control connection keeps the clamp's value each time.
    let mut expected = Vec::new();
    let mut received_total = 0;
    for (mss, want) in [(None, clamp), (Some(1200), 1200), (Some(800), 800)] {
        let before = server.syn_mss().len();
        let (sent, received) = iperf3(u, mss);
        assert!(
            sent > 0 && received > 0,
            "no TCP data crossed: {sent} {received}"
        );
        assert!(received <= sent, "received {received} > sent {sent}");
        received_total += received;
        wait_until("the ISP side's syn lines", Duration::from_secs(3), || {
            server.syn_mss().len() >= before + 2
        });
        let seen = server.syn_mss()[before..].to_vec();
        assert_eq!(
            seen,
            vec![clamp, want],
            "{}: SYN MSS at the ISP side for -M {mss:?}",
            wan.name
        );
        expected.extend(seen);
    }

    // Without the clamp the LAN host's own 1460 reaches the ISP: what we saw was the clamp.
    sh(&u.gw, "nft flush chain ip t14 clamp");
    let before = server.syn_mss().len();
    let (sent, received) = iperf3(u, None);
    assert!(sent > 0 && received > 0);
    received_total += received;
    wait_until("the ISP side's syn lines", Duration::from_secs(3), || {
        server.syn_mss().len() >= before + 2
    });
    let seen = server.syn_mss()[before..].to_vec();
    assert_eq!(
        seen,
        vec![1460, 1460],
        "{}: SYN MSS without the clamp",
        wan.name
    );
    expected.extend(seen);

    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-INT", &dump.id().to_string()])
        .status();
    let _ = dump.wait();

    let (cok, c) = client.stop();
    let (sok, s) = server.stop();
    assert!(cok && sok, "clean exits: client {cok}, server {sok}");
    let stats = s
        .iter()
        .find(|v| v["event"] == "stats")
        .expect("ISP-side stats");
    let tun = &stats["tun"];
    eprintln!("{} ISP-side tun: {tun}", wan.name);
    // Every byte iperf3 counted as received crossed the ISP side's TUN (plus IP/TCP headers).
    assert!(
        tun["up_bytes"].as_u64().unwrap() > received_total,
        "{tun} vs {received_total}"
    );
    assert_eq!(tun["up_dropped"], 0, "{tun}");
    let cstats = c
        .iter()
        .find(|v| v["event"] == "stats")
        .expect("client stats");
    // What the ISP side handed up came from the gateway's kernel through our client (a
    // frame lost on the veth under load would make it fewer, never more).
    let (up, down) = (
        tun["up_packets"].as_u64().unwrap(),
        cstats["tun"]["down_packets"].as_u64().unwrap(),
    );
    assert!(up > 0 && up <= down, "ISP up {up}, client down {down}");
    // The TUN devices went with the processes.
    assert!(!sh(&u.inet, "ip link").contains("t14inet"));
    assert!(!sh(&u.gw, "ip link").contains("t14wan"));

    // tshark (Wireshark's dissectors) decodes the same SYNs inside the encapsulation.
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(&pcap)
        .args([
            "-Y",
            wan.display,
            "-T",
            "fields",
            "-e",
            "tcp.options.mss_val",
        ])
        .output()
        .expect("tshark");
    let _ = std::fs::remove_file(&pcap);
    let tshark: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().parse().expect("an MSS"))
        .collect();
    assert_eq!(
        tshark, expected,
        "{}: tshark's SYN MSS on the ISP-side veth",
        wan.name
    );
}

/// The same uplink in a plan: `wirerate run` plays the ISP (`[ports.wan.pppoe]` with
/// `internet`), iperf3 runs from the LAN port to the Internet namespace the run creates, with
/// an MSS sweep; each trial record carries the SYN MSS captured on the AC's TUN device.
#[test]
fn plan_runs_iperf3_with_an_mss_sweep_through_an_emulated_pppoe_port() {
    if !can_run() {
        return;
    }
    let u = Uplink::new("r");
    let d = tempfile::tempdir().unwrap();
    // `internet` inside the pool's /24 is refused at its key.
    let bad = common_run::plan_file(d.path(), &plan_text(&u, "198.51.100.200"));
    let check = common_run::run(&["plan", "check", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success(), "{err}");
    assert!(
        err.contains("ports.wan.pppoe.internet") && err.contains("pool's /24"),
        "{err}"
    );
    // Without `internet` TCP through the port is refused, with the key to add as the hint.
    let no_inet = common_run::plan_file(
        d.path(),
        &plan_text(&u, "203.0.113.1").replace("internet = \"203.0.113.1\"\n", ""),
    );
    let check = common_run::run(&["plan", "check", no_inet.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success(), "{err}");
    assert!(
        err.contains("TCP cannot cross port `wan`") && err.contains("internet = "),
        "{err}"
    );

    let plan = common_run::plan_file(d.path(), &plan_text(&u, "203.0.113.1"));
    let check = common_run::run(&["plan", "check", plan.to_str().unwrap()]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let out = d.path().join("run");
    let mut run = Command::new(common_run::WIRERATE)
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
        .expect("wirerate run");
    // The gateway dials once the run's AC is listening (its PADI backoff covers the gap).
    std::thread::sleep(Duration::from_millis(500));
    let client = Wirerate::spawn(&[
        "pppoe",
        "client",
        "--netns",
        &u.gw,
        "--dev",
        "t14w0",
        "--tun",
        "t14wan",
        "--duration",
        "120",
    ]);
    let status = run.wait().expect("wirerate run");
    let mut so = String::new();
    let mut se = String::new();
    use std::io::Read;
    let _ = run.stdout.take().unwrap().read_to_string(&mut so);
    let _ = run.stderr.take().unwrap().read_to_string(&mut se);
    eprintln!("{so}\n{se}");
    let _ = client.stop();
    assert!(status.success(), "wirerate run failed: {se}");
    let ts = common_run::trials(&out);
    let mut by_mss = std::collections::BTreeMap::new();
    for t in &ts {
        let tcp = t.tcp.as_ref().expect("TCP trials only");
        assert!(tcp.l4_bps.0 > 0.0, "{tcp:?}");
        let asked = t.key.case_id.clone();
        by_mss.insert(asked, tcp.syn_mss.clone());
    }
    eprintln!("{by_mss:?}");
    // Control connection clamped to 1414; the data connection's SYN as asked, or the clamp.
    let want = [("1460", 1414), ("1200", 1200), ("400", 400)];
    assert_eq!(by_mss.len(), want.len(), "{by_mss:?}");
    for (m, data) in want {
        let seen = by_mss
            .iter()
            .find(|(id, _)| id.contains(&format!("mss{m}")))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no case for MSS {m}: {by_mss:?}"));
        assert_eq!(seen, vec![1414, data], "MSS {m}");
    }
    // The run removed its Internet namespace.
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let pid_ns = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(!pid_ns.contains("wr-inet"), "{pid_ns}");
    let sessions = std::fs::read_to_string(out.join("sessions.jsonl")).unwrap();
    assert!(sessions.contains("\"event\":\"syn\""), "{sessions}");
}

fn plan_text(u: &Uplink, internet: &str) -> String {
    format!(
        r#"name = "tun-uplink"
[topology]
kind = "interfaces"
[ports.lan]
interface = "t14l0"
namespace = "{lan}"
ipv4 = "192.0.2.2"
gateway-v4 = "192.0.2.1"
speed = "1G"
[ports.wan]
interface = "t14w1"
namespace = "{isp}"
speed = "1G"
[ports.wan.pppoe]
role = "server"
users = [{{ user = "wirerate", password = "wirerate" }}]
internet = "{internet}"
timeout = "20s"
[dut]
kind = "device"
netns = "{gw}"
[dut.profiles.napt-clamp]
stats-after = ["nft list table ip t14"]
[run]
settle = "100ms"
profile-settle = "0s"
[methodology.iperf3]
duration = "1s"
omit = "0s"
[[matrix]]
protocol = ["tcp"]
ip = [4]
mss = [1460, 1200, 400]
methodologies = ["iperf3"]
"#,
        lan = u.lan,
        isp = u.isp,
        gw = u.gw,
    )
}
