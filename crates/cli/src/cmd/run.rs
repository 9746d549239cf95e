//! `wirerate run PLAN`: run a plan unattended on the lab or real ports (all measurement lives in
//! `bench::runner`; this module parses arguments, handles Ctrl-C and prints progress).

use crate::error::{CliError, CliResult};
use bench::calibration::{self, Calibration};
use bench::plan::{Case, Methodology, Plan};
use bench::runner::{self, Event, RunError, RunOptions};
use bench::search::{Finding, Status};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Run a plan: every case of its matrix on the lab or on real ports, each trial recorded as it
/// finishes.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    sudo wirerate plan check plans/lab-demo.toml\n  \
    sudo wirerate run plans/lab-demo.toml\n  \
    sudo wirerate run plans/lab-demo.toml --resume runs/lab-demo-20260101-120000\n\n\
Results: run.json, trials.jsonl (one line per trial, synced), hooks.jsonl, iperf3/*.json,\n\
sessions.jsonl (PPPoE session events and statistics when a port plays the ISP).\n\
Ctrl-C stops cleanly (teardown hooks run, PPPoE sessions closed with PADT, the lab removed);\n\
--resume continues.")]
pub struct RunArgs {
    /// The plan file (TOML).
    plan: PathBuf,
    /// Results directory (default: runs/<plan>-<UTC timestamp>).
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Continue the run in DIR: finished trials are kept, none is repeated.
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// Tester calibration (`wirerate calibrate`); default: the stored one, if any.
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
}

fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}m{:02}s", s / 60, s % 60)
}

fn si(v: f64) -> String {
    wire::units::si(v)
}

pub fn run(args: RunArgs) -> CliResult {
    // The matrix is expanded here, once, and handed to the estimate, the runner and the
    // progress printer.
    let (plan, text, cases) = super::plan::load(&args.plan)?;
    let calibration = match &args.calibration {
        Some(p) => {
            Some(Calibration::load(p).map_err(|e| CliError::Usage(format!("--calibration {e}")))?)
        }
        None => Calibration::load(&calibration::default_path()).ok(),
    };
    let (dir, resume) = match (&args.resume, &args.out) {
        (Some(d), _) => (d.clone(), true),
        (None, Some(d)) => (d.clone(), false),
        (None, None) => (
            runner::default_dir(std::path::Path::new("runs"), &plan.name),
            false,
        ),
    };
    // A run refused before it measured anything (the lab in use by another command, say)
    // leaves no empty run directory behind, when this run created it.
    let dir_existed = dir.exists();
    if !resume {
        // Before anything is created or measured: `--out FIFO` failed late with "File exists".
        bench::files::check_output_dir(&dir)
            .map_err(|e| CliError::Usage(format!("--out {}: {e}", dir.display())))?;
    }
    let est = plan.estimate_cases(&cases);
    outln!(
        "plan {}: {} cases, estimated {}; results in {}{}",
        plan.name,
        est.cases,
        hms(Duration::from_secs_f64(est.seconds + est.startup)),
        dir.display(),
        match &calibration {
            Some(c) => format!(" (tester calibration from {})", c.lab),
            None => " (no tester calibration: run `wirerate calibrate`)".into(),
        }
    );
    let stop = super::stop_flag();
    let by_id: BTreeMap<String, Case> = cases.iter().map(|c| (c.id.clone(), c.clone())).collect();
    let mut progress = |e: Event<'_>| print_event(&plan, &by_id, e);
    let result = runner::run(
        &plan,
        &text,
        &cases,
        RunOptions {
            dir: dir.clone(),
            resume,
            calibration,
            stop: &stop,
            progress: &mut progress,
        },
    );
    match result {
        Ok(s) => {
            outln!(
                "run finished in {}: {} trials measured, {} kept from before; results in {}",
                hms(s.elapsed),
                s.trials_run,
                s.trials_replayed,
                dir.display()
            );
            // The report (issue 6) is rendered into the run directory; a report problem does
            // not lose the run (`wirerate report DIR` renders it again).
            match super::report::render_run_dir(&dir) {
                Ok(summary) => out!("{summary}"),
                Err(e) => errln!(
                    "wirerate: report: {e} (the results are in {})",
                    dir.display()
                ),
            }
            if s.failures.is_empty() {
                Ok(())
            } else {
                Err(CliError::Failed(format!(
                    "{} methodologies failed (rerun with --resume {} to retry):\n  {}",
                    s.failures.len(),
                    dir.display(),
                    s.failures.join("\n  ")
                )))
            }
        }
        Err(RunError::Preflight(p)) => Err(CliError::Usage(format!(
            "the plan cannot run here (nothing was sent):\n  {}",
            p.join("\n  ")
        ))),
        Err(RunError::Interrupted) => Err(CliError::Failed(format!(
            "interrupted; teardown done (lab removed, sessions closed); continue with: wirerate run {} --resume {}",
            args.plan.display(),
            dir.display()
        ))),
        Err(RunError::Failed(m)) if !resume && !dir_existed && !measured_any(&dir) => {
            // Nothing to resume. A directory that recorded nothing at all goes; one that holds
            // what was tried (sessions.jsonl of a PPPoE bring-up, hook output) stays.
            let removed = !recorded_any(&dir) && remove_unused_run_dir(&dir);
            Err(CliError::Failed(format!(
                "{m} (nothing was measured{})",
                if removed {
                    String::new()
                } else {
                    format!("; what was tried is in {}", dir.display())
                }
            )))
        }
        Err(RunError::Failed(m)) => Err(CliError::Failed(format!(
            "{m} (results so far in {}; --resume continues)",
            dir.display()
        ))),
    }
}

/// Whether the run directory holds any trial record.
fn measured_any(dir: &std::path::Path) -> bool {
    std::fs::metadata(dir.join(bench::results::TRIALS_JSONL)).is_ok_and(|m| m.len() > 0)
}

/// Whether the run directory holds any record besides run.json: hook output or session events.
fn recorded_any(dir: &std::path::Path) -> bool {
    [bench::runner::HOOKS_JSONL, bench::testbed::SESSIONS_JSONL]
        .iter()
        .any(|f| std::fs::metadata(dir.join(f)).is_ok_and(|m| m.len() > 0))
}

/// Removes a run directory this run created and left without a measurement: the files and the
/// (empty) iperf3 folder a run writes first, then the directory itself, only if nothing else is
/// in it. True when it is gone.
fn remove_unused_run_dir(dir: &std::path::Path) -> bool {
    for f in [
        bench::results::RUN_JSON,
        bench::results::TRIALS_JSONL,
        bench::runner::HOOKS_JSONL,
        bench::testbed::SESSIONS_JSONL,
    ] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    // Empty, or it stays (remove_dir never removes what is in it).
    let _ = std::fs::remove_dir(dir.join(bench::runner::IPERF3_DIR));
    std::fs::remove_dir(dir).is_ok() || !dir.exists()
}

fn print_event(plan: &Plan, cases: &BTreeMap<String, Case>, e: Event<'_>) {
    match e {
        Event::Case {
            index,
            cases: n,
            case,
            skipped,
        } => {
            if skipped {
                outln!("[{index}/{n}] {} (finished earlier)", case.id);
            } else {
                outln!("[{index}/{n}] {}", case.id);
            }
        }
        Event::Trial {
            index,
            cases: n,
            record: r,
            eta,
        } => {
            if let Some(t) = &r.tcp {
                outln!(
                    "  [{index}/{n}] iperf3: {}b/s L4, {}b/s L2, retransmits {}, SYN MSS at far port {:?}  ETA {}",
                    si(t.l4_bps.0),
                    si(t.l2_bps.0),
                    t.retransmits.map_or("-".into(), |x| x.to_string()),
                    t.syn_mss,
                    hms(eta)
                );
            } else if let Some(p) = r.request.probe {
                let o = &r.outcome;
                outln!(
                    "  [{index}/{n}] {} #{}: {} {} B at {} frames/s: received whole {} of {}{}{}  ETA {}",
                    r.key.methodology.name(),
                    r.key.index,
                    p.direction,
                    p.frame_size,
                    p.pps,
                    o.received,
                    o.received + o.lost,
                    if o.fragments > 0 {
                        format!(", {} seen as fragments", o.fragments)
                    } else {
                        String::new()
                    },
                    if r.tester_limited {
                        " TESTER-LIMITED"
                    } else {
                        ""
                    },
                    hms(eta)
                );
            } else {
                let o = &r.outcome;
                outln!(
                    "  [{index}/{n}] {} #{}: intended {} offered {} loss {:.4} %{}  ETA {}",
                    r.key.methodology.name(),
                    r.key.index,
                    o.intended,
                    o.offered,
                    o.loss_ratio() * 100.0,
                    if r.tester_limited {
                        " TESTER-LIMITED"
                    } else {
                        ""
                    },
                    hms(eta)
                );
            }
        }
        Event::Done(d) => {
            let Some(res) = &d.result else { return };
            let case = cases.get(&d.case_id);
            // On the path's slowest link, with its encapsulation (PPPoE adds 8 bytes).
            let max = case
                .filter(|c| c.frame().is_some())
                .map(|c| plan.line_pps(c).0);
            match (&res.status, &res.finding) {
                (Status::Complete, Finding::Throughput { goals }) => {
                    for g in goals {
                        let t = g.throughput();
                        let pps = t.zip(max).map(|(t, m)| t.0 * m);
                        outln!(
                            "  => {} loss ≤ {} %: {}{}{}",
                            d.methodology.name(),
                            g.loss_ratio * 100.0,
                            t.map_or("below the minimum load".into(), |t| t.to_string()),
                            pps.map_or(String::new(), |p| format!(" ({}pps)", si(p))),
                            match d.ceiling {
                                Some(c) if c.tester_limited => format!(
                                    "  TESTER-LIMITED: within 10 % of the tester's ceiling ({}pps)",
                                    si(c.ceiling_pps.0)
                                ),
                                _ => String::new(),
                            }
                        );
                    }
                }
                (
                    Status::Complete,
                    Finding::ForwardingRate {
                        load,
                        mean: Some(mean),
                        rates,
                    },
                ) => {
                    let pps = max.map(|m| mean.0 * m);
                    outln!(
                        "  => {} at {load} offered: {mean} of line rate{} (mean of {} trial{})",
                        d.methodology.name(),
                        pps.map_or(String::new(), |p| format!(", {}pps", si(p))),
                        rates.len(),
                        if rates.len() == 1 { "" } else { "s" }
                    );
                }
                (_, Finding::MtuProbe { directions }) => {
                    for t in directions {
                        outln!(
                            "  => {} {}: largest whole {}{}{}",
                            d.methodology.name(),
                            t.direction,
                            t.largest_whole.map_or_else(
                                || format!("none of {}–{} B", t.min_size, t.max_size),
                                |s| format!("{s} B")
                            ),
                            t.above.map_or(String::new(), |a| format!(
                                "; {} B {} ({} sent, {} received whole, {} seen as fragments)",
                                a.frame_size,
                                a.crossing.name(),
                                a.sent,
                                a.received,
                                a.fragments
                            )),
                            if t.complete {
                                String::new()
                            } else {
                                format!(" [{}]", res.status)
                            }
                        );
                    }
                }
                (Status::Complete, f) if d.methodology != Methodology::Iperf3 => {
                    outln!("  => {}: {:?}", d.methodology.name(), f);
                }
                (s, _) => outln!("  => {}: {s}", d.methodology.name()),
            }
        }
        Event::Note(m) => outln!("  {m}"),
    }
}
