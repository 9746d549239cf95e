//! `nat-teardown-rate` and `nat-throughput` against [`SimStatefulDut`]: the tear-down rate of a
//! table that deletes at a known speed, the "at least" bound when the deletion cannot be told
//! from the command's own cost, throughput per N against a forwarding limit that falls with N,
//! N beyond the table, tester-limited stops, replay, and a property test that the throughput
//! search ends with brackets holding the truth.

use core::time::Duration;

use proptest::prelude::*;

use super::super::sim::{SimStatefulDut, TablePolicy};
use super::*;

fn teardown_cfg(n: u64, reps: u32) -> TeardownRateConfig {
    TeardownRateConfig {
        connections: n,
        repetitions: reps,
        rate: ConnRate(5000.0),
        validation_rate: ConnRate(5000.0),
        gap: Duration::from_millis(100),
        tester_tolerance: DEFAULT_TESTER_TOLERANCE,
    }
}

fn throughput_cfg(ns: &[u64], min: f64, max: f64, resolution: f64) -> NatThroughputConfig {
    NatThroughputConfig {
        connections: ns.to_vec(),
        min_pps: min,
        max_pps: max,
        resolution,
        duration: Duration::from_secs(1),
        rate: ConnRate(5000.0),
        validation_rate: ConnRate(5000.0),
        gap: Duration::from_millis(100),
        tester_tolerance: DEFAULT_TESTER_TOLERANCE,
    }
}

fn teardown(r: &ConnSearchResult) -> (Option<f64>, Option<f64>, u32, u32) {
    match r.finding.clone() {
        ConnFinding::TeardownRate {
            rate,
            at_least,
            valid,
            repetitions,
            ..
        } => (rate.map(|x| x.0), at_least.map(|x| x.0), valid, repetitions),
        other => panic!("{other:?}"),
    }
}

fn points(r: &ConnSearchResult) -> Vec<ThroughputPoint> {
    match r.finding.clone() {
        ConnFinding::Throughput { points } => points,
        other => panic!("{other:?}"),
    }
}

#[test]
fn teardown_rate_is_the_simulated_deletion_speed() {
    for delete_rate in [10_000.0, 250_000.0, 3e6] {
        let mut dut = SimStatefulDut::new(100_000, 1e6, TablePolicy::DropNew);
        dut.delete_rate = delete_rate;
        let mut s = TeardownRateSearch::new(teardown_cfg(5000, 5)).unwrap();
        let r = drive_conn(&mut s, |t| dut.trial_real(t));
        assert_eq!(r.status, ConnStatus::Complete);
        assert_eq!(r.trials, 5);
        let (rate, at_least, valid, reps) = teardown(&r);
        assert_eq!((valid, reps), (5, 5));
        let rate = rate.unwrap();
        // Nanosecond rounding of the simulated times only.
        assert!(
            (rate - delete_rate).abs() <= 1e-3 * delete_rate,
            "{rate} vs {delete_rate}"
        );
        // The bound with the command's cost left in is below the rate, never above.
        assert!(at_least.unwrap() < rate);
        assert!(
            describe(&r).starts_with("tear-down rate "),
            "{}",
            describe(&r)
        );
    }
}

#[test]
fn a_deletion_no_slower_than_the_empty_one_gives_only_a_lower_bound() {
    let mut dut = SimStatefulDut::new(100_000, 1e6, TablePolicy::DropNew);
    dut.delete_rate = f64::INFINITY; // deletes in no time: only the command's cost remains
    let mut s = TeardownRateSearch::new(teardown_cfg(1000, 3)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    let (rate, at_least, valid, _) = teardown(&r);
    assert_eq!(rate, None);
    assert_eq!(valid, 3);
    // 1,000 connections over the 2 ms the command costs.
    assert!((at_least.unwrap() - 500_000.0).abs() < 1.0, "{at_least:?}");
    assert!(
        describe(&r).contains("at least 500000/s"),
        "{}",
        describe(&r)
    );
}

#[test]
fn teardown_repetitions_that_did_not_establish_all_connections_do_not_count() {
    // A table of 3,000: 5,000 connections are never all established.
    let dut = SimStatefulDut::new(3000, 1e6, TablePolicy::DropNew);
    let mut s = TeardownRateSearch::new(teardown_cfg(5000, 4)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    assert_eq!(r.status, ConnStatus::Complete);
    let (rate, at_least, valid, reps) = teardown(&r);
    assert_eq!((rate, at_least, valid, reps), (None, None, 0, 4));
    assert!(describe(&r).starts_with("no tear-down measured"));
    // Nor does one that left entries behind.
    let dut = SimStatefulDut::new(100_000, 1e6, TablePolicy::DropNew);
    let mut s = TeardownRateSearch::new(teardown_cfg(100, 2)).unwrap();
    let r = drive_conn(&mut s, |t| {
        let mut o = dut.trial_real(t);
        if let Some(d) = o.teardown.as_mut() {
            d.entries_after = 7;
        }
        o
    });
    assert_eq!(teardown(&r).2, 0);
}

#[test]
fn throughput_per_n_brackets_a_limit_that_falls_with_n() {
    let mut dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 200_000.0;
    dut.forward_slowdown = 0.5; // 100,000/s each way with the table full
    let ns = [1, 1000, 10_000];
    let mut s = NatThroughputSearch::new(throughput_cfg(&ns, 1000.0, 400_000.0, 0.01)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    assert_eq!(r.status, ConnStatus::Complete);
    let p = points(&r);
    assert_eq!(p.len(), 3);
    for (pt, n) in p.iter().zip(ns) {
        assert_eq!(pt.connections, n);
        assert!(pt.established);
        let truth = dut.forward_limit(n);
        let (lo, hi) = (pt.lower.unwrap(), pt.upper.unwrap());
        assert!(lo <= truth && truth < hi, "N = {n}: {lo}..{hi} vs {truth}");
        assert!((hi - lo) <= 0.01 * hi, "N = {n}: {lo}..{hi} too wide");
    }
    assert!(p[0].lower > p[2].lower);
    // Every trial asked for the load on its own N, and the trials' loads were all RFC 2544
    // loads of 1 s.
    assert!(
        describe(&r).contains("10000 connections: "),
        "{}",
        describe(&r)
    );
}

#[test]
fn throughput_beyond_the_table_is_not_established_and_the_search_goes_on() {
    let mut dut = SimStatefulDut::new(5000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 50_000.0;
    let mut s =
        NatThroughputSearch::new(throughput_cfg(&[8000, 100], 1000.0, 100_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    let p = points(&r);
    assert_eq!(p.len(), 2);
    assert_eq!(
        (p[0].connections, p[0].established, p[0].lower),
        (8000, false, None)
    );
    assert!(p[1].established && p[1].lower.unwrap() <= 50_000.0);
    assert!(describe(&r).starts_with("8000 connections: not all established"));
}

#[test]
fn throughput_when_the_maximum_passes_is_a_lower_bound_after_one_trial_per_n() {
    let dut = SimStatefulDut::new(5000, 1e6, TablePolicy::DropNew);
    let mut s = NatThroughputSearch::new(throughput_cfg(&[1, 10], 1000.0, 64_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    assert_eq!(r.trials, 2);
    let p = points(&r);
    assert!(p
        .iter()
        .all(|p| p.lower == Some(64_000.0) && p.upper.is_none()));
    assert!(describe(&r).contains("at least 64000 frames/s"));
}

#[test]
fn a_tester_short_of_the_load_ends_that_n_not_the_search() {
    // The failure of a run of 2026-11-26: one tester-limited N stopped the search, and every later
    // N had no figure. Now the short trial is a ceiling for its N only.
    let dut = SimStatefulDut::new(5000, 1e6, TablePolicy::DropNew);
    let mut s = NatThroughputSearch::new(throughput_cfg(&[1, 10], 1000.0, 64_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| {
        let mut o = dut.trial_real(t);
        if let Some(l) = o.load.as_mut() {
            l.reverse_pps = l.intended_pps * 0.5;
        }
        o
    });
    // Every load fell short: both N end tester-limited with no DUT figure, after the floor.
    assert_eq!(r.status, ConnStatus::Complete);
    let p = points(&r);
    assert_eq!(p.len(), 2, "{r:?}");
    for pt in &p {
        assert_eq!(pt.lower, None);
        assert!(
            matches!(pt.tester_limited, Some(TesterShort::Load { intended, achieved })
                if intended == 1000.0 && achieved == 500.0),
            "{pt:?}"
        );
    }
    assert!(
        describe(&r).contains("10 connections: tester-limited (asked 1000, sent 500"),
        "{}",
        describe(&r)
    );
    // A drop in the tester's own receive ring is the tester's too.
    let mut s = NatThroughputSearch::new(throughput_cfg(&[1], 1000.0, 64_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| {
        let mut o = dut.trial_real(t);
        if let Some(l) = o.load.as_mut() {
            l.tester_drops = 1;
            l.forward_received -= 1;
        }
        o
    });
    let p = points(&r);
    assert!(
        p[0].tester_limited.is_some() && p[0].upper.is_none(),
        "{p:?}"
    );
}

#[test]
fn a_tester_ceiling_above_the_duts_limit_at_full_table_still_gives_a_dut_figure_there() {
    // The DUT forwards 200,000/s each way with one connection, 100,000/s with its table full;
    // the tester offers at most 150,000/s each way. N = 1 is the tester's, N = 1,000 and the
    // full table are the DUT's.
    let mut dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 200_000.0;
    dut.forward_slowdown = 0.5;
    dut.load_ceiling = Some(150_000.0);
    let ns = [1, 1000, 10_000];
    let mut s = NatThroughputSearch::new(throughput_cfg(&ns, 1000.0, 250_000.0, 0.02)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    assert_eq!(r.status, ConnStatus::Complete);
    let p = points(&r);
    assert_eq!(p.len(), 3);
    // N = 1: at least a rate within the resolution of the tester's ceiling (a load short of
    // its rate by less than the tester tolerance, 1 %, counts as offered), and tester-limited
    // at a rate above it — never a DUT figure.
    let lo = p[0].lower.unwrap();
    let ceiling = 150_000.0 / (1.0 - DEFAULT_TESTER_TOLERANCE);
    assert!((0.98 * 150_000.0..=ceiling).contains(&lo), "{p:?}");
    assert_eq!(p[0].upper, None);
    assert!(
        matches!(p[0].tester_limited, Some(TesterShort::Load { intended, achieved })
        if intended > 150_000.0 && achieved == 150_000.0)
    );
    // N = 1,000 (forwards 195,000) is the tester's as well; the full table (100,000) is the
    // DUT's: a bracket holding the truth, no tester limit.
    assert!(p[1].tester_limited.is_some() && p[1].upper.is_none());
    let truth = dut.forward_limit(10_000);
    let (lo, hi) = (p[2].lower.unwrap(), p[2].upper.unwrap());
    assert!(lo <= truth && truth < hi && hi - lo <= 0.02 * hi, "{p:?}");
    assert_eq!(p[2].tester_limited, None);
    let d = describe(&r);
    assert!(d.starts_with("1 connections: at least "), "{d}");
    assert!(
        d.contains("10000 connections: ") && !d.contains("10000 connections: at least"),
        "{d}"
    );
}

#[test]
fn a_dut_failure_below_the_tester_ceiling_is_a_dut_figure() {
    // The tester falls short at 150,000, the DUT loses above 120,000: the bracket closes on
    // the DUT's failure, which is below the ceiling, so the N is the DUT's.
    let mut dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 120_000.0;
    dut.load_ceiling = Some(149_000.0);
    let mut s = NatThroughputSearch::new(throughput_cfg(&[1], 1000.0, 150_000.0, 0.02)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    let p = points(&r);
    let (lo, hi) = (p[0].lower.unwrap(), p[0].upper.unwrap());
    assert!(lo <= 120_000.0 && 120_000.0 < hi, "{p:?}");
    assert_eq!(p[0].tester_limited, None, "{p:?}");
}

#[test]
fn a_loss_while_the_tester_only_paused_is_the_duts() {
    // Every frame sent, but the load's span stretched by a pause (its rate reads 3 % short):
    // a pass says nothing (the pause rested the DUT), a loss is the DUT's failure.
    let mut dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 50_000.0;
    let paused = |o: &mut ConnOutcome| {
        if let Some(l) = o.load.as_mut() {
            l.forward_pps = l.intended_pps * 0.97;
        }
    };
    let mut s = NatThroughputSearch::new(throughput_cfg(&[1], 1000.0, 64_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| {
        let mut o = dut.trial_real(t);
        paused(&mut o);
        o
    });
    let p = points(&r);
    // 64,000 lost frames: the DUT's first failing rate. Every pass below it paused: no DUT
    // figure, tester-limited down to the floor.
    assert_eq!(p[0].upper, Some(64_000.0), "{p:?}");
    assert_eq!(p[0].lower, None, "{p:?}");
    assert!(p[0].tester_limited.is_some(), "{p:?}");
    // The same pause with frames left unsent is the tester's, loss or not.
    let mut s = NatThroughputSearch::new(throughput_cfg(&[1], 1000.0, 64_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| {
        let mut o = dut.trial_real(t);
        paused(&mut o);
        if let Some(l) = o.load.as_mut() {
            l.forward_sent -= 1;
        }
        o
    });
    assert_eq!(points(&r)[0].upper, None, "{:?}", points(&r));
}

#[test]
fn connections_the_tester_could_not_open_end_the_n_tester_limited() {
    let dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    let mut s =
        NatThroughputSearch::new(throughput_cfg(&[1000, 10], 1000.0, 64_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| {
        let mut o = dut.trial_real(t);
        if t.connections == 1000 {
            // Half the preliminary frames, at half the rate: half the connections.
            o.preliminary_sent = 500;
            o.offered_rate = ConnRate(t.rate.0 / 2.0);
            o.preliminary_received = 500;
        }
        o
    });
    let p = points(&r);
    assert_eq!(p.len(), 2);
    assert!(!p[0].established);
    assert!(matches!(
        p[0].tester_limited,
        Some(TesterShort::Establishment { .. })
    ));
    assert!(p[1].established && p[1].lower == Some(64_000.0));
    assert!(describe(&r).starts_with("1000 connections: tester-limited establishing"));
}

#[test]
fn new_searches_reject_bad_configs() {
    assert!(TeardownRateSearch::new(teardown_cfg(0, 1)).is_err());
    assert!(TeardownRateSearch::new(teardown_cfg(10, 0)).is_err());
    assert!(NatThroughputSearch::new(throughput_cfg(&[], 1.0, 2.0, 0.1)).is_err());
    assert!(NatThroughputSearch::new(throughput_cfg(&[0], 1.0, 2.0, 0.1)).is_err());
    assert!(NatThroughputSearch::new(throughput_cfg(&[1], 2.0, 2.0, 0.1)).is_err());
    assert!(NatThroughputSearch::new(throughput_cfg(&[1], 1.0, 2.0, 1.0)).is_err());
    let mut c = throughput_cfg(&[1], 1.0, 2.0, 0.1);
    c.duration = Duration::ZERO;
    assert!(NatThroughputSearch::new(c).is_err());
}

#[test]
fn real_test_trials_round_trip_and_replay() {
    let mut dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 30_000.0;
    let cfg = throughput_cfg(&[1, 500], 1000.0, 100_000.0, 0.05);
    let mut s = NatThroughputSearch::new(cfg.clone()).unwrap();
    let mut rec = Vec::new();
    let full = drive_conn(&mut s, |t| {
        let o = dut.trial_real(t);
        // Through JSON, as trials.jsonl keeps them.
        let t2: ConnTrial = serde_json::from_str(&serde_json::to_string(t).unwrap()).unwrap();
        let o2: ConnOutcome = serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
        assert!(t2.same_as(t));
        assert_eq!(o2, o);
        rec.push((t2, o2));
        o
    });
    // Killed after 3 trials, resumed: the same next trial, the same end.
    let mut s2 = NatThroughputSearch::new(cfg).unwrap();
    let next = replay_conn(&mut s2, &rec[..3]).unwrap();
    assert!(next.unwrap().same_as(&rec[3].0));
    let mut last = Some(rec[3].1);
    for (t, o) in &rec[4..] {
        let n = s2.next(last.as_ref()).unwrap();
        assert!(n.same_as(t));
        last = Some(*o);
    }
    assert_eq!(s2.next(last.as_ref()), None);
    assert_eq!(s2.result(), full);
    // A tear-down request is not a load request.
    let t = rec[0].0;
    let mut td = t;
    td.real = Some(RealTest::Teardown);
    assert!(!td.same_as(&t));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5752_0015_0002),
        ..ProptestConfig::default()
    })]

    /// For any table, forwarding limit, slowdown, list of N and range, the throughput search
    /// ends within a bounded number of trials; every N the table holds gets a bracket holding
    /// the truth, as narrow as the resolution unless an end of the range was reached; every N
    /// beyond it is "not established".
    #[test]
    fn throughput_brackets_hold_the_truth(
        capacity in 1u64..20_000,
        forward in 1_000.0f64..2e6,
        slowdown in 0.0f64..0.9,
        ns in proptest::collection::vec(1u64..30_000, 1..4),
        min in 100.0f64..10_000.0,
        span in 2.0f64..1000.0,
        resolution in 0.001f64..0.3,
    ) {
        let mut dut = SimStatefulDut::new(capacity, 1e9, TablePolicy::DropNew);
        dut.forward_pps = forward;
        dut.forward_slowdown = slowdown;
        let max = min * span;
        let mut s = NatThroughputSearch::new(throughput_cfg(&ns, min, max, resolution)).unwrap();
        let r = drive_conn(&mut s, |t| dut.trial_real(t));
        prop_assert_eq!(r.status, ConnStatus::Complete);
        let bound = ns.len() as u32 * (2 + (max / min / resolution).log2().ceil() as u32 + 2);
        prop_assert!(r.trials <= bound, "{} trials > {}", r.trials, bound);
        let p = points(&r);
        prop_assert_eq!(p.len(), ns.len());
        for (pt, &n) in p.iter().zip(&ns) {
            prop_assert_eq!(pt.connections, n);
            prop_assert_eq!(pt.established, n <= capacity);
            if !pt.established {
                continue;
            }
            let truth = dut.forward_limit(n);
            if let Some(lo) = pt.lower {
                prop_assert!(lo <= truth * (1.0 + 1e-9), "lower {} above {}", lo, truth);
            }
            if let Some(hi) = pt.upper {
                prop_assert!(hi > truth, "upper {} at or below {}", hi, truth);
            }
            if let (Some(lo), Some(hi)) = (pt.lower, pt.upper) {
                prop_assert!(hi - lo <= resolution * hi * (1.0 + 1e-9));
            }
        }
    }
}

/// A run of 2026-11-26 (run 3 that day): the firewall's full table was "not established" at the
/// plan's preliminary rate on a loaded DUT. A trial that misses connections is measured again with
/// them set up at half the rate, and the rest of that N keeps the slower rate, so the full table's
/// throughput is still measured; the next N starts at the plan's rate again.
#[test]
fn a_table_the_dut_cannot_set_up_at_the_plans_rate_is_set_up_at_half_of_it() {
    let mut dut = SimStatefulDut::new(10_000, 3_000.0, TablePolicy::DropNew);
    dut.forward_pps = 50_000.0;
    let mut s =
        NatThroughputSearch::new(throughput_cfg(&[10_000, 1000], 1000.0, 100_000.0, 0.05)).unwrap();
    let mut rates = Vec::new();
    let r = drive_conn(&mut s, |t| {
        rates.push((t.connections, t.rate.0));
        dut.trial_real(t)
    });
    let p = points(&r);
    assert!(p[0].established, "{p:?}");
    let (lo, hi) = (p[0].lower.unwrap(), p[0].upper.unwrap());
    let truth = dut.forward_limit(10_000);
    assert!(lo <= truth && truth < hi, "{lo} {truth} {hi}");
    assert_eq!(rates[0], (10_000, 5000.0));
    assert!(rates[1..]
        .iter()
        .filter(|(n, _)| *n == 10_000)
        .all(|&(_, r)| r == 2500.0));
    // The next N (1,000 connections: a burst the one-token bucket still refuses at 5,000/s)
    // starts at the plan's rate again.
    let first_1000 = rates.iter().find(|(n, _)| *n == 1000).unwrap();
    assert_eq!(first_1000.1, 5000.0);
    // A DUT that cannot set them up even at a quarter of the rate: not established.
    let dut = SimStatefulDut::new(10_000, 1_000.0, TablePolicy::DropNew);
    let mut s =
        NatThroughputSearch::new(throughput_cfg(&[10_000], 1000.0, 100_000.0, 0.05)).unwrap();
    let r = drive_conn(&mut s, |t| dut.trial_real(t));
    assert_eq!(r.trials, 1 + ESTABLISH_RETRIES);
    assert!(!points(&r)[0].established);
}

/// The DUT's limit moves little with N: an N after the first starts at the previous N's first
/// failing rate, so it needs fewer trials, and its bracket is still made of its own trials and
/// holds its truth. When that first rate passes (a limit that rises with N), the top of the
/// range is tried next, as for a fresh N.
#[test]
fn an_n_after_the_first_starts_at_the_previous_ns_first_failing_rate() {
    let mut dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 30_000.0;
    dut.forward_slowdown = 0.0;
    let mut s =
        NatThroughputSearch::new(throughput_cfg(&[1, 1000, 10_000], 5000.0, 150_000.0, 0.1))
            .unwrap();
    let mut asked: Vec<(u64, f64)> = Vec::new();
    let r = drive_conn(&mut s, |t| {
        if let Some(RealTest::Load { pps, .. }) = t.real {
            asked.push((t.connections, pps));
        }
        dut.trial_real(t)
    });
    let p = points(&r);
    let per_n = |n: u64| asked.iter().filter(|(m, _)| *m == n).count();
    for (i, n) in [1u64, 1000, 10_000].into_iter().enumerate() {
        let (lo, hi) = (p[i].lower.unwrap(), p[i].upper.unwrap());
        assert!(lo <= 30_000.0 && 30_000.0 < hi, "{n}: {lo} {hi}");
        if i > 0 {
            let first = asked.iter().find(|(m, _)| *m == n).unwrap().1;
            assert_eq!(first, p[i - 1].upper.unwrap(), "{asked:?}");
            assert!(per_n(n) < per_n(1), "{asked:?}");
        }
    }
    // A limit that rises with N: the previous N's failing rate passes, the top comes next.
    let mut dut = SimStatefulDut::new(10_000, 1e6, TablePolicy::DropNew);
    dut.forward_pps = 30_000.0;
    dut.forward_slowdown = -1.0; // 60,000 at the full table
    let mut s =
        NatThroughputSearch::new(throughput_cfg(&[1, 10_000], 5000.0, 150_000.0, 0.1)).unwrap();
    let mut asked: Vec<(u64, f64)> = Vec::new();
    let r = drive_conn(&mut s, |t| {
        if let Some(RealTest::Load { pps, .. }) = t.real {
            asked.push((t.connections, pps));
        }
        dut.trial_real(t)
    });
    let p = points(&r);
    let second: Vec<f64> = asked
        .iter()
        .filter(|(m, _)| *m == 10_000)
        .map(|x| x.1)
        .collect();
    assert_eq!(second[0], p[0].upper.unwrap());
    assert_eq!(second[1], 150_000.0, "{asked:?}");
    let truth = dut.forward_limit(10_000);
    assert!(p[1].lower.unwrap() <= truth && truth < p[1].upper.unwrap());
}
