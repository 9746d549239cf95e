//! The goals of a multi-goal search and its settings (RFC 9971 §4.6), and how many phases a
//! goal gets by default.

use core::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::{check, InvalidConfig, LineFraction, DEFAULT_TESTER_TOLERANCE};

/// One search goal with the settings RFC 9971 §4.6 defines for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    /// Goal Loss Ratio: the largest loss ratio a trial may have and still count as good.
    pub loss_ratio: f64,
    /// Goal Exceed Ratio: the share of the duration sum that bad trials may take at a lower
    /// bound (0: not one bad trial).
    #[serde(default)]
    pub exceed_ratio: f64,
    /// Goal Width: the final (upper − lower) / upper.
    pub width: f64,
    /// Goal Initial Trial Duration: the trial duration of the first phase.
    #[serde(with = "crate::secs")]
    pub initial_duration: Duration,
    /// Goal Final Trial Duration: trials shorter than this never make a final lower bound.
    #[serde(with = "crate::secs")]
    pub final_duration: Duration,
    /// Goal Duration Sum: how many seconds of full-length trials a load needs to be classified.
    #[serde(with = "crate::secs")]
    pub duration_sum: Duration,
}

impl Goal {
    /// A goal with exceed ratio 0 whose duration sum is one final trial.
    pub fn new(loss_ratio: f64, width: f64, initial: Duration, final_duration: Duration) -> Goal {
        Goal {
            loss_ratio,
            exceed_ratio: 0.0,
            width,
            initial_duration: initial.min(final_duration),
            final_duration,
            duration_sum: final_duration,
        }
    }

    /// The goal that makes the search RFC 2544-compliant (RFC 9971 §5): no loss in one 60 s
    /// trial (final trial duration 60 s, duration sum 60 s, loss ratio 0, exceed ratio 0).
    /// RFC 2544 sets no width; 0.5 % as in the other defaults.
    pub fn rfc2544() -> Goal {
        Goal::new(0.0, 0.005, Duration::from_secs(1), Duration::from_secs(60))
    }

    pub(super) fn validate(&self) -> Result<(), InvalidConfig> {
        let lr = self.loss_ratio;
        check((0.0..1.0).contains(&lr), || {
            format!("loss-ratio goal {lr} is not in [0, 1)")
        })?;
        let er = self.exceed_ratio;
        check((0.0..1.0).contains(&er), || {
            format!("exceed ratio {er} is not in [0, 1)")
        })?;
        check(self.width > 0.0 && self.width < 0.5, || {
            format!("width goal {} is not in (0, 0.5)", self.width)
        })?;
        check(
            !self.initial_duration.is_zero() && self.initial_duration <= self.final_duration,
            || "initial duration must be above zero and at most the final duration".into(),
        )?;
        check(self.duration_sum >= self.final_duration, || {
            "the duration sum must be at least the final trial duration".into()
        })
    }
}

/// Parameters of [`MultiGoalSearch`].
#[derive(Debug, Clone, PartialEq)]
pub struct MultiGoalConfig {
    /// The goals, e.g. NDR (loss 0) and PDR (loss 0.5 %).
    pub goals: Vec<Goal>,
    /// Lowest load worth measuring (> 0).
    pub min_load: LineFraction,
    /// Highest load (the tester's calibrated ceiling, or 100 %).
    pub max_load: LineFraction,
    /// Phases after the first, per goal; `None` = [`default_phases`].
    pub phases: Option<u32>,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
    /// Stop once the trial-seconds spent would exceed this, with the best brackets so far
    /// ([`super::Status::TimeCapped`]).
    pub time_cap: Option<Duration>,
}

impl MultiGoalConfig {
    /// NDR and PDR (0 and 0.5 %) at 0.5 % width, 1 s first trials, `final_duration` at the end.
    pub fn ndr_pdr(final_duration: Duration) -> MultiGoalConfig {
        let first = Duration::from_secs(1);
        MultiGoalConfig {
            goals: vec![
                Goal::new(0.0, 0.005, first, final_duration),
                Goal::new(0.005, 0.005, first, final_duration),
            ],
            min_load: LineFraction(0.001),
            max_load: LineFraction::FULL,
            phases: None,
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
            time_cap: None,
        }
    }
}

/// Phases after the first for a goal whose trials grow from `initial` to `last`: one phase per
/// factor of 32 in duration (1 s → 30 s: one intermediate width, 1 s → 60 s: two). Fewer phases
/// than MLRsearch's default because the short probes and forwarding-rate guesses do the
/// narrowing that intermediate phases are otherwise for.
pub fn default_phases(initial: Duration, last: Duration) -> u32 {
    let ratio = last.as_secs_f64() / initial.as_secs_f64().max(1e-9);
    if ratio <= 1.0 + 1e-9 {
        0
    } else {
        (ratio.ln() / 32f64.ln()).ceil().max(1.0) as u32
    }
}
