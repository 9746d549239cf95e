//! `nat-table-capacity`: how many connections the DUT's table holds (RFC 9693).

use core::time::Duration;

use super::finding::{ConnFinding, ConnSearchResult};
use super::ledger::ConnLedger;
use super::trial::{
    positive_rate, ConnOutcome, ConnRate, ConnTrial, PastCapacity, MAX_CONNECTIONS,
};
use super::{check, ConnSearch, InvalidConfig, DEFAULT_TESTER_TOLERANCE};

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
    pub(super) hints_used: u32,
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
