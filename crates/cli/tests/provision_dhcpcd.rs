//! Issue 14 item 3, the independent cross-check of the AFTR port's IPv6 provisioning: Debian's
//! own clients — `rdisc6` (ndisc6) for Router Advertisements and `dhcpcd` 9 (dhcpcd-base) for
//! DHCPv6 — against `wirerate dslite aftr --provision` over a veth pair between two `wr-dc6-`
//! namespaces. Nothing of `wire` or `emulate` is on the client side.
//!
//! `dhcpcd_gets_address_prefix_dns_and_aftr_name_then_a_b4_comes_up`:
//! - rdisc6 solicits and prints our RA: M and O set, router lifetime 1800 s, MTU 1500, the
//!   prefix 2001:db8:c::/64 on-link and autonomous, RDNSS 2001:db8:53::1;
//! - dhcpcd (RA, then Solicit/Advertise/Request/Reply; SLAAC off so that only DHCPv6 can
//!   satisfy it) binds 2001:db8:c::100 (IA_NA), 2001:db8:100::/56 (IA_PD), DNS
//!   2001:db8:53::1 and the AFTR name aftr.example.net (option 64) — read from the variables
//!   dhcpcd hands its hook script, and the address from the kernel's interface;
//! - our B4 then comes up from the leased address against the AFTR, which prints the softwire
//!   for that address, and the AFTR's statistics count what it saw.
//!
//! Root is needed (else `SKIP: …`); without dhcpcd or rdisc6 the test skips, but fails when
//! `CI` is set (`scripts/install-deps.sh` installs both). The namespaces, every process left
//! in them, the hook directory and dhcpcd's lease file are removed on drop, also on failure.

mod common_isp;

use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common_isp::{ip, is_root};

const LEASED: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 0x100);

/// Two namespaces and a veth pair; side `a` (the AFTR) has kernel IPv6 off, side `b` (the
/// client) keeps it, since dhcpcd and rdisc6 use the kernel's stack. Cleans up on drop.
struct Lab {
    a: String,
    b: String,
    dev_a: String,
    dev_b: String,
    dir: PathBuf,
}

impl Lab {
    fn new() -> Lab {
        let id = std::process::id() % 100_000;
        let lab = Lab {
            a: format!("wr-dc6-{id}a"),
            b: format!("wr-dc6-{id}b"),
            dev_a: format!("wrdc6{id}a"),
            dev_b: format!("wrdc6{id}b"),
            dir: std::env::temp_dir().join(format!("wr-dc6-{id}")),
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

    fn lease_file(&self) -> PathBuf {
        Path::new("/var/lib/dhcpcd").join(format!("{}.lease6", self.dev_b))
    }

    /// Kills what we started inside our namespaces (by pid), then removes them.
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
        let _ = std::fs::remove_file(self.lease_file());
    }

    /// Waits until the client's link-local address has passed DAD (rdisc6 cannot send from
    /// a tentative address).
    fn wait_link_local(&self) {
        let t = Instant::now();
        loop {
            let o = Command::new("ip")
                .args([
                    "-n",
                    &self.b,
                    "-6",
                    "addr",
                    "show",
                    "dev",
                    &self.dev_b,
                    "scope",
                    "link",
                ])
                .output()
                .expect("ip addr");
            let s = String::from_utf8_lossy(&o.stdout);
            if s.contains("fe80::") && !s.contains("tentative") {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "no link-local address: {s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.remove();
    }
}

fn have(cmd: &str) -> bool {
    Command::new("which")
        .arg(cmd)
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
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

#[test]
fn dhcpcd_gets_address_prefix_dns_and_aftr_name_then_a_b4_comes_up() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET)");
        return;
    }
    if !(have("dhcpcd") && have("rdisc6")) {
        assert!(
            std::env::var_os("CI").is_none(),
            "dhcpcd and rdisc6 are needed for the provisioning cross-check (scripts/install-deps.sh)"
        );
        println!("SKIP: dhcpcd or rdisc6 missing (apt-get install dhcpcd-base ndisc6)");
        return;
    }
    let lab = Lab::new();
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let aftr = Command::new(bin)
        .args(["dslite", "aftr", "--netns", &lab.a, "--dev", &lab.dev_a])
        .args(["--provision", "--json", "--duration", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wirerate dslite aftr");
    lab.wait_link_local();

    // rdisc6: one solicitation, up to 3 tries a second apart.
    let rd = Command::new("ip")
        .args([
            "netns", "exec", &lab.b, "rdisc6", "-1", "-r", "3", "-w", "1000", &lab.dev_b,
        ])
        .output()
        .expect("rdisc6");
    let ra = String::from_utf8_lossy(&rd.stdout).to_string();
    eprintln!("rdisc6:\n{ra}{}", String::from_utf8_lossy(&rd.stderr));
    assert!(rd.status.success(), "rdisc6 got no RA");
    let field = |name: &str| -> Option<String> {
        ra.lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.split_whitespace().next().unwrap_or("").to_string())
    };
    assert_eq!(
        field("Stateful address conf.").as_deref(),
        Some("Yes"),
        "M flag"
    );
    assert_eq!(
        field("Stateful other conf.").as_deref(),
        Some("Yes"),
        "O flag"
    );
    assert_eq!(field("Router lifetime").as_deref(), Some("1800"));
    assert_eq!(field("MTU").as_deref(), Some("1500"));
    assert_eq!(field("Prefix").as_deref(), Some("2001:db8:c::/64"));
    assert_eq!(field("On-link").as_deref(), Some("Yes"));
    assert_eq!(field("Autonomous address conf.").as_deref(), Some("Yes"));
    assert_eq!(
        field("Recursive DNS server").as_deref(),
        Some("2001:db8:53::1")
    );

    // dhcpcd: DHCPv6 only (SLAAC off so the RA alone cannot satisfy it), IA_NA and IA_PD,
    // asking for DNS and the AFTR name; its hook script records what it was given.
    let hook = lab.dir.join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nenv | grep -E '^(reason|interface|new_)' | sort > {}/env.$$\n",
            lab.dir.display()
        ),
    )
    .expect("hook");
    let _ = Command::new("chmod").args(["+x"]).arg(&hook).status();
    let conf = lab.dir.join("dhcpcd.conf");
    std::fs::write(
        &conf,
        format!(
            "ipv6only\nnoipv4ll\nipv6rs\nipv6ra_noautoconf\nia_na 1\nia_pd 2\n\
             option dhcp6_name_servers, aftr_name\nscript {}\n",
            hook.display()
        ),
    )
    .expect("dhcpcd.conf");
    let _ = std::fs::remove_file(lab.lease_file());
    let dh = Command::new("timeout")
        .args(["30", "ip", "netns", "exec", &lab.b, "dhcpcd", "-f"])
        .arg(&conf)
        .args(["-6", "-1", "-B", "-d", "-t", "20", &lab.dev_b])
        .stdin(Stdio::null())
        .output()
        .expect("dhcpcd");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&dh.stdout),
        String::from_utf8_lossy(&dh.stderr)
    );
    eprintln!("dhcpcd:\n{log}");
    assert!(dh.status.success(), "dhcpcd failed");
    let vars = hook_vars(&lab.dir, "BOUND6");
    eprintln!("dhcpcd BOUND6 variables: {vars:#?}");
    let var = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(var("new_dhcp6_ia_na1_ia_addr1"), Some("2001:db8:c::100"));
    assert_eq!(var("new_dhcp6_ia_na1_t1"), Some("1800"));
    assert_eq!(var("new_dhcp6_ia_pd1_prefix1"), Some("2001:db8:100::"));
    assert_eq!(var("new_dhcp6_ia_pd1_prefix1_length"), Some("56"));
    assert_eq!(var("new_dhcp6_name_servers"), Some("2001:db8:53::1"));
    assert_eq!(var("new_dhcp6_aftr_name"), Some("aftr.example.net"));
    let addrs = Command::new("ip")
        .args(["-n", &lab.b, "-6", "addr", "show", "dev", &lab.dev_b])
        .output()
        .expect("ip addr");
    let addrs = String::from_utf8_lossy(&addrs.stdout);
    assert!(addrs.contains("2001:db8:c::100/128"), "{addrs}");

    // The B4 follows from the lease: our B4 on the leased address reaches the AFTR.
    let b4 = Command::new(bin)
        .args([
            "dslite", "b4", "--netns", &lab.b, "--dev", &lab.dev_b, "--json",
        ])
        .args([
            "--addr",
            &LEASED.to_string(),
            "--hold",
            "0.3",
            "--duration",
            "10",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("wirerate dslite b4");
    let b = json_lines(&b4.stdout);
    eprintln!("b4: {b:?}");
    assert!(
        b.iter()
            .any(|v| v["event"] == "up" && v["local"] == LEASED.to_string()),
        "B4 up from the leased address"
    );

    let _ = Command::new("kill")
        .args(["-INT", &aftr.id().to_string()])
        .status();
    let out = wait_exit(aftr, Duration::from_secs(10));
    let a = json_lines(&out.stdout);
    eprintln!("aftr: {a:#?}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
    let client_mac = Command::new("ip")
        .args(["-n", &lab.b, "-br", "link", "show", &lab.dev_b])
        .output()
        .expect("ip link");
    let client_mac = String::from_utf8_lossy(&client_mac.stdout)
        .split_whitespace()
        .nth(2)
        .unwrap_or("")
        .to_string();
    let leases: Vec<&serde_json::Value> = a.iter().filter(|v| v["event"] == "lease").collect();
    assert!(leases
        .iter()
        .any(|v| v["address"] == "2001:db8:c::100" && v["mac"] == client_mac.as_str()));
    assert!(leases.iter().any(|v| v["prefix"] == "2001:db8:100::/56"));
    assert!(a
        .iter()
        .any(|v| v["event"] == "softwire" && v["remote"] == LEASED.to_string()));
    let st = a.iter().find(|v| v["event"] == "stats").expect("stats");
    let p = &st["provision"];
    assert!(
        p["rs_rx"].as_u64() >= Some(2),
        "rdisc6 and dhcpcd solicited"
    );
    assert!(p["ra_solicited"].as_u64() >= Some(2));
    assert_eq!(p["dhcp_tx"]["Reply"].as_u64().map(|n| n >= 1), Some(true));
    assert_eq!(p["bindings"], 2);
    assert_eq!(p["dhcp_dropped"], serde_json::json!({}));
}

/// Flags that cannot work are refused with exit 2 and one message, before a port is opened
/// (no root needed: the device does not exist).
#[test]
fn cli_refuses_provisioning_flags_that_cannot_work() {
    let bin = env!("CARGO_BIN_EXE_wirerate");
    let cases: [(&[&str], &str); 5] = [
        (&["--aftr-name", "x.example"], "--provision"),
        (&["--provision", "--pd-len", "40"], "delegated /40"),
        (
            &["--provision", "--na-first", "2001:db9::1"],
            "leaves 2001:db8::/32",
        ),
        (&["--provision", "--aftr-name", "a..b"], "empty label"),
        (
            &["--provision", "--pd-pool", "2001:db8:100::"],
            "ADDRESS/LENGTH",
        ),
    ];
    for (args, want) in cases {
        let out = Command::new(bin)
            .args(["dslite", "aftr", "--dev", "wr-dc6-none"])
            .args(args)
            .output()
            .expect("wirerate");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
