//! A connection trial (RFC 9693's preliminary phase, validation and optional real test) and
//! its outcome: what was sent and came back, and what a failing trial says of the table.

use core::fmt;
use core::time::Duration;

use serde::{Deserialize, Serialize};
use wire::units::Pps;

use super::{check, InvalidConfig};

/// The most connections a search may ask for: 2^32 (far above any table and any flow set the
/// engine can cycle through; it keeps every count and duration finite).
pub const MAX_CONNECTIONS: u64 = 1 << 32;

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

pub(super) fn positive_rate(r: ConnRate, what: &str) -> Result<(), InvalidConfig> {
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
    pub intended_pps: Pps,
    /// Initiator → responder, on the opened tuples.
    pub forward_sent: u64,
    pub forward_received: u64,
    pub forward_pps: Pps,
    /// Responder → initiator, on the learned (translated) tuples.
    pub reverse_sent: u64,
    pub reverse_received: u64,
    pub reverse_pps: Pps,
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
