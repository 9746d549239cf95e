//! The methodologies a case can run ([`Methodology`]) and their `[methodology.*]` settings
//! ([`MethodologySettings`], a multi-goal search's [`GoalSetting`]s, the RFC 9693 connection
//! methodologies' own tables).

use core::time::Duration;

use serde::{Deserialize, Serialize};
use wire::units::BitsPerSec;

use super::mtu_probe::MtuProbeSettings;
use super::vocabulary::RunSettings;
use crate::search::{self, ConnRate, ConnectionRateConfig, TableCapacityConfig};

/// A methodology a case can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Methodology {
    /// RFC 2544 §26.1 binary search.
    Rfc2544Throughput,
    /// Multi-goal loss-ratio search (MLRsearch-style).
    MultiGoal,
    /// RFC 2544 §26.2 latency at the throughput found.
    Rfc2544Latency,
    /// RFC 2544 §26.3 frame-loss-rate curve.
    Rfc2544LossCurve,
    /// RFC 2544 §26.4 back-to-back frames.
    Rfc2544BackToBack,
    /// RFC 2889 §5.1 forwarding rate at the maximum offered load ([`search::ForwardingRate`]).
    ForwardingRate,
    /// One iperf3 run per repetition (TCP, or UDP at a fixed bit rate).
    Iperf3,
    /// RFC 9693 connection tracking table capacity: the largest number of connections the
    /// DUT holds ([`search::TableCapacitySearch`]).
    NatTableCapacity,
    /// RFC 9693 maximum connection establishment rate at a fixed number of connections
    /// ([`search::ConnectionRateSearch`]).
    NatConnectionRate,
    /// RFC 9693 connection tear-down rate: N connections established, then the DUT's table
    /// deleted and timed ([`search::TeardownRateSearch`]).
    NatTeardownRate,
    /// RFC 2544 throughput on N established connections, both directions, for a list of N
    /// ([`search::NatThroughputSearch`]).
    NatThroughput,
    /// Per direction, the largest frame size that crosses whole and the fate above it
    /// ([`search::MtuProbe`]).
    MtuProbe,
}

impl Methodology {
    /// Every methodology with its plan name.
    pub const ALL: [(&'static str, Methodology); 12] = [
        ("rfc2544-throughput", Methodology::Rfc2544Throughput),
        ("multi-goal", Methodology::MultiGoal),
        ("rfc2544-latency", Methodology::Rfc2544Latency),
        ("rfc2544-loss-curve", Methodology::Rfc2544LossCurve),
        ("rfc2544-back-to-back", Methodology::Rfc2544BackToBack),
        ("forwarding-rate", Methodology::ForwardingRate),
        ("iperf3", Methodology::Iperf3),
        ("nat-table-capacity", Methodology::NatTableCapacity),
        ("nat-connection-rate", Methodology::NatConnectionRate),
        ("nat-teardown-rate", Methodology::NatTeardownRate),
        ("nat-throughput", Methodology::NatThroughput),
        ("mtu-probe", Methodology::MtuProbe),
    ];

    /// The plan name.
    pub fn name(self) -> &'static str {
        Methodology::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether it needs the packet engine (UDP test frames with signatures).
    pub fn needs_engine(self) -> bool {
        self != Methodology::Iperf3
    }

    /// Whether the runner can execute it, and if not, what is missing. A methodology that
    /// cannot run is refused by `plan check` and `run` with this reason — never run as a stub
    /// that reports a figure.
    pub fn executable(self) -> Result<(), &'static str> {
        Ok(())
    }

    /// Whether it is one of the connection methodologies (RFC 9693), whose trials have two
    /// phases and move N and the new-connection rate instead of a load.
    pub fn is_connection(self) -> bool {
        matches!(
            self,
            Methodology::NatTableCapacity
                | Methodology::NatConnectionRate
                | Methodology::NatTeardownRate
                | Methodology::NatThroughput
        )
    }
}

/// `[methodology.nat-teardown-rate]`: see [`search::TeardownRateSearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TeardownRateSettings {
    /// Connections established, then deleted, in every repetition.
    pub connections: u64,
    /// Repetitions; the figure is their median.
    pub repetitions: u32,
    /// New connections per second in the preliminary phase.
    pub preliminary_rate: f64,
    /// Validation frames per second; `None` = the preliminary rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_rate: Option<f64>,
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for TeardownRateSettings {
    fn default() -> Self {
        TeardownRateSettings {
            connections: 1000,
            repetitions: 5,
            preliminary_rate: 1000.0,
            validation_rate: None,
            phase_gap: Duration::from_secs(1),
        }
    }
}

impl TeardownRateSettings {
    /// The search configuration these settings give.
    pub fn config(&self, tester_tolerance: f64) -> search::TeardownRateConfig {
        let rate = ConnRate(self.preliminary_rate);
        search::TeardownRateConfig {
            connections: self.connections,
            repetitions: self.repetitions,
            rate,
            validation_rate: self.validation_rate.map_or(rate, ConnRate),
            gap: self.phase_gap,
            tester_tolerance,
        }
    }
}

/// One N of `[methodology.nat-throughput] connections`: a number, or `"table"` — the case's
/// configured table size (`table-size` of its lab profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConnCount {
    N(u64),
    Table(TableWord),
}

/// The word `table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableWord {
    Table,
}

/// `[methodology.nat-throughput]`: see [`search::NatThroughputSearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NatThroughputSettings {
    /// The N to measure at.
    pub connections: Vec<ConnCount>,
    /// Frames/s each direction: the floor and the first rate tried.
    pub min_rate: f64,
    pub max_rate: f64,
    /// Relative width at which each N's bisection stops.
    pub resolution: f64,
    /// How long each load runs.
    #[serde(with = "crate::secs")]
    pub duration: Duration,
    /// New connections per second in the preliminary phase.
    pub preliminary_rate: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_rate: Option<f64>,
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for NatThroughputSettings {
    fn default() -> Self {
        NatThroughputSettings {
            connections: vec![ConnCount::N(1), ConnCount::N(1000)],
            min_rate: 1000.0,
            max_rate: 100_000.0,
            resolution: 0.05,
            duration: Duration::from_secs(1),
            preliminary_rate: 1000.0,
            validation_rate: None,
            phase_gap: Duration::from_secs(1),
        }
    }
}

/// `"table"` among a NAT throughput search's connection counts, in a case whose profile sets
/// no `table-size` to resolve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoTableSize;

impl std::fmt::Display for NoTableSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("`\"table\"` needs the case's profile to set `table-size`")
    }
}

impl std::error::Error for NoTableSize {}

impl NatThroughputSettings {
    /// The search configuration for a case whose table holds `table_size` connections
    /// (`None`: not known; then `"table"` cannot be resolved and this is `Err` naming it).
    pub fn config(
        &self,
        tester_tolerance: f64,
        table_size: Option<u64>,
    ) -> Result<search::NatThroughputConfig, NoTableSize> {
        let connections = self
            .connections
            .iter()
            .map(|c| match c {
                ConnCount::N(n) => Ok(*n),
                ConnCount::Table(_) => table_size.ok_or(NoTableSize),
            })
            .collect::<Result<Vec<u64>, NoTableSize>>()?;
        let rate = ConnRate(self.preliminary_rate);
        Ok(search::NatThroughputConfig {
            connections,
            min_pps: self.min_rate,
            max_pps: self.max_rate,
            resolution: self.resolution,
            duration: self.duration,
            rate,
            validation_rate: self.validation_rate.map_or(rate, ConnRate),
            gap: self.phase_gap,
            tester_tolerance,
        })
    }
}

/// `[methodology.nat-table-capacity]`: see [`search::TableCapacitySearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TableCapacitySettings {
    /// Largest number of connections tried.
    pub max_connections: u64,
    /// First number tried (RFC 9693's C0); `None` = 1,000 or `max_connections` if smaller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_connections: Option<u64>,
    /// Stop when the bracket is this many connections wide (1 = exact).
    pub resolution_connections: u64,
    /// New connections per second in every preliminary phase.
    pub preliminary_rate: f64,
    /// Validation frames per second; `None` = the preliminary rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_rate: Option<f64>,
    /// Wait between the preliminary phase and the validation.
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for TableCapacitySettings {
    fn default() -> Self {
        TableCapacitySettings {
            max_connections: 1_000_000,
            start_connections: None,
            resolution_connections: 1,
            preliminary_rate: 10_000.0,
            validation_rate: None,
            phase_gap: Duration::from_secs(1),
        }
    }
}

impl TableCapacitySettings {
    /// The search configuration these settings give.
    pub fn config(&self, tester_tolerance: f64) -> TableCapacityConfig {
        let rate = ConnRate(self.preliminary_rate);
        TableCapacityConfig {
            start: self
                .start_connections
                .unwrap_or_else(|| 1000.min(self.max_connections.max(1))),
            max: self.max_connections,
            resolution: self.resolution_connections,
            rate,
            validation_rate: self.validation_rate.map_or(rate, ConnRate),
            gap: self.phase_gap,
            tester_tolerance,
        }
    }
}

/// `[methodology.nat-connection-rate]`: see [`search::ConnectionRateSearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionRateSettings {
    /// Connections created in every trial.
    pub connections: u64,
    /// Lowest rate tried, new connections per second.
    pub min_rate: f64,
    /// First and highest rate tried.
    pub max_rate: f64,
    /// Relative width at which the search stops.
    pub resolution: f64,
    /// Validation frames per second.
    pub validation_rate: f64,
    /// Wait between the preliminary phase and the validation.
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for ConnectionRateSettings {
    fn default() -> Self {
        ConnectionRateSettings {
            connections: 10_000,
            min_rate: 1_000.0,
            max_rate: 1_000_000.0,
            resolution: 0.01,
            validation_rate: 10_000.0,
            phase_gap: Duration::from_secs(1),
        }
    }
}

impl ConnectionRateSettings {
    /// The search configuration these settings give.
    pub fn config(&self, tester_tolerance: f64) -> ConnectionRateConfig {
        ConnectionRateConfig {
            connections: self.connections,
            min_rate: ConnRate(self.min_rate),
            max_rate: ConnRate(self.max_rate),
            resolution: self.resolution,
            validation_rate: ConnRate(self.validation_rate),
            gap: self.phase_gap,
            tester_tolerance,
        }
    }
}

/// Per-methodology settings from `[methodology.*]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodologySettings {
    /// RFC 2544 throughput: tolerated loss ratio.
    pub loss_tolerance: f64,
    /// RFC 2544 throughput: relative resolution.
    pub resolution: f64,
    /// Multi-goal: the goals (a bare loss ratio in older run files).
    pub goals: Vec<GoalSetting>,
    /// Multi-goal: final relative width (default of every goal).
    pub width: f64,
    /// Multi-goal: first-phase trial duration (default of every goal).
    #[serde(with = "crate::secs")]
    pub initial_duration: Duration,
    /// Multi-goal: goal exceed ratio (default of every goal).
    #[serde(default)]
    pub exceed_ratio: f64,
    /// Multi-goal: final trial duration (default of every goal; `None` = `run.trial-duration`).
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub final_duration: Option<Duration>,
    /// Multi-goal: goal duration sum (default of every goal; `None` = its final duration).
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration_sum: Option<Duration>,
    /// Multi-goal: the most trial time one search may spend; it then stops with the best
    /// brackets so far and says so.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub search_time_cap: Option<Duration>,
    /// Latency: trials.
    pub latency_trials: u32,
    /// Latency: trial duration.
    #[serde(with = "crate::secs")]
    pub latency_duration: Duration,
    /// Loss curve: step.
    pub loss_curve_step: f64,
    /// Forwarding rate: trials at the maximum offered load (absent in run files written
    /// before it existed).
    #[serde(default = "default_forwarding_rate_trials")]
    pub forwarding_rate_trials: u32,
    /// Back-to-back: repetitions of the burst search.
    pub b2b_repetitions: u32,
    /// Back-to-back: resolution in frames.
    pub b2b_resolution_frames: u64,
    /// Back-to-back: trial window (and the longest burst, at line rate).
    #[serde(with = "crate::secs")]
    pub b2b_duration: Duration,
    /// iperf3: `-R`.
    pub iperf3_reverse: bool,
    /// iperf3: `--bidir`.
    pub iperf3_bidir: bool,
    /// iperf3: `-O` seconds to omit (TCP slow start).
    #[serde(with = "crate::secs")]
    pub iperf3_omit: Duration,
    /// iperf3: measured seconds per run (`-t`), after the omitted ones. TCP needs longer than
    /// the engine's trials to average out its sawtooth, so it has its own setting.
    #[serde(with = "crate::secs", default = "default_iperf3_duration")]
    pub iperf3_duration: Duration,
    /// iperf3 UDP target bit rate (`-b`).
    pub iperf3_udp_bitrate: Option<BitsPerSec>,
    /// `nat-table-capacity` (absent in run files written before it existed).
    #[serde(default)]
    pub nat_table_capacity: TableCapacitySettings,
    /// `nat-connection-rate` (absent in run files written before it existed).
    #[serde(default)]
    pub nat_connection_rate: ConnectionRateSettings,
    /// `[methodology.nat-teardown-rate]`.
    #[serde(default)]
    pub nat_teardown_rate: TeardownRateSettings,
    /// `[methodology.nat-throughput]`.
    #[serde(default)]
    pub nat_throughput: NatThroughputSettings,
    /// `[methodology.mtu-probe]` (absent in run files written before it existed).
    #[serde(default)]
    pub mtu_probe: MtuProbeSettings,
}

impl Default for MethodologySettings {
    fn default() -> Self {
        MethodologySettings {
            loss_tolerance: 0.0,
            resolution: 0.005,
            goals: vec![GoalSetting::ratio(0.0), GoalSetting::ratio(0.005)],
            width: 0.005,
            initial_duration: Duration::from_secs(1),
            exceed_ratio: 0.0,
            final_duration: None,
            duration_sum: None,
            search_time_cap: None,
            latency_trials: 20,
            latency_duration: Duration::from_secs(120),
            loss_curve_step: 0.1,
            forwarding_rate_trials: default_forwarding_rate_trials(),
            b2b_repetitions: 50,
            b2b_resolution_frames: 1,
            b2b_duration: Duration::from_secs(2),
            iperf3_reverse: false,
            iperf3_bidir: false,
            iperf3_omit: DEFAULT_IPERF3_OMIT,
            iperf3_duration: default_iperf3_duration(),
            iperf3_udp_bitrate: None,
            nat_table_capacity: TableCapacitySettings::default(),
            nat_connection_rate: ConnectionRateSettings::default(),
            nat_teardown_rate: TeardownRateSettings::default(),
            nat_throughput: NatThroughputSettings::default(),
            mtu_probe: MtuProbeSettings::default(),
        }
    }
}

/// One goal of the multi-goal search as the plan gives it (RFC 9971 §4.6); a field left unset
/// takes the `[methodology.multi-goal]` value (see [`GoalSetting::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(from = "GoalEntry")]
pub struct GoalSetting {
    /// Goal loss ratio.
    pub loss_ratio: f64,
    /// Goal exceed ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceed_ratio: Option<f64>,
    /// Goal width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    /// Goal initial trial duration.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub initial_duration: Option<Duration>,
    /// Goal final trial duration.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub final_duration: Option<Duration>,
    /// Goal duration sum.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration_sum: Option<Duration>,
}

/// How a goal may be written in `run.json`: a bare loss ratio (older runs) or all fields.
#[derive(Deserialize)]
#[serde(untagged)]
enum GoalEntry {
    Ratio(f64),
    Full(GoalFields),
}

#[derive(Deserialize)]
struct GoalFields {
    loss_ratio: f64,
    #[serde(default)]
    exceed_ratio: Option<f64>,
    #[serde(default)]
    width: Option<f64>,
    #[serde(default, with = "crate::secs_opt")]
    initial_duration: Option<Duration>,
    #[serde(default, with = "crate::secs_opt")]
    final_duration: Option<Duration>,
    #[serde(default, with = "crate::secs_opt")]
    duration_sum: Option<Duration>,
}

impl From<GoalEntry> for GoalSetting {
    fn from(e: GoalEntry) -> GoalSetting {
        match e {
            GoalEntry::Ratio(r) => GoalSetting::ratio(r),
            GoalEntry::Full(f) => GoalSetting {
                loss_ratio: f.loss_ratio,
                exceed_ratio: f.exceed_ratio,
                width: f.width,
                initial_duration: f.initial_duration,
                final_duration: f.final_duration,
                duration_sum: f.duration_sum,
            },
        }
    }
}

impl GoalSetting {
    /// A goal given only by its loss ratio.
    pub fn ratio(loss_ratio: f64) -> GoalSetting {
        GoalSetting {
            loss_ratio,
            exceed_ratio: None,
            width: None,
            initial_duration: None,
            final_duration: None,
            duration_sum: None,
        }
    }

    /// The goal `"rfc2544"`: [`search::Goal::rfc2544`] (loss 0, exceed 0, one 60 s trial), with
    /// the methodology's width and initial duration.
    pub fn rfc2544() -> GoalSetting {
        let g = search::Goal::rfc2544();
        GoalSetting {
            loss_ratio: g.loss_ratio,
            exceed_ratio: Some(g.exceed_ratio),
            width: None,
            initial_duration: None,
            final_duration: Some(g.final_duration),
            duration_sum: Some(g.duration_sum),
        }
    }

    /// The goal with every unset field taken from `m`, then from `run` (final duration =
    /// `run.trial-duration`, duration sum = the final duration, initial ≤ final).
    pub fn resolve(&self, m: &MethodologySettings, run: &RunSettings) -> search::Goal {
        let final_duration = self
            .final_duration
            .or(m.final_duration)
            .unwrap_or(run.trial_duration);
        search::Goal {
            loss_ratio: self.loss_ratio,
            exceed_ratio: self.exceed_ratio.unwrap_or(m.exceed_ratio),
            width: self.width.unwrap_or(m.width),
            initial_duration: self
                .initial_duration
                .unwrap_or(m.initial_duration)
                .min(final_duration),
            final_duration,
            duration_sum: self
                .duration_sum
                .or(m.duration_sum)
                .unwrap_or(final_duration),
        }
    }
}

/// iperf3 runs omit their first second (TCP slow start, `-O 1`) unless the plan says otherwise.
pub const DEFAULT_IPERF3_OMIT: Duration = Duration::from_secs(1);

/// iperf3 runs measure 10 s unless the plan says otherwise: 1 s runs gave TCP figures that
/// varied by tens of percent between repetitions on the lab.
fn default_iperf3_duration() -> Duration {
    Duration::from_secs(10)
}

/// Three trials at the maximum offered load: enough for a spread that findings can judge
/// differences against.
fn default_forwarding_rate_trials() -> u32 {
    3
}
