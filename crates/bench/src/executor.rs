//! The seam between the runner and what it measures on.
//!
//! The runner (`crate::runner`) decides *what* to measure: which case, which search, when a
//! trial is tester-limited or superseded, what is recorded and how a run resumes. A
//! [`TrialExecutor`] does the measuring: one UDP trial, one two-phase connection trial, one
//! iperf3 run, and the lab DUT's switches ([`DutSwitches`]). [`crate::testbed::Testbed`] is the
//! real one (the lab or real interfaces, the packet engine, iperf3); tests drive the runner
//! with a simulated one, so its resume, tester-limited and switch logic is tested without a
//! network (the hyperfine `Executor` / mock-executor pattern).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::error::BenchError;
use crate::plan::{Case, Plan};
use crate::results::{ConnDutCounters, ConnPhases, DutCounters, EngineFacts, TcpFigures};
use crate::search::{ConnOutcome, ConnTrial, Outcome, TrialRequest};

/// One iperf3 run: its JSON as iperf3 printed it, the figures read from it, how long it took.
pub type TcpRun = (serde_json::Value, TcpFigures, Duration);

/// What the runner needs measured. An error is printed as one line of the run's log: the
/// runner records the trial as failed (not done, so `--resume` retries it) and goes on.
pub trait TrialExecutor {
    /// The lab DUT's switches, when the DUT is a lab DUT this run built; `None` for a real
    /// DUT (its hooks do the switching) or a lab without a DUT node.
    fn dut_switches(&self) -> Option<Box<dyn DutSwitches>>;

    /// One UDP trial of `case` at `request`.
    fn udp_trial(
        &mut self,
        plan: &Plan,
        case: &Case,
        request: &TrialRequest,
        stop: &AtomicBool,
    ) -> Result<(Outcome, EngineFacts), BenchError>;

    /// One two-phase connection trial (RFC 9693), the DUT's table emptied first and capped
    /// at `table_size` when given; `backend` sends the `nat-throughput` load.
    fn conn_trial(
        &mut self,
        case: &Case,
        trial: &ConnTrial,
        table_size: Option<u64>,
        backend: engine::trial::Backend,
        stop: &AtomicBool,
    ) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), BenchError>;

    /// One iperf3 run of `case`, with the DUT's counters over it where they can be read.
    fn tcp_trial(
        &mut self,
        case: &Case,
        plan: &Plan,
        stop: &AtomicBool,
    ) -> (Result<TcpRun, BenchError>, Option<DutCounters>);

    /// The LAN health watch's records of the last UDP or iperf3 trial (one per gateway
    /// address watched), taken once: the runner puts them into that trial's record. None
    /// where nothing is watched.
    fn take_lan_watch(&mut self) -> Vec<crate::results::LanWatch> {
        Vec::new()
    }

    /// Takes down what the executor brought up (the lab, the ISP sessions).
    fn down(self: Box<Self>) -> Result<(), BenchError>;
}

/// The lab DUT's switches the runner sets per profile and per case.
pub trait DutSwitches {
    /// The lab has a DUT node (the `direct` topology has none: nothing to switch).
    fn has_dut(&self) -> bool;
    /// Applies a lab profile (rules, NAT, MSS clamp; the fast path as the profile sets it).
    fn apply_profile(&self, profile: &lab::Profile) -> Result<(), lab::LabError>;
    /// The connection table's cap and UDP timeout (`None`: the kernel's defaults).
    fn set_conn_table(
        &self,
        limit: Option<u64>,
        udp_timeout: Option<Duration>,
    ) -> Result<(), lab::LabError>;
    /// The DUT's receive offloads (GRO and friends) on or off.
    fn set_offload(&self, on: bool) -> Result<(), lab::LabError>;
    /// The DUT's XDP fast path on or off.
    fn set_fastpath(&self, on: bool) -> Result<(), lab::LabError>;
}

/// The real lab: its DUT's switches are `lab::Lab`'s.
pub(crate) struct LabSwitches(pub lab::Lab);

impl DutSwitches for LabSwitches {
    fn has_dut(&self) -> bool {
        self.0.topology().has(lab::Node::Dut)
    }
    fn apply_profile(&self, profile: &lab::Profile) -> Result<(), lab::LabError> {
        self.0.apply_profile(profile)
    }
    fn set_conn_table(
        &self,
        limit: Option<u64>,
        udp_timeout: Option<Duration>,
    ) -> Result<(), lab::LabError> {
        self.0.set_conn_table(limit, udp_timeout)
    }
    fn set_offload(&self, on: bool) -> Result<(), lab::LabError> {
        self.0.set_dut_offload(on)
    }
    fn set_fastpath(&self, on: bool) -> Result<(), lab::LabError> {
        self.0.set_fastpath(on)
    }
}
