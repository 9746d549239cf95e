//! Records of the connection methodologies (`nat-table-capacity`, `nat-connection-rate`):
//! each two-phase trial with what the search asked, what each phase measured and what the
//! DUT's own connection table counted, and the search's result when it finished.

use serde::{Deserialize, Serialize};
use wire::units::Pps;

use super::TrialKey;
use crate::plan::Methodology;
use crate::search::{ConnOutcome, ConnSearchResult, ConnTrial, LoadBackend};

/// What the engine measured in each phase (engine::nat::ConnTrialReport, kept whole so a
/// reader can check the outcome against it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnPhases {
    /// Preliminary frames sent, at what rate, and the tester's worst lateness (ns).
    pub preliminary_sent: u64,
    pub preliminary_pps: Pps,
    pub preliminary_max_late_ns: u64,
    /// Of `preliminary_sent`: frames the DUT's port refused (its receive ring full), each a
    /// connection the DUT lost at its ingress (engine::nat::PhaseTx::refused_by_peer).
    #[serde(default)]
    pub preliminary_refused_by_dut: u64,
    /// Connections the responder learned, and how many of them a NAT had translated.
    pub learned: u64,
    pub translated: u64,
    pub learned_duplicates: u64,
    pub validation_sent: u64,
    pub validation_pps: Pps,
    pub validation_max_late_ns: u64,
    /// Connections whose reply came back on their own tuple.
    pub validated: u64,
    /// Replies on a tuple other than their connection's (a DUT mixing up translations).
    pub misdirected: u64,
    pub validated_duplicates: u64,
    /// Frames the tester's own receive rings dropped over the two phases (engine::nat's
    /// `rx_ring_drops`): connections lost there are the tester's, and the runner measures the
    /// trial again. 0 in records written before it was counted.
    #[serde(default)]
    pub tester_rx_drops: u64,
    /// Which engine sent the preliminary frames, which learned them (the XDP sender and
    /// learner when they could run it, else AF_PACKET; issue 37 item 3), and why. Absent in
    /// records written before it was recorded (all AF_PACKET then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preliminary_engines: Option<PreliminaryEngines>,
}

/// The engines of a preliminary phase (engine::nat::PhaseEngines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreliminaryEngines {
    pub sender: LoadBackend,
    pub learner: LoadBackend,
    /// A fallback's reason, a learner in SKB mode; empty when both ran as asked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The scheduling priority the XDP sender ran at (engine::nat::priority; `None` on
    /// AF_PACKET, and in records written before it was raised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_priority: Option<crate::search::LoadPriority>,
}

/// The lab DUT's connection table over a trial: what its counters grew by from the empty
/// table at the start to the end of the preliminary phase, and to the end of the trial
/// (`entries` is the table's size at that moment).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConnDutCounters {
    pub preliminary: lab_model::conntrack::ConntrackStats,
    pub trial: lab_model::conntrack::ConntrackStats,
    /// The DUT's interface and backlog counters over the preliminary phase (A→B): where the
    /// frames of connections that were never created went (input queue drops, backlog drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<super::DutCounters>,
    /// The same counters, both ways, from the end of the preliminary phase to the end of the
    /// trial (validation and the load of `nat-throughput`): where the load's lost frames went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_ports: Option<super::DutCounters>,
}

/// One two-phase trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnTrialRecord {
    #[serde(flatten)]
    pub key: TrialKey,
    pub request: ConnTrial,
    pub outcome: ConnOutcome,
    /// The tester did not send all N frames or fell short of the asked rate: no DUT figure.
    pub tester_limited: bool,
    pub phases: ConnPhases,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut: Option<ConnDutCounters>,
    /// The tester fell short of the asked rate (a stall on a loaded machine), so the same
    /// trial was measured again under the same key and the search never saw this one; kept
    /// so nothing measured is hidden (as [`super::TrialRecord::superseded`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// Completion time, Unix milliseconds.
    pub finished_unix_ms: u64,
}

/// A connection methodology finished for a case and repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnDone {
    pub case_id: String,
    pub repetition: u32,
    pub methodology: Methodology,
    pub result: ConnSearchResult,
}
