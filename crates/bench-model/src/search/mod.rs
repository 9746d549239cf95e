//! Methodologies as pure state machines.
//!
//! A [`Search`] never touches the network or a clock. It is asked for the next
//! [`TrialRequest`], told the [`Outcome`] of that trial, and asked again, until it answers
//! `None`; then [`Search::result`] holds what it found. That makes every methodology testable
//! against a simulated DUT ([`sim`]) and makes a killed run resumable: recorded outcomes are
//! replayed into a fresh state machine ([`replay`]) and the search continues exactly where it
//! stopped, without repeating a trial.
//!
//! Loads are [`LineFraction`]s — fractions of the case's theoretical maximum rate — so the same
//! search works for every frame size and encapsulation; the trial runner turns a fraction into
//! frames per second with `wire`'s line-rate arithmetic.
//!
//! Tester-limited trials (the tester offered less than it was asked to, DESIGN.md §7) stop every
//! search: the result's [`Status`] then says "tester-limited at X" and no DUT figure is derived.

use core::fmt;
use core::time::Duration;

use serde::{Deserialize, Serialize};
use wire::units::{Nanos, Pps};

mod back_to_back;
mod binary;
mod forwarding_rate;
mod latency;
mod loss_curve;
mod mlr;
mod mtu;
pub mod nat;
pub mod sim;

pub use back_to_back::{buffer_time, BackToBack, BackToBackConfig, BufferTime, NoCorrectedTime};
pub use binary::{BinaryConfig, BinarySearch};
pub use forwarding_rate::{ForwardingRate, ForwardingRateConfig};
pub use latency::{LatencyConfig, LatencySearch};
pub use loss_curve::{LossCurve, LossCurveConfig};
pub use mlr::{default_phases, Goal, MultiGoalConfig, MultiGoalSearch};
pub use mtu::{
    Crossing, MtuDut, MtuProbe, MtuProbeConfig, MtuThreshold, Probe, ProbeDirection, SizeFate,
    PROBE_TESTER_TOLERANCE,
};
pub use nat::{
    drive_conn, replay_conn, ConnFinding, ConnOutcome, ConnRate, ConnReplayMismatch, ConnSearch,
    ConnSearchResult, ConnStatus, ConnTrial, ConnectionRateConfig, ConnectionRateSearch,
    FailedSpan, LoadBackend, LoadOutcome, LoadPriority, NatThroughputConfig, NatThroughputSearch,
    PastCapacity, RealTest, TableCapacityConfig, TableCapacitySearch, TeardownOutcome,
    TeardownRateConfig, TeardownRateSearch, TesterShort, ThroughputPoint,
};

/// Default tolerance for tester-limited detection: an achieved offered load more than 1 %
/// below the intended one means the tester, not the DUT, set the pace.
pub const DEFAULT_TESTER_TOLERANCE: f64 = 0.01;

/// An offered load as a fraction of the case's theoretical maximum rate (1.0 = line rate of the
/// slowest link the stream crosses, DESIGN.md §4).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LineFraction(pub f64);

impl LineFraction {
    /// 100 % of line rate.
    pub const FULL: LineFraction = LineFraction(1.0);

    /// The frame rate this fraction means when the line rate is `max`.
    pub fn to_pps(self, max: Pps) -> Pps {
        Pps(self.0 * max.0)
    }

    /// The fraction of `max` that `pps` is.
    pub fn from_pps(pps: Pps, max: Pps) -> LineFraction {
        LineFraction(if max.0 > 0.0 { pps.0 / max.0 } else { 0.0 })
    }

    /// The fraction in percent.
    pub fn percent(self) -> f64 {
        self.0 * 100.0
    }
}

impl fmt::Display for LineFraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} %", self.percent())
    }
}

/// What a search asks the trial runner to do next.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrialRequest {
    /// Offered load; for a burst, the rate inside the burst (1.0 = minimum inter-frame gap).
    pub load: LineFraction,
    /// How long the trial lasts (for a burst: the trial window that contains it).
    #[serde(with = "crate::secs")]
    pub duration: Duration,
    /// Send exactly this many frames back to back instead of a timed stream (RFC 2544 §26.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_frames: Option<u64>,
    /// Measure latency in this trial (RFC 2544 §26.2).
    #[serde(default, skip_serializing_if = "core::ops::Not::not")]
    pub latency: bool,
    /// `mtu-probe`: send frames of this size one way at this rate instead of the case's
    /// stream ([`Probe`]; `load` is then a fraction of the probe's rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
}

impl TrialRequest {
    /// Whether `other` asks for the same trial. Loads are compared with a relative tolerance of
    /// 1e-9, so a request read back from JSON still matches the one a replayed search issues.
    pub fn same_as(&self, other: &TrialRequest) -> bool {
        let (a, b) = (self.load.0, other.load.0);
        self.duration == other.duration
            && self.burst_frames == other.burst_frames
            && self.latency == other.latency
            && self.probe == other.probe
            && (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// A timed trial at `load` for `duration`.
    pub fn rate(load: LineFraction, duration: Duration) -> TrialRequest {
        TrialRequest {
            load,
            duration,
            burst_frames: None,
            latency: false,
            probe: None,
        }
    }
}

/// Latency figures of one trial, from the signatures' send timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Smallest one-way latency seen.
    pub min: Nanos,
    /// Mean one-way latency.
    pub mean: Nanos,
    /// Largest one-way latency seen.
    pub max: Nanos,
    /// How many frames contributed.
    pub samples: u64,
    /// The latency distribution's percentiles (the engine's HDR histogram). `None` in trials
    /// recorded before they were kept, and from sources that only give min/mean/max; readers
    /// must say so rather than invent them.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<Percentiles>,
    /// Inter-packet delay variation of the stream (RFC 8219 §7.3.2) from either receiver
    /// (`engine::trial::StreamResult::ipdv`); `None` without two consecutive frames, and in
    /// records from before it was kept (AF_PACKET) or measured by the XDP receiver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipdv: Option<Ipdv>,
}

/// Inter-packet delay variation as RFC 8219 §7.3.2 reports it: the minimum, median and
/// maximum of IPDV(i) = D(i) − D(i−1) over frames with consecutive sequence numbers, signed
/// nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ipdv {
    /// Pairs measured.
    pub pairs: u64,
    pub min_ns: i64,
    pub median_ns: i64,
    pub max_ns: i64,
}

/// RFC 8219 §7.2 / §7.3.1 delay figures of one trial, from its latency summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rfc8219 {
    /// Typical Latency: the median one-way latency.
    pub typical: Nanos,
    /// Worst Case Latency: the 99.9th percentile of one-way latency.
    pub worst_case: Nanos,
    /// Packet Delay Variation: the 99.9th percentile of one-way delay minus the minimum.
    pub pdv: Nanos,
}

impl LatencySummary {
    /// The RFC 8219 figures of this trial; `None` without percentiles (older records, sources
    /// that only give min/mean/max). IPDV (RFC 8219 §7.3.2) needs consecutive frames' delays,
    /// which the summary does not keep.
    pub fn rfc8219(&self) -> Option<Rfc8219> {
        let p = self.percentiles?;
        Some(Rfc8219 {
            typical: p.p50,
            worst_case: p.p99_9,
            pdv: Nanos(p.p99_9.0.saturating_sub(self.min.0)),
        })
    }
}

/// Percentiles of one-way latency (serialized inline in [`LatencySummary`] as `p50`, `p90`,
/// `p99`, `p99_9`; all four or none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50: Nanos,
    /// 90th percentile.
    pub p90: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// 99.9th percentile.
    pub p99_9: Nanos,
}

/// What a trial measured: what was intended, what the tester actually offered, what came back.
///
/// A trial may run in several directions at once (RFC 2544 §14 bidirectional: A→B and B→A,
/// each at the same load). Then `intended` and `offered` are *per direction* line fractions
/// (`offered` is the lowest direction's, so a tester that fell behind in either direction makes
/// the trial tester-limited), while `received` and `lost` are *summed* over the directions. A
/// rate summed over directions is therefore `fraction × directions × line rate`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The load the search asked for, per direction.
    pub intended: LineFraction,
    /// The load the tester really put on the wire (measured, never assumed: DESIGN.md §8); with
    /// several directions, the lowest direction's.
    pub offered: LineFraction,
    /// Frames received at the far port(s), summed over directions.
    pub received: u64,
    /// Frames lost (sequence gaps in the signatures), summed over directions.
    pub lost: u64,
    /// Of the frames sent, how many the far port saw as IP fragments (the engine's `fragment`
    /// count: a first fragment carries the signature), summed over directions. They count as
    /// lost, not received; `mtu-probe` tells a fragmenting DUT from a dropping one by them.
    /// Zero in records written before it was kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fragments: u64,
    /// How many directions ran at once (1 = one-way; 2 = bidirectional). Records written
    /// before this field existed were one-way.
    #[serde(default = "one_direction")]
    pub directions: u32,
    /// How long the trial lasted.
    #[serde(with = "crate::secs")]
    pub duration: Duration,
    /// Latency figures, when the trial measured them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
}

fn one_direction() -> u32 {
    1
}

/// For `skip_serializing_if`: a count absent from a record when zero.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Outcome {
    /// Lost frames over offered frames; 0 when nothing was sent.
    pub fn loss_ratio(&self) -> f64 {
        let sent = self.received + self.lost;
        if sent == 0 {
            0.0
        } else {
            self.lost as f64 / sent as f64
        }
    }

    /// The rate the DUT forwarded, as a fraction of line rate (offered × (1 − loss ratio)).
    pub fn forwarding_rate(&self) -> LineFraction {
        LineFraction(self.offered.0 * (1.0 - self.loss_ratio()))
    }

    /// True when the tester offered more than `tolerance` (a ratio, e.g. 0.01) below the
    /// intended load: the trial says something about the tester, nothing about the DUT.
    pub fn is_tester_limited(&self, tolerance: f64) -> bool {
        self.offered.0 < self.intended.0 * (1.0 - tolerance)
    }
}

/// Whether a search is still running, finished, or stopped because the tester was the limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Status {
    /// More trials are needed.
    Running,
    /// The search finished; its [`Finding`] is a DUT figure.
    Complete,
    /// A trial could not reach its intended load; the search stopped and its finding must not be
    /// reported as a DUT figure.
    TesterLimited {
        /// The load that was asked for.
        intended: LineFraction,
        /// The load the tester reached.
        achieved: LineFraction,
    },
    /// The next trial would have taken the search past its search-time cap: the search stopped
    /// with the best brackets so far. Each bound is still a real measurement at the final trial
    /// duration, but a bracket may be wider than its goal (the goal result is then irregular).
    TimeCapped {
        /// The cap, in seconds of trials.
        #[serde(with = "crate::secs")]
        cap: Duration,
    },
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Running => f.write_str("running"),
            Status::Complete => f.write_str("complete"),
            Status::TesterLimited { intended, achieved } => {
                write!(f, "tester-limited at {achieved} (intended {intended})")
            }
            Status::TimeCapped { cap } => write!(
                f,
                "stopped at the search-time cap of {} s with the best brackets so far",
                cap.as_secs_f64()
            ),
        }
    }
}

/// The answer of one throughput goal: the load interval that brackets the goal's limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GoalResult {
    /// The goal: the largest acceptable loss ratio (0 for RFC 2544 throughput / NDR).
    pub loss_ratio: f64,
    /// Highest load that met the goal in a full-length trial; `None` = not even the minimum load.
    pub lower: Option<LineFraction>,
    /// Lowest load that missed the goal; `None` = the maximum load met it.
    pub upper: Option<LineFraction>,
    /// The goal's settings (RFC 9971 §4.6), for searches that have them (the multi-goal
    /// search); `None` in RFC 2544 binary-search results and in records written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
    /// RFC 9971 Conditional Throughput: the typical forwarding rate at the lower bound (see
    /// [`MultiGoalSearch`]); `None` without a lower bound or outside the multi-goal search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditional_throughput: Option<LineFraction>,
    /// RFC 9971 regular (true) or irregular (false) goal result: regular when both bounds exist
    /// and the bracket is within the goal width; irregular when the maximum load met the goal,
    /// the minimum load missed it, or a search-time cap stopped the search before the width was
    /// reached. `None` outside the multi-goal search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regular: Option<bool>,
    /// The upper bound is the tester's ceiling, not a DUT failure: at that load the tester fell
    /// behind (or lost frames itself), so the bisection stayed below it and the lower bound is
    /// only "at least" — never a DUT figure. False in records written before 849994c.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tester_bound: bool,
}

impl GoalResult {
    /// The throughput for this goal: the lower bound, the only figure a trial has proven;
    /// `None` when the tester bounded it ([`GoalResult::tester_bound`]).
    pub fn throughput(&self) -> Option<LineFraction> {
        self.lower.filter(|_| !self.tester_bound)
    }

    /// (upper − lower) / upper, or `None` when one bound is missing.
    pub fn relative_width(&self) -> Option<f64> {
        match (self.lower, self.upper) {
            (Some(l), Some(u)) if u.0 > 0.0 => Some((u.0 - l.0) / u.0),
            _ => None,
        }
    }
}

/// One point of the RFC 2544 §26.3 frame-loss-rate curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossPoint {
    /// Offered load of the trial.
    pub load: LineFraction,
    /// Its loss ratio.
    pub loss_ratio: f64,
}

/// What a methodology found; which variant depends on the methodology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Finding {
    /// Nothing yet.
    Nothing,
    /// Throughput per loss-ratio goal (RFC 2544 §26.1 has one goal, MLRsearch several).
    Throughput {
        /// One entry per goal, in the order the goals were configured.
        goals: Vec<GoalResult>,
    },
    /// Latency at one load (RFC 2544 §26.2).
    Latency {
        /// The load the trials ran at.
        load: LineFraction,
        /// Each trial's latency figures.
        trials: Vec<LatencySummary>,
        /// Mean of the trials' means (RFC 2544: "the average of the recorded values").
        mean: Option<Nanos>,
    },
    /// Frame-loss rate per load (RFC 2544 §26.3), in the order measured.
    LossCurve {
        /// Points from the highest load down.
        points: Vec<LossPoint>,
    },
    /// Forwarding rate at one offered load (RFC 2285 §3.6.1, RFC 2889 §5.1: at the maximum
    /// offered load), per trial and their mean, as fractions of line rate per direction.
    ForwardingRate {
        /// The offered load of every trial.
        load: LineFraction,
        /// Each trial's forwarding rate, in the order measured.
        rates: Vec<LineFraction>,
        /// Their mean; `None` before the first trial.
        mean: Option<LineFraction>,
    },
    /// Longest loss-free back-to-back burst (RFC 2544 §26.4).
    BackToBack {
        /// Per repetition, the longest burst forwarded without loss.
        lengths: Vec<u64>,
        /// Their mean.
        mean: Option<f64>,
    },
    /// `mtu-probe`: per direction, the largest frame size that crossed whole and the fate
    /// one byte above it ([`MtuProbe`]).
    MtuProbe {
        /// In the order probed (forward first).
        directions: Vec<MtuThreshold>,
    },
}

/// Everything a search can tell about itself: status, finding and cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Running, complete, or stopped by the tester.
    pub status: Status,
    /// What was found so far; a DUT figure only when `status` is [`Status::Complete`].
    pub finding: Finding,
    /// Trials requested.
    pub trials: u32,
    /// Sum of the requested trial durations, in seconds (the cost the searches compete on).
    pub trial_seconds: f64,
}

impl SearchResult {
    /// The throughput for goal `index`, only when the search completed (never from a
    /// tester-limited search).
    pub fn throughput(&self, index: usize) -> Option<LineFraction> {
        match (&self.status, &self.finding) {
            (Status::Complete, Finding::Throughput { goals }) => goals.get(index)?.throughput(),
            _ => None,
        }
    }
}

/// A methodology: a state machine that picks the next trial from the previous outcome.
///
/// Protocol: call `next(None)` first; run the returned trial; call `next(Some(&outcome))` with
/// its outcome; repeat until `next` returns `None`. Outcomes must come back in request order.
pub trait Search {
    /// Learns from `last` (the outcome of the previously returned request) and returns the next
    /// trial, or `None` when the search is over.
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest>;
    /// The current result (final once `next` returned `None`).
    fn result(&self) -> SearchResult;
    /// Whether the search can go on below a load the tester could not keep
    /// ([`Search::next_tester_limited`]). The bisections can: a trial the tester limited is
    /// an upper bound of the tester's, and a DUT failure found below it is still the DUT's.
    /// The others stop at it (the runner then marks the result tester-limited).
    fn bounds_tester_ceiling(&self) -> bool {
        false
    }
    /// As [`Search::next`], for an outcome the tester, not the DUT, limited, although its
    /// offered load may read as intended (it slipped frames, or lost frames it received).
    /// Only called when [`Search::bounds_tester_ceiling`]; the default stops.
    fn next_tester_limited(&mut self, last: &Outcome) -> Option<TrialRequest> {
        let _ = last;
        None
    }
}

/// A search configuration that cannot work, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidConfig(pub String);

impl fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid search configuration: {}", self.0)
    }
}

impl std::error::Error for InvalidConfig {}

pub(crate) fn check(ok: bool, why: impl FnOnce() -> String) -> Result<(), InvalidConfig> {
    if ok {
        Ok(())
    } else {
        Err(InvalidConfig(why()))
    }
}

/// Runs `search` to the end, calling `run` for every trial. The executor of a real run does the
/// same with the engine in place of `run`; tests pass a simulated DUT.
pub fn drive(
    search: &mut dyn Search,
    mut run: impl FnMut(&TrialRequest) -> Outcome,
) -> SearchResult {
    let mut last: Option<Outcome> = None;
    while let Some(request) = search.next(last.as_ref()) {
        last = Some(run(&request));
    }
    search.result()
}

/// A recorded trial whose request differs from what the search asks for now: the plan or the
/// code changed since the trial was recorded, so the recorded outcome cannot be reused.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayMismatch {
    /// Position of the first recorded trial that does not match.
    pub index: usize,
    /// What the search asks for.
    pub expected: Option<TrialRequest>,
    /// What was recorded.
    pub recorded: TrialRequest,
}

impl fmt::Display for ReplayMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recorded trial {} ({:?}) is not what the search asks for now ({:?}); the plan changed since the run started",
            self.index, self.recorded, self.expected
        )
    }
}

impl std::error::Error for ReplayMismatch {}

/// Feeds recorded `(request, outcome, tester-limited)` trials back into a fresh `search` (for
/// `--resume`) and returns the first request that still has to run, or `None` if the search
/// had finished. Because searches are deterministic, the state after replay is the state
/// before the kill. A trial the runner recorded tester-limited goes back the way it went
/// ([`Search::next_tester_limited`]).
pub fn replay(
    search: &mut dyn Search,
    recorded: &[(TrialRequest, Outcome, bool)],
) -> Result<Option<TrialRequest>, ReplayMismatch> {
    let mut next = search.next(None);
    for (index, (request, outcome, tester_limited)) in recorded.iter().enumerate() {
        if !next.as_ref().is_some_and(|n| n.same_as(request)) {
            return Err(ReplayMismatch {
                index,
                expected: next,
                recorded: *request,
            });
        }
        next = if *tester_limited && search.bounds_tester_ceiling() {
            search.next_tester_limited(outcome)
        } else {
            search.next(Some(outcome))
        };
    }
    Ok(next)
}

/// Book-keeping every search shares: cost, the pending request and tester-limited detection.
#[derive(Debug, Clone)]
pub(crate) struct Ledger {
    tolerance: f64,
    pending: Option<TrialRequest>,
    trials: u32,
    trial_seconds: f64,
    limited: Option<(LineFraction, LineFraction)>,
    /// The search goes on below a tester-limited load ([`Search::bounds_tester_ceiling`]).
    bounded: bool,
    /// The lowest load the tester could not keep (intended, reached), for a bounded search.
    ceiling: Option<(LineFraction, LineFraction)>,
}

/// What [`Ledger::take`] makes of the outcome handed to `next`.
pub(crate) enum Step<'a> {
    /// First call (or no outcome pending): nothing to learn.
    Start,
    /// A DUT outcome to learn from.
    Learn(&'a Outcome),
    /// Stop: the tester was the limit (now or before).
    Stop,
    /// A bounded search's trial the tester limited: an upper bound of the tester's
    /// ([`Ledger::ceiling`] is at or below its load), not a DUT outcome.
    Ceiling(&'a Outcome),
}

impl Ledger {
    pub(crate) fn new(tolerance: f64) -> Ledger {
        Ledger {
            tolerance,
            pending: None,
            trials: 0,
            trial_seconds: 0.0,
            limited: None,
            bounded: false,
            ceiling: None,
        }
    }

    /// A ledger for a search that goes on below the tester's ceiling (the bisections).
    pub(crate) fn bounding(tolerance: f64) -> Ledger {
        Ledger {
            bounded: true,
            ..Ledger::new(tolerance)
        }
    }

    pub(crate) fn take<'a>(&mut self, last: Option<&'a Outcome>) -> Step<'a> {
        if self.limited.is_some() {
            return Step::Stop;
        }
        match (self.pending.take(), last) {
            (Some(_), Some(o)) => {
                if o.is_tester_limited(self.tolerance) {
                    self.tester_limited(o)
                } else {
                    Step::Learn(o)
                }
            }
            _ => Step::Start,
        }
    }

    /// `o` (the pending request's outcome) was the tester's: a ceiling for a bounded search,
    /// the end of any other.
    pub(crate) fn take_tester_limited<'a>(&mut self, o: &'a Outcome) -> Step<'a> {
        if self.limited.is_some() || self.pending.take().is_none() {
            return Step::Stop;
        }
        self.tester_limited(o)
    }

    fn tester_limited<'a>(&mut self, o: &'a Outcome) -> Step<'a> {
        if !self.bounded {
            self.limited = Some((o.intended, o.offered));
            return Step::Stop;
        }
        if self.ceiling.is_none_or(|(c, _)| o.intended.0 < c.0) {
            self.ceiling = Some((o.intended, o.offered));
        }
        Step::Ceiling(o)
    }

    /// Whether `upper`, a goal's upper bound, is the tester's ceiling rather than a DUT failure.
    pub(crate) fn is_tester_bound(&self, upper: Option<f64>) -> bool {
        match (self.ceiling, upper) {
            (Some((c, _)), Some(u)) => u >= c.0 * (1.0 - 1e-9),
            _ => false,
        }
    }

    pub(crate) fn issue(&mut self, request: TrialRequest) -> Option<TrialRequest> {
        self.trials += 1;
        self.trial_seconds += request.duration.as_secs_f64();
        self.pending = Some(request);
        Some(request)
    }

    pub(crate) fn trial_seconds(&self) -> f64 {
        self.trial_seconds
    }

    /// The result of a search stopped by its search-time cap (unless the tester stopped it).
    pub(crate) fn capped(&self, cap: Duration, finding: Finding) -> SearchResult {
        let mut r = self.result(true, finding);
        if r.status == Status::Complete {
            r.status = Status::TimeCapped { cap };
        }
        r
    }

    pub(crate) fn result(&self, finished: bool, finding: Finding) -> SearchResult {
        // A bounded search whose every goal ended under the tester's ceiling found nothing
        // about the DUT: tester-limited, at the ceiling.
        let all_bound = matches!(&finding, Finding::Throughput { goals }
            if !goals.is_empty() && goals.iter().all(|g| g.tester_bound));
        let status = match (self.limited, finished, self.ceiling) {
            (Some((intended, achieved)), _, _) => Status::TesterLimited { intended, achieved },
            (None, true, Some((intended, achieved))) if all_bound => {
                Status::TesterLimited { intended, achieved }
            }
            (None, true, _) => Status::Complete,
            (None, false, _) => Status::Running,
        };
        SearchResult {
            status,
            finding,
            trials: self.trials,
            trial_seconds: self.trial_seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(intended: f64, offered: f64, received: u64, lost: u64) -> Outcome {
        Outcome {
            intended: LineFraction(intended),
            offered: LineFraction(offered),
            received,
            lost,
            fragments: 0,
            directions: 1,
            duration: Duration::from_secs(1),
            latency: None,
        }
    }

    #[test]
    fn loss_ratio_and_forwarding_rate() {
        let o = outcome(1.0, 1.0, 750, 250);
        assert_eq!(o.loss_ratio(), 0.25);
        assert_eq!(o.forwarding_rate(), LineFraction(0.75));
        assert_eq!(outcome(1.0, 0.0, 0, 0).loss_ratio(), 0.0);
    }

    #[test]
    fn tester_limited_threshold() {
        assert!(!outcome(1.0, 0.995, 1, 0).is_tester_limited(0.01));
        assert!(outcome(1.0, 0.98, 1, 0).is_tester_limited(0.01));
    }

    #[test]
    fn line_fraction_pps_round_trip() {
        let max = Pps(1_488_095.0);
        let f = LineFraction::from_pps(Pps(744_047.5), max);
        assert!((f.0 - 0.5).abs() < 1e-12);
        assert!((f.to_pps(max).0 - 744_047.5).abs() < 1e-6);
        assert_eq!(f.to_string(), "50.000 %");
    }

    #[test]
    fn outcome_json_uses_seconds() {
        let o = outcome(0.5, 0.5, 10, 0);
        let j = serde_json::to_string(&o).unwrap();
        assert!(j.contains("\"duration\":1.0"), "{j}");
        let back: Outcome = serde_json::from_str(&j).unwrap();
        assert_eq!(back, o);
    }

    #[test]
    fn old_records_load_as_one_way_without_percentiles() {
        let j = r#"{"intended":0.5,"offered":0.5,"received":10,"lost":0,"duration":1.0,
            "latency":{"min":1000,"mean":2000,"max":9000,"samples":10}}"#;
        let o: Outcome = serde_json::from_str(j).unwrap();
        assert_eq!(o.directions, 1);
        let l = o.latency.unwrap();
        assert_eq!(l.percentiles, None);
        assert_eq!(l.max, Nanos(9000));
    }

    /// RFC 8219 names on a worked example: delays whose median is 40 µs, 99.9th percentile
    /// 90 µs and minimum 25 µs give Typical Latency 40 µs, Worst Case Latency 90 µs and
    /// PDV 90 − 25 = 65 µs.
    #[test]
    fn rfc8219_typical_worst_case_and_pdv() {
        let l = LatencySummary {
            min: Nanos(25_000),
            mean: Nanos(42_000),
            max: Nanos(120_000),
            samples: 1000,
            ipdv: None,
            percentiles: Some(Percentiles {
                p50: Nanos(40_000),
                p90: Nanos(60_000),
                p99: Nanos(80_000),
                p99_9: Nanos(90_000),
            }),
        };
        assert_eq!(
            l.rfc8219(),
            Some(Rfc8219 {
                typical: Nanos(40_000),
                worst_case: Nanos(90_000),
                pdv: Nanos(65_000),
            })
        );
        assert_eq!(
            LatencySummary {
                ipdv: None,
                percentiles: None,
                ..l
            }
            .rfc8219(),
            None
        );
    }

    #[test]
    fn percentiles_round_trip_inline() {
        let mut o = outcome(0.5, 0.5, 10, 0);
        o.directions = 2;
        o.latency = Some(LatencySummary {
            min: Nanos(1),
            mean: Nanos(5),
            max: Nanos(99),
            samples: 10,
            ipdv: None,
            percentiles: Some(Percentiles {
                p50: Nanos(4),
                p90: Nanos(8),
                p99: Nanos(20),
                p99_9: Nanos(50),
            }),
        });
        let j = serde_json::to_string(&o).unwrap();
        assert!(
            j.contains("\"p99_9\":50") && j.contains("\"directions\":2"),
            "{j}"
        );
        let back: Outcome = serde_json::from_str(&j).unwrap();
        assert_eq!(back, o);
    }
}
