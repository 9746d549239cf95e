//! The [`Lab`] handle: bring a topology up, switch profiles, run commands in its nodes, read
//! its ports and stats, tear it down.
//!
//! State lives in the kernel, not in a file: a lab is the set of namespaces `wr-<name>-*`;
//! it is *ready* once the alias of port A's interface carries the marker written as the very
//! last step of [`Lab::up`]; the active profile is recorded in the alias of the DUT's first
//! interface. A crash at any point therefore leaves either a ready lab or namespaces that
//! [`Lab::up`] rebuilds and [`down`] removes.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::cmd;
use crate::cpu;
use crate::error::{LabError, Result};
use crate::fastpath::{self, FastpathStats};
use crate::napi;
use crate::netns;
use crate::probe::{self, Feature};
use crate::profile::{self, MssBackend, Profile};
use crate::stats::{self, StatsSnapshot};
use crate::topology::{self, IfacePlan, Node, PortId, Topology};

/// Lab name used when none is given.
pub const DEFAULT_NAME: &str = "lab";

/// How long `up` waits for links to come up and IPv6 addresses to become usable.
const READY_DEADLINE: Duration = Duration::from_secs(10);

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabConfig {
    /// Lab name: namespaces are `wr-<name>-a`, `wr-<name>-dut`, `wr-<name>-b`.
    pub name: String,
    pub topology: Topology,
    /// Profile to apply; `None` means `forward` (or nothing in the direct topology). On a lab
    /// that is already up, `None` keeps the current profile.
    pub profile: Option<Profile>,
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig {
            name: DEFAULT_NAME.to_string(),
            topology: Topology::Forward,
            profile: None,
        }
    }
}

/// A lab that is up. Dropping it leaves the lab running (the CLI's `lab up` relies on that);
/// call [`Lab::down`] to remove it.
#[derive(Debug, Clone)]
pub struct Lab {
    name: String,
    topology: Topology,
}

/// One tester port, with what a packet engine needs to build frames on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortInfo {
    pub port: PortId,
    /// Namespace the interface lives in.
    pub netns: String,
    pub ifname: String,
    pub mac: String,
    pub ipv4: Ipv4Addr,
    pub ipv4_prefix: u8,
    pub ipv6: Ipv6Addr,
    pub ipv6_prefix: u8,
    /// The interface at the other end of the port's veth (the DUT's, or the other port's in
    /// the direct topology): the L2 next hop.
    pub peer: PeerInfo,
    /// Default gateway of the port (the DUT), if it routes through one.
    pub gateway_v4: Option<Ipv4Addr>,
    pub gateway_v6: Option<Ipv6Addr>,
    /// Where this port's test traffic goes: the other port, or the DUT in `endpoint`.
    pub target_v4: Option<Ipv4Addr>,
    pub target_v6: Option<Ipv6Addr>,
}

/// The directly attached neighbour of a port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    pub node: Node,
    pub ifname: String,
    pub mac: String,
    pub ipv4: Ipv4Addr,
    pub ipv6: Ipv6Addr,
}

/// What `lab status` reports about one lab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabStatus {
    pub name: String,
    /// `None` when the existing namespaces match no topology (an interrupted `up`).
    pub topology: Option<Topology>,
    /// Whether `up` finished.
    pub ready: bool,
    pub profile: Option<String>,
    /// The DUT's XDP fast path: `off`, `on (forward)` or `on (conntrack)` (which program, see
    /// [`crate::fastpath::Program`]), or what is wrong with it; `None` without a ready
    /// forward-topology DUT.
    #[serde(default)]
    pub fastpath: Option<String>,
    pub namespaces: Vec<String>,
}

/// Every lab on the host plus `wr-` namespaces that belong to no lab (e.g. a killed probe).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    pub labs: Vec<LabStatus>,
    pub other_namespaces: Vec<String>,
    pub dut_cpu: Option<usize>,
    pub tester_cpus: Vec<usize>,
}

fn preflight(needs_nft: bool) -> Result<()> {
    cmd::require_root()?;
    cmd::tool("ip")?;
    cmd::tool("sh")?;
    if needs_nft {
        cmd::tool("nft")?;
    }
    Ok(())
}

fn ready_marker(name: &str, t: Topology) -> String {
    format!("wirerate lab={name} topology={t}")
}

fn profile_marker(p: &Profile) -> String {
    format!("wirerate profile={p}")
}

/// The alias (`ip link set … alias`) of an interface, if set.
fn alias(ns: &str, ifname: &str) -> Option<String> {
    let out = cmd::run(&["ip", "-n", ns, "-j", "link", "show", "dev", ifname]).ok()?;
    let v: serde_json::Value = serde_json::from_str(&out).ok()?;
    v.get(0)?.get("ifalias")?.as_str().map(str::to_string)
}

fn mac_of(ns: &str, ifname: &str) -> Result<String> {
    let out = cmd::run(&["ip", "-n", ns, "-j", "link", "show", "dev", ifname])?;
    let v: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| LabError::parse("`ip -j link`", e.to_string()))?;
    v.get(0)
        .and_then(|l| l.get("address"))
        .and_then(|a| a.as_str())
        .map(str::to_string)
        .ok_or_else(|| LabError::parse("`ip -j link`", out))
}

/// Status of lab `name`, or `None` if none of its namespaces exist.
pub fn status(name: &str) -> Result<Option<LabStatus>> {
    topology::validate_name(name)?;
    cmd::tool("ip")?;
    let namespaces: Vec<String> = [Node::A, Node::Dut, Node::B]
        .into_iter()
        .map(|n| topology::netns_name(name, n))
        .filter(|ns| netns::exists(ns))
        .collect();
    if namespaces.is_empty() {
        return Ok(None);
    }
    let nodes: Vec<Node> = namespaces
        .iter()
        .filter_map(|ns| topology::parse_netns_name(ns).map(|(_, n)| n))
        .collect();
    let guess = Topology::from_nodes(&nodes);
    let ready = guess.is_some_and(|t| {
        alias(&topology::netns_name(name, Node::A), "wr-a").as_deref()
            == Some(ready_marker(name, t).as_str())
    });
    // Without the ready marker the namespaces present say nothing reliable about the
    // topology (a killed `forward` build with A and DUT looks like `endpoint`).
    let topology = if ready { guess } else { None };
    let profile = if ready && nodes.contains(&Node::Dut) {
        alias(&topology::netns_name(name, Node::Dut), "wr-dut-a")
            .and_then(|a| a.strip_prefix("wirerate profile=").map(str::to_string))
    } else {
        None
    };
    let fastpath = if ready && topology == Some(Topology::Forward) {
        Some(
            match fastpath::attached(&topology::netns_name(name, Node::Dut)) {
                Ok(None) => "off".to_string(),
                Ok(Some(p)) => format!("on ({p})"),
                Err(e) => format!("unknown: {e}"),
            },
        )
    } else {
        None
    };
    Ok(Some(LabStatus {
        name: name.to_string(),
        topology,
        ready,
        profile,
        fastpath,
        namespaces,
    }))
}

/// Every lab (and stray `wr-` namespace) on this host.
pub fn inventory() -> Result<Inventory> {
    cmd::tool("ip")?;
    let all = netns::list_ours()?;
    let mut names: Vec<String> = Vec::new();
    let mut other = Vec::new();
    for ns in &all {
        match topology::parse_netns_name(ns) {
            Some((name, _)) if !names.contains(&name) => names.push(name),
            Some(_) => {}
            None => other.push(ns.clone()),
        }
    }
    let mut labs = Vec::new();
    for n in names {
        if let Some(s) = status(&n)? {
            labs.push(s);
        }
    }
    Ok(Inventory {
        labs,
        other_namespaces: other,
        dut_cpu: cpu::dut_cpu(),
        tester_cpus: cpu::tester_cpus(),
    })
}

/// Remove lab `name` (its three possible namespaces, the processes in them, and with them all
/// its veths). Returns the namespaces removed. Removing a lab that is not there is fine.
pub fn down(name: &str) -> Result<Vec<String>> {
    topology::validate_name(name)?;
    preflight(false)?;
    let mut removed = Vec::new();
    for node in [Node::A, Node::Dut, Node::B] {
        let ns = topology::netns_name(name, node);
        if netns::exists(&ns) {
            netns::delete(&ns)?;
            removed.push(ns);
        }
    }
    Ok(removed)
}

/// Namespaces kept by [`down_all`], each with the holder of its lab's lock.
pub type KeptNamespaces = Vec<(String, String)>;

/// Crash recovery: remove every `wr-` namespace on the host, whichever lab or probe made it.
/// Namespaces of a lab that another process holds ([`crate::LabLock`]) are kept: the second
/// list names them with their holder.
pub fn down_all() -> Result<(Vec<String>, KeptNamespaces)> {
    preflight(false)?;
    let mut removed = Vec::new();
    let mut kept = Vec::new();
    for ns in netns::list_ours()? {
        let lab = ns
            .strip_prefix("wr-")
            .and_then(|r| ["-a", "-dut", "-b"].iter().find_map(|s| r.strip_suffix(s)));
        if let Some(holder) = lab.and_then(crate::lock::holder) {
            kept.push((ns, holder));
            continue;
        }
        netns::delete(&ns)?;
        removed.push(ns);
    }
    Ok((removed, kept))
}

impl Lab {
    /// Bring a lab up, or reuse it if it is already up with the same topology (then only the
    /// profile is applied, if one is given). A partly built lab of the same name (an earlier
    /// `up` that was killed) is removed and rebuilt. On any error the partial lab is removed.
    pub fn up(cfg: &LabConfig) -> Result<Lab> {
        topology::validate_name(&cfg.name)?;
        let has_dut = cfg.topology.has(Node::Dut);
        preflight(has_dut)?;
        if let Some(p) = &cfg.profile {
            check_fits(p, cfg.topology)?;
            probe::require(p)?;
        }
        if let Some(st) = status(&cfg.name)? {
            match (st.ready, st.topology) {
                (true, Some(t)) if t == cfg.topology => {
                    let lab = Lab {
                        name: cfg.name.clone(),
                        topology: t,
                    };
                    if let Some(p) = &cfg.profile {
                        lab.apply_profile(p)?;
                    }
                    return Ok(lab);
                }
                (true, Some(t)) => {
                    return Err(LabError::TopologyMismatch {
                        name: cfg.name.clone(),
                        existing: t.to_string(),
                        wanted: cfg.topology.to_string(),
                    })
                }
                _ => {
                    down(&cfg.name)?;
                }
            }
        }
        let lab = Lab {
            name: cfg.name.clone(),
            topology: cfg.topology,
        };
        match lab.build(cfg.profile) {
            Ok(()) => Ok(lab),
            Err(e) => {
                let _ = down(&cfg.name);
                Err(e)
            }
        }
    }

    /// A handle on lab `name`, which must be up (ready).
    pub fn attach(name: &str) -> Result<Lab> {
        preflight(false)?;
        match status(name)? {
            Some(LabStatus {
                ready: true,
                topology: Some(t),
                ..
            }) => Ok(Lab {
                name: name.to_string(),
                topology: t,
            }),
            _ => Err(LabError::NotUp {
                name: name.to_string(),
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// Remove this lab.
    pub fn down(self) -> Result<()> {
        down(&self.name).map(drop)
    }

    /// The namespace of `node`, if the topology has it.
    pub fn netns(&self, node: Node) -> Result<String> {
        if !self.topology.has(node) {
            return Err(LabError::NoSuchNode {
                node: node.to_string(),
                topology: self.topology.to_string(),
            });
        }
        Ok(topology::netns_name(&self.name, node))
    }

    fn build(&self, profile: Option<Profile>) -> Result<()> {
        let t = self.topology;
        for &node in t.nodes() {
            cmd::check_interrupted()?;
            let ns = self.netns(node)?;
            netns::add(&ns)?;
            // Before any veth exists, so new interfaces inherit "no DAD": IPv6 addresses are
            // usable at once instead of after ~1 s of duplicate address detection.
            netns::sh(
                &ns,
                "echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad; \
                 echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad",
            )?;
            cmd::run(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
        }
        let mtu = crate::LINK_MTU.to_string();
        for link in topology::links(t) {
            cmd::check_interrupted()?;
            let (l, r) = (&link.left, &link.right);
            let (lns, rns) = (self.netns(l.node)?, self.netns(r.node)?);
            // Both ends are created directly in their namespaces: no name ever exists in the
            // host's namespace, so nothing there can collide or be left behind.
            cmd::run(&[
                "ip", "link", "add", l.ifname, "netns", &lns, "address", l.mac, "mtu", &mtu,
                "type", "veth", "peer", "name", r.ifname, "netns", &rns, "address", r.mac, "mtu",
                &mtu,
            ])?;
        }
        for i in topology::ifaces(t) {
            cmd::check_interrupted()?;
            let ns = self.netns(i.node)?;
            let v4 = format!("{}/{}", i.ipv4, topology::V4_PREFIX);
            let v6 = format!("{}/{}", i.ipv6, topology::V6_PREFIX);
            cmd::run(&["ip", "-n", &ns, "addr", "add", &v4, "dev", i.ifname])?;
            cmd::run(&[
                "ip", "-n", &ns, "addr", "add", &v6, "dev", i.ifname, "nodad",
            ])?;
            cmd::run(&["ip", "-n", &ns, "link", "set", i.ifname, "up"])?;
            // GRO gives a veth NAPI, without which it refuses frames its peer transmits from
            // XDP (the engine's XDP backend sends with XDP_TX from BPF_PROG_RUN). UDP test
            // frames are not merged by it (no UDP GRO forwarding).
            cmd::run(&[
                "ip", "netns", "exec", &ns, "ethtool", "-K", i.ifname, "gro", "on",
            ])?;
        }
        for r in topology::routes(t) {
            let ns = self.netns(r.node)?;
            let (v4, v6) = (r.via4.to_string(), r.via6.to_string());
            cmd::run(&["ip", "-n", &ns, "route", "add", "default", "via", &v4])?;
            cmd::run(&["ip", "-n", &ns, "-6", "route", "add", "default", "via", &v6])?;
        }
        if t.has(Node::Dut) {
            netns::sh(
                &self.netns(Node::Dut)?,
                "echo 1 > /proc/sys/net/ipv4/ip_forward; \
                 echo 1 > /proc/sys/net/ipv6/conf/all/forwarding",
            )?;
        }
        if t.has(Node::Dut) {
            // A DUT without segmentation offloads unless asked (crate::links).
            self.set_dut_offload(false)?;
        }
        cmd::check_interrupted()?;
        self.isolate_cpus()?;
        self.wait_ready()?;
        if t.has(Node::Dut) {
            self.apply_profile(&profile.unwrap_or(Profile::Forward))?;
        }
        cmd::check_interrupted()?;
        let ns_a = self.netns(Node::A)?;
        let marker = ready_marker(&self.name, t);
        cmd::run(&["ip", "-n", &ns_a, "link", "set", "wr-a", "alias", &marker])?;
        Ok(())
    }

    /// Steer receive processing with RPS: the DUT's ingress veths to the DUT's CPU, the tester
    /// ports' to the tester CPUs; and run the DUT's receive polls on the DUT's CPU
    /// ([`Lab::receive_on_dut_cpu`]). Skipped (nothing to isolate) on a one-CPU machine.
    fn isolate_cpus(&self) -> Result<()> {
        let Some(dut) = cpu::dut_cpu() else {
            return Ok(());
        };
        let dut_mask = cpu::rps_mask(&[dut]);
        let tester_mask = cpu::rps_mask(&cpu::tester_cpus());
        for &node in self.topology.nodes() {
            let mask = if node == Node::Dut {
                &dut_mask
            } else {
                &tester_mask
            };
            let script: Vec<String> = topology::ifaces(self.topology)
                .iter()
                .filter(|i| i.node == node)
                .map(|i| {
                    format!(
                        "for q in /sys/class/net/{}/queues/rx-*; do echo {mask} > $q/rps_cpus; done",
                        i.ifname
                    )
                })
                .collect();
            netns::sh(&self.netns(node)?, &script.join("; "))?;
        }
        self.receive_on_dut_cpu()
    }

    /// The DUT's receive polls in NAPI threads on the DUT's CPU ([`crate::napi`]), in every
    /// profile; idempotent. Nothing to do without a DUT or on a one-CPU machine.
    fn receive_on_dut_cpu(&self) -> Result<()> {
        if !self.topology.has(Node::Dut) || cpu::dut_cpu().is_none() {
            return Ok(());
        }
        let ifaces: Vec<&str> = topology::ifaces(self.topology)
            .into_iter()
            .filter(|i| i.node == Node::Dut)
            .map(|i| i.ifname)
            .collect();
        napi::receive_on_dut_cpu(&self.netns(Node::Dut)?, &ifaces)
    }

    /// Poll until every interface is operationally up and no IPv6 address is tentative.
    fn wait_ready(&self) -> Result<()> {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            cmd::check_interrupted()?;
            let pending = self.not_ready()?;
            if pending.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(LabError::NotReady {
                    what: pending.join(", "),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn not_ready(&self) -> Result<Vec<String>> {
        let mut pending = Vec::new();
        for &node in self.topology.nodes() {
            let ns = self.netns(node)?;
            let links = cmd::run(&["ip", "-n", &ns, "-j", "link", "show"])?;
            let v: serde_json::Value = serde_json::from_str(&links)
                .map_err(|e| LabError::parse("`ip -j link`", e.to_string()))?;
            for l in v.as_array().into_iter().flatten() {
                let name = l["ifname"].as_str().unwrap_or("");
                if name.starts_with(topology::PREFIX) && l["operstate"].as_str() != Some("UP") {
                    pending.push(format!("{ns}/{name} not up"));
                }
            }
            let tentative = cmd::run(&["ip", "-n", &ns, "-6", "addr", "show", "tentative"])?;
            if !tentative.trim().is_empty() {
                pending.push(format!("{ns}: tentative IPv6 address"));
            }
        }
        Ok(pending)
    }

    /// Switch the DUT to `profile` atomically (one `nft -f` transaction replacing the lab's
    /// table). Fails before changing anything if the profile does not fit the topology or
    /// needs a kernel feature that is missing.
    pub fn apply_profile(&self, profile: &Profile) -> Result<()> {
        check_fits(profile, self.topology)?;
        let features = probe::require(profile)?;
        let backend = features.mss_backend().unwrap_or(MssBackend::NftExthdr);
        self.apply_profile_using(profile, backend)
    }

    /// [`Lab::apply_profile`] with the MSS clamp backend chosen by the caller (tests use it to
    /// exercise the xtables fallback on kernels where nftables could do it).
    ///
    /// The fast path is switched off first, before the ruleset changes, so no moment exists
    /// in which a fast path runs with a profile it does not fit; turn it on again with
    /// [`Lab::set_fastpath`] (which re-checks the combination). `fastpath` is the exception: it
    /// applies `forward` and then turns the fast path on.
    pub fn apply_profile_using(&self, profile: &Profile, mss: MssBackend) -> Result<()> {
        check_fits(profile, self.topology)?;
        probe::require(profile)?;
        let ns = self.netns(Node::Dut)?;
        if self.topology == Topology::Forward {
            fastpath::detach(&ns, &self.fastpath_testers()?)?;
        }
        let ruleset = profile.ruleset(self.topology, mss);
        // Big rule lists: allow 1 s per 10,000 rules on top of the default deadline.
        let timeout =
            cmd::DEFAULT_TIMEOUT + Duration::from_secs(u64::from(profile.rule_count()) / 10_000);
        cmd::run_with(
            &["ip", "netns", "exec", &ns, "nft", "-f", "-"],
            Some(ruleset.as_bytes()),
            timeout,
        )?;
        let wants_xt =
            matches!(profile, Profile::MssClamp { .. }) && mss == MssBackend::XtablesTcpmss;
        if let (true, Profile::MssClamp { mss: m }) = (wants_xt, profile) {
            cmd::tool("iptables-restore")?;
            let rules = profile::xtables_mss_rules(*m);
            for tool in ["iptables-restore", "ip6tables-restore"] {
                cmd::run_with(
                    &["ip", "netns", "exec", &ns, tool],
                    Some(rules.as_bytes()),
                    cmd::DEFAULT_TIMEOUT,
                )?;
            }
        } else {
            self.remove_xtables_mangle(&ns)?;
        }
        cmd::run(&[
            "ip",
            "-n",
            &ns,
            "link",
            "set",
            "wr-dut-a",
            "alias",
            // `fastpath` is recorded as what it is: forward, with the fast path on.
            &profile_marker(if *profile == Profile::Fastpath {
                &Profile::Forward
            } else {
                profile
            }),
        ])?;
        // A lab built before the polls were threaded in every profile gets them here.
        self.receive_on_dut_cpu()?;
        if *profile == Profile::Fastpath {
            self.set_fastpath(true)?;
        }
        Ok(())
    }

    /// Switch the DUT's XDP fast path on or off (see [`crate::fastpath`] and docs/lab.md, "The
    /// fast path"). On: checks the active profile first and refuses, changing nothing, a
    /// combination in which packets would skip rules they must walk
    /// (`lab_model::Error::FastpathRefused` in [`LabError::Model`], e.g. `filter-stateless-N`)
    /// or a kernel without the
    /// XDP support it needs; picks the program that fits the profile (plain forwarding, or
    /// conntrack-established flows only). Idempotent. Off: removes it (fine when it is off).
    /// Either way the DUT's receive polls stay on the DUT's CPU, as in every profile
    /// ([`crate::napi`]).
    pub fn set_fastpath(&self, on: bool) -> Result<()> {
        let ns = self.netns(Node::Dut)?;
        if !on {
            if self.topology == Topology::Forward {
                fastpath::detach(&ns, &self.fastpath_testers()?)?;
            }
            return Ok(());
        }
        let profile = self.profile()?.ok_or_else(|| {
            LabError::Model(lab_model::Error::FastpathRefused {
                profile: "(none recorded)".into(),
                reason: "the lab records no active profile; apply one with `wirerate lab profile`"
                    .into(),
            })
        })?;
        let program = fastpath::program_for(&profile, self.topology)?;
        let need = match program {
            fastpath::Program::Forward => Feature::XdpFastpath,
            fastpath::Program::Conntrack => Feature::XdpConntrack,
        };
        if !probe::features()?.has(need) {
            return Err(LabError::Unsupported {
                profile: format!("{profile} with the fast path"),
                feature: need.describe().to_string(),
            });
        }
        if fastpath::attached(&ns).ok().flatten() == Some(program) {
            return Ok(());
        }
        fastpath::attach(&ns, &self.fastpath_testers()?, program)
    }

    /// The tester ports (namespace, interface) whose checksum offload the fast path turns off.
    fn fastpath_testers(&self) -> Result<Vec<(String, &'static str)>> {
        Ok(vec![
            (self.netns(Node::A)?, "wr-a"),
            (self.netns(Node::B)?, "wr-b"),
        ])
    }

    /// Whether the DUT's fast path is on. Errors when the DUT's XDP programs are not the
    /// lab's (a foreign program, or ours on one interface only).
    pub fn fastpath(&self) -> Result<bool> {
        Ok(self.fastpath_program()?.is_some())
    }

    /// Which fast path program runs, if it is on.
    pub fn fastpath_program(&self) -> Result<Option<fastpath::Program>> {
        if self.topology != Topology::Forward {
            return Ok(None);
        }
        fastpath::attached(&self.netns(Node::Dut)?)
    }

    /// The fast path's counters (forwarded, translated, handed to the stack and why), summed
    /// over both interfaces and all CPUs; `None` when it is off.
    pub fn fastpath_stats(&self) -> Result<Option<FastpathStats>> {
        if self.topology != Topology::Forward {
            return Ok(None);
        }
        fastpath::stats(&self.netns(Node::Dut)?)
    }

    /// Remove the mangle tables an xtables MSS clamp left (only we put them in this DUT).
    fn remove_xtables_mangle(&self, ns: &str) -> Result<()> {
        let tables = cmd::run(&["ip", "netns", "exec", ns, "nft", "list", "tables"])?;
        for family in ["ip", "ip6"] {
            if tables
                .lines()
                .any(|l| l.trim() == format!("table {family} mangle"))
            {
                cmd::run(&[
                    "ip", "netns", "exec", ns, "nft", "delete", "table", family, "mangle",
                ])?;
            }
        }
        Ok(())
    }

    /// Caps the DUT's connection table at `limit` connections (drop-new; `None` removes the
    /// cap) and sets its unreplied-UDP timeout (see [`crate::conntrack`]). Profile switches
    /// leave it: the caller sets it again per profile.
    pub fn set_conn_table(&self, limit: Option<u64>, udp_timeout: Option<Duration>) -> Result<()> {
        crate::conntrack::configure(&self.netns(Node::Dut)?, limit, udp_timeout)
    }

    /// Empties the DUT's connection table between trials (RFC 9693 "Control of the Connection
    /// Tracking Table Entries"), restarting the cap's count when there is one (`limit`).
    pub fn reset_conn_table(&self, limit: Option<u64>) -> Result<()> {
        crate::conntrack::reset(&self.netns(Node::Dut)?, limit)
    }

    /// Deletes every connection of the DUT's table and times it (`nat-teardown-rate`).
    pub fn teardown_conn_table(&self) -> Result<crate::conntrack::Teardown> {
        crate::conntrack::teardown(&self.netns(Node::Dut)?)
    }

    /// The DUT's connection table counters now.
    pub fn conn_stats(&self) -> Result<crate::conntrack::ConntrackStats> {
        crate::conntrack::stats(&self.netns(Node::Dut)?)
    }

    /// The active profile, as recorded when it was applied.
    pub fn profile(&self) -> Result<Option<Profile>> {
        if !self.topology.has(Node::Dut) {
            return Ok(None);
        }
        let a = alias(&self.netns(Node::Dut)?, "wr-dut-a");
        Ok(
            a.and_then(|a| a.strip_prefix("wirerate profile=").map(str::to_string))
                .and_then(|p| Profile::parse(&p).ok()),
        )
    }

    /// CPUs a process in `node` is pinned to: the DUT's CPU for the DUT (so an iperf3 server
    /// there competes with the DUT's packet processing like on a real box), the tester CPUs
    /// for ports. Empty (no pinning) on a one-CPU machine.
    pub fn cpus_for(node: Node) -> Vec<usize> {
        match (cpu::dut_cpu(), node) {
            (None, _) => vec![],
            (Some(d), Node::Dut) => vec![d],
            (Some(_), _) => cpu::tester_cpus(),
        }
    }

    /// A command running `argv` inside `node`, pinned per [`Lab::cpus_for`]. For servers and
    /// captures that the caller spawns and stops itself.
    pub fn command(&self, node: Node, argv: &[&str]) -> Result<Command> {
        let ns = self.netns(node)?;
        netns::command(&ns, argv, &Self::cpus_for(node))
    }

    /// Run `argv` in `node` to completion and return its output (whatever its exit status).
    pub fn exec(&self, node: Node, argv: &[&str]) -> Result<Output> {
        let mut c = self.command(node, argv)?;
        c.output()
            .map_err(|e| LabError::io(format!("running `{}` in {node}", argv.join(" ")), e))
    }

    /// Addresses and neighbours of a tester port.
    pub fn port(&self, port: PortId) -> Result<PortInfo> {
        let t = self.topology;
        let no_port = || LabError::NoSuchNode {
            node: port.node().to_string(),
            topology: t.to_string(),
        };
        let i: IfacePlan = topology::port_iface(t, port).ok_or_else(no_port)?;
        let peer = topology::peer_iface(t, i.ifname, i.node).ok_or_else(no_port)?;
        let netns = self.netns(i.node)?;
        let peer_ns = self.netns(peer.node)?;
        let via = topology::routes(t).into_iter().find(|r| r.node == i.node);
        let target = topology::target_iface(t, port);
        Ok(PortInfo {
            port,
            mac: mac_of(&netns, i.ifname)?,
            netns,
            ifname: i.ifname.to_string(),
            ipv4: i.ipv4,
            ipv4_prefix: topology::V4_PREFIX,
            ipv6: i.ipv6,
            ipv6_prefix: topology::V6_PREFIX,
            peer: PeerInfo {
                node: peer.node,
                ifname: peer.ifname.to_string(),
                mac: mac_of(&peer_ns, peer.ifname)?,
                ipv4: peer.ipv4,
                ipv6: peer.ipv6,
            },
            gateway_v4: via.as_ref().map(|r| r.via4),
            gateway_v6: via.as_ref().map(|r| r.via6),
            target_v4: target.as_ref().map(|x| x.ipv4),
            target_v6: target.as_ref().map(|x| x.ipv6),
        })
    }

    /// Read every counter the lab offers (see [`StatsSnapshot`]).
    pub fn snapshot(&self) -> Result<StatsSnapshot> {
        let mut s = StatsSnapshot {
            taken_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            ..Default::default()
        };
        if self.topology.has(Node::Dut) {
            let ns = self.netns(Node::Dut)?;
            // A profile without counters (forward) still has the table; a missing table means
            // no counters, not an error.
            if let Ok(out) = cmd::run(&[
                "ip",
                "netns",
                "exec",
                &ns,
                "nft",
                "-j",
                "list",
                "counters",
                "table",
                "inet",
                profile::TABLE,
            ]) {
                s.nft_counters = stats::parse_nft_counters(&out)?;
            }
            let ct = netns::sh(
                &ns,
                "cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null || true",
            )?;
            s.conntrack_entries = ct.trim().parse().ok();
            s.fastpath = self.fastpath_stats()?;
        }
        for &node in self.topology.nodes() {
            let ns = self.netns(node)?;
            let out = cmd::run(&["ip", "-n", &ns, "-j", "-s", "link", "show"])?;
            s.interfaces
                .extend(stats::parse_ip_link_stats(&out, Some(node))?);
        }
        let softnet = std::fs::read_to_string("/proc/net/softnet_stat")
            .map_err(|e| LabError::io("reading /proc/net/softnet_stat", e))?;
        s.softnet = stats::parse_softnet(&softnet)?;
        if let Some(c) = cpu::dut_cpu() {
            let stat = std::fs::read_to_string("/proc/stat")
                .map_err(|e| LabError::io("reading /proc/stat", e))?;
            s.dut_cpu = stats::parse_proc_stat(&stat, c);
        }
        Ok(s)
    }
}

/// The DUT's packet counters at one instant: what a trial's figure is checked against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DutSample {
    /// The DUT's interfaces (`wr-dut-a` faces port A, `wr-dut-b` port B).
    pub interfaces: Vec<stats::IfaceStats>,
    /// Backlog drops of the DUT's CPU (softnet "dropped"; host-wide, but that CPU is the DUT's).
    pub softnet_dropped: u64,
    /// Backlog drops of the tester's CPUs (softnet "dropped", summed). The tester ports'
    /// receive work runs there (docs/lab.md, "CPU isolation"), so a frame the DUT forwarded
    /// and that backlog refused was lost by the tester, not by the DUT.
    pub tester_softnet_dropped: u64,
    /// CPU time of the DUT's CPU (`None` on a one-CPU machine: no CPU is the DUT's alone).
    pub dut_cpu: Option<stats::CpuTimes>,
}

impl DutSample {
    /// The interface named `ifname`.
    pub fn iface(&self, ifname: &str) -> Option<&stats::IfaceStats> {
        self.interfaces.iter().find(|i| i.ifname == ifname)
    }
}

impl Lab {
    /// The DUT's interface counters and backlog drops, cheaply (one `ip -s link` in the DUT's
    /// namespace and /proc/net/softnet_stat): taken before and after every trial of a run.
    /// `None` when the topology has no DUT.
    pub fn dut_sample(&self) -> Result<Option<DutSample>> {
        if !self.topology.has(Node::Dut) {
            return Ok(None);
        }
        let ns = self.netns(Node::Dut)?;
        let out = cmd::run(&["ip", "-n", &ns, "-j", "-s", "link", "show"])?;
        let interfaces = stats::parse_ip_link_stats(&out, Some(Node::Dut))?;
        let softnet = std::fs::read_to_string("/proc/net/softnet_stat")
            .map_err(|e| LabError::io("reading /proc/net/softnet_stat", e))?;
        let softnet = stats::parse_softnet(&softnet)?;
        let dropped_on = |cpus: &[usize]| -> u64 {
            softnet
                .iter()
                .filter(|s| cpus.contains(&s.cpu))
                .map(|s| s.dropped)
                .sum()
        };
        // On one CPU no CPU is the DUT's or the tester's alone: nothing to tell apart.
        let (softnet_dropped, tester_softnet_dropped) = match cpu::dut_cpu() {
            Some(c) => (dropped_on(&[c]), dropped_on(&cpu::tester_cpus())),
            None => (0, 0),
        };
        let dut_cpu = match cpu::dut_cpu() {
            Some(c) => {
                let stat = std::fs::read_to_string("/proc/stat")
                    .map_err(|e| LabError::io("reading /proc/stat", e))?;
                stats::parse_proc_stat(&stat, c)
            }
            None => None,
        };
        Ok(Some(DutSample {
            interfaces,
            softnet_dropped,
            tester_softnet_dropped,
            dut_cpu,
        }))
    }
}

fn check_fits(p: &Profile, t: Topology) -> Result<()> {
    if p.fits(t) {
        Ok(())
    } else {
        Err(LabError::ProfileNotForTopology {
            profile: p.to_string(),
            topology: t.to_string(),
        })
    }
}
