//! The executor: runs every case of a plan on the lab, unattended, and records every trial.
//!
//! Order of work (DESIGN.md §7, issue 5):
//!
//! 1. [`preflight`]: everything that can be checked before traffic — lab profiles known to
//!    this kernel, every hook command present (locally, or on the DUT over ssh, after an ssh
//!    reachability check), iperf3 and tcpdump for TCP cases, and each real port's link (its
//!    wire speed against the plan's, its offloads, its own drop counters: [`link_checks`]),
//!    recorded in `run.json`.
//! 2. The lab is (re)built, so nothing a killed run left behind (an iperf3 server, a capture)
//!    survives into this one.
//! 3. Per profile: the lab profile, setup hooks, `profile-settle`; per case: stats-before hooks
//!    and samplers, every repetition × methodology (a search driven trial by trial, each trial
//!    appended to `trials.jsonl` and synced before the next one starts, a `done` record after
//!    each methodology), stats-after hooks; then the profile's teardown hooks.
//! 4. The lab is removed, also on error and on Ctrl-C (the trial in flight is aborted and not
//!    recorded; teardown hooks still run).
//!
//! `--resume` skips finished (case, repetition, methodology) entries and replays the recorded
//! trials of an unfinished search (see [`crate::search::replay`]): nothing finished is lost or
//! measured again.
//!
//! One job per module: [`preflight`] (checks before traffic), `run_dir` (creating or resuming
//! the run directory, `run.json` with the plan's typed facts), `context` (the run's state:
//! testbed, records, hooks, progress), `cases` (profiles, DUT switches, hooks and samplers per
//! case), `search` (a UDP search trial by trial, with the tester-stall logic), `conn` (the
//! connection methodologies), `tcp` (iperf3 runs). This module wires them: [`run`] and
//! `run_on`, which the simulated tests (`sim_tests`) drive with a simulated executor.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::calibration::Calibration;
use crate::executor::TrialExecutor;
use crate::plan::{Case, Plan};
use crate::results::{MethodologyDone, Record, TrialRecord};
use crate::testbed::Testbed;

mod cases;
mod conn;
mod context;
mod preflight;
mod run_dir;
mod search;
mod tcp;

use self::cases::*;
pub use self::conn::*;
use self::context::*;
pub use self::preflight::*;
pub use self::run_dir::*;
use self::search::*;
pub use self::tcp::*;

/// Hook commands (setup, stats) are killed after this long.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(120);
pub use crate::iperf3_run::IPERF3_PORT;
/// File in the run directory with every hook's raw (and parsed) output, one JSON per line.
pub const HOOKS_JSONL: &str = "hooks.jsonl";
/// Directory in the run directory with each iperf3 trial's raw `-J` output.
pub const IPERF3_DIR: &str = "iperf3";

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// Found before any traffic: the plan cannot run here (a missing command, an unreachable
    /// host, an unsupported profile).
    Preflight(Vec<String>),
    /// Ctrl-C or SIGTERM: stopped cleanly, the results so far are kept.
    Interrupted,
    /// Something failed while running (the lab, a setup hook, the results directory).
    Failed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Preflight(v) => write!(f, "the plan cannot run here: {}", v.join("; ")),
            RunError::Interrupted => f.write_str("interrupted; resume with --resume"),
            RunError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

fn failed(m: impl std::fmt::Display) -> RunError {
    RunError::Failed(m.to_string())
}

/// What happened, for a progress display.
#[derive(Debug)]
pub enum Event<'a> {
    /// A case starts (`index` from 1 of `cases`); `skipped` when resume found it finished.
    Case {
        /// 1-based.
        index: usize,
        /// Number of cases.
        cases: usize,
        /// The case.
        case: &'a Case,
        /// Finished in an earlier run.
        skipped: bool,
    },
    /// A trial was recorded.
    Trial {
        /// 1-based case index.
        index: usize,
        /// Number of cases.
        cases: usize,
        /// The record as written.
        record: &'a TrialRecord,
        /// Estimated time left.
        eta: Duration,
    },
    /// A methodology finished.
    Done(&'a MethodologyDone),
    /// Something worth a line (profile switches, recoverable failures).
    Note(String),
}

/// How to run.
pub struct RunOptions<'a> {
    /// The run directory.
    pub dir: PathBuf,
    /// Continue the run in `dir` instead of creating one.
    pub resume: bool,
    /// The tester's ceiling, if calibrated.
    pub calibration: Option<Calibration>,
    /// Set to stop (Ctrl-C): the trial in flight is aborted, teardown runs.
    pub stop: &'a AtomicBool,
    /// Progress callback.
    pub progress: &'a mut dyn FnMut(Event<'_>),
}

/// What a finished run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Trials measured in this invocation.
    pub trials_run: u64,
    /// Trials found already recorded (resume).
    pub trials_replayed: u64,
    /// Methodologies that failed (engine or iperf3 errors), with the reason; they are not
    /// marked done, so `--resume` retries them.
    pub failures: Vec<String>,
    /// Wall-clock time.
    pub elapsed: Duration,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Sleeps `d`, waking early when `stop` is set; false if stopped.
fn nap(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
    }
    !stop.load(Ordering::SeqCst)
}

/// Runs `plan` (its text is `plan_text`, its expanded cases `cases`: the caller expands the
/// matrix once, [`Plan::parse_expanded`]) as `opts` says.
pub fn run(
    plan: &Plan,
    plan_text: &str,
    cases: &[Case],
    mut opts: RunOptions<'_>,
) -> Result<RunSummary, RunError> {
    let links = preflight(plan, cases, plan_text)?;
    // Said once, before the first figure: a port without a wire speed, offloads, counters.
    for n in &links.notes {
        (opts.progress)(Event::Note(n.clone()));
    }
    let opened = open_run_dir(plan, plan_text, cases, &links.links, &mut opts)?;
    // The lab (rebuilt, so nothing a killed run left survives), or the real interfaces with
    // their PPPoE sessions up; nothing has been sent when this fails.
    let mut bed = match Testbed::up(plan, &opts.dir, opts.stop) {
        Ok(b) => b,
        Err(_) if opts.stop.load(Ordering::SeqCst) => return Err(RunError::Interrupted),
        Err(e) => return Err(failed(e)),
    };
    bed.watch_tester_counters(&links.links);
    run_on(Box::new(bed), plan, cases, opened, opts)
}

/// Runs `cases` of `plan` on `bed` into the run directory (created or resumed, with its
/// records), and takes `bed` down at the end whatever happened.
fn run_on(
    bed: Box<dyn TrialExecutor>,
    plan: &Plan,
    cases: &[Case],
    opened: Opened,
    opts: RunOptions<'_>,
) -> Result<RunSummary, RunError> {
    let Opened {
        dir: run_dir,
        resume,
        records,
    } = opened;
    let mut done_results = BTreeMap::new();
    for r in &records {
        if let Record::Done(d) = r {
            if let Some(res) = &d.result {
                done_results.insert(
                    (d.case_id.clone(), d.repetition, d.methodology),
                    res.clone(),
                );
            }
        }
    }
    let hooks_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(opts.dir.join(HOOKS_JSONL))
        .map_err(|e| failed(format!("{HOOKS_JSONL}: {e}")))?;
    let est_total = cases.iter().map(|c| plan.case_estimate(c).1).sum();
    let mut ctx = Ctx {
        plan,
        bed,
        run: run_dir,
        hooks_file,
        resume,
        done_results,
        opts,
        summary: RunSummary::default(),
        started: Instant::now(),
        est_total,
        est_done: 0.0,
        lab_offload: None,
        lab_profile: None,
        fastpath_switched: false,
    };
    // Every trial found in the run directory is kept (finished cases' and unfinished ones').
    ctx.summary.trials_replayed = records
        .iter()
        .filter(|r| matches!(r, Record::Trial(_) | Record::ConnTrial(_)))
        .count() as u64;
    let result = run_cases(&mut ctx, cases);
    let down = ctx.bed.down();
    let mut summary = ctx.summary;
    summary.elapsed = ctx.started.elapsed();
    result?;
    down.map_err(failed)?;
    Ok(summary)
}

// The stall policy's one public home is `bench::stall`; the searches reach it from here.
use crate::stall::{MAX_STALL_RETRIES, MAX_TRANSIENT_RETRIES, SLIP_TOLERANCE};

#[cfg(test)]
mod sim_tests;
