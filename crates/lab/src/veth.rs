//! Two network namespaces of the caller's own joined by one veth pair: the link a measurement
//! or a test needs when it needs no lab (no DUT, no profile, no lock). The tester measured
//! side by side with peer tools (`tester-bench`) and the engine's namespace tests use it, so
//! there is one such fixture.
//!
//! End A lives in `<base>-va`, end B in `<base>-vb`: names that never read as a lab's
//! (`wr-<name>-a|dut|b`), so `lab status` lists them among the other namespaces, not as a lab.
//! IPv6 is off in both namespaces before the link exists, so no autoconfiguration, ND or MLD
//! frame ever crosses it (exact counts stay exact). Both namespaces, with every process still inside them, are removed when the pair
//! is dropped, also when a panic unwinds (like [`crate::LabGuard`] for a lab).

use std::time::Duration;

use crate::cmd;
use crate::error::Result;
use crate::netns;
use crate::topology::PREFIX;

/// One end of a [`VethPair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    A,
    B,
}

/// What to build.
#[derive(Debug, Clone, Copy)]
pub struct VethPairSpec<'a> {
    /// Starts with `wr-` (DESIGN.md §6) and carries what makes it unique (a test's tag and the
    /// process id): the namespaces are `<base>-va` and `<base>-vb`.
    pub base: &'a str,
    /// The interface names of end A and end B (at most 15 bytes each).
    pub if_a: &'a str,
    pub if_b: &'a str,
    /// TX and RX queues on each end (a veth's XDP frames go to the peer's queue of the
    /// sending CPU: one per sender thread); 0: the kernel's default (one in use).
    pub queues: usize,
    /// An address with its prefix for end A and end B (`192.0.2.1/24`), or none.
    pub addrs: Option<(&'a str, &'a str)>,
}

impl<'a> VethPairSpec<'a> {
    /// The kernel's default queues, no addresses.
    pub fn new(base: &'a str, if_a: &'a str, if_b: &'a str) -> Self {
        VethPairSpec {
            base,
            if_a,
            if_b,
            queues: 0,
            addrs: None,
        }
    }
}

/// Deadline for one `ip`/`sysctl`/`cat` step of the fixture; only a hung tool meets it.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// The built pair; removed on drop.
#[derive(Debug)]
pub struct VethPair {
    ns: [String; 2],
    ifname: [String; 2],
}

impl VethPair {
    /// Builds the namespaces and the link, both ends up. Namespaces of the same names are
    /// taken for the leftovers of a run that crashed (the base carries a process id) and
    /// removed first. Fails with the failing command and what it said; whatever was built
    /// by then is removed.
    pub fn up(spec: &VethPairSpec) -> Result<VethPair> {
        if !spec.base.starts_with(PREFIX) {
            return Err(lab_model::Error::InvalidName {
                name: spec.base.to_string(),
                reason: format!(
                    "the namespaces the lab creates start with `{PREFIX}` (DESIGN.md §6)"
                ),
            }
            .into());
        }
        let pair = VethPair {
            ns: [format!("{}-va", spec.base), format!("{}-vb", spec.base)],
            ifname: [spec.if_a.to_string(), spec.if_b.to_string()],
        };
        for ns in &pair.ns {
            netns::delete(ns)?;
            netns::add(ns)?;
            for k in ["all", "default"] {
                pair.run(&[
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{k}.disable_ipv6=1"),
                ])?;
            }
        }
        let q = spec.queues.to_string();
        let queues: &[&str] = if spec.queues == 0 {
            &[]
        } else {
            &["numtxqueues", &q, "numrxqueues", &q]
        };
        let [a, b] = &pair.ns;
        let mut add = vec!["ip", "-n", a, "link", "add", spec.if_a];
        add.extend_from_slice(queues);
        add.extend(["type", "veth", "peer", "name", spec.if_b]);
        add.extend_from_slice(queues);
        add.extend(["netns", b]);
        pair.run(&add)?;
        if let Some((addr_a, addr_b)) = spec.addrs {
            pair.run(&["ip", "-n", a, "addr", "add", addr_a, "dev", spec.if_a])?;
            pair.run(&["ip", "-n", b, "addr", "add", addr_b, "dev", spec.if_b])?;
        }
        pair.run(&["ip", "-n", a, "link", "set", spec.if_a, "up"])?;
        pair.run(&["ip", "-n", b, "link", "set", spec.if_b, "up"])?;
        Ok(pair)
    }

    fn run(&self, argv: &[&str]) -> Result<String> {
        cmd::run_with(argv, None, STEP_TIMEOUT)
    }

    fn i(end: End) -> usize {
        match end {
            End::A => 0,
            End::B => 1,
        }
    }

    /// The namespace `end` lives in.
    pub fn netns(&self, end: End) -> &str {
        &self.ns[Self::i(end)]
    }

    /// The interface name of `end`.
    pub fn ifname(&self, end: End) -> &str {
        &self.ifname[Self::i(end)]
    }

    /// Runs `argv` inside `end`'s namespace (`ip netns exec`), with `stdin` if given; its
    /// standard output.
    pub fn exec(&self, end: End, argv: &[&str], stdin: Option<&[u8]>) -> Result<String> {
        let mut full = vec!["ip", "netns", "exec", self.netns(end)];
        full.extend_from_slice(argv);
        cmd::run_with(&full, stdin, STEP_TIMEOUT)
    }

    /// A counter of `end`'s interface, `/sys/class/net/IF/statistics/NAME` as its namespace
    /// sees it (`tx_packets`, `rx_dropped`, …).
    pub fn counter(&self, end: End, name: &str) -> Result<u64> {
        let path = format!("/sys/class/net/{}/statistics/{name}", self.ifname(end));
        let s = self.exec(end, &["cat", &path], None)?;
        s.trim()
            .parse()
            .map_err(|_| crate::LabError::parse(format!("counter {name}"), s))
    }

    /// `end`'s MAC address, as `ip` prints it.
    pub fn mac(&self, end: End) -> Result<String> {
        let path = format!("/sys/class/net/{}/address", self.ifname(end));
        Ok(self.exec(end, &["cat", &path], None)?.trim().to_string())
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = netns::delete(ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However the base looks (`wr-x` could be a lab's name), the pair's namespaces are never
    /// taken for a lab's.
    #[test]
    fn its_namespaces_never_read_as_a_lab() {
        for base in ["wr-x", "wr-bench-42", "wr-a-b"] {
            for suffix in ["va", "vb"] {
                let ns = format!("{base}-{suffix}");
                assert_eq!(crate::topology::parse_netns_name(&ns), None, "{ns}");
            }
        }
    }

    #[test]
    fn a_base_outside_the_labs_prefix_is_refused_before_anything_is_built() {
        let e = VethPair::up(&VethPairSpec::new("bench-1", "x0", "x1")).unwrap_err();
        assert!(e.is_usage());
        assert!(e.to_string().contains("start with `wr-`"), "{e}");
    }

    /// The pair as built: each end in its own namespace, up, with its address; frames cross
    /// (ping); no IPv6 on either end; both namespaces gone after the drop.
    #[test]
    fn a_pair_links_two_namespaces_and_goes_away_on_drop() {
        if !crate::is_root() {
            println!("SKIP: needs root (network namespaces)");
            return;
        }
        let base = format!("wr-lvp-{}", std::process::id());
        let spec = VethPairSpec {
            addrs: Some(("192.0.2.1/24", "192.0.2.2/24")),
            queues: 2,
            ..VethPairSpec::new(&base, "lvp0", "lvp1")
        };
        let pair = VethPair::up(&spec).unwrap();
        assert_eq!(pair.netns(End::A), format!("{base}-va"));
        assert_eq!(pair.netns(End::B), format!("{base}-vb"));
        let b = pair
            .exec(End::B, &["ip", "-o", "addr", "show", "dev", "lvp1"], None)
            .unwrap();
        assert!(b.contains("192.0.2.2/24"), "{b}");
        assert!(!b.contains("inet6"), "IPv6 on end B: {b}");
        let queues = pair
            .exec(End::A, &["ls", "/sys/class/net/lvp0/queues"], None)
            .unwrap();
        assert!(
            queues.contains("rx-1") && queues.contains("tx-1"),
            "{queues}"
        );
        let tx0 = pair.counter(End::A, "tx_packets").unwrap();
        pair.exec(End::A, &["ping", "-c1", "-W2", "192.0.2.2"], None)
            .unwrap();
        assert!(pair.counter(End::A, "tx_packets").unwrap() > tx0);
        assert!(pair.mac(End::B).unwrap().contains(':'));
        drop(pair);
        for ns in [format!("{base}-va"), format!("{base}-vb")] {
            assert!(!netns::exists(&ns), "{ns} left behind");
        }
    }
}
