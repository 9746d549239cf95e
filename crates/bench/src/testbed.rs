//! Where a run's traffic goes: the namespace lab the run builds and removes, or the real
//! interfaces a plan names (maybe inside namespaces), with the control planes a port plays
//! (a PPPoE access concentrator or subscriber) brought up before any traffic.
//!
//! The runner asks this module for three things: the engine ports of a UDP trial (and the
//! session its frames ride), where iperf3's client, server and SYN capture run, and a clean
//! teardown (sessions closed with PADT, the lab removed) at the end, on error and on Ctrl-C.

use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use emulate::pppoe::SessionInfo;
use emulate::softwire::SoftwireInfo;
use engine::port::PortSpec;
use engine::stream::Rate;
use engine::trial::TrialStream;
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::{BitsPerSec, Pps};

use crate::iperf3::wire_count::Side;

use crate::hooks::Exec;
use crate::ipoe_port::LeasePort;
use crate::isp::{SessionPort, SoftwirePort};
use crate::plan::{Case, Plan, Port, Topology};
use crate::results::{ConnDutCounters, ConnPhases, DutCounters, EngineFacts, SentStream};
use crate::search::{
    ConnOutcome, ConnRate, ConnTrial, FailedSpan, LineFraction, LoadOutcome, Outcome,
    ProbeDirection, RealTest, TeardownOutcome, TrialRequest,
};

pub use crate::spec::from_plan::UDP_DRAIN;

/// Seed of the RFC 4814 pseudorandom order in which connection trials open their tuples.
pub const CONN_SEED: u64 = 4814;

/// File in the run directory with the PPPoE session events and statistics, one JSON per line.
pub const SESSIONS_JSONL: &str = "sessions.jsonl";

pub use crate::iperf3_run::Iperf3Ends;

/// The ports of a run and what runs on them.
pub struct Testbed {
    lab: Option<lab::Lab>,
    /// The sending port.
    pub a: PortSpec,
    /// The receiving port (`None` when the DUT is the endpoint).
    pub b: Option<PortSpec>,
    /// Where iperf3 runs.
    pub iperf3: Iperf3Ends,
    sessions: Vec<SessionPort>,
    softwires: Vec<SoftwirePort>,
    /// IPoE ports (the ISP side of a gateway's DHCP WAN).
    leases: Vec<LeasePort>,
    /// The PPPoE session port A's frames ride, if A plays one.
    a_session: Option<SessionInfo>,
    /// The DS-Lite softwire port A's frames ride, if A plays a B4.
    a_softwire: Option<SoftwireInfo>,
    /// The PPPoE session port B plays (the access concentrator's, or our client's), into
    /// which the reverse stream of a bidirectional trial goes.
    b_session: Option<SessionInfo>,
    log: Option<File>,
    /// The real ports whose own drop counters are read around every UDP trial
    /// ([`Testbed::watch_tester_counters`]).
    watched: Vec<WatchedPort>,
    /// The lab's lock, held from before the lab is built until after it is removed (declared
    /// last: dropped after everything else).
    lock: Option<lab::LabLock>,
}

/// A real port whose own drop counters are read around every UDP trial: any rise makes the
/// trial tester-limited (`crate::iface::counters` says which count and why).
struct WatchedPort {
    port: String,
    iface: crate::iface::Iface,
    counters: Vec<String>,
}

fn ns_exec(ns: &Option<String>) -> Exec {
    match ns {
        Some(n) => Exec::Netns { name: n.clone() },
        None => Exec::Local,
    }
}

fn port_spec(p: &Port, label: &str) -> PortSpec {
    PortSpec {
        name: label.into(),
        ifname: p.interface.clone(),
        netns: p.namespace.clone(),
        ipv4: p.ipv4,
        ipv6: p.ipv6,
        next_hop_v4: p.gateway_v4,
        next_hop_v6: p.gateway_v6,
        cpus: Vec::new(),
        faces_dut: false,
        xdp_rx_mode: None,
    }
}

/// Whether `ifname` exists in namespace `ns` (or here).
pub(crate) fn interface_exists(ns: &Option<String>, ifname: &str) -> Result<(), String> {
    if let Some(n) = ns {
        if !lab::netns::exists(n) && !n.contains('/') {
            return Err(format!(
                "network namespace `{n}` does not exist (ip netns list)"
            ));
        }
    }
    let mut c = std::process::Command::new("ip");
    if let Some(n) = ns {
        c.args(["-n", n]);
    }
    let out = c
        .args(["link", "show", "dev", ifname])
        .output()
        .map_err(|e| format!("running ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "interface `{ifname}` not found{} (ip: {})",
            ns.as_ref()
                .map_or(String::new(), |n| format!(" in namespace `{n}`")),
            why.trim()
        ))
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
            problems.push((format!("ports.{}.interface", p.name), e));
        }
    }
    problems
}

impl Testbed {
    /// Builds the lab, or checks nothing more for real interfaces, then brings up every
    /// port's control plane and waits for its session. On any failure everything started so
    /// far is stopped again and nothing has been sent.
    pub fn up(plan: &Plan, dir: &Path, stop: &AtomicBool) -> Result<Testbed, String> {
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
    ) -> Result<Testbed, String> {
        let topo: lab::Topology = topology.parse().map_err(|e| format!("{e}"))?;
        // One lab, one user: a second run on this lab would tear it down under this one.
        let lock = lab::LabLock::acquire(name, purpose, lab::lock::USER_WAIT)
            .map_err(|e| e.to_string())?;
        // Rebuild: whatever a killed run left in the namespaces (servers, captures) goes.
        lab::down(name).map_err(|e| format!("lab {name}: {e}"))?;
        let l = lab::Lab::up(&lab::LabConfig {
            name: name.to_string(),
            topology: topo,
            profile: None,
        })
        .map_err(|e| format!("lab {name}: {e}"))?;
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
                Err(e.to_string())
            }
        }
    }

    fn interfaces(plan: &Plan, dir: &Path, stop: &AtomicBool) -> Result<Testbed, String> {
        let pa = plan.ports.first().ok_or("the plan has no ports")?;
        let pb = plan.ports.get(1);
        let mut a = port_spec(pa, &pa.name);
        let mut b = pb.map(|p| port_spec(p, &p.name));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(SESSIONS_JSONL))
            .map_err(|e| format!("{SESSIONS_JSONL}: {e}"))?;
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
                        return Err(e);
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
                        return Err(e);
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
                        return Err(e);
                    }
                }
            }
        }
        for (k, (i, timeout, gateway)) in dhcp.into_iter().enumerate() {
            let got = tb.leases[k].wait_up(timeout, stop);
            tb.flush_log();
            if let Err(e) = got {
                let _ = tb.down();
                return Err(format!("{e} (see {SESSIONS_JSONL} for what was tried)"));
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
                    return Err(e);
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
                    return Err(format!("{e} (see {SESSIONS_JSONL} for what was tried)"));
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

    /// The lab this run built, if any.
    pub fn lab(&self) -> Option<&lab::Lab> {
        self.lab.as_ref()
    }

    /// Reads the tester's own drop counters of these ports (the preflight's
    /// [`crate::port_link::PortLink::tester_counters`]) around every UDP trial from now on.
    pub fn watch_tester_counters(&mut self, links: &[crate::port_link::PortLink]) {
        self.watched = links
            .iter()
            .filter(|l| !l.tester_counters.is_empty())
            .map(|l| WatchedPort {
                port: l.port.clone(),
                iface: crate::iface::Iface {
                    interface: l.interface.clone(),
                    namespace: l.namespace.clone(),
                },
                counters: l.tester_counters.clone(),
            })
            .collect();
    }

    /// The watched ports' counters now (a port whose counters cannot be read: none).
    fn read_watched(&self) -> Vec<std::collections::BTreeMap<String, u64>> {
        self.watched
            .iter()
            .map(|w| w.iface.counters().unwrap_or_default())
            .collect()
    }

    /// The rises of the watched counters since `before` ([`Self::read_watched`]).
    fn watched_rises(
        &self,
        before: &[std::collections::BTreeMap<String, u64>],
    ) -> Vec<crate::results::TesterPortDrop> {
        let after = self.read_watched();
        self.watched
            .iter()
            .zip(before.iter().zip(&after))
            .flat_map(|(w, (b, a))| {
                crate::iface::counters::rises(&w.counters, b, a)
                    .into_iter()
                    .map(|(counter, frames)| crate::results::TesterPortDrop {
                        port: w.port.clone(),
                        counter,
                        frames,
                    })
            })
            .collect()
    }

    /// Writes the control planes' events since the last call to `sessions.jsonl`.
    fn flush_log(&mut self) {
        let Some(f) = self.log.as_mut() else { return };
        let lines = self
            .sessions
            .iter()
            .flat_map(|s| s.take_lines())
            .chain(self.softwires.iter().flat_map(|s| s.take_lines()))
            .chain(self.leases.iter().flat_map(|s| s.take_lines()));
        for line in lines {
            if let Ok(mut v) = serde_json::to_vec(&line) {
                v.push(b'\n');
                let _ = f.write_all(&v);
            }
        }
        let _ = f.sync_data();
    }

    /// One UDP trial of `case` from port A to port B: the engine's stream at
    /// `request.load` × the path's line rate ([`Plan::line_pps`], on the encapsulated frame),
    /// inside port A's PPPoE session when it plays one.
    pub fn udp_trial(
        &mut self,
        plan: &Plan,
        case: &Case,
        request: &TrialRequest,
        stop: &AtomicBool,
    ) -> Result<(Outcome, EngineFacts), String> {
        self.flush_log();
        self.sessions_back_up(plan, stop)?;
        self.leases_back_up(plan, stop)?;
        let drops_before = self.session_drop_counts();
        if let Some(s) = self.softwires.iter().find(|s| !s.is_up()) {
            return Err(format!(
                "the DS-Lite softwire on port {} is down (sessions.jsonl says why)",
                s.port
            ));
        }
        let b = self
            .b
            .as_ref()
            .ok_or("UDP test frames need a receiving port (the endpoint topology has none)")?;
        // The case at this request as a trial spec (an `mtu-probe` trial: its own frame size
        // and rate, one direction), built like `wirerate trial` builds its own: the 100 % is
        // the path's, computed once by the spec.
        let probe = request.probe;
        let spec = crate::spec::from_plan::udp_spec(plan, case, request)?;
        let frame_size = spec
            .streams
            .first()
            .map(|s| s.size)
            .ok_or("the case's trial spec has no stream")?;
        let carrier = self.port_a_carrier();
        let carrier = carrier.as_ref().map(|c| c as &dyn crate::spec::Carrier);
        let built = spec.build(&self.a, b, carrier)?;
        let max = built.max_pps.first().copied().unwrap_or(Pps(0.0));
        let mut sent = built.sent;
        let mut cfg = built.config;
        let reverse_probe = probe.is_some_and(|p| p.direction == ProbeDirection::Reverse);
        // Learning frames (below) are the forward stream's; a reverse probe's size may be one
        // the forward direction does not carry, so it learns with the smallest frame instead.
        let learning = if reverse_probe {
            let mut small = spec.clone();
            for s in &mut small.streams {
                s.size = FrameSize::Fixed {
                    bytes: wire::encap::min_frame_size(case.dims.ip),
                };
                s.direction = crate::spec::Direction::AToB;
            }
            small.build(&self.a, b, carrier)?.config
        } else {
            cfg.clone()
        };
        // RFC 2544 §14 bidirectional: the B→A copy of the forward stream (the spec built it
        // when port B is plain), inside port B's PPPoE session or softwire when it plays one.
        let far_end = self.far_end(plan);
        let mut reverse_dst_rewritten = false;
        // A probe runs one way: the reverse one alone, from port B.
        let with_reverse = probe.map_or(case.dims.bidirectional, |_| reverse_probe);
        if with_reverse {
            let forward = cfg.streams.first().ok_or("no forward stream")?;
            let reverse = match &far_end {
                FarEnd::Plain => None,
                FarEnd::Session(info, isp_side) => {
                    // A home gateway's NAPT turns the reply tuple back into the LAN host's.
                    reverse_dst_rewritten = *isp_side;
                    Some(reverse_in_session(
                        case.dims.ip,
                        frame_size,
                        forward,
                        &self.a,
                        b,
                        info,
                        *isp_side,
                    )?)
                }
                FarEnd::Lease(info) => {
                    // The reply to what the DUT's NAPT made of the forward stream, like an
                    // access concentrator's (learning frames first, below).
                    reverse_dst_rewritten = true;
                    Some(reverse_to_lease(
                        case.dims.ip,
                        frame_size,
                        forward,
                        &self.a,
                        b,
                        info,
                    )?)
                }
                FarEnd::Softwire(port) => {
                    // The AFTR learns the CPE's softwire from its tunnelled packets: forward
                    // frames first (RFC 2544 §11 learning), repeated until the CPE's B4 is
                    // heard from or the port's `timeout` (the CPE may still be coming up).
                    let timeout = plan
                        .ports
                        .get(1)
                        .and_then(|p| p.dslite.as_ref())
                        .map_or(Duration::from_secs(10), |d| d.timeout);
                    let end = std::time::Instant::now() + timeout;
                    while self.softwire_of(port).is_none()
                        && std::time::Instant::now() < end
                        && !stop.load(std::sync::atomic::Ordering::SeqCst)
                    {
                        learn(&learning, stop)?;
                        if self.softwire_of(port).is_none() {
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                    let info = self.softwire_of(port).ok_or_else(|| {
                        format!("DS-Lite on port {port}: no B4 sent anything through its softwire within {:.0} s of learning frames, so the reverse stream has no tunnel to enter; nothing was measured (is the DUT's B4 up, and its AFTR address this port's?)", timeout.as_secs_f64())
                    })?;
                    let b4_side = !self.softwire_is_aftr(port);
                    Some(reverse_in_softwire(
                        case.dims.ip,
                        frame_size,
                        forward,
                        &self.a,
                        b,
                        &info,
                        b4_side,
                    )?)
                }
            };
            // The reverse direction through a NAPT needs the mapping the forward direction
            // creates: learning frames, as RFC 2544 §11 asks, so its first frames are not lost.
            if reverse_dst_rewritten {
                learn(&learning, stop)?;
            }
            match reverse {
                Some(r) => {
                    if let Some(f) = sent.first() {
                        sent.push(sent_of_reverse(f, &r));
                    }
                    cfg.streams.push(r)
                }
                None if cfg.streams.len() < 2 => {
                    return Err(format!("{}: port B plays a session the testbed has no headers of, so the reverse stream has nothing to ride; nothing was measured", case.id));
                }
                None => {}
            }
            if reverse_probe {
                cfg.streams.remove(0);
                if !sent.is_empty() {
                    sent.remove(0);
                }
            }
        }
        // A PPPoE session or DS-Lite softwire on either port means the DUT encapsulates or
        // decapsulates on the way (a CPE's LAN→WAN frames arrive in its PPPoE session): the
        // receiver checks lengths, checksums, fragments, destination, sequence and timestamp,
        // but not the header stack the frames were sent with.
        if plan
            .ports
            .iter()
            .take(2)
            .any(|p| p.pppoe.is_some() || p.dslite.is_some() || p.ipoe.is_some())
        {
            for s in &cfg.streams {
                let base = cfg.expect_of(&s.config);
                let e = engine::validate::Expect {
                    shape: None,
                    dst: base
                        .dst
                        .filter(|_| !(reverse_dst_rewritten && s.tx_port == 1)),
                    ..base
                };
                cfg.expect.push((s.config.id, e));
            }
        }
        if probe.is_some() {
            let sessions = [self.a_session, self.b_session];
            if let Some(why) = crate::mtu_probe::unsendable(&cfg)
                .or_else(|| crate::mtu_probe::above_session_mru(&cfg, &sessions))
            {
                return Ok(crate::mtu_probe::not_sent(request, why));
            }
            // RFC 2544 §11 learning before a forward probe, in the smallest frame: the path's
            // neighbours resolved and a tunnel up, so a probe's frames are lost only for their
            // size (the reverse direction learned above).
            if !reverse_probe {
                learn(&learning, stop)?;
            }
        }
        self.place_receivers(&mut cfg)?;
        let before = self.dut_sample();
        let ports_before = self.read_watched();
        let report = crate::spec::execute(&cfg, stop).map_err(|e| format!("engine trial: {e}"))?;
        let after = self.dut_sample();
        let tester_port_drops = self.watched_rises(&ports_before);
        let facts = EngineFacts {
            backend: report.backend.name().to_string(),
            note: report.backend_note.clone(),
            sent: report.streams.iter().map(|s| s.tx.sent).sum(),
            slipped: report.streams.iter().map(|s| s.tx.slipped).sum(),
            refused_by_dut: report.streams.iter().map(|s| s.tx.refused_by_peer).sum(),
            max_catch_up: report
                .streams
                .iter()
                .map(|s| s.tx.max_debt)
                .max()
                .unwrap_or(0),
            invalid: {
                let mut t = engine::validate::InvalidCounts::default();
                report.streams.iter().for_each(|s| t.merge(&s.rx.invalid));
                t
            },
            dut: match (before, after) {
                (Some(b), Some(a)) => Some(dut_delta(&b, &a, with_reverse && !reverse_probe)),
                _ => None,
            },
            per_direction: crate::trial::per_direction(&report.streams, max),
            session_drops: self.session_drops_since(&drops_before),
            streams: sent,
            tester_port_drops,
        };
        let mut o = crate::trial::outcome(request, &report.streams, max);
        if let (Some(c), Some(r)) = (cfg.streams.first(), report.streams.first()) {
            o.intended = crate::trial::intended_with_gaps(o.intended, &c.config, &r.tx);
        }
        let sent = report.streams.first().map_or(0, |s| s.tx.sent);
        if let Some(p) = probe {
            // A probe's load is a fraction of its own rate.
            let achieved = report.streams.first().map_or(0.0, |s| s.tx.achieved_pps);
            if sent > 1 && p.pps > 0 {
                o.offered = LineFraction(achieved / f64::from(p.pps));
            }
        }
        Ok((o, facts))
    }

    /// Every drop so far of each port that can lose its uplink: PPPoE sessions, then IPoE
    /// leases.
    fn all_drops(&self) -> Vec<Vec<crate::results::SessionDrop>> {
        self.sessions
            .iter()
            .map(|s| s.drops())
            .chain(self.leases.iter().map(|l| l.drops()))
            .collect()
    }

    /// How many session (and lease) drops each such port has seen so far.
    fn session_drop_counts(&self) -> Vec<usize> {
        self.all_drops().iter().map(Vec::len).collect()
    }

    /// The session drops since `before` ([`Self::session_drop_counts`]).
    fn session_drops_since(&self, before: &[usize]) -> Vec<crate::results::SessionDrop> {
        self.all_drops()
            .into_iter()
            .zip(before)
            .flat_map(|(d, &n)| d.into_iter().skip(n))
            .collect()
    }

    /// Waits for every IPoE port without a lease to get one again (the gateway rebooted, or
    /// let its lease run out), as long as the port's `timeout`; the run stops otherwise.
    fn leases_back_up(&mut self, plan: &Plan, stop: &AtomicBool) -> Result<(), String> {
        for k in 0..self.leases.len() {
            if self.leases[k].lease().is_some() {
                continue;
            }
            let port = self.leases[k].port.clone();
            let timeout = plan
                .ports
                .iter()
                .find(|p| p.name == port)
                .and_then(|p| p.ipoe.as_ref())
                .map_or(Duration::from_secs(30), |c| c.timeout);
            let got = self.leases[k].wait_up(timeout, stop);
            self.flush_log();
            got.map_err(|e| format!("the IPoE lease on port {port} ended (sessions.jsonl says how) and no new one came: {e}; the run stops here, its finished trials are kept"))?;
        }
        Ok(())
    }

    /// Waits for every PPPoE session that went down to come back (#14 item 5): a DUT that
    /// dropped its uplink during a trial redials, and the next trial rides its new session.
    /// A session that does not come back within the port's `timeout` stops the run with the
    /// reason; the finished trials are kept.
    fn sessions_back_up(&mut self, plan: &Plan, stop: &AtomicBool) -> Result<(), String> {
        for k in 0..self.sessions.len() {
            let port = self.sessions[k].port.clone();
            let index = plan.ports.iter().position(|p| p.name == port);
            if self.sessions[k].is_up() {
                // Redialled already (between two trials): ride the new session.
                if let Some(info) = self.sessions[k].newer_session() {
                    match index {
                        Some(0) => self.a_session = Some(info),
                        Some(_) => self.b_session = Some(info),
                        None => {}
                    }
                }
                continue;
            }
            let timeout = index
                .and_then(|i| plan.ports[i].pppoe.as_ref())
                .map_or(Duration::from_secs(30), |c| c.timeout);
            let got = self.sessions[k].wait_up(timeout, stop);
            self.flush_log();
            let info = got.map_err(|e| {
                format!(
                    "the PPPoE session on port {port} went down (sessions.jsonl says why) and did not come back: {e}; the run stops here, its finished trials are kept"
                )
            })?;
            match index {
                Some(0) => self.a_session = Some(info),
                Some(_) => self.b_session = Some(info),
                None => {}
            }
        }
        Ok(())
    }

    /// What carries port A's frames when it plays a PPPoE session or DS-Lite B4 (`None`: a
    /// plain port, whose frames the spec addresses from the ports alone).
    fn port_a_carrier(&self) -> Option<PortACarrier> {
        match (self.a_session, &self.a_softwire) {
            (None, None) => None,
            (session, softwire) => Some(PortACarrier {
                session,
                softwire: *softwire,
            }),
        }
    }

    /// What port B plays: where the reverse stream of a bidirectional trial starts.
    fn far_end(&self, plan: &Plan) -> FarEnd {
        let Some(pb) = plan.ports.get(1) else {
            return FarEnd::Plain;
        };
        if let (Some(info), Some(cfg)) = (self.b_session, &pb.pppoe) {
            return FarEnd::Session(info, cfg.role == crate::plan::PppoeRole::Server);
        }
        if pb.dslite.is_some() {
            return FarEnd::Softwire(pb.name.clone());
        }
        if pb.ipoe.is_some() {
            if let Some(info) = self
                .leases
                .iter()
                .find(|l| l.port == pb.name)
                .and_then(|l| l.lease())
            {
                return FarEnd::Lease(info);
            }
        }
        FarEnd::Plain
    }

    /// Before TCP through an AFTR with an Internet side: waits (at most the port's `timeout`)
    /// until a B4 has been heard from, so that iperf3 does not race the CPE's WAN coming up
    /// (the AFTR does not wait at the start of a run: a softwire begins with the B4's first
    /// packet). A B4 that stays silent until traffic flows is then met by iperf3's own SYN.
    fn await_softwires(&self, plan: &Plan, stop: &AtomicBool) {
        for s in self
            .softwires
            .iter()
            .filter(|s| s.is_aftr() && s.internet.is_some())
        {
            let timeout = plan
                .ports
                .iter()
                .find(|p| p.name == s.port)
                .and_then(|p| p.dslite.as_ref())
                .map_or(Duration::from_secs(10), |d| d.timeout);
            let end = std::time::Instant::now() + timeout;
            while s.softwire().is_none()
                && std::time::Instant::now() < end
                && !stop.load(std::sync::atomic::Ordering::SeqCst)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The softwire the DS-Lite machine of port `port` sends into, once it knows one.
    fn softwire_of(&self, port: &str) -> Option<SoftwireInfo> {
        self.softwires
            .iter()
            .find(|s| s.port == port)
            .and_then(|s| s.softwire())
    }

    fn softwire_is_aftr(&self, port: &str) -> bool {
        self.softwires.iter().any(|s| s.port == port && s.is_aftr())
    }

    /// One two-phase connection trial of `case` (engine::nat): port A opens
    /// `trial.connections` connections at `trial.rate`, port B learns their tuples and answers
    /// each. The lab DUT's connection table is emptied first (`table_size`: the cap to restart,
    /// lab::conntrack) and its counters are read at the start, after the preliminary phase
    /// and at the end.
    pub fn conn_trial(
        &mut self,
        case: &Case,
        trial: &ConnTrial,
        table_size: Option<u64>,
        backend: engine::trial::Backend,
        stop: &AtomicBool,
    ) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), String> {
        let lab = self
            .lab
            .as_ref()
            .ok_or("connection trials need the lab's DUT (its table is emptied between trials)")?;
        let b = self
            .b
            .as_ref()
            .ok_or("connection trials need a responder port (the endpoint topology has none)")?;
        lab.reset_conn_table(table_size)
            .map_err(|e| format!("emptying the DUT's connection table: {e}"))?;
        let mut cfg = engine::nat::ConnTrialConfig::new(self.a.clone(), b.clone(), case.dims.ip);
        cfg.frame_size = case.frame().and_then(|f| f.fixed()).unwrap_or(64);
        cfg.connections = trial.connections;
        cfg.rate_pps = trial.rate.0;
        cfg.validation_rate_pps = trial.validation_rate.0;
        cfg.gap = trial.gap;
        cfg.drain = UDP_DRAIN;
        // RFC 4814 pseudorandom tuples (RFC 9693 asks for them), the same order every trial.
        cfg.permutation_seed = Some(CONN_SEED);
        cfg.load = match trial.real {
            Some(RealTest::Load { pps, duration }) => Some(engine::nat::LoadPhase {
                backend,
                ..engine::nat::LoadPhase::new(pps, duration)
            }),
            _ => None,
        };
        let start = lab.conn_stats().ok();
        let ports_before = self.dut_sample();
        let (mut mid, mut ports_mid) = (None, None);
        let r = engine::nat::run(&cfg, stop, &mut || {
            mid = lab.conn_stats().ok();
            ports_mid = self.dut_sample();
        })
        .map_err(|e| format!("connection trial: {e}"))?;
        let end = lab.conn_stats().ok();
        let ports_end = self.dut_sample();
        // RFC 9693's tear-down: right after the validation (and the counters), delete the
        // whole table and time it from inside the DUT's namespace.
        let teardown = match trial.real {
            Some(RealTest::Teardown) => {
                let t = lab
                    .teardown_conn_table()
                    .map_err(|e| format!("tearing down the DUT's connections: {e}"))?;
                Some(TeardownOutcome {
                    entries_before: t.entries_before,
                    entries_after: t.entries_after,
                    delete_ns: t.delete_ns,
                    empty_ns: t.empty_ns,
                })
            }
            _ => None,
        };
        let load = r.load.as_ref().map(|l| LoadOutcome {
            intended_pps: l.forward.intended_pps,
            forward_sent: l.forward.sent,
            forward_received: l.forward_received,
            forward_pps: l.forward.achieved_pps,
            reverse_sent: l.reverse.sent,
            reverse_received: l.reverse_received,
            reverse_pps: l.reverse.achieved_pps,
            dut_entries: end.map(|e| e.entries),
            misdirected: l.forward_misdirected + l.reverse_misdirected,
            tester_drops: l.rx_ring_drops,
            engine: Some(match l.engine {
                engine::nat::LoadEngine::AfPacket => crate::search::LoadBackend::AfPacket,
                engine::nat::LoadEngine::Xdp => crate::search::LoadBackend::Xdp,
            }),
            refused_by_dut: l.refused_by_dut,
            short_connections: l
                .forward_short_connections
                .zip(l.reverse_short_connections)
                .map(|(f, r)| f + r),
            sender_priority: l.sender_priority.map(|p| {
                use crate::search::LoadPriority as P;
                use engine::nat::priority::SenderPriority as S;
                match p {
                    S::Fifo { priority } => P::Fifo { priority },
                    S::Nice { nice } => P::Nice { nice },
                    S::Unraised => P::Unraised,
                }
            }),
        });
        let dut = match (start, mid, end) {
            (Some(s), Some(m), Some(e)) => Some(ConnDutCounters {
                preliminary: m.since(&s),
                trial: e.since(&s),
                ports: match (&ports_before, &ports_mid) {
                    (Some(b), Some(a)) => Some(dut_delta(b, a, false)),
                    _ => None,
                },
                load_ports: match (&ports_mid, &ports_end, &load) {
                    (Some(b), Some(a), Some(_)) => Some(dut_delta(b, a, true)),
                    _ => None,
                },
            }),
            _ => None,
        };
        let outcome = ConnOutcome {
            connections: trial.connections,
            intended_rate: trial.rate,
            offered_rate: ConnRate(r.preliminary.achieved_pps),
            preliminary_sent: r.preliminary.sent,
            preliminary_received: r.learned,
            validation_sent: r.validation.sent,
            validation_received: r.validated,
            failed: r.failed.map(|f| FailedSpan {
                count: f.count,
                first: f.first,
                last: f.last,
            }),
            teardown,
            load,
        };
        let phases = ConnPhases {
            preliminary_sent: r.preliminary.sent,
            preliminary_pps: r.preliminary.achieved_pps,
            preliminary_max_late_ns: r.preliminary.max_late_ns,
            preliminary_refused_by_dut: r.preliminary.refused_by_peer,
            learned: r.learned,
            translated: r.translated,
            learned_duplicates: r.learned_duplicates,
            validation_sent: r.validation.sent,
            validation_pps: r.validation.achieved_pps,
            validation_max_late_ns: r.validation.max_late_ns,
            validated: r.validated,
            misdirected: r.misdirected,
            validated_duplicates: r.validated_duplicates,
            tester_rx_drops: r.rx_ring_drops,
        };
        Ok((outcome, phases, dut))
    }

    /// Runs `f` (an iperf3 run) and returns the lab DUT's counters over it, both ports both
    /// ways (`None` without a lab DUT or when they could not be read).
    pub fn with_dut_counters<T>(&self, f: impl FnOnce() -> T) -> (T, Option<DutCounters>) {
        let before = self.dut_sample();
        let out = f();
        let after = self.dut_sample();
        let counters = match (before, after) {
            (Some(b), Some(a)) => Some(dut_delta(&b, &a, true)),
            _ => None,
        };
        (out, counters)
    }

    /// The lab DUT's counters now (`None` without a lab DUT, or if reading them failed: the
    /// trial's figure then stands without the cross-check).
    /// The XDP receive mode of the ports facing the lab's DUT, for the DUT as it is now: the
    /// run switches its fast path between cases (`crate::trial::lab_receive_mode`).
    fn place_receivers(&self, cfg: &mut engine::trial::TrialConfig) -> Result<(), String> {
        let Some(l) = &self.lab else {
            return Ok(());
        };
        let mode = crate::trial::lab_receive_mode(l).map_err(|e| e.to_string())?;
        for p in cfg.ports.iter_mut().filter(|p| p.faces_dut) {
            p.xdp_rx_mode = mode;
        }
        Ok(())
    }

    fn dut_sample(&self) -> Option<lab::DutSample> {
        self.lab
            .as_ref()
            .and_then(|l| l.dut_sample().ok().flatten())
    }

    /// Closes the sessions (PADT), records their statistics, removes the lab.
    pub fn down(mut self) -> Result<(), String> {
        self.flush_log();
        let mut errors = Vec::new();
        let mut stats = Vec::new();
        for s in &mut self.sessions {
            match s.finish() {
                Ok(v) => stats.push(v),
                Err(e) => errors.push(e),
            }
        }
        for s in std::mem::take(&mut self.softwires) {
            match s.finish() {
                Ok(v) => stats.push(v),
                Err(e) => errors.push(e),
            }
        }
        for s in &mut self.leases {
            match s.finish() {
                Ok(v) => stats.push(v),
                Err(e) => errors.push(e),
            }
        }
        self.flush_log();
        if let Some(f) = self.log.as_mut() {
            for v in stats {
                if let Ok(mut b) = serde_json::to_vec(&v) {
                    b.push(b'\n');
                    let _ = f.write_all(&b);
                }
            }
            let _ = f.sync_data();
        }
        if let Some(l) = self.lab.take() {
            if let Err(e) = l.down() {
                errors.push(format!("removing the lab: {e}"));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

/// Port A's PPPoE session or DS-Lite softwire, into which its (forward) frames go.
struct PortACarrier {
    session: Option<SessionInfo>,
    softwire: Option<SoftwireInfo>,
}

impl crate::spec::Carrier for PortACarrier {
    fn carry(&self, frame: &mut StreamSpec, tx_port: usize) -> Result<(), String> {
        if tx_port != 0 {
            return Ok(());
        }
        if let Some(info) = &self.session {
            info.apply_to(frame);
        } else if let Some(info) = &self.softwire {
            info.apply_to(frame, true);
        }
        Ok(())
    }
}

/// The record of a reverse stream built inside port B's session or softwire: the forward
/// stream's, with the reverse frame's own headers, addresses and lengths.
fn sent_of_reverse(forward: &SentStream, r: &TrialStream) -> SentStream {
    let mut s = forward.clone();
    s.stream_id = r.config.id;
    std::mem::swap(&mut s.tx_port, &mut s.rx_port);
    s.lengths = r
        .config
        .frames
        .iter()
        .map(|t| (t.len() + wire::encap::FCS) as u32)
        .collect();
    if let Some(bytes) = r.config.frames.first().map(|t| t.bytes()) {
        if let Ok(d) = wire::dissect::dissect(bytes) {
            s.encap.pppoe = d.pppoe_session.is_some();
            s.encap.dslite = d.tunnel.is_some();
            s.src = d.src;
            s.dst = d.dst;
        }
    }
    if let Some((src, dst)) = forward_ports(r) {
        s.src_port = src;
        s.dst_port = dst;
    }
    s
}

/// What port B plays, for the reverse stream of a bidirectional trial.
enum FarEnd {
    /// A plain port: the reverse stream is plain and resolves its next hop.
    Plain,
    /// A PPPoE session: B is the access concentrator (`true`) or a subscriber.
    Session(SessionInfo, bool),
    /// A DS-Lite AFTR or B4 (the plan's name of port B).
    Softwire(String),
    /// An IPoE port: the gateway's lease.
    Lease(emulate::ipoe::LeaseInfo),
}

/// How many forward frames [`learn`] sends, and how fast.
const LEARNING_FRAMES: u64 = 20;
const LEARNING_PPS: f64 = 1000.0;

/// RFC 2544 §11 learning before a bidirectional trial through an emulated port: a few frames
/// of the forward stream only, so a CPE's NAPT holds the mapping the reverse stream's frames
/// are the reply to, and an AFTR has heard from the CPE's B4 (its softwire). Sent on
/// AF_PACKET, whose receiver leaves the frames to the port's control plane too (an XDP
/// receiver would take them from under the AFTR). What arrives is not counted anywhere.
fn learn(cfg: &engine::trial::TrialConfig, stop: &AtomicBool) -> Result<(), String> {
    let mut l = cfg.clone();
    l.streams.truncate(1);
    if let Some(s) = l.streams.first_mut() {
        s.config.rate = Rate::Pps(LEARNING_PPS);
        s.config.limit = engine::stream::Limit::Frames(LEARNING_FRAMES);
    }
    l.backend = engine::trial::Backend::AfPacket;
    l.drain = Duration::from_millis(50);
    // The forward frames arrive re-encapsulated; the learning counts nothing, so accept any.
    l.expect = l
        .streams
        .iter()
        .map(|s| (s.config.id, engine::validate::Expect::default()))
        .collect();
    engine::trial::run(&l, stop).map_err(|e| format!("learning frames before the trial: {e}"))?;
    Ok(())
}

/// The reverse stream of a bidirectional trial inside port B's PPPoE session: the mirror of
/// the forward stream's tuple. From an access concentrator (`isp_side`): from B's session
/// address and the forward destination port to the subscriber's IPCP address (the CPE's WAN
/// address) and the forward source port — the reply a CPE's NAPT maps back to the LAN host
/// that sent the forward stream (to port A's address when IPCP gave the peer none). From a
/// subscriber: to port A's address, behind the access concentrator.
fn reverse_in_session(
    ip: IpVersion,
    frame_size: FrameSize,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
    info: &SessionInfo,
    isp_side: bool,
) -> Result<TrialStream, String> {
    let mut encap = EncapSpec::plain(ip);
    encap.pppoe = true;
    let mut spec = mirrored(encap, forward, a, b)?;
    if let (true, Some(peer), IpVersion::V4) = (isp_side, info.negotiated.peer_ipv4, ip) {
        spec.dst_ip = peer.into();
    }
    info.apply_to(&mut spec);
    reverse_stream(forward, &spec, frame_size, "PPPoE")
}

/// The reverse stream from an IPoE port: plain IPv4 from our gateway address and the forward
/// destination port to the gateway's leased address and the forward source port (the reply
/// its NAPT maps back to port A), at the MAC of the lease.
fn reverse_to_lease(
    ip: IpVersion,
    frame_size: FrameSize,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
    info: &emulate::ipoe::LeaseInfo,
) -> Result<TrialStream, String> {
    let mut spec = mirrored(EncapSpec::plain(ip), forward, a, b)?;
    info.apply_to(&mut spec);
    reverse_stream(forward, &spec, frame_size, "IPoE")
}

/// The reverse stream inside port B's DS-Lite softwire: inner IPv4 from B (or the B4's
/// 192.0.0.2 when B plays the B4) to port A's address, in IPv6 between the tunnel's ends.
fn reverse_in_softwire(
    ip: IpVersion,
    frame_size: FrameSize,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
    info: &SoftwireInfo,
    b4_side: bool,
) -> Result<TrialStream, String> {
    let mut encap = EncapSpec::plain(ip);
    encap.dslite = true;
    let mut spec = mirrored(encap, forward, a, b)?;
    info.apply_to(&mut spec, b4_side);
    reverse_stream(forward, &spec, frame_size, "DS-Lite")
}

/// A B→A stream spec: B's address to A's, the forward stream's UDP ports swapped.
fn mirrored(
    encap: EncapSpec,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
) -> Result<StreamSpec, String> {
    let ip = encap.ip;
    let pick = |p: &PortSpec| -> Option<IpAddr> {
        match ip {
            IpVersion::V4 => p.ipv4.map(IpAddr::V4),
            IpVersion::V6 => p.ipv6.map(IpAddr::V6),
        }
    };
    let mut spec = StreamSpec::new(encap);
    spec.stream_id = 2;
    if let Some(src) = pick(b) {
        spec.src_ip = src;
    }
    spec.dst_ip = pick(a).ok_or_else(|| format!("port {} has no {ip} address", a.name))?;
    let (src_port, dst_port) = forward_ports(forward).unwrap_or((1024, 9));
    spec.src_port = dst_port;
    spec.dst_port = src_port;
    spec.tos = forward_tos(forward).unwrap_or(0);
    Ok(spec)
}

/// The ToS (IPv4) or traffic class (IPv6) byte of the forward stream's test packet, which the
/// reverse stream carries too (`run.tos`, a block's `tos`).
fn forward_tos(forward: &TrialStream) -> Option<u8> {
    let bytes = forward.config.frames.first()?.bytes();
    let d = wire::dissect::dissect(bytes).ok()?;
    let ip = bytes.get(d.ip_offset..)?;
    match d.src {
        IpAddr::V4(_) => ip.get(1).copied(),
        IpAddr::V6(_) => Some((ip.first()? << 4) | (ip.get(1)? >> 4)),
    }
}

/// The UDP source and destination ports of the forward stream's first frame.
fn forward_ports(forward: &TrialStream) -> Option<(u16, u16)> {
    let bytes = forward.config.frames.first()?.bytes();
    let d = wire::dissect::dissect(bytes).ok()?;
    let udp = bytes.get(d.udp_offset?..)?;
    Some((
        u16::from_be_bytes([*udp.first()?, *udp.get(1)?]),
        u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]),
    ))
}

/// The reverse stream from `spec`: the forward stream's rate and length, stream id 2, sent by
/// port B (index 1) to port A, with the session's or tunnel's MACs as they are.
fn reverse_stream(
    forward: &TrialStream,
    spec: &StreamSpec,
    frame_size: FrameSize,
    inside: &str,
) -> Result<TrialStream, String> {
    // One template per size of the forward stream's (the IMIX's three), its weights kept.
    let frames = frame_size
        .parts(spec.encap.ip)
        .into_iter()
        .map(|(size, _)| {
            FrameTemplate::new(spec, size)
                .map_err(|e| format!("frame size {size} in {inside}: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut config = forward.config.clone();
    config.id = 2;
    config.frames = frames;
    config.rewrite_macs = false;
    Ok(TrialStream {
        config,
        tx_port: 1,
        rx_port: 0,
    })
}

/// The DUT's counters over a trial: ingress is the port facing A (both ports when the trial
/// runs both ways), egress the port facing B (likewise).
fn dut_delta(before: &lab::DutSample, after: &lab::DutSample, both_ways: bool) -> DutCounters {
    let d = |name: &str, f: fn(&lab::stats::IfaceStats) -> u64| -> u64 {
        match (before.iface(name), after.iface(name)) {
            (Some(b), Some(a)) => f(a).saturating_sub(f(b)),
            _ => 0,
        }
    };
    let (ingress, egress): (&[&str], &[&str]) = if both_ways {
        (&["wr-dut-a", "wr-dut-b"], &["wr-dut-a", "wr-dut-b"])
    } else {
        (&["wr-dut-a"], &["wr-dut-b"])
    };
    let (cpu_busy_ticks, cpu_total_ticks) = match (&before.dut_cpu, &after.dut_cpu) {
        (Some(b), Some(a)) => (
            a.busy().saturating_sub(b.busy()),
            a.total().saturating_sub(b.total()),
        ),
        _ => (0, 0),
    };
    DutCounters {
        ingress_rx: ingress.iter().map(|n| d(n, |i| i.rx_packets)).sum(),
        ingress_drops: ingress.iter().map(|n| d(n, |i| i.rx_dropped)).sum(),
        backlog_drops: after.softnet_dropped.saturating_sub(before.softnet_dropped),
        tester_backlog_drops: after
            .tester_softnet_dropped
            .saturating_sub(before.tester_softnet_dropped),
        egress_tx: egress.iter().map(|n| d(n, |i| i.tx_packets)).sum(),
        cpu_busy_ticks,
        cpu_total_ticks,
    }
}

impl crate::executor::TrialExecutor for Testbed {
    fn dut_switches(&self) -> Option<Box<dyn crate::executor::DutSwitches>> {
        self.lab()
            .cloned()
            .map(|l| Box::new(crate::executor::LabSwitches(l)) as Box<_>)
    }

    fn udp_trial(
        &mut self,
        plan: &Plan,
        case: &Case,
        request: &TrialRequest,
        stop: &AtomicBool,
    ) -> Result<(Outcome, EngineFacts), String> {
        Testbed::udp_trial(self, plan, case, request, stop)
    }

    fn conn_trial(
        &mut self,
        case: &Case,
        trial: &ConnTrial,
        table_size: Option<u64>,
        backend: engine::trial::Backend,
        stop: &AtomicBool,
    ) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), String> {
        Testbed::conn_trial(self, case, trial, table_size, backend, stop)
    }

    fn tcp_trial(
        &mut self,
        case: &Case,
        plan: &Plan,
        stop: &AtomicBool,
    ) -> (
        Result<crate::executor::TcpRun, String>,
        Option<crate::results::DutCounters>,
    ) {
        self.await_softwires(plan, stop);
        self.with_dut_counters(|| crate::iperf3_run::iperf3_trial(&self.iperf3, case, plan, stop))
    }

    fn down(self: Box<Self>) -> Result<(), String> {
        Testbed::down(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emulate::ppp::link::Negotiated;
    use engine::stream::{Limit, Rate, StreamConfig};
    use std::net::{Ipv4Addr, Ipv6Addr};
    use wire::ethernet::MacAddr;

    const AC_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xac]);
    const CPE_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xce]);

    fn ports() -> (PortSpec, PortSpec) {
        let mut a = PortSpec::new("lan", "eth1");
        a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        let mut b = PortSpec::new("wan", "eth2");
        b.ipv4 = Some(Ipv4Addr::new(198, 51, 100, 1));
        (a, b)
    }

    /// The plain forward stream A→B a UDP trial sends (1024 → 9).
    fn forward(a: &PortSpec, b: &PortSpec, size: u32) -> TrialStream {
        let mut spec = StreamSpec::new(EncapSpec::plain(IpVersion::V4));
        spec.stream_id = 1;
        spec.src_ip = a.ipv4.unwrap().into();
        spec.dst_ip = b.ipv4.unwrap().into();
        spec.dst_port = 9;
        let t = FrameTemplate::new(&spec, size as usize).unwrap();
        TrialStream {
            config: StreamConfig::single(1, t, Rate::Pps(1234.0), Limit::DurationNs(1_000_000)),
            tx_port: 0,
            rx_port: 1,
        }
    }

    fn udp_ports(bytes: &[u8]) -> (u16, u16) {
        let d = wire::dissect::dissect(bytes).unwrap();
        let u = &bytes[d.udp_offset.unwrap()..];
        (
            u16::from_be_bytes([u[0], u[1]]),
            u16::from_be_bytes([u[2], u[3]]),
        )
    }

    #[test]
    fn the_reverse_stream_of_an_access_concentrator_is_the_napt_reply_inside_its_session() {
        let (a, b) = ports();
        let fwd = forward(&a, &b, 64);
        // The AC's view of the CPE's session: the CPE got 198.51.100.10 by IPCP.
        let info = SessionInfo {
            local_mac: AC_MAC,
            peer_mac: CPE_MAC,
            session_id: 0x4b9e,
            negotiated: Negotiated {
                our_mru: 1454,
                peer_mru: 1492,
                our_magic: 1,
                peer_magic: 2,
                auth: None,
                local_ipv4: Some(Ipv4Addr::new(198, 51, 100, 1)),
                peer_ipv4: Some(Ipv4Addr::new(198, 51, 100, 10)),
                dns: [None, None],
                local_interface_id: None,
                peer_interface_id: None,
            },
        };
        let r = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &info,
            true,
        )
        .unwrap();
        assert_eq!((r.tx_port, r.rx_port, r.config.id), (1, 0, 2));
        assert!(!r.config.rewrite_macs, "the session's MACs are the frame's");
        assert_eq!(r.config.rate, fwd.config.rate);
        assert_eq!(r.config.limit, fwd.config.limit);
        let bytes = r.config.frames[0].bytes();
        // The reference 64-byte frame plus 8 bytes of PPPoE and PPP, without the FCS.
        assert_eq!(bytes.len(), 64 + 8 - 4);
        assert_eq!(&bytes[0..6], &CPE_MAC.0);
        assert_eq!(&bytes[6..12], &AC_MAC.0);
        let d = wire::dissect::dissect(bytes).unwrap();
        assert_eq!(d.pppoe_session, Some(0x4b9e));
        assert_eq!(d.src, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)));
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 10)));
        assert_eq!(udp_ports(bytes), (9, 1024), "the forward tuple mirrored");
        // Without an IPCP address for the peer: to port A's own.
        let mut bare = info;
        bare.negotiated.peer_ipv4 = None;
        let r = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &bare,
            true,
        )
        .unwrap();
        let d = wire::dissect::dissect(r.config.frames[0].bytes()).unwrap();
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));
        // Port B as a subscriber sends to port A behind the access concentrator, not to the
        // concentrator's own IPCP address.
        let r = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &info,
            false,
        )
        .unwrap();
        let d = wire::dissect::dissect(r.config.frames[0].bytes()).unwrap();
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));
        assert_eq!(d.pppoe_session, Some(0x4b9e));
        // A size the session cannot carry as a template is an error naming it.
        let e = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 20 },
            &fwd,
            &a,
            &b,
            &info,
            true,
        )
        .unwrap_err();
        assert!(e.contains("frame size 20 in PPPoE"), "{e}");
    }

    #[test]
    fn the_reverse_stream_of_an_ipoe_port_goes_to_the_lease() {
        let (a, b) = ports();
        let fwd = forward(&a, &b, 1518);
        let info = emulate::ipoe::LeaseInfo {
            local_mac: AC_MAC,
            local: Ipv4Addr::new(198, 51, 100, 1),
            peer_mac: CPE_MAC,
            peer: Ipv4Addr::new(198, 51, 100, 10),
        };
        let r = reverse_to_lease(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 1518 },
            &fwd,
            &a,
            &b,
            &info,
        )
        .unwrap();
        assert_eq!((r.tx_port, r.rx_port, r.config.id), (1, 0, 2));
        assert!(!r.config.rewrite_macs, "the lease's MACs are the frame's");
        let bytes = r.config.frames[0].bytes();
        assert_eq!(bytes.len(), 1518 - 4, "plain: IPoE adds nothing");
        assert_eq!(
            (&bytes[0..6], &bytes[6..12]),
            (&CPE_MAC.0[..], &AC_MAC.0[..])
        );
        let d = wire::dissect::dissect(bytes).unwrap();
        assert_eq!(d.src, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)));
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 10)));
        assert_eq!(
            udp_ports(bytes),
            (9, 1024),
            "the NAPT's reply to the forward tuple"
        );
    }

    #[test]
    fn the_reverse_stream_of_an_aftr_or_b4_rides_the_softwire() {
        let (a, mut b) = ports();
        b.ipv4 = Some(Ipv4Addr::new(203, 0, 113, 2));
        let fwd = forward(&a, &b, 1478);
        let aftr: Ipv6Addr = "2001:db8:d::1".parse().unwrap();
        let b4: Ipv6Addr = "2001:db8:c::2".parse().unwrap();
        let info = SoftwireInfo {
            local_mac: AC_MAC,
            peer_mac: CPE_MAC,
            local: aftr,
            remote: b4,
            mtu: 1500,
            encap_limit: false,
        };
        let r = reverse_in_softwire(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 1478 },
            &fwd,
            &a,
            &b,
            &info,
            false,
        )
        .unwrap();
        let bytes = r.config.frames[0].bytes();
        // 1478 B is the largest reference frame whose tunnelled packet is 1500 bytes.
        assert_eq!(bytes.len(), 1478 + 40 - 4);
        let d = wire::dissect::dissect(bytes).unwrap();
        assert_eq!(d.tunnel, Some((aftr, b4)));
        assert_eq!(d.src, IpAddr::V4(Ipv4Addr::new(203, 0, 113, 2)));
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));
        assert_eq!(udp_ports(bytes), (9, 1024));
        assert_eq!((r.tx_port, r.rx_port, r.config.rewrite_macs), (1, 0, false));
        // Port B playing the B4 sends from its 192.0.0.2 (RFC 6333 §5.7).
        let r = reverse_in_softwire(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &info,
            true,
        )
        .unwrap();
        let d = wire::dissect::dissect(r.config.frames[0].bytes()).unwrap();
        assert_eq!(d.src, IpAddr::V4(emulate::dslite::B4_IPV4));
    }
}
