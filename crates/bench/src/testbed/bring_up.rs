//! Bringing a testbed up: the namespace lab built afresh, or a plan's real interfaces checked
//! and every port's control plane (PPPoE, DS-Lite, IPoE) started and waited for.

use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use wire::units::BitsPerSec;

use crate::hooks::Exec;
use crate::iperf3::wire_count::Side;
use crate::ipoe_port::LeasePort;
use crate::isp::{SessionPort, SoftwirePort};
use crate::plan::{Plan, Topology};

use super::{ns_exec, port_spec, Iperf3Ends, Testbed, TestbedError, SESSIONS_JSONL};

/// Whether `ifname` exists in namespace `ns` (or here).
pub(crate) fn interface_exists(ns: &Option<String>, ifname: &str) -> Result<(), InterfaceMissing> {
    if let Some(n) = ns {
        if !lab::netns::exists(n) && !n.contains('/') {
            return Err(InterfaceMissing::NoNamespace { netns: n.clone() });
        }
    }
    let mut c = std::process::Command::new("ip");
    if let Some(n) = ns {
        c.args(["-n", n]);
    }
    let out = c
        .args(["link", "show", "dev", ifname])
        .output()
        .map_err(InterfaceMissing::Ip)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(InterfaceMissing::NotFound {
            interface: ifname.to_string(),
            netns: ns.clone(),
            ip_says: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Why a plan's real interface cannot be used ([`interface_exists`]).
#[derive(Debug)]
pub(crate) enum InterfaceMissing {
    /// The namespace the plan names does not exist.
    NoNamespace { netns: String },
    /// `ip` could not be run.
    Ip(std::io::Error),
    /// `ip link show` does not know the interface (what it said).
    NotFound {
        interface: String,
        netns: Option<String>,
        ip_says: String,
    },
}

impl std::fmt::Display for InterfaceMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InterfaceMissing::NoNamespace { netns } => write!(
                f,
                "network namespace `{netns}` does not exist (ip netns list)"
            ),
            InterfaceMissing::Ip(e) => write!(f, "running ip: {e}"),
            InterfaceMissing::NotFound {
                interface,
                netns,
                ip_says,
            } => write!(
                f,
                "interface `{interface}` not found{} (ip: {ip_says})",
                netns
                    .as_ref()
                    .map_or(String::new(), |n| format!(" in namespace `{n}`"))
            ),
        }
    }
}

/// Checks, before anything is built or sent, that the plan's real interfaces exist: (plan
/// key, problem) pairs.
pub fn preflight(plan: &Plan) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    if !matches!(plan.topology, Topology::Interfaces) {
        return problems;
    }
    for p in &plan.ports {
        if let Err(e) = interface_exists(&p.namespace, &p.interface) {
            problems.push((format!("ports.{}.interface", p.name), e.to_string()));
        }
    }
    problems
}

impl Testbed {
    /// Builds the lab, or checks nothing more for real interfaces, then brings up every
    /// port's control plane and waits for its session. On any failure everything started so
    /// far is stopped again and nothing has been sent.
    pub fn up(plan: &Plan, dir: &Path, stop: &AtomicBool) -> Result<Testbed, TestbedError> {
        match &plan.topology {
            Topology::Lab { topology, name, .. } => Self::build_lab(
                topology,
                name,
                &format!("wirerate run {}", plan.file),
                plan.speed(),
            ),
            Topology::Interfaces => Self::interfaces(plan, dir, stop),
        }
    }

    /// Builds the lab afresh, its tester ports shaped to `speed` so TCP sees a cable of the
    /// plan's reference speed (lab::links).
    fn build_lab(
        topology: &str,
        name: &str,
        purpose: &str,
        speed: BitsPerSec,
    ) -> Result<Testbed, TestbedError> {
        let topo: lab::Topology = topology.parse().map_err(TestbedError::Topology)?;
        // One lab, one user: a second run on this lab would tear it down under this one.
        let lock = lab::LabLock::acquire(name, purpose, lab::lock::USER_WAIT)
            .map_err(TestbedError::Lock)?;
        // Rebuild: whatever a killed run left in the namespaces (servers, captures) goes.
        let lab_err = |source| TestbedError::Lab {
            name: name.to_string(),
            source,
        };
        lab::down(name).map_err(lab_err)?;
        let l = lab::Lab::up(&lab::LabConfig {
            name: name.to_string(),
            topology: topo,
            profile: None,
        })
        .map_err(lab_err)?;
        let built = (|| -> lab::Result<Testbed> {
            l.set_wire_speed(Some(speed.0.round() as u64))?;
            let a = crate::trial::lab_port(&l, lab::PortId::A, "a")?;
            let pa = l.port(lab::PortId::A)?;
            let (b, iperf3) = if topo == lab::Topology::Endpoint {
                let dut = l.netns(lab::Node::Dut)?;
                let ends = Iperf3Ends {
                    client: Exec::Netns {
                        name: pa.netns.clone(),
                    },
                    server: Exec::Netns { name: dut.clone() },
                    capture: Some((Exec::Netns { name: dut }, pa.peer.ifname.clone())),
                    wire_port: Some((
                        Exec::Netns {
                            name: pa.netns.clone(),
                        },
                        pa.ifname.clone(),
                        Side::Tx,
                    )),
                    target_v4: pa.target_v4.map(IpAddr::V4),
                    target_v6: pa.target_v6.map(IpAddr::V6),
                };
                (None, ends)
            } else {
                let b = crate::trial::lab_port(&l, lab::PortId::B, "b")?;
                let pb = l.port(lab::PortId::B)?;
                let ends = Iperf3Ends {
                    wire_port: Some((
                        Exec::Netns {
                            name: pa.netns.clone(),
                        },
                        pa.ifname.clone(),
                        Side::Tx,
                    )),
                    client: Exec::Netns { name: pa.netns },
                    server: Exec::Netns {
                        name: pb.netns.clone(),
                    },
                    capture: Some((Exec::Netns { name: pb.netns }, pb.ifname)),
                    target_v4: Some(IpAddr::V4(pb.ipv4)),
                    target_v6: Some(IpAddr::V6(pb.ipv6)),
                };
                (Some(b), ends)
            };
            Ok(Testbed {
                lab: Some(l.clone()),
                a,
                b,
                iperf3,
                sessions: Vec::new(),
                softwires: Vec::new(),
                leases: Vec::new(),
                a_session: None,
                a_softwire: None,
                b_session: None,
                log: None,
                watched: Vec::new(),
                lan_watch: Vec::new(),
                lan_watch_records: Vec::new(),
                lock: None,
            })
        })();
        match built {
            Ok(mut tb) => {
                tb.lock = Some(lock);
                Ok(tb)
            }
            Err(e) => {
                let _ = l.clone().down();
                Err(TestbedError::LabPorts(e))
            }
        }
    }

    fn interfaces(plan: &Plan, dir: &Path, stop: &AtomicBool) -> Result<Testbed, TestbedError> {
        let pa = plan.ports.first().ok_or(TestbedError::NoPorts)?;
        let pb = plan.ports.get(1);
        let mut a = port_spec(pa, &pa.name);
        let mut b = pb.map(|p| port_spec(p, &p.name));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(SESSIONS_JSONL))
            .map_err(TestbedError::SessionsLog)?;
        let mut tb = Testbed {
            lab: None,
            a: a.clone(),
            b: b.clone(),
            iperf3: Iperf3Ends {
                client: ns_exec(&pa.namespace),
                server: Exec::Local,
                capture: None,
                wire_port: None,
                target_v4: None,
                target_v6: None,
            },
            sessions: Vec::new(),
            softwires: Vec::new(),
            leases: Vec::new(),
            a_session: None,
            a_softwire: None,
            b_session: None,
            log: Some(log),
            watched: Vec::new(),
            lan_watch: super::lan_watch::watched_lans(plan),
            lan_watch_records: Vec::new(),
            lock: None,
        };
        // Control planes first (all of them started, then waited for), so a DUT that brings
        // its WAN up only once its LAN side answers is not deadlocked.
        let mut roles = Vec::new();
        for (i, p) in plan.ports.iter().enumerate().take(2) {
            if let Some(cfg) = &p.pppoe {
                let spec = if i == 0 { &a } else { b.as_ref().unwrap_or(&a) };
                match SessionPort::start(&p.name, spec, cfg) {
                    Ok(s) => {
                        tb.sessions.push(s);
                        roles.push((i, cfg.timeout));
                    }
                    Err(e) => {
                        let _ = tb.down();
                        return Err(TestbedError::Port(e));
                    }
                }
            }
        }
        // DS-Lite the same way: every port's machine first (an AFTR must be answering before a
        // B4 on the other port probes it), then the waits.
        let mut tunnels = Vec::new();
        for (i, p) in plan.ports.iter().enumerate().take(2) {
            if let Some(cfg) = &p.dslite {
                let spec = if i == 0 { &a } else { b.as_ref().unwrap_or(&a) };
                match SoftwirePort::start(&p.name, spec, cfg) {
                    Ok(s) => {
                        tb.softwires.push(s);
                        tunnels.push((i, cfg.timeout));
                    }
                    Err(e) => {
                        let _ = tb.down();
                        return Err(TestbedError::Port(e));
                    }
                }
            }
        }
        // A MAP-E BR like an AFTR: it answers at once and waits for no one.
        for (i, p) in plan.ports.iter().enumerate().take(2) {
            if let Some(cfg) = &p.mape {
                let spec = if i == 0 { &a } else { b.as_ref().unwrap_or(&a) };
                match SoftwirePort::start_br(&p.name, spec, cfg) {
                    Ok(s) => {
                        tb.softwires.push(s);
                        tunnels.push((i, cfg.timeout));
                    }
                    Err(e) => {
                        let _ = tb.down();
                        return Err(TestbedError::Port(e));
                    }
                }
            }
        }
        // IPoE: the port answers DHCP at once; the gateway's lease is waited for below.
        let mut dhcp = Vec::new();
        for (i, p) in plan.ports.iter().enumerate().take(2) {
            if let Some(cfg) = &p.ipoe {
                let spec = if i == 0 { &a } else { b.as_ref().unwrap_or(&a) };
                match LeasePort::start(&p.name, spec, cfg) {
                    Ok(s) => {
                        tb.leases.push(s);
                        dhcp.push((i, cfg.timeout, cfg.gateway));
                    }
                    Err(e) => {
                        let _ = tb.down();
                        return Err(TestbedError::Port(e));
                    }
                }
            }
        }
        for (k, (i, timeout, gateway)) in dhcp.into_iter().enumerate() {
            let got = tb.leases[k].wait_up(timeout, stop);
            tb.flush_log();
            if let Err(e) = got {
                let _ = tb.down();
                return Err(TestbedError::PortUp(e));
            }
            // Test frames to this port go to our gateway address, where the DUT's NAPT sends
            // them (the lease is the way back).
            if i == 1 {
                if let Some(b) = b.as_mut() {
                    b.ipv4 = b.ipv4.or(Some(gateway));
                }
            }
        }
        for (k, (i, timeout)) in tunnels.into_iter().enumerate() {
            let up = tb.softwires[k].wait_up(timeout, stop);
            tb.flush_log();
            match up {
                Ok(Some(info)) if i == 0 => {
                    tb.a_softwire = Some(info);
                    // A B4's frames come from its own 192.0.0.2 (RFC 6333 §5.7).
                    a.ipv4 = a.ipv4.or(Some(emulate::dslite::B4_IPV4));
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = tb.down();
                    return Err(TestbedError::Port(e));
                }
            }
        }
        for (k, (i, timeout)) in roles.into_iter().enumerate() {
            let got = tb.sessions[k].wait_up(timeout, stop);
            tb.flush_log();
            match got {
                Ok(info) => {
                    let local = info.local_ipv4();
                    if i == 0 {
                        tb.a_session = Some(info);
                        if a.ipv4.is_none() {
                            a.ipv4 = local;
                        }
                    } else if let Some(b) = b.as_mut() {
                        tb.b_session = Some(info);
                        if b.ipv4.is_none() {
                            b.ipv4 = local;
                        }
                    }
                }
                Err(e) => {
                    let _ = tb.down();
                    return Err(TestbedError::PortUp(e));
                }
            }
        }
        tb.a = a;
        tb.b = b.clone();
        // An access concentrator with an Internet side: iperf3's server sits behind it, in
        // the namespace of its TUN device, and the SYNs are captured on that device — the
        // MSS the ISP sees, after the DUT's clamp.
        let internet = pb.and_then(|p| {
            tb.sessions
                .iter()
                .find(|s| s.port == p.name)
                .and_then(|s| s.internet.clone())
                .or_else(|| {
                    tb.leases
                        .iter()
                        .find(|s| s.port == p.name)
                        .and_then(|s| s.internet.clone())
                })
                .or_else(|| {
                    tb.softwires
                        .iter()
                        .find(|s| s.port == p.name)
                        .and_then(|s| s.internet.clone())
                })
        });
        tb.iperf3 = match (pb, b) {
            (Some(_), Some(_)) if internet.is_some() => {
                let i = internet.expect("checked");
                let at = Exec::Netns {
                    name: i.netns.clone(),
                };
                Iperf3Ends {
                    client: ns_exec(&pa.namespace),
                    server: at.clone(),
                    capture: Some((at, i.tun.clone())),
                    wire_port: None,
                    target_v4: Some(IpAddr::V4(i.addr)),
                    target_v6: None,
                }
            }
            (Some(p), Some(spec)) => Iperf3Ends {
                client: ns_exec(&pa.namespace),
                server: ns_exec(&p.namespace),
                capture: Some((ns_exec(&p.namespace), p.interface.clone())),
                wire_port: Some((ns_exec(&p.namespace), p.interface.clone(), Side::Rx)),
                target_v4: spec.ipv4.map(IpAddr::V4),
                target_v6: spec.ipv6.map(IpAddr::V6),
            },
            _ => Iperf3Ends {
                client: ns_exec(&pa.namespace),
                server: plan.dut.exec.clone(),
                capture: match &plan.dut.exec {
                    Exec::Ssh { .. } => None,
                    e => Some((e.clone(), "any".into())),
                },
                // A NIC's transmit counters may count TSO super-packets as one: iperf3's figure.
                wire_port: None,
                target_v4: pa.gateway_v4.map(IpAddr::V4),
                target_v6: pa.gateway_v6.map(IpAddr::V6),
            },
        };
        Ok(tb)
    }
}
