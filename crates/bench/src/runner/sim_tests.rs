//! The runner driven by a simulated executor (issue 18 item 6): its switch, resume and
//! tester-limited logic, without a network. The simulated DUT forwards up to a capacity
//! (a fraction of line rate) and loses the excess; the simulated tester offers at most its
//! own ceiling. Every call the runner makes is logged, so a test checks the order of
//! switches and trials.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::path::Path;

use wire::encap::IpVersion;

use super::*;
use crate::executor::{DutSwitches, TcpRun, TrialExecutor};
use crate::results::RunDir;
use crate::results::{ConnDutCounters, ConnPhases, DutCounters, EngineFacts, InvalidCounts};
use crate::search::{ConnOutcome, ConnTrial};
use crate::search::{LineFraction, Outcome, Status, TrialRequest};

type Log = Rc<RefCell<Vec<String>>>;

struct SimBed {
    log: Log,
    /// What the DUT forwards without loss, as a fraction of line rate.
    capacity: f64,
    /// The most the tester offers, as a fraction of line rate.
    tester_ceiling: f64,
    /// The most the tester's receive backlog takes, as a fraction of line rate: what the DUT
    /// forwards above it is dropped there (`DutCounters::tester_backlog_drops`).
    tester_rx_ceiling: f64,
    /// Whether the frames the tester's receive side cannot take are counted by a real port's
    /// NIC (`rx_missed_errors`, `EngineFacts::tester_port_drops`) instead of the lab's
    /// tester backlog.
    receive_drops_on_nic: bool,
    /// UDP trials (1-based calls) in which the tester stalls: it slips frames, whatever the load.
    stall_calls: Vec<usize>,
    /// Raise `stop` during the n-th UDP trial (1-based), as a Ctrl-C would.
    stop_during: Option<(usize, &'static AtomicBool)>,
    udp_trials: usize,
}

impl SimBed {
    fn new(log: &Log, capacity: f64) -> SimBed {
        SimBed {
            log: log.clone(),
            capacity,
            tester_ceiling: 1.0,
            tester_rx_ceiling: 1.0,
            receive_drops_on_nic: false,
            stall_calls: Vec::new(),
            stop_during: None,
            udp_trials: 0,
        }
    }
}

struct SimSwitches(Log);

impl DutSwitches for SimSwitches {
    fn has_dut(&self) -> bool {
        true
    }
    fn apply_profile(&self, profile: &lab::Profile) -> Result<(), lab::LabError> {
        self.0.borrow_mut().push(format!("profile {profile}"));
        Ok(())
    }
    fn set_conn_table(&self, limit: Option<u64>, _: Option<Duration>) -> Result<(), lab::LabError> {
        self.0.borrow_mut().push(format!("conn-table {limit:?}"));
        Ok(())
    }
    fn set_offload(&self, on: bool) -> Result<(), lab::LabError> {
        self.0.borrow_mut().push(format!("offload {on}"));
        Ok(())
    }
    fn set_fastpath(&self, on: bool) -> Result<(), lab::LabError> {
        self.0.borrow_mut().push(format!("fastpath {on}"));
        Ok(())
    }
}

impl TrialExecutor for SimBed {
    fn dut_switches(&self) -> Option<Box<dyn DutSwitches>> {
        Some(Box::new(SimSwitches(self.log.clone())))
    }

    fn udp_trial(
        &mut self,
        plan: &Plan,
        case: &Case,
        request: &TrialRequest,
        _stop: &AtomicBool,
    ) -> Result<(Outcome, EngineFacts), crate::error::BenchError> {
        self.udp_trials += 1;
        if let Some((n, stop)) = self.stop_during {
            if n == self.udp_trials {
                stop.store(true, Ordering::SeqCst);
            }
        }
        self.log
            .borrow_mut()
            .push(format!("udp {} {:.4}", case.id, request.load.0));
        let offered = request.load.0.min(self.tester_ceiling);
        let sent =
            (plan.line_pps(case).0 * offered * request.duration.as_secs_f64()).round() as u64;
        let delivered = if offered > self.capacity {
            self.capacity / offered
        } else {
            1.0
        };
        let forwarded = (sent as f64 * delivered).floor() as u64;
        let rx_room = if self.tester_rx_ceiling >= 1.0 {
            u64::MAX
        } else {
            (plan.line_pps(case).0 * self.tester_rx_ceiling * request.duration.as_secs_f64()) as u64
        };
        let received = forwarded.min(rx_room);
        let outcome = Outcome {
            intended: request.load,
            offered: LineFraction(offered),
            received,
            lost: sent - received,
            fragments: 0,
            directions: 1,
            duration: request.duration,
            latency: None,
        };
        let facts = EngineFacts {
            backend: "sim".into(),
            note: String::new(),
            sent,
            slipped: if self.stall_calls.contains(&self.udp_trials) {
                sent / 10 + 1
            } else {
                0
            },
            refused_by_dut: 0,
            max_catch_up: 0,
            dut: Some(DutCounters {
                ingress_rx: sent,
                ingress_drops: sent - forwarded,
                egress_tx: forwarded,
                tester_backlog_drops: if self.receive_drops_on_nic {
                    0
                } else {
                    forwarded - received
                },
                ..DutCounters::default()
            }),
            invalid: InvalidCounts::default(),
            per_direction: Vec::new(),
            session_drops: Vec::new(),
            streams: Vec::new(),
            tester_port_drops: if self.receive_drops_on_nic && forwarded > received {
                vec![crate::results::TesterPortDrop {
                    port: "b".into(),
                    counter: "rx_missed_errors".into(),
                    frames: forwarded - received,
                }]
            } else {
                Vec::new()
            },
        };
        Ok((outcome, facts))
    }

    fn conn_trial(
        &mut self,
        _: &Case,
        _: &ConnTrial,
        _: Option<u64>,
        _: engine::trial::Backend,
        _: &AtomicBool,
    ) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), crate::error::BenchError> {
        no_conn_trial()
    }

    fn tcp_trial(
        &mut self,
        _: &Case,
        _: &Plan,
        _: &AtomicBool,
    ) -> (
        Result<TcpRun, crate::error::BenchError>,
        Option<DutCounters>,
    ) {
        no_tcp_trial()
    }

    fn down(self: Box<Self>) -> Result<(), crate::error::BenchError> {
        self.log.borrow_mut().push("down".into());
        Ok(())
    }
}

/// A lab plan with one profile and the matrices given.
fn plan_text(matrices: &str) -> String {
    format!(
        r#"
name = "sim"
[topology]
kind = "lab"
lab = "forward"
name = "sim"
speed = "1G"
[dut]
kind = "lab"
[dut.profiles.forward]
[run]
repetitions = 1
trial-duration = "0.5s"
settle = "0s"
profile-settle = "0s"
[methodology.rfc2544-throughput]
loss-tolerance = 0.0
resolution = 0.02
{matrices}
"#
    )
}

const UDP_64: &str = r#"
[[matrix]]
name = "plain"
profile = ["forward"]
protocol = ["udp"]
ip = [4]
frame-size = [64]
methodologies = ["rfc2544-throughput"]
"#;

/// Runs `text` on `bed` into `dir` as `wirerate run` would after its preflight.
fn run_sim(
    text: &str,
    dir: &Path,
    resume: bool,
    bed: SimBed,
    stop: &AtomicBool,
) -> Result<RunSummary, RunError> {
    run_calibrated(text, dir, resume, bed, stop, None)
}

/// [`run_sim`] with the tester's calibration a `wirerate run --calibration` would load.
fn run_calibrated(
    text: &str,
    dir: &Path,
    resume: bool,
    bed: impl TrialExecutor + 'static,
    stop: &AtomicBool,
    calibration: Option<Calibration>,
) -> Result<RunSummary, RunError> {
    let (plan, cases) = Plan::parse_expanded(text, "sim.toml").expect("the test plan parses");
    let mut progress = |_: Event<'_>| {};
    let mut opts = RunOptions {
        dir: dir.to_path_buf(),
        resume,
        calibration,
        stop,
        progress: &mut progress,
    };
    let opened = open_run_dir(&plan, text, &cases, &[], &mut opts)?;
    run_on(Box::new(bed), &plan, &cases, opened, opts)
}

fn records(dir: &Path) -> Vec<Record> {
    RunDir::resume(dir).unwrap().0.records().unwrap()
}

fn done_results(dir: &Path) -> Vec<crate::search::SearchResult> {
    records(dir)
        .into_iter()
        .filter_map(|r| match r {
            Record::Done(d) => d.result,
            _ => None,
        })
        .collect()
}

#[test]
fn a_case_without_the_fastpath_dimension_after_one_that_switched_it_gets_its_profile_again() {
    let fastpath = UDP_64
        .replace("name = \"plain\"", "name = \"fp\"")
        .replace("methodologies", "fastpath = [\"on\"]\nmethodologies");
    let text = plan_text(&format!("{fastpath}{UDP_64}"));
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, SimBed::new(&log, 0.5), &stop).unwrap();
    let log = log.borrow();
    let first = |p: &str| log.iter().position(|l| l.starts_with(p)).unwrap();
    let last = |p: &str| log.iter().rposition(|l| l.starts_with(p)).unwrap();
    // The profile first, then the fast-path case's switch before its first trial.
    assert_eq!(log[0], "profile forward", "{log:#?}");
    let fp_on = first("fastpath true");
    assert!(
        fp_on < first("udp forward/udp4/64B/fastpath=on "),
        "{log:#?}"
    );
    // The plain case: the profile applied again after the fast-path case's last trial and
    // before its own first trial; nothing switched the fast path since.
    let plain = first("udp forward/udp4/64B ");
    let reapplied = last("profile forward");
    assert!(
        last("udp forward/udp4/64B/fastpath=on ") < reapplied && reapplied < plain,
        "{log:#?}"
    );
    assert!(
        !log[reapplied..].iter().any(|l| l.starts_with("fastpath")),
        "{log:#?}"
    );
    assert_eq!(log.last().unwrap(), "down");
}

#[test]
fn a_stopped_run_resumes_without_repeating_or_losing_a_trial() {
    let text = plan_text(UDP_64);
    // The whole run, uninterrupted.
    let whole = tempfile::tempdir().unwrap();
    let log = Log::default();
    let stop = AtomicBool::new(false);
    let summary = run_sim(&text, whole.path(), false, SimBed::new(&log, 0.37), &stop).unwrap();
    let all_trials = summary.trials_run as usize;
    assert!(all_trials >= 4, "a search of several trials: {all_trials}");
    // Stopped during the third trial (that trial is not recorded), then resumed.
    static STOP: AtomicBool = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    let first_log = Log::default();
    let mut bed = SimBed::new(&first_log, 0.37);
    bed.stop_during = Some((3, &STOP));
    let stopped = run_sim(&text, dir.path(), false, bed, &STOP);
    assert!(matches!(stopped, Err(RunError::Interrupted)), "{stopped:?}");
    assert_eq!(
        first_log.borrow().last().unwrap(),
        "down",
        "taken down after Ctrl-C"
    );
    let kept = records(dir.path())
        .iter()
        .filter(|r| matches!(r, Record::Trial(_)))
        .count();
    assert_eq!(kept, 2, "the two finished trials are kept");
    STOP.store(false, Ordering::SeqCst);
    let second_log = Log::default();
    let resumed = run_sim(
        &text,
        dir.path(),
        true,
        SimBed::new(&second_log, 0.37),
        &STOP,
    )
    .unwrap();
    assert_eq!(resumed.trials_replayed, 2);
    assert_eq!(
        resumed.trials_run as usize,
        all_trials - 2,
        "{:#?}",
        second_log.borrow()
    );
    // The resumed search asked for exactly the trials the whole run asked for after the
    // first two, and found the same figure.
    let udp = |l: &Log| -> Vec<String> {
        l.borrow()
            .iter()
            .filter(|x| x.starts_with("udp"))
            .cloned()
            .collect()
    };
    assert_eq!(udp(&second_log), udp(&log)[2..].to_vec());
    assert_eq!(done_results(dir.path()), done_results(whole.path()));
}

fn trial_records(dir: &Path) -> Vec<TrialRecord> {
    records(dir)
        .into_iter()
        .filter_map(|r| match r {
            Record::Trial(t) => Some(t),
            _ => None,
        })
        .collect()
}

#[test]
fn a_tester_that_cannot_offer_the_load_ends_the_search_tester_limited_after_retries() {
    let text = plan_text(UDP_64);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut bed = SimBed::new(&log, 0.9);
    bed.tester_ceiling = 0.6;
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, bed, &stop).unwrap();
    let trials = trial_records(dir.path());
    // The first request (line rate) is measured again MAX_STALL_RETRIES times, each kept as
    // superseded, then recorded tester-limited; the bisection goes on under it, and every
    // load the tester cannot keep is recorded tester-limited too.
    let superseded = trials.iter().filter(|t| t.superseded).count() as u32;
    assert_eq!(superseded, MAX_STALL_RETRIES, "{trials:#?}");
    let counted: Vec<_> = trials.iter().filter(|t| !t.superseded).collect();
    assert!(counted[0].tester_limited && counted[0].request.load.0 == 1.0);
    for t in &counted {
        assert_eq!(t.tester_limited, t.request.load.0 > 0.6 / 0.99, "{t:?}");
    }
    let results = done_results(dir.path());
    assert_eq!(results.len(), 1);
    // The DUT passed every load the tester kept: no DUT figure, the tester's ceiling.
    match results[0].status {
        Status::TesterLimited { intended, achieved } => {
            assert!(intended.0 > 0.6 / 0.99 && intended.0 < 0.62, "{intended:?}");
            assert!((achieved.0 - 0.6).abs() < 1e-9);
        }
        other => panic!("expected tester-limited, got {other:?}"),
    }
    assert_eq!(results[0].throughput(0), None);
}

/// The tester cannot offer more than 60 %, the DUT forwards 37 %: the search measures the DUT
/// under the tester's ceiling (before 849994c it stopped at the first trial without a figure).
#[test]
fn a_dut_slower_than_the_testers_ceiling_is_measured_under_it() {
    let text = plan_text(UDP_64);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut bed = SimBed::new(&log, 0.37);
    bed.tester_ceiling = 0.6;
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, bed, &stop).unwrap();
    let results = done_results(dir.path());
    assert_eq!(results[0].status, Status::Complete, "{results:?}");
    let t = results[0].throughput(0).expect("a DUT figure").0;
    assert!(t <= 0.37 + 1e-9 && t > 0.37 - 0.02 - 1e-9, "throughput {t}");
}

/// Three stalls in a row at a load below one the tester already kept (a shared machine's
/// transient) are measured again, not taken as the tester's ceiling: the DUT's figure stands.
#[test]
fn stalls_below_a_load_the_tester_kept_are_transients_not_a_ceiling() {
    let text = plan_text(UDP_64);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut bed = SimBed::new(&log, 0.37);
    // Trials 1 (100 %) and 2 (~50 %) are kept; the third request (~25 %) stalls three times.
    bed.stall_calls = vec![3, 4, 5];
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, bed, &stop).unwrap();
    let trials = trial_records(dir.path());
    let superseded: Vec<_> = trials.iter().filter(|t| t.superseded).collect();
    assert_eq!(superseded.len(), 3, "{trials:#?}");
    assert!(superseded.iter().all(|t| t.request.load.0 < 0.3));
    let results = done_results(dir.path());
    assert_eq!(results[0].status, Status::Complete, "{results:?}");
    let t = results[0].throughput(0).expect("a DUT figure").0;
    assert!(t <= 0.37 + 1e-9 && t > 0.37 - 0.02 - 1e-9, "throughput {t}");
}

/// The first request (line rate) stalls three times in a row. The tester's calibration carried
/// line rate at 64 B, so those stalls are transients: measured again until one is kept, and
/// the DUT's figure stands. Without the calibration the same stalls end at the tester-limited
/// trial after [`MAX_STALL_RETRIES`] re-measurements, as the tester's possible ceiling.
#[test]
fn stalls_at_a_load_the_calibration_carried_are_transients_not_a_ceiling() {
    let text = plan_text(UDP_64);
    let stop = AtomicBool::new(false);
    let stalled_first = |calibration: Option<Calibration>| {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::default();
        let mut bed = SimBed::new(&log, 0.37);
        bed.stall_calls = vec![1, 2, 3];
        run_calibrated(&text, dir.path(), false, bed, &stop, calibration).unwrap();
        (trial_records(dir.path()), done_results(dir.path()))
    };

    let (trials, results) = stalled_first(Some(calibration_at(1.0)));
    let superseded: Vec<_> = trials.iter().filter(|t| t.superseded).collect();
    assert_eq!(superseded.len(), 3, "{trials:#?}");
    assert!(superseded.iter().all(|t| t.request.load.0 == 1.0));
    assert!(
        trials.iter().all(|t| t.superseded || !t.tester_limited),
        "{trials:#?}"
    );
    assert_eq!(results[0].status, Status::Complete, "{results:?}");

    // Without a calibration, and with one that measured another size only (its ceiling bounds
    // 64 B from above but does not show the tester carries it), the first stalls are a
    // possible ceiling.
    let mut other_size = calibration_at(1.0);
    other_size.entries[0].frame_size = 60;
    for calibration in [None, Some(other_size)] {
        let (trials, _) = stalled_first(calibration);
        let superseded = trials.iter().filter(|t| t.superseded).count() as u32;
        assert_eq!(superseded, MAX_STALL_RETRIES, "{trials:#?}");
        let first_kept = trials
            .iter()
            .find(|t| !t.superseded)
            .expect("a counted trial");
        assert!(first_kept.tester_limited && first_kept.request.load.0 == 1.0);
    }
}

/// The tester's receive backlog takes at most 30 % of line rate, the DUT forwards 50 %: the
/// frames the tester dropped are not the DUT's loss. Without the tester's backlog counter
/// the search would report 30 % as the DUT's throughput.
#[test]
fn frames_the_testers_receive_backlog_dropped_are_never_the_duts_loss() {
    let text = plan_text(UDP_64);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut bed = SimBed::new(&log, 0.5);
    bed.tester_rx_ceiling = 0.3;
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, bed, &stop).unwrap();
    let trials = trial_records(dir.path());
    for t in trials.iter().filter(|t| t.request.load.0 > 0.3 + 1e-6) {
        assert!(t.tester_limited, "{t:?}");
    }
    let results = done_results(dir.path());
    assert!(
        matches!(results[0].status, Status::TesterLimited { .. }),
        "{results:?}"
    );
    assert_eq!(results[0].throughput(0), None);
}

/// The same with a real port's NIC counting what it missed (`rx_missed_errors`, issue 33):
/// any rise of the tester's own counters makes the trial tester-limited, never the DUT's loss.
#[test]
fn frames_the_testers_nic_missed_are_never_the_duts_loss() {
    let text = plan_text(UDP_64);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let mut bed = SimBed::new(&log, 0.5);
    bed.tester_rx_ceiling = 0.3;
    bed.receive_drops_on_nic = true;
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, bed, &stop).unwrap();
    let trials = trial_records(dir.path());
    let missed: Vec<_> = trials
        .iter()
        .filter(|t| {
            t.engine
                .as_ref()
                .is_some_and(|e| e.tester_port_drop_total() > 0)
        })
        .collect();
    assert!(!missed.is_empty());
    for t in &missed {
        assert!(t.tester_limited, "{t:?}");
    }
    // Below the NIC's ceiling nothing rose, and those trials are the DUT's.
    for t in trials.iter().filter(|t| t.request.load.0 <= 0.3 - 1e-6) {
        assert!(!t.tester_limited, "{t:?}");
    }
    let results = done_results(dir.path());
    assert_eq!(results[0].throughput(0), None, "{results:?}");
}

#[test]
fn the_dut_figure_is_the_simulated_capacity() {
    // The other side of the tester-limited test: a DUT slower than the tester is measured.
    let text = plan_text(UDP_64);
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, SimBed::new(&log, 0.37), &stop).unwrap();
    let results = done_results(dir.path());
    assert_eq!(results[0].status, Status::Complete);
    let t = results[0].throughput(0).expect("a throughput").0;
    assert!(t <= 0.37 + 1e-9 && t > 0.37 - 0.02 - 1e-9, "throughput {t}");
}

/// A calibration of a tester that proved `fraction` of line rate at 64 B over IPv4.
fn calibration_at(fraction: f64) -> Calibration {
    let line = wire::linerate::max_frame_rate(wire::units::BitsPerSec(1e9), 64).0;
    Calibration {
        measured_unix: 1_795_300_000,
        lab: "sim".into(),
        trial_seconds: 1.0,
        speed_bps: 1e9,
        entries: vec![crate::calibration::CeilingEntry {
            ip: 4,
            frame_size: 64,
            offered_pps: fraction * line,
            received_pps: fraction * line,
            ceiling_pps: fraction * line,
            line_pps: line,
            exact: true,
            backend: "xdp".into(),
            trials: 1,
        }],
    }
}

/// The ceiling check every search's `done` record carries: (result pps, ceiling pps,
/// tester-limited).
fn ceiling_of(dir: &Path) -> Option<(f64, f64, bool)> {
    records(dir).into_iter().find_map(|r| match r {
        Record::Done(d) => d
            .ceiling
            .map(|c| (c.result_pps.0, c.ceiling_pps.0, c.tester_limited)),
        _ => None,
    })
}

/// The ceiling check of a one-case run against a DUT forwarding `capacity` of line rate, with
/// a tester calibrated at `calibrated` of it: (result pps, ceiling pps, tester-limited).
fn checked_against_ceiling(capacity: f64, calibrated: f64) -> (f64, f64, bool) {
    let stop = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    let bed = SimBed::new(&Log::default(), capacity);
    let cal = Some(calibration_at(calibrated));
    run_calibrated(&plan_text(UDP_64), dir.path(), false, bed, &stop, cal).unwrap();
    ceiling_of(dir.path()).expect("a ceiling check")
}

#[test]
fn a_result_within_ten_percent_of_the_calibrated_ceiling_is_the_testers_not_the_duts() {
    // The tester proved 40 % of line rate; the DUT forwards 39 %: the search completes at
    // about 38–39 %, which the tester may have set, so the record says tester-limited.
    let (result, ceiling, limited) = checked_against_ceiling(0.39, 0.40);
    let line = wire::linerate::max_frame_rate(wire::units::BitsPerSec(1e9), 64).0;
    assert!((ceiling - 0.40 * line).abs() < 1e-6);
    assert!(
        result >= ceiling * (1.0 - crate::calibration::CEILING_MARGIN),
        "{result}"
    );
    assert!(limited, "within 10 % of the ceiling");

    // A DUT at 30 % is well below what the tester proved: its own figure.
    let (result, _, limited) = checked_against_ceiling(0.30, 0.40);
    assert!(result < 0.31 * line, "{result}");
    assert!(!limited, "30 % is more than 10 % below a 40 % ceiling");
}

/// The DUT forwards everything and the search finds line rate; the calibration put the tester
/// at 95 % (its own trials can stall). The result's trial was offered on schedule and there is
/// no higher load: the figure is the DUT's, though 100 % is within 10 % of 95 %.
#[test]
fn a_line_rate_result_is_the_duts_whatever_the_calibrated_ceiling() {
    let (result, ceiling, limited) = checked_against_ceiling(1.0, 0.95);
    assert!(result > ceiling, "{result} vs {ceiling}");
    assert!(!limited, "a line-rate result offered on schedule");
    // Just below line rate the check stands.
    let (_, _, limited) = checked_against_ceiling(0.97, 0.95);
    assert!(limited, "97 % is within 10 % of a 95 % ceiling");
}

#[test]
fn a_tester_calibrated_at_line_rate_never_limits_a_result() {
    // The DUT forwards everything; the tester proved line rate: a line-rate result is the
    // DUT's (the check never fires at a ceiling of 100 %).
    let (result, ceiling, limited) = checked_against_ceiling(1.0, 1.0);
    assert!((result - ceiling).abs() < 1.0, "{result} vs {ceiling}");
    assert!(!limited);
    let (text, stop, log) = (plan_text(UDP_64), AtomicBool::new(false), Log::default());
    // Without a calibration there is no check at all.
    let dir = tempfile::tempdir().unwrap();
    run_sim(&text, dir.path(), false, SimBed::new(&log, 1.0), &stop).unwrap();
    assert_eq!(ceiling_of(dir.path()), None);
}

/// #18 item 3: what the runner records carries its facts typed. run.json has the cases as the
/// runner expanded them (once) with the link speed and repetitions; every UDP trial its frame
/// size, the path's encapsulation, the 100 % it offered fractions of (`Plan::line_rate`, the
/// same the testbed paces to) and the offered rate in frames/s.
#[test]
fn records_carry_frame_size_encapsulation_line_rate_and_offered_rate() {
    let text = plan_text(&UDP_64.replace("frame-size = [64]", "frame-size = [128]"));
    let (plan, cases) = Plan::parse_expanded(&text, "sim.toml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let stop = AtomicBool::new(false);
    run_sim(&text, dir.path(), false, SimBed::new(&log, 0.37), &stop).unwrap();
    let (_, info, _) = RunDir::resume(dir.path()).unwrap();
    let facts = info.facts.expect("run.json carries the run's facts");
    assert_eq!(facts.cases, cases);
    assert_eq!(facts.speed_bps.0, 1e9);
    assert_eq!(facts.repetitions, 1);
    assert_eq!(facts.profiles, ["forward"]);
    let trials = trial_records(dir.path());
    assert!(trials.len() >= 4, "a search of several trials");
    let line = plan.line_rate(&cases[0]);
    // 1e9 / ((128 + 20) × 8).
    assert_eq!(line.pps.0.round(), (1e9f64 / (148.0 * 8.0)).round());
    for t in &trials {
        let f = t.udp.as_ref().expect("a UDP trial carries its facts");
        assert_eq!(f.frame, wire::linerate::FrameSize::Fixed { bytes: 128 });
        assert_eq!(f.frame_bytes(), Some(128));
        assert_eq!(f.encap, wire::encap::EncapSpec::plain(IpVersion::V4));
        assert_eq!(f.line, line);
        assert_eq!(f.offered_pps, line.pps * t.outcome.offered.0);
    }
    // The 100 % of the search is the one its trials recorded.
    let done = records(dir.path()).into_iter().find_map(|r| match r {
        Record::Done(d) => d.line_pps,
        _ => None,
    });
    assert_eq!(done, Some(line.pps));
}

/// A simulated testbed that assembles every UDP trial as the real one does
/// ([`crate::trial_streams::assemble`], from the headers of what the ports play, given here)
/// and records it with the same call ([`crate::trial_streams::TrialStreams::record`]): each
/// stream sends its rate × the trial's duration, the DUT forwards A→B whole and loses one
/// B→A frame in `reverse_loss_every`.
struct AssemblingBed {
    ports: crate::trial_streams::PortHeaders,
    reverse_loss_every: u64,
}

impl TrialExecutor for AssemblingBed {
    fn dut_switches(&self) -> Option<Box<dyn DutSwitches>> {
        None
    }

    fn udp_trial(
        &mut self,
        plan: &Plan,
        case: &Case,
        request: &TrialRequest,
        _stop: &AtomicBool,
    ) -> Result<(Outcome, EngineFacts), crate::error::BenchError> {
        let streams = crate::trial_streams::assemble(plan, case, request, &self.ports)
            .map_err(|e| crate::error::BenchError::Failed(e.to_string()))?;
        let c = &streams.config;
        let results: Vec<_> = c
            .streams
            .iter()
            .map(|s| {
                let pps = s.config.pps().0;
                let sent = (pps * request.duration.as_secs_f64()).round() as u64;
                let lost = if s.tx_port == 1 {
                    sent / self.reverse_loss_every
                } else {
                    0
                };
                sim_stream(
                    s.config.id,
                    (&c.ports[s.tx_port].name, &c.ports[s.rx_port].name),
                    (sent, sent - lost),
                    pps,
                )
            })
            .collect();
        Ok(streams.record(request, "sim", "", &results))
    }

    fn conn_trial(
        &mut self,
        _: &Case,
        _: &ConnTrial,
        _: Option<u64>,
        _: engine::trial::Backend,
        _: &AtomicBool,
    ) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), crate::error::BenchError> {
        no_conn_trial()
    }

    fn tcp_trial(
        &mut self,
        _: &Case,
        _: &Plan,
        _: &AtomicBool,
    ) -> (
        Result<TcpRun, crate::error::BenchError>,
        Option<DutCounters>,
    ) {
        no_tcp_trial()
    }

    fn down(self: Box<Self>) -> Result<(), crate::error::BenchError> {
        Ok(())
    }
}

/// The engine's result of one stream that sent `sent` frames at `pps`, `received` of them:
/// counts only (the simulated executor measures no latency or IPDV).
fn sim_stream(
    id: u16,
    (tx, rx): (&str, &str),
    (sent, received): (u64, u64),
    pps: f64,
) -> engine::trial::StreamResult {
    let mut s = crate::trial::tests::stream(id, tx, rx, sent, received, pps);
    s.rx.latency = None;
    s.ipdv = None;
    s.rx_pps = wire::units::Pps(pps * received as f64 / sent.max(1) as f64);
    s
}

/// A bidirectional forwarding-rate plan between port A (plain) and port B (`wan`, encap
/// `encap`), run by the runner on the assembling testbed with port B's headers `b`: the
/// trials' records.
fn run_both_ways(
    wan: &str,
    encap: &str,
    b: Option<crate::trial_streams::BReplies>,
) -> Vec<TrialRecord> {
    use crate::trial_streams::tests as fx;
    let text = fx::plan_text(
        fx::LAN_PLAIN,
        wan,
        &format!(
            r#"[run]
repetitions = 1
trial-duration = "0.5s"
settle = "0s"
profile-settle = "0s"
max-load = 0.01
[methodology.forwarding-rate]
trials = 1
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["{encap}"]
bidirectional = true
frame-size = [64]
methodologies = ["forwarding-rate"]
"#
        ),
    );
    let (plan, _) = Plan::parse_expanded(&text, "sim.toml").unwrap();
    let bed = AssemblingBed {
        ports: fx::headers(&plan, None, b),
        reverse_loss_every: 8,
    };
    let dir = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    run_sim_on(&text, dir.path(), bed, &stop).unwrap();
    trial_records(dir.path())
}

/// Issue 34 item 6: bidirectional plans through a plain port B and through our PPPoE access
/// concentrator, DS-Lite AFTR and MAP-E BR, run by the runner on the assembling testbed:
/// every trial's record has both directions, each with the frames its own stream sent,
/// received and lost, and the two streams as assembled (the reverse one inside what port B
/// plays, from its address and, where a NAPT answers, to the forward tuple's reply).
#[test]
fn a_bidirectional_trial_through_each_isp_side_records_each_direction() {
    use crate::trial_streams::{tests as fx, BReplies};
    use std::net::{IpAddr, Ipv4Addr};
    use wire::encap::EncapSpec;
    let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    let plain_v4 = EncapSpec::plain(IpVersion::V4);
    let ac = BReplies::Session {
        info: fx::ac_session(),
        isp_side: true,
    };
    let aftr = BReplies::Softwire {
        info: fx::softwire(),
        b4_side: false,
    };
    let br = BReplies::Br {
        ce: fx::CE,
        info: fx::softwire(),
    };
    // Port B, its encap, its headers; the reverse stream's encapsulation as recorded, its
    // source and destination address and port.
    let plain = (v4(198, 51, 100, 2), 1024, v4(192, 0, 2, 2), 9);
    let cases = [
        ("plain", fx::WAN_PLAIN, "plain", None, plain_v4, plain),
        (
            "pppoe",
            fx::WAN_PPPOE,
            "pppoe",
            Some(ac),
            EncapSpec {
                pppoe: true,
                ..plain_v4
            },
            (v4(198, 51, 100, 1), 9, v4(198, 51, 100, 10), 1024),
        ),
        (
            "dslite",
            fx::WAN_DSLITE,
            "dslite",
            Some(aftr),
            EncapSpec {
                dslite: true,
                ..plain_v4
            },
            (v4(203, 0, 113, 2), 9, v4(192, 0, 2, 2), 1024),
        ),
        (
            "mape",
            fx::WAN_MAPE,
            "mape",
            Some(br),
            EncapSpec {
                mape: true,
                ..plain_v4
            },
            (v4(203, 0, 113, 2), 9, IpAddr::V4(fx::CE.0), fx::CE.1),
        ),
    ];
    for (what, wan, encap, b, reverse_encap, (src, src_port, dst, dst_port)) in cases {
        let trials = run_both_ways(wan, encap, b);
        assert!(!trials.is_empty(), "{what}: the run measured");
        for t in &trials {
            let e = t.engine.as_ref().expect("a UDP trial's engine facts");
            assert_eq!(t.outcome.directions, 2, "{what}");
            let d = &e.per_direction;
            assert_eq!(d.len(), 2, "{what}: {d:?}");
            assert_eq!(
                (d[0].tx_port.as_str(), d[0].rx_port.as_str()),
                ("lan", "wan")
            );
            assert_eq!(
                (d[1].tx_port.as_str(), d[1].rx_port.as_str()),
                ("wan", "lan")
            );
            assert!(
                d[0].sent > 0 && d[0].sent == d[1].sent,
                "{what}: one load both ways"
            );
            assert_eq!((d[0].received, d[0].lost), (d[0].sent, 0), "{what}");
            assert_eq!(
                d[1].lost,
                d[1].sent / 8,
                "{what}: the reverse direction's own loss"
            );
            assert_eq!(d[1].received + d[1].lost, d[1].sent, "{what}");
            assert_eq!(e.sent, d[0].sent + d[1].sent, "{what}");
            assert_eq!(t.outcome.lost, d[1].lost, "{what}");
            let s = &e.streams;
            assert_eq!(s.len(), 2, "{what}");
            assert_eq!(s[0].stream_id, 1);
            assert_eq!(s[0].encap, plain_v4);
            assert_eq!(s[1].stream_id, 2);
            assert_eq!(s[1].encap, reverse_encap, "{what}");
            assert_eq!(
                (s[1].tx_port.as_str(), s[1].rx_port.as_str()),
                ("wan", "lan")
            );
            assert_eq!(
                (s[1].src, s[1].src_port, s[1].dst, s[1].dst_port),
                (src, src_port, dst, dst_port),
                "{what}"
            );
        }
    }
}

/// Runs `text` on `bed` into `dir`, fresh.
fn run_sim_on(
    text: &str,
    dir: &Path,
    bed: impl TrialExecutor + 'static,
    stop: &AtomicBool,
) -> Result<RunSummary, RunError> {
    run_calibrated(text, dir, false, bed, stop, None)
}

/// What both simulated executors answer to a connection trial: the simulation has none.
fn no_conn_trial(
) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), crate::error::BenchError> {
    Err(crate::error::BenchError::Failed(
        "no connection trials in the simulation".into(),
    ))
}

/// What both simulated executors answer to an iperf3 trial: the simulation has no iperf3.
fn no_tcp_trial() -> (
    Result<TcpRun, crate::error::BenchError>,
    Option<DutCounters>,
) {
    (
        Err(crate::error::BenchError::Failed(
            "no iperf3 in the simulation".into(),
        )),
        None,
    )
}
