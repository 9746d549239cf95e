//! Issue 35, the IPoE port against independent clients: Debian's `dhcpcd` 9 (`-4`, then `-6`
//! with IA_NA and IA_PD), `dig` (bind9 9.18) and glibc's `getent` against `wirerate ipoe
//! server` over a veth pair between two `wr-i35-` namespaces. Nothing of `wire` or `emulate`
//! is on the client side, and tshark, reading a capture of the ISP side's interface, confirms
//! the DHCPv4 and DNS exchanges.
//!
//! `dhcpcd_gets_ipv4_ipv6_a_prefix_and_dns_and_our_dns_resolves_the_aftr_name`:
//! - dhcpcd -4 binds 198.51.100.10/24 with router 198.51.100.1, DNS 203.0.113.53 and a
//!   one-hour lease (the variables dhcpcd hands its hook, and the kernel's interface);
//! - dhcpcd -6 binds 2001:db8:c::100 (IA_NA), 2001:db8:100::/56 (IA_PD), DNS 2001:db8:53::1
//!   and the AFTR name aftr.example.net (option 64);
//! - dig asks the DNS server dhcpcd was given, over UDP and TCP, IPv4 and IPv6: the AFTR
//!   name's AAAA is 2001:db8:d::77 (the server's `--aftr`), authoritative; a name of the zone we do not hold is
//!   NXDOMAIN, one outside it REFUSED; getent (glibc's resolver, through the namespace's
//!   resolv.conf) resolves the AFTR name too;
//! - our B4 (`wirerate dslite b4 --aftr-name --dns`), given the AFTR name and the DNS server
//!   from dhcpcd's hook and the address dhcpcd bound, asks our DNS for the name and tunnels
//!   to the answer: the AFTR (`wirerate dslite aftr`) sits at 2001:db8:d::77, the address the
//!   DNS server was told to give, not the B4's default 2001:db8:d::1, so a B4 that did not use
//!   the answer would find no AFTR. Ten pings through the B4's TUN cross the softwire to the
//!   AFTR's 192.0.0.1: ten answered, and the AFTR answered exactly the B4's probes plus ten;
//! - tshark decodes, on the ISP side, DISCOVER/OFFER/REQUEST/ACK with yiaddr 198.51.100.10,
//!   DNS answers carrying 2001:db8:d::77 over UDP and TCP, the B4's own AAAA query and its
//!   answer, and exactly those echo requests and replies inside IPv4-in-IPv6 between the
//!   leased address and 2001:db8:d::77.
//!
//! Root is needed (else `SKIP: …`); without dhcpcd, dig, getent, nft, ping, tcpdump or tshark the test
//! skips, but fails when `CI` is set (`scripts/install-deps.sh` installs them). The
//! namespaces, every process left in them, the hook directory, dhcpcd's lease files and the
//! namespace's resolv.conf are removed on drop, also on failure.

mod common_isp;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common_isp::{ip, Capture};

/// Where the AFTR is, and what our DNS answers for its name: not the B4's default AFTR
/// address (2001:db8:d::1), so only a B4 that uses the answer reaches it.
const AFTR: &str = "2001:db8:d::77";

/// Two namespaces and a veth pair; side `a` (the ISP) has kernel IPv6 off, side `b` (the
/// gateway's WAN, played by the kernel and dhcpcd) keeps it. Cleans up on drop.
struct Lab {
    a: String,
    b: String,
    dev_a: String,
    dev_b: String,
    dir: PathBuf,
    /// Whether dhcpcd's DUID file existed before (else it is ours to remove).
    had_duid: bool,
}

const DUID: &str = "/var/lib/dhcpcd/duid";

impl Lab {
    fn new() -> Lab {
        let id = std::process::id() % 100_000;
        let lab = Lab {
            a: format!("wr-i35-{id}a"),
            b: format!("wr-i35-{id}b"),
            dev_a: format!("wri35{id}a"),
            dev_b: format!("wri35{id}b"),
            dir: std::env::temp_dir().join(format!("wr-i35-{id}")),
            had_duid: Path::new(DUID).exists(),
        };
        lab.remove();
        std::fs::create_dir_all(&lab.dir).expect("hook directory");
        ip(&["netns", "add", &lab.a]);
        ip(&["netns", "add", &lab.b]);
        ip(&[
            "link", "add", "name", &lab.dev_a, "netns", &lab.a, "type", "veth", "peer", "name",
            &lab.dev_b, "netns", &lab.b,
        ]);
        let _ = Command::new("ip")
            .args(["netns", "exec", &lab.a, "sysctl", "-qw"])
            .arg(format!("net.ipv6.conf.{}.disable_ipv6=1", lab.dev_a))
            .status();
        ip(&["-n", &lab.a, "link", "set", &lab.dev_a, "up"]);
        ip(&["-n", &lab.b, "link", "set", "lo", "up"]);
        ip(&["-n", &lab.b, "link", "set", &lab.dev_b, "up"]);
        lab
    }

    fn leases(&self) -> [PathBuf; 2] {
        let d = Path::new("/var/lib/dhcpcd");
        [
            d.join(format!("{}.lease", self.dev_b)),
            d.join(format!("{}.lease6", self.dev_b)),
        ]
    }

    /// `ip netns exec` mounts this over /etc/resolv.conf for namespace `b`.
    fn resolv_dir(&self) -> PathBuf {
        Path::new("/etc/netns").join(&self.b)
    }

    /// Kills what runs inside our namespaces (by pid), then removes them and our files.
    fn remove(&self) {
        for ns in [&self.a, &self.b] {
            if let Ok(o) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(self.resolv_dir());
        for l in self.leases() {
            let _ = std::fs::remove_file(l);
        }
        if !self.had_duid {
            let _ = std::fs::remove_file(DUID);
        }
    }

    fn sh_b(&self, script: &str) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.b, "sh", "-c", script])
            .stdin(Stdio::null())
            .output()
            .expect("ip netns exec")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.remove();
    }
}

fn json_lines(b: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(b)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Waits at most `timeout` for a child to exit; kills it (by pid) if it does not.
fn wait_exit(mut c: Child, timeout: Duration) -> Output {
    let t = Instant::now();
    while c.try_wait().expect("try_wait").is_none() {
        if t.elapsed() > timeout {
            let _ = c.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    c.wait_with_output().expect("output")
}

/// The `name=value` lines dhcpcd's hook script saw for `reason`.
fn hook_vars(dir: &Path, reason: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !e.file_name().to_string_lossy().starts_with("env.") {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let vars: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if vars.iter().any(|(k, v)| k == "reason" && v == reason) {
            out.extend(vars);
        }
    }
    out
}

/// Runs dhcpcd once (`-1`) with `conf` and `family` (`-4`/`-6`) in namespace `b`.
fn dhcpcd(lab: &Lab, family: &str, conf: &str) {
    let path = lab.dir.join(format!("dhcpcd{family}.conf"));
    std::fs::write(&path, conf).expect("dhcpcd.conf");
    let out = Command::new("timeout")
        .args(["40", "ip", "netns", "exec", &lab.b, "dhcpcd", "-f"])
        .arg(&path)
        .args([family, "-1", "-B", "-d", "-t", "30", &lab.dev_b])
        .stdin(Stdio::null())
        .output()
        .expect("dhcpcd");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("dhcpcd {family}:\n{log}");
    assert!(out.status.success(), "dhcpcd {family} failed");
}

/// `dig` in namespace `b`: (status, answer section) of `name TYPE` at `server`.
fn dig(lab: &Lab, server: &str, name: &str, qtype: &str, tcp: bool) -> (String, String) {
    let transport = if tcp { "+tcp" } else { "+notcp" };
    let o = lab.sh_b(&format!(
        "dig @{server} {name} {qtype} {transport} +tries=2 +time=2 +norecurse +noall +comments +answer"
    ));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    eprintln!("dig @{server} {name} {qtype} {transport}:\n{text}");
    let status = text
        .split("status: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or("")
        .to_string();
    let answer = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    (status, answer)
}

#[test]
fn dhcpcd_gets_ipv4_ipv6_a_prefix_and_dns_and_our_dns_resolves_the_aftr_name() {
    if !common_isp::root_and_tools(&[
        "dhcpcd", "dig", "getent", "nft", "ping", "tcpdump", "tshark",
    ]) {
        return;
    }
    let lab = Lab::new();
    let pcap = lab.dir.join("isp.pcap");
    let capture = Capture::start({
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &lab.a,
            "tcpdump",
            "--immediate-mode",
            "-i",
            &lab.dev_a,
            "-U",
            "-w",
        ])
        .arg(&pcap)
        .args(["udp port 67 or udp port 68 or port 53 or ip6 proto 4"]);
        c
    });
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let server = Command::new(bin)
        .args(["ipoe", "server", "--netns", &lab.a, "--dev", &lab.dev_a])
        .args([
            "--aftr-name",
            "aftr.example.net",
            "--aftr",
            AFTR,
            "--json",
            "--duration",
            "90",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wirerate ipoe server");

    // dhcpcd: IPv4 (no ARP probe of the address, so it binds at once), then IPv6 (SLAAC off,
    // so only DHCPv6 can satisfy it; IA_NA and IA_PD). Its hook records what it was given.
    let hook = lab.dir.join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nenv | grep -E '^(reason|interface|new_)' | sort > {}/env.$$\n",
            lab.dir.display()
        ),
    )
    .expect("hook");
    let _ = Command::new("chmod").arg("+x").arg(&hook).status();
    let script = format!("script {}\n", hook.display());
    dhcpcd(
        &lab,
        "-4",
        &format!("noipv4ll\nnoarp\noption domain_name_servers\n{script}"),
    );
    let v4 = hook_vars(&lab.dir, "BOUND");
    eprintln!("dhcpcd BOUND variables: {v4:#?}");
    let var = |vars: &[(String, String)], k: &str| {
        vars.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(var(&v4, "new_ip_address"), "198.51.100.10");
    assert_eq!(var(&v4, "new_subnet_cidr"), "24");
    assert_eq!(var(&v4, "new_routers"), "198.51.100.1");
    assert_eq!(var(&v4, "new_domain_name_servers"), "203.0.113.53");
    assert_eq!(var(&v4, "new_dhcp_lease_time"), "3600");
    assert_eq!(var(&v4, "new_dhcp_server_identifier"), "198.51.100.1");
    dhcpcd(
        &lab,
        "-6",
        &format!(
            "ipv6rs\nipv6ra_noautoconf\nia_na 1\nia_pd 2\noption dhcp6_name_servers, aftr_name\n{script}"
        ),
    );
    let v6 = hook_vars(&lab.dir, "BOUND6");
    eprintln!("dhcpcd BOUND6 variables: {v6:#?}");
    assert_eq!(var(&v6, "new_dhcp6_ia_na1_ia_addr1"), "2001:db8:c::100");
    assert_eq!(var(&v6, "new_dhcp6_ia_pd1_prefix1"), "2001:db8:100::");
    assert_eq!(var(&v6, "new_dhcp6_ia_pd1_prefix1_length"), "56");
    assert_eq!(var(&v6, "new_dhcp6_name_servers"), "2001:db8:53::1");
    assert_eq!(var(&v6, "new_dhcp6_aftr_name"), "aftr.example.net");
    let addrs = lab.sh_b("ip addr show; ip route; ip -6 route");
    let addrs = String::from_utf8_lossy(&addrs.stdout).to_string();
    eprintln!("{addrs}");
    assert!(addrs.contains("198.51.100.10/24"), "{addrs}");
    assert!(addrs.contains("2001:db8:c::100/128"), "{addrs}");
    assert!(addrs.contains("default via 198.51.100.1"), "{addrs}");

    // Our DNS server, at the addresses dhcpcd was given, over both transports and families.
    let dns4 = var(&v4, "new_domain_name_servers");
    let dns6 = var(&v6, "new_dhcp6_name_servers");
    for (server, tcp) in [(&dns4, false), (&dns4, true), (&dns6, false), (&dns6, true)] {
        let (status, answer) = dig(&lab, server, "aftr.example.net", "AAAA", tcp);
        assert_eq!(status, "NOERROR");
        assert!(
            answer.contains(&format!("IN\tAAAA\t{AFTR}"))
                || answer.contains(&format!("AAAA {AFTR}")),
            "{answer}"
        );
    }
    let (status, answer) = dig(&lab, &dns4, "aftr.example.net", "A", false);
    assert_eq!(
        (status.as_str(), answer.as_str()),
        ("NOERROR", ""),
        "NODATA"
    );
    let (status, _) = dig(&lab, &dns4, "www.example.net", "A", false);
    assert_eq!(status, "NXDOMAIN");
    let (status, _) = dig(&lab, &dns4, "example.org", "A", true);
    assert_eq!(status, "REFUSED");
    // glibc's resolver through the namespace's resolv.conf (what dhcpcd's hook would write).
    std::fs::create_dir_all(lab.resolv_dir()).expect("/etc/netns");
    std::fs::write(
        lab.resolv_dir().join("resolv.conf"),
        format!("nameserver {dns4}\n"),
    )
    .expect("resolv.conf");
    let g = lab.sh_b("getent ahostsv6 aftr.example.net");
    let g = String::from_utf8_lossy(&g.stdout).to_string();
    eprintln!("getent: {g}");
    assert!(g.lines().any(|l| l.starts_with(AFTR)), "{g}");

    // Our B4, given what dhcpcd was given, finds the AFTR by name. The kernel of `b` shares
    // the B4's address but not its socket or tunnel: it would answer the DNS reply with a port
    // unreachable and the tunnel packets with a parameter problem, so it stays quiet.
    common_isp::ns_sh(
        &lab.b,
        "nft add table ip6 wrquiet; \
         nft add chain ip6 wrquiet out '{ type filter hook output priority 0; }'; \
         nft add rule ip6 wrquiet out icmpv6 type '{ destination-unreachable, parameter-problem }' drop",
    );
    let b4_addr = var(&v6, "new_dhcp6_ia_na1_ia_addr1");
    let aftr_name = var(&v6, "new_dhcp6_aftr_name");
    let b4_tun = format!("wrb4{}", std::process::id() % 100_000);
    let aftr = Command::new(bin)
        .args(["dslite", "aftr", "--netns", &lab.a, "--dev", &lab.dev_a])
        .args(["--addr", AFTR, "--json", "--duration", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wirerate dslite aftr");
    let mut b4 = JsonChild::spawn(
        Command::new(bin)
            .args(["dslite", "b4", "--netns", &lab.b, "--dev", &lab.dev_b])
            .args([
                "--addr",
                &b4_addr,
                "--aftr-name",
                &aftr_name,
                "--dns",
                &dns6,
            ])
            .args(["--tun", &b4_tun, "--json", "--duration", "60"]),
    );
    let up = b4.wait_for(Duration::from_secs(30), |v| {
        v["event"] == "up" || v["event"] == "failed"
    });
    eprintln!("b4: {:#?}", b4.lines);
    assert_eq!(up["event"], "up", "the B4 did not come up");
    assert_eq!(up["remote"], AFTR, "{up}");
    let resolved = b4
        .lines
        .iter()
        .find(|v| v["event"] == "aftr")
        .expect("aftr line");
    assert_eq!(
        (resolved["name"].as_str(), resolved["address"].as_str()),
        (Some("aftr.example.net"), Some(AFTR))
    );
    let ping = lab.sh_b("ping -n -c 10 -i 0.2 -W 2 192.0.0.1");
    let ping = String::from_utf8_lossy(&ping.stdout).to_string();
    eprintln!("ping: {ping}");
    assert!(
        ping.contains("10 packets transmitted, 10 received"),
        "{ping}"
    );
    let b4_lines = b4.stop(Duration::from_secs(10));
    let b4_stats = b4_lines
        .iter()
        .find(|v| v["event"] == "stats")
        .expect("B4 stats");
    assert_eq!(b4_stats["dns"]["queries_tx"], 1, "{b4_stats}");
    assert_eq!(b4_stats["dns"]["answers_rx"], 1, "{b4_stats}");
    let probes = b4_stats["probes_tx"].as_u64().expect("probes_tx");
    let _ = Command::new("kill")
        .args(["-INT", &aftr.id().to_string()])
        .status();
    let aftr_out = wait_exit(aftr, Duration::from_secs(10));
    let aftr_lines = json_lines(&aftr_out.stdout);
    eprintln!("aftr: {aftr_lines:#?}");
    assert!(aftr_lines
        .iter()
        .any(|v| v["event"] == "softwire" && v["remote"] == b4_addr.as_str()));
    let aftr_stats = aftr_lines
        .iter()
        .find(|v| v["event"] == "stats")
        .expect("AFTR stats");
    assert_eq!(aftr_stats["echo_replies"], probes + 10, "{aftr_stats}");
    assert_eq!(
        aftr_stats["tunnel"]["decapsulated"],
        probes + 10,
        "{aftr_stats}"
    );

    // The server's own account.
    let _ = Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status();
    let out = wait_exit(server, Duration::from_secs(10));
    let lines = json_lines(&out.stdout);
    eprintln!(
        "ipoe server: {lines:#?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
    let mac = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["-n", &lab.b, "-br", "link", "show", &lab.dev_b])
            .output()
            .expect("ip link")
            .stdout,
    )
    .split_whitespace()
    .nth(2)
    .unwrap_or("")
    .to_string();
    assert!(lines.iter().any(|v| v["event"] == "lease"
        && v["protocol"] == "dhcpv4"
        && v["address"] == "198.51.100.10"
        && v["mac"] == mac.as_str()));
    assert!(lines
        .iter()
        .any(|v| v["event"] == "lease" && v["prefix"] == "2001:db8:100::/56"));
    let st = lines.iter().find(|v| v["event"] == "stats").expect("stats");
    assert_eq!(st["leases"], 1);
    assert_eq!(st["dhcp_dropped"], serde_json::json!({}));
    let dns = &st["dns"];
    assert!(dns["queries"].as_u64() >= Some(8), "{dns}");
    assert!(dns["outcomes"]["Refused"].as_u64() >= Some(1), "{dns}");
    assert!(dns["tcp_rx"].as_u64() >= Some(2), "{dns}");
    assert_eq!(dns["dropped"], serde_json::json!({}));

    // tshark on the ISP side: the DHCPv4 exchange and the DNS answers, decoded by Wireshark.
    let (_, err) = capture.stop();
    eprintln!("tcpdump: {err}");
    let t = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .args([
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "dhcp.option.dhcp",
            "-e",
            "dhcp.ip.your",
            "-e",
            "dns.flags.response",
            "-e",
            "dns.qry.name",
            "-e",
            "dns.aaaa",
            "-e",
            "tcp.dstport",
            "-e",
            "dns.flags.recdesired",
            "-e",
            "ipv6.src",
            "-e",
            "ipv6.dst",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "icmp.type",
            "-e",
            "dns.id",
            "-e",
            "udp.srcport",
            "-e",
            "udp.dstport",
        ])
        .output()
        .expect("tshark");
    let text = String::from_utf8_lossy(&t.stdout).to_string();
    eprintln!("tshark:\n{text}");
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    let dhcp: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| !r[0].is_empty())
        .map(|r| (r[0], r[1]))
        .collect();
    for (kind, yiaddr) in [
        ("1", "0.0.0.0"),
        ("2", "198.51.100.10"),
        ("3", "0.0.0.0"),
        ("5", "198.51.100.10"),
    ] {
        assert!(
            dhcp.contains(&(kind, yiaddr)),
            "DHCP message {kind} with yiaddr {yiaddr}: {dhcp:?}"
        );
    }
    let answers = |tcp: bool| {
        rows.iter()
            .filter(|r| r[2] == "1" && r[3] == "aftr.example.net" && r[4] == AFTR)
            .filter(|r| r[5].is_empty() != tcp)
            .count()
    };
    assert!(answers(false) >= 2, "AAAA answers over UDP");
    assert!(answers(true) >= 2, "AAAA answers over TCP");
    // The B4's query: from the leased address, recursion desired (dig asked with
    // +norecurse, glibc over IPv4), exactly one; and its answer, to its id and port.
    let b4_queries: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|r| r[2] == "0" && r[3] == "aftr.example.net" && r[6] == "1" && r[7] == b4_addr)
        .collect();
    assert_eq!(b4_queries.len(), 1, "the B4's AAAA queries: {b4_queries:?}");
    let q = b4_queries[0];
    assert!(
        rows.iter().any(|r| r[2] == "1"
            && r[4] == AFTR
            && r[8] == b4_addr
            && r[12] == q[12]
            && r[14] == q[13]),
        "no answer {AFTR} to the B4's query {q:?}"
    );
    // Echo requests and replies inside IPv4-in-IPv6, between the leased address and the
    // AFTR the answer named: the probes and the ten pings, each way.
    let echoes = |src6: &str, dst6: &str, src4: &str, dst4: &str, icmp: &str| {
        rows.iter()
            .filter(|r| {
                r[7] == src6 && r[8] == dst6 && r[9] == src4 && r[10] == dst4 && r[11] == icmp
            })
            .count() as u64
    };
    assert_eq!(
        echoes(&b4_addr, AFTR, "192.0.0.2", "192.0.0.1", "8"),
        probes + 10
    );
    assert_eq!(
        echoes(AFTR, &b4_addr, "192.0.0.1", "192.0.0.2", "0"),
        probes + 10
    );
}

/// A child printing JSON lines, read as they come by a thread.
struct JsonChild {
    child: Child,
    rx: std::sync::mpsc::Receiver<serde_json::Value>,
    lines: Vec<serde_json::Value>,
}

impl JsonChild {
    fn spawn(cmd: &mut Command) -> JsonChild {
        use std::io::BufRead;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&l) {
                    let _ = tx.send(v);
                }
            }
        });
        JsonChild {
            child,
            rx,
            lines: Vec::new(),
        }
    }

    /// The first line (from now on) for which `want` holds; panics after `timeout`.
    fn wait_for(
        &mut self,
        timeout: Duration,
        want: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) => {
                    self.lines.push(v.clone());
                    if want(&v) {
                        return v;
                    }
                }
                Err(e) => panic!("no such line within {timeout:?} ({e}): {:#?}", self.lines),
            }
        }
    }

    /// SIGINT, then every line it printed once it exited (killed after `timeout`).
    fn stop(mut self, timeout: Duration) -> Vec<serde_json::Value> {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + timeout;
        while self.child.try_wait().expect("try_wait").is_none() {
            if Instant::now() > end {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.wait();
        let mut lines = std::mem::take(&mut self.lines);
        lines.extend(self.rx.iter());
        lines
    }
}

impl Drop for JsonChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
