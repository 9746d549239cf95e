//! Book-keeping the connection searches share.

use super::finding::{ConnFinding, ConnSearchResult, ConnStatus};
use super::trial::{ConnOutcome, ConnRate, ConnTrial};

/// Book-keeping both searches share: cost, the pending trial, tester-limited detection.
#[derive(Debug, Clone)]
pub(super) struct ConnLedger {
    tolerance: f64,
    /// The trial last issued, whose outcome `next` expects: the search learns from what it
    /// asked for (N, rate), never from numbers in the outcome that could disagree.
    pending: Option<ConnTrial>,
    trials: u32,
    trial_seconds: f64,
    limited: Option<(ConnRate, ConnRate)>,
    pub(super) finished: bool,
    /// Tester-limited trials go to the search like any other instead of stopping it (a
    /// search that ends each of several parts on its own: `nat-throughput` per N).
    pub(super) limits_per_trial: bool,
}

impl ConnLedger {
    pub(super) fn new(tolerance: f64) -> ConnLedger {
        ConnLedger {
            tolerance,
            pending: None,
            trials: 0,
            trial_seconds: 0.0,
            limited: None,
            finished: false,
            limits_per_trial: false,
        }
    }

    /// The trial that ran and its outcome, to learn from; `Err(())` when the search must stop.
    pub(super) fn take<'a>(
        &mut self,
        last: Option<&'a ConnOutcome>,
    ) -> Result<Option<(ConnTrial, &'a ConnOutcome)>, ()> {
        if self.limited.is_some() || self.finished {
            return Err(());
        }
        match (self.pending.take(), last) {
            (Some(_), Some(o)) if !self.limits_per_trial && o.is_tester_limited(self.tolerance) => {
                self.limited = Some(match o.load {
                    Some(l) if l.is_tester_limited(self.tolerance) => (
                        ConnRate(l.intended_pps.0),
                        ConnRate(l.forward_pps.0.min(l.reverse_pps.0)),
                    ),
                    _ => (o.intended_rate, o.offered_rate),
                });
                Err(())
            }
            (Some(t), Some(o)) => Ok(Some((t, o))),
            _ => Ok(None),
        }
    }

    pub(super) fn issue(&mut self, t: ConnTrial) -> Option<ConnTrial> {
        self.trials += 1;
        self.trial_seconds += t.duration().as_secs_f64();
        self.pending = Some(t);
        Some(t)
    }

    fn status(&self) -> ConnStatus {
        match (self.limited, self.finished) {
            (Some((intended, achieved)), _) => ConnStatus::TesterLimited { intended, achieved },
            (None, true) => ConnStatus::Complete,
            (None, false) => ConnStatus::Running,
        }
    }

    pub(super) fn result(&self, finding: ConnFinding) -> ConnSearchResult {
        ConnSearchResult {
            status: self.status(),
            finding,
            trials: self.trials,
            trial_seconds: self.trial_seconds,
        }
    }
}
