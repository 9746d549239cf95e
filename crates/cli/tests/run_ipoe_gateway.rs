//! Issue 35: a Linux gateway whose WAN is brought up by Debian's dhcpcd against the IPoE port
//! a plan's run plays (`[ports.wan.ipoe]`), with real kernels everywhere else:
//!
//! ```text
//! lan (port "lan")  ─veth─  gw (forwarding, nft masquerade + MSS clamp 1400 out of its WAN
//!   veth, whose address, mask and default route come from dhcpcd -4)  ─veth─  isp (port
//!   "wan": the run's DHCPv4 server, DNS, default router; "the Internet" behind it on a TUN)
//! ```
//!
//! `a_dhcp_gateway_passes_udp_both_ways_and_tcp_with_its_clamped_mss`:
//! - a UDP plan, both ways at 0.5 % of the plain line rate, 64 B and 1518 B: every kept trial
//!   records lan→wan and wan→lan with received + lost = sent in each (the reverse stream goes
//!   from 198.51.100.1 to the address the gateway leased, at its MAC, learned from the
//!   lease), a loss-free trial per size; `sessions.jsonl` has the lease of the gateway's MAC;
//! - then a TCP plan on the same rig (a second run: dhcpcd's INIT-REBOOT gets its address
//!   again from the new server): iperf3 from lan to 203.0.113.1 behind the ISP side with
//!   `mss = [1460, 1200]`; the SYN MSS seen on the ISP side is the gateway's clamp (1400) for
//!   the control connection and for 1460, and 1200 as asked; the Internet namespace is gone
//!   after the run.
//!
//! Root is needed (else `SKIP: …`); dhcpcd, nft, iperf3 must be installed (a missing one
//! skips, but fails under `CI`). Namespaces `wr-i35g<pid>…`, removed on drop.

#[path = "common_cpe/mod.rs"]
mod common_cpe;
mod common_isp;
#[path = "common_run/mod.rs"]
mod common_run;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bench::plan::Plan;
use common_cpe::{sh, wait_until, Cpe};
use common_run::{finish_within, plan_file, spawn_run, trials, WIRERATE};

const LEASE_DIR: &str = "/var/lib/dhcpcd";

/// dhcpcd's files for the gateway's WAN veth, and the DUID if this test made it.
struct DhcpcdFiles {
    dev: String,
    had_duid: bool,
}

impl Drop for DhcpcdFiles {
    fn drop(&mut self) {
        for ext in ["lease", "lease6"] {
            let _ = std::fs::remove_file(Path::new(LEASE_DIR).join(format!("{}.{ext}", self.dev)));
        }
        if !self.had_duid {
            let _ = std::fs::remove_file(Path::new(LEASE_DIR).join("duid"));
        }
    }
}

fn ports_text(c: &Cpe) -> String {
    format!(
        r#"[topology]
kind = "interfaces"
[ports.lan]
interface = "i35gl0"
namespace = "{lan}"
ipv4 = "192.0.2.2"
gateway-v4 = "192.0.2.1"
speed = "1G"
[ports.wan]
interface = "i35gw1"
namespace = "{isp}"
speed = "1G"
[ports.wan.ipoe]
internet = "203.0.113.1"
ipv6 = false
timeout = "30s"
[dut]
kind = "device"
[dut.profiles.gateway]
"#,
        lan = c.lan,
        isp = c.isp,
    )
}

fn udp_plan(c: &Cpe) -> String {
    format!(
        r#"name = "ipoe-both-ways"
{ports}[run]
trial-duration = "1s"
settle = "100ms"
profile-settle = "0s"
max-load = 0.005
backend = "af_packet"
tester-tolerance = 0.05
[[matrix]]
protocol = ["udp"]
ip = [4]
bidirectional = true
frame-size = [64, 1518]
methodologies = ["rfc2544-throughput"]
"#,
        ports = ports_text(c)
    )
}

fn tcp_plan(c: &Cpe) -> String {
    format!(
        r#"name = "ipoe-tcp"
{ports}[run]
repetitions = 1
profile-settle = "0s"
[[matrix]]
protocol = ["tcp"]
ip = [4]
mss = [1460, 1200]
methodologies = ["iperf3"]
[methodology.iperf3]
omit = "0s"
duration = "2s"
"#,
        ports = ports_text(c)
    )
}

/// Runs `text` while the gateway takes its lease with dhcpcd once the run's port is up.
fn run_with_dhcp(c: &Cpe, dir: &Path, text: &str) -> (PathBuf, String) {
    let plan = plan_file(dir, text);
    let check = Command::new(WIRERATE)
        .args(["plan", "check", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let out = dir.join("run");
    let run = spawn_run(&plan, &out);
    wait_until("the run's sessions.jsonl", Duration::from_secs(20), || {
        out.join("sessions.jsonl").exists()
    });
    // The gateway's WAN: dhcpcd, IPv4 only, no ARP probe of the address; it installs the
    // address, the subnet route and the default route, and exits (-1). A second run finds its
    // lease file and asks for the same address first (INIT-REBOOT).
    let conf = dir.join("dhcpcd.conf");
    std::fs::write(&conf, "noipv4ll\nnoarp\nscript /bin/true\n").unwrap();
    let dh = Command::new("timeout")
        .args(["40", "ip", "netns", "exec", &c.gw, "dhcpcd", "-f"])
        .arg(&conf)
        .args(["-4", "-1", "-B", "-t", "30", "i35gw0"])
        .stdin(Stdio::null())
        .output()
        .expect("dhcpcd");
    eprintln!(
        "dhcpcd: {}{}",
        String::from_utf8_lossy(&dh.stdout),
        String::from_utf8_lossy(&dh.stderr)
    );
    assert!(dh.status.success(), "dhcpcd got no lease");
    let output = finish_within(run, Duration::from_secs(240));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (out, stdout)
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_dhcp_gateway_passes_udp_both_ways_and_tcp_with_its_clamped_mss() {
    if !common_isp::root_and_tools(&["dhcpcd", "nft", "iperf3"]) {
        return;
    }
    let _files = DhcpcdFiles {
        dev: "i35gw0".into(),
        had_duid: Path::new(LEASE_DIR).join("duid").exists(),
    };
    let c = Cpe::new("i35g", "", false);
    // The gateway: NAPT and an MSS clamp to 1400 out of its WAN veth (what dhcpcd brings up).
    sh(
        &c.gw,
        "nft -f - <<'EOF'\n\
         table ip i35g {\n\
           chain napt {\n\
             type nat hook postrouting priority 100;\n\
             oifname \"i35gw0\" masquerade\n\
           }\n\
           chain clamp {\n\
             type filter hook forward priority 0;\n\
             oifname \"i35gw0\" tcp flags syn tcp option maxseg size set 1400\n\
           }\n\
         }\n\
         EOF",
    );
    let mac = sh(&c.gw, "cat /sys/class/net/i35gw0/address")
        .trim()
        .to_string();

    // UDP both ways: the engine on the LAN port (no kernel address there).
    let d = tempfile::tempdir().unwrap();
    let text = udp_plan(&c);
    let (out, stdout) = run_with_dhcp(&c, d.path(), &text);
    println!("{stdout}");
    let addr = sh(&c.gw, "ip -4 -br addr show dev i35gw0");
    assert!(addr.contains("198.51.100.10/24"), "{addr}");
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let cases = plan.cases().unwrap();
    let ts: Vec<_> = trials(&out).into_iter().filter(|t| !t.superseded).collect();
    assert!(ts.len() >= 2, "{stdout}");
    for t in &ts {
        let case = cases.iter().find(|c| c.id == t.key.case_id).unwrap();
        let size = case
            .frame()
            .and_then(|f| f.fixed())
            .expect("a fixed frame size");
        // IPoE adds nothing on the WAN link: the plain frame's line rate.
        let expect = 1e9 / ((size + 20) as f64 * 8.0);
        assert!((plan.line_pps(case).0 - expect).abs() < 1e-6);
        let e = t.engine.as_ref().expect("engine facts");
        let dirs: Vec<(&str, &str)> = e
            .per_direction
            .iter()
            .map(|d| (d.tx_port.as_str(), d.rx_port.as_str()))
            .collect();
        assert_eq!(dirs, [("lan", "wan"), ("wan", "lan")], "{}", case.id);
        for dir in &e.per_direction {
            println!(
                "{} load {:.3} %: {}→{} sent {} received {} lost {}",
                case.id,
                t.request.load.0 * 100.0,
                dir.tx_port,
                dir.rx_port,
                dir.sent,
                dir.received,
                dir.lost
            );
            assert_eq!(dir.received + dir.lost, dir.sent, "{}: {dir:?}", case.id);
            assert!(dir.received > 0, "{}: {dir:?}", case.id);
        }
        assert!(
            e.session_drops.is_empty(),
            "the lease held: {:?}",
            e.session_drops
        );
    }
    for case in &cases {
        assert!(
            ts.iter()
                .any(|t| t.key.case_id == case.id && t.outcome.lost == 0),
            "{}: no loss-free trial",
            case.id
        );
    }
    let lines = jsonl(&out.join("sessions.jsonl"));
    assert!(
        lines.iter().any(|l| l["event"] == "lease"
            && l["address"] == "198.51.100.10"
            && l["mac"] == mac.as_str()),
        "{lines:#?}"
    );
    let stats = lines.iter().find(|l| l["event"] == "stats").expect("stats");
    assert_eq!(stats["role"], "ipoe");
    assert_eq!(stats["leases"], 1);

    // TCP: iperf3's client needs the kernel on the LAN side.
    sh(
        &c.lan,
        "ip addr add 192.0.2.2/24 dev i35gl0; ip route add default via 192.0.2.1",
    );
    let d = tempfile::tempdir().unwrap();
    let (out, stdout) = run_with_dhcp(&c, d.path(), &tcp_plan(&c));
    println!("{stdout}");
    let mut by_case = std::collections::BTreeMap::new();
    for t in trials(&out) {
        let tcp = t.tcp.as_ref().expect("TCP trials only");
        assert!(tcp.l4_bps.0 > 0.0, "{tcp:?}");
        by_case.insert(t.key.case_id.clone(), tcp.syn_mss.clone());
    }
    println!("SYN MSS at the ISP side: {by_case:?}");
    for (m, data) in [("1460", 1400), ("1200", 1200)] {
        let seen = by_case
            .iter()
            .find(|(id, _)| id.contains(&format!("mss{m}")))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no case for MSS {m}: {by_case:?}"));
        assert_eq!(seen, vec![1400, data], "MSS {m}");
    }
    let lines = jsonl(&out.join("sessions.jsonl"));
    assert!(lines
        .iter()
        .any(|l| l["event"] == "syn" && l["mss"] == 1400));
    assert!(
        lines
            .iter()
            .any(|l| l["event"] == "lease" && l["address"] == "198.51.100.10"),
        "INIT-REBOOT got the address again: {lines:#?}"
    );
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    let ours = format!("wr-inet{}", std::process::id());
    assert!(!list.contains(&ours), "{list}");
}
