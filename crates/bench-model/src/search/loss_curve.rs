//! RFC 2544 §26.3 frame-loss rate: trials from the maximum load down in fixed steps (10 % of
//! line rate or finer) until two successive trials lose nothing.

use core::time::Duration;

use super::{
    check, Finding, InvalidConfig, Ledger, LineFraction, LossPoint, Outcome, Search, SearchResult,
    Step, TrialRequest, DEFAULT_TESTER_TOLERANCE,
};

/// Parameters of [`LossCurve`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossCurveConfig {
    /// First load (100 % unless lowered to the tester's ceiling).
    pub max_load: LineFraction,
    /// Decrement per trial, as a fraction of line rate (RFC 2544: 10 % or less).
    pub step: f64,
    /// Length of each trial.
    pub duration: Duration,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

impl LossCurveConfig {
    /// RFC 2544 defaults: 100 % down in 10 % steps, 60 s trials.
    pub fn rfc2544() -> LossCurveConfig {
        LossCurveConfig {
            max_load: LineFraction::FULL,
            step: 0.1,
            duration: Duration::from_secs(60),
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        }
    }
}

/// The frame-loss-rate curve. See the module docs.
#[derive(Debug, Clone)]
pub struct LossCurve {
    cfg: LossCurveConfig,
    ledger: Ledger,
    points: Vec<LossPoint>,
    finished: bool,
}

impl LossCurve {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: LossCurveConfig) -> Result<LossCurve, InvalidConfig> {
        check(cfg.max_load.0 > 0.0 && cfg.max_load.0 <= 1.0, || {
            format!("maximum load {} is not in (0, 100 %]", cfg.max_load)
        })?;
        check(cfg.step > 0.0 && cfg.step <= 0.1 + 1e-12, || {
            format!("step {} is not in (0, 10 %] (RFC 2544 §26.3)", cfg.step)
        })?;
        check(!cfg.duration.is_zero(), || "trial duration is zero".into())?;
        Ok(LossCurve {
            cfg,
            ledger: Ledger::new(cfg.tester_tolerance),
            points: Vec::new(),
            finished: false,
        })
    }
}

impl Search for LossCurve {
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest> {
        match self.ledger.take(last) {
            // Not a bounding ledger: a tester-limited trial stops this search.
            Step::Stop | Step::Ceiling(_) => return None,
            Step::Learn(o) => self.points.push(LossPoint {
                load: o.intended,
                loss_ratio: o.loss_ratio(),
            }),
            Step::Start => {}
        }
        if self.finished {
            return None;
        }
        let two_clean = self.points.len() >= 2
            && self.points[self.points.len() - 2..]
                .iter()
                .all(|p| p.loss_ratio == 0.0);
        // Steps are counted, not subtracted, so 100 % − 7 × 10 % is exactly 30 %.
        let k = self.points.len() as f64;
        let load = self.cfg.max_load.0 - k * self.cfg.step;
        if two_clean || load <= 1e-9 {
            self.finished = true;
            return None;
        }
        self.ledger
            .issue(TrialRequest::rate(LineFraction(load), self.cfg.duration))
    }

    fn result(&self) -> SearchResult {
        self.ledger.result(
            self.finished,
            Finding::LossCurve {
                points: self.points.clone(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::SimDut;
    use super::super::{drive, Status};
    use super::*;

    #[test]
    fn steps_down_until_two_clean_trials() {
        let mut dut = SimDut::sharp(LineFraction(0.65));
        let mut s = LossCurve::new(LossCurveConfig::rfc2544()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.status, Status::Complete);
        let Finding::LossCurve { points } = r.finding else {
            panic!()
        };
        let loads: Vec<f64> = points.iter().map(|p| (p.load.0 * 100.0).round()).collect();
        assert_eq!(loads, vec![100.0, 90.0, 80.0, 70.0, 60.0, 50.0]);
        // Loss at 100 % is 1 − 0.65 = 35 %.
        assert!((points[0].loss_ratio - 0.35).abs() < 1e-6);
        assert_eq!(points[4].loss_ratio, 0.0);
        assert_eq!(points[5].loss_ratio, 0.0);
    }

    #[test]
    fn lossless_dut_needs_two_trials() {
        let mut dut = SimDut::sharp(LineFraction(1.0));
        let mut s = LossCurve::new(LossCurveConfig::rfc2544()).unwrap();
        assert_eq!(drive(&mut s, |t| dut.trial(t)).trials, 2);
    }

    #[test]
    fn stops_at_zero_for_a_dead_dut() {
        let mut dut = SimDut::sharp(LineFraction(0.0));
        let mut s = LossCurve::new(LossCurveConfig::rfc2544()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.trials, 10);
        assert_eq!(r.status, Status::Complete);
    }

    #[test]
    fn tester_limited_at_full_rate() {
        let mut dut = SimDut::sharp(LineFraction(0.5)).with_tester_ceiling(LineFraction(0.85));
        let mut s = LossCurve::new(LossCurveConfig::rfc2544()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert!(matches!(r.status, Status::TesterLimited { .. }));
        assert_eq!(r.trials, 1);
    }
}
