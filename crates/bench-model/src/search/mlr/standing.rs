//! What the measurements say for one goal: a load's class at a phase (RFC 9971's upper and
//! lower bounds), the bounds and guesses the search steers by, the logarithmic load grid, and
//! the goal's result with its conditional throughput.

use core::time::Duration;

use super::super::{GoalResult, LineFraction};
use super::{same_load, Measurement, MultiGoalSearch};

/// A load's standing for one goal at one phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Class {
    Lower,
    Upper,
    /// Good trials only at shorter durations than the phase's: a lower bound of an earlier
    /// phase, or a short probe that passed. Worth re-measuring at the phase's duration.
    Stale,
    /// Trials, but not enough seconds either way (exceed ratio > 0, or duration sum > one trial).
    Undecided,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Bounds {
    pub(super) lower: Option<f64>,
    pub(super) upper: Option<f64>,
    /// Highest undecided load strictly between the bounds.
    pub(super) undecided: Option<f64>,
}

impl MultiGoalSearch {
    /// Trial duration of goal `g` in `phase` (whole milliseconds below the final one).
    pub(super) fn duration(&self, g: usize, phase: u32) -> Duration {
        let goal = &self.cfg.goals[g];
        let last = self.goals[g].last_phase;
        if phase >= last {
            return goal.final_duration;
        }
        let d0 = goal.initial_duration.as_secs_f64();
        let ratio = goal.final_duration.as_secs_f64() / d0;
        let secs = d0 * ratio.powf(f64::from(phase) / f64::from(last));
        Duration::from_millis((secs * 1000.0).round() as u64)
    }

    /// Duration sum a load needs in `phase`: one trial before the last phase, the goal's sum in it.
    pub(super) fn duration_sum(&self, g: usize, phase: u32) -> f64 {
        if phase >= self.goals[g].last_phase {
            self.cfg.goals[g].duration_sum.as_secs_f64()
        } else {
            self.duration(g, phase).as_secs_f64()
        }
    }

    pub(super) fn classify(&self, g: usize, load: f64, d: f64, s: f64) -> Class {
        // At or above a load the tester could not keep, no trial can tell the DUT's standing:
        // an upper bound of the tester's (the goal result says so).
        if self.ledger.is_tester_bound(Some(load)) {
            return Class::Upper;
        }
        let goal = &self.cfg.goals[g];
        let (mut bad, mut good, mut short_good) = (0.0, 0.0, false);
        for m in self.db.iter().filter(|m| same_load(m.load, load)) {
            if m.loss_ratio > goal.loss_ratio {
                bad += m.secs;
            } else if m.secs >= d * (1.0 - 1e-9) {
                good += m.secs;
            } else {
                short_good = true;
            }
        }
        let allowed = goal.exceed_ratio * s + 1e-9 * s;
        if bad > allowed {
            Class::Upper
        } else if bad + (s - good - bad).max(0.0) <= allowed {
            Class::Lower
        } else if good == 0.0 && bad == 0.0 && short_good {
            Class::Stale
        } else {
            Class::Undecided
        }
    }

    pub(super) fn loads(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.db.iter().map(|m| m.load).collect();
        v.sort_by(f64::total_cmp);
        v.dedup_by(|a, b| same_load(*a, *b));
        v
    }

    pub(super) fn bounds(&self, g: usize, phase: u32) -> Bounds {
        let d = self.duration(g, phase).as_secs_f64();
        let s = self.duration_sum(g, phase);
        let classes: Vec<(f64, Class)> = self
            .loads()
            .into_iter()
            .map(|l| (l, self.classify(g, l, d, s)))
            .collect();
        let upper = classes
            .iter()
            .filter(|(_, c)| *c == Class::Upper)
            .map(|(l, _)| *l)
            .reduce(f64::min);
        let below_upper = |l: &f64| upper.is_none_or(|u| *l < u);
        let lower = classes
            .iter()
            .filter(|(l, c)| *c == Class::Lower && below_upper(l))
            .map(|(l, _)| *l)
            .reduce(f64::max);
        let between = |l: &f64| below_upper(l) && lower.is_none_or(|lo| *l > lo);
        let highest = |want: Class| {
            classes
                .iter()
                .filter(|(l, c)| *c == want && between(l))
                .map(|(l, _)| *l)
                .reduce(f64::max)
        };
        Bounds {
            lower,
            upper,
            undecided: highest(Class::Undecided),
        }
    }

    /// The guess for goal `g` from the trials that failed at `load`: forwarding / (1 − goal),
    /// from the longest such trial (the most recent of equal length).
    pub(super) fn guess(&self, g: usize, load: f64) -> Option<f64> {
        self.failure(g, load)
            .map(|m| m.forwarding / (1.0 - self.cfg.goals[g].loss_ratio))
    }

    /// The longest trial (the latest of equal length) that failed goal `g` at `load`.
    fn failure(&self, g: usize, load: f64) -> Option<&Measurement> {
        let ratio = self.cfg.goals[g].loss_ratio;
        self.db
            .iter()
            .filter(|m| same_load(m.load, load) && m.loss_ratio > ratio)
            .reduce(|a, b| if b.secs >= a.secs { b } else { a })
    }

    /// Whether the failure at `load` happened in a trial at least `d` long: a guess from it is
    /// a prediction for this phase's trials, worth a full trial rather than a probe.
    pub(super) fn failed_full(&self, g: usize, load: f64, d: Duration) -> bool {
        self.failure(g, load)
            .is_some_and(|m| m.secs >= d.as_secs_f64() * (1.0 - 1e-9))
    }

    /// Whether short trials may serve as probes for goal `g`: a failure at the initial duration
    /// alone must make an upper bound (exceed ratio 0), and short trials must not have been
    /// contradicted twice (a load that passed a short trial and failed a longer one, or a
    /// lower one: a queue that hides overload in short trials, not noise).
    pub(super) fn probes_allowed(&self, g: usize) -> bool {
        let goal = &self.cfg.goals[g];
        if goal.exceed_ratio > 0.0 {
            return false;
        }
        let contradicted = self
            .db
            .iter()
            .filter(|good| {
                good.loss_ratio <= goal.loss_ratio
                    && self.db.iter().any(|bad| {
                        bad.loss_ratio > goal.loss_ratio
                            && bad.secs > good.secs
                            && bad.load <= good.load * (1.0 + 1e-12)
                    })
            })
            .count();
        contradicted < 2
    }

    /// ln of the grid ratio: loads are `max_load × (1 − w)ⁿ` for whole n, w the narrowest
    /// goal width, so every bracket spans a whole number of final widths.
    fn ln_r(&self) -> f64 {
        let w = self.cfg.goals.iter().map(|g| g.width).fold(0.5, f64::min);
        -(1.0 - w).ln()
    }

    /// Grid index of `load` (0 = the maximum load; larger = lower), not rounded.
    pub(super) fn index(&self, load: f64) -> f64 {
        (self.cfg.max_load.0 / load).ln() / self.ln_r()
    }

    pub(super) fn load_at(&self, n: i64) -> f64 {
        self.cfg.max_load.0 * (-self.ln_r() * n as f64).exp()
    }

    /// Goal `g`'s width in `phase`, in grid units: its final width, doubled per phase to go.
    pub(super) fn units(&self, g: usize, phase: u32) -> i64 {
        let ln_r = self.ln_r();
        let base = ((-(1.0 - self.cfg.goals[g].width).ln() / ln_r) + 1e-9)
            .floor()
            .max(1.0);
        let doublings = self.goals[g].last_phase.saturating_sub(phase).min(30) as i32;
        // No wider than half the load.
        let widest = (2f64.ln() / ln_r).floor().max(1.0);
        (base * 2f64.powi(doublings)).min(widest.max(base)) as i64
    }
    /// The result of goal `g` as it stands (bounds valid at the goal's final duration and sum).
    pub(super) fn goal_result(&self, g: usize) -> GoalResult {
        let goal = self.cfg.goals[g];
        let last = self.goals[g].last_phase;
        let b = self.bounds(g, last);
        let conditional = b.lower.and_then(|l| self.conditional_throughput(g, l));
        let width_ok = match (b.lower, b.upper) {
            (Some(l), Some(u)) => 1.0 - l / u <= goal.width * (1.0 + 1e-9),
            _ => false,
        };
        GoalResult {
            loss_ratio: goal.loss_ratio,
            lower: b.lower.map(LineFraction),
            upper: b.upper.map(LineFraction),
            goal: Some(goal),
            conditional_throughput: conditional.map(LineFraction),
            regular: Some(width_ok),
            tester_bound: self.ledger.is_tester_bound(b.upper),
        }
    }

    /// RFC 9971 Conditional Throughput at lower bound `load`: the load times (1 − the loss
    /// ratio at the exceed-ratio quantile of its full-length trials, worst first, by duration).
    /// With exceed ratio 0: the forwarding rate of the worst full-length trial there.
    fn conditional_throughput(&self, g: usize, load: f64) -> Option<f64> {
        let goal = &self.cfg.goals[g];
        let full = goal.final_duration.as_secs_f64() * (1.0 - 1e-9);
        let mut trials: Vec<(f64, f64)> = self
            .db
            .iter()
            .filter(|m| same_load(m.load, load) && m.secs >= full)
            .map(|m| (m.loss_ratio, m.secs))
            .collect();
        trials.sort_by(|a, b| b.0.total_cmp(&a.0));
        let total: f64 = trials.iter().map(|t| t.1).sum();
        let q = goal.exceed_ratio * total;
        let mut seen = 0.0;
        for (loss, secs) in trials {
            seen += secs;
            if seen > q {
                return Some(load * (1.0 - loss));
            }
        }
        None
    }
}
