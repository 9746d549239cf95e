//! One UDP trial on the testbed: the headers of what its ports play (port A's session or
//! softwire, port B's session, lease, softwire or BR, which an AFTR or BR learns from learning
//! frames), the trial's streams assembled from them ([`crate::trial_streams::assemble`]), the
//! engine run, and the counters read around it (the DUT's, the tester ports', the sessions').

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use emulate::pppoe::SessionInfo;
use emulate::softwire::SoftwireInfo;
use engine::trial::TrialConfig;

use crate::error::BenchError;
use crate::plan::{Case, Plan};
use crate::port_error::PortError;
use crate::results::EngineFacts;
use crate::search::{Outcome, ProbeDirection, TrialRequest};
use crate::trial_streams::{self, ARides, AssemblyError, BReplies, PortHeaders};

use super::lan_watch::LanWatchError;
use super::{dut_delta, Testbed, WatchedPort};

/// Why [`Testbed::udp_trial`] measured nothing; the runner records the trial as failed with
/// this message (the texts are the ones runs printed before the type).
#[derive(Debug)]
pub enum UdpTrialError {
    /// A PPPoE session went down and did not come back within its port's `timeout`.
    SessionLost { port: String, source: PortError },
    /// An IPoE lease ended and no new one came within its port's `timeout`.
    LeaseLost { port: String, source: PortError },
    /// A DS-Lite softwire the testbed plays is down.
    SoftwireDown { port: String },
    /// The endpoint topology: nothing receives the frames.
    NoReceivingPort,
    /// The trial's streams could not be assembled.
    Assembly(AssemblyError),
    /// No B4 was heard from through port `port`'s AFTR within `timeout` of learning frames.
    NoB4 { port: String, timeout: Duration },
    /// The plan's port B has no MAP-E BR (what port B plays changed under the run).
    NoBr,
    /// Port `port`'s MAP-E rule is not one.
    MapeRule { port: String, source: wire::Error },
    /// Port `port` (a BR) has no IPv4 address the forward stream goes to.
    NoForwardAddress { port: String },
    /// The forward stream's frames carry no UDP ports.
    NoForwardPorts,
    /// No forward frame to `dst`:`dst_port` passed port `port`'s BR within `timeout`.
    NoBrPath {
        port: String,
        dst: std::net::Ipv4Addr,
        dst_port: u16,
        timeout: Duration,
    },
    /// Sending the learning frames failed.
    Learning(engine::Error),
    /// The lab DUT's XDP receive mode could not be read.
    ReceiveMode(lab::LabError),
    /// The LAN health watch failed around the trial.
    LanWatch(LanWatchError),
    /// The engine's trial failed.
    Engine(BenchError),
}

impl std::fmt::Display for UdpTrialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UdpTrialError::SessionLost { port, source } => write!(
                f,
                "the PPPoE session on port {port} went down (sessions.jsonl says why) and did not come back: {source}; the run stops here, its finished trials are kept"
            ),
            UdpTrialError::LeaseLost { port, source } => write!(
                f,
                "the IPoE lease on port {port} ended (sessions.jsonl says how) and no new one came: {source}; the run stops here, its finished trials are kept"
            ),
            UdpTrialError::SoftwireDown { port } => write!(
                f,
                "the DS-Lite softwire on port {port} is down (sessions.jsonl says why)"
            ),
            UdpTrialError::NoReceivingPort => f.write_str(
                "UDP test frames need a receiving port (the endpoint topology has none)",
            ),
            UdpTrialError::Assembly(e) => e.fmt(f),
            UdpTrialError::NoB4 { port, timeout } => write!(
                f,
                "DS-Lite on port {port}: no B4 sent anything through its softwire within {:.0} s of learning frames, so the reverse stream has no tunnel to enter; nothing was measured (is the DUT's B4 up, and its AFTR address this port's?)",
                timeout.as_secs_f64()
            ),
            UdpTrialError::NoBr => f.write_str("port B plays no MAP-E BR"),
            UdpTrialError::MapeRule { port, source } => {
                write!(f, "MAP-E BR on port {port}: {source}")
            }
            UdpTrialError::NoForwardAddress { port } => {
                write!(f, "port {port} has no IPv4 address for the forward stream")
            }
            UdpTrialError::NoForwardPorts => f.write_str("the forward stream has no UDP ports"),
            UdpTrialError::NoBrPath {
                port,
                dst,
                dst_port,
                timeout,
            } => write!(
                f,
                "MAP-E on port {port}: no forward frame to {dst}:{dst_port} passed the BR's checks within {:.0} s of learning frames (is the DUT's CE up, its BR address this port's, and its port set the rule's? sessions.jsonl counts the BR's drops by reason), so the reverse stream has no CE address and port to go to; nothing was measured",
                timeout.as_secs_f64()
            ),
            UdpTrialError::Learning(e) => write!(f, "learning frames before the trial: {e}"),
            UdpTrialError::ReceiveMode(e) => e.fmt(f),
            UdpTrialError::LanWatch(e) => e.fmt(f),
            UdpTrialError::Engine(e) => write!(f, "engine trial: {e}"),
        }
    }
}

impl std::error::Error for UdpTrialError {}

impl From<AssemblyError> for UdpTrialError {
    fn from(e: AssemblyError) -> UdpTrialError {
        UdpTrialError::Assembly(e)
    }
}

impl From<LanWatchError> for UdpTrialError {
    fn from(e: LanWatchError) -> UdpTrialError {
        UdpTrialError::LanWatch(e)
    }
}

impl Testbed {
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

    /// One UDP trial of `case` from port A to port B (and back, bidirectional): the streams
    /// [`trial_streams::assemble`] makes of it at `request.load` × the path's line rate
    /// ([`Plan::line_pps`], on the encapsulated frame), inside what each port plays, with the
    /// learning frames the path needs sent first.
    pub fn udp_trial(
        &mut self,
        plan: &Plan,
        case: &Case,
        request: &TrialRequest,
        stop: &AtomicBool,
    ) -> Result<(Outcome, EngineFacts), UdpTrialError> {
        self.flush_log();
        self.sessions_back_up(plan, stop)?;
        self.leases_back_up(plan, stop)?;
        let drops_before = self.session_drop_counts();
        if let Some(s) = self.softwires.iter().find(|s| !s.is_up()) {
            return Err(UdpTrialError::SoftwireDown {
                port: s.port.clone(),
            });
        }
        let b = self.b.as_ref().ok_or(UdpTrialError::NoReceivingPort)?;
        let probe = request.probe;
        let reverse_probe = probe.is_some_and(|p| p.direction == ProbeDirection::Reverse);
        // A probe runs one way: the reverse one alone, from port B.
        let with_reverse = probe.map_or(case.dims.bidirectional, |_| reverse_probe);
        let mut ports = PortHeaders {
            a: self.a.clone(),
            b: b.clone(),
            a_rides: self.a_rides(),
            b_replies: None,
        };
        let learning = trial_streams::learning_frames(plan, case, request, &ports)
            .map_err(AssemblyError::Spec)?;
        if with_reverse {
            ports.b_replies = self.b_replies(plan, &learning, stop)?;
        }
        let mut streams = trial_streams::assemble(plan, case, request, &ports)?;
        // The reverse direction through a NAPT needs the mapping the forward direction
        // creates: learning frames, as RFC 2544 §11 asks, so its first frames are not lost.
        if streams.napt_reply {
            learn(&streams.learning, stop)?;
        }
        if probe.is_some() {
            let sessions = [self.a_session, self.b_session];
            if let Some(why) = crate::mtu_probe::unsendable(&streams.config)
                .or_else(|| crate::mtu_probe::above_session_mru(&streams.config, &sessions))
            {
                return Ok(crate::mtu_probe::not_sent(request, why));
            }
            // RFC 2544 §11 learning before a forward probe, in the probe's own frames: the
            // path's neighbours resolved and a tunnel up, so a probe's frames are lost only for
            // their size (the reverse direction learned above).
            if !reverse_probe {
                learn(&streams.learning, stop)?;
            }
        }
        self.place_receivers(&mut streams.config)?;
        let before = self.dut_sample();
        let ports_before = self.read_watched();
        self.lan_watch_records.clear();
        let lan = self.start_lan_watch()?;
        let report = crate::spec::execute(&streams.config, stop).map_err(UdpTrialError::Engine);
        let watched = self.finish_lan_watch(lan);
        let report = report?;
        watched?;
        let after = self.dut_sample();
        let (outcome, mut facts) = streams.record(
            request,
            report.backend.name(),
            &report.backend_note,
            &report.streams,
        );
        facts.dut = match (before, after) {
            (Some(b), Some(a)) => Some(dut_delta(&b, &a, with_reverse && !reverse_probe)),
            _ => None,
        };
        facts.session_drops = self.session_drops_since(&drops_before);
        facts.tester_port_drops = self.watched_rises(&ports_before);
        Ok((outcome, facts))
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
    fn leases_back_up(&mut self, plan: &Plan, stop: &AtomicBool) -> Result<(), UdpTrialError> {
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
            got.map_err(|source| UdpTrialError::LeaseLost { port, source })?;
        }
        Ok(())
    }

    /// Waits for every PPPoE session that went down to come back (#14 item 5): a DUT that
    /// dropped its uplink during a trial redials, and the next trial rides its new session.
    /// A session that does not come back within the port's `timeout` stops the run with the
    /// reason; the finished trials are kept.
    fn sessions_back_up(&mut self, plan: &Plan, stop: &AtomicBool) -> Result<(), UdpTrialError> {
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
            let info = got.map_err(|source| UdpTrialError::SessionLost { port, source })?;
            match index {
                Some(0) => self.a_session = Some(info),
                Some(_) => self.b_session = Some(info),
                None => {}
            }
        }
        Ok(())
    }

    /// The session or softwire port A's frames ride when it plays a PPPoE subscriber or
    /// DS-Lite B4 (`None`: a plain port, whose frames the spec addresses from the ports alone).
    fn a_rides(&self) -> Option<ARides> {
        match (self.a_session, self.a_softwire) {
            (Some(info), _) => Some(ARides::Session(info)),
            (None, Some(info)) => Some(ARides::Softwire(info)),
            (None, None) => None,
        }
    }

    /// The headers of what port B plays, for the reverse stream of a bidirectional trial
    /// (`None`: a plain port, or one whose session or lease is not up). A DS-Lite AFTR or
    /// MAP-E BR learns the CPE from its tunnelled packets: `learning` frames are sent until it
    /// has, or the port's `timeout`.
    fn b_replies(
        &self,
        plan: &Plan,
        learning: &TrialConfig,
        stop: &AtomicBool,
    ) -> Result<Option<BReplies>, UdpTrialError> {
        Ok(match self.far_end(plan) {
            FarEnd::Plain => None,
            FarEnd::Session(info, isp_side) => Some(BReplies::Session { info, isp_side }),
            FarEnd::Lease(info) => Some(BReplies::Lease(info)),
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
                while self.softwire_of(&port).is_none()
                    && std::time::Instant::now() < end
                    && !stop.load(std::sync::atomic::Ordering::SeqCst)
                {
                    learn(learning, stop)?;
                    if self.softwire_of(&port).is_none() {
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
                let info = self.softwire_of(&port).ok_or_else(|| UdpTrialError::NoB4 {
                    port: port.clone(),
                    timeout,
                })?;
                let b4_side = !self.softwire_is_aftr(&port);
                Some(BReplies::Softwire { info, b4_side })
            }
            FarEnd::Br(port) => {
                // The reply to what the CE's NAPT made of the forward stream: the BR learns
                // the shared address and port from the forward frames it decapsulates
                // (learning frames, repeated until one passed its checks or `timeout`).
                let cfg_br = plan
                    .ports
                    .get(1)
                    .and_then(|p| p.mape.as_ref())
                    .ok_or(UdpTrialError::NoBr)?;
                let rule = cfg_br.rule().map_err(|source| UdpTrialError::MapeRule {
                    port: port.clone(),
                    source,
                })?;
                let dst = self
                    .b
                    .as_ref()
                    .and_then(|b| b.ipv4)
                    .ok_or_else(|| UdpTrialError::NoForwardAddress { port: port.clone() })?;
                let (_, dst_port) = learning
                    .streams
                    .first()
                    .and_then(trial_streams::udp_ports)
                    .ok_or(UdpTrialError::NoForwardPorts)?;
                let path = || {
                    self.softwires
                        .iter()
                        .find(|s| s.port == port)
                        .and_then(|s| s.mape_reply_path(&rule, dst, dst_port))
                };
                let end = std::time::Instant::now() + cfg_br.timeout;
                while path().is_none()
                    && std::time::Instant::now() < end
                    && !stop.load(std::sync::atomic::Ordering::SeqCst)
                {
                    learn(learning, stop)?;
                }
                let (ce_ipv4, ce_port, info) = path().ok_or_else(|| UdpTrialError::NoBrPath {
                    port: port.clone(),
                    dst,
                    dst_port,
                    timeout: cfg_br.timeout,
                })?;
                Some(BReplies::Br {
                    ce: (ce_ipv4, ce_port),
                    info,
                })
            }
        })
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
        if pb.mape.is_some() {
            return FarEnd::Br(pb.name.clone());
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

    /// The XDP receive mode of the ports facing the lab's DUT, for the DUT as it is now: the
    /// run switches its fast path between cases (`crate::trial::lab_receive_mode`).
    fn place_receivers(&self, cfg: &mut TrialConfig) -> Result<(), UdpTrialError> {
        let Some(l) = &self.lab else {
            return Ok(());
        };
        let mode = crate::trial::lab_receive_mode(l).map_err(UdpTrialError::ReceiveMode)?;
        for p in cfg.ports.iter_mut().filter(|p| p.faces_dut) {
            p.xdp_rx_mode = mode;
        }
        Ok(())
    }
}

/// What port B plays, for the reverse stream of a bidirectional trial.
enum FarEnd {
    /// A plain port: the reverse stream is plain and resolves its next hop.
    Plain,
    /// A PPPoE session: B is the access concentrator (`true`) or a subscriber.
    Session(SessionInfo, bool),
    /// A DS-Lite AFTR or B4 (the plan's name of port B).
    Softwire(String),
    /// A MAP-E BR (the plan's name of port B).
    Br(String),
    /// An IPoE port: the gateway's lease.
    Lease(emulate::ipoe::LeaseInfo),
}

/// Sends RFC 2544 §11 learning frames ([`crate::trial_streams::TrialStreams::learning`])
/// before a bidirectional trial through an emulated port: a CPE's NAPT then holds the mapping
/// the reverse stream's frames are the reply to, and an AFTR has heard from the CPE's B4.
fn learn(learning: &TrialConfig, stop: &AtomicBool) -> Result<(), UdpTrialError> {
    engine::trial::run(learning, stop).map_err(UdpTrialError::Learning)?;
    Ok(())
}
