//! RFC 2544 §26.4 back-to-back frames: the longest burst at minimum inter-frame gap that the DUT
//! forwards without loss, found by a binary search on the burst length and repeated (RFC 2544:
//! at least 50 times) because buffers make it noisy.

use core::time::Duration;

use super::{
    check, Finding, InvalidConfig, Ledger, LineFraction, Outcome, Search, SearchResult, Step,
    TrialRequest,
};

/// Parameters of [`BackToBack`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackToBackConfig {
    /// Longest burst tried first (e.g. two seconds' worth of frames at line rate).
    pub max_frames: u64,
    /// Stop when the interval is at most this many frames wide.
    pub resolution_frames: u64,
    /// Trial window that contains each burst (RFC 2544: at least 2 s).
    pub duration: Duration,
    /// Independent searches; the result is their mean.
    pub repetitions: u32,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

/// The back-to-back burst search. See the module docs.
#[derive(Debug, Clone)]
pub struct BackToBack {
    cfg: BackToBackConfig,
    ledger: Ledger,
    lower: u64,
    upper: Option<u64>,
    lengths: Vec<u64>,
}

impl BackToBack {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: BackToBackConfig) -> Result<BackToBack, InvalidConfig> {
        check(cfg.max_frames >= 2, || {
            "max_frames must be at least 2".into()
        })?;
        check(cfg.resolution_frames >= 1, || {
            "resolution must be at least 1 frame".into()
        })?;
        check(cfg.repetitions >= 1, || "at least one repetition".into())?;
        check(!cfg.duration.is_zero(), || "trial duration is zero".into())?;
        Ok(BackToBack {
            cfg,
            ledger: Ledger::new(cfg.tester_tolerance),
            lower: 0,
            upper: None,
            lengths: Vec::new(),
        })
    }

    fn request(&self, frames: u64) -> TrialRequest {
        TrialRequest {
            burst_frames: Some(frames),
            ..TrialRequest::rate(LineFraction::FULL, self.cfg.duration)
        }
    }

    /// The next burst of the current repetition, or `None` when it is settled.
    fn choose(&self) -> Option<u64> {
        match self.upper {
            None if self.lower == 0 => Some(self.cfg.max_frames),
            None => None, // the longest burst passed
            Some(hi) if hi - self.lower <= self.cfg.resolution_frames => None,
            Some(hi) => Some(self.lower + (hi - self.lower) / 2),
        }
    }
}

impl Search for BackToBack {
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest> {
        match self.ledger.take(last) {
            Step::Stop => return None,
            Step::Learn(o) => {
                let frames = o.received + o.lost;
                if o.lost == 0 {
                    self.lower = frames;
                } else {
                    self.upper = Some(frames);
                }
            }
            Step::Start => {}
        }
        while (self.lengths.len() as u32) < self.cfg.repetitions {
            if let Some(frames) = self.choose() {
                return self.ledger.issue(self.request(frames));
            }
            self.lengths.push(self.lower);
            self.lower = 0;
            self.upper = None;
        }
        None
    }

    fn result(&self) -> SearchResult {
        let mean = (!self.lengths.is_empty())
            .then(|| self.lengths.iter().sum::<u64>() as f64 / self.lengths.len() as f64);
        let finished = self.lengths.len() as u32 >= self.cfg.repetitions;
        self.ledger.result(
            finished,
            Finding::BackToBack {
                lengths: self.lengths.clone(),
                mean,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::SimDut;
    use super::super::{drive, Status, DEFAULT_TESTER_TOLERANCE};
    use super::*;

    fn cfg() -> BackToBackConfig {
        BackToBackConfig {
            max_frames: 2_976_190,
            resolution_frames: 10,
            duration: Duration::from_secs(2),
            repetitions: 3,
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        }
    }

    #[test]
    fn finds_the_buffer_limit_within_resolution() {
        let mut dut = SimDut::sharp(LineFraction(0.5)).with_buffer(4096);
        let limit = dut.back_to_back_limit();
        assert_eq!(limit, 8192);
        let mut s = BackToBack::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.status, Status::Complete);
        let Finding::BackToBack { lengths, mean } = r.finding else {
            panic!()
        };
        assert_eq!(lengths.len(), 3);
        for l in &lengths {
            assert!(*l <= limit && limit - l <= 10, "{l} vs {limit}");
        }
        assert!(mean.unwrap() <= limit as f64);
    }

    #[test]
    fn a_dut_at_line_rate_passes_the_longest_burst() {
        let mut dut = SimDut::sharp(LineFraction(1.0));
        let mut s = BackToBack::new(BackToBackConfig {
            repetitions: 1,
            ..cfg()
        })
        .unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.trials, 1);
        assert_eq!(
            r.finding,
            Finding::BackToBack {
                lengths: vec![2_976_190],
                mean: Some(2_976_190.0)
            }
        );
    }
}
