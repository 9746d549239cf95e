//! Forwarding rate at the maximum offered load (RFC 2285 §3.6.1 "forwarding rate", RFC 2889
//! §5.1 "FRMOL"): trials at one load — 100 % of line rate unless lowered — and the rate at
//! which the DUT forwarded what it was offered.
//!
//! Why a router tester needs it beside RFC 2544 throughput: throughput is the highest load with
//! no loss (or a loss goal), so it says where a device *starts* to drop. What a device does
//! *past* that point — whether an overloaded forwarding path keeps forwarding near its
//! capacity or collapses under interrupt load, whether a fast path raises the plateau — shows
//! only at overload. On a software router the two can disagree: a fast path that skips most of
//! the stack may forward far more at overload while the first loss still comes at the same
//! load, set by how fast a CPU is woken rather than by the per-packet cost.
//!
//! The figure of one trial is `offered × (1 − loss ratio)` (see
//! [`Outcome::forwarding_rate`]): frames the DUT forwarded, as a fraction of line rate, per
//! direction. Several trials at the same load give the spread the report judges differences
//! against. A trial in which the tester offered less than asked for is tester-limited and
//! stops the methodology like every other (DESIGN.md §7): a forwarding rate at an overload the
//! tester did not create would be a figure about the tester.

use core::time::Duration;

use super::{
    check, Finding, InvalidConfig, Ledger, LineFraction, Outcome, Search, SearchResult, Step,
    TrialRequest, DEFAULT_TESTER_TOLERANCE,
};

/// Parameters of [`ForwardingRate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForwardingRateConfig {
    /// The offered load (RFC 2889: the maximum offered load; 100 % unless lowered).
    pub load: LineFraction,
    /// How many trials at that load.
    pub trials: u32,
    /// Length of each trial.
    pub duration: Duration,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

impl ForwardingRateConfig {
    /// Three 30 s trials at 100 % of line rate (RFC 2889 §5.1.3 suggests trials of 30 s).
    pub fn rfc2889() -> ForwardingRateConfig {
        ForwardingRateConfig {
            load: LineFraction::FULL,
            trials: 3,
            duration: Duration::from_secs(30),
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        }
    }
}

/// Forwarding rate at one offered load. See the module docs.
#[derive(Debug, Clone)]
pub struct ForwardingRate {
    cfg: ForwardingRateConfig,
    ledger: Ledger,
    rates: Vec<LineFraction>,
}

impl ForwardingRate {
    /// Checks `cfg` and builds the methodology.
    pub fn new(cfg: ForwardingRateConfig) -> Result<ForwardingRate, InvalidConfig> {
        check(cfg.load.0 > 0.0 && cfg.load.0 <= 1.0, || {
            format!("offered load {} is not in (0, 100 %]", cfg.load)
        })?;
        check(cfg.trials >= 1, || "trials is 0; at least one trial".into())?;
        check(!cfg.duration.is_zero(), || "trial duration is zero".into())?;
        Ok(ForwardingRate {
            cfg,
            ledger: Ledger::new(cfg.tester_tolerance),
            rates: Vec::new(),
        })
    }

    fn finished(&self) -> bool {
        self.rates.len() >= self.cfg.trials as usize
    }
}

impl Search for ForwardingRate {
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest> {
        match self.ledger.take(last) {
            // Not a bounding ledger: a tester-limited trial stops this search.
            Step::Stop | Step::Ceiling(_) => return None,
            Step::Learn(o) => self.rates.push(o.forwarding_rate()),
            Step::Start => {}
        }
        if self.finished() {
            return None;
        }
        self.ledger
            .issue(TrialRequest::rate(self.cfg.load, self.cfg.duration))
    }

    fn result(&self) -> SearchResult {
        let mean = (!self.rates.is_empty()).then(|| {
            LineFraction(self.rates.iter().map(|r| r.0).sum::<f64>() / self.rates.len() as f64)
        });
        self.ledger.result(
            self.finished(),
            Finding::ForwardingRate {
                load: self.cfg.load,
                rates: self.rates.clone(),
                mean,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::SimDut;
    use super::super::{drive, Status};
    use super::*;

    fn short(trials: u32) -> ForwardingRateConfig {
        ForwardingRateConfig {
            trials,
            duration: Duration::from_secs(1),
            ..ForwardingRateConfig::rfc2889()
        }
    }

    fn rates(r: &SearchResult) -> (Vec<f64>, Option<f64>) {
        let Finding::ForwardingRate { rates, mean, load } = &r.finding else {
            panic!("not a forwarding rate: {:?}", r.finding)
        };
        assert_eq!(*load, LineFraction::FULL);
        (rates.iter().map(|x| x.0).collect(), mean.map(|m| m.0))
    }

    #[test]
    fn an_overloaded_dut_forwards_its_capacity() {
        let mut dut = SimDut::sharp(LineFraction(0.62));
        let mut s = ForwardingRate::new(short(3)).unwrap();
        let r = drive(&mut s, |t| {
            assert_eq!(
                t.load,
                LineFraction::FULL,
                "every trial at the offered load"
            );
            dut.trial(t)
        });
        assert_eq!(r.status, Status::Complete);
        assert_eq!(r.trials, 3);
        let (each, mean) = rates(&r);
        for x in each {
            assert!((x - 0.62).abs() < 1e-4, "{x}");
        }
        assert!((mean.unwrap() - 0.62).abs() < 1e-4);
    }

    #[test]
    fn a_dut_that_keeps_up_forwards_everything_offered() {
        let mut dut = SimDut::sharp(LineFraction(1.0));
        let mut s = ForwardingRate::new(short(1)).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.status, Status::Complete);
        assert!((rates(&r).1.unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_noisy_dut_gives_a_spread_around_its_capacity() {
        let mut dut = SimDut::noisy(LineFraction(0.5), 0.1, 7);
        let mut s = ForwardingRate::new(short(5)).unwrap();
        let (each, mean) = rates(&drive(&mut s, |t| dut.trial(t)));
        assert_eq!(each.len(), 5);
        let (lo, hi) = each
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
        assert!(lo >= 0.45 - 1e-9 && hi <= 0.55 + 1e-9, "{each:?}");
        assert!(hi > lo, "noise must show as a spread: {each:?}");
        assert!(mean.unwrap() > lo && mean.unwrap() < hi);
    }

    #[test]
    fn a_tester_below_the_load_stops_it_without_a_figure() {
        let mut dut = SimDut::sharp(LineFraction(0.5)).with_tester_ceiling(LineFraction(0.8));
        let mut s = ForwardingRate::new(short(3)).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert!(matches!(r.status, Status::TesterLimited { .. }), "{r:?}");
        assert_eq!(r.trials, 1);
        assert_eq!(rates(&r).0, Vec::<f64>::new(), "no figure from that trial");
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(ForwardingRate::new(short(0)).is_err());
        assert!(ForwardingRate::new(ForwardingRateConfig {
            load: LineFraction(1.5),
            ..short(1)
        })
        .is_err());
        assert!(ForwardingRate::new(ForwardingRateConfig {
            duration: Duration::ZERO,
            ..short(1)
        })
        .is_err());
    }
}
