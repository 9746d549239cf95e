//! A multi-goal loss-ratio search after FD.io CSIT's MLRsearch (RFC 9971, formerly IETF
//! draft-ietf-bmwg-mlrsearch). Written from the published description, not from its code.
//!
//! Why: a binary search per loss goal spends every trial at full length, and NDR (loss 0) and
//! PDR (e.g. 0.5 %) searched separately measure almost the same loads twice. This search
//!
//! - serves several [`Goal`]s from one set of measurements: a trial's loss ratio is compared with
//!   every goal, so a trial at 0.3 % loss is an upper bound for NDR and a lower bound for PDR;
//! - gives each goal its own phases: trial durations grow geometrically from the goal's
//!   `initial_duration` to its `final_duration` while the width halves per phase down to the
//!   goal's `width`. Short trials find the neighbourhood; full-length trials are spent only on
//!   the loads that end up as bounds;
//! - classifies a load per goal the way RFC 9971 does: with exceed ratio *e* and required
//!   duration sum *S*, the load is an **upper bound** once the seconds of trials that missed the
//!   goal exceed *e·S* (even if every missing second were good), and a **lower bound** once the
//!   seconds of full-length trials that met the goal leave no room for that to happen (every
//!   missing second counted as bad). Loss in a trial of any length is real loss, so upper
//!   bounds come from any trial; a lower bound needs trials at least as long as the phase's;
//! - at each new phase **re-measures the lower bound it already has** at the new duration
//!   instead of searching again: on a well-behaved DUT that one trial (and one short probe
//!   above it) finishes the phase;
//! - guesses from forwarding rates: a trial that lost frames at load *L* forwarded *F*, so for
//!   goal *g* the next guess is *F / (1 − g)* (MLRsearch starts this way from one trial at the
//!   maximum load; here every failing trial gives a guess). On a DUT with a sharp limit, or a
//!   queue that hides overload in short trials, the guess is the limit at that trial duration;
//! - looks for upper bounds with **short probes**: when a load above the current lower bound is
//!   expected to fail, it is first tried at the goal's initial duration (a failure there is a
//!   valid upper bound when the exceed ratio is 0); only a probe that passes is repeated at full
//!   length. Probes stop as soon as a short trial has passed a load that a longer one failed,
//!   since such a DUT's short trials flatter it;
//! - places new loads on a logarithmic grid anchored at the lower bound, so that the final
//!   bracket is exactly `width` wide rather than anything below it.
//!
//! The result per goal is the interval [lower, upper] with lower a lower bound at the final
//! trial duration and duration sum, and (upper − lower) / upper ≤ the goal's width.
//!
//! One job a file: `goal` holds the goals and settings, `standing` what the measurements say
//! per goal (a load's class, the bounds, guesses, the load grid, the goal results), this
//! module the state machine that picks the next trial.

use super::binary::validate_range;
use super::{
    check, Finding, InvalidConfig, Ledger, LineFraction, Outcome, Search, SearchResult, Step,
    TrialRequest,
};

mod goal;
mod standing;
#[cfg(test)]
mod tests;

pub use goal::{default_phases, Goal, MultiGoalConfig};
use standing::Class;

#[derive(Debug, Clone, Copy)]
struct Measurement {
    load: f64,
    secs: f64,
    loss_ratio: f64,
    forwarding: f64,
}

/// Direction and size (in grid units) of the next step away from a fresh bound.
#[derive(Debug, Clone, Copy)]
struct Gallop {
    up: bool,
    units: f64,
}

#[derive(Debug, Clone, Copy)]
struct GoalState {
    phase: u32,
    last_phase: u32,
    gallop: Option<Gallop>,
}

/// The multi-goal search. See the module docs.
#[derive(Debug, Clone)]
pub struct MultiGoalSearch {
    cfg: MultiGoalConfig,
    ledger: Ledger,
    db: Vec<Measurement>,
    goals: Vec<GoalState>,
    serving: Option<usize>,
    finished: bool,
    capped: bool,
}

/// See [`MultiGoalSearch::next`].
const MAX_TRIALS: usize = 1000;

fn same_load(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

impl MultiGoalSearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: MultiGoalConfig) -> Result<MultiGoalSearch, InvalidConfig> {
        validate_range(cfg.min_load, cfg.max_load)?;
        check(!cfg.goals.is_empty(), || "no loss-ratio goal".into())?;
        let mut goals = Vec::with_capacity(cfg.goals.len());
        for g in &cfg.goals {
            g.validate()?;
            let last_phase = cfg
                .phases
                .unwrap_or_else(|| default_phases(g.initial_duration, g.final_duration));
            check(last_phase <= 20, || {
                format!("{last_phase} phases is more than 20")
            })?;
            goals.push(GoalState {
                phase: 0,
                last_phase,
                gallop: None,
            });
        }
        if let Some(cap) = cfg.time_cap {
            check(!cap.is_zero(), || {
                "the search-time cap must be above zero".into()
            })?;
        }
        Ok(MultiGoalSearch {
            ledger: Ledger::bounding(cfg.tester_tolerance),
            goals,
            cfg,
            db: Vec::new(),
            serving: None,
            finished: false,
            capped: false,
        })
    }
    /// The next trial for goal `g` in its current phase, or `None` when `g` is done with it.
    fn choose(&self, g: usize) -> Option<TrialRequest> {
        let phase = self.goals[g].phase;
        let d = self.duration(g, phase);
        let unit = self.units(g, phase);
        let n_min = (self.index(self.cfg.min_load.0) + 1e-9).floor() as i64;
        let b = self.bounds(g, phase);
        let idx = |load: f64| self.index(load).round() as i64;
        // The grid point at or below a guessed load.
        let snap = |h: f64| ((self.index(h) - 1e-9).ceil() as i64).clamp(0, n_min);
        let at = |n: i64, probe: bool| {
            let load = self.load_at(n.clamp(0, n_min));
            let short = self.duration(g, 0);
            // A load that already passed a short trial learns nothing from another one.
            let passed_short = self.db.iter().any(|m| {
                same_load(m.load, load)
                    && m.secs < d.as_secs_f64()
                    && m.loss_ratio <= self.cfg.goals[g].loss_ratio
            });
            let probe = probe && !passed_short && phase > 0 && short < d;
            let dur = if probe && self.probes_allowed(g) {
                short
            } else {
                d
            };
            Some(TrialRequest::rate(LineFraction(load), dur))
        };
        // Largest power-of-two multiple of the unit below `span`: a step that leaves at most
        // that much on either side.
        let half = |span: i64| {
            let mut h = unit;
            while h * 2 < span {
                h *= 2;
            }
            h
        };
        // Loads with some but not enough seconds: measure them again.
        if let Some(x) = b.undecided {
            return at(idx(x), false);
        }
        // Short passes above what a full-length failure forwarded are not believed.
        let full = b.upper.is_some_and(|u| self.failed_full(g, u, d));
        let ceiling = b.upper.filter(|_| full).and_then(|u| self.guess(g, u));
        let stale = self
            .loads()
            .into_iter()
            .filter(|x| {
                b.lower.is_none_or(|l| *x > l)
                    && b.upper.is_none_or(|u| *x < u)
                    && ceiling.is_none_or(|h| *x <= h * (1.0 + 1e-9))
                    && self.classify(g, *x, d.as_secs_f64(), self.duration_sum(g, phase))
                        == Class::Stale
            })
            .reduce(f64::max);
        let gallop = self.goals[g].gallop;
        let steps = |up: bool| {
            gallop
                .filter(|gl| gl.up == up)
                .map_or(1, |gl| gl.units as i64)
                .saturating_mul(unit)
        };
        // An earlier lower bound or a passed probe: probe above it until an upper bound is
        // within the width, then measure it at this phase's duration (one full trial where it
        // matters, not one per step).
        if let Some(x) = stale {
            let nx = idx(x);
            if let Some(u) = b.upper {
                let span = nx - idx(u);
                if span > unit && self.probes_allowed(g) && phase > 0 {
                    let k = steps(true).min(half(span));
                    return at(nx - k, true);
                }
            }
            return at(nx, false);
        }
        match (b.lower, b.upper) {
            (None, None) => at(0, false),
            (Some(l), None) => {
                let nl = idx(l);
                if nl <= 0 {
                    return None;
                }
                at((nl - steps(true)).max(0), true)
            }
            (None, Some(u)) => {
                let nu = idx(u);
                if nu >= n_min {
                    return None;
                }
                let mut n = nu + steps(false);
                if let Some(h) = self.guess(g, u) {
                    n = n.max(snap(h));
                }
                at(n.min(n_min), !full)
            }
            (Some(l), Some(u)) => {
                let (nl, nu) = (idx(l), idx(u));
                let span = nl - nu;
                if span <= unit {
                    return None;
                }
                let down = gallop.is_some_and(|gl| !gl.up);
                let mut n = if down {
                    nu + steps(false).min(half(span))
                } else {
                    nl - steps(true).min(half(span))
                };
                // Not above what the failure at the upper bound forwarded (when it is a guess
                // for this phase's trials, or when stepping down anyway).
                // A guess at or below the lower bound is already contradicted: ignore it.
                if let Some(h) = self.guess(g, u).filter(|h| (down || full) && *h > l) {
                    n = n.max(snap(h));
                }
                at(n.clamp(nu + 1, nl - 1), !(down && full))
            }
        }
    }

    /// Records `o`; the goal being served gallops on from it. `ceiling`: the tester could not
    /// keep the load, so the load stays in the database (the bounds must know it;
    /// [`Self::classify`] makes it an upper bound of the tester's) and counts as a failure
    /// for the gallop.
    fn learn(&mut self, o: &Outcome, ceiling: bool) {
        let loss_ratio = o.loss_ratio();
        self.db.push(Measurement {
            load: o.intended.0,
            secs: o.duration.as_secs_f64(),
            loss_ratio,
            forwarding: o.forwarding_rate().0,
        });
        if let Some(g) = self.serving.take() {
            let passed = !ceiling && loss_ratio <= self.cfg.goals[g].loss_ratio;
            let state = &mut self.goals[g];
            state.gallop = Some(match state.gallop {
                Some(gl) if gl.up == passed => Gallop {
                    up: passed,
                    units: (gl.units * 2.0).min(1e9),
                },
                _ => Gallop {
                    up: passed,
                    units: 1.0,
                },
            });
        }
    }

    /// The goal to serve next and its trial: each goal that has nothing left in its phase
    /// moves on to its next phase; among goals with work, the one in the earliest phase.
    fn pick(&mut self) -> Option<(usize, TrialRequest)> {
        let mut best: Option<(u32, usize, TrialRequest)> = None;
        for g in 0..self.goals.len() {
            let choice = loop {
                if let Some(t) = self.choose(g) {
                    break Some(t);
                }
                let st = &mut self.goals[g];
                if st.phase >= st.last_phase {
                    break None;
                }
                st.phase += 1;
                st.gallop = None;
            };
            let phase = self.goals[g].phase;
            if let Some(t) = choice {
                if best.as_ref().is_none_or(|(p, _, _)| phase < *p) {
                    best = Some((phase, g, t));
                }
            }
        }
        best.map(|(_, g, t)| (g, t))
    }
}

impl MultiGoalSearch {
    fn step(&mut self, step: Step<'_>) -> Option<TrialRequest> {
        match step {
            Step::Stop => return None,
            Step::Learn(o) => self.learn(o, false),
            Step::Ceiling(o) => self.learn(o, true),
            Step::Start => {}
        }
        if self.finished {
            return None;
        }
        // A guard, never reached in the simulated tests: a search that has not converged after
        // this many trials stops (its goal results say irregular) rather than run forever.
        if self.db.len() >= MAX_TRIALS {
            self.finished = true;
            return None;
        }
        match self.pick() {
            Some((g, t)) => {
                if let Some(cap) = self.cfg.time_cap {
                    let after = self.ledger.trial_seconds() + t.duration.as_secs_f64();
                    if after > cap.as_secs_f64() * (1.0 + 1e-12) {
                        self.capped = true;
                        self.finished = true;
                        return None;
                    }
                }
                self.serving = Some(g);
                self.ledger.issue(t)
            }
            None => {
                self.finished = true;
                None
            }
        }
    }
}

impl Search for MultiGoalSearch {
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
        let goals = (0..self.goals.len()).map(|g| self.goal_result(g)).collect();
        let finding = Finding::Throughput { goals };
        match self.cfg.time_cap {
            Some(cap) if self.capped => self.ledger.capped(cap, finding),
            _ => self.ledger.result(self.finished, finding),
        }
    }
}
