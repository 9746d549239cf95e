//! Where a run's traffic goes: the namespace lab the run builds and removes, or the real
//! interfaces a plan names (maybe inside namespaces), with the control planes a port plays
//! (a PPPoE access concentrator or subscriber) brought up before any traffic.
//!
//! The runner asks this module for three things: the engine ports of a UDP trial (and the
//! session its frames ride), where iperf3's client, server and SYN capture run, and a clean
//! teardown (sessions closed with PADT, the lab removed) at the end, on error and on Ctrl-C.
//!
//! One job a file: `bring_up` builds the lab or starts the ports' control planes, `udp`
//! runs a UDP trial (its streams assembled by [`crate::trial_streams`] from the headers of
//! what the ports play), `conn` runs a connection trial; this module holds the testbed, its
//! counters and its teardown.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::AtomicBool;

use emulate::pppoe::SessionInfo;
use emulate::softwire::SoftwireInfo;
use engine::port::PortSpec;

use crate::error::BenchError;
use crate::hooks::Exec;
use crate::ipoe_port::LeasePort;
use crate::isp::{SessionPort, SoftwirePort};
use crate::plan::{Case, Plan, Port};
use crate::results::{ConnDutCounters, ConnPhases, DutCounters, EngineFacts};
use crate::search::{ConnOutcome, ConnTrial, Outcome, TrialRequest};

pub use crate::spec::from_plan::UDP_DRAIN;

/// Seed of the RFC 4814 pseudorandom order in which connection trials open their tuples.
pub const CONN_SEED: u64 = 4814;

/// File in the run directory with the PPPoE session events and statistics, one JSON per line.
pub const SESSIONS_JSONL: &str = "sessions.jsonl";

pub use crate::iperf3_run::Iperf3Ends;

mod bring_up;
mod conn;
mod error;
mod lan_watch;
mod udp;

pub(crate) use bring_up::interface_exists;
pub use bring_up::preflight;
pub use conn::ConnTrialError;
pub use error::{TeardownError, TestbedError};
pub use lan_watch::LanWatchError;
pub use udp::UdpTrialError;

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
    /// The ports whose gateway the LAN health watch asks during every trial (real interfaces
    /// with a gateway address, `[run] lan-watch`).
    lan_watch: Vec<lan_watch::WatchedLan>,
    /// The watch's records of the last trial, until the runner takes them.
    lan_watch_records: Vec<crate::results::LanWatch>,
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

impl Testbed {
    /// The lab this run built, if any.
    pub fn lab(&self) -> Option<&lab::Lab> {
        self.lab.as_ref()
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
    fn dut_sample(&self) -> Option<lab::DutSample> {
        self.lab
            .as_ref()
            .and_then(|l| l.dut_sample().ok().flatten())
    }

    /// Closes the sessions (PADT), records their statistics, removes the lab.
    pub fn down(mut self) -> Result<(), TestbedError> {
        self.flush_log();
        let mut errors = Vec::new();
        let mut stats = Vec::new();
        for s in &mut self.sessions {
            match s.finish() {
                Ok(v) => stats.push(v),
                Err(e) => errors.push(TeardownError::Port(e)),
            }
        }
        for s in std::mem::take(&mut self.softwires) {
            match s.finish() {
                Ok(v) => stats.push(v),
                Err(e) => errors.push(TeardownError::Port(e)),
            }
        }
        for s in &mut self.leases {
            match s.finish() {
                Ok(v) => stats.push(v),
                Err(e) => errors.push(TeardownError::Port(e)),
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
                errors.push(TeardownError::Lab(e));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(TestbedError::Down(errors))
        }
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
                .and_then(|p| {
                    p.dslite
                        .as_ref()
                        .map(|d| d.timeout)
                        .or(p.mape.as_ref().map(|m| m.timeout))
                })
                .unwrap_or(std::time::Duration::from_secs(10));
            let end = std::time::Instant::now() + timeout;
            while s.softwire().is_none()
                && std::time::Instant::now() < end
                && !stop.load(std::sync::atomic::Ordering::SeqCst)
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
}

/// The DUT's counters over a trial: ingress is the port facing A (both ports when the trial
/// runs both ways), egress the port facing B (likewise). Public for tests that check a lab
/// trial's losses against the DUT's own counters as a run does.
pub fn dut_delta(before: &lab::DutSample, after: &lab::DutSample, both_ways: bool) -> DutCounters {
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
        egress_drops: egress.iter().map(|n| d(n, |i| i.tx_dropped)).sum(),
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
    ) -> Result<(Outcome, EngineFacts), BenchError> {
        Testbed::udp_trial(self, plan, case, request, stop)
            .map_err(|e| BenchError::Failed(e.to_string()))
    }

    fn conn_trial(
        &mut self,
        case: &Case,
        trial: &ConnTrial,
        table_size: Option<u64>,
        backend: engine::trial::Backend,
        stop: &AtomicBool,
    ) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), BenchError> {
        Testbed::conn_trial(self, case, trial, table_size, backend, stop)
            .map_err(|e| BenchError::Failed(e.to_string()))
    }

    fn tcp_trial(
        &mut self,
        case: &Case,
        plan: &Plan,
        stop: &AtomicBool,
    ) -> (
        Result<crate::executor::TcpRun, BenchError>,
        Option<crate::results::DutCounters>,
    ) {
        self.await_softwires(plan, stop);
        self.lan_watch_records.clear();
        let running = match self.start_lan_watch() {
            Ok(r) => r,
            Err(e) => return (Err(BenchError::Failed(e.to_string())), None),
        };
        let (res, dut) = self
            .with_dut_counters(|| crate::iperf3_run::iperf3_trial(&self.iperf3, case, plan, stop));
        let res = res.map_err(|e| BenchError::Failed(e.to_string()));
        match self.finish_lan_watch(running) {
            Ok(()) => (res, dut),
            Err(e) => (res.and(Err(BenchError::Failed(e.to_string()))), dut),
        }
    }

    fn take_lan_watch(&mut self) -> Vec<crate::results::LanWatch> {
        std::mem::take(&mut self.lan_watch_records)
    }

    fn down(self: Box<Self>) -> Result<(), BenchError> {
        Testbed::down(*self).map_err(|e| BenchError::Failed(e.to_string()))
    }
}
