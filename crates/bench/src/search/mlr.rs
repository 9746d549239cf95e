//! A multi-goal loss-ratio search after FD.io CSIT's MLRsearch (IETF
//! draft-ietf-bmwg-mlrsearch). Written from the published description, not from its code.
//!
//! Why: a binary search per loss goal spends every trial at full length, and NDR (loss 0) and
//! PDR (e.g. 0.5 %) searched separately measure almost the same loads twice. This search
//!
//! - serves several goals from one set of measurements: a trial's loss ratio is compared with
//!   every goal, so a trial at 0.3 % loss is an upper bound for NDR and a lower bound for PDR;
//! - runs in phases whose trial duration grows geometrically from `initial_duration` to
//!   `final_duration` while the width goal shrinks by half per phase to `width_goal`; early
//!   short trials find the neighbourhood, full-length trials are spent only near the answer;
//! - starts like MLRsearch: one short trial at the maximum load, whose *forwarding rate* (for
//!   goal *g*: forwarding rate / (1 − g)) is the first guess;
//! - trusts a lower bound only when it was measured at the current phase's duration or longer
//!   (short trials flatter a DUT with buffers), but keeps upper bounds from any duration (loss in
//!   a short trial is real loss);
//! - when a bound is missing, searches outwards from the other with a step that starts at the
//!   phase's width and doubles ("external search"), and inside an interval it keeps galloping
//!   from the fresh bound until it brackets the answer, then bisects.
//!
//! The result per goal is the interval [lower, upper] with lower measured at full length and
//! (upper − lower) / upper ≤ `width_goal`.

use core::time::Duration;

use super::binary::validate_range;
use super::{
    check, Finding, GoalResult, InvalidConfig, Ledger, LineFraction, Outcome, Search, SearchResult,
    Step, TrialRequest, DEFAULT_TESTER_TOLERANCE,
};

/// Parameters of [`MultiGoalSearch`].
#[derive(Debug, Clone, PartialEq)]
pub struct MultiGoalConfig {
    /// Loss-ratio goals, e.g. `[0.0, 0.005]` for NDR and PDR.
    pub goals: Vec<f64>,
    /// Lowest load worth measuring (> 0).
    pub min_load: LineFraction,
    /// Highest load (the tester's calibrated ceiling, or 100 %).
    pub max_load: LineFraction,
    /// Trial duration of the first phase.
    pub initial_duration: Duration,
    /// Trial duration of the final phase (what the result is valid for).
    pub final_duration: Duration,
    /// Final relative width: (upper − lower) / upper.
    pub width_goal: f64,
    /// Phases after the first; `None` = ⌈log₂(final / initial)⌉, so durations about double.
    pub phases: Option<u32>,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

impl MultiGoalConfig {
    /// NDR and PDR (0 and 0.5 %) at 0.5 % width, 1 s first trials, `final_duration` at the end.
    pub fn ndr_pdr(final_duration: Duration) -> MultiGoalConfig {
        MultiGoalConfig {
            goals: vec![0.0, 0.005],
            min_load: LineFraction(0.001),
            max_load: LineFraction::FULL,
            initial_duration: Duration::from_secs(1).min(final_duration),
            final_duration,
            width_goal: 0.005,
            phases: None,
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Measurement {
    load: f64,
    secs: f64,
    loss_ratio: f64,
}

/// Direction and current step of an outward (or bracket-narrowing) gallop.
#[derive(Debug, Clone, Copy)]
struct Gallop {
    up: bool,
    step: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct GoalState {
    gallop: Option<Gallop>,
    hint_used: bool,
}

/// What the last issued trial was for.
#[derive(Debug, Clone, Copy)]
struct Serving {
    goal: usize,
    hint: bool,
}

/// The multi-goal search. See the module docs.
#[derive(Debug, Clone)]
pub struct MultiGoalSearch {
    cfg: MultiGoalConfig,
    ledger: Ledger,
    db: Vec<Measurement>,
    phase: u32,
    last_phase: u32,
    goals: Vec<GoalState>,
    serving: Option<Serving>,
    /// Forwarding rate of the first trial at the maximum load.
    mrr: Option<f64>,
    finished: bool,
}

impl MultiGoalSearch {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: MultiGoalConfig) -> Result<MultiGoalSearch, InvalidConfig> {
        validate_range(cfg.min_load, cfg.max_load)?;
        check(!cfg.goals.is_empty(), || "no loss-ratio goal".into())?;
        for g in &cfg.goals {
            check((0.0..1.0).contains(g), || {
                format!("loss-ratio goal {g} is not in [0, 1)")
            })?;
        }
        check(cfg.width_goal > 0.0 && cfg.width_goal < 0.5, || {
            format!("width goal {} is not in (0, 0.5)", cfg.width_goal)
        })?;
        check(
            !cfg.initial_duration.is_zero() && cfg.initial_duration <= cfg.final_duration,
            || "initial duration must be above zero and at most the final duration".into(),
        )?;
        let ratio = cfg.final_duration.as_secs_f64() / cfg.initial_duration.as_secs_f64();
        let last_phase = cfg
            .phases
            .unwrap_or_else(|| ratio.log2().ceil().max(0.0) as u32);
        check(last_phase <= 20, || {
            format!("{last_phase} phases is more than 20")
        })?;
        Ok(MultiGoalSearch {
            ledger: Ledger::new(cfg.tester_tolerance),
            goals: vec![GoalState::default(); cfg.goals.len()],
            cfg,
            db: Vec::new(),
            phase: 0,
            last_phase,
            serving: None,
            mrr: None,
            finished: false,
        })
    }

    fn duration(&self, phase: u32) -> Duration {
        if phase >= self.last_phase {
            return self.cfg.final_duration;
        }
        let d0 = self.cfg.initial_duration.as_secs_f64();
        let ratio = self.cfg.final_duration.as_secs_f64() / d0;
        let secs = d0 * ratio.powf(f64::from(phase) / f64::from(self.last_phase));
        // Whole milliseconds: trial runners and people both prefer round numbers.
        Duration::from_millis((secs * 1000.0).round() as u64)
    }

    fn width(&self, phase: u32) -> f64 {
        let doublings = self.last_phase.saturating_sub(phase).min(30) as i32;
        (self.cfg.width_goal * 2f64.powi(doublings)).min(0.5)
    }

    /// (lower, upper) for goal `g` as valid in the current phase.
    fn bounds(&self, g: usize) -> (Option<f64>, Option<f64>) {
        let ratio = self.cfg.goals[g];
        let min_secs = self.duration(self.phase).as_secs_f64() * (1.0 - 1e-9);
        let upper = self
            .db
            .iter()
            .filter(|m| m.loss_ratio > ratio)
            .map(|m| m.load)
            .reduce(f64::min);
        let lower = self
            .db
            .iter()
            .filter(|m| m.loss_ratio <= ratio && m.secs >= min_secs)
            .filter(|m| upper.is_none_or(|u| m.load < u))
            .map(|m| m.load)
            .reduce(f64::max);
        (lower, upper)
    }

    /// The next load for goal `g` in this phase, or `None` when `g` is done for the phase.
    /// Updates the goal's gallop state to match the returned choice.
    fn choose(&mut self, g: usize) -> Option<(f64, bool)> {
        let (min, max) = (self.cfg.min_load.0, self.cfg.max_load.0);
        let w = self.width(self.phase);
        let state = self.goals[g];
        let step_for = |up: bool| match state.gallop {
            Some(gl) if gl.up == up => gl.step,
            _ => w,
        };
        let (load, gallop, hint) = match self.bounds(g) {
            (None, None) => (max, None, false),
            (Some(l), None) => {
                if l >= max * (1.0 - 1e-12) {
                    return None;
                }
                let step = step_for(true);
                (
                    (l * (1.0 + step)).min(max),
                    Some(Gallop { up: true, step }),
                    false,
                )
            }
            (None, Some(h)) => {
                if h <= min * (1.0 + 1e-12) {
                    return None;
                }
                let hint = self
                    .mrr
                    .map(|f| f / (1.0 - self.cfg.goals[g]))
                    .filter(|x| *x > min && *x < h);
                match hint {
                    Some(x) if self.phase == 0 && !state.hint_used => (x, None, true),
                    _ => {
                        let step = step_for(false);
                        (
                            (h * (1.0 - step)).max(min),
                            Some(Gallop { up: false, step }),
                            false,
                        )
                    }
                }
            }
            (Some(l), Some(h)) => {
                if h - l <= w * h {
                    return None;
                }
                let mid = (l + h) / 2.0;
                match state.gallop {
                    Some(gl) if gl.up && l * (1.0 + gl.step) < mid => {
                        (l * (1.0 + gl.step), Some(gl), false)
                    }
                    Some(gl) if !gl.up && h * (1.0 - gl.step) > mid => {
                        (h * (1.0 - gl.step), Some(gl), false)
                    }
                    _ => (mid, None, false),
                }
            }
        };
        self.goals[g].gallop = gallop;
        if hint {
            self.goals[g].hint_used = true;
        }
        Some((load, hint))
    }

    fn learn(&mut self, o: &Outcome) {
        let loss_ratio = o.loss_ratio();
        self.db.push(Measurement {
            load: o.intended.0,
            secs: o.duration.as_secs_f64(),
            loss_ratio,
        });
        if self.mrr.is_none() && self.db.len() == 1 {
            self.mrr = Some(o.forwarding_rate().0);
        }
        if let Some(Serving { goal, hint }) = self.serving.take() {
            let passed = loss_ratio <= self.cfg.goals[goal];
            let w = self.width(self.phase);
            let state = &mut self.goals[goal];
            state.gallop = if hint {
                Some(Gallop {
                    up: passed,
                    step: w,
                })
            } else {
                match state.gallop {
                    // Still on the same side: widen the step (external search doubling).
                    Some(gl) if gl.up == passed => Some(Gallop {
                        up: gl.up,
                        step: gl.step * 2.0,
                    }),
                    _ => None,
                }
            };
        }
    }
}

impl Search for MultiGoalSearch {
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest> {
        match self.ledger.take(last) {
            Step::Stop => return None,
            Step::Learn(o) => self.learn(o),
            Step::Start => {}
        }
        if self.finished {
            return None;
        }
        loop {
            for g in 0..self.goals.len() {
                if let Some((load, hint)) = self.choose(g) {
                    self.serving = Some(Serving { goal: g, hint });
                    let duration = self.duration(self.phase);
                    return self
                        .ledger
                        .issue(TrialRequest::rate(LineFraction(load), duration));
                }
            }
            if self.phase >= self.last_phase {
                self.finished = true;
                return None;
            }
            self.phase += 1;
            for state in &mut self.goals {
                state.gallop = None;
            }
        }
    }

    fn result(&self) -> SearchResult {
        let goals = (0..self.goals.len())
            .map(|g| {
                let (lower, upper) = self.bounds(g);
                GoalResult {
                    loss_ratio: self.cfg.goals[g],
                    lower: lower.map(LineFraction),
                    upper: upper.map(LineFraction),
                }
            })
            .collect();
        self.ledger
            .result(self.finished, Finding::Throughput { goals })
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::SimDut;
    use super::super::{drive, BinaryConfig, BinarySearch, Status};
    use super::*;

    fn cfg() -> MultiGoalConfig {
        MultiGoalConfig::ndr_pdr(Duration::from_secs(30))
    }

    fn goals(r: &SearchResult) -> Vec<GoalResult> {
        match &r.finding {
            Finding::Throughput { goals } => goals.clone(),
            other => panic!("{other:?}"),
        }
    }

    /// The goal-g limit of a sharp DUT: loss ratio 1 − C/L ≤ g ⇔ L ≤ C / (1 − g).
    fn sharp_limit(capacity: f64, g: f64) -> f64 {
        (capacity / (1.0 - g)).min(1.0)
    }

    #[test]
    fn sharp_limit_all_goals_bracketed_within_width() {
        for capacity in [0.02, 0.3127, 0.62, 0.9, 0.998] {
            let mut dut = SimDut::sharp(LineFraction(capacity));
            let mut s = MultiGoalSearch::new(cfg()).unwrap();
            let r = drive(&mut s, |t| dut.trial(t));
            assert_eq!(r.status, Status::Complete);
            for goal in goals(&r) {
                let limit = sharp_limit(capacity, goal.loss_ratio);
                let lo = goal.lower.unwrap().0;
                match goal.upper {
                    Some(u) => {
                        // Frame rounding can put the limit a hair above the upper bound.
                        assert!(lo <= limit && limit < u.0 + 1e-6, "{capacity} {goal:?}");
                        assert!(goal.relative_width().unwrap() <= 0.005, "{goal:?}");
                    }
                    None => assert_eq!(lo, 1.0),
                }
            }
        }
    }

    #[test]
    fn lower_bounds_are_full_length_trials() {
        let mut dut = SimDut::sharp(LineFraction(0.47));
        let mut s = MultiGoalSearch::new(cfg()).unwrap();
        let mut seen = Vec::new();
        let r = drive(&mut s, |t| {
            let o = dut.trial(t);
            seen.push(o);
            o
        });
        for goal in goals(&r) {
            let lo = goal.lower.unwrap();
            assert!(seen.iter().any(|o| o.intended == lo
                && o.duration == Duration::from_secs(30)
                && o.loss_ratio() <= goal.loss_ratio));
        }
        // Short trials come first, full-length ones only at the end.
        let first_full = seen
            .iter()
            .position(|o| o.duration == Duration::from_secs(30))
            .unwrap();
        assert!(seen[first_full..]
            .iter()
            .all(|o| o.duration == Duration::from_secs(30)));
        assert!(first_full >= 3, "{first_full}");
    }

    #[test]
    fn buffered_dut_short_trials_do_not_fool_the_result() {
        // 0.2 s worth of queue at 1.488 Mpps: a 1 s trial hides ~30 % overload.
        let mut dut = SimDut::sharp(LineFraction(0.4)).with_buffer(300_000);
        let mut s = MultiGoalSearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        let g0 = goals(&r)[0];
        // True 30 s limit: (0.4·R·30 + 300000) / (R·30).
        let limit = 0.4 + 300_000.0 / (sim_pps() * 30.0);
        assert!(
            g0.lower.unwrap().0 <= limit && limit < g0.upper.unwrap().0,
            "{g0:?}"
        );
    }

    fn sim_pps() -> f64 {
        super::super::sim::GIGABIT_64B_PPS
    }

    #[test]
    fn noisy_limit_converges_within_noise_and_width() {
        let capacity = 0.55;
        let noise = 0.01;
        for seed in 1..=5 {
            let mut dut = SimDut::noisy(LineFraction(capacity), noise, seed);
            let mut s = MultiGoalSearch::new(cfg()).unwrap();
            let r = drive(&mut s, |t| dut.trial(t));
            assert_eq!(r.status, Status::Complete);
            for goal in goals(&r) {
                let limit = sharp_limit(capacity, goal.loss_ratio);
                let lo = goal.lower.unwrap().0;
                assert!(
                    lo >= limit * (1.0 - noise) * (1.0 - 0.005) && lo <= limit * (1.0 + noise),
                    "seed {seed}: {goal:?} vs {limit}"
                );
            }
        }
    }

    #[test]
    fn tester_limited_stops_without_a_dut_figure() {
        let mut dut = SimDut::sharp(LineFraction(0.95)).with_tester_ceiling(LineFraction(0.7));
        let mut s = MultiGoalSearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert!(matches!(r.status, Status::TesterLimited { .. }), "{r:?}");
        assert_eq!(r.throughput(0), None);
        assert_eq!(r.trials, 1);
    }

    /// Sum of trial-seconds of one binary search per goal, and of one multi-goal search, for
    /// the same goals and the same final width and trial duration.
    fn costs(make_dut: &dyn Fn() -> SimDut) -> (f64, f64, u32, u32) {
        let mlr_cfg = cfg();
        let mut binary_seconds = 0.0;
        let mut binary_trials = 0;
        for &goal in &mlr_cfg.goals {
            let mut dut = make_dut();
            let mut b = BinarySearch::new(BinaryConfig {
                loss_tolerance: goal,
                resolution: mlr_cfg.width_goal,
                min_load: mlr_cfg.min_load,
                max_load: mlr_cfg.max_load,
                duration: mlr_cfg.final_duration,
                tester_tolerance: mlr_cfg.tester_tolerance,
            })
            .unwrap();
            let r = drive(&mut b, |t| dut.trial(t));
            binary_seconds += r.trial_seconds;
            binary_trials += r.trials;
        }
        let mut dut = make_dut();
        let mut m = MultiGoalSearch::new(mlr_cfg).unwrap();
        let r = drive(&mut m, |t| dut.trial(t));
        (binary_seconds, r.trial_seconds, binary_trials, r.trials)
    }

    #[test]
    fn multi_goal_spends_fewer_trial_seconds_than_binary_searches() {
        println!("goals NDR 0 + PDR 0.005, width 0.5 %, final trials 30 s, first trials 1 s");
        println!(
            "{:<28} {:>22} {:>22}",
            "simulated DUT", "binary (trials, s)", "multi-goal (trials, s)"
        );
        let duts: Vec<(String, Box<dyn Fn() -> SimDut>)> = vec![
            (
                "sharp 62 %".into(),
                Box::new(|| SimDut::sharp(LineFraction(0.62))),
            ),
            (
                "sharp 31.27 %".into(),
                Box::new(|| SimDut::sharp(LineFraction(0.3127))),
            ),
            (
                "sharp 4 %".into(),
                Box::new(|| SimDut::sharp(LineFraction(0.04))),
            ),
            (
                "noisy 55 % ±1 %, seed 7".into(),
                Box::new(|| SimDut::noisy(LineFraction(0.55), 0.01, 7)),
            ),
            (
                "buffered 40 %".into(),
                Box::new(|| SimDut::sharp(LineFraction(0.4)).with_buffer(300_000)),
            ),
        ];
        for (name, make) in &duts {
            let (b, m, bt, mt) = costs(make.as_ref());
            println!("{name:<28} {bt:>6} {b:>14.1} s {mt:>6} {m:>14.1} s");
            assert!(m < b, "{name}: multi-goal {m} s is not below binary {b} s");
        }
    }
}
