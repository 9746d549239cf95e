//! `nat-connection-rate`: how many new connections per second the DUT sets up (RFC 9693).

use core::time::Duration;

use super::finding::{ConnFinding, ConnSearchResult, TesterShort};
use super::ledger::ConnLedger;
use super::trial::{positive_rate, ConnOutcome, ConnRate, ConnTrial, MAX_CONNECTIONS};
use super::{check, ConnSearch, InvalidConfig};

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
        super::super::binary::bisect(
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
