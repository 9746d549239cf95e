//! Issue 14 item 4: a real ISP's subscriber table at scale. `wirerate pppoe server
//! --subscribers FILE` in one `wr-sb…` namespace, `wirerate pppoe client --sessions 1000
//! --subscribers FILE` in the other, over a veth pair: every one of the 1,000 sessions comes
//! up at once with the address the table gives its user (fixed in 192.0.2.0/24 and
//! 203.0.113.0/24, from the pool, or none for IPv6-only subscribers), both ends agree, and
//! tshark — Wireshark's dissectors, not our parsers — counts the same thing in a capture of
//! the AC's port: 1,000 PADS, the table's address in each IPCP Configure-Nak, one
//! Protocol-Reject of IPCP per IPv6-only subscriber. No speed is asserted: the setup figures
//! are printed (docs/emulate.md quotes them).
//!
//! Root and tshark are needed (else `SKIP: …`; a missing tshark fails under CI).

mod common_isp;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common_isp::{root_and_tools, NsPair};

const SESSIONS: usize = 1000;

/// The table: 250 fixed in 192.0.2.0/24, 250 fixed in 203.0.113.0/24, 240 from the pool
/// (198.51.100.10 + 240), the remaining 260 IPv6-only — the documentation ranges hold ~760
/// IPv4 subscribers, so a 1,000-subscriber ISP here has IPv6-only ones, as real ones do.
/// What the table promises a user.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Fixed(Ipv4Addr),
    Pool,
    NoIpv4,
}

fn table() -> (String, Vec<(String, Want)>) {
    let mut text = String::from("# user password [ipv4=…]\n");
    let mut want = Vec::new();
    let fixed = (1..=250).map(|h| Ipv4Addr::new(192, 0, 2, h)).chain(
        (2..=254)
            .filter(|h| *h != 53)
            .take(250)
            .map(|h| Ipv4Addr::new(203, 0, 113, h)),
    );
    for (i, a) in fixed.enumerate() {
        text.push_str(&format!("sub{i:04} pw{i:04} ipv4={a}\n"));
        want.push((format!("sub{i:04}"), Want::Fixed(a)));
    }
    while want.len() < 740 {
        let i = want.len();
        text.push_str(&format!("sub{i:04} pw{i:04}\t# from the pool\n"));
        want.push((format!("sub{i:04}"), Want::Pool));
    }
    while want.len() < SESSIONS {
        let i = want.len();
        text.push_str(&format!("sub{i:04} pw{i:04} ipv4=none\n"));
        want.push((format!("sub{i:04}"), Want::NoIpv4));
    }
    (text, want)
}

struct Capture {
    child: Child,
    file: PathBuf,
}

impl Capture {
    /// tshark on `dev` in `ns`, writing `file`; returns once it says it is capturing.
    fn start(ns: &str, dev: &str, file: PathBuf) -> Capture {
        let mut child = Command::new("ip")
            .args([
                "netns", "exec", ns, "tshark", "-q", "-B", "64", "-i", dev, "-w",
            ])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tshark");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            line.clear();
            if err.read_line(&mut line).unwrap_or(0) == 0 || line.contains("Capturing on") {
                break;
            }
        }
        assert!(
            line.contains("Capturing on"),
            "tshark did not start: {line}"
        );
        // Drain the rest of its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        std::thread::sleep(Duration::from_millis(300));
        Capture { child, file }
    }

    /// Stops the capture (SIGINT, so the file is complete).
    fn stop(mut self) -> PathBuf {
        std::thread::sleep(Duration::from_millis(300));
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self.file.clone()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// tshark's rows (tab-separated `fields`) of the frames matching `filter`.
fn tshark(file: &PathBuf, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file).args(["-Y", filter, "-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark -r");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn json_lines(b: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(b)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn a_thousand_subscribers_come_up_at_once_each_with_its_table_address() {
    if !root_and_tools(&["tshark"]) {
        return;
    }
    let ns = NsPair::new("wr-sb", "wrsb", "t");
    // Removed on drop, also when the test fails.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let (text, want) = table();
    let file = dir.join("subscribers.txt");
    std::fs::write(&file, text).unwrap();
    let cap = Capture::start(&ns.a, "wrsb0", dir.join("ac.pcap"));
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let mut server = Command::new(bin)
        .args([
            "pppoe", "server", "--netns", &ns.a, "--dev", "wrsb0", "--json",
        ])
        .args(["--auth", "chap", "--subscribers"])
        .arg(&file)
        .args(["--sessions", &SESSIONS.to_string(), "--duration", "90"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("wirerate pppoe server");
    // Read its lines as they come: 1,000 `up` lines would fill the pipe and stall the AC.
    let mut out = server.stdout.take().unwrap();
    let server_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut b).map(|_| b)
    });
    std::thread::sleep(Duration::from_millis(500));
    // A start rate keeps the burst within what the capture takes; the sessions still overlap
    // (every one stays up until all are).
    let client = Command::new(bin)
        .args([
            "pppoe", "client", "--netns", &ns.b, "--dev", "wrsb1", "--json",
        ])
        .args(["--auth", "chap", "--sessions", &SESSIONS.to_string()])
        .args(["--start-rate", "2000", "--duration", "60", "--subscribers"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .expect("wirerate pppoe client");
    let status = server.wait().expect("server exit");
    let server_stdout = server_out.join().unwrap().expect("server output");
    let pcap = cap.stop();
    let (c, s) = (json_lines(&client.stdout), json_lines(&server_stdout));
    let setup = c
        .iter()
        .find(|v| v["event"] == "setup")
        .expect("setup line");
    eprintln!("client setup statistics: {setup}");
    assert!(
        client.status.success(),
        "client: {}",
        String::from_utf8_lossy(&client.stderr)
    );
    assert!(status.success());
    assert_eq!(setup["sessions"], SESSIONS);
    assert_eq!(setup["came_up"], SESSIONS);
    assert_eq!(setup["peak_up"], SESSIONS, "all 1,000 up at the same time");
    assert_eq!(setup["failed"], serde_json::json!({}));

    // Our client's view: each session, by its user, got the table's address.
    let sessions: Vec<_> = c.iter().filter(|v| v["event"] == "session").collect();
    assert_eq!(sessions.len(), SESSIONS);
    let mut by_user = BTreeMap::new();
    let mut pool = Vec::new();
    for (v, (user, addr)) in sessions.iter().zip(&want) {
        assert_eq!(v["user"], user.as_str());
        assert!(v["session_id"].is_u64(), "{v}");
        let got: Option<Ipv4Addr> = v["ipv4"].as_str().map(|a| a.parse().unwrap());
        match addr {
            Want::Fixed(a) => assert_eq!(got, Some(*a), "{user}"),
            Want::NoIpv4 => assert_eq!(got, None, "{user}"),
            Want::Pool => pool.push(got.unwrap_or_else(|| panic!("{user}: no pool address"))),
        }
        by_user.insert(user.clone(), (got, v["mac"].as_str().unwrap().to_string()));
    }
    pool.sort();
    pool.dedup();
    assert_eq!(pool.len(), 240, "240 distinct pool addresses");
    assert!(pool
        .iter()
        .all(|a| a.octets()[..3] == [198, 51, 100] && a.octets()[3] >= 10));

    // The AC's view agrees: each user up once, with the same address.
    let ups: Vec<_> = s.iter().filter(|v| v["event"] == "up").collect();
    assert_eq!(ups.len(), SESSIONS);
    for u in &ups {
        let user = u["user"].as_str().unwrap();
        let got: Option<Ipv4Addr> = u["peer_ipv4"].as_str().map(|a| a.parse().unwrap());
        assert_eq!(by_user[user].0, got, "{user}");
        assert_eq!(by_user[user].1, u["peer_mac"].as_str().unwrap(), "{user}");
    }
    let stats = s.iter().find(|v| v["event"] == "stats").expect("stats");
    assert_eq!(stats["sessions_up_total"], SESSIONS);
    assert_eq!(stats["hostile"], serde_json::json!({}));

    // tshark's view of the AC's port.
    // One PADS per session, plus one more for each PADR the client repeated because its
    // first PADS came late (a busy machine: the client resends after 1 s), which the AC
    // counts; every subscriber MAC got one.
    let pads = tshark(&pcap, "pppoe.code == 0x65", &["eth.dst"]);
    let repeated = stats["padr_repeated"].as_u64().expect("padr_repeated");
    assert_eq!(
        pads.len() as u64,
        SESSIONS as u64 + repeated,
        "PADS in the capture ({repeated} PADRs repeated)"
    );
    let pads_to: std::collections::BTreeSet<_> = pads.iter().collect();
    assert_eq!(pads_to.len(), SESSIONS, "subscribers that got a PADS");
    let naks = tshark(
        &pcap,
        "ipcp && ppp.code == 3 && ipcp.opt.ip_address",
        &["eth.dst", "ipcp.opt.ip_address"],
    );
    let mac_to_user: BTreeMap<_, _> = by_user
        .iter()
        .map(|(u, (a, mac))| (mac.clone(), (u.clone(), *a)))
        .collect();
    let mut naked = BTreeMap::new();
    for row in &naks {
        let (user, addr) = &mac_to_user[&row[0]];
        let a: Ipv4Addr = row[1].parse().unwrap();
        assert_eq!(Some(a), *addr, "{user}: the AC's Configure-Nak");
        naked.insert(user.clone(), a);
    }
    assert_eq!(
        naked.len(),
        740,
        "one IPCP address per dual-stack subscriber"
    );
    let rejects = tshark(&pcap, "lcp && ppp.code == 8", &["eth.dst"]);
    let mut rejected: Vec<_> = rejects
        .iter()
        .map(|r| mac_to_user[&r[0]].0.clone())
        .collect();
    rejected.sort();
    rejected.dedup();
    let ipv6_only: Vec<_> = want
        .iter()
        .filter(|(_, a)| *a == Want::NoIpv4)
        .map(|(u, _)| u.clone())
        .collect();
    assert_eq!(
        rejected, ipv6_only,
        "IPCP Protocol-Rejected for exactly the IPv6-only"
    );
}

/// Issue 35: an AC's pool in the benchmarking range 198.18.0.0/15 (DESIGN.md §6), the way
/// one AC holds tens of thousands of subscribers. 300 sessions of one shared login against
/// `--pool 198.18.0.200 --pool-size 1000`: all come up, each with its own address, the pool's
/// lowest first and across the /24 boundary (198.18.0.255 and 198.18.1.0 are hosts of the
/// /15), both ends agree, and the setup statistics carry the percentiles. Counts only; the
/// 30,000-session figures are a benchmark command (README, docs/measurements.md).
#[test]
fn three_hundred_sessions_get_addresses_from_the_benchmarking_range() {
    const N: usize = 300;
    if !root_and_tools(&[]) {
        return;
    }
    let ns = NsPair::new("wr-sc", "wrsc", "b");
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let mut server = Command::new(bin)
        .args([
            "pppoe", "server", "--netns", &ns.a, "--dev", "wrsc0", "--json",
        ])
        .args(["--pool", "198.18.0.200", "--pool-size", "1000"])
        .args(["--sessions", &N.to_string(), "--duration", "90"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("wirerate pppoe server");
    let mut out = server.stdout.take().unwrap();
    let server_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut b).map(|_| b)
    });
    let client = Command::new(bin)
        .args([
            "pppoe", "client", "--netns", &ns.b, "--dev", "wrsc1", "--json",
        ])
        .args(["--sessions", &N.to_string(), "--start-rate", "1000"])
        .args(["--duration", "60"])
        .stdin(Stdio::null())
        .output()
        .expect("wirerate pppoe client");
    let status = server.wait().expect("server exit");
    let (c, s) = (
        json_lines(&client.stdout),
        json_lines(&server_out.join().unwrap().expect("server output")),
    );
    assert!(
        client.status.success(),
        "client: {}",
        String::from_utf8_lossy(&client.stderr)
    );
    assert!(status.success());
    let setup = c.iter().find(|v| v["event"] == "setup").expect("setup");
    eprintln!("client setup statistics: {setup}");
    assert_eq!(setup["came_up"], N);
    assert_eq!(setup["failed"], serde_json::json!({}));
    for k in ["setup_p50_ms", "setup_p90_ms", "setup_p99_ms"] {
        assert!(setup[k].is_f64(), "{k} in {setup}");
    }
    let mut got: Vec<Ipv4Addr> = c
        .iter()
        .filter(|v| v["event"] == "session")
        .map(|v| v["ipv4"].as_str().expect("an address").parse().unwrap())
        .collect();
    assert_eq!(got.len(), N);
    got.sort();
    got.dedup();
    assert_eq!(got.len(), N, "every session its own address");
    let want: Vec<Ipv4Addr> = (0..N as u32)
        .map(|i| Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 0, 200)) + i))
        .collect();
    assert_eq!(got, want, "the pool's lowest {N}, from 198.18.0.200 on");
    assert!(got.contains(&Ipv4Addr::new(198, 18, 0, 255)));
    assert!(got.contains(&Ipv4Addr::new(198, 18, 1, 0)));
    let mut ac: Vec<Ipv4Addr> = s
        .iter()
        .filter(|v| v["event"] == "up")
        .map(|v| v["peer_ipv4"].as_str().unwrap().parse().unwrap())
        .collect();
    ac.sort();
    assert_eq!(ac, got, "the AC gave the same addresses");
    let stats = s.iter().find(|v| v["event"] == "stats").expect("stats");
    assert_eq!(stats["sessions_up_total"], N);
    assert_eq!(stats["hostile"], serde_json::json!({}));
}
