//! Stateful NATxy / stateful-firewall searches after RFC 9693 (Lencse & Shima, "Benchmarking
//! Methodology for Stateful NATxy Gateways"): how many connections the DUT's connection table
//! holds (`nat-table-capacity`) and how many new connections per second it sets up
//! (`nat-connection-rate`).
//!
//! # The trial
//!
//! Every trial has RFC 9693's two test phases (phase 1, the preliminary phase, and phase 2, the
//! real test), and starts with an empty connection table (RFC 9693, "Control of the Connection
//! Tracking Table Entries": entries are
//! flushed, or left to time out, between trials — the runner's duty, not the search's):
//!
//! 1. **Preliminary phase.** The initiator sends one frame from each of `connections`
//!    distinct 4-tuples, at `rate` new connections per second; each frame makes the DUT create
//!    one connection (and, for a NAT, one translation). The responder records the (translated)
//!    4-tuples it receives.
//! 2. **Validation.** After `gap`, the responder sends one frame back on every learned 4-tuple at
//!    `validation_rate`; the initiator counts what arrives. A reply crosses the DUT only if
//!    its connection still exists (RFC 9693, "Validation of Connection Establishment").
//!
//! Section titles rather than numbers are cited here; docs/methodology.md maps them to the
//! section numbers and says how they were checked.
//!
//! A trial **passes** when every preliminary frame arrived (the responder learned all N
//! tuples) *and* every validation frame came back. The preliminary test alone is not enough:
//! a DUT that evicts old connections to make room forwards every new one, and only the
//! validation shows that the early ones are gone.
//!
//! # Why a separate trait
//!
//! [`super::Search`] speaks offered loads as fractions of line rate; these searches move the
//! number of connections and the rate of *new* connections, and their outcome has two phases.
//! [`ConnSearch`] keeps the same protocol (`next(outcome) -> Option<request>`, no I/O, no
//! clock, deterministic, so recorded outcomes replay) with its own request and outcome types.

use core::fmt;
use core::time::Duration;

use serde::{Deserialize, Serialize};

use super::{check, InvalidConfig, DEFAULT_TESTER_TOLERANCE};

/// New connections per second. In the preliminary phase one frame creates one connection, so
/// this is also that phase's frame rate.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ConnRate(pub f64);

impl fmt::Display for ConnRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.0} connections/s", self.0)
    }
}

fn positive_rate(r: ConnRate, what: &str) -> Result<(), InvalidConfig> {
    check(r.0.is_finite() && r.0 > 0.0, || {
        format!("{what} {} must be a positive number of connections/s", r.0)
    })
}

/// One trial of a connection search: a preliminary phase creating `connections` connections,
/// then a validation phase on the learned tuples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConnTrial {
    /// N: distinct 4-tuples the initiator sends from, one frame each.
    pub connections: u64,
    /// Rate of the preliminary phase.
    pub rate: ConnRate,
    /// Rate of the validation frames (one per learned tuple).
    pub validation_rate: ConnRate,
    /// Wait between the last preliminary frame and the first validation frame, so that frames
    /// still in flight (or queued in the DUT) reach the responder first.
    #[serde(with = "crate::secs")]
    pub gap: Duration,
    /// What follows the validation (RFC 9693's real test): nothing for the capacity and rate
    /// searches, a tear-down (`nat-teardown-rate`) or a load on the N connections
    /// (`nat-throughput`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real: Option<RealTest>,
}

/// RFC 9693's real test after the connections were established and validated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RealTest {
    /// Delete every connection of the DUT's table and time it ("connection tear-down rate").
    Teardown,
    /// Frames on the N established connections, both directions at once, for `duration`:
    /// the initiator cycles through the N tuples it opened, the responder through the N
    /// tuples it learned (the return traffic on the translated tuples). `pps` is the rate of
    /// each direction.
    Load {
        pps: f64,
        #[serde(with = "crate::secs")]
        duration: Duration,
    },
}

impl ConnTrial {
    /// How long the trial lasts: preliminary phase, gap, validation phase. Its cost, and the
    /// age the first connection reaches before it is validated — the DUT's connection timeouts
    /// must be longer than this, or the trial measures the timeout, not the table.
    pub fn duration(&self) -> Duration {
        let n = self.connections as f64;
        let secs = n / self.rate.0 + n / self.validation_rate.0;
        // Rates were checked positive and N is bounded, so this is finite; saturate anyway.
        let load = match self.real {
            Some(RealTest::Load { duration, .. }) => duration,
            _ => Duration::ZERO,
        };
        Duration::try_from_secs_f64(secs)
            .unwrap_or(Duration::MAX)
            .saturating_add(self.gap)
            .saturating_add(load)
    }

    /// Frames each direction of the real test's load sends (`None` without a load).
    pub fn load_frames(&self) -> Option<u64> {
        match self.real {
            Some(RealTest::Load { pps, duration }) => {
                Some((pps * duration.as_secs_f64()).round().max(1.0) as u64)
            }
            _ => None,
        }
    }

    /// Whether `other` asks for the same trial (rates compared with a relative tolerance of
    /// 1e-9, as [`super::TrialRequest::same_as`] does, so a request read back from JSON
    /// matches).
    pub fn same_as(&self, other: &ConnTrial) -> bool {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        self.connections == other.connections
            && self.gap == other.gap
            && close(self.rate.0, other.rate.0)
            && close(self.validation_rate.0, other.validation_rate.0)
            && match (self.real, other.real) {
                (None, None) | (Some(RealTest::Teardown), Some(RealTest::Teardown)) => true,
                (
                    Some(RealTest::Load { pps, duration }),
                    Some(RealTest::Load {
                        pps: p2,
                        duration: d2,
                    }),
                ) => close(pps, p2) && duration == d2,
                _ => false,
            }
    }
}

/// Which connections failed validation, by creation order (0 = the first preliminary frame).
/// Enough to tell "the newest were never created" from "the oldest were evicted" without
/// keeping a list of a million indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedSpan {
    /// How many connections failed (never learned by the responder, or their reply lost).
    pub count: u64,
    /// Lowest creation index among them.
    pub first: u64,
    /// Highest creation index among them.
    pub last: u64,
}

/// What one connection trial measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConnOutcome {
    /// The trial's N.
    pub connections: u64,
    /// The preliminary rate the search asked for.
    pub intended_rate: ConnRate,
    /// The preliminary rate the tester really achieved (measured, DESIGN.md §7).
    pub offered_rate: ConnRate,
    /// Preliminary frames the initiator sent (N unless the tester fell short).
    pub preliminary_sent: u64,
    /// Preliminary frames the responder received (distinct tuples it learned).
    pub preliminary_received: u64,
    /// Validation frames the responder sent (one per learned tuple).
    pub validation_sent: u64,
    /// Validation frames the initiator received.
    pub validation_received: u64,
    /// The connections that did not validate, when the runner can tell which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<FailedSpan>,
    /// The tear-down, when the trial asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<TeardownOutcome>,
    /// The load on the established connections, when the trial asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadOutcome>,
}

/// What deleting the DUT's connections measured (RFC 9693 "connection tear-down rate").
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TeardownOutcome {
    /// Entries in the DUT's table just before the deletion (the DUT's own count).
    pub entries_before: u64,
    /// Entries just after it: 0 when every connection was removed.
    pub entries_after: u64,
    /// How long the deletion took, ns, from the DUT's side (the deleting command's own
    /// start-up included).
    pub delete_ns: u64,
    /// How long the same deletion takes on the then empty table, ns: the fixed cost of the
    /// command, subtracted from `delete_ns`.
    pub empty_ns: u64,
}

impl TeardownOutcome {
    /// Connections the deletion removed.
    pub fn removed(&self) -> u64 {
        self.entries_before.saturating_sub(self.entries_after)
    }

    /// removed / (delete − empty): the tear-down rate, `None` when the deletion was not
    /// measurably slower than the empty one (then only [`Self::rate_at_least`] holds).
    pub fn rate(&self) -> Option<ConnRate> {
        let d = self
            .delete_ns
            .checked_sub(self.empty_ns)
            .filter(|&d| d > 0)?;
        (self.removed() > 0).then(|| ConnRate(self.removed() as f64 * 1e9 / d as f64))
    }

    /// removed / delete: a lower bound of the rate (the command's fixed cost left in).
    pub fn rate_at_least(&self) -> Option<ConnRate> {
        (self.removed() > 0 && self.delete_ns > 0)
            .then(|| ConnRate(self.removed() as f64 * 1e9 / self.delete_ns as f64))
    }
}

/// What the load on the established connections measured, per direction.
/// Which packet engine sent and counted a `nat-throughput` load, as the record names it
/// (`engine::nat::LoadEngine` in the engine; this crate builds without the engine, so the
/// testbed maps one to the other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBackend {
    AfPacket,
    Xdp,
}

/// The scheduling priority a `nat-throughput` load's sender threads ran with
/// (`engine::nat::priority::SenderPriority`, mapped by the testbed as [`LoadBackend`] is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LoadPriority {
    Fifo {
        priority: i32,
    },
    Nice {
        nice: i32,
    },
    /// The engine could not raise them (not root): they kept the port's nice −10 at best.
    Unraised,
}

impl fmt::Display for LoadPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadPriority::Fifo { priority } => write!(f, "SCHED_FIFO {priority}"),
            LoadPriority::Nice { nice } => write!(f, "nice {nice}"),
            LoadPriority::Unraised => f.write_str("not raised"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadOutcome {
    /// The rate asked for, each direction (frames/s).
    pub intended_pps: f64,
    /// Initiator → responder, on the opened tuples.
    pub forward_sent: u64,
    pub forward_received: u64,
    pub forward_pps: f64,
    /// Responder → initiator, on the learned (translated) tuples.
    pub reverse_sent: u64,
    pub reverse_received: u64,
    pub reverse_pps: f64,
    /// The DUT's table entries right after the load (the lab DUT's own count), when known:
    /// the N connections must still be there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut_entries: Option<u64>,
    /// Frames that arrived for a connection on another tuple than its own (never counted as
    /// received), both directions.
    #[serde(default)]
    pub misdirected: u64,
    /// Frames the tester's own receive rings dropped: the tester's loss, not the DUT's.
    #[serde(default)]
    pub tester_drops: u64,
    /// The engine that sent and counted the load (`None` in records written before there was
    /// a choice: AF_PACKET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<LoadBackend>,
    /// Frames the DUT's ports refused at hand-over (XDP through a veth: its ring was full):
    /// sent, and lost in the DUT.
    #[serde(default)]
    pub refused_by_dut: u64,
    /// Connections that received fewer frames than were sent on them, both directions
    /// (counted per connection by the XDP engine; `None` on AF_PACKET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_connections: Option<u64>,
    /// The priority the senders ran with (`None`: AF_PACKET, or recorded before the engine
    /// raised it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_priority: Option<LoadPriority>,
}

impl LoadOutcome {
    /// Every frame of both directions arrived (RFC 2544 throughput: zero loss).
    pub fn lossless(&self) -> bool {
        self.forward_sent > 0
            && self.reverse_sent > 0
            && self.forward_received >= self.forward_sent
            && self.reverse_received >= self.reverse_sent
    }

    /// The load lost frames although the tester sent all `frames` of both directions and its
    /// own rings dropped none: whatever its rate over the whole load reads, the tester at
    /// worst paused (a sender behind by more than its debt cap skips ahead, never bursts
    /// more), and a pause rests the DUT — the loss is the DUT's.
    pub fn loss_is_the_duts(&self, frames: u64) -> bool {
        !self.lossless()
            && self.tester_drops == 0
            && self.forward_sent >= frames
            && self.reverse_sent >= frames
    }

    /// The tester offered less than asked in either direction.
    pub fn is_tester_limited(&self, tolerance: f64) -> bool {
        let floor = self.intended_pps * (1.0 - tolerance);
        self.forward_pps < floor || self.reverse_pps < floor || self.tester_drops > 0
    }
}

impl ConnOutcome {
    /// RFC 9693's pass criterion: all N preliminary frames arrived and every connection
    /// validated.
    pub fn passed(&self) -> bool {
        self.preliminary_received >= self.connections
            && self.validation_sent >= self.connections
            && self.validation_received >= self.validation_sent
    }

    /// True when the tester did not send all N preliminary frames or fell more than
    /// `tolerance` below the asked rate: then the trial says nothing about the DUT.
    pub fn is_tester_limited(&self, tolerance: f64) -> bool {
        self.preliminary_sent < self.connections
            || self.offered_rate.0 < self.intended_rate.0 * (1.0 - tolerance)
            || self.load.is_some_and(|l| l.is_tester_limited(tolerance))
    }

    /// What a failed trial says about the table (see [`PastCapacity`]).
    pub fn past_capacity(&self) -> PastCapacity {
        let Some(f) = self.failed.filter(|f| f.count > 0 && f.first <= f.last) else {
            return PastCapacity::Unknown;
        };
        let n = self.connections;
        let contiguous =
            f.last.checked_sub(f.first).and_then(|d| d.checked_add(1)) == Some(f.count);
        let newest = contiguous && f.last.checked_add(1) == Some(n);
        let oldest = contiguous && f.first == 0;
        let all_arrived = self.preliminary_received >= n;
        // When every connection failed, both ends are touched; whether the preliminary frames
        // arrived then tells "never created" from "created, then lost".
        match (newest, oldest, all_arrived) {
            (_, true, true) => PastCapacity::OldestLost,
            (true, _, false) => PastCapacity::NewDropped,
            _ => PastCapacity::Mixed,
        }
    }
}

/// What happens when more connections are offered than the table holds, as a failed trial
/// shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PastCapacity {
    /// The newest connections were refused: their preliminary frames were dropped and exactly
    /// the last ones failed (a table that drops new flows when full, like Linux conntrack
    /// without early drop).
    NewDropped,
    /// Every preliminary frame was forwarded but exactly the oldest connections failed
    /// validation: they were evicted to make room — or timed out, which looks the same; hence
    /// the trial must be shorter than the DUT's timeouts ([`ConnTrial::duration`]).
    OldestLost,
    /// Failures in both places or in the middle (e.g. hash-bucket limits, random early drop).
    Mixed,
    /// The runner did not say which connections failed.
    Unknown,
}

impl fmt::Display for PastCapacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PastCapacity::NewDropped => "new connections dropped",
            PastCapacity::OldestLost => "oldest connections evicted (or timed out)",
            PastCapacity::Mixed => "connections lost in no clear order",
            PastCapacity::Unknown => "unknown which connections were lost",
        })
    }
}

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
    /// Sum of the requested trials' [`ConnTrial::duration`]s, in seconds.
    pub trial_seconds: f64,
}

/// A connection methodology: the same protocol as [`super::Search`] — call `next(None)`, run
/// the trial, call `next(Some(&outcome))`, until `None`.
pub trait ConnSearch {
    /// Learns from `last` and returns the next trial, or `None` when the search is over.
    fn next(&mut self, last: Option<&ConnOutcome>) -> Option<ConnTrial>;
    /// The current result (final once `next` returned `None`).
    fn result(&self) -> ConnSearchResult;
}

/// Runs `search` to the end with `run` as the DUT (a simulated one in tests).
pub fn drive_conn(
    search: &mut dyn ConnSearch,
    mut run: impl FnMut(&ConnTrial) -> ConnOutcome,
) -> ConnSearchResult {
    let mut last: Option<ConnOutcome> = None;
    while let Some(t) = search.next(last.as_ref()) {
        last = Some(run(&t));
    }
    search.result()
}

/// A recorded connection trial that is not what the search asks for now (the plan or the code
/// changed since it was recorded), so its outcome cannot be reused.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnReplayMismatch {
    /// Position of the first recorded trial that does not match.
    pub index: usize,
    /// What the search asks for.
    pub expected: Option<ConnTrial>,
    /// What was recorded.
    pub recorded: ConnTrial,
}

impl fmt::Display for ConnReplayMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recorded connection trial {} ({:?}) is not what the search asks for now ({:?}); the plan changed since the run started",
            self.index, self.recorded, self.expected
        )
    }
}

impl std::error::Error for ConnReplayMismatch {}

/// Feeds recorded `(trial, outcome)` pairs back into a fresh `search` (for `--resume`, as
/// [`super::replay`] does for the load searches) and returns the first trial that still has
/// to run, or `None` if the search had finished. The searches are deterministic, so the state
/// after replay is the state before the kill.
pub fn replay_conn(
    search: &mut dyn ConnSearch,
    recorded: &[(ConnTrial, ConnOutcome)],
) -> Result<Option<ConnTrial>, Box<ConnReplayMismatch>> {
    let mut next = search.next(None);
    for (index, (trial, outcome)) in recorded.iter().enumerate() {
        if !next.as_ref().is_some_and(|n| n.same_as(trial)) {
            return Err(Box::new(ConnReplayMismatch {
                index,
                expected: next,
                recorded: *trial,
            }));
        }
        next = search.next(Some(outcome));
    }
    Ok(next)
}

/// Book-keeping both searches share: cost, the pending trial, tester-limited detection.
#[derive(Debug, Clone)]
struct ConnLedger {
    tolerance: f64,
    /// The trial last issued, whose outcome `next` expects: the search learns from what it
    /// asked for (N, rate), never from numbers in the outcome that could disagree.
    pending: Option<ConnTrial>,
    trials: u32,
    trial_seconds: f64,
    limited: Option<(ConnRate, ConnRate)>,
    finished: bool,
    /// Tester-limited trials go to the search like any other instead of stopping it (a
    /// search that ends each of several parts on its own: `nat-throughput` per N).
    limits_per_trial: bool,
}

impl ConnLedger {
    fn new(tolerance: f64) -> ConnLedger {
        ConnLedger {
            tolerance,
            pending: None,
            trials: 0,
            trial_seconds: 0.0,
            limited: None,
            finished: false,
            limits_per_trial: false,
        }
    }

    /// The trial that ran and its outcome, to learn from; `Err(())` when the search must stop.
    fn take<'a>(
        &mut self,
        last: Option<&'a ConnOutcome>,
    ) -> Result<Option<(ConnTrial, &'a ConnOutcome)>, ()> {
        if self.limited.is_some() || self.finished {
            return Err(());
        }
        match (self.pending.take(), last) {
            (Some(_), Some(o)) if !self.limits_per_trial && o.is_tester_limited(self.tolerance) => {
                self.limited = Some(match o.load {
                    Some(l) if l.is_tester_limited(self.tolerance) => (
                        ConnRate(l.intended_pps),
                        ConnRate(l.forward_pps.min(l.reverse_pps)),
                    ),
                    _ => (o.intended_rate, o.offered_rate),
                });
                Err(())
            }
            (Some(t), Some(o)) => Ok(Some((t, o))),
            _ => Ok(None),
        }
    }

    fn issue(&mut self, t: ConnTrial) -> Option<ConnTrial> {
        self.trials += 1;
        self.trial_seconds += t.duration().as_secs_f64();
        self.pending = Some(t);
        Some(t)
    }

    fn status(&self) -> ConnStatus {
        match (self.limited, self.finished) {
            (Some((intended, achieved)), _) => ConnStatus::TesterLimited { intended, achieved },
            (None, true) => ConnStatus::Complete,
            (None, false) => ConnStatus::Running,
        }
    }

    fn result(&self, finding: ConnFinding) -> ConnSearchResult {
        ConnSearchResult {
            status: self.status(),
            finding,
            trials: self.trials,
            trial_seconds: self.trial_seconds,
        }
    }
}

/// The most connections a search may ask for: 2^32 (far above any table and any flow set the
/// engine can cycle through; it keeps every count and duration finite).
pub const MAX_CONNECTIONS: u64 = 1 << 32;

/// Parameters of [`TableCapacitySearch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TableCapacityConfig {
    /// First N tried (RFC 9693's C0 in the table-capacity measurement, a "safe" size the table
    /// surely holds).
    pub start: u64,
    /// Largest N ever tried (`max-connections`).
    pub max: u64,
    /// Stop when upper − lower ≤ this many connections (1 = the exact capacity).
    pub resolution: u64,
    /// Preliminary rate of every trial: one the DUT sustains (e.g. half the measured
    /// connection rate), so that a failure means "table full", not "too fast".
    pub rate: ConnRate,
    /// Rate of the validation frames.
    pub validation_rate: ConnRate,
    /// Wait between the phases.
    pub gap: Duration,
    /// See [`ConnOutcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

impl TableCapacityConfig {
    /// A config with the usual defaults for the rest: start at 1,000 (or `max` if smaller),
    /// exact resolution, validation at the preliminary rate, 1 s gap.
    pub fn new(max: u64, rate: ConnRate) -> TableCapacityConfig {
        TableCapacityConfig {
            start: 1000.min(max.max(1)),
            max,
            resolution: 1,
            rate,
            validation_rate: rate,
            gap: Duration::from_secs(1),
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        }
    }
}

/// `nat-table-capacity`: the largest number of connections the DUT holds.
///
/// Rules (every trial at the fixed preliminary `rate`):
/// 1. Try `start`. While every trial passes, double N (capped at `max`): RFC 9693's
///    exponential search for the order of magnitude, so that the expensive trials — a trial
///    costs time in proportion to N — stay near the capacity instead of at `max`.
/// 2. Once a trial fails, bisect between the largest passing N (0 if none) and the smallest
///    failing N until they are at most `resolution` apart. Only N strictly inside the bracket
///    is ever tried, so the bracket never inverts, even if the DUT is not consistent.
/// 3. Stop when `max` passes (the table holds at least `max`; `upper` stays `None`), or when the
///    bracket is narrow enough, or when `start` fails and bisection reaches N = 1.
///
/// Two refinements keep the search short and its answer exact on a busy DUT:
/// - **Hints.** A failing trial at N in which k connections still validated (0 < k < N) says
///   the table held k then: k is tried next (if inside the bracket; k + `resolution` if k
///   already passed), and if it passes, k + `resolution` right after — for a table that drops new connections or evicts the oldest,
///   that closes the bracket in two trials instead of log2(N) (6,000 of a table of 6,000 in 7
///   trials instead of 16). At most [`MAX_HINTS`] hints are followed; a hint is only a choice
///   of the next N, the bracket still moves only on trials, so a wrong hint costs a trial,
///   never the answer.
/// - **Messy failures are measured again, slower.** A failing trial whose failed connections
///   are neither exactly the newest nor exactly the oldest ([`PastCapacity::Mixed`], or
///   [`PastCapacity::Unknown`]) is not the shape of a full table but of a DUT that could not
///   keep up with the set-up rate (its input queue overflowed here and there). It is measured
///   once more at half the rate, and that trial decides. A run of 2026-11-26 found 9,999 for a
///   table of 10,000 this way: the trial at 10,000 lost 376 connections in no clear order.
///
/// RFC 9693 ("Measurement of the Connection Tracking Table Capacity") measures the maximum
/// connection establishment rate at every N and takes a collapse of that rate as "past the
/// capacity"; here one trial at a rate known to be safe decides each N, which gives the same answer for a DUT whose rate does not depend on how
/// full the table is, at a fraction of the cost. The result also says what the failing trial
/// showed: new connections dropped, or the oldest ones lost.
#[derive(Debug, Clone)]
pub struct TableCapacitySearch {
    cfg: TableCapacityConfig,
    ledger: ConnLedger,
    lower: Option<u64>,
    upper: Option<u64>,
    past: Option<PastCapacity>,
    /// How many connections validated in the last failing trial: the size the table held
    /// then, tried next (see the type's rules).
    hint: Option<u64>,
    /// The N just above a passing hint, tried next.
    probe: Option<u64>,
    /// The N last tried came from a hint.
    hinted: bool,
    /// Hints followed so far (at most [`MAX_HINTS`]).
    hints_used: u32,
    /// A failing trial to measure again at half its rate (its failures were in no clear
    /// order), and whether the trial now pending is such a re-measurement.
    again: Option<ConnTrial>,
    remeasuring: bool,
}

/// Hints a capacity search follows at most: each costs up to two trials, and a DUT whose
/// failing trials keep naming a size that then fails too is bisected instead.
pub const MAX_HINTS: u32 = 3;

impl TableCapacitySearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: TableCapacityConfig) -> Result<TableCapacitySearch, InvalidConfig> {
        check(cfg.max >= 1 && cfg.max <= MAX_CONNECTIONS, || {
            format!(
                "maximum connections {} is not in 1..={MAX_CONNECTIONS}",
                cfg.max
            )
        })?;
        check(cfg.start >= 1 && cfg.start <= cfg.max, || {
            format!(
                "starting connections {} is not in 1..={} (the maximum)",
                cfg.start, cfg.max
            )
        })?;
        check(cfg.resolution >= 1, || {
            "resolution must be at least 1 connection".into()
        })?;
        positive_rate(cfg.rate, "preliminary rate")?;
        positive_rate(cfg.validation_rate, "validation rate")?;
        check((0.0..1.0).contains(&cfg.tester_tolerance), || {
            format!("tester tolerance {} is not in [0, 1)", cfg.tester_tolerance)
        })?;
        Ok(TableCapacitySearch {
            cfg,
            ledger: ConnLedger::new(cfg.tester_tolerance),
            lower: None,
            upper: None,
            past: None,
            hint: None,
            probe: None,
            hinted: false,
            hints_used: 0,
            again: None,
            remeasuring: false,
        })
    }

    /// N strictly inside the bracket, and the bracket still wider than the resolution.
    fn inside(&self, n: u64) -> bool {
        let lo = self.lower.unwrap_or(0);
        let open = self
            .upper
            .is_none_or(|hi| hi.saturating_sub(lo) > self.cfg.resolution);
        open && n > lo && self.upper.is_none_or(|hi| n < hi) && n <= self.cfg.max
    }

    /// The next N: the probe above a passing hint, a hint, or the doubling/bisection.
    fn pick(&mut self) -> Option<u64> {
        self.hinted = false;
        if let Some(p) = self.probe.take().filter(|&p| self.inside(p)) {
            return Some(p);
        }
        if let Some(h) = self.hint.take().filter(|_| self.hints_used < MAX_HINTS) {
            // A size that already passed: the one above it settles the bracket.
            let above = h.saturating_add(self.cfg.resolution);
            if self.lower == Some(h) && self.inside(above) {
                self.hints_used += 1;
                return Some(above);
            }
            if self.inside(h) {
                self.hints_used += 1;
                self.hinted = true;
                return Some(h);
            }
        }
        self.choose()
    }

    fn choose(&self) -> Option<u64> {
        match (self.lower, self.upper) {
            (None, None) => Some(self.cfg.start),
            (Some(lo), None) => (lo < self.cfg.max).then(|| lo.saturating_mul(2).min(self.cfg.max)),
            (lo, Some(hi)) => {
                let lo = lo.unwrap_or(0);
                // hi > lo always (only N inside the bracket is tried); guard anyway.
                let width = hi.saturating_sub(lo);
                (width > self.cfg.resolution && width >= 2).then(|| lo + width / 2)
            }
        }
    }

    fn trial(&self, n: u64) -> ConnTrial {
        ConnTrial {
            connections: n,
            rate: self.cfg.rate,
            validation_rate: self.cfg.validation_rate,
            gap: self.cfg.gap,
            real: None,
        }
    }
}

impl ConnSearch for TableCapacitySearch {
    fn next(&mut self, last: Option<&ConnOutcome>) -> Option<ConnTrial> {
        match self.ledger.take(last) {
            Err(()) => return None,
            Ok(Some((t, o))) => {
                let n = t.connections;
                let remeasured = core::mem::take(&mut self.remeasuring);
                let messy = matches!(
                    o.past_capacity(),
                    PastCapacity::Mixed | PastCapacity::Unknown
                );
                if !o.passed() && messy && !remeasured {
                    // Not the shape of a full table (the newest refused, or the oldest
                    // gone): the DUT lost connections here and there, as it does when
                    // set-up outpaces it. Once more at half the rate before N counts as
                    // failing.
                    self.remeasuring = true;
                    self.again = Some(ConnTrial {
                        rate: ConnRate(t.rate.0 / 2.0),
                        ..t
                    });
                } else if o.passed() {
                    if self.lower.is_none_or(|l| n > l) && self.upper.is_none_or(|u| n < u) {
                        self.lower = Some(n);
                        if self.hinted {
                            self.probe = Some(n.saturating_add(self.cfg.resolution));
                        }
                    }
                } else if self.upper.is_none_or(|u| n < u) && self.lower.is_none_or(|l| n > l) {
                    self.upper = Some(n);
                    self.past = Some(o.past_capacity());
                    // The table held this many in the failing trial: most likely its size
                    // (if it passed already, the size just above it is the one to try).
                    self.hint = Some(o.validation_received).filter(|&k| k > 0 && k < n);
                }
            }
            Ok(None) => {}
        }
        if let Some(t) = self.again.take() {
            return self.ledger.issue(t);
        }
        match self.pick() {
            Some(n) => {
                let t = self.trial(n);
                self.ledger.issue(t)
            }
            None => {
                self.ledger.finished = true;
                None
            }
        }
    }

    fn result(&self) -> ConnSearchResult {
        self.ledger.result(ConnFinding::TableCapacity {
            lower: self.lower,
            upper: self.upper,
            past: self.past,
            rate: self.cfg.rate,
        })
    }
}

/// Parameters of [`ConnectionRateSearch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnectionRateConfig {
    /// N: connections created in every trial (well below the table capacity).
    pub connections: u64,
    /// Lowest rate worth trying (> 0: relative widths need a floor).
    pub min_rate: ConnRate,
    /// First and highest rate tried (the tester's calibrated ceiling or less).
    pub max_rate: ConnRate,
    /// Stop when (upper − lower) / upper ≤ this — the width [`super::BinarySearch`] uses.
    pub resolution: f64,
    /// Rate of the validation frames.
    pub validation_rate: ConnRate,
    /// Wait between the phases.
    pub gap: Duration,
    /// See [`ConnOutcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

/// `nat-connection-rate`: RFC 9693's maximum connection establishment rate — the highest
/// rate of new connections at which every one of N is established and validates.
///
/// Rules: the first trial runs at `max_rate` (the shortest, cheapest trial: N / rate seconds);
/// a passing trial raises the lower bound, a failing one lowers the upper bound, the next rate
/// is the midpoint; stop when (upper − lower) / upper ≤ `resolution`. If nothing passed, the
/// floor `min_rate` is measured once before the search gives up, so that "no rate passes"
/// is a measurement, not an assumption. N stays fixed, so a failure means "too fast", not
/// "table full" — choose N well below the capacity, and the DUT's timeouts well above
/// N / `min_rate` (a slow trial is a long one, and connections that time out during it fail
/// validation).
///
/// **A tester-limited trial is a ceiling, not the end.** A trial whose tester did not open the
/// N connections at the asked rate ([`ConnOutcome::is_tester_limited`]; the runner has measured
/// it again first) says nothing about the DUT at that rate, passed or failed; the bisection
/// then works below it as if the range ended there. If a rate below it fails, the search has a
/// DUT figure after all; if the bracket closes against the ceiling, the figure is "at least
/// `lower`, tester-limited above" (the finding's `tester_limited`), and if even `min_rate`
/// was tester-limited there is no figure.
#[derive(Debug, Clone)]
pub struct ConnectionRateSearch {
    cfg: ConnectionRateConfig,
    ledger: ConnLedger,
    lower: Option<f64>,
    upper: Option<f64>,
    /// The lowest rate the tester could not open N connections at, and what it reached.
    ceiling: Option<TesterShort>,
}

impl ConnectionRateSearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: ConnectionRateConfig) -> Result<ConnectionRateSearch, InvalidConfig> {
        check(
            cfg.connections >= 1 && cfg.connections <= MAX_CONNECTIONS,
            || {
                format!(
                    "connections {} is not in 1..={MAX_CONNECTIONS}",
                    cfg.connections
                )
            },
        )?;
        positive_rate(cfg.min_rate, "minimum rate")?;
        positive_rate(cfg.max_rate, "maximum rate")?;
        positive_rate(cfg.validation_rate, "validation rate")?;
        check(cfg.min_rate.0 < cfg.max_rate.0, || {
            format!(
                "minimum rate {} must be below the maximum {}",
                cfg.min_rate, cfg.max_rate
            )
        })?;
        check(cfg.resolution > 0.0 && cfg.resolution < 1.0, || {
            format!("resolution {} is not in (0, 1)", cfg.resolution)
        })?;
        check((0.0..1.0).contains(&cfg.tester_tolerance), || {
            format!("tester tolerance {} is not in [0, 1)", cfg.tester_tolerance)
        })?;
        let mut ledger = ConnLedger::new(cfg.tester_tolerance);
        ledger.limits_per_trial = true;
        Ok(ConnectionRateSearch {
            cfg,
            ledger,
            lower: None,
            upper: None,
            ceiling: None,
        })
    }

    fn ceiling_rate(&self) -> Option<f64> {
        match self.ceiling {
            Some(TesterShort::Establishment { intended, .. }) => Some(intended.0),
            _ => None,
        }
    }

    /// The DUT's first failing rate or the tester's ceiling, whichever is lower.
    fn effective_upper(&self) -> Option<f64> {
        match (self.upper, self.ceiling_rate()) {
            (Some(u), Some(c)) => Some(u.min(c)),
            (u, c) => u.or(c),
        }
    }

    /// The ceiling, when it (not a DUT failure) bounds the bracket.
    fn limiting_ceiling(&self) -> Option<TesterShort> {
        let c = self.ceiling_rate()?;
        self.upper.is_none_or(|u| c < u).then_some(self.ceiling?)
    }

    fn choose(&self) -> Option<f64> {
        super::binary::bisect(
            self.lower,
            self.effective_upper(),
            self.cfg.min_rate.0,
            self.cfg.max_rate.0,
            self.cfg.resolution,
        )
    }
}

impl ConnSearch for ConnectionRateSearch {
    fn next(&mut self, last: Option<&ConnOutcome>) -> Option<ConnTrial> {
        match self.ledger.take(last) {
            Err(()) => return None,
            Ok(Some((t, o))) => {
                let r = t.rate.0;
                if o.is_tester_limited(self.cfg.tester_tolerance) {
                    if self.ceiling_rate().is_none_or(|c| r < c) {
                        self.ceiling = Some(TesterShort::Establishment {
                            intended: t.rate,
                            achieved: o.offered_rate,
                        });
                    }
                } else if o.passed() {
                    self.lower = Some(r);
                } else {
                    self.upper = Some(r);
                }
            }
            Ok(None) => {}
        }
        match self.choose() {
            Some(r) => {
                let t = ConnTrial {
                    connections: self.cfg.connections,
                    rate: ConnRate(r),
                    validation_rate: self.cfg.validation_rate,
                    gap: self.cfg.gap,
                    real: None,
                };
                self.ledger.issue(t)
            }
            None => {
                self.ledger.finished = true;
                None
            }
        }
    }

    fn result(&self) -> ConnSearchResult {
        self.ledger.result(ConnFinding::ConnectionRate {
            connections: self.cfg.connections,
            lower: self.lower.map(ConnRate),
            upper: self.upper.map(ConnRate),
            tester_limited: self.limiting_ceiling(),
        })
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_real;

mod real;
pub use real::{
    NatThroughputConfig, NatThroughputSearch, TeardownRateConfig, TeardownRateSearch,
    ESTABLISH_RETRIES,
};

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
