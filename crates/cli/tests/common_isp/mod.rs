//! What the tests of wirerate's ISP-side machines (`emulate_pppoe`, `emulate_dslite`,
//! `trial_inside`) share: the root check, `ip`, and a veth pair between two `wr-` namespaces.
//! Each test file uses its own namespace prefix and device names, so they can run at once.

#![allow(dead_code)] // each test file uses part of this

use std::process::{Command, Stdio};

use engine::port::PortSpec;

/// Whether we are root (namespaces, AF_PACKET); the tests print `SKIP: …` otherwise.
pub use lab::is_root;

/// Whether a test that plays an uplink with real kernels can run: root, and each of `tools`
/// on PATH. Prints the `SKIP: …` reason when not; a missing tool fails the test in CI, where
/// `scripts/install-deps.sh` installs every one of them.
pub fn root_and_tools(tools: &[&str]) -> bool {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET, TUN)");
        return false;
    }
    for tool in tools {
        if lab::cmd::tool(tool).is_err() {
            if std::env::var_os("CI").is_some() {
                panic!("{tool} is missing in CI: scripts/install-deps.sh must install it");
            }
            println!("SKIP: {tool} is missing");
            return false;
        }
    }
    true
}

/// Runs `script` with `sh -ec` in namespace `ns`; fails the test with its stderr when it fails,
/// else returns its stdout.
pub fn ns_sh(ns: &str, script: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-ec", script])
        .output()
        .expect("ip netns exec");
    assert!(
        out.status.success(),
        "{ns}: {script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `ip ARGS`; fails the test with ip's message when it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces `PREFIX<pid>TAGa` and `PREFIX<pid>TAGb` joined by a veth pair (`DEV0` in
/// `a`, `DEV1` in `b`), kernel IPv6 off on it so that only our machines speak (no
/// autoconfiguration chatter, only our ND); removed on drop, also when the test fails.
pub struct NsPair {
    pub a: String,
    pub b: String,
    dev_a: String,
    dev_b: String,
}

impl NsPair {
    pub fn new(prefix: &str, dev: &str, tag: &str) -> NsPair {
        let id = std::process::id() % 100_000;
        let pair = NsPair {
            a: format!("{prefix}{id}{tag}a"),
            b: format!("{prefix}{id}{tag}b"),
            dev_a: format!("{dev}0"),
            dev_b: format!("{dev}1"),
        };
        pair.remove();
        ip(&["netns", "add", &pair.a]);
        ip(&["netns", "add", &pair.b]);
        ip(&[
            "link",
            "add",
            "name",
            &pair.dev_a,
            "netns",
            &pair.a,
            "type",
            "veth",
            "peer",
            "name",
            &pair.dev_b,
            "netns",
            &pair.b,
        ]);
        for (ns, dev) in [(&pair.a, &pair.dev_a), (&pair.b, &pair.dev_b)] {
            let _ = Command::new("ip")
                .args(["netns", "exec", ns, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{dev}.disable_ipv6=1"))
                .status();
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        pair
    }

    fn remove(&self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Side `a`'s device as a port named `name`.
    pub fn port_a(&self, name: &str) -> PortSpec {
        let mut p = PortSpec::new(name, &self.dev_a);
        p.netns = Some(self.a.clone());
        p
    }

    /// Side `b`'s device as a port named `name`.
    pub fn port_b(&self, name: &str) -> PortSpec {
        let mut p = PortSpec::new(name, &self.dev_b);
        p.netns = Some(self.b.clone());
        p
    }
}

impl Drop for NsPair {
    fn drop(&mut self) {
        self.remove();
    }
}
