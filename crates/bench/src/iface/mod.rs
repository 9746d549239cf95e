//! What the host says about one interface, read where the interface lives (inside its
//! network namespace): wire speed (sysfs), driver, offloads and the driver's counters
//! (`ethtool`).
//!
//! Two readers use it: the preflight of a run on real interfaces ([`Iface::link`]: the link
//! checked against the plan's `speed` and recorded in `run.json`), and the testbed, which
//! reads the tester's own drop counters around every UDP trial ([`Iface::counters`],
//! [`counters`]). The parsing is pure and tested in its modules; the reading is a few
//! `ethtool` and sysfs reads (`ip netns exec NS …` for an interface in a namespace, which
//! needs root, as a run does).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use crate::port_link::{PortLink, WireSpeed};

pub mod counters;
pub mod offloads;

/// One interface, maybe in a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iface {
    /// Interface name.
    pub interface: String,
    /// Its network namespace, if any.
    pub namespace: Option<String>,
}

impl Iface {
    /// `wrpna in wr-pn-a`.
    pub fn place(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} in {ns}", self.interface),
            None => self.interface.clone(),
        }
    }

    /// The argument vector that runs `argv` where the interface lives.
    fn argv<'a>(&'a self, argv: &[&'a str]) -> Vec<&'a str> {
        let mut v = Vec::new();
        if let Some(ns) = &self.namespace {
            v.extend(["ip", "netns", "exec", ns.as_str()]);
        }
        v.extend_from_slice(argv);
        v
    }

    /// Runs `argv` where the interface lives; its stdout, or what went wrong.
    fn run(&self, argv: &[&str]) -> Result<String, String> {
        let full = self.argv(argv);
        let out = Command::new(full[0])
            .args(&full[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("`{}`: {e}", full.join(" ")))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "`{}`: {}",
                full.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// The interface's driver (`ethtool -i`), when ethtool can tell.
    pub fn driver(&self) -> Option<String> {
        let text = self.run(&["ethtool", "-i", &self.interface]).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("driver:"))
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
    }

    /// Its wire speed: sysfs's `speed`, unless the interface has no device of its own (a
    /// veth, a TUN), which has no wire whatever its driver reports (`WireSpeed::from_sysfs`).
    pub fn wire_speed(&self, driver: Option<&str>) -> WireSpeed {
        let sys = format!("/sys/class/net/{}", self.interface);
        // `ip netns exec` mounts the namespace's own sysfs for the command it runs.
        let speed = self.run(&["cat", &format!("{sys}/speed")]).ok();
        let has_device = self.run(&["test", "-e", &format!("{sys}/device")]).is_ok();
        let virtual_driver = (!has_device).then(|| driver.unwrap_or("virtual").to_string());
        WireSpeed::from_sysfs(speed.as_deref(), virtual_driver.as_deref())
    }

    /// The offloads `ethtool -k` reports ([`offloads::REPORTED`]); empty when it cannot tell.
    pub fn offloads(&self) -> Vec<crate::port_link::Offload> {
        self.run(&["ethtool", "-k", &self.interface])
            .map(|t| offloads::parse(&t))
            .unwrap_or_default()
    }

    /// The driver's counters (`ethtool -S`).
    pub fn counters(&self) -> Result<BTreeMap<String, u64>, String> {
        self.run(&["ethtool", "-S", &self.interface])
            .map(|t| counters::parse(&t))
    }

    /// The link under the plan's port `port` on this interface, as the preflight records it.
    pub fn link(&self, port: &str) -> PortLink {
        let driver = self.driver();
        let wire = self.wire_speed(driver.as_deref());
        let tester_counters = self
            .counters()
            .map(|c| counters::counted(driver.as_deref(), &c))
            .unwrap_or_default();
        PortLink {
            port: port.to_string(),
            interface: self.interface.clone(),
            namespace: self.namespace.clone(),
            driver,
            wire,
            offloads: self.offloads(),
            tester_counters,
        }
    }
}
