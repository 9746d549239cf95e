//! RFC 2544 §26.2 latency: a fixed number of trials at the throughput already found.
//!
//! The search itself is trivial — N trials at one load, each asking the runner to measure
//! latency — but keeping it a [`Search`] gives it the same recording, resume and tester-limited
//! handling as the others. RFC 2544 asks for at least 20 trials and the average of their results.

use core::time::Duration;

use wire::units::Nanos;

use super::{
    check, Finding, InvalidConfig, Ledger, LineFraction, Outcome, Search, SearchResult, Status,
    Step, TrialRequest, DEFAULT_TESTER_TOLERANCE,
};

/// Parameters of [`LatencySearch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyConfig {
    /// The load (normally the throughput found by a throughput search).
    pub load: LineFraction,
    /// How many trials (RFC 2544: at least 20).
    pub trials: u32,
    /// Length of each trial (RFC 2544: at least 120 s).
    pub duration: Duration,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

/// N latency trials at one load.
#[derive(Debug, Clone)]
pub struct LatencySearch {
    cfg: LatencyConfig,
    ledger: Ledger,
    samples: Vec<super::LatencySummary>,
    done: u32,
}

impl LatencySearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: LatencyConfig) -> Result<LatencySearch, InvalidConfig> {
        check(cfg.load.0 > 0.0 && cfg.load.0 <= 1.0, || {
            format!("latency load {} is not in (0, 100 %]", cfg.load)
        })?;
        check(cfg.trials > 0, || "zero latency trials".into())?;
        check(!cfg.duration.is_zero(), || "trial duration is zero".into())?;
        Ok(LatencySearch {
            cfg,
            ledger: Ledger::new(cfg.tester_tolerance),
            samples: Vec::new(),
            done: 0,
        })
    }

    /// Latency at the throughput of goal `goal` of a finished throughput search. Fails when that
    /// search did not complete (e.g. was tester-limited) or found no throughput.
    pub fn at_throughput(
        throughput: &SearchResult,
        goal: usize,
        trials: u32,
        duration: Duration,
    ) -> Result<LatencySearch, InvalidConfig> {
        let load = throughput.throughput(goal).ok_or_else(|| {
            InvalidConfig(match throughput.status {
                Status::Complete => "the throughput search found no throughput".into(),
                s => format!("the throughput search is {s}"),
            })
        })?;
        LatencySearch::new(LatencyConfig {
            load,
            trials,
            duration,
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        })
    }
}

impl Search for LatencySearch {
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest> {
        match self.ledger.take(last) {
            // Not a bounding ledger: a tester-limited trial stops this search.
            Step::Stop | Step::Ceiling(_) => return None,
            Step::Learn(o) => {
                self.done += 1;
                self.samples.extend(o.latency);
            }
            Step::Start => {}
        }
        if self.done >= self.cfg.trials {
            return None;
        }
        self.ledger.issue(TrialRequest {
            latency: true,
            ..TrialRequest::rate(self.cfg.load, self.cfg.duration)
        })
    }

    fn result(&self) -> SearchResult {
        let mean = (!self.samples.is_empty()).then(|| {
            let sum: u128 = self.samples.iter().map(|s| u128::from(s.mean.0)).sum();
            Nanos((sum / self.samples.len() as u128) as u64)
        });
        let finding = Finding::Latency {
            load: self.cfg.load,
            trials: self.samples.clone(),
            mean,
        };
        self.ledger.result(self.done >= self.cfg.trials, finding)
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::SimDut;
    use super::super::{drive, BinaryConfig, BinarySearch};
    use super::*;

    #[test]
    fn runs_n_latency_trials_at_the_throughput_found() {
        let mut dut = SimDut::sharp(LineFraction(0.4));
        let mut b = BinarySearch::new(BinaryConfig {
            duration: Duration::from_secs(10),
            ..BinaryConfig::rfc2544()
        })
        .unwrap();
        let thr = drive(&mut b, |t| dut.trial(t));
        let mut l = LatencySearch::at_throughput(&thr, 0, 20, Duration::from_secs(120)).unwrap();
        let mut loads = Vec::new();
        let r = drive(&mut l, |t| {
            assert!(t.latency);
            loads.push(t.load);
            dut.trial(t)
        });
        assert_eq!(r.status, Status::Complete);
        assert_eq!(r.trials, 20);
        assert_eq!(r.trial_seconds, 2400.0);
        assert!(loads.iter().all(|l| Some(*l) == thr.throughput(0)));
        let Finding::Latency { trials, mean, .. } = r.finding else {
            panic!()
        };
        assert_eq!(trials.len(), 20);
        assert!(mean.unwrap().0 >= 10_000);
    }

    #[test]
    fn refuses_a_tester_limited_throughput() {
        let mut dut = SimDut::sharp(LineFraction(0.9)).with_tester_ceiling(LineFraction(0.5));
        let mut b = BinarySearch::new(BinaryConfig::rfc2544()).unwrap();
        let thr = drive(&mut b, |t| dut.trial(t));
        let err = LatencySearch::at_throughput(&thr, 0, 20, Duration::from_secs(120)).unwrap_err();
        assert!(err.0.contains("tester-limited at 50.000 %"), "{err}");
    }
}
