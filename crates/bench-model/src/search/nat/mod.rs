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
//!
//! One job a file: `trial` holds a trial and its outcome, `finding` what a search found and
//! how it is said, `ledger` the book-keeping the searches share, `capacity` and `rate` the
//! two searches of RFC 9693's preliminary phase, `real` those with a real test after it; this
//! module the protocol they all speak.

use core::fmt;

use super::{check, InvalidConfig, DEFAULT_TESTER_TOLERANCE};

mod capacity;
mod finding;
mod ledger;
mod rate;
mod trial;

pub use capacity::{TableCapacityConfig, TableCapacitySearch, MAX_HINTS};
pub use finding::{
    describe, ConnFinding, ConnSearchResult, ConnStatus, TesterShort, ThroughputPoint,
};
use ledger::ConnLedger;
pub use rate::{ConnectionRateConfig, ConnectionRateSearch};
use trial::positive_rate;
pub use trial::{
    ConnOutcome, ConnRate, ConnTrial, FailedSpan, LoadBackend, LoadOutcome, LoadPriority,
    PastCapacity, RealTest, TeardownOutcome, MAX_CONNECTIONS,
};

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

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_real;

mod real;
pub use real::{
    NatThroughputConfig, NatThroughputSearch, TeardownRateConfig, TeardownRateSearch,
    ESTABLISH_RETRIES,
};
