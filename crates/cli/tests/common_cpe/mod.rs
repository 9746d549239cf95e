//! The home-gateway rig of the uplink tests (`run_cpe_both_ways`, `run_mtu_probe`): a LAN
//! host, a Linux gateway and the ISP side, each in its own namespace, joined by veths:
//!
//! ```text
//! lan (PREFIXl0)  ─veth─  (PREFIXl1) gw (PREFIXw0)  ─veth─  (PREFIXw1) isp
//! ```
//!
//! The gateway forwards IPv4 (192.0.2.1 on its LAN side) and, with `napt`, masquerades out of
//! its WAN device `PREFIXwan` (the TUN of our PPPoE client or B4, started by the test). Each
//! test file uses its own interface prefix, so its plans and captures name its interfaces.
//! Namespaces `wr-<prefix><pid><tag>{lan,gw,isp}`, removed with what runs inside on drop.
#![allow(dead_code)]

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::common_isp::{self, ip};

pub fn sh(ns: &str, script: &str) -> String {
    common_isp::ns_sh(ns, script)
}

/// LAN host, gateway and ISP namespaces; removed (with what runs inside) on drop.
pub struct Cpe {
    pub lan: String,
    pub gw: String,
    pub isp: String,
}

impl Cpe {
    /// The rig with interfaces named from `prefix` (`cpe` → `cpel0`, …, `cpewan`).
    pub fn new(prefix: &str, tag: &str, napt: bool) -> Cpe {
        let id = std::process::id() % 100_000;
        let n = |s: &str| format!("wr-{prefix}{id}{tag}{s}");
        let c = Cpe {
            lan: n("lan"),
            gw: n("gw"),
            isp: n("isp"),
        };
        c.remove();
        for ns in c.all() {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            // Only the engine, our control planes and the gateway's IPv4 speak.
            sh(ns, "sysctl -qw net.ipv6.conf.all.disable_ipv6=1");
        }
        let (l0, l1, w0, w1) = (
            format!("{prefix}l0"),
            format!("{prefix}l1"),
            format!("{prefix}w0"),
            format!("{prefix}w1"),
        );
        ip(&[
            "link", "add", &l0, "netns", &c.lan, "type", "veth", "peer", "name", &l1, "netns",
            &c.gw,
        ]);
        ip(&[
            "link", "add", &w0, "netns", &c.gw, "type", "veth", "peer", "name", &w1, "netns",
            &c.isp,
        ]);
        // The LAN port is the engine's (it answers ARP for 192.0.2.2 itself).
        sh(&c.lan, &format!("ip link set {l0} up"));
        sh(
            &c.gw,
            &format!(
                "sysctl -qw net.ipv4.ip_forward=1; \
                 ip addr add 192.0.2.1/24 dev {l1}; ip link set {l1} up; ip link set {w0} up; \
                 ethtool -K {l1} gro on; ethtool -K {w0} gro on"
            ),
        );
        if napt {
            sh(
                &c.gw,
                &format!(
                    "nft -f - <<'EOF'\n\
                     table ip {prefix} {{\n\
                       chain napt {{\n\
                         type nat hook postrouting priority 100;\n\
                         oifname \"{prefix}wan\" masquerade\n\
                       }}\n\
                     }}\n\
                     EOF"
                ),
            );
        }
        sh(&c.isp, &format!("ip link set {w1} up"));
        c
    }

    pub fn all(&self) -> [&String; 3] {
        [&self.lan, &self.gw, &self.isp]
    }

    pub fn remove(&self) {
        for ns in self.all() {
            let _ = lab::netns::delete(ns);
        }
    }
}

impl Drop for Cpe {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A child process killed (and reaped) on drop, also when the test fails.
pub struct Proc(Child);

impl Proc {
    pub fn spawn(cmd: &mut Command) -> Proc {
        Proc(cmd.spawn().expect("spawning a child"))
    }

    /// SIGTERM or SIGINT, then wait.
    pub fn signal(mut self, sig: &str) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status();
        self.0.wait().expect("wait")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `f` every 50 ms until it holds; fails the test after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
