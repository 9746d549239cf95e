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
            // Not a bounding ledger: a tester-limited trial stops this search.
            Step::Stop | Step::Ceiling(_) => return None,
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

/// RFC 9004 §6.4 figures of a back-to-back result: how long the DUT's buffer lasts. The RFC
/// writes the correction as `Implied DUT Buffer Time − Implied DUT Buffer Time × Measured
/// Throughput / Max Theoretical Frame Rate` (checked against the RFC's text, Debian's
/// doc-rfc-informational 20230121), which is what [`buffer_time`] computes.
///
/// - **Implied DUT Buffer Time** = average back-to-back frames / max theoretical frame rate: how
///   long the burst took on the wire.
/// - **Corrected DUT Buffer Time** = (1 / max theoretical frame rate) × (average back-to-back
///   frames − average back-to-back frames × measured throughput / max theoretical frame rate):
///   the DUT forwarded at its throughput while the burst arrived, so only the rest was buffered;
///   the buffer holds that many frames, i.e. that long at the maximum rate.
///
/// The correction needs the throughput of the same case, measured by a search that completed
/// (RFC 9004 §3: the throughput benchmark comes first); without one the corrected figure is
/// refused with the reason, and so it is when the throughput is the maximum frame rate (the
/// burst cannot fill the buffer, RFC 9004 §3). Equivalently: implied × (1 − throughput / max).
#[derive(Debug, Clone, PartialEq)]
pub struct BufferTime {
    /// Implied DUT Buffer Time, seconds.
    pub implied_secs: f64,
    /// Corrected DUT Buffer Time in seconds, or why it is not given.
    pub corrected_secs: Result<f64, NoCorrectedTime>,
}

/// Why [`BufferTime::corrected_secs`] is not given; the message is what reports print.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoCorrectedTime {
    /// No completed throughput search in the case to correct with.
    NoThroughput,
    /// The maximum theoretical frame rate is 0.
    NoMaxRate,
    /// The throughput (frames/s) is not between 0 and the maximum rate.
    ThroughputOutOfRange { throughput_pps: f64, max_pps: f64 },
    /// The throughput is the maximum rate: the burst cannot fill the buffer (RFC 9004 §3).
    AtMaxRate,
}

impl std::fmt::Display for NoCorrectedTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoCorrectedTime::NoThroughput => f.write_str(
                "no completed throughput search in this case (RFC 9004 needs the measured throughput)",
            ),
            NoCorrectedTime::NoMaxRate => f.write_str("no theoretical maximum frame rate"),
            NoCorrectedTime::ThroughputOutOfRange {
                throughput_pps,
                max_pps,
            } => write!(
                f,
                "the throughput {throughput_pps:.0} frames/s is not between 0 and the maximum {max_pps:.0}"
            ),
            NoCorrectedTime::AtMaxRate => f.write_str(
                "the throughput is the maximum frame rate: a burst cannot fill the DUT's buffer (RFC 9004 §3)",
            ),
        }
    }
}

impl std::error::Error for NoCorrectedTime {}

/// Computes [`BufferTime`] from the average back-to-back length in frames, the maximum
/// theoretical frame rate and, when a throughput search of the same case completed, its
/// throughput (both rates in frames per second, for the same directions as the bursts).
pub fn buffer_time(mean_frames: f64, max_pps: f64, throughput_pps: Option<f64>) -> BufferTime {
    let implied_secs = if max_pps > 0.0 {
        mean_frames / max_pps
    } else {
        0.0
    };
    let corrected_secs = match throughput_pps {
        None => Err(NoCorrectedTime::NoThroughput),
        Some(_) if max_pps <= 0.0 => Err(NoCorrectedTime::NoMaxRate),
        Some(t) if !(0.0..=max_pps * (1.0 + 1e-9)).contains(&t) => {
            Err(NoCorrectedTime::ThroughputOutOfRange {
                throughput_pps: t,
                max_pps,
            })
        }
        // RFC 9004 §3: at the maximum rate the burst cannot fill the DUT's buffer.
        Some(t) if t >= max_pps * (1.0 - 1e-9) => Err(NoCorrectedTime::AtMaxRate),
        Some(t) => Ok((mean_frames - mean_frames * t / max_pps) / max_pps),
    };
    BufferTime {
        implied_secs,
        corrected_secs,
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

    /// Worked by hand from the formulas: 64-byte frames at 1 Gb/s (1,488,095 frames/s), an
    /// average of 30,000 back-to-back frames and a throughput of 50 % of the maximum: the
    /// burst took 20.160 ms on the wire; the DUT forwarded half of it meanwhile and buffered
    /// 15,000 frames, which last 10.080 ms at the maximum rate.
    #[test]
    fn rfc9004_buffer_time_arithmetic() {
        let r = buffer_time(30_000.0, 1_488_095.0, Some(744_047.5));
        assert!((r.implied_secs - 0.020_160_003_2).abs() < 1e-9, "{r:?}");
        let c = r.corrected_secs.unwrap();
        assert!((c - 0.010_080_001_6).abs() < 1e-9, "{c}");
        // A DUT that forwards at line rate: nothing to measure (RFC 9004 §3), refused.
        assert!(buffer_time(1000.0, 1000.0, Some(1000.0))
            .corrected_secs
            .unwrap_err()
            .to_string()
            .contains("cannot fill"));
        // Almost line rate: almost nothing buffered.
        let c = buffer_time(1000.0, 1000.0, Some(990.0))
            .corrected_secs
            .unwrap();
        assert!((c - 0.01).abs() < 1e-12, "{c}");
        // A DUT that forwards nothing buffers the whole burst: corrected = implied.
        let z = buffer_time(500.0, 1000.0, Some(0.0));
        assert_eq!(z.corrected_secs, Ok(z.implied_secs));
    }

    /// The §6.4 equation term by term, as the RFC prints it, against [`buffer_time`].
    #[test]
    fn rfc9004_equation_as_printed() {
        for (frames, max, thr) in [
            (26_000.0, 14_880_952.0, 14_540_000.0),
            (30_000.0, 1_488_095.0, 744_047.5),
            (1.0, 81_274.0, 1.0),
        ] {
            let implied = frames / max;
            let corrected = implied - implied * thr / max;
            let r = buffer_time(frames, max, Some(thr));
            assert_eq!(r.implied_secs, implied);
            assert!((r.corrected_secs.unwrap() - corrected).abs() < 1e-15);
        }
    }

    #[test]
    fn rfc9004_refuses_without_a_completed_throughput() {
        let r = buffer_time(30_000.0, 1_488_095.0, None);
        assert!(r.implied_secs > 0.0);
        assert!(r
            .corrected_secs
            .unwrap_err()
            .to_string()
            .contains("no completed throughput"));
        assert_eq!(
            buffer_time(1.0, 100.0, Some(200.0))
                .corrected_secs
                .unwrap_err()
                .to_string(),
            "the throughput 200 frames/s is not between 0 and the maximum 100"
        );
    }

    /// On the simulated DUT (capacity C, a queue of B frames) the back-to-back search finds
    /// ⌊B / (1 − C)⌋ frames; with the throughput C the corrected buffer time is the queue:
    /// B frames at the maximum rate.
    #[test]
    fn rfc9004_corrected_time_recovers_the_simulated_queue() {
        let dut = SimDut::sharp(LineFraction(0.4)).with_buffer(30_000);
        let n = dut.back_to_back_limit() as f64;
        let max = super::super::sim::GIGABIT_64B_PPS;
        let r = buffer_time(n, max, Some(0.4 * max));
        let queue_secs = 30_000.0 / max;
        assert!(
            (r.corrected_secs.unwrap() - queue_secs).abs() < 1.0 / max,
            "{r:?}"
        );
    }
}
