//! The multi-goal search against simulated DUTs.

use super::super::sim::{SimDut, GIGABIT_64B_PPS};
use core::time::Duration;

use super::super::{drive, BinaryConfig, BinarySearch, GoalResult, Status};
use super::*;

fn cfg() -> MultiGoalConfig {
    MultiGoalConfig::ndr_pdr(Duration::from_secs(30))
}

const FULL: Duration = Duration::from_secs(30);

fn goals(r: &SearchResult) -> Vec<GoalResult> {
    match &r.finding {
        Finding::Throughput { goals } => goals.clone(),
        other => panic!("{other:?}"),
    }
}

/// Every goal's bracket is within its width (a hair of float slack: the grid makes the
/// width come out exactly) and contains the DUT's true limit at the final trial duration.
/// With a noisy DUT the truth is the limit ± its noise.
fn assert_brackets_truth(name: &str, dut: &SimDut, r: &SearchResult) {
    assert_eq!(r.status, Status::Complete, "{name}");
    for goal in goals(r) {
        let mut limit = dut.limit(goal.loss_ratio, FULL);
        if dut.noise > 0.0 {
            let (lo, up) = (goal.lower.unwrap().0, goal.upper.unwrap().0);
            limit = limit.clamp(lo / (1.0 + dut.noise), up * (1.0 + dut.noise));
            assert!(
                lo >= limit * (1.0 - dut.noise) * (1.0 - 0.005),
                "{name}: {goal:?}"
            );
            assert!(
                up <= limit * (1.0 + dut.noise) / (1.0 - 0.005),
                "{name}: {goal:?}"
            );
            limit = (lo + up) / 2.0;
        }
        let lo = goal.lower.unwrap().0;
        match goal.upper {
            Some(u) => {
                // Frame rounding can put the limit a hair above the upper bound.
                assert!(
                    lo <= limit + 1e-9 && limit < u.0 + 1e-6,
                    "{name}: {limit} not in {goal:?}"
                );
                assert!(
                    goal.relative_width().unwrap() <= 0.005 * (1.0 + 1e-9),
                    "{name}: {goal:?}"
                );
                assert_eq!(goal.regular, Some(true), "{name}: {goal:?}");
            }
            None => assert_eq!(lo, 1.0),
        }
    }
}

#[test]
fn sharp_limit_all_goals_bracketed_within_width() {
    for capacity in [0.02, 0.3127, 0.62, 0.9, 0.998] {
        let mut dut = SimDut::sharp(LineFraction(capacity));
        let mut s = MultiGoalSearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_brackets_truth(&format!("sharp {capacity}"), &dut, &r);
    }
}

#[test]
fn gradual_loss_is_bracketed_per_goal() {
    for (knee, slope) in [(0.5, 0.5), (0.2, 2.0), (0.7, 0.05)] {
        let mut dut = SimDut::gradual(LineFraction(knee), slope);
        let mut s = MultiGoalSearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_brackets_truth(&format!("gradual {knee} {slope}"), &dut, &r);
    }
}

/// A sweep of simulated DUTs (sharp, queued, gradual, noisy; several phase plans and
/// widths): every search completes well inside the trial guard with brackets that hold.
#[test]
fn sweep_of_duts_and_settings_always_brackets_the_truth() {
    let mut duts: Vec<(String, SimDut)> = Vec::new();
    for i in 1..=49u32 {
        let c = f64::from(i) * 0.02 - 0.001;
        duts.push((format!("sharp {c}"), SimDut::sharp(LineFraction(c))));
        duts.push((
            format!("queue {c}"),
            SimDut::sharp(LineFraction(c)).with_buffer(20_000 * u64::from(i)),
        ));
        duts.push((
            format!("gradual {c}"),
            SimDut::gradual(LineFraction(c), 0.05 * f64::from(i)),
        ));
        duts.push((
            format!("noisy {c}"),
            SimDut::noisy(LineFraction(c), 0.02, u64::from(i)),
        ));
    }
    for (phases, width, secs) in [(None, 0.005, 30), (Some(0), 0.01, 10), (Some(3), 0.002, 60)] {
        for (name, dut) in &duts {
            let mut dut = dut.clone();
            let mut c = cfg();
            for g in &mut c.goals {
                *g = Goal::new(
                    g.loss_ratio,
                    width,
                    Duration::from_secs(1),
                    Duration::from_secs(secs),
                );
            }
            c.phases = phases;
            let mut s = MultiGoalSearch::new(c).unwrap();
            let r = drive(&mut s, |t| dut.trial(t));
            let name = format!("{name} phases {phases:?} width {width}");
            assert_eq!(r.status, Status::Complete, "{name}");
            assert!(r.trials < 200, "{name}: {} trials", r.trials);
            for goal in goals(&r) {
                let full = Duration::from_secs(secs);
                let (lo, up) = (goal.lower.unwrap().0, goal.upper.map(|u| u.0));
                let limit = dut.limit(goal.loss_ratio, full);
                if dut.noise > 0.0 {
                    assert!(
                        lo >= limit * (1.0 - dut.noise) * (1.0 - width),
                        "{name} {goal:?}"
                    );
                    assert!(lo <= limit * (1.0 + dut.noise), "{name} {goal:?}");
                } else {
                    assert!(lo <= limit + 1e-9, "{name} {limit} {goal:?}");
                    // Whole frames: a 1 s probe's loss ratio is rounded to 1/sent, which
                    // a gradual DUT turns into a load error of 1/(sent × slope).
                    let slack = if dut.loss_slope > 0.0 {
                        1.0 / (limit * GIGABIT_64B_PPS * dut.loss_slope)
                    } else {
                        1e-6
                    };
                    assert!(
                        up.is_none_or(|u| limit < u + slack),
                        "{name} {limit} {goal:?}"
                    );
                }
                if let Some(u) = up {
                    assert!(1.0 - lo / u <= width * (1.0 + 1e-9), "{name} {goal:?}");
                }
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
        assert!(seen
            .iter()
            .any(|o| o.intended == lo && o.duration == FULL && o.loss_ratio() <= goal.loss_ratio));
        // Conditional throughput: the forwarding rate of the one full trial at the bound.
        let ct = goal.conditional_throughput.unwrap().0;
        assert!(
            ct <= lo.0 && ct >= lo.0 * (1.0 - goal.loss_ratio),
            "{goal:?}"
        );
    }
    // Short trials come first.
    assert!(seen[0].duration < FULL && seen[1].duration < FULL);
}

#[test]
fn buffered_dut_short_trials_do_not_fool_the_result() {
    // 0.2 s worth of queue at 1.488 Mpps: a 1 s trial hides ~50 % overload.
    let mut dut = SimDut::sharp(LineFraction(0.4)).with_buffer(300_000);
    let mut s = MultiGoalSearch::new(cfg()).unwrap();
    let r = drive(&mut s, |t| dut.trial(t));
    assert_brackets_truth("buffered", &dut, &r);
    // True 30 s limit: (0.4·R·30 + 300000) / (R·30).
    let limit = 0.4 + 300_000.0 / (sim_pps() * 30.0);
    assert!((dut.limit(0.0, FULL) - limit).abs() < 1e-12);
}

fn sim_pps() -> f64 {
    super::super::sim::GIGABIT_64B_PPS
}

#[test]
fn noisy_limit_converges_within_noise_and_width() {
    let capacity = 0.55;
    let noise = 0.01;
    for seed in 1..=20 {
        let mut dut = SimDut::noisy(LineFraction(capacity), noise, seed);
        let mut s = MultiGoalSearch::new(cfg()).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.status, Status::Complete);
        for goal in goals(&r) {
            let limit = dut.limit(goal.loss_ratio, FULL);
            let lo = goal.lower.unwrap().0;
            assert!(
                lo >= limit * (1.0 - noise) * (1.0 - 0.005) && lo <= limit * (1.0 + noise),
                "seed {seed}: {goal:?} vs {limit}"
            );
            assert!(goal.relative_width().unwrap() <= 0.005 * (1.0 + 1e-9));
        }
    }
}

#[test]
fn a_tester_ceiling_below_the_duts_capacity_gives_no_dut_figure() {
    let mut dut = SimDut::sharp(LineFraction(0.95)).with_tester_ceiling(LineFraction(0.7));
    let mut s = MultiGoalSearch::new(cfg()).unwrap();
    let r = drive(&mut s, |t| dut.trial(t));
    assert!(matches!(r.status, Status::TesterLimited { .. }), "{r:?}");
    assert_eq!(r.throughput(0), None);
    assert_eq!(r.throughput(1), None);
    for g in goals(&r) {
        // What the tester reached with the DUT passing: at least that, nothing more.
        assert!(g.tester_bound, "{g:?}");
        let lo = g.lower.expect("a lower bound under the ceiling").0;
        assert!(lo <= 0.7 / 0.99 && lo > 0.7 * (1.0 - g.goal.unwrap().width) - 0.01);
    }
}

/// The tester stalls above 70 %; the DUT's limit is lower: the search goes on under the
/// tester's ceiling and brackets the DUT's (before 849994c it stopped at the first trial).
#[test]
fn a_tester_ceiling_above_the_duts_capacity_still_gives_a_dut_figure() {
    let mut dut = SimDut::sharp(LineFraction(0.45)).with_tester_ceiling(LineFraction(0.7));
    let mut s = MultiGoalSearch::new(cfg()).unwrap();
    let r = drive(&mut s, |t| dut.trial(t));
    assert_eq!(r.status, Status::Complete, "{r:?}");
    assert_brackets_truth("tester ceiling 70 %", &dut, &r);
    assert!(goals(&r).iter().all(|g| !g.tester_bound));
    assert!(r.throughput(0).is_some() && r.throughput(1).is_some());
}

/// NDR bracketed by the DUT under the ceiling, PDR not: each goal says whose its bound is.
#[test]
fn each_goal_says_whether_its_upper_bound_is_the_testers() {
    // Loses 0.02 × (load − 50 %): NDR 50 %, PDR 0.5 % at 75 %, the tester stalls above 60 %.
    let mut dut = SimDut::gradual(LineFraction(0.5), 0.02).with_tester_ceiling(LineFraction(0.6));
    let mut s = MultiGoalSearch::new(cfg()).unwrap();
    let r = drive(&mut s, |t| dut.trial(t));
    let g = goals(&r);
    assert_eq!(r.status, Status::Complete, "{r:?}");
    assert!(!g[0].tester_bound && g[1].tester_bound, "{g:?}");
    assert!(r.throughput(0).is_some_and(|t| t.0 <= 0.5));
    assert_eq!(r.throughput(1), None);
}

#[test]
fn rfc2544_goal_needs_one_loss_free_60_s_trial() {
    let g = Goal::rfc2544();
    assert_eq!(
        (
            g.loss_ratio,
            g.exceed_ratio,
            g.final_duration,
            g.duration_sum
        ),
        (0.0, 0.0, Duration::from_secs(60), Duration::from_secs(60))
    );
    let mut dut = SimDut::sharp(LineFraction(0.3));
    let mut s = MultiGoalSearch::new(MultiGoalConfig {
        goals: vec![g],
        ..cfg()
    })
    .unwrap();
    let mut seen = Vec::new();
    let r = drive(&mut s, |t| {
        let o = dut.trial(t);
        seen.push(o);
        o
    });
    let lo = goals(&r)[0].lower.unwrap();
    assert!(seen
        .iter()
        .any(|o| o.intended == lo && o.duration.as_secs() == 60 && o.lost == 0));
    assert_eq!(goals(&r)[0].goal, Some(g));
}

#[test]
fn duration_sum_and_exceed_ratio_classify_over_several_trials() {
    // Exceed ratio 0.5 of a 90 s sum of 30 s trials: a load with one bad trial of three is
    // still a lower bound; the search must measure it at least three times.
    let goal = Goal {
        exceed_ratio: 0.5,
        duration_sum: Duration::from_secs(90),
        ..Goal::new(0.0, 0.005, Duration::from_secs(1), FULL)
    };
    let mut dut = SimDut::noisy(LineFraction(0.55), 0.01, 3);
    let mut s = MultiGoalSearch::new(MultiGoalConfig {
        goals: vec![goal],
        ..cfg()
    })
    .unwrap();
    let mut seen = Vec::new();
    let r = drive(&mut s, |t| {
        let o = dut.trial(t);
        seen.push(o);
        o
    });
    assert_eq!(r.status, Status::Complete);
    let res = goals(&r)[0];
    let lo = res.lower.unwrap();
    let at: Vec<_> = seen
        .iter()
        .filter(|o| o.intended == lo && o.duration == FULL)
        .collect();
    let good: f64 = at.iter().filter(|o| o.lost == 0).count() as f64 * 30.0;
    let bad: f64 = at.iter().filter(|o| o.lost > 0).count() as f64 * 30.0;
    // Lower bound: even counting the missing seconds as bad, bad ≤ 0.5 × 90.
    assert!(
        good + bad >= 90.0 - (45.0 - bad).max(0.0) && bad <= 45.0,
        "{at:?}"
    );
    assert!(at.len() >= 2, "{at:?}");
}

#[test]
fn search_time_cap_ends_with_the_best_bracket_so_far() {
    let mut dut = SimDut::sharp(LineFraction(0.4)).with_buffer(300_000);
    let mut s = MultiGoalSearch::new(MultiGoalConfig {
        time_cap: Some(Duration::from_secs(40)),
        ..cfg()
    })
    .unwrap();
    let r = drive(&mut s, |t| dut.trial(t));
    assert_eq!(
        r.status,
        Status::TimeCapped {
            cap: Duration::from_secs(40)
        }
    );
    assert!(r.trial_seconds <= 40.0, "{r:?}");
    assert!(r.status.to_string().contains("search-time cap of 40 s"));
    for goal in goals(&r) {
        // Bounds are still real: a lower bound only from a full-length trial that passed.
        if let Some(lo) = goal.lower {
            assert!(lo.0 <= dut.limit(goal.loss_ratio, FULL));
        }
        if goal
            .relative_width()
            .is_none_or(|w| w > goal.goal.unwrap().width)
        {
            assert_eq!(goal.regular, Some(false), "{goal:?}");
        }
    }
    // The same search without the cap is not affected by it.
    let mut dut = SimDut::sharp(LineFraction(0.4)).with_buffer(300_000);
    let mut s = MultiGoalSearch::new(MultiGoalConfig {
        time_cap: Some(Duration::from_secs(100_000)),
        ..cfg()
    })
    .unwrap();
    assert_eq!(drive(&mut s, |t| dut.trial(t)).status, Status::Complete);
}

/// A DUT that loses frames at a load it passed before (its capacity drops from 50 % to 45 %
/// after the 3rd trial): the short passes above the new limit are re-measured at full
/// length, fail, and the search brackets the new limit.
#[test]
fn unstable_dut_lowest_failure_wins() {
    let mut dut = SimDut::sharp(LineFraction(0.5));
    let mut n = 0;
    let mut s = MultiGoalSearch::new(cfg()).unwrap();
    let r = drive(&mut s, |t| {
        n += 1;
        if n == 4 {
            dut.capacity = LineFraction(0.45);
        }
        dut.trial(t)
    });
    assert_brackets_truth("unstable", &dut, &r);
}

/// Which bound wins when the same load passed and later failed (RFC 9971 with exceed ratio
/// 0): the failure. Lower bounds above the lowest upper bound do not count.
#[test]
fn a_failure_outweighs_an_earlier_pass_at_the_same_or_a_higher_load() {
    let mut s = MultiGoalSearch::new(cfg()).unwrap();
    let m = |load, secs, loss_ratio| Measurement {
        load,
        secs,
        loss_ratio,
        forwarding: load * (1.0 - loss_ratio),
    };
    s.db = vec![
        m(0.5, 30.0, 0.0),
        m(0.4, 30.0, 0.0),
        m(0.5, 30.0, 0.01),
        m(0.45, 30.0, 0.001),
    ];
    let last = s.goals[0].last_phase;
    let b = s.bounds(0, last);
    assert_eq!((b.lower, b.upper), (Some(0.4), Some(0.45)));
    let pdr = s.bounds(1, last);
    assert_eq!((pdr.lower, pdr.upper), (Some(0.45), Some(0.5)));
}

#[test]
fn config_errors_name_the_setting() {
    let bad = |g: Goal| {
        MultiGoalSearch::new(MultiGoalConfig {
            goals: vec![g],
            ..cfg()
        })
        .unwrap_err()
        .0
    };
    let g = Goal::new(0.0, 0.005, Duration::from_secs(1), FULL);
    assert!(bad(Goal {
        exceed_ratio: 1.0,
        ..g
    })
    .contains("exceed ratio"));
    assert!(bad(Goal {
        duration_sum: Duration::from_secs(10),
        ..g
    })
    .contains("duration sum"));
    assert!(bad(Goal { width: 0.7, ..g }).contains("width"));
}

/// Sum of trial-seconds of one binary search per goal, and of one multi-goal search, for
/// the same goals and the same final width and trial duration.
fn costs(make_dut: &dyn Fn() -> SimDut) -> (f64, f64, u32, u32) {
    let mlr_cfg = cfg();
    let mut binary_seconds = 0.0;
    let mut binary_trials = 0;
    for goal in &mlr_cfg.goals {
        let mut dut = make_dut();
        let mut b = BinarySearch::new(BinaryConfig {
            loss_tolerance: goal.loss_ratio,
            resolution: goal.width,
            min_load: mlr_cfg.min_load,
            max_load: mlr_cfg.max_load,
            duration: goal.final_duration,
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
    assert_brackets_truth("cost", &dut, &r);
    (binary_seconds, r.trial_seconds, binary_trials, r.trials)
}

/// Prints the cost table of issue #17 (`cargo test -p bench multi_goal_spends --
/// --nocapture`): trials and trial-seconds per simulated DUT, for one binary search per goal,
/// this search, and the better of the two MLRsearch 1.2.1 configurations (from
/// `scripts/dev/mlrsearch_compare.py`, which runs it on a port of these DUTs; not re-run
/// here). Asserts only what is
/// deterministic: brackets within width that contain the truth, and fewer trial-seconds
/// than the binary searches.
#[test]
fn multi_goal_spends_fewer_trial_seconds_than_binary_searches() {
    println!("goals NDR 0 + PDR 0.005, width 0.5 %, final trials 30 s, first trials 1 s");
    println!(
        "{:<34} {:>20} {:>20} {:>18}",
        "simulated DUT", "binary (trials, s)", "multi-goal", "MLRsearch (better)"
    );
    type Make = Box<dyn Fn() -> SimDut>;
    let duts: Vec<(&str, Make, Option<f64>)> = vec![
        (
            "sharp 62 %",
            Box::new(|| SimDut::sharp(LineFraction(0.62))),
            Some(74.0),
        ),
        (
            "sharp 31.27 %",
            Box::new(|| SimDut::sharp(LineFraction(0.3127))),
            Some(74.0),
        ),
        (
            "sharp 4 %",
            Box::new(|| SimDut::sharp(LineFraction(0.04))),
            Some(74.0),
        ),
        (
            "40 % with a 0.2 s buffer",
            Box::new(|| SimDut::sharp(LineFraction(0.4)).with_buffer(300_000)),
            Some(272.0),
        ),
        (
            "gradual 50 % +0.5 % loss per 1 %",
            Box::new(|| SimDut::gradual(LineFraction(0.5), 0.5)),
            Some(134.1),
        ),
    ];
    let (mut total, mut total_ref) = (0.0, 0.0);
    for (name, make, reference) in &duts {
        let (b, m, bt, mt) = costs(make.as_ref());
        let r = reference.map_or("–".into(), |x| format!("{x:.1} s"));
        println!("{name:<34} {bt:>5} {b:>12.1} s {mt:>5} {m:>12.1} s {r:>18}");
        assert!(m < b, "{name}: multi-goal {m} s is not below binary {b} s");
        if let Some(x) = reference {
            total += m;
            total_ref += x;
        }
    }
    let (mut sum_b, mut sum_m, mut sum_bt, mut sum_mt) = (0.0, 0.0, 0, 0);
    let (mut lo, mut hi) = (f64::MAX, 0f64);
    for seed in 1..=20 {
        let (b, m, bt, mt) = costs(&|| SimDut::noisy(LineFraction(0.55), 0.01, seed));
        (sum_b, sum_m, sum_bt, sum_mt) = (sum_b + b, sum_m + m, sum_bt + bt, sum_mt + mt);
        (lo, hi) = (lo.min(m), hi.max(m));
    }
    println!(
        "{:<34} {:>5.1} {:>12.1} s {:>5.1} {:>12.1} s {:>18}",
        "noisy 55 % ±1 %, mean seeds 1–20",
        f64::from(sum_bt) / 20.0,
        sum_b / 20.0,
        f64::from(sum_mt) / 20.0,
        sum_m / 20.0,
        "78.5 s"
    );
    println!("  noisy multi-goal range {lo:.1}–{hi:.1} s");
    total += sum_m / 20.0;
    total_ref += 78.5;
    println!(
        "total: multi-goal {total:.1} s, MLRsearch (better configuration per row) {total_ref:.1} s"
    );
    assert!(sum_m < sum_b);
}
