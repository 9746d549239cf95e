//! The two connection methodologies whose trials add RFC 9693's real test after the
//! validation: `nat-teardown-rate` (delete the N connections and time it) and `nat-throughput`
//! (RFC 2544 throughput on N established connections, both directions).
//!
//! Every trial still starts with an empty table and establishes its N connections first (the
//! preliminary phase and the validation of [`super::ConnTrial`]); the real test runs only on a
//! table that holds all N — a trial whose validation failed says nothing about tear-down or
//! throughput, and the searches treat it so.

use core::time::Duration;

use super::{
    check, positive_rate, ConnFinding, ConnLedger, ConnOutcome, ConnRate, ConnSearch,
    ConnSearchResult, ConnTrial, InvalidConfig, RealTest, TesterShort, ThroughputPoint,
    MAX_CONNECTIONS,
};

/// Parameters of [`TeardownRateSearch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TeardownRateConfig {
    /// N: connections established, then deleted, in every repetition.
    pub connections: u64,
    /// Repetitions (the figure is their median).
    pub repetitions: u32,
    /// Preliminary rate (one the DUT sustains, so that all N are established).
    pub rate: ConnRate,
    pub validation_rate: ConnRate,
    pub gap: Duration,
    /// See [`ConnOutcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

/// `nat-teardown-rate`: RFC 9693's connection tear-down rate. Every trial establishes N
/// connections (all must validate), then the runner deletes the DUT's whole table and times
/// it, and times the same deletion on the then empty table (the command's fixed cost); the
/// trial's rate is removed / (delete − empty).
///
/// Rules: `repetitions` trials, each the same request; a repetition counts when all N were
/// established and validated and the table was empty after the deletion (removed ≥ N). The
/// figure is N / (median delete time − median empty time) over the counted repetitions —
/// medians, so that one repetition in which the machine stalled the empty deletion does not
/// decide it. When the median deletion is not slower than the median empty one, the figure is
/// only the lower bound N / median delete time, reported as "at least".
#[derive(Debug, Clone)]
pub struct TeardownRateSearch {
    cfg: TeardownRateConfig,
    ledger: ConnLedger,
    /// Of the counted repetitions: connections removed, deletion and empty-deletion times.
    removed: Vec<f64>,
    delete_ns: Vec<f64>,
    empty_ns: Vec<f64>,
    done: u32,
}

impl TeardownRateSearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: TeardownRateConfig) -> Result<TeardownRateSearch, InvalidConfig> {
        check(
            cfg.connections >= 1 && cfg.connections <= MAX_CONNECTIONS,
            || {
                format!(
                    "connections {} is not in 1..={MAX_CONNECTIONS}",
                    cfg.connections
                )
            },
        )?;
        check((1..=1000).contains(&cfg.repetitions), || {
            format!("repetitions {} is not in 1..=1000", cfg.repetitions)
        })?;
        positive_rate(cfg.rate, "preliminary rate")?;
        positive_rate(cfg.validation_rate, "validation rate")?;
        check((0.0..1.0).contains(&cfg.tester_tolerance), || {
            format!("tester tolerance {} is not in [0, 1)", cfg.tester_tolerance)
        })?;
        Ok(TeardownRateSearch {
            cfg,
            ledger: ConnLedger::new(cfg.tester_tolerance),
            removed: Vec::new(),
            delete_ns: Vec::new(),
            empty_ns: Vec::new(),
            done: 0,
        })
    }

    fn trial(&self) -> ConnTrial {
        ConnTrial {
            connections: self.cfg.connections,
            rate: self.cfg.rate,
            validation_rate: self.cfg.validation_rate,
            gap: self.cfg.gap,
            real: Some(RealTest::Teardown),
        }
    }
}

/// The median of `v` (the mean of the middle two for an even count); `None` when empty.
fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

impl ConnSearch for TeardownRateSearch {
    fn next(&mut self, last: Option<&ConnOutcome>) -> Option<ConnTrial> {
        match self.ledger.take(last) {
            Err(()) => return None,
            Ok(Some((t, o))) => {
                self.done += 1;
                let counted = o.passed()
                    && o.teardown
                        .is_some_and(|d| d.entries_after == 0 && d.removed() >= t.connections);
                if let (true, Some(d)) = (counted, o.teardown) {
                    self.removed.push(d.removed() as f64);
                    self.delete_ns.push(d.delete_ns as f64);
                    self.empty_ns.push(d.empty_ns as f64);
                }
            }
            Ok(None) => {}
        }
        if self.done >= self.cfg.repetitions {
            self.ledger.finished = true;
            return None;
        }
        let t = self.trial();
        self.ledger.issue(t)
    }

    fn result(&self) -> ConnSearchResult {
        let valid = self.removed.len() as u32;
        let (removed, delete, empty) = (
            median(&self.removed),
            median(&self.delete_ns),
            median(&self.empty_ns),
        );
        let rate = match (removed, delete, empty) {
            (Some(n), Some(d), Some(e)) if d > e && n > 0.0 => Some(ConnRate(n * 1e9 / (d - e))),
            _ => None,
        };
        let at_least = match (removed, delete) {
            (Some(n), Some(d)) if d > 0.0 && n > 0.0 => Some(ConnRate(n * 1e9 / d)),
            _ => None,
        };
        self.ledger.result(ConnFinding::TeardownRate {
            connections: self.cfg.connections,
            rate,
            at_least,
            valid,
            repetitions: self.done,
        })
    }
}

/// Parameters of [`NatThroughputSearch`].
#[derive(Debug, Clone, PartialEq)]
pub struct NatThroughputConfig {
    /// The N to measure at, in order (e.g. 1, 1,000 and the full table).
    pub connections: Vec<u64>,
    /// Frames/s each direction: the floor and the first (highest) rate tried.
    pub min_pps: f64,
    pub max_pps: f64,
    /// Stop when (upper − lower) / upper ≤ this (as `rfc2544-throughput`).
    pub resolution: f64,
    /// How long each load runs.
    pub duration: Duration,
    /// Preliminary rate of the connections (one the DUT sustains).
    pub rate: ConnRate,
    pub validation_rate: ConnRate,
    pub gap: Duration,
    /// See [`ConnOutcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

/// `nat-throughput`: RFC 2544 throughput with N connections in the DUT's table (RFC 9693's
/// "throughput" with the state table filled in the preliminary phase), for each N of a list.
///
/// Every trial establishes its N connections (all must validate: RFC 9693 requires that every
/// real-test frame belongs to an existing connection), then loads them both ways at `pps`
/// frames/s per direction for `duration`; it passes when not one frame of either direction was
/// lost. Per N the rate is bisected exactly like `rfc2544-throughput` and
/// `nat-connection-rate` (`max_pps` first, midpoints, the floor measured once before "nothing
/// passed"). A trial whose N connections were not all established is measured again with
/// the connections set up at half the preliminary rate (which the rest of the N keeps), up to
/// [`ESTABLISH_RETRIES`] times; one more such trial at the same N ends that N as "not
/// established" and the search goes on
/// with the next N.
///
/// **An N after the first starts where the previous one failed.** The DUT's limit moves little
/// with N (the lab DUT: 29,922 / 36,719 / 34,453 frames/s each way at 1 / 1,000 / 6,000
/// connections in one run), so when the previous N ended with a DUT bracket, the first trial
/// of the next N is at that N's first failing rate: if it fails, the bisection runs between
/// `min_pps` and it (two trials fewer than from `max_pps` down); if it passes, `max_pps` is
/// tried next, as a fresh N would have, and the bisection goes on from there. The bracket of
/// each N is made of that N's own trials either way.
///
/// **Tester-limited trials end an N, not the search.** The tester's ceiling is not the same at
/// every N (nor is the DUT's limit): on one tester CPU the two directions may not keep the
/// rate that the DUT forwards with one connection, yet easily keep the lower rate it forwards
/// with its table full. So a load the tester could not offer (either direction short of the
/// asked rate by more than the tolerance, or its own receive rings dropping frames) is a
/// *ceiling*, not a failure: the bisection of that N goes on below it, as if the search range
/// ended there — unless it lost frames although every frame was sent (the tester only paused,
/// so its rate over the whole load reads short): a pause rests the DUT, so that loss is the
/// DUT's and the trial is a failing one. If a rate below the ceiling loses frames, the N has a
/// DUT figure after all; if
/// the bracket closes against the ceiling, the N ends "at least `lower`, tester-limited", and
/// the next N is measured. A preliminary phase the tester could not pace whose connections
/// were not all established ends the N the same way (nothing is known about the DUT's table).
/// Whether the runner measures a tester-limited trial again before the search sees it is the
/// runner's choice; the search learns from the trials it is given.
#[derive(Debug, Clone)]
pub struct NatThroughputSearch {
    cfg: NatThroughputConfig,
    ledger: ConnLedger,
    /// Index into `cfg.connections` of the N being measured.
    at: usize,
    lower: Option<f64>,
    upper: Option<f64>,
    /// The lowest load of this N the tester could not offer, and what it did offer.
    ceiling: Option<TesterShort>,
    points: Vec<ThroughputPoint>,
    /// Trials of the current N whose connections were not all established, each measured
    /// again at half the preliminary rate (at most [`ESTABLISH_RETRIES`]).
    retried: u32,
    /// The preliminary rate of the current N's trials: the plan's, halved by each such retry
    /// (a loaded DUT that cannot set up the full table at the plan's rate still gets its
    /// throughput measured, on a table set up more slowly).
    rate: ConnRate,
    /// The trial to measure again.
    again: Option<ConnTrial>,
}

/// How often a `nat-throughput` N whose connections were not all established is measured
/// again, each time at half the previous preliminary rate, before the N ends "not all
/// established".
pub const ESTABLISH_RETRIES: u32 = 2;

impl NatThroughputSearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: NatThroughputConfig) -> Result<NatThroughputSearch, InvalidConfig> {
        check(!cfg.connections.is_empty(), || {
            "give at least one number of connections".into()
        })?;
        for &n in &cfg.connections {
            check((1..=MAX_CONNECTIONS).contains(&n), || {
                format!("connections {n} is not in 1..={MAX_CONNECTIONS}")
            })?;
        }
        check(
            cfg.min_pps.is_finite() && cfg.min_pps > 0.0 && cfg.min_pps < cfg.max_pps,
            || {
                format!(
                    "minimum rate {} frames/s must be above 0 and below the maximum {}",
                    cfg.min_pps, cfg.max_pps
                )
            },
        )?;
        check(cfg.max_pps.is_finite(), || {
            "maximum rate is not finite".into()
        })?;
        check(cfg.resolution > 0.0 && cfg.resolution < 1.0, || {
            format!("resolution {} is not in (0, 1)", cfg.resolution)
        })?;
        check(!cfg.duration.is_zero(), || {
            "duration must be above 0".into()
        })?;
        positive_rate(cfg.rate, "preliminary rate")?;
        positive_rate(cfg.validation_rate, "validation rate")?;
        check((0.0..1.0).contains(&cfg.tester_tolerance), || {
            format!("tester tolerance {} is not in [0, 1)", cfg.tester_tolerance)
        })?;
        let tol = cfg.tester_tolerance;
        let mut ledger = ConnLedger::new(tol);
        ledger.limits_per_trial = true;
        Ok(NatThroughputSearch {
            rate: cfg.rate,
            cfg,
            ledger,
            at: 0,
            lower: None,
            upper: None,
            ceiling: None,
            points: Vec::new(),
            retried: 0,
            again: None,
        })
    }

    /// The load rate the tester could not offer at this N, if any.
    fn ceiling_pps(&self) -> Option<f64> {
        match self.ceiling {
            Some(TesterShort::Load { intended, .. }) => Some(intended),
            _ => None,
        }
    }

    /// The upper end the bisection works against: the DUT's first failing rate or the
    /// tester's ceiling, whichever is lower.
    fn effective_upper(&self) -> Option<f64> {
        match (self.upper, self.ceiling_pps()) {
            (Some(u), Some(c)) => Some(u.min(c)),
            (u, c) => u.or(c),
        }
    }

    /// The current N as a point: the tester limited it when its ceiling, not a DUT failure,
    /// bounded the bracket (or it could not establish the connections).
    fn point(&self, established: bool) -> ThroughputPoint {
        let limited = match (self.ceiling, self.upper, self.ceiling_pps()) {
            (Some(s @ TesterShort::Establishment { .. }), _, _) => Some(s),
            (Some(s), Some(u), Some(c)) if c < u => Some(s),
            (Some(s), None, Some(_)) => Some(s),
            _ => None,
        };
        ThroughputPoint {
            connections: self.cfg.connections[self.at],
            lower: self.lower.filter(|_| established),
            upper: self.upper.filter(|_| established),
            established,
            tester_limited: limited,
        }
    }

    /// The next load rate of the current N: the previous N's first failing rate first (see
    /// the type's doc), `max_pps` after it if that passed, then the bisection.
    fn choose(&self) -> Option<f64> {
        let fresh = self.lower.is_none() && self.upper.is_none() && self.ceiling.is_none();
        if fresh {
            if let Some(first) = self.first_rate() {
                return Some(first);
            }
        }
        match (self.lower, self.effective_upper()) {
            // A first rate below the top passed: the top next, as a fresh N would have.
            (Some(l), None) if l < self.cfg.max_pps && self.first_rate() == Some(l) => {
                Some(self.cfg.max_pps)
            }
            (lower, upper) => super::super::binary::bisect(
                lower,
                upper,
                self.cfg.min_pps,
                self.cfg.max_pps,
                self.cfg.resolution,
            ),
        }
    }

    /// Where an N after the first starts: the previous N's first failing rate, when that N
    /// ended with a DUT bracket inside the range.
    fn first_rate(&self) -> Option<f64> {
        let prev = self.points.last().filter(|_| self.at > 0)?;
        let u = prev
            .upper
            .filter(|_| prev.established && prev.tester_limited.is_none())?;
        (u > self.cfg.min_pps && u < self.cfg.max_pps).then_some(u)
    }

    fn close_point(&mut self, established: bool) {
        let p = self.point(established);
        self.points.push(p);
        self.at += 1;
        self.lower = None;
        self.upper = None;
        self.ceiling = None;
        self.retried = 0;
        self.rate = self.cfg.rate;
    }

    /// Learns from the load of a trial whose N connections were all established.
    fn learn_load(&mut self, t: &ConnTrial, o: &ConnOutcome) {
        let pps = match t.real {
            Some(RealTest::Load { pps, .. }) => pps,
            _ => 0.0,
        };
        let tol = self.cfg.tester_tolerance;
        let frames = t.load_frames().unwrap_or(1);
        match o.load {
            // Short of the rate only because it paused (LoadOutcome::loss_is_the_duts).
            Some(l) if l.is_tester_limited(tol) && l.loss_is_the_duts(frames) => {
                self.upper = Some(pps);
            }
            Some(l) if l.is_tester_limited(tol) => {
                // Not the DUT's failure: the search range ends here for this N.
                if self.ceiling_pps().is_none_or(|c| pps < c) {
                    let achieved = if l.tester_drops > 0 {
                        0.0
                    } else {
                        l.forward_pps.0.min(l.reverse_pps.0)
                    };
                    self.ceiling = Some(TesterShort::Load {
                        intended: pps,
                        achieved,
                    });
                }
            }
            Some(l) if l.lossless() => self.lower = Some(pps),
            _ => self.upper = Some(pps),
        }
    }
}

impl ConnSearch for NatThroughputSearch {
    fn next(&mut self, last: Option<&ConnOutcome>) -> Option<ConnTrial> {
        match self.ledger.take(last) {
            Err(()) => return None,
            Ok(Some((t, o))) => {
                let tol = self.cfg.tester_tolerance;
                let short_opening = o.preliminary_sent < o.connections
                    || o.offered_rate.0 < o.intended_rate.0 * (1.0 - tol);
                if !o.passed() && self.retried < ESTABLISH_RETRIES {
                    // Missed connections on a loaded machine should not end the N: the same
                    // trial again with the connections set up at half the rate (and the
                    // rest of this N at that rate); misses at every rate say the table does
                    // not hold N.
                    self.retried += 1;
                    self.rate = ConnRate(t.rate.0 / 2.0);
                    self.again = Some(ConnTrial {
                        rate: self.rate,
                        ..t
                    });
                } else if !o.passed() && short_opening {
                    // The tester, not the table, failed to open them.
                    self.ceiling = Some(TesterShort::Establishment {
                        intended: o.intended_rate,
                        achieved: o.offered_rate,
                    });
                    self.close_point(false);
                } else if !o.passed() {
                    self.close_point(false);
                } else {
                    // All N established (however fast the tester opened them): the load
                    // decides.
                    self.learn_load(&t, o);
                }
            }
            Ok(None) => {}
        }
        if let Some(t) = self.again.take() {
            return self.ledger.issue(t);
        }
        while self.at < self.cfg.connections.len() {
            match self.choose() {
                Some(pps) => {
                    let t = ConnTrial {
                        connections: self.cfg.connections[self.at],
                        rate: self.rate,
                        validation_rate: self.cfg.validation_rate,
                        gap: self.cfg.gap,
                        real: Some(RealTest::Load {
                            pps,
                            duration: self.cfg.duration,
                        }),
                    };
                    return self.ledger.issue(t);
                }
                None => self.close_point(true),
            }
        }
        self.ledger.finished = true;
        None
    }

    fn result(&self) -> ConnSearchResult {
        let mut points = self.points.clone();
        // The N being measured when the search stopped (not finished).
        if self.at < self.cfg.connections.len()
            && (self.lower.is_some() || self.upper.is_some() || self.ceiling.is_some())
        {
            points.push(self.point(true));
        }
        self.ledger.result(ConnFinding::Throughput { points })
    }
}
