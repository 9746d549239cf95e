//! What a connection search found, its status and cost, and the one line that says it.

use core::fmt;

use serde::{Deserialize, Serialize};

use super::trial::{ConnRate, PastCapacity};

/// Whether a connection search is running, finished or stopped by the tester.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ConnStatus {
    /// More trials are needed.
    Running,
    /// Finished; the finding is a DUT figure.
    Complete,
    /// A trial's tester could not send N frames at the asked rate; the search stopped and its
    /// finding must not be reported as a DUT figure.
    TesterLimited {
        intended: ConnRate,
        achieved: ConnRate,
    },
}

/// What a connection search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ConnFinding {
    /// `nat-table-capacity`: the largest N that passed and the smallest that failed.
    TableCapacity {
        /// Largest N that passed (`None`: not even the first N tried… down to 1).
        lower: Option<u64>,
        /// Smallest N that failed (`None`: the maximum N passed; the table may be larger).
        upper: Option<u64>,
        /// What the failing trial at `upper` showed.
        past: Option<PastCapacity>,
        /// The preliminary rate every trial used.
        rate: ConnRate,
    },
    /// `nat-connection-rate`: the highest rate that passed and the lowest that failed, at N.
    ConnectionRate {
        connections: u64,
        lower: Option<ConnRate>,
        upper: Option<ConnRate>,
        /// The tester, not the DUT, bounded the search: the lowest rate it could not open the
        /// N connections at (and what it reached), when that is below `upper` (or nothing
        /// failed). `lower` is then only "at least". `None` in records written before a
        /// tester-limited trial became a ceiling instead of the end of the search.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tester_limited: Option<TesterShort>,
    },
    /// `nat-teardown-rate`: how fast the DUT deleted N established connections, the median
    /// over the repetitions that removed all of them.
    TeardownRate {
        connections: u64,
        /// Median of removed / (delete − empty) (`None`: no repetition measured one).
        rate: Option<ConnRate>,
        /// Median of removed / delete: what holds even if the command's fixed cost was
        /// mismeasured. The figure when `rate` is `None`.
        at_least: Option<ConnRate>,
        /// Repetitions that counted (all N established and validated, the table empty after).
        valid: u32,
        /// Repetitions run.
        repetitions: u32,
    },
    /// `nat-throughput`: the RFC 2544 throughput on N established connections, per N.
    Throughput { points: Vec<ThroughputPoint> },
}

/// `nat-throughput` at one N: the highest per-direction rate at which every frame of both
/// directions crossed, and the lowest that lost one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThroughputPoint {
    pub connections: u64,
    /// Frames/s each direction (`None`: not even the minimum passed, or not established).
    pub lower: Option<f64>,
    pub upper: Option<f64>,
    /// False when a trial could not establish all N connections: no throughput at this N
    /// (the table does not hold them at the preliminary rate).
    pub established: bool,
    /// The tester, not the DUT, ended this N: it could not offer a rate at or below the
    /// DUT's first failing one (`lower` is then only "at least"), or could not establish
    /// the N connections at the preliminary rate. `None` in records written before an N
    /// could end this way (the whole search stopped instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tester_limited: Option<TesterShort>,
}

/// What the tester fell short of at one N of `nat-throughput`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "kebab-case")]
pub enum TesterShort {
    /// The load: the lowest rate (frames/s each way) the tester could not offer at this N,
    /// and what it offered then (the slower direction; 0 when its own receive rings dropped
    /// frames rather than its sender falling behind).
    Load { intended: f64, achieved: f64 },
    /// The preliminary phase: the tester could not open the N connections at the asked rate
    /// (connections/s), so it is not known whether the DUT's table holds them.
    Establishment {
        intended: ConnRate,
        achieved: ConnRate,
    },
}

impl fmt::Display for TesterShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TesterShort::Load { intended, achieved } => write!(
                f,
                "tester-limited (asked {intended:.0}, sent {achieved:.0} frames/s each way)"
            ),
            TesterShort::Establishment { intended, achieved } => write!(
                f,
                "tester-limited establishing (asked {:.0}, sent {:.0} connections/s)",
                intended.0, achieved.0
            ),
        }
    }
}

/// Status, finding and cost of a connection search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnSearchResult {
    pub status: ConnStatus,
    pub finding: ConnFinding,
    /// Trials requested.
    pub trials: u32,
    /// Sum of the requested trials' [`super::ConnTrial::duration`]s, in seconds.
    pub trial_seconds: f64,
}

/// One line for a finished connection search, as the run's progress and the report's
/// conclusions say it: the bracket, what failed past it, and whether it is a DUT figure.
pub fn describe(r: &ConnSearchResult) -> String {
    let what = match &r.finding {
        ConnFinding::TableCapacity {
            lower,
            upper,
            past,
            rate,
        } => match (lower, upper) {
            (Some(l), Some(u)) => format!(
                "table capacity {l} connections ({u} failed: {}), at {}",
                past.unwrap_or(PastCapacity::Unknown),
                rate
            ),
            (Some(l), None) => format!("table capacity at least {l} connections (the most tried)"),
            (None, Some(u)) => format!("no table capacity: even {u} connections failed"),
            (None, None) => "no trial finished".to_string(),
        },
        ConnFinding::ConnectionRate {
            connections,
            lower,
            tester_limited: Some(short),
            ..
        } => match lower {
            Some(l) => format!(
                "connection rate at least {:.0}/s at {connections} connections, {short} above",
                l.0
            ),
            None => format!("{short} at {connections} connections, no DUT figure"),
        },
        ConnFinding::ConnectionRate {
            connections,
            lower,
            upper,
            tester_limited: None,
        } => match (lower, upper) {
            (Some(l), Some(u)) => format!(
                "connection rate {:.0}/s at {connections} connections ({:.0}/s failed)",
                l.0, u.0
            ),
            (Some(l), None) => format!(
                "connection rate at least {:.0}/s at {connections} connections (the most tried)",
                l.0
            ),
            (None, Some(u)) => format!(
                "no connection rate passed at {connections} connections (down to {:.0}/s)",
                u.0
            ),
            (None, None) => "no trial finished".to_string(),
        },
        ConnFinding::TeardownRate {
            connections,
            rate,
            at_least,
            valid,
            repetitions,
        } => match (rate, at_least) {
            (Some(r), _) => format!(
                "tear-down rate {:.0}/s for {connections} connections (median of {valid} of {repetitions} repetitions)",
                r.0
            ),
            (None, Some(l)) => format!(
                "tear-down rate at least {:.0}/s for {connections} connections (the deletion was not measurably slower than on an empty table; median of {valid} of {repetitions})",
                l.0
            ),
            (None, None) => format!(
                "no tear-down measured for {connections} connections ({valid} of {repetitions} repetitions established them all and emptied the table)"
            ),
        },
        ConnFinding::Throughput { points } if points.is_empty() => "no trial finished".to_string(),
        ConnFinding::Throughput { points } => points
            .iter()
            .map(|p| match (p.established, p.lower, p.upper) {
                (_, _, _) if p.tester_limited.is_some() => {
                    let short = p.tester_limited.map(|s| s.to_string()).unwrap_or_default();
                    match (p.lower, p.upper) {
                        (Some(l), Some(u)) => format!(
                            "{} connections: at least {l:.0} frames/s each way, {short} (frames lost at {u:.0})",
                            p.connections
                        ),
                        (Some(l), None) => format!(
                            "{} connections: at least {l:.0} frames/s each way, {short}",
                            p.connections
                        ),
                        (None, _) => format!("{} connections: {short}, no DUT figure", p.connections),
                    }
                }
                (false, _, _) => format!("{} connections: not all established", p.connections),
                (true, Some(l), Some(u)) => format!(
                    "{} connections: {l:.0} frames/s each way (frames lost at {u:.0})",
                    p.connections
                ),
                (true, Some(l), None) => format!(
                    "{} connections: at least {l:.0} frames/s each way (the most tried)",
                    p.connections
                ),
                (true, None, Some(u)) => format!(
                    "{} connections: no rate passed (down to {u:.0} frames/s)",
                    p.connections
                ),
                (true, None, None) => format!("{} connections: unfinished", p.connections),
            })
            .collect::<Vec<_>>()
            .join("; "),
    };
    match r.status {
        ConnStatus::TesterLimited { intended, achieved } => format!(
            "tester-limited (asked {:.0}/s, sent {:.0}/s), not a DUT figure; {what}",
            intended.0, achieved.0
        ),
        ConnStatus::Running => format!("unfinished; {what}"),
        ConnStatus::Complete => what,
    }
}
