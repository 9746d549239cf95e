//! Issue 14 item 1: UDP both ways at once through an emulated uplink, played by `wirerate
//! run` on its WAN port, with a real gateway in between. Our PPPoE client (or B4) plays the
//! gateway's WAN, handing its session's packets to a TUN device; a Linux router namespace
//! forwards between the LAN and that TUN (with nft NAPT for PPPoE, as a home gateway does;
//! DS-Lite's B4 does no NAT):
//!
//! ```text
//! lan (port "lan", plain)  ─veth─  gw (forwarding, nft masquerade out of the WAN TUN,
//!   WAN = `wirerate pppoe client --tun` / `dslite b4 --tun`)  ─veth (PPPoE or IPv4-in-IPv6)─
//!   isp (port "wan": the run's access concentrator / AFTR)
//! ```
//!
//! The plan asks for `bidirectional = true` with `encap = ["pppoe"]` (or `dslite`) at 0.5 %
//! of the line rate: every kept trial records both directions (lan→wan, wan→lan) with
//! received + lost = sent in each, nothing lost at the result, each direction's offered load
//! against the line rate of the encapsulated frame (+8 B, +40 B), the sum equal to the
//! trial's totals; the four report formats and the terminal summary show both directions.
//! tcpdump on the gateway's end of the ISP-side veth and tshark check the frames on the wire: PPPoE session frames
//! with the session id of `sessions.jsonl` (IPv6 next header 4 between the tunnel's ends for
//! DS-Lite), both directions, the inner tuples mirrored (the reverse stream is the reply to
//! the NAPT's mapping) and frame lengths of the encapsulated sizes.
//!
//! `udp_both_ways_between_our_own_subscriber_and_isp_ends` runs the same plans with both ends
//! ours over one veth, so that both receivers classify inside the session or softwire.
//!
//! `tcp_with_an_mss_sweep_through_a_gateway_on_our_dslite_uplink` (issue 35) runs TCP on the
//! DS-Lite rig: the plan's AFTR has `internet = "203.0.113.1"` (its softwires handed to a TUN
//! in the run's Internet namespace, where iperf3's server runs), the gateway clamps the MSS
//! of SYNs out of its WAN TUN to its route MTU (1460 → MSS 1420), and iperf3 from the LAN
//! host with `mss = [1460, 1200, 400]` records the SYN MSS seen at the ISP side per case:
//! [1420, 1420], [1420, 1200], [1420, 400] (the control connection first). tshark, on the
//! gateway's end of the ISP-side veth, decodes the same SYNs inside IPv4-in-IPv6 between the
//! B4 and the AFTR. The Internet namespace is gone after the run.
//!
//! Root is needed (else `SKIP: …`); nft, tcpdump and tshark must be installed (a missing one
//! skips, but fails under `CI`). Namespaces `wr-cpe<pid><tag>…`, removed on drop.

#[path = "common_cpe/mod.rs"]
mod common_cpe;
mod common_isp;
#[path = "common_run/mod.rs"]
mod common_run;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use bench::plan::Plan;
use common_cpe::{sh, wait_until, Cpe, Proc};
use common_isp::ip;
use common_run::{finish_within, plan_file, spawn_run, trials, WIRERATE};

static SERIAL: Mutex<()> = Mutex::new(());

/// Each test runs its plan on both packet engines (plan `run.backend`).
const BACKENDS: [&str; 2] = ["af_packet", "xdp"];

fn can_run() -> bool {
    common_isp::root_and_tools(&["nft", "tshark", "tcpdump"])
}

/// The DS-Lite rig's plan for TCP: the AFTR with an Internet side, an MSS sweep.
fn dslite_tcp_plan(c: &Cpe) -> String {
    let wan = DSLITE.wan_port.replace(
        "timeout = \"30s\"\n",
        "timeout = \"30s\"\ninternet = \"203.0.113.1\"\n",
    );
    let ports = ports_text(c, &DSLITE).replace(DSLITE.wan_port, &wan);
    format!(
        r#"name = "cpe-dslite-tcp"
{ports}[run]
repetitions = 1
profile-settle = "0s"
[[matrix]]
protocol = ["tcp"]
ip = [4]
mss = [1460, 1200, 400]
methodologies = ["iperf3"]
[methodology.iperf3]
omit = "0s"
duration = "2s"
"#
    )
}

/// One encapsulation of the uplink.
struct Uplink {
    name: &'static str,
    /// The gateway's WAN: `wirerate` arguments (before --netns/--dev/--tun).
    gateway: &'static [&'static str],
    /// The plan's port `wan` section (and its address lines).
    wan_port: &'static str,
    encap: &'static str,
    /// Frame sizes of the matrix: the smallest and the largest that crosses whole.
    sizes: [u32; 2],
    /// Bytes the encapsulation adds on the WAN link.
    overhead: u32,
    napt: bool,
    /// tcpdump's capture filter for test frames on the ISP-side veth.
    capture: &'static str,
}

const PPPOE: Uplink = Uplink {
    name: "pppoe",
    gateway: &["pppoe", "client"],
    wan_port: r#"[ports.wan.pppoe]
role = "server"
mru = 1454
auth = ["pap"]
users = [{ user = "wirerate", password = "wirerate" }]
timeout = "30s"
"#,
    encap: "pppoe",
    // 1472 B carries a 1454-byte IPv4 packet: the AC's MRU.
    sizes: [64, 1472],
    overhead: 8,
    napt: true,
    capture: "pppoes and udp",
};

const DSLITE: Uplink = Uplink {
    name: "dslite",
    gateway: &["dslite", "b4"],
    wan_port: r#"ipv4 = "203.0.113.2"
[ports.wan.dslite]
role = "aftr"
address = "2001:db8:d::1"
timeout = "30s"
"#,
    encap: "dslite",
    // 1478 B carries a 1460-byte IPv4 packet: 1500 with the tunnel's IPv6 header.
    sizes: [64, 1478],
    overhead: 40,
    napt: false,
    // IPv4-in-IPv6 (next header 4) carrying UDP (IPv4 protocol 17 at ip6[49]).
    capture: "ip6 and ip6[6] == 4 and ip6[49] == 17",
};

/// The plan's ports and DUT: the LAN port plain, the WAN port playing the ISP side of `u`.
fn ports_text(c: &Cpe, u: &Uplink) -> String {
    format!(
        r#"[topology]
kind = "interfaces"
[ports.lan]
interface = "cpel0"
namespace = "{lan}"
ipv4 = "192.0.2.2"
gateway-v4 = "192.0.2.1"
speed = "1G"
[ports.wan]
interface = "cpew1"
namespace = "{isp}"
speed = "1G"
{wan}[dut]
kind = "device"
[dut.profiles.gateway]
"#,
        lan = c.lan,
        isp = c.isp,
        wan = u.wan_port,
    )
}

/// The UDP plan through `u`: both ways at 0.5 % of the line rate, which every path here
/// carries without loss, so each search passes its first trial. The search is bounded to
/// [0.25 %, 0.5 %] at 50 % resolution: where a loaded machine's tester falls behind its
/// schedule at 0.5 % (its trials tester-limited), the search measures 0.25 % and stops,
/// instead of bisecting towards the default floor in a dozen trials that check nothing more
/// (every kept trial is checked the same way; the report side is skipped when a search ends
/// tester-limited).
fn plan_text(c: &Cpe, u: &Uplink, backend: &str) -> String {
    format!(
        r#"name = "cpe-both-ways-{name}"
{ports}[run]
trial-duration = "1s"
settle = "100ms"
profile-settle = "0s"
min-load = 0.0025
max-load = 0.005
backend = "{backend}"
tester-tolerance = 0.05
[methodology.rfc2544-throughput]
resolution = 0.5
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["{encap}"]
bidirectional = true
frame-size = [{s0}, {s1}]
methodologies = ["rfc2544-throughput"]
"#,
        name = u.name,
        ports = ports_text(c, u),
        backend = backend,
        encap = u.encap,
        s0 = u.sizes[0],
        s1 = u.sizes[1],
    )
}

/// tshark's fields of every frame of `pcap` that `display` selects, one Vec per frame.
fn tshark(pcap: &Path, display: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec![
        "-n".to_string(),
        "-r".into(),
        pcap.to_string_lossy().into_owned(),
        "-Y".into(),
        display.into(),
        "-T".into(),
        "fields".into(),
        "-E".into(),
        "separator=,".into(),
    ];
    for f in fields {
        args.extend(["-e".to_string(), f.to_string()]);
    }
    let out = Command::new("tshark").args(&args).output().expect("tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Runs the plan against the gateway of `u`; returns (run directory, stdout, pcap).
/// The gateway brings its WAN up: our PPPoE client (or B4) in the gateway's namespace, handing
/// the session's packets to its TUN device `cpewan`.
fn dial(c: &Cpe, u: &Uplink) -> Proc {
    let mut args: Vec<&str> = u.gateway.to_vec();
    args.extend(["--netns", &c.gw, "--dev", "cpew0", "--tun", "cpewan"]);
    args.extend(["--duration", "300"]);
    Proc::spawn(
        Command::new(WIRERATE)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

fn run_through(c: &Cpe, u: &Uplink, backend: &str, dir: &Path) -> (PathBuf, String, PathBuf) {
    let text = plan_text(c, u, backend);
    let plan = plan_file(dir, &text);
    let check = Command::new(WIRERATE)
        .args(["plan", "check", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "plan check refused bidirectional UDP through {}: {}",
        u.name,
        String::from_utf8_lossy(&check.stderr)
    );
    // On the gateway's end of the ISP-side link: the run's port may send with XDP, which a
    // capture on the sending interface does not see.
    let pcap = dir.join(format!("{}.pcap", u.name));
    let dump = Proc::spawn(
        Command::new("ip")
            .args([
                "netns", "exec", &c.gw, "tcpdump", "-i", "cpew0", "-U", "-s", "128", "-w",
            ])
            .arg(&pcap)
            .arg(u.capture)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    // tcpdump writes the file's pcap header (24 bytes) once its capture is open (as
    // run_mtu_probe waits for it), not a fixed half second that a loaded machine may outlast.
    wait_until("tcpdump's capture to open", Duration::from_secs(20), || {
        std::fs::metadata(&pcap).is_ok_and(|m| m.len() >= 24)
    });
    let out = dir.join("run");
    let run = spawn_run(&plan, &out);
    // The ISP side first (the run creates sessions.jsonl, then starts its AC/AFTR), then the
    // gateway dials (a B4 probes the AFTR only a few times).
    wait_until("the run's sessions.jsonl", Duration::from_secs(20), || {
        out.join("sessions.jsonl").exists()
    });
    std::thread::sleep(Duration::from_millis(500));
    let gateway = dial(c, u);
    let output = finish_within(run, Duration::from_secs(240));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    gateway.signal("-TERM");
    std::thread::sleep(Duration::from_millis(300));
    dump.signal("-INT");
    (out, stdout, pcap)
}

/// What every kept trial and the report say about the two directions.
fn check_directions(u: &Uplink, plan: &Plan, out: &Path, stdout: &str, backend: &str) {
    let ts: Vec<_> = trials(out).into_iter().filter(|t| !t.superseded).collect();
    assert!(ts.len() >= 2, "a trial per frame size at least: {stdout}");
    let cases = plan.cases().unwrap();
    for t in &ts {
        let case = cases.iter().find(|c| c.id == t.key.case_id).unwrap();
        let size = case
            .frame()
            .and_then(|f| f.fixed())
            .map(|b| b as u32)
            .unwrap();
        let e = t.engine.as_ref().expect("engine facts");
        println!("{}: {}{}", case.id, e.backend, e.note);
        // The plan asked for this backend: it ran, or the run failed.
        assert_eq!(e.backend, backend, "{}", case.id);
        let dirs: Vec<(&str, &str)> = e
            .per_direction
            .iter()
            .map(|d| (d.tx_port.as_str(), d.rx_port.as_str()))
            .collect();
        assert_eq!(dirs, [("lan", "wan"), ("wan", "lan")], "{}", case.id);
        assert_eq!(t.outcome.directions, 2, "{}", case.id);
        // 100 % is one direction's line rate of the encapsulated frame on the WAN link.
        let line = plan.line_pps(case).0;
        let expect = 1e9 / (f64::from(size + u.overhead + 20) * 8.0);
        assert!((line - expect).abs() < 1e-6, "{line} vs {expect}");
        for d in &e.per_direction {
            assert_eq!(
                d.received + d.lost,
                d.sent,
                "{} {}→{}: received + lost = sent",
                case.id,
                d.tx_port,
                d.rx_port
            );
            assert!(
                d.received > 0,
                "{} {}→{}: {d:?}",
                case.id,
                d.tx_port,
                d.rx_port
            );
            let asked = t.request.load.0;
            println!(
                "{} [{}] load {:.3} %: {}→{} sent {} received {} lost {}; offered {:.3} % of {line:.0} pps ({} B frames on the WAN link), received {:.0} pps",
                case.id,
                e.backend,
                asked * 100.0,
                d.tx_port,
                d.rx_port,
                d.sent,
                d.received,
                d.lost,
                d.offered * 100.0,
                size + u.overhead,
                d.rx_pps.0
            );
            // Too fast would mean the plain frame's line rate; too slow is a stalled sender,
            // which the run flags as tester-limited.
            assert!(d.offered < asked * 1.05, "{d:?}");
            assert!(t.tester_limited || d.offered > asked * 0.95, "{d:?}");
        }
        let sum = |f: fn(&bench::results::DirectionFacts) -> u64| -> u64 {
            e.per_direction.iter().map(f).sum()
        };
        assert_eq!(sum(|d| d.sent), e.sent);
        assert_eq!(sum(|d| d.received), t.outcome.received);
        assert_eq!(sum(|d| d.lost), t.outcome.lost);
    }
    // At the result (the highest load each search passed), nothing lost either way.
    for c in &cases {
        let best = ts
            .iter()
            .filter(|t| t.key.case_id == c.id && t.outcome.lost == 0)
            .count();
        assert!(best > 0, "{}: no loss-free trial", c.id);
    }
    // The report: per direction in CSV, Markdown, HTML, JSON and the terminal summary.
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    if csv.contains(",tester-limited,") {
        println!("report side not checked: a search ended tester-limited on this machine\n{csv}");
        return;
    }
    for file in ["results.csv", "summary.md", "report.html", "summary.json"] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(
            text.contains("lan→wan") && text.contains("wan→lan"),
            "{file} lacks the directions"
        );
        assert!(
            text.contains("\"lost\": 0") || text.contains("lost 0"),
            "{file} lacks each direction's counts"
        );
    }
    let terminal = stdout
        .lines()
        .filter(|l| l.starts_with("  lan→wan ") || l.starts_with("  wan→lan "))
        .count();
    assert_eq!(terminal, 2 * cases.len(), "{stdout}");
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn udp_both_ways_through_a_napt_gateway_on_our_pppoe_uplink() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let c = Cpe::new("cpe", "p", PPPOE.napt);
    for backend in BACKENDS {
        println!("--- backend {backend}");
        let d = tempfile::tempdir().unwrap();
        let (out, stdout, pcap) = run_through(&c, &PPPOE, backend, d.path());
        println!("{stdout}");
        let plan = Plan::parse(&plan_text(&c, &PPPOE, backend), "plan.toml").unwrap();
        check_directions(&PPPOE, &plan, &out, &stdout, backend);
        wire_pppoe(&out, &pcap);
    }
}

fn wire_pppoe(out: &Path, pcap: &Path) {
    // The wire: PPPoE session frames of the session the AC brought up, both directions, the
    // reverse tuple the mirror of the NAPT's (198.51.100.10:1024 ↔ 198.51.100.1:9).
    let lines = jsonl(&out.join("sessions.jsonl"));
    let up = lines
        .iter()
        .find(|l| l["event"] == "up")
        .expect("a session up line");
    let sid = up["session_id"].as_u64().unwrap();
    let frames = tshark(
        pcap,
        "pppoes && udp",
        &[
            "pppoe.session_id",
            "ip.src",
            "ip.dst",
            "udp.srcport",
            "udp.dstport",
            "frame.len",
        ],
    );
    let lens: Vec<String> = PPPOE
        .sizes
        .iter()
        .map(|s| (s + PPPOE.overhead - 4).to_string())
        .collect();
    let (mut up_n, mut down_n) = (0, 0);
    for f in &frames {
        assert_eq!(
            u64::from_str_radix(f[0].trim_start_matches("0x"), 16).unwrap(),
            sid,
            "{f:?}"
        );
        assert!(lens.contains(&f[5]), "{f:?} not of {lens:?}");
        match (f[1].as_str(), f[2].as_str(), f[3].as_str(), f[4].as_str()) {
            ("198.51.100.10", "198.51.100.1", "1024", "9") => up_n += 1,
            ("198.51.100.1", "198.51.100.10", "9", "1024") => down_n += 1,
            _ => panic!("unexpected frame {f:?}"),
        }
    }
    let sent: Vec<u64> = (0..2)
        .map(|i| {
            trials(out)
                .iter()
                .filter_map(|t| t.engine.as_ref())
                .map(|e| e.per_direction[i].sent)
                .sum()
        })
        .collect();
    println!(
        "tshark: SESSION_ID 0x{sid:04x}: {up_n} frames lan→wan (NAPT'd), {down_n} wan→lan; the engine sent {} and {}",
        sent[0], sent[1]
    );
    assert!(up_n > 0 && down_n > 0);
    assert!(down_n as u64 <= sent[1]);
}

#[test]
fn udp_both_ways_through_a_gateway_on_our_dslite_uplink() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let c = Cpe::new("cpe", "d", DSLITE.napt);
    for backend in BACKENDS {
        println!("--- backend {backend}");
        let d = tempfile::tempdir().unwrap();
        let (out, stdout, pcap) = run_through(&c, &DSLITE, backend, d.path());
        println!("{stdout}");
        let plan = Plan::parse(&plan_text(&c, &DSLITE, backend), "plan.toml").unwrap();
        check_directions(&DSLITE, &plan, &out, &stdout, backend);
        wire_dslite(&out, &pcap);
    }
}

#[test]
fn tcp_with_an_mss_sweep_through_a_gateway_on_our_dslite_uplink() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() || !common_isp::root_and_tools(&["iperf3"]) {
        return;
    }
    let c = Cpe::new("cpe", "t", DSLITE.napt);
    // The gateway clamps SYNs into its WAN TUN to the route's MTU (the softwire's 1460).
    sh(
        &c.gw,
        "nft -f - <<'EOF'\n\
         table ip cpeclamp {\n\
           chain clamp {\n\
             type filter hook forward priority 0;\n\
             oifname \"cpewan\" tcp flags syn tcp option maxseg size set rt mtu\n\
           }\n\
         }\n\
         EOF",
    );
    // iperf3's client needs the kernel on the LAN side.
    sh(
        &c.lan,
        "ip addr add 192.0.2.2/24 dev cpel0; ip route add default via 192.0.2.1",
    );
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(d.path(), &dslite_tcp_plan(&c));
    let check = Command::new(WIRERATE)
        .args(["plan", "check", plan.to_str().unwrap()])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&check.stdout).to_string();
    assert!(
        check.status.success(),
        "{listed}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    for m in [1460, 1200, 400] {
        assert!(listed.contains(&format!("/tcp4/s1/mss{m}")), "{listed}");
    }
    let pcap = d.path().join("syn.pcap");
    let dump = common_isp::Capture::start({
        let mut cmd = Command::new("ip");
        cmd.args([
            "netns",
            "exec",
            &c.gw,
            "tcpdump",
            "--immediate-mode",
            "-i",
            "cpew0",
            "-U",
        ])
        .args(["-w"])
        .arg(&pcap)
        // IPv4-in-IPv6 carrying a TCP SYN without ACK: the inner IPv4 header at ip6[40]
        // (no options: 0x45), protocol 6 at ip6[49], TCP flags at ip6[73]. Only the SYNs: a
        // capture of the whole iperf3 stream grew to 835 MB in one run, and tshark's pass over
        // it took longer than the test.
        .arg("ip6 and ip6[6] == 4 and ip6[40] == 0x45 and ip6[49] == 6 and ip6[73] & 0x12 == 0x02");
        cmd
    });
    let out = d.path().join("run");
    let run = spawn_run(&plan, &out);
    wait_until("the run's sessions.jsonl", Duration::from_secs(20), || {
        out.join("sessions.jsonl").exists()
    });
    // The AFTR is up once sessions.jsonl exists; the B4 probes it a few times.
    let gateway = dial(&c, &DSLITE);
    wait_until("the gateway's WAN TUN", Duration::from_secs(20), || {
        sh(&c.gw, "ip -br addr show").contains("192.0.0.2")
    });
    let output = finish_within(run, Duration::from_secs(240));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    println!("{stdout}");
    println!(
        "sessions.jsonl:\n{}",
        std::fs::read_to_string(out.join("sessions.jsonl")).unwrap_or_default()
    );
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    gateway.signal("-TERM");
    let (_, err) = dump.stop();
    eprintln!("tcpdump: {err}");
    let mut by_case = std::collections::BTreeMap::new();
    for t in trials(&out) {
        let tcp = t.tcp.as_ref().expect("TCP trials only");
        assert!(tcp.l4_bps.0 > 0.0, "{tcp:?}");
        by_case.insert(t.key.case_id.clone(), tcp.syn_mss.clone());
    }
    println!("SYN MSS at the ISP side: {by_case:?}");
    let mut want = Vec::new();
    for (m, data) in [("1460", 1420), ("1200", 1200), ("400", 400)] {
        let seen = by_case
            .iter()
            .find(|(id, _)| id.ends_with(&format!("mss{m}")))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no case for MSS {m}: {by_case:?}"));
        assert_eq!(seen, vec![1420, data], "MSS {m}");
        want.extend([1420, data]);
    }
    let lines = jsonl(&out.join("sessions.jsonl"));
    assert!(lines
        .iter()
        .any(|l| l["event"] == "syn" && l["mss"] == 1420));
    let stats = lines.iter().find(|l| l["event"] == "stats").expect("stats");
    assert_eq!(stats["role"], "aftr");
    assert!(stats["tun"].is_object(), "{stats}");
    // The wire: the same client SYNs inside the softwire, B4 → AFTR, in order.
    let syns: Vec<u32> = tshark(
        &pcap,
        "ipv6.nxt == 4 && tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == 5201",
        &["ipv6.src", "ipv6.dst", "tcp.options.mss_val"],
    )
    .into_iter()
    .map(|r| {
        assert_eq!(
            (r[0].as_str(), r[1].as_str()),
            ("2001:db8:c::2", "2001:db8:d::1"),
            "{r:?}"
        );
        r[2].parse().expect("an MSS")
    })
    .collect();
    let mut sorted = syns.clone();
    sorted.sort_unstable();
    let mut expect = want.clone();
    expect.sort_unstable();
    assert_eq!(sorted, expect, "SYNs on the wire: {syns:?}");
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    let ours = format!("wr-inet{}", std::process::id());
    assert!(!list.contains(&ours), "{list}");
}

fn wire_dslite(out: &Path, pcap: &Path) {
    // The wire: IPv4-in-IPv6 between the B4 (2001:db8:c::2) and our AFTR both ways.
    let frames = tshark(
        pcap,
        "ipv6.nxt == 4 && udp",
        &[
            "ipv6.src",
            "ipv6.dst",
            "ip.src",
            "ip.dst",
            "udp.srcport",
            "udp.dstport",
            "frame.len",
        ],
    );
    let lens: Vec<String> = DSLITE
        .sizes
        .iter()
        .map(|s| (s + DSLITE.overhead - 4).to_string())
        .collect();
    let (mut up_n, mut down_n) = (0, 0);
    for f in &frames {
        assert!(lens.contains(&f[6]), "{f:?} not of {lens:?}");
        let t: Vec<&str> = f[..6].iter().map(String::as_str).collect();
        match t.as_slice() {
            ["2001:db8:c::2", "2001:db8:d::1", "192.0.2.2", "203.0.113.2", "1024", "9"] => {
                up_n += 1
            }
            ["2001:db8:d::1", "2001:db8:c::2", "203.0.113.2", "192.0.2.2", "9", "1024"] => {
                down_n += 1
            }
            _ => panic!("unexpected frame {f:?}"),
        }
    }
    println!("tshark: IPv4-in-IPv6: {up_n} frames lan→wan, {down_n} wan→lan");
    assert!(up_n > 0 && down_n > 0);
    let aftr = jsonl(&out.join("sessions.jsonl"))
        .into_iter()
        .find(|l| l["event"] == "up" && l["port"] == "wan")
        .expect("the AFTR learned the B4's softwire");
    assert_eq!(aftr["remote"], "2001:db8:c::2", "{aftr}");
}

/// The same plans with both ends ours over one veth (no gateway): port `lan` plays our PPPoE
/// client (B4), port `wan` our access concentrator (AFTR). Here both ports send and receive
/// inside the session or softwire, so each receiver classifies inside PPPoE /
/// IPv4-in-IPv6 — the forward stream rides port lan's session, the reverse port wan's.
#[test]
fn udp_both_ways_between_our_own_subscriber_and_isp_ends() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let id = std::process::id() % 100_000;
    let (lan, isp) = (format!("wr-cpe{id}olan"), format!("wr-cpe{id}oisp"));
    let pair = Cpe {
        lan: lan.clone(),
        gw: format!("wr-cpe{id}ogw"),
        isp: isp.clone(),
    };
    pair.remove();
    for ns in [&lan, &isp] {
        ip(&["netns", "add", ns]);
        sh(ns, "sysctl -qw net.ipv6.conf.all.disable_ipv6=1");
    }
    ip(&[
        "link", "add", "cpel0", "netns", &lan, "type", "veth", "peer", "name", "cpew1", "netns",
        &isp,
    ]);
    sh(&lan, "ip link set cpel0 up");
    sh(&isp, "ip link set cpew1 up");
    let subscriber = [
        (
            &PPPOE,
            "[ports.lan.pppoe]\nrole = \"client\"\nuser = \"wirerate\"\npassword = \"wirerate\"\ntimeout = \"15s\"\n",
        ),
        (
            &DSLITE,
            "[ports.lan.dslite]\nrole = \"b4\"\naddress = \"2001:db8:c::2\"\npeer = \"2001:db8:d::1\"\ntimeout = \"10s\"\n",
        ),
    ];
    for (u, lan_section) in subscriber {
        for backend in BACKENDS {
            println!("--- {} loopback, backend {backend}", u.name);
            let text = plan_text(&pair, u, backend).replace(
                "ipv4 = \"192.0.2.2\"\ngateway-v4 = \"192.0.2.1\"\nspeed = \"1G\"\n",
                &format!("speed = \"1G\"\n{lan_section}"),
            );
            let d = tempfile::tempdir().unwrap();
            let plan_path = plan_file(d.path(), &text);
            let out = d.path().join("run");
            let stdout = common_run::run_plan_ok(&plan_path, &out);
            println!("{stdout}");
            let plan = Plan::parse(&text, "plan.toml").unwrap();
            check_directions(u, &plan, &out, &stdout, backend);
        }
    }
}

/// Issue 14 item 5: the gateway drops its PPPoE session while a trial runs (its client stops
/// and sends PADT), then dials again. The trial records the drop (port, time, reason), its
/// loss stays the DUT's, the run waits for the new session instead of failing, the trials
/// after it ride the new session without loss in both directions (the reverse stream carries
/// the session id, so a stale one would lose every frame), and the report names the drop.
#[test]
fn a_session_dropped_during_a_trial_is_flagged_and_the_run_goes_on_after_the_redial() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() {
        return;
    }
    let c = Cpe::new("cpe", "x", true);
    let d = tempfile::tempdir().unwrap();
    let text = format!(
        r#"name = "cpe-session-drop"
{ports}[run]
trial-duration = "4s"
settle = "100ms"
profile-settle = "0s"
max-load = 0.005
backend = "af_packet"
tester-tolerance = 0.05
[methodology.forwarding-rate]
trials = 4
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["pppoe"]
bidirectional = true
frame-size = [64]
methodologies = ["forwarding-rate"]
"#,
        ports = ports_text(&c, &PPPOE),
    );
    let plan = plan_file(d.path(), &text);
    let out = d.path().join("run");
    let run = spawn_run(&plan, &out);
    wait_until("the run's sessions.jsonl", Duration::from_secs(20), || {
        out.join("sessions.jsonl").exists()
    });
    std::thread::sleep(Duration::from_millis(500));
    let first = dial(&c, &PPPOE);
    // Hang up inside the second trial (4 s): once the first is written and the second's frames
    // flow through the gateway's WAN TUN (2,000 more packets, about 0.15 s of both directions
    // at 7,440 frames/s each; the 20 learning frames do not count), however long a loaded
    // machine takes between the trials. A fixed sleep after the first trial was written hung
    // up before the second had started when the machine was busy.
    // A measured one: a busy machine can supersede the first trial (the tester stalled) and
    // measure it again, and a hang-up then would fall into that repetition.
    wait_until("the first trial", Duration::from_secs(60), || {
        out.join("trials.jsonl").exists() && trials(&out).iter().any(|t| !t.superseded)
    });
    let tun_packets = || -> u64 {
        sh(
            &c.gw,
            "cat /sys/class/net/cpewan/statistics/tx_packets /sys/class/net/cpewan/statistics/rx_packets",
        )
        .split_whitespace()
        .filter_map(|n| n.parse::<u64>().ok())
        .sum()
    };
    let before = tun_packets();
    wait_until("the second trial's frames", Duration::from_secs(30), || {
        tun_packets() >= before + 2_000
    });
    first.signal("-TERM");
    std::thread::sleep(Duration::from_millis(1000));
    let _second = dial(&c, &PPPOE);
    let output = finish_within(run, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let all = trials(&out);
    let ts: Vec<_> = all.iter().filter(|t| !t.superseded).cloned().collect();
    assert_eq!(ts.len(), 4, "{ts:#?}");
    let drops = |t: &bench::results::TrialRecord| {
        t.engine
            .as_ref()
            .map(|e| e.session_drops.clone())
            .unwrap_or_default()
    };
    // Every record counts here, superseded ones too: if the tester stalled in the second trial
    // after the hang-up, the record holding the drop is the superseded one (its repetition
    // ran over the new session).
    let flagged: Vec<&bench::results::TrialRecord> =
        all.iter().filter(|t| !drops(t).is_empty()).collect();
    let summary: Vec<_> = all
        .iter()
        .map(|t| {
            (
                t.key.index,
                t.superseded,
                t.outcome.lost,
                t.finished_unix_ms,
                drops(t),
            )
        })
        .collect();
    assert_eq!(
        flagged.iter().map(|t| t.key.index).collect::<Vec<_>>(),
        vec![1],
        "one record, of the second trial: {summary:?}"
    );
    let t = flagged[0];
    let dropped = drops(t);
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    println!("drop: {:?}", dropped[0]);
    assert_eq!(dropped[0].port, "wan");
    assert!(!dropped[0].reason.is_empty());
    // Inside the trial's time: after the first trial was written, before this one was.
    assert!(
        dropped[0].unix_ms <= t.finished_unix_ms && dropped[0].unix_ms >= ts[0].finished_unix_ms,
        "drop at {} ms, first trial written at {} ms, this one at {} ms",
        dropped[0].unix_ms,
        ts[0].finished_unix_ms,
        t.finished_unix_ms
    );
    assert!(t.outcome.lost > 0, "frames sent into a dead session: {t:?}");
    // Before and after: the session carried every frame.
    for i in [0, 2, 3] {
        assert_eq!(ts[i].outcome.lost, 0, "trial {i}: {:?}", ts[i]);
        assert!(ts[i].outcome.received > 0, "trial {i}");
    }
    // The AC saw the session go down and a new one come up.
    let lines = jsonl(&out.join("sessions.jsonl"));
    let events: Vec<&str> = lines.iter().filter_map(|l| l["event"].as_str()).collect();
    let ups: Vec<u64> = lines
        .iter()
        .filter(|l| l["event"] == "up")
        .filter_map(|l| l["session_id"].as_u64())
        .collect();
    assert_eq!(ups.len(), 2, "{events:?}");
    assert_ne!(ups[0], ups[1], "the redial is a new session");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("the PPPoE session on port wan went down at"),
        "{summary}"
    );
}

/// The MAP-E rig's ports: our BR on port `wan` with the rule 2001:db8:100::/40,
/// 198.51.100.0/24, 16 EA bits and PSID offset 0 (so a CE's port set is one contiguous
/// range), provisioning the CE's WAN (DHCPv6 IA_PD and option 94), with an Internet side when
/// `internet`.
fn mape_ports(c: &Cpe, internet: bool) -> String {
    format!(
        r#"[topology]
kind = "interfaces"
[ports.lan]
interface = "cpel0"
namespace = "{lan}"
ipv4 = "192.0.2.2"
gateway-v4 = "192.0.2.1"
speed = "1G"
[ports.wan]
interface = "cpew1"
namespace = "{isp}"
speed = "1G"
ipv4 = "203.0.113.2"
[ports.wan.mape]
role = "br"
address = "2001:db8:d::1"
rule-ipv6-prefix = "2001:db8:100::/40"
rule-ipv4-prefix = "198.51.100.0/24"
ea-bits = 16
psid-offset = 0
provision = true
{internet}timeout = "30s"
[dut]
kind = "device"
[dut.profiles.gateway]
"#,
        lan = c.lan,
        isp = c.isp,
        internet = if internet {
            "internet = \"203.0.113.1\"\n"
        } else {
            ""
        },
    )
}

/// The MAP-E rig's TCP plan: an Internet side behind the BR and an MSS sweep.
fn mape_tcp_plan(c: &Cpe) -> String {
    format!(
        r#"name = "cpe-mape-tcp"
{ports}[run]
repetitions = 1
profile-settle = "0s"
[[matrix]]
protocol = ["tcp"]
ip = [4]
mss = [1460, 400]
methodologies = ["iperf3"]
[methodology.iperf3]
omit = "0s"
duration = "2s"
"#,
        ports = mape_ports(c, true),
    )
}

/// The MAP-E rig's UDP plan: one fixed-rate trial per frame size, both ways at once, far
/// below what the user-space CE on a TUN carries (0.2 % of the tunnelled frame's line rate,
/// about 2,000 frames/s each way at 64 B), so every frame must arrive.
fn mape_udp_plan(c: &Cpe) -> String {
    format!(
        r#"name = "cpe-mape-udp"
{ports}[run]
trial-duration = "2s"
settle = "100ms"
profile-settle = "0s"
max-load = 0.002
backend = "af_packet"
tester-tolerance = 0.05
[methodology.forwarding-rate]
trials = 1
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["mape"]
bidirectional = true
frame-size = [64, 512]
methodologies = ["forwarding-rate"]
"#,
        ports = mape_ports(c, false),
    )
}

/// A DHCPv6 client for the MAP-E CE, in scapy (Debian's `/usr/bin/python3`): solicits on
/// argv[1] with Rapid Commit, IA_PD and ORO 94, once a second until an answer arrives (a few
/// tries while the BR starts), then decodes the Reply's bytes itself — the delegated prefix (IA_PD's
/// IAPREFIX) and OPTION_S46_CONT_MAPE (RFC 7598: S46_RULE with its F flag, EA-bits length,
/// IPv4 and IPv6 prefixes and an S46_PORTPARAMS inside, S46_BR) — and prints them as
/// `key=value` lines: what the CE is then started with.
const MAPE_CLIENT: &str = r#"
import sys, ipaddress
from scapy.all import Ether, IPv6, UDP, sendp, get_if_hwaddr, conf
from scapy.layers.dhcp6 import (DHCP6_Solicit, DHCP6OptClientId, DUID_LL, DHCP6OptRapidCommit,
    DHCP6OptIA_PD, DHCP6OptOptReq, DHCP6OptElapsedTime)
conf.verb = 0
iface = sys.argv[1]
mac = get_if_hwaddr(iface)
sol = (Ether(src=mac, dst="33:33:00:01:00:02") / IPv6(src="fe80::ce", dst="ff02::1:2")
       / UDP(sport=546, dport=547) / DHCP6_Solicit(trid=0x0c0e94)
       / DHCP6OptClientId(duid=DUID_LL(lladdr=mac)) / DHCP6OptRapidCommit()
       / DHCP6OptIA_PD(iaid=1) / DHCP6OptOptReq(reqopts=[94]) / DHCP6OptElapsedTime())
reply = solicit(iface, sol)
if reply is None:
    sys.exit("no DHCPv6 answer in 20 s")
if reply[0] != 7:
    sys.exit(f"the answer is DHCPv6 message type {reply[0]}, not a Reply: {reply.hex()}")

def options(b):
    i = 0
    while i + 4 <= len(b):
        code, n = int.from_bytes(b[i:i+2], "big"), int.from_bytes(b[i+2:i+4], "big")
        yield code, b[i+4:i+4+n]
        i += 4 + n

def v6(b, bits):
    return ipaddress.IPv6Address(b[:(bits + 7) // 8].ljust(16, b"\0"))

for code, body in options(reply[4:]):
    if code == 25:  # IA_PD: IAID, T1, T2, then options
        for c, p in options(body[12:]):
            if c == 26:  # IAPREFIX: preferred, valid, length, prefix
                print(f"prefix={ipaddress.IPv6Address(p[9:25])}/{p[8]}")
    if code == 94:
        for c, r in options(body):
            if c == 89:  # S46_RULE
                flags, ea, len4 = r[0], r[1], r[2]
                v4 = ipaddress.IPv4Address(r[3:7])
                len6 = r[7]
                n6 = (len6 + 7) // 8
                print(f"fmr={flags & 1}\nea-bits={ea}\nrule-ipv4={v4}/{len4}")
                print(f"rule-ipv6={v6(r[8:8+n6], len6)}/{len6}")
                offset = 6  # RFC 7597's default when no S46_PORTPARAMS comes
                for pc, pp in options(r[8+n6:]):
                    if pc == 93:
                        offset = pp[0]
                print(f"psid-offset={offset}")
            if c == 90:  # S46_BR
                print(f"br={ipaddress.IPv6Address(r[:16])}")
"#;

/// Issue 38: the CE's provisioning: [`MAPE_CLIENT`] on the gateway's WAN link, its
/// `key=value` lines as a map.
fn mape_provisioning(c: &Cpe) -> std::collections::BTreeMap<String, String> {
    let out = Command::new("ip")
        .args(["netns", "exec", &c.gw, "/usr/bin/python3", "-c"])
        .arg(format!("{}{MAPE_CLIENT}", common_isp::SCAPY_SOLICIT))
        .arg("cpew0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the DHCPv6 client: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether Debian's scapy is importable (the MAP-E CE's DHCPv6 client); CI must have it.
fn scapy_here() -> bool {
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import scapy.layers.dhcp6"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var_os("CI").is_some() {
            panic!("scapy is missing for /usr/bin/python3 (apt-get install python3-scapy)");
        }
        println!("SKIP: /usr/bin/python3 has no scapy (apt-get install python3-scapy)");
    }
    ok
}

/// Issue 38: a Linux gateway whose WAN is a MAP-E CE (`wirerate mape ce` on a TUN) NAPTs
/// into its shared address and port set; the run's BR (`[ports.wan.mape]`) carries iperf3's
/// TCP to its Internet side with the MSS sweep, and counts by reason what the gateway sends
/// from a port outside its set — a second nft rule maps UDP to port 9999 onto port 256,
/// PSID 1's — without forwarding it. A second run sends UDP both ways (`encap = ["mape"]`) at
/// a fixed rate: every frame arrives, each direction counted separately, and the BR's
/// counters agree.
///
/// The CE is provisioned by the BR: a DHCPv6 client (scapy, decoding the Reply's bytes
/// itself) gets a delegated prefix and option 94, and the CE is started with exactly what it
/// decoded. The BR's pool delegates 2001:db8:100::/56 first, whose EA bits 0x0000 give IPv4
/// 198.51.100.0 and PSID 0, whose ports with offset 0 are 1–255 (port 0 is none); port 256
/// is PSID 1's.
#[test]
fn tcp_and_udp_both_ways_through_a_gateway_on_our_mape_uplink_and_ports_outside_the_set_counted() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run() || !common_isp::root_and_tools(&["iperf3"]) || !scapy_here() {
        return;
    }
    let c = Cpe::new("cpe", "m", false);
    sh(
        &c.gw,
        "nft -f - <<'EOF'\n\
         table ip cpemape {\n\
           chain napt {\n\
             type nat hook postrouting priority 100;\n\
             oifname \"cpewan\" udp dport 9999 snat to 198.51.100.0:256\n\
             oifname \"cpewan\" meta l4proto { tcp, udp } snat to 198.51.100.0:1-255\n\
           }\n\
           chain clamp {\n\
             type filter hook forward priority 0;\n\
             oifname \"cpewan\" tcp flags syn tcp option maxseg size set rt mtu\n\
           }\n\
         }\n\
         EOF",
    );
    sh(
        &c.lan,
        "ip addr add 192.0.2.2/24 dev cpel0; ip route add default via 192.0.2.1",
    );
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(d.path(), &mape_tcp_plan(&c));
    let check = Command::new(WIRERATE)
        .args(["plan", "check", plan.to_str().unwrap()])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&check.stdout).to_string();
    assert!(
        check.status.success(),
        "{listed}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let out = d.path().join("run");
    let run = spawn_run(&plan, &out);
    wait_until("the run's sessions.jsonl", Duration::from_secs(20), || {
        out.join("sessions.jsonl").exists()
    });
    // The CE asks the BR for its prefix and rule, as a MAP-E gateway does, and the decoded
    // option is what the plan configured.
    let got = mape_provisioning(&c);
    let want = [
        ("prefix", "2001:db8:100::/56"),
        ("rule-ipv6", "2001:db8:100::/40"),
        ("rule-ipv4", "198.51.100.0/24"),
        ("ea-bits", "16"),
        ("psid-offset", "0"),
        ("br", "2001:db8:d::1"),
    ];
    for (k, v) in want {
        assert_eq!(got.get(k).map(String::as_str), Some(v), "{k}: {got:?}");
    }
    let flag = |k: &str| got[k].clone();
    let ce = Proc::spawn(
        Command::new(WIRERATE)
            .args(["mape", "ce", "--prefix", &flag("prefix")])
            .args([
                "--rule-ipv6",
                &flag("rule-ipv6"),
                "--rule-ipv4",
                &flag("rule-ipv4"),
            ])
            .args([
                "--ea-bits",
                &flag("ea-bits"),
                "--psid-offset",
                &flag("psid-offset"),
            ])
            .args(["--br", &flag("br")])
            .args(["--netns", &c.gw, "--dev", "cpew0", "--tun", "cpewan"])
            .args(["--duration", "300"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until("the gateway's WAN TUN", Duration::from_secs(20), || {
        // "198.51.100.0 peer 192.0.0.1/32": the shared address as a whole word.
        sh(&c.gw, "ip -br addr show")
            .split_whitespace()
            .any(|w| w == "198.51.100.0" || w.starts_with("198.51.100.0/"))
    });
    // Five datagrams the gateway maps outside its port set, from one socket: one conntrack
    // entry (a second flow could not take the same single port to the same destination).
    const OUTSIDE: u64 = 5;
    sh(
        &c.lan,
        &format!(
            "bash -c 'exec 3>/dev/udp/203.0.113.1/9999; for i in $(seq {OUTSIDE}); do echo wirerate >&3; done'"
        ),
    );
    // The CE is silent until the LAN sends something the BR accepts (the datagrams above are
    // outside its port set), and the run waits up to the port's `timeout` (30 s) for the BR
    // to hear from it before it starts iperf3 (testbed `await_softwires`). So the LAN host
    // connects to a closed TCP port of the Internet side, inside the gateway's port set: the
    // BR decapsulates the SYN (the CE is up) and the Internet side's RST comes back through
    // it, refusing the connection. Not UDP (an ICMP port unreachable would be refused
    // downstream, NoPort), not iperf3's port (its SYN capture). Tried again until refused: a
    // SYN sent while the CE starts may be lost.
    wait_until(
        "a connection refused through the BR",
        Duration::from_secs(30),
        || {
            sh(
                &c.lan,
                "timeout 3 bash -c 'exec 3<>/dev/tcp/203.0.113.1/9' 2>&1 || true",
            )
            .contains("refused")
        },
    );
    let output = finish_within(run, Duration::from_secs(240));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let sessions = std::fs::read_to_string(out.join("sessions.jsonl")).unwrap_or_default();
    println!("{stdout}\nsessions.jsonl:\n{sessions}");
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut by_case = std::collections::BTreeMap::new();
    for t in trials(&out) {
        let tcp = t.tcp.as_ref().expect("TCP trials only");
        assert!(tcp.l4_bps.0 > 0.0, "{tcp:?}");
        by_case.insert(t.key.case_id.clone(), tcp.syn_mss.clone());
    }
    for (m, data) in [("1460", 1420), ("400", 400)] {
        let seen = by_case
            .iter()
            .find(|(id, _)| id.ends_with(&format!("mss{m}")))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no case for MSS {m}: {by_case:?}"));
        assert_eq!(seen, vec![1420, data], "MSS {m}");
    }
    let lines = jsonl(&out.join("sessions.jsonl"));
    // The BR knew the CE by its first packet, with the address and PSID of its prefix.
    let up = lines.iter().find(|l| l["event"] == "up").expect("CE up");
    assert_eq!(
        (&up["ce"], &up["ipv4"], &up["psid"]),
        (
            &serde_json::json!("2001:db8:100::c633:6400:0"),
            &serde_json::json!("198.51.100.0"),
            &serde_json::json!(0)
        ),
        "{up}"
    );
    let stats = lines.iter().find(|l| l["event"] == "stats").expect("stats");
    assert_eq!(stats["role"], "br", "{stats}");
    assert!(stats["tun"].is_object(), "{stats}");
    let br = &stats["br"];
    assert!(br["decapsulated"].as_u64().unwrap() > 0, "{stats}");
    assert!(br["encapsulated"].as_u64().unwrap() > 0, "{stats}");
    // Exactly the datagrams outside the port set were refused, as another PSID's, and
    // nothing else was.
    assert_eq!(
        br["upstream_dropped"],
        serde_json::json!({ "WrongPsid": OUTSIDE }),
        "{stats}"
    );
    assert_eq!(br["downstream_dropped"], serde_json::json!({}), "{stats}");

    // UDP both ways at a fixed rate: lan→gateway→CE→BR arrives in IPv4-in-IPv6 from the CE's
    // MAP address; the reverse stream leaves the BR port in IPv4-in-IPv6 to the CE's MAP
    // address, for the shared address and the port the gateway's NAPT mapped the forward
    // stream to, and the NAPT maps it back to the lan port. Each direction counted exactly.
    // The lan port's kernel has no socket on the reverse stream's port and would answer some
    // of its frames with ICMP port unreachable; our BR counts such ICMP errors as NoPort (it
    // does not check their embedded ports yet), so they stay in the lan namespace.
    sh(
        &c.lan,
        "nft -f - <<'EOF'\n\
         table ip cpemapelan {\n\
           chain out {\n\
             type filter hook output priority 0;\n\
             icmp type destination-unreachable drop\n\
           }\n\
         }\n\
         EOF",
    );
    let d = tempfile::tempdir().unwrap();
    let plan_path = plan_file(d.path(), &mape_udp_plan(&c));
    let plan = Plan::parse(&mape_udp_plan(&c), "cpe-mape-udp.toml").unwrap();
    let out = d.path().join("run");
    let run = spawn_run(&plan_path, &out);
    let output = finish_within(run, Duration::from_secs(240));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let sessions = std::fs::read_to_string(out.join("sessions.jsonl")).unwrap_or_default();
    println!("{stdout}\nsessions.jsonl:\n{sessions}");
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    ce.signal("-TERM");
    let ts: Vec<_> = trials(&out).into_iter().filter(|t| !t.superseded).collect();
    assert_eq!(ts.len(), 2, "a trial per frame size: {ts:#?}");
    let cases = plan.cases().unwrap();
    let mut forward_received = 0;
    for t in &ts {
        let case = cases.iter().find(|c| c.id == t.key.case_id).unwrap();
        let size = case.frame().and_then(|f| f.fixed()).unwrap();
        // 100 % is one direction's line rate of the tunnelled frame (+40 B) on the WAN link.
        let expect = 1e9 / ((size + 40 + 20) as f64 * 8.0);
        assert!((plan.line_pps(case).0 - expect).abs() < 1e-6, "{}", case.id);
        let e = t.engine.as_ref().expect("engine facts");
        let dirs: Vec<(&str, &str)> = e
            .per_direction
            .iter()
            .map(|d| (d.tx_port.as_str(), d.rx_port.as_str()))
            .collect();
        assert_eq!(dirs, [("lan", "wan"), ("wan", "lan")], "{}", case.id);
        for dir in &e.per_direction {
            println!(
                "{}: {}→{} sent {} received {} lost {}",
                case.id, dir.tx_port, dir.rx_port, dir.sent, dir.received, dir.lost
            );
            assert!(dir.sent > 0, "{}: {dir:?}", case.id);
            assert_eq!(
                (dir.received, dir.lost),
                (dir.sent, 0),
                "{} {}→{}: every frame sent arrives",
                case.id,
                dir.tx_port,
                dir.rx_port
            );
        }
        forward_received += e.per_direction[0].received;
        assert_eq!(t.outcome.lost, 0, "{}", case.id);
    }
    // A trial measured again because the tester fell behind sent its frames (and its
    // learning frames) through the BR too.
    forward_received += trials(&out)
        .iter()
        .filter(|t| t.superseded)
        .filter_map(|t| t.engine.as_ref()?.per_direction.first())
        .map(|d| d.received)
        .sum::<u64>();
    let lines = jsonl(&out.join("sessions.jsonl"));
    let stats = lines.iter().find(|l| l["event"] == "stats").expect("stats");
    let br = &stats["br"];
    // The BR decapsulated every forward frame (and the learning frames before each trial,
    // 20 a time), refused none, and had nothing to encapsulate: the reverse stream is the
    // engine's, built for the CE the rule names.
    let decapsulated = br["decapsulated"].as_u64().unwrap();
    assert!(
        decapsulated > forward_received && (decapsulated - forward_received) % 20 == 0,
        "{decapsulated} decapsulated, {forward_received} forward frames received: {stats}"
    );
    assert_eq!(br["upstream_dropped"], serde_json::json!({}), "{stats}");
    assert_eq!(br["downstream_dropped"], serde_json::json!({}), "{stats}");
}
