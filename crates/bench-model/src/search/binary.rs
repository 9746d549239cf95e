//! RFC 2544 §26.1 throughput: the classic binary search.
//!
//! Every trial is full length. The first trial runs at the maximum load (100 % unless the plan
//! lowers it); a trial whose loss ratio is within the tolerance raises the lower bound, any other
//! lowers the upper bound, and the next load is the midpoint. The search stops when the interval
//! is narrower than `resolution` relative to its upper end — the same width definition
//! [`super::MultiGoalSearch`] uses, so their costs can be compared honestly.

use core::time::Duration;

use super::{
    check, Finding, GoalResult, InvalidConfig, Ledger, LineFraction, Outcome, Search, SearchResult,
    Step, TrialRequest, DEFAULT_TESTER_TOLERANCE,
};

/// Parameters of [`BinarySearch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinaryConfig {
    /// Largest loss ratio still counted as "no loss" (RFC 2544 strictly: 0).
    pub loss_tolerance: f64,
    /// Stop when (upper − lower) / upper ≤ this.
    pub resolution: f64,
    /// Lowest load worth measuring (must be > 0: relative widths need a floor).
    pub min_load: LineFraction,
    /// First and highest load (1.0 = 100 %; lower it to the tester's calibrated ceiling).
    pub max_load: LineFraction,
    /// Length of every trial.
    pub duration: Duration,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

impl BinaryConfig {
    /// RFC 2544 defaults: no loss tolerated, 0.5 % resolution, 100 % first, 60 s trials.
    pub fn rfc2544() -> BinaryConfig {
        BinaryConfig {
            loss_tolerance: 0.0,
            resolution: 0.005,
            min_load: LineFraction(0.001),
            max_load: LineFraction::FULL,
            duration: Duration::from_secs(60),
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        }
    }
}

/// The RFC 2544 throughput binary search. See the module docs.
#[derive(Debug, Clone)]
pub struct BinarySearch {
    cfg: BinaryConfig,
    ledger: Ledger,
    lower: Option<f64>,
    upper: Option<f64>,
    finished: bool,
}

impl BinarySearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: BinaryConfig) -> Result<BinarySearch, InvalidConfig> {
        validate_range(cfg.min_load, cfg.max_load)?;
        check((0.0..1.0).contains(&cfg.loss_tolerance), || {
            format!("loss tolerance {} is not in [0, 1)", cfg.loss_tolerance)
        })?;
        check(cfg.resolution > 0.0 && cfg.resolution < 1.0, || {
            format!("resolution {} is not in (0, 1)", cfg.resolution)
        })?;
        check(!cfg.duration.is_zero(), || "trial duration is zero".into())?;
        Ok(BinarySearch {
            cfg,
            ledger: Ledger::bounding(cfg.tester_tolerance),
            lower: None,
            upper: None,
            finished: false,
        })
    }

    fn choose(&self) -> Option<f64> {
        bisect(
            self.lower,
            self.upper,
            self.cfg.min_load.0,
            self.cfg.max_load.0,
            self.cfg.resolution,
        )
    }
}

/// The next value a bisection between a passing `lower` and a failing `upper` measures, on
/// `[min, max]`: `max` first, then midpoints until the bracket is within `resolution` of the
/// upper bound; `None` when done. An unmeasured floor is measured (`min`) before it counts as
/// a bound. Shared by the RFC 2544 throughput search and the NAT connection-rate search.
pub(crate) fn bisect(
    lower: Option<f64>,
    upper: Option<f64>,
    min: f64,
    max: f64,
    resolution: f64,
) -> Option<f64> {
    match (lower, upper) {
        (None, None) => Some(max),
        (Some(_), None) => None, // the maximum passed
        (_, Some(hi)) if hi <= min => None,
        (lo, Some(hi)) => {
            let l = lo.unwrap_or(min);
            if (hi - l) <= resolution * hi {
                lo.is_none().then_some(min)
            } else {
                Some((l + hi) / 2.0)
            }
        }
    }
}

pub(crate) fn validate_range(min: LineFraction, max: LineFraction) -> Result<(), InvalidConfig> {
    check(min.0 > 0.0 && min.0 < max.0, || {
        format!("minimum load {min} must be above 0 and below the maximum {max}")
    })?;
    check(max.0 <= 1.0, || {
        format!("maximum load {max} is above line rate")
    })
}

impl BinarySearch {
    fn step(&mut self, step: Step<'_>) -> Option<TrialRequest> {
        match step {
            Step::Stop => return None,
            Step::Learn(o) => {
                if o.loss_ratio() <= self.cfg.loss_tolerance {
                    self.lower = Some(o.intended.0);
                } else {
                    self.upper = Some(o.intended.0);
                }
            }
            // The tester could not keep this load: bisect below it like below a failure;
            // the result says whether the final upper bound is the DUT's or the tester's.
            Step::Ceiling(o) => {
                self.upper = Some(self.upper.map_or(o.intended.0, |u| u.min(o.intended.0)));
            }
            Step::Start => {}
        }
        if self.finished {
            return None;
        }
        match self.choose() {
            Some(load) => self
                .ledger
                .issue(TrialRequest::rate(LineFraction(load), self.cfg.duration)),
            None => {
                self.finished = true;
                None
            }
        }
    }
}

impl Search for BinarySearch {
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest> {
        let step = self.ledger.take(last);
        self.step(step)
    }

    fn bounds_tester_ceiling(&self) -> bool {
        true
    }

    fn next_tester_limited(&mut self, last: &Outcome) -> Option<TrialRequest> {
        let step = self.ledger.take_tester_limited(last);
        self.step(step)
    }

    fn result(&self) -> SearchResult {
        let finding = Finding::Throughput {
            goals: vec![GoalResult {
                loss_ratio: self.cfg.loss_tolerance,
                lower: self.lower.map(LineFraction),
                upper: self.upper.map(LineFraction),
                goal: None,
                conditional_throughput: None,
                regular: None,
                tester_bound: self.ledger.is_tester_bound(self.upper),
            }],
        };
        self.ledger.result(self.finished, finding)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::SimDut;
    use super::super::{drive, Status};
    use super::*;

    fn cfg() -> BinaryConfig {
        BinaryConfig {
            duration: Duration::from_secs(10),
            ..BinaryConfig::rfc2544()
        }
    }

    #[test]
    fn sharp_limit_is_bracketed_within_resolution() {
        for capacity in [0.05, 0.3127, 0.62, 0.999] {
            let mut dut = SimDut::sharp(LineFraction(capacity));
            let mut s = BinarySearch::new(cfg()).unwrap();
            let r = drive(&mut s, |t| dut.trial(t));
            assert_eq!(r.status, Status::Complete);
            let Finding::Throughput { goals } = &r.finding else {
                panic!()
            };
            let (lo, hi) = (goals[0].lower.unwrap().0, goals[0].upper.unwrap().0);
            assert!(lo <= capacity && capacity < hi, "{lo} {capacity} {hi}");
            assert!(goals[0].relative_width().unwrap() <= 0.005);
        }
    }

    #[test]
    fn full_line_rate_needs_one_trial() {
        let mut dut = SimDut::sharp(LineFraction(1.0));
        let mut s = BinarySearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.trials, 1);
        assert_eq!(r.throughput(0), Some(LineFraction(1.0)));
    }

    #[test]
    fn dut_below_minimum_reports_no_throughput() {
        let mut dut = SimDut::sharp(LineFraction(0.0001));
        let mut s = BinarySearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.status, Status::Complete);
        assert_eq!(r.throughput(0), None);
        let Finding::Throughput { goals } = &r.finding else {
            panic!()
        };
        assert_eq!(goals[0].upper, Some(LineFraction(0.001)));
    }

    #[test]
    fn a_tester_ceiling_below_the_duts_capacity_gives_no_dut_figure() {
        let mut dut = SimDut::sharp(LineFraction(0.9)).with_tester_ceiling(LineFraction(0.8));
        let mut s = BinarySearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        let Status::TesterLimited { intended, achieved } = r.status else {
            panic!("{r:?}")
        };
        // The lowest load the tester could not keep, and what it reached there.
        assert!(intended.0 > 0.8 / 0.99 && intended.0 < 0.82, "{r:?}");
        assert_eq!(achieved, LineFraction(0.8));
        assert_eq!(r.throughput(0), None);
        let Finding::Throughput { goals } = &r.finding else {
            panic!()
        };
        assert!(goals[0].tester_bound);
        assert!(goals[0].lower.unwrap().0 > 0.79, "{goals:?}");
    }

    /// Before 849994c the search stopped at its first trial when the tester could not offer 100 %;
    /// a DUT slower than the tester's ceiling is now measured under it.
    #[test]
    fn a_tester_ceiling_above_the_duts_capacity_still_gives_a_dut_figure() {
        let mut dut = SimDut::sharp(LineFraction(0.42)).with_tester_ceiling(LineFraction(0.8));
        let mut s = BinarySearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.status, Status::Complete, "{r:?}");
        let t = r.throughput(0).expect("a DUT figure").0;
        assert!(t <= 0.42 && t > 0.42 * (1.0 - 0.005) - 1e-9, "{r:?}");
    }

    #[test]
    fn rejects_bad_configs() {
        assert!(BinarySearch::new(BinaryConfig {
            min_load: LineFraction(0.0),
            ..cfg()
        })
        .is_err());
        assert!(BinarySearch::new(BinaryConfig {
            resolution: 0.0,
            ..cfg()
        })
        .is_err());
    }

    /// An unstable DUT (capacity 60 % for the first 4 trials, 30 % after): the binary search
    /// never measures a load twice, so the lower bound it found before the change stands and
    /// the result overstates the DUT it ended with. The multi-goal search re-measures its lower
    /// bound at each phase instead (`mlr::tests::unstable_dut_lowest_failure_wins`).
    #[test]
    fn unstable_dut_keeps_the_lower_bound_measured_before_the_change() {
        let mut dut = SimDut::sharp(LineFraction(0.6));
        let mut n = 0;
        let mut loads = Vec::new();
        let mut s = BinarySearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| {
            n += 1;
            if n == 5 {
                dut.capacity = LineFraction(0.3);
            }
            loads.push(t.load.0);
            dut.trial(t)
        });
        assert_eq!(r.status, Status::Complete);
        let lo = r.throughput(0).unwrap().0;
        assert!(lo > 0.3, "{r:?}");
        // No load was measured twice.
        let mut seen = loads.clone();
        seen.sort_by(f64::total_cmp);
        seen.dedup();
        assert_eq!(seen.len(), loads.len());
    }
}
